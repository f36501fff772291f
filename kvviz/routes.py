"""The routes table: every page of the app, its URL path, its title, its icon, its section and the query keys it keeps.

The one place a page's file or a link's query key is written: app.py builds its navigation from ROUTES, and every
link the library describes (a lesson step's full page, a glossary entry's "see it live", a teacher's plan, a claim)
names a Route and builds its query with `Route.query(field=value)`, so a page that renames a key fails
tests/test_routes.py instead of a class's link. Pages keep their own widget keys (key="mem_preset"); the test holds
each key declared here to its page's source. No Streamlit: a page adds the language and the model to a link
(kvviz.ui.link_params). Torch-free and plotly-free.

The table is also each page's URL state: which keys it keeps in its link (reads, and the widgets' prefix), how each
is parsed and bounded (kinds: kvviz.inputs.link_values), and which of them Back and Forward skip (in_place).
kvviz.ui.url_state is the one reader and writer; no page touches st.query_params itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from urllib.parse import urlencode

from kvviz import i18n
from kvviz.i18n import N_, _
from kvviz.inputs.link_values import BOUND, TOGGLE_WORDS, Choice, Flag, LinkValue, Number, Text, Whole
from kvviz.inputs.prompt_rules import MAX_TEXT_CHARS

PAGE_FOLDER = "pages"  # the page scripts' folder, relative to app.py (st.Page and st.page_link resolve it there)
INTERNALS = N_("Cache internals")  # the sidebar's section of one small page per cache-internals idea


@dataclass(frozen=True, eq=False)  # one object per page: compared by identity
class Route:
    name: str  # the URL path st.navigation derives from the file name (/step_through), and the file's stem
    title: str  # the page's one name (N_-marked: show _(title)), in the navigation, on links and in the lesson
    icon: str  # a ":material/...:" icon
    section: str = ""  # "" (the main list) or INTERNALS (N_-marked)
    default: bool = False  # the page at "/"
    # The query keys the page reads that a link may set: {field: key}; a link names the field, never the key.
    reads: Mapping[str, str] = field(default_factory=dict)
    # Fields whose link value is one of the page's shown labels (a tab, a sequence's name): a link carries the
    # English label, translated when the link is drawn (localized), as the page's URL-bound widget writes it.
    labels: tuple[str, ...] = ()
    # Fields whose change in the address bar rewrites the page's browser-history entry instead of adding one
    # (kvviz/assets/web/history_entries.js): a state the page writes as it goes (the stage at every step, the
    # lesson's room score at every mark), so Back leaves the page or goes to the step before, never to a mark.
    in_place: tuple[str, ...] = ()
    # How each field's value is parsed and bounded (kvviz.inputs.link_values); a field not named here is a widget
    # bound to the URL (BOUND: bind="query-params"), which Streamlit parses and writes itself.
    kinds: Mapping[str, LinkValue] = field(default_factory=dict)
    # The prefix of the page's other widgets bound to the URL (a form of many numbers: mem_layers, ops_new ...):
    # kept in the link by Streamlit, read by url_state only to name a value a widget dropped. "" = none.
    widgets: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "reads", MappingProxyType(dict(self.reads)))
        kinds = dict(self.kinds)
        object.__setattr__(self, "kinds", MappingProxyType({f: kinds.get(f, BOUND) for f in self.reads}))
        for kind, fields in (("label", self.labels), ("in-place", self.in_place), ("kind", kinds)):
            if unknown := set(fields) - set(self.reads):
                raise ValueError(f"{self.name}: {kind} fields {sorted(unknown)} are not among the keys it reads")

    def keeps(self, key: str) -> bool:
        """Whether `key` is one the page keeps in its link: a declared field's, or one of its bound widgets'."""
        return key in self.reads.values() or bool(self.widgets) and key.startswith(self.widgets)

    def bound_keys(self, keys: Iterable[str]) -> list[str]:
        """Of `keys` (a link's), those of the page's widgets bound to the URL: BOUND fields and the prefixed."""
        declared = {self.reads[f] for f, kind in self.kinds.items() if kind.bound}
        return [k for k in keys if k in declared or (bool(self.widgets) and k.startswith(self.widgets))]

    @property
    def file(self) -> str:
        """The page script, relative to the repository (what st.Page and st.page_link take)."""
        return f"{PAGE_FOLDER}/{self.name}.py"

    @property
    def query_keys(self) -> tuple[str, ...]:
        return tuple(self.reads.values())

    def key(self, name: str) -> str:
        """The query key of the field `name` (KeyError, naming the page, for a field it does not read)."""
        try:
            return self.reads[name]
        except KeyError:
            raise KeyError(f"the {self.name} page reads no {name!r} (it reads {', '.join(self.reads)})") from None

    def query(self, **values: str | int) -> dict[str, str]:
        """A link's query to this page: {key: str(value)} for each named field, in the order given."""
        return {self.key(name): str(value) for name, value in values.items()}

    def localized(self, query: Mapping[str, str]) -> dict[str, str]:
        """`query` with the values that are the page's labels in the current language (the page's widget reads
        its label as the link's language shows it)."""
        shown = {self.reads[name] for name in self.labels}
        return {k: _(v) if k in shown else v for k, v in query.items()}

    def url(self, query: Mapping[str, str] | None = None) -> str:
        """The URL tail a reader types: "/", "/lesson?step=1&lesson_class=true" (the query as given, English)."""
        path = "/" if self.default else f"/{self.name}"
        return f"{path}?{urlencode(dict(query))}" if query else path


def _internals(name: str, title: str, icon: str) -> Route:
    return Route(f"internals_{name}", title, icon, INTERNALS)


LESSON = Route(
    "lesson",
    N_("Lesson"),
    ":material/school:",
    reads={"step": "step", "class_mode": "lesson_class", "score": "lesson_score"},
    in_place=("score",),
    # step: 1 to the number of steps (given when read), or End in any language (the page's word for the summary);
    # class_mode: the bound toggle's own words; score: one letter per step, signed (kvviz.teaching.score reads it)
    kinds={"step": Whole(lo=1), "class_mode": Flag(TOGGLE_WORDS, bound=True), "score": Text()},
)
JOIN = Route("join", N_("Join a class poll"), ":material/how_to_vote:", reads={"room": "room"}, kinds={"room": Text()})
HOME = Route("home", N_("Start here"), ":material/home:", default=True)
STEP_THROUGH = Route(
    "step_through",
    N_("Step through generation"),
    ":material/step:",
    reads={
        "prompt": "prompt",
        "steps": "steps",
        "greedy": "greedy",
        "temperature": "temperature",
        "top_k": "top_k",
        "seed": "seed",
        "view": "view",
        "present": "present",
        "layer": "step_layer",
        "head": "step_head",
        "fresh": "fresh",
    },
    in_place=("prompt", "steps", "greedy", "temperature", "top_k", "seed", "view", "present", "layer", "head", "fresh"),
    # The stage's link is replayed leniently (kvviz.step.link.parse_link clamps each value to these kinds' bounds:
    # the model's context, the sampling limits of kvviz.step.records); layer and head are the bound pickers'.
    kinds={
        "prompt": Text(MAX_TEXT_CHARS),
        "steps": Whole(lo=0),
        "greedy": Flag(),
        "temperature": Number(),
        "top_k": Whole(),
        "seed": Whole(),
        "view": Choice(("one", "race", "gqa"), default="one"),
        "present": Flag(),
        "fresh": Flag(),
    },
)
ATTENTION_PATTERNS = Route(
    "attention_patterns",
    N_("Attention patterns"),
    ":material/grid_view:",
    reads={"source": "pat_source", "layer": "pat_layer", "head": "pat_head"},
    labels=("source",),
)
ATTENTION_OPS = Route(
    "attention_ops",
    N_("Count the work"),
    ":material/calculate:",
    reads={"model": "ops_model", "prompt": "ops_prompt", "new": "ops_new", "tab": "ops_tab"},
    labels=("tab",),
    widgets="ops_",
)
MEMORY_BUDGET = Route(
    "memory_budget",
    N_("Memory budget"),
    ":material/memory:",
    reads={"preset": "mem_preset", "context": "mem_context", "dtype": "mem_dtype", "tab": "mem_tab"},
    labels=("tab",),
    widgets="mem_",
)
SPEEDUP = Route("speedup", N_("Measured speed-up"), ":material/timer:")
CLAIMS = Route("claims", N_("Claims checked"), ":material/fact_check:", reads={"gpu": "claims_gpu"})
GLOSSARY = Route("glossary", N_("Glossary"), ":material/menu_book:", reads={"term": "term"})
TEACHERS = Route("teachers", N_("For teachers"), ":material/co_present:", reads={"plan": "teach_plan"})
INTERNALS_LAYOUT = _internals("layout", N_("Memory layout"), ":material/grid_on:")
INTERNALS_PREFIX = _internals("prefix", N_("Prefix reuse"), ":material/content_copy:")
INTERNALS_CROSSATTN = _internals("crossattn", N_("Cross-attention"), ":material/compare_arrows:")
INTERNALS_WINDOW = _internals("window", N_("Sliding windows"), ":material/view_week:")
INTERNALS_PAGING = _internals("paging", N_("Paged blocks"), ":material/view_module:")
INTERNALS_QUANT = _internals("quant", N_("Quantized caches"), ":material/compress:")
INTERNALS_SPECULATIVE = _internals("speculative", N_("Speculative rollback"), ":material/undo:")
# A selectbox writes its shown text to the URL: the policies' short names (English in a link, localized when drawn).
INTERNALS_EVICTION = Route(
    "internals_eviction",
    N_("What to forget"),
    ":material/delete_sweep:",
    INTERNALS,
    reads={"policy": "evict_policy", "budget": "evict_keep", "sinks": "evict_sinks", "drawn": "evict_drawn"},
    labels=("policy", "drawn"),
)

# In the navigation's order (the lesson first; "Start here" is the default page, at "/").
ROUTES: tuple[Route, ...] = (
    LESSON,
    JOIN,
    HOME,
    STEP_THROUGH,
    ATTENTION_PATTERNS,
    ATTENTION_OPS,
    MEMORY_BUDGET,
    SPEEDUP,
    CLAIMS,
    GLOSSARY,
    TEACHERS,
    INTERNALS_LAYOUT,
    INTERNALS_PREFIX,
    INTERNALS_CROSSATTN,
    INTERNALS_WINDOW,
    INTERNALS_PAGING,
    INTERNALS_QUANT,
    INTERNALS_SPECULATIVE,
    INTERNALS_EVICTION,
)

# The keys every page keeps in its link, whichever page it is: the reader's language and the session's model. Not a
# page (no file, not in ROUTES): kvviz.ui.language and kvviz.ui.sidebar read and write them through
# url_state.of(EVERY_PAGE), as a page does its own.
EVERY_PAGE = Route(
    "every_page",
    "",
    "",
    reads={"language": i18n.QUERY_PARAM, "model": "model"},
    kinds={"language": Text(), "model": Text()},
)


def in_place_keys() -> dict[str, list[str]]:
    """{URL path: the query keys whose change rewrites the page's history entry} (Route.in_place), for the browser."""
    return {route.name: [route.key(f) for f in route.in_place] for route in ROUTES if route.in_place}


def by_name(name: str) -> Route:
    """The route whose URL path is `name` ("step_through")."""
    for route in ROUTES:
        if route.name == name:
            return route
    raise KeyError(name)
