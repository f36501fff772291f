"""Shared bits of the "Cache internals" pages (not a page itself): the default prompt, the student explanation
box, the model hash for st.cache_data, and running long work one job at a time with a queue position shown.

Torch-free at import: the pages import torch-running modules only inside their cached functions.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import streamlit as st

from kvviz.i18n import _
from kvviz.ui import models
from kvviz.work_queue import QueueTimeout, timed_work_queue

DEFAULT_PROMPT = "ROMEO: But soft, what light through yonder window breaks? It is the east, and Juliet is the sun."
PLOT = {"width": "stretch"}
QUEUE_WAIT_S = 120.0  # give up (with a message) rather than wait for ever behind other sessions

# st.cache_data hashes a LoadedModel by the model it is (spec + attention), never by its weights.
MODEL_HASH = models.MODEL_HASH  # the internals pages' cached computations key a model like every other page

T = TypeVar("T")


def explain(text: str, expanded: bool = True) -> None:
    """The page's "What you are seeing" box, written for a student."""
    with st.expander(_("What you are seeing"), expanded=expanded):
        st.markdown(text)


def run_queued(what: str, job: Callable[[], T]) -> T | None:
    """Run `job` when this server's internals queue gets to it; meanwhile show how many jobs are ahead.

    what: the work, already translated (it is the spinner's text and part of the waiting message).

    Returns None (after showing a message) if the wait runs past QUEUE_WAIT_S.
    """
    queue = timed_work_queue()  # the speed-up benchmark's line too: timed work never overlaps on one server
    box = st.empty()
    seen: list[int] = []  # the last queue position reported, for the give-up message

    def waiting(ahead: int) -> None:
        seen[:] = [ahead]
        box.info(_("Another session is measuring on this server: {ahead} job(s) ahead of you. {what} starts when "
                   "they finish (one measurement at a time keeps the timings honest).").format(ahead=ahead, what=what))

    try:
        with queue.turn(timeout_s=QUEUE_WAIT_S, on_wait=waiting):
            box.empty()
            with st.spinner(_("{what}...").format(what=what)):
                return job()
    except QueueTimeout as exc:
        box.empty()
        st.error(_("Still {ahead} job(s) ahead after {seconds:.0f} s of waiting: try again in a moment.").format(
            ahead=seen[0], seconds=QUEUE_WAIT_S) if seen else str(exc))
        return None
