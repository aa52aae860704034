"""Where copying holds and where it fails (docs_build/engine/limits.py, pages/limits.py): the
engine child's figures equal the same losses computed by Hugging Face's LlamaForCausalLM on the
demo checkpoint (an independent implementation), including the head zeroed by a hook on its
o_proj input for the direct-vs-indirect figure; the card and the journey show them in both
languages."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

try:
    import torch
except ImportError:  # the ProperDocs environment has no PyTorch; the comparisons are
    torch = None     # marked "reference" and deselected there

from docs_build.data.example import load_example
from docs_build.engine import limits
from docs_build.text.numbers import format_value
from glassllm.steps import PACKAGE_DIR

from .conftest import LANGS, text_of
from .test_worked import site_settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo():
    data = load_example(site_settings(), PACKAGE_DIR)
    return data.run, data.study


@pytest.fixture(scope="module")
def hf(demo):
    from transformers import LlamaForCausalLM
    torch.set_num_threads(1)
    run, _ = demo
    return LlamaForCausalLM.from_pretrained(run.settings.checkpoint, torch_dtype=torch.float64,
                                            attn_implementation="eager").eval()


def nll(hf, ids: list[int]) -> np.ndarray:
    """-log p(ids[j+1] | ids[:j+1]) from the HF model, float64."""
    with torch.no_grad():
        logits = hf(torch.tensor([ids[:-1]])).logits[0]
    logp = torch.log_softmax(logits, -1).numpy()
    return -logp[np.arange(len(ids) - 1), ids[1:]]


def close(a, b, tol=2e-3):
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)


@pytest.fixture(scope="module")
def model(demo):
    from glassllm import GlassLM
    run, _ = demo
    return GlassLM.from_pretrained(run.settings.checkpoint)


@pytest.mark.reference
def test_copy_by_length_and_english_twice_agree_with_transformers(demo, hf, model):
    run, study = demo
    got = study.circuit["limits"]
    from glassllm import probes
    alphabet = probes.probe_alphabet(model)
    for row in got["copy"]:
        n = row["length"]
        first, second = [], []
        for seed in range(row["strings"]):
            loss = nll(hf, probes.repeated_random_tokens(n, seed, alphabet))
            first.append(loss[:n - 1].mean())
            second.append(loss[n:2 * n - 1].mean())
        assert close(row["first"], np.mean(first)) and close(row["second"], np.mean(second)), n
        assert close(row["ratio"], np.mean(second) / np.mean(first)), n
    lines = (Path(run.settings.checkpoint) / "heldout.txt").read_text(encoding="utf-8").splitlines()
    newline = model.encode("\n")
    lines = [s.strip() for s in lines if s.strip()]
    pairs = [f"{a} {b}" for a, b in zip(lines[0::2], lines[1::2])]  # two in a row
    for cut, key, texts in ((None, "english", lines), (limits.ENGLISH_CUT, "english_short", lines),
                            (None, "english_long", pairs)):
        sentences = [model.encode(text)[:cut] for text in texts]
        sentences = [s for s in sentences
                     if 4 <= len(s) and 2 * len(s) + len(newline) <= run.config.max_len]
        first, second = [], []
        on_target, on_previous, targets, steps = 0.0, 0.0, 0, 0
        for ids in sentences:
            tokens = ids + newline + ids
            loss = nll(hf, tokens)
            first.append(loss[:len(ids) - 1].mean())
            second.append(loss[len(ids) + len(newline):].mean())
            with torch.no_grad():
                out = hf(torch.tensor([tokens]), output_attentions=True)
            weights = np.stack([a[0].numpy() for a in out.attentions])  # (L, H, N, N)
            n, k = len(ids), len(newline)
            on_target = on_target + weights[:, :, n + k + np.arange(n - 1), np.arange(1, n)].sum(-1)
            i = np.arange(1, len(tokens))
            on_previous = on_previous + weights[:, :, i, i - 1].sum(-1)
            targets, steps = targets + n - 1, steps + len(i)
        english = got[key]
        assert english["sentences"] == len(sentences), key
        assert close(english["ratio"], np.mean(second) / np.mean(first)), key
        np.testing.assert_allclose(english["induction"], on_target / targets, atol=2e-4)
        np.testing.assert_allclose(english["previous_token"], on_previous / steps, atol=2e-4)


def mentions(tokens: list[int], name_ids: list[int]) -> list[int]:
    return [k for k in range(1, len(tokens)) if tokens[k:k + len(name_ids)] == name_ids]


@pytest.mark.reference
def test_names_met_again_agree_with_transformers(demo, hf, model):
    _, study = demo
    names = study.circuit["limits"]["names"]
    first, later = [], []
    for name in names["names"]:
        tokens = model.encode(names["story"].replace("{name}", name))
        name_ids = model.encode(" " + name)
        loss = nll(hf, tokens)
        starts = mentions(tokens, name_ids)
        spans = [loss[k:k + len(name_ids) - 1].mean() for k in starts]
        first.append(spans[0])
        later.append(np.mean(spans[1:]))
        assert len(starts) == names["occurrences"]
    assert close(names["first"], np.mean(first)) and close(names["second"], np.mean(later))
    # the featured story: the probability of each of the name's tokens, first and last
    example = study.circuit["limits"]["name_example"]
    tokens = model.encode(example["story"])
    name_ids = model.encode(" " + example["name"])
    loss = nll(hf, tokens)
    starts = mentions(tokens, name_ids)
    for key, start in (("p_first", starts[0]), ("p_again", starts[-1])):
        expected = np.exp(-loss[start - 1:start - 1 + len(name_ids)])
        np.testing.assert_allclose(example[key], expected, rtol=2e-3, atol=1e-6)


@pytest.mark.reference
def test_zeroing_the_induction_head_moves_the_mlps_direct_part_as_transformers_says(demo, hf):
    _, study = demo
    ind = study.circuit["limits"]["indirect"]
    ids, token = study.circuit["tokens"], ind["token"]
    layer, head = ind["layer"], ind["head"]
    dh = hf.config.head_dim
    captured = {}

    def zero_head(module, args):
        x = args[0].clone()
        x[..., head * dh:(head + 1) * dh] = 0
        return (x,)

    def keep(name):
        def hook(module, args, output):
            value = output[0] if isinstance(output, tuple) else output
            captured[name] = value[0, -1].detach().numpy()
        return hook

    def parts(ablate: bool) -> tuple[float, float]:
        hooks = [hf.model.layers[-1].mlp.register_forward_hook(keep("mlp")),
                 hf.model.layers[-1].register_forward_hook(keep("stream"))]  # before the norm
        if ablate:
            hooks.append(hf.model.layers[layer].self_attn.o_proj.register_forward_pre_hook(zero_head))
        try:
            with torch.no_grad():
                out = hf(torch.tensor([ids]))
        finally:
            for h in hooks:
                h.remove()
        stream = captured["stream"]
        readout = (hf.model.norm.weight.detach().numpy() * hf.lm_head.weight[token].detach().numpy()
                   / np.sqrt(np.mean(stream ** 2) + hf.config.rms_norm_eps))
        return float(out.logits[0, -1, token]), float(captured["mlp"] @ readout)

    last_layer = len(hf.model.layers) - 1
    for ablate, key in ((False, "clean"), (True, "ablated")):
        logit, mlp = parts(ablate)
        assert close(ind[key]["logit"], logit, 1e-3), key
        assert close(ind[key]["mlps"][last_layer], mlp, 1e-3), key


def test_the_card_and_the_journey_show_where_copying_fails_in_both_languages(site, demo):
    _, study = demo
    limits_ = study.circuit["limits"]
    for code, (prefix, _) in LANGS.items():
        decimal = "," if code == "pt" else "."
        english = f"{limits_['english']['ratio']:.4g}".replace(".", decimal)
        for page in ("model-card/", "journey/"):
            html = site.html(f"{prefix}{page}")
            assert 'class="gl-card-table gl-limits"' in html, (code, page)
            text = text_of(html)
            assert english in text, (code, page)
            for row in limits_["copy"]:
                assert f"{row['ratio']:.4g}".replace(".", decimal) in text, (code, page)
            # the featured story, its name token by token
            example = limits_["name_example"]
            assert example["story"] in text and example["name"] in text, (code, page)
            for p in example["p_again"]:
                assert format_value(p, decimal) in text, (code, page)
        card = text_of(site.html(f"{prefix}model-card/"))
        indirect = limits_["indirect"]
        mlp = max(indirect["clean"]["mlps"])
        assert f"{mlp:.4g}".replace(".", decimal) in card, code
        assert "s_i = √" in card, code  # the attribution's symbol is defined


def test_the_child_sources_include_the_limits_module():
    from docs_build.engine import runner
    assert Path(limits.__file__).resolve() in runner.CHILD_SOURCES
