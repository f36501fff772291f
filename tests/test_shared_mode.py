"""Shared-server mode (kvviz.model.shared_mode, applied by kvviz.ui): what a student's browser may make the server load.

Real folders built in tmp_path from the bundled model's own files; the real sidebar picker in AppTest.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from kvviz.model import loading, shared_mode
from kvviz.model.dims import GPT2_FAMILY
from kvviz.ui import sidebar
from support.models import model_folder
from support.pages import app_test


def _picker_and_page() -> None:
    """The sidebar picker (as app.py calls it) and a page that uses the session's model."""
    import streamlit as st

    from kvviz.ui import models, sidebar

    sidebar.sidebar_model_picker()
    info = models.current_model().info
    st.markdown(f"model in use: {info.spec} ({info.n_params} parameters)")


@pytest.fixture
def classroom(tmp_path, monkeypatch, fresh_streamlit_caches) -> dict[str, Path]:
    """A shared server whose teacher listed one good folder, one without tokenizer files and one too large
    (gpt2-xl's config, no weights); a fourth, complete folder is on the disk but NOT listed."""
    from transformers import GPT2Config

    folders = {
        "listed": model_folder(tmp_path / "models" / "listed"),
        "notok": model_folder(tmp_path / "models" / "notok", with_tokenizer=False),
        "unlisted": model_folder(tmp_path / "private" / "unlisted"),
        "huge": tmp_path / "models" / "huge",
    }
    GPT2Config(**GPT2_FAMILY["gpt2-xl"].gpt2_config()).save_pretrained(folders["huge"])
    config = tmp_path / "kvviz_shared.toml"
    config.write_text(
        "max_params = 200_000_000\n"
        f'models = ["{folders["listed"]}", "{folders["notok"]}", '
        f'{{ name = "big", source = "{folders["huge"]}", label = "GPT-2 XL" }}]\n'
    )
    monkeypatch.setenv(shared_mode.ENV_SWITCH, "1")
    monkeypatch.setenv(shared_mode.ENV_CONFIG, str(config))
    return folders


def _texts(at: AppTest) -> str:
    parts = [e.value for kind in ("markdown", "caption", "warning", "info", "error") for e in at.get(kind)]
    parts += [o for r in at.get("radio") for o in r.options]
    return "\n".join(str(p) for p in parts)


def _model_in_use(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("model in use:"))


@pytest.mark.model
def test_the_teachers_file_is_read_into_names_students_may_see(classroom):
    policy = shared_mode.current_policy()
    assert policy.enabled and policy.cap == loading.LoadCap(200_000_000)
    assert [(m.name, m.label) for m in policy.offered] == [
        ("listed", "listed (a folder on this server)"),
        ("notok", "notok (a folder on this server)"),
        ("big", "GPT-2 XL"),
    ]
    assert policy.find("listed").source == str(classroom["listed"].resolve())
    assert policy.find(str(classroom["listed"])) is None  # a path is never a name
    message = f"Could not load {classroom['listed']}: see /root/.cache/huggingface/hub or ~/x; K/V is fine"
    assert policy.redact(message) == "Could not load listed: see a server folder or a server folder; K/V is fine"
    assert shared_mode.LOCAL.redact(message) == message  # localhost: the user's own paths are useful


def test_off_by_default_and_bad_entries_are_skipped(tmp_path, monkeypatch):
    monkeypatch.delenv(shared_mode.ENV_SWITCH, raising=False)
    assert shared_mode.current_policy() == shared_mode.LOCAL
    policy = shared_mode.parse_policy(
        {
            "max_params": -5,
            "models": [
                "gpt2",
                "gpt2",
                "",
                7,
                {"name": "/etc", "source": "gpt2"},
                {"name": "bundled", "source": "x"},
                "random:gpt2",
            ],
        },
        base=tmp_path,
    )
    assert [m.name for m in policy.offered] == ["gpt2", "random:gpt2"]
    assert policy.cap == loading.LoadCap(shared_mode.DEFAULT_MAX_PARAMS)


@pytest.mark.app
def test_shared_sidebar_offers_only_the_list_and_refuses_a_forged_folder(classroom):
    from kvviz.model import loaders

    at = app_test(
        _picker_and_page,
        session_state={
            "model_spec": str(classroom["unlisted"]),  # a crafted request: a real, loadable folder
            "app_model_offered": "/etc",
        },
    )
    at.run()
    assert not at.exception
    assert not at.text_input and not at.selectbox and not at.button  # nothing free-form
    assert at.sidebar.radio(key="app_model_offered").options == [
        "Bundled Tiny-Shakespeare GPT-2 (offline)",
        "Bundled Tiny-Shakespeare Llama, GQA (offline)",
        "Bundled Tiny-Shakespeare hybrid, linear attention + attention (offline)",
        "listed (a folder on this server)",
        "notok (a folder on this server)",
        "GPT-2 XL",
    ]
    assert at.session_state["model_spec"] == "bundled"
    assert _model_in_use(at).startswith("model in use: bundled")
    assert any(w.value == shared_mode.NOT_OFFERED for w in at.sidebar.warning)
    assert any("at most 200,000,000 parameters" in c.value for c in at.sidebar.caption)  # the cap is stated
    assert str(classroom["unlisted"].parent.parent) not in _texts(at)
    # The same folder is a valid model: on localhost (shared mode off) it loads. The refusal was the policy.
    assert loaders.load_model(str(classroom["unlisted"])).info.n_params == loading.bundled_info().n_params


@pytest.mark.app
def test_a_links_model_is_applied_when_offered_and_refused_in_one_line_when_not(classroom):
    """?model= in a link picks the sidebar's model once the reader says yes; a model the server does not offer (here
    a real, loadable but unlisted folder) is refused with one line, the current model kept, the URL put right."""
    at = app_test(_picker_and_page, query={"model": "listed"})
    at.run()
    assert not at.exception
    assert at.session_state["model_spec"] == "bundled" and at.query_params["model"] == "listed"  # asked, not loaded
    at.sidebar.button(key="app_model_link_load").click().run()
    assert not at.exception
    assert at.session_state["model_spec"] == "listed" and at.query_params["model"] == "listed"
    assert at.sidebar.radio(key="app_model_offered").value == "listed"

    at = app_test(_picker_and_page, query={"model": str(classroom["unlisted"])})
    at.run()
    assert not at.exception
    assert at.session_state["model_spec"] == "bundled" and at.query_params["model"] == "bundled"
    warnings = [w.value for w in at.sidebar.warning]
    assert warnings == [sidebar.LINKED_MODEL_REFUSED.format(model=loading.bundled_info().shown_label())], warnings
    assert str(classroom["unlisted"].parent.parent) not in _texts(at)


@pytest.mark.app
def test_a_listed_folder_loads_under_its_name(classroom):
    at = app_test(_picker_and_page)
    at.run()
    at.sidebar.radio(key="app_model_offered").set_value("listed").run()
    assert not at.exception
    assert at.session_state["model_spec"] == "listed"
    assert _model_in_use(at) == f"model in use: listed ({loading.bundled_info().n_params} parameters)"
    assert at.sidebar.caption[-1].value == "listed (a folder on this server)"  # the label offered, never the folder's
    assert str(classroom["listed"].parent) not in _texts(at)


@pytest.mark.parametrize(
    ("choice", "reason"),
    [
        ("notok", "the folder has no tokenizer files"),
        ("big", "too large for this server: its config.json says 1,557,611,200 parameters"),
    ],
)
@pytest.mark.app
def test_a_failing_listed_model_is_one_line_and_the_previous_model_stays(classroom, choice, reason):
    at = app_test(_picker_and_page)
    at.run()
    at.sidebar.radio(key="app_model_offered").set_value(choice).run()
    assert not at.exception
    warning = next(w.value for w in at.sidebar.warning)
    assert reason in warning and "\n" not in warning and f"Could not load `{choice}`:" in warning
    assert "/" not in warning.replace("K/V", "")  # no server path, not even the tmp folder's
    assert at.session_state["model_spec"] == "bundled"
    assert at.sidebar.radio(key="app_model_offered").value == "bundled"  # the picker is put back
    assert _model_in_use(at).startswith("model in use: bundled")


def _speedup_style_page() -> None:
    """Another page asking for a model by spec directly (as the speed-up page's own selectbox does)."""
    import os

    import streamlit as st

    from kvviz.model import loading
    from kvviz.ui import models

    for spec in ("random:gpt2", "gpt2", os.environ["KVVIZ_TEST_FOLDER"]):
        try:
            models.cached_model(spec)
        except loading.ModelLoadError as exc:
            st.warning(f"{spec[:7]}: {exc}")


@pytest.mark.app
def test_every_loading_path_is_guarded_not_only_the_sidebar(classroom, monkeypatch):
    monkeypatch.setenv("KVVIZ_TEST_FOLDER", str(classroom["unlisted"]))
    at = app_test(_speedup_style_page)
    at.run()
    assert not at.exception
    assert [w.value.split(": ", 1)[1] for w in at.warning] == [shared_mode.NOT_OFFERED] * 3


@pytest.mark.app
def test_localhost_a_failed_load_keeps_the_previous_model_not_just_the_bundled_one(
    tmp_path, monkeypatch, fresh_streamlit_caches
):
    """Shared mode off: free-form names and folders are offered; after a good folder, a folder without
    tokenizer files gives one line and the good folder stays in use."""
    monkeypatch.delenv(shared_mode.ENV_SWITCH, raising=False)
    good = model_folder(tmp_path / "good")
    bad = model_folder(tmp_path / "bad", with_tokenizer=False)
    at = app_test(_picker_and_page)
    at.run()
    at.sidebar.radio(key="app_model_kind").set_value("Pretrained GPT-2 (name or local folder)").run()
    at.sidebar.text_input(key="app_model_name").set_value(str(good)).run()
    at.sidebar.button(key="app_model_load").click().run()
    assert at.session_state["model_spec"] == str(good) and not at.sidebar.warning
    at.sidebar.text_input(key="app_model_name").set_value(str(bad)).run()
    at.sidebar.button(key="app_model_load").click().run()
    assert not at.exception
    warning = at.sidebar.warning[0].value
    assert "no tokenizer files" in warning and str(bad) in warning and "\n" not in warning  # your own path: shown
    assert at.session_state["model_spec"] == str(good)
    assert _model_in_use(at).startswith(f"model in use: {good}")


@pytest.mark.model
def test_a_listed_folder_on_a_long_path_is_named_by_its_name_where_the_loader_cut_the_path(tmp_path, monkeypatch):
    """The loader shows a spec cut at 80 characters; redaction names the listed folder in that cut form too (it
    read 'a server folder… (cut 4 of 84 characters)' when pytest-xdist's longer tmp folder passed 80)."""
    from kvviz.model import loaders

    folder = model_folder(tmp_path / ("deep" * 25) / "notok", with_tokenizer=False)
    assert len(str(folder)) > 100
    config = tmp_path / "kvviz_shared.toml"
    config.write_text(f'models = ["{folder}"]\n')
    monkeypatch.setenv(shared_mode.ENV_SWITCH, "1")
    monkeypatch.setenv(shared_mode.ENV_CONFIG, str(config))
    policy = shared_mode.current_policy()
    with pytest.raises(loading.ModelLoadError) as caught:
        loaders.load_model(str(folder), cap=policy.cap, allow_download=False)
    message = policy.redact(str(caught.value))
    assert message.startswith("Could not load `notok`: the folder has no tokenizer files"), message
    assert "a server folder" not in message and "/" not in message
