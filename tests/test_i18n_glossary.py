"""The glossary as the one English-Chinese term table: every Term has its Chinese name, the Term names
and the rest of the terminology (glossary.VOCABULARY) agree, tooltips follow the session's language, and the
glossary, teacher's guide and home page at ?lang=zh-CN leave no English sentence (names, code and the model's
label aside); ?lang=en gives English back."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from kvviz import i18n, ops
from kvviz.model import loading
from kvviz.teaching import glossary
from support.i18n_text import english_leftovers, page_texts
from support.library import english_names
from support.pages import open_page

_CJK = re.compile(r"[\u4e00-\u9fff]")


def test_every_term_has_a_chinese_name():
    for term in glossary.TERMS:
        assert term.zh.strip(), term.name
        assert term.zh == term.zh.strip() and "\n" not in term.zh
        # Chinese, or a name kept as it is (token, head_dim, FLOP: the table keeps them)
        assert _CJK.search(term.zh) or term.zh.lower() == term.name.lower(), term.name
    names = [t.zh for t in glossary.TERMS]
    assert len(set(names)) == len(names)
    assert all(v.strip() for v in glossary.VOCABULARY.values())


def test_a_word_with_a_glossary_entry_is_not_written_again_in_the_terminology():
    """One home per word: the Term's Chinese name is the one rendering (written once, it cannot disagree with a
    second copy)."""
    names = {n.lower() for t in glossary.TERMS for n in english_names(t)}
    assert not [k for k in glossary.VOCABULARY if k.lower() in names]
    for english, chinese in (("KV cache", "KV 缓存"), ("speculative decoding", "推测解码"), ("query", "查询")):
        assert chinese in glossary.find(english).zh, english  # the words the terminology held are found as entries


def test_help_text_and_search_follow_the_language():
    kv = glossary.find("KV cache")
    english = glossary.help_text("KV cache")
    assert english.startswith("**KV cache.**") and kv.definition in english
    with i18n.language(i18n.CHINESE):
        chinese = glossary.help_text("KV cache")
        assert chinese.startswith("**KV 缓存（KV cache）**") and kv.definition not in chinese
        assert glossary.definition_text(kv) in chinese and _CJK.search(glossary.definition_text(kv))
        assert not english_leftovers([chinese])
        for term in glossary.TERMS:  # every definition translated: no English sentence left in any tooltip
            assert not english_leftovers([glossary.help_text(term.name)], allowed=[term.name]), term.name
        assert glossary.matches(glossary.find("Prefill"), "预填充")
        assert glossary.matches(kv, "缓存") and not glossary.matches(kv, "归纳")
    assert glossary.find("预填充") is glossary.find("Prefill")
    assert glossary.matches(glossary.find("Prefill"), "预填充")  # Chinese names are searchable in English too


def _page(page: str, lang: str) -> AppTest:
    return open_page(page, lang=lang, router=True)


def _allowed_names() -> list[str]:
    return [n for t in glossary.TERMS for n in (t.name, *t.also)] + list(glossary.VOCABULARY)


@pytest.mark.app
def test_glossary_page_in_chinese(fresh_streamlit_caches):
    at = _page("pages/glossary.py", i18n.CHINESE)
    assert at.title[0].value == "术语表"
    headers = [h.value for h in at.header]
    assert len(headers) == len(glossary.TERMS)
    for header, term in zip(
        headers, glossary.TERMS, strict=True
    ):  # titled by the Chinese term, the English name beside it
        assert header.startswith(term.zh) and (term.name in header or term.zh.lower() == term.name.lower())
    left = english_leftovers(page_texts(at), allowed=_allowed_names())
    assert not left, left
    at.text_input(key="term").set_value("预填充").run()
    shown = [h.value for h in at.header]
    with i18n.language(i18n.CHINESE):  # the Chinese name, and Chinese definitions that use it
        expected = [t for t in glossary.TERMS if "预填充" in t.zh or "预填充" in glossary.definition_text(t)]
    assert shown[0] == f"{glossary.find('Prefill').zh} :gray[Prefill]" and len(shown) == len(expected) > 1
    at.text_input(key="term").set_value("zzzz").run()
    assert not at.header and "没有" in at.info[0].value


@pytest.mark.app
def test_glossary_page_in_english_shows_the_chinese_column(fresh_streamlit_caches):
    at = _page("pages/glossary.py", i18n.ENGLISH)
    assert at.title[0].value == "Glossary"
    assert [h.value for h in at.header] == [t.name for t in glossary.TERMS]
    text = " ".join(m.value for m in at.markdown)
    assert all(f"中文] {t.zh}" in text for t in glossary.TERMS)
    assert len(english_leftovers(page_texts(at), allowed=_allowed_names())) > 20  # the scan sees English


@pytest.mark.app
def test_teachers_page_in_chinese(fresh_streamlit_caches):
    at = _page("pages/teachers.py", i18n.CHINESE)
    assert at.title[0].value == "教师指南"
    left = english_leftovers(page_texts(at), allowed=_allowed_names())
    assert not left, left
    links = [p for p in at.get("page_link")]
    assert links and all(f"{i18n.QUERY_PARAM}=zh-CN" in p.proto.query_string for p in links), [
        p.proto.query_string for p in links
    ]
    assert _page("pages/teachers.py", i18n.ENGLISH).title[0].value == "For teachers"


@pytest.mark.app
def test_home_page_in_chinese(fresh_streamlit_caches):
    at = _page("pages/home.py", i18n.CHINESE)
    assert at.title[0].value == "kvviz：一步一步看懂 KV 缓存"
    info = loading.bundled_info()
    with i18n.language(i18n.CHINESE):  # strings another slice owns: allowed only while they are still English
        outside = [info.label, ops.savings_sentence(info.ops_shape(), 16, 200)]
    left = english_leftovers(page_texts(at), allowed=outside)
    assert not left, left
    assert f"{info.n_positions}" in at.info[0].value and "字节" in at.info[0].value
    assert _page("pages/home.py", i18n.ENGLISH).title[0].value == "kvviz: the KV cache, step by step"
