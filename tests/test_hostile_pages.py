"""Hostile links and inputs, page by page (AppTest): no exception box, one notice per refused value, the page's
earlier (default) state kept. Property-based on the pages whose widgets read the URL; every page is also opened
with a link full of junk. The count of inputs tried is INPUTS_TRIED at the bottom."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from support.pages import PAGES_DIR, app_test, open_page

pytestmark = pytest.mark.app  # every test runs pages in AppTest

LINK_EXAMPLES = 12  # per property: each example is a whole page run (seconds on a 2-core machine)
HOSTILE = st.one_of(
    st.sampled_from(
        [
            "inf",
            "-inf",
            "Infinity",
            "1e309",
            "nan",
            "-3",
            "1.5",
            "1e308",
            "9" * 5000,
            "abc",
            "",
            "0x1f",
            "１２",
            "x" * 100_000,
        ]
    ),
    st.from_regex(r"-?[1-9][0-9]{16,5000}", fullmatch=True),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


def page(name: str) -> AppTest:
    return app_test(f"pages/{name}.py")


def _run_with_link(name: str, link: dict[str, str]) -> AppTest:
    return open_page(f"pages/{name}.py", query=link)


def _notices(at: AppTest) -> list[str]:
    return [w.value for w in at.warning if w.value.startswith("Ignored `")]


@settings(max_examples=LINK_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    values=st.dictionaries(
        st.sampled_from(["mem_layers", "mem_context", "mem_batch", "mem_heads", "mem_head_dim"]),
        HOSTILE,
        min_size=1,
        max_size=3,
    )
)
def test_memory_page_refuses_overflowing_link_numbers(values):
    at = _run_with_link("memory_budget", values)
    notices = _notices(at)
    assert sorted(n.split("=")[0] for n in notices) == sorted(f"Ignored `{k}" for k in values)
    assert all(len(n) < 240 for n in notices)
    assert at.number_input(key="mem_layers").value == 32  # llama-3-8b's default: the earlier state is kept


@settings(max_examples=LINK_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    values=st.dictionaries(
        st.sampled_from(["ops_prompt", "ops_new", "ops_layers", "ops_vocab"]), HOSTILE, min_size=1, max_size=3
    )
)
def test_count_the_work_refuses_overflowing_link_numbers(values):
    at = _run_with_link("attention_ops", {"ops_model": "custom", **values})
    assert len(_notices(at)) == len(values)
    assert at.number_input(key="ops_prompt").value == 16 and at.number_input(key="ops_new").value == 200


def test_memory_page_says_what_it_ignored_inside_tabs():
    at = _run_with_link("memory_budget", {"mem_tab": "Nope"})
    assert any("mem_tab=Nope" in n for n in _notices(at))
    at = _run_with_link("memory_budget", {"mem_tab": "What fits", "mem_gpu": "NoSuchGPU"})
    assert any("mem_gpu=NoSuchGPU" in n for n in _notices(at))
    at = _run_with_link("memory_budget", {"mem_compare": ["gpt2", "zzz"]})
    assert any("mem_compare=gpt2,zzz" in n for n in _notices(at))


def test_count_the_work_per_pass_table_takes_a_huge_custom_shape():
    at = _run_with_link(
        "attention_ops",
        {
            "ops_model": "custom",
            "ops_prompt": "1000000",
            "ops_new": "1000000",
            "ops_layers": "10000",
            "ops_heads": "100000",
            "ops_kv_heads": "100000",
            "ops_head_dim": "100000",
            "ops_tab": "Per pass",
        },
    )
    table = at.dataframe[0].value
    assert int(table["ops (no cache)"].iloc[-1].replace(",", "")) > 2**63  # exact, past int64, shown as text


@settings(max_examples=LINK_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(steps=HOSTILE)
def test_step_page_link_steps_are_checked_not_taken_as_zero(steps):
    at = _run_with_link("step_through", {"prompt": "ROMEO:", "steps": steps})
    notices = _notices(at)
    assert len(notices) == 1 and notices[0].startswith("Ignored `steps=") and "Replaying the prompt only" in notices[0]


def test_step_page_link_with_good_steps_replays_them():
    at = _run_with_link("step_through", {"prompt": "ROMEO:", "steps": "3"})
    assert not _notices(at)


@pytest.mark.parametrize("step", ["0", "13", "abc", "9" * 5000])
def test_lesson_link_step_out_of_range_is_named(step):
    """Through the router (app.py), as a browser opens /lesson?step=...: the lesson's page links need it."""
    at = app_test("app.py", query={"step": step})
    at.switch_page("pages/lesson.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    notices = _notices(at)
    assert len(notices) == 1 and "Opening step 1" in notices[0]


def test_quant_page_group_size_past_a_million_is_a_message():
    at = page("internals_quant")
    at.run()
    at.number_input(key="int_quant_group").set_value(2_000_000).run()
    assert not at.exception
    # the box's own bound is its setting's (up to head_dim): the value is refused by name, the page goes on
    assert any("group size must be a whole number from" in e.value for e in at.error)


JUNK_LINK = {
    "steps": "1e309",
    "step": "-inf",
    "mem_layers": "inf",
    "ops_prompt": "9" * 5000,
    "prompt": "x" * 50_000,
    "present": "nan",
    "bench_new_tokens": "1e309",
    "int_quant_group": "inf",
    "nonsense": "\x00",
}
EVERY_PAGE = sorted(p.stem for p in PAGES_DIR.glob("*.py") if p.stem != "internals_shared")


@pytest.mark.parametrize("name", EVERY_PAGE)
def test_every_page_opens_with_a_junk_link(name):
    """Through the router (app.py), as a browser opens /<page>?<junk>: pages with page links need it."""
    at = app_test("app.py", query=JUNK_LINK)
    at.switch_page(f"pages/{name}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]


INPUTS_TRIED = 3 * LINK_EXAMPLES + 3 + 7 + 1 + 4 + 1 + len(EVERY_PAGE) * len(JUNK_LINK)  # links (values in them)
