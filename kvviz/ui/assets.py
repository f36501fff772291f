"""The pages' JavaScript and CSS: files under kvviz/assets/web/, read once, handed back as the HTML a page draws.

A page keeps its own Streamlit call (st.html, with unsafe_allow_javascript for a script) and passes it what
script() or style() return:

    st.html(assets.style("stage.css"))
    st.html(assets.script("keyboard_queue.js", "stage_keys.js"), unsafe_allow_javascript=True)

Each file opens with a header comment (what it does and why); source() leaves it out, so the page carries only
the code. Several files given together are one <script> or one <style>, in the order given (a shared file first,
the page's own after it).

Values from Python reach a script as data, never spliced into its code: script(..., data={...}) puts
`const KVVIZ = {...};` (the data as JSON) before the files, inside a block of its own, so the script reads
`KVVIZ.lang` and a second run of the same script declares it again without clashing. A script installed once per
browser tab (the key queues) reads each run's values from the page instead: data-* attributes on a hidden
element the page draws every run (.kvviz-stage-state, .kvviz-lesson-state). A stylesheet takes no data.

No Streamlit here (it only reads files): a test reads and checks them without
a script run.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

WEB_DIR = Path(__file__).resolve().parents[1] / "assets" / "web"


@functools.cache
def source(name: str) -> str:
    """The file `name` under WEB_DIR, its opening /* ... */ comment and the newline after it left out."""
    if Path(name).name != name:
        raise ValueError(f"{name!r}: a file name in {WEB_DIR}, not a path")
    text = (WEB_DIR / name).read_text(encoding="utf-8")
    if text.startswith("/*"):
        text = text[text.index("*/") + 2 :].removeprefix("\n")
    return text


def script(*names: str, data: dict[str, Any] | None = None) -> str:
    """One <script> holding the files `names` in order; with `data`, `const KVVIZ = <data as JSON>;` before them,
    all in one block. "<" is written \\u003c in the JSON, so no value can close the script early."""
    body = "".join(source(name) for name in names)
    if data is not None:
        prelude = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")
        body = f"{{\nconst KVVIZ = {prelude};\n{body}}}\n"
    return f"<script>\n{body}</script>"


def style(*names: str) -> str:
    """One <style> holding the stylesheets `names` in order."""
    return "<style>\n" + "".join(source(name) for name in names) + "</style>"
