"""The model card's training table names every setting the shipped training card records in
the reader's language: no raw key of training.json (``cpu_seconds``, ``load_average``, ...)."""

import json
import re
from pathlib import Path

import pytest

from glassllm import DEMO_CHECKPOINT
from docs_build.pages.model_card import TRAINING_KEYS, training_section
from docs_build.text.languages import LANGUAGES
from docs_build.text.ui import load_ui

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("lang", LANGUAGES, ids=lambda lang: lang.code)
def test_every_recorded_training_setting_has_a_label(lang):
    card = json.loads((DEMO_CHECKPOINT / "training.json").read_text(encoding="utf-8"))
    ui = load_ui(ROOT / "docs", lang)
    table = "\n".join(training_section(card, ui))
    labels = re.findall(r"<tr><td>(.*?)</td>", table)
    assert len(labels) == len(card["training"])
    unlabelled = [key for key in card["training"] if key not in TRAINING_KEYS]
    assert unlabelled == [], f"shown under their JSON key: {unlabelled}"
    assert labels == [ui[f"card.training.{key}"] for key in card["training"]]
    # the wall-clock and CPU times are told apart, so the 30-minute target can be read
    assert ui["card.training.seconds"] != ui["card.training.cpu_seconds"]
