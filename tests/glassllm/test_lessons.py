"""glassllm.lessons: the induction lesson's data, probe, snapshots and check.

A short run is held against an independent reference (transformers' Llama trained with
torch.optim.AdamW on the same batches, its attention read from ``output_attentions``); the
probe's scores against heads built by hand (a fixed-distance head must not pass for an
induction head); the whole lesson, minutes long, is marked slow.
"""

from dataclasses import fields

import numpy as np
import pytest

from glassllm import Config, GlassLM
from glassllm import lessons
from glassllm.circuits import COLLAPSES, QUALIFIES
from glassllm.edits import Patch
from glassllm.lessons import (BATCH, CONFIG, Lesson, Snapshot, induction, make_probes,
                              measure_probes, training_batch)
from tests.conftest import require_or_skip

try:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from glassllm.checkpoint import config_to_hf
except ImportError as error:  # pragma: no cover - depends on the machine
    torch = None
    IMPORT_ERROR = error

N = CONFIG["max_len"]


def short(seed=0, steps=20, every=10) -> Lesson:
    lesson = Lesson(seed, steps=steps, snapshot_every=every)
    lesson.advance()
    return lesson


@pytest.fixture(scope="module")
def twenty() -> Lesson:
    return short()


def as_plain(history):
    return [s.to_dict() for s in history]


# -- the data and the probe ------------------------------------------------------------------

def test_training_data_repeats_spans_of_varied_length_at_varied_offsets():
    rng = np.random.default_rng(0)
    inputs, targets = training_batch(rng, 200, N, CONFIG["vocab_size"])
    assert inputs.shape == targets.shape == (200, N)
    np.testing.assert_array_equal(inputs[:, 1:], targets[:, :-1])
    periods, starts = set(), set()
    for row in np.concatenate([inputs, targets[:, -1:]], axis=1):
        # the period: the smallest p with row[i] == row[i - p] over the sequence's end
        period = next(p for p in range(1, N) if (row[-12:] == row[-12 - p:-p]).all())
        periods.add(period)
        start = next(i for i in range(N) if (row[i:] == np.resize(row[i:i + period], N + 1 - i)).all())
        starts.add(start)
    assert periods == set(range(3, 11))
    assert starts == set(range(0, 9))


def test_no_fixed_distance_predicts_the_training_data():
    """Copying from any one distance back is right for at most a third of the targets (a
    distance that is a multiple of several span lengths, 12 = 3·4 = 4·3 = 2·6, does best);
    finding the current token's previous occurrence is right for every target after the
    span's first occurrence."""
    rng = np.random.default_rng(1)
    inputs, targets = training_batch(rng, 400, N, CONFIG["vocab_size"])
    rows = np.concatenate([inputs, targets[:, -1:]], axis=1)  # (b, n + 1)
    best = 0.0
    for d in range(1, N):
        # the target at i + 1 predicted as the token after the one d positions back
        hits = rows[:, d + 1:] == rows[:, 1:-d]
        best = max(best, hits.mean())
    assert best < 0.35, best


def test_the_probe_writes_spans_of_every_length_twice_with_varied_offsets():
    probes = make_probes()
    assert len(probes) == lessons.PROBES
    assert {p.length for p in probes} == set(range(3, 11))
    assert len({p.first for p in probes}) >= 5
    for p in probes:
        assert len(p.tokens) == N + 1
        span = p.tokens[p.first:p.first + p.length]
        assert len(set(span)) == p.length
        assert p.tokens[p.second:p.second + p.length] == span
        assert not set(span) & set(p.tokens[:p.first] + p.tokens[p.second + p.length:])
        query, key = p.induction_pairs()
        # the key holds the token that followed the query's token in the first copy
        for q, k in zip(query, key):
            assert p.tokens[k - 1] == p.tokens[q]
    assert make_probes() == probes  # fixed: the same for every seed and every call


# -- the fixed-distance trap, with heads built by hand ---------------------------------------

def fixed_offset_attention(n: int, offset: int) -> np.ndarray:
    """Every query attends to the key ``offset`` positions back (or, before that, to 0)."""
    weights = np.zeros((n, n), dtype=np.float32)
    for i in range(n):
        weights[i, max(i - offset, 0)] = 1.0
    return weights


def patched_head(layer: int, head: int, weights: np.ndarray) -> Patch:
    """Head ``head`` of ``layer`` made to attend with ``weights`` (n, n): its attn.softmax
    replaced, so the model runs on with that head's attention built by hand."""
    return Patch("attn.softmax", weights, layer=layer, head=head)


def test_a_head_attending_at_any_fixed_distance_scores_low_on_the_probe():
    model = GlassLM(Config(**CONFIG, seed=0))
    probes = make_probes()
    scores = []
    for offset in range(1, N):
        measures = measure_probes(model, probes, patched_head(1, 0, fixed_offset_attention(N, offset)))
        scores.append(float(measures.induction[1, 0]))
    # the best distance is right for one span length in eight
    assert max(scores) < 0.2, scores
    assert max(scores) < QUALIFIES


def test_a_true_induction_head_built_by_hand_scores_one_and_a_previous_token_head_too():
    model = GlassLM(Config(**CONFIG, seed=0))
    probes = make_probes()
    for probe in probes:
        weights = fixed_offset_attention(N, 1)  # elsewhere: the previous token
        query, key = probe.induction_pairs()
        weights[query] = 0
        weights[query, key] = 1
        measures = measure_probes(model, [probe], patched_head(1, 2, weights))
        assert measures.induction[1, 2] == pytest.approx(1.0)
    measures = measure_probes(model, probes, patched_head(0, 3, fixed_offset_attention(N, 1)))
    assert measures.previous_token[0, 3] == pytest.approx(1.0)


# -- the history ----------------------------------------------------------------------------

def test_history_fields_and_types(twenty):
    history = twenty.history
    assert [s.step for s in history] == [0, 10, 20]
    names = {f.name for f in fields(Snapshot)}
    assert {"step", "loss", "first_copy_loss", "second_copy_loss", "previous_token",
            "induction"} <= names
    for s in history:
        assert isinstance(s.step, int)
        for name in ("loss", "first_copy_loss", "second_copy_loss", "previous_token", "induction"):
            assert type(s[name]) is float and np.isfinite(s[name]), name
            assert s[name] == getattr(s, name)
        assert 0 <= s.previous_token <= 1 and 0 <= s.induction <= 1
        assert s.previous_token == max(s.previous_token_scores)
        assert s.induction == max(s.induction_scores)
        assert s.previous_token_scores[s.previous_token_head] == s.previous_token
        for pattern in (s.previous_token_attention, s.induction_attention):
            assert pattern.shape == (N, N)
            np.testing.assert_allclose(pattern.sum(axis=1), 1, atol=1e-5)
            assert np.all(np.triu(pattern, 1) == 0)  # causal
        plain = s.to_dict(decimals=3)
        assert plain["previous_token_attention"][0][0] == 1.0
    with pytest.raises(KeyError, match="no field 'nope'"):
        history[0]["nope"]


def test_step_zero_is_the_untrained_model(twenty):
    fresh = GlassLM(Config(**CONFIG, seed=0))
    first = twenty.history[0]
    measures = measure_probes(fresh, make_probes())
    assert first.step == 0
    assert first.first_copy_loss == measures.first_copy_loss
    assert first.second_copy_loss == measures.second_copy_loss
    assert first.previous_token == float(measures.previous_token[0].max())
    inputs, targets = training_batch(np.random.default_rng(0), BATCH, N, CONFIG["vocab_size"])
    loss, _ = fresh.gradients(inputs, targets)
    assert first.loss == loss
    # untrained: no head does either job, and nothing is copied yet
    assert first.previous_token < 0.3 and first.induction < 0.3
    assert abs(first.second_copy_loss - first.first_copy_loss) < 0.3


def test_deterministic_for_a_seed_and_a_shorter_run_is_the_start_of_a_longer(twenty):
    again = short()
    assert as_plain(again.history) == as_plain(twenty.history)
    other = short(seed=1, steps=0)  # step 0 alone: another seed, other weights and batches
    assert other.history[0].loss != twenty.history[0].loss
    longer = short(steps=30)
    assert as_plain(longer.history)[:3] == as_plain(twenty.history)
    # trained in pieces, as the browser's worker does: the same snapshots
    pieces = Lesson(0, steps=20, snapshot_every=10)
    got = []
    while not pieces.done:
        got += pieces.advance(3)
    assert as_plain(got) == as_plain(twenty.history) == as_plain(pieces.history)


def test_a_last_step_between_snapshots_is_snapshotted():
    lesson = short(steps=7, every=5)
    assert [s.step for s in lesson.history] == [0, 5, 7]
    assert lesson.done and lesson.check is not None


def test_formed_is_where_the_score_reaches_the_rule_and_stays(twenty):
    from types import SimpleNamespace

    from glassllm.lessons import formed_at

    scores = [0.1, 0.6, 0.4, QUALIFIES, 0.9, 0.7]
    history = [SimpleNamespace(step=10 * i, induction=v, previous_token=0.0)
               for i, v in enumerate(scores)]
    assert formed_at(history, "induction") == 30  # 10 dipped back below: it had not formed
    assert formed_at(history[:3], "induction") is None
    assert formed_at(history, "previous_token") is None
    assert twenty.formed == {"previous_token": None, "induction": None}  # too early


def test_the_loss_falls_within_twenty_steps(twenty):
    losses = [s.loss for s in twenty.history]
    assert losses[-1] < losses[0] - 0.3
    assert losses[0] > np.log(CONFIG["vocab_size"])  # random weights: worse than uniform


@pytest.mark.parametrize("kwargs, match", [
    (dict(seed=-1), "seed must be an integer of at least 0, got -1"),
    (dict(seed=True), "seed .*got True"), (dict(seed="3"), "seed .*got '3'"),
    (dict(seed=float("nan")), "seed .*got nan"), (dict(seed=0, steps=1.5), "steps .*got 1.5"),
    (dict(seed=0, steps=-1), "steps .*got -1"),
    (dict(seed=0, snapshot_every=0), "snapshot_every must be an integer of at least 1, got 0"),
    (dict(seed=0, snapshot_every=1.7), "snapshot_every .*got 1.7")])
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Lesson(**kwargs)


def test_induction_refuses_them_too():
    with pytest.raises(ValueError, match="steps .*got 1.5"):
        lessons.induction(0, steps=1.5)


@pytest.mark.parametrize("count", [0, 1.7, True, "3"])
def test_advance_refuses_a_bad_count(count):
    with pytest.raises(ValueError, match="max_steps must be an integer of at least 1"):
        Lesson(0, steps=5).advance(count)


@pytest.mark.parametrize("heads, match", [
    ([(0, 4)], r"head must be an integer in \[0, 3\] .*got 4 in \(0, 4\)"),
    ([(2, 0)], r"layer must be an integer in \[0, 1\] .*got 2"),
    ([(0, -1)], "head .*got -1"), ([(0, True)], "head .*got True"),
    ([(0, 1.5)], "head .*got 1.5"), ([(0, 1, 2)], "pairs .*got the item"),
    ([0, 1], "pairs .*got the item 0"), ("01", "pairs .*got '01'")])
def test_measure_refuses_a_head_the_model_does_not_have(heads, match):
    # int() would quietly make True and 1.5 head 1
    with pytest.raises(ValueError, match=match):
        Lesson(0, steps=1).measure(heads)


def test_measure_takes_heads_as_pairs_of_numpy_integers_too():
    lesson = Lesson(0, steps=1)
    a = lesson.measure(np.array([[0, 1]]))
    b = lesson.measure([(0, 1)])
    assert a.second_copy_loss == b.second_copy_loss


# -- against transformers + torch.optim.AdamW ------------------------------------------------

def need_torch():
    require_or_skip(torch is not None,
                    f"torch and transformers are needed for the reference test "
                    f"(pip install torch==2.13.0 transformers): "
                    f"{IMPORT_ERROR if torch is None else ''}", "GLASSLLM_REQUIRE_REFERENCE")


def torch_probe_numbers(twin, probes):
    """The snapshot's probe numbers from transformers' run: losses and best-head scores."""
    previous, inductions, first, second = [], [], [], []
    with torch.no_grad():
        for p in probes:
            out = twin(torch.tensor([p.inputs]), output_attentions=True)
            nll = torch.nn.functional.cross_entropy(out.logits[0], torch.tensor(p.targets),
                                                    reduction="none").numpy()
            a0, a1 = out.attentions[0][0].numpy(), out.attentions[-1][0].numpy()  # (H, n, n)
            i = np.arange(1, N)
            previous.append(a0[:, i, i - 1].mean(axis=-1))
            query, key = p.induction_pairs()
            inductions.append(a1[:, query, key].mean(axis=-1))
            first.append(nll[p.copy_positions(p.first)])
            second.append(nll[p.copy_positions(p.second)])
    return dict(first_copy_loss=np.concatenate(first).mean(),
                second_copy_loss=np.concatenate(second).mean(),
                previous_token=np.mean(previous, axis=0).max(),
                induction=np.mean(inductions, axis=0).max())


@pytest.mark.reference
def test_a_short_run_equals_transformers_trained_by_torch_adamw(twenty):
    need_torch()
    torch.set_num_threads(1)
    model = GlassLM(Config(**CONFIG, seed=0))
    torch.manual_seed(0)
    twin = LlamaForCausalLM(LlamaConfig(**config_to_hf(model.config), attn_implementation="eager"))
    twin.load_state_dict({k: torch.from_numpy(v) for k, v in model.state_dict().items()})
    opt = torch.optim.AdamW(twin.parameters(), lr=lessons.LR, betas=lessons.BETAS,
                            eps=lessons.EPS, weight_decay=lessons.WEIGHT_DECAY)
    rng = np.random.default_rng(0)
    probes = make_probes()
    ours = {s.step: s for s in twenty.history}
    for step in range(21):
        inputs, targets = training_batch(rng, BATCH, N, CONFIG["vocab_size"])
        logits = twin(torch.from_numpy(inputs)).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 torch.from_numpy(targets).reshape(-1))
        if step in ours:
            s = ours[step]
            assert s.loss == pytest.approx(float(loss.detach()), abs=2e-4), step
            for name, value in torch_probe_numbers(twin, probes).items():
                assert s[name] == pytest.approx(float(value), abs=2e-4), (step, name)
        if step == 20:
            break
        opt.zero_grad()
        loss.backward()
        for group in opt.param_groups:
            group["lr"] = Lesson.learning_rate(step)
        opt.step()


# -- the whole lesson -----------------------------------------------------------------------

@pytest.mark.slow
def test_the_full_lesson_forms_both_heads_previous_token_first_and_checks_itself():
    lesson = induction(seed=0)
    history = lesson.history
    assert history[0].step == 0 and history[-1].step == lessons.STEPS
    assert [s.step for s in history] == list(range(0, lessons.STEPS + 1, lessons.SNAPSHOT_EVERY))
    check = lesson.check
    formed = lesson.formed
    assert formed == {"previous_token": check.previous_token_formed,
                      "induction": check.induction_formed}
    assert check.previous_token_formed is not None and check.induction_formed is not None
    assert check.previous_token_first
    # a phase change: on the plateau (both scores still low) the second copy is predicted only
    # somewhat better than the first; within a hundred steps of its end both heads have formed
    plateau = [s for s in history if s.previous_token < 0.2 and s.induction < 0.3
               and s.step < check.previous_token_formed]
    assert plateau and plateau[-1].step >= 200
    assert all(s.second_copy_loss > 0.5 * s.first_copy_loss for s in plateau)
    assert check.induction_formed - plateau[-1].step <= 100
    end = history[-1]
    assert end.induction >= QUALIFIES and end.previous_token >= QUALIFIES
    assert end.second_copy_loss < 0.25 * end.first_copy_loss
    rows = {row.name: row for row in check.ablations}
    prev = rows["previous-token heads"]
    assert (0, end.previous_token_head) in prev.heads
    assert prev.copying.collapsed and prev.copying.kept <= COLLAPSES
    assert prev.second_copy_loss > 0.75 * prev.first_copy_loss  # the copy is gone
    assert check.ablation_breaks_copy and check.control_keeps_copy
    assert not rows["other layer-0 heads"].copying.collapsed
    assert rows["induction heads"].copying.collapsed
