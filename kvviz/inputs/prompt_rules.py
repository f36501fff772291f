"""The one place kvviz checks a prompt and a bounded integer input (torch-free, UI-free).

One policy for prompts: refuse with a one-line message that says what to change. A prompt is never
truncated silently; a caller that wants to cut a prompt must show the cut itself.

    check_prompt(tokenizer, text, max_tokens)        -> token ids, or PromptError("The prompt is 1100 tokens, ...")
    check_int_in_range(value, lo, hi, "block size")  -> int, or ValueError("block size must be between 1 and 64 ...")
    check_float_in_range(value, lo, hi, "temperature") -> float, or ValueError(...)
    IntSetting(N_("block size"), 1, 256, default=16)  -> a setting's one home: the widget's min/max/step and
                                                         default, its check (.check), a link's and the CLI's
    FloatSetting(N_("temperature"), 0.05, 5.0, default=0.7, step=0.05) -> the same for a number with a fraction

`error=` lets a module raise its own ValueError subclass (e.g. PrefixError) with the same wording, so a page
can keep catching the error of the module it calls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from numbers import Real

from kvviz.i18n import N_, _, join_sentences, ngettext
from kvviz.inputs.query_values import WholeNumberRefused, bounded_int, shown

MAX_TEXT_CHARS = 20_000  # every text box's cap (st.text_area max_chars): a prompt fits 1,024 tokens in far less,
# and a 50 MB paste would otherwise trip Streamlit's own message-size limit in an error box
# A help tooltip: show it with _(TEXT_CAP_HELP). Its number is MAX_TEXT_CHARS, written out so that the catalog has the
# message whole (tests/test_prompt_rules.py checks that the two agree).
TEXT_CAP_HELP = N_("At most 20,000 characters: a longer paste is cut there (the counter shows it).")


class PromptError(ValueError):
    """The prompt cannot be used; the message tells the user what to change."""


def check_prompt(
    tokenizer,
    text: str | None,
    max_tokens: int,
    what: str = "prompt",
    *,
    new_tokens: int = 0,
    error: type[ValueError] = PromptError,
) -> list[int]:
    """Token ids of `text`, or `error` with a one-line message when it is empty or too long.

    max_tokens: the model's positions (its context limit). new_tokens: positions the caller will still
    generate after the prompt, so the prompt may use at most max_tokens - new_tokens of them.
    what: the input's name in the message, in English (shown through _(): a caller marks its own with N_()).
    """
    shown_what = _(what)
    if text is not None and not isinstance(text, str):
        raise error(_("The {what} must be text (got {type}).").format(what=shown_what, type=type(text).__name__))
    if text is None or not text.strip():
        raise error(
            _("The {what} is empty (or only spaces and line breaks): type a few words, for example ROMEO:").format(
                what=shown_what
            )
        )
    ids = list(tokenizer(text).input_ids)
    room = max_tokens - new_tokens
    if len(ids) > room:
        fields = dict(what=shown_what, n=len(ids), positions=max_tokens, new=new_tokens, cut=len(ids) - room)
        shorten = shorten_by(len(ids) - room)
        if new_tokens:
            still = ngettext(
                "the {new} token still to generate", "the {new} tokens still to generate", new_tokens
            ).format(new=new_tokens)
            raise error(
                join_sentences(
                    (
                        ngettext(
                            "The {what} is {n} token, but this model has only {positions} positions (its context limit) minus "
                            "{still}.",
                            "The {what} is {n} tokens, but this model has only {positions} positions (its context limit) minus "
                            "{still}.",
                            len(ids),
                        ).format(still=still, **fields),
                        shorten,
                    )
                )
            )
        raise error(
            join_sentences(
                (
                    ngettext(
                        "The {what} is {n} token, but this model has only {positions} positions (its context limit).",
                        "The {what} is {n} tokens, but this model has only {positions} positions (its context limit).",
                        len(ids),
                    ).format(**fields),
                    shorten,
                )
            )
        )
    return ids


def shorten_by(tokens: int) -> str:
    """ "Shorten it by at least 3 tokens." (1 token: the singular)."""
    return ngettext("Shorten it by at least {cut} token.", "Shorten it by at least {cut} tokens.", tokens).format(
        cut=tokens
    )


def check_int_in_range(
    value, lo: int, hi: int, name: str, *, error: type[ValueError] = ValueError, text: bool = False
) -> int:
    """`value` as an int if it is a whole number in [lo, hi]; otherwise `error` naming `name` and the range.

    Accepts Python/numpy integers and floats that are whole (3.0); refuses bools, NaN, 2.5 and text (text=True:
    a link's digits, read by bounded_int's text rule).
    `name` is English, shown through _() (a caller marks its own with N_()).
    """
    try:
        return bounded_int(value, lo, hi, text=text, whole_floats=True)  # the one reader (query_values)
    except WholeNumberRefused as refused:
        if value is None:  # a widget's empty box, or Streamlit's answer to a value past its bounds (kvviz.ui.bounded)
            raise error(
                _(
                    "{name} must be a whole number from {lo:,} to {hi:,}: the box was empty, or the browser "
                    "sent a value outside that range"
                ).format(name=_(name), lo=lo, hi=hi)
            ) from None
        if refused.kind != "out_of_range":
            raise error(
                _("{name} must be a whole number between {lo:,} and {hi:,} (got {value!r})").format(
                    name=_(name), lo=lo, hi=hi, value=shown(value)
                )
            ) from None
        if refused.number is None:  # thousands of digits: counted, never str()'d
            raise error(
                _("{name} must be from {lo:,} to {hi:,} (got a {digits:,}-digit number).").format(
                    name=_(name), lo=lo, hi=hi, digits=refused.digits
                )
            ) from None
        raise error(
            _("{name} must be between {lo:,} and {hi:,} (got {value:,})").format(
                name=_(name), lo=lo, hi=hi, value=refused.number
            )
        ) from None


@dataclass(frozen=True)
class IntSetting:
    """A bounded whole-number setting, written once: the widget's min/max/step and first value, the library's check
    and a link's or a command line's reading all come from here, so they cannot disagree.

    name: English, marked N_() by the module that defines the setting (shown through _() in every message).
    """

    name: str
    lo: int
    hi: int
    default: int
    step: int = 1

    def __post_init__(self):
        if not self.lo <= self.default <= self.hi:
            raise ValueError(f"{self.name}: default {self.default} outside {self.lo}..{self.hi}")

    def check(self, value, *, error: type[ValueError] = ValueError, text: bool = False) -> int:
        """check_int_in_range with this setting's bounds and name."""
        return check_int_in_range(value, self.lo, self.hi, self.name, error=error, text=text)

    def up_to(self, hi: int) -> IntSetting:
        """The same setting with a maximum that depends on the model (its layers, positions): the default is kept
        inside it."""
        return replace(self, hi=hi, default=min(self.default, hi))


@dataclass(frozen=True)
class FloatSetting:
    """IntSetting's sibling for a number with a fraction (a temperature): bounds, first value and box step."""

    name: str
    lo: float
    hi: float
    default: float
    step: float

    def __post_init__(self):
        if not self.lo <= self.default <= self.hi:
            raise ValueError(f"{self.name}: default {self.default} outside {self.lo}..{self.hi}")

    def check(self, value, *, error: type[ValueError] = ValueError) -> float:
        """check_float_in_range with this setting's bounds and name."""
        if value is None:  # as IntSetting.check: an empty box, or a value past the bounds reset by Streamlit
            raise error(
                _(
                    "{name} must be a number from {lo:g} to {hi:g}: the box was empty, or the browser sent "
                    "a value outside that range"
                ).format(name=_(self.name), lo=self.lo, hi=self.hi)
            )
        return check_float_in_range(value, self.lo, self.hi, self.name, error=error)


def check_float_in_range(value, lo: float, hi: float, name: str, *, error: type[ValueError] = ValueError) -> float:
    """`value` as a float if it is a finite number in [lo, hi]; otherwise `error` naming `name` and the range."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) or not lo <= value <= hi:
        raise error(
            _("{name} must be between {lo:g} and {hi:g} (got {value!r})").format(
                name=_(name), lo=lo, hi=hi, value=value
            )
        )
    return float(value)
