"""The test tiers: what a test needs decides its marker, and the marker decides which run picks it.

  pure     (no marker)  numbers, texts, parsers, figures: no torch, no Streamlit script run, no server. A bare
                        `pytest` runs this tier only: 1,159 tests in 60-80 s wall on this project's 2-core machine,
                        collection included, one process, load average 1 to 2 (7 December 2026), measured
                        with `time .venv/bin/python -m pytest -q -p no:cacheprovider -m "not (model or app or
                        browser or slow)"` (the same tests as a bare run); CI runs it first, alone, in two workers.
  model    loads a bundled model or builds torch / transformers objects (caches, configs' models)
  app      runs a page's script in Streamlit's AppTest
  browser  a `streamlit run` server (and mostly headless Chromium) on 127.0.0.1
  slow     a sweep or training run, fresh interpreters, a load run: minutes, whatever else it needs

`-m <expr>` selects by marker as pytest always does; `--all-tiers` runs every tier (tests/install_and_run.sh, CI).
tests/conftest.py applies the selection and checks each test against its marker: a test with no marker that loads
torch, builds an AppTest or starts a server fails and names the marker it needs, whatever ran before it in the
worker (tests/test_tiers.py runs a deliberate offender to show it). What the check reads lives here:

- `built`: how many AppTests and servers the tests have built (support.pages and support.server count them), and
  how many imports reached torch. A test's count is what grew from the start of its setup (its module and session
  fixtures included) to the end of its call; a fixture that grew a count is remembered, so a test that reuses it
  later (a module's server, a session's model) is caught too.
- Imports are watched, not sys.modules: `import torch` when torch is already loaded finds it in sys.modules and
  asks no finder, so `watch_imports` wraps builtins.__import__ (and importlib.import_module) and counts every import
  of torch, transformers and the like, and every import of a module of this repository whose top imports them
  (`route_to_torch`, read from the modules' syntax trees, so it holds whichever modules are loaded already).
"""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import sys
from collections import deque
from collections.abc import Iterator
from pathlib import Path

from support.repo import REPO

TIERS = ("model", "app", "browser", "slow")  # the markers (pyproject.toml describes them); none of them: pure
# The browser run's longest modules, longest first: the sum of their tests' durations in one clean-clone run
# (19:30-19:50 on 7 December 2026; `bash tests/install_and_run.sh -q --durations=0` prints each test's):
# every_page 307, axe_states 258, poll_letters 201, stage_class 199, lesson 162, poll 134, i18n 119, layout 90,
# first_screen 82, rehearsal 71; the other modules 70 s or less. CI's browser run hands whole modules to its two
# workers in collection order (--dist loadfile --no-loadscope-reorder), and conftest.py collects these first:
# xdist's own order (most tests first) sends the 4-test, 5-minute every-page module out among the last, where it can
# hold one worker after the other is done.
BROWSER_RUN_LONGEST_FIRST = (
    "test_browser_every_page.py",
    "test_browser_axe_states.py",
    "test_browser_poll_letters.py",
    "test_browser_stage_class.py",
    "test_browser_lesson.py",
    "test_browser_poll.py",
    "test_browser_i18n.py",
    "test_browser_layout.py",
    "test_browser_first_screen.py",
    "test_browser_rehearsal.py",
)

MARKER_OF = {"torch": "model", "apptest": "app", "server": "browser"}  # what a count needs, as a marker
WHAT = {"torch": "imported torch", "apptest": "ran a page in AppTest", "server": "started a streamlit server"}

built = {"apptest": 0, "server": 0, "torch": 0}  # how many of each the tests have built (imported) in this process
first_torch_route: list[tuple[str, ...]] = []  # the first import that reached torch since `forget_routes`: its route


def count(kind: str) -> None:
    """One more `kind` built (support.pages: an AppTest; support.server: a streamlit server)."""
    built[kind] += 1


# ----- which imports reach torch ------------------------------------------------------------------------------
TORCH = ("torch", "transformers", "accelerate", "torchvision", "torchaudio", "safetensors.torch")  # each loads torch
_TORCH_ROOTS = frozenset(name for name in TORCH if "." not in name)
_SUBMODULE_ROOTS = frozenset(name.partition(".")[0] for name in TORCH if "." in name)
_VENV = REPO / ".venv"


def is_torch(name: str) -> bool:
    return any(name == lib or name.startswith(lib + ".") for lib in TORCH)


_ours: dict[str, bool] = {}  # a root package's name -> whether it is this repository's (kvviz, support, a test module)


def _is_ours(root: str) -> bool:
    if root not in _ours:
        module = sys.modules.get(root)
        if module is None:
            return False  # not loaded yet: asked again once it is
        file = getattr(module, "__file__", None)
        path = Path(file).resolve() if file else None
        _ours[root] = path is not None and path.is_relative_to(REPO) and not path.is_relative_to(_VENV)
    return _ours[root]


def _source_of(name: str) -> Path | None:
    """The source file of `name`, a module of this repository, found from its root package's folder: never
    imported to find it (importing a package to look inside it may run a top that imports torch)."""
    root, *rest = name.split(".")
    file = getattr(sys.modules.get(root), "__file__", None)
    if not file:
        return None
    if not rest:
        return Path(file)
    if Path(file).name != "__init__.py":
        return None
    folder = Path(file).parent.joinpath(*rest)
    for path in (folder.with_suffix(".py"), folder / "__init__.py"):
        if path.is_file():
            return path
    return None


def _outside_functions(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements a module runs when imported: none inside a function, none under `if TYPE_CHECKING`."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            for other in child.orelse:
                yield from _outside_functions(ast.Module(body=[other], type_ignores=[]))
        else:
            yield from _outside_functions(child)


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


_tops: dict[str, list[str]] = {}  # a module of ours -> the modules its top imports


def _top_imports(name: str) -> list[str]:
    """The modules that importing `name` (one of this repository's) imports at its top, read from its source."""
    if name in _tops:
        return _tops[name]
    found: list[str] = []
    source = _source_of(name)
    if source is not None and source.suffix == ".py":
        package = name if source.name == "__init__.py" else name.rpartition(".")[0]
        for node in _outside_functions(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found += _with_parents(alias.name)
                continue
            try:
                base = (
                    importlib.util.resolve_name("." * node.level + (node.module or ""), package)
                    if node.level
                    else node.module or ""
                )
            except ImportError:
                continue
            found += _with_parents(base)
            ours = _is_ours(base.partition(".")[0])
            for alias in node.names:  # `from package import module` imports the module too
                child = f"{base}.{alias.name}"
                if alias.name != "*" and (is_torch(child) or (ours and _source_of(child) is not None)):
                    found.append(child)
    _tops[name] = found
    return found


_routes: dict[str, tuple[str, ...] | None] = {}


def route_to_torch(name: str) -> tuple[str, ...] | None:
    """How importing the module `name` reaches torch: (name, a module its top imports, ..., "torch"), or None."""
    if is_torch(name):
        return (name,)
    if not _is_ours(name.partition(".")[0]):
        return None
    if name not in _routes:
        came_from: dict[str, str | None] = {name: None}
        todo, route = deque([name]), None
        while todo and route is None:
            here = todo.popleft()
            for dep in _top_imports(here):
                if dep in came_from:
                    continue
                came_from[dep] = here
                if is_torch(dep):
                    route, step = [dep], here
                    while step is not None:
                        route.append(step)
                        step = came_from[step]
                    break
                if _is_ours(dep.partition(".")[0]):
                    todo.append(dep)
        _routes[name] = tuple(reversed(route)) if route else None
    return _routes[name]


def _imported(name: str, globals_: dict | None, fromlist, level: int) -> list[str]:
    """The modules an `__import__(name, globals_, ..., fromlist, level)` that just returned has imported."""
    if level:
        package = (globals_ or {}).get("__package__") or ""
        try:
            base = importlib.util.resolve_name("." * level + name, package)
        except (ImportError, ValueError):
            return []
    else:
        base = name
    names = [base]
    for attr in fromlist or ():
        if attr != "*" and f"{base}.{attr}" in sys.modules:
            names.append(f"{base}.{attr}")
    return names


def _note(name: str, globals_: dict | None, fromlist, level: int) -> None:
    """Count an import that reached torch, and remember the first one's route (cheap for every other import)."""
    root = ((globals_ or {}).get("__package__") or "" if level else name).partition(".")[0]
    if root not in _TORCH_ROOTS and root not in _SUBMODULE_ROOTS and not _is_ours(root):
        return
    for imported in _imported(name, globals_, fromlist, level):
        route = route_to_torch(imported)
        if route:
            built["torch"] += 1
            if not first_torch_route:
                first_torch_route.append(route)
            return


def forget_routes() -> None:
    """From here on `first_torch_route` names the next import that reaches torch."""
    first_torch_route.clear()


_original_import = builtins.__import__
_original_import_module = importlib.import_module


def _watched_import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002 - __import__'s own names
    module = _original_import(name, globals, locals, fromlist, level)
    _note(name, globals, fromlist, level)
    return module


def _watched_import_module(name, package=None):
    module = _original_import_module(name, package)
    _note(importlib.util.resolve_name(name, package) if name.startswith(".") else name, None, (), 0)
    return module


def watch_imports(on: bool = True) -> None:
    """Count imports that reach torch (`built["torch"]`) from now on; on=False puts the plain import back."""
    builtins.__import__ = _watched_import if on else _original_import
    importlib.import_module = _watched_import_module if on else _original_import_module
