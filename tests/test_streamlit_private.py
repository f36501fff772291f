"""No private Streamlit name outside kvviz/ui/router.py, the one documented place (its docstring says why each read
is there), and the Streamlit version that place was written for is the one requirements.txt pins.

Read from the source (ast), no Streamlit run. A private name is either an import of a Streamlit module that is not
public API (anything under streamlit. but the few documented ones below, or a name starting with "_"), or an
attribute starting with "_" (not a dunder) read from a Streamlit object: a name a Streamlit import bound, or what a
call, attribute or subscript of one returned, followed through plain assignments (`state = get_session_state()`,
then `state._key_id_mapper`), and getattr(obj, "_name") the same way.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from support.repo import REPO

ROUTER = REPO / "kvviz" / "ui" / "router.py"

# Streamlit modules a page may import from beyond `streamlit` itself: the documented ones.
PUBLIC_MODULES = {"streamlit", "streamlit.components.v1", "streamlit.column_config", "streamlit.testing.v1"}
# Names documented outside the API reference: Streamlit's multithreading guide
# (docs.streamlit.io/develop/concepts/design/multithreading) imports these two from streamlit.runtime.scriptrunner.
# streamlit.web.cli is the `streamlit` command itself: its package metadata's console script is
# streamlit.web.cli:main (kvviz.ui.warm runs it in-process).
PUBLIC_NAMES = {
    ("streamlit.runtime.scriptrunner", "get_script_run_ctx"),
    ("streamlit.runtime.scriptrunner", "add_script_run_ctx"),
    ("streamlit.web", "cli"),
}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _root(node: ast.AST) -> ast.AST:
    """The name an expression starts from: st in st.session_state._state, get_session_state in
    get_session_state()._state."""
    while True:
        if isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.NamedExpr):
            node = node.value
        else:
            return node


def private_streamlit_reads(source: str) -> list[str]:
    """Each private Streamlit name `source` uses, as `line: code`."""
    tree = ast.parse(source)
    bound: set[str] = set()  # names that hold a Streamlit module, function or object
    found = []

    def from_streamlit(node: ast.AST) -> bool:
        root = _root(node)
        return isinstance(root, ast.Name) and root.id in bound

    def say(node: ast.AST) -> None:
        found.append(f"{node.lineno}: {ast.unparse(node)}")

    for node in ast.walk(tree):  # imports first, wherever they are (a function's own import counts)
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "streamlit":
                    bound.add((alias.asname or alias.name).split(".")[0])
                    if alias.name not in PUBLIC_MODULES or any(map(_private, alias.name.split("."))):
                        say(node)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "streamlit":
            bound.update(alias.asname or alias.name for alias in node.names)
            for alias in node.names:
                public = node.module in PUBLIC_MODULES or (node.module, alias.name) in PUBLIC_NAMES
                if not public or _private(alias.name) or any(map(_private, node.module.split("."))):
                    say(node)
    grew = True
    while grew:  # x = <a Streamlit expression>: x is a Streamlit object too (also walrus and for targets)
        grew = False
        for node in ast.walk(tree):
            pairs = []
            if isinstance(node, ast.Assign):
                pairs = [(t, node.value) for t in node.targets]
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
                pairs = [(node.target, node.value)]
            elif isinstance(node, ast.For | ast.comprehension):
                pairs = [(node.target, node.iter)]
            for target, value in pairs:
                if isinstance(target, ast.Name) and target.id not in bound and from_streamlit(value):
                    bound.add(target.id)
                    grew = True
    for node in ast.walk(tree):
        if _reads_private(node, from_streamlit):
            say(node)
    return found


def _reads_private(node: ast.AST, from_streamlit) -> bool:
    """obj._name, getattr(obj, "_name") or hasattr(obj, "_name"), obj a Streamlit object."""
    if isinstance(node, ast.Attribute):
        return _private(node.attr) and from_streamlit(node.value)
    named = (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "hasattr")
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    )
    return named and _private(node.args[1].value) and from_streamlit(node.args[0])


def _app_sources() -> list[Path]:
    return sorted((REPO / "kvviz").rglob("*.py")) + sorted((REPO / "pages").glob("*.py")) + [REPO / "app.py"]


def test_no_module_but_the_router_reads_a_private_streamlit_name():
    offenders = {
        str(path.relative_to(REPO)): reads
        for path in _app_sources()
        if path != ROUTER and (reads := private_streamlit_reads(path.read_text()))
    }
    assert offenders == {}, "move each read into kvviz/ui/router.py (and say why there), or use public API"


def test_the_router_is_where_they_are():
    """The check sees the reads router.py documents (else it would pass on anything)."""
    reads = "\n".join(private_streamlit_reads(ROUTER.read_text()))
    for name in ("PagesManager", "NumberInputSerde", "_key_id_mapper", "_rerun_data", "_new_widget_state"):
        assert name in reads, reads


@pytest.mark.parametrize(
    "offender",
    [
        "from streamlit.runtime.state import get_session_state\nget_session_state()._state",
        "import streamlit as st\nst.session_state._state",
        "import streamlit as st\nx = st.session_state\ny = x._state",
        "from streamlit.runtime.scriptrunner import get_script_run_ctx\nctx = get_script_run_ctx()\n"
        "ctx.script_requests._rerun_data",
        "import streamlit as st\ngetattr(st.session_state, '_state')",
        "from streamlit.elements.widgets.number_input import NumberInputSerde",
        "import streamlit.runtime.state",
        "from streamlit import _private_thing",
        "def f():\n    from streamlit.runtime.pages_manager import PagesManager\n    PagesManager.uses_pages_directory = False",
        "import streamlit as st\nif (s := st.context)._headers: pass",
    ],
    ids=range(10),
)
def test_the_check_finds_a_deliberate_offender(offender):
    assert private_streamlit_reads(offender), offender


@pytest.mark.parametrize(
    "clean",
    [
        "import streamlit as st\nst.session_state['x'] = st.query_params.get('lang')\nst.context.locale",
        "import sys\nsys._getframe(1)",  # not Streamlit
        "import streamlit.components.v1 as components\ncomponents.html('')",
        "from streamlit.runtime.scriptrunner import get_script_run_ctx\nget_script_run_ctx(suppress_warning=True)",
        "class A:\n    def f(self):\n        return self._x",
        "import streamlit as st\nst.session_state.__class__",
        "from streamlit.web import cli\ncli.main()",
    ],
    ids=range(7),
)
def test_the_check_passes_public_use(clean):
    assert private_streamlit_reads(clean) == []


def test_streamlit_is_pinned_to_the_version_the_router_was_written_for():
    """An upgrade changes requirements.txt; this then fails until router.py's private reads are read again on the
    new version and its docstring names it."""
    pins = re.findall(r"^streamlit==(\d+)\.(\d+)\.\d+\s*$", (REPO / "requirements.txt").read_text(), re.M)
    assert len(pins) == 1, "streamlit is pinned exactly once, ==X.Y.Z, in requirements.txt"
    major, minor = pins[0]
    assert f"Streamlit {major}.{minor}," in ROUTER.read_text().split('"""')[1], (
        f"kvviz/ui/router.py's docstring names the pinned Streamlit {major}.{minor}"
    )
