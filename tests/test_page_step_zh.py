"""The step-through stage in Simplified Chinese, on the real bundled models: no English sentence left
on the stage (the model's own English output, and names, aside), a prompt with Chinese characters prefills and
steps (the tokenizer is byte-level: the strip names the characters its byte tokens make), the Link carries the
language, and the keyboard shortcuts find the stage's buttons by key, never by their (translated) labels."""

from __future__ import annotations

import ast
import re
import urllib.parse

import pytest
from streamlit.testing.v1 import AppTest

from kvviz import i18n
from kvviz.inputs.prompt_rules import TEXT_CAP_HELP
from kvviz.step.strip import byte_characters
from kvviz.ui import assets
from support.i18n_text import english_leftovers, page_texts
from support.pages import PAGES_DIR, open_page

PAGE = PAGES_DIR / "step_through.py"


def _page(lang: str, **query: str) -> AppTest:
    """The stage in `lang`, opened with a link's `query`."""
    return open_page(PAGE, lang=lang, query=query)


def _model_text(at: AppTest) -> set[str]:
    """What the model reads and writes (English by nature): every token's text, whole and shown in the strip
    (spaces as ·), the prompt, and the presets' prompts."""
    from kvviz.step.engine import token_text

    engine = at.session_state["step_engine"]
    tokenizer = engine.loaded.tokenizer
    ids = [*engine.token_ids, engine.pending_token_id]
    texts = {tokenizer.decode(ids), engine.prompt_text}
    for token_id in ids:
        text = token_text(tokenizer, token_id)
        texts |= {text, text.replace(" ", "·").replace("\n", "↵")}
    return texts


def _presets() -> list[str]:
    source = PAGE.read_text(encoding="utf-8")
    block = source[source.index("PRESETS = {") : source.index("}", source.index("PRESETS = {"))]
    return [ast.literal_eval(s) for s in re.findall(r'"(?:[^"\\]|\\.)*"', block)]


@pytest.mark.app
def test_the_stage_in_chinese_leaves_no_english_sentence(fresh_streamlit_caches):
    at = _page("zh-CN")
    assert at.title[0].value == "逐步生成"
    assert at.button(key="step_btn_prefill").label == "预填充"
    at.button(key="step_btn_prefill").click().run()
    for _ in range(3):
        at.button(key="step_btn_next").click().run()
    assert not at.exception
    assert at.metric[0].label == "缓存长度" and "个 token" in at.metric[0].value
    # the interface is Chinese, the model's text is not: the stage says so beside the token strip
    assert any("内置模型是用英文莎士比亚文本训练的" in m.value for m in at.markdown)
    texts = page_texts(at)
    at.session_state["step_exp_uncached"] = True  # the "without the cache" check, open
    at.segmented_control(key="step_view").set_value("race").run()
    assert not at.exception
    texts += page_texts(at)
    # TEXT_CAP_HELP (kvviz/inputs/prompt_rules.py) belongs to the inputs slice; allowed only while untranslated
    with i18n.language(i18n.CHINESE):
        cap_untranslated = i18n._(TEXT_CAP_HELP) == TEXT_CAP_HELP
    allowed = [*_model_text(at), *_presets(), *([TEXT_CAP_HELP] if cap_untranslated else [])]
    left = english_leftovers(texts, allowed)
    assert not left, left


@pytest.mark.app
def test_english_stays_english(fresh_streamlit_caches):
    at = _page("en")
    assert at.title[0].value == "Step through generation"
    at.button(key="step_btn_prefill").click().run()
    assert at.button(key="step_btn_next").label == "Next token"
    assert not any("Shakespeare" in m.value for m in at.markdown)  # the note is for a translated interface


@pytest.mark.app
def test_a_chinese_prompt_prefills_and_steps_and_the_strip_names_its_characters(fresh_streamlit_caches):
    from kvviz.step.engine import token_text

    prompt = "ROMEO: 你好，世界"
    at = _page("zh-CN")
    at.session_state["step_prompt_ROMEO:"] = prompt  # what typing into the Prompt box does
    at.button(key="step_btn_prefill").click().run()
    assert not at.exception and not at.warning
    engine = at.session_state["step_engine"]
    tokenizer = engine.loaded.tokenizer
    n_prompt = len(tokenizer(prompt).input_ids)
    assert engine.prompt_len == n_prompt and tokenizer.decode(engine.token_ids) == prompt  # byte-exact round trip
    for k in (1, 2):
        at.button(key="step_btn_next").click().run()
        assert not at.exception
        assert engine.cache_len == n_prompt + k
    strip = next(m.value for m in at.markdown if "kvviz-strip" in m.value)
    shown = [token_text(tokenizer, i) for i in engine.token_ids[:n_prompt]]
    partial = [t for t in shown if re.fullmatch(r"<[0-9A-F]{2}(?: [0-9A-F]{2})*>", t)]
    # a character the tokenizer never saw whole is byte tokens (hex chips, each said to be part of a character);
    # the chip whose byte completes it names the character: every character of the prompt is on the strip
    assert partial, shown
    assert strip.count("UTF-8") >= len(partial)
    for character in "你好，世界":
        assert f"→{character}</b>" in strip or f">{character}<" in strip, character
    assert "\ufffd" not in strip  # no replacement characters (mojibake)
    assert '<span data-pos="next" title="下一个: ' in strip and ">下一个</sub>" in strip  # the pending chip, named


@pytest.mark.app
def test_the_link_carries_the_language_and_reopens_in_it(fresh_streamlit_caches):
    at = _page("zh-CN")
    at.button(key="step_btn_prefill").click().run()
    at.button(key="step_btn_next").click().run()
    link = next(c.value for c in at.code if "prompt=" in c.value)
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(link).query))
    assert query["lang"] == "zh-CN" and query["steps"] == "1"
    again = _page(**{"lang": query["lang"]}, **{k: v for k, v in query.items() if k != "lang"})
    assert again.title[0].value == "逐步生成"
    assert again.session_state["step_engine"].token_ids == at.session_state["step_engine"].token_ids


@pytest.mark.app
def test_the_keyboard_finds_the_stage_buttons_by_key_not_by_label(fresh_streamlit_caches):
    # the script the page draws as KEYS_JS: the files it names, as kvviz.ui.assets hands them to the page
    call = re.search(r"KEYS_JS = assets\.script\((.*?)\)", PAGE.read_text(encoding="utf-8")).group(1)
    script = "".join(assets.source(name) for name in re.findall(r'"([\w-]+\.js)"', call))
    keys = set(re.findall(r'"(step_btn_\w+)"', script))
    assert keys == {"step_btn_prefill", "step_btn_next", "step_btn_back", "step_btn_stop"}
    assert ".st-key-" in script and not re.search(r"innerText|textContent|has-text|aria-label", script)
    at = _page("zh-CN")
    for key in keys:  # each key names a button on the Chinese page, whatever its label says
        button = at.button(key=key)
        assert button.label and button.label.isascii() is False, (key, button.label)


def test_byte_tokens_name_the_character_they_complete():
    # 你 = E4 BD A0, 😀 = F0 9F 98 80 (two 2-byte tokens); a run cut at its start (A0) or by a whole token resets
    texts = ["<A0>", "<E4>", "<BD>", "<A0>", "<F0 9F>", "<98 80>", "<E4>", "hi", "<BD>"]
    assert byte_characters(texts) == ["", "", "", "你", "", "😀", "", "", ""]
