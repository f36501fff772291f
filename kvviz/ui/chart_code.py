"""The chart and table code a tab will need, loaded before it needs it (the projector's first Reveal).

Streamlit's browser side loads the code of a plotly chart (its PlotlyChart chunk, plotly.js inside: about 4.6 MB) and
of a static table (its Table chunk and the Arrow reader, about 0.9 MB) only when the first such element is drawn in
the tab. On the projector that moment was the Reveal: a fresh tab's first reveal waited for the download and for
plotly.js to be parsed and run, while the server's part of the click took about 0.2 s (issue 54 measured 2.8-6.8 s
at load 5-7; `bench/first_reveal.py --compare`, on a step with no chart before its question: 2.38 s median without
this, 0.54 s with it, at load 6-7, docs/measurements.md). preload() draws, in a container hidden_helpers.css hides, a
script (chart_code.js) that imports those files once the page is idle, so the reveal finds them loaded and only draws.

The file names are Streamlit's build's (hashed, new with every release): read from the installed package's static
folder, never written here. This leans on how Streamlit 1.67's frontend is built: Vite chunks in static/js beside
index.<hash>.js, each imported by its file name relative to it, so the browser keeps one module for both imports.
After a Streamlit upgrade, tests/test_chart_code.py says whether the files are still found, and bench/first_reveal.py
whether the reveal still finds them loaded. Found none: nothing is drawn and the reveal loads them itself, as before.
"""

from __future__ import annotations

import functools
import importlib.resources
import re

import streamlit as st

from kvviz.ui import assets

CHUNKS = ("PlotlyChart", "Table")  # st.plotly_chart's code, and st.table's (the poll's votes are both)


@functools.cache
def chunk_files() -> tuple[str, ...]:
    """The installed Streamlit's file for each of CHUNKS (e.g. "PlotlyChart.D9Z0_fxz.js"), those found exactly once."""
    folder = importlib.resources.files("streamlit") / "static" / "static" / "js"
    try:
        names = [entry.name for entry in folder.iterdir()]
    except OSError:
        return ()
    found = []
    for chunk in CHUNKS:
        matches = [name for name in names if re.fullmatch(rf"{chunk}\.[\w-]+\.js", name)]
        if len(matches) == 1:
            found.append(matches[0])
    return tuple(found)


def preload() -> None:
    """Have this tab load the chart and table code now, while the room votes, not at the Reveal (once per tab)."""
    files = chunk_files()
    if files:
        st.container(key="kvviz_hidden_chart_code").html(
            assets.script("chart_code.js", data={"files": list(files)}), unsafe_allow_javascript=True
        )
