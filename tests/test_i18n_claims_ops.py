"""The claims and Count-the-work pages in Simplified Chinese: both pages drawn in Simplified Chinese leave no English sentence
(names, code, units and the English sources' titles aside), the claims keep their exact numbers, the Chinese sources
are quoted as written, and `?lang=en` still gives English. Real counts, real claims: nothing mocked."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from kvviz import claims, i18n, ops
from kvviz.memory.presets import get_preset
from kvviz.model import loading
from kvviz.teaching import glossary
from support.i18n_text import english_leftovers, english_ratios, page_texts, shown_texts
from support.pages import open_page

pytestmark = [pytest.mark.app, pytest.mark.usefixtures("fresh_streamlit_caches")]
# Names that stay as published: the English sources' article titles, the presets' paper names.
NAMES = [*claims.SOURCE_TITLES, *claims.PUBLISHED_SOURCE_TITLES.values(), claims.GPT3_PAPER]


def claims_page(lang: str) -> AppTest:
    """Through app.py, so the page links resolve."""
    return open_page("pages/claims.py", lang=lang, router=True)


def ops_page(lang: str, **query: str) -> AppTest:
    return open_page("pages/attention_ops.py", lang=lang, query=query)


def test_claims_page_in_chinese_has_no_english_sentence_and_the_same_numbers():
    at = claims_page(i18n.CHINESE)
    assert at.title[0].value == "说法核查"
    with i18n.language(i18n.CHINESE):
        found = claims.all_claims()
        tooltip = glossary.help_text("Bytes: GB and GiB")  # the glossary's words (its own slice translates them)
    assert english_leftovers(page_texts(at), [*NAMES, tooltip]) == []
    texts = " ".join(m.value for m in at.markdown)
    for c in found:
        assert c.quote in texts and c.finding in texts
    # the Chinese source quoted as written, not translated back from the English
    only_q = next(c for c in found if c.key == "only-own-q")
    assert only_q.quote == "Decode 阶段每个新 token 只算 Q,K/V 从 Cache 读" and only_q.quote in only_q.source
    # the exact arithmetic survives translation
    assert any("570,425,344 B" in c.value and "层" in c.value for c in at.code)
    counts = {m.label: m.value for m in at.metric}
    assert counts == {
        "成立": str(sum(c.verdict == "holds" for c in found)),
        "错误": str(sum(c.verdict == "wrong" for c in found)),
        "部分正确": str(sum(c.verdict == "partly true" for c in found)),
        "无法判定": str(sum(c.verdict == "cannot be judged" for c in found)),
    }
    # the seeds' Chinese words as written, with no translation back into Chinese beside them
    seeds = {c.key: c for c in found}
    assert seeds["seed-zhihu-gpt3-472mb"].quote == claims.ZHIHU_QUOTE
    assert seeds["seed-visualiser-4gb"].quote == claims.VISUALISER_QUOTE
    assert "是它的 1.86 倍" in seeds["seed-visualiser-4gb"].finding
    assert at.selectbox(key="claims_gpu").label.startswith("这条说法所用的 GPU")
    at.selectbox(key="claims_gpu").set_value("NVIDIA T4").run()
    with i18n.language(i18n.CHINESE):
        t4 = claims.all_claims("NVIDIA T4")[-1]
    assert not at.exception and t4.verdict == "wrong" and any(t4.finding == m.value for m in at.markdown)
    assert "节省的时间都比说法中的多" in t4.finding and "4.57 倍" in t4.finding and "4.57x" not in t4.finding


def test_claims_in_english_are_unchanged_by_the_catalog():
    """English (the CLI, the default) keeps the source text; numbers match across languages."""
    en = claims.all_claims()
    with i18n.language(i18n.CHINESE):
        zh = claims.all_claims()
    assert [c.numbers for c in en] == [c.numbers for c in zh] and [c.verdict for c in en] == [c.verdict for c in zh]
    gemma_en, gemma_zh = (next(c for c in cs if c.key == "gemma3-896mb") for cs in (en, zh))
    assert gemma_en.finding != gemma_zh.finding and "the chapter's MB is binary" in gemma_en.finding
    assert en[0].translation and zh[0].translation == "" and en[0].quote == zh[0].quote  # only where one is needed
    at = claims_page(i18n.ENGLISH)
    assert at.title[0].value == "Claims checked"
    assert any(m.label == "Holds" for m in at.metric)


@pytest.mark.parametrize(
    "tab", ["Cumulative", "Ratio", "Per component", "Per pass", "The '500x' claim", "Why no Q cache?"]
)
def test_count_the_work_in_chinese_every_tab(tab):
    with i18n.language(i18n.CHINESE):
        label = i18n._(tab)
    at = ops_page(i18n.CHINESE, ops_tab=label, ops_log="true")
    assert at.title[0].value == "计算量统计"
    texts = page_texts(at)
    assert english_leftovers(texts) == [], tab
    assert "使用 KV 缓存（运算次数）" in {m.label for m in at.metric}
    # a ratio reads "N 倍" wherever the page builds one (the tile, the tables' cells), never "81.3x"
    assert english_ratios(shown_texts(at)) == [], tab
    assert at.metric[2].value.endswith(" 倍")
    if tab == "The '500x' claim":
        # the Chinese visualiser page's figure, quoted as written
        assert any("生成 1000 个 token 时,加速比约 500x" in m.value for m in at.markdown)
        table = next(df.value for df in at.dataframe if "约 500 倍？" in df.value.columns)
        assert list(table["约 500 倍？"]).count("是") >= 1 and "统计量" in table.columns
        assert all(cell.endswith(" 倍") for cell in table["比值"])
        assert any(" 倍**" in m.value for m in at.markdown)  # the whole-run / last-step table's ratios
    if tab == "Per component":
        assert all(cell.endswith(" 倍") for cell in at.dataframe[0].value["不使用 / 使用"])
    if tab == "Per component":
        assert any("对数刻度" in t for t in texts)  # the log axis says so, in Chinese


@pytest.mark.parametrize("tab", ["Per component", "The '500x' claim"])
def test_count_the_work_in_english_keeps_the_x(tab):
    """The same formatter writes English ratios as before: "81.3x" on the tile and in the tables."""
    at = ops_page(i18n.ENGLISH, ops_tab=tab)
    assert at.metric[2].value.endswith("x") and english_ratios(shown_texts(at))
    if tab == "The '500x' claim":
        table = next(df.value for df in at.dataframe if "~500x?" in df.value.columns)
        assert all(cell.endswith("x") for cell in table["ratio"])


def test_count_the_work_custom_shape_error_and_savings_sentence_in_chinese():
    at = ops_page(i18n.CHINESE, ops_model="自定义", ops_kv_heads="5")
    assert at.selectbox(key="ops_model").value == "custom"
    assert at.error and "必须能整除" in at.error[0].value
    assert english_leftovers(page_texts(at)) == []
    at = ops_page(i18n.CHINESE)
    shape = loading.bundled_info().ops_shape()
    with i18n.language(i18n.CHINESE):
        sentence = ops.savings_sentence(shape, 16, 200)
    assert any(m.value == sentence for m in at.markdown) and "使用 KV 缓存后" in sentence


def test_claims_links_open_count_the_work_in_chinese_on_the_claims_tab():
    """The claims page's link to Count the work names the tab by its Chinese label and carries lang."""
    claim = next(c for c in claims.all_claims() if c.key == "system-prompt-prefill")
    with i18n.language(i18n.CHINESE):
        tab = i18n._(claim.page_query["ops_tab"])
    at = ops_page(i18n.CHINESE, **{**claim.page_query, "ops_tab": tab})
    assert not at.warning and not at.error and at.session_state["ops_tab"] == tab == "按组件"
    assert at.selectbox(key="ops_model").value == "llama-3-8b" and get_preset("llama-3-8b").shape is not None
