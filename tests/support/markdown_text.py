"""What a reader sees of a markdown string, for tests that compare a message's words, not its escapes.

`shown(md)` renders it with markdown-it-py (CommonMark, the grammar under Streamlit's react-markdown), drops the
tags, decodes entities and removes the invisible word joiners kvviz.inputs.echo puts into echoed text.
"""

from __future__ import annotations

import html
import re

from markdown_it import MarkdownIt

_MD = MarkdownIt("commonmark")


def shown(markdown: str) -> str:
    rendered = _MD.render(markdown)
    return html.unescape(re.sub(r"<[^>]+>", "", rendered)).replace("\u2060", "").strip()
