"""A page reads like a lesson plan, top to bottom: no function in a page script reads a module-level name that is
assigned only further down the script.

Such a function works only because of the order the script happens to run in (`engine`, `info`, `snap` assigned
below it, read as globals when it is finally called), and a reader has to jump ahead to learn what it is given.
Values reach a page's functions as parameters, or are assigned above them. Names bound by `def` or `class` are not
counted: calling a helper written lower down is ordinary. Read with `ast`, never imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from support.pages import PAGES_DIR


def _bound_names(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _module_bindings(tree: ast.Module) -> dict[str, tuple[int, bool]]:
    """name -> (line of its first module-level binding, whether a def/class binds it anywhere at module level).

    Module level includes the bodies of top-level if/for/while/with/try blocks (they run as the script runs), not
    function bodies."""
    first: dict[str, int] = {}
    defined: set[str] = set()

    def bind(name: str, line: int) -> None:
        first[name] = min(first.get(name, line), line)

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(node.name)
                bind(node.name, node.lineno)
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    bind((alias.asname or alias.name).split(".")[0], node.lineno)
                continue
            for child in ast.walk(node):  # assignments, for/with targets, walrus, except names
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                    continue
                if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                    bind(child.id, child.lineno)
                elif isinstance(child, ast.ExceptHandler) and child.name:
                    bind(child.name, child.lineno)
            for field in ("body", "orelse", "finalbody"):
                visit(getattr(node, field, []) or [])
            for handler in getattr(node, "handlers", []) or []:
                visit(handler.body)
            for case in getattr(node, "cases", []) or []:
                visit(case.body)

    visit(tree.body)
    return {name: (line, name in defined) for name, line in first.items()}


def _local_names(function: ast.AST) -> set[str]:
    """Names a function (and anything nested in it) binds for itself: parameters, assignments, imports."""
    local: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            local |= {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
            local |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
            if not isinstance(node, ast.Lambda) and node is not function:
                local.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            local |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            local.add(node.name)
    return local


def _functions(tree: ast.Module):
    """Every outermost function and lambda in the script (one nested in a function is read as part of it: its
    enclosing function's names are its own, and it is defined when the outer one runs)."""
    todo = list(ast.iter_child_nodes(tree))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield node
            if not isinstance(node, ast.Lambda):  # its decorators and defaults run in the script
                todo.extend([*node.decorator_list, *node.args.defaults, *node.args.kw_defaults])
            continue
        todo.extend(ast.iter_child_nodes(node))


def _body_reads(function: ast.AST) -> list[ast.Name]:
    """Name loads inside the function's body (its decorators and default values run where it is defined)."""
    body = [function.body] if isinstance(function, ast.Lambda) else function.body
    return [n for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]


def reads_of_later_globals(source: str) -> list[str]:
    """'line N: f reads x (assigned at line M)' for each read of a module-level name that no statement above the
    function's definition binds, and only an assignment (not a def or class) binds further down."""
    tree = ast.parse(source)
    bindings = _module_bindings(tree)
    found = []
    for function in _functions(tree):
        local = _local_names(function)
        name_of = getattr(function, "name", "lambda")
        for read in _body_reads(function):
            if read.id in local or read.id not in bindings:
                continue
            line, is_def = bindings[read.id]
            if line > function.lineno and not is_def:
                found.append(f"line {read.lineno}: {name_of} reads {read.id} (assigned at line {line})")
    return sorted(set(found))


def test_the_rule_sees_a_later_global_and_nothing_else():
    source = (
        "import math\n"
        "A = 1\n"
        "def uses_a_and_later(x):\n"
        "    y = x + A + math.pi\n"
        "    return helper(y) + engine.n + [z for z in range(y)][0]\n"
        "def helper(v):\n"
        "    return v\n"
        "engine = make()\n"
        "f = lambda: snap\n"
        "snap = 2\n"
    )
    assert reads_of_later_globals(source) == [
        "line 5: uses_a_and_later reads engine (assigned at line 8)",
        "line 9: lambda reads snap (assigned at line 10)",
    ]


@pytest.mark.parametrize("page", sorted(Path(PAGES_DIR).glob("*.py")), ids=lambda path: path.name)
def test_no_page_function_reads_a_global_assigned_below_it(page: Path):
    assert reads_of_later_globals(page.read_text()) == [], (
        f"{page.name}: pass these values as parameters, or assign them above the function"
    )
