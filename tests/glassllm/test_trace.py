import dataclasses

import numpy as np
import pytest

import glassllm.trace
from glassllm import STEPS, Config, GlassLM, StepRecord, Tracer
from glassllm.steps import HEAD_STEPS


def heads(h=3, n=2):
    return np.arange(h * n * n, dtype=np.float32).reshape(1, h, n, n)


def test_new_tracer_is_empty():
    assert Tracer().records == []


def test_unknown_step_id_is_a_key_error():
    with pytest.raises(KeyError, match="unknown step ID 'attn.nope'"):
        Tracer().record("attn.nope", np.zeros((1, 2)))
    with pytest.raises(KeyError):
        Tracer().get("attn.nope")


@pytest.mark.parametrize("value", [np.float32(3), np.zeros((2, 3)), np.zeros((0, 3))])
def test_batched_needs_a_leading_axis_of_one(value):
    with pytest.raises(ValueError, match="batched=False|batch axis"):
        Tracer().record("embed", value)


def test_unbatched_keeps_the_value_as_is():
    trace = Tracer()
    trace.record("probs", np.full(4, 0.25, dtype=np.float32), batched=False)
    trace.record("loss", 1.5, batched=False)
    assert trace.get("probs").shape == (4,)
    assert trace.get("loss").value == np.float32(1.5)
    assert [r.order for r in trace.records] == [0, 1]


def test_record_accepts_lists_and_torch_tensors():
    trace = Tracer()
    trace.record("embed", [[[1.0, 2.0]]])
    np.testing.assert_array_equal(trace.get("embed").value, [[1.0, 2.0]])
    torch = pytest.importorskip("torch")
    trace.record("logits", torch.ones(1, 2, 5))
    assert trace.get("logits").shape == (2, 5)


def test_stored_value_is_an_independent_copy():
    trace = Tracer()
    value = heads()
    trace.record("attn.scores", value, layer=0)
    value[...] = -1
    assert trace.get("attn.scores").value.min() == 0


@pytest.mark.parametrize("bad", [-1, True, False, 1.0, "0", np.bool_(True)])
def test_layer_and_head_must_be_non_negative_integers(bad):
    with pytest.raises(ValueError):
        Tracer().record("attn.norm", np.zeros((1, 2, 2)), layer=bad)
    with pytest.raises(ValueError):
        Tracer().record("attn.scores", heads(), layer=0, head=bad)


def test_numpy_integers_are_valid_selectors():
    trace = Tracer()
    trace.record("attn.scores", heads(), layer=np.int64(2))
    assert trace.get("attn.scores", layer=np.int32(2), head=np.int64(1)).head == 1


def test_head_only_for_head_steps():
    with pytest.raises(ValueError, match="no head axis"):
        Tracer().record("attn.out", np.zeros((1, 2, 4)), layer=0, head=0)
    trace = Tracer()
    trace.record("attn.out", np.zeros((1, 2, 4)), layer=0)
    with pytest.raises(ValueError, match="no head axis"):
        trace.get("attn.out", layer=0, head=0)


def test_record_does_not_check_layers_against_a_model():
    trace = Tracer()
    trace.record("attn.norm", np.zeros((1, 2, 2)))          # a block step without a layer
    trace.record("attn.norm", np.zeros((1, 2, 2)), layer=99)
    assert trace.get("attn.norm", layer=99).layer == 99


def test_get_returns_the_first_match_and_none_is_not_the_last_layer():
    trace = Tracer()
    for layer in range(3):
        trace.record("attn.norm", np.full((1, 2, 2), layer, dtype=np.float32), layer=layer)
    assert trace.get("attn.norm").layer == 0
    assert trace.get("attn.norm", layer=2).value[0, 0] == 2
    with pytest.raises(KeyError, match="layer 3"):
        trace.get("attn.norm", layer=3)


def test_reused_tracer_appends_and_oldest_stays_first():
    trace = Tracer()
    trace.record("embed", np.zeros((1, 1, 2)))
    trace.record("embed", np.ones((1, 1, 2)))
    assert trace.get("embed").value.sum() == 0
    assert [r.order for r in trace.records] == [0, 1]


def test_head_selection_slices_the_full_snapshot():
    trace = Tracer()
    full = heads()
    trace.record("attn.softmax", full, layer=1)
    whole = trace.get("attn.softmax", layer=1)
    assert whole.shape == (3, 2, 2) and whole.head is None
    one = trace.get("attn.softmax", layer=1, head=2)
    assert isinstance(one, StepRecord)
    assert (one.head, one.order, one.layer) == (2, 0, 1)
    assert one.equation == STEPS["attn.softmax"].plain
    np.testing.assert_array_equal(one.value, full[0, 2])
    with pytest.raises(ValueError, match="out of range"):
        trace.get("attn.softmax", layer=1, head=3)


def test_a_head_record_answers_only_its_own_selector():
    trace = Tracer()
    trace.record("attn.q", np.ones((1, 2, 4)), layer=0, head=1)
    assert trace.get("attn.q", layer=0, head=1).shape == (2, 4)
    with pytest.raises(KeyError):
        trace.get("attn.q", layer=0, head=0)


def test_omitting_head_returns_a_head_record_as_it_was_recorded():
    # the seed: "omitting head returns the array as it was recorded", whatever its head
    trace = Tracer()
    trace.record("attn.softmax", np.ones((1, 3, 3)), layer=0, head=1)
    record = trace.get("attn.softmax")
    assert record is trace.records[0]
    assert (record.head, record.layer, record.shape) == (1, 0, (3, 3))
    assert trace.get("attn.softmax", layer=0) is record
    with pytest.raises(KeyError):
        trace.get("attn.softmax", head=0)


@pytest.mark.parametrize("bad", [-1, True, 0.5, "1"])
def test_bad_selectors_in_get_are_value_errors(bad):
    trace = Tracer()
    trace.record("attn.scores", heads(), layer=0)
    with pytest.raises(ValueError):
        trace.get("attn.scores", layer=bad)
    with pytest.raises(ValueError):
        trace.get("attn.scores", head=bad)


def test_absent_record_is_a_key_error():
    with pytest.raises(KeyError, match="no record of step 'logits'"):
        Tracer().get("logits")


def test_step_ids_are_distinct_in_first_occurrence_order():
    trace = Tracer()
    for layer in range(2):
        trace.record("attn.norm", np.zeros((1, 1, 2)), layer=layer)
        trace.record("attn.out", np.zeros((1, 1, 2)), layer=layer)
    trace.record("embed", np.zeros((1, 1, 2)))
    assert trace.step_ids() == ["attn.norm", "attn.out", "embed"]


def test_step_record_is_frozen_and_describes_its_equation():
    record = StepRecord("attn.mask", 0, np.zeros((2, 2)), 5)
    with pytest.raises(AttributeError):
        record.order = 6
    assert record.latex == STEPS["attn.mask"].latex
    assert record.equation == STEPS["attn.mask"].plain
    record.value[0, 0] = 1  # the value itself is not made immutable
    assert record.value[0, 0] == 1


def test_step_record_is_the_seeds_frozen_dataclass_not_a_tuple():
    model = GlassLM(Config(vocab_size=8, d_model=8, n_layers=1, n_heads=2, n_kv_heads=1,
                           max_len=4))
    trace = Tracer()
    model.forward([1, 2, 3], trace)  # the engine's records, built by its fast path
    for rec in (trace.records[0], trace.get("attn.softmax", layer=0, head=1),
                StepRecord("embed", None, np.zeros((3, 8), np.float32), 0)):
        assert dataclasses.is_dataclass(rec) and not isinstance(rec, tuple)
        assert [f.name for f in dataclasses.fields(rec)] == ["id", "layer", "value", "order",
                                                             "head"]
        moved = dataclasses.replace(rec, order=rec.order + 7)
        assert type(moved) is StepRecord and moved.order == rec.order + 7
        assert (moved.id, moved.layer, moved.head, moved.value) == (rec.id, rec.layer, rec.head,
                                                                     rec.value)
        with pytest.raises(TypeError):
            step_id, layer, value, order, head = rec  # does not unpack
        with pytest.raises(TypeError):
            rec < rec  # noqa: B015 - no tuple ordering
        assert rec != tuple(getattr(rec, f.name) for f in dataclasses.fields(rec))
        with pytest.raises(dataclasses.FrozenInstanceError):
            rec.layer = 3
    first = trace.records[0]
    assert repr(first) == "StepRecord(id='embed', order=0, shape=(3, 8), dtype=float32)"
    softmax = trace.get("attn.softmax", layer=0, head=1)
    assert repr(softmax) == (f"StepRecord(id='attn.softmax', layer=0, head=1, "
                             f"order={softmax.order}, shape=(3, 3), dtype=float32)")
    assert softmax.shape == (3, 3) and softmax.equation == STEPS["attn.softmax"].plain
    assert softmax.latex == STEPS["attn.softmax"].latex


def test_module_record_adapter():
    glassllm.trace.record(None, "not even a step", object())  # no tracer: nothing happens
    trace = Tracer()
    glassllm.trace.record(trace, "attn.k", heads(2), 0, True, head=None)
    assert trace.get("attn.k", layer=0, head=1).shape == (2, 2)
    with pytest.raises(KeyError):
        glassllm.trace.record(trace, "nope", 1)


def test_every_equation_has_both_forms():
    assert set(HEAD_STEPS) <= set(STEPS)
    for info in STEPS.values():
        assert info.latex and info.plain


@pytest.mark.parametrize("bad", ["no", 0, 1, None, [1]])
def test_batched_must_be_a_bool(bad):
    with pytest.raises(ValueError, match="batched must be True or False"):
        Tracer().record("embed", np.zeros((1, 2, 2)), batched=bad)
    trace = Tracer()
    trace.record("embed", np.zeros((1, 2, 2)), batched=np.bool_(True))
    assert trace.get("embed").shape == (2, 2)


def test_pooled_copies_start_on_a_page_boundary_wherever_the_source_lies():
    # memcpy with rep movsb (AMD Zen, glibc 2.36) runs 10-20x slower when the destination
    # starts 4-28 bytes past the source's offset within a 4 KiB page; a pool buffer that
    # malloc put right after a source of its size sits 16 bytes past it. Page-aligned
    # copies keep that band to sources in a page's last 28 bytes.
    page = 4096
    raw = np.arange((32768 + 2 * page) // 4, dtype=np.float32)
    for shift in range(0, page, 4):  # the source at every float-aligned page offset
        source = raw[shift // 4:shift // 4 + 8192].reshape(1, 64, 128)
        trace = Tracer()  # a fresh tracer each time: the previous copy's buffer comes back
        trace.record("attn.norm", source, layer=0)
        copy = trace.records[0].value
        assert copy.__array_interface__["data"][0] % page == 0
        np.testing.assert_array_equal(copy, source[0])


@pytest.mark.parametrize("args, kwargs", [
    (("attn.q", np.ones((1, 2, 3, 4)), 1), {}),
    (("attn.k", np.ones((1, 2, 3, 4)), 0), {"group": 2}),
    (("embed", np.ones((1, 3, 4))), {}),
    (("embed", np.ones((1, 3, 4)), np.int64(2)), {}),
    (("nope", np.ones((1, 3))), {}),
    ((["embed"], np.ones((1, 3))), {}),
    (("embed", np.ones((2, 3))), {}),
    (("embed", np.float32(1)), {}),
    (("embed", np.ones((1, 3)), True), {}),
    (("embed", np.ones((1, 3)), -1), {}),
    (("attn.k", np.ones((1, 2, 3, 4)), 0), {"group": 0}),
    (("attn.k", np.ones((1, 2, 3, 4)), 0), {"group": True}),
    (("embed", [[1.0, 2.0]]), {}),
])
def test_the_engines_record_call_agrees_with_tracer_record(args, kwargs):
    # glassllm.trace.record (the engine's call) handles the usual case itself
    def outcome(call):
        trace = Tracer()
        try:
            call(trace)
        except (KeyError, ValueError) as error:
            return type(error), str(error)
        return [(r.id, r.layer, type(r.layer), r.head, r.order, r.value.tolist())
                for r in trace.records]
    assert (outcome(lambda t: glassllm.trace.record(t, *args, **kwargs))
            == outcome(lambda t: t.record(*args, **kwargs)))


def test_a_subclass_that_overrides_record_sees_every_call_of_the_model():
    model = GlassLM(Config(vocab_size=16, d_model=8, n_layers=2, n_heads=2, n_kv_heads=1,
                           max_len=4))
    seen = []

    class Printing(Tracer):
        def record(self, step_id, value, layer=None, batched=True, *, head=None, group=1):
            seen.append((step_id, layer))
            super().record(step_id, value, layer, batched, head=head, group=group)

    trace = Printing()
    model.forward([1, 2, 3], trace)
    assert seen == [(r.id, r.layer) for r in trace.records] and len(seen) == 18 * 2 + 3
