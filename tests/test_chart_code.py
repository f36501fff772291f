"""kvviz.ui.chart_code finds the installed Streamlit's chart and table code files (the projector loads them before its
first Reveal): one file per chunk, in the folder the browser fetches them from. A Streamlit upgrade that renames or
moves them fails here, and bench/first_reveal.py then says what the first reveal costs."""

from __future__ import annotations

import importlib.resources

from kvviz.ui import assets, chart_code


def test_each_chunk_is_one_file_of_the_installed_streamlit():
    files = chart_code.chunk_files()
    assert [name.split(".")[0] for name in files] == list(chart_code.CHUNKS)
    folder = importlib.resources.files("streamlit") / "static" / "static" / "js"
    assert all((folder / name).is_file() for name in files)
    assert all(name.endswith(".js") and "/" not in name for name in files)


def test_the_script_imports_each_file_beside_streamlits_own_bundle():
    code = assets.source("chart_code.js")
    assert "KVVIZ.files" in code and "static/js/index." in code and "import(new URL(file, main.src)" in code
