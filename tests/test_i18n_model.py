"""简体中文 for the model slice: the sidebar's model picker, model labels, load errors, shared-mode notes and
a hostile link's notice, drawn in Chinese by the real app (AppTest, ?lang=zh-CN), and English unchanged.

AppTest calls a radio's format_func in the test's own thread, where no session says the language: the calls that set
a radio's value run inside `i18n.language(...)` so the test thread formats the options as the page did.
"""

from __future__ import annotations

import types

import pytest
from streamlit.testing.v1 import AppTest

from kvviz import i18n
from kvviz.i18n import CHINESE, ENGLISH
from kvviz.inputs import link_values, prompt_rules, query_values
from kvviz.model import load_cost, loading, shared_mode
from kvviz.model.dims import GPT2_FAMILY
from support.i18n_text import english_leftovers, page_texts
from support.models import model_folder
from support.pages import app_test


def _sidebar_texts(at: AppTest) -> list[str]:
    return page_texts(types.SimpleNamespace(_tree=at.sidebar))


def _picker_and_page() -> None:
    """The sidebar as app.py draws it (the language first), and a page that uses the session's model."""
    import streamlit as st

    from kvviz.ui import language, models, sidebar

    language.apply_language()
    sidebar.sidebar_model_picker()
    st.markdown(f"model in use: {models.current_model().info.spec}")


@pytest.mark.app
def test_the_sidebar_through_the_router_in_chinese_and_in_english(fresh_streamlit_caches):
    shown = {}
    for lang in (CHINESE, ENGLISH):
        at = app_test("app.py", lang=lang)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        shown[lang] = at
    zh, en = shown[CHINESE], shown[ENGLISH]
    assert zh.sidebar.radio(key="app_model_kind").label == "选择模型"
    assert zh.sidebar.radio(key="app_model_kind").options == [
        "内置 Tiny-Shakespeare GPT-2（离线）",
        "内置 Tiny-Shakespeare Llama，GQA（离线）",
        "内置 Tiny-Shakespeare 混合模型，线性注意力 + 注意力（离线）",
        "预训练 GPT-2（模型名或本地文件夹）",
        "GPT-2 结构，随机权重",
    ]
    info = loading.bundled_info()  # the caption's numbers are the bundled model's own, from its config.json
    assert zh.sidebar.caption[-1].value == (
        f"内置 Tiny-Shakespeare GPT-2（{info.n_layer} 层 × {info.n_head} 个头，"
        f"head_dim {info.head_dim}，{info.n_positions} 个位置）"
    )
    assert "### 模型" in [m.value for m in zh.sidebar.markdown]
    assert english_leftovers(_sidebar_texts(zh)) == []
    # English is the source, unchanged: the same options and the same label as before the catalog existed
    assert en.sidebar.radio(key="app_model_kind").options == [
        "Bundled Tiny-Shakespeare GPT-2 (offline)",
        "Bundled Tiny-Shakespeare Llama, GQA (offline)",
        "Bundled Tiny-Shakespeare hybrid, linear attention + attention (offline)",
        "Pretrained GPT-2 (name or local folder)",
        "GPT-2 shape with random weights",
    ]
    assert en.sidebar.caption[-1].value == info.label == info.shown_label()
    assert "### Model" in [m.value for m in en.sidebar.markdown]


@pytest.mark.app
def test_a_failed_load_is_told_in_chinese_and_the_model_stays(tmp_path, monkeypatch, fresh_streamlit_caches):
    monkeypatch.delenv(shared_mode.ENV_SWITCH, raising=False)
    bad = model_folder(tmp_path / "bad", with_tokenizer=False)
    at = app_test(_picker_and_page, lang=CHINESE)
    at.run()
    with i18n.language(CHINESE):
        at.sidebar.radio(key="app_model_kind").set_value("Pretrained GPT-2 (name or local folder)").run()
        assert [t.label for t in at.sidebar.text_input] == ["模型名或文件夹"]
        assert at.sidebar.text_input[0].help.startswith("例如 gpt2")
        assert [b.label for b in at.sidebar.button] == ["加载"]
        at.sidebar.text_input(key="app_model_name").set_value(str(bad)).run()
        at.sidebar.button(key="app_model_load").click().run()
    assert not at.exception
    warning = at.sidebar.warning[0].value
    assert warning == f"无法加载 `{bad}`：该文件夹中没有分词器文件（tokenizer.json，或 vocab.json + merges.txt）。"
    assert at.session_state["model_spec"] == loading.BUNDLED
    with i18n.language(CHINESE):
        at.sidebar.radio(key="app_model_kind").set_value("GPT-2 shape with random weights").run()
    assert [s.label for s in at.sidebar.selectbox] == ["结构"]


@pytest.mark.app
def test_shared_mode_in_chinese_lists_refuses_and_caps(tmp_path, monkeypatch, fresh_streamlit_caches):
    listed = model_folder(tmp_path / "models" / "listed")
    config = tmp_path / "kvviz_shared.toml"
    config.write_text(
        f'max_params = 200_000_000\nmodels = ["{listed}", "random:gpt2-xl", '
        '{ name = "ours", source = "random:distilgpt2", label = "Our class GPT-2" }]\n'
    )
    monkeypatch.setenv(shared_mode.ENV_SWITCH, "1")
    monkeypatch.setenv(shared_mode.ENV_CONFIG, str(config))
    forged = {"model_spec": str(tmp_path)}  # a forged request: refused, in Chinese
    at = app_test(_picker_and_page, lang=CHINESE, session_state=forged)
    at.run()
    assert not at.exception
    radio = at.sidebar.radio(key="app_model_offered")
    assert radio.options == [
        "内置 Tiny-Shakespeare GPT-2（离线）",
        "内置 Tiny-Shakespeare Llama，GQA（离线）",
        "内置 Tiny-Shakespeare 混合模型，线性注意力 + 注意力（离线）",
        "listed（本服务器上的文件夹）",
        "gpt2-xl 结构，随机权重",
        "Our class GPT-2",
    ]  # a teacher's words stay
    assert (
        "共享服务器：这些模型由老师选定。一次只加载一个模型，每次最多 200,000,000 个参数（float32 权重 0.75 GiB）。"
        in [c.value for c in at.sidebar.caption]
    )
    assert [w.value for w in at.sidebar.warning] == ["这台共享服务器不提供该模型；请从侧边栏的列表中选择。"]
    at.sidebar.radio(key="app_model_offered").set_value("random:gpt2-xl").run()  # over the cap: refused before a weight
    assert not at.exception
    n_params = load_cost.gpt2_param_count(48, 1600, GPT2_FAMILY["gpt2"].n_positions, GPT2_FAMILY["gpt2"].vocab_size)
    assert at.sidebar.warning[0].value == (
        f"无法加载 `random:gpt2-xl`：模型对这台服务器来说太大：根据 gpt2-xl 结构，它有 {n_params:,} 个参数"
        f"（按 float32 计 {n_params * 4 / 2**30:.2f} GiB）；每次加载最多 200,000,000 个参数（float32 权重 0.75 GiB）。"
    )
    assert at.session_state["model_spec"] == loading.BUNDLED and str(tmp_path) not in "".join(_sidebar_texts(at))


@pytest.mark.app
def test_a_hostile_link_number_is_named_in_chinese():
    """Through the router, as a browser opens /attention_ops?ops_layers=inf&lang=zh-CN."""
    at = app_test("app.py", query={"ops_layers": "inf", "ops_heads": "9" * 5000, i18n.QUERY_PARAM: CHINESE})
    at.switch_page("pages/attention_ops.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    notices = [w.value for w in at.warning if w.value.startswith("已忽略链接中的")]
    assert sorted(notices) == sorted(
        [
            "已忽略链接中的 `ops_layers=inf`：它不是用数字写成的整数。",
            f"已忽略链接中的 `ops_heads={'9' * 39}…`：它远大于该字段允许的值（最多 {query_values.LINK_NUMBER_LIMIT:,}）。",
        ]
    )


def test_messages_keep_their_numbers_and_names_in_both_languages():
    with i18n.language(CHINESE):
        with pytest.raises(query_values.QueryValueError) as err:
            query_values.whole_number("1e309", 0, 1_023, "steps")
        assert str(err.value) == "steps 必须是 0 到 1,023 之间的整数（得到的是 '1e309'）。"
        notice = link_values.Whole(1, 12).refusal("abc", "step", "Opening step 1.")
        assert notice.startswith("已忽略链接中的 `step=abc`：步 必须是 1 到 12 之间的整数")  # the name translated too
        label = loading.bundled_info(name=loading.BUNDLED_GQA).shown_label()
        assert label.startswith("内置 Tiny-Shakespeare Llama，GQA（") and "个 KV 头" in label
    with i18n.language(ENGLISH):
        assert (
            loading.bundled_info(name=loading.BUNDLED_GQA).shown_label()
            == loading.bundled_info(name=loading.BUNDLED_GQA).label
        )
        assert (
            link_values.Whole(1, 12)
            .refusal("abc", "step", "Opening step 1.")
            .startswith("Ignored `step=abc` from the link: step must be a whole number from 1 to 12")
        )


def test_the_text_cap_help_names_the_real_cap():
    """TEXT_CAP_HELP is a catalog message (its number written out); it must say MAX_TEXT_CHARS."""
    assert f"At most {prompt_rules.MAX_TEXT_CHARS:,} characters:" in prompt_rules.TEXT_CAP_HELP
    with i18n.language(CHINESE):
        assert f"最多 {prompt_rules.MAX_TEXT_CHARS:,} 个字符" in i18n._(prompt_rules.TEXT_CAP_HELP)


def test_a_server_path_is_redacted_from_a_chinese_message_and_the_reason_kept():
    """Chinese puts full-width punctuation right after a path, with no space: the path ends there, the reason stays."""
    policy = shared_mode.SharedPolicy(enabled=True)
    with i18n.language(CHINESE):
        assert policy.redact(
            "无法加载 /srv/secret/x：该文件夹中没有分词器文件（tokenizer.json，或 vocab.json + merges.txt）。"
        ) == ("无法加载 一个服务器文件夹：该文件夹中没有分词器文件（tokenizer.json，或 vocab.json + merges.txt）。")
        assert policy.redact("位于/srv/secret/x，无法读取") == "位于一个服务器文件夹，无法读取"
    assert (
        policy.redact("Could not load /srv/secret/x: no K/V heads.") == "Could not load a server folder: no K/V heads."
    )
