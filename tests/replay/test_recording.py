"""The recording format: exact round trip (non-finite values included), valid JSON for
browsers, event counts and order, and clear errors for files that are not recordings."""

import json

import numpy as np
import pytest

from glassllm import Config, GlassLM, Tracer, encode
from glassllm.recording import (FORMAT, decode_array, dumps, encode_array, loads,
                                read_recording, record_generation, record_loss, to_json,
                                write_recording)
from glassllm.steps import LAYER_STEPS, scan_markers

CFG = Config(vocab_size=256, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2, max_len=32)


@pytest.fixture(scope="module")
def model():
    return GlassLM(CFG)


@pytest.fixture(scope="module")
def generation(model):
    return record_generation(model, encode("Hi, you"), 3, seed=5)


def strict_json(text):
    """Parse like JSON.parse: bare NaN / Infinity / -Infinity are errors."""
    def reject(name):
        raise ValueError(f"bare {name} is not JSON")
    return json.loads(text, parse_constant=reject)


def test_non_finite_values_round_trip_exactly_through_valid_json():
    value = np.array([[-np.inf, np.inf, np.nan], [0.1, -0.0, 3.4028235e38]], dtype=np.float32)
    text = json.dumps(encode_array(value))
    back = decode_array(strict_json(text))
    assert back.dtype == np.float32 and back.shape == (2, 3)
    np.testing.assert_array_equal(back, value)  # NaN == NaN for this assert
    assert np.signbit(back[1, 1])  # even the sign of zero survives


def test_generation_recording_has_every_event_in_recorded_order(model, generation):
    per_token = 18 * CFG.n_layers + 5
    assert generation.events_per_pass() == per_token
    assert len(generation.events) == 3 * per_token
    # recompute the same run: same tokens, and each event equals the tracer's record
    steps = list(model.generate(encode("Hi, you"), 3, seed=5, trace=True))
    assert generation.generated == [s.token for s in steps]
    expected = [(g, r) for g, s in enumerate(steps) for r in s.trace.records]
    for event, (gen, rec) in zip(generation.events, expected):
        assert (event.gen, event.step, event.layer, event.order) == (gen, rec.id, rec.layer,
                                                                     rec.order)
        np.testing.assert_array_equal(event.value, rec.value)
    first = [e.step for e in generation.events[:per_token]]
    assert first == ["embed", *LAYER_STEPS, *LAYER_STEPS, "final_norm", "logits", "probs",
                     "sample"]
    # each generation step reads one more token
    assert [e.value.shape[0] for e in generation.events if e.step == "embed"] == [7, 8, 9]


def test_json_round_trip_is_exact_and_browser_parsable(generation):
    text = dumps(generation)
    doc = strict_json(text)
    assert doc["format"] == FORMAT and doc["version"] == 1 and doc["kind"] == "generation"
    assert doc["prompt"]["text"] == "Hi, you"
    back = loads(text)
    assert back.generated == generation.generated and back.prompt == generation.prompt
    assert len(back.events) == len(generation.events)
    masks = 0
    for a, b in zip(generation.events, back.events):
        assert (a.step, a.layer, a.order, a.gen) == (b.step, b.layer, b.order, b.gen)
        np.testing.assert_array_equal(a.value, b.value)
        if a.step == "attn.mask":
            masks += 1
            assert np.isneginf(b.value).any()
    assert masks == 3 * CFG.n_layers
    assert dumps(back) == text  # encoding is deterministic


def test_steps_table_carries_equation_axes_and_source(generation):
    doc = to_json(generation)
    markers = scan_markers()
    assert doc["steps"]["attn.mask"]["source"] == markers["attn.mask"]
    assert doc["steps"]["attn.k"]["axes"] == ["kv_head", "token", "dim"]
    assert doc["steps"]["attn.k"]["heads"] is True
    assert "loss" not in doc["steps"]  # only the steps that occur
    for event in doc["events"]:
        assert len(doc["steps"][event["step"]]["axes"]) == len(event["shape"])


def test_loss_recording(model):
    rec = record_loss(model, encode("Hello"))
    tracer = Tracer()
    loss = model.loss(encode("Hell"), encode("ello"), trace=tracer)
    assert rec.prompt == encode("Hell") and rec.targets == encode("ello")
    assert rec.loss == pytest.approx(loss)
    assert len(rec.events) == 18 * CFG.n_layers + 5
    assert [e.step for e in rec.events[-2:]] == ["loss", "loss.grad"]
    back = loads(dumps(rec))
    assert back.kind == "loss" and back.targets == rec.targets
    for a, b in zip(tracer.records, back.events):
        np.testing.assert_array_equal(a.value, b.value)
    with pytest.raises(ValueError, match="at least 2 tokens"):
        record_loss(model, encode("H"))


def test_sampled_token_is_stored_as_an_integer(generation):
    doc = to_json(generation)
    samples = [e for e in doc["events"] if e["step"] == "sample"]
    assert [e["dtype"] for e in samples] == ["int32"] * 3
    back = loads(dumps(generation))
    assert [int(e.value) for e in back.events if e.step == "sample"] == generation.generated


def test_write_is_atomic_and_leaves_no_temp_file(tmp_path, generation):
    out = tmp_path / "run.json"
    out.write_text("old")
    size = write_recording(generation, out)
    assert out.stat().st_size == size
    assert read_recording(out).generated == generation.generated
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


@pytest.mark.parametrize("text, message", [
    ("not json at all", "not valid JSON"),
    ("[1, 2, 3]", "not a glassllm recording"),
    ('{"hello": "world"}', "not a glassllm recording"),
    ('{"format": "glassllm.recording", "version": 99}', "upgrade glassllm"),
])
def test_files_that_are_not_recordings_give_actionable_errors(text, message):
    with pytest.raises(ValueError, match=message) as info:
        loads(text, "mine.json")
    assert "mine.json" in str(info.value)


def test_damaged_recordings_are_rejected(generation):
    good = to_json(generation)

    def broken(change):
        doc = json.loads(json.dumps(good))
        change(doc)
        with pytest.raises(ValueError) as info:
            loads(json.dumps(doc), "run.json")
        return str(info.value)

    assert "truncated" in broken(lambda d: d["events"].pop())
    assert "bytes" in broken(lambda d: d["events"][3].update(data=d["events"][4]["data"][:8]))
    assert "base64" in broken(lambda d: d["events"][0].update(data="***"))
    assert "STEPS" in broken(lambda d: d["events"][0].update(step="nope"))
    assert "dtype" in broken(lambda d: d["events"][0].update(dtype="float64"))
    assert "Config" in broken(lambda d: d["config"].update(n_heads=3))
    assert "kind" in broken(lambda d: d.update(kind="training"))
    assert "generated.tokens" in broken(lambda d: d["generated"].update(tokens=[999]))


def test_unrecordable_arrays():
    with pytest.raises(ValueError, match="int32"):
        encode_array(np.array([2 ** 40]))
    with pytest.raises(ValueError, match="dtype"):
        encode_array(np.array(["a"]))
