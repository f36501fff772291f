"""The "Measured speed-up" page in Simplified Chinese (?lang=zh-CN): a tiny benchmark and a tiny batch sweep on
the bundled model, then every text a student sees (titles, captions, metrics, the table's headers, the
roofline and int8 paragraphs, the charts' titles, axes, legends and hover templates) carries no English
sentence, and the numbers are formatted exactly as in English."""

from __future__ import annotations

import re

import pytest

from kvviz import i18n
from kvviz.speedup.records import ESTIMATOR, BenchResult
from support.i18n_text import english_leftovers, english_ratios, page_texts, shown_texts
from support.pages import PAGES_DIR, app_test

pytestmark = pytest.mark.app

PAGE = str(PAGES_DIR / "speedup.py")


def _zh(message: str) -> str:
    with i18n.language(i18n.CHINESE):
        return i18n._(message)


def _names(result: BenchResult) -> list[str]:
    """What stays as it is in both languages: the model's label, the CPU's name, versions and settings names."""
    m = result.machine
    return [result.model_label, m.cpu, m.torch_version, m.transformers_version, m.dtype, m.attn_implementation]


@pytest.fixture(scope="module")
def app():
    import streamlit as st

    st.cache_resource.clear()
    at = app_test(PAGE)
    at.query_params[i18n.QUERY_PARAM] = i18n.CHINESE
    at.run()
    yield at
    st.cache_resource.clear()


def test_form_is_chinese_before_any_run(app):
    assert not app.exception
    assert app.title[0].value == _zh("Measured speed-up") != "Measured speed-up"
    assert app.expander[0].label == "怎么看这张图"
    assert app.button(key="bench_run").label == "运行基准测试"
    assert english_leftovers(page_texts(app)) == []


def test_tiny_run_and_batch_sweep_leave_no_english_sentence(app):
    app.number_input(key="bench_prompt_len").set_value(4)
    app.number_input(key="bench_new_tokens").set_value(4)
    app.number_input(key="bench_repeats").set_value(1)
    app.number_input(key="bench_warmup").set_value(0)
    app.number_input(key="bench_threads").set_value(1)
    app.checkbox(key="bench_generate").uncheck()
    app.button(key="bench_run").click().run()
    assert not app.exception and not app.error
    result = app.session_state["bench_result"]
    assert result.machine.thread_reason == "set by you"  # stored in English, shown through _()
    app.slider(key="bench_batch_max").set_value(2)
    app.number_input(key="bench_batch_ctx").set_value(8)
    app.button(key="bench_batch_run").click().run()
    assert not app.exception and not app.error
    assert len(app.get("plotly_chart")) == 5

    texts = page_texts(app)
    assert english_leftovers(texts, allowed=_names(result)) == []
    # numbers formatted exactly as in English, words in Chinese; a ratio reads N 倍, not the English "Nx"
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["扁平缓存：相对不使用缓存"] == f"{result.speedup('preallocated'):.2f} 倍"
    assert english_ratios(shown_texts(app)) == []  # every speed-up tile, delta and table cell
    why = next(m.value for m in app.markdown if "远低于运算量之比" in m.value)
    assert f"（{result.speedup('preallocated'):.1f} 倍）" in why and _zh(ESTIMATOR) in why
    assert any("**int8 权重**。" in m.value for m in app.markdown)
    # CommonMark leaves "**" after full-width punctuation and before a character unclosed: bold must end before it
    assert not [m.value for m in app.markdown if re.search(r"[。：；，）]\*\*[^\s\W]", m.value)]
    caption = " ".join(c.value for c in app.caption)
    assert "1 个 torch 线程：由你设置" in caption and f"运行前 {result.machine.load_before[0]:.2f}" in caption
    table = app.dataframe[0].value
    assert list(table.columns)[:3] == ["模式", "token/s（中位数）", "token/s 最小"]
    assert list(table["模式"]) == [_zh(m.label) for m in result.modes]
    assert any("在噪声范围内" in t or "超出了各次重复的波动范围" in t for t in texts)  # the verdict's sentence


def test_the_gpu_note_is_in_the_readers_language_whoever_probed_the_devices_first():
    """The devices are probed once per process (st.cache_resource), and the sentence saying why no GPU is here is
    written for each reader: an English reader's probe first, then a Chinese reader sees it in Chinese."""
    import streamlit as st
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is here: no sentence says why not")
    st.cache_resource.clear()
    try:
        english = app_test(PAGE)
        english.query_params[i18n.QUERY_PARAM] = i18n.ENGLISH
        english.run()
        chinese = app_test(PAGE)
        chinese.query_params[i18n.QUERY_PARAM] = i18n.CHINESE
        chinese.run()
    finally:
        st.cache_resource.clear()
    assert any("No CUDA device here" in text for text in page_texts(english))
    assert not any("No CUDA device here" in text for text in page_texts(chinese)), page_texts(chinese)
    assert english_leftovers(page_texts(chinese)) == []
