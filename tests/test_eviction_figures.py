"""The eviction lab's figures on a projector (pure: hand-made records, no model): the grid's token axis shows
positions and readable tokens, the quantized formats' labels never share a place, an outlier loss is drawn above
a clipped axis with its value, the loss points sit where the loss was measured; and each policy's cached line is
keyed on the settings it reads."""

from __future__ import annotations

import json

import pytest

from kvviz.figures import MIN_TICK_FONT_PX
from kvviz.figures import eviction as fig
from kvviz.internals.eviction import EVICT_KEEP_PERCENTS, EvictSettings, rows_for_budget
from kvviz.internals.records import EvictionGrid, EvictionPoint, EvictionSweep, LayerKept

FULL_BYTES = 262_144


def _point(
    policy: str, keep: int, loss_change: float, kind: str = "eviction", bytes_kept: int | None = None, right: int = 300
) -> EvictionPoint:
    rows = rows_for_budget(keep, 64)
    kept = bytes_kept if bytes_kept is not None else FULL_BYTES * rows // 64
    spans = [right // 8 + (1 if i < right % 8 else 0) for i in range(8)]  # 8 spans of 63 predictions
    spans = [max(0, min(63, h + d)) for h, d in zip(spans, (2, -2, 1, -1, 0, 0, 3, -3), strict=True)]
    spans[0] += right - sum(spans)
    passages = tuple(loss_change + d for d in (0.02, -0.02, 0.01, -0.01))  # 4 passages, their mean the change
    return EvictionPoint(
        policy, kind, keep, rows, 64, kept, FULL_BYTES, right, 504, 3.0 + loss_change, 3.0, tuple(spans), passages
    )


def _sweep() -> EvictionSweep:
    points = [_point("full", 100, 0.0, right=480)]
    for n, policy in enumerate(("random", "recent", "streaming", "h2o")):
        for keep in EVICT_KEEP_PERCENTS:
            # the recent window at 5% loses the whole context: the 4.7-nat outlier of the audit
            change = 4.7 if (policy, keep) == ("recent", 5) else 0.01 * n + (100 - keep) / 400
            points.append(_point(policy, keep, change, right=100 + 3 * keep))
    # fp8, fp8-hf and int8 sit near 25% and 28% of the bytes: their labels must not share a place
    for scheme, share in (
        ("fp16", 0.5),
        ("fp8", 0.25),
        ("fp8-hf", 0.25),
        ("int8", 0.28),
        ("int4", 0.16),
        ("int2", 0.09),
    ):
        points.append(_point(scheme, 100, 0.001, "quantized", int(FULL_BYTES * share), right=470))
    return EvictionSweep("test model", EvictSettings(), tuple(points), 32, 2000)


def _layout_json(figure) -> dict:
    return json.loads(figure.to_json())["layout"]


def test_quantized_labels_never_share_a_place_and_full_cache_sits_in_the_margin():
    for metric in ("copy", "loss"):
        layout = _layout_json(fig.quality_figure(_sweep(), ["random", "recent", "streaming", "h2o"], metric))
        notes = layout["annotations"]
        quant = [a for a in notes if a["text"] in ("fp16", "fp8", "fp8 (transformers)", "int8", "int4", "int2")]
        assert len(quant) == 6
        for i, a in enumerate(quant):  # near in x means apart in height
            for b in quant[i + 1 :]:
                if abs(a["x"] - b["x"]) < fig.LABEL_GAP_PCT:
                    assert a["ay"] != b["ay"], (a["text"], b["text"])
        full = next(a for a in notes if a["text"] == "full cache")
        assert full["xref"] == "paper" and full["x"] == 1 and full["xanchor"] == "left"  # right of the plot


def test_an_outlier_loss_sits_above_a_clipped_axis_with_its_value():
    layout = _layout_json(fig.quality_figure(_sweep(), ["random", "recent", "streaming", "h2o"], "loss"))
    top = layout["yaxis"]["range"][1]
    assert top < 1.0  # the other lines keep the height: the axis stops well below 4.7
    marks = [a["text"] for a in layout["annotations"] if a["text"].startswith("▲ +")]
    assert marks == ["▲ +4.70"]
    # what ▲ means sits under the title, not on the plot's top edge where the legend is
    assert layout["title"]["subtitle"]["text"] == "▲ above the axis, with its value"
    assert not [a for a in layout["annotations"] if "above the axis" in a["text"]]
    assert layout["margin"]["t"] > 90
    # an off-axis quantized format is marked too, with its name and its value
    from dataclasses import replace

    base = _sweep()
    points = tuple(
        replace(p, loss_nats=3.0 + 3.5, loss_change_per_passage=(3.5,) * 4) if p.policy == "int2" else p
        for p in base.points
    )
    layout = _layout_json(fig.quality_figure(replace(base, points=points), ["random", "streaming"], "loss"))
    marks = [a["text"] for a in layout["annotations"] if a["text"].startswith("▲")]
    assert marks == ["▲ int2 +3.50"]
    assert not [a for a in layout["annotations"] if a["text"] == "int2"]  # no label at a place off the axis
    # without the outlier's line drawn, nothing is clipped
    layout = _layout_json(fig.quality_figure(_sweep(), ["random", "streaming"], "loss"))
    assert not [a for a in layout["annotations"] if a["text"].startswith("▲")]


def test_loss_points_sit_at_the_share_of_the_context_kept():
    figure = fig.quality_figure(_sweep(), ["streaming"], "loss")
    xs = list(figure.data[0].x)
    assert 35.0 in xs and 34.375 not in xs  # 56 of 160 context rows at 35%, not the span's 22 of 64
    copy_xs = list(fig.quality_figure(_sweep(), ["streaming"], "copy").data[0].x)
    assert 34.375 in copy_xs


def _with_duoattention() -> EvictionSweep:
    """_sweep() and a DuoAttention line holding fewer bytes than its budgets (whole retrieval heads): at 50%, 45.3%
    of the span's bytes and 40.6% of the loss context's, with the best copying of the 50% points."""
    from dataclasses import replace

    base = _sweep()
    duo = []
    for keep in EVICT_KEEP_PERCENTS:
        p = _point("duoattention", keep, 0.001, bytes_kept=int(FULL_BYTES * 0.906 * keep / 100), right=480)
        duo.append(replace(p, loss_bytes_fraction=0.812 * keep / 100))
    return replace(base, points=base.points + tuple(duo))


def test_duoattention_sits_at_the_bytes_it_holds_on_both_charts():
    sweep = _with_duoattention()
    copy_xs = list(fig.quality_figure(sweep, ["duoattention"], "copy").data[0].x)
    loss_xs = list(fig.quality_figure(sweep, ["duoattention"], "loss").data[0].x)
    assert 50.0 not in copy_xs and 50.0 not in loss_xs
    assert any(abs(x - 45.3) < 1e-3 for x in copy_xs) and any(abs(x - 40.6) < 1e-9 for x in loss_xs)


def test_takeaways_name_the_bytes_a_policy_below_its_budget_holds():
    from kvviz.internals.eviction_takeaways import eviction_takeaways

    lines = [line.english for line in eviction_takeaways(_with_duoattention())]
    at50 = next(line for line in lines if line.startswith("At 50%"))
    assert at50.startswith("At 50%: best copying DuoAttention (holding only 45.3% of the bytes) 95%")
    assert "StreamingLLM (holding" not in " ".join(lines)  # a policy at its budget's bytes is named plainly


@pytest.mark.parametrize(("n_tokens", "stride"), [(16, 1), (32, 1), (64, 2), (100, 4)])
def test_grid_axis_shows_positions_and_visible_tokens_at_projector_size(n_tokens, stride):
    tokens = tuple(["\n", " the", "cat", "\t"] * (n_tokens // 4))
    grid = EvictionGrid(
        "streaming", 25, tokens, 4, (LayerKept(0, (tuple(i % 2 == 0 for i in range(len(tokens))),), 1, 10, 40),)
    )
    layout = _layout_json(fig.grid_figure(grid))
    axis = layout["xaxis"]
    assert axis["tickfont"]["size"] >= MIN_TICK_FONT_PX
    assert fig.grid_tick_stride(len(tokens)) == stride
    assert axis["tickvals"] == list(range(0, len(tokens), stride))
    shown = ["↵", "·the", "cat", "⇥"]  # a newline, a space, a tab made visible
    assert axis["ticktext"][:2] == ["0 ↵", f"{stride} {shown[stride % 4]}"]
    assert not any("\\n" in t or "\n" in t for t in axis["ticktext"])
    assert (str(stride) in axis["title"]["text"]) == (stride > 1)  # a stride is stated


def test_each_policy_line_is_keyed_on_the_settings_it_reads():
    a, b = EvictSettings(sink_tokens=4), EvictSettings(sink_tokens=16, snap_window=4, seed=3)
    for policy in ("h2o", "tova", "recent", "key_norm", "h2o_heavy", "quantized"):
        assert a.for_policy(policy) == b.for_policy(policy)  # a new S (window, seed) reuses these lines
    assert a.for_policy("streaming") != b.for_policy("streaming")
    assert a.for_policy("snapkv") != b.for_policy("snapkv") and a.for_policy("random") != b.for_policy("random")
    assert b.for_policy("streaming").sink_tokens == 16 and b.for_policy("streaming").snap_window == 8


def test_a_new_s_re_measures_duoattention_with_streaming_and_not_keydiff_or_kvzip():
    """DuoAttention's streaming heads keep S sinks: its line is keyed on S; KeyDiff and KVzip read no setting."""
    a, b = EvictSettings(sink_tokens=4), EvictSettings(sink_tokens=16, snap_window=4, seed=3)
    assert a.for_policy("duoattention") != b.for_policy("duoattention")
    assert b.for_policy("duoattention").sink_tokens == 16 and b.for_policy("duoattention").snap_window == 8
    for policy in ("keydiff", "kvzip"):
        assert a.for_policy(policy) == b.for_policy(policy)
