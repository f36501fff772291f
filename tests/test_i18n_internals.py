"""The seven "Cache internals" pages in Simplified Chinese: rendered with ?lang=zh-CN, every label,
caption, tile, table header, explanation, message and chart text a student sees is Chinese (names, code, units
and the model's own English output aside); ?lang=en gives the English pages back. Real model, real pages."""

from __future__ import annotations

import dataclasses

import pytest
from streamlit.testing.v1 import AppTest

from kvviz import i18n
from kvviz.inputs.prompt_rules import TEXT_CAP_HELP
from kvviz.internals import layout
from kvviz.measure.timing import Timing
from support.i18n_text import english_leftovers, page_texts
from support.pages import app_test

pytestmark = pytest.mark.app  # every test runs a page in AppTest

TITLES = {  # page -> (English title, Chinese title)
    "layout": ("Memory layout of the cache", "缓存的内存布局"),
    "prefix": ("Prefix reuse", "前缀复用"),
    "crossattn": ("Cross-attention cache", "交叉注意力缓存"),
    "window": ("Sliding windows", "滑动窗口"),
    "paging": ("Paged blocks", "分页块"),
    "quant": ("Quantized caches", "量化缓存"),
    "speculative": ("Speculative decoding: rollback", "推测解码：回滚"),
}


def _pending_elsewhere() -> list[str]:
    """Text these pages show that other modules own (kvviz.inputs.prompt_rules' tooltip on every text box;
    kvviz.model.loading's bundled model titles, in the speculative page's draft label): those modules' own tests
    check its translation, so here it is allowed while the catalog has none, and checked as soon as it has one."""
    from kvviz.model.loading import BUNDLED_MODELS

    with i18n.language(i18n.CHINESE):
        return [s for s in (TEXT_CAP_HELP, *(m.title for m in BUNDLED_MODELS.values())) if i18n._(s) == s]


def _app(name: str, lang: str) -> AppTest:
    import streamlit as st

    st.cache_data.clear()  # a cached run from the other language must not hide a missing translation
    at = app_test(f"pages/internals_{name}.py", lang=lang)
    return _run(at.run, lang)


def _run(action, lang: str = i18n.CHINESE) -> AppTest:
    """Run the page, AppTest's side in the page's language too: AppTest serializes a selectbox's value through
    its format_func on the test's thread, outside the session (in the app that call runs in the session)."""
    with i18n.language(lang):
        return action()


def _leftovers(at: AppTest, allowed=()) -> list[str]:
    return english_leftovers(page_texts(at), [*_pending_elsewhere(), *allowed])


@pytest.mark.parametrize("name", list(TITLES))
def test_every_internals_page_speaks_chinese_and_english_comes_back(name):
    at = _app(name, i18n.CHINESE)
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert at.title[0].value == TITLES[name][1]
    assert at.expander[0].label == "怎么看这张图"
    assert _leftovers(at) == []
    if name != "prefix":  # the prefix page draws its charts only after a measurement (below)
        assert at.get("plotly_chart")
    at = _app(name, i18n.ENGLISH)
    assert not at.exception and at.title[0].value == TITLES[name][0]
    assert at.expander[0].label == "What you are seeing"


def test_layout_measurement_and_its_verdict_in_chinese(monkeypatch):
    """The timing verdict ("inside the noise" when the repeats overlap), tiles and the chart are Chinese."""
    real = layout.bench_head_read

    def overlapping(*args, **kwargs):  # the real benchmark's shape, with repeats a busy machine once produced
        return dataclasses.replace(
            real(*args, **kwargs),
            contiguous=Timing((0.090, 0.100, 0.130), 1.7),
            strided=Timing((0.095, 0.110, 0.120), 1.7),
        )

    monkeypatch.setattr(layout, "bench_head_read", overlapping)
    at = _app("layout", i18n.CHINESE)
    at = _run(at.button(key="int_layout_measure").click().run)
    assert not at.exception and not at.error
    said = " ".join(x.value for x in at.info)
    assert "在噪声范围内" in said and "100.0 µs" in said and "110.0 µs" in said
    assert "连续读取（中位数）" in [m.label for m in at.metric]
    assert _leftovers(at) == []


def test_prefix_measurement_in_chinese_shows_the_noise_rules_verdict(monkeypatch):
    """The prefix page's verdict is kvviz.measure.timing's sentence (translated in that slice), naming the two
    prefills in Chinese; everything else the measurement adds is Chinese."""
    from kvviz.internals.lab import prefix as prefix_lab

    real = prefix_lab.prefix_reuse

    def noisy(*args, **kwargs):  # overlapping repeats: the verdict must not crown a winner
        return dataclasses.replace(
            real(*args, **kwargs), fresh=Timing((9.0, 9.9, 12.0), 2.0), reuse=Timing((8.8, 10.1, 11.0), 2.0)
        )

    monkeypatch.setattr(prefix_lab, "prefix_reuse", noisy)
    at = _app("prefix", i18n.CHINESE)
    at = _run(at.button(key="int_prefix_run").click().run)
    assert not at.exception and not at.error and not at.warning
    verdict = " ".join(x.value for x in at.info)
    assert "复用 A 的前缀" in verdict and "重新预填充 B" in verdict and "上面的 token 数是精确的" in verdict
    assert "共享的 token" in [m.label for m in at.metric] and at.get("plotly_chart")
    # The verdict's own wording belongs to kvviz.measure.timing (checked in its slice); the rest is checked here.
    assert _leftovers(at, allowed=[x.value for x in at.info]) == []


def test_bad_inputs_answer_in_chinese():
    """A value past a cap gets a Chinese message, never an exception (the range wording itself lives in
    kvviz.inputs.prompt_rules; the name of the input is this slice's)."""
    at = _app("crossattn", i18n.CHINESE)
    at = _run(at.number_input(key="int_cross_src").set_value(10_000).run)
    assert not at.exception and "源序列长度" in " ".join(e.value for e in at.error)
    at = _app("quant", i18n.CHINESE)
    at.text_area(key="int_quant_prompts").set_value("\n".join(["ROMEO:"] * 8))
    at.number_input(key="int_quant_n").set_value(32)
    at = _run(at.button(key="int_quant_run").click().run)
    assert not at.exception and "上限为 128" in " ".join(e.value for e in at.error)
