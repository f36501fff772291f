"""Charts for those who cannot see them: each chart's text alternative says the numbers the chart draws.

Every sentence is checked against the figure built from the same record, its numbers read off the figure's own
traces and shapes (a drift in either fails here), in English and in Chinese. The race's records come from the real
bundled model (a prefill, decode steps and a real race); the memory page's from the presets' configs. The verdict of
the race's clock is checked on injected timings too, one per branch, against the record's own rule.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from kvviz import i18n, memory
from kvviz.figures import BLUE, ORANGE
from kvviz.figures import memory as mem_figs
from kvviz.figures import step as step_figs
from kvviz.memory import capacity
from kvviz.memory.presets import get_preset
from kvviz.memory.units import format_bytes
from kvviz.step.records import RaceTiming

if TYPE_CHECKING:
    from kvviz.step.engine import StepEngine

LANGUAGES = [i18n.ENGLISH, i18n.CHINESE]
LONG_PROMPT = "ROMEO: " + "the king is dead and " * 8  # more rows than the stage draws: older rows are summarised


@pytest.fixture(scope="module")
def stepped(bundled) -> StepEngine:
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    engine.prefill(LONG_PROMPT)
    for _step in range(2):
        engine.step()
    return engine


def _heatmaps(fig) -> list:
    return [d for d in fig.data if d.type == "heatmap"]


# ----- the race: every layer's K rows, with and without the cache -----
@pytest.mark.model
@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_race_charts_text_says_the_rows_each_side_draws_and_computes(stepped, lang):
    snap = stepped.snapshot(0, 0, all_layers=True)
    assert snap.first_row > 0 and len(snap.new_rows) == 1
    with i18n.language(lang):
        for cached in (True, False):
            fig = step_figs.race_figure(snap, cached)
            said = step_figs.race_figure_text(snap, cached)
            maps = _heatmaps(fig)
            y = list(maps[0].y)
            layers, rows, head_dim, first, last = len(maps), len(y), len(maps[0].z[0]), y[0], y[-1]
            assert all(list(m.y) == y for m in maps)
            shapes = [s for s in fig.layout.shapes if s.xref == "x"]  # the first layer's panel; each is alike
            assert len(fig.layout.shapes) == layers * len(shapes)
            if lang == i18n.ENGLISH:
                assert (
                    f"K rows of K/V head {snap.kv_head} in each of the {layers} layers, {rows} rows of {head_dim} "
                    f"numbers, positions {first} to {last}."
                ) in said
                assert f"{first} older rows are not drawn." in said
            else:
                assert (
                    f"{layers} 层中每层 KV 头 H{snap.kv_head} 的 K 行，共 {rows} 行，每行 {head_dim} 个数，位置 {first} 到 {last}。"
                    in said
                )
                assert f"另有 {first} 个更早的行未画出。" in said
            if cached:  # one outlined row per panel: the row this step computes
                outlined = [int(s.y0 + 0.5) for s in shapes]
                assert said.startswith("Chart, with the cache" if lang == i18n.ENGLISH else "图（使用缓存）")
                assert (
                    f"computes {len(outlined)} row, position {outlined[0]} (outlined); the other "
                    f"{rows - len(outlined)} are read from the cache."
                    if lang == i18n.ENGLISH
                    else f"只计算 {len(outlined)} 行，即位置 {outlined[0]}（带描边）；其余 {rows - len(outlined)} 行从缓存中读取。"
                ) in said
            else:  # one red veil per panel over every drawn row
                (veil,) = shapes
                assert (veil.y0 + 0.5, veil.y1 - 0.5) == (first, last) and veil.fillcolor == step_figs.RECOMPUTED_COLOR
                assert (
                    "recomputes all of them (shaded red)" if lang == i18n.ENGLISH else "重新计算全部这些行（红色阴影）"
                ) in said


@pytest.mark.model
@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_prefills_race_chart_says_every_row_is_computed(bundled, lang):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    engine.prefill("ROMEO: What light")
    snap = engine.snapshot(0, 0, all_layers=True)
    with i18n.language(lang):
        fig = step_figs.race_figure(snap, True)
        said = step_figs.race_figure_text(snap, True)
    y = list(_heatmaps(fig)[0].y)
    outlined = sorted(int(s.y0 + 0.5) for s in fig.layout.shapes if s.xref == "x")
    assert outlined == y and snap.first_row == 0  # every drawn row outlined, none hidden
    assert (
        "the prefill computes all of them (outlined): nothing was cached before it."
        if lang == i18n.ENGLISH
        else "预填充都要计算全部这些行（带描边）：在它之前没有任何缓存。"
    ) in said
    assert "not drawn" not in said and "未画出" not in said


# ----- the race's clock: medians, middle halves, the 1-token floor, the verdict -----
def _clock_numbers(fig) -> dict[str, tuple[float, float | None, float | None]]:
    """{side: (median, 25th, 75th percentile)} as race_timing_figure draws them: bars with whiskers, the dashed
    line with its grey band (None, None: no whisker or band drawn)."""
    bar = fig.data[0]
    whiskers = bar.error_x.visible is not False
    out = {}
    for side, med, above, below in zip(
        ("uncached", "cached"), bar.x, bar.error_x.array, bar.error_x.arrayminus, strict=True
    ):
        out[side] = (med, med - below, med + above) if whiskers and above + below > 0 else (med, None, None)
    line = next(s for s in fig.layout.shapes if s.type == "line")
    band = [s for s in fig.layout.shapes if s.type == "rect"]
    out["fixed"] = (line.x0, band[0].x0, band[0].x1) if band else (line.x0, None, None)
    return out


def _said(numbers: tuple[float, float | None, float | None], lang: str) -> str:
    med, q1, q3 = numbers
    if lang == i18n.ENGLISH:
        return f"median {med:.1f} ms" + (f", middle half {q1:.1f} to {q3:.1f} ms" if q1 is not None else "")
    return f"中位数 {med:.1f} ms" + (f"，中间一半 {q1:.1f} 到 {q3:.1f} ms" if q1 is not None else "")


VERDICTS = {
    i18n.ENGLISH: ("inside the noise", "measured slower", "x faster", "One repeat a side: no spread."),
    i18n.CHINESE: ("差异在噪声范围内", "测得更慢", "倍。", "每侧只重复一次：没有波动范围。"),
}


def _check_clock(timing: RaceTiming, lang: str) -> str:
    with i18n.language(lang):
        fig = step_figs.race_timing_figure(timing.cached_ms, timing.uncached_ms, timing.fixed_ms)
        said = step_figs.race_timing_figure_text(timing)
    drawn = _clock_numbers(fig)
    sides = (
        (
            ("without the cache, ", "uncached"),
            ("with the cache, ", "cached"),
            ("nothing cached (the fixed cost every forward pays), ", "fixed"),
        )
        if lang == i18n.ENGLISH
        else (("不使用缓存，", "uncached"), ("使用缓存，", "cached"), ("固定开销），", "fixed"))
    )
    for before, side in sides:
        assert before + _said(drawn[side], lang) in said, (side, said)
    noise, slower, faster, single = VERDICTS[lang]
    assert (single in said) == timing.single_repeat
    if timing.inside_noise:  # the page's rule (RaceTiming: kvviz.measure.timing's overlap of the middle halves)
        assert noise in said and slower not in said and faster not in said
    elif not timing.cached_faster:
        assert slower in said and noise not in said
    else:
        ratio = drawn["uncached"][0] / drawn["cached"][0]  # the bars' medians
        assert (f"is {ratio:.1f}x faster." if lang == i18n.ENGLISH else f"是不使用时的 {ratio:.1f} 倍。") in said
    return said


@pytest.mark.model
@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_clocks_text_says_the_drawn_medians_spreads_and_the_pages_verdict_on_a_real_race(stepped, lang):
    timing = stepped.race()
    assert timing.repeats >= 1
    _check_clock(timing, lang)


NOISE = RaceTiming(
    seq_len=9, cached_ms=(2.0, 2.2, 2.6, 3.0), uncached_ms=(2.4, 2.8, 3.1, 3.3), fixed_ms=(1.8, 1.9, 2.0, 2.1)
)
FASTER = RaceTiming(
    seq_len=9, cached_ms=(2.0, 2.1, 2.2, 2.3), uncached_ms=(6.0, 6.4, 6.8, 7.2), fixed_ms=(1.5, 1.6, 1.7, 1.8)
)
SLOWER = RaceTiming(
    seq_len=9, cached_ms=(7.0, 7.1, 7.2, 7.3), uncached_ms=(3.0, 3.1, 3.2, 3.3), fixed_ms=(1.5, 1.5, 1.5, 1.5)
)  # a floor with no spread: no grey band, and none said
SINGLE = RaceTiming(seq_len=9, cached_ms=(2.0,), uncached_ms=(5.0,), fixed_ms=(1.5, 1.7))


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize(
    "timing, branch", [(NOISE, "noise"), (FASTER, "faster"), (SLOWER, "slower"), (SINGLE, "faster")]
)
def test_the_clocks_verdict_follows_the_races_own_rule(timing, branch, lang):
    assert branch == ("noise" if timing.inside_noise else "faster" if timing.cached_faster else "slower")
    said = _check_clock(timing, lang)
    if timing is SLOWER:
        assert (
            "middle half" not in said.split("forward pays)")[1]
            if lang == i18n.ENGLISH
            else "中间一半" not in said.split("固定开销）")[1]
        )


# ----- the memory page: size against context, bytes per layer, paged against flat -----
def _lines(fig) -> list:
    return [d for d in fig.data if d.mode == "lines"]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_size_chart_text_says_each_lines_ends_the_mark_and_where_it_crosses_the_dashed_line(lang):
    gemma, llama = get_preset("gemma-3-4b"), get_preset("llama-3-8b")
    custom = memory.KVConfig(12, 12, 4, 64, "fp16", window=512, name="your config")  # no maximum context: runs on
    configs, horizon, batch = [llama.kv, gemma.kv, custom], 131_072, 2
    drawn = {
        "mark_context": 4096,
        "budget_bytes": 3 * 2**30,
        "max_contexts": [llama.max_context, gemma.max_context, None],
    }
    with i18n.language(lang):
        fig = mem_figs.size_vs_context_figure(configs, horizon, batch, **drawn)
        said = mem_figs.size_vs_context_figure_text(configs, horizon, batch, **drawn)
    lines = _lines(fig)
    assert len(lines) == len(configs)
    unit = round(lines[0].customdata[-1] / lines[0].y[-1])  # bytes per unit of the y axis (2^k: exact)
    (dashed,) = [s for s in fig.layout.shapes if s.line.dash == "dash"]
    budget = round(dashed.y0 * unit)
    (dotted,) = [s for s in fig.layout.shapes if s.line.dash == "dot"]
    mark = int(dotted.x0)
    assert budget == drawn["budget_bytes"] and mark == drawn["mark_context"]
    en = lang == i18n.ENGLISH
    assert (
        f"batch {batch}, from 0 to {horizon:,} tokens." if en else f"批大小 {batch}，从 0 到 {horizon:,} 个 token。"
    ) in said
    assert (
        f"the memory left for the cache: {format_bytes(budget)}." if en else f"留给缓存的显存：{format_bytes(budget)}。"
    ) in said
    assert (f"A dotted line marks {mark:,} tokens." if en else f"点线标出 {mark:,} 个 token 处。") in said
    named = [said.index(f"{c.name} (" if en else f"{c.name}（") for c in configs]  # each line's own sentences
    for cfg, line, start in zip(configs, lines, named, strict=True):
        xs, exact = list(line.x), list(line.customdata)
        assert [round(y * unit) for y in line.y] == exact  # the drawn heights are the exact bytes
        ends = (
            f"{format_bytes(exact[0])} at {xs[0]:,} tokens, {format_bytes(exact[-1])} at {xs[-1]:,} tokens"
            if en
            else f"{xs[0]:,} 个 token 时为 {format_bytes(exact[0])}，{xs[-1]:,} 个 token 时为 {format_bytes(exact[-1])}"
        )
        own = said[start : min([n for n in named if n > start] or [len(said)])]
        assert ends in own, own
        at_mark = memory.kv_bytes(cfg, mark, batch)
        below = max(i for i, x in enumerate(xs) if x <= mark)
        assert exact[below] <= at_mark <= exact[below + 1]  # between the drawn points either side of the mark
        assert (
            f"At the marked {mark:,} tokens: {format_bytes(at_mark)}."
            if en
            else f"在标出的 {mark:,} 个 token 处：{format_bytes(at_mark)}。"
        ) in own
        over = [x for x, b in zip(xs, exact, strict=True) if b > budget]
        if not over:
            assert ("It stays under the dashed line." if en else "它始终在虚线之下。") in own
        else:
            n = int(
                re.search(
                    r"crosses the dashed line at ([\d,]+) tokens" if en else r"它在 ([\d,]+) 个 token 处越过虚线", own
                )
                .group(1)
                .replace(",", "")
            )
            last_under = max(x for x, b in zip(xs, exact, strict=True) if b <= budget)
            assert last_under < n <= over[0]  # between the drawn points either side of the crossing
            assert memory.kv_bytes(cfg, n - 1, batch) <= budget < memory.kv_bytes(cfg, n, batch)  # exactly there


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_per_layer_chart_text_groups_the_drawn_bars(lang):
    budget = memory.budget(get_preset("gemma-3-4b").kv, 4096, 2)
    with i18n.language(lang):
        fig = mem_figs.per_layer_figure(budget)
        said = mem_figs.per_layer_figure_text(budget)
    (bars,) = fig.data
    groups: dict[tuple, list[int]] = {}
    for layer, color, (tokens, n_bytes) in zip(bars.x, bars.marker.color, bars.customdata, strict=True):
        groups.setdefault((color, tokens, n_bytes), []).append(layer)
    assert len(groups) == 2 and {k[0] for k in groups} == {BLUE, ORANGE}
    sep, dash = (", ", "–") if lang == i18n.ENGLISH else ("、", "～")
    for (color, tokens, n_bytes), layers in groups.items():
        runs, start = [], layers[0]
        for a, b in zip(layers, layers[1:] + [None], strict=True):
            if b != a + 1:
                runs.append(f"{start}{dash}{a}" if a != start else f"{a}")
                start = b
        if lang == i18n.ENGLISH:
            kind = "Global" if color == BLUE else "Sliding-window"
            assert f"{kind} layers {sep.join(runs)}: {tokens:,} tokens, {format_bytes(n_bytes)} each." in said
        else:
            kind = "全局层" if color == BLUE else "滑动窗口层"
            assert f"{kind}（第 {sep.join(runs)} 层）：每层 {tokens:,} 个 token、{format_bytes(n_bytes)}。" in said
    total = format_bytes(sum(b for _t, b in bars.customdata))
    assert (f"All layers together: {total}." if lang == i18n.ENGLISH else f"所有层合计：{total}。") in said
    assert f"{len(bars.x)}" in said and f"{budget.context_len:,}" in said


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("context", [4000, 4001])  # blocks filled exactly; a last block with unused slots
def test_the_paged_chart_text_says_the_three_bars_and_the_waste(lang, context):
    view = capacity.paged_view(get_preset("llama-3-8b").kv, context, 3, 16, 8192)
    with i18n.language(lang):
        fig = mem_figs.paged_figure(view)
        said = mem_figs.paged_figure_text(view)
    unit = int(re.search(r"([\d,]{5,})", fig.layout.yaxis.title.text).group(1).replace(",", ""))  # "GiB (2^30 bytes)"
    used, paged, flat = (round(y * unit) for y in fig.data[0].y)
    assert (used, paged, flat) == (view.used_bytes, view.paged_bytes, view.flat_bytes)
    waste_slots = -context % view.block_tokens
    if lang == i18n.ENGLISH:
        assert f"Tokens actually held: {format_bytes(used)}." in said
        assert (
            f"Paged, in blocks of {view.block_tokens:,} tokens: {format_bytes(paged)}, {-(-context // 16):,} blocks "
            f"per sequence, the last one with {waste_slots:,} unused token slots; {format_bytes(paged - used)} "
            "more than held."
        ) in said
        assert (
            f"Flat, pre-allocated to the maximum length: {format_bytes(flat)}; {format_bytes(flat - used)} more" in said
        )
    else:
        assert f"实际保存的 token：{format_bytes(used)}。" in said
        assert (
            f"每块 {view.block_tokens:,} 个 token：{format_bytes(paged)}，每个序列 {-(-context // 16):,} 个块，最后一块有 "
            f"{waste_slots:,} 个未用的 token 槽位；比实际保存的多 {format_bytes(paged - used)}。"
        ) in said
        assert f"按最大长度预分配：{format_bytes(flat)}；比实际保存的多 {format_bytes(flat - used)}。" in said


# ----- the stage's next-token bars and the GQA view -----
@pytest.mark.model
@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_next_token_text_lists_the_bars_as_drawn(stepped, lang):
    snap = stepped.snapshot(0, 0)
    top = snap.top_k[:6]
    texts, probs = [t.text for t in top], [t.prob for t in top]
    with i18n.language(lang):
        fig = step_figs.next_token_bars(texts, probs, snap.next_token_text)
        said = step_figs.next_token_bars_text(texts, probs, snap.next_token_text)
    bar = fig.data[0]
    drawn = list(zip(bar.text, bar.x, strict=True))[
        ::-1
    ]  # the chart draws the most likely on top: its trace lists it last
    assert len(drawn) == len(top) == 6
    printed = re.findall(r"” (\d\.\d{3})", said)
    assert printed == [label for label, _x in drawn]  # the bars' own labels, in the chart's order
    assert all(abs(float(label) - x) < 1e-3 for label, x in drawn)
    chosen = snap.next_token_text.strip() or snap.next_token_text
    assert said.rstrip("。.").endswith(f"“{chosen}”")
    assert step_figs.next_token_bars_text([], [], "") == ""


@pytest.mark.model
@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_gqa_text_names_each_query_heads_largest_weight(bundled_gqa_engine, lang):
    snap = bundled_gqa_engine.snapshot(1, 1)
    with i18n.language(lang):
        fig = step_figs.group_figure(snap)
        said = step_figs.group_figure_text(snap)
    bars = [d for d in fig.data if d.type == "bar"]
    assert len(bars) == len(snap.group_heads) > 1
    found = [
        (int(h), float(w), int(p))
        for h, w, p in re.findall(r"(?:query head |查询头 H)(\d+)：?:? ?(\d\.\d\d) (?:on position|在位置) (\d+)", said)
    ]
    assert [h for h, _w, _p in found] == list(snap.group_heads)
    for (_head, weight, position), bar in zip(found, bars, strict=True):
        peak = max(range(len(bar.x)), key=lambda i: bar.x[i])
        assert position == bar.y[peak] and abs(weight - bar.x[peak]) < 0.006  # the drawn bar, rounded as printed
    heat = _heatmaps(fig)[0]
    assert f"{len(heat.y)} " in said and str(heat.y[0]) in said and str(heat.y[-1]) in said


@pytest.fixture(scope="module")
def bundled_gqa_engine() -> StepEngine:
    from kvviz.model import loaders, loading
    from kvviz.step.engine import StepEngine

    engine = StepEngine(loaders.load_bundled(name=loading.BUNDLED_GQA))
    engine.prefill("ROMEO: the king")
    for _step in range(3):
        engine.step()
    return engine


# ----- every other chart: kvviz.figures.describe reads the data off the traces -----
def test_describe_reads_bars_lines_and_heatmaps_off_the_figure():
    import numpy as np
    import plotly.graph_objects as go

    from kvviz.figures import MAX_DESCRIBED_TRACES, describe

    fig = go.Figure(
        [
            go.Bar(x=["fp16", "int8"], y=[2048, 1024], name="bytes"),
            go.Scatter(x=[1, 2, 3], y=[5.0, 9.5, 7.25], name="ms <b>per</b> token"),
            go.Heatmap(z=np.array([[0.0, 1.5], [-2.0, 3.0], [1.0, 1.0]]), name="K"),
        ]
    )
    fig.update_layout(title="Cache <br>bytes")
    said = describe(fig)
    assert said.startswith("Chart: Cache bytes.")
    assert "bytes: fp16 2,048; int8 1,024." in said
    assert "ms per token: 3 points, from 1 (5) to 3 (7.25); highest 9.5 at 2." in said
    assert "K: 3 x 2 cells, values from -2 to 3." in said
    with i18n.language(i18n.CHINESE):
        zh = describe(fig)
    assert zh.startswith("图：Cache bytes。") and "3 × 2 个格" in zh and "fp16 2,048；int8 1,024" in zh
    many = go.Figure([go.Scatter(x=[0, 1], y=[i, i + 1], name=f"s{i}") for i in range(MAX_DESCRIBED_TRACES + 3)])
    assert describe(many).endswith("3 more series not read out.")
    sideways = describe(go.Figure(go.Bar(y=["a", "b"], x=[0.25, 0.75], orientation="h")))
    assert "bars: a 0.25; b 0.75." in sideways  # a horizontal bar's labels are its y
    inferred = describe(go.Figure(go.Bar(y=["slow", "fast"], x=[3.5, 1.25])))  # plotly infers the orientation
    assert "bars: slow 3.5; fast 1.25." in inferred
    gaps = describe(go.Figure(go.Scatter(x=[1, 2, 3, 4], y=[1.0, None, float("nan"), 2.0], name="gaps")))
    assert "gaps: 2 points, from 1 (1) to 4 (2); highest 2 at 4." in gaps
    odd = describe(go.Figure([go.Heatmap(z=[["a", "b"], ["c", "d"]], name="words"), go.Heatmap(z=[[None, None]])]))
    assert "words (heat map)." in odd and "heat map (heat map)." in odd  # named, never a failure


@pytest.mark.app
def test_every_chart_on_the_cache_internals_and_count_the_work_pages_has_its_text():
    """a11y.chart draws the hidden text after each chart: as many texts as charts on each page (the stage, race and
    memory charts carry their own, tested above)."""
    from support.pages import open_page

    for page in ("pages/attention_ops.py", "pages/internals_paging.py", "pages/internals_window.py"):
        at = open_page(page, router=True)
        charts = at.get("plotly_chart")
        texts = [h.proto.body for h in at.get("html") if 'class="kvviz-sr-only"' in h.proto.body]
        assert charts and len(texts) == len(charts), page
        assert all("Chart" in t for t in texts), page
