"""The test harness: one tests/support/, and no test module leaning on another.

Read from every module's syntax tree (never run): no test module imports another test module's names or
conftest.py's (fixtures reach a test by name; what modules share lives in tests/support/, which imports no test
module either). Outside support/ (and the fixtures in conftest.py) a module writes none of what support/ holds:
a free port (a socket of its own), a server launcher (a process running streamlit, a poll of /_stcore/health),
Chromium launched by hand (Playwright's sync_playwright, a browser context), an AppTest built by hand
(AppTest.from_file/from_function/from_string: support.pages.app_test), or the repository's root spelled again
(__file__, an absolute path into the folder holding it: support.pages.REPO and SHARED). And every module that
marks a browser test is one that a browser run of tests/install_and_run.sh collects.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from support.pages import REPO

TESTS = REPO / "tests"
SUPPORT = TESTS / "support"
TEST_MODULES = frozenset(p.stem for p in TESTS.glob("*.py"))  # test_*.py and conftest.py: never imported
APPTEST_BUILDERS = {"from_file", "from_function", "from_string"}
SUBPROCESS_CALLS = {"Popen", "run", "call", "check_call", "check_output"}
WORKSPACE = f"{REPO.parent}/"  # the folder holding the repository (and ../shared): never written out absolute


def _strings(node: ast.AST) -> list[str]:
    """Every string constant in `node`'s subtree, f-strings' literal parts included."""
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _called(node: ast.Call) -> str:
    """The name a call calls: `f` of f(...), `attr` of x.attr(...)."""
    if isinstance(node.func, ast.Name):
        return node.func.id
    return node.func.attr if isinstance(node.func, ast.Attribute) else ""


def offences(source: str, *, shared: bool = False) -> list[str]:
    """What `source` (a module under tests/) does that the harness forbids, as "line: what". shared: a module of
    support/ or conftest.py, where the free port, the launcher, Chromium and the AppTest builder live."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in TEST_MODULES or top == "tests":
                    found.append(f"{line}: imports test module {alias.name}")
                elif top == "socket" and not shared:
                    found.append(f"{line}: a socket of its own (free ports: support.server)")
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            top = module.split(".")[0]
            if node.level or top in TEST_MODULES or top == "tests":
                found.append(f"{line}: imports from test module {'.' * node.level}{module}")
            elif top == "socket" and not shared:
                found.append(f"{line}: a socket of its own (free ports: support.server)")
            elif (
                module == "playwright.sync_api" and any(a.name == "sync_playwright" for a in node.names) and not shared
            ):
                found.append(f"{line}: launches Playwright itself (support.browser.chromium, the browser fixture)")
        elif shared:
            continue
        elif isinstance(node, ast.FunctionDef) and ("free_port" in node.name or "port_free" in node.name):
            found.append(f"{line}: defines {node.name} (free ports: support.server)")
        elif isinstance(node, ast.Call):
            called = _called(node)
            strings = _strings(node)
            if called in SUBPROCESS_CALLS and "streamlit" in strings:
                found.append(f"{line}: starts streamlit itself (support.server.streamlit_server)")
            elif called == "urlopen" and any("_stcore/health" in s for s in strings):
                found.append(f"{line}: polls /_stcore/health itself (support.server.streamlit_server)")
            elif (
                called == "launch"
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "chromium"
            ):
                found.append(f"{line}: launches Chromium itself (support.browser.chromium, the browser fixture)")
            elif called == "new_context":
                found.append(f"{line}: opens a browser context itself (support.browser.new_tab, open_tab)")
            elif (
                called in APPTEST_BUILDERS
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "AppTest"
            ):
                found.append(f"{line}: builds an AppTest itself (support.pages.app_test, open_page)")
        elif isinstance(node, ast.Name) and node.id == "__file__":
            found.append(f"{line}: spells a path from __file__ (support.pages.REPO)")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(WORKSPACE):
            found.append(f"{line}: an absolute path {node.value!r} (support.pages.REPO, SHARED)")
    return found


def _modules() -> list[Path]:
    return sorted(TESTS.glob("*.py")) + sorted(SUPPORT.glob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(TESTS)))
def test_the_module_leans_on_support_only(path):
    shared = path.parent == SUPPORT or path.name == "conftest.py"
    assert offences(path.read_text(encoding="utf-8"), shared=shared) == []


def test_the_harness_check_finds_each_thing_it_forbids():
    """The check itself, on a module that does each forbidden thing once (and a support module doing its own)."""
    module = f'''
import socket
from conftest import APP_TIMEOUT_S
from test_page_step import _cache_len
import test_browser
from .sibling import helper
from playwright.sync_api import sync_playwright
from streamlit.testing.v1 import AppTest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = "{WORKSPACE}shared/data/tinyshakespeare.txt"

def _free_port():
    return 0

def serve(port):
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)])
    urllib.request.urlopen(f"http://127.0.0.1:{{port}}/_stcore/health")
    browser = pw.chromium.launch(headless=True)
    context = browser.new_context()
    return AppTest.from_file("app.py"), AppTest.from_function(serve)
'''
    found = [o.split(": ", 1)[1] for o in offences(module)]
    assert len(found) == 15, found
    for words in (
        "socket of its own",
        "test module conftest",
        "test module test_page_step",
        "test module test_browser",
        "test module .sibling",
        "Playwright itself",
        "__file__",
        f"'{WORKSPACE}shared",
        "defines _free_port",
        "starts streamlit",
        "polls /_stcore/health",
        "Chromium itself",
        "browser context",
        "builds an AppTest",
    ):
        assert any(words in f for f in found), (words, found)
    # support/ holds the port, the launcher, Chromium and the builder; it imports no test module either
    assert [o.split(": ", 1)[1] for o in offences(module, shared=True)] == [
        "imports from test module conftest",
        "imports from test module test_page_step",
        "imports test module test_browser",
        "imports from test module .sibling",
    ]
    # a test that runs python -c with AppTest in its code, or checks a manifest's probe path, is not a launcher
    assert (
        offences(
            'subprocess.run([sys.executable, "-c", "from streamlit.testing.v1 import AppTest"])\n'
            'assert probe == {"path": "/_stcore/health"}\n'
        )
        == []
    )


def test_the_browser_runs_longest_modules_are_browser_modules_here():
    """The modules CI's browser run sends out first (support.tiers.BROWSER_RUN_LONGEST_FIRST) exist and are
    browser-tier modules: a renamed or moved module would otherwise fall silently to the end of the run."""
    from support import tiers

    for name in tiers.BROWSER_RUN_LONGEST_FIRST:
        assert "pytestmark = pytest.mark.browser" in (TESTS / name).read_text(encoding="utf-8"), name


def _has_browser_mark(tree: ast.Module) -> bool:
    """The module marks a test, or all of them (pytestmark), with pytest.mark.browser."""
    return any(
        isinstance(node, ast.Attribute)
        and node.attr == "browser"
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "mark"
        for node in ast.walk(tree)
    )


def test_every_browser_test_is_in_one_of_the_scripts_browser_runs():
    """tests/install_and_run.sh runs the browser tier in two runs, each collecting only its own modules: the
    modules with their own servers and clients it names (own_clients), and the other Chromium modules
    (tests/test_browser*.py). A browser test anywhere else would run in neither (the other runs leave the browser
    tier out), and pass unseen."""
    script = (TESTS / "install_and_run.sh").read_text(encoding="utf-8")
    assert "for module in tests/test_browser*.py; do" in script
    own_clients = set(re.search(r"^own_clients=\(([^)]*)\)", script, re.M).group(1).split())
    chromium_run = {f"tests/{path.name}" for path in TESTS.glob("test_browser*.py")} - own_clients
    marked = {
        f"tests/{path.name}"
        for path in TESTS.glob("test_*.py")
        if _has_browser_mark(ast.parse(path.read_text(encoding="utf-8")))
    }
    assert own_clients <= marked, own_clients - marked
    assert marked <= chromium_run | own_clients, marked - chromium_run - own_clients
