"""The token strip as HTML: the prompt, the generated tokens (the newest marked) and the pending token as chips
over their cache positions, with a colour key. Torch-free and UI-free: the stage draws it with st.markdown, and the
classroom load test reads it back (bench/classroom_ws.py)."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from kvviz.i18n import N_, _
from kvviz.step.view import StripToken, visible

# ----- the token strip as HTML (explicit dark text on light chips: readable in light AND dark themes) -------
_ROLE_STYLE = {
    "prompt": "background:#cfe2f6;border:1px solid #6fa8dc;color:#0b1f33",
    "generated": "background:#cdeccd;border:1px solid #6bbf6b;color:#0b2a0b",
    "newest": "background:#ffd699;border:2px solid #e8590c;color:#331600;font-weight:bold",
    "pending": "background:#fff4e6;border:2px dashed #e8590c;color:#8a3300;font-weight:bold",
}
_ROLE_TITLE = {  # translated where drawn (the language is per session)
    "prompt": N_("prompt (cached)"),
    "generated": N_("generated (cached)"),
    "newest": N_("just fed: its K/V row was appended"),
    "pending": N_("chosen, NOT cached yet"),
}


_BYTES_TOKEN = re.compile(r"<([0-9A-F]{2}(?: [0-9A-F]{2})*)>")  # engine.token_text's form for a partial character


def byte_characters(texts: Sequence[str]) -> list[str]:
    """For each token text, the character(s) it completes: a byte-level tokenizer splits a character it never
    saw whole (Chinese, emoji) into byte tokens, shown as hex (<E4>, <BD>, <A0>); the token whose byte completes
    a UTF-8 character gets that character ("你"), the others "" (a run of bytes decoded in order)."""
    out, pending = [], b""
    for text in texts:
        match = _BYTES_TOKEN.fullmatch(text)
        if not match:
            out.append("")
            pending = b""
            continue
        pending += bytes.fromhex(match.group(1))
        while pending and (0x80 <= pending[0] <= 0xBF or pending[0] >= 0xF8):  # no character starts with it
            pending = pending[1:]
        done = ""
        for cut in range(len(pending), 0, -1):  # the longest prefix that decodes whole
            try:
                done = pending[:cut].decode("utf-8")
            except UnicodeDecodeError:
                continue
            pending = pending[cut:]
            break
        else:
            if len(pending) >= 4:  # no UTF-8 character is longer: these bytes make none
                pending = b""
        out.append(done)
    return out


def strip_html(
    strip: Sequence[StripToken], max_tokens: int = 36, font_rem: float = 1.0, legend: bool = True, note: str = ""
) -> str:
    """The token strip as HTML: the last max_tokens tokens as chips (text escaped, whitespace visible).
    `note`: a short remark drawn after the colour key, on its line (only with the legend).

    Each chip carries data-pos (its cache position, or "next" for the pending token) so browser tests and
    the classroom load test can read the strip; the container has the class kvviz-strip.
    """
    hidden = max(0, len(strip) - max_tokens)
    chip = (
        f"border-radius:4px;padding:1px 4px;margin:1px;display:inline-block;font-family:monospace;"
        f"font-size:{font_rem}rem"
    )
    spans = []
    if hidden:
        earlier = html.escape(_("⋯ {n} earlier").format(n=hidden))
        # on the page's own background, so muted as every caption is (#777 was 4.48:1 on white, 4.22:1 dark)
        spans.append(f'<span class="kvviz-muted" style="{chip};border:1px dotted #999">{earlier}</span>')
    characters = byte_characters([t.text for t in strip])
    for t, character in zip(strip[hidden:], characters[hidden:], strict=True):
        shown = html.escape(visible(t.text)) or "&nbsp;"
        where = "next" if t.position is None else str(t.position)
        title = html.escape(_(_ROLE_TITLE[t.role]))
        if _BYTES_TOKEN.fullmatch(t.text):  # part of a character: say so, and name it where it completes
            title += html.escape(
                " · "
                + (
                    _("its byte completes the UTF-8 character {char}").format(char=character)
                    if character
                    else _("part of a UTF-8 character (a byte-level token)")
                )
            )
            if character:
                shown += f'<b style="font-family:sans-serif">→{html.escape(visible(character))}</b>'
        label = html.escape(_("next")) if t.position is None else where  # data-pos stays "next" (tests read it)
        spans.append(
            f'<span data-pos="{where}" title="{label}: {title}" '
            f'style="{_ROLE_STYLE[t.role]};{chip}">'
            f'<sub style="color:#555;font-size:0.7em">{label}</sub>{shown}</span>'
        )
    key = " ".join(
        f'<span style="{_ROLE_STYLE[r]};border-radius:4px;padding:0 4px;font-size:{0.8 * font_rem}rem">'
        f"{html.escape(_(_ROLE_TITLE[r]))}</span>"
        for r in ("prompt", "generated", "newest", "pending")
    )
    if note:
        # muted as every caption is: the class kvviz.ui.a11y.MUTED (readable.css styles it), never an opacity of its own
        key += f' <span class="kvviz-muted" style="font-size:{0.8 * font_rem}rem">{html.escape(note)}</span>'
    return f'<div class="kvviz-strip" style="line-height:1.9">{"".join(spans)}</div>' + (
        f'<div class="kvviz-strip-key" style="margin-top:2px">{key}</div>' if legend else ""
    )
