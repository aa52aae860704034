"""The model card's "Proving the circuit": what ``glassllm.circuits`` measured on the example
model while the site was built (``engine/child.py: prove_circuit``), as tables and as
sentences generated from the numbers with the module's two rules (a head *qualifies* at a
score of at least ``QUALIFIES``; a measure *collapses* when an edit leaves at most
``COLLAPSES`` of its clean value). A sentence here says what the numbers say, including
when they do not show what the circuit story expects.

Sections, in the order a reader needs them: ablation (each head silenced in turn), the
composition (the previous-token heads feed the induction heads, which do the copying, and
through which path), activation patching on the featured prompt, the logit lens, the direct
logit attribution, and where each qualifying head looks on the featured prompt.
"""

from __future__ import annotations

from html import escape

from ..html.math import display_math
from ..html.tables import table_box
from ..text.markdown import fmt, md_escape, number
from ..text.tokens import TokenLabels
from .limits import indirect_story, limits_story, limits_table_html

KINDS = ("previous_token", "induction")
HALF = 0.5  # a part "restores" the difference when it brings back at least half of it

ABLATION_LATEX = (r"\tilde C^{(l,r)}_{i} = 0\ \ \text{(zero)}\qquad "
                  r"\tilde C^{(l,r)}_{i} = \frac{1}{n}\sum_{j=0}^{n-1} C^{(l,r)}_{j}\ \ \text{(mean)}")
COLLAPSE_LATEX = (r"\text{kept} = \frac{\text{edited}}{\text{clean}} \le \tfrac{1}{4},\qquad "
                  r"\text{copying} = 1 - \rho,\quad \rho = "
                  r"\frac{\mathcal{L}_{\mathrm{second}}}{\mathcal{L}_{\mathrm{first}}}")
PATCHING_LATEX = (r"D = \ell_{i,\mathrm{answer}} - \ell_{i,\mathrm{wrong}},\qquad "
                  r"R = \frac{D_{\mathrm{patched}} - D_{\mathrm{corrupted}}}"
                  r"{D_{\mathrm{clean}} - D_{\mathrm{corrupted}}}")
LENS_LATEX = (r"\ell^{\mathrm{lens}}_{i} = \mathrm{RMSNorm}_{\gamma_{\mathrm{final}}}"
              r"\big(x_i\big)\, W_{\mathrm{out}}^{\top}")
ATTRIBUTION_LATEX = (r"\ell_{i,t} = \tfrac{1}{s_i}\Big(x^{(0)}_i + \sum_{l}\big(\sum_{r} "
                     r"o^{(l,r)}_i + m^{(l)}_i\big)\Big)\odot\gamma_{\mathrm{final}}\cdot "
                     r"W_{\mathrm{out},t}")


def listing(items: list[str], ui) -> str:
    """``a, b and c`` in the page's language."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {ui['proof.and']} " + items[-1]


def name(head: dict) -> str:
    return f"L{head['layer']}H{head['head']}"


def names(heads: list[dict], ui) -> str:
    return ", ".join(name(h) for h in heads) if heads else ui["proof.none"]


def _num(value, ui) -> str:
    return "—" if value is None else number(ui, float(value))


def _table(ui, header: list[str], rows: list[list[str]], cls: str = "") -> str:
    head = "".join(f'<th scope="col">{h}</th>' for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return (table_box(ui["table.scroll_hint"]) + f'<table class="gl-card-table gl-proof {cls}">'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


def kept(clean: float, edited: float) -> float:
    """``glassllm.circuits.collapse``'s ``kept``: the edited value over the clean one."""
    return edited / clean if clean else float("inf")


def copying(measures: dict) -> float:
    return 1.0 - measures["copy_ratio"]


# -- ablation ---------------------------------------------------------------------------

def ablation_rows(table: dict, mode: str) -> list[dict]:
    return [row for row in table["rows"] if row["mode"] == mode]


def ablation_table_html(table: dict, mode: str, collapses: float, ui) -> str:
    heads = table["heads"]
    columns = [(kind, h) for kind in KINDS for h in heads[kind]]
    header = [escape(ui["proof.ablated"])]
    header += [escape(fmt(ui, f"proof.score.{kind}", head=name(h))) for kind, h in columns]
    header += [escape(ui["proof.copy_ratio"]), escape(ui["proof.heldout"])]
    clean = table["clean"]

    def cells(measures: dict) -> list[str]:
        out = []
        for kind, h in columns:
            value = measures[kind][h["layer"]][h["head"]]
            text = escape(number(ui, value))
            if measures is not clean and kept(clean[kind][h["layer"]][h["head"]], value) <= collapses:
                text = f'<strong class="gl-collapsed">{text}</strong>'
            out.append(text)
        ratio = escape(number(ui, measures["copy_ratio"]))
        if measures is not clean and kept(copying(clean), copying(measures)) <= collapses:
            ratio = f'<strong class="gl-collapsed">{ratio}</strong>'
        return out + [ratio, escape(_num(measures["heldout"], ui))]

    rows = [[escape(ui["proof.clean"]), *cells(clean)]]
    rows += [[escape(row_name(row["name"], ui)), *cells(row["measures"])]
             for row in ablation_rows(table, mode)]
    return _table(ui, header, rows, "gl-ablation")


def row_name(row: str, ui) -> str:
    """A row of the ablation table: a head's name, or a group's in this language."""
    key = {"previous-token heads": "proof.group.previous_token",
           "induction heads": "proof.group.induction"}.get(row)
    return ui[key] if key else row


def ablation_story(table: dict, collapses: float, ui) -> str:
    clean = copying(table["clean"])
    singles = [row for row in ablation_rows(table, "zero")
               if len(row["heads"]) == 1 and row["name"] == name(row["heads"][0])]
    kept_by = {row["name"]: kept(clean, copying(row["measures"])) for row in singles}
    breaking = [n for n, k in kept_by.items() if k <= collapses]
    others = [k for n, k in kept_by.items() if k > collapses]
    if breaking:
        key = "proof.ablation.copying_one" if len(breaking) == 1 else "proof.ablation.copying"
        return fmt(ui, key, heads=listing(breaking, ui),
                   least=number(ui, min(others)) if others else "—")
    weakest = min(kept_by, key=kept_by.get)
    return fmt(ui, "proof.ablation.copying_none", head=weakest,
               kept=number(ui, kept_by[weakest]))


# -- composition -------------------------------------------------------------------------

def change(collapse: dict, ui) -> str:
    return f"{collapse['what'].split()[-1]} {number(ui, collapse['clean'])} → {number(ui, collapse['edited'])}"


def composition_story(comp: dict, ui) -> list[str]:
    heads = comp["heads"]
    out = []
    changes = ", ".join(change(c, ui) for c in comp["induction_without_previous_token"])
    key = ("proof.comp.prev_collapses" if comp["previous_token_collapses_induction"]
           else "proof.comp.prev_keeps")
    out.append(fmt(ui, key, heads=names(heads["previous_token"], ui), changes=changes))
    copy = comp["copying_without_induction"]
    key = "proof.comp.ind_collapses" if comp["induction_collapses_copying"] else "proof.comp.ind_keeps"
    out.append(fmt(ui, key, heads=names(heads["induction"], ui),
                   clean=number(ui, copy["clean"]), edited=number(ui, copy["edited"])))
    group = "previous-token heads"
    by_path = {row["path"]: row for row in comp["paths"] if row["name"] == group}
    if {"key", "query", "value"} <= set(by_path):
        kept_key = ", ".join(f"{c['what'].split()[-1]} {number(ui, c['kept'])}"
                             for c in by_path["key"]["induction"])
        key = "proof.comp.k" if comp["k_composition"] else "proof.comp.not_k"
        out.append(fmt(ui, key, kept=kept_key))
    qualifying = {name(h) for h in heads["previous_token"]}
    for row in comp["paths"]:
        if row["path"] != "all" or len(row["source"]) != 1 or row["name"] in qualifying \
                or row["name"] != name(row["source"][0]):  # a single head, not a group
            continue
        broken = [c["what"] for c in row["induction"] + [row["copying"]] if c["collapsed"]]
        if not broken:
            continue
        through = [path for path in ("query", "key", "value")
                   if any(c["collapsed"] for c in _path(comp, row["name"], path))]
        out.append(fmt(ui, "proof.comp.other", head=row["name"],
                       what=listing([what_name(w, ui) for w in broken], ui),
                       paths=listing([ui[f"proof.path.{p}"] for p in through], ui)
                       or ui["proof.none"]))
    return out


def _path(comp: dict, head: str, path: str) -> list[dict]:
    row = next(r for r in comp["paths"] if r["name"] == head and r["path"] == path)
    return row["induction"] + [row["copying"]]


def what_name(what: str, ui) -> str:
    """A collapsed measure as a sentence names it: copying, or a head's induction score."""
    if what == "copying":
        return ui["proof.copying"]
    return fmt(ui, "proof.induction_of", head=what.split()[-1])


def paths_table_html(comp: dict, collapses: float, ui) -> str:
    induction = comp["heads"]["induction"]
    header = [escape(ui["proof.source"]), escape(ui["proof.path"])]
    header += [escape(fmt(ui, "proof.kept.induction", head=name(h))) for h in induction]
    header += [escape(ui["proof.kept.copying"])]
    rows = []
    for row in comp["paths"]:
        cells = []
        for c in row["induction"] + [row["copying"]]:
            text = escape(number(ui, c["kept"]))
            cells.append(f'<strong class="gl-collapsed">{text}</strong>' if c["collapsed"] else text)
        rows.append([escape(row_name(row["name"], ui)), escape(ui[f"proof.path.{row['path']}"]),
                     *cells])
    return _table(ui, header, rows, "gl-paths")


# -- patching, lens, attribution, jobs ----------------------------------------------------

def patching_story(patch: dict, labels: TokenLabels, ui) -> list[str]:
    changed = patch["changed"]
    out = [fmt(ui, "proof.patch.intro", clean=labels.text(patch["clean_tokens"]),
               corrupted=labels.text(patch["corrupted_tokens"]),
               positions=", ".join(map(str, changed)),
               before=", ".join(labels(patch["clean_tokens"][i]) for i in changed),
               after=", ".join(labels(patch["corrupted_tokens"][i]) for i in changed),
               position=patch["position"], answer=labels(patch["answer"]),
               wrong=labels(patch["wrong"]), clean_d=number(ui, patch["clean"]),
               corrupted_d=number(ui, patch["corrupted"]))]
    restoring = [(f"L{l}H{r}", v) for l, row in enumerate(patch["heads"]) for r, v in enumerate(row)
                 if v >= HALF]
    if restoring:
        out.append(fmt(ui, "proof.patch.heads", heads=", ".join(
            f"{n} ({number(ui, v)})" for n, v in restoring)))
    else:
        best = max(((f"L{l}H{r}", v) for l, row in enumerate(patch["heads"])
                    for r, v in enumerate(row)), key=lambda item: item[1])
        out.append(fmt(ui, "proof.patch.heads_none", head=best[0], restored=number(ui, best[1])))
    where = [[i for i, v in enumerate(s["restored"]) if v >= HALF] for s in patch["streams"]]
    last = patch["position"]
    early = [i for i, w in enumerate(where) if w and set(w) <= set(changed)]
    late = [i for i, w in enumerate(where) if w == [last]]
    if early and late and early == list(range(len(early))) and \
            late == list(range(len(early), len(where))):
        first_late = patch["streams"][late[0]]
        out.append(fmt(ui, "proof.patch.moved", upto=patch["streams"][early[-1]]["plain"],
                       positions=", ".join(map(str, changed)), since=first_late["plain"],
                       position=last, layer=first_late["layer"]))
    return out


def patching_tables(patch: dict, labels: TokenLabels, ui) -> str:
    n_heads = len(patch["heads"][0])
    header = [escape(ui["proof.layer"])] + [escape(fmt(ui, "proof.head", head=r)) for r in range(n_heads)]
    heads = _table(ui, header, [[str(l)] + [escape(number(ui, v)) for v in row]
                                for l, row in enumerate(patch["heads"])], "gl-patch-heads")
    rows = []
    for s in patch["streams"]:
        best = [i for i, v in enumerate(s["restored"]) if v >= HALF]
        rows.append([escape(s["plain"]), escape(s["step_id"]),
                     escape(", ".join(f"{i} “{labels(patch['clean_tokens'][i])}” "
                                      f"({number(ui, s['restored'][i])})" for i in best)
                            or ui["proof.none"])])
    streams = _table(ui, [escape(ui["proof.stream"]), escape(ui["proof.step"]),
                          escape(ui["proof.restoring"])], rows, "gl-patch-streams")
    return heads + streams


def lens_story_and_table(lens: dict, labels: TokenLabels, ui) -> tuple[str, str]:
    at = len(lens["tokens"]) - 1
    target = lens["targets"][at]
    rows, first_top = [], None
    for row in lens["rows"]:
        top, prob = row["top_tokens"][at][0], row["top_probs"][at][0]
        rank = row["target_ranks"][at]
        if rank == 0 and first_top is None:
            first_top = row["plain"]
        rows.append([escape(row["plain"]), escape(row["step_id"]),
                     f"“{escape(labels(top))}” ({escape(number(ui, prob))})",
                     escape(_num(row["target_probs"][at], ui)), escape("—" if rank is None else str(rank))])
    header = [escape(ui[k]) for k in ("proof.stream", "proof.step", "proof.lens.top")]
    header += [escape(fmt(ui, "proof.lens.target", token=labels(target) if target is not None else "—")),
               escape(ui["proof.lens.rank"])]
    if target is None:
        story = ui["proof.lens.no_target"]
    elif first_top is None:
        story = fmt(ui, "proof.lens.never", token=labels(target), position=at)
    else:
        story = fmt(ui, "proof.lens.first", token=labels(target), position=at, stream=first_top)
    return story, _table(ui, header, rows, "gl-lens")


def attribution_story_and_table(attr: dict, labels: TokenLabels, induction: list[dict],
                                ui) -> tuple[str, str]:
    parts = [(ui["proof.attr.embed"], attr["embed"])]
    parts += [(fmt(ui, "proof.attr.head", head=f"L{l}H{r}"), v)
              for l, row in enumerate(attr["heads"]) for r, v in enumerate(row)]
    parts += [(fmt(ui, "proof.attr.mlp", layer=l), v) for l, v in enumerate(attr["mlps"])]
    largest = max(parts, key=lambda p: abs(p[1]))
    heads_sum = sum(attr["heads"][h["layer"]][h["head"]] for h in induction)
    story = fmt(ui, "proof.attr.story", token=labels(attr["token"]), position=attr["position"],
                logit=number(ui, attr["logit"]), total=number(ui, attr["total"]),
                part=largest[0], value=number(ui, largest[1]),
                heads=names(induction, ui), heads_sum=number(ui, heads_sum))
    rows = [[escape(n), escape(number(ui, v))] for n, v in parts]
    rows.append([f"<strong>{escape(ui['proof.attr.total'])}</strong>",
                 f"<strong>{escape(number(ui, attr['total']))}</strong>"])
    return story, _table(ui, [escape(ui["proof.attr.part"]), escape(ui["proof.attr.value"])],
                         rows, "gl-attribution")


def jobs_story(jobs: dict, labels: TokenLabels, ui, scores: dict | None = None,
               qualifies: float | None = None) -> list[str]:
    """Where each head of ``jobs`` looks; with ``scores`` (the clean probe scores by kind)
    and ``qualifies``, a head under the rule is said not to qualify, with its score."""
    tokens, out = jobs["tokens"], []
    for job in jobs["jobs"]:
        name_ = f"L{job['layer']}H{job['head']}"
        head = fmt(ui, f"proof.jobs.{job['kind']}", head=name_)
        fields = dict(head=head, position=job["position"], token=labels(tokens[job["position"]]))
        if job["target"] is None:
            text = fmt(ui, "proof.jobs.no_target", **fields)
        elif job["hits"]:
            text = fmt(ui, "proof.jobs.hits", **fields, weight=number(ui, job["weight"]),
                       target=job["target"], target_token=labels(tokens[job["target"]]))
        else:
            text = fmt(ui, "proof.jobs.misses", **fields, weight=number(ui, job["weight"]),
                       target=job["target"], target_token=labels(tokens[job["target"]]),
                       looks_at=job["looks_at"], looks_token=labels(tokens[job["looks_at"]]),
                       looks_weight=number(ui, job["looks_weight"]))
        if scores is not None:
            score = scores[job["kind"]][job["layer"]][job["head"]]
            if score < qualifies:
                text += " " + fmt(ui, "proof.jobs.not_qualifying", head=name_,
                                  score=number(ui, score), qualifies=number(ui, qualifies))
        out.append(text)
    return out


def probe_text(circuit: dict, ui) -> str:
    """What one probe is, in words: ``proof.probe.<kind>`` of the probe's length."""
    kind = circuit.get("probe", "bytes")
    return fmt(ui, f"proof.probe.{kind}", length=circuit["ablation"]["length"])


def missing_heads(circuit: dict, ui) -> list[str]:
    """For each kind of head none of which qualifies: the best head and its score."""
    table, out = circuit["ablation"], []
    for kind in KINDS:
        if table["heads"][kind]:
            continue
        scores = table["clean"][kind]
        layers = range(len(scores))
        # where a head of the kind can work: a previous-token head before the last layer, an
        # induction head after the first (as glassllm.circuits.featured_heads searches)
        layers = layers[:-1] if kind == "previous_token" else layers[1:]
        layer, head = max(((l, r) for l in layers for r in range(len(scores[l]))),
                          key=lambda lr: scores[lr[0]][lr[1]])
        out.append(fmt(ui, f"proof.heads.missing.{kind}", head=f"L{layer}H{head}", score=number(ui, scores[layer][head]),
                       qualifies=number(ui, circuit["qualifies"])))
    return out


# -- the section --------------------------------------------------------------------------

# each part's lines: a str is a paragraph (escaped), a list is raw lines as they are

def composition_lines(comp: dict, circuit: dict, labels: TokenLabels, ui) -> list:
    return [ui["proof.composition.intro"], *composition_story(comp, ui),
            [paths_table_html(comp, circuit["collapses"], ui), ""]]


def patching_lines(patch: dict, circuit: dict, labels: TokenLabels, ui) -> list:
    return [[display_math(PATCHING_LATEX), ""], *patching_story(patch, labels, ui),
            [patching_tables(patch, labels, ui), ""]]


def lens_lines(lens: dict, circuit: dict, labels: TokenLabels, ui) -> list:
    story, table = lens_story_and_table(lens, labels, ui)
    return [ui["proof.lens.intro"], [display_math(LENS_LATEX), ""], story, [table, ""]]


def attribution_lines(attr: dict, circuit: dict, labels: TokenLabels, ui) -> list:
    story, table = attribution_story_and_table(attr, labels, circuit["ablation"]["heads"]["induction"], ui)
    return [ui["proof.attribution.intro"], [display_math(ATTRIBUTION_LATEX), ""], story, [table, ""]]


def jobs_lines(jobs: dict, circuit: dict, labels: TokenLabels, ui) -> list:
    featured = circuit.get("featured_jobs")
    if featured and "unavailable" not in featured:
        # the qualifying heads, or the best head of a kind none of which qualifies (said so)
        return jobs_story(featured, labels, ui, circuit["ablation"]["clean"], circuit["qualifies"])
    return jobs_story(jobs, labels, ui)


def proof_section(circuit: dict, labels: TokenLabels, ui) -> list[str]:
    """The card's "Proving the circuit" section, as Markdown lines."""
    collapses, table = circuit["collapses"], circuit["ablation"]
    heads = table["heads"]

    def para(text: str) -> list[str]:
        return [md_escape(text), ""]

    lines = [f"## {md_escape(ui['proof.title'])}", ""]
    lines += para(fmt(ui, "proof.intro", qualifies=number(ui, circuit["qualifies"]),
                      collapses=number(ui, collapses)))
    lines += [display_math(COLLAPSE_LATEX), ""]
    lines += para(fmt(ui, "proof.heads", previous=names(heads["previous_token"], ui),
                      induction=names(heads["induction"], ui), probe=probe_text(circuit, ui),
                      seeds=len(table["seeds"])))
    for text in missing_heads(circuit, ui):
        lines += para(text)
    lines += [f"### {md_escape(ui['proof.ablation'])}", ""]
    lines += para(ui["proof.ablation.intro"])
    lines += [display_math(ABLATION_LATEX), ""]
    lines += [ablation_table_html(table, "zero", collapses, ui), ""]
    lines += para(ablation_story(table, collapses, ui))
    n_layers, n_heads = len(table["clean"]["previous_token"]), len(table["clean"]["previous_token"][0])
    lines += para(ui["proof.try"])
    lines += [f'<div class="glassllm-run" data-mode="ablate" data-layers="{n_layers}" '
              f'data-heads="{n_heads}"><p>{escape(ui["runtime.needs_js"])}</p></div>', ""]
    if ablation_rows(table, "mean"):
        lines += [f'<details class="gl-proof-mean"><summary>{escape(ui["proof.ablation.mean"])}'
                  f"</summary>{ablation_table_html(table, 'mean', collapses, ui)}</details>", ""]
    parts = (("composition", composition_lines), ("patching", patching_lines),
             ("lens", lens_lines), ("attribution", attribution_lines), ("jobs", jobs_lines))
    for key, draw in parts:
        lines += [f"### {md_escape(ui[f'proof.{key}'])}", ""]
        result = circuit[key]
        if key == "composition" and "unavailable" in result \
                and not (heads["previous_token"] and heads["induction"]):
            lines += para(fmt(ui, "proof.comp.no_heads", previous=names(heads["previous_token"], ui),
                              induction=names(heads["induction"], ui)))
            continue
        if "unavailable" in result:
            lines += para(fmt(ui, "proof.unavailable", reason=result["unavailable"].rstrip(".")))
            continue
        for line in draw(result, circuit, labels, ui):
            lines += line if isinstance(line, list) else para(line)
        if key == "attribution" and circuit.get("limits"):  # direct is not total
            told = indirect_story(circuit["limits"].get("indirect"), labels, ui)
            lines += para(told) if told else []
    if circuit.get("limits"):
        lines += [f"### {md_escape(ui['limits.title'])}", ""]
        lines += limits_lines(circuit, labels, ui)
    return lines


def limits_lines(circuit: dict, labels: TokenLabels, ui, intro: bool = True) -> list[str]:
    """The limits' intro (unless ``intro`` is false), table and sentences
    (``pages/limits.py``), as Markdown lines."""
    limits = circuit["limits"]
    lines = [md_escape(fmt(ui, "limits.intro", probe=probe_text(circuit, ui))), ""] if intro else []
    lines += [limits_table_html(limits, ui), ""]
    for text in limits_story(limits, ui, labels, circuit["qualifies"]):
        lines += [md_escape(text), ""]
    return lines
