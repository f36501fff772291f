"""The interface in Simplified Chinese: language choice, the catalog, and every page drawn in Chinese.

The oracle for "Chinese throughout" is tests/i18n_support.py: every string an element carries (labels, help
tooltips, captions, tables, chart titles and hover text) is scanned for runs of four or more English words;
names, code and the model's own English output are allowed.
"""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from kvviz import i18n
from kvviz.i18n import _, catalog, ngettext
from support.i18n_text import ALLOWED, english_leftovers, page_texts, punctuation_faults
from support.pages import REPO, open_page

PAGES = sorted(p.name for p in (REPO / "pages").glob("*.py") if p.name != "internals_shared.py")
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.parametrize(
    "code, expected",
    [
        ("zh-CN", "zh-CN"),
        ("zh_cn", "zh-CN"),
        ("ZH", "zh-CN"),
        ("zh-Hans", "zh-CN"),
        ("zh-Hans-CN", "zh-CN"),
        ("zh-SG", "zh-CN"),
        ("en", "en"),
        ("en-US", "en"),
        ("en_GB", "en"),
        ("zh-TW", None),
        ("zh-Hant-HK", None),
        ("fr", None),
        ("", None),
        (" ", None),
        ("x" * 10_000, None),
        ("<script>alert(1)</script>", None),
        ("zh-CN\x00", None),
        ("中文", None),
        ("../../etc/passwd", None),
        (None, None),
        (42, None),
    ],
)
def test_normalize_accepts_language_tags_and_refuses_everything_else(code, expected):
    assert i18n.normalize(code) == expected


@pytest.mark.parametrize(
    "locale, expected",
    [("zh-CN", "zh-CN"), ("zh", "zh-CN"), ("zh-TW", "en"), ("en-US", "en"), ("de-DE", "en"), (None, "en"), ("", "en")],
)
def test_browser_locale_decides_the_default(locale, expected):
    assert i18n.from_browser(locale) == expected


def test_translation_falls_back_to_english_never_to_a_key():
    with i18n.language(i18n.CHINESE):
        assert _("Lesson") == "课程"
        assert _("A sentence no catalog holds.") == "A sentence no catalog holds."
        assert _("") == ""
        assert ngettext("{n} token", "{n} tokens", 3).format(n=3) in {f"{3} tokens", "3 个 token"}
    assert _("Lesson") == "Lesson"


def test_language_block_refuses_unknown_codes():
    with pytest.raises(ValueError), i18n.language("fr"):
        pass


def test_field_check_catches_a_dropped_or_renamed_placeholder():
    assert catalog.fields("{n:,} tokens in <b>layer {layer}</b>") == sorted(["{n:,}", "{layer}", "<b>", "</b>"])
    assert catalog.fields("%{x} ms<extra></extra>") == sorted(["%{x}", "<extra>", "</extra>"])
    from babel.messages.catalog import Catalog

    broken = Catalog(locale="zh_CN")
    broken.add("{n} rows in layer {layer}", "第 {layer} 层有 {rows} 行", [("x.py", 1)])
    broken.add("Untranslated", "", [("x.py", 2)])
    broken.add("%{y} ms<extra></extra>", "%{y} 毫秒", [("x.py", 3)])
    found = catalog.problems(broken)
    assert len(found) == 3, found


def test_every_marked_string_is_in_the_catalog_and_translated():
    """A string marked in the source but missing from the catalog shows English in Chinese: caught here first
    (run `python -m kvviz.i18n.catalog update`, translate, `check`)."""
    held = catalog.read(i18n.catalog_path(i18n.CHINESE))
    missing = [m.id for m in catalog.extract() if m.id and held.get(m.id, m.context) is None]
    assert not missing, f"{len(missing)} strings not in the catalog, e.g. {missing[:5]}"
    assert catalog.problems(held) == []


def test_glossary_has_a_chinese_column_and_the_catalog_follows_it():
    """The term table is the glossary's Chinese column (Term.zh); where the catalog translates a glossary name on
    its own (a label, a heading) it uses that term."""
    from kvviz.teaching import glossary

    held = catalog.read(i18n.catalog_path(i18n.CHINESE))
    for term in glossary.TERMS:
        assert term.zh and CJK.search(term.zh) or term.zh.lower() == term.name.lower(), term
        entry = held.get(term.name)
        if entry is not None and entry.string:
            assert term.zh.split("（")[0].split(" (")[0] in entry.string, (term.name, term.zh, entry.string)


# The field's Chinese terms (the two Chinese source texts' words): wherever a message says the English term,
# its translation says the Chinese one. Code spans and quoted titles are set aside.
KEY_TERMS = {
    r"\bKV[- ]cache": "KV 缓存",
    r"\bprefill": "预填充",
    r"\bautoregressive": "自回归",
    r"\bdot products?\b": "点积",
    r"\bGPU memory\b": "显存",
    r"\bsliding window": "滑动窗口",
    r"\bspeculative decoding": "推测解码",
    r"\bquantiz": "量化",
    r"\binside the noise\b": "噪声",
}


# Quotes of a Chinese source, shown in Chinese as the source wrote them (not our wording of the term).
QUOTED_AS_WRITTEN = {"with a KV cache, generating {n} tokens takes ~500x fewer computations."}


def test_key_terms_are_translated_the_same_way_everywhere():
    held = catalog.read(i18n.catalog_path(i18n.CHINESE))
    off = []
    for message in held:
        if not message.id or not message.string or message.id in QUOTED_AS_WRITTEN:
            continue
        source = re.sub(
            r"""`[^`]*`|"[^"]*"|'[^']*'""", " ", message.id if isinstance(message.id, str) else message.id[0]
        )
        string = message.string if isinstance(message.string, str) else message.string[0]
        for pattern, chinese in KEY_TERMS.items():
            if re.search(pattern, source, re.I) and chinese not in string:
                off.append((chinese, source[:70], string[:70]))
    assert not off, f"{len(off)} messages translate a key term otherwise, e.g. {off[:6]}"


def _run(page: str, **query) -> AppTest:
    """The page as a user reaches it: through app.py's router (sidebar, navigation, page links)."""
    return open_page(page, query=query, router=True)


@pytest.mark.app
@pytest.mark.parametrize("page", PAGES)
def test_every_page_in_chinese_leaves_no_english_sentence(page, fresh_streamlit_caches):
    at = _run(f"pages/{page}", lang="zh-CN")
    texts = page_texts(at)
    assert sum(bool(CJK.search(t)) for t in texts) >= 3, texts[:10]
    assert english_leftovers(texts, ALLOWED) == []
    assert punctuation_faults(texts) == []
    assert at.query_params["lang"] == "zh-CN"


@pytest.mark.app
@pytest.mark.parametrize("page", ["pages/home.py", "pages/lesson.py", "pages/memory_budget.py"])
def test_lang_en_gives_english_back(page, fresh_streamlit_caches):
    at = _run(page, lang="en")
    assert not [t for t in page_texts(at) if CJK.search(t) and "中文" not in t and "语言" not in t]


@pytest.mark.app
@pytest.mark.parametrize("value", ["", "fr", "zh-TW", "x" * 100_000, "<img src=x onerror=alert(1)>", "zh-CN'--"])
def test_hostile_lang_falls_back_to_the_browser_language_quietly(value):
    at = _run("pages/home.py", lang=value)
    assert at.query_params["lang"] == "en"  # AppTest has no browser locale: English
    assert not at.error and not at.warning
    assert not [t for t in page_texts(at) if CJK.search(t) and "中文" not in t and t != "Language / 语言"]


@pytest.mark.app
def test_sidebar_switch_changes_every_label_and_the_url():
    at = _run("app.py")
    assert at.query_params["lang"] == "en"
    assert at.sidebar.button_group[0].value == "en"
    # (AppTest drops the sidebar's elements after a widget rerun of an st.navigation app, so the switch is read
    # before the click, and the main area after it.)
    at.sidebar.button_group[0].set_value("zh-CN").run()
    assert not at.exception
    assert at.query_params["lang"] == "zh-CN"
    texts = page_texts(at)
    assert sum(bool(CJK.search(t)) for t in texts) >= 3 and english_leftovers(texts, ALLOWED) == []
    fresh = _run("app.py", lang="zh-CN")  # the link the click wrote, opened fresh: the switch shows Chinese
    assert fresh.sidebar.button_group[0].value == "zh-CN"


def test_no_function_shadows_the_translation_function():
    """`for _ in range(...)` or `a, _ = ...` in a function that also calls `_()` makes `_` a local there: the
    call then fails (UnboundLocalError, or 'int' object is not callable) only when that code path runs."""
    import ast

    def own_nodes(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(
                child,
                (
                    ast.FunctionDef,
                    ast.AsyncFunctionDef,
                    ast.Lambda,
                    ast.ClassDef,
                    ast.ListComp,
                    ast.SetComp,
                    ast.DictComp,
                    ast.GeneratorExp,
                ),
            ):
                continue
            yield child
            yield from own_nodes(child)

    shadowed = []
    for path in catalog.source_files():
        for scope in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
                names = [n for n in own_nodes(scope) if isinstance(n, ast.Name) and n.id == "_"]
                if any(isinstance(n.ctx, ast.Store) for n in names) and any(isinstance(n.ctx, ast.Load) for n in names):
                    shadowed.append(f"{path.name}:{getattr(scope, 'name', '<module>')}")
    assert not shadowed, shadowed
