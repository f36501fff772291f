"""The class poll's reveal: how the room voted on one question, round 1 beside round 2, the right choice marked.

Plain numbers in (the choices' labels, the votes per choice per round, the right choice's index), a plotly figure
out: figures never import the poll's store or the lesson (tests/test_layering.py). Drawn for the projector (font_px
22) and a phone (16); colours read on light and dark backgrounds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import plotly.graph_objects as go

from kvviz.i18n import _

RIGHT_COLOR, WRONG_COLOR, ROUND_1_COLOR = "#2b8a3e", "#c2410c", "#868e96"


def choice_letter(index: int) -> str:
    """A, B, C ...: how the projector and the phones name a choice aloud."""
    return chr(ord("A") + index)


def plain_label(label: str) -> str:
    """A choice's label as plain text, for a chart or a table cell (which draw no markdown): its code spans'
    backticks dropped ("Row 8: `en`" -> "Row 8: en")."""
    return re.sub(r"(`+)(.+?)\1", r"\2", label)


def poll_figure(labels: Sequence[str], rounds: Sequence[Sequence[int]], right: int, font_px: int = 16) -> go.Figure:
    """Horizontal bars, one row per choice ("A. 73.73 MB ✓"), one bar per round: the last round in colour (green for
    the right choice, orange for the others), an earlier round in grey beside it, so the shift reads at a glance."""
    rows = [
        f"{choice_letter(i)}. {plain_label(label)}" + (" ✓" if i == right else "") for i, label in enumerate(labels)
    ]
    fig = go.Figure()
    for number, counts in enumerate(rounds, start=1):
        last = number == len(rounds)
        colors = [(RIGHT_COLOR if i == right else WRONG_COLOR) if last else ROUND_1_COLOR for i in range(len(labels))]
        fig.add_trace(
            go.Bar(
                y=rows,
                x=list(counts),
                orientation="h",
                name=_("round {n}").format(n=number),
                marker_color=colors,
                text=[str(c) for c in counts],
                textposition="outside",
                cliponaxis=False,
                hovertemplate=_("%{y}: %{x} votes") + "<extra>" + _("round {n}").format(n=number) + "</extra>",
            )
        )
    most = max((max(c, default=0) for c in rounds), default=0)
    fig.update_layout(
        barmode="group",
        height=90 + 40 * len(labels) * len(rounds),
        font={"size": font_px},
        hoverlabel={"font_size": font_px},
        showlegend=len(rounds) > 1,
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "traceorder": "normal", "font": {"size": font_px}},
        margin={"l": 10, "r": 30, "t": 10 + (font_px + 16) * (len(rounds) > 1), "b": 10},
    )
    fig.update_yaxes(autorange="reversed", tickfont_size=font_px, automargin=True)
    fig.update_xaxes(
        title_text=_("votes"),
        range=[0, max(1, most) * 1.2],
        dtick=max(1, round(most / 5 + 0.49)),
        tickfont_size=font_px,
        title_font_size=font_px,
    )
    return fig
