"""The embedding page's "How the text became tokens": the example's prompt split by the model's
own tokenizer, word by word, with the BPE merges each word's bytes went through (the engine's
child asked glassllm's reader, ``BPETokenizer.explain``), and what that means, in the page's
language. A byte tokenizer merges nothing: one sentence says so.

Every sentence is generated from the split itself (the ui.yml keys ``tokenize.*``), so it
holds for any prompt and any tokenizer the example runs with.
"""

from __future__ import annotations

from html import escape

from ..data.run import ExampleRun
from ..html.tables import table_box
from ..text.markdown import fmt
from ..text.tokens import chip_text


def chip(label: str, token: int | None = None) -> str:
    """One token as a chip: its label, its ID after it."""
    tail = "" if token is None else f'<sub>{token}</sub>'
    return f'<code class="gl-token">{escape(label)}</code>{tail}'


def merge_html(merge, ui) -> str:
    """One merge applied: ``␣ + c → ␣c`` and its rank in the tokenizer's merges."""
    joined = merge.joined
    times = "" if merge.count == 1 else " " + fmt(ui, "tokenize.times", n=merge.count)
    return (f'<li>{chip(merge.left)} + {chip(merge.right)} → {chip(joined)} '
            f'<span class="gl-note">{escape(fmt(ui, "tokenize.rank", rank=merge.rank))}{escape(times)}'
            f'</span></li>')


def tokenization_html(run: ExampleRun, ui) -> str:
    """The section's body (after its heading): sentences and the table of words."""
    split = run.tokenization
    n_bytes = len(run.labels.data(run.prompt_tokens))
    if split is None:
        return f'<p>{escape(fmt(ui, "tokenize.bytes", bytes=n_bytes, tokens=len(run.prompt_tokens)))}</p>'
    words = split.words
    ids = [i for w in words for i in w.ids]
    merges = sum(m.count for w in words for m in w.merges)
    rows = []
    for w in words:
        applied = ("<ol>" + "".join(merge_html(m, ui) for m in w.merges) + "</ol>"
                   if w.merges else escape(ui["tokenize.no_merge"]))
        rows.append(f'<tr><td>{chip(chip_text(w.word))}</td><td>{applied}</td><td>'
                    + " ".join(chip(run.labels(t), t) for t in w.ids) + "</td></tr>")
    whole = [w for w in words if len(w.ids) == 1]
    pieces = [w for w in words if len(w.ids) > 1]
    out = [f'<p>{escape(fmt(ui, "tokenize.intro", text=split.text, bytes=n_bytes, words=len(words), merges=merges, tokens=len(ids)))}</p>',
           table_box(ui["table.scroll_hint"]) + '<table class="gl-tokenize"><thead><tr>'
           f'<th>{escape(ui["tokenize.col.word"])}</th><th>{escape(ui["tokenize.col.merges"])}</th>'
           f'<th>{escape(ui["tokenize.col.tokens"])}</th></tr></thead><tbody>{"".join(rows)}'
           f'</tbody></table></div>',
           f'<p>{escape(ui["tokenize.rank_note"])}</p>']
    summary = fmt(ui, "tokenize.whole", n=len(whole), words=len(words))
    if pieces:
        listed = ", ".join(fmt(ui, "tokenize.split_item", word=chip_text(w.word), n=len(w.ids))
                           for w in pieces)
        summary += " " + fmt(ui, "tokenize.split", list=listed)
    else:
        summary += " " + ui["tokenize.none_split"]
    out.append(f"<p>{escape(summary)}</p>")
    return "".join(out)
