"""The built site's Backward sections and its page "One training step", against a fresh
``GlassLM.gradients`` run of the example and against torch.optim.AdamW (the session's one
built site, ``site``)."""

from __future__ import annotations

import html
import math
import re

import numpy as np
import pytest

from glassllm import DEMO_CHECKPOINT, STEPS, GlassLM, Tracer, load_tokenizer
from glassllm.backward import GRADS, scan_grad_markers
from glassllm.train import TrainOptions

from docs_build.data.backward import GENERATION_ONLY
from docs_build.pages.backward_section import ROW_IN_WORKED
from docs_build.pages.step_page import TIMELAPSE_STEP
from docs_build.text.numbers import format_value

from .conftest import LANGS, REPO_URL, text_of

# mkdocs.yml's example runs the demo: its texts are read by the demo's own tokenizer
encode = load_tokenizer(DEMO_CHECKPOINT).encode

STEP_IDS = list(STEPS)


def step_url(lang: str, step_id: str) -> str:
    return f"{LANGS[lang][0]}steps/{step_id}/"


def training_url(lang: str) -> str:
    return f"{LANGS[lang][0]}training-step/"


def section(page: str) -> str:
    """The Backward section's HTML: from its heading to the next h2."""
    start = page.index('<h2 id="backward">')
    end = page.find("<h2", start + 10)
    return page[start:end if end > 0 else len(page)]


@pytest.fixture(scope="module")
def fresh(site):
    """The example's training step recomputed here: the traced generation step's tokens, each
    predicting the next (the last, the token that step drew), through gradients()."""
    ex = site.example
    model = GlassLM.from_pretrained(DEMO_CHECKPOINT)
    prompt = list(encode(ex.prompt))
    steps = list(model.generate(prompt, ex.tokens, greedy=ex.greedy, temperature=ex.temperature,
                                top_k=ex.top_k, seed=ex.sampling_seed))
    tokens = prompt + [s.token for s in steps[:ex.traced_step]]
    targets = tokens[1:] + [steps[ex.traced_step].token]
    trace, grad_trace = Tracer(), Tracer()
    loss, grads = model.gradients(tokens, targets, trace=trace, grad_trace=grad_trace)
    return tokens, targets, loss, grads, grad_trace


@pytest.mark.parametrize("lang", LANGS)
def test_every_step_page_has_its_backward_rule_and_grad_link(site, lang):
    markers = scan_grad_markers()
    for step_id in STEP_IDS:
        url = step_url(lang, step_id)
        part = section(site.html(url))
        assert "<math" in part, f"{step_id}: the rule is not typeset"
        assert html.unescape(GRADS[step_id].plain) in text_of(part), step_id
        hrefs = re.findall(r'href="([^"]*source/[^"]*#L\d+)"', part)
        assert len(hrefs) == 1, step_id
        path, anchor = site.resolve(url, hrefs[0]).split("#")
        assert path == f"{LANGS[lang][0]}source/{markers[step_id]['file'][:-3]}/"
        assert anchor == f"L{markers[step_id]['line']}"
        line = re.search(rf'<span class="gl-line[^"]*" id="{anchor}">(.*?)\n', site.html(path))
        assert line and re.search(rf"#\s*@grad {re.escape(step_id)}\b", text_of(line.group(1))), \
            f"{step_id}: {path}#{anchor} is not its '# @grad' line"
        repo = re.findall(rf'href="({re.escape(REPO_URL)}/blob/[0-9a-f]{{40}}/[^"]+)"', part)
        assert repo and repo[0].endswith(f"{markers[step_id]['file']}#L{markers[step_id]['line']}")


@pytest.mark.parametrize("lang", LANGS)
def test_gradient_tables_equal_a_fresh_run(site, fresh, lang):
    """Each page's table of the last row's largest gradients: the entries and their digits
    as a fresh gradients() run of the example gives them, in the page's language."""
    grad_trace = fresh[4]
    mark = {"en": ".", "pt": ","}[lang]
    for step_id in STEP_IDS:
        part = section(site.html(step_url(lang, step_id)))
        tables = re.findall(r'<table class="gl-grad-top"([^>]*)>(.*?)</table>', part, re.S)
        if step_id in GENERATION_ONLY or step_id in ("loss", "loss.grad", ROW_IN_WORKED):
            assert not tables, step_id
            continue
        assert len(tables) == 1, step_id
        attrs, body = tables[0]
        meta = dict(re.findall(r'data-(layer|head|row|cols)="([^"]*)"', attrs))
        layer = None if meta["layer"] == "None" else int(meta["layer"])
        value = np.asarray(grad_trace.get(step_id, layer).value)
        if meta["head"] != "None":
            value = value[int(meta["head"])]
        row = value[-1]
        cols = [int(c) for c in meta["cols"].split()]
        assert cols == list(np.argsort(-np.abs(row), kind="stable")[:len(cols)]), step_id
        shown = [html.unescape(t) for t in re.findall(r"<td>([^<]*)</td></tr>", body)]
        assert shown == [format_value(row[c], mark) for c in cols], step_id


@pytest.mark.parametrize("lang", LANGS)
def test_worked_gradient_entry_recomputes(site, fresh, lang):
    """The hand result equals the value gradients() computed, and that value is one of the
    fresh run's gradients (of a traced value or of a weight)."""
    _, _, _, grads, grad_trace = fresh
    pool = np.concatenate([np.asarray(r.value, np.float64).ravel() for r in grad_trace.records]
                          + [np.asarray(g, np.float64).ravel() for g in grads.values()])
    for step_id in STEP_IDS:
        part = section(site.html(step_url(lang, step_id)))
        found = re.search(r'class="gl-grad-worked"[^>]*data-hand="([^"]+)" data-traced="([^"]+)"',
                          part)
        if step_id in GENERATION_ONLY:
            assert found is None, step_id
            continue
        hand, traced = float(found.group(1)), float(found.group(2))
        assert hand == pytest.approx(traced, rel=2e-4, abs=1e-9), step_id
        assert np.isclose(pool, traced, rtol=1e-6, atol=0).any(), step_id


@pytest.mark.reference
@pytest.mark.parametrize("lang", LANGS)
def test_training_step_page_update_equals_torch_adamw(site, fresh, lang):
    """The page's AdamW numbers for its weight equal torch.optim.AdamW's one step with the
    recipe's hyperparameters on the fresh gradient."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    page = site.html(training_url(lang))
    found = re.search(r'<p class="gl-adamw" data-weight="([^"]+)" data-grad="([^"]+)" '
                      r'data-m="([^"]+)" data-v="([^"]+)" data-updated="([^"]+)" '
                      r'data-hand="([^"]+)">', page)
    assert found, "no AdamW update on the page"
    weight, grad, m, v, updated, hand = map(float, found.groups())
    name = re.search(r"(model\.layers\.\d+\.[\w.]+)\[(\d+), (\d+)\]", text_of(page))
    index = (int(name.group(2)), int(name.group(3)))
    model = GlassLM.from_pretrained(DEMO_CHECKPOINT)
    w0 = model.state_dict()[name.group(1)]
    g = fresh[3][name.group(1)]
    assert weight == w0[index] and grad == pytest.approx(float(g[index]), rel=1e-6)
    recipe = TrainOptions()
    p = torch.nn.Parameter(torch.from_numpy(w0.copy()))
    p.grad = torch.from_numpy(np.ascontiguousarray(g))
    opt = torch.optim.AdamW([p], lr=recipe.lr, betas=(recipe.beta1, recipe.beta2), eps=1e-8,
                            weight_decay=recipe.weight_decay)
    opt.step()
    state = opt.state[p]
    assert updated == pytest.approx(float(p.detach()[index]), rel=1e-6, abs=1e-9)
    assert hand == pytest.approx(updated, rel=1e-6, abs=1e-9)
    assert m == pytest.approx(float(state["exp_avg"][index]), rel=1e-6)
    assert v == pytest.approx(float(state["exp_avg_sq"][index]), rel=1e-6)
    assert math.isclose(abs(updated - weight * (1 - recipe.lr * recipe.weight_decay)), recipe.lr,
                        rel_tol=1e-3)  # the first step moves a weight by about lr


@pytest.mark.parametrize("lang", LANGS)
def test_training_step_page_walks_the_backward_in_reverse(site, lang):
    url = training_url(lang)
    page = site.html(url)
    links = [site.resolve(url, html.unescape(h)) for h in
             re.findall(r'<li><a href="([^"]*#backward)"', page)]
    trained = [s for s in STEP_IDS if s not in GENERATION_ONLY]
    assert links == [step_url(lang, s) + "#backward" for s in reversed(trained)]
    for link in links[:3]:
        assert '<h2 id="backward">' in site.html(link.split("#")[0])


def test_the_row_shown_once_is_the_heaviest_pages():
    assert ROW_IN_WORKED == TIMELAPSE_STEP
