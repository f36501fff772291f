"""What a value in a page's link is: the kinds of query value the routes table declares, each with its parser.

kvviz.routes names each field's kind (Route.kinds); kvviz.ui.url_state reads a link through it and writes a page's
state back with it. Every parser is kvviz.inputs.query_values' (one home per rule), so a link, a widget and the
command line refuse a value with the same sentence:

    Whole(1).parse("99", "step", hi=12)     -> QueryValueError("step must be from 1 to 12 (got 99).")
    Whole(1).refusal("99", "step", "Opening step 1.", hi=12) -> "Ignored `step=99` from the link: step must ..."
    Whole(0).clamp("99", 0, hi=12)          -> 12 (a stage link is read leniently: typed, pasted, truncated)
    Flag().parse("yes", "present")          -> True;  Flag().text(True) -> "1"
    Choice(("one", "race")).parse("x", "view") -> QueryValueError("view must be one of one, race (got 'x').")
    Text(20_000).parse(long, "prompt")      -> long[:20_000] (a text is never refused: it is what was typed)
    BOUND                                   -> a widget bound with bind="query-params": Streamlit reads and writes it

Bounds that depend on the model or the lesson (the model's context, the number of lesson steps) are given when the
value is read (lo=, hi=); the rest are written here or in the table. `default` is the text a page's state has when
it is at its default: url_state leaves such a value out of the URL. UI-free and torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from kvviz.inputs import query_values

# A flag's words in a link (?present=1, ?fresh=yes): anything else is named, never read as off.
FLAG_WORDS = MappingProxyType(
    {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}
)
TOGGLE_WORDS = MappingProxyType({"true": True, "false": False})  # what Streamlit's bound st.toggle writes and reads


@dataclass(frozen=True)
class LinkValue:
    """A field's kind. bound: a widget bound to the URL (bind="query-params") holds the field: Streamlit parses it
    and writes it back, so url_state never writes it (a page may still read it before the widget is drawn)."""

    bound: bool = field(default=False, kw_only=True)
    default: str | None = field(default=None, kw_only=True)  # the text of the page's default state: left out of the URL

    def parse(self, text: str, name: str, **bounds: float) -> object:
        """`text` as the page uses it, else QueryValueError: one sentence naming `name` and what it takes."""
        return text

    def refusal(self, text: str | None, key: str, instead: str, **bounds: float) -> str | None:
        """The one sentence for a link's `key=text` this kind refuses: the value quoted, why, and what the page does
        `instead` (a sentence in the reader's language); None when absent or usable."""
        if text is None:
            return None
        try:
            self.parse(text, key, **bounds)
        except query_values.QueryValueError as exc:
            return query_values.link_notice(key, text, f"{exc} {instead}")  # two sentences, in the reader's language
        return None

    def clamp(self, text: str | None, default: object, **bounds: float) -> object:
        """A lenient reading, for a link replayed as far as it goes (the stage's): never raises."""
        try:
            return default if text is None else self.parse(text, "value", **bounds)
        except query_values.QueryValueError:
            return default

    def text(self, value: object) -> str:
        """How the page's state writes `value` into its URL."""
        return str(value)


@dataclass(frozen=True)
class Text(LinkValue):
    """Free text (a prompt, a signed score, a room code): cut at max_chars, never refused here (its page checks
    what it means: a prompt's tokens, a score's signature, a room's code)."""

    max_chars: int | None = None

    def parse(self, text: str, name: str, **bounds: float) -> str:
        return text if self.max_chars is None else text[: self.max_chars]


@dataclass(frozen=True)
class _Ranged(LinkValue):
    """A value in [lo, hi]; a bound left None is given when it is read (the context length, the lesson's steps)."""

    lo: float | None = None
    hi: float | None = None
    WHAT: ClassVar[str] = "a value"  # for the programming error below
    CONVERT: ClassVar[Callable[[float], float]] = float

    def _bounds(self, bounds: Mapping[str, float]) -> tuple[Any, Any]:
        lo, hi = bounds.get("lo", self.lo), bounds.get("hi", self.hi)
        if lo is None or hi is None:
            raise TypeError(f"{self.WHAT}'s bounds are given here or when it is read (lo=, hi=)")
        return type(self).CONVERT(lo), type(self).CONVERT(hi)


@dataclass(frozen=True)
class Whole(_Ranged):
    """A whole number in [lo, hi] (query_values.whole_number); a bound left None is given when it is read."""

    lo: int | None = None
    hi: int | None = None
    WHAT: ClassVar[str] = "a whole number"
    CONVERT: ClassVar[Callable[[float], float]] = int

    def parse(self, text: str, name: str, **bounds: float) -> int:
        lo, hi = self._bounds(bounds)
        return query_values.whole_number(text, lo, hi, name)

    def clamp(self, text: str | None, default: object, **bounds: float) -> object:
        lo, hi = self._bounds(bounds)
        return query_values.clamped_int(text, default, lo, hi)  # past a bound: that bound


@dataclass(frozen=True)
class Number(_Ranged):
    """A finite number in [lo, hi] (query_values.finite_number); written as %g (0.8, not 0.8000000000000002)."""

    WHAT: ClassVar[str] = "a number"

    def parse(self, text: str, name: str, **bounds: float) -> float:
        lo, hi = self._bounds(bounds)
        return query_values.finite_number(text, lo, hi, name)

    def clamp(self, text: str | None, default: object, **bounds: float) -> object:
        lo, hi = self._bounds(bounds)
        try:
            value = float((text or "").strip()[:32])
        except ValueError:
            return default
        return max(lo, min(hi, value)) if math.isfinite(value) else default  # past a bound: that bound

    def text(self, value: object) -> str:
        return f"{value:g}"


@dataclass(frozen=True)
class Flag(LinkValue):
    """Yes or no, in `words` (FLAG_WORDS: 1/0, true/false, yes/no, on/off; a bound toggle's: true/false)."""

    words: Mapping[str, bool] = field(default_factory=lambda: FLAG_WORDS)

    def __post_init__(self) -> None:
        if self.default is None:  # off is the default state: its word is left out of the URL ("0", "false")
            object.__setattr__(self, "default", self.text(False))

    def parse(self, text: str, name: str, **bounds: float) -> bool:
        word = query_values.choice(text.strip().lower(), list(self.words), name)
        return self.words[word]

    def text(self, value: object) -> str:
        return next(word for word, meaning in self.words.items() if meaning is bool(value))


@dataclass(frozen=True)
class Choice(LinkValue):
    """One of `options`, as the link writes it (query_values.choice)."""

    options: tuple[str, ...] = ()

    def parse(self, text: str, name: str, **bounds: float) -> str:
        return query_values.choice(text, self.options, name)


BOUND = LinkValue(bound=True)  # a widget bound to the URL: Streamlit's own parser, its label or value as it writes it
