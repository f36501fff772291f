"""kvviz.routes: the one table of pages. Every link the library and the pages build names a route of the table and
only query keys that route declares, and every declared key is read by its page's script (a bound widget under that
key, or the page's URL state, kvviz.ui.url_state, naming the field): a page that renames a key fails here, not in a
classroom. Pure: the sources are read (ast), the pure library is imported, no page runs."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from kvviz import claims, routes
from kvviz.step import link as stage_link
from kvviz.teaching import glossary, guide, lesson
from support.pages import REPO

PAGES = REPO / "pages"
PAGE_HELPERS = {"internals_shared"}  # a module the internals pages import, not a page
# Library modules that build links: their `<route>.query(field=...)` calls are resolved in the module itself.
LINK_MODULES = ("kvviz.teaching.lesson", "kvviz.teaching.guide", "kvviz.claims", "kvviz.step.link")
URL_READ = ('bind="query-params"',)  # how a page's widget reads its key from the URL (Streamlit's own sync)
URL_STATE_READS = {"raw", "raw_all", "holds", "read", "refusal", "drop", "key", "visit_opened_naming"}


def _sources() -> list[Path]:
    return [REPO / "app.py", *sorted(PAGES.glob("*.py")), *sorted((REPO / "kvviz").rglob("*.py"))]


def _module_path(module: str) -> Path:
    return REPO / (module.replace(".", "/") + ".py")


# ----- the table ------------------------------------------------------------------------------------------------
def test_the_table_names_every_page_once():
    names = [r.name for r in routes.ROUTES]
    assert len(set(names)) == len(names)
    assert [r for r in routes.ROUTES if r.default] == [routes.HOME]
    assert {p.stem for p in PAGES.glob("*.py")} - PAGE_HELPERS == set(names)
    for route in routes.ROUTES:
        assert (REPO / route.file).is_file(), route.file
        assert route.title and route.icon.startswith(":material/") and route.section in ("", routes.INTERNALS)
        assert routes.by_name(route.name) is route
    assert routes.HOME.url() == "/" and routes.LESSON.url(routes.LESSON.query(step=1)) == "/lesson?step=1"


def test_a_query_names_only_the_fields_its_page_reads():
    assert routes.MEMORY_BUDGET.query(preset="gpt2", context=1000) == {"mem_preset": "gpt2", "mem_context": "1000"}
    with pytest.raises(KeyError, match="memory_budget page reads no 'layer'"):
        routes.MEMORY_BUDGET.query(layer=3)


def test_no_file_path_outside_the_table():
    """A page's file is written once: Route.file (from PAGE_FOLDER). No source spells "pages/...", app.py included."""
    found = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for path in _sources()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("pages/")
    ]
    assert found == []
    assert "routes.ROUTES" in (REPO / "app.py").read_text()  # the navigation is built from the table


# ----- the links the library builds ----------------------------------------------------------------------------
def _assert_link(route: routes.Route, query: dict[str, str], where: str) -> None:
    assert any(route is r for r in routes.ROUTES), where
    undeclared = set(query) - set(route.query_keys)
    assert not undeclared, f"{where}: {route.name} does not read {sorted(undeclared)}"


def test_library_links_name_routes_and_their_keys():
    for n, step in enumerate(lesson.STEPS, start=1):
        _assert_link(step.page, {}, f"lesson step {n}")
    for n, step in enumerate(lesson.STEPS, start=1):
        if step.preset:  # computed from a published model's preset: no engine needed
            _assert_link(step.page, step.ask(None).page_query, f"lesson step {n}'s link")
    for term in glossary.TERMS:
        if term.see is not None:
            _assert_link(term.see, {}, f"glossary {term.name}")
    for block in guide.PLAN_30 + guide.PLAN_45:
        _assert_link(block.page, block.query, f"plan link {block.link}")
        assert block.link.split("?")[0] == block.page.url()
    for c in claims.all_claims():
        _assert_link(c.page, c.page_query, f"claim {c.key}")
    stage = stage_link.StageLink("ROMEO:", 3, True, 0.8, 40, 7, "race", True, 2, 1)
    _assert_link(routes.STEP_THROUGH, stage.query(), "the stage's link")
    assert stage_link.parse_link(stage.query(), 100) == stage


def _route_query_calls(path: Path) -> list[tuple[ast.Call, str]]:
    """`X.query(field=...)` calls (keyword fields) and their receiver's source."""
    return [
        (node, ast.unparse(node.func.value))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "query"
        and node.keywords
    ]


@pytest.mark.parametrize("module", LINK_MODULES)
def test_every_query_the_library_writes_names_declared_fields(module):
    """Read from the source, so a branch no pure test runs (a lesson step that needs the model) is held too."""
    namespace = vars(importlib.import_module(module))
    calls = _route_query_calls(_module_path(module))
    assert calls, module
    for call, receiver in calls:
        route = eval(receiver, dict(namespace))  # noqa: S307 - a name or attribute from kvviz's own source
        assert isinstance(route, routes.Route), f"{module}:{call.lineno}: {receiver}"
        unknown = [k.arg for k in call.keywords if k.arg not in route.reads]
        assert not unknown, f"{module}:{call.lineno}: {route.name} reads no {unknown}"


def test_no_page_key_is_written_in_the_library():
    """The keys that carry a page's prefix (mem_preset for the field preset, step_layer, lesson_class ...) are
    written in the table and the pages only; a plain word (prompt, seed, top_k) is also a field's name, written by
    the library in other roles. (kvviz/ui.py, the Streamlit adapter, is left to its own split.)"""
    keys = {key for r in routes.ROUTES for name, key in r.reads.items() if key != name}
    assert {"mem_preset", "ops_tab", "pat_source", "step_layer", "lesson_class"} <= keys
    allowed = {REPO / "kvviz" / "routes.py", REPO / "kvviz" / "ui.py"}
    found = [
        f"{path.relative_to(REPO)}:{node.lineno}: {node.value}"
        for path in (REPO / "kvviz").rglob("*.py")
        if path not in allowed
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value in keys
    ]
    assert found == []


# ----- the links the pages build --------------------------------------------------------------------------------
def _page_links() -> list[tuple[Path, ast.Call]]:
    return [
        (path, node)
        for path in sorted(PAGES.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "page_link"
    ]


def test_page_links_name_a_route_and_keep_the_language_and_the_model():
    links = _page_links()
    assert len(links) >= 10
    for path, call in links:
        where = f"{path.name}:{call.lineno}"
        target = call.args[0]
        assert isinstance(target, ast.Attribute) and target.attr == "file", where  # <route>.file
        try:
            route = eval(ast.unparse(target.value), {"routes": routes})  # noqa: S307
        except NameError:  # a Route held by a record (step.page, term.see, block.page, c.page): checked above
            route = None
        assert route is None or isinstance(route, routes.Route), where
        query = next((k.value for k in call.keywords if k.arg == "query_params"), None)
        assert query is not None, f"{where}: the link drops lang and model"
        # what the query is built from: its expression, the page's functions it calls, the names it reads
        tree = ast.parse(path.read_text())
        helpers = {f.name: ast.unparse(f) for f in tree.body if isinstance(f, ast.FunctionDef)}
        names = {n.id for n in ast.walk(query) if isinstance(n, ast.Name)}
        built = (
            ast.unparse(query)
            + "".join(helpers.get(name, "") for name in names)
            + "".join(
                ast.unparse(a.value)
                for a in ast.walk(tree)
                if isinstance(a, ast.Assign) and any(isinstance(t, ast.Name) and t.id in names for t in a.targets)
            )
        )
        assert "link_params" in built, f"{where}: the link drops lang or model (links.link_params)"
        assert not any(
            isinstance(key, ast.Constant) for node in ast.walk(query) if isinstance(node, ast.Dict) for key in node.keys
        ), f"{where}: a key written by hand (use route.query)"


def test_every_query_the_pages_write_names_declared_fields():
    calls = [
        (path, call, receiver)
        for path in sorted(PAGES.glob("*.py"))
        for call, receiver in _route_query_calls(path)
        if receiver.startswith("routes.")
    ]
    assert calls
    for path, call, receiver in calls:
        route = eval(receiver, {"routes": routes})  # noqa: S307
        unknown = [k.arg for k in call.keywords if k.arg not in route.reads]
        assert not unknown, f"{path.name}:{call.lineno}: {route.name} reads no {unknown}"


# ----- every declared key is read by its page ------------------------------------------------------------------
def _reads(tree: ast.Module, source: str, key: str) -> bool:
    """Whether the page script binds a widget to `key`: the key's literal sits in a statement that binds a widget
    (bind="query-params"), or is passed to one of the page's functions that binds a widget under that key, or
    names a module-level constant such a statement uses."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def innermost(node: ast.AST) -> ast.stmt:
        while not isinstance(node, ast.stmt):
            node = parents[node]
        return node

    lines = source.splitlines()

    def reads_url(node: ast.AST) -> bool:  # the node's lines
        text = "\n".join(lines[node.lineno - 1 : node.end_lineno])
        return any(mark in text for mark in URL_READ)

    binders = {f.name for f in tree.body if isinstance(f, ast.FunctionDef) and reads_url(f)}
    for const in (n for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value == key):
        stmt = innermost(const)
        if reads_url(stmt):
            return True
        calls = [
            c
            for c in ast.walk(stmt)
            if isinstance(c, ast.Call)
            and isinstance(c.func, ast.Name)
            and c.func.id in binders
            and any(a is const for a in ast.walk(c))
        ]
        if calls:
            return True
        if stmt in tree.body and isinstance(stmt, ast.Assign):  # a constant: SCORE_PARAM = "lesson_score"
            names = {t.id for t in stmt.targets if isinstance(t, ast.Name)}
            if any(
                isinstance(n, ast.Name) and n.id in names and reads_url(innermost(n))
                for n in ast.walk(tree)
                if n is not stmt.targets[0]
            ):
                return True
    return False


def _url_state_fields(tree: ast.Module) -> dict[str, set[str]]:
    """{route's name in the table (LESSON): the fields the page names through url_state.of(routes.LESSON)}: the
    first argument of a read (url.read("step")), the keys of a write (url.write({"score": code})); "*" for the
    whole link handed to a library parser (url.texts(): the stage's parse_link reads every field)."""
    held = {}  # the page's names for a URL state: {"URL": "LESSON"}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and ast.unparse(node.value.func) == "url_state.of"
            and isinstance(node.targets[0], ast.Name)
        ):
            held[node.targets[0].id] = ast.unparse(node.value.args[0]).removeprefix("routes.")
    named: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        receiver = node.func.value
        if isinstance(receiver, ast.Name) and receiver.id in held:
            route = held[receiver.id]
        elif isinstance(receiver, ast.Call) and ast.unparse(receiver.func) == "url_state.of":
            route = ast.unparse(receiver.args[0]).removeprefix("routes.")
        else:
            continue
        fields = named.setdefault(route, set())
        if node.func.attr in URL_STATE_READS and node.args and isinstance(node.args[0], ast.Constant):
            fields.add(node.args[0].value)
        elif node.func.attr == "write" and node.args and isinstance(node.args[0], ast.Dict):
            fields.update(k.value for k in node.args[0].keys if isinstance(k, ast.Constant))
        elif node.func.attr == "texts":
            fields.add("*")
    return named


def _table_name(route: routes.Route) -> str:
    return next(name for name, value in vars(routes).items() if value is route)


@pytest.mark.parametrize("route", [r for r in routes.ROUTES if r.reads], ids=lambda r: r.name)
def test_every_declared_key_is_read_by_its_page(route):
    """A bound field's key is a widget's key (bind="query-params"); any other field is named through the page's
    URL state (or the whole link is handed to a parser that reads it, as the stage's parse_link does)."""
    source = (REPO / route.file).read_text()
    tree = ast.parse(source)
    named = _url_state_fields(tree).get(_table_name(route), set())
    unread = [
        route.key(field)
        for field, kind in route.kinds.items()
        if not (_reads(tree, source, route.key(field)) if kind.bound else field in named or "*" in named)
    ]
    assert not unread, f"{route.file} does not read {unread} from its URL (renamed? update kvviz/routes.py)"


def test_a_page_names_only_fields_its_route_declares():
    """url.read("stepp") would fail at run time (KeyError); read here from the source, a branch no test runs too."""
    for path in sorted(PAGES.glob("*.py")):
        for table_name, fields in _url_state_fields(ast.parse(path.read_text())).items():
            route = getattr(routes, table_name)
            assert fields - {"*"} <= set(route.reads), (
                f"{path.name}: {route.name} declares no {fields - set(route.reads)}"
            )


def test_in_place_fields_are_keys_the_page_reads_and_reach_the_browser_by_key():
    """Route.in_place names fields (a link names the field, never the key); the browser's rule gets their keys."""
    keys = routes.in_place_keys()
    assert keys["lesson"] == ["lesson_score"]  # a Y/N mark is no history entry; a step is one
    assert "step" not in keys["lesson"] and "lesson_class" not in keys["lesson"]
    assert set(keys["step_through"]) == set(routes.STEP_THROUGH.query_keys)  # the stage writes all of its state
    with pytest.raises(ValueError, match="in-place fields"):
        routes.Route("x", "X", ":material/home:", reads={"a": "x_a"}, in_place=("b",))
