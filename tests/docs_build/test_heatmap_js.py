"""heatmap.js, the step pages' heatmap readout: its node tests, and its token labels
against the site's table of the model's token labels (the replay's steps.json)."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np

from docs_build.html.heatmap import NO_TIP, code_base, value_code, value_codes
from docs_build.text.numbers import format_value
from tests.replay.test_fixtures import node_or_skip

from .conftest import ROOT


def test_node_tests_of_the_step_pages_modules_pass():
    """tests/docs_build/js: heatmap.js, sampling.js and worked.js under node --test."""
    node = node_or_skip()
    files = sorted(str(f.relative_to(ROOT)) for f in (ROOT / "tests" / "docs_build" / "js").glob("*.test.mjs"))
    assert len(files) >= 3
    done = subprocess.run([node, "--test", *files], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, f"node --test failed:\n{done.stdout}\n{done.stderr}"


def test_readout_labels_are_the_sites_token_table(site):
    """A vocabulary grid's readout names tokens from the replay's steps.json, which the site
    ships beside heatmap.js, at the URL heatmap.js asks for (the model's tokenizer's labels)."""
    from glassllm import DEMO_CHECKPOINT, load_tokenizer

    node = node_or_skip()
    script = ("import('./docs_build/assets/heatmap.js').then(m => console.log("
              "m.LABELS_URL.href))")
    done = subprocess.run([node, "--input-type=module", "-e", script], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    asked = done.stdout.strip()
    assert asked == (ROOT / "docs_build" / "replay" / "steps.json").as_uri()  # ../replay/
    # in the site heatmap.js is assets/glassllm/heatmap.js: the table is assets/replay/
    heatmap = site.dir / "assets" / "glassllm" / "heatmap.js"
    assert heatmap.is_file()
    table = json.loads((heatmap.parent.parent / "replay" / "steps.json").read_text(encoding="utf-8"))
    tokenizer = load_tokenizer(DEMO_CHECKPOINT)
    assert table["token_labels"] == tokenizer.labels(range(tokenizer.vocab_size))


def _values_to_encode():
    """Values as the snapshots hold them: float32 over float32's whole range, both signs,
    the exact decimals (0.5, 100, 1e4), the specials, and the readout's padding."""
    rng = np.random.default_rng(0)
    magnitudes = 10.0 ** rng.uniform(-44, 38, 3000)
    values = (magnitudes * rng.choice([-1.0, 1.0], 3000)).astype(np.float32).tolist()
    values += rng.normal(0, 1, 2000).astype(np.float32).tolist()
    values += [0.0, -0.0, 0.5, -0.5, 100.0, 1e4, 9999.0, 99995.0, 0.0001, 0.0001234, 1234.5,
               np.float32(1.4e-45), np.float32(3.4028235e38), np.inf, -np.inf, np.nan]
    return [format_value(np.float32(v)) for v in values] + [NO_TIP]


def _decode_in_node(codes: str, base) -> list[str]:
    node = node_or_skip()
    script = ("import('./docs_build/assets/heatmap.js').then(m => { let s = '';"
              " process.stdin.on('data', d => s += d); process.stdin.on('end', () => {"
              " const [codes, base] = JSON.parse(s);"
              " console.log(JSON.stringify(m.decodeValues(codes, base))); }); })")
    done = subprocess.run([node, "--input-type=module", "-e", script], cwd=ROOT,
                          input=json.dumps([codes, base]), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_readout_values_decode_to_the_texts_the_pages_write():
    """Four characters per value (html/heatmap.py's value_code) come back in heatmap.js as
    exactly the text format_value writes: same digits, same notation, same specials."""
    texts = _values_to_encode()
    assert code_base(texts) is None  # float32's whole range: 4 characters each
    codes = value_codes(texts)
    assert codes is not None and len(codes) == 4 * len(texts)
    assert _decode_in_node(codes, None) == texts


def test_a_heatmaps_values_within_14_powers_of_ten_take_three_characters_each():
    """One step's values span a few powers of ten: counted from the lowest (data-code-base),
    each fits 3 characters, and comes back as the same text."""
    rng = np.random.default_rng(1)
    values = (rng.normal(0, 2, 3000) * 10.0 ** rng.uniform(-6, 2, 3000)).astype(np.float32)
    texts = [format_value(np.float32(v)) for v in values] + ["0", "−∞", NO_TIP, "9999", "1e-09"]
    base = code_base(texts)
    assert base is not None and base <= -12
    codes = value_codes(texts, base)
    assert codes is not None and len(codes) == 3 * len(texts)
    assert _decode_in_node(codes, base) == texts
    # out of the window: no 3-character code, the caller keeps 4
    assert value_code("1e+05", base) is None and value_code("1e+05") is not None


def test_a_value_with_more_digits_has_no_code():
    assert value_code("12345") is None  # an integer step's value: the text is carried instead
    assert value_code("1.234e-05") is not None and value_code("−∞") is not None
