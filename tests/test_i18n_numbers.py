"""Large numbers: a count reads in its language's own scale words (English thousand / million /
billion, Chinese 万 / 亿 / 万亿; never the calque 百万 / 十亿), from Babel's CLDR data through kvviz.i18n.numbers,
on the metric tiles and on the chart axes. The scale is display only: the exact integer stays on the hover and in
the tooltip. Real counts (kvviz.ops), the real catalog, the page through AppTest."""

from __future__ import annotations

import re

import pytest

from kvviz import i18n, ops
from kvviz.figures import ops as figs
from kvviz.i18n import catalog, numbers
from kvviz.memory.presets import get_preset
from kvviz.model import loading
from support.pages import app_test

EN, ZH = i18n.ENGLISH, i18n.CHINESE


@pytest.mark.parametrize(
    "n, english",
    [
        (999_999, "999,999"),
        (1_000_000, "1 million"),
        (1_234_567, "1.235 million"),
        (245_300_000, "245.3 million"),
        (26_873_280, "26.87 million"),
        (10**9, "1 billion"),
        (1_500_000_000_000, "1.5 trillion"),
        (3 * 10**15, "3 quadrillion"),
        (5 * 10**18, "5 quintillion"),
    ],
)
def test_english_reads_as_before(n, english):
    """What the ops page's tiles said, unchanged (they started at a million)."""
    assert numbers.count_in_words(n, EN, scale_from=10**6) == english


@pytest.mark.parametrize(
    "n, chinese",
    [
        (245_300_000, "2.453 亿"),
        (1_234_567, "123.5 万"),
        (26_873_280, "2,687 万"),
        (10**8, "1 亿"),
        (1_500_000_000_000, "1.5 万亿"),
        (12_345, "1.234 万"),
        (9_999, "9,999"),
    ],
)
def test_chinese_counts_in_wan_and_yi(n, chinese):
    assert numbers.count_in_words(n, ZH) == chinese


def test_a_count_that_rounds_up_names_the_next_word():
    """999,960,000 at four digits is 1,000 million: it says 1 billion (and 10 亿; 99,995,000 is 1 亿, not 1 万万)."""
    assert numbers.count_in_words(999_960_000, EN) == "1 billion"
    assert numbers.count_in_words(999_960_000, ZH) == "10 亿"
    assert numbers.count_in_words(99_995_000, ZH) == "1 亿"


def test_the_current_language_decides():
    with i18n.language(ZH):
        assert numbers.count_in_words(245_300_000) == "2.453 亿"
        assert numbers.axis_scale(245_300_000) == (10**8, "亿")
    with i18n.language(EN):
        assert numbers.count_in_words(245_300_000) == "245.3 million"
        assert numbers.axis_scale(245_300_000) == (10**6, "millions")


@pytest.mark.parametrize(
    "peak, english, chinese",
    [
        (5_000, (10**3, "thousands"), (1, "")),
        (50_000_000, (10**6, "millions"), (10**4, "万")),
        (3 * 10**9, (10**9, "billions"), (10**8, "亿")),
        (2 * 10**12, (10**12, "trillions"), (10**12, "万亿")),
    ],
)
def test_axis_scale_picks_the_languages_unit(peak, english, chinese):
    assert numbers.axis_scale(peak, EN) == english
    assert numbers.axis_scale(peak, ZH) == chinese


@pytest.mark.parametrize("quantity, unit", [("total", "亿"), ("attention", "万")])
def test_an_ops_chart_in_chinese_counts_in_yi_or_wan_and_hovers_the_exact_count(quantity, unit):
    """Real counts of the bundled model, 16 + 20 tokens: all the work peaks at 5.4 x 10^8 (the axis says
    单位：亿), attention alone at 7.3 x 10^6 (单位：万); every drawn value times the unit is the exact integer on
    the hover."""
    points = ops.curve(loading.bundled_info().ops_shape(), 16, 20, max_points=50)
    with i18n.language(ZH):
        fig = figs.cumulative_figure(points, quantity=quantity)
    title = fig.layout.yaxis.title.text
    assert title.endswith(f"单位：{unit}") and "百万" not in title and "十亿" not in title, title
    divisor = {"亿": 10**8, "万": 10**4}[unit]
    for trace in fig.data:
        assert all(isinstance(v, int) for v in trace.customdata)
        assert [round(v * divisor) for v in trace.y] == list(trace.customdata)
    assert divisor <= max(max(t.customdata) for t in fig.data) < divisor * 10**4


@pytest.mark.app
def test_the_ops_page_tiles_in_chinese_say_yi_and_keep_the_exact_count():
    at = app_test(
        "pages/attention_ops.py", lang=ZH, query={"ops_model": "llama-3-8b", "ops_prompt": "1", "ops_new": "1000"}
    )
    at.run()
    assert not at.exception
    cached, uncached = ops.generation_totals(get_preset("llama-3-8b").shape, 1, 1000, lm_head_all_positions=False)
    tiles = {m.label: m for m in at.metric}
    for label, exact in (
        ("使用 KV 缓存（运算次数）", cached.total_ops),
        ("不使用缓存（运算次数）", uncached.total_ops),
    ):
        tile = tiles[label]
        assert tile.value == numbers.count_in_words(exact, ZH, scale_from=10**6)
        assert re.fullmatch(r"[\d,.]+ (万|亿|万亿)", tile.value), tile.value
        assert tile.proto.help == f"{exact:,}"  # the exact integer, in the tooltip


# 百万 / 十亿 / 千万亿 as a unit (a number, a placeholder or 单位： before it, or the whole message): the English
# scale in Chinese characters. 数百万 ("millions of", no number) is Chinese and stays allowed.
CALQUE = re.compile(r"(?<![数上几])(百万|十亿|千万亿)")


def test_no_chinese_message_uses_a_calqued_scale_word():
    held = catalog.read(i18n.catalog_path(ZH))
    live = {m.id for m in catalog.extract() if m.id}
    found = []
    for message in held:
        if message.id not in live or not message.string:
            continue
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        found += [(message.id, s) for s in strings if CALQUE.search(s)]
    assert not found, found


def test_a_ratio_reads_x_in_english_and_bei_in_chinese():
    """One formatter for every ratio a page builds (kvviz.i18n.numbers.ratio): the same digits, the language's word."""
    assert numbers.ratio(1234.56, lang=EN) == "1,234.6x" and numbers.ratio(1234.56, lang=ZH) == "1,234.6 倍"
    assert numbers.ratio(2.2, ".2f", ZH) == "2.20 倍" and numbers.ratio(1.65, ".3g", EN) == "1.65x"
    with i18n.language(ZH):
        assert numbers.ratio(4, ",") == "4 倍"


def test_a_lessons_ratio_answer_goes_through_it():
    from kvviz.teaching import lesson

    question = lesson.Question("how many times?", 72.3, "", unit="x")
    with i18n.language(ZH):
        assert question.answer_text() == "72.3 倍"
    with i18n.language(EN):
        assert question.answer_text() == "72.3x"
    assert lesson.Question("how many?", 1024, "").answer_text() == "1,024"


def test_a_count_past_decimals_precision_is_written_exactly_in_both_languages():
    """A custom shape's op count runs past 28 digits (the default decimal context): every digit, grouped."""
    count = 10**40 + 123
    for lang in i18n.LANGUAGES:
        assert numbers.format_number(count, lang) == f"{count:,}"
