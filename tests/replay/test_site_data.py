"""The replay page's data as the docs build writes it: the example of mkdocs.yml, within the
size budget, consistent with the step pages' run, reproducible, and the page strings
complete in both languages."""

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from docs_build.data.example import ExampleData, load_example
from docs_build.engine.cache import CACHE_ENV
from docs_build.engine.runner import REPLAY_SUFFIX as SITE_SUFFIX
from docs_build.engine.runner import REPLAY_TOKENS
from docs_build.engine.schema import ReplayFile
from docs_build.engine.settings import ExampleSettings, settings_from_options
from docs_build.pages.replay import SIZE_BUDGET, player_assets, replay_files
from glassllm import DEMO_CHECKPOINT, STEPS, GlassLM, load_tokenizer
from glassllm.recording import BINARY_SUFFIX, loads
from glassllm.steps import PACKAGE_DIR

encode = load_tokenizer(DEMO_CHECKPOINT).encode  # mkdocs.yml's `model: demo` reads its own tokens
from tests import hosts

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PLAYER_DIR = REPO / "docs_build" / "assets" / "replay"


def strict_json(data: bytes):
    def reject(name):
        raise ValueError(f"bare {name} is not JSON")
    return json.loads(data, parse_constant=reject)


@pytest.fixture(scope="module")
def settings() -> ExampleSettings:
    """The example the site builds, as mkdocs.yml configures the glassllm plugin."""
    config = hosts.build_functions()[1](str(REPO / "mkdocs.yml"))
    return settings_from_options(dict(config.plugins["glassllm"].config.example), REPO)


@pytest.fixture(scope="module")
def example(settings) -> ExampleData:
    return load_example(settings, PACKAGE_DIR)


@pytest.fixture(scope="module")
def files(example):
    return replay_files(DOCS, example.catalog.steps, example.run.labels, example.replay)


RECORDINGS = ("run.glrec", "loss.glrec", "before.glrec", "training.glrec")


def test_default_recordings_fit_the_budget_in_the_binary_format(files):
    assert SITE_SUFFIX == BINARY_SUFFIX  # spelled out so the site's side needs no glassllm
    assets = player_assets()
    assert set(files) == {f"assets/replay/{name}" for name in
                          (*RECORDINGS, "site.json", "steps.json", *assets)}
    # the player's folder is shipped as it is, and every module it imports is in it
    shipped = {p.relative_to(PLAYER_DIR).as_posix() for p in PLAYER_DIR.rglob("*") if p.is_file()}
    assert shipped == set(assets) and {"replay.js", "replay.css", "boot.js"} <= shipped
    for name in assets:
        if name.endswith(".js"):
            imported = re.findall(r'from "(\.[\w./-]+)"|import\("(\.[\w./-]+)"\)',
                                  (PLAYER_DIR / name).read_text(encoding="utf-8"))
            for spec in (a or b for a, b in imported):
                target = (PLAYER_DIR / name).parent.joinpath(spec).resolve()
                assert target.relative_to(PLAYER_DIR).as_posix() in assets, (name, spec)
    data = {name: len(files[f"assets/replay/{name}"])
            for name in (*RECORDINGS, "site.json", "steps.json")}
    assert sum(data.values()) <= SIZE_BUDGET, f"the replay data is {data} bytes"
    strict_json(files["assets/replay/site.json"])
    # every recording holds the tracer's values exactly (the page says so)
    dtypes = {name: {e["dtype"] for e in binary_index(files[f"assets/replay/{name}"])["events"]}
              for name in RECORDINGS}
    assert dtypes == {"run.glrec": {"float32", "int32"}, "loss.glrec": {"float32"},
                      "before.glrec": {"float32", "int32"}, "training.glrec": {"float32"}}
    for page in ("replay.md", "pt/replay.md"):
        assert "float32" in (DOCS / page).read_text(encoding="utf-8")


def binary_index(data: bytes) -> dict:
    """The JSON index of a version 2 file (after its 16-byte header)."""
    length = int.from_bytes(data[12:16], "little")
    return strict_json(data[16:16 + length])


def test_replay_plays_the_examples_run_with_several_tokens(files, settings):
    run = loads(files["assets/replay/run.glrec"])
    assert run.kind == "generation" and run.prompt == encode(settings.prompt)
    assert len(run.generated) == max(settings.tokens, REPLAY_TOKENS)
    assert len(run.events) == len(run.generated) * (18 * settings.n_layers + 5)
    # the step pages' run (its own token count) draws the same first tokens
    model = GlassLM.from_pretrained(DEMO_CHECKPOINT)  # mkdocs.yml's `model: demo`
    pages_run = [s.token for s in model.generate(
        encode(settings.prompt), settings.tokens, greedy=settings.greedy,
        temperature=settings.temperature, top_k=settings.top_k, seed=settings.sampling_seed)]
    assert run.generated[:settings.tokens] == pages_run
    loss = loads(files["assets/replay/loss.glrec"])
    text = encode(settings.loss_text)
    assert loss.kind == "loss" and loss.prompt == text[:-1] and loss.targets == text[1:]
    # a subword model's recordings say how each token reads, as `glassllm record` writes them
    tokenizer = load_tokenizer(DEMO_CHECKPOINT)
    index = binary_index(files["assets/replay/run.glrec"])
    assert index["generated"]["strings"] == tokenizer.strings(run.generated)
    assert index["prompt"]["text"] == settings.prompt


def test_the_training_recording_is_the_training_pages_step(files, example):
    """training.glrec is the step of the page "One training step": the same tokens, loss,
    gradients and update, recorded by glassllm.recording.record_training."""
    rec = loads(files["assets/replay/training.glrec"])
    t = example.run.training
    per_pass = rec.events_per_pass()
    assert rec.kind == "training" and rec.prompt == t.tokens and rec.targets == t.targets
    assert rec.loss == t.loss and rec.update["loss_after"] == t.loss_after
    assert len(rec.events) == 2 * per_pass == 2 * len(t.trace.records)
    for event, record in zip(rec.events[per_pass:], t.grad_trace.records):
        assert event.grad and (event.step, event.layer, event.head) == (record.id, record.layer,
                                                                       record.head)
        np.testing.assert_array_equal(event.value, record.value)
    u = t.update
    param = next(p for p in rec.update["params"] if p["name"] == u.name)
    entry = param["entries"][0]  # the largest |gradient|: the weight the page works by hand
    assert tuple(entry["index"]) == tuple(u.index)
    assert (entry["before"], entry["grad"], entry["after"]) == (u.weight, u.grad, u.updated)
    assert (rec.update["lr"], param["weight_decay"]) == (u.lr, u.weight_decay)


def test_steps_json_is_the_engines_step_table_and_token_labels(files):
    """The replay's JavaScript reads the step facts and token labels from here instead of
    copying them: exactly glassllm's own, as the child reported them."""
    from glassllm.steps import step_table

    table = strict_json(files["assets/replay/steps.json"])
    tokenizer = load_tokenizer(DEMO_CHECKPOINT)
    ids = range(tokenizer.vocab_size)
    assert table == {"steps": step_table(), "token_labels": tokenizer.labels(ids),
                     "token_bytes": [b.hex() for b in tokenizer.token_bytes(ids)]}
    assert [row["id"] for row in table["steps"]] == list(STEPS)  # execution order
    # a chip per subword token: its own string with a space shown as ␣
    strings = tokenizer.strings(ids)
    assert table["token_labels"][strings.index(" the")] == "␣the"
    assert table["token_labels"][strings.index("\n")] == "⏎"
    assert bytes.fromhex(table["token_bytes"][strings.index(" the")]) == b" the"


def test_site_index_labels_and_links_in_both_languages(files, example):
    site = strict_json(files["assets/replay/site.json"])
    steps = example.catalog
    for lang, prefix in (("en", ""), ("pt", "pt/")):
        assert set(site["labels"][lang]) == set(STEPS)
        assert all(label.strip() for label in site["labels"][lang].values())
        assert site["pages"][lang]["attn.softmax"] == f"{prefix}steps/attn.softmax/"
        source = site["sources"][lang]["attn.softmax"]
        step = steps["attn.softmax"]
        assert source == {"file": step.file, "line": step.line,
                          "url": f"{prefix}source/glassllm/nn/#L{step.line}"}
    assert site["labels"]["en"]["attn.mask"] != site["labels"]["pt"]["attn.mask"]


def test_site_index_lists_the_recordings_in_order_with_labels(files):
    site = strict_json(files["assets/replay/site.json"])
    assert [(r["id"], r["file"]) for r in site["recordings"]] == [
        ("generation", "run.glrec"), ("loss", "loss.glrec"), ("before", "before.glrec"),
        ("training", "training.glrec")]
    assert site["recordings"][0]["label"] == {"en": "Generation", "pt": "Geração"}
    assert site["recordings"][1]["label"] == {"en": "Loss", "pt": "Perda"}
    assert site["recordings"][2]["label"] == {"en": "Before training", "pt": "Antes do treino"}
    assert site["recordings"][3]["label"] == {"en": "One training step",
                                              "pt": "Um passo de treino"}
    for entry in site["recordings"]:
        assert f"assets/replay/{entry['file']}" in files


def test_another_recording_is_one_more_list_item(example):
    """What the page offers is the child's list of recordings: an entry adds its file and
    its site.json item, in place."""
    recordings = example.replay
    generation = recordings[0][1]
    extra = [*recordings[:1], (ReplayFile("again", "replay.loss", "again.glrec"), generation),
             *recordings[1:]]
    files = replay_files(DOCS, example.catalog.steps, example.run.labels, extra)
    site = strict_json(files["assets/replay/site.json"])
    assert [r["id"] for r in site["recordings"]] == ["generation", "again", "loss", "before",
                                                      "training"]
    assert files["assets/replay/again.glrec"] == files["assets/replay/run.glrec"]


def test_a_label_that_is_not_a_ui_key_is_a_clear_error(example):
    from docs_build.errors import DocsBuildError
    (listed, data), *_ = example.replay
    recordings = [(dataclasses.replace(listed, label_key="replay.nope"), data)]
    with pytest.raises(DocsBuildError, match="replay.nope.*UI_KEYS"):
        replay_files(DOCS, example.catalog.steps, example.run.labels, recordings)


@pytest.mark.parametrize("rec_id", ["file", "Run", "a/b", "loss"])
def test_recording_ids_are_unique_file_names(example, rec_id):
    from docs_build.errors import DocsBuildError
    listed, data = example.replay[1]
    recordings = [*example.replay, (dataclasses.replace(listed, id=rec_id), data)]
    with pytest.raises(DocsBuildError, match="replay recording id"):
        replay_files(DOCS, example.catalog.steps, example.run.labels, recordings)


def test_same_inputs_give_the_same_bytes(files, settings):
    """A second child run (no cache) writes the same recordings: reproducible builds."""
    import os
    from unittest import mock

    from docs_build.engine import load

    load.clear_memory_cache()
    with mock.patch.dict(os.environ, {CACHE_ENV: "off"}):
        again = load_example(settings, PACKAGE_DIR)
    assert again.source == "child"
    assert replay_files(DOCS, again.catalog.steps, again.run.labels, again.replay) == files


def page_strings(page: str) -> dict:
    text = (DOCS / page).read_text(encoding="utf-8")
    block = re.search(r'<script type="application/json" class="glassllm-replay-strings">'
                      r'(.*?)</script>', text, re.S)
    assert block, f"docs/{page} lacks its replay UI strings"
    return json.loads(block.group(1))


def test_page_strings_cover_every_key_the_player_uses_in_both_languages():
    en, pt = page_strings("replay.md"), page_strings("pt/replay.md")
    assert set(en) == set(pt)
    js = "\n".join(p.read_text(encoding="utf-8") for p in sorted(PLAYER_DIR.rglob("*.js")))
    used = set(re.findall(r'\bt\("(\w+)"', js))
    used |= {key for pair in re.findall(r'\bt\([^()]*\?\s*"(\w+)"\s*:\s*"(\w+)"\)', js)
             for key in pair}
    used |= set(re.findall(r'"(reason[A-Z]\w*)"', js))
    from glassllm.recording import AXES
    used |= {f"axis_{name}" for axes in AXES.values() for name in axes}
    assert used - set(en) == set()
    for key, text in en.items():  # same placeholders in both languages
        assert set(re.findall(r"\{\w+\}", text)) == set(re.findall(r"\{\w+\}", pt[key])), key
