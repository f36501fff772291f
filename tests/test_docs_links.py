"""A README a newcomer reads in one screen, and docs/ that holds the rest, one file per reader.

README.md stays short (at most 160 lines) and opens with both set-up commands (the first 40 lines); every relative
link and image in README.md and docs/*.md lands on a file of the repository; every file in docs/ is linked from
the README, so none is orphaned. Pure: reads the files, parses them with markdown-it-py (CommonMark and tables).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import pytest
from markdown_it import MarkdownIt

from support.repo import REPO

README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
MAX_README_LINES = 160
FIRST_SCREEN_LINES = 40
APP_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -r requirements.txt && .venv/bin/streamlit run app.py"
TEST_COMMAND = "bash tests/install_and_run.sh"
EXTERNAL = ("http://", "https://", "mailto:")
_MD = MarkdownIt("commonmark").enable("table")


def targets(markdown: str) -> list[str]:
    """Every link's href and image's src in `markdown`, in order (code spans and blocks hold none)."""
    found = []
    stack = list(_MD.parse(markdown))
    while stack:
        token = stack.pop(0)
        if token.type == "link_open":
            found.append(str(token.attrGet("href")))
        elif token.type == "image":
            found.append(str(token.attrGet("src")))
        stack[:0] = token.children or []
    return found


def local_file(source: Path, target: str) -> Path | None:
    """The file a relative link of `source` points at, or None for a link that is not to a file here (a web
    address, mail, an anchor in the same page)."""
    if target.startswith(EXTERNAL) or target.startswith("#"):
        return None
    path = unquote(target.split("#", 1)[0])
    return (source.parent / path).resolve()


def test_the_link_finder_sees_links_and_images_and_skips_code():
    md = (
        'See [the plans](docs/teaching.md#plans) and ![a picture](docs/step_through.png "title").\n\n'
        "| a | b |\n|---|---|\n| [cell](docs/api.md) | `[not](a-link.md)` |\n\n"
        "```\n[also not](code.md)\n```\n\n[web](https://example.org) [anchor](#top) [mail](mailto:a@b.c)\n"
    )
    assert targets(md) == [
        "docs/teaching.md#plans",
        "docs/step_through.png",
        "docs/api.md",
        "https://example.org",
        "#top",
        "mailto:a@b.c",
    ]
    assert local_file(README, "docs/teaching.md#plans") == REPO / "docs" / "teaching.md"
    assert local_file(REPO / "docs" / "api.md", "../README.md") == README
    assert [local_file(README, t) for t in ("https://example.org", "#top", "mailto:a@b.c")] == [None] * 3


def test_the_readme_fits_one_screen_and_opens_with_both_set_up_commands():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, len(lines)
    first_screen = "\n".join(lines[:FIRST_SCREEN_LINES])
    assert APP_COMMAND in first_screen and TEST_COMMAND in first_screen
    # the commands stay true: what they name is in the repository
    for named in ("requirements.txt", "app.py", "tests/install_and_run.sh"):
        assert (REPO / named).is_file(), named


@pytest.mark.parametrize("source", [README, *DOCS], ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_lands_on_a_file(source):
    links = targets(source.read_text(encoding="utf-8"))
    assert links, source
    broken = []
    for target in links:
        path = local_file(source, target)
        if path is not None and not (path.is_relative_to(REPO) and path.is_file()):
            broken.append(target)
    assert broken == []


def test_every_docs_file_is_linked_from_the_readme():
    assert {p.name for p in DOCS} >= {
        "teaching.md",
        "deploying.md",
        "measurements.md",
        "models.md",
        "api.md",
        "architecture.md",
    }
    linked = {local_file(README, t) for t in targets(README.read_text(encoding="utf-8"))}
    assert [p.name for p in DOCS if p.resolve() not in linked] == []
