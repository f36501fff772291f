"""The Memory budget page in Simplified Chinese, AppTest end to end: every tab a student opens reads in
Chinese (no English sentence left, names, code and paper titles aside), a config.json import error and an import
report come back in Chinese, the charts speak Chinese, the shareable link carries lang=, and ?lang=en gives
English back. The page runs standalone on the real bundled model (its "loaded model" tab runs a real prefill)."""

from __future__ import annotations

import ast
import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from kvviz import claims, i18n
from kvviz.memory.presets import PRESETS
from support.i18n_text import english_leftovers, page_texts
from support.markdown_text import shown
from support.models import GEMMA3_4B
from support.pages import PAGES_DIR, app_test, open_page

pytestmark = [pytest.mark.usefixtures("fresh_streamlit_caches"), pytest.mark.app]  # every test runs the page
PAGE = PAGES_DIR / "memory_budget.py"
CJK = re.compile(r"[\u4e00-\u9fff]")
# Names that stay as they are: the presets' paper titles (citations), and kvviz.claims' own verdicts and arithmetic
# on the "Textbook figures" tab (claims' slice of the translation; listed here so this test checks this page's words).
# And the probe prompt the "loaded model" tab quotes: the bundled model's own English (Shakespeare) input.
PROBE_PROMPT = next(
    ast.literal_eval(node.value)
    for node in ast.parse(PAGE.read_text(encoding="utf-8")).body
    if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "PROBE_PROMPT"
)
ALLOWED = [PROBE_PROMPT, *(p.paper for p in PRESETS.values())] + [
    t for c in claims.published_figure_checks() for t in (c.verdict, c.explanation, c.figure.where)
]


def chinese_page(**query: str) -> AppTest:
    return open_page(PAGE, lang=i18n.CHINESE, query=query)


def assert_all_chinese(at: AppTest) -> None:
    texts = page_texts(at)
    assert not english_leftovers(texts, ALLOWED), english_leftovers(texts, ALLOWED)
    assert sum(bool(CJK.search(t)) for t in texts) > 10


def chart_text(at: AppTest) -> str:
    return " ".join(json.dumps(json.loads(c.proto.spec), ensure_ascii=False) for c in at.get("plotly_chart"))


@pytest.mark.parametrize(
    "tab", ["大小随上下文长度变化", "逐层", "能放下多少", "分页与扁平对比", "教材中的数字", "已加载的模型"]
)
def test_every_tab_reads_in_chinese(tab):
    at = chinese_page(mem_preset="gemma-3-4b", mem_tab=tab)  # Gemma 3: windowed, so the per-layer chart is drawn
    assert at.title[0].value == "显存预算"
    assert_all_chinese(at)
    assert "每个 token（所有层）" in {m.label for m in at.metric}
    if tab in ("大小随上下文长度变化", "逐层", "分页与扁平对比"):
        assert CJK.search(chart_text(at)) and "tokens" not in chart_text(at).replace("%{", "")


def test_what_fits_and_a_too_long_context_speak_chinese():
    at = chinese_page(mem_preset="deepseek-v3", mem_tab="能放下多少")
    assert "没有留给缓存的显存" in at.error[0].value
    at = chinese_page(mem_preset="llama-3-8b", mem_context="100000", mem_tab="分页与扁平对比")
    assert "超出了 llama-3-8b 自身的上下文窗口（8,192 个 token）" in at.warning[0].value
    assert_all_chinese(at)


def test_config_import_error_and_report_in_chinese():
    at = chinese_page()
    at.text_area(key="mem_paste").set_value("[1, 2]").run()
    at.button(key="mem_import").click().run()
    assert not at.exception and len(at.error) == 1
    assert shown(at.error[0].value) == "未导入：config.json 必须是一个 JSON 对象（{...}），而不是列表或单个值。"
    at.text_area(key="mem_paste").set_value('{"model_type": "gemma3_text", "sliding_window_pattern": "abc"}').run()
    at.button(key="mem_import").click().run()
    assert shown(at.error[0].value).startswith("未导入：sliding_window_pattern 必须是 1 到 ")
    at.text_area(key="mem_paste").set_value(json.dumps(GEMMA3_4B)).run()
    at.button(key="mem_import").click().run()
    report = shown(at.success[0].value)
    assert report.startswith("已导入 ") and "（transformers 的 Gemma3TextConfig 默认值）" in report
    assert "共 34 层：29 层滑动窗口 + 5 层完整注意力" in report and "保留最后 1,023 个 token" in report
    assert_all_chinese(at)
    at.query_params[i18n.QUERY_PARAM] = i18n.ENGLISH  # the switch: the report is read again, in English
    with i18n.language(i18n.CHINESE):  # the browser sends back the labels it showed, Chinese ones
        at.run()
    assert not at.exception and at.selectbox(key="mem_preset").value == "custom"  # the picker kept its choice
    assert at.number_input(key="mem_layers").value == 34
    assert at.success[0].value.startswith("Imported **") and "layer_types = 29 sliding + 5 full of 34" in shown(
        at.success[0].value
    )


def test_the_link_carries_the_language_and_english_comes_back():
    at = chinese_page()
    at.text_area(key="mem_paste").set_value(json.dumps(GEMMA3_4B)).run()
    at.button(key="mem_import").click().run()  # the form is filled through session_state: the URL follows
    shared = {k: at.query_params[k] for k in at.query_params}
    assert shared[i18n.QUERY_PARAM] == i18n.CHINESE and shared["mem_layers"] == "34"
    assert shared["mem_preset"] == "自定义"  # a picker's link value is the label shown, read in the link's language
    again = app_test(PAGE, query=shared)  # a reader opening the copied link
    with i18n.language(i18n.CHINESE):  # AppTest formats pickers' values in the test's thread, which has no session
        again.run()
    assert not again.exception and not again.warning  # every link value read back, nothing refused
    assert again.title[0].value == "显存预算" and again.number_input(key="mem_layers").value == 34
    assert again.selectbox(key="mem_preset").value == "custom"
    english = app_test(PAGE, lang=i18n.ENGLISH)
    english.run()
    assert english.title[0].value == "Memory budget"
    assert "Per token (all layers)" in {m.label for m in english.metric}
    assert not any(CJK.search(t) for t in page_texts(english) if "简体中文" not in t)
