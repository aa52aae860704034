"""The demo's model card is built from its report.json (scripts/train_demo.py's
measurements on held-out texts against issue 28's criteria), read here at test time: every
criterion with its measured value, target and verdict in both languages, each missed one named
with its number, the tokenizer and its bytes per token recomputed, the recipe's phases, the
training settings labelled, and "before training" the run's own initial weights."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest

from glassllm import DEMO_CHECKPOINT, GlassLM
from docs_build.pages import model_card
from docs_build.text.languages import LANGUAGES
from docs_build.text.numbers import format_value
from docs_build.text.ui import load_ui

from tests.conftest import load_script

from .conftest import ROOT, text_of

REPORT = json.loads((DEMO_CHECKPOINT / "report.json").read_text(encoding="utf-8"))
RECORD = json.loads((DEMO_CHECKPOINT / REPORT["record"]["file"]).read_text(encoding="utf-8"))
MARK = {"model-card/": (".", ","), "pt/model-card/": (",", "\u202f")}  # decimal, thousands


def shown(value, url: str) -> str:
    """A report figure as the page in ``url`` writes it (whole numbers grouped)."""
    decimal, group = MARK[url]
    if isinstance(value, int):
        return f"{value:,}".replace(",", group)
    return format_value(np.float32(value), decimal)


def article(page: str) -> str:
    return page[page.index("<article"):page.index("</article>")]


def words(page: str) -> str:
    """The article's visible text, its runs of spaces and newlines as one space (not the
    narrow no-break space that groups thousands in Portuguese)."""
    return re.sub(r"[ \t\n]+", " ", text_of(article(page)))


@pytest.fixture(scope="module")
def train_demo():
    return load_script("train_demo")


def test_every_criterion_the_script_measures_has_a_label_in_each_language(train_demo):
    assert set(model_card.CRITERIA) == set(train_demo.CRITERIA)
    for lang in LANGUAGES:
        ui = load_ui(ROOT / "docs", lang)
        for name in train_demo.CRITERIA:
            key, sign = model_card.criterion_parts(name)
            assert ui[f"card.criterion.{key}"] and sign in "≤≥"


@pytest.mark.parametrize("url", ["model-card/", "pt/model-card/"])
def test_the_criteria_table_is_the_reports(site, url):
    page = article(site.html(url))
    table = re.search(r'<table class="gl-card-table gl-criteria">(.*?)</table>', page, re.S).group(1)
    rows = [[text_of(c) for c in re.findall(r"<td>(.*?)</td>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S)]
    criteria = REPORT["criteria"]
    assert len(rows) == len(criteria)
    yes, no = {"model-card/": ("yes", "no"), "pt/model-card/": ("sim", "não")}[url]
    for row, (name, c) in zip(rows, criteria.items()):
        sign = "≤" if " <= " in name else "≥"
        assert row[1:] == [shown(c["value"], url), f"{sign} {shown(c['target'], url)}",
                           yes if c["met"] else no], name
    # the sentence above it counts them and names every missed one with its number
    summary = text_of(re.search(r"<p>([^<]*?\(issue 28\)[^<]*)</p>", page).group(1))
    met = sum(c["met"] for c in criteria.values())
    assert f"{met} {'of' if url == 'model-card/' else 'de'} {len(criteria)}" in summary
    for name, c in criteria.items():
        number = f"{shown(c['value'], url)}, "
        assert (number in summary) == (not c["met"]), name


@pytest.mark.parametrize("url", ["model-card/", "pt/model-card/"])
def test_the_held_out_sentences_give_the_reports_numbers(site, url):
    text = words(site.html(url))
    m = REPORT["measures"]
    et, names, rt, pt = m["english_twice"], m["names"], m["random_twice"], m["previous_token"]
    for value in (m["heldout_english_nats_per_byte"], et["first_loss"], et["second_loss"],
                  et["ratio"], et["induction"]["score"], names["first_loss"], names["again_loss"],
                  names["ratio"], names["ratio_every_token"], rt["first_loss"], rt["second_loss"],
                  rt["ratio"], rt["induction"]["score"], pt["score"]):
        assert shown(value, url) in text, value
    word = "head" if url == "model-card/" else "cabeça"
    assert f"{word} {et['induction']['head']} " in text and f"{word} {pt['head']} " in text


@pytest.mark.parametrize("url", ["model-card/", "pt/model-card/"])
def test_the_tokenizer_and_its_bytes_per_token_are_recomputed(site, url):
    text = words(site.html(url))
    model = GlassLM.from_pretrained(DEMO_CHECKPOINT)
    lines = [line for line in (DEMO_CHECKPOINT / "heldout.txt").read_text(encoding="utf-8")
             .splitlines() if line]
    heldout = "\n".join(lines)
    tokens = model.tokenizer.encode(heldout)
    tokenizer = json.loads((DEMO_CHECKPOINT / "tokenizer.json").read_text(encoding="utf-8"))
    assert len(tokenizer["model"]["vocab"]) == model.config.vocab_size
    byte_bpe = {"model-card/": "byte-level BPE", "pt/model-card/": "BPE em nível de bytes"}[url]
    assert f"{byte_bpe} {'of' if url == 'model-card/' else 'de'} {shown(model.config.vocab_size, url)}" in text
    assert shown(len(tokenizer["model"]["merges"]), url) in text
    assert f"{shown(len(heldout.encode()), url)} bytes" in text
    assert f"{shown(len(tokens), url)} tokens: {shown(len(heldout.encode()) / len(tokens), url)}" in text


def test_the_held_out_figure_of_this_build_is_the_reports(site):
    """The build reads the held-out English as the report did (its lines, joined, in windows
    of the context): this model's figure is the report's, for these weights."""
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>",
                      re.search(r'gl-measured">(.*?)</table>', site.html("model-card/"), re.S).group(1))
    heldout = next(r for r in rows if r[0].startswith("held-out English"))
    reported = REPORT["measures"]["heldout_english_nats_per_byte"]
    assert heldout[1] == heldout[3] == format_value(np.float32(reported))


@pytest.mark.parametrize("url", ["model-card/", "pt/model-card/"])
def test_the_recipe_is_the_reports_phases(site, url):
    page = article(site.html(url))
    table = re.search(r'<table class="gl-card-table gl-phases">(.*?)</table>', page, re.S).group(1)
    rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S)
    assert len(rows) == len(REPORT["phases"])
    first = 0
    for n, (row, phase) in enumerate(zip(rows, REPORT["phases"]), 1):
        cells = [text_of(c) for c in re.findall(r"<td>(.*?)</td>", row, re.S)]
        assert cells[0] == str(n) and f"{first} " in cells[1] and f" {first + phase['steps']})" in cells[1]
        assert cells[2] == str(phase["context"])
        first += phase["steps"]
        total = sum(phase["mix"].values())
        for source, weight in phase["mix"].items():
            assert f"{round(100 * weight / total)} %:" in cells[4] and source in cells[4]


@pytest.mark.parametrize("lang", LANGUAGES, ids=lambda lang: lang.code)
def test_every_recorded_training_setting_has_a_label(lang):
    ui = load_ui(ROOT / "docs", lang)
    table = "\n".join(model_card.training_section(REPORT, ui, lang))
    table = re.search(r'gl-training">(.*?)</table>', table, re.S).group(1)
    labels = re.findall(r"<tr><td>(.*?)</td>", table)
    keys = [key for key in REPORT["training"] if key != "corpus"]
    unlabelled = [key for key in keys if key not in model_card.TRAINING_KEYS]
    assert unlabelled == [], f"shown under their JSON key: {unlabelled}"
    assert labels == [ui[f"card.training.{key}"] for key in keys]
    # the wall-clock and CPU times are told apart
    assert ui["card.training.seconds"] != ui["card.training.cpu_seconds"]


@pytest.mark.parametrize("lang", LANGUAGES, ids=lambda lang: lang.code)
def test_a_source_read_more_than_once_says_how_many_times(lang):
    ui = load_ui(ROOT / "docs", lang)
    sources = [{"name": "wordnet_examples", "bytes": 1000, "lines": 10, "times": 4},
               {"name": "austen", "bytes": 2000, "lines": 20, "times": 1}, {"name": "old"}]
    rows = re.findall(r"<tr>(.*?)</tr>", model_card.sources_table(sources, ui, lang), re.S)[1:]
    times = ui["card.sources.times"].format(times=4)
    assert [times in row for row in rows] == [True, False, False]


@pytest.mark.parametrize("lang", LANGUAGES, ids=lambda lang: lang.code)
def test_a_text_read_alone_is_named_as_the_sources_table_names_it(lang):
    # scripts/heldout/phases_everyday.json's last phase reads corpus('harvard_sentences')
    ui = load_ui(ROOT / "docs", lang)
    said = model_card.source_text("corpus('harvard_sentences')", ui)
    assert said == ui["card.mix.corpus"].format(text=ui["card.part.harvard_sentences"])
    assert model_card.source_text("corpus(3)", ui) == "corpus(3)"  # no words for it: as it is
    assert model_card.part_name("harvard_sentences", ui) in said
    ding = model_card.source_text("corpus('ding_sentences')", ui)
    assert ding == ui["card.mix.corpus"].format(text=ui["card.part.ding_sentences"])


def test_a_criterion_the_card_cannot_name_is_refused():
    from docs_build.errors import DocsBuildError
    ui = load_ui(ROOT / "docs", LANGUAGES[0])
    report = {**REPORT, "criteria": {"speed >= 9": {"value": 1.0, "target": 9, "met": False}}}
    with pytest.raises(DocsBuildError, match=r"criterion 'speed >= 9'.*CRITERIA.*card\.criterion"):
        model_card.criteria_section(report, ui)


def test_before_training_is_the_runs_own_initial_weights(site, train_demo):
    """report.json records the run's seed and initialisation; GlassLM(config, seed) gives
    back step 0 of the training record, and the card's "before training" is that model."""
    training = REPORT["training"]
    assert training["init"] == "glass" and isinstance(training["seed"], int)
    trained = GlassLM.from_pretrained(DEMO_CHECKPOINT)
    initial = GlassLM.from_pretrained(DEMO_CHECKPOINT)  # its tokenizer, the initial weights
    initial.load_state_dict(GlassLM(dataclasses.replace(trained.config, seed=training["seed"]))
                            .state_dict())
    english, stories = train_demo.read_heldout()
    measured = train_demo.measure(initial, english, stories)
    step0 = RECORD["snapshots"][0]
    assert step0["step"] == 0
    assert measured["previous_token"]["scores"] == step0["previous_token_scores"]
    assert measured["english_twice"]["induction_scores"] == step0["induction_scores"]
    assert measured["heldout_english_nats_per_byte"] == pytest.approx(step0["heldout_loss"], rel=1e-6)
    page = site.html("model-card/")
    text = words(page)
    assert f"with seed {training['seed']}, as report.json records them" in text
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>",
                      re.search(r'gl-measured">(.*?)</table>', page, re.S).group(1))
    heldout = next(r for r in rows if r[0].startswith("held-out English"))
    assert heldout[2] == format_value(np.float32(step0["heldout_loss"]))


def test_a_report_missing_a_measure_is_refused_with_what_is_missing():
    from docs_build.errors import DocsBuildError
    ui = load_ui(ROOT / "docs", LANGUAGES[0])
    measures = {k: v for k, v in REPORT["measures"].items() if k != "names"}
    with pytest.raises(DocsBuildError, match=r"report\.json has no measures\.names"):
        model_card.report_sections({**REPORT, "measures": measures}, ui, LANGUAGES[0])
    broken = {**REPORT["measures"], "english_twice": {"first_loss": 1.0}}
    with pytest.raises(DocsBuildError, match=r"report\.json is not the report scripts/"
                                             r"train_demo\.py writes \(missing or wrong KeyError"):
        model_card.report_sections({**REPORT, "measures": broken}, ui, LANGUAGES[0])
