"""AppTest of the "Cache internals" pages: each renders on the bundled model with its explanation and pictures;
widgets change what is shown; every bounded input rejects a value past its cap with a message, never an
exception; timings are per session (never served from a cross-session cache)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from kvviz.internals import crossattn, layout, paging, quant, speculative
from kvviz.measure.timing import Timing
from kvviz.model.loading import bundled_info
from support.pages import PAGES_DIR, app_test

INFO = bundled_info()  # the pages run on the bundled model in these tests

PAGES = {
    "layout": "Memory layout of the cache",
    "prefix": "Prefix reuse",
    "crossattn": "Cross-attention cache",
    "window": "Sliding windows",
    "paging": "Paged blocks",
    "quant": "Quantized caches",
    "speculative": "Speculative decoding: rollback",
}


def _app(name: str) -> AppTest:
    import streamlit as st

    st.cache_data.clear()
    return app_test(f"pages/internals_{name}.py").run()


def _texts(at: AppTest) -> str:
    return " ".join(
        str(e.value) for kind in (at.markdown, at.caption, at.metric, at.error, at.warning, at.info) for e in kind
    )


def _errors(at: AppTest) -> str:
    assert not at.exception, at.exception
    return " ".join(e.value for e in at.error)


@pytest.mark.app
@pytest.mark.parametrize("name", list(PAGES))
def test_every_page_renders_with_its_explanation(name):
    at = _app(name)
    assert not at.exception and not at.error
    assert at.title[0].value == PAGES[name]
    assert at.expander[0].label == "What you are seeing"
    if name != "prefix":  # the prefix page measures only on request (a timing is per session)
        assert at.get("plotly_chart"), name


@pytest.mark.app
def test_layout_page_shows_ncnn_copy_and_contiguous_head():
    at = _app("layout")
    assert "ncnn" in at.expander[0].markdown[0].value and "DynamicCache" in at.expander[0].markdown[0].value
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Contiguous runs"] == "1" and metrics["Copied per new token"] == "0 B"  # head_major
    at.selectbox(key="int_layout_name").set_value("transposed").run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Contiguous runs"] == "1"  # exactly seq_len wide: one head's rows are one slice
    assert int(metrics["Copied per new token"][:-2].replace(",", "")) > 0  # every past row is copied
    at.selectbox(key="int_layout_name").set_value("position_major").run()
    assert {m.label: m.value for m in at.metric}["Contiguous runs"] == "24"  # one run per cached position
    assert not at.exception


@pytest.mark.app
def test_layout_measurement_is_per_session():
    at = _app("layout")
    assert "int_layout_bench" not in at.session_state
    at.button(key="int_layout_measure").click().run()
    assert not at.exception and not at.error
    bench = at.session_state["int_layout_bench"]
    assert bench.contiguous.repeats == bench.strided.repeats == layout.BENCH_REPEATS  # repeats, not one run
    said = " ".join(x.value for x in [*at.info, *at.success])
    assert ("inside the noise" in said) == bench.inside_noise and "1-min load" in said
    assert layout.us_label(bench.strided) in _texts(at)  # median with the fastest and slowest repeat
    fresh = _app("layout")  # a new session does not see the first session's timing
    assert "int_layout_bench" not in fresh.session_state and "median of" not in _texts(fresh)


def _fake_layout_bench(monkeypatch, contiguous_ms, strided_ms, load):
    """The real benchmark's shape with the given repeats (what a quiet or a busy machine once produced)."""
    import dataclasses

    real = layout.bench_head_read

    def fake(*args, **kwargs):
        return dataclasses.replace(
            real(*args, **kwargs), contiguous=Timing(contiguous_ms, load), strided=Timing(strided_ms, load)
        )

    monkeypatch.setattr(layout, "bench_head_read", fake)


@pytest.mark.app
def test_layout_timing_inside_the_noise_crowns_nobody(monkeypatch):
    """Overlapping repeats: one sentence says "inside the noise", no tile delta, no ratio, the load shown."""
    _fake_layout_bench(monkeypatch, (0.090, 0.100, 0.130), (0.095, 0.110, 0.120), 1.7)
    at = _app("layout")
    at.button(key="int_layout_measure").click().run()
    assert not at.exception and not at.error and not at.success
    infos = " ".join(x.value for x in at.info)
    assert "inside the noise" in infos and "1-min load 1.70" in infos and "faster" not in infos
    assert "100.0 µs" in infos and "110.0 µs" in infos
    tile = next(m for m in at.metric if m.label.startswith("Strided read"))
    assert not tile.delta
    assert "90.0-130.0 µs" in _texts(at)  # the spread: fastest and slowest repeat


@pytest.mark.app
def test_layout_timing_beyond_the_noise_names_the_faster_read(monkeypatch):
    _fake_layout_bench(monkeypatch, (0.049, 0.050, 0.050, 0.051, 0.30), (0.099, 0.100, 0.100, 0.101, 0.102), 0.5)
    at = _app("layout")
    at.button(key="int_layout_measure").click().run()
    said = " ".join(x.value for x in at.success)
    assert said.startswith("The contiguous read took 50.0 µs") and "2.00x faster" in said and "1-min load 0.50" in said
    tile = next(m for m in at.metric if m.label.startswith("Strided read"))
    assert tile.delta.startswith("2.00x")


@pytest.mark.app
def test_prefix_page_measures_on_request_and_reports_load():
    at = _app("prefix")
    assert not at.metric
    at.button(key="int_prefix_run").click().run()
    assert not _errors(at)
    text = _texts(at)
    assert "Shared tokens" in [m.label for m in at.metric] and "load average" in text
    at.text_area(key="int_prefix_b").set_value("Nothing in common here").run()
    at.button(key="int_prefix_run").click().run()
    assert any("share no leading token" in w.value for w in at.warning)
    at.text_area(key="int_prefix_b").set_value("a " * 1100).run()
    at.button(key="int_prefix_run").click().run()
    assert "positions" in _errors(at)


@pytest.mark.app
@pytest.mark.parametrize(
    "page,key,value,message",
    [
        # a box's own bounds are its setting's: Streamlit resets a value past them, which the setting names
        ("layout", "int_layout_layer", INFO.n_layer, f"layer must be a whole number from 0 to {INFO.n_layer - 1}"),
        ("layout", "int_layout_head", INFO.n_kv_heads, f"head must be a whole number from 0 to {INFO.n_kv_heads - 1}"),
        (
            "layout",
            "int_layout_seq",
            INFO.n_positions + 1,
            f"cached positions must be a whole number from 1 to {INFO.n_positions}",
        ),
        (
            "layout",
            "int_layout_pos",
            INFO.n_positions,
            f"position must be a whole number from 0 to {INFO.n_positions - 1}",
        ),
        ("layout", "int_layout_dim", INFO.head_dim, f"dim must be a whole number from 0 to {INFO.head_dim - 1}"),
        ("crossattn", "int_cross_src", crossattn.MAX_SOURCE_LEN + 1, "source length"),
        ("crossattn", "int_cross_steps", crossattn.MAX_STEPS + 1, "decode steps"),
        ("window", "int_window_w", INFO.n_positions + 1, "window"),
        ("window", "int_window_gemma_ctx", 131073, "Gemma 3 4B context"),
        ("paging", "int_paging_block", paging.MAX_BLOCK_SIZE + 1, "block size"),
        ("paging", "int_paging_na", paging.MAX_NEW_TOKENS + 1, "tokens for sequence A"),
        ("paging", "int_paging_nb", paging.MAX_NEW_TOKENS + 1, "tokens for sequence B"),
        ("quant", "int_quant_group", 5, "group size must divide head_dim"),
        (
            "quant",
            "int_quant_group",
            64,
            f"group size must be a whole number from {quant.MIN_GROUP} to {INFO.head_dim}",
        ),
        ("quant", "int_quant_residual", 128, "full-precision residual rows"),
        ("speculative", "int_spec_k", speculative.MAX_K + 1, "draft length k"),
        ("speculative", "int_spec_n", speculative.MAX_NEW + 1, "tokens to generate"),
        ("speculative", "int_spec_t", speculative.MAX_TEMPERATURE + 1, "draft temperature"),
    ],
)
def test_bounded_inputs_reject_past_cap_values(page, key, value, message):
    at = _app(page)
    if key == "int_spec_t":  # the temperature is for a sampled draft only
        at.selectbox(key="int_spec_draft").set_value("self").run()
    at.number_input(key=key).set_value(value).run()
    errors = _errors(at)
    assert message in errors, errors


@pytest.mark.app
@pytest.mark.parametrize(
    "prompts,n_new,message",
    [
        ("\n".join(f"P{i}:" for i in range(quant.AGREEMENT_MAX_PROMPTS + 1)), 4, "number of prompts"),
        ("ROMEO:", quant.AGREEMENT_MAX_TOKENS + 1, "tokens per prompt"),
        ("\n".join(f"P{i}:" for i in range(8)), 17, "the cap is 128"),  # 8 x 17 = 136 > 128
        ("\n".join(["x " * 1020, "ROMEO:"]), 8, "prompt on line 1"),  # a too-long line is refused, not cut
    ],
)
def test_quant_agreement_rejects_past_cap_work(prompts, n_new, message):
    at = _app("quant")
    at.text_area(key="int_quant_prompts").set_value(prompts)
    at.number_input(key="int_quant_n").set_value(n_new).run()
    if n_new > quant.AGREEMENT_MAX_TOKENS:  # past the box's own bound: refused by its setting before any click
        assert message in _errors(at) and at.number_input(key="int_quant_n").value == quant.AGREEMENT_TOKENS.default
        assert "int_quant_agreement" not in at.session_state
        return
    at.button(key="int_quant_run").click().run()
    assert message in _errors(at)
    assert "int_quant_agreement" not in at.session_state


@pytest.mark.app
def test_quant_agreement_measures_and_residual_window_counts():
    at = _app("quant")
    bytes_before = {r["format"]: r["bytes"] for r in at.dataframe[0].value.to_dict("records")}
    at.number_input(key="int_quant_residual").set_value(7).run()
    rows = at.dataframe[0].value.to_dict("records")
    assert all(r["of which full-precision residual"] > 0 for r in rows)
    assert {r["format"]: r["bytes"] for r in rows}["int4"] > bytes_before["int4"]  # fp32 rows cost more
    assert "residual_length" in at.expander[0].markdown[0].value and "per channel" in at.expander[0].markdown[0].value
    at.number_input(key="int_quant_n").set_value(3).run()
    at.button(key="int_quant_run").click().run()
    assert not _errors(at)
    assert "prompts identical over 3 tokens each" in _texts(at)


@pytest.mark.app
def test_widgets_change_the_numbers():
    at = _app("window")
    at.number_input(key="int_window_w").set_value(4).run()
    assert any(m.label == "Rows a local layer keeps" and m.value.startswith("4 of") for m in at.metric)
    at = _app("paging")
    before = [m.value for m in at.metric]
    at.number_input(key="int_paging_block").set_value(4).run()
    assert [m.value for m in at.metric] != before and not at.exception


@pytest.mark.app
@pytest.mark.parametrize(
    "page,key",
    [
        ("speculative", "int_spec_prompt"),
        ("paging", "int_paging_prompt"),
        ("window", "int_window_prompt"),
        ("quant", "int_quant_prompt"),
    ],
)
def test_empty_prompt_gives_a_message(page, key):
    at = _app(page)
    at.text_area(key=key).set_value("   ").run()
    assert "empty" in _errors(at)


@pytest.mark.slow
def test_pages_and_figures_import_no_torch():
    """Each internals page's top-level imports (and the figure module) load neither torch nor transformers."""
    import ast
    import subprocess
    import sys

    modules = {"kvviz.figures.internals", "kvviz.internals.records", "kvviz.internals.layout"}
    for name in [*PAGES, "shared"]:
        tree = ast.parse((PAGES_DIR / f"internals_{name}.py").read_text())
        for node in tree.body:  # module level only: functions may import torch when the model runs
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                modules.add(node.module)
            elif isinstance(node, ast.Import):
                modules.update(alias.name for alias in node.names)
    code = (
        "import importlib, sys\n"
        f"for m in {sorted(modules)!r}: importlib.import_module(m)\n"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PAGES_DIR.parent
    ).stdout
    assert out.strip() == "[]", modules


@pytest.mark.app
def test_measurements_wait_their_turn_and_keep_it(monkeypatch):
    """While another session's measurement holds the server's queue, a new one waits in line and is run when the
    turn comes (its work kept, however long the wait); when the line is longer than QUEUE_FULL_S, nothing is queued
    and the page says the server is full and for how long."""
    import threading

    from kvviz.work_queue import WorkQueue
    from pages import internals_shared

    queue = WorkQueue("benchmark", poll_s=0.01)
    monkeypatch.setattr(internals_shared, "timed_work_queue", lambda: queue)
    holding, release = threading.Event(), threading.Event()

    def other_session() -> None:
        with queue.turn():
            holding.set()
            release.wait(30)

    def hand_over_when_the_page_waits() -> None:
        assert queue.wait_for_line(1, 30)
        release.set()

    t = threading.Thread(target=other_session)
    t.start()
    assert holding.wait(10)
    waiter = threading.Thread(target=hand_over_when_the_page_waits)
    waiter.start()
    at = _app("layout")
    at.button(key="int_layout_measure").click().run()
    t.join(10)
    waiter.join(10)
    assert not _errors(at) and "median of" in _texts(at)  # waited, then measured: nothing lost

    queue._recent_turns_s.extend([900.0] * 3)  # (as if the last turns took 15 min each)
    holding.clear(), release.clear()
    t = threading.Thread(target=other_session)
    t.start()
    try:
        assert holding.wait(10)
        at.button(key="int_layout_measure").click().run()
        warnings = [w.value for w in at.warning]
        assert any(w.startswith("This server is full: 1 job is in line, about 15 min") for w in warnings), warnings
        assert queue.state().waiting == 0  # refused up front: nothing queued
    finally:
        release.set()
        t.join(10)


@pytest.mark.app
def test_a_timing_that_contradicts_the_lesson_is_labelled(monkeypatch):
    """Reuse measured slower than a fresh prefill (a busy machine) is said to be so, with the load at the time."""
    import dataclasses

    from kvviz.internals.lab import prefix as prefix_lab

    real = prefix_lab.prefix_reuse

    def busy_machine(*args, **kwargs):  # the real run, with the timings a loaded machine once produced
        return dataclasses.replace(
            real(*args, **kwargs), fresh=Timing((8.8, 9.0, 9.1), 7.5), reuse=Timing((29.0, 30.0, 31.0), 7.5)
        )

    monkeypatch.setattr(prefix_lab, "prefix_reuse", busy_machine)
    at = _app("prefix")
    at.button(key="int_prefix_run").click().run()
    warnings = " ".join(w.value for w in at.warning)
    assert "busy machine" in warnings and "7.50" in warnings and "30.0 ms" in warnings
    monkeypatch.setattr(prefix_lab, "prefix_reuse", real)
    quiet = _app("prefix")
    quiet.button(key="int_prefix_run").click().run()
    r = quiet.session_state["int_prefix_result"][1]
    assert ("busy machine" in " ".join(w.value for w in quiet.warning)) == r.timing_contradicts_lesson
    # beyond the noise a winner is named with both medians; inside it, one sentence says so and crowns nobody
    said = " ".join(x.value for x in [*quiet.info, *quiet.success])
    assert ("inside the noise" in said) == r.timing.inside_noise
    assert f"{r.reuse_ms:.1f} ms" in said and "load" in said


@pytest.mark.app
def test_prefix_timing_inside_the_noise_crowns_nobody(monkeypatch):
    """Overlapping repeats: the page says "inside the noise" in one sentence, with no faster/slower delta."""
    import dataclasses

    from kvviz.internals.lab import prefix as prefix_lab

    real = prefix_lab.prefix_reuse

    def noisy(*args, **kwargs):
        return dataclasses.replace(
            real(*args, **kwargs), fresh=Timing((9.0, 9.9, 12.0), 2.0), reuse=Timing((8.8, 10.1, 11.0), 2.0)
        )

    monkeypatch.setattr(prefix_lab, "prefix_reuse", noisy)
    at = _app("prefix")
    at.button(key="int_prefix_run").click().run()
    infos = " ".join(x.value for x in at.info)
    assert "inside the noise" in infos and "1-min load 2.00" in infos
    assert not at.warning and not at.success
    tile = next(m for m in at.metric if m.label.startswith("Prefill with reuse"))
    assert not tile.delta


@pytest.mark.app
def test_speculative_default_pairs_the_two_bundled_models():
    """The default draft is the other bundled model (same tokenizer), greedy; its acceptance on the default
    prompt is what the page shows, and the output equals the verifier's plain greedy decoding."""
    from kvviz.internals.lab import speculative as speculative_lab
    from kvviz.model import loaders, loading
    from support.greedy import generate_greedy

    at = _app("speculative")
    assert not at.exception and not _errors(at)
    assert at.selectbox(key="int_spec_draft").value == loading.BUNDLED_GQA
    verifier, draft = loaders.load_bundled(), loaders.load_bundled(name=loading.BUNDLED_GQA)
    prompt = at.text_area(key="int_spec_prompt").value
    result = speculative_lab.speculative_decode(verifier, prompt, 24, 4, None, draft=draft)
    assert {m.label: m.value for m in at.metric}["Acceptance"] == f"{result.acceptance_rate:.0%}"
    assert result.acceptance_rate >= 0.5 and result.rows_cropped > 0  # shows both: accepted runs and a rollback
    assert list(result.tokens) == generate_greedy(verifier, prompt, 24)[0]
    at.selectbox(key="int_spec_draft").set_value("self").run()
    assert not _errors(at) and "the verifier itself" in _texts(at)
