"""The stage's per-click figures are built as plain dicts and validated once (plotly's make_subplots and
update_* calls cost ~35 ms of server CPU a click). The oracle is plotly's own subplot API: the same stage picture
built with make_subplots and update_* must serialise to exactly the same JSON, so the fast build draws the same
figure (axis domains, anchors, titles, shapes, fonts, colour scales)."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from plotly.subplots import make_subplots

from kvviz.figures import step as figs
from kvviz.step import view as step_view

pytestmark = pytest.mark.model


def _by_plotly_api(snap: step_view.StageSnapshot, font_px: int, height_px: int) -> go.Figure:
    """stage_figure written with plotly's figure API (make_subplots and update_*, the slow way to the same figure)."""
    rows, head_dim = snap.keys.shape
    y = list(range(snap.first_row, snap.first_row + rows))
    fig = make_subplots(
        rows=1,
        cols=3,
        shared_yaxes=True,
        column_widths=list(figs.STAGE_WIDTHS),
        horizontal_spacing=figs.PANEL_GAP,
        subplot_titles=("K", "V", "attention"),
    )
    fig.update_layout(
        title={
            "text": f"layer {snap.layer} · kv head {snap.kv_head} · q head {snap.q_head}",
            "x": 0,
            "xref": "paper",
            "xanchor": "left",
            "y": 1,
            "yref": "container",
            "yanchor": "top",
            "pad": {"t": 6},
        }
    )
    for col, (name, data) in enumerate((("K", snap.keys), ("V", snap.values)), start=1):
        limit = float(np.abs(data).max()) or 1.0
        domain = fig.layout[f"xaxis{col if col > 1 else ''}"].domain
        fig.add_trace(
            go.Heatmap(
                z=data.astype(np.float32),
                x=list(range(head_dim)),
                y=y,
                colorscale=figs.HEATMAP_SCALE,
                zmin=-limit,
                zmax=limit,
                showscale=True,
                colorbar=figs._colorbar_under(domain, font_px),
                name=name,
                hovertemplate=f"{name}[position %{{y}}, dim %{{x}}] = %{{z:.3f}}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        for pos in snap.new_rows:
            fig.add_shape(
                type="rect",
                x0=-0.5,
                x1=head_dim - 0.5,
                y0=pos - 0.5,
                y1=pos + 0.5,
                line={"color": figs.NEW_ROW_COLOR, "width": 3},
                row=1,
                col=col,
            )
    colors = [figs.NEW_ROW_COLOR if p in snap.new_rows else figs.ATTENTION_COLOR for p in y]
    fig.add_trace(
        go.Bar(
            x=np.round(snap.attention, 4),
            y=y,
            orientation="h",
            marker_color=colors,
            hovertemplate="position %{y}: weight %{x:.3f}<extra></extra>",
            name="attention",
        ),
        row=1,
        col=3,
    )
    fig.update_xaxes(range=[0, max(float(snap.attention.max()) * 1.1, 0.05)], nticks=3, row=1, col=3)
    for col in (1, 2):
        fig.update_xaxes(title_text="head_dim", title_standoff=2, showticklabels=False, row=1, col=col)
    named = (snap.copy.target_pos,) if snap.copy is not None else ()
    fig.update_yaxes(autorange="reversed", **figs._row_ticks(snap.first_row, snap.row_labels, named), row=1, col=1)
    fig.update_layout(height=height_px, margin=figs._stage_margins(font_px), showlegend=False, bargap=0.1)
    fig.update_xaxes(tickfont_size=font_px, title_font_size=font_px)
    fig.update_yaxes(tickfont_size=font_px, title_font_size=font_px)
    fig.update_annotations(font_size=font_px)
    fig.update_layout(font={"size": font_px}, hoverlabel={"font_size": font_px}, title_font_size=font_px + 2)
    return fig


def test_the_stage_figure_is_plotlys_subplot_figure(bundled):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    engine.prefill("ROMEO: the king")
    for _ in range(3):
        engine.step()
    info = bundled.info
    for layer, head, font_px in ((0, 0, 14), (info.n_layer - 1, info.n_head - 1, 18)):
        snap = engine.snapshot(layer, head)
        fast = json.loads(pio.to_json(figs.stage_figure(snap, font_px, 330)))
        assert fast == json.loads(pio.to_json(_by_plotly_api(snap, font_px, 330)))
        assert fast["layout"]["shapes"] and fast["layout"]["annotations"][0]["font"]["size"] == font_px


@pytest.fixture(scope="module")
def bundled_gqa():
    from kvviz.model import loaders, loading

    return loaders.load_bundled(name=loading.BUNDLED_GQA)


def test_every_per_click_figure_is_a_valid_plotly_figure(bundled_gqa):
    """The per-click figures skip plotly's validation when built (figs._prebuilt): here each spec goes through
    it. Validation raises on a property plotly does not know and coerces a value it would change; the JSON a
    validating build sends must equal the JSON the page sends (Streamlit serialises the figure unvalidated)."""
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled_gqa)
    engine.prefill("ROMEO: the king")
    for _ in range(3):
        engine.step()
    snap = engine.snapshot(1, 1, all_layers=True)
    built = {
        "stage": figs.stage_figure(snap, 18, 330),
        "gqa": figs.group_figure(snap, 14, 360),
        "race cached": figs.race_figure(snap, True, 14),
        "race uncached": figs.race_figure(snap, False, 14),
        "bars": figs.next_token_bars(
            [t.text for t in snap.top_k[:6]], [t.prob for t in snap.top_k[:6]], snap.next_token_text, 14, 200
        ),
    }
    for name, fig in built.items():
        sent = json.loads(pio.to_json(fig, validate=False))
        assert sent == json.loads(pio.to_json(go.Figure(fig.to_dict()), validate=True)), name
        assert sent["data"], name
    try:  # the check has teeth: a misspelt property is refused by the validating build
        go.Figure({"data": [{"type": "bar", "colour": "red"}]})
    except ValueError:
        pass
    else:
        raise AssertionError("plotly accepted an unknown property")
