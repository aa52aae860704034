"""The site on each kind of example model (`model: demo`, `random`, a checkpoint path): the
model card page, the head table, the attention pages' featured heads, the placeholders of the
texts and the replay's before-training recording, each checked against the engine and
glassllm.probes recomputed here."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from glassllm import DEMO_CHECKPOINT, Config, GlassLM, probes
from glassllm.recording import loads, record_generation

from docs_build.data import facts
from docs_build.data.example import load_example
from docs_build.engine.settings import settings_from_options
from docs_build.errors import DocsBuildError
from docs_build.text.numbers import format_value

from .conftest import (LANGS, ROOT, Site, build_site, copy_checkout, engine_key, heatmap_labels,
                       run_build, text_of)

ATTENTION_STEPS = ("attn.scores", "attn.mask", "attn.softmax", "attn.context")
SMALL = dict(vocab_size=256, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, max_len=64)


def report_for(model: GlassLM) -> dict:
    """A report.json in the format scripts/train_demo.py writes, with made-up figures;
    the run's seed is INITIAL_SEED (``--init glass``)."""
    copies = {"first_loss": 5.25, "second_loss": 1.5, "ratio": 1.5 / 5.25, "items": 4,
              "induction": {"layer": 1, "head": 2, "score": 0.625}}
    return {
        "measures": {
            "heldout_english_nats_per_byte": 2.5, "english_twice": copies,
            "names": {"first_loss": 4.0, "again_loss": 3.0, "ratio": 0.75,
                      "ratio_every_token": 0.8125, "stories": 3},
            "random_twice": {**copies, "ratio": 0.375, "items": 2},
            "previous_token": {"layer": 0, "head": 1, "score": 0.875},
            "parameters": int(sum(v.size for v in model.state_dict().values())),
            "weights_bytes": 123_456,
            "heldout": {"english_sentences": 4, "stories": 3, "random_sequences": 2,
                        "random_length": 12}},
        "criteria": {
            "held-out English <= 1.25 nats/byte": {"value": 2.5, "target": 1.25, "met": False},
            "English written twice: second/first copy loss <= 0.5":
                {"value": 1.5 / 5.25, "target": 0.5, "met": True},
            "weights file <= 8 MB": {"value": 123_456, "target": 8_000_000, "met": True}},
        "phases": [{"steps": 100, "context": 32, "lr": 0.003, "warmup": 10,
                    "mix": {"span_copy(32, [3, 10], 8)": 1}},
                   {"steps": 200, "context": 64, "lr": 0.003, "warmup": 20, "min_lr": 0.0003,
                    "mix": {"english": 3, "names_story": 1}}],
        "training": {"steps": 300, "seconds": 12.5, "cpu_seconds": 11.25, "threads": 2,
                     "seed": INITIAL_SEED, "init": "glass", "batch_size": 16,
                     "command": "python scripts/train_demo.py --out my-checkpoint"},
    }


def interesting_seed() -> int:
    """A seed whose random model's best previous-token and induction heads are not head 0, so
    a page that opens on them differs from one that opens on the first tab."""
    for seed in range(1, 50):
        report = probes.head_report(GlassLM(Config(**SMALL, seed=seed)))
        if report.best_previous_token()[1] != 0 and report.best_induction()[1] != 0:
            return seed
    raise AssertionError("no seed in 1..49 gives non-zero best heads")


CHECKPOINT_SEED = interesting_seed()
INITIAL_SEED = CHECKPOINT_SEED + 100  # the checkpoint's record/step-0


def write_checkpoint(folder: Path) -> GlassLM:
    model = GlassLM(Config(**SMALL, seed=CHECKPOINT_SEED))
    model.save_pretrained(folder)
    # its report: the run started from another seed, so "before training" is told apart
    # from both the checkpoint and random weights for example.seed
    (folder / "report.json").write_text(json.dumps(report_for(model)), encoding="utf-8")
    (folder / "heldout.txt").write_text("The dog ran to the park. The cat sat on the mat.\n" * 12,
                                        encoding="utf-8")
    return model


def before_training(example, model: GlassLM) -> GlassLM:
    """The site's "before training" model, independently: GlassLM(config, seed) for the seed
    the checkpoint's report.json records with init "glass", else random weights for
    example.seed in the model's shape."""
    seed = example.seed
    if example.checkpoint is not None:
        path = Path(example.checkpoint) / "report.json"
        training = json.loads(path.read_text(encoding="utf-8"))["training"] if path.is_file() else {}
        if training.get("init") == "glass" and isinstance(training.get("seed"), int):
            seed = training["seed"]
    untrained = GlassLM(dataclasses.replace(model.config, seed=seed))
    if example.checkpoint is None:
        return untrained
    loaded = GlassLM.from_pretrained(example.checkpoint)  # the checkpoint's tokenizer
    loaded.load_state_dict(untrained.state_dict())
    return loaded


def site_config(folder: Path, **example) -> Path:
    """mkdocs.yml of this checkout, written into ``folder`` with absolute paths to the
    checkout and the given example options (``model`` relative to ``folder``)."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    config["docs_dir"] = str(ROOT / "docs")
    config["theme"]["custom_dir"] = str(ROOT / "overrides")
    plugin = next(p["glassllm"] for p in config["plugins"] if isinstance(p, dict) and "glassllm" in p)
    plugin.update(package_dir=str(ROOT / "glassllm"), katex_dir=str(ROOT / "node_modules" / "katex"))
    plugin["example"].update(example)
    path = folder / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def checkpoint_site(tmp_path_factory) -> tuple[Site, GlassLM]:
    folder = tmp_path_factory.mktemp("checkpoint_site")
    model = write_checkpoint(folder / "my-checkpoint")
    config = build_site(folder / "site", site_config(folder, model="my-checkpoint"))
    return Site(folder / "site", config), model


@pytest.fixture(scope="module")
def random_site(tmp_path_factory) -> tuple[Site, GlassLM]:
    folder = tmp_path_factory.mktemp("random_site")
    config = build_site(folder / "site", site_config(folder, model="random", seed=CHECKPOINT_SEED))
    return Site(folder / "site", config), GlassLM(Config(**SMALL, seed=CHECKPOINT_SEED))


@pytest.fixture(scope="module")
def demo_site(site) -> tuple[Site, GlassLM]:
    assert site.example.model == "demo"
    return site, GlassLM.from_pretrained(DEMO_CHECKPOINT)


SITES = ("demo_site", "random_site", "checkpoint_site")


@pytest.fixture(params=SITES)
def built(request) -> tuple[Site, GlassLM]:
    return request.getfixturevalue(request.param)


def card_url(lang: str) -> str:
    return f"{LANGS[lang][0]}model-card/"


def article(page: str) -> str:
    return page[page.index("<article"):page.index("</article>")]


# -- settings ---------------------------------------------------------------------------------

def test_bad_model_values_are_refused_with_what_to_write(tmp_path):
    with pytest.raises(DocsBuildError, match=r"example\.model is 'nowhere', but .*nowhere is not "
                                             r"a folder.*'demo'.*'random'.*relative to mkdocs\.yml"):
        settings_from_options({"model": "nowhere"}, tmp_path)
    with pytest.raises(DocsBuildError, match="example.model is empty"):
        settings_from_options({"model": " "}, tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DocsBuildError, match=r"empty has no config\.json, so it is not a checkpoint"):
        settings_from_options({"model": "empty"}, tmp_path)
    write_checkpoint(tmp_path / "ckpt")
    with pytest.raises(DocsBuildError, match=r"example\.d_model, example\.max_len cannot be set "
                                             r"with example\.model: ckpt.*set example\.model: random"):
        settings_from_options({"model": "ckpt", "d_model": 32, "max_len": 64}, tmp_path)


def test_a_bad_model_stops_the_build_with_the_message(tmp_path, caplog):
    with pytest.raises(Exception) as stopped:  # the host's Abort (MkDocs or ProperDocs)
        build_site(tmp_path / "site", site_config(tmp_path, model="missing/folder"))
    assert type(stopped.value).__name__ == "Abort"
    assert "glassllm: example.model is 'missing/folder'" in caplog.text
    assert not (tmp_path / "site" / "index.html").exists()


def test_demo_is_the_packaged_checkpoint_and_a_broken_one_fails_when_loaded(tmp_path):
    demo = settings_from_options({"model": "demo"}, ROOT)
    assert Path(demo.checkpoint).resolve() == DEMO_CHECKPOINT.resolve()
    write_checkpoint(tmp_path / "ckpt")
    weights = tmp_path / "ckpt" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])  # sizes still readable, weights not
    settings = settings_from_options({"model": "ckpt"}, tmp_path)
    with pytest.raises(DocsBuildError, match=r"example\.model: cannot load the checkpoint .*ckpt"):
        load_example(settings, ROOT / "glassllm")


def test_checkpoint_sizes_and_bytes_decide_the_example(tmp_path):
    model = write_checkpoint(tmp_path / "ckpt")
    settings = settings_from_options({"model": "ckpt"}, tmp_path)
    assert (settings.d_model, settings.n_layers, settings.n_heads, settings.max_len) == (
        model.config.d_model, model.config.n_layers, model.config.n_heads, model.config.max_len)
    # the checkpoint has no seed: every other field of the Config comes from it
    ran = load_example(settings, ROOT / "glassllm").run.config
    assert {**dataclasses.asdict(ran), "seed": model.config.seed} == dataclasses.asdict(model.config)
    key = engine_key(ROOT / "glassllm", settings)
    card = tmp_path / "ckpt" / "report.json"
    card.write_text(card.read_text(encoding="utf-8") + " ", encoding="utf-8")
    changed = settings_from_options({"model": "ckpt"}, tmp_path)
    assert engine_key(ROOT / "glassllm", changed) != key  # a rebuild reruns the example
    random = settings_from_options({"model": "random", "d_model": 16}, tmp_path)
    assert random.checkpoint is None and random.d_model == 16 and random.n_layers == 2


# -- the model card ----------------------------------------------------------------------------

@pytest.mark.parametrize("lang", LANGS)
def test_model_card_is_in_both_languages_and_in_their_nav(built, lang):
    site, _ = built
    page = site.html(card_url(lang))
    assert f'<html lang="{LANGS[lang][1]}"' in page
    title = {"en": "Model card", "pt": "Ficha do modelo"}[lang]
    assert f"<h1 id=" in page and title in text_of(article(page))
    home = site.html(LANGS[lang][0])
    nav = home[home.index('<div class="md-sidebar md-sidebar--primary"'):]
    link = re.search(r'<a href="model-card/" class="md-nav__link">(.*?)</a>', nav, re.S)
    assert link and title in text_of(link.group(1))
    assert '<table class="gl-card-table gl-heads">' in page


def test_model_card_shows_the_checkpoints_report(checkpoint_site):
    site, model = checkpoint_site
    report = report_for(model)
    for lang, missed in (("en", "Missed: held-out English, nats per byte is 2.5, where the "
                                "target is ≤ 1.25."),
                         ("pt", "Não cumpridos: inglês reservado, nats por byte é 2,5, e a meta "
                                "é ≤ 1,25.")):
        page = article(site.html(card_url(lang)))
        text = re.sub(r"[ \t\n]+", " ", text_of(page))
        assert ("2 of 3 are met" if lang == "en" else "2 de 3 são cumpridos") in text
        assert missed in text
        table = re.search(r'<table class="gl-card-table gl-criteria">(.*?)</table>', page, re.S).group(1)
        assert len(re.findall(r"<tr>", table)) == 1 + len(report["criteria"])
        assert report["training"]["command"] in text
        assert len(re.findall(r"<tr>", re.search(r'gl-phases">(.*?)</table>', page, re.S).group(1))) == 3
        assert 'class="gl-no-card"' not in page and 'class="gl-timelapse"' not in page


def test_model_card_without_a_report_says_so(random_site):
    site, _ = random_site
    for lang, words in (("en", "This model has no report"), ("pt", "Este modelo não tem relatório")):
        page = article(site.html(card_url(lang)))
        assert words in text_of(page) and "gl-criteria" not in page


def test_a_checkpoint_without_a_report_has_a_card_that_says_so(tmp_path):
    """example.model may name a checkpoint folder without report.json: its card says it has
    no report, and "before training" is random weights for example.seed."""
    from docs_build.pages.model_card import render_model_card
    from docs_build.text.languages import LANGUAGES
    from docs_build.text.ui import load_ui
    write_checkpoint(tmp_path / "ckpt")
    (tmp_path / "ckpt" / "report.json").unlink()
    data = load_example(settings_from_options({"model": "ckpt"}, tmp_path), ROOT / "glassllm")
    assert data.study.card is None and data.study.record is None
    for lang, words, before in (
            (LANGUAGES[0], "This model has no report", "random weights of the same shape for example.seed"),
            (LANGUAGES[1], "Este modelo não tem relatório", "pesos aleatórios da mesma forma")):
        page = render_model_card(data.run, data.study, "Card", "", load_ui(ROOT / "docs", lang),
                                 lang).replace("\\", "")  # Markdown's escapes
        assert words in page and before in page and "gl-criteria" not in page


def _heads_table(page: str) -> dict[tuple[int, int], dict[str, str]]:
    table = re.search(r'<table class="gl-card-table gl-heads">(.*?)</table>', page, re.S).group(1)
    out = {}
    for layer, head, cells in re.findall(r'<tr data-layer="(\d+)" data-head="(\d+)">(.*?)</tr>', table):
        scores = dict((kind, text_of(value)) for kind, value in
                      re.findall(r'<span data-score="([a-z_]+)">(.*?)</span>', cells))
        scores["best"] = re.findall(r'data-score="([a-z_]+)"><strong class="gl-best">', cells)
        out[int(layer), int(head)] = scores
    return out


def test_head_table_equals_probes_recomputed(built):
    site, model = built
    report = probes.head_report(model, length=min(24, model.config.max_len // 2))
    best_prev, best_ind = report.best_previous_token(), report.best_induction()
    for lang in LANGS:
        page = site.html(card_url(lang))
        table = _heads_table(page)
        mark = "," if lang == "pt" else "."  # each language writes its decimal mark
        assert set(table) == {(l, h) for l in range(model.config.n_layers)
                              for h in range(model.config.n_heads)}
        for (layer, head), cells in table.items():
            assert cells["previous_token"] == format_value(report.previous_token[layer, head], mark)
            assert cells["induction"] == format_value(report.induction[layer, head], mark)
            expected = [k for k, best in (("previous_token", best_prev), ("induction", best_ind))
                        if best[:2] == (layer, head)]
            assert cells["best"] == expected, (layer, head)
    best = text_of(re.search(r'<p class="gl-best-heads">(.*?)</p>', site.html(card_url("en"))).group(1))
    assert best == (f"Best previous-token head: layer {best_prev[0]}, head {best_prev[1]} (score "
                    f"{format_value(np.float32(best_prev[2]))}). Best induction head: layer "
                    f"{best_ind[0]}, head {best_ind[1]} (score {format_value(np.float32(best_ind[2]))}).")


def test_model_card_measures_held_out_and_copy_losses(checkpoint_site):
    site, model = checkpoint_site
    untrained = GlassLM(Config(**SMALL, seed=INITIAL_SEED))  # the report's seed
    lines = (site.root / "my-checkpoint" / "heldout.txt").read_text(encoding="utf-8").splitlines()
    text = "\n".join(line for line in lines if line).encode()  # as the report reads it
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>",
                      re.search(r'gl-measured">(.*?)</table>', site.html(card_url("en")), re.S).group(1))
    heldout = next(r for r in rows if r[0].startswith("held-out English"))
    window = model.config.max_len
    assert heldout[1:] == (format_value(np.float32(probes.heldout_loss(model, text, window))),
                           format_value(np.float32(probes.heldout_loss(untrained, text, window))),
                           "2.5")
    report = probes.head_report(model)
    ratio = next(r for r in rows if r[0].startswith("second copy"))
    assert ratio[1] == format_value(np.float32(report.copy_ratio)) and ratio[3] == "—"


# -- the attention pages ----------------------------------------------------------------------

def _notice(page: str, lang: str) -> str:
    start = "What to notice in the snapshot" if lang == "en" else "O que observar no snapshot"
    body = " ".join(text_of(article(page)).split())
    end = "Values from the example run" if lang == "en" else "Valores da execução de exemplo"
    return body[body.index(start):body.index(end)]  # the notes come after the equation


def test_attention_pages_open_on_the_best_heads_and_show_the_probe(built):
    site, model = built
    report = probes.head_report(model, length=min(24, model.config.max_len // 2))
    prev_layer, prev_head, prev_score = report.best_previous_token()
    ind_layer, ind_head, ind_score = report.best_induction()
    for lang in LANGS:
        for step_id in ATTENTION_STEPS:
            page = site.html(f"{LANGS[lang][0]}steps/{step_id}/")
            groups = re.findall(r'<div class="tabbed-set tabbed-alternate" data-tabs="\d+">(.*?)'
                                r'<div class="tabbed-labels">', page)
            opened = [re.findall(r'<input( checked)?', g).index(" checked") for g in groups]
            assert opened[prev_layer] == prev_head and opened[ind_layer] == ind_head, step_id
            for layer, head in ((prev_layer, prev_head), (ind_layer, ind_head)):
                block = re.search(rf'<div class="gl-probe" data-run="probe" data-layer="{layer}" '
                                  rf'data-head="{head}">(.*?)</figure></div>', page, re.S)
                assert block, (step_id, layer, head)
                rows = heatmap_labels(block.group(1))
                assert len(rows) == 2 * report.length  # the probe: the random string twice
            notice = _notice(page, lang)
            word = "head" if lang == "en" else "cabeça"
            assert f"{word} {prev_head}" in notice and f"{word} {ind_head}" in notice, step_id
    softmax = _notice(site.html("steps/attn.softmax/"), "en")
    assert (f"In layer {prev_layer}, head {prev_head} is a previous-token head" in softmax
            and f"{format_value(np.float32(prev_score))} of each row's weight" in softmax)
    assert (f"In layer {ind_layer}, head {ind_head} is an induction head" in softmax
            and f"on average {format_value(np.float32(ind_score))} of its weight" in softmax)


def test_the_rows_the_best_heads_get_right_are_counted_from_the_probe(built):
    """"In 47 of its 47 rows": the counts the attention texts give, redone from the probe's
    attention weights (the largest weight of a row is the largest masked score's)."""
    site, model = built
    length = min(24, model.config.max_len // 2)
    report = probes.head_report(model, length=length)
    weights = probes.attention_weights(model, report.tokens)  # the probe: (L, H, n, n)
    prev_layer, prev_head, _ = report.best_previous_token()
    ind_layer, ind_head, _ = report.best_induction()
    rows = np.arange(1, 2 * length)
    prev = int(np.sum(weights[prev_layer, prev_head, rows].argmax(-1) == rows - 1))
    rows = np.arange(length, 2 * length)
    ind = int(np.sum(weights[ind_layer, ind_head, rows].argmax(-1) == rows - length + 1))
    scores = " ".join(text_of(article(site.html("steps/attn.scores/"))).split())
    assert f"in {prev} of its {2 * length - 1} rows" in scores
    assert f"in {ind} of those {length} rows" in scores
    rope = " ".join(text_of(article(site.html("pt/steps/attn.q_rope/"))).split())
    assert f"em {prev} das {2 * length - 1} linhas" in rope


# -- placeholders -----------------------------------------------------------------------------

def test_placeholders_fill_known_names_and_refuse_the_rest():
    values = {"prev_head": "2", "prompt": "The cat"}
    assert facts.fill("head {{ prev_head }} of {{prompt}}", values, "x.md") == "head 2 of The cat"
    with pytest.raises(DocsBuildError, match=r"x\.md: unknown placeholder \{\{ prev_haed \}\} "
                                             r"\(did you mean prev_head\?\).*docs_build/data/facts\.py"):
        facts.fill("{{ prev_haed }}", values, "x.md")
    with pytest.raises(DocsBuildError, match="a '{{' without a closing"):
        facts.fill("{{ prev_head", values, "x.md")
    with pytest.raises(DocsBuildError, match=r"\{\{ heldout_loss \}\} has no value in this build"):
        facts.fill("{{ heldout_loss }}", {"heldout_loss": None}, "x.md")


def test_every_placeholder_has_a_value_equal_to_the_engines(checkpoint_site):
    site, model = checkpoint_site
    values = site.facts
    assert set(values) == set(facts.FACTS) and None not in values.values()
    ex = site.example
    steps = list(model.generate(model.tokenizer.encode(ex.prompt), ex.tokens, greedy=ex.greedy,
                                temperature=ex.temperature, top_k=ex.top_k, seed=ex.sampling_seed))
    probs = steps[ex.traced_step].probs
    assert values["top_prob"] == format_value(np.float32(probs.max()))
    assert values["chosen_prob"] == format_value(np.float32(probs[steps[ex.traced_step].token]))
    text = model.tokenizer.encode(ex.loss_text)
    assert values["loss"] == format_value(np.float32(model.loss(text[:-1], text[1:])))
    report = probes.head_report(model)
    assert values["induction_head"] == str(report.best_induction()[1])
    assert values["copy_ratio"] == format_value(np.float32(report.copy_ratio))
    lines = (site.root / "my-checkpoint" / "heldout.txt").read_text(encoding="utf-8").splitlines()
    assert values["heldout_bytes"] == str(len("\n".join(line for line in lines if line).encode()))


def test_step_text_placeholders_equal_the_engines(checkpoint_site):
    """The figures facts.py gives the step texts of embed, attn.norm, logits, probs, loss and
    loss.grad, recomputed here from the engine."""
    site, model = checkpoint_site
    values, ex = site.facts, site.example
    steps = list(model.generate(model.tokenizer.encode(ex.prompt), ex.tokens, greedy=ex.greedy,
                                temperature=ex.temperature, top_k=ex.top_k, seed=ex.sampling_seed))
    tokens = model.tokenizer.encode(ex.prompt) + [s.token for s in steps[:ex.traced_step]]
    # the text the tokens stand for, newlines shown as ⏎ (the model's tokenizer decodes them)
    assert values["traced_text"] == facts.format_fact(facts.Text(
        model.tokenizer.decode(tokens).replace("\n", "⏎")))
    assert values["probs_median"] == format_value(np.float32(np.median(steps[ex.traced_step].probs)))
    untrained = before_training(ex, model)
    first = next(untrained.generate(tokens, 1, greedy=True))
    assert values["untrained_top_prob"] == format_value(np.float32(first.probs.max()))
    rows = untrained.embed_tokens[tokens].astype(np.float64)
    assert values["untrained_embed_rms"] == format_value(np.float32(
        np.sqrt((rows ** 2).mean(axis=-1)).mean()))
    logits = model.forward(tokens)
    hits = sum(int(np.argmax(logits[i])) == tokens[i + 1] for i in range(len(tokens) - 1))
    text = model.tokenizer.encode(ex.loss_text)
    rows = model.forward(text[:-1]).astype(np.float64)
    rows -= rows.max(axis=-1, keepdims=True)
    log_probs = rows - np.log(np.exp(rows).sum(axis=-1, keepdims=True))
    losses = -log_probs[np.arange(len(text) - 1), text[1:]]
    assert values["hardest_position"] == str(int(np.argmax(losses)))
    assert values["easiest_position"] == str(int(np.argmin(losses)))
    assert values["logits_known"] == str(len(tokens) - 1) and values["logits_hits"] == str(hits)


def test_an_unknown_placeholder_in_a_text_stops_the_build(tmp_path):
    root = copy_checkout(tmp_path / "checkout")
    text = root / "docs" / "_texts" / "pt" / "steps" / "attn.mask.md"
    text.write_text(text.read_text(encoding="utf-8") + "\n{{ induction_haed }}\n", encoding="utf-8")
    result = run_build(root)
    assert result.returncode != 0
    assert "attn.mask.md: unknown placeholder {{ induction_haed }} (did you mean induction_head" \
        in result.stderr + result.stdout
    assert not (root / "site" / "index.html").exists()


# -- the replay -------------------------------------------------------------------------------

def test_replay_carries_the_untrained_model_on_the_same_prompt(built):
    site, model = built
    ex = site.example
    run = loads((site.dir / "assets" / "replay" / "run.glrec").read_bytes())
    before = loads((site.dir / "assets" / "replay" / "before.glrec").read_bytes())
    listed = json.loads((site.dir / "assets" / "replay" / "site.json").read_bytes())["recordings"]
    assert {"id": "before", "file": "before.glrec",
            "label": {"en": "Before training", "pt": "Antes do treino"}} in listed
    untrained = before_training(ex, model)
    again = record_generation(untrained, model.tokenizer.encode(ex.prompt), len(before.generated),
                              greedy=ex.greedy, temperature=ex.temperature, top_k=ex.top_k,
                              seed=ex.sampling_seed)
    assert before.kind == "generation" and before.prompt == run.prompt == model.tokenizer.encode(ex.prompt)
    assert len(before.generated) == len(run.generated) and before.generated == again.generated
    assert before.config == again.config and len(before.events) == len(again.events)
    for mine, theirs in zip(before.events, again.events):
        # the site stores this comparison run exactly (float32, recorded with the KV cache)
        assert mine.step == theirs.step and np.array_equal(mine.value, theirs.value)
    if ex.checkpoint is not None:  # a checkpoint's run differs from its untrained twin
        assert not np.array_equal(run.events[0].value, before.events[0].value)
