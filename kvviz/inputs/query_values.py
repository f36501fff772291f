"""Text that becomes a number: a link's query parameters and a command line's values, checked at that boundary.

One validator per kind of value, each refusing with one short sentence that says what to change. Nothing is
silently taken as 0, clamped or echoed at length (a 1 MB value is shown cut to a few dozen characters), and no
text ever reaches `int()` or `float()` unchecked, so Python's own limits (4,300 digits, inf, nan) never surface:

    bounded_int("007", 0, 255)                 -> 7 (the one reader: every whole number kvviz takes goes through it)
    bounded_int("0" * 5000 + "1", 0, 255)      -> WholeNumberRefused("too_long"): at most MAX_NUMBER_CHARS characters
    whole_number("12", 0, 255, "steps")        -> 12
    whole_number("1e308", 0, 255, "steps")     -> QueryValueError("steps must be a whole number from 0 to 255 ...")
    finite_number("nan", 0.0, 1.0, "share")    -> QueryValueError(...)
    refused_link_numbers({"mem_layers": ["inf"]}, ["mem_layers"]) -> {"mem_layers": "Ignored `mem_layers=inf` ..."}

Pages whose widgets are bound to the URL (`bind="query-params"`) run `refused_link_numbers` on the link before
the widgets read it: Streamlit's number_input raises OverflowError on `inf` or `1e309` while it seeds itself
from the URL. UI-free and torch-free.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from numbers import Integral, Real

from kvviz.i18n import _
from kvviz.inputs import echo

SHOWN_CHARS = 40  # a refused value is quoted at most this long
LINK_NUMBER_LIMIT = 10**15  # no bound widget accepts more; larger text is refused before any widget parses it
MAX_NUMBER_CHARS = 64  # a whole number written longer than this (zero-padded) is refused before anything converts it
_WHOLE = re.compile(r"([+-]?)([0-9]+)")  # [0-9], not \d: '٣' and '３２' are digits to \d and to int()
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?")


class QueryValueError(ValueError):
    """A value given as text cannot be used; the message is one sentence saying what to give instead."""


def shown(text: object, max_chars: int = SHOWN_CHARS) -> str:
    """A value as a message quotes it: echo.one_line at SHOWN_CHARS."""
    return echo.one_line(text, max_chars)


class WholeNumberRefused(QueryValueError):
    """bounded_int's refusal, with what kind it is, so that each reader can word it (or clamp) its own way.

    kind: "not_whole" (not digits, a float, a bool), "too_long" (zero-padded past MAX_NUMBER_CHARS characters),
    "out_of_range" (number: the int it writes, or None when it has more digits than any bound; sign: -1 or 1).
    """

    def __init__(self, kind: str, *, number: int | None = None, sign: int = 1, digits: int = 0, chars: int = 0):
        super().__init__(kind)
        self.kind, self.number, self.sign, self.digits, self.chars = kind, number, sign, digits, chars


def bounded_int(value: object, lo: int, hi: int, *, text: bool = True, whole_floats: bool = False) -> int:
    """The one reader of a bounded whole number in kvviz (links, command lines, widgets, records): `value` as an int
    in [lo, hi], else WholeNumberRefused.

    Text (when text=True): ASCII digits with one optional sign and surrounding spaces, nothing else (no '٣', '３２',
    '1_6', '1e3'). The conversion is checked on what it converts: leading zeros are stripped first, a number with
    more significant digits than the bounds is refused before int() sees it, and text longer than
    MAX_NUMBER_CHARS is refused whole, so Python's 4,300-digit limit can never be reached.
    Python and numpy integers are taken (never bools); whole floats such as 3.0 only with whole_floats=True.
    """
    if isinstance(value, bool):
        raise WholeNumberRefused("not_whole")
    if isinstance(value, Integral):
        number = int(value)
    elif isinstance(value, Real) and not isinstance(value, Integral):
        if not (whole_floats and math.isfinite(value) and float(value).is_integer()):
            raise WholeNumberRefused("not_whole")
        number = int(value)
    elif text and isinstance(value, str):
        written = value.strip()
        match = _WHOLE.fullmatch(written)
        if match is None:
            raise WholeNumberRefused("not_whole")
        sign = -1 if match.group(1) == "-" else 1
        digits = match.group(2).lstrip("0") or "0"
        if len(digits) > max(len(str(abs(lo))), len(str(abs(hi)))):
            raise WholeNumberRefused("out_of_range", sign=sign, digits=len(digits), chars=len(written))
        if len(written) > MAX_NUMBER_CHARS:
            raise WholeNumberRefused("too_long", chars=len(written))
        number = sign * int(digits)
    else:
        raise WholeNumberRefused("not_whole")
    if not lo <= number <= hi:
        huge = number.bit_length() > 200  # never str() it: past 4,300 digits that raises; nobody reads 60 digits
        raise WholeNumberRefused(
            "out_of_range",
            number=None if huge else number,
            sign=-1 if number < 0 else 1,
            digits=int(number.bit_length() * 0.30103) + 1 if huge else len(str(abs(number))),
        )
    return number


def clamped_int(text: object, default: int, lo: int, hi: int) -> int:
    """bounded_int's reading, clamped: a number past a bound is that bound, anything else (words, '1.5', a
    zero-padded text longer than MAX_NUMBER_CHARS) is `default`. Never raises."""
    try:
        return bounded_int(text, lo, hi)
    except WholeNumberRefused as refused:
        if refused.kind != "out_of_range":
            return default
        return lo if refused.sign < 0 else hi


def whole_number(text: object, lo: int, hi: int, name: str, *, error: type[ValueError] = QueryValueError) -> int:
    """`text` (digits, an optional sign, surrounding spaces) as an int in [lo, hi], else `error` naming `name`:
    bounded_int's reading, refused in one sentence (5,000 digits are too large, never Python's limit)."""
    try:
        return bounded_int(text, lo, hi)
    except WholeNumberRefused as refused:
        if refused.kind == "too_long":
            message = _(
                "{name} must be a whole number from {lo:,} to {hi:,} written in at most {most} characters "
                "(got {chars:,})."
            ).format(name=_(name), lo=lo, hi=hi, most=MAX_NUMBER_CHARS, chars=refused.chars)
        elif refused.kind == "out_of_range" and refused.number is None:
            message = _("{name} must be from {lo:,} to {hi:,} (got a {digits:,}-digit number).").format(
                name=_(name), lo=lo, hi=hi, digits=refused.digits
            )
        elif refused.kind == "out_of_range":
            message = _("{name} must be from {lo:,} to {hi:,} (got {value}).").format(
                name=_(name), lo=lo, hi=hi, value=shown(refused.number)
            )
        else:
            message = _("{name} must be a whole number from {lo:,} to {hi:,} (got {value!r}).").format(
                name=_(name), lo=lo, hi=hi, value=shown(text)
            )
        raise error(message) from None


def finite_number(text: object, lo: float, hi: float, name: str, *, error: type[ValueError] = QueryValueError) -> float:
    """`text` (a decimal number such as 0.1, 1e-3) as a finite float in [lo, hi]; refuses nan, inf and 1e999."""
    if isinstance(text, bool):
        raise error(
            _("{name} must be a number from {lo:g} to {hi:g} (got {value!r}).").format(
                name=_(name), lo=lo, hi=hi, value=shown(text)
            )
        )
    if isinstance(text, (int, float)):
        value = float(text) if not isinstance(text, int) or abs(text) < 10**300 else math.inf
    else:
        raw = str(text).strip()
        if not raw.isascii() or len(raw) > 64 or not _DECIMAL.fullmatch(raw):
            raise error(
                _("{name} must be a number from {lo:g} to {hi:g} (got {value!r}).").format(
                    name=_(name), lo=lo, hi=hi, value=shown(text)
                )
            )
        value = float(raw)
    if not math.isfinite(value) or not lo <= value <= hi:
        raise error(
            _("{name} must be a finite number from {lo:g} to {hi:g} (got {value}).").format(
                name=_(name), lo=lo, hi=hi, value=shown(text)
            )
        )
    return value


def choice(text: object, choices: Sequence[str], name: str, *, error: type[ValueError] = QueryValueError) -> str:
    """`text` if it is one of `choices`, else `error` listing them (at most 12 shown)."""
    if isinstance(text, str) and text in choices:
        return text
    fields = dict(name=_(name), listed=", ".join(choices[:12]), more=len(choices) - 12, value=shown(text))
    if len(choices) > 12:
        raise error(_("{name} must be one of {listed} (and {more} more) (got {value!r}).").format(**fields))
    raise error(_("{name} must be one of {listed} (got {value!r}).").format(**fields))


def link_notice(key: str, raw: object, reason: str) -> str:
    """One line for a link value the page ignored: what was ignored and why."""
    return _("Ignored {setting} from the link: {reason}").format(
        setting=echo.code(f"{key}={shown(raw)}"), reason=echo.literal(reason, None)
    )


def refused_link_numbers(
    params: Mapping[str, Sequence[str] | str], keys: Iterable[str], limit: int = LINK_NUMBER_LIMIT
) -> dict[str, str]:
    """{key: notice} for each of `keys` in a link whose value is not a whole number within +-limit.

    Ranges narrower than that are the widgets' own (Streamlit resets an out-of-range link value to the default
    and kvviz.inputs.links reports it); this check stops only what must never reach a widget: inf, nan, 1e309,
    thousands of digits, words, and repeated values of a single-value parameter.
    """
    refused = {}
    for key in keys:
        if key not in params:
            continue
        values = params[key]
        values = [values] if isinstance(values, str) else list(values)
        if len(values) > 1:
            refused[key] = link_notice(key, ",".join(values), _("a number field takes one value."))
            continue
        if not values:
            continue
        text = str(values[0]).strip()
        try:
            bounded_int(text, -limit, limit)
        except WholeNumberRefused as refused_number:
            if refused_number.kind == "not_whole":
                refused[key] = link_notice(key, text, _("it is not a whole number written in digits."))
            elif refused_number.kind == "too_long":
                refused[key] = link_notice(
                    key,
                    text,
                    _("it is {chars:,} characters long; a number field takes at most {most}.").format(
                        chars=refused_number.chars, most=MAX_NUMBER_CHARS
                    ),
                )
            else:
                refused[key] = link_notice(
                    key, text, _("it is far larger than this field allows (at most {limit:,}).").format(limit=limit)
                )
    return refused


def cli_whole(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse `type=` for a whole number in [lo, hi]: argparse prints our one sentence, never a traceback."""

    def parse(text: str) -> int:
        return whole_number(text, lo, hi, "the value", error=argparse.ArgumentTypeError)

    return parse


def cli_number(lo: float, hi: float) -> Callable[[str], float]:
    """An argparse `type=` for a finite number in [lo, hi] (refuses nan, inf, 1e999)."""

    def parse(text: str) -> float:
        return finite_number(text, lo, hi, "the value", error=argparse.ArgumentTypeError)

    return parse
