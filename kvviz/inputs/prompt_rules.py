"""The one place kvviz checks a prompt and a bounded integer input (torch-free, UI-free).

One policy for prompts: refuse with a one-line message that says what to change. A prompt is never
truncated silently; a caller that wants to cut a prompt must show the cut itself.

    check_prompt(tokenizer, text, max_tokens)        -> token ids, or PromptError("The prompt is 1100 tokens, ...")
    check_int_in_range(value, lo, hi, "block size")  -> int, or ValueError("block size must be between 1 and 64 ...")
    check_float_in_range(value, lo, hi, "temperature") -> float, or ValueError(...)

`error=` lets a module raise its own ValueError subclass (e.g. PrefixError) with the same wording, so a page
can keep catching the error of the module it calls.
"""
from __future__ import annotations

import math
from numbers import Real

from kvviz.i18n import N_, _
from kvviz.inputs.query_values import WholeNumberRefused, bounded_int, shown

MAX_TEXT_CHARS = 20_000  # every text box's cap (st.text_area max_chars): a prompt fits 1,024 tokens in far less,
# and a 50 MB paste would otherwise trip Streamlit's own message-size limit in an error box
# A help tooltip: show it with _(TEXT_CAP_HELP). Its number is MAX_TEXT_CHARS, written out so that the catalog has the
# message whole (tests/test_prompt_rules.py checks that the two agree).
TEXT_CAP_HELP = N_("At most 20,000 characters: a longer paste is cut there (the counter shows it).")


class PromptError(ValueError):
    """The prompt cannot be used; the message tells the user what to change."""


def check_prompt(tokenizer, text: str | None, max_tokens: int, what: str = "prompt", *, new_tokens: int = 0,
                 error: type[ValueError] = PromptError) -> list[int]:
    """Token ids of `text`, or `error` with a one-line message when it is empty or too long.

    max_tokens: the model's positions (its context limit). new_tokens: positions the caller will still
    generate after the prompt, so the prompt may use at most max_tokens - new_tokens of them.
    what: the input's name in the message, in English (shown through _(): a caller marks its own with N_()).
    """
    shown_what = _(what)
    if text is not None and not isinstance(text, str):
        raise error(_("The {what} must be text (got {type}).").format(what=shown_what, type=type(text).__name__))
    if text is None or not text.strip():
        raise error(_("The {what} is empty (or only spaces and line breaks): type a few words, for example ROMEO:").format(
            what=shown_what))
    ids = list(tokenizer(text).input_ids)
    room = max_tokens - new_tokens
    if len(ids) > room:
        fields = dict(what=shown_what, n=len(ids), positions=max_tokens, new=new_tokens, cut=len(ids) - room)
        if new_tokens:
            raise error(_("The {what} is {n} tokens, but this model has only {positions} positions (its context limit) "
                          "minus the {new} tokens still to generate. Shorten it by at least {cut} tokens.").format(**fields))
        raise error(_("The {what} is {n} tokens, but this model has only {positions} positions (its context limit). "
                      "Shorten it by at least {cut} tokens.").format(**fields))
    return ids


def check_int_in_range(value, lo: int, hi: int, name: str, *, error: type[ValueError] = ValueError,
                       text: bool = False) -> int:
    """`value` as an int if it is a whole number in [lo, hi]; otherwise `error` naming `name` and the range.

    Accepts Python/numpy integers and floats that are whole (3.0); refuses bools, NaN, 2.5 and text (text=True:
    a link's digits, read by bounded_int's text rule).
    `name` is English, shown through _() (a caller marks its own with N_()).
    """
    try:
        return bounded_int(value, lo, hi, text=text, whole_floats=True)  # the one reader (query_values)
    except WholeNumberRefused as refused:
        if refused.kind != "out_of_range":
            raise error(_("{name} must be a whole number between {lo:,} and {hi:,} (got {value!r})").format(
                name=_(name), lo=lo, hi=hi, value=shown(value))) from None
        if refused.number is None:  # thousands of digits: counted, never str()'d
            raise error(_("{name} must be from {lo:,} to {hi:,} (got a {digits:,}-digit number).").format(
                name=_(name), lo=lo, hi=hi, digits=refused.digits)) from None
        raise error(_("{name} must be between {lo:,} and {hi:,} (got {value:,})").format(
            name=_(name), lo=lo, hi=hi, value=refused.number)) from None


def check_float_in_range(value, lo: float, hi: float, name: str, *, error: type[ValueError] = ValueError) -> float:
    """`value` as a float if it is a finite number in [lo, hi]; otherwise `error` naming `name` and the range."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) or not lo <= value <= hi:
        raise error(_("{name} must be between {lo:g} and {hi:g} (got {value!r})").format(
            name=_(name), lo=lo, hi=hi, value=value))
    return float(value)
