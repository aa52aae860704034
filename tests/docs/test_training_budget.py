"""docs/benchmarks.md says what training the demo model cost and what more steps bought, in
both languages, with the shipped run's own figures (its report.json and training record, read
here) and no others."""

from __future__ import annotations

import json
import re

import pytest

from glassllm import DEMO_CHECKPOINT
from tests.docs.test_reading_aids import section

TITLE = {"en": ("benchmarks.md", "Training the demo model"),
         "pt": ("pt/benchmarks.md", "Treinando o modelo de demonstração")}
REPORT = json.loads((DEMO_CHECKPOINT / "report.json").read_text(encoding="utf-8"))
RECORD = json.loads((DEMO_CHECKPOINT / REPORT["record"]["file"]).read_text(encoding="utf-8"))


def figure(text: str, lang: str) -> float:
    return float(text.replace(".", "").replace(",", ".") if lang == "pt" else text.replace(",", ""))


def written(value: float, lang: str, spec: str) -> str:
    text = format(value, spec)
    return text.replace(",", "\0").replace(".", ",").replace("\0", ".") if lang == "pt" else text


@pytest.mark.parametrize("lang", ["en", "pt"])
def test_the_runs_rows_are_its_training_records(lang):
    snapshots = {s["step"]: s for s in RECORD["snapshots"]}
    featured = RECORD["featured"]
    training = REPORT["training"]
    body = section(*TITLE[lang])
    # rows "| step | CPU s | held-out English | L0 prev-token | L1 induction | English twice |"
    number = r"([\d.,]+)"
    rows = re.findall(r"^\| " + r" \| ".join([number] * 6) + r" \|$", body, flags=re.M)
    assert len(rows) >= 4, body
    per_step = training["cpu_seconds"] / training["steps"]
    for step, cpu, heldout, previous, induction, twice in rows:
        point = snapshots[int(figure(step, lang))]
        prev = point["previous_token_scores"][featured["previous_token"]["layer"]][
            featured["previous_token"]["head"]]
        ind = point["induction_scores"][featured["induction"]["layer"]][featured["induction"]["head"]]
        assert figure(cpu, lang) == pytest.approx(point["step"] * per_step, abs=1)
        # to three decimals, as Python rounds them
        assert [heldout, previous, induction, twice] == [
            written(v, lang, ".3f") for v in (point["heldout_loss"], prev, ind, point["copy_ratio"])]
    assert int(figure(rows[-1][0], lang)) == training["steps"]
    # the time the issue allows, 60 minutes: both ratios of 3,600 s
    for key in ("seconds", "cpu_seconds"):
        assert f"{written(training[key] / 3600, lang, '.2f')}x" in body, key
    assert written(REPORT["measures"]["parameters"], lang, ",") in body
    # when the featured heads formed, as the record says
    for kind in ("previous_token", "induction"):
        formed = RECORD["formed_at"][kind]
        assert formed is not None and f"{written(formed, lang, ',')}" in body, kind
    assert f"seed {training['seed']}" in body or f"semente {training['seed']}" in body
    # what the last phase (the English one) bought, and what the English written twice lost
    start = sum(phase["steps"] for phase in REPORT["phases"][:-1])
    first, last = snapshots[start], RECORD["snapshots"][-1]
    assert written(first["heldout_loss"] - last["heldout_loss"], lang, ".3f") in body
    assert f"{written(first['copy_ratio'], lang, '.3f')} " in body
    assert f"{written(last['copy_ratio'], lang, '.3f')}," in body
