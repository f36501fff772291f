"""The house's census: for each page, the repository files a reader opens from the page down to the code
that calls transformers (or torch), and the page's whole import closure inside the repository (files, lines).

Two counts of the files from a page to transformers: "walk", the files on the shortest import chain from the page to
each module it reaches that imports transformers or torch (what a reader opens following each call down), and
"files to transformers", every file on any import path from the page to such a module (a detour counts too).

    python bench/import_census.py [--rev COMMIT] [--pages step_through lesson memory_budget speedup]

Reads the source with `ast` (imports anywhere in a file count: a function-level import is a file the reader opens
too; imports under `if TYPE_CHECKING:` do not, they never run), never imports it. With --rev, reads the files of that
commit (git show), so a before/after census needs no checkout. "To transformers": the files on some import path from
the page to a file that imports transformers or torch. The i18n row is the kvviz.i18n package's own closure.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODEL_LIBRARIES = ("transformers", "torch")


def _files(rev: str | None) -> dict[str, str]:
    """path -> source of every .py file under kvviz/ and pages/ (at rev, or in the working tree)."""
    if rev is None:
        paths = [p for d in ("kvviz", "pages") for p in (REPO / d).rglob("*.py")]
        return {str(p.relative_to(REPO)): p.read_text() for p in paths}
    names = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev, "kvviz", "pages"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return {
        n: subprocess.run(["git", "show", f"{rev}:{n}"], cwd=REPO, check=True, capture_output=True, text=True).stdout
        for n in names
        if n.endswith(".py")
    }


def _module_of(path: str) -> str:
    parts = Path(path).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_nodes(tree: ast.AST):
    """Every node, except those under `if TYPE_CHECKING:` (imports for annotations only: never run)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def _graph(files: dict[str, str]) -> tuple[dict[str, set[str]], set[str]]:
    """(module -> repository modules it imports, modules that import transformers or torch)."""
    modules = {_module_of(p): p for p in files}
    edges: dict[str, set[str]] = {}
    model_users: set[str] = set()
    for module, path in modules.items():
        found: set[str] = set()
        for node in _runtime_nodes(ast.parse(files[path])):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                if name.split(".")[0] in MODEL_LIBRARIES:
                    model_users.add(module)
                while name and name not in modules:  # kvviz.step.engine.StepEngine -> kvviz.step.engine
                    name = name.rpartition(".")[0]
                if name and name != module:
                    found.add(name)
                    parent = name.rpartition(".")[0]
                    while parent:  # importing a submodule runs its packages' __init__ too
                        if parent in modules:
                            found.add(parent)
                        parent = parent.rpartition(".")[0]
        edges[module] = found
    return edges, model_users


def _closure(edges: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _shortest_paths(edges: dict[str, set[str]], start: str) -> dict[str, list[str]]:
    """module -> one shortest import chain from `start` to it (breadth first, imports in name order)."""
    paths, todo = {start: [start]}, [start]
    for module in todo:
        for nxt in sorted(edges.get(module, ())):
            if nxt not in paths:
                paths[nxt] = paths[module] + [nxt]
                todo.append(nxt)
    return paths


def census(rev: str | None, pages: list[str]) -> list[dict]:
    files = _files(rev)
    edges, model_users = _graph(files)
    path_of = {_module_of(p): p for p in files}
    lines = {m: len(files[p].splitlines()) for m, p in path_of.items()}
    rows = []
    for start in [f"pages.{p}" for p in pages] + ["kvviz.i18n"]:
        if start not in edges:
            continue
        closure = _closure(edges, start)
        to_model = {m for m in closure if _closure(edges, m) & model_users}
        chains = _shortest_paths(edges, start)
        walk = {m for user in closure & model_users for m in chains[user]}
        rows.append(
            {
                "from": path_of[start],
                "walk": len(walk),
                "walk files": sorted(path_of[m] for m in walk),
                "files to transformers": len(to_model),
                "closure files": len(closure),
                "closure lines": sum(lines[m] for m in closure),
                "path files": sorted(path_of[m] for m in to_model),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rev", help="a commit to read instead of the working tree")
    parser.add_argument(
        "--pages", nargs="+", default=["step_through", "lesson", "memory_budget", "internals_eviction", "speedup"]
    )
    parser.add_argument("--list", action="store_true", help="name the files from each page to transformers")
    args = parser.parse_args()
    print(f"{'from':32} {'walk':>5} {'files to transformers':>22} {'closure files':>14} {'closure lines':>14}")
    for row in census(args.rev, args.pages):
        print(
            f"{row['from']:32} {row['walk']:>5} {row['files to transformers']:>22} {row['closure files']:>14} "
            f"{row['closure lines']:>14,}"
        )
        if args.list:
            print("    walk: " + " ".join(row["walk files"]))
            print("    on any path: " + " ".join(row["path files"]))


if __name__ == "__main__":
    main()
