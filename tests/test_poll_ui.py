"""The class poll's pieces that need no page run: which join links a phone cannot open, the QR code drawn here, and
the reveal's figure (the projector's round 1 beside round 2, the right choice marked)."""

from __future__ import annotations

import base64
import urllib.parse

import pytest

from kvviz.figures.poll import choice_letter, poll_figure
from kvviz.ui.poll import only_this_computer, qr_image


@pytest.mark.parametrize(
    "url, local",
    [
        ("http://127.0.0.1:8501/join?room=ABC234", True),
        ("http://localhost:8501/join", True),
        ("http://[::1]:8501/join", True),
        ("http://192.168.1.20:8500/join?room=ABC234", False),
        ("http://class-laptop.local:8500/join", False),
    ],
)
def test_a_join_link_on_this_computer_is_flagged(url, local):
    assert only_this_computer(url) is local


def test_the_qr_code_is_drawn_here_and_its_text_is_escaped():
    html = qr_image("http://192.168.1.20:8500/join?room=ABC234", 'join "<b>"')
    assert html.startswith('<img class="kvviz-poll-qr" src="data:image/svg+xml')  # no web service
    assert 'alt="join &quot;&lt;b&gt;&quot;"' in html
    svg = html.split('src="', 1)[1].split('"', 1)[0]
    payload = svg.split(",", 1)[1]
    decoded = base64.b64decode(payload).decode() if ";base64" in svg else urllib.parse.unquote(payload)
    assert "<svg" in decoded


def test_the_reveal_draws_each_round_and_marks_the_right_choice():
    fig = poll_figure(["20", "21", "22"], [(1, 2, 0), (0, 3, 0)], right=1, font_px=22)
    assert [list(t.x) for t in fig.data] == [[1, 2, 0], [0, 3, 0]]
    assert list(fig.data[0].y) == ["A. 20", "B. 21 ✓", "C. 22"] and choice_letter(2) == "C"
    assert fig.layout.showlegend and fig.layout.legend.font.size == 22
    assert fig.data[1].marker.color[1] != fig.data[1].marker.color[0]  # the right one coloured apart
