"""The "Watch it learn" page (docs/learn.md, docs/pt/learn.md): its sentences and its
ablation table are the recording's numbers in each language, its player and trainer mounts
point at the recording the site ships, and a marker it does not know stops the build."""

import re
from pathlib import Path

import pytest

from docs_build.data.lesson import load_recording
from docs_build.errors import DocsBuildError
from docs_build.pages.lesson import fill_lesson
from docs_build.text.languages import LANGUAGES
from docs_build.text.markdown import number
from docs_build.text.ui import load_ui
from tests.docs_build.conftest import LANGS, text_of

ROOT = Path(__file__).resolve().parents[2]
UI = {lang.code: load_ui(ROOT / "docs", lang) for lang in LANGUAGES}
MARKERS = "\n\n".join(f"<!-- glassllm:lesson {name} -->"
                      for name in ("setup", "player", "formed", "ablation", "trainer"))


@pytest.fixture(scope="module")
def recording():
    return load_recording()


@pytest.mark.parametrize("code", ["en", "pt"])
def test_the_sentences_state_the_recordings_numbers(recording, code):
    ui = UI[code]
    page = fill_lesson(MARKERS, f"{LANGS[code][0]}learn.md", ui, True).replace("\\", "")
    assert "glassllm:lesson" not in page
    formed, end = recording["formed"], recording["history"][-1]
    for value in (formed["previous_token"], formed["induction"], recording["steps"],
                  recording["training"]["batch"], f"L0H{end['previous_token_head']}"):
        assert str(value) in page
    for value in (end["second_copy_loss"], end["first_copy_loss"], end["induction"],
                  recording["check"]["ablations"][0]["second_copy_loss"]):
        assert number(ui, value) in page
    # the table: nothing silenced, then the three groups, each with its verdict
    rows = re.findall(r"<tr><th scope=\"row\">(.*?)</th>", page)
    assert rows == [ui["lesson.clean_row"], ui["lesson.group.previous_token"],
                    ui["lesson.group.other"], ui["lesson.group.induction"]]
    verdicts = re.findall(r"<td>([^<(]+) \(", page)
    assert verdicts == [ui["lesson.collapsed"], ui["lesson.kept"], ui["lesson.collapsed"]]
    assert ui["lesson.check_yes"] in page
    mounts = re.findall(r'class="glassllm-lesson" data-mode="(\w+)" data-seed="0" '
                        r'data-recording="([^"]+)"', page)
    depth = "../../" if code == "pt" else "../"
    assert mounts == [("player", f"{depth}assets/runtime/lesson_induction.json"),
                      ("trainer", f"{depth}assets/runtime/lesson_induction.json")]


def test_an_unknown_marker_stops_the_build_naming_the_page():
    with pytest.raises(DocsBuildError, match="learn.md.*glassllm:lesson nope"):
        fill_lesson("<!-- glassllm:lesson nope -->", "learn.md", UI["en"], True)
    assert fill_lesson("no markers", "learn.md", UI["en"], True) == "no markers"


@pytest.mark.parametrize("code", ["en", "pt"])
def test_the_built_page_mounts_the_shipped_recording(site, code):
    url = f"{LANGS[code][0]}learn/"
    html = site.html(url)
    for mode in ("player", "trainer"):
        href = re.search(rf'data-mode="{mode}"[^>]*data-recording="([^"]+)"', html).group(1)
        assert site.path_of(site.resolve(url, href)).read_bytes() == \
            (ROOT / "docs_build" / "data" / "lesson_induction.json").read_bytes()
    assert "glassllm:lesson" not in html
    assert text_of(UI[code]["lesson.needs_js"]) in text_of(html)
