"""Tracer(steps=, layers=, heads=): record only what was asked (issue 11, item 3)."""

import threading

import numpy as np
import pytest

from glassllm import Config, GlassLM, Tracer
from glassllm.steps import HEAD_STEPS, LAYER_STEPS
from glassllm._snapshot_pool import SnapshotPool

KV_STEPS = ("attn.k", "attn.v", "attn.k_rope")
TOKENS = [3, 1, 4, 1, 5]


@pytest.fixture(scope="module")
def model():
    # 6 query heads sharing 2 KV heads: query heads 0-2 use KV head 0, heads 3-5 KV head 1
    return GlassLM(Config(vocab_size=40, d_model=48, n_layers=3, n_heads=6, n_kv_heads=2,
                          max_len=8, seed=3))


@pytest.fixture(scope="module")
def full(model):
    trace = Tracer()
    model.forward(TOKENS, trace)
    return trace


def test_no_filter_records_everything(model, full):
    assert (Tracer().steps, Tracer().layers, Tracer().heads) == (None, None, None)
    assert len(full.records) == 18 * 3 + 3


def test_steps_keeps_only_those_ids_with_the_same_values(model, full):
    trace = Tracer(steps=["attn.softmax", "logits"])
    logits = model.forward(TOKENS, trace)
    assert [(r.id, r.layer) for r in trace.records] == [
        ("attn.softmax", 0), ("attn.softmax", 1), ("attn.softmax", 2), ("logits", None)]
    assert [r.order for r in trace.records] == [0, 1, 2, 3]
    for r in trace.records:
        np.testing.assert_array_equal(r.value, full.get(r.id, layer=r.layer).value)
    np.testing.assert_array_equal(logits, model.forward(TOKENS))


def test_a_single_step_id_is_a_filter_of_one(model):
    trace = Tracer(steps="mlp.act")
    model.forward(TOKENS, trace)
    assert trace.step_ids() == ["mlp.act"] and len(trace.records) == 3


def test_layers_keeps_those_blocks_and_the_steps_outside_blocks(model, full):
    trace = Tracer(layers=[2, 0])
    model.forward(TOKENS, trace)
    assert len(trace.records) == 18 * 2 + 3
    assert {r.layer for r in trace.records} == {None, 0, 2}
    assert [r.id for r in trace.records if r.layer is None] == ["embed", "final_norm", "logits"]
    np.testing.assert_array_equal(trace.get("mlp.residual", layer=2).value,
                                  full.get("mlp.residual", layer=2).value)


def test_steps_and_layers_together_leave_out_steps_outside_blocks(model):
    trace = Tracer(steps=["attn.out"], layers=1)
    model.forward(TOKENS, trace)
    assert [(r.id, r.layer) for r in trace.records] == [("attn.out", 1)]


def test_heads_records_each_asked_head_already_sliced(model, full):
    trace = Tracer(heads=[4, 1])
    model.forward(TOKENS, trace)
    # per block: 6 query-head steps x 2 heads, 3 KV steps x 2 KV heads (1 -> 0, 4 -> 1),
    # 9 steps without heads
    assert len(trace.records) == 3 * (6 * 2 + 3 * 2 + 9) + 3
    for step in HEAD_STEPS:
        kept = [r.head for r in trace.records if r.id == step and r.layer == 0]
        assert kept == ([0, 1] if step in KV_STEPS else [1, 4]), step
    for layer in range(3):
        for step, head in [("attn.softmax", 4), ("attn.q", 1), ("attn.k", 1), ("attn.v", 0)]:
            got = trace.get(step, layer=layer, head=head)
            assert got.head == head and got.shape == full.get(step, layer=layer).shape[1:]
            np.testing.assert_array_equal(got.value, full.get(step, layer=layer, head=head).value)
    assert trace.get("attn.out", layer=0).shape == full.get("attn.out", layer=0).shape


def test_heads_of_one_kv_group_record_that_kv_head_once(model):
    trace = Tracer(steps=["attn.k", "attn.q"], layers=0, heads=[3, 4, 5])
    model.forward(TOKENS, trace)
    assert [(r.id, r.head) for r in trace.records] == [
        ("attn.q", 3), ("attn.q", 4), ("attn.q", 5), ("attn.k", 1)]


def test_filters_work_for_the_loss(model):
    trace = Tracer(steps=["loss", "loss.grad"])
    loss = model.loss(TOKENS, TOKENS[1:] + [0], trace)
    assert trace.step_ids() == ["loss", "loss.grad"]
    assert float(trace.get("loss").value) == pytest.approx(loss)


class Unconvertible:
    """A value that fails as soon as anything turns it into an array."""

    def __array__(self, dtype=None, copy=None):
        raise AssertionError("the tracer converted a value it was not asked to keep")


def test_steps_not_asked_are_not_converted_or_copied():
    trace = Tracer(steps=["logits", "attn.norm"], layers=[0])
    trace.record("embed", Unconvertible())
    trace.record("attn.norm", Unconvertible(), layer=1)
    assert trace.records == []
    assert trace.wants("logits") and trace.wants("attn.norm", 0)
    assert not trace.wants("embed") and not trace.wants("attn.norm", 1)


def test_unknown_ids_and_bad_arguments_are_still_refused_when_filtered_out():
    trace = Tracer(steps=["logits"])
    with pytest.raises(KeyError, match="unknown step ID 'attn.nope'"):
        trace.record("attn.nope", np.zeros((1, 2)))
    with pytest.raises(ValueError, match="layer"):
        trace.record("attn.norm", np.zeros((1, 2, 2)), layer=-1)
    with pytest.raises(ValueError, match="no head axis"):
        trace.record("attn.out", np.zeros((1, 2, 2)), layer=0, head=0)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(steps=["embed", "attn.nope"]), KeyError, "unknown step ID 'attn.nope'"),
    (dict(steps=[5]), KeyError, "unknown step ID 5"),
    (dict(steps=[]), ValueError, r"steps=\[\] would record nothing"),
    (dict(layers=()), ValueError, "layers=.* would record nothing"),
    (dict(layers=-1), ValueError, "layers must be non-negative integers"),
    (dict(layers=[0, True]), ValueError, "layers must be non-negative integers"),
    (dict(heads=[1.0]), ValueError, "heads must be non-negative integers"),
    (dict(heads=[None]), ValueError, "heads must be non-negative integers"),
    (dict(heads=1.5), ValueError, "heads must be None, one item or a list"),
])
def test_bad_filters_are_refused_when_the_tracer_is_made(kwargs, error, message):
    with pytest.raises(error, match=message):
        Tracer(**kwargs)


def test_numpy_integers_are_valid_filter_values():
    trace = Tracer(layers=np.int64(1), heads=[np.int32(0)])
    assert trace.layers == {1} and trace.heads == {0}
    assert "layers=[1]" in repr(trace)


@pytest.mark.parametrize("kwargs, message", [
    (dict(layers=[1, 3]), r"asks for layers \[1, 3\], but this model has 3 layers"),
    (dict(heads=6), r"asks for heads \[6\], but this model has 6 heads"),
])
def test_a_filter_beyond_the_model_is_refused_before_the_run(model, kwargs, message):
    trace = Tracer(**kwargs)
    with pytest.raises(ValueError, match=message):
        model.forward(TOKENS, trace)
    with pytest.raises(ValueError, match=message):
        model.loss(TOKENS, TOKENS, trace)
    assert trace.records == []


def test_a_head_beyond_a_recorded_snapshot_is_refused_without_a_partial_record():
    trace = Tracer(heads=[2])
    with pytest.raises(ValueError, match="asks for head 2, but step 'attn.scores' has 2"):
        trace.record("attn.scores", np.zeros((1, 2, 3, 3)), layer=0)
    assert trace.records == []


def test_a_one_head_record_is_kept_only_for_an_asked_head():
    trace = Tracer(heads=[1])
    trace.record("attn.q", np.ones((1, 2, 4)), layer=0, head=0)
    trace.record("attn.q", np.ones((1, 2, 4)), layer=0, head=1)
    trace.record("attn.k", np.ones((1, 2, 4)), layer=0, head=0, group=2)  # serves heads 0, 1
    assert [(r.id, r.head) for r in trace.records] == [("attn.q", 1), ("attn.k", 0)]


def test_every_block_step_is_covered_by_a_layers_filter(model):
    trace = Tracer(layers=0)
    model.forward(TOKENS, trace)
    assert [r.id for r in trace.records if r.layer == 0] == list(LAYER_STEPS)


@pytest.mark.parametrize("bad", [0, -1, 1.5, None])
def test_group_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="group"):
        Tracer().record("attn.k", np.zeros((1, 2, 3, 4)), layer=0, group=bad)


def memory(array):
    """The bytes an array spans, as a range of addresses."""
    start = array.__array_interface__["data"][0]
    return range(start, start + array.nbytes)


def overlaps(a: range, b: range) -> bool:
    return a.start < b.stop and b.start < a.stop


def test_snapshot_memory_is_reused_only_once_no_record_holds_it():
    # snapshots of a page or more go to memory the tracer reuses (no fresh pages to fault
    # in for every tracer), but never while a record, or a view of one, is alive
    values = [np.full((1, 64, 128), i, dtype=np.float32) for i in range(6)]
    first = Tracer()
    for value in values:
        first.record("attn.norm", value, layer=0)
    kept = first.records[2]
    view = first.records[4].value[3:5]
    freed = [memory(r.value) for r in first.records if r is not kept]
    del first
    for round_ in range(3):
        again = Tracer()
        for value in values:
            again.record("attn.norm", -value, layer=0)
        assert not any(np.shares_memory(r.value, kept.value) for r in again.records)
        assert not any(np.shares_memory(r.value, view) for r in again.records)
        # the memory of the dropped records did come back (a copy may start a little later
        # in its buffer than the last one did, see SnapshotPool)
        assert any(overlaps(memory(r.value), old) for r in again.records for old in freed)
    np.testing.assert_array_equal(kept.value, 2)
    np.testing.assert_array_equal(view, 4)


def test_a_copy_looks_at_a_few_pooled_buffers_however_many_records_are_alive():
    # a long run whose tracers are all kept leaves thousands of buffers in use in the pool;
    # each copy must not walk past all of them (it made forwards several times slower)
    pool = SnapshotPool(limit=2**30)
    source = np.ones((64, 128), dtype=np.float32)
    alive = [pool.copy(source, position) for position in range(500)]
    ring = pool.rings[source.nbytes]
    order = [id(entry[1]) for entry in ring]
    fresh = pool.copy(source, 500)
    assert not any(np.shares_memory(fresh, kept) for kept in alive)
    # only the first SCAN buffers went to the back; the rest did not move
    after = [id(entry[1]) for entry in ring]
    assert after[:len(order) - pool.SCAN] == order[pool.SCAN:]
    del alive
    again = pool.copy(source, 501)  # once they are free, a buffer comes back at once
    assert len(pool.rings[source.nbytes]) == len(ring)
    np.testing.assert_array_equal(again, source)


def test_tracing_in_two_threads_at_once_keeps_every_snapshot_its_own():
    # the pool hands buffers out without a lock (see SnapshotPool): no two live records
    # may end up in one buffer, whichever thread copied them
    model = GlassLM(Config(vocab_size=64, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2,
                           max_len=32, seed=5))
    prompts = [list(range(i, i + 32)) for i in (0, 20)]
    expected = []
    for prompt in prompts:
        trace = Tracer()
        model.forward(prompt, trace)
        expected.append([r.value.copy() for r in trace.records])
    failures = []

    def run(which):
        recent = []  # the last two tracers stay alive, older ones give their buffers back
        for _ in range(40):
            trace = Tracer()
            model.forward(prompts[which], trace)
            recent = recent[-1:] + [trace]
            for earlier in recent:
                for rec, value in zip(earlier.records, expected[which]):
                    if not np.array_equal(rec.value, value):
                        failures.append((which, rec.id, rec.layer))

    threads = [threading.Thread(target=run, args=(which,)) for which in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_a_full_pool_makes_plain_copies_and_keeps_nothing():
    pool = SnapshotPool(limit=0)  # also what a Python without exact reference counts gets
    source = np.arange(64 * 128, dtype=np.float32).reshape(64, 128)[:, ::2]  # strided
    copies = [pool.copy(source, 0) for _ in range(3)]
    assert pool.rings == {} and pool.size == 0
    for copy in copies:
        np.testing.assert_array_equal(copy, source)
        assert copy.flags.c_contiguous and not np.shares_memory(copy, source)
    assert not np.shares_memory(copies[0], copies[1])
