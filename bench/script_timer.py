"""Server time of Streamlit script runs inside AppTest: the one timer bench/step_click.py, bench/gallery.py and
bench/lesson_check.py share.

    script_ms = time_script_runs()   # from now on every script run appends its wall time in ms
    at.button(key="...").click().run()
    print(script_ms[-1])

It wraps ScriptRunner._run_script, the whole run from widget state to the last delta: what a server spends on a
rerun, minus the websocket (wall time, and optionally CPU time on the script's thread).
"""

from __future__ import annotations

import time


def time_script_runs(cpu_ms: list[float] | None = None) -> list[float]:
    """Patch ScriptRunner once per process; returns the list every later script run appends its ms to. `cpu_ms`,
    if given, gets each run's CPU time on its thread (what a click costs the server, whatever the machine's load).

    AppTest compiles the page afresh for every run (a new ScriptCache each time); a server compiles it once. The
    compiled script is kept across runs here, so the timings are a server's."""
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    compiled: dict[str, object] = {}
    get_bytecode = ScriptCache.get_bytecode

    def cached(self, script_path: str):
        if script_path not in compiled:
            compiled[script_path] = get_bytecode(self, script_path)
        return compiled[script_path]

    ScriptCache.get_bytecode = cached
    script_ms: list[float] = []
    original = ScriptRunner._run_script

    def timed(self, *a, **kw):
        began, began_cpu = time.perf_counter(), time.thread_time()
        try:
            return original(self, *a, **kw)
        finally:
            script_ms.append((time.perf_counter() - began) * 1000)
            if cpu_ms is not None:
                cpu_ms.append((time.thread_time() - began_cpu) * 1000)

    ScriptRunner._run_script = timed
    return script_ms
