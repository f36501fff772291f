"""A page's state in its URL: the one reader and writer of st.query_params for a page's own keys, and for the keys
every page keeps (kvviz.routes.EVERY_PAGE: the language and the model, read and written by the sidebar).

The routes table declares what a page keeps in its link (kvviz.routes.Route): its fields and their query keys
(reads), how each is parsed and bounded (kinds, kvviz.inputs.link_values), the prefix of its other URL-bound
widgets (widgets), and which keys Back and Forward step over (in_place). A page asks for its route's state here
and never touches st.query_params itself (tests/test_url_state.py holds every page to that):

    url = url_state.of(routes.LESSON)
    url.read("step", hi=12)            -> 4, or None (absent, or refused: url.refusal names it)
    url.refusal("step", _("Opening step 1."), hi=12) -> "Ignored `step=99` from the link: step must be ..."
    url.write({"step": 5})             -> ?step=5 (only changed keys, in one message to the browser)
    url.write({"score": code})         -> in place: the browser rewrites the history entry (Route.in_place)
    url.read("layer")                  -> KeyError("the lesson page reads no 'layer' ..."): undeclared

Writing: only declared fields, never a widget's bound key (Streamlit writes those itself: bind="query-params");
a value equal to its kind's default, or None, is left out of the URL. Back and Forward: Streamlit pushes one
browser-history entry for each change of the query a run makes; kvviz/assets/web/history_entries.js (fed from
Route.in_place) turns a change of only in-place keys into a rewrite of the current entry, so Back goes to the
page's previous step, never to a mark or a stage frame. A page restores itself from its URL on a run no click of
its own started (a reload, a link, Back, Forward): the lesson reads its step and score, the stage replays its
prompt and steps as a shared link does (kvviz.step.link.parse_link over url.texts()).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping

import streamlit as st

from kvviz.inputs import query_values
from kvviz.routes import Route


class UrlState:
    """The URL state of one page (its route). Reads see the run's query as the browser sent it, with this run's
    writes applied (st.query_params)."""

    def __init__(self, route: Route) -> None:
        self.route = route

    # ----- reading -------------------------------------------------------------------------------------------
    def key(self, name: str) -> str:
        """The query key of the field `name`; KeyError, naming the page, for a field its route does not declare."""
        return self.route.key(name)

    def raw(self, name: str) -> str | None:
        """The link's text for the field (its last value when repeated), or None."""
        return st.query_params.get(self.key(name))

    def raw_all(self, name: str) -> list[str]:
        """Every value the link gives the field (a repeated key: ?lesson_class=a&lesson_class=b)."""
        return st.query_params.get_all(self.key(name))

    def holds(self, name: str) -> bool:
        return self.key(name) in st.query_params

    def read(self, name: str, **bounds: float) -> object | None:
        """The field's value, parsed by its kind with its bounds (bounds that depend on the model or the lesson
        are given here: hi=...); None when the link does not hold it or holds a value its kind refuses."""
        raw = self.raw(name)
        if raw is None:
            return None
        try:
            return self.route.kinds[name].parse(raw, self.key(name), **bounds)
        except query_values.QueryValueError:
            return None

    def refusal(self, name: str, instead: str, **bounds: float) -> str | None:
        """The one sentence for a value of the field that its kind refuses: the link's `key=value` quoted, why,
        and what the page does `instead` (a sentence in the reader's language); None when absent or usable."""
        return self.route.kinds[name].refusal(self.raw(name), self.key(name), instead, **bounds)

    def texts(self) -> dict[str, str]:
        """{key: text} for each declared key the link holds (its last value): what a library parser of the whole
        link reads (kvviz.step.link.parse_link)."""
        return {key: st.query_params[key] for key in self.route.query_keys if key in st.query_params}

    def bound_values(self, keys: Iterable[str] | None = None) -> dict[str, list[str]]:
        """{key: values} for the page's URL-bound widgets the link holds (all of them, or those of `keys`): taken
        before the widgets are drawn and again after, kvviz.inputs.links.link_refusals names what they dropped."""
        held = [k for k in st.query_params] if keys is None else [k for k in keys if k in st.query_params]
        return {k: st.query_params.get_all(k) for k in self.route.bound_keys(held)}

    def visit_opened_naming(self, name: str) -> bool:
        """Whether this visit to the page was opened by a link that names the field (a URL-bound widget's): decided
        on the visit's first run (the widget's state is dropped when the reader leaves the page, so its absence
        marks a new visit) and kept for the whole visit, so a layout chosen for the link never jumps under the
        reader."""
        key = self.key(name)
        opened = f"{key}_opened_by_link"
        if key not in st.session_state:
            st.session_state[opened] = key in st.query_params
        return bool(st.session_state.get(opened))

    def drop_refused_numbers(self, keys: Iterable[str], notices_key: str) -> list[str]:
        """Before a page's URL-bound number inputs are drawn: link values of `keys` (the page's bound widgets')
        that are no whole number (inf, 1e309, thousands of digits, words) are taken out of the URL and the page
        reruns once without them; returns the notices saying what was ignored (shown once). Streamlit's
        number_input raises OverflowError on such a value while it seeds itself from the URL."""
        keys = list(keys)
        if undeclared := [k for k in keys if not self.route.keeps(k)]:
            raise KeyError(f"the {self.route.name} page keeps no {undeclared} in its link")
        refused = query_values.refused_link_numbers(
            {k: st.query_params.get_all(k) for k in keys if k in st.query_params}, keys
        )
        if refused:
            for key in refused:
                with contextlib.suppress(Exception):  # already bound by an earlier run: Streamlit keeps its value
                    del st.query_params[key]
            st.session_state[notices_key] = [*st.session_state.get(notices_key, []), *refused.values()]
            st.rerun()  # the rerun's link no longer holds them (st.query_params updates the run's query string)
        return st.session_state.pop(notices_key, [])

    # ----- writing -------------------------------------------------------------------------------------------
    def write(self, values: Mapping[str, object]) -> None:
        """Write the page's state: each field's value as its kind writes it; a value equal to the kind's default,
        or None, is taken out of the URL. A repeated key becomes one. Only the keys that change are sent, in one
        message (an unchanged URL adds no history entry). A widget's bound key is Streamlit's to write: ValueError."""
        wanted = {}
        for name, value in values.items():
            key, kind = self.key(name), self.route.kinds[name]
            if kind.bound:
                raise ValueError(f"{self.route.name}: {name!r} is written by its widget (bind='query-params')")
            text = None if value is None else kind.text(value)
            wanted[key] = None if text == kind.default else text
        for key in [k for k, text in wanted.items() if text is None and k in st.query_params]:
            del st.query_params[key]
        changed = {k: text for k, text in wanted.items() if text is not None and st.query_params.get_all(k) != [text]}
        if changed:
            st.query_params.update(changed)

    def drop(self, *names: str) -> None:
        """Take the fields out of the URL (a bound widget's too: a value its widget cannot take, a link's flag
        that has done its work)."""
        for key in (self.key(name) for name in names):
            if key in st.query_params:
                with contextlib.suppress(Exception):  # already bound by an earlier run: Streamlit keeps its value
                    del st.query_params[key]


def of(route: Route) -> UrlState:
    """The URL state of the page `route` names."""
    return UrlState(route)
