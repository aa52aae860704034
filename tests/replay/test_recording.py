"""The recording formats: exact round trip (non-finite values included), valid JSON for
browsers (version 1), the binary container (version 2: aligned arrays, float16 on request),
event counts and order, and clear errors for files that are not recordings."""

import json

import numpy as np
import pytest

from glassllm import Config, GlassLM, Tracer, encode
from glassllm.recording import (ALIGN, FORMAT, MAGIC, Event, Recording, decode_array,
                                binary_parts, dumps, encode_array, estimate_size, loads,
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


def binary_file(rec, dtype="float32") -> bytes:
    return b"".join(binary_parts(rec, dtype))


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
    assert generation.cache  # recorded as generate runs, with the KV cache
    # the same run again: same tokens, and each event equals the tracer's record
    steps = list(model.generate(encode("Hi, you"), 3, seed=5, trace=True))
    assert generation.generated == [s.token for s in steps]
    expected = [(g, r) for g, s in enumerate(steps) for r in s.trace.records]
    assert len(expected) == len(generation.events)
    for event, (gen, rec) in zip(generation.events, expected):
        assert (event.gen, event.step, event.layer, event.order) == (gen, rec.id, rec.layer,
                                                                     rec.order)
        np.testing.assert_array_equal(event.value, rec.value)
    first = [e.step for e in generation.events[:per_token]]
    assert first == ["embed", *LAYER_STEPS, *LAYER_STEPS, "final_norm", "logits", "probs",
                     "sample"]
    # the first step reads the prompt; each later one computes only its new position, against
    # one more cached key each time
    assert [e.value.shape[0] for e in generation.events if e.step == "embed"] == [7, 1, 1]
    assert [e.value.shape for e in generation.events
            if e.step == "attn.scores" and e.layer == 1] == [(4, 7, 7), (4, 1, 8), (4, 1, 9)]


def test_full_recompute_recording_has_a_forward_pass_at_every_step(model, generation):
    full = record_generation(model, encode("Hi, you"), 3, seed=5, cache=False)
    assert not full.cache and full.generated == generation.generated
    steps = list(model.generate(encode("Hi, you"), 3, seed=5, trace=True, cache=False))
    for event, rec in zip(full.events, (r for s in steps for r in s.trace.records)):
        assert (event.step, event.layer) == (rec.id, rec.layer)
        np.testing.assert_array_equal(event.value, rec.value)
    # each generation step reads one more token, all of them again
    assert [e.value.shape[0] for e in full.events if e.step == "embed"] == [7, 8, 9]
    # each row a cached step computed is the full pass's row of that position, its key and
    # value included (float32 rounding apart); probs and sample agree as a whole
    for cached, again in zip(generation.events, full.events):
        if cached.value.ndim >= 2:
            rows = cached.value.shape[-2]
            np.testing.assert_allclose(cached.value, again.value[..., -rows:, :], atol=1e-5)
        else:
            np.testing.assert_allclose(cached.value, again.value, atol=1e-5)
    back = loads(binary_file(full))
    assert not back.cache and [e.value.shape for e in back.events] == [
        e.value.shape for e in full.events]


def test_json_round_trip_is_exact_and_browser_parsable(generation):
    text = dumps(generation)
    doc = strict_json(text)
    assert doc["format"] == FORMAT and doc["version"] == 1 and doc["kind"] == "generation"
    assert doc["prompt"]["text"] == "Hi, you"
    back = loads(text)
    assert back.generated == generation.generated and back.prompt == generation.prompt
    assert len(back.events) == len(generation.events)
    assert back.cache and doc["cache"] is True
    masks = 0
    for a, b in zip(generation.events, back.events):
        assert (a.step, a.layer, a.order, a.gen) == (b.step, b.layer, b.order, b.gen)
        np.testing.assert_array_equal(a.value, b.value)
        if a.step == "attn.mask":
            masks += 1
            # the prompt's pass masks the keys after each query; a cached step's one row,
            # the newest position, sees every key: nothing masked
            assert np.isneginf(b.value).any() == (a.gen == 0)
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
    assert "kind" in broken(lambda d: d.update(kind="learning"))
    assert "generated.tokens" in broken(lambda d: d["generated"].update(tokens=[999]))


def test_unrecordable_arrays():
    with pytest.raises(ValueError, match="int32"):
        encode_array(np.array([2 ** 40]))
    with pytest.raises(ValueError, match="dtype"):
        encode_array(np.array(["a"]))


# -- version 2: the binary container ----------------------------------------------------------

def test_binary_round_trip_is_exact_in_float32(generation, tmp_path):
    out = tmp_path / "run.glrec"
    size = write_recording(generation, out)
    data = out.read_bytes()
    assert size == len(data) and data.startswith(MAGIC)
    back = read_recording(out)
    assert (back.kind, back.prompt, back.generated, back.sampling, back.config) == (
        generation.kind, generation.prompt, generation.generated, generation.sampling,
        generation.config)
    for a, b in zip(generation.events, back.events):
        assert (a.step, a.layer, a.head, a.gen, a.order) == (b.step, b.layer, b.head, b.gen, b.order)
        assert b.value.dtype.kind == a.value.dtype.kind and b.value.shape == a.value.shape
        np.testing.assert_array_equal(a.value, b.value)
    # about 4 bytes per value against JSON's 5.3 (in a run whose values outweigh its index)
    full = record_generation(GlassLM(CFG), encode("Hi, you"), 3, seed=5, cache=False)
    assert len(binary_file(full)) < 0.8 * len(dumps(full).encode("utf-8"))
    assert len(data) < len(dumps(generation).encode("utf-8"))


def test_every_array_is_aligned_for_a_typed_array_view(generation):
    data = binary_file(generation, "float16")
    index_length = int.from_bytes(data[12:16], "little")
    index = json.loads(data[16:16 + index_length])
    start = 16 + index_length + -(16 + index_length) % ALIGN
    assert start % ALIGN == 0
    assert all(e["offset"] % ALIGN == 0 for e in index["events"])
    assert {e["dtype"] for e in index["events"]} == {"float16", "int32"}


def test_float16_keeps_non_finite_values_and_refuses_what_it_cannot_hold(generation):
    special = np.array([-np.inf, np.inf, np.nan, -0.0, 65504.0, 2.0**-24, 1 / 3], dtype=np.float32)
    rec = Recording(kind=generation.kind, config=generation.config, prompt=generation.prompt,
                    events=list(generation.events), generated=generation.generated,
                    sampling=generation.sampling, cache=generation.cache)
    embed = rec.events[0]
    flat = embed.value.copy().reshape(-1)
    flat[:len(special)] = special
    rec.events[0] = Event(embed.step, embed.layer, flat.reshape(embed.value.shape), embed.order,
                          embed.gen, embed.head)
    back = loads(binary_file(rec, "float16")).events[0].value.reshape(-1)
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back[:6], special[:6])  # ±inf, NaN, -0, the largest, tiny
    assert np.signbit(back[3]) and back[6] == np.float32(np.float16(1 / 3))
    # the causal mask's -inf survives (in the prompt's pass: a cached step masks nothing)
    full = record_generation(GlassLM(CFG), encode("Hi, you"), 3, seed=5, cache=False)
    masks = [e.value for e in loads(binary_file(full, "float16")).events
             if e.step == "attn.mask"]
    assert len(masks) == 3 * CFG.n_layers
    assert all(np.isneginf(m[:, np.triu_indices(m.shape[1], 1)[0],
                             np.triu_indices(m.shape[1], 1)[1]]).all() for m in masks)
    # a finite value beyond float16's range would read as inf: refused, naming the event
    flat[0] = 70000.0
    rec.events[0] = Event(embed.step, embed.layer, flat.reshape(embed.value.shape), embed.order,
                          embed.gen, embed.head)
    with pytest.raises(ValueError, match=r"events\[0\] \(embed\).*65504.*float32"):
        binary_file(rec, "float16")
    loads(binary_file(rec))  # float32 holds it


def test_write_recording_picks_the_format_from_the_suffix(generation, tmp_path):
    write_recording(generation, tmp_path / "a.json")
    write_recording(generation, tmp_path / "b.glrec", dtype="float16")
    assert (tmp_path / "a.json").read_bytes().startswith(b'{"format":"glassllm.recording"')
    assert (tmp_path / "b.glrec").read_bytes().startswith(MAGIC)
    # the readers go by content, not by name
    (tmp_path / "b.glrec").rename(tmp_path / "renamed.json")
    assert read_recording(tmp_path / "renamed.json").generated == generation.generated
    for path, dtype, message in ((tmp_path / "c.bin", "float32", r"\*\.glrec.*\*\.json"),
                                 (tmp_path / "d.json", "float16", r"float16 needs the binary"),
                                 (tmp_path / "e.glrec", "float64", r"float32, float16")):
        with pytest.raises(ValueError, match=message):
            write_recording(generation, path, dtype=dtype)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "renamed.json"]


def test_a_failed_float16_write_leaves_the_old_file(generation, tmp_path):
    out = tmp_path / "run.glrec"
    out.write_bytes(b"old")
    logits = [i for i, e in enumerate(generation.events) if e.step == "logits"][-1]
    events = list(generation.events)
    e = events[logits]
    events[logits] = Event(e.step, e.layer, np.full_like(e.value, -1e5), e.order, e.gen, e.head)
    big = Recording(kind=generation.kind, config=generation.config, prompt=generation.prompt,
                    events=events, generated=generation.generated, sampling=generation.sampling)
    with pytest.raises(ValueError, match=rf"events\[{logits}\] \(logits\).*100000"):
        write_recording(big, out, dtype="float16")
    assert out.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["run.glrec"]


@pytest.mark.parametrize("cache", [True, False], ids=["cached", "full-recompute"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_binary_estimate_is_within_two_percent(dtype, cache):
    cfg = Config(vocab_size=256, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2, max_len=32)
    rec = record_generation(GlassLM(cfg), encode("estimate"), 3, seed=1, cache=cache)
    size = len(binary_file(rec, dtype))
    estimate = estimate_size(cfg, "generation", len(rec.prompt), 3, binary=True, dtype=dtype,
                             cache=cache)
    assert abs(estimate - size) < 0.02 * size


def test_the_estimate_of_a_cached_run_sums_its_passes_in_closed_form():
    """A cached generation records the prompt's pass, then one position per step against one
    more key each time: the closed form equals the sum over its passes, at any size."""
    from glassllm.recording.events import AXES, step_counts
    cfg = Config(vocab_size=300, d_model=24, n_layers=2, n_heads=6, n_kv_heads=3, max_len=4096)
    counts = step_counts("generation", cfg.n_layers)

    def values(n, keys):
        size = {"token": n, "query": n, "key": keys, "feature": cfg.d_model, "dim": cfg.head_dim,
                "hidden": cfg.d_ff, "vocab": cfg.vocab_size, "head": cfg.n_heads,
                "kv_head": cfg.n_kv_heads}
        return sum(c * int(np.prod([size[a] for a in AXES[s]])) for s, c in counts.items())
    for prompt, tokens in ((1, 1), (5, 2), (7, 40), (100, 3000)):
        passes = [values(prompt, prompt)] + [values(1, prompt + k) for k in range(1, tokens)]
        events = tokens * sum(counts.values())
        exact = sum(passes) * 4 + events * 124 + 5_000
        assert estimate_size(cfg, "generation", prompt, tokens, binary=True) == exact
    # the full recompute grows with the square of the sequence, the cached run linearly
    full = estimate_size(cfg, "generation", 7, 1000, binary=True, cache=False)
    assert full > 50 * estimate_size(cfg, "generation", 7, 1000, binary=True)


def test_a_random_model_with_a_large_vocabulary_can_be_recorded(tmp_path):
    """Random weights of a real model's shape produce token IDs above 255, which no byte
    stands for: the recording keeps the IDs (and no text) instead of failing to write."""
    cfg = Config(vocab_size=1024, d_model=16, n_layers=1, n_heads=2, n_kv_heads=1, max_len=16)
    rec = record_generation(GlassLM(cfg), [700, 3, 1000], 2, seed=0)
    for name in ("big.glrec", "big.json"):
        write_recording(rec, tmp_path / name)
        back = read_recording(tmp_path / name)
        assert back.prompt == [700, 3, 1000] and back.generated == rec.generated
    assert "text" not in to_json(rec)["prompt"]
