"""Recordings of one training step (kind "training"): the forward events a loss recording
holds, then every value's gradient in the reverse order, then AdamW's update of sampled
weights of every parameter — checked against a second run of ``GlassLM.gradients`` and
against AdamW's update redone by hand in float64; both formats round-trip it exactly,
damaged files are refused, and the older kinds are written as before."""

import json
import math

import numpy as np
import pytest

from glassllm import Config, GlassLM, Tracer, encode
from glassllm.__main__ import main
from glassllm.backward import GRADS
from glassllm.optim import AdamW
from glassllm.recording import (UPDATE_ENTRIES, binary_parts, dumps, estimate_size, loads,
                                read_recording, record_loss, record_training, to_json)

CFG = Config(vocab_size=256, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2, max_len=32,
             seed=3)
TEXT = encode("Hi, you two")


def fresh() -> GlassLM:
    return GlassLM(CFG)


@pytest.fixture(scope="module")
def training():
    model = fresh()
    optimizer = AdamW(model, lr=1e-2, betas=(0.9, 0.95), weight_decay=0.1,
                      no_decay=["model.norm.weight"])
    return record_training(model, TEXT, optimizer), model


def test_forward_then_every_gradient_in_reverse(training):
    rec, _ = training
    per_pass = 18 * CFG.n_layers + 5
    assert rec.kind == "training" and rec.events_per_pass() == per_pass
    assert len(rec.events) == 2 * per_pass
    # the forward is exactly a loss recording's (its 18 L + 3 steps, then loss, loss.grad)
    loss_rec = record_loss(fresh(), TEXT)
    assert rec.prompt == loss_rec.prompt and rec.targets == loss_rec.targets
    assert rec.loss == pytest.approx(loss_rec.loss, abs=1e-6)
    for mine, theirs in zip(rec.events[:per_pass], loss_rec.events):
        assert (mine.step, mine.layer, mine.head, mine.order, mine.grad) == \
            (theirs.step, theirs.layer, theirs.head, theirs.order, False)
        np.testing.assert_allclose(mine.value, theirs.value, rtol=1e-5, atol=1e-6)
    # the backward: a second run of GlassLM.gradients' gradient tracer, each the mirror of
    # its forward event
    grads = Tracer()
    fresh().gradients(TEXT[:-1], TEXT[1:], grad_trace=grads)
    backward = rec.events[per_pass:]
    assert [e.grad for e in backward] == [True] * per_pass
    for i, (event, record) in enumerate(zip(backward, grads.records)):
        forward = rec.events[per_pass - 1 - i]
        assert (event.step, event.layer, event.head) == (forward.step, forward.layer, forward.head)
        assert event.value.shape == forward.value.shape and event.order == record.order == i
        np.testing.assert_array_equal(event.value, record.value)
    assert backward[0].step == "loss.grad" and not backward[0].value.any()
    assert backward[1].step == "loss" and float(backward[1].value) == 1.0
    # ∂ℒ/∂logits is loss.grad itself
    np.testing.assert_array_equal(backward[2].value, rec.events[per_pass - 1].value)


def test_the_update_is_adamw_redone_by_hand(training):
    rec, model = training
    u = rec.update
    assert (u["optimizer"], u["lr"], u["beta1"], u["beta2"], u["step"]) == \
        ("AdamW", 1e-2, 0.9, 0.95, 1)
    assert [p["name"] for p in u["params"]] == list(model.state_dict())
    assert u["loss_after"] == pytest.approx(model.loss(TEXT[:-1], TEXT[1:]), abs=1e-6)
    assert u["loss_after"] < rec.loss
    _, grads = fresh().gradients(TEXT[:-1], TEXT[1:])
    before, after = fresh().state_dict(), model.state_dict()
    for p in u["params"]:
        name, g = p["name"], grads[p["name"]]
        assert p["shape"] == list(g.shape) and len(p["entries"]) == UPDATE_ENTRIES
        assert p["weight_decay"] == (0.0 if name == "model.norm.weight" else 0.1)
        assert p["grad_norm"] == pytest.approx(float(np.linalg.norm(g.astype(np.float64))),
                                               rel=1e-5)
        change = after[name].astype(np.float64) - before[name]
        assert p["change_norm"] == pytest.approx(float(np.linalg.norm(change)), rel=1e-6)
        # the entries of the largest |gradient|, largest first
        largest = np.sort(np.abs(g).ravel())[::-1][:UPDATE_ENTRIES]
        np.testing.assert_allclose([abs(e["grad"]) for e in p["entries"]], largest, rtol=1e-5)
        for e in p["entries"]:
            index = tuple(e["index"])
            assert e["before"] == float(before[name][index])
            assert e["after"] == float(after[name][index])
            assert e["grad"] == pytest.approx(float(g[index]), rel=1e-4, abs=1e-7)
            # torch's AdamW, step 1 from zero moments, in float64
            m = (1 - 0.9) * e["grad"]
            v = (1 - 0.95) * e["grad"] ** 2
            step = 1e-2 * (m / 0.1) / (math.sqrt(v / 0.05) + 1e-8)
            by_hand = e["before"] * (1 - 1e-2 * p["weight_decay"]) - step
            assert e["m"] == pytest.approx(m, rel=1e-6)
            assert e["v"] == pytest.approx(v, rel=1e-5)
            assert e["after"] == pytest.approx(by_hand, abs=1e-6)


@pytest.mark.parametrize("fmt", ["json", "binary"])
def test_both_formats_round_trip_exactly(training, fmt):
    rec, _ = training
    back = loads(dumps(rec) if fmt == "json" else b"".join(binary_parts(rec)))
    assert back.kind == "training" and back.update == rec.update and back.loss == rec.loss
    assert len(back.events) == len(rec.events)
    for a, b in zip(rec.events, back.events):
        assert (a.step, a.layer, a.head, a.order, a.grad) == (b.step, b.layer, b.head, b.order,
                                                             b.grad)
        np.testing.assert_array_equal(a.value, b.value)
    doc = to_json(rec)
    # the backward rule of every step rides along, for the replay to show
    assert doc["steps"]["attn.softmax"]["grad_plain"] == GRADS["attn.softmax"].plain
    assert sum(e.get("grad", False) for e in doc["events"]) == len(rec.events) // 2


def test_the_older_kinds_are_written_as_before():
    rec = record_loss(fresh(), TEXT)
    doc = to_json(rec)
    assert len(doc["events"]) == 18 * CFG.n_layers + 5 and "update" not in doc
    assert not any("grad" in e for e in doc["events"])
    assert not any("grad_plain" in s for s in doc["steps"].values())


def test_damaged_training_recordings_are_refused(training):
    rec, _ = training
    doc = to_json(rec)
    per_pass = len(doc["events"]) // 2

    def broken(change) -> str:
        edited = json.loads(json.dumps(doc))
        change(edited)
        with pytest.raises(ValueError) as info:
            loads(json.dumps(edited), "run.json")
        return str(info.value)

    assert "reverse" in broken(lambda d: d["events"].__setitem__(
        slice(per_pass, per_pass + 2), d["events"][per_pass + 1:per_pass - 1:-1]))
    assert "'grad' must be true" in broken(lambda d: d["events"][-1].pop("grad"))
    assert "only for the gradients" in broken(lambda d: d["events"][0].update(grad=True))
    assert "needs" in broken(lambda d: d["events"].pop())
    assert "'update' must be an object" in broken(lambda d: d.pop("update"))
    assert "state_dict() order" in broken(lambda d: d["update"]["params"].reverse())
    assert "index" in broken(lambda d: d["update"]["params"][0]["entries"][0].update(
        index=[256, 0]))
    assert "finite number ≥ 0" in broken(lambda d: d["update"].update(lr=-1.0))
    assert "step" in broken(lambda d: d["update"].update(step=0))
    loss_doc = to_json(record_loss(fresh(), TEXT))
    loss_doc["update"] = doc["update"]
    with pytest.raises(ValueError, match="only a training recording has an 'update'"):
        loads(json.dumps(loss_doc))


def test_bad_arguments_are_refused():
    model = fresh()
    with pytest.raises(ValueError, match="at least 2 tokens"):
        record_training(model, [1], AdamW(model))
    with pytest.raises(ValueError, match="this model"):
        record_training(model, TEXT, AdamW(fresh()))
    with pytest.raises(ValueError, match="entries"):
        record_training(model, TEXT, AdamW(model), entries=0)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_estimate_is_within_two_percent(training, dtype):
    rec, _ = training
    size = len(b"".join(binary_parts(rec, dtype)))
    estimate = estimate_size(CFG, "training", len(rec.prompt), binary=True, dtype=dtype)
    assert abs(estimate - size) < 0.02 * size, (estimate, size)
    size = len(dumps(rec).encode("utf-8"))
    assert abs(estimate_size(CFG, "training", len(rec.prompt)) - size) < 0.02 * size


def test_the_command_line_records_a_training_step(tmp_path, capsys):
    out = tmp_path / "step.glrec"
    assert main(["record", "Hello there", "--train", "--out", str(out), "--layers", "1",
                 "--d-model", "16", "--heads", "2", "--kv-heads", "1"]) == 0
    said = capsys.readouterr().out
    assert "training step over 10 position(s)" in said and "AdamW" in said
    rec = read_recording(out)
    assert rec.kind == "training" and len(rec.events) == 2 * (18 + 5)
    assert rec.update["lr"] == 3e-3 and rec.update["loss_after"] < rec.loss
    with pytest.raises(SystemExit):
        main(["record", "Hello", "--train", "--loss", "--out", str(tmp_path / "x.glrec")])
    assert "give one" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["record", "Hello", "--train", "--greedy", "--out", str(tmp_path / "x.glrec")])
    assert "--train recording does not generate" in capsys.readouterr().err
