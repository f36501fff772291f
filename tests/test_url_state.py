"""One way to keep a page's state in its link: the routes table declares the keys and their kinds
(kvviz.inputs.link_values), kvviz.ui.url_state reads and writes them, and no page touches st.query_params itself.

Pure: the sources are read (ast); the helper runs on Streamlit's query parameters outside any script run (bare mode:
st.query_params and st.session_state work without a server or an AppTest), cleared around every test.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kvviz import routes
from kvviz.inputs import link_values, query_values
from kvviz.step import link as stage_link
from support.markdown_text import shown
from support.repo import REPO

# The one module that touches st.query_params: the language and the model, which ride in every page's link, go
# through it too (routes.EVERY_PAGE, read and written by kvviz.ui.language and kvviz.ui.sidebar).
QUERY_PARAMS_HOMES = {"kvviz/ui/url_state.py"}


def touches_query_params(source: str) -> list[int]:
    """The lines of `source` that touch Streamlit's query parameters (st.query_params, `from streamlit import
    query_params`); a link's `query_params=` argument (st.page_link) builds a link and is not one."""
    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if (isinstance(node, ast.Attribute) and node.attr == "query_params")
        or (isinstance(node, ast.ImportFrom) and any(a.name == "query_params" for a in node.names))
    )


def _relative(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


# ----- the rule, held on the sources -------------------------------------------------------------------------------
def test_the_check_finds_a_page_that_writes_its_own_sync():
    assert touches_query_params("import streamlit as st\nst.query_params['step'] = '2'\n") == [2]
    assert touches_query_params("x = st.query_params.get_all('a')\ny = 1\nst.query_params.update({})\n") == [1, 3]
    assert touches_query_params("from streamlit import query_params\n") == [1]
    assert touches_query_params("st.page_link(r.file, query_params={'a': 'b'})\n") == []


def test_no_page_touches_st_query_params():
    pages = sorted((REPO / "pages").glob("*.py"))
    assert len(pages) >= 19
    found = {_relative(p): lines for p in pages if (lines := touches_query_params(p.read_text()))}
    assert found == {}, f"use kvviz.ui.url_state: {found}"


def test_only_url_state_reads_query_params_in_the_library():
    found = {
        _relative(p)
        for p in [REPO / "app.py", *sorted((REPO / "kvviz").rglob("*.py"))]
        if touches_query_params(p.read_text())
    }
    assert found == QUERY_PARAMS_HOMES


# ----- the kinds: each with kvviz.inputs' parser --------------------------------------------------------------------
def test_a_whole_number_is_parsed_and_bounded_by_the_one_reader():
    kind = link_values.Whole(lo=1)
    assert kind.parse("007", "step", hi=12) == 7
    with pytest.raises(query_values.QueryValueError, match=r"step must be from 1 to 12 \(got 99\)"):
        kind.parse("99", "step", hi=12)
    with pytest.raises(query_values.QueryValueError, match="whole number"):
        kind.parse("1e3", "step", hi=12)
    with pytest.raises(TypeError, match="bounds"):
        kind.parse("3", "step")  # a bound the table leaves to the page must be given
    assert kind.clamp("99", 0, hi=12) == 12 and kind.clamp("-3", 0, hi=12) == 1 and kind.clamp("x", 5, hi=12) == 5
    assert kind.clamp(None, 5, hi=12) == 5 and kind.text(4) == "4"


def test_a_number_a_flag_a_choice_and_a_text():
    number = link_values.Number(0.1, 2.0)
    assert number.parse("0.9", "temperature") == 0.9 and number.text(0.8500000000000001) == "0.85"
    for bad in ("nan", "inf", "1e999", "3"):
        with pytest.raises(query_values.QueryValueError):
            number.parse(bad, "temperature")
    assert number.clamp("5", 0.8) == 2.0 and number.clamp("nan", 0.8) == 0.8
    flag = link_values.Flag()
    assert flag.parse(" Yes ", "present") is True and flag.parse("0", "present") is False
    assert flag.default == "0" and flag.text(True) == "1"
    with pytest.raises(query_values.QueryValueError, match=r"present must be one of .* \(got '2'\)"):
        flag.parse("2", "present")
    toggle = link_values.Flag(link_values.TOGGLE_WORDS, bound=True)
    assert toggle.default == "false" and toggle.text(True) == "true" and toggle.bound
    with pytest.raises(query_values.QueryValueError):
        toggle.parse("1", "lesson_class")  # a bound toggle reads true/false only
    view = routes.STEP_THROUGH.kinds["view"]
    assert view.parse("race", "view") == "race" and view.default == "one" and view.clamp("x", "one") == "one"
    assert link_values.Text(5).parse("abcdefgh", "prompt") == "abcde" and link_values.Text().parse("x" * 9, "s")


def test_the_table_gives_every_field_a_kind_and_refuses_a_kind_for_no_field():
    for route in routes.ROUTES:
        assert set(route.kinds) == set(route.reads), route.name
    assert routes.MEMORY_BUDGET.kinds["preset"] is link_values.BOUND  # a widget's: Streamlit reads and writes it
    assert stage_link.VIEW_NAMES == ("one", "race", "gqa")  # the stage's views: the table's, one home
    with pytest.raises(ValueError, match="kind fields"):
        routes.Route("x", "X", ":material/home:", reads={"a": "x_a"}, kinds={"b": link_values.Flag()})
    memory = routes.MEMORY_BUDGET
    assert memory.keeps("mem_layers") and memory.keeps("mem_preset") and not memory.keeps("step")
    assert memory.bound_keys(["mem_layers", "mem_preset", "lang", "step"]) == ["mem_layers", "mem_preset"]
    assert routes.LESSON.bound_keys(["step", "lesson_class", "lesson_score"]) == ["lesson_class"]


# ----- the helper, on Streamlit's query parameters -----------------------------------------------------------------
@pytest.fixture
def query():
    """Streamlit's query parameters in bare mode, empty before and after the test."""
    import streamlit as st

    st.query_params.clear()
    yield st.query_params
    st.query_params.clear()
    for key in [k for k in st.session_state if str(k).startswith(("url_state_test", "mem_tab"))]:
        del st.session_state[key]


def _url(route: routes.Route):
    from kvviz.ui import url_state

    return url_state.of(route)


def test_a_field_is_read_by_its_kind_and_a_refused_value_is_named(query):
    url = _url(routes.LESSON)
    assert url.read("step", hi=12) is None and url.refusal("step", "Opening step 1.", hi=12) is None  # absent
    query["step"] = "4"
    assert url.read("step", hi=12) == 4 and url.refusal("step", "Opening step 1.", hi=12) is None
    query["step"] = "99"
    assert url.read("step", hi=12) is None
    said = shown(url.refusal("step", "Opening step 1.", hi=12))  # as the page shows the markdown
    assert said.startswith("Ignored step=99 from the link: step must be from 1 to 12 (got 99).")
    assert said.endswith("Opening step 1.")
    query["lesson_class"] = ["true", "<b>yes</b>"]  # a repeated key: its last value
    assert url.raw_all("class_mode") == ["true", "<b>yes</b>"] and url.read("class_mode") is None
    said = shown(url.refusal("class_mode", "Class mode off."))
    assert said.startswith("Ignored lesson_class=<b>yes</b> from the link: lesson_class must be one of true, false")


def test_a_field_the_route_does_not_declare_is_refused(query):
    url = _url(routes.LESSON)
    for call in (lambda: url.read("layer"), lambda: url.raw("prompt"), lambda: url.write({"room": "ABC234"})):
        with pytest.raises(KeyError, match="the lesson page reads no"):
            call()
    with pytest.raises(ValueError, match="written by its widget"):
        url.write({"class_mode": True})  # Streamlit's bound toggle writes it
    with pytest.raises(KeyError, match="keeps no"):
        _url(routes.MEMORY_BUDGET).drop_refused_numbers(["ops_new"], "url_state_test_notices")


def test_a_write_leaves_defaults_out_and_touches_only_declared_keys(query):
    query.update({"lang": "zh-CN", "step_layer": "L2", "fresh": "1"})
    url = _url(routes.STEP_THROUGH)
    url.write({"prompt": "ROMEO:", "steps": 3, "greedy": False, "temperature": 0.8, "view": "one", "present": True})
    assert dict(query) == {
        "lang": "zh-CN",  # not the page's: left as it is
        "step_layer": "L2",  # the picker's: Streamlit writes it
        "fresh": "1",  # not named in this write
        "prompt": "ROMEO:",
        "steps": "3",
        "temperature": "0.8",
        "present": "1",
    }  # greedy=0 and view=one are the defaults: left out
    url.write({"present": False, "steps": None, "fresh": None})
    assert dict(query) == {"lang": "zh-CN", "step_layer": "L2", "prompt": "ROMEO:", "temperature": "0.8"}
    assert url.texts() == {"step_layer": "L2", "prompt": "ROMEO:", "temperature": "0.8"}  # the page's keys only


def test_the_language_and_the_model_every_page_keeps_go_through_the_same_helper(query):
    """What the sidebar does on every page: a repeated ?lang= becomes the one language used, the page's keys stay."""
    query["step"] = "4"
    query["lang"] = ["xx", "en"]  # a link pasted twice: ?lang=xx&lang=en
    url = _url(routes.EVERY_PAGE)
    assert url.raw_all("language") == ["xx", "en"] and url.raw("language") == "en"
    url.write({"language": "en"})
    assert query.get_all("lang") == ["en"] and query["step"] == "4"
    url.write({"model": "random:gqa"})
    assert dict(query) == {"step": "4", "lang": "en", "model": "random:gqa"}
    assert url.texts() == {"lang": "en", "model": "random:gqa"}
    assert routes.EVERY_PAGE not in routes.ROUTES  # keys of every page, not a page of the navigation


def test_the_stage_written_with_defaults_left_out_reads_back_as_the_same_link(query):
    """What a reload, Back and Forward rely on: the address bar's state replays the same generation."""
    url = _url(routes.STEP_THROUGH)
    for link in (
        stage_link.StageLink("ROMEO:", 5, False, 0.8, 40, 0),
        stage_link.StageLink("JULIET:", 0, True, 1.0, 0, 0, "race", True),
        stage_link.StageLink("x" * 50, 12, False, 0.85, 200, 1_000_000, "gqa"),
    ):
        query.clear()
        url.write(link.values())
        assert stage_link.parse_link(url.texts(), 100) == link


def test_the_lesson_step_and_score_round_trip(query):
    url = _url(routes.LESSON)
    url.write({"step": 5})
    url.write({"score": "R-W-sig"})
    assert dict(query) == {"step": "5", "lesson_score": "R-W-sig"} and url.read("step", hi=12) == 5
    url.write({"score": None})
    url.drop("step")
    assert dict(query) == {}
    assert routes.in_place_keys()["lesson"] == [url.key("score")]  # a mark rewrites the history entry


def test_bound_values_are_the_pages_widgets_only(query):
    query.update({"mem_layers": "28", "mem_preset": "gpt2", "lang": "en", "mem_tab": "What fits"})
    url = _url(routes.MEMORY_BUDGET)
    assert url.bound_values() == {"mem_layers": ["28"], "mem_preset": ["gpt2"], "mem_tab": ["What fits"]}
    assert url.bound_values(["mem_layers", "mem_batch", "lang"]) == {"mem_layers": ["28"]}
    assert url.raw("preset") == "gpt2" and url.visit_opened_naming("tab")


def test_a_number_no_widget_could_take_is_taken_out_and_named(query):
    query.update({"mem_layers": "inf", "mem_batch": "4"})
    notices = _url(routes.MEMORY_BUDGET).drop_refused_numbers(["mem_layers", "mem_batch"], "url_state_test_notices")
    assert len(notices) == 1 and notices[0].startswith("Ignored `mem_layers=inf` from the link")
    assert dict(query) == {"mem_batch": "4"}
