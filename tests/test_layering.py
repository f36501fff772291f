"""The architecture holds: views in pages/, one Streamlit adapter, torch only where a model runs.

- No module under kvviz/ outside the kvviz.ui package imports streamlit.
- No page and no figure module imports torch or transformers, directly or through what it imports at its top
  level (a fresh interpreter's state imports exactly those modules and then looks in sys.modules). Pages that run a
  model get it through kvviz.ui, which imports torch inside functions, when the model is first needed.
- No import cycle between kvviz's packages (its first-level subpackages, kvviz.ui among them), and kvviz.measure
  imports only i18n.
- The concept rules (NEVER): figures never import teaching or load a model, the benchmark and the stage never
  import each other, no package imports teaching (the lesson stands on every concept, none on the lesson), i18n
  imports no other kvviz package, the memory calculator never imports model (a model converts its own dimensions),
  no package imports ui (kvviz never draws: pages and app.py use the adapter). The class poll (kvviz.poll) is one
  of the concepts: it never imports teaching or ui (kvviz.teaching.poll_choices turns a lesson question into a poll).
- The lesson's content needs no plotly: every kvviz.teaching module, and kvviz.model.dims (the record of a model's
  dimensions), imports without plotly, torch or transformers (a fresh interpreter, then sys.modules).
- Every kvviz.internals module (an idea's limits, prompts, texts and records) imports without torch or
  transformers; what runs the model is in kvviz.internals.lab and kvviz.internals.eviction_lab, with torch at
  their top. So do the other torch-free halves of a split: kvviz.model.loading (the models offered, the records of
  a load; the loaders are kvviz.model.loaders) and the config.json reading of kvviz.memory (config_json,
  config_build, config_import; transformers' config classes are kvviz.memory.hf_config), and the train and bench
  commands' flags and refusals (kvviz.training.command, kvviz.cli.bench; they import what runs the model after them).
"""

from __future__ import annotations

import ast
import functools
from itertools import pairwise
from pathlib import Path

import pytest

from support.fresh_imports import libraries_loaded
from support.pages import REPO

HEAVY = ("torch", "transformers")


def _top_level_imports(path: Path) -> list[str]:
    """Modules a file imports at module level (not inside functions), as dotted names."""
    names = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
    return names


def _importable(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _view_modules() -> list[Path]:
    return sorted((REPO / "pages").glob("*.py")) + sorted((REPO / "kvviz" / "figures").glob("*.py"))


def _view_imports(path: Path) -> list[str]:
    """The kvviz modules and heavy libraries a page or figure module imports at its top."""
    modules = sorted(
        {n for n in _top_level_imports(path) if n.split(".")[0] in ("kvviz", "pages") or n.split(".")[0] in HEAVY}
    )
    return [m for m in modules if _importable(m)]  # `from kvviz import ui` lists kvviz.ui (a module) too


def _view_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


@pytest.fixture(scope="module")
def views_loaded() -> dict[str, list[str]]:
    """Each view's top-level imports, each set in a fresh interpreter's state (one interpreter, a fork per set:
    support.fresh_imports); Streamlit and plotly, which every view imports anyway, are imported once before."""
    return libraries_loaded(
        {_view_id(p): _view_imports(p) for p in _view_modules()},
        watch=HEAVY,
        preload=("streamlit", "plotly.graph_objects", "numpy"),
    )


@pytest.mark.slow
@pytest.mark.parametrize("path", _view_modules(), ids=_view_id)
def test_pages_and_figures_do_not_load_torch(path, views_loaded):
    loaded = views_loaded[_view_id(path)]
    assert loaded == [], f"{path.name} loads {','.join(loaded)} through {_view_imports(path)}"


def test_only_kvviz_ui_imports_streamlit():
    assert (REPO / "kvviz" / "ui" / "__init__.py").exists()  # the one package exempt below
    offenders = [
        str(p.relative_to(REPO))
        for p in (REPO / "kvviz").rglob("*.py")
        if p.relative_to(REPO / "kvviz").parts[0] != "ui"
        and any(n.split(".")[0] == "streamlit" for n in _all_imports(p))
    ]
    assert offenders == []


def test_ui_modules_import_one_way_and_no_private_names():
    """kvviz.ui's modules (one concern each) import one another in one direction, and only public names."""
    modules = {p.stem: p for p in (REPO / "kvviz" / "ui").glob("*.py") if p.stem != "__init__"}
    graph: dict[str, set[str]] = {}
    private = []
    for stem, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kvviz.ui."):
                graph.setdefault(stem, set()).add(node.module.removeprefix("kvviz.ui."))
                private += [f"{path.name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert private == []
    order: list[str] = []  # a module joins once everything it imports has joined: a cycle never does

    def ready() -> list[str]:
        return [m for m in modules if m not in order and graph.get(m, set()) <= set(order)]

    while ready():
        order += ready()
    assert set(order) == set(modules), f"import cycle among {sorted(set(modules) - set(order))}"


def _all_imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


@pytest.mark.parametrize("path", sorted((REPO / "pages").glob("*.py")) + [REPO / "app.py"], ids=lambda p: p.name)
def test_every_page_calls_the_router_workaround_before_it_draws(path):
    """A fresh server's first run of a deep link executes the page file alone (Streamlit's legacy pages/ mode);
    router.ensure_router() (the one workaround, see its docstring) reroutes it through app.py. So every page calls
    it at top level, before its first other statement that is not an import, a definition or a docstring."""
    if path.name == "internals_shared.py":  # a helper of the internals pages, not a page
        return
    body = [
        n
        for n in ast.parse(path.read_text()).body
        if not isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign))
        and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
    ]
    assert body and ast.unparse(body[0]) == "router.ensure_router()", (
        f"{path.name}: first statement {ast.unparse(body[0])!r}"
    )


@functools.lru_cache(maxsize=1)
def _package_imports() -> dict[str, dict[str, list[str]]]:
    """package -> {package it imports -> the files that do}, for kvviz's first-level subpackages; every import
    counts, a function's lazy one too (a cycle through one is still a cycle a reader must untangle)."""
    packages = {p.name for p in (REPO / "kvviz").iterdir() if (p / "__init__.py").exists()}
    graph: dict[str, dict[str, list[str]]] = {name: {} for name in packages}
    for path in (REPO / "kvviz").rglob("*.py"):
        parts = path.relative_to(REPO / "kvviz").parts
        if len(parts) < 2 or parts[0] not in packages:
            continue
        for name in _all_imports(path) + _imported_submodules(path):
            dotted = name.split(".")
            if dotted[0] == "kvviz" and len(dotted) > 1 and dotted[1] in packages and dotted[1] != parts[0]:
                graph[parts[0]].setdefault(dotted[1], []).append(str(path.relative_to(REPO)))
    return graph


def _imported_submodules(path: Path) -> list[str]:
    """`from kvviz import memory` imports the package kvviz.memory: name it."""
    return [
        f"{node.module}.{a.name}"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module == "kvviz"
        for a in node.names
    ]


def test_no_import_cycle_between_kvviz_packages():
    graph = _package_imports()
    assert "measure" in graph and graph["measure"].keys() <= {"i18n"}, graph["measure"]  # the floor stands alone
    state: dict[str, str] = {}

    def visit(package: str, path: list[str]) -> None:
        state[package] = "open"
        for imported in sorted(graph[package]):
            if state.get(imported) == "open":
                cycle = path[path.index(imported) :] + [imported]
                steps = [f"{a} -> {b} ({', '.join(sorted(set(graph[a][b])))})" for a, b in pairwise(cycle)]
                pytest.fail("import cycle between kvviz packages: " + "; ".join(steps))
            if imported not in state:
                visit(imported, path + [imported])
        state[package] = "done"

    for package in sorted(graph):
        if package not in state:
            visit(package, [package])


_OTHERS = ("cli", "figures", "inputs", "internals", "measure", "memory", "model", "poll", "speedup", "step", "training")
# (package, package it never imports): why. Every import counts, a function's lazy one too.
NEVER = {
    **{
        (package, "teaching"): "the lesson stands on every concept; none stands on the lesson"
        for package in (*_OTHERS, "i18n")
    },
    **{("i18n", package): "the interface language is the ground floor" for package in (*_OTHERS, "teaching")},
    ("figures", "teaching"): "a figure draws plain arguments (a Picture's kind and data); the lesson builds them",
    ("memory", "model"): "the calculator takes any config; a model converts its own dimensions (kvviz.model.dims)",
    ("figures", "model"): "a figure never loads a model: plain records in, plotly out",
    ("speedup", "step"): "the benchmark times its own runs, not the stage's engine",
    ("step", "speedup"): "the stage's clock stands on kvviz.measure, not on the benchmark",
    **{
        (package, "ui"): "kvviz never draws: only pages and app.py use the Streamlit adapter"
        for package in (*_OTHERS, "i18n", "teaching")
    },
}
# Rules that do not hold yet, with the import that breaks them (strict xfail: when it goes, drop the entry here).
PENDING: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize(
    "package, forbidden",
    [
        pytest.param(*rule, marks=pytest.mark.xfail(strict=True, reason=PENDING[rule])) if rule in PENDING else rule
        for rule in NEVER
    ],
)
def test_concept_rules(package, forbidden):
    graph, why = _package_imports(), NEVER[(package, forbidden)]
    assert package in graph and forbidden in graph, (package, forbidden)  # a rule about a package that is gone
    offenders = sorted(set(graph[package].get(forbidden, [])))
    assert offenders == [], f"{package} imports {forbidden} ({why}): {', '.join(offenders)}"


# Modules that import without these libraries (a page, the CLI or a test may use them before any chart or model).
LIGHT: dict[str, tuple[str, ...]] = {
    **{
        f"kvviz.teaching.{p.stem}": ("plotly", *HEAVY)
        for p in sorted((REPO / "kvviz" / "teaching").glob("*.py"))
        if p.stem != "__init__"
    },  # the lesson's content: figures draw it, the handout imports them when it draws
    "kvviz.model.dims": ("plotly", *HEAVY),  # a model's dimensions, torch-free
    # the class poll: a phone's page and the store's check (`python -m kvviz.poll.store`) draw no chart at import
    **{f"kvviz.poll.{name}": ("plotly", *HEAVY) for name in ("question", "store")},
    "kvviz.routes": ("plotly", *HEAVY),  # the routes table: app.py, every page and the lesson's links read it
    # each cache-internals idea: its limits, prompts and texts; pages import it, and the lab that runs it (torch at
    # its top) inside the function that runs the model
    **{
        f"kvviz.internals.{p.stem}": HEAVY
        for p in sorted((REPO / "kvviz" / "internals").glob("*.py"))
        if p.stem != "__init__"
    },
    # the models offered and the records of a load: the sidebar, the home page and the lesson read them before torch
    "kvviz.model.loading": HEAVY,
    # a config.json read as written (no model_type) needs no transformers: the memory page's form and the pure tests
    **{f"kvviz.memory.{name}": HEAVY for name in ("config_json", "config_build", "config_import")},
    # the flags and refusals of `python -m kvviz train` and `bench`: a refused run answers before torch is imported
    "kvviz.training.command": HEAVY,
    "kvviz.cli.bench": HEAVY,
}


@pytest.fixture(scope="module")
def light_loaded() -> dict[str, list[str]]:
    """Each light module imported alone into a fresh interpreter's state (support.fresh_imports)."""
    watched = sorted({lib for libs in LIGHT.values() for lib in libs})
    return libraries_loaded({module: [module] for module in LIGHT}, watch=watched)


@pytest.mark.slow
@pytest.mark.parametrize("module", sorted(LIGHT))
def test_light_modules_import_no_plotly_or_torch(module, light_loaded):
    loaded = [lib for lib in light_loaded[module] if lib in LIGHT[module]]
    assert loaded == [], f"importing {module} loads {','.join(loaded)}"
