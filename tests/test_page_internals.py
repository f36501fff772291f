"""AppTest of the cache-internals page: every section renders on the bundled model; widgets change what is shown;
bad input gives a clear message, never an exception."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from conftest import APP_TIMEOUT_S

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "cache_internals.py")


@pytest.fixture(scope="module")
def app():
    import streamlit as st

    st.cache_data.clear()
    at = AppTest.from_file(PAGE, default_timeout=APP_TIMEOUT_S).run()
    yield at
    st.cache_data.clear()


def _texts(at: AppTest) -> str:
    return " ".join(str(e.value) for kind in (at.markdown, at.caption, at.metric, at.error, at.warning) for e in kind)


def test_every_section_renders(app):
    assert not app.exception
    assert app.title[0].value == "Cache internals"
    assert len(app.tabs) == 7
    labels = [t.label for t in app.tabs]
    assert labels[2] == "3 Cross-attention" and labels[6] == "7 Speculative rollback"
    assert not app.error
    for tab in app.tabs:  # each section has its explanation and at least one picture
        assert tab.expander[0].label == "What you are seeing"
        assert tab.get("plotly_chart"), tab.label
    text = _texts(app)
    assert "Gemma 3 4B" in text and "Block tables A" in text and "Generated" in text


def test_quant_agreement_button_measures(app):
    app.number_input(key="int_quant_n").set_value(3).run()
    app.button(key="int_quant_run").click().run()
    assert not app.exception and not app.error
    assert "prompts identical over 3 tokens each" in _texts(app)


def test_widgets_change_the_numbers(app):
    before = [m.value for m in app.metric]
    app.number_input(key="int_window_w").set_value(4).run()
    app.number_input(key="int_paging_block").set_value(4).run()
    app.selectbox(key="int_layout_name").set_value("position_major").run()
    assert not app.exception
    after = [m.value for m in app.metric]
    assert after != before
    assert any(m.label == "Rows a local layer keeps" and m.value.startswith("4 of") for m in app.metric)


def test_bad_input_gives_messages(app):
    app.number_input(key="int_quant_group").set_value(5).run()
    app.text_area(key="int_prefix_b").set_value("Nothing in common here").run()
    app.text_area(key="int_spec_prompt").set_value("   ").run()
    app.text_area(key="int_paging_prompt").set_value("").run()
    assert not app.exception
    errors = " ".join(e.value for e in app.error)
    assert "group size must divide head_dim" in errors
    assert "prompt is empty" in errors.lower()
    assert any("share no leading token" in w.value for w in app.warning)
