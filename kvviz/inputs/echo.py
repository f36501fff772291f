"""Text from outside (a link, a file, a text box) echoed on a page: shown as text, never read as markdown.

Streamlit reads the text of st.markdown, st.info/warning/error/success, st.caption and widget `help` as
markdown. Echoed there as it came, a shared link's `?term=![p](http://host/t.png)` makes every reader's browser
fetch someone else's image, `[Log in again](http://host)` is a link, a backtick ends the notice's code span,
`$...$` is typeset by KaTeX, `:red[...]` colours, `:material/lock:` draws an icon, and a bare `http://host`
becomes a link. Every echo of untrusted text goes through this module (one home for the rule):

    literal("![p](//h/t.png)")   -> r"\\!\\[p\\]\\(//h/t\\.png\\)"     reads  ![p](//h/t.png)  on the page
    code("steps=`x`")            -> "`` steps=`x` ``"                         a code span no backtick can close
    literal("a" * 100_000)       -> "aaa…a… \\(cut 99,920 of 100,000 characters\\)"

Both put the text on one line (runs of whitespace become one space), show control characters as `\\x1b`,
and cut it at `limit` characters, saying how many were cut: a 100 KB value is never echoed whole.

How `literal` stops each construct (Streamlit 1.67's markdown: react-markdown, GFM, remark-math, directives):
every ASCII punctuation character that can start or end a construct gets a backslash (CommonMark's escape:
links, images, emphasis, code, HTML, entities, `$` maths, `:name[...]` directives, tables, lists and headings all
need one; only `, ; ? % ' " /` are left as they are). Streamlit then rewrites the *parsed* text once more:
`:smile:` emoji, `:streamlit:` (an image), `:material_x:` icons, bare URLs and e-mail addresses (GFM autolinks),
and ` -> `, ` -- `, ` >= ` into arrows and dashes. Escapes are gone by then, so an invisible WORD JOINER (U+2060)
goes after a `:` or `@` that a word or `/` follows, inside `www.` and between the characters of those arrows:
none of the patterns can form, and the reader sees the text as it was written (checked in Chromium by
tests/test_browser_injection.py; plain backslash escapes still let `http://x`, `:streamlit:` and `->` through).
UI-free and torch-free.
"""

from __future__ import annotations

import re
import string

from kvviz.i18n import _

DEFAULT_LIMIT = 80  # characters of untrusted text a sentence echoes; a notice names a value, it is no payload
JOINER = "\u2060"  # WORD JOINER: zero width, no line break; splits a pattern without changing what is read
# CommonMark lets any ASCII punctuation be escaped; these few start nothing in Streamlit's markdown, so a sentence
# quoted whole (a refusal naming its value) keeps them plain: "1,000", "it's", "a/b", "50%", "why?"
_INERT = frozenset(",;?%'\"/")
_PUNCTUATION = frozenset(string.punctuation) - _INERT
# a `:` or `@` that could begin a shortcode (:smile:, :streamlit:, :material_x:), http://, or an e-mail autolink
_JOIN_AFTER = re.compile(r"(?<=[:@])(?=[A-Za-z0-9_+\-/])")
_WWW = re.compile("(www)(?=\\.)", re.IGNORECASE)  # GFM's `www.` autolink
_ARROW = re.compile(r"[-<>~](?=[-<>=])")  # ->, <-, <->, --, >=, <=, ~=: Streamlit's typographic replacements
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # left after whitespace is flattened: \x00, \x07, \x1b ...


# Python's own words for a failure say nothing to a student ("integer division or modulo by zero", "unsupported
# operand type(s) for %: 'int' and 'NoneType'"): these exception types get one plain sentence instead of their text
# (a model that will not load, a config transformers' class cannot build).
RAW_PYTHON_ERRORS = (
    ZeroDivisionError,
    AttributeError,
    TypeError,
    KeyError,
    IndexError,
    OverflowError,
    MemoryError,
    RecursionError,
    UnboundLocalError,
    NameError,
)


def one_line(value: object, max_chars: int | None = None) -> str:
    """`value` on one line (runs of whitespace become one space), cut to at most `max_chars` characters with "…":
    the one rule for a message, a name or a quoted value that must stay short (the cut is not counted: for that, a
    page echoes with literal or code)."""
    text = " ".join(str(value).split())
    return text if max_chars is None or len(text) <= max_chars else text[: max_chars - 1].rstrip() + "…"


def _one_line(value: object) -> str:
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", one_line(value))


def _split(value: object, limit: int | None) -> tuple[str, str]:
    """(the kept text on one line, the note saying what was cut, or "")."""
    text = _one_line(value)
    if limit is None or len(text) <= limit:
        return text, ""
    return text[:limit], _("… (cut {cut:,} of {total:,} characters)").format(cut=len(text) - limit, total=len(text))


def literal(value: object, limit: int | None = DEFAULT_LIMIT) -> str:
    """`value` as markdown that Streamlit shows as exactly this text (on one line, cut at `limit`): for a
    sentence in st.markdown / st.info / st.warning / st.error / st.caption / a widget's help."""
    kept, note = _split(value, limit)
    return _escape(kept) + _escape(note)


def code(value: object, limit: int | None = DEFAULT_LIMIT) -> str:
    """`value` as a markdown code span that shows exactly this text (one line, cut at `limit`; the cut is
    noted after the span): its fence is one backtick longer than any run of backticks in the text, so no
    backtick in it can close the span (CommonMark), and nothing inside a code span is markdown."""
    kept, note = _split(value, limit)
    # Streamlit rewrites ":material/" to ":material_" in the whole source before parsing, code spans included
    kept = kept.replace(":material/", f":{JOINER}material/")
    longest = max((len(run) for run in re.findall("`+", kept)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if not kept or kept[0] == "`" or kept[-1] == "`" else ""  # one space each side is dropped again
    return f"{fence}{pad}{kept}{pad}{fence}{_escape(note)}"


def _escape(text: str) -> str:
    text = _WWW.sub("\\1" + JOINER, text)
    text = _ARROW.sub(lambda m: m.group() + JOINER, text)
    text = _JOIN_AFTER.sub(JOINER, text)
    return "".join("\\" + ch if ch in _PUNCTUATION else ch for ch in text)
