"""A number box for a bounded setting (kvviz.inputs.prompt_rules.IntSetting): its bounds from the setting, and
every value a browser sends checked by the setting's own rule before the page uses it.

Why value=None: Streamlit (1.67) turns a value past a number_input's min/max, sent over the WebSocket or by
AppTest, into the widget's `value` without a word (NumberInputSerde.deserialize). With the widget's `value` set to
None, that silent reset arrives as None, which no valid setting is; the session holds the real first value
(seeded before the widget is drawn). So a refused value is seen, named in one message, and replaced by the
setting's default before the widget is drawn, and the page goes on with the default: nothing runs with the
refused value, and the reader is told. A value a future Streamlit passes through unchanged is refused by the
same check.
"""
from __future__ import annotations

import streamlit as st

from kvviz.i18n import _
from kvviz.inputs.prompt_rules import IntSetting


def refusal(setting: IntSetting, key: str) -> str | None:
    """Before the widget: the session's value for `key` through the setting's rule. A refused one (None: an
    empty box or a value past the bounds; or a value set in the session) becomes the default, and the message
    says so. A key the session does not hold yet is seeded with the default."""
    if key not in st.session_state:
        st.session_state[key] = setting.default
        return None
    try:
        setting.check(st.session_state[key])
    except ValueError as exc:
        st.session_state[key] = setting.default  # before the widget is drawn: allowed, and the box shows it
        return _message(setting, exc)
    return None


def _message(setting: IntSetting, refused: ValueError) -> str:
    return _("{error}. Using {default:,} until it is changed.").format(error=str(refused).rstrip("."),
                                                                      default=setting.default)


def number(place, setting: IntSetting, label: str, *, key: str, notices=None, **widget) -> int:
    """place.number_input for `setting` (min, max, step from it), its value checked; a refused value gets one
    message in `notices` (default: `place`, above the box) and the page goes on with the default.

    widget: number_input's other arguments (help, bind, disabled...)."""
    message = refusal(setting, key)
    if message:
        (notices or place).error(message)
    value = place.number_input(label, min_value=setting.lo, max_value=setting.hi, value=None, step=setting.step,
                               key=key, **widget)
    try:
        return setting.check(value)
    except ValueError as exc:  # e.g. a history entry's bad link value, reset after refusal() ran
        (notices or place).error(_message(setting, exc))
        return setting.default
