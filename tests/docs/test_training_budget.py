"""docs/benchmarks.md says what training the demo model cost and what each phase of its recipe
bought, in both languages, with the shipped run's own figures (its report and training record)
and no others."""

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
def test_the_rows_are_the_training_records_snapshots(lang):
    record = json.loads((DEMO_CHECKPOINT / "training_record.json").read_text(encoding="utf-8"))
    report = json.loads((DEMO_CHECKPOINT / "report.json").read_text(encoding="utf-8"))
    snapshots = {s["step"]: s for s in record["snapshots"]}
    body = section(*TITLE[lang])
    # rows "| step | phase | held-out English | English twice | L1 induction | L0 previous |"
    rows = re.findall(r"^\| ([\d.,]+) \| (\d) \| ([\d.,]+) \| ([\d.,]+) \| ([\d.,]+) \| "
                      r"([\d.,]+) \|$", body, flags=re.M)
    assert len(rows) >= 5, body
    for step, phase, heldout, twice, induction, previous in rows:
        s = snapshots[int(figure(step, lang))]
        assert int(phase) == s["phase"]
        assert figure(heldout, lang) == pytest.approx(s["heldout_loss"], abs=5e-4)
        assert figure(twice, lang) == pytest.approx(s["english_twice"]["ratio"], abs=5e-4)
        assert figure(induction, lang) == pytest.approx(
            s["english_twice"]["induction"]["score"], abs=5e-4)
        assert figure(previous, lang) == pytest.approx(max(s["previous_token_scores"][0]),
                                                       abs=5e-4)
    assert int(figure(rows[0][0], lang)) == 0
    assert int(figure(rows[-1][0], lang)) == report["training"]["steps"]
    # the time target as two ratios of 3600 s: wall clock and CPU time
    for key in ("seconds", "cpu_seconds"):
        ratio = f"{report['training'][key] / 3600:.2f}x"
        assert (ratio.replace(".", ",") if lang == "pt" else ratio) in body, ratio
    count = f"{len(record['snapshots']):,}".replace(",", "." if lang == "pt" else ",")
    assert f" {count} " in " ".join(body.split())  # the snapshots the record holds
