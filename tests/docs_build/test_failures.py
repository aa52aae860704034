"""Each way the docs build must refuse to publish a wrong site, in a temporary copy.

The build must fail (plain and --strict) with a message that says what to do.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import copy_checkout, run_build

# a build of a broken copy per case (minutes in all on 2 cores): --run-slow runs them
pytestmark = pytest.mark.slow


def _edit(path: Path, pattern: str, replacement: str, count: int = 1) -> None:
    text = path.read_text(encoding="utf-8")
    new, done = re.subn(pattern, replacement, text, count=count, flags=re.M)
    assert done == count, f"{path}: {pattern!r} not found"
    path.write_text(new, encoding="utf-8")


def stale_index(root: Path) -> None:
    # one blank line after the module docstring moves every marker below it
    _edit(root / "glassllm" / "nn.py", r'^(from __future__ import annotations)$', r"\n\1")


def missing_marker(root: Path) -> None:
    _edit(root / "glassllm" / "nn.py", r"\s*#\s*@step attn\.v\b.*$", "")


def unknown_marker(root: Path) -> None:
    _edit(root / "glassllm" / "nn.py", r"#\s*@step attn\.v\b", "# @step attn.value")


def missing_text(root: Path) -> None:
    (root / "docs" / "_texts" / "pt" / "steps" / "attn.q.md").unlink()


def missing_label(root: Path) -> None:
    (root / "docs" / "_texts" / "en" / "steps" / "mlp.up.md").write_text(
        "---\ntitle: no label here\n---\nSome explanation.\n", encoding="utf-8")


def example_raises(root: Path) -> None:
    # appended, so no marker line moves and the index stays fresh
    with (root / "glassllm" / "model.py").open("a", encoding="utf-8") as handle:
        handle.write("\n\ndef _broken_loss(self, *args, **kwargs):\n"
                     "    raise RuntimeError('loss is broken on purpose')\n\n\n"
                     "GlassLM.loss = _broken_loss\n")


def missing_page_translation(root: Path) -> None:
    (root / "docs" / "pt" / "model.md").unlink()


def katex_missing(root: Path) -> None:
    (root / "node_modules").unlink()


def ui_string_missing(root: Path) -> None:
    _edit(root / "docs" / "_texts" / "pt" / "ui.yml", r"^nav\.next:.*$", "")


def no_theme_overrides(root: Path) -> None:
    _edit(root / "mkdocs.yml", r"^  custom_dir: overrides$", "")


def _plugin_option(root: Path, line: str) -> None:
    _edit(root / "mkdocs.yml", r"^  - glassllm:$", "  - glassllm:\n      " + line)


def katex_dir_nonexistent(root: Path) -> None:
    _plugin_option(root, "katex_dir: /nonexistent")


def package_dir_wrong(root: Path) -> None:
    _plugin_option(root, "package_dir: nope")


def table_rows_zero(root: Path) -> None:
    _plugin_option(root, "table_rows: 0")


def table_cols_negative(root: Path) -> None:
    _plugin_option(root, "table_cols: -3")


def sampling_seed_negative(root: Path) -> None:
    _edit(root / "mkdocs.yml", r"^(\s+sampling_seed:) 0$", r"\1 -1")


def _example_option(root: Path, line: str) -> None:
    _edit(root / "mkdocs.yml", r"^(\s+)model: demo$", r"\1model: demo\n\1" + line)


def seed_negative(root: Path) -> None:
    # with model: demo, which uses it for the untrained model
    _edit(root / "mkdocs.yml", r"^(\s+seed:) 0$", r"\1 -1")


def temperature_boolean(root: Path) -> None:
    _example_option(root, "temperature: true")  # YAML's true is Python's 1, but no number


def temperature_zero(root: Path) -> None:
    _example_option(root, "temperature: 0")


def tokens_fraction(root: Path) -> None:
    _edit(root / "mkdocs.yml", r"^(\s+tokens:) 4$", r"\1 2.5")


def top_k_beyond_vocabulary(root: Path) -> None:
    _example_option(root, "top_k: 2049")  # the demo's vocabulary has 2,048 tokens


def table_rows_boolean(root: Path) -> None:
    _plugin_option(root, "table_rows: true")


def _with_repo_url(root: Path, template: str) -> None:
    _edit(root / "mkdocs.yml", r"^site_name: glassllm$",
          "site_name: glassllm\nrepo_url: https://github.com/example/glassllm")
    _plugin_option(root, f"source_url_template: '{template}'")


def source_url_template_unknown_field(root: Path) -> None:
    _with_repo_url(root, "{bogus}")


def source_url_template_unclosed(root: Path) -> None:
    _with_repo_url(root, "{repo_url}/{path")


def bad_front_matter_yaml(root: Path) -> None:
    (root / "docs" / "_texts" / "en" / "steps" / "embed.md").write_text(
        "---\nlabel: [unclosed\nother: x\n---\nSome explanation.\n", encoding="utf-8")


def engine_syntax_error(root: Path) -> None:
    with (root / "glassllm" / "nn.py").open("a", encoding="utf-8") as handle:
        handle.write("\n\ndef broken(:\n    pass\n")  # appended: no marker moves


def engine_unclosed_bracket(root: Path) -> None:
    path = root / "glassllm" / "model.py"
    lines = path.read_text(encoding="utf-8").count("\n")
    with path.open("a", encoding="utf-8") as handle:
        handle.write("\nPAIR = (1,\n")
    return lines + 2  # the line of the bracket


def example_too_slow(root: Path) -> None:
    _plugin_option(root, "example_timeout: 1")
    with (root / "glassllm" / "model.py").open("a", encoding="utf-8") as handle:
        handle.write("\n\nimport time as _time\n_time.sleep(60)\n")  # on import, in the child


def ui_bad_format_spec(root: Path) -> None:
    _edit(root / "docs" / "_texts" / "en" / "ui.yml", r'^layer: "Layer \{layer\}"$',
          'layer: "Layer {layer:Q}"')


def ui_huge_format_width(root: Path) -> None:
    # formatted as it stands, one call would build a 100 MB string per layer label
    _edit(root / "docs" / "_texts" / "pt" / "ui.yml", r'^layer: .*$', 'layer: "{layer:>99999999}"')


CASES = {
    "stale index": (stale_index, ["step_index.json is stale", "attn.norm is indexed at",
                                  "run python scripts/build_step_index.py"]),
    "missing marker": (missing_marker, ["attn.v", "no '# @step <id>' marker",
                                        "python scripts/build_step_index.py"]),
    "unknown marker": (unknown_marker, ["glassllm/nn.py:", "unknown step ID 'attn.value'",
                                        "use one of the IDs in glassllm.STEPS"]),
    "missing text": (missing_text, ["missing 'pt' text for step(s) attn.q",
                                    "write ", "docs/_texts/pt/steps/attn.q.md"]),
    "missing label": (missing_label, ["mlp.up.md", "needs a non-empty 'label:'"]),
    "example raises": (example_raises, ["example run raised RuntimeError",
                                        "loss is broken on purpose", "glassllm/model.py"]),
    "page without translation": (missing_page_translation, ["write docs/pt/model.md"]),
    "KaTeX missing": (katex_missing, ["KaTeX is not installed", "run 'npm ci'"]),
    "UI string missing": (ui_string_missing, ["pt/ui.yml lacks the string(s) nav.next"]),
    "theme overrides unset": (no_theme_overrides, ["per-language template",
                                                   "set 'theme: custom_dir: overrides'"]),
    "katex_dir missing": (katex_dir_nonexistent, ["KaTeX is not installed", "/nonexistent/dist",
                                                  "plugins.glassllm.katex_dir", "run 'npm ci'"]),
    "package_dir wrong": (package_dir_wrong, ["package_dir 'nope' is not the engine package",
                                              "set plugins.glassllm.package_dir"]),
    "table_rows zero": (table_rows_zero, ["option 'table_rows'", "at least 1, got 0"]),
    "table_cols negative": (table_cols_negative, ["option 'table_cols'", "at least 1, got -3"]),
    "sampling_seed negative": (sampling_seed_negative, [
        "option 'example'", "'sampling_seed': must be a non-negative integer, got -1"]),
    "seed negative": (seed_negative, [
        "option 'example'", "'seed': must be a non-negative integer, got -1"]),
    "temperature boolean": (temperature_boolean, [
        "option 'example'", "'temperature': must be a number, got True",
        "true and false are no numbers"]),
    "temperature zero": (temperature_zero, [
        "'temperature': must be a positive finite number, got 0"]),
    "tokens fraction": (tokens_fraction, ["'tokens': must be an integer, got 2.5"]),
    "top_k beyond the vocabulary": (top_k_beyond_vocabulary, [
        "example.top_k must be in [1, 2048] (the model's vocabulary) or left out, got 2049"]),
    "table_rows boolean": (table_rows_boolean, [
        "option 'table_rows'", "must be an integer, got True"]),
    "source_url_template unknown field": (source_url_template_unknown_field, [
        "option 'source_url_template'", "unknown field {bogus}",
        "use only the fields {repo_url}, {ref}, {path},"]),
    "source_url_template unclosed": (source_url_template_unclosed, [
        "option 'source_url_template'", "'{repo_url}/{path' is not a valid template",
        "use only the fields {repo_url}, {ref}, {path},"]),
    "bad front matter YAML": (bad_front_matter_yaml, [
        "docs/_texts/en/steps/embed.md:3: not valid YAML", "label: <short name"]),
    "engine syntax error": (engine_syntax_error, ["glassllm/nn.py:", "SyntaxError: invalid syntax",
                                                  "fix the engine module"]),
    "engine unclosed bracket": (engine_unclosed_bracket, [
        "glassllm/model.py:{line}: SyntaxError: '(' was never closed", "fix the engine module"]),
    "example too slow": (example_too_slow, ["the example child", "did not finish within 1 s",
                                            "plugins.glassllm.example_timeout in mkdocs.yml"]),
    "ui.yml bad format spec": (ui_bad_format_spec, [
        "en/ui.yml: layer: the placeholder {layer:Q} has a format spec", "write {layer}"]),
    "ui.yml huge format width": (ui_huge_format_width, [
        "pt/ui.yml: layer: the placeholder {layer:>99999999}", "write {layer}"]),
}


def _copy_pristine(pristine: Path, root: Path) -> None:
    """The pristine checkout without its built site/ (only the top one: docs_build/site is
    code, and without it the build would import the installed docs_build's)."""
    import shutil

    shutil.copytree(pristine, root, symlinks=True,
                    ignore=lambda folder, names: ["site"] if Path(folder) == pristine else [])


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    return copy_checkout(tmp_path_factory.mktemp("pristine") / "repo")


def test_the_pristine_copy_builds(pristine):
    result = run_build(pristine)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (pristine / "site" / "steps" / "attn.mask" / "index.html").is_file()


@pytest.mark.parametrize("case", CASES)
def test_broken_checkout_fails_with_what_to_do(case, pristine, tmp_path):
    import shutil

    root = tmp_path / "repo"
    _copy_pristine(pristine, root)
    breaker, messages = CASES[case]
    line = breaker(root)
    result = run_build(root, timeout=120)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-3000:]
    assert "Aborted" in output or "Error" in output
    # one line that says it all, not a traceback through MkDocs
    assert "Traceback" not in output, output[-3000:]
    error_lines = [ln for ln in output.splitlines() if ln.startswith("ERROR")]
    assert len(error_lines) == 1, output[-3000:]
    for message in messages:
        message = message.replace("{line}", str(line))
        assert message in error_lines[0], f"{case}: {message!r} not in:\n{output[-3000:]}"


def test_ui_strings_and_labels_reach_the_html_as_text_not_markup(pristine, tmp_path):
    """A translator's ``<script>`` in ui.yml or a step label is shown, never run."""
    import shutil

    root = tmp_path / "repo"
    _copy_pristine(pristine, root)
    injected = {}
    for key in ("language_name", "nav.steps", "nav.source", "catalog.title"):
        injected[key] = f"</title><script>alert(1)</script>{key}"
        _edit(root / "docs" / "_texts" / "pt" / "ui.yml", rf"^{re.escape(key)}: .*$",
              f'{key}: "{injected[key]}"')
    injected["label"] = "</title><script>alert(1)</script>label"
    _edit(root / "docs" / "_texts" / "en" / "steps" / "embed.md", r"^label: .*$",
          f'label: "{injected["label"]}"')
    result = run_build(root)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    pages = {p.relative_to(root / "site").as_posix(): p.read_text(encoding="utf-8")
             for p in (root / "site").rglob("*.html")}
    ran = sorted(name for name, html in pages.items() if "<script>alert(1)" in html)
    assert not ran, ran[:10]
    # the texts are still there, as text: the language menu on an English page, the
    # Portuguese navigation, and the titles
    escaped = {key: text.replace("<", "&lt;").replace(">", "&gt;")
               for key, text in injected.items()}
    assert escaped["language_name"] in pages["index.html"]
    assert escaped["nav.steps"] in pages["pt/index.html"]
    assert escaped["nav.source"] in pages["pt/index.html"]
    assert f"<title>{escaped['catalog.title']} - glassllm</title>" in pages["pt/steps/index.html"]
    assert f"<title>{escaped['label']} - glassllm</title>" in pages["steps/embed/index.html"]


def test_a_formula_katex_refuses_fails_the_strict_build_naming_page_and_formula(pristine, tmp_path):
    """Math is typeset at build, so KaTeX's refusal is the build's: --strict stops, and the
    warning names the page and quotes the formula (here a text's double superscript, the
    RoPE block's old error)."""
    import shutil

    root = tmp_path / "repo"
    _copy_pristine(pristine, root)
    text = root / "docs" / "_texts" / "pt" / "steps" / "embed.md"
    text.write_text(text.read_text(encoding="utf-8") + "\nUma conta quebrada: $10^{4}^{-2}$.\n",
                    encoding="utf-8")
    result = run_build(root, timeout=180)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    warning = next(ln for ln in output.splitlines() if "KaTeX cannot typeset" in ln)
    assert "docs/pt/steps/embed" in warning and "$10^{4}^{-2}$" in warning, warning
    assert "Double superscript" in warning and "docs/_texts" in warning, warning
    # the other language's page, and the pages without the formula, are not blamed
    assert "docs/steps/embed" not in output.replace("docs/pt/steps/embed", ""), output[-3000:]
