"""Maintain the message catalogs: extract kvviz's strings, update each language's .po, check translations.

    python -m kvviz.i18n.catalog update            # extract every marked string; add new ones, drop gone ones
    python -m kvviz.i18n.catalog check             # every entry translated, placeholders and tags kept
    python -m kvviz.i18n.catalog check FILE.po ... # the same for some .po files
    python -m kvviz.i18n.catalog extract [SRC ...] # print the template (.pot) of some sources (default: all)
    python -m kvviz.i18n.catalog fill TRANSLATIONS.json  # translate the catalog's untranslated entries from a
                                                   # JSON map ({"English msgid": "中文", ...}; a plural: by singular)

Strings are marked in the source with `_()`, `N_()` and `ngettext()` (kvviz.i18n); Babel's Python extractor
finds them. The CLI (kvviz/cli, kvviz/__main__.py) and the training script stay English and are not extracted.
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from babel.messages import pofile
from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_file

from kvviz import i18n

REPO = Path(__file__).resolve().parents[2]
KEYWORDS = {"_": None, "N_": None, "gettext": None, "ngettext": (1, 2), "Nn_": (1, 2)}
# The sources that speak to a user of the app. Not the CLI (English by design), nor training (a script).
_EXCLUDED = ("kvviz/cli/", "kvviz/__main__.py", "kvviz/training/", "kvviz/i18n/catalog.py")

# What a translation must carry over from its source, unchanged: str.format fields ({n}, {n:,}), printf
# fields (%s, %(name)d), plotly hover fields (%{x}), HTML tags (<b>, <br>), and markdown code spans' count.
_FORMAT_FIELD = re.compile(r"(?<!\{)\{[^{}]*\}(?!\})")
_PRINTF_FIELD = re.compile(r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[sdifgeErxX%]")
_PLOTLY_FIELD = re.compile(r"%\{[^}]*\}")
_HTML_TAG = re.compile(r"</?[a-zA-Z][^<>]*>")


def source_files() -> list[Path]:
    files = [REPO / "app.py", *sorted((REPO / "pages").glob("*.py")), *sorted((REPO / "kvviz").rglob("*.py"))]
    return [f for f in files if not any(f.relative_to(REPO).as_posix().startswith(x) for x in _EXCLUDED)]


def extract(paths: Iterable[Path] | None = None) -> Catalog:
    """A template catalog of every marked string in `paths` (default: every app source), with locations."""
    template = Catalog(project="kvviz", fuzzy=False)
    for path in source_files() if paths is None else [Path(p).resolve() for p in paths]:
        relative = path.relative_to(REPO).as_posix()
        for lineno, message, comments, context in extract_from_file("python", path, keywords=KEYWORDS):
            template.add(message, None, [(relative, lineno)], auto_comments=comments, context=context)
    return template


def fields(text: str) -> list[str]:
    """The placeholders and tags a translation must keep, sorted (a multiset)."""
    plotly = _PLOTLY_FIELD.findall(text)
    rest = _PLOTLY_FIELD.sub("", text)
    return sorted(
        plotly
        + _FORMAT_FIELD.findall(rest)
        + _PRINTF_FIELD.findall(rest)
        + _HTML_TAG.findall(rest)
        + ["`"] * (rest.count("`") % 2)
    )


def problems(catalog: Catalog) -> list[str]:
    """Untranslated entries and translations whose placeholders or tags differ from their source."""
    out = []
    for message in catalog:
        if not message.id:
            continue
        where = ", ".join(f"{f}:{n}" for f, n in message.locations[:2])
        sources = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        if not i18n.is_translated(message):
            out.append(f"untranslated ({where}): {sources[0][:80]!r}")
            continue
        for string in strings:
            if fields(string) != fields(sources[-1]) and fields(string) != fields(sources[0]):
                out.append(
                    f"placeholders differ ({where}): {sources[0][:60]!r}: {fields(sources[0])} vs {fields(string)}"
                )
    return out


def read(path: Path, locale: str = "zh_CN") -> Catalog:
    with path.open("rb") as fh:
        return pofile.read_po(fh, locale=locale)


def write(catalog: Catalog, path: Path) -> None:
    buffer = io.BytesIO()
    pofile.write_po(buffer, catalog, width=120, sort_output=False, include_previous=False, omit_header=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())


def update(code: str = i18n.CHINESE) -> Catalog:
    """Bring a language's catalog in line with the sources: new strings added (untranslated), strings no longer
    in the source dropped, translations kept."""
    path = i18n.catalog_path(code)
    catalog = read(path) if path.is_file() else Catalog(locale=path.parts[-3], project="kvviz")
    catalog.update(extract(), no_fuzzy_matching=True, update_header_comment=False)
    catalog.obsolete.clear()
    catalog.fuzzy = False
    catalog.revision_date = catalog.creation_date  # stable headers: a diff shows messages, not timestamps
    catalog.header_comment = "# Simplified Chinese messages for kvviz. Terms follow the glossary's Chinese column."
    write(catalog, path)
    return catalog


def fill(translations_json: Path, code: str = i18n.CHINESE) -> list[str]:
    """Translate the catalog's untranslated entries from a JSON map; returns the msgids still untranslated."""
    table = json.loads(translations_json.read_text(encoding="utf-8"))
    path = i18n.catalog_path(code)
    catalog = read(path)
    left = []
    for message in catalog:
        if not message.id or i18n.is_translated(message):
            continue
        key = message.id[0] if isinstance(message.id, tuple) else message.id
        if key in table:
            message.string = (table[key],) if isinstance(message.id, tuple) else table[key]
            message.flags.discard("fuzzy")
        else:
            left.append(key)
    write(catalog, path)
    return left


def main(argv: list[str]) -> int:
    command, *args = argv or ["check"]
    if command == "extract":
        buffer = io.BytesIO()
        pofile.write_po(buffer, extract([Path(a) for a in args] if args else None), width=120)
        sys.stdout.write(buffer.getvalue().decode())
        return 0
    if command == "update":
        catalog = update()
        print(
            f"{i18n.catalog_path(i18n.CHINESE).relative_to(REPO)}: {len(catalog)} messages, "
            f"{sum(1 for m in catalog if m.id and not i18n.is_translated(m))} untranslated"
        )
        return 0
    if command == "fill":
        left = fill(Path(args[0]))
        print(f"{len(left)} entries still untranslated" + "".join(f"\n  {m[:100]!r}" for m in left))
        return 1 if left else 0
    if command == "check":
        paths = [Path(a) for a in args] or [i18n.catalog_path(i18n.CHINESE)]
        found = [f"{p}: {line}" for p in paths for line in problems(read(p))]
        print("\n".join(found) or "ok")
        return 1 if found else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
