"""Server time of Streamlit script runs inside AppTest: the one timer bench/step_click.py, bench/gallery.py and
bench/lesson_check.py share.

    script_ms = time_script_runs()   # from now on every script run appends its wall time in ms
    at.button(key="...").click().run()
    print(script_ms[-1])

It wraps ScriptRunner._run_script, the whole run from widget state to the last delta: what a server spends on a
rerun, minus the websocket.
"""
from __future__ import annotations

import time


def time_script_runs() -> list[float]:
    """Patch ScriptRunner once per process; returns the list every later script run appends its ms to."""
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    script_ms: list[float] = []
    original = ScriptRunner._run_script

    def timed(self, *a, **kw):
        began = time.perf_counter()
        try:
            return original(self, *a, **kw)
        finally:
            script_ms.append((time.perf_counter() - began) * 1000)

    ScriptRunner._run_script = timed
    return script_ms
