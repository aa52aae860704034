"""docs/benchmarks.md says what training the demo model cost and what a larger budget bought,
in both languages, with the shipped run's own figures (its training card) and no others."""

from __future__ import annotations

import json
import re

import pytest

from glassllm import DEMO_CHECKPOINT
from tests.docs.test_reading_aids import section

TITLE = {"en": ("benchmarks.md", "Training the demo model"),
         "pt": ("pt/benchmarks.md", "Treinando o modelo de demonstração")}


def figure(text: str, lang: str) -> float:
    return float(text.replace(".", "").replace(",", ".") if lang == "pt" else text.replace(",", ""))


@pytest.mark.parametrize("lang", ["en", "pt"])
def test_the_runs_curve_points_are_the_training_cards(lang):
    card = json.loads((DEMO_CHECKPOINT / "training.json").read_text(encoding="utf-8"))
    curve = {point["step"]: point for point in card["curve"]}
    body = section(*TITLE[lang])
    # rows "| step | CPU s | held-out English | L0 prev-token | L1 induction |" of this run
    rows = re.findall(r"^\| ([\d.,]+) \| ([\d.,]+) \| ([\d.,]+) \| ([\d.,]+) \| ([\d.,]+) \|$",
                      body, flags=re.M)
    assert len(rows) >= 4, body
    per_step = card["training"]["cpu_seconds"] / card["training"]["steps"]
    for step, cpu, heldout, previous, induction in rows:
        point = curve[int(figure(step, lang))]
        assert figure(cpu, lang) == pytest.approx(point["step"] * per_step, abs=1)
        assert figure(heldout, lang) == pytest.approx(point["heldout_loss"], abs=5e-4)
        assert figure(previous, lang) == pytest.approx(point["previous_token"], abs=5e-3)
        assert figure(induction, lang) == pytest.approx(point["induction"], abs=5e-3)
    assert int(figure(rows[-1][0], lang)) == card["training"]["steps"]
    # the time target as the script reports it: both ratios of 1800 s
    for key in ("seconds", "cpu_seconds"):
        ratio = f"{card['training'][key] / 1800:.2f}x"
        assert (ratio.replace(".", ",") if lang == "pt" else ratio) in body, ratio
