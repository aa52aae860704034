"""The replay page plays a generation recorded with the KV cache (its default recording):
each cached step's one query row against a key axis one longer per step, the keys read from
the cache and the new one marked, the event's KV cache line and the map's K/V cache box
filling; a --no-cache recording opened beside it says it has no cache."""

from __future__ import annotations

import numpy as np
import pytest

from glassllm.__main__ import main as cli
from tests.replay.test_browser import EVENT, current, engine_run, grid_values, jump, run_json  # noqa: F401 (fixtures)

pytestmark = pytest.mark.browser


def header(page) -> list[dict]:
    """The inspector's column headers: text and whether each key came from the cache."""
    return page.eval_on_selector_all(".gr-grid thead th[scope=col]:not(.gr-corner)", """ths => ths.map(th => ({
        text: th.textContent, key: th.dataset.key || null}))""")


def cache_box(page) -> dict:
    return page.eval_on_selector("figure.gl-map [data-cache]", """g => {
        const bar = (part) => g.querySelector('[data-cache-part=' + part + ']');
        return {label: g.getAttribute('aria-label'), off: g.classList.contains('gl-map-cache--off'),
                read: Number(bar('read').getAttribute('width')),
                added: Number(bar('added').getAttribute('width')),
                full: Number(bar('read').getAttribute('data-width'))}; }""")


def test_a_cached_run_plays_with_the_key_axis_growing(open_replay, engine_run, run_json):
    watch = open_replay()
    page = watch.page
    _, steps = engine_run
    assert run_json["cache"] is True
    prompt = run_json["prompt"]["tokens"]
    n, count = len(prompt), len(steps)
    final = n + count - 1  # the cache's size after the last step
    for gen in range(count):
        jump(page, step="attn.softmax", layer=1, gen=gen)
        keys = n + gen
        values = grid_values(page)
        exact = steps[gen].trace.get("attn.softmax", layer=1, head=0).value
        np.testing.assert_array_equal(values, exact)
        heads = header(page)
        assert [h["text"].split(" ")[0] for h in heads] == [str(k) for k in range(keys)]
        box = cache_box(page)
        assert not box["off"]
        assert box["label"] == (f"K/V cache: {keys} of {final} positions "
                                f"(generation step {gen} of {count}, counted from 0)")
        facts = page.inner_text(EVENT)
        if gen == 0:  # the prompt's pass: every query row, every key new, the mask below
            assert values.shape == (n, n)
            assert [h["key"] for h in heads] == ["new"] * n
            assert f"computes the prompt's {n} positions" in facts
            assert box["read"] == 0 and box["added"] == pytest.approx(box["full"] * n / final)
            assert page.locator(".gr-grid td.gr-cell--masked").count() == n * (n - 1) // 2
        else:  # one query row, the newest position, against every key; nothing masked
            assert values.shape == (1, keys)
            assert [h["key"] for h in heads] == ["cached"] * (keys - 1) + ["new"]
            row = page.inner_text(".gr-grid tbody th[scope=row]")
            assert row.split(" ")[0] == str(keys - 1)
            assert f"computes only position {keys - 1}" in facts
            assert f"Keys 0–{keys - 2} come from the KV cache" in page.inner_text(".gr-inspector")
            assert page.locator(".gr-grid td.gr-cell--masked").count() == 0
            assert box["read"] == pytest.approx(box["full"] * (keys - 1) / final)
            assert box["added"] == pytest.approx(box["full"] / final)
    # a cached step's other snapshots have one row too: the embedding of the newest token
    jump(page, step="embed", gen=count - 1)
    assert grid_values(page).shape[0] == 1
    watch.assert_clean()


def test_a_no_cache_recording_says_it_recomputes_and_the_box_stays_empty(open_replay, tmp_path):
    out = tmp_path / "full.glrec"
    assert cli(["record", "glass", "--tokens", "3", "--layers", "1", "--d-model", "16",
                "--heads", "2", "--kv-heads", "1", "--no-cache", "--out", str(out)]) == 0
    watch = open_replay()
    page = watch.page
    page.set_input_files("#gr-file", str(out))
    page.wait_for_selector("#gr-rec-file:checked")
    jump(page, step="attn.softmax", gen=2)
    assert grid_values(page).shape == (7, 7)  # the whole sequence again
    assert [h["key"] for h in header(page)] == [None] * 7
    assert "recomputes the whole sequence at every step" in page.inner_text(EVENT)
    box = cache_box(page)
    assert box["off"] and box["read"] == 0 and box["added"] == 0
    assert "not used" in box["label"]
    # back to the site's run: the box fills again
    page.check("#gr-rec-generation")
    page.wait_for_function("() => !document.querySelector('[data-cache]').classList.contains('gl-map-cache--off')")
    assert current(page)["index"] == 0
    watch.assert_clean()


def test_the_portuguese_page_says_the_same(open_replay, run_json):
    watch = open_replay("pt/replay/")
    page = watch.page
    n = len(run_json["prompt"]["tokens"])
    jump(page, step="attn.scores", layer=0, gen=1)
    assert f"calcula só a posição {n}" in page.inner_text(EVENT)
    assert f"As chaves 0–{n - 1} vêm do cache KV" in page.inner_text(".gr-inspector")
    assert cache_box(page)["label"].startswith(f"Cache K/V: {n + 1} de ")
    watch.assert_clean()
