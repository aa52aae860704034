"""bridge.py, the Python half of the browser runtime, run natively: what it hands the page
is exactly the tracer's records of GlassLM.from_pretrained(DEMO_CHECKPOINT).forward(...) over
the text read by the demo's own tokenizer (its tokenizer.json, never bytes), and an engine
error comes back as the engine's own type and message."""

from __future__ import annotations

import importlib.util
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from glassllm import DEMO_CHECKPOINT, GlassLM, Tracer, load_tokenizer

ROOT = Path(__file__).resolve().parents[3]
BRIDGE = ROOT / "docs_build" / "assets" / "runtime" / "bridge.py"
TOKENIZER = load_tokenizer(DEMO_CHECKPOINT)
encode = TOKENIZER.encode  # the demo's own tokens


@pytest.fixture(scope="module")
def bridge():
    spec = importlib.util.spec_from_file_location("glassllm_bridge", BRIDGE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    reply = module.call("load", {})
    assert reply["ok"], reply
    return module


def unpack(entries, values: bytes):
    flat = np.frombuffer(values, dtype="<f4")
    return [(e["id"], e["layer"], e["head"],
             flat[e["offset"]:e["offset"] + e["size"]].reshape(e["shape"])) for e in entries]


def test_a_run_is_the_tracers_records_of_the_demo_model_in_order(bridge):
    reply = bridge.call("run", {"text": "The cat sat"})
    assert reply["ok"], reply
    result = reply["result"]
    trace = Tracer()
    GlassLM.from_pretrained(DEMO_CHECKPOINT).forward(encode("The cat sat"), trace)
    assert result["tokens"] == encode("The cat sat")
    got = unpack(result["records"], result["values"])
    assert [(i, layer, head) for i, layer, head, _ in got] == [
        (r.id, r.layer, r.head) for r in trace.records]
    for (step, _, _, values), record in zip(got, trace.records):
        np.testing.assert_array_equal(values, record.value, err_msg=step)
    assert len(result["values"]) == 4 * sum(r.value.size for r in trace.records)
    assert result["timing"]["forward_ms"] > 0


def test_a_generation_is_the_engines_for_the_same_seed(bridge):
    reply = bridge.call("generate", {"text": "The cat", "n": 4, "seed": 3, "trace": True})
    assert reply["ok"], reply
    result = reply["result"]
    steps = list(GlassLM.from_pretrained(DEMO_CHECKPOINT).generate(encode("The cat"), 4, seed=3,
                                                                     trace=True))
    assert [s["token"] for s in result["steps"]] == [s.token for s in steps]
    flat = np.frombuffer(result["values"], dtype="<f4")
    for mine, theirs in zip(result["steps"], steps):
        probs = flat[mine["probs"]["offset"]:mine["probs"]["offset"] + mine["probs"]["size"]]
        np.testing.assert_array_equal(probs, theirs.probs)
        records = unpack(mine["records"], result["values"])
        assert [r[0] for r in records] == [r.id for r in theirs.trace.records]
        assert records[-1][0] == "sample" and int(records[-1][3]) == theirs.token


def engine_error(call) -> tuple[str, str]:
    try:
        call()
    except Exception as error:  # noqa: BLE001 - whatever the engine raises
        return type(error).__name__, str(error)
    raise AssertionError("the engine accepted it")


@pytest.mark.parametrize("text", ["", "x" * 500, "\ud800"])
def test_an_engine_error_comes_back_as_its_own_type_and_message(bridge, text):
    model = GlassLM.from_pretrained(DEMO_CHECKPOINT)
    kind, message = engine_error(lambda: model.forward(encode(text), Tracer()))
    assert bridge.call("run", {"text": text}) == {"ok": False, "error": {"type": kind,
                                                                          "message": message}}


def test_bad_generation_settings_are_the_engines_to_refuse(bridge):
    model = GlassLM.from_pretrained(DEMO_CHECKPOINT)
    kind, message = engine_error(lambda: model.generate(encode("Hi"), 3, temperature=-1))
    assert bridge.call("generate", {"text": "Hi", "n": 3, "temperature": -1}) == {
        "ok": False, "error": {"type": kind, "message": message}}


def test_load_names_the_installed_glassllm_and_labels_every_token(bridge):
    import glassllm

    info = bridge.call("load", {})["result"]
    assert info["build"] == {"version": glassllm.__version__, "commit": None, "modified": False}
    vocab = GlassLM.from_pretrained(DEMO_CHECKPOINT).config.vocab_size
    assert vocab > 256 and len(info["labels"]) == vocab  # a subword vocabulary, every ID
    # each label is the token's own string (tokenizer.strings) with a space shown as ␣
    strings = TOKENIZER.strings(range(vocab))
    the = strings.index(" the")
    assert info["labels"][the] == "␣the"
    whole = [t for t, s in enumerate(strings) if "\ufffd" not in s]  # whole characters
    assert len(whole) > 1000
    for t in whole:
        assert info["labels"][t] == strings[t].replace(" ", "␣").replace("\n", "⏎") \
            or not strings[t].isprintable(), (t, strings[t])
    assert info["config"]["max_len"] == GlassLM.from_pretrained(DEMO_CHECKPOINT).config.max_len


def test_the_build_is_read_from_the_record_the_site_wheel_keeps_beside_the_package(
        bridge, tmp_path, monkeypatch):
    """In the browser glassllm is the site's wheel installed: build_info reads the version and
    commit that docs_build/runtime/wheel.py wrote into its .dist-info, found beside the package
    (a file read: importing importlib.metadata would cost Pyodide's first result ~0.3 s)."""
    package = tmp_path / "glassllm"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    recorded = {"version": "0.1.0", "commit": "0123456789abcdef" * 2 + "01234567", "modified": True}
    (tmp_path / "glassllm-0.1.0.dist-info").mkdir()
    (tmp_path / "glassllm-0.1.0.dist-info" / bridge.BUILD_INFO_NAME).write_text(
        json.dumps(recorded), encoding="utf-8")
    monkeypatch.setattr(bridge.glassllm, "__file__", str(package / "__init__.py"))
    assert bridge.build_info() == recorded
    (tmp_path / "glassllm-0.1.0.dist-info" / bridge.BUILD_INFO_NAME).unlink()  # a checkout's
    assert bridge.build_info() == {"version": bridge.glassllm.__version__, "commit": None,
                                   "modified": False}


def test_a_recording_is_the_file_python_m_glassllm_record_writes(bridge, tmp_path):
    """record's bytes are the recording the command line writes for the same text and
    settings (float32, greedy, the KV cache), byte for byte."""
    import subprocess
    import sys

    reply = bridge.call("record", {"text": "Once upon a time", "n": 4})
    assert reply["ok"], reply
    result = reply["result"]
    out = tmp_path / "run.glrec"
    subprocess.run([sys.executable, "-m", "glassllm", "record", "Once upon a time", "--tokens", "4",
                    "--greedy", "--model", str(DEMO_CHECKPOINT), "--out", str(out)], check=True, capture_output=True)
    assert result["values"] == out.read_bytes()
    from glassllm.recording import loads
    rec = loads(result["values"])
    assert result["generated"] == list(rec.generated) and result["events"] == len(rec.events)
    assert result["tokens"] == encode("Once upon a time")


def test_ablating_a_head_is_the_model_without_its_output_columns(bridge):
    """ablate's scores with L0H1 silenced are the probes' scores of the model whose W_O
    columns of that head are zero (an independent way to remove a head)."""
    import copy

    from glassllm import probes

    reply = bridge.call("ablate", {"heads": [[0, 1]]})
    assert reply["ok"], reply
    result = reply["result"]
    model = GlassLM.from_pretrained(DEMO_CHECKPOINT)
    clean = probes.head_report(model)
    silenced = copy.deepcopy(model)
    dh = model.config.d_model // model.config.n_heads
    silenced.layers[0].wo[:, 1 * dh:2 * dh] = 0
    edited = probes.head_report(silenced)
    np.testing.assert_allclose(result["clean"]["induction"], clean.induction, atol=1e-6)
    np.testing.assert_allclose(result["edited"]["induction"], edited.induction, atol=1e-6)
    assert result["edited"]["copy_ratio"] == pytest.approx(edited.copy_ratio, rel=1e-5)
    refused = bridge.call("ablate", {"heads": [[5, 0]]})
    assert not refused["ok"] and refused["error"]["type"] == "ValueError"


@pytest.fixture(scope="module")
def worked_bridge(bridge, tmp_path_factory):
    """The bridge with the worked numbers' code as the site ships it (worked.zip) unpacked."""
    import zipfile

    from docs_build.runtime import site as runtime_site
    from docs_build.text.languages import LANGUAGES
    from docs_build.text.ui import load_ui

    ui = {lang.code: load_ui(ROOT / "docs", lang) for lang in LANGUAGES}
    folder = tmp_path_factory.mktemp("worked")
    with zipfile.ZipFile(io.BytesIO(runtime_site.worked_archive(ui))) as archive:
        archive.extractall(folder)
    reply = bridge.call("use_worked", {"folder": str(folder)})
    assert reply["ok"], reply
    return bridge


def worked_checks(html: str):
    """The worked section's layer and its checks: (index, by hand, snapshot) per row."""
    layer = re.search(r'class="gl-worked" data-step="[^"]+"(?: data-layer="(\d+)")?', html)
    rows = re.findall(r'data-index="([\d,]*)" data-hand="([^"]+)" data-snapshot="([^"]+)"', html)
    return (None if layer.group(1) is None else int(layer.group(1)),
            [(tuple(int(k) for k in index.split(",")), float(hand), float(snap))
             for index, hand, snap in rows])


@pytest.mark.parametrize("lang", ["en", "pt"])
def test_worked_numbers_are_redone_on_the_readers_run(worked_bridge, lang):
    """Every step a forward pass computes gets its worked entry redone on the reader's text:
    each check's snapshot value is the native run's record at that entry, and the hand
    result agrees with it; the head is the one the page names."""
    from docs_build.data.worked import WORKERS

    text = "abcabc xyz"
    trace = Tracer()
    GlassLM.from_pretrained(DEMO_CHECKPOINT).forward(encode(text), trace)
    done = []
    for step in WORKERS:
        reply = worked_bridge.call("worked", {"text": text, "step": step, "lang": lang,
                                              "layer": 1, "head": 1})
        assert reply["ok"], reply
        html = reply["result"]["html"]
        if step in worked_bridge.NOT_WORKED_ON_A_RUN:
            assert html is None, step
            continue
        layer, checks = worked_checks(html)
        assert checks, step
        native = np.asarray(trace.get(step, layer).value)
        for index, hand, snapshot in checks:
            assert snapshot == pytest.approx(float(native[index]), rel=1e-6, abs=1e-30), step
            if np.isfinite(snapshot):
                assert hand == pytest.approx(snapshot, rel=1e-4, abs=1e-6), step
        if step in ("attn.q", "attn.q_rope", "attn.scores", "attn.mask", "attn.softmax",
                    "attn.context"):  # query head 1; attn.k and attn.v its key/value head
            assert 'data-layer="1" data-head="1"' in html, step
        done.append(step)
    assert len(done) == len(WORKERS) - len(worked_bridge.NOT_WORKED_ON_A_RUN)


def test_worked_numbers_need_what_the_step_works(worked_bridge):
    """The mask's worked entry needs a later position than its row: one byte has none."""
    reply = worked_bridge.call("worked", {"text": "a", "step": "attn.mask", "lang": "en",
                                          "layer": 1, "head": 1})
    assert reply == {"ok": True, "result": {"html": None}}
    refused = worked_bridge.call("worked", {"text": "", "step": "embed", "lang": "en"})
    assert refused["ok"] is False and refused["error"]["type"] == "ValueError"


@pytest.mark.parametrize("args, message", [
    ({"step": "nope"}, "step 'nope' is no step of glassllm; use one of glassllm.STEPS"),
    ({"step": 123}, "step 123 is no step of glassllm"),
    ({"step": "attn.softmax", "lang": "xx"}, "lang must be one of 'en', 'pt', got 'xx'"),
    ({"step": "attn.softmax", "layer": 1, "head": 99}, "head must be an integer in [0, 1], got 99"),
    ({"step": "attn.softmax", "layer": 1, "head": -1}, "head must be an integer in [0, 1], got -1"),
    ({"step": "attn.softmax", "layer": 1.7, "head": 0}, "layer must be an integer in [0, 1], got 1.7"),
    ({"step": "attn.softmax", "head": 3}, "head was given without layer; give both"),
])
def test_worked_refuses_a_step_language_or_head_it_has_not_with_a_clear_error(worked_bridge, args,
                                                                              message):
    """Not NumPy's IndexError, a KeyError of the strings, or a head silently taken as 0."""
    reply = worked_bridge.call("worked", {"text": "hi", "lang": "en", **args})
    assert reply["ok"] is False, reply
    assert reply["error"] == {"type": "ValueError", "message": reply["error"]["message"]}
    assert message in reply["error"]["message"]


def test_a_recording_of_no_token_is_refused(bridge):
    """The replay refuses a recording without a generated token, so record does not make one."""
    reply = bridge.call("record", {"text": "hi", "n": 0})
    assert reply["ok"] is False
    assert reply["error"]["type"] == "ValueError"
    assert "n (tokens to generate and record) must be an integer of at least 1, got 0" in \
        reply["error"]["message"]


# unicode, emoji, runs of spaces and newlines, a long word, digits, contractions
TEXTS = ["The cat sat on the mat.", "naïve café — “quotes” ünïcödé 日本語", "emoji 😀👍🏽 and 🇧🇷!",
         "  leading, two  spaces,\ttab\n\nnewlines   ", "antidisestablishmentarianism 12345 it's",
         "Ölçü ĳ ﬁ ÅÅ"]


@pytest.mark.parametrize("text", TEXTS)
def test_a_runs_tokens_are_the_tokenizers_packages_ids(bridge, text):
    """run(text)'s tokens are what Hugging Face's tokenizers package gives for the demo's
    tokenizer.json: the browser's pure-Python reader, checked against the reference."""
    tokenizers = pytest.importorskip("tokenizers")
    reference = tokenizers.Tokenizer.from_file(str(Path(DEMO_CHECKPOINT) / "tokenizer.json"))
    reply = bridge.call("run", {"text": text})
    assert reply["ok"], reply
    expected = reference.encode(text).ids
    assert reply["result"]["tokens"] == expected
    if text.isascii():  # English words are subwords, not bytes
        assert len(expected) < len(text.encode("utf-8"))
    assert reference.decode(expected) == text


def test_tokenize_reports_the_words_and_merges_of_the_demos_tokenizer(bridge):
    """tokenize(text): the words (their text joined is the text), each word's merges (ranks
    of tokenizer.json's merges), and its tokens, which together are run(text)'s tokens."""
    text = "The cat sat on the mat. Naïve 😀"
    reply = bridge.call("tokenize", {"text": text})
    assert reply["ok"], reply
    result = reply["result"]
    assert result["tokens"] == encode(text)
    assert "".join(w["word"] for w in result["words"]) == text
    assert [i for w in result["words"] for i in w["ids"]] == encode(text)
    merges = len(TOKENIZER.ranks)
    for w in result["words"]:
        ranks = [m["rank"] for m in w["merges"]]
        assert all(0 <= r < merges for r in ranks)
        assert all(m["count"] >= 1 for m in w["merges"])
        if len(w["ids"]) == 1 and len(w["word"].encode()) > 1:
            assert w["merges"], w  # a whole word of several bytes was merged
    assert any(len(w["ids"]) > 1 for w in result["words"])
