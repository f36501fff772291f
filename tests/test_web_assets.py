"""The pages' JavaScript and CSS live in files under kvviz/assets/web/, drawn through kvviz.ui.assets: every file is
drawn by some page or module and every name a page gives is a file; every script parses; the keyboard queue the
stage and the lesson share is written once; no page and not app.py writes a <script> or a <style> of its own.
The key scripts are also run in node against a small stand-in page (one press each, clicked on its button): the
browser tests press the real keys in Chromium. Node is used where it is on PATH; without it those tests skip
and say so."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kvviz.ui import assets
from support.repo import REPO

WEB = assets.WEB_DIR
ASSET_NAME = re.compile(r"""["']([\w-]+\.(?:js|css))["']""")  # "stage_keys.js" as a page or module writes it
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(
    NODE is None,
    reason="node is not on PATH: the scripts' syntax and behaviour are checked only where node is installed",
)


def _python_sources() -> list[Path]:
    return sorted((REPO / "pages").glob("*.py")) + [REPO / "app.py"] + sorted((REPO / "kvviz").rglob("*.py"))


def _assets() -> list[Path]:
    return sorted(p for p in WEB.iterdir() if p.suffix in (".js", ".css"))


def _node(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([NODE, "-e", code], capture_output=True, text=True, timeout=60)


def _inner(html: str) -> str:
    """The code of a <script> assets.script returned."""
    assert html.startswith("<script>\n") and html.endswith("</script>"), html[:40]
    return html[len("<script>\n") : -len("</script>")]


def test_every_asset_is_drawn_and_every_name_given_is_a_file():
    named: dict[str, list[str]] = {}
    loader = Path(assets.__file__).resolve()  # its docstring's examples draw nothing
    for path in (p for p in _python_sources() if p.resolve() != loader):
        for name in ASSET_NAME.findall(path.read_text(encoding="utf-8")):
            named.setdefault(name, []).append(str(path.relative_to(REPO)))
    files = {p.name for p in _assets()}
    assert {name: where for name, where in named.items() if name not in files} == {}  # a name with no file
    assert sorted(files - named.keys()) == []  # a file nothing draws
    assert {p.name for p in WEB.iterdir()} == files  # the folder holds scripts and stylesheets only


def test_every_asset_opens_with_a_header_saying_what_it_does():
    for path in _assets():
        text = path.read_text(encoding="utf-8")
        assert text.startswith("/* ") and "*/\n" in text, path.name
        header = text[: text.index("*/")]
        assert len(header.split()) >= 15, f"{path.name}: a header of a few words says neither what nor why"
        assert not assets.source(path.name).lstrip().startswith("/*"), path.name  # the page gets the code only


def test_the_loader_wraps_files_in_order_and_refuses_a_path():
    assert assets.style("presenter.css", "hide_sidebar.css") == (
        "<style>\n" + assets.source("presenter.css") + assets.source("hide_sidebar.css") + "</style>"
    )
    assert assets.script("page_links.js") == "<script>\n" + assets.source("page_links.js") + "</script>"
    assert assets.source("stage.css") is assets.source("stage.css")  # read once
    for bad in ("../ui.py", "web/stage.css", "/etc/passwd"):
        with pytest.raises(ValueError):
            assets.source(bad)


@needs_node
@pytest.mark.parametrize("path", [p for p in _assets() if p.suffix == ".js"], ids=lambda p: p.name)
def test_every_script_parses(path):
    done = subprocess.run([NODE, "--check", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@needs_node
def test_data_reaches_a_script_as_json_and_cannot_close_it(tmp_path, monkeypatch):
    (tmp_path / "read_data.js").write_text(
        "/* A test's script: it hands KVVIZ back. */\nglobalThis.seen.push(KVVIZ);\n"
    )
    monkeypatch.setattr(assets, "WEB_DIR", tmp_path)
    assets.source.cache_clear()
    try:
        data = {"lang": "zh-CN", "label": "</script><b>", "n": 3, "words": ["一", 'a "b"']}
        html = assets.script("read_data.js", data=data)
    finally:
        assets.source.cache_clear()
    assert html.count("</script>") == 1 and html.endswith("</script>")  # "<" is \u003c inside the data
    code = _inner(html)
    # the same script run twice in one page (a rerun draws it again): its KVVIZ is its own, no redeclaration error
    done = _node(f"globalThis.seen = [];\n{code}\n{code}\nconsole.log(JSON.stringify(globalThis.seen));")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [data, data]


# The keyboard queue's common part: each line below is written once, in keyboard_queue.js.
QUEUE_LINES = (
    "isContentEditable",
    "stStatusWidget",
    "stPopoverBody",
    "background:#c2410c",
    "document.createTextNode",
    "e.repeat && ",
    "el.blur()",
    "Math.max(...all)",
)


def test_the_keyboard_queue_is_written_once_and_both_pages_draw_it():
    texts = {str(p.relative_to(REPO)): p.read_text(encoding="utf-8") for p in [*_python_sources(), *_assets()]}
    for line in QUEUE_LINES:
        holders = [name for name, text in texts.items() if line in text]
        assert holders == ["kvviz/assets/web/keyboard_queue.js"], (line, holders)
    for page, own in (("pages/step_through.py", "stage_keys.js"), ("pages/lesson.py", "lesson_keys.js")):
        assert f'assets.script("keyboard_queue.js", "{own}")' in texts[page], page  # the shared part first
        assert "window.__kvvizKeys" in texts[f"kvviz/assets/web/{own}"]


def test_no_page_writes_a_script_or_a_style_of_its_own():
    found = [
        f"{path.relative_to(REPO)}:{n}"
        for path in [*sorted((REPO / "pages").glob("*.py")), REPO / "app.py"]
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"<(script|style)\b", line, re.I)
    ]
    assert found == []


# A stand-in page for node: the elements a key script looks for (by selector), a focused element, the listeners it
# adds, the buttons it clicks. Enough to run one press through the stage's and the lesson's queue.
STAND_IN = r"""
globalThis.window = globalThis;
const listeners = {};
const clicked = [];
const elements = {};
const shown = {};  // the elements a script put on the page, by id (the busy badges)
const button = (name) => ({disabled: false, click: () => clicked.push(name)});
window.addEventListener = (type, fn) => (listeners[type] = listeners[type] || []).push(fn);
globalThis.history = {pushState() {}, replaceState() {}};
globalThis.location = {href: "http://127.0.0.1/step_through", pathname: "/step_through"};
globalThis.document = {
  activeElement: null,
  body: {addEventListener() {}, appendChild: (el) => { shown[el.id] = el; }},
  querySelector: (selector) => elements[selector] || null,
  querySelectorAll: (selector) => elements[selector] ? [elements[selector]] : [],
  getElementById: (id) => shown[id] || null,
  createElement: () => ({style: {}, setAttribute() {}, replaceChildren(node) { this.text = node; },
                         remove() { delete shown[this.id]; }}),
  createTextNode: (text) => text,
};
const press = (key, focused) => {
  document.activeElement = focused || null;
  const e = {key: key, repeat: false, ctrlKey: false, metaKey: false, altKey: false, claimed: false,
             preventDefault() { this.claimed = true; }, stopImmediatePropagation() {}};
  for (const fn of listeners.keydown || []) fn(e);
  return e.claimed;
};
"""


@needs_node
def test_one_press_on_the_stage_and_one_in_the_lesson_click_their_buttons_through_the_shared_queue():
    stage = _inner(assets.script("keyboard_queue.js", "stage_keys.js"))
    lesson = _inner(assets.script("keyboard_queue.js", "lesson_keys.js"))
    run = (
        STAND_IN
        + stage
        + lesson
        + stage
        + r"""
const out = {keys: Object.keys(window.__kvvizKeys).sort(), listeners: listeners.keydown.length};
elements[".st-key-step_btn_next"] = {};
elements[".st-key-step_btn_next button"] = button("step_btn_next");
elements[".kvviz-stage-state"] = {dataset: {acted: "0", records: "4", playing: "0"}};
out.inTextBox = press("ArrowRight", {tagName: "TEXTAREA"});
out.stage = press("ArrowRight");
out.stageBusy = window.__kvvizStage.busy;
elements[".kvviz-stage-state"].dataset.acted = "1";
setTimeout(() => {
  out.stageDone = !window.__kvvizStage.busy && window.__kvvizStage.taken === 1;
  delete elements[".st-key-step_btn_next"];
  elements[".st-key-lesson_next"] = {};
  elements['[class*="st-key-lesson_reveal_btn_"] button'] = button("lesson_reveal_btn_");
  elements[".kvviz-lesson-state"] = {dataset: {runs: "1", busyOne: "{n} queued", busyMany: "{n} queued", dropped: "dropped"}};
  out.lesson = press("V");
  out.lessonTaken = window.__kvvizLesson.taken;
  out.badgeWhileBusy = (shown["kvviz-lesson-busy"] || {}).text;
  elements[".kvviz-lesson-state"].dataset.runs = "2";
  setTimeout(() => {
    out.lessonDone = !window.__kvvizLesson.busy && !window.__kvvizLesson.queue.length;
    out.badgeAfter = shown["kvviz-lesson-busy"] || null;
    out.noButton = press("h");
    out.clicked = clicked;
    console.log(JSON.stringify(out));
    process.exit(0);
  }, 200);
}, 200);
"""
    )
    done = _node(run)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["keys"] == sorted(["running", "keepsKeys", "plain", "latest", "badge", "claim", "enqueue"])
    assert out["listeners"] == 2  # each page's listener once, however often its script is drawn
    assert out["inTextBox"] is False  # a text box keeps its keys
    assert out["stage"] is True and out["stageBusy"] is True and out["stageDone"] is True
    assert out["lesson"] is True and out["lessonTaken"] == 1 and out["lessonDone"] is True
    assert out["badgeWhileBusy"] == "1 queued" and out["badgeAfter"] is None  # the shared badge, then gone
    assert out["noButton"] is False  # H with no hint button on an idle page: not the lesson's
    assert out["clicked"] == ["step_btn_next", "lesson_reveal_btn_"]


def test_no_script_or_style_holds_chinese():
    """The styles and scripts are drawn into every page, Chinese or English: a Chinese character in one (a comment
    quoting a label) made the whole block read as a Chinese sentence to the page-text tests, and its CSS as English
    left on a Chinese page. Text shown to a reader comes from the catalog, never from an asset."""
    cjk = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
    holding = [str(p.relative_to(REPO)) for p in _assets() if cjk.search(p.read_text(encoding="utf-8"))]
    assert holding == []
