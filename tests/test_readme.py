"""The README's example must run and print what its comments promise."""

import contextlib
import io
import json
import re
from pathlib import Path

from glassllm import DEMO_CHECKPOINT, STEPS, GlassLM, probes

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
    text, heads = out.getvalue().splitlines()
    assert f'# "{text}"' in demo, "the comment must show the continuation, quoted"
    final = json.loads((DEMO_CHECKPOINT / "training.json").read_text(encoding="utf-8"))["final"]
    prev, induction = final["previous_token"], final["induction"]  # the card's featured heads
    assert heads == f"({prev['layer']}, {prev['head']}) ({induction['layer']}, {induction['head']})"
    assert f"# {heads}:" in demo, "the comment must show what the line prints"
    parameters = sum(w.size for w in GlassLM.from_pretrained(DEMO_CHECKPOINT).state_dict().values())
    assert f"# {parameters:,} parameters" in demo
    english = probes.heldout_losses(GlassLM.from_pretrained(DEMO_CHECKPOINT), DEMO_CHECKPOINT)
    assert f"gives {english['english']:.2f} nats per byte" in README.read_text(encoding="utf-8")


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
