"""The one notation of the 25 equations in STEPS, stated in the model page's Notation section.

Each rule is checked on the LaTeX and on the plain form, and where a rule says what the code
does (grouped-query heads, RoPE angles, top-k) the equation is also checked against the engine.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from glassllm import nn
from glassllm.model import next_token_distribution
from glassllm.steps import HEAD_STEPS, STEPS
from tests.conftest import require_or_skip, serve_directory

ROOT = Path(__file__).resolve().parents[2]
KATEX = ROOT / "node_modules" / "katex"

QUERY_HEAD_STEPS = ("attn.q", "attn.q_rope", "attn.scores", "attn.mask", "attn.softmax",
                    "attn.context")
KV_HEAD_STEPS = ("attn.k", "attn.v", "attn.k_rope")
NORM_STEPS = {"attn.norm": ("h", "x^{(l)}"), "mlp.norm": ("h'", "x^{(l+1/2)}"),
              "final_norm": ("z", "x^{(L)}")}
GROUP = r"g(r) = \left\lfloor r\,H_{kv}/H \right\rfloor"
THETA = r"\Theta_{i,c} &= i\,\beta^{-2\,(c \bmod d_h/2)/d_h}"  # a line of an aligned block


def latex(step_id: str) -> str:
    return STEPS[step_id].latex


def plain(step_id: str) -> str:
    return STEPS[step_id].plain


def sums(text: str) -> list[tuple[str, str]]:
    """(index, lower bound) of every ``\\sum_{index=bound}`` in a LaTeX string."""
    return re.findall(r"\\sum_\{([^=}]*)=?([^}]*)\}", text)


def left_side_indices(text: str) -> set[str]:
    """The indices subscripted on the left of an equation's first ``=``: its free indices."""
    found = set()
    for match in re.finditer(r"_(?:\{([^{}]*)\}|([a-z]))", text.split("=")[0]):
        found |= {part.strip() for part in (match.group(1) or match.group(2)).split(",")}
    return found


def test_heads_sit_in_a_superscript():
    assert set(QUERY_HEAD_STEPS) | set(KV_HEAD_STEPS) == set(HEAD_STEPS)
    for step_id in QUERY_HEAD_STEPS:
        assert re.match(r"^[^=]*\^\{\(r\)\}", latex(step_id)), step_id
        assert "⁽ʳ⁾" in plain(step_id).split("=")[0], step_id
    for step_id in KV_HEAD_STEPS:
        assert re.match(r"^[^=]*\^\{\(g\)\}", latex(step_id)), step_id
        assert "⁽ᵍ⁾" in plain(step_id).split("=")[0], step_id
    # the projections are per head: head r uses its own d_h rows of W_Q
    assert r"W_Q^{(r)\top}" in latex("attn.q") and "r = 0, \\dots, H-1" in latex("attn.q")
    for step_id, w in (("attn.k", "W_K"), ("attn.v", "W_V")):
        assert rf"{w}^{{(g)\top}}" in latex(step_id) and "H_{kv}-1" in latex(step_id)
    # the concatenation names its heads in the same way, counting from 0
    assert "C^{(0)}" in latex("attn.out") and "C^{(H-1)}" in latex("attn.out")
    assert "C⁽⁰⁾" in plain("attn.out") and "C⁽ᴴ⁻¹⁾" in plain("attn.out")


def test_scores_and_context_read_the_key_value_head_g_of_r():
    assert r"\tilde{K}^{(g(r))\top}" in latex("attn.scores")
    assert r"V^{(g(r))}" in latex("attn.context")
    for step_id in ("attn.scores", "attn.context"):
        assert latex(step_id).endswith(GROUP), step_id
        assert plain(step_id).endswith("g(r) = ⌊r·H_kv/H⌋"), step_id
        assert "⁽ᵍ⁽ʳ⁾⁾" in plain(step_id), step_id


@pytest.mark.parametrize("n_heads, n_kv_heads", [(4, 4), (4, 2), (4, 1), (6, 3), (8, 2)])
def test_g_of_r_is_the_engines_grouping(n_heads, n_kv_heads):
    # each query head's rows hold its own index; group_queries stacks the heads each KV head serves
    n = 3
    heads = np.repeat(np.arange(n_heads, dtype=np.float32), n).reshape(1, n_heads, n, 1)
    grouped = nn.group_queries(heads, n_kv_heads)[0, :, :, 0]  # (Hkv, r * n)
    served = {int(r): g for g in range(n_kv_heads) for r in grouped[g]}  # kv head of each r
    assert [served[r] for r in range(n_heads)] == [r * n_kv_heads // n_heads for r in range(n_heads)]


def test_the_residual_stream_carries_its_block_index():
    for step_id, info in STEPS.items():
        # every x is x^{(...)}: no bare x standing for two different streams
        for match in re.finditer(r"(?<![A-Za-z\\])x(?![A-Za-z])", info.latex):
            assert info.latex.startswith("^{(", match.end()), (step_id, info.latex)
        assert not re.search(r"x['′]", info.latex + info.plain), step_id
    assert latex("embed").startswith("x^{(0)}_i =")
    assert latex("attn.residual") == "x^{(l+1/2)} = x^{(l)} + o"
    assert latex("mlp.residual") == "x^{(l+1)} = x^{(l+1/2)} + m"
    assert plain("attn.residual") == "x⁽ˡ⁺½⁾ = x⁽ˡ⁾ + o"
    assert plain("mlp.residual") == "x⁽ˡ⁺¹⁾ = x⁽ˡ⁺½⁾ + m"
    for step_id, (out, stream) in NORM_STEPS.items():
        assert latex(step_id).startswith(rf"{out}_i = \frac{{{stream}_i}}"), step_id
    assert "x⁽ᴸ⁾_i" in plain("final_norm") and plain("final_norm").startswith("z_i =")


def test_rms_sums_run_over_the_feature_index():
    for step_id, (_, stream) in NORM_STEPS.items():
        assert sums(latex(step_id)) == [("c", "0")], step_id
        assert rf"\sum_{{c=0}}^{{d-1}} \left({stream}_{{i,c}}\right)^{{2}}" in latex(step_id)
        assert "Σ_(c=0…d−1)" in plain(step_id) and "_i,c)²" in plain(step_id), step_id


def test_every_index_counts_from_zero():
    for step_id, info in STEPS.items():
        for index, bound in sums(info.latex):
            assert bound == "0", (step_id, index, bound)
        assert not re.search(r"_\{?[a-z]=1", info.latex), step_id
        assert "n+1" not in info.latex and "n+1" not in info.plain, step_id
        for match in re.finditer(r"Σ_(\S*)", info.plain):
            assert re.match(r"\([a-z]′?=0…", match.group(1)), (step_id, info.plain)
    assert sums(latex("loss")) == [("i", "0")] and r"^{n-1}" in latex("loss")
    assert latex("sample").startswith("t_n \\sim p") and plain("sample").startswith("t_n ~ p")
    assert r"\ell_{n-1}" in latex("probs") and "ℓ_(n−1)" in plain("probs")


def test_rope_equations_define_theta():
    for step_id in ("attn.q_rope", "attn.k_rope"):
        assert latex(step_id).endswith(THETA + r" \end{aligned}"), step_id
        assert plain(step_id).endswith("Θ_i,c = i · β^(−2 (c mod d_h/2) / d_h)"), step_id


def test_theta_as_written_is_the_engines_rope_angle():
    n, head_dim, beta = 7, 12, 10000.0
    i, c = np.meshgrid(np.arange(n), np.arange(head_dim), indexing="ij")
    theta = i * beta ** (-2 * (c % (head_dim // 2)) / head_dim)  # THETA, term by term
    cos, sin = nn.rope_angles(n, head_dim, beta)
    np.testing.assert_allclose(cos, np.cos(theta), atol=1e-5)
    np.testing.assert_allclose(sin, np.sin(theta), atol=1e-5)


def test_symbols_keep_one_meaning():
    everything = " ".join(info.latex for info in STEPS.values())
    # key position is always j, and a sum runs over a fresh index: j' next to a free j
    assert latex("attn.mask").startswith("M^{(r)}_{i,j}")
    assert sums(latex("attn.softmax")) == [("j'", "0")]
    assert r"M^{(r)}_{i,j'}" in latex("attn.softmax")
    for step_id, info in STEPS.items():
        for index, _ in sums(info.latex):
            assert index not in left_side_indices(info.latex), (step_id, index)
    # k is only top-k's count, u only the SwiGLU product, g only a key/value head
    assert not re.search(r"_\{?k\b|\{k[,}]|,k\}", everything.replace(r"\operatorname{top}_k", ""))
    assert [s for s, info in STEPS.items() if re.search(r"(?<![a-z\\])u(?![a-z])", info.latex)] \
        == ["mlp.act", "mlp.down"]
    heads_removed = everything.replace("(g)", "").replace("g(r)", "").replace("g = 0", "")
    assert not re.search(r"(?<![A-Za-z\\])g(?![a-z])", heads_removed)
    assert r"\gamma_{\mathrm{attn}}" in latex("attn.norm")
    assert r"\gamma_{\mathrm{mlp}}" in latex("mlp.norm")
    assert r"\gamma_{\mathrm{final}}" in latex("final_norm")
    # the loss is script L in both forms; plain L is the number of blocks
    for step_id in ("loss", "loss.grad"):
        assert r"\mathcal{L}" in latex(step_id) and "ℒ" in plain(step_id), step_id
        assert not re.search(r"(?<![A-Za-z_])L(?![A-Za-z])", plain(step_id)), step_id


def test_probs_states_top_k_as_the_engine_applies_it():
    assert r"\operatorname{top}_k(\ell_{n-1})" in latex("probs")
    assert r"\operatorname{rank}(v) < k" in latex("probs")
    assert r"\operatorname{rank}(v) &= \left|\{v' : \ell_{n-1,v'} > \ell_{n-1,v}\}\right|" in latex("probs")
    assert "top_k(ℓ_(n−1))" in plain("probs") and "rank(v) < k" in plain("probs")
    # rank(v) counts the larger entries, so ties with the k-th largest all survive
    logits = np.array([3.0, 1.0, 2.0, 2.0, 0.5, 2.0], dtype=np.float32)
    for k in range(1, len(logits) + 1):
        rank = [int((logits > logits[v]).sum()) for v in range(len(logits))]
        kept = [v for v in range(len(logits)) if rank[v] < k]
        probs = next_token_distribution(logits, temperature=0.7, top_k=k)
        assert np.flatnonzero(probs).tolist() == kept, k


def katex_failures(equations: dict[str, str]) -> dict[str, str]:
    """{id: KaTeX's error} for each LaTeX string the pinned KaTeX refuses (strict mode)."""
    node = shutil.which("node")
    require_or_skip(node is not None and (KATEX / "package.json").is_file(),
                    "Node.js and the pinned KaTeX (npm ci) are needed to typeset the equations",
                    "GLASSLLM_REQUIRE_BROWSER")
    script = """
        const katex = require(process.argv[1]);
        const equations = JSON.parse(require("fs").readFileSync(0, "utf8"));
        const failures = {};
        for (const [id, latex] of Object.entries(equations)) {
          for (const displayMode of [true, false]) {
            try { katex.renderToString(latex, {displayMode, throwOnError: true, strict: "error"}); }
            catch (error) { failures[id] = error.message; }
          }
        }
        process.stdout.write(JSON.stringify(failures));
    """
    done = subprocess.run([node, "-e", script, str(KATEX)], input=json.dumps(equations),
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def test_every_equation_typesets_in_katex():
    assert katex_failures({step_id: info.latex for step_id, info in STEPS.items()}) == {}
    version = json.loads((KATEX / "package.json").read_text(encoding="utf-8"))["version"]
    assert version == json.loads((ROOT / "package.json").read_text())["dependencies"]["katex"]


PHONE_WIDTH = 358  # px: a 390 px phone less Material's side padding


def test_every_equation_fits_a_phone_without_scrolling(browser):
    """Typeset at the site's size (KaTeX's 1.21em of Material's 16 px text), every equation is
    narrower than a phone's text column; .gl-equation would scroll otherwise."""
    require_or_skip((KATEX / "dist" / "katex.min.js").is_file(),
                    "the pinned KaTeX is not installed (npm ci)", "GLASSLLM_REQUIRE_BROWSER")
    equations = {step_id: info.latex for step_id, info in STEPS.items()}
    with serve_directory(KATEX / "dist") as base:
        page = browser.new_page(viewport={"width": 390, "height": 800})
        page.set_content(f'<!DOCTYPE html><html><head><link rel="stylesheet" href="{base}katex.min.css">'
                         f'<script src="{base}katex.min.js"></script></head>'
                         '<body style="font-size: 16px; margin: 0"></body></html>')
        page.wait_for_function("window.katex !== undefined")
        widths = page.evaluate("""async (equations) => {
            const widths = {};
            for (const [id, latex] of Object.entries(equations)) {
              const box = document.createElement("div");
              box.style.display = "inline-block";
              document.body.appendChild(box);
              katex.render(latex, box, {displayMode: true, throwOnError: true});
              await document.fonts.ready;
              widths[id] = box.querySelector(".katex").getBoundingClientRect().width;
              box.remove();
            }
            return widths;
        }""", equations)
        page.close()
    assert len(widths) == len(STEPS)
    too_wide = {step_id: round(width) for step_id, width in widths.items() if width > PHONE_WIDTH}
    assert too_wide == {}
