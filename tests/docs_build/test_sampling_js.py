"""sampling.js, the temperature / top-k control of the probabilities and sampled-token pages:
its distribution (its node tests run in test_heatmap_js.py) against glassllm's own
(glassllm.model.next_token_distribution) on the demo model's real logits."""

from __future__ import annotations

import json
import subprocess

import numpy as np

from docs_build.html.sampling import logits_code
from docs_build.text.numbers import format_value
from glassllm import DEMO_CHECKPOINT, GlassLM, load_tokenizer
from glassllm.model import next_token_distribution
from tests.replay.test_fixtures import node_or_skip

from .conftest import ROOT

# mkdocs.yml's example runs the demo: its texts are read by the demo's own tokenizer
encode = load_tokenizer(DEMO_CHECKPOINT).encode

SCRIPT = """import('./docs_build/assets/sampling.js').then(m => {
  let s = ''; process.stdin.on('data', d => s += d); process.stdin.on('end', () => {
    const request = JSON.parse(s);
    const logits = m.float32From(request.logits);
    console.log(JSON.stringify(request.cases.map(([t, k]) => {
      const p = m.nextTokenDistribution(logits, t, k);
      return [p, m.topTokens(p, 8).map(([token, q]) => [token, m.formatValue(q)])];
    })));
  });
})"""

CASES = [(1.0, None), (0.7, None), (2.5, None), (1.0, 5), (0.3, 40), (1.0, 1), (1e-4, None),
         (1.3, 256), (0.05, 3)]


def _in_node(logits: np.ndarray, cases) -> list:
    node = node_or_skip()
    request = json.dumps({"logits": logits_code(logits), "cases": cases})
    done = subprocess.run([node, "--input-type=module", "-e", SCRIPT], cwd=ROOT, input=request,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _logit_rows() -> list[np.ndarray]:
    """The demo model's next-token logits after a few prompts (what the pages carry), and a
    row with ties at a top-k cutoff."""
    model = GlassLM.from_pretrained(DEMO_CHECKPOINT)
    rows = [np.asarray(model.forward(encode(text)), dtype=np.float32)[-1]
            for text in ("The cat sat on the ", "It is a truth universally ack", "q")]
    tied = np.repeat(np.linspace(-3, 3, 64, dtype=np.float32), 4)  # each value 4 times
    return rows + [tied]


def test_the_control_computes_what_the_engine_computes():
    """For every T and k, each probability the page computes is next_token_distribution's
    float32 (within one float32 step: the sums add in another order), and the table's top
    tokens and their printed values are the engine's."""
    for logits in _logit_rows():
        answers = _in_node(logits, CASES)
        for (t, k), (probs, top) in zip(CASES, answers):
            want = next_token_distribution(logits, t, k)
            got = np.asarray(probs, dtype=np.float32)
            assert np.all(np.abs(got - want) <= np.spacing(want)), (t, k)
            order = np.argsort(-want.astype(np.float64), kind="stable")[:8]
            assert [token for token, _ in top] == [int(v) for v in order], (t, k)
            assert [text for _, text in top] == [format_value(want[v]) for v in order], (t, k)
