"""Every page of the built site on a phone (390 px wide, Debian's chromium via Playwright).

Nothing may make a page scroll sideways: what is wider than the screen (value tables, the
replay's grid, long equations) scrolls inside its own box, which says so.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

PHONE = 390  # px: a common phone's CSS width

# The outermost element sticking out past the viewport that no scrolling box of the page
# contains: what makes the page itself scroll sideways.
WIDEST = """() => {
  const width = document.documentElement.clientWidth;
  const inScrollBox = (e) => {
    for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
      if (getComputedStyle(p).overflowX !== "visible") return true;
    }
    return false;
  };
  let widest = null;
  for (const e of document.body.querySelectorAll("*")) {
    const box = e.getBoundingClientRect();
    if (box.width && box.right > width + 0.5 && !inScrollBox(e) &&
        (!widest || box.right > widest.right)) {
      widest = { right: Math.round(box.right), what: e.tagName.toLowerCase() +
        (e.id ? "#" + e.id : "") + (e.className && typeof e.className === "string"
          ? "." + e.className.trim().split(/\\s+/).join(".") : "") };
    }
  }
  return { scrollWidth: document.documentElement.scrollWidth, widest: widest };
}"""


def site_pages(site) -> list[str]:
    """The site-relative URL of every HTML page of the build, both languages."""
    urls = []
    for path in sorted(site.dir.rglob("*.html")):
        rel = path.relative_to(site.dir).as_posix()
        urls.append(rel[: -len("index.html")] if rel.endswith("index.html") else rel)
    return urls


def test_no_page_scrolls_sideways_on_a_phone(browser, base_url, site):
    pages = site_pages(site)
    # both languages, the step pages, the source pages and the replay are all there
    assert {"", "pt/", "steps/attn.softmax/", "pt/steps/", "replay/", "pt/replay/",
            "source/glassllm/model/", "404.html"} <= set(pages)
    context = browser.new_context(viewport={"width": PHONE, "height": 800})
    context.set_default_timeout(15_000)
    try:
        page = context.new_page()
        too_wide = []
        for url in pages:
            page.goto(base_url + url)
            page.wait_for_load_state("load")
            if url.endswith("replay/"):  # the player builds its controls after loading
                page.wait_for_selector(".gr-event[data-event-index]")
            found = page.evaluate(WIDEST)
            if found["scrollWidth"] > PHONE:
                too_wide.append(f"{url or '/'}: {found['scrollWidth']} px, widest {found['widest']}")
        assert too_wide == [], "pages wider than a phone:\n" + "\n".join(too_wide)
    finally:
        context.close()


HINT = """sel => {
  // the first one shown: a head tab other than the open one is display: none
  const box = [...document.querySelectorAll(sel)].find(e => e.getClientRects().length > 0);
  const hint = getComputedStyle(box, "::before");
  return { overflows: box.scrollWidth > box.clientWidth, text: hint.content,
           height: parseFloat(hint.maxHeight) || 0, shade: getComputedStyle(box).backgroundImage };
}"""


@pytest.mark.parametrize("prefix,text", [("", "scroll →"), ("pt/", "deslize →")])
def test_a_table_wider_than_a_phone_scrolls_in_its_box_and_says_so(open_page, prefix, text):
    table = ".gl-table-wrap:has(> table.gl-values)"
    phone = open_page(f"{prefix}steps/attn.q/", width=PHONE).page
    phone.wait_for_selector(".gl-equation math")
    shown = phone.evaluate(HINT, table)
    assert shown["overflows"]
    assert shown["text"] == f'"{text}"' and shown["height"] > 0
    assert shown["shade"].count("radial-gradient") == 2  # the shaded edges
    # a table that fits (the worked example's checks) has nothing to scroll: the hint takes no room
    shown = phone.evaluate(HINT, ".gl-table-wrap:has(> table.gl-worked-checks)")
    assert not shown["overflows"] and shown["text"] == f'"{text}"' and shown["height"] == 0
    # the replay's grid scrolls in its own box too, with the hint in the page's language
    replay = open_page(f"{prefix}replay/", width=PHONE).page
    replay.wait_for_selector(".gr-scroll")
    shown = replay.evaluate(HINT, ".gr-scroll")
    assert shown["overflows"] and shown["text"] == f'"{text}"' and shown["height"] > 0


@pytest.mark.parametrize("prefix,says", [
    ("", ("opened as a file", "python -m http.server -d site", "http://localhost:8000/replay/")),
    ("pt/", ("aberta como arquivo", "python -m http.server -d site", "http://localhost:8000/pt/replay/"))])
def test_the_replay_opened_from_disk_says_to_serve_the_folder(browser, site, prefix, says):
    """Browsers load neither ES modules nor recordings from file://: the page says what to do
    instead of staying on "Loading…"."""
    context = browser.new_context()
    try:
        page = context.new_page()
        outside = []
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                   else (outside.append(route.request.url), route.abort()))
        page.goto((site.dir / prefix / "replay" / "index.html").as_uri())
        message = page.locator(".glassllm-replay [role=alert]")
        message.wait_for()
        for words in says:
            assert words in message.inner_text()
        assert outside == []
    finally:
        context.close()
