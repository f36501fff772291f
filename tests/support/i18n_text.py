"""Find English left on a page drawn in Chinese: the text a student sees, gathered from an AppTest run.

`page_texts(at)` collects every string an element carries (markdown, captions, labels, help tooltips, options,
tab and expander labels, table headers, metric labels, and each plotly chart's titles, axis titles, legend
names, hover templates, tick labels and annotations). `english_leftovers(texts)` returns the runs of four or
more English words that remain once names, code and units are set aside; ALLOWED: the names that may stay English.
`shown_texts(at)` adds what `page_texts` leaves out as data (metric values, table headers and cells), and
`english_ratios(texts)` finds a ratio written the English way ("81.3x") outside a quoted source's own words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from google.protobuf.json_format import MessageToDict

# Proto fields that carry no text for a reader (ids, keys, styling, data).
_SKIP_KEYS = {
    "id",
    "formId",
    "key",
    "queryParamKey",
    "icon",
    "type",
    "format",
    "data",
    "arrowData",
    "styler",
    "uuid",
    "theme",
    "css",
    "color",
    "width",
    "height",
    "scrolling",
    "url",
    "src",
    "deltaPath",
    "fragmentId",
    "spec",
    "config",
    "selectionMode",
    "value",
    "default",
    "styles",
    "bodyText",
}
# Plotly JSON keys whose strings a reader sees.
_PLOTLY_TEXT_KEYS = {"text", "name", "hovertemplate", "ticktext", "title", "legendgrouptitle", "texttemplate"}

# A run of 4+ English words (letters, apostrophes, hyphens), separated by spaces or light punctuation.
_ENGLISH_RUN = re.compile(r"[A-Za-z][A-Za-z'’-]+(?:[ ,;:]+[A-Za-z][A-Za-z'’-]*){3,}")
# Code, and titles quoted in Chinese quotation marks (an English article's title is its name: “Fast Generation ...”).
_CODE = re.compile(r"`[^`]*`|```.*?```|<code>.*?</code>|<script\b.*?</script>|<style\b.*?</style>|“[^”]*”", re.S)
_URL = re.compile(r"\]\([^)]*\)|https?://\S+|\b[\w./-]+\.(?:py|json|safetensors|md|txt)\b")
_TAG = re.compile(r"<[^<>]*>|&[a-z]+;")


def _strings(value, key: str = "") -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            if k not in _SKIP_KEYS:
                yield from _strings(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v, key)


def _plotly_strings(value, visible: bool = False) -> Iterable[str]:
    if isinstance(value, str):
        if visible:
            yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _plotly_strings(v, visible or k in _PLOTLY_TEXT_KEYS)
    elif isinstance(value, list):
        for v in value:
            yield from _plotly_strings(v, visible)


def page_texts(at) -> list[str]:
    """Every reader-visible string of an AppTest run's elements, main area and sidebar."""
    texts: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None and not hasattr(node, "children"):
            as_dict = MessageToDict(proto)
            texts.extend(_strings(as_dict))
            spec = as_dict.get("spec") or as_dict.get("plotlyChart", {}).get("spec")
            if spec:
                texts.extend(_plotly_strings(json.loads(spec)))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)  # noqa: SLF001 - AppTest exposes its element tree only here
    return [t for t in texts if t.strip()]


def english_leftovers(texts: Iterable[str], allowed: Iterable[str] = ()) -> list[str]:
    """Runs of 4+ English words left in `texts`, code spans, links, tags and `allowed` phrases (the model's own
    English output, names) removed first."""
    allowed = sorted({a for a in allowed if a}, key=len, reverse=True)
    found = []
    for text in texts:
        for phrase in allowed:
            text = text.replace(phrase, " ")
        text = _TAG.sub(" ", _URL.sub(" ", _CODE.sub(" ", text)))
        found += [m.group(0) for m in _ENGLISH_RUN.finditer(text)]
    return found


def _glossary_names() -> tuple[str, ...]:
    from kvviz.teaching import glossary

    return tuple(n for t in glossary.TERMS for n in (t.name, *t.also))


# Names may stay English on a Chinese page: the glossary's English names beside their Chinese ones, cited papers'
# titles, and the bundled model's own words.
ALLOWED = (
    "Transformer Explainer",
    "Hugging Face",
    "Attention Is All You Need",
    "Shakespeare",
    "The Llama 3 Herd of Models",
    "Language Models are Few-Shot Learners",
    *_glossary_names(),
)


# A ratio with the English suffix: "81.3x", "2.21x", "500x" (not "4096x4096", not "0x10").
ENGLISH_RATIO = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?x\b")
_QUOTED = re.compile(r"“[^”]*”")  # a source's own words, quoted as written ("加速比约 500x")


def shown_texts(at) -> list[str]:
    """`page_texts(at)` and the values a reader sees that it skips as data: metric values and deltas, and every
    table's (st.dataframe, st.table) headers and cells."""
    texts = page_texts(at)
    texts += [str(v) for m in at.metric for v in (m.value, m.proto.delta) if v]
    for frame in [*at.dataframe, *at.table]:
        df = frame.value
        texts += [str(c) for c in df.columns] + [str(v) for v in df.to_numpy().ravel() if isinstance(v, str)]
    return texts


def english_ratios(texts: Iterable[str]) -> list[str]:
    """Ratios written "Nx" in `texts`, what is quoted in “” (a source's own words) set aside."""
    return [m.group(0) for t in texts for m in ENGLISH_RATIO.finditer(_QUOTED.sub(" ", t))]


# Chinese text joined in code that bypassed the reader's separators (kvviz.i18n: list_sep, item_sep,
# join_sentences): ASCII ; : , or a full stop right after a Chinese character, a space after 。, an ASCII x between
# numbers (a multiplication: ×), a hyphen between two numbers with a unit (a range: ～). A model's name (8x7b,
# Llama-3-8B) is a name, not arithmetic: a number glued to a letter or a hyphen before it is left alone.
_CJK = r"[\u4e00-\u9fff]"
PUNCTUATION_RULES = {
    "ASCII punctuation after a Chinese character": re.compile(_CJK + r"[;:,]|" + _CJK + r"\.(?!\d)"),
    "a space after 。": re.compile(r"。 (?=\S)"),
    "x as a multiplication sign": re.compile(r"(?<![-\w.])\d+(?:\.\d+)?\s?x\s?\d"),
    "a hyphen for a range": re.compile(r"(?<![-\w.])\d+(?:\.\d+)?-\d+(?:\.\d+)?\s?(?:µs|ms|%|秒|个)"),
}


def punctuation_faults(texts: Iterable[str]) -> list[tuple[str, str]]:
    """(rule, the text around it) for every place a Chinese text breaks PUNCTUATION_RULES; code spans, links and
    quotations (`...`, <...>, ](...), “...”) are left out first: a formula or an address is not a sentence, and a
    source quoted is quoted as it was written."""
    found = []
    # a page's CSS and scripts are no text, whatever their comments hold (readable.css quotes Chinese labels)
    texts = [re.sub(r"<(style|script)\b.*?</\1>", " ", t, flags=re.S | re.I) for t in texts]
    for text in (t for t in texts if re.search(_CJK, t)):  # a Chinese text
        plain = re.sub(r"`[^`]*`|<[^>]*>|\]\([^)]*\)|%\{[^}]*\}|“[^”]*”", " ", text)
        for rule, pattern in PUNCTUATION_RULES.items():
            found += [(rule, plain[max(0, m.start() - 20) : m.end() + 20]) for m in pattern.finditer(plain)]
    return found
