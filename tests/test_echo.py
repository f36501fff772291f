"""Untrusted text echoed on a page is shown as text (kvviz.inputs.echo), and the pages echo it that way.

Property tests (derandomised) parse the helper's output with markdown-it-py, the CommonMark grammar under
Streamlit's react-markdown: `literal` must parse to text nodes only, reading exactly the input (on one line), and
that text must hold none of the patterns Streamlit rewrites in parsed text (emoji and icon shortcodes, GFM
autolinks, arrows); `code` must parse to one code span holding exactly the input. The pages are then run in
AppTest with hostile values: the glossary's ?term=, a link value with a backtick, a config.json whose
name and fields are markdown. The real-browser check is tests/test_browser_injection.py.
"""

from __future__ import annotations

import html
import json
import re
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from kvviz.inputs import echo, link_values, links, query_values
from support.markdown_text import shown
from support.pages import open_page

MD = MarkdownIt("commonmark")
HOSTILE_PIECES = [
    "![p](http://evil.example/t.png)",
    "[Log in again here](http://evil.example/phish)",
    "`",
    "``",
    "$x^2$",
    "$$y$$",
    ":red[red]",
    ":blue-background[b]",
    ":material/lock:",
    ":smile:",
    ":streamlit:",
    ":+1:",
    "http://evil.example/a",
    "www.evil.example",
    "a@evil.example",
    "<img src=x onerror=alert(1)>",
    "&lt;",
    "&#65;",
    "# h",
    "- item",
    "1. one",
    "> q",
    "| a | b |",
    "**b**",
    "_i_",
    "~~s~~",
    "~t~",
    "[^1]",
    "\\",
    "\\$",
    " -> ",
    " -- ",
    " >= ",
    " <-> ",
    "\n",
    "\t",
    "\x1b]0;PWNED\x07",
    "\x00",
    "中文",
    "ROMEO:",
    ":help[tip]",
    ":color[x]{foreground=red}",
    "<http://e.x>",
]
HOSTILE_TEXT = st.one_of(
    st.lists(st.sampled_from(HOSTILE_PIECES), max_size=8).map("".join),
    st.text(alphabet=st.sampled_from(string.printable + "中文…\u2028\x85"), max_size=120),
    st.text(max_size=60),
)
# What Streamlit rewrites in parsed text (its markdown bundle and remark-emoji / mdast-util-gfm-autolink-literal)
STREAMLIT_TEXT_PATTERNS = [
    re.compile(r":[\w+-][\w_+-]*:"),  # emoji shortcodes, :streamlit: (an image), :material_x: icons
    re.compile(r"(https?://|www(?=\.))", re.IGNORECASE),  # GFM literal autolinks
    re.compile(r"[-.\w+]+@[-\w]+(?:\.[-\w]+)+"),  # e-mail autolinks
    re.compile(r"(^|\s)(<->|->|<-|--|>=|<=|~=)(\s|$)"),  # typographic arrows and dashes
]


def one_line(value: str) -> str:
    return re.sub(r"[\x00-\x1f\x7f-\x9f]", lambda m: f"\\x{ord(m.group()):02x}", " ".join(value.split()))


def inline_tokens(markdown: str) -> list:
    tokens = MD.parse(markdown)
    return [child for t in tokens if t.type == "inline" for child in t.children]


@settings(max_examples=400, derandomize=True, deadline=None, database=None)
@given(HOSTILE_TEXT)
def test_literal_parses_to_the_same_text_and_nothing_else(value):
    markdown = echo.literal(value, None)
    children = inline_tokens(markdown)
    assert all(c.type == "text" for c in children), [(c.type, c.content) for c in children]
    text = "".join(c.content for c in children)
    assert text.replace(echo.JOINER, "") == one_line(value)
    for pattern in STREAMLIT_TEXT_PATTERNS:
        assert not pattern.search(text), (pattern.pattern, text)
    # every active ASCII punctuation character is escaped, so no extension (maths, directives, tables) can start
    assert not set(re.sub(r"\\.", "", markdown)) & (set(string.punctuation) - set(",;?%'\"/")), markdown
    assert ":material/" not in markdown  # Streamlit rewrites this before parsing, escapes or not


@settings(max_examples=400, derandomize=True, deadline=None, database=None)
@given(HOSTILE_TEXT.filter(lambda v: one_line(v) != ""))
def test_code_is_one_code_span_holding_the_text(value):
    markdown = echo.code(value, None)
    children = inline_tokens(markdown)
    assert [c.type for c in children] == ["code_inline"], [(c.type, c.content) for c in children]
    assert children[0].content.replace(echo.JOINER, "") == one_line(value)
    assert ":material/" not in markdown


def test_long_text_is_cut_and_says_how_much():
    value = "$x$ " * 1800 + "![p](http://evil.example/t.png)"
    total = len(one_line(value))
    for markdown in (echo.literal(value), echo.code(value)):
        assert shown(markdown).endswith(f"… (cut {total - echo.DEFAULT_LIMIT:,} of {total:,} characters)")
        assert len(markdown) < 4 * echo.DEFAULT_LIMIT
    assert shown(echo.literal("a" * 100_000)) == "a" * 80 + "… (cut 99,920 of 100,000 characters)"
    assert echo.literal("plain words, it's 50%", None) == "plain words, it's 50%"


def test_link_notices_keep_the_value_inside_their_code_span():
    value = "`![p](//evil.example/s.png)`"
    notice = link_values.Whole(0, 255).refusal(value, "steps", "Replaying the prompt only.")
    children = inline_tokens(notice)
    assert [c.type for c in children if c.type != "text"] == ["code_inline"]
    assert children[1].content == f"steps={value}"
    assert f"(got '{value}')" in shown(notice)  # the reason quotes it too: as text (no image, no link token)
    assert shown(notice).startswith(f"Ignored steps={value} from the link: steps must be a whole number")
    [refusal] = links.link_refusals({"mem_dtype": [value]}, {}, {"mem_dtype": "fp16"})
    assert [c.content for c in inline_tokens(refusal) if c.type == "code_inline"] == [f"mem_dtype={value}"]


# ----- the pages ---------------------------------------------------------------------------------------------
HOSTILE_TERM = "![p](http://evil.example/t.png) [Log in](http://e.example/x) $x^2$ :red[x]"  # < 80: shown whole


def _page(name: str, **link: str) -> AppTest:
    return open_page(f"pages/{name}.py", query=link)


@pytest.mark.app
def test_the_glossary_echoes_a_hostile_term_as_text():
    at = _page("glossary", term=HOSTILE_TERM)
    [box] = at.info
    spans = [c for c in inline_tokens(box.value) if c.type == "code_inline"]
    assert [c.content for c in spans] == [HOSTILE_TERM]
    assert shown(box.value).startswith(f"No term matches {HOSTILE_TERM}. Clear the box")
    huge = _page("glossary", term="$x$ " * 1800)
    total = len(("$x$ " * 1800).strip())
    assert f"(cut {total - echo.DEFAULT_LIMIT:,} of {total:,} characters)" in shown(huge.info[0].value)
    assert len(huge.info[0].value) < 400


@pytest.mark.app
def test_the_memory_import_report_shows_the_files_words_as_text():
    at = _page("memory_budget")
    config = {
        "model_type": "llama",
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "hidden_size": 64,
        "_name_or_path": "![p](http://evil.example/n.png) [x](http://evil.example/)",
        "torch_dtype": "float16",
    }
    at.text_area(key="mem_paste").set_value(json.dumps(config))
    at.button(key="mem_import").click().run()
    assert not at.exception
    report = at.success[0].value
    children = inline_tokens(report)
    assert {c.type for c in children} <= {"text", "code_inline", "strong_open", "strong_close"}, children
    assert f"Imported {config['_name_or_path']}." in shown(report)
    refused = {"model_type": "llama", "num_hidden_layers": "`![p](http://evil.example/r.png)` $y$"}
    at.text_area(key="mem_paste").set_value(json.dumps(refused))
    at.button(key="mem_import").click().run()
    error = at.error[0].value
    assert {c.type for c in inline_tokens(error)} == {"text"} and "![p](http://evil.example/r.png)" in shown(error)


@pytest.mark.app
@settings(max_examples=6, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(["mem_layers", "mem_context", "mem_gpu_gib"]), st.sampled_from(HOSTILE_PIECES[:6]))
def test_memory_link_notices_hold_a_backtick_breaking_value(key, piece):
    at = _page("memory_budget", **{key: f"1`{piece}`"})
    notices = [w.value for w in at.warning if shown(w.value).startswith("Ignored ")]
    assert len(notices) == 1
    children = inline_tokens(notices[0])
    assert [c.content for c in children if c.type == "code_inline"] == [f"{key}={query_values.shown(f'1`{piece}`')}"]
    assert {c.type for c in children} == {"text", "code_inline"}


@pytest.mark.model  # load_model lives in kvviz.model.loaders, torch at its top
def test_a_model_names_load_message_keeps_the_name_in_its_code_span(monkeypatch):
    """The sidebar's model box and a link's ?model= reach the loader's messages: the name is a code span there,
    so a backtick, a link or an image in it is shown as text (the message's own code spans stay code)."""
    import pytest

    from kvviz.model import loaders, loading

    monkeypatch.setattr(loaders, "cached_snapshot", lambda name: None)
    monkeypatch.setattr(loaders, "hub_reachable", lambda: False)  # offline, as on our machines
    for hostile, words in (
        ("x`![p](t.png)` [Log in](phish) $x$ :red[y]", "hf download x`"),  # a hub name
        ("x`![p](http://host/t.png)` [Log in](http://host/phish)", "no model folder"),
    ):  # a path
        with pytest.raises(loading.ModelLoadError) as caught:
            loaders.load_pretrained(hostile)
        message = str(caught.value)
        rendered = MarkdownIt("commonmark").render(message)
        assert "<img" not in rendered and "<a " not in rendered
        assert hostile in [html.unescape(span) for span in re.findall(r"<code>([^<]*)</code>", rendered)]
        assert hostile in shown(message) and words in shown(message)


def test_one_line_cut_at_n_is_one_rule_with_one_ellipsis():
    """The config import's names and quoted transformers messages, the loader's message, a refused value and a
    load-cost value are all cut by echo.one_line: one line, at most N characters, ending in one '…'."""
    from kvviz.inputs import query_values
    from kvviz.memory import config_import

    assert echo.one_line("a\n  b\tc", 80) == "a b c" and echo.one_line("abcdef", 4) == "abc…"
    assert echo.one_line("ab cdef", 4) == "ab…" and len(echo.one_line("x" * 1000, 40)) == 40
    assert query_values.shown("9" * 100) == "9" * (query_values.SHOWN_CHARS - 1) + "…"
    assert config_import.display_name({"_name_or_path": "y" * 500}).endswith("…")
