"""What attn.q_rope's text says of the RoPE paper: RoFormer rotates neighbouring features
(2c, 2c + 1) by i·ω_c, the engine (Hugging Face's layout) rotates (c, c + d_h/2), and the two
are the same rotation applied to the features in another order."""

from __future__ import annotations

import numpy as np

from glassllm.nn import apply_rope, rope_angles


def roformer(x: np.ndarray, theta: float) -> np.ndarray:
    """The paper's rotation, written from its equation (34): pairs of neighbouring features."""
    n, d = x.shape
    out = np.empty_like(x)
    for i in range(n):
        for c in range(d // 2):
            angle = i * theta ** (-2 * c / d)
            a, b = x[i, 2 * c], x[i, 2 * c + 1]
            out[i, 2 * c] = a * np.cos(angle) - b * np.sin(angle)
            out[i, 2 * c + 1] = a * np.sin(angle) + b * np.cos(angle)
    return out


def test_the_half_layout_is_the_papers_rotation_on_permuted_features():
    n, d, theta = 7, 16, 10000.0
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, n, d)).astype(np.float32)
    cos, sin = rope_angles(n, d, theta)
    # the half layout's feature c is the paper's feature 2c, and c + d/2 is its 2c + 1
    paper_index = np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])

    def in_paper_layout(x):
        y = np.empty_like(x, dtype=np.float64)
        y[:, paper_index] = x
        return y

    for x in (q, k):
        engine = apply_rope(x, cos, sin)
        paper = roformer(in_paper_layout(x), theta)[:, paper_index]
        np.testing.assert_allclose(engine, paper, atol=2e-5, rtol=0)
    # so the attention scores are the paper's on the permuted W_Q and W_K rows
    scores = apply_rope(q, cos, sin) @ apply_rope(k, cos, sin).T
    paper_scores = roformer(in_paper_layout(q), theta) @ roformer(in_paper_layout(k), theta).T
    np.testing.assert_allclose(scores, paper_scores, atol=1e-4, rtol=0)
    # and not without the permutation: the layouts differ
    assert not np.allclose(apply_rope(q, cos, sin), roformer(q.astype(np.float64), theta), atol=1e-3)
