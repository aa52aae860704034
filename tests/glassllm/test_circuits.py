"""glassllm.circuits against independent references: Hugging Face's Llama with a head's o_proj
columns zeroed, a float64 forward written here from the equations of docs/model.md (no
glassllm.nn), and the model's own logits; then the circuit's claims on the shipped demo
checkpoint, with the rules the module documents, because the site states them."""

import dataclasses
import json

import numpy as np
import pytest

from glassllm import DEMO_CHECKPOINT, Config, GlassLM, Tracer, circuits, encode, probes
from glassllm.circuits import CircuitHeads, Head
from glassllm.edits import Patch
from tests.conftest import require_or_skip

try:
    import torch

    from tests.glassllm.test_reference import hugging_face_twin
except ImportError as error:  # pragma: no cover - depends on the machine
    torch, MISSING = None, error
else:
    MISSING = None

TINY = dict(vocab_size=256, d_model=16, n_layers=2, n_heads=2, n_kv_heads=1, max_len=16, seed=5)
LENGTH = 4  # the tiny model's probes: 4 bytes written twice


@pytest.fixture(scope="module")
def tiny():
    return GlassLM(Config(**TINY))


@pytest.fixture(scope="module")
def demo():
    return GlassLM.from_pretrained(DEMO_CHECKPOINT)


@pytest.fixture(scope="module")
def heldout():
    return (DEMO_CHECKPOINT / "heldout.txt").read_bytes()


@pytest.fixture(scope="module")
def table(demo, heldout):
    return circuits.ablation_table(demo, heldout=heldout)


@pytest.fixture(scope="module", params=["zero", "mean"])
def composed(request, demo):
    return circuits.composition(demo, mode=request.param)


# -- an independent forward, in float64, from the equations ------------------------------

def reference(model, tokens, *, drop=(), contexts=None, path=None):
    """The forward pass of docs/model.md in float64, from ``state_dict()``: the streams
    x⁽⁰⁾, x⁽½⁾, x⁽¹⁾, …, every head's attention weights, context and output o⁽ˡʳ⁾, and the
    logits. ``drop``: heads (l, r) whose context is set to 0; ``contexts``: {(l, r): (n, dh)}
    replacing a head's context; ``path``: (which, l, stream), block l computing its
    queries, keys or values (``"q"``, ``"k"``, ``"v"``) from ``stream`` instead of its own."""
    c = model.config
    weights = {name: value.astype(np.float64) for name, value in model.state_dict().items()}
    n, H, G, dh = len(tokens), c.n_heads, c.n_kv_heads, c.head_dim

    def rms(x, gain):
        return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + c.norm_eps) * gain

    inverse = 1.0 / c.rope_theta ** (np.arange(0, dh, 2) / dh)
    angles = np.arange(n)[:, None] * inverse[None]
    angles = np.concatenate([angles, angles], axis=-1)  # Hugging Face's half-split pairs

    def rope(x):
        x1, x2 = x[..., :dh // 2], x[..., dh // 2:]
        return x * np.cos(angles) + np.concatenate([-x2, x1], axis=-1) * np.sin(angles)

    x = weights["model.embed_tokens.weight"][list(tokens)]
    run = {"streams": [x], "weights": [], "contexts": [], "heads": [], "mlps": []}
    for l in range(c.n_layers):
        p = f"model.layers.{l}."
        gain = weights[p + "input_layernorm.weight"]
        read = {"q": rms(x, gain), "k": rms(x, gain), "v": rms(x, gain)}
        if path is not None and path[1] == l:
            read[path[0]] = rms(path[2], gain)

        def project(which, name, count):
            y = read[which] @ weights[p + f"self_attn.{name}_proj.weight"].T
            return y.reshape(n, count, dh).transpose(1, 0, 2)

        q, k, v = rope(project("q", "q", H)), rope(project("k", "k", G)), project("v", "v", G)
        A, C = np.empty((H, n, n)), np.empty((H, n, dh))
        for r in range(H):
            g = r * G // H  # g(r) = floor(r H_kv / H)
            s = q[r] @ k[g].T / np.sqrt(dh)
            s[np.triu_indices(n, 1)] = -np.inf
            e = np.exp(s - s.max(-1, keepdims=True))
            A[r] = e / e.sum(-1, keepdims=True)
            C[r] = 0 if (l, r) in drop else A[r] @ v[g]
            if contexts and (l, r) in contexts:
                C[r] = contexts[(l, r)]
        wo = weights[p + "self_attn.o_proj.weight"]
        heads = [C[r] @ wo[:, r * dh:(r + 1) * dh].T for r in range(H)]
        x = x + sum(heads)
        run["streams"].append(x)
        h = rms(x, weights[p + "post_attention_layernorm.weight"])
        a = h @ weights[p + "mlp.gate_proj.weight"].T
        b = h @ weights[p + "mlp.up_proj.weight"].T
        m = (a / (1 + np.exp(-a)) * b) @ weights[p + "mlp.down_proj.weight"].T
        x = x + m
        run["streams"].append(x)
        run["weights"].append(A), run["contexts"].append(C), run["heads"].append(heads)
        run["mlps"].append(m)
    run["scale"] = 1 / np.sqrt((x ** 2).mean(-1) + c.norm_eps)  # 1/s_i
    run["logits"] = rms(x, weights["model.norm.weight"]) @ weights["lm_head.weight"].T
    return run


def nll(logits, targets):
    """-log softmax(logits[i])[targets[i]] for each row, in float64."""
    logits = np.asarray(logits, dtype=np.float64)
    shifted = logits - logits.max(-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -log_p[np.arange(len(targets)), targets]


def copy_losses(logits, tokens, length):
    losses = nll(logits[:-1], tokens[1:])  # losses[j]: predicting tokens[j+1]
    return losses[:length - 1].mean(), losses[length:2 * length - 1].mean()


# -- one entry of each, computed by hand on a tiny model ---------------------------------

def test_an_ablated_entry_equals_the_forward_without_that_head(tiny):
    tokens = probes.repeated_random_tokens(LENGTH, 0)
    edited = circuits.measure(tiny, circuits.ablate_heads([(0, 1)]), length=LENGTH, seeds=[0])
    run = reference(tiny, tokens, drop={(0, 1)})
    i = np.arange(LENGTH, 2 * LENGTH)
    assert edited.induction[1][0] == pytest.approx(run["weights"][1][0][i, i - LENGTH + 1].mean(),
                                                   abs=1e-6)
    first, second = copy_losses(run["logits"], tokens, LENGTH)
    assert edited.copy_ratio == pytest.approx(second / first, rel=1e-5)
    # the ablated head's own attention is computed before its output: unchanged
    assert edited.previous_token[0][1] == circuits.measure(tiny, length=LENGTH,
                                                           seeds=[0]).previous_token[0][1]


def test_a_mean_ablated_entry_uses_the_head_s_mean_context(tiny):
    tokens = probes.repeated_random_tokens(LENGTH, 1)
    edited = circuits.measure(tiny, circuits.ablate_heads([Head(0, 0)], mode="mean"),
                              length=LENGTH, seeds=[1])
    context = reference(tiny, tokens)["contexts"][0][0]
    mean = np.broadcast_to(context.mean(0), context.shape)  # every row: the mean over positions
    run = reference(tiny, tokens, contexts={(0, 0): mean})
    i = np.arange(1, 2 * LENGTH)
    assert edited.previous_token[1][1] == pytest.approx(run["weights"][1][1][i, i - 1].mean(),
                                                        abs=1e-6)


def test_a_key_path_entry_reads_the_keys_from_the_ablated_stream(tiny):
    tokens = probes.repeated_random_tokens(LENGTH, 2)
    edited = circuits.measure_path_ablation(tiny, [(0, 1)], "key", [1], length=LENGTH, seeds=[2])
    ablated_stream = reference(tiny, tokens, drop={(0, 1)})["streams"][2]  # x⁽¹⁾ without L0H1
    run = reference(tiny, tokens, path=("k", 1, ablated_stream))
    i = np.arange(LENGTH, 2 * LENGTH)
    assert edited.induction[1][0] == pytest.approx(run["weights"][1][0][i, i - LENGTH + 1].mean(),
                                                   abs=1e-6)
    first, second = copy_losses(run["logits"], tokens, LENGTH)
    assert edited.copy_ratio == pytest.approx(second / first, rel=1e-5)


def test_a_patched_head_entry_restores_what_its_clean_context_restores(tiny):
    clean, corrupted = [70, 71, 72, 73, 74, 75, 70, 71], [70, 71, 90, 73, 74, 75, 70, 71]
    example = circuits.activation_patching(tiny, clean, corrupted, answer=72, wrong=90)
    assert example.changed == [2] and example.position == 7
    clean_run, corrupted_run = reference(tiny, clean), reference(tiny, corrupted)

    def difference(run):
        return run["logits"][7, 72] - run["logits"][7, 90]
    assert example.clean == pytest.approx(difference(clean_run), abs=1e-4)
    assert example.corrupted == pytest.approx(difference(corrupted_run), abs=1e-4)
    patched = reference(tiny, corrupted, contexts={(1, 0): clean_run["contexts"][1][0]})
    by_hand = ((difference(patched) - difference(corrupted_run))
               / (difference(clean_run) - difference(corrupted_run)))
    assert example.heads[1][0] == pytest.approx(by_hand, abs=1e-4)


def test_a_logit_lens_entry_is_the_stream_through_the_final_norm(tiny):
    tokens = [72, 101, 108, 108, 111, 32, 72, 101]
    lens = circuits.logit_lens(tiny, tokens, k=3)
    row = lens.rows[1]  # x⁽¹⁾, the stream after block 0
    assert (row.step_id, row.layer, row.latex) == ("mlp.residual", 0, "x^{(1)}")
    x = reference(tiny, tokens)["streams"][2][2]  # position 2
    z = x / np.sqrt((x ** 2).mean() + tiny.config.norm_eps) * tiny.norm
    logits = z @ tiny.lm_head.T.astype(np.float64)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    assert row.top_tokens[2] == list(np.argsort(-logits)[:3])
    np.testing.assert_allclose(row.top_probs[2], np.sort(probs)[::-1][:3], atol=1e-5)
    assert row.target_probs[2] == pytest.approx(probs[tokens[3]], abs=1e-5)
    assert row.target_ranks[2] == int((logits > logits[tokens[3]]).sum())
    assert lens.targets == tokens[1:] + [None] and row.target_probs[-1] is None


def test_a_direct_attribution_entry_is_the_part_through_the_frozen_norm(tiny):
    tokens = [72, 101, 108, 108, 111, 32, 72, 101]
    attribution = circuits.direct_logit_attribution(tiny, tokens, position=5, token=33)
    run = reference(tiny, tokens)
    read = run["scale"][5] * tiny.norm * tiny.lm_head[33]  # (1/s_i) γ_final ⊙ W_out[v]
    assert attribution.scale == pytest.approx(run["scale"][5], rel=1e-5)
    assert attribution.heads[1][1] == pytest.approx(run["heads"][1][1][5] @ read, abs=1e-5)
    assert attribution.mlps[0] == pytest.approx(run["mlps"][0][5] @ read, abs=1e-5)
    assert attribution.embed == pytest.approx(run["streams"][0][5] @ read, abs=1e-5)


def test_a_head_job_entry_is_its_attention_on_the_target(tiny):
    tokens = [80, 81, 82, 83, 84, 80]  # position 5 repeats position 0: the target is 1
    heads = CircuitHeads([Head(0, 1)], [Head(1, 0)])
    jobs = circuits.head_jobs(tiny, tokens, heads=heads)
    weights = reference(tiny, tokens)["weights"]
    previous, induction = jobs.jobs
    assert (previous.kind, previous.target, induction.kind, induction.target) == \
        ("previous_token", 4, "induction", 1)
    assert previous.weight == pytest.approx(weights[0][1][5, 4], abs=1e-6)
    assert induction.weight == pytest.approx(weights[1][0][5, 1], abs=1e-6)
    assert induction.looks_at == int(np.argmax(weights[1][0][5]))
    assert induction.hits == (induction.looks_at == 1)


# -- sums and limits that must hold on any model -----------------------------------------

@pytest.mark.parametrize("against", [None, 80])
@pytest.mark.parametrize("position", [0, 3, -1])
def test_direct_contributions_sum_to_the_real_logit(tiny, demo, against, position):
    for model, tokens in ((tiny, [72, 101, 108, 108, 111, 32, 72, 101]),
                          (demo, demo.encode(circuits.FEATURED_PROMPT))):
        attribution = circuits.direct_logit_attribution(model, tokens, position=position,
                                                        against=against)
        logits = model.forward(tokens)[position]
        expected = logits[attribution.token] - (0 if against is None else logits[against])
        assert attribution.logit == pytest.approx(expected, abs=1e-5)
        parts = attribution.embed + np.sum(attribution.heads) + np.sum(attribution.mlps)
        assert attribution.total == pytest.approx(parts, abs=1e-9)
        assert attribution.total == pytest.approx(attribution.logit, abs=2e-4 * max(
            1.0, abs(attribution.logit)))


def test_the_logit_lens_of_the_last_block_is_the_model_s_logits(demo):
    tokens = demo.encode(circuits.FEATURED_PROMPT)
    went = demo.encode(" went")[0]
    for halves in (False, True):
        lens = circuits.logit_lens(demo, tokens, k=4, halves=halves, target=" went")
        last = lens.rows[-1]
        assert (last.step_id, last.layer) == ("mlp.residual", demo.config.n_layers - 1)
        assert len(lens.rows) == (2 * demo.config.n_layers + 1 if halves
                                  else demo.config.n_layers + 1)
        logits = demo.forward(tokens)
        probs = np.exp(logits - logits.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        assert last.top_tokens == np.argsort(-logits, axis=-1, kind="stable")[:, :4].tolist()
        np.testing.assert_allclose(last.top_probs, np.take_along_axis(
            probs, np.array(last.top_tokens), axis=-1), atol=1e-6)
        targets = lens.targets
        assert targets[-1] == went
        np.testing.assert_allclose(last.target_probs, probs[np.arange(len(tokens)), targets],
                                   atol=1e-6)


def test_patching_everything_restores_the_clean_run_and_nothing_leaves_the_corrupted(demo):
    clean = demo.encode(circuits.FEATURED_PROMPT)
    corrupted = demo.encode(circuits.FEATURED_CORRUPTED)
    example = circuits.activation_patching(demo, clean, corrupted)
    answer, wrong, position = example.answer, example.wrong, example.position
    trace = Tracer()
    demo.forward(clean, trace)
    everything = circuits.logit_difference(demo, corrupted, position, answer, wrong,
                                           edit=Patch("embed", trace.get("embed")))
    assert everything == pytest.approx(example.clean, abs=1e-4)
    nothing = circuits.logit_difference(demo, corrupted, position, answer, wrong)
    assert nothing == pytest.approx(example.corrupted, abs=1e-5)
    streams = {(s.step_id, s.layer): s.restored for s in example.streams}
    # the corrupted run's only different token, and everything the prediction reads
    changed = example.changed[0]
    assert streams[("embed", None)][changed] == pytest.approx(1, abs=1e-4)
    last = streams[("mlp.residual", demo.config.n_layers - 1)]
    assert last[position] == pytest.approx(1, abs=1e-4)
    assert np.allclose(np.delete(last, position), 0, atol=1e-5)
    # a position before the change holds the same stream in both runs: nothing to restore
    for restored in streams.values():
        assert np.allclose(restored[:changed], 0, atol=1e-5)


def test_measure_without_an_edit_equals_the_probes(demo, heldout):
    clean = circuits.measure(demo, heldout=heldout)
    report = probes.head_report(demo)
    np.testing.assert_allclose(clean.previous_token, report.previous_token, atol=1e-6)
    np.testing.assert_allclose(clean.induction, report.induction, atol=1e-6)
    assert clean.copy_ratio == pytest.approx(report.copy_ratio, rel=1e-5)
    assert clean.heldout == pytest.approx(probes.heldout_loss(demo, heldout, 128), rel=1e-9)


def test_ablate_heads_equals_zeroing_the_heads_columns_of_w_o(tiny):
    import copy
    silenced = copy.deepcopy(tiny)
    dh = tiny.config.head_dim
    silenced.layers[0].wo[:, dh:2 * dh] = 0
    text = bytes(range(40, 90))
    expected = circuits.measure(silenced, length=LENGTH, heldout=text)
    edited = circuits.measure(tiny, circuits.ablate_heads([(0, 1)]), length=LENGTH, heldout=text)
    np.testing.assert_allclose(edited.induction, expected.induction, atol=1e-6)
    assert edited.copy_ratio == pytest.approx(expected.copy_ratio, rel=1e-5)
    assert edited.heldout == pytest.approx(expected.heldout, rel=1e-5)


def test_every_result_is_plain_json(tiny):
    tokens = [72, 101, 108, 108, 111, 32, 72, 101]
    heads = CircuitHeads([Head(0, 1)], [Head(1, 0)])
    results = [circuits.measure(tiny, length=LENGTH),
               circuits.ablation_table(tiny, length=LENGTH, modes="zero"),
               circuits.activation_patching(tiny, tokens, tokens[:2] + [33] + tokens[3:],
                                            answer=108, wrong=33),
               circuits.logit_lens(tiny, tokens, halves=True),
               circuits.direct_logit_attribution(tiny, tokens),
               circuits.head_jobs(tiny, tokens, heads=heads)]
    for result in results:
        data = json.loads(json.dumps(dataclasses.asdict(result), allow_nan=False))
        assert data == json.loads(json.dumps(dataclasses.asdict(result)))


# -- bad input ---------------------------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda m: circuits.measure("model"), "glassllm.GlassLM"),
    (lambda m: circuits.measure(m, length=9), "max_len"),
    (lambda m: circuits.measure(m, length=LENGTH, seeds=[]), "seeds"),
    (lambda m: circuits.measure(m, length=LENGTH, seeds=[-1]), "seed must be at least 0"),
    (lambda m: circuits.measure(m, length=LENGTH, heldout="text"), "bytes"),
    (lambda m: circuits.ablate_heads([(0, 1)], mode="half"), "mode"),
    (lambda m: circuits.ablate_heads([]), "empty"),
    (lambda m: circuits.ablate_heads([(0, True)]), "pair"),
    (lambda m: circuits.ablation_table(m, length=LENGTH, modes=["zero", "max"]), "modes"),
    (lambda m: circuits.measure_path_ablation(m, [(1, 0)], "key", [1], length=LENGTH), "after"),
    (lambda m: circuits.measure_path_ablation(m, [(0, 0)], "keys", [1], length=LENGTH), "path"),
    (lambda m: circuits.measure_path_ablation(m, [(0, 5)], "key", [1], length=LENGTH),
     "outside this model"),
    (lambda m: circuits.composition(m, length=LENGTH, heads=CircuitHeads([], [Head(1, 0)])),
     "previous-token head"),
    (lambda m: circuits.composition(m, length=LENGTH,
                                    heads=CircuitHeads([Head(1, 1)], [Head(1, 0)])),
     "layer before"),
    (lambda m: circuits.activation_patching(m, [1, 2, 3], [1, 2]), "same length"),
    (lambda m: circuits.activation_patching(m, [1, 2, 3], [1, 2, 3]), "differ"),
    (lambda m: circuits.activation_patching(m, [1, 2, 3], [1, 2, 4], position=1), "differ"),
    (lambda m: circuits.activation_patching(m, [1, 2, 3], [1, 5, 3], answer=7, wrong=7),
     "same token"),
    (lambda m: circuits.activation_patching(m, [1, 2, 3], [1, 5, 3], answer=256, wrong=1),
     "answer"),
    (lambda m: circuits.logit_lens(m, [1, 2], k=0), "k must"),
    (lambda m: circuits.logit_lens(m, [1, 2], halves="yes"), "halves"),
    (lambda m: circuits.logit_lens(m, []), "empty"),
    (lambda m: circuits.logit_lens(m, b"bytes"), "text"),
    (lambda m: circuits.direct_logit_attribution(m, [1, 2], position=2), "position"),
    (lambda m: circuits.direct_logit_attribution(m, [1, 2], token="ab"), "token"),
    (lambda m: circuits.head_jobs(m, [1, 2], heads=[(0, 1)]), "CircuitHeads"),
    (lambda m: circuits.circuit_heads(None), "Measures"),
    (lambda m: circuits.collapse("copying", 0.0, 0.5), "positive"),
])
def test_bad_input_is_a_clear_value_error(tiny, call, message):
    with pytest.raises(ValueError, match=message):
        call(tiny)


def test_a_table_names_its_rows(tiny):
    table = circuits.ablation_table(tiny, length=LENGTH, modes=["zero"])
    assert [row.name for row in table.rows][:4] == ["L0H0", "L0H1", "L1H0", "L1H1"]
    assert table.row("L1H1").heads == [Head(1, 1)]
    with pytest.raises(ValueError, match="no row 'L2H0'"):
        table.row("L2H0")
    with pytest.raises(ValueError, match="mode 'mean'"):
        table.row("L0H0", "mean")


# -- Hugging Face's model with the head's o_proj columns zeroed --------------------------

def hugging_face_measures(model, zeroed, heldout):
    """Scores, copy ratio and held-out loss of Hugging Face's Llama with the o_proj columns
    of the ``zeroed`` heads set to 0, computed here from its attentions and logits."""
    twin = hugging_face_twin(model)
    dh = model.config.head_dim
    with torch.no_grad():
        for layer, head in zeroed:
            twin.model.layers[layer].self_attn.o_proj.weight[:, head * dh:(head + 1) * dh] = 0
    previous, induction, losses = [], [], []
    alphabet = probes.probe_alphabet(model)
    for seed in (0, 1, 2, 3):
        tokens = probes.repeated_random_tokens(24, seed, alphabet)
        with torch.no_grad():
            out = twin(torch.tensor([tokens]), output_attentions=True)
        weights = np.stack([a[0].numpy() for a in out.attentions])  # (L, H, n, n)
        i = np.arange(1, 48)
        previous.append(weights[:, :, i, i - 1].mean(-1))
        i = np.arange(24, 48)
        induction.append(weights[:, :, i, i - 23].mean(-1))
        losses.append(copy_losses(out.logits[0].numpy(), tokens, 24))
    first, second = np.mean(losses, axis=0)
    data = model.encode(heldout.decode("utf-8"))
    sizes = model.tokenizer.byte_lengths(data)  # the bytes each token stands for
    total, count = 0.0, 0
    for start in range(0, len(data) - 1, model.config.max_len):
        chunk = data[start:start + model.config.max_len + 1]
        with torch.no_grad():
            logits = twin(torch.tensor([chunk[:-1]])).logits[0].numpy()
        total += nll(logits, chunk[1:]).sum()
        count += sum(sizes[start + 1:start + len(chunk)])  # nats per byte
    return np.mean(previous, 0), np.mean(induction, 0), second / first, total / count


@pytest.mark.reference
@pytest.mark.parametrize("which", ["previous_token", "induction", "group"])
def test_an_ablation_row_equals_hugging_face_with_those_o_proj_columns_zeroed(demo, heldout,
                                                                               table, which):
    require_or_skip(torch is not None, f"torch and transformers are needed (pip install "
                    f"torch==2.13.0 transformers): {MISSING}", "GLASSLLM_REQUIRE_REFERENCE")
    featured = circuits.featured_heads(table.clean)
    if which == "group":  # the two featured heads together, or a qualifying group
        groups = [row for row in table.rows if len(row.heads) > 1 and row.mode == "zero"]
        name = groups[-1].name if groups else None
        row = table.row(name, "zero") if name else circuits.Ablation(
            "featured", featured.previous_token[:1] + featured.induction[:1], "zero",
            circuits.measure(demo, circuits.ablate_heads(
                featured.previous_token[:1] + featured.induction[:1]), heldout=heldout))
    else:
        row = table.row(getattr(featured, which)[0].name, "zero")
    previous, induction, ratio, loss = hugging_face_measures(
        demo, [(h.layer, h.head) for h in row.heads], heldout)
    np.testing.assert_allclose(row.measures.previous_token, previous, atol=2e-5)
    np.testing.assert_allclose(row.measures.induction, induction, atol=2e-5)
    assert row.measures.copy_ratio == pytest.approx(ratio, rel=1e-3, abs=1e-4)
    assert row.measures.heldout == pytest.approx(loss, rel=1e-4)


# -- the demo model's circuit, as the site states it -------------------------------------
# The site states whatever the rules find on the shipped model, so these tests hold the
# rules, not the numbers: which heads qualify and what their ablations do are read from the
# model here, with glassllm.probes as the independent measure of the scores.

def test_the_demo_s_qualifying_heads_are_those_the_probes_score_at_least_half(demo, table):
    report = probes.head_report(demo)
    for kind, scores in (("previous_token", report.previous_token),
                         ("induction", report.induction)):
        expected = [f"L{l}H{r}" for l, row in enumerate(scores) for r, v in enumerate(row)
                    if v >= circuits.QUALIFIES]
        assert [h.name for h in getattr(table.heads, kind)] == expected
    groups = [name for name, members in (("previous-token heads", table.heads.previous_token),
                                         ("induction heads", table.heads.induction)) if members]
    names = [row.name for row in table.rows if row.mode == "zero"]
    assert names == [f"L{l}H{r}" for l in range(2) for r in range(demo.config.n_heads)] + groups


def test_the_demo_s_probe_reads_as_words(demo):
    """A subword model's probe is drawn from its word tokens: each decodes to a space and
    lowercase letters, so the probe reads as words on the site."""
    alphabet = probes.probe_alphabet(demo)
    assert len(alphabet) > 100
    for seed in (0, 1, 2, 3):
        tokens = probes.repeated_random_tokens(24, seed, alphabet)
        text = demo.tokenizer.decode(tokens[:24])
        assert len(set(tokens[:24])) == 24 and text.replace(" ", "").isalpha()
        assert text == text.lower() and len(text.split()) == 24


def test_the_composition_states_the_rules_on_the_demo(demo, table):
    heads = table.heads
    if not heads.previous_token or not heads.induction:
        with pytest.raises(ValueError, match="composition needs"):
            circuits.composition(demo)
        return
    composed = circuits.composition(demo, heads=heads)
    for one in composed.induction_without_previous_token:
        assert one.collapsed == (one.kept <= circuits.COLLAPSES)
    assert composed.previous_token_collapses_induction == all(
        one.collapsed for one in composed.induction_without_previous_token)
    ratio = table.row("induction heads").measures.copy_ratio
    assert composed.copying_without_induction.edited == pytest.approx(1 - ratio, abs=1e-9)


def test_ablating_a_head_never_changes_its_own_layer_s_scores(table):
    for row in table.rows:
        first = min(h.layer for h in row.heads)
        np.testing.assert_array_equal(row.measures.previous_token[:first + 1],
                                      table.clean.previous_token[:first + 1])
        np.testing.assert_array_equal(row.measures.induction[:first + 1],
                                      table.clean.induction[:first + 1])


def featured_induction_head(demo):
    """The induction head the pages feature: the best-scoring on the probe in layer 1."""
    heads = circuits.featured_heads(circuits.measure(demo))
    scores = probes.head_report(demo).induction
    return max(heads.induction, key=lambda h: scores[h.layer][h.head])


def test_on_the_featured_sentence_the_induction_head_attends_to_the_copy_target(demo):
    """The featured prompt is an English sentence written twice, cut in the second copy: at
    its last token the featured induction head looks at the token that followed that token
    in the first copy, more than at any other position."""
    tokens = demo.encode(circuits.FEATURED_PROMPT)
    sentence = demo.encode(circuits.FEATURED_SENTENCE)
    assert tokens[:len(sentence)] == sentence  # the first copy, then the second, cut
    head = featured_induction_head(demo)
    jobs = circuits.head_jobs(demo, heads=CircuitHeads([], [head]))
    job = jobs.jobs[0]
    earlier = [j for j in range(len(tokens) - 1) if tokens[j] == tokens[-1]]
    assert job.target == earlier[-1] + 1 < len(sentence)  # inside the first copy
    assert job.hits and job.weight > circuits.QUALIFIES
    trace = Tracer()
    demo.forward(tokens, trace)
    row = trace.get("attn.softmax", layer=head.layer, head=head.head).value[-1]
    assert job.weight == pytest.approx(float(row[job.target]), abs=1e-7)


def test_the_featured_prediction_is_the_copy(demo):
    tokens = demo.encode(circuits.FEATURED_PROMPT)
    earlier = max(j for j in range(len(tokens) - 1) if tokens[j] == tokens[-1])
    copy = tokens[earlier + 1]
    logits = demo.forward(tokens)[-1].astype(np.float64)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    assert int(np.argmax(logits)) == copy and probs[copy] > 0.5
    # the first copy at the same place: English alone gives the word much less
    first = demo.forward(tokens[:earlier + 1])[-1].astype(np.float64)
    first = np.exp(first - first.max())
    assert first[copy] / first.sum() < min(0.5, probs[copy] / 2)


def test_the_corrupted_prompt_changes_one_token_of_the_first_copy(demo):
    clean = demo.encode(circuits.FEATURED_PROMPT)
    corrupted = demo.encode(circuits.FEATURED_CORRUPTED)
    changed = [i for i in range(len(clean)) if clean[i] != corrupted[i]]
    earlier = max(j for j in range(len(clean) - 1) if clean[j] == clean[-1])
    assert len(clean) == len(corrupted) and changed == [earlier + 1]
    assert changed[0] < len(demo.encode(circuits.FEATURED_SENTENCE))


def test_the_patching_example_moves_the_copied_token_in_block_1_s_attention(demo):
    example = circuits.activation_patching(demo)
    changed = example.changed
    assert example.answer == demo.encode(circuits.FEATURED_PROMPT)[changed[0]]
    assert len(changed) == 1
    streams = {s.latex: s.restored for s in example.streams}
    at, last = changed[0], example.position
    for before in ("x^{(0)}", "x^{(1/2)}", "x^{(1)}"):  # the difference is still at the word
        assert streams[before][at] > 0.95 and abs(streams[before][last]) < 0.05
    for after in ("x^{(3/2)}", "x^{(2)}"):  # block 1's attention brought it to the last token
        assert streams[after][last] > 0.95 and abs(streams[after][at]) < 0.05
    assert [(s.latex, s.plain) for s in example.streams] == [
        ("x^{(0)}", "x⁽⁰⁾"), ("x^{(1/2)}", "x⁽½⁾"), ("x^{(1)}", "x⁽¹⁾"), ("x^{(3/2)}", "x⁽¹½⁾"),
        ("x^{(2)}", "x⁽²⁾")]


def test_the_featured_name_is_met_again_and_copied(demo):
    """The featured story's made-up name, met again at the end: the loss on its tokens after
    the first is at most half of what it was at the first mention. The name is none the
    training stories can draw, and neither it nor the story is a held-out text of the
    demo's report."""
    import re
    from pathlib import Path

    from docs_build.engine import limits

    example = limits.name_example(demo, circuits.FEATURED_STORY, circuits.FEATURED_NAME)
    assert example is not None and len(example["name_tokens"]) >= 3
    first = -np.log(example["p_first"][1:]).mean()
    again = -np.log(example["p_again"][1:]).mean()
    assert again <= 0.5 * first
    heldout = Path(__file__).resolve().parents[2] / "scripts" / "heldout"
    names = json.loads((heldout / "names.json").read_text(encoding="utf-8"))
    assert circuits.FEATURED_NAME not in {item["name"] for item in names}
    texts = (heldout / "english.txt").read_text(encoding="utf-8") + json.dumps(names)
    assert circuits.FEATURED_NAME not in texts and circuits.FEATURED_SENTENCE not in texts
    drawn = "(?:[bcdfghjklmnprstvzwxq][aeiouy][bcdfghjklmnprstvzwxq]?){2,4}"  # train_demo
    for name in (circuits.FEATURED_NAME, *limits.NAMES):
        assert not re.fullmatch(drawn, name.lower()), name




def test_the_featured_heads_are_the_qualifying_ones_or_else_the_best():
    def measures(previous, induction):
        return circuits.Measures(previous, induction, 1.0, 0.5, 0.5, None)
    some = measures([[0.2, 0.7], [0.9, 0.1]], [[0.9, 0.1], [0.3, 0.6]])
    heads = circuits.featured_heads(some)
    # the rule's heads, wherever they are (L1H0's previous-token score counts too)
    assert heads == circuits.circuit_heads(some)
    none = measures([[0.2, 0.3], [0.45, 0.1]], [[0.49, 0.1], [0.3, 0.4]])
    heads = circuits.featured_heads(none)
    # no head qualifies: the best previous-token head before the last layer, the best
    # induction head after the first
    assert heads == CircuitHeads([Head(0, 1)], [Head(1, 1)])
