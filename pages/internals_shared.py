"""Shared bits of the "Cache internals" pages (not a page itself): the default prompt, the student explanation
box, the model hash for st.cache_data, and running long work one job at a time with a queue position shown.

Torch-free at import: the pages import torch-running modules only inside their cached functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import streamlit as st

from kvviz.i18n import _, ngettext
from kvviz.ui import models
from kvviz.work_queue import timed_work_queue

DEFAULT_PROMPT = "ROMEO: But soft, what light through yonder window breaks? It is the east, and Juliet is the sun."
PLOT = {"width": "stretch"}
QUEUE_FULL_S = 600.0  # a longer estimated wait is refused up front, with its time: nobody waits only to lose the job

# st.cache_data hashes a LoadedModel by the model it is (spec + attention), never by its weights.
MODEL_HASH = models.MODEL_HASH  # the internals pages' cached computations key a model like every other page

T = TypeVar("T")


def explain(text: str, expanded: bool = True) -> None:
    """The page's "What you are seeing" box, written for a student."""
    with st.expander(_("What you are seeing"), expanded=expanded):
        st.markdown(text)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return _("{seconds:.0f} s").format(seconds=max(seconds, 1))
    return _("{minutes:.0f} min").format(minutes=seconds / 60)


def run_queued(what: str, job: Callable[[], T]) -> T | None:
    """Run `job` when this server's timed-work line gets to it; meanwhile show the true place and an estimate.

    what: the work, already translated (it is the spinner's text and part of the waiting message).

    A job in line keeps its place until its turn (no timeout: work is never thrown away after a wait). When the
    wait would be longer than QUEUE_FULL_S, nothing is queued: the page says the server is full and for how long,
    and returns None.
    """
    queue = timed_work_queue()  # the speed-up benchmark's line too: timed work never overlaps on one server
    full_s = queue.wait_estimate_s()
    if full_s is not None and full_s > QUEUE_FULL_S:
        ahead = queue.state().waiting + 1
        st.warning(
            ngettext(
                "This server is full: {n} job is in line, about {time} of work. Nothing was queued: try again in {time}.",
                "This server is full: {n} jobs are in line, about {time} of work. Nothing was queued: try again in {time}.",
                ahead,
            ).format(n=ahead, time=_duration(full_s)),
            icon=":material/hourglass_disabled:",
        )
        return None
    box = st.empty()

    def waiting(ahead: int) -> None:
        place = ngettext(
            "Another session is measuring on this server: {n} job is ahead of you.",
            "Other sessions are measuring on this server: {n} jobs are ahead of you.",
            ahead,
        ).format(n=ahead)
        wait_s = queue.wait_estimate_s(ahead)
        when = (
            _("About {time} to wait.").format(time=_duration(wait_s))
            if wait_s is not None
            else _("No estimate yet: no measurement has finished on this server.")
        )
        box.info(
            " ".join(
                (
                    place,
                    when,
                    _(
                        "Your place is kept: {what} starts when they finish (one measurement at a "
                        "time keeps the timings honest)."
                    ).format(what=what),
                )
            ),
            icon=":material/hourglass_top:",
        )

    with queue.turn(on_wait=waiting):  # no timeout: a rerun, a Stop or a closed tab still leaves the line
        box.empty()
        with st.spinner(_("{what}...").format(what=what)):
            return job()
