"""The plugin's options as ``generate`` reads them (``read_options``) and as the MkDocs host
validates them (``host/config.py``): one table, one check, so both refuse the same values
with the same words, before the engine runs."""

from __future__ import annotations

import pytest

from docs_build.errors import DocsBuildError
from docs_build.site.options import read_options

BAD = [
    ({"example": {"seed": -1}}, "example.seed", "must be a non-negative integer, got -1"),
    ({"example": {"temperature": True}}, "example.temperature",
     "must be a number, got True (true and false are no numbers)"),
    ({"example": {"temperature": 0}}, "example.temperature", "positive finite number, got 0"),
    ({"example": {"temperature": float("inf")}}, "example.temperature", "got inf"),
    ({"example": {"temperature": float("nan")}}, "example.temperature", "got nan"),
    ({"example": {"tokens": 0}}, "example.tokens", "an integer of at least 1, got 0"),
    ({"example": {"tokens": 2.0}}, "example.tokens", "must be an integer, got 2.0"),
    ({"example": {"traced_step": -1}}, "example.traced_step", "non-negative integer, got -1"),
    ({"example": {"top_k": 0}}, "example.top_k", "an integer of at least 1, got 0"),
    ({"example": {"sampling_seed": False}}, "example.sampling_seed", "got False"),
    ({"example": {"d_model": -32}}, "example.d_model", "at least 1, got -32"),
    ({"example": {"greedy": 1}}, "example.greedy", "must be true or false, got 1"),
    ({"example": {"prompt": 12}}, "example.prompt", "must be a text, got 12"),
    ({"table_rows": True}, "table_rows", "must be an integer, got True"),
    ({"serve_timeout": 0}, "serve_timeout", "at least 1, got 0"),
    ({"source_url_template": "{bogus}"}, "source_url_template",
     "unknown field {bogus}; use only the fields {repo_url}, {ref}, {path}, {line}"),
    ({"source_url_template": "{repo_url}/{path"}, "source_url_template",
     "not a valid template"),
    ({"source_url_template": "{repo_url}/{path}#L{line:>99999999}"}, "source_url_template",
     "gives {line} a format spec"),
]


@pytest.mark.parametrize("raw, name, message", BAD, ids=[case[1] + ":" + repr(case[0]) for case in BAD])
def test_generate_refuses_a_bad_option_naming_it(raw, name, message):
    with pytest.raises(DocsBuildError) as caught:
        read_options(raw)
    assert f"plugins.glassllm.{name} in mkdocs.yml" in str(caught.value)
    assert message in str(caught.value)


@pytest.mark.parametrize("raw, name, message", BAD, ids=[case[1] + ":" + repr(case[0]) for case in BAD])
def test_the_mkdocs_host_refuses_the_same_values(raw, name, message):
    from docs_build.host.config import GlassLMConfig

    config = GlassLMConfig()
    config.load_dict(raw)
    errors, _ = config.validate()
    assert len(errors) == 1, errors
    option, error = errors[0]
    assert option == name.split(".")[0]
    assert message in str(error), error
    if "." in name:
        assert f"'{name.split('.')[1]}'" in str(error)


def test_good_values_pass_unchanged():
    options = read_options({"example": {"temperature": 0.7, "top_k": 256, "seed": 0, "greedy": True},
                            "source_url_template": "{repo_url}/src/{ref}/{path}#{line}"})
    assert options.example["temperature"] == 0.7 and options.example["top_k"] == 256
    assert options.source_url_template == "{repo_url}/src/{ref}/{path}#{line}"
    assert read_options(None).example["temperature"] == 1.0
