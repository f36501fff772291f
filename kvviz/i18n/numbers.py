"""Large counts in each language's own words: 245.3 million in English, 2.453 亿 in Chinese.

English groups a large number by thousands (thousand, million, billion, trillion); Chinese by ten-thousands
(万 = 10^4, 亿 = 10^8, 万亿 = 10^12), so "245.3 百万" is a calque a Chinese reader converts in their head: it reads
2.453 亿. The scale words and their divisors come from the Unicode CLDR data Babel ships (its compact decimal
formats: English's long form "0 million", Chinese's short form "0亿"), not from a table typed here; past CLDR's
largest word the words the app already used carry on (quadrillion, quintillion; 亿亿 = 10^16).

One home for this rule: a metric tile's "245.3 million" (`count_in_words`) and a chart axis's "单位：亿"
(`axis_scale`) both read `scales()`. A ratio has one home too, `ratio`: "81.3x" in English, "81.3 倍" in Chinese
(a Chinese reader reads "81.3x" as an English suffix); every ratio a page, a chart or the handout builds in code
goes through it. So has a range, `span`: "0–5", "0～5". The scale is for display only: the exact integer stays in the record,
the tooltip and the hover. UI-free: no Streamlit import here.
"""

from __future__ import annotations

import contextlib
import decimal
import functools
from dataclasses import dataclass
from decimal import Decimal

from kvviz import i18n
from kvviz.i18n import N_

_BABEL_LOCALES = {i18n.ENGLISH: "en", i18n.CHINESE: "zh_CN"}
# Which CLDR compact form names the scale in words: English's "short" says "245M" (M for million? mega?),
# its "long" says "245 million"; Chinese has one form and it writes the word ("2亿").
_COMPACT_FORM = {i18n.ENGLISH: "long", i18n.CHINESE: "short"}
# Past CLDR's largest word (trillion, 万亿) a count keeps a word: these are not in CLDR's compact data.
_BEYOND_CLDR = {i18n.ENGLISH: ((10**15, "quadrillion"), (10**18, "quintillion")), i18n.CHINESE: ((10**16, "亿亿"),)}
SIGNIFICANT_DIGITS = 4  # "245.3 million", "2.453 亿": enough to compare two tiles, few enough to read aloud


@dataclass(frozen=True)
class Scale:
    """One scale word of a language: a count n reads n / divisor `word` ("245.3 million"); an axis whose values
    are divided by `divisor` names its unit `unit` (English in the plural: "ops, millions"; Chinese: "单位：亿")."""

    divisor: int
    word: str
    unit: str


def _language(lang: str | None) -> str:
    return lang if lang in _BABEL_LOCALES else i18n.current()


def scales(lang: str | None = None) -> tuple[Scale, ...]:
    """A language's scale words (default: the current language's), smallest first."""
    return _scales(_language(lang))


@functools.cache
def _scales(code: str) -> tuple[Scale, ...]:
    """Read from CLDR's compact decimal patterns: the pattern for magnitude 10^k ("000万" at 10^6) says the word
    (万) and its divisor (10^6 / 10^(zeros - 1) = 10^4)."""
    from babel import Locale

    patterns = Locale.parse(_BABEL_LOCALES[code]).compact_decimal_formats[_COMPACT_FORM[code]]["other"]
    found: dict[int, str] = {}
    for magnitude, pattern in patterns.items():
        text = pattern.pattern.split(";")[0]
        zeros = text.count("0")
        word = text.replace("0", "").replace("'", "").replace("\u00a0", " ").strip()
        if word and zeros:
            found.setdefault(int(magnitude) // 10 ** (zeros - 1), word)
    found.update((divisor, word) for divisor, word in _BEYOND_CLDR[code] if divisor > max(found, default=0))
    plural = (lambda w: w + "s") if code == i18n.ENGLISH else (lambda w: w)  # an axis counts in millions
    return tuple(Scale(d, w, plural(w)) for d, w in sorted(found.items()))


def _significant(value: Decimal, digits: int) -> Decimal:
    """value rounded to `digits` significant digits (half to even, as Python's own "{:.4g}" does)."""
    if not value:
        return value
    return value.quantize(Decimal(1).scaleb(value.adjusted() - digits + 1), rounding=decimal.ROUND_HALF_EVEN)


def scaled(
    n: int, lang: str | None = None, *, scale_from: int = 1, digits: int = SIGNIFICANT_DIGITS
) -> tuple[Decimal | int, Scale | None]:
    """A count as (its value in the language's largest scale that fits, that scale), the value rounded to `digits`
    significant digits: 245_300_000 -> (245.3, million) in English, (2.453, 亿) in Chinese. A count below
    `scale_from`, or below the language's smallest scale, is returned whole with no scale. A count that rounds up
    to the next scale says that one: 999,960,000 is "1 billion", never "1000 million"."""
    n = int(n)
    chosen = [s for s in scales(_language(lang)) if abs(n) >= s.divisor and abs(n) >= scale_from]
    if not chosen:
        return n, None
    with decimal.localcontext(prec=max(28, len(str(abs(n))) + digits)):
        scale = chosen[-1]
        value = _significant(Decimal(n) / scale.divisor, digits)
        bigger = [s for s in scales(_language(lang)) if s.divisor > scale.divisor]
        if bigger and abs(value) * scale.divisor >= bigger[0].divisor:
            scale = bigger[0]
            value = _significant(Decimal(n) / scale.divisor, digits)
        return value, scale


def format_number(value: Decimal | int | float, lang: str | None = None) -> str:
    """A number as the language writes it, with its digit grouping (1,234.5 in both English and Chinese), never
    in exponent form: every digit `value` carries is shown, no more."""
    if isinstance(value, int):  # exact at any size (babel rounds through a 28-digit decimal context)
        return f"{value:,}"
    from babel.numbers import format_decimal

    return format_decimal(value, format="#,##0.###", locale=_BABEL_LOCALES[_language(lang)], decimal_quantization=False)


def count_in_words(n: int, lang: str | None = None, *, scale_from: int = 1, digits: int = SIGNIFICANT_DIGITS) -> str:
    """A count for a reader in the current language (or `lang`): "245.3 million" / "2.453 亿"; "1,234" below
    `scale_from` (or the smallest scale word). For display only: show the exact integer beside it (a tooltip)."""
    value, scale = scaled(n, lang, scale_from=scale_from, digits=digits)
    if scale is None:
        return format_number(value, lang)
    return f"{format_number(value, lang)} {scale.word}"


def axis_scale(peak: float, lang: str | None = None) -> tuple[int, str]:
    """The divisor and unit word of a chart axis whose largest value is `peak`: the language's largest scale not
    above it ((10**9, "billions") in English, (10**8, "亿") in Chinese), so ticks read 2, 4, 6 under a named
    unit; (1, "") when the values are smaller than every scale. Divide for drawing only; hover the exact value."""
    fitting = [s for s in scales(_language(lang)) if abs(peak) >= s.divisor]
    return (fitting[-1].divisor, fitting[-1].unit) if fitting else (1, "")


SPAN = N_("{low}–{high}")  # a range's one pattern: "3–7" (an en dash); Chinese "3～7" (浪纹线, GB/T 15834)
RATIO = N_("{ratio}x")  # a ratio's one pattern: "81.3x"; Chinese "81.3 倍"


def span(low: object, high: object, lang: str | None = None) -> str:
    """A range of two already formatted values as the language writes it: "0–5" in English, "0～5" in Chinese
    (a hyphen or an en dash between Chinese numbers reads as a minus sign or an English habit)."""
    with i18n.language(lang) if lang in _BABEL_LOCALES else contextlib.nullcontext():
        return i18n._(SPAN).format(low=low, high=high)


def ratio(value: float, spec: str = ",.1f", lang: str | None = None) -> str:
    """A ratio (how many times) as the language writes it: "1,234.5x" in English, "1,234.5 倍" in Chinese; the
    number formatted by `spec` (Python's format spec: ",.1f", ".2f", ".3g"), the same digits in both languages."""
    with i18n.language(lang) if lang in _BABEL_LOCALES else contextlib.nullcontext():
        return i18n._(RATIO).format(ratio=format(value, spec))
