"""The glossary and the teacher's guide: every term the lesson uses is defined, the pages render and are in the
navigation, filtering works, the plans add up to their minutes and open real pages, the README links the teacher's
guide (docs/teaching.md) in its first screen, and the guide opens with the plans, as kvviz.teaching.guide has them."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from kvviz import teaching
from kvviz.teaching import glossary, guide, lesson
from support.library import term_named
from support.pages import REPO, app_test, open_page


def test_the_step_count_the_home_page_names_is_the_lessons():
    assert len(lesson.STEPS) == teaching.LESSON_STEPS


def test_every_term_the_lesson_uses_is_in_the_glossary_and_links_a_real_page():
    for step in lesson.STEPS:
        assert step.terms
        for word in step.terms:
            term = glossary.find(word)
            assert term is not None, word
            assert glossary.definition_text(term) in glossary.help_text(word)
    for term in glossary.TERMS:
        assert term.see is None or (REPO / term.see.file).is_file(), term.see.name
    names = [t.name for t in glossary.TERMS]
    assert len(set(names)) == len(names)
    for wanted in (
        "KV cache",
        "Prefill",
        "Decode step",
        "head_dim",
        "Induction head",
        "MHA, GQA, MQA",
        "MLA",
        "Dot product",
        "FLOP",
        "GEMV, GEMM",
        "Roofline",
        "Arithmetic intensity",
        "Paged blocks",
    ):
        assert wanted in names, wanted


@pytest.mark.app
def test_glossary_page_is_in_the_navigation_and_filters(fresh_streamlit_caches):
    at = app_test("app.py")
    at.run()
    at.switch_page("pages/glossary.py").run()
    assert not at.exception and at.title[0].value == "Glossary"
    assert [h.value for h in at.header] == [t.name for t in glossary.TERMS]
    at.text_input(key="term").set_value("GQA").run()
    expected = [t.name for t in glossary.TERMS if "gqa" in " ".join((t.name, t.definition, *t.also)).lower()]
    assert "MHA, GQA, MQA" in expected and [h.value for h in at.header] == expected
    at.text_input(key="term").set_value("zzzz").run()
    assert not at.header and at.info


@pytest.mark.app
def test_teachers_page_and_plans(fresh_streamlit_caches):
    assert guide.total_minutes(guide.PLAN_30) == 30 and guide.total_minutes(guide.PLAN_45) == 45
    for block in guide.PLAN_30 + guide.PLAN_45:
        assert (REPO / block.page.file).is_file() and block.show and block.ask and block.pitfall
    at = app_test("app.py")
    at.run()
    at.switch_page("pages/teachers.py").run()
    assert not at.exception and at.title[0].value == "For teachers"
    text = " ".join(m.value for m in at.markdown)
    assert guide.PLAN_45[3].show in text and "KVVIZ_SHARED=1" in text


def test_the_readme_links_the_teachers_guide_in_its_first_screen_and_the_guide_opens_with_the_plans():
    first_screen = "\n".join((REPO / "README.md").read_text(encoding="utf-8").splitlines()[:40])
    assert "](docs/teaching.md)" in first_screen
    doc = (REPO / "docs" / "teaching.md").read_text(encoding="utf-8")
    assert doc.startswith("# For teachers\n")
    section = doc[: doc.index("\n## ")]  # before its first section (accessibility, what each page shows)
    assert "30 minutes" in section and "45 minutes" in section and "lesson_class=true" in section
    for block in guide.PLAN_30 + guide.PLAN_45:  # the full plans in docs/teaching.md are kvviz.teaching.guide's
        assert block.ask in section


@pytest.mark.app
def test_a_terms_link_lands_on_its_entry(fresh_streamlit_caches):
    """The lesson's glossary link for head_dim lands on its entry, not on a search where the entry comes third."""
    at = app_test("app.py", query={"term": "head_dim"})
    at.run()
    at.switch_page("pages/glossary.py").run()
    assert [h.value for h in at.header] == ["head_dim"]


def test_the_teaching_doc_holds_both_plans_exactly():
    doc = (REPO / "docs" / "teaching.md").read_text(encoding="utf-8")
    assert guide.plan_tables() in doc


def _open_link(link: str) -> AppTest:
    """Open a plan's link as a browser would: the router with the link's query, then the page it names."""
    from urllib.parse import parse_qsl, urlsplit

    parts = urlsplit(link)
    path = parts.path.strip("/")
    at = open_page(
        f"pages/{path}.py" if path else "app.py", query=dict(parse_qsl(parts.query)), router=True, check=False
    )
    assert not at.exception, link
    return at


@pytest.mark.app
def test_every_plan_link_opens_the_state_its_row_describes(fresh_streamlit_caches):
    """Each link of both plans opens what its row says (the browser rehearsal clicks them too)."""
    from kvviz import memory
    from kvviz.memory.presets import get_preset

    seen = set()
    for block in guide.PLAN_30 + guide.PLAN_45:
        if block.link in seen:
            continue
        seen.add(block.link)
        at = _open_link(block.link)
        if block.page.file == "pages/lesson.py":
            step = dict(p.split("=") for p in block.link.split("?")[1].split("&"))["step"]
            number = len(lesson.STEPS) + 1 if step == "End" else int(step)
            assert at.session_state["step"] == number
            if number <= len(lesson.STEPS):
                assert at.toggle(key="lesson_class").value is True and not at.number_input  # class mode
                assert not at.button(key="lesson_back").proto.disabled or number == 1
            else:
                assert at.table and at.metric[0].label == "Right"
        elif block.page.file == "pages/step_through.py":
            assert at.toggle(key="step_present").value is True  # presenter mode
            engine = at.session_state.get("step_engine", None)
            assert engine is None or not engine.started  # nothing prefilled: P shows the prefill
        elif block.page.file == "pages/attention_patterns.py":
            assert (
                at.selectbox(key="pat_source").value,
                at.selectbox(key="pat_layer").value,
                at.selectbox(key="pat_head").value,
            ) == ("Repeat a pattern", 3, 1)
            table = at.table[0].value
            assert "copies most here" in table["pattern"][1]  # head 1: the lesson's copying head
        elif block.page.file == "pages/memory_budget.py":
            assert at.number_input(key="mem_context").value == 8192 == get_preset("llama-3-8b").max_context
            weights = get_preset("llama-3-8b").n_params * 2
            crossing = weights // memory.kv_bytes(get_preset("llama-3-8b").kv, 1) + 1
            assert any(f"outweighs the weights from {crossing:,} tokens" in m.value for m in at.markdown)
        else:
            assert block.page.file == "pages/home.py" and at.title


# ----- every sentence as right as the numbers --------------------------------------------------------------------
def _text(name: str) -> str:
    return glossary.definition_text(term_named(name))


def test_heads_read_the_whole_hidden_vector_and_gqa_shares_k_v():
    """A head's projection reads the whole hidden vector (its output is split into heads), and with GQA
    query heads share K/V heads: no 'slice'/'share' of the hidden vector, no K and V 'in every head'."""
    for term in glossary.TERMS:
        text = glossary.definition_text(term).lower()
        assert "slice" not in text and "own q, k, v" not in text, term.name
    assert "whole hidden vector" in _text("Query, key, value (Q, K, V)")
    assert "K/V head" in _text("Query, key, value (Q, K, V)")
    head = _text("Attention head")
    assert "whole hidden vector" in head and "share one K/V head" in head


def test_head_dim_is_a_convention_with_the_gemma_counterexamples():
    """Hidden / heads is a convention; Gemma-2-9B and Gemma-3-4B break it (figures from the presets)."""
    from kvviz.memory.presets import get_preset

    text = _text("head_dim")
    assert "convention" in text
    for name in ("gemma-2-9b", "gemma-3-4b"):
        shape = get_preset(name).shape
        assert shape.n_embd // shape.n_head != shape.head_dim
        assert (
            f"{shape.n_embd:,} / {shape.n_head} = {shape.n_embd // shape.n_head} but head_dim {shape.head_dim}" in text
        )


def test_token_example_names_the_tokenizer_that_splits_it():
    """' green' -> ' gre' + 'en' is the bundled 2,048-token tokenizer, not GPT-2's."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(REPO / "kvviz" / "assets" / "bundled" / "tokenizer.json"))
    pieces = " + ".join(repr(tok.decode([i])) for i in tok.encode(" green").ids)
    text = _text("Token")
    assert f"bundled model, with its own {tok.get_vocab_size():,}-token vocabulary, reads ' green' as {pieces}" in text
    assert "GPT-2's tokenizer often splits" not in text


def test_arithmetic_intensity_is_per_byte():
    """2 FLOP per weight is 0.5 FLOP per byte in fp32 (4 bytes per weight)."""
    text = _text("Arithmetic intensity")
    assert "2 FLOP per weight" in text and f"{2 / 4:g} FLOP/byte in fp32" in text


def test_sliding_window_keeps_w_minus_1_as_transformers_does():
    """The installed transformers keeps the last sliding_window - 1 tokens."""
    import importlib.util

    source = (Path(importlib.util.find_spec("transformers").origin).parent / "cache_utils.py").read_text()
    assert "self.sliding_window + 1 :" in source  # keys[:, :, -W + 1:]: W - 1 rows kept
    text = _text("Sliding window")
    assert "keeps W - 1 rows" in text and "stops growing at W rows" not in text


def test_quantized_cache_saving_is_computed_with_its_scales():
    """With an fp16 scale and zero point per group of 64, int8 vs fp16 and int4 vs fp32 (from kvviz's
    own byte count), and the residual window noted."""
    from kvviz import memory
    from kvviz.memory.presets import get_preset

    kv = get_preset("llama-3-8b").kv  # head_dim 128
    ratio = {
        d: memory.kv_bytes(memory.KVConfig(kv.n_layer, kv.n_head, kv.n_kv_heads, kv.head_dim, d), 1000)
        for d in ("fp32", "fp16", "int8", "int4")
    }
    text = _text("Quantized cache")
    assert f"{ratio['fp16'] / ratio['int8']:.2f} to {ratio['fp32'] / ratio['int4']:.1f} times smaller" in text
    assert "2 to 8x" not in text and "unquantized" in text


def test_static_cache_and_speculative_decoding_have_entries_found_in_both_languages():
    """The glossary half: StaticCache and speculative decoding, found by the words readers type."""
    from kvviz import i18n

    static, spec = glossary.find("StaticCache"), glossary.find("speculative decoding")
    assert static is not None and spec is not None
    assert glossary.find("静态缓存") is static and glossary.find("投机解码") is spec
    with i18n.language(i18n.CHINESE):
        assert [t for t in glossary.TERMS if glossary.matches(t, "投机解码")] == [spec]


@pytest.mark.parametrize("typed", ["-", "_", " - ", "--_"])
def test_a_search_of_hyphens_or_underscores_alone_matches_as_typed_not_everything(typed):
    """Names are compared with hyphens and underscores aside ("KV-Cache" finds "KV cache"); a needle of those
    alone squeezed to nothing, which every term contains: the glossary listed every term for "-"."""

    found = [t.name for t in glossary.TERMS if glossary.matches(t, typed)]
    expected = [
        t.name
        for t in glossary.TERMS
        if any(typed.strip() in h.lower() for h in (t.name, t.zh, t.definition, glossary.definition_text(t), *t.also))
    ]
    assert len(found) < len(glossary.TERMS)
    assert set(expected) <= set(found)


def test_the_command_that_serves_a_class_runs_as_printed_in_both_languages():
    """The teacher page's command held a placeholder ("--browser.serverAddress <host students type>", issue 58):
    printed in both languages it runs as it stands (a real address, no <…>), the page says what that address
    stands for and how to find this computer's, and gives students the link with it. The guides print the same
    command (kvviz.teaching.guide.SERVE_A_CLASS, one home)."""
    import ipaddress
    import re
    import shlex

    from kvviz import i18n

    command = guide.SERVE_A_CLASS
    words = shlex.split(command)
    address = words[words.index("--browser.serverAddress") + 1]
    ipaddress.ip_address(address)  # an address Streamlit accepts, not a placeholder
    assert words[0] == "KVVIZ_SHARED=1" and words[1:4] == [".venv/bin/streamlit", "run", "app.py"]
    for language in (i18n.ENGLISH, i18n.CHINESE):
        with i18n.language(language):
            text = guide.run_for_a_class()
        assert not re.search(r"<[^<>`]*>", text), (language, re.findall(r"<[^<>`]*>", text))
        assert f"`{command}`" in text and "hostname -I" in text, language
        assert f"`http://{address}:{guide.STREAMLIT_PORT}/lesson?step=1`" in text, language
        said = text.replace(f"`{command}`", "").replace(f"`http://{address}", "")
        assert address in said, language  # what the address stands for, outside the command and the link
    for doc in ("docs/deploying.md", "docs/teaching.md", ".streamlit/config.toml", "kvviz/model/shared_mode.py"):
        held = (REPO / doc).read_text(encoding="utf-8")
        assert "<host students type>" not in held and command in held.replace("\n", " "), doc
