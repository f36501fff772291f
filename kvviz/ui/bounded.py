"""A number box for a bounded setting (kvviz.inputs.prompt_rules.IntSetting): its bounds from the setting, and
every value a browser sends checked by the setting's own rule before the page uses it.

Why value=None: Streamlit (1.67) turns a value past a number_input's min/max, sent over the WebSocket or by
AppTest, into the widget's `value` without a word (NumberInputSerde.deserialize). With the widget's `value` set to
None, that silent reset arrives as None, which no valid setting is; the session holds the real first value
(seeded before the widget is drawn). So a refused value is seen, named in one message, and replaced by the
setting's default before the widget is drawn, and the page goes on with the default: nothing runs with the
refused value, and the reader is told. A value a future Streamlit passes through unchanged is refused by the
same check.

A box bound to the URL (bind="query-params") keeps its `value` (Streamlit leaves a value equal to it out of the
link), and a slider cannot have value=None; for those, `sent_refusal` reads the value as the browser sent it,
before Streamlit resets it, and checks that (the page then goes on with the widget's own default, as Streamlit
hands it). No public Streamlit API holds that value: kvviz.ui.router.sent_value reads it, in the one module that
reads a private Streamlit name (its docstring says why).

Infinity and NaN sent for a whole-number box make Streamlit's own int() raise (OverflowError, ValueError) when the
value is read, and the session stays wedged until a reload. Every path here reads the sent value first
(sent_value), names it like any other refused value, and sets the widget's session value to the default before
anything reads the widget, so Streamlit never converts it and the next valid value is taken.
"""

from __future__ import annotations

import math

import streamlit as st

from kvviz.i18n import _, list_sep
from kvviz.inputs.prompt_rules import FloatSetting, IntSetting
from kvviz.ui.router import NOT_SENT, sent_value

Setting = IntSetting | FloatSetting


def refusal(setting: Setting, key: str) -> str | None:
    """Before the widget: the session's value for `key` through the setting's rule. A refused one (None: an
    empty box or a value past the bounds; or a value set in the session) becomes the default, and the message
    says so. A key the session does not hold yet is seeded with the default."""
    if key not in st.session_state:
        st.session_state[key] = setting.default
        return None
    if _not_finite(key):  # Infinity or NaN: Streamlit's int() would raise on reading it
        sent = sent_value(key)
        st.session_state[key] = setting.default
        return _refused(_not_finite_error(setting, sent), setting.default)
    try:
        setting.check(st.session_state[key])
    except ValueError as exc:
        st.session_state[key] = setting.default  # before the widget is drawn: allowed, and the box shows it
        return _message(setting, exc)
    return None


def _message(setting: Setting, refused: ValueError) -> str:
    return _refused(str(refused), setting.default)


def number(
    place, setting: Setting, label: str, *, key: str, notices=None, refused: list[str] | None = None, **widget
) -> int | float:
    """place.number_input for `setting` (min, max, step from it), its value checked; a refused value gets one
    message in `notices` (default: `place`, above the box) and the page goes on with the default.

    refused: a list the message is also added to, for a page that must not start work on a refused value (a
    form's button). widget: number_input's other arguments (help, bind, disabled...)."""
    message = refusal(setting, key)
    if message:
        (notices or place).error(message)
    value = place.number_input(
        label, min_value=setting.lo, max_value=setting.hi, value=None, step=setting.step, key=key, **widget
    )
    try:
        checked = setting.check(value)
    except ValueError as exc:  # e.g. a history entry's bad link value, reset after refusal() ran
        message = _message(setting, exc)
        (notices or place).error(message)
        checked = setting.default
    if message and refused is not None:
        refused.append(message)
    return checked


def _not_finite(key: str) -> bool:
    """The browser sent Infinity or NaN for `key` this run (a list: any of its values)."""
    sent = sent_value(key)
    return any(isinstance(v, float) and not math.isfinite(v) for v in (sent if isinstance(sent, list) else [sent]))


def _not_finite_error(setting: Setting, sent) -> str:
    try:
        for value in sent if isinstance(sent, list) else [sent]:
            setting.check(value)
    except ValueError as exc:
        return str(exc)
    return str(sent)


def sent_refusal(setting: Setting, key: str, default=None, *, empty_ok: bool = False) -> str | None:
    """Before a URL-bound box or a slider of `setting` is drawn: the message for a value the browser sent past the
    setting's rule (default: what the page goes on with, the widget's `value`, if not the setting's own).
    empty_ok: an empty box (None) is a choice (automatic), not a refusal."""
    sent = sent_value(key)
    if sent is NOT_SENT or (sent is None and empty_ok):
        return None
    for value in sent if isinstance(sent, list | tuple) else [sent]:  # a slider sends a list
        try:
            setting.check(value)  # whole floats pass an IntSetting (a slider sends floats)
        except ValueError as exc:
            return _refused(str(exc), setting.default if default is None else default)
    return None


def sent_option_refusal(key: str, name: str, labels: list[str], default) -> str | None:
    """Before a select_slider is drawn: the message for an option label the browser sent that is not one of
    `labels` (Streamlit would use the default without a word). name: English, marked N_()."""
    sent = sent_value(key)
    if sent is NOT_SENT or all(label in labels for label in sent):
        return None
    return _refused(_("{name} must be one of {options}").format(name=_(name), options=list_sep().join(labels)), default)


def _refused(error: str, default) -> str:
    shown = f"{default:,}" if isinstance(default, int) and not isinstance(default, bool) else str(default)
    return _("{error}. Using {default} until it is changed.").format(error=error.rstrip("."), default=shown)


def answer_refusal(key: str, given: float | None) -> str | None:
    """A free answer box (min 0, no max: the lesson's): the sentence for a value it cannot take, as the browser sent
    it (Streamlit hands the page None for Infinity and NaN, which a page would read as an empty box): not a
    number, too large (Infinity: 1e999 or hundreds of digits typed), or negative. None when the value is usable or
    the box was really empty."""
    sent = sent_value(key)
    if isinstance(sent, float) and math.isnan(sent):
        return _("That answer is not a number: type it in digits, e.g. 4096.")
    if isinstance(sent, float) and math.isinf(sent):
        return (
            _("That answer is too large for this box: type it in digits, or with a unit.")
            if sent > 0
            else _("An answer here cannot be negative.")
        )
    if given is not None and given < 0:
        return _("An answer here cannot be negative (got {value:g}).").format(value=given)
    return None


EMPTY = object()  # guard(default=EMPTY): a box whose empty value is valid (an automatic choice)


def guard(
    place,
    setting: Setting,
    key: str,
    *,
    default=None,
    notices=None,
    refused: list[str] | None = None,
    reset: bool = True,
    shown: str | None = None,
) -> str | None:
    """Before a slider, a URL-bound box or a box that may be empty is drawn: a value the browser sent past
    `setting` is named in `notices` (default: `place`) and the widget is set to `default` (the setting's, unless
    given: a preset's value, or EMPTY for an empty box), which the page then goes on with. reset=False: the
    widget's own `value` is `default`, to which Streamlit resets it anyway. shown: how the message names the
    value used instead (for EMPTY, e.g. "auto (4)"). Returns the message."""
    default = setting.default if default is None else default
    message = sent_refusal(setting, key, default=shown or default, empty_ok=default is EMPTY)
    if message:
        if reset or _not_finite(key):  # Infinity / NaN: reset always, or Streamlit's int() raises on the widget
            st.session_state[key] = None if default is EMPTY else default  # before the widget: it shows this
        (notices or place).error(message)
        if refused is not None:
            refused.append(message)
    return message


def linked_number(place, setting: IntSetting, label: str, *, key: str, value: int, notices=None, **widget) -> int:
    """A whole-number box for `setting` that keeps its first `value` (a preset's, or the setting's default): for a
    box bound to the URL (the caller passes bind="query-params"), which leaves a value equal to it out of the link.
    Min, max and step from the setting; a value the browser sent past the bounds is named in `notices` (default:
    `place`), and the page goes on with `value`, as Streamlit would reset it."""
    guard(place, setting, key, default=value, notices=notices, reset=False)
    return int(
        place.number_input(
            label, min_value=setting.lo, max_value=setting.hi, value=value, step=setting.step, key=key, **widget
        )
    )
