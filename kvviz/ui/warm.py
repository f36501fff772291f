"""Warm the bundled model in the server before a class needs it.

A class's first page is often a deep link to a page that runs the model: the lesson's step 1 on the projector. On a
fresh server that visit waited for torch, transformers' GPT-2 and the weights, with "Loading the model..." on the
projector for most of it (docs/measurements.md, "First visit"). The warm-up does that work in a daemon thread of the
server process, into the very cache entry the pages read (kvviz.ui.models.preload_model: the same st.cache_resource
entry as cached_model, under the same shared-mode policy). A page opened after it finds the model loaded; a page
opened while it runs waits for that same load (Streamlit holds one lock per cache entry) and never starts a second.

Two starts, whichever comes first, once per process:

- at the server's start: `python -m kvviz.ui.warm run app.py [streamlit's flags]` is `streamlit run` with the
  warm-up started as soon as Streamlit has read its configuration (the policy depends on server.address).
  deploy/run_class.sh starts its replicas so;
- 2 s after a session's first page (app.py): a server started as plain `streamlit run app.py` has the model loaded
  while its first visitor reads that page.

Nothing is drawn from the thread and no page script imports torch for it: the first view stays torch-free. The
thread holds the GIL for most of its imports, so a first page opened during the warm-up renders more slowly
(measured beside the lesson's figures in docs/measurements.md); it prints one line to stderr when done.
"""

from __future__ import annotations

import sys
import threading
import time

_started = threading.Event()
_finished = threading.Event()
RUNTIME_WAIT_S = 120.0  # the server's start: Streamlit creates its runtime after reading its config (a second or two)
DONE_LINE = "kvviz warm-up: the bundled model is loaded"  # printed to stderr (bench/first_render.py waits for it)


def start(delay_s: float = 0.0, wait_for_runtime: bool = False) -> bool:
    """Start the warm-up thread, once per process (False when it was already started). delay_s: wait that long
    first (after a page's run: the page's own work goes first). wait_for_runtime: wait until Streamlit's runtime
    exists, i.e. its configuration is read (the server's start, before any session)."""
    if _started.is_set():
        return False
    _started.set()
    threading.Thread(target=_warm, args=(delay_s, wait_for_runtime), name="kvviz-warm-up", daemon=True).start()
    return True


def start_after_page(delay_s: float = 2.0) -> bool:
    """app.py's start, after each run's page (only the first call starts anything). Not under AppTest
    (Streamlit's global.appTest option): a test process opens many pages and loads models on purpose, and a load
    starting by itself in its background would race the tests that watch a load."""
    from streamlit import config  # AppTest patches config.get_option for its runs (st.get_option is another name)

    if config.get_option("global.appTest"):
        return False
    return start(delay_s=delay_s)


def finished(timeout_s: float | None = None) -> bool:
    """Whether the warm-up thread has ended (loaded, or failed and said so), waiting up to timeout_s for it."""
    return _finished.wait(timeout_s) if timeout_s else _finished.is_set()


def _warm(delay_s: float, wait_for_runtime: bool) -> None:
    try:
        if wait_for_runtime:
            from streamlit import runtime

            deadline = time.monotonic() + RUNTIME_WAIT_S
            while not runtime.exists():
                if time.monotonic() > deadline:
                    return
                time.sleep(0.05)
        time.sleep(delay_s)
        began = time.perf_counter()
        from kvviz.model import loading
        from kvviz.ui import models

        models.preload_model(loading.BUNDLED, "eager")  # imports torch + transformers under models' import lock
        models.import_model_modules()  # the rest a model page runs on (the stepping engine, pandas)
        print(f"{DONE_LINE} ({time.perf_counter() - began:.1f} s)", file=sys.stderr, flush=True)
    except Exception as exc:  # noqa: BLE001 - a warm-up never takes the server down: the page loads as before
        print(
            f"kvviz warm-up: failed, pages load the model themselves ({type(exc).__name__}: {exc})",
            file=sys.stderr,
            flush=True,
        )
    finally:
        _finished.set()


def main(argv: list[str] | None = None) -> None:
    """`python -m kvviz.ui.warm run app.py [flags]`: Streamlit's own command line, with the warm-up started at the
    server's start."""
    from streamlit.web import cli

    from kvviz.ui import warm  # this module under its own name (run with -m, this file is __main__): app.py's too

    warm.start(wait_for_runtime=True)
    sys.argv = ["streamlit", *(sys.argv[1:] if argv is None else argv)]
    cli.main()


if __name__ == "__main__":
    main()
