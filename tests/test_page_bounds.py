"""Every number box of a page built on kvviz.ui.bounded takes its min, max, step and first value from the one
setting the library checks (kvviz.inputs.prompt_rules.IntSetting), and a value past them is refused by name."""
from __future__ import annotations

import pytest

from kvviz.internals import crossattn, eviction, paging, speculative
from support.pages import app_test

SETTINGS = {  # page -> {widget key: the setting it must read}
    "pages/internals_paging.py": {"int_paging_block": paging.BLOCK_SIZE, "int_paging_na": paging.NEW_TOKENS_A,
                                  "int_paging_nb": paging.NEW_TOKENS_B},
    "pages/internals_crossattn.py": {"int_cross_src": crossattn.SOURCE_LEN, "int_cross_steps": crossattn.DECODE_STEPS},
    "pages/internals_speculative.py": {"int_spec_k": speculative.DRAFT_K, "int_spec_n": speculative.NEW_TOKENS},
    "pages/internals_eviction.py": {"evict_sinks": eviction.SINK_TOKENS},
}


def _page(page: str):
    import streamlit as st

    st.cache_data.clear()
    return app_test(page).run()


@pytest.mark.app
@pytest.mark.parametrize("page", list(SETTINGS))
def test_each_number_box_reads_its_bounds_from_its_setting(page):
    at = _page(page)
    assert not at.exception, at.exception
    integer_boxes = {box.key for box in at.number_input if float(box.step).is_integer()}
    assert integer_boxes == set(SETTINGS[page])  # no whole-number box on the page is left out of the table
    for key, setting in SETTINGS[page].items():
        box = at.number_input(key=key)
        assert (box.min, box.max, box.step, box.value) == (setting.lo, setting.hi, setting.step, setting.default), key


@pytest.mark.app
def test_a_value_past_the_bounds_is_named_and_the_page_goes_on_at_the_default():
    at = _page("pages/internals_paging.py")
    at = at.number_input(key="int_paging_block").set_value(-1).run()  # what Streamlit hands the page: None
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "block size" in errors[0] and "16 until it is changed" in errors[0], errors
    assert at.number_input(key="int_paging_block").value == 16 and at.get("plotly_chart")  # the page stays whole
