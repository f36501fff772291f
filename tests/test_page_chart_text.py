"""Charts for those who cannot see them, on the pages: each chart of the memory budget page and of the
step page's race view has its data beside it as a visually hidden text (kvviz.ui.screen_reader_text), in the page's
language, saying the numbers of the chart drawn next to it. AppTest, on the real bundled model."""

from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from kvviz import i18n
from kvviz.memory.units import format_bytes
from kvviz.step.records import RaceTiming
from kvviz.ui import a11y
from support.i18n_text import english_leftovers
from support.pages import PAGES_DIR, open_page

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")
CJK = re.compile(r"[\u4e00-\u9fff]")


def hidden_texts(at: AppTest) -> list[str]:
    """The visually hidden chart texts drawn as elements of their own, in page order (the text, unescaped)."""
    bodies = [h.proto.body for h in at.get("html") if 'class="kvviz-sr-only"' in h.proto.body]  # not the CSS
    for body in bodies:
        assert a11y.SCREEN_READER_ONLY in body  # hidden from sight, not from a reader
    return [re.sub(r"<[^>]+>", "", b).replace("&#x27;", "'").replace("&amp;", "&") for b in bodies]


def chart_specs(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def test_the_hidden_text_is_escaped_and_sits_in_its_own_hidden_element():
    span = a11y.screen_reader_span('a <script>"x"</script> & b')
    assert "<script>" not in span and "&lt;script&gt;" in span and 'class="kvviz-chart-text"' in span
    assert "kvviz-sr-only" in a11y.READABLE_CSS  # the element of its own is taken out of the page's flow


@pytest.mark.app
def test_the_memory_pages_three_charts_each_have_their_data_as_hidden_text():
    at = open_page(PAGES_DIR / "memory_budget.py", query={"mem_preset": "gemma-3-4b", "mem_compare": "llama-3-8b"})
    size, per_layer, paged = hidden_texts(at)
    ctx, layers, blocks = chart_specs(at)[:3]  # the first four tabs always run: size, per layer, (what fits), paged
    for line in (d for d in ctx["data"] if d.get("mode") == "lines"):
        assert f"{format_bytes(line['customdata'][-1])} at {line['x'][-1]:,} tokens" in size
    assert (
        size.startswith("Chart: KV cache size against context length") and "A dotted line marks 4,096 tokens." in size
    )
    bars = layers["data"][0]
    assert f"All layers together: {format_bytes(sum(b for _t, b in bars['customdata']))}." in per_layer
    assert f"the {len(bars['x'])} layers holds" in per_layer
    unit = int(re.search(r"([\d,]{5,})", blocks["layout"]["yaxis"]["title"]["text"]).group(1).replace(",", ""))
    used, paged_bytes, flat = (round(y * unit) for y in blocks["data"][0]["y"])
    assert f"Tokens actually held: {format_bytes(used)}." in paged and f": {format_bytes(paged_bytes)}, " in paged
    assert f"maximum length: {format_bytes(flat)}; {format_bytes(flat - used)} more than held." in paged


@pytest.mark.app
def test_the_memory_pages_hidden_texts_read_in_chinese():
    at = open_page(PAGES_DIR / "memory_budget.py", lang=i18n.CHINESE, query={"mem_preset": "gemma-3-4b"})
    texts = hidden_texts(at)
    assert len(texts) == 3 and all(t.startswith("图：") for t in texts)
    assert not english_leftovers(texts, ["gemma-3-4b"]), english_leftovers(texts, ["gemma-3-4b"])


def race_page(lang: str | None = None) -> AppTest:
    at = open_page(PAGES_DIR / "step_through.py", lang=lang)
    at.button(key="step_btn_prefill").click().run()
    at.button(key="step_btn_next").click().run()
    at.segmented_control(key="step_view").set_value("race").run()
    assert not at.exception
    return at


NOISE = RaceTiming(
    seq_len=9, cached_ms=(2.0, 2.2, 2.6, 3.0), uncached_ms=(2.4, 2.8, 3.1, 3.3), fixed_ms=(1.8, 1.9, 2.0, 2.1)
)
FASTER = RaceTiming(
    seq_len=9, cached_ms=(2.0, 2.1, 2.2, 2.3), uncached_ms=(6.0, 6.4, 6.8, 7.2), fixed_ms=(1.5, 1.6, 1.7, 1.8)
)
SLOWER = RaceTiming(
    seq_len=9, cached_ms=(7.0, 7.1, 7.2, 7.3), uncached_ms=(3.0, 3.1, 3.2, 3.3), fixed_ms=(1.5, 1.6, 1.7, 1.8)
)


@pytest.mark.app
def test_the_race_views_charts_have_their_data_as_hidden_text_and_the_clock_says_the_captions_verdict():
    at = race_page()
    engine = at.session_state["step_engine"]
    with_cache, without, clock = hidden_texts(at)
    n, layers = engine.cache_len, engine.loaded.info.n_layer
    assert with_cache.startswith("Chart, with the cache") and without.startswith("Chart, without the cache")
    for said in (with_cache, without):
        assert (
            f"each of the {layers} layers, {n} rows of {engine.loaded.info.head_dim} numbers, positions 0 to {n - 1}."
            in said
        )
    assert f"computes 1 row, position {n - 1} (outlined)" in with_cache and "recomputes all of them" in without
    measured = at.session_state["step_race_timing"][1]
    assert f"with the cache, median {measured.cached_median_ms:.1f} ms" in clock
    key = at.session_state["step_race_timing"][0]
    x = f"{FASTER.uncached_median_ms / FASTER.cached_median_ms:.1f}x"
    for timing, caption, hidden in (
        (NOISE, "**Inside the noise**", "The difference is inside the noise"),
        (FASTER, f"**{x} faster with the cache**", f"The step with the cache is {x} faster."),
        (SLOWER, "**The cached step measured slower**", "The cached step measured slower"),
    ):
        at.session_state["step_race_timing"] = (key, timing)  # the page's caption and the hidden text, one verdict
        at.run()
        assert not at.exception
        assert any(caption in m.value for m in at.markdown), caption
        assert hidden in hidden_texts(at)[2]


@pytest.mark.app
def test_the_race_views_hidden_texts_read_in_chinese():
    at = race_page(i18n.CHINESE)
    texts = hidden_texts(at)
    assert len(texts) == 3 and all(CJK.search(t) for t in texts)
    assert not english_leftovers(texts), english_leftovers(texts)


@pytest.mark.app
@pytest.mark.parametrize("lang", [i18n.ENGLISH, i18n.CHINESE])
def test_the_stage_and_gqa_views_say_their_charts_and_the_next_token_bars(lang):
    """The one-head view: the stage's sentence and the bars' in the readout's hidden span (no element added per
    click); the GQA view (the bundled GQA model): its own hidden element after the chart, with the bars'."""
    at = open_page(PAGES_DIR / "step_through.py", lang=lang)
    at.button(key="step_btn_prefill").click().run()
    at.button(key="step_btn_next").click().run()
    readout = next(h.proto.body for h in at.get("html") if "kvviz-readout" in h.proto.body)
    engine = at.session_state["step_engine"]
    chosen = engine.snapshot(0, 0).next_token_text.strip()
    assert 'class="kvviz-chart-text"' in readout and chosen and chosen in readout
    assert ("Next-token chart: the 6 most likely" if lang == i18n.ENGLISH else "最可能的 6 个下一个 token") in readout
    gqa = open_page("pages/step_through.py", lang=lang, query={"model": "bundled-gqa"}, router=True)  # a link
    gqa.button(key="step_btn_prefill").click().run()
    gqa.segmented_control(key="step_view").set_value("gqa").run()
    assert not gqa.exception
    said = hidden_texts(gqa)
    assert len(said) == 1 and ("read by 4 query heads" if lang == i18n.ENGLISH else "由 4 个查询头读取") in said[0]
    assert not english_leftovers(said) if lang == i18n.CHINESE else True
