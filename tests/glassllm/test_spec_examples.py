"""The examples the project was specified with (recording a run, querying it without
ambiguity, the 25 IDs and their repeated events), verbatim."""

import numpy as np


def test_recording_a_run():
    from glassllm import Tracer

    trace = Tracer()
    value = np.ones((1, 2, 3), dtype=np.float32)
    trace.record("embed", value)
    value[:] = 7
    record = trace.get("embed")
    assert record.shape == (2, 3)
    np.testing.assert_array_equal(record.value, np.ones((2, 3)))
    assert record.order == 0
    trace.record("sample", np.array(4), batched=False)
    assert int(trace.get("sample").value) == 4


def test_querying_without_ambiguity():
    from glassllm import Config, GlassLM

    model = GlassLM(Config(vocab_size=8, d_model=8, n_layers=1,
                          n_heads=2, n_kv_heads=1, max_len=4))
    step = next(model.generate([1, 2, 3], 1, greedy=True, trace=True))
    assert step.trace is not None
    attention = step.trace.get("attn.softmax", layer=0, head=1)
    assert attention.shape == (3, 3)
    assert attention.head == 1
    np.testing.assert_allclose(attention.value.sum(-1), 1.0, rtol=1e-5)
    assert len(step.trace.records) == 23


def test_the_ids_and_the_index():
    from glassllm import STEPS
    from glassllm.steps import HEAD_STEPS, LAYER_STEPS, load_step_index, scan_markers

    assert len(STEPS) == 25
    assert len(LAYER_STEPS) == 18
    assert len(HEAD_STEPS) == 9
    assert scan_markers() == load_step_index()
    assert load_step_index()["attn.softmax"]["file"] == "glassllm/nn.py"
