"""The interface language: English (the source strings) or Simplified Chinese (a gettext catalog).

Every user-facing string in kvviz goes through `_()` (or `ngettext` for a count, or `N_()` to mark a constant
defined at import time and translated where it is shown). A record that is stored or cached (a lesson question, a
class poll, the eviction takeaways) keeps no translated sentence: it holds Messages (a msgid marked N_, or a plural
pair marked Nn_, and its fields), and `_()` runs only when a page draws them (`Message.shown()`). The catalog is one standard gettext `.po` file per
language, `kvviz/i18n/locale/<ll_CC>/LC_MESSAGES/kvviz.po`, read once per process and compiled in memory with
Babel into the standard library's `gettext.GNUTranslations` (no compiled `.mo` kept in git to go stale).
A message the catalog lacks shows its English source, never a key or an empty label.

Which language a call uses: inside `with language(code):` that one; otherwise what the registered resolver says
(kvviz.ui registers one that reads the Streamlit session's choice, so fragments and callbacks agree with the
page); otherwise English. The CLI never sets a language: it stays English. UI-free: no Streamlit import here.

Names stay as they are in both languages (GPT-2, Llama, DynamicCache, head_dim, config.json, units), and numbers
are formatted by the same Python format specs in both (the format spec sits in the message: `{n:,}`), except a
large count said with a scale word: kvviz.i18n.numbers writes it in the language's own words (245.3 million;
2.453 亿, never 245.3 百万). A text's shape in either language (a list's separator, a width, a sentence set
inside another, a label without its aside) is written once, at the bottom of this module.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import gettext as _gettext
import io
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

ENGLISH = "en"
CHINESE = "zh-CN"
LANGUAGES: dict[str, str] = {ENGLISH: "English", CHINESE: "简体中文"}  # code (as in ?lang=) -> its own name
DEFAULT_LANGUAGE = ENGLISH
QUERY_PARAM = "lang"

LOCALE_DIR = Path(__file__).with_name("locale")
DOMAIN = "kvviz"
_CATALOG_DIRS = {CHINESE: "zh_CN"}  # gettext's directory names (ll_CC); English is the source, no catalog

# A language code longer than this is no language tag (BCP 47 tags in practice stay under 35 characters).
_MAX_CODE_CHARS = 35
_SIMPLIFIED_REGIONS = {"cn", "sg", "my"}  # zh-CN, zh-SG, zh-MY write simplified characters
_TRADITIONAL = {"tw", "hk", "mo", "hant"}

_forced: contextvars.ContextVar[str | None] = contextvars.ContextVar("kvviz_language", default=None)
_resolver: Callable[[], str | None] | None = None


def normalize(code: object) -> str | None:
    """A language code from a URL, a browser or a user -> "en", "zh-CN", or None when it is neither.

    "zh-CN", "zh_cn", "zh", "zh-Hans", "zh-Hans-CN", "zh-SG" -> "zh-CN"; "en", "en-US", "en_GB" -> "en";
    Traditional Chinese (zh-TW, zh-HK, zh-Hant) and every other language -> None (the caller falls back).
    Never raises: a huge, empty or hostile value is simply None."""
    if not isinstance(code, str) or not code or len(code) > _MAX_CODE_CHARS:
        return None
    parts = [p for p in re.split(r"[-_]", code.strip().lower()) if p]
    if not parts or not all(p.isascii() and p.isalnum() for p in parts):
        return None
    if parts[0] == "en":
        return ENGLISH
    if (
        parts[0] == "zh"
        and not _TRADITIONAL.intersection(parts[1:])
        and (len(parts) == 1 or "hans" in parts[1:] or _SIMPLIFIED_REGIONS.intersection(parts[1:]))
    ):
        return CHINESE
    return None


def from_browser(locale: str | None) -> str:
    """The language a browser's locale (Streamlit's st.context.locale, e.g. "zh-CN") gets: Chinese for
    Simplified Chinese, English for everything else (and when the browser says nothing)."""
    return normalize(locale) or DEFAULT_LANGUAGE


def set_resolver(resolver: Callable[[], str | None] | None) -> None:
    """Register where the current language comes from when no `language()` block is active (kvviz.ui: the
    Streamlit session). The resolver must be cheap, never raise, and return None outside a session."""
    global _resolver
    _resolver = resolver


def current() -> str:
    """The language `_()` translates into now."""
    forced = _forced.get()
    if forced is not None:
        return forced
    if _resolver is not None:
        chosen = _resolver()
        if chosen in LANGUAGES:
            return chosen
    return DEFAULT_LANGUAGE


@contextlib.contextmanager
def language(code: str) -> Iterator[None]:
    """Translate into `code` inside the block (tests, handouts made for a language)."""
    if code not in LANGUAGES:
        raise ValueError(f"unknown language {code!r}; expected one of {sorted(LANGUAGES)}")
    token = _forced.set(code)
    try:
        yield
    finally:
        _forced.reset(token)


def catalog_path(code: str) -> Path:
    return LOCALE_DIR / _CATALOG_DIRS[code] / "LC_MESSAGES" / f"{DOMAIN}.po"


@functools.cache
def translations(code: str) -> _gettext.NullTranslations:
    """The compiled catalog for a language (English: the identity). Read once per process."""
    if code not in _CATALOG_DIRS:
        return _gettext.NullTranslations()
    from babel.messages import mofile, pofile

    path = catalog_path(code)
    if not path.is_file():
        return _gettext.NullTranslations()
    with path.open("rb") as fh:
        catalog = pofile.read_po(fh, locale=_CATALOG_DIRS[code])
    buffer = io.BytesIO()
    mofile.write_mo(buffer, catalog)  # fuzzy entries are left out: they show English until reviewed
    buffer.seek(0)
    return _gettext.GNUTranslations(buffer)


def is_translated(message) -> bool:
    """A Babel catalog message with every form translated (a plural message has one string per form)."""
    strings = message.string if isinstance(message.string, (tuple, list)) else (message.string,)
    return bool(strings) and all(strings) and not message.fuzzy


def _(message: str) -> str:
    """`message` in the current language (its English source when the catalog has no translation)."""
    if not message:
        return message
    return translations(current()).gettext(message)


gettext = _


def ngettext(singular: str, plural: str, n: int) -> str:
    """The singular or plural form for a count n, in the current language (Chinese has one form)."""
    return translations(current()).ngettext(singular, plural, n)


def N_(message: str) -> str:
    """Mark a string for the catalog without translating it now (a constant defined at import time); translate
    it with `_()` where it is shown."""
    return message


def Nn_(singular: str, plural: str) -> tuple[str, str]:
    """Mark a plural pair for the catalog without translating it now: `Message.counted(*Nn_("{n} row", "{n} rows"),
    n=3)` keeps both forms and picks one, for its count, where it is shown."""
    return singular, plural


@dataclasses.dataclass(frozen=True)
class Message:
    """A text made now and shown later, in the language of whoever reads it: a message marked N_ and its fields'
    values (a field that is itself a Message, or any lazy text with a `shown()`, such as Joined, is shown in the same
    language). Records, keys and the CLI keep `english`; a page shows `shown()`, or `shown_english(text)` for a text
    a record kept in English. kvviz's one lazy translatable text (a model's label, a listed model's, a lesson's
    question, a poll's choices).

    `plural`: the plural msgid of a counted message (Message.counted): the field named `count` ("n" unless told)
    picks the form, as ngettext does.
    `translate=False`: a text that is the same in every language (a number with its unit, a token), shown as it is
    (Message.verbatim). Equal messages are the same text: a choice is known by its Message, never by a translation.
    A Message whose fields are plain JSON values (or lazy texts) goes to JSON and back: to_data / from_data."""

    msg: str
    fields: tuple[tuple[str, Any], ...] = ()
    plural: str = ""
    translate: bool = True
    count: str = "n"  # the field whose value picks a counted message's form

    @classmethod
    def of(cls, msg: str, /, **fields: Any) -> Message:
        """A message with its fields, remembered by its English text for shown_english."""
        text = cls(msg, _frozen(fields))
        _MADE.setdefault(text.english, text)
        return text

    @classmethod
    def lazy(cls, msg: str, /, **fields: Any) -> Message:
        """A message with its fields, made for a record (not remembered by its English text: shown with shown())."""
        return cls(msg, _frozen(fields))

    @classmethod
    def counted(cls, singular: str, plural: str, /, by: str = "n", **fields: Any) -> Message:
        """A message with a singular and a plural form (marked with Nn_), the form picked by the field `by`."""
        if by not in fields:
            raise ValueError(f"a counted message needs its count as the field {by}")
        return cls(singular, _frozen(fields), plural, True, by)

    @classmethod
    def verbatim(cls, text: str) -> Message:
        """A text the same in every language (a number and its unit, a token): shown as it is, never formatted."""
        return cls(text, (), "", False)

    def shown(self) -> str:
        """The text in the current language."""
        if not self.translate:
            return self.msg
        values = {k: shown(v) for k, v in self.fields}
        template = ngettext(self.msg, self.plural, int(values[self.count])) if self.plural else _(self.msg)
        return template.format(**values)

    @property
    def english(self) -> str:
        with language(ENGLISH):
            return self.shown()

    def in_every_language(self) -> set[str]:
        """This text as each language shows it (and its msgid): how a text typed or stored as words is recognised."""
        out = {self.msg}
        for code in LANGUAGES:
            with language(code):
                out.add(self.shown())
        return out

    def to_data(self) -> dict[str, Any]:
        """This message as JSON-ready data (from_data reads it back): its fields' lazy texts nested, tagged."""
        data: dict[str, Any] = {"msg": self.msg, "fields": {k: _to_data(v) for k, v in self.fields}}
        if self.plural:
            data["plural"], data["count"] = self.plural, self.count
        if not self.translate:
            data["translate"] = False
        return data

    @classmethod
    def from_data(cls, data: Any) -> Message:
        """to_data's inverse; ValueError for anything that is not a message's data."""
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("msg"), str)
            or not isinstance(data.get("fields"), dict)
        ):
            raise ValueError("not a message's data")
        fields = _frozen({str(k): _from_data(v) for k, v in data["fields"].items()})
        plural, translate, count = str(data.get("plural", "")), bool(data.get("translate", True)), data.get("count")
        return cls(data["msg"], fields, plural, translate, str(count or "n"))


@dataclasses.dataclass(frozen=True)
class Joined:
    """Lazy texts joined, in the reader's language, by one of this module's separators: "list" (list_sep: "; "),
    "items" (item_sep: ", " or 、), "sentences" (join_sentences), or "" (one text after the other: the clauses of one
    sentence, each its own message). A field of a Message, or a text of its own."""

    items: tuple[Any, ...]
    sep: str = "list"

    def shown(self) -> str:
        texts = [shown(item) for item in self.items]
        if self.sep == "sentences":
            return join_sentences(texts)
        return {"items": item_sep, "list": list_sep}.get(self.sep, str)().join(texts)

    @property
    def english(self) -> str:
        with language(ENGLISH):
            return self.shown()


def shown(value: Any) -> Any:
    """A field's value as it is shown: a lazy text (a Message, Joined) in the current language, anything else as is."""
    return value.shown() if isinstance(value, (Message, Joined)) else value


def _frozen(fields: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Fields as a hashable tuple in name order (a list value becomes a tuple): a record that holds a Message stays
    hashable, and two messages with the same fields are equal however they were written (or read back from JSON)."""
    return tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in sorted(fields.items()))


def _to_data(value: Any) -> Any:
    if isinstance(value, Message):
        return {"$message": value.to_data()}
    if isinstance(value, Joined):
        return {"$joined": [_to_data(v) for v in value.items], "sep": value.sep}
    if isinstance(value, (list, tuple)):
        return [_to_data(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "item") and not hasattr(value, "__len__"):  # a numpy scalar (a measured weight): plain Python
        return value.item()
    raise TypeError(f"a message field must be plain data or a lazy text, not {type(value).__name__}")


def _from_data(value: Any) -> Any:
    if isinstance(value, dict) and "$message" in value:
        return Message.from_data(value["$message"])
    if isinstance(value, dict) and "$joined" in value:
        return Joined(tuple(_from_data(v) for v in value["$joined"]), str(value.get("sep", "list")))
    if isinstance(value, list):
        return tuple(_from_data(v) for v in value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise ValueError("not a message field's data")


_MADE: dict[str, Message] = {}  # English text -> the Message this process made it from (Message.of)


def shown_english(text: str) -> str:
    """A text a record kept in English (a race's, a benchmark's or a draft's model label), in the current language:
    translated when this process made it with Message.of, else as it is (a teacher's own label, an old record)."""
    made = _MADE.get(text)
    return made.shown() if made else _(text)


# ----- a text's shape in either language: the one home of each rule (pages call these, never re-spell them) -----
def list_sep() -> str:
    """The separator between the items of a list inside one sentence ("; ", in Chinese a full-width one)."""
    return _("; ")


def item_sep() -> str:
    """The separator between the items of a short list ("Q, K, V"; in Chinese the enumeration comma: Q、K、V)."""
    return _(", ")


def join_sentences(sentences: Iterable[str]) -> str:
    """Sentences one after the other: a space after an English full stop, none after a Chinese one (。？！ and
    their kin close a sentence with their own width: "图。柱：…", never "图。 柱：…")."""
    out = ""
    for sentence in (s for s in sentences if s):
        out += sentence if not out or out[-1] in _FULL_WIDTH_CLOSERS else " " + sentence
    return out


_FULL_WIDTH_CLOSERS = "。！？；：，、）”"


def text_width(text: str) -> int:
    """A text's width in Latin characters: a CJK character takes about two."""
    return sum(2 if ord(ch) >= 0x2E80 else 1 for ch in text)


def as_clause(sentence: str) -> str:
    """A sentence set inside another ("Not imported: {reason}."): its own final full stop dropped, English "." or
    Chinese "。"."""
    return sentence.rstrip(".。")


def without_aside(label: str) -> str:
    """A label without its parenthesised aside: the text before " (" or, in Chinese, before "（"."""
    return label.split(" (")[0].split("（")[0]
