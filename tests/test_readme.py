"""The README's example must run and print what its comments promise."""

import contextlib
import io
import json
import re
from pathlib import Path

from glassllm import DEMO_CHECKPOINT, STEPS, GlassLM

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs_and_matches_its_comments():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "README lost its Python example"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[0], "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[0] == "(5, 5) " + STEPS["attn.softmax"].plain
    assert f"# {lines[0]}\n" in blocks[0], "the comment must show what the line prints"
    assert lines[-1] == "41"


def test_readme_commands_match_ci():
    text = README.read_text(encoding="utf-8")
    ci = (README.parent / ".ci/run").read_text(encoding="utf-8")
    test_command = 'pip install -e ".[dev]" && npm ci && python -m pytest'
    assert test_command in text  # the default run, without the slow tests
    # CI installs the same and runs the full suite, the README's other test command
    assert 'pip install -e ".[dev]"\nnpm ci\n' in ci
    assert "python -m pytest --run-slow" in text and "full_suite python -m pytest --run-slow" in ci
    assert 'pip install -e ".[docs]" && npm ci && mkdocs build --strict' in text


def test_readme_demo_model_example_prints_what_it_says():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    demo = next(b for b in blocks if "DEMO_CHECKPOINT" in b)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(demo, "README.md", "exec"), {})
    strings, losses, attention = out.getvalue().splitlines()
    for printed in (strings, losses, attention):
        assert f"# {printed}" in demo, f"the comment must show what the line prints: {printed}"
    first, second = map(float, losses.split())
    assert second < first / 2  # what the prose after the block says
    report = json.loads((DEMO_CHECKPOINT / "report.json").read_text(encoding="utf-8"))
    head = report["measures"]["english_twice"]["induction"]
    assert f'layer={head["layer"]}, head={head["head"]}' in demo  # the report's copying head
    assert f'L{head["layer"]}H{head["head"]}' in demo
    model = GlassLM.from_pretrained(DEMO_CHECKPOINT)
    parameters = sum(w.size for w in model.state_dict().values())
    assert f"# {parameters:,} parameters" in demo
    assert f"a BPE of {model.tokenizer.vocab_size:,} subwords" in demo
    text = " ".join(README.read_text(encoding="utf-8").split())
    c = report["criteria"]
    for name in ("English written twice: second/first copy loss <= 0.5",
                 "English written twice: a layer-1 head >= 0.4 on the copy target",
                 "made-up names met again in a story: loss ratio <= 0.5",
                 "random token sequences written twice: ratio <= 0.2",
                 "held-out English <= 1.25 nats/byte"):
        said = f"{c[name]['value']:.3f}"
        verdict = f"{c[name]['target']:g}: {'met' if c[name]['met'] else 'missed'})"
        assert said in text and verdict in text[text.index(said):], (name, said, verdict)


def test_readme_gradient_example_prints_what_it_says():
    from glassllm.backward import GRADS

    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    block = next(b for b in blocks if "gradients(" in b)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {})
    loss_line, shape_line, rule = out.getvalue().splitlines()
    assert f"# {loss_line}\n" in block, "the comment must show the loss and the count printed"
    assert loss_line.split()[1] == str(len(GlassLM.from_pretrained(DEMO_CHECKPOINT).state_dict()))
    assert f"# {shape_line}\n" in block
    assert rule == GRADS["attn.softmax"].plain
