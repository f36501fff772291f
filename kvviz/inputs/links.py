"""Shareable links: say which of a link's values a page could not use.

Pages bind their widgets to the URL with Streamlit's `bind="query-params"`, which drops an invalid value (or
clamps it) silently. A page notes the link's values before its widgets run and passes them here afterwards,
with what the URL holds now and what the widgets show, to tell the user in one line per value. UI-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvviz.i18n import _, list_sep
from kvviz.inputs import echo
from kvviz.inputs.query_values import shown as quoted


def shown_as_link(value: Any) -> list[str]:
    """How a widget value reads in a URL: True -> ['true'], 8192 -> ['8192'], ['a', 'b'] -> ['a', 'b']."""
    items = value if isinstance(value, list) else [value]
    return [str(v).lower() if isinstance(v, bool) else str(v) for v in items]


def in_words(value: Any) -> str:
    """A widget's value as a message names it: a list as its items in the language's list ("random, recent"),
    never Python's ['random']; none chosen as "none"; a number or a label as it reads."""
    if isinstance(value, list | tuple):
        return list_sep().join(quoted(str(v)) for v in value) if value else _("none")
    return quoted(str(value).lower() if isinstance(value, bool) else str(value))


def refused_value(key: str, raw: str | list[str], used: str) -> str:
    """The one sentence for a link value a page cannot use: `key=raw` named (quoted, cut when long), and what the
    page uses instead (`used`, already in the reader's words: a label, a language's name, "off")."""
    text = ",".join(raw) if isinstance(raw, list) else str(raw)
    return _("Ignored {setting} from the link (not a valid value); using {used}.").format(
        setting=echo.code(f"{key}={quoted(text)}"), used=echo.literal(used)
    )


def link_refusals(linked: Mapping[str, list[str]], now: Mapping[str, list[str]], shown: Mapping[str, Any]) -> list[str]:
    """Messages for link values the page dropped or changed: linked = the URL's values before the widgets ran,
    now = after (Streamlit removed or corrected what it refused), shown = the values the widgets hold."""
    out = []
    for key, raw in linked.items():
        value = shown.get(key)
        wanted = raw if isinstance(value, list) else raw[-1:]
        if list(now.get(key, [])) != list(raw) and shown_as_link(value) != wanted:
            out.append(refused_value(key, raw, in_words(value)))
    return out
