"""Pages that are words with the run's numbers in them: the comparison with GPT-2 and the
lecture path for teachers. Each is ``docs/_texts/<lang>/<page>`` (front matter ``label:``, the
title, then Markdown with ``{{ placeholders }}`` from ``data.facts.FACTS``); a block between
``<!-- glassllm:if CONDITION -->`` and ``<!-- glassllm:end -->`` is kept only when the model
meets the condition (``CONDITIONS``), so a sentence about a design choice says what this
model's config chose."""

from __future__ import annotations

import re
from pathlib import Path

from ..data import facts
from ..errors import DocsBuildError
from ..text.files import TEXTS_DIRNAME
from ..text.languages import Language
from ..text.markdown import md_escape
from ..text.step_texts import parse_step_text

GPT2_PAGE = "llama-vs-gpt2.md"
TEACHING_PAGE = "teaching.md"
PROSE_PAGES = (GPT2_PAGE, TEACHING_PAGE)

CONDITIONS = {
    "tied": lambda config: bool(config.tie_word_embeddings),
    "untied": lambda config: not config.tie_word_embeddings,
    "grouped": lambda config: config.n_kv_heads < config.n_heads,
    "ungrouped": lambda config: config.n_kv_heads == config.n_heads,
}
_BLOCK = re.compile(r"<!-- glassllm:if ([\w-]+) -->\n?(.*?)<!-- glassllm:end -->\n?", re.S)


def keep_blocks(text: str, config, where: str) -> str:
    """``text`` with each conditional block kept (its markers removed) or dropped."""
    def one(match: re.Match) -> str:
        name = match.group(1)
        if name not in CONDITIONS:
            raise DocsBuildError(f"{where}: unknown condition '{name}' in <!-- glassllm:if "
                                 f"{name} -->; use one of {', '.join(CONDITIONS)}")
        return match.group(2) if CONDITIONS[name](config) else ""
    out = _BLOCK.sub(one, text)
    if "<!-- glassllm:if" in out or "<!-- glassllm:end" in out:
        raise DocsBuildError(f"{where}: a <!-- glassllm:if … --> without its "
                             f"<!-- glassllm:end --> (blocks do not nest)")
    return out


def prose_page_uri(page: str, lang: Language) -> str:
    return f"{lang.prefix}{page}"


def render_prose_page(docs_dir: Path, page: str, lang: Language, run, filled_facts: dict,
                      decimal: str) -> str:
    """The Markdown of one prose page in one language."""
    path = Path(docs_dir) / TEXTS_DIRNAME / lang.code / page
    if not path.is_file():
        raise DocsBuildError(f"missing {path}: write the {lang.code!r} text of {page} there "
                             f"(front matter 'label:' with its title, then Markdown)")
    text = parse_step_text(path)
    body = keep_blocks(text.body, run.config, str(path))
    return f"# {md_escape(text.label)}\n\n{facts.fill(body, filled_facts, str(path), decimal)}"
