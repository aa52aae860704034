"""The catalog page of one language: the example the pages show and a table of all steps."""

from __future__ import annotations

from html import escape

import numpy as np

from ..data.catalog import StepCatalog
from ..data.run import ExampleRun
from ..html.math import inline_math
from ..html.tables import table_box
from ..text.languages import Language
from ..text.markdown import fmt, md_escape, number
from ..text.numbers import shape_text
from .urls import Links, catalog_page_uri, step_page_uri


def example_html(run: ExampleRun, ui) -> str:
    c, s = run.config, run.settings
    sampling = ui["catalog.sampling.greedy"] if s.greedy else fmt(
        ui, "catalog.sampling.random", seed=s.sampling_seed, temperature=number(ui, s.temperature))
    items = [
        fmt(ui, "catalog.model", d_model=c.d_model, layers=c.n_layers, heads=c.n_heads,
            kv_heads=c.n_kv_heads, d_ff=c.d_ff, vocab=c.vocab_size, seed=c.seed),
        fmt(ui, "catalog.weights.random", seed=s.seed) if s.checkpoint is None
        else fmt(ui, "catalog.weights.checkpoint", model=s.model),
        fmt(ui, "catalog.generation", prompt=run.labels.text(run.prompt_tokens),
            generated=run.labels.text(run.generated_tokens), tokens=len(run.generation),
            sampling=sampling),
        fmt(ui, "catalog.loss", text=run.labels.text(run.loss_tokens + run.loss_targets[-1:]),
            loss=number(ui, np.float32(run.loss))),
    ]
    return ('<ul class="gl-example" id="example">'
            + "".join(f"<li>{escape(item)}</li>" for item in items) + "</ul>")


def render_catalog_page(catalog: StepCatalog, run: ExampleRun, labels: dict[str, str],
                        ui: dict[str, str], lang: Language, links: Links) -> str:
    me = catalog_page_uri(lang)
    head = "".join(f'<th scope="col">{escape(ui[k])}</th>' for k in (
        "catalog.col.position", "catalog.col.id", "catalog.col.label", "catalog.col.equation",
        "catalog.col.shape", "catalog.col.runs"))
    rows = []
    for step in catalog.steps:
        href = links.rel(me, step_page_uri(step.id, lang))
        shape = shape_text(run.snapshots[step.id][0].value.shape)
        rows.append(
            f'<tr data-step="{escape(step.id)}"><td>{step.position + 1}</td>'
            f'<td><a href="{escape(href)}"><code>{escape(step.id)}</code></a></td>'
            f'<td><a href="{escape(href)}">{escape(labels[step.id])}</a></td>'
            f"<td>{inline_math(step.latex)}</td><td>{escape(shape)}</td>"
            f'<td>{escape(ui["runs." + run.where[step.id]])}</td></tr>')
    table = (table_box(ui["table.scroll_hint"])
             + f'<table class="gl-catalog"><thead><tr>{head}</tr></thead>'
             f'<tbody>{"".join(rows)}</tbody></table></div>')
    return "\n".join([f"# {md_escape(ui['catalog.title'])}", "", md_escape(ui["catalog.intro"]), "",
                      f"## {md_escape(ui['catalog.example'])}", "", example_html(run, ui), "",
                      table, ""])
