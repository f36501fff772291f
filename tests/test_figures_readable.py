"""Charts readable from the back of a room, checked on the figure objects: every tick font at least
the shared minimum, at most four legend entries, a log axis only where the chart says "log", memory lines that
stop at each model's maximum context, no "0.2x10^5" token axis. And the one "inside the noise" rule
(kvviz.measure.timing) every timed comparison uses. Fast, torch-free; the browser test checks the rendered SVG."""

from __future__ import annotations

import re

import plotly.graph_objects as go
import pytest

from kvviz import ops
from kvviz.figures import MAX_LEGEND_ENTRIES, MIN_TICK_FONT_PX, legend_entries, log_ticks, readable
from kvviz.figures import memory as mem_figs
from kvviz.figures import ops as ops_figs
from kvviz.measure.repeats import time_pair
from kvviz.measure.timing import Comparison, Timing, inside_noise
from kvviz.memory.presets import get_preset


def _axes(fig: go.Figure) -> list:
    layout = fig.layout
    return [layout[name] for name in layout if name.startswith(("xaxis", "yaxis")) and layout[name] is not None]


def _assert_readable(fig: go.Figure) -> None:
    axes = _axes(fig)
    assert axes
    for axis in axes:
        assert axis.tickfont.size >= MIN_TICK_FONT_PX, axis.plotly_name
    assert legend_entries(fig) <= MAX_LEGEND_ENTRIES
    for axis in axes:  # a log axis says so in its title or in the chart's
        if axis.type == "log":
            said = f"{axis.title.text or ''} {fig.layout.title.text or ''}".lower()
            assert "log" in said, (axis.plotly_name, said)
            assert len(axis.tickvals) >= 2  # explicit 1-2-5 ticks, never plotly's stacked minor digits


# ----- the shared noise rule ----------------------------------------------------------------------------------
def test_overlapping_middle_halves_are_inside_the_noise():
    a, b = Timing((9.0, 9.9, 12.0)), Timing((8.8, 10.1, 11.0))
    assert inside_noise(a, b) and inside_noise(b, a)
    c = Comparison(
        "reuse",
        b,
        "fresh",
        a,
    )
    assert c.faster_name is None and "inside the noise" in c.sentence() and "faster" not in c.sentence()


def test_separated_repeats_name_the_faster_side_with_both_medians():
    fast, slow = Timing((4.4, 4.5, 4.6, 9.0), 1.5), Timing((10.0, 10.4, 10.5, 10.9), 1.5)
    c = Comparison("reuse", fast, "fresh", slow)
    assert not c.inside_noise and c.faster_name == "reuse"
    assert c.ratio == pytest.approx(10.45 / 4.55)
    text = c.sentence()
    assert "4.5 ms" in text and "10.4 ms" in text and "1-min load 1.50" in text


def test_one_preempted_repeat_does_not_decide():
    """A single stretched run (a busy core) moves the range, not the middle half."""
    quiet, stretched = Timing((5.0, 5.1, 5.2, 5.1, 5.0)), Timing((8.0, 8.1, 8.2, 8.1, 1.0))
    assert not inside_noise(quiet, stretched)
    assert Timing((5.0, 5.1, 5.2, 5.1, 40.0)).median_ms == pytest.approx(5.1)


def test_time_pair_interleaves_and_keeps_setup_out_of_the_timer():
    order, now = [], [0.0]

    def clock():
        return now[0]

    def run(name, ms):
        def go(arg=None):
            order.append(name)
            now[0] += ms / 1000.0

        return go

    def slow_setup():
        now[0] += 1.0  # a second of set-up: must not be timed
        return "cache"

    a, b = time_pair(run("a", 2.0), run("b", 5.0), 3, prepare_a=slow_setup, clock=clock)
    assert order == ["a", "b"] * 4  # one warm-up each, then a, b, a, b, ...
    assert a.samples_ms == pytest.approx((2.0,) * 3) and b.samples_ms == pytest.approx((5.0,) * 3)


# ----- count the work --------------------------------------------------------------------------------------------
SHAPE = get_preset("gpt2").shape


def _ops_figures(log_y: bool) -> list[go.Figure]:
    cached, uncached = ops.generation_totals(SHAPE, 16, 64)
    points = ops.curve(SHAPE, 16, 64, max_points=50)
    steps = list(ops.generation_steps(SHAPE, 16, 8))
    return [
        ops_figs.cumulative_figure(points, "total", False, log_y),
        ops_figs.ratio_figure(points),
        ops_figs.breakdown_figure(cached, uncached, False, log_y),
        ops_figs.per_step_figure([s.index for s in steps], [s.cached for s in steps], [s.uncached for s in steps]),
    ]


@pytest.mark.parametrize("log_y", [False, True])
def test_count_the_work_charts_draw_log_only_when_asked(log_y):
    figs = _ops_figures(log_y)
    for fig in figs:
        _assert_readable(fig)
    cumulative, _, breakdown, _ = figs
    for fig in (cumulative, breakdown):
        assert (fig.layout.yaxis.type == "log") == log_y  # the "Log scale" toggle, and nothing else
        assert ("log scale" in fig.layout.yaxis.title.text) == log_y


def test_breakdown_is_linear_by_default():
    cached, uncached = ops.generation_totals(SHAPE, 16, 64)
    assert ops_figs.breakdown_figure(cached, uncached).layout.yaxis.type in (None, "linear")


# ----- memory budget ---------------------------------------------------------------------------------------------
def test_memory_lines_stop_at_each_models_maximum_context():
    names = ["llama-3-8b", "llama-2-7b", "mistral-7b", "deepseek-v3"]
    presets = [get_preset(n) for n in names]
    horizon = max(p.max_context for p in presets)
    fig = mem_figs.size_vs_context_figure(
        [p.kv for p in presets], horizon, mark_context=4096, max_contexts=[p.max_context for p in presets]
    )
    _assert_readable(fig)
    lines = [t for t in fig.data if t.mode == "lines"]
    assert [max(t.x) for t in lines] == [p.max_context for p in presets]  # Llama-2-7B ends at 4,096, not 163,840
    llama2 = lines[1]
    assert max(llama2.customdata) < 2**31 + 1  # 2 GiB at its 4k context (never 80 GiB at 160k)
    mistral = lines[2]  # the windowed line plateaus at its window, clearly above zero
    assert min(mistral.y[1:]) > 0 and mistral.y[-1] == pytest.approx(max(mistral.y))
    assert fig.layout.xaxis.exponentformat == "none"  # "20,000", never "0.2x10^5"
    dots = [t for t in fig.data if t.mode == "markers"]
    assert [d.marker.color for d in dots] == [t.line.color for t in lines]  # each end dot in its line's colour
    assert [d.x[0] for d in dots] == [p.max_context for p in presets]
    marker = fig.layout.shapes[0]
    assert marker.line.color not in (None, "black", "#000000")  # visible on a dark theme too


def test_memory_line_without_a_known_maximum_runs_to_the_horizon():
    kv = get_preset("gpt2").kv
    fig = mem_figs.size_vs_context_figure([kv], 5000)
    assert max(fig.data[0].x) == 5000


def test_readable_raises_small_fonts_to_the_minimum():
    fig = readable(go.Figure(go.Scatter(x=[1, 2], y=[3, 4])), font_px=9)
    assert fig.layout.xaxis.tickfont.size == MIN_TICK_FONT_PX and fig.layout.yaxis.tickfont.size == MIN_TICK_FONT_PX


def test_log_ticks_are_few_full_numbers():
    narrow = log_ticks([5.2, 18.0])  # less than a decade: 1-2-5 ticks inside, not a lonely "10"
    assert narrow["tickvals"] == [5.0, 10.0, 20.0] and narrow["ticktext"] == ["5", "10", "20"]
    wide = log_ticks([0.03, 2e5])  # many decades: powers of ten only
    assert wide["tickvals"] == [10.0**k for k in range(-1, 6)] and "100,000" in wide["ticktext"]
    assert len(log_ticks([1.0, 1.2])["tickvals"]) == 2


# ----- cache internals: memory layout timing, quantized bytes ---------------------------------------------------
def _layout_bench(contiguous_ms, strided_ms):
    from kvviz.internals.layout import LayoutBench

    return LayoutBench(16, 4096, 64, 4096 * 64 * 4, Timing(contiguous_ms, 1.2), Timing(strided_ms, 1.2))


def test_layout_timing_chart_shows_the_spread_and_crowns_nobody_inside_the_noise():
    from kvviz.figures import internals as int_figs

    noisy = int_figs.layout_bench_figure(_layout_bench((0.09, 0.10, 0.13), (0.095, 0.11, 0.12)))
    _assert_readable(noisy)
    bar = noisy.data[0]
    assert list(bar.y) == pytest.approx([100.0, 110.0])  # medians, in µs
    assert bar.error_y.array is not None and bar.error_y.arrayminus is not None  # the middle half as a whisker
    assert list(bar.error_y.array) == pytest.approx([15.0, 5.0]) and list(bar.error_y.arrayminus) == pytest.approx(
        [5.0, 7.5]
    )
    assert "inside the noise" in noisy.layout.title.text and "x the" not in noisy.layout.title.text
    apart = int_figs.layout_bench_figure(_layout_bench((0.049, 0.05, 0.051), (0.099, 0.1, 0.101)))
    assert "strided 2.00x the contiguous time" in apart.layout.title.text


def _quant_reports():
    from kvviz.internals.records import LayerError, QuantReport

    layers = (LayerError(0, 0.01, 0.02, 0.1, 0.2),)
    fp32 = 2 * 12 * 24 * 64 * 4  # K+V, 12 layers, 1 head, 24 tokens, head_dim 64, float32: 147,456 B
    return [
        QuantReport("fp16", 64, 24, fp32, fp32 // 2, fp32 // 2, 0, layers),
        QuantReport("int8", 64, 24, fp32, fp32 // 4 + 4_608, fp32 // 4 + 4_608, 4_608, layers),
    ]


def test_quant_bytes_chart_reads_as_bytes_with_a_unit_not_si_k():
    """120,000 bytes is not plotly's "120k": the axis counts KiB with thousands separators, and the hover gives
    the exact bytes."""
    from kvviz.figures import internals as int_figs

    reports = _quant_reports()
    fig = int_figs.quant_bytes_figure(reports)
    _assert_readable(fig)
    y = fig.layout.yaxis
    assert y.exponentformat == "none" and y.separatethousands  # never "120k" (kilo what?)
    assert y.title.text.startswith("KiB") and "1,024 B" in y.title.text
    values, overhead = fig.data
    assert values.y[0] == pytest.approx(144.0)  # 147,456 B = 144 KiB
    assert list(values.customdata) == [147_456, 73_728, 36_864]  # exact bytes for the hover
    assert list(overhead.customdata) == [0, 0, 4_608] and "%{customdata:,} B" in overhead.hovertemplate


# A CSS opacity declaration in text kvviz writes (an HTML style, a stylesheet, a script): `opacity:0.6` in a style
# attribute, `opacity: 0.8` in a rule. Plotly's own opacity ("opacity": 0.35, opacity=0.2) is a chart's shape, not text.
_CSS_OPACITY = re.compile(r"\bopacity\s*:\s*[\d.]")  # a dict key has its quote before the colon


def test_muted_text_has_one_home_and_no_inline_opacity():
    """Muted text meets 4.5:1 only through the captions' one rule (kvviz/assets/web/readable.css: 80% of the text colour,
    the class a11y.MUTED); an opacity written inline (0.6: 3.88:1 on white) fails axe's color-contrast."""
    from support.repo import REPO

    found = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for path in [*(REPO / "kvviz").rglob("*"), *(REPO / "pages").rglob("*"), REPO / "app.py"]
        if path.suffix in (".py", ".css", ".js", ".html")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _CSS_OPACITY.search(line)
    ]
    assert len(found) == 1 and "kvviz-muted" in found[0] and "kvviz/assets/web/readable.css" in found[0], found


def test_the_token_strips_fold_is_muted_like_a_caption_in_both_languages():
    """'⋯ N earlier' (a long generation, the stage presenting: 16 chips) sits on the page's own background, not on a
    chip's: it takes a11y.MUTED, never a grey of its own (#777 is 4.48:1 on white, 4.22:1 on the dark theme)."""
    from kvviz import i18n
    from kvviz.step.strip import strip_html
    from kvviz.step.view import StripToken

    for lang in i18n.LANGUAGES:
        with i18n.language(lang):
            strip = strip_html([StripToken(i, "a", "prompt") for i in range(20)], max_tokens=16)
        (fold,) = [span for span in re.findall(r"<span[^>]*>[^<]*</span>", strip) if "⋯" in span]
        assert 'class="kvviz-muted"' in fold and "color:" not in fold, fold
