"""Which libraries a set of modules loads when imported into a fresh interpreter, for many sets at once: one
interpreter imports the libraries every set shares (`preload`, none of the watched ones), then forks a child per
set, so each set starts from that clean state without paying a new interpreter and the shared imports again.

    libraries_loaded({"pages/memory_budget.py": ["kvviz.ui", ...], ...}, watch=("torch", "transformers"),
                     preload=("streamlit", "plotly.graph_objects"))
    -> {"pages/memory_budget.py": [], ...}   (the watched libraries each set loaded; an import error raises)

Run as `python -m support.fresh_imports` (from the repository, tests/ on the path) it is the interpreter itself:
the request as JSON on stdin, the answer as JSON on stdout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence

from support.repo import REPO


def libraries_loaded(
    checks: Mapping[str, Sequence[str]], watch: Sequence[str], preload: Sequence[str] = ()
) -> dict[str, list[str]]:
    """check id -> the `watch` libraries found in sys.modules after importing that check's modules."""
    request = {"checks": {k: list(v) for k, v in checks.items()}, "watch": list(watch), "preload": list(preload)}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-m", "support.fresh_imports"],
        input=json.dumps(request),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-4000:])
    answer = json.loads(out.stdout)
    errors = {k: v for k, v in answer.items() if isinstance(v, str)}
    if errors:
        raise RuntimeError(f"these imports failed: {errors}")
    return answer


def _child(modules: list[str], watch: list[str], write_fd: int) -> None:
    """In the forked child: import, then write what was loaded (or the error) to the parent and exit at once."""
    import importlib
    import traceback

    try:
        for name in modules:
            importlib.import_module(name)
        result: object = [lib for lib in watch if lib in sys.modules]
    except BaseException:  # noqa: BLE001  the parent reports any failure as text
        result = traceback.format_exc()[-2000:]
    os.write(write_fd, json.dumps(result).encode())
    os._exit(0)


def _serve() -> None:
    request = json.load(sys.stdin)
    watch = request["watch"]
    for name in request["preload"]:
        __import__(name)
    preloaded = [lib for lib in watch if lib in sys.modules]
    if preloaded:
        raise SystemExit(f"the preload loads a watched library: {preloaded}")
    answer = {}
    for check, modules in request["checks"].items():
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            _child(modules, watch, write_fd)
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as pipe:
            answer[check] = json.loads(pipe.read() or b'"the child died"')
        os.waitpid(pid, 0)
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    _serve()
