"""The replay reads the engine's step table from the build (assets/replay/steps.json) and
labels every token as the pages do (the site's model's tokenizer's labels; a byte model's
recording by glassllm.tokenizer.token_label): in a real browser, the
page uses what the file says, loads it once before any recording, and says what failed
without it."""

from __future__ import annotations

import json

import pytest

from glassllm.__main__ import main as cli
from glassllm.recording import loads
from glassllm.tokenizer import token_label
from tests.conftest import PageWatch
from tests.replay.test_browser import current, jump

pytestmark = pytest.mark.browser


def chip_texts(page, selector: str) -> list[str]:
    return page.eval_on_selector_all(f"{selector} .gr-token", "ts => ts.map(t => t.textContent)")


def test_the_table_is_loaded_once_before_any_recording(open_replay, tmp_path):
    requests = []

    def log(page):
        page.on("request", lambda request: requests.append(request.url.rsplit("/", 1)[-1]))

    watch = open_replay(before=log)
    page = watch.page
    out = tmp_path / "mine.glrec"
    assert cli(["record", "hi", "--tokens", "1", "--layers", "1", "--out", str(out)]) == 0
    page.set_input_files("#gr-file", str(out))
    page.wait_for_selector("#gr-rec-file:checked")
    page.check("#gr-rec-loss")
    page.wait_for_function("() => document.querySelector('.gr-event').dataset.gen === undefined")
    assert requests.count("steps.json") == 1
    first_recording = min(requests.index(name) for name in ("run.glrec", "loss.glrec", "before.glrec"))
    assert requests.index("steps.json") < first_recording
    watch.assert_clean()


def test_labels_and_facts_come_from_the_served_table(open_replay, built_site):
    """A steps.json with other labels and another causal step: the page follows the file."""
    table = json.loads((built_site / "assets/replay/steps.json").read_text(encoding="utf-8"))
    first = loads((built_site / "assets/replay/run.glrec").read_bytes()).prompt[0]
    table["token_labels"][first] = "<T>"  # the first token of the example's prompt
    for row in table["steps"]:
        if row["id"] == "attn.scores":
            row["causal"] = True  # its cells above the diagonal now count as masked

    def serve(page):
        page.route("**/assets/replay/steps.json", lambda route: route.fulfill(
            status=200, content_type="application/json", body=json.dumps(table)))

    watch = open_replay(before=serve)
    page = watch.page
    assert "<T>" in chip_texts(page, ".gr-summary")
    jump(page, step="attn.scores", layer=0, gen=0)
    n = page.locator(".gr-grid tbody tr").count()
    assert page.locator(".gr-grid td.gr-cell--masked").count() == n * (n - 1) // 2
    keys = page.eval_on_selector_all(".gr-grid thead th:not(.gr-corner)", "hs => hs.map(h => h.textContent)")
    assert keys[0] == "0 <T>"
    watch.assert_clean()


def test_every_token_reads_as_on_the_pages(open_replay, tmp_path):
    """One label per byte in Python and in the replay for a byte model's recording (not the
    site's subword labels): a prompt with a space, a newline, a tab and a two-byte character,
    in the chips, the filters and the axis labels."""
    text = "a b\n\té"
    out = tmp_path / "bytes.json"
    assert cli(["record", text, "--tokens", "2", "--layers", "1", "--d-model", "16",
                "--heads", "2", "--kv-heads", "1", "--out", str(out)]) == 0
    recorded = json.loads(out.read_text(encoding="utf-8"))
    prompt, generated = recorded["prompt"]["tokens"], recorded["generated"]["tokens"]
    watch = open_replay()
    page = watch.page
    page.set_input_files("#gr-file", str(out))
    page.wait_for_selector("#gr-rec-file:checked")
    labels = [token_label(t) for t in prompt]
    assert labels[1] == "␣" and labels[3] == "⏎" and labels[4] == "\\x09" and labels[5] == "\\xc3"
    assert chip_texts(page, ".gr-summary dd:nth-of-type(1)") == labels
    assert chip_texts(page, ".gr-summary dd:nth-of-type(2)") == [token_label(t) for t in generated]
    assert page.text_content(".gr-summary q") == text  # the prompt itself, as UTF-8 text
    options = page.eval_on_selector_all("#gr-filter-gen option", "os => os.slice(1).map(o => o.textContent)")
    assert options == [f"{k}: {token_label(t)}" for k, t in enumerate(generated)]
    jump(page, step="attn.softmax", gen=1)  # its columns: every key position, with its token
    keys = page.eval_on_selector_all(".gr-grid thead th:not(.gr-corner)", "hs => hs.map(h => h.textContent)")
    assert keys == [f"{i} {token_label(t)}" for i, t in enumerate(prompt + generated[:1])]
    jump(page, step="sample", gen=1)
    assert page.inner_text(".gr-scalar-value") == f"{generated[1]} ({token_label(generated[1])})"
    watch.assert_clean()


def test_the_sites_recording_reads_in_the_demos_subwords(open_replay, built_site):
    """The example's recording (the demo, a subword model): a chip per token, its string with
    a space as ␣, the prompt as its text, and the vocabulary's top list named the same way."""
    from glassllm import DEMO_CHECKPOINT, load_tokenizer

    tokenizer = load_tokenizer(DEMO_CHECKPOINT)
    rec = loads((built_site / "assets/replay/run.glrec").read_bytes())
    watch = open_replay()
    page = watch.page
    prompt_chips = chip_texts(page, ".gr-summary dd:nth-of-type(1)")
    assert prompt_chips == tokenizer.labels(rec.prompt)
    assert len(prompt_chips) < len(tokenizer.decode(rec.prompt).encode())  # subwords
    assert any(chip.startswith("␣") and len(chip) > 1 for chip in prompt_chips)
    assert chip_texts(page, ".gr-summary dd:nth-of-type(2)") == tokenizer.labels(rec.generated)
    assert page.text_content(".gr-summary q") == tokenizer.decode(rec.prompt)
    jump(page, step="sample", gen=0)
    token = rec.generated[0]
    assert page.inner_text(".gr-scalar-value") == f"{token} ({tokenizer.labels([token])[0]})"
    watch.assert_clean()


def test_without_the_table_the_page_says_what_failed(browser, site_url, tmp_path):
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    context.set_default_timeout(15_000)
    try:
        watch = PageWatch(context.new_page(), site_url.rstrip("/"))
        page = watch.page
        page.route("**/assets/replay/steps.json", lambda route: route.fulfill(status=404, body="gone"))
        page.goto(site_url + "replay/")
        page.wait_for_selector(".gr-message--error")
        message = page.inner_text(".gr-message")
        assert "assets/replay/steps.json" in message and "404" in message
        assert page.get_attribute(".gr-message", "role") == "alert"
        assert page.is_disabled('button[data-action="play"]')
        assert not page.locator(".gr-event[data-event-index]").count()
        # a file cannot be read without the table: the page says why, and shows nothing
        out = tmp_path / "mine.json"
        assert cli(["record", "hi", "--tokens", "1", "--layers", "1", "--out", str(out)]) == 0
        page.evaluate("() => document.querySelector('.gr-message').textContent = ''")
        page.set_input_files("#gr-file", str(out))
        page.wait_for_function("() => document.querySelector('.gr-message').textContent.includes('steps.json')")
        assert not page.locator("#gr-rec-file").count()
        # the browser's own line about the 404 is the only console error
        assert all("404" in error for error in watch.errors) and watch.outside == []
    finally:
        context.close()
