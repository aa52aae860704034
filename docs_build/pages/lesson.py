"""The "Watch it learn" page (``docs/learn.md``): each ``<!-- glassllm:lesson NAME -->`` line
becomes a sentence, a table or a mount made from the lesson's recording
(``data/lesson.py``), in the page's language:

- ``setup``: the model, the data and the training, with the recording's own figures;
- ``player``: the recording's player (``assets/runtime/lesson.js`` draws it);
- ``formed``: when each head formed, by the one rule, and how the second copy's loss fell;
- ``ablation``: the check: the previous-token heads, the other layer-0 heads and the induction
  heads silenced, and what became of copying;
- ``trainer``: "Train it yourself", the same lesson trained live in the reader's browser.
"""

from __future__ import annotations

import re
from html import escape

from ..data.lesson import load_recording
from ..errors import DocsBuildError
from ..text.markdown import fmt, md_escape, number
from .urls import Links

LESSON_MARKER = re.compile(r"^<!-- glassllm:lesson (\w+) -->[ \t]*$", re.M)
NAMES = ("setup", "player", "formed", "ablation", "trainer")
RECORDING_URI = "assets/runtime/lesson_induction.json"
GROUPS = {"previous-token heads": "lesson.group.previous_token",
          "other layer-0 heads": "lesson.group.other", "induction heads": "lesson.group.induction"}


def heads_text(heads) -> str:
    return ", ".join(f"L{layer}H{head}" for layer, head in heads)


def setup_text(recording: dict, ui) -> str:
    c, t = recording["config"], recording["training"]
    return md_escape(fmt(ui, "lesson.setup", layers=c["n_layers"], d=c["d_model"],
                         heads=c["n_heads"], ff=c["d_ff"], vocab=c["vocab_size"],
                         n=c["max_len"], shortest=t["span"][0], longest=t["span"][1],
                         prefix=t["prefix"], batch=t["batch"], lr=float(t["lr"]),
                         warmup=t["warmup"], steps=recording["steps"],
                         every=recording["snapshot_every"], probes=recording["probe"]["count"],
                         seconds=float(recording["seconds"])))


def formed_text(recording: dict, ui) -> str:
    formed, history = recording["formed"], recording["history"]
    threshold = float(recording["qualifies"])
    if formed["previous_token"] is None or formed["induction"] is None:
        return md_escape(fmt(ui, "lesson.not_formed", threshold=threshold))
    by_step = {s["step"]: s for s in history}
    before = by_step.get(formed["previous_token"] - recording["snapshot_every"], history[0])
    at = by_step[formed["induction"]]
    end = history[-1]
    return md_escape(fmt(
        ui, "lesson.formed", threshold=threshold, prev_step=formed["previous_token"],
        prev_head=f"L0H{by_step[formed['previous_token']]['previous_token_head']}",
        ind_step=formed["induction"], ind_head=f"L1H{at['induction_head']}",
        before_step=before["step"], before_first=float(before["first_copy_loss"]),
        before_second=float(before["second_copy_loss"]), end_step=end["step"],
        end_first=float(end["first_copy_loss"]), end_second=float(end["second_copy_loss"]),
        end_prev=float(end["previous_token"]), end_ind=float(end["induction"])))


def ablation_table(recording: dict, ui) -> str:
    check = recording["check"]
    clean = check["clean"]
    rows = [f'<tr><th scope="row">{escape(ui["lesson.clean_row"])}</th><td>—</td>'
            f'<td>{number(ui, clean["second_copy_loss"])}</td>'
            f'<td>{number(ui, clean["first_copy_loss"])}</td>'
            f'<td>{number(ui, clean["copying"])}</td><td>—</td></tr>']
    for row in check["ablations"]:
        copying = row["copying"]
        verdict = ui["lesson.collapsed" if copying["collapsed"] else "lesson.kept"]
        rows.append(f'<tr><th scope="row">{escape(ui[GROUPS[row["name"]]])}</th>'
                    f'<td>{heads_text(row["heads"])}</td>'
                    f'<td>{number(ui, row["second_copy_loss"])}</td>'
                    f'<td>{number(ui, row["first_copy_loss"])}</td>'
                    f'<td>{number(ui, copying["edited"])}</td>'
                    f'<td>{escape(verdict)} ({number(ui, copying["kept"])})</td></tr>')
    head = "".join(f'<th scope="col">{escape(ui[f"lesson.col.{key}"])}</th>'
                   for key in ("group", "heads", "second", "first", "copying", "verdict"))
    caption = fmt(ui, "lesson.ablation_caption", collapses=float(recording["collapses"]),
                  step=recording["steps"])
    summary = fmt(ui, "lesson.check_yes" if check["previous_token_first"]
                  and check["ablation_breaks_copy"] and check["control_keeps_copy"]
                  else "lesson.check_no")
    return (f'<div class="md-typeset__scrollwrap"><div class="md-typeset__table">'
            f'<table class="gl-lesson-ablation-table"><caption>{escape(caption)}</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div></div>"
            f"\n\n{md_escape(summary)}")


def mount(page_uri: str, mode: str, ui, links: Links, seed: int = 0) -> str:
    recording = links.rel(page_uri, RECORDING_URI)
    return (f'<div class="glassllm-lesson" data-mode="{mode}" data-seed="{seed}" '
            f'data-recording="{escape(recording)}"><p>{escape(ui["lesson.needs_js"])}</p></div>')


def fill_lesson(markdown: str, page_uri: str, ui, use_directory_urls: bool) -> str:
    """``markdown`` with each lesson marker replaced (unchanged without one); an unknown
    marker name stops the build naming the page."""
    if not LESSON_MARKER.search(markdown):
        return markdown
    recording = load_recording()
    links = Links(use_directory_urls)

    def replace(match) -> str:
        name = match.group(1)
        if name not in NAMES:
            raise DocsBuildError(f"{page_uri}: unknown marker <!-- glassllm:lesson {name} -->; "
                                 f"the names are {', '.join(NAMES)}")
        if name == "setup":
            return setup_text(recording, ui)
        if name == "formed":
            return formed_text(recording, ui)
        if name == "ablation":
            return ablation_table(recording, ui)
        return mount(page_uri, name, ui, links, recording["seed"])

    return LESSON_MARKER.sub(replace, markdown)
