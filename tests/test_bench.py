"""kvviz.speedup.harness (harness), its records, tables, probes, batch sweep, CLI and figures on the real bundled GPT-2.

Invariants only (they hold for any weights and any machine): every exact mode picks the no-cache tokens, the
records have the right shapes and byte counts, one estimator gives every speed-up, each round's roofline
fraction uses its own probe and a disturbed run never shows a fraction, the line serializes real threads.
No timing is asserted: timings live in `python -m kvviz bench` and bench/.
"""

from __future__ import annotations

import json
import threading
import time
from itertools import pairwise

import numpy as np
import pytest

from kvviz.figures import bench as figs
from kvviz.speedup import machine, tables
from kvviz.speedup.records import LOSSY_MODES, MODES, REFERENCES, BenchSettings
from kvviz.speedup.settings import BenchInputError, validate
from kvviz.work_queue import timed_work_queue


def in_line() -> int:
    """Benchmarks in this server's line, the running one included."""
    state = timed_work_queue().state()
    return state.waiting + int(state.busy)


TINY = BenchSettings(prompt_len=5, new_tokens=6, repeats=2, warmup=1, threads=1, include_generate_no_cache=True)


@pytest.fixture(scope="module")
def tiny_result(sdpa_model):
    from kvviz.speedup import harness

    return harness.run_benchmark(sdpa_model, TINY)


# ----- correctness: caching changes speed, never tokens ------------------------------------------------------
@pytest.mark.model
def test_every_exact_mode_generates_the_no_cache_tokens(tiny_result):
    assert [m.mode for m in tiny_result.modes] == [m for m in MODES + REFERENCES if m != "static_compiled"]
    baseline = tiny_result.mode("no_cache").token_ids
    assert len(baseline) == TINY.new_tokens
    for mode in tiny_result.modes:
        if mode.mode not in LOSSY_MODES:
            assert all(run.token_ids == baseline for run in mode.runs), mode.mode
    assert tiny_result.all_tokens_match
    agreement = tiny_result.token_agreement("int8")
    same = [a == b for run in tiny_result.mode("int8").runs for a, b in zip(run.token_ids, baseline, strict=True)]
    assert agreement == sum(same) / len(same)


@pytest.mark.model
def test_no_cache_tokens_are_the_models_greedy_tokens(sdpa_model, tiny_result):
    import torch

    ids = list(tiny_result.prompt_ids)
    with torch.inference_mode():
        for _ in range(TINY.new_tokens):
            ids.append(int(sdpa_model.model(input_ids=torch.tensor([ids])).logits[0, -1].argmax()))
    assert tuple(ids[TINY.prompt_len :]) == tiny_result.mode("no_cache").token_ids


# ----- records ---------------------------------------------------------------------------------------------
@pytest.mark.model
def test_record_shapes_and_cache_bytes(sdpa_model, tiny_result):
    info = sdpa_model.info
    p, n = TINY.prompt_len, TINY.new_tokens
    row = 2 * info.n_layer * info.n_kv_heads * info.head_dim * 4  # K + V, fp32, per position
    assert tiny_result.kv_row_bytes == row
    expected_cache = {
        "no_cache": 0,
        "dynamic": (p + n - 1) * row,
        "static": (p + n) * row,
        "preallocated": (p + n) * row,
        "int8": (p + n) * row,
    }
    for mode in tiny_result.modes:
        assert len(mode.runs) == TINY.repeats
        for run in mode.runs:
            assert len(run.decode_ms) == n - 1 and run.token_ms.shape == (n,)
            assert run.prefill_ms > 0 and min(run.decode_ms) > 0
            assert run.total_ms >= run.passes_ms - 1e-6 or mode.is_reference
        assert mode.median_tokens_per_s > 0 and mode.spread_pct >= 0
        assert mode.peak_cache_bytes == expected_cache.get(mode.mode), mode.mode  # None: inside generate()
    assert tiny_result.machine.threads == 1 and tiny_result.machine.thread_reason == "set for this run"


@pytest.mark.model
def test_one_estimator_for_every_speedup(tiny_result):
    """speedup() is the last point of speedup_by_length(): median over rounds of summed pass times."""
    for name in ("dynamic", "preallocated", "generate_cache"):
        brute = np.median([r.passes_ms for r in tiny_result.mode("no_cache").runs]) / np.median(
            [r.passes_ms for r in tiny_result.mode(name).runs]
        )
        assert tiny_result.speedup(name) == pytest.approx(brute)
        assert tiny_result.speedup_by_length(name)[-1] == pytest.approx(tiny_result.speedup(name))
    assert tiny_result.speedup("no_cache") == pytest.approx(1.0)


@pytest.mark.model
def test_op_ratio_overlay_comes_from_kvviz_ops(tiny_result):
    ks = [k for k, _ in tiny_result.op_ratio]
    ratios = [r for _, r in tiny_result.op_ratio]
    assert ks == list(range(1, TINY.new_tokens + 1))
    assert ratios[0] == pytest.approx(1.0)  # the prefill is the same pass with or without a cache
    assert all(b > a for a, b in pairwise(ratios))


@pytest.mark.model
def test_weight_choice_is_recorded(tiny_result):
    choice = tiny_result.weight_choice
    times = dict(choice.ms_by_format)
    assert choice.chosen in ("stored", "onednn")
    if times:
        assert choice.chosen == min(times, key=times.get) and choice.how == "measured"


# ----- the line: one benchmark at a time -------------------------------------------------------------------
@pytest.mark.model
def test_line_serializes_two_concurrent_runs(sdpa_model):
    import torch

    from kvviz.speedup import harness

    settings = BenchSettings(
        prompt_len=4,
        new_tokens=4,
        repeats=1,
        warmup=0,
        threads=1,
        include_generate=False,
        include_int8=False,
        include_static=False,
        weight_format="stored",
    )
    spans: dict[str, list[float]] = {"a": [], "b": []}
    busy_seen: list[bool] = []
    errors: list[BaseException] = []
    threads_before = torch.get_num_threads()

    def worker(name: str) -> None:
        def progress(fraction: float, text: str) -> None:
            spans[name].append(time.perf_counter())
            busy_seen.append(timed_work_queue().state().busy)

        try:
            harness.run_benchmark(sdpa_model, settings, progress=progress)
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    workers = [threading.Thread(target=worker, args=(name,)) for name in ("a", "b")]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert not errors and all(spans.values())
    first, second = sorted(spans.values(), key=min)
    assert max(first) <= min(second)  # no overlap: one after the other
    assert all(busy_seen)
    assert not timed_work_queue().state().busy and timed_work_queue().state().running_for_s is None and in_line() == 0
    assert torch.get_num_threads() == threads_before


@pytest.mark.model
def test_queue_position_is_reported_and_a_timeout_is_clear(sdpa_model):
    from kvviz.speedup import harness

    holding, release = threading.Event(), threading.Event()

    def holder() -> None:
        with harness.hold_turn():
            holding.set()
            release.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    assert holding.wait(30)
    ahead: list[int] = []
    with pytest.raises(harness.BenchBusyError, match="busy"):
        harness.run_benchmark(sdpa_model, TINY, lock_wait_s=1.2, on_wait=ahead.append)
    assert ahead and set(ahead) == {1}  # one run ahead: the holder's
    assert in_line() == 1  # the timed-out caller left the line
    release.set()
    thread.join(30)
    assert in_line() == 0 and not timed_work_queue().state().busy


@pytest.mark.model
def test_interrupted_run_releases_its_turn_and_restores_threads(sdpa_model):
    import torch

    from kvviz.speedup import harness

    threads_before = torch.get_num_threads()

    def interrupt(fraction: float, text: str) -> None:
        if fraction > 0.03:
            raise KeyboardInterrupt  # what Ctrl-C or a Streamlit rerun does mid-run

    settings = BenchSettings(
        prompt_len=3, new_tokens=3, repeats=1, warmup=0, threads=max(1, threads_before - 1) if threads_before > 1 else 2
    )
    with pytest.raises(KeyboardInterrupt):
        harness.run_benchmark(sdpa_model, settings, progress=interrupt)
    assert not timed_work_queue().state().busy and in_line() == 0
    assert torch.get_num_threads() == threads_before


# ----- bad input, threads ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "settings, message",
    [
        (BenchSettings(prompt_len=200, new_tokens=100), "only 256 positions"),
        (BenchSettings(prompt_len=0), "Prompt length must be between 1"),
        (BenchSettings(new_tokens=-3), "New tokens must be between 1"),
        (BenchSettings(repeats=0), "Repeats must be between 1"),
        (BenchSettings(threads=0), "Threads must be between 1"),
        (BenchSettings(prompt_len=2.5), "whole number"),
        (BenchSettings(weight_format="fp64"), "Weight format"),
    ],
)
def test_validate_rejects_bad_settings(settings, message):
    with pytest.raises(BenchInputError, match=message):
        validate(settings, n_positions=256)


def test_default_thread_count_follows_free_cores_and_other_sessions():
    cores = machine.max_threads()
    assert machine.default_thread_count(load_1min=0.0)[0] == cores
    threads, why = machine.default_thread_count(load_1min=1000.0)
    assert threads == 1 and "free" in why
    threads, why = machine.default_thread_count(other_sessions=2, load_1min=0.0)
    assert threads == max(1, cores - 1) if cores > 1 else threads == 1
    if cores > 1:
        assert "2 other session(s)" in why
    assert machine._parse_size("32768K") == 32 * 2**20 and machine._parse_size("bad") is None


# ----- tables, CSV, figures, CLI ---------------------------------------------------------------------------
@pytest.mark.model
def test_summary_and_csv(tiny_result):
    rows = tables.summary_rows(tiny_result)
    assert [r["mode"] for r in rows] == [m.label for m in tiny_result.modes]
    assert [r["tokens match no cache"] for r in rows] == [
        f"{tiny_result.token_agreement('int8'):.0%}" if m.mode == "int8" else "yes" for m in tiny_result.modes
    ]
    import pandas as pd
    import pyarrow as pa

    pa.Table.from_pandas(pd.DataFrame(rows))  # one type per column: what st.dataframe needs
    lines = tables.per_token_csv(tiny_result).strip().splitlines()
    assert lines[0].startswith("model,mode,repeat,token_index")
    assert len(lines) == 1 + len(tiny_result.modes) * TINY.repeats * TINY.new_tokens
    assert lines[1].split(",")[4:6] == ["prefill", str(TINY.prompt_len)]


@pytest.mark.model
def test_figures(tiny_result):
    """Four lines at most per chart (the headline modes by default, the caller's choice otherwise), roofs
    labelled on the chart, every log axis announced, ticks at the shared minimum size."""
    from kvviz.figures import MAX_LEGEND_ENTRIES, MIN_TICK_FONT_PX, legend_entries

    headline = [m for m in figs.HEADLINE_MODES if tiny_result.has(m)]
    latency = figs.latency_figure(tiny_result)
    assert [t.name for t in latency.data] == [figs.SHORT_LABELS[m] for m in headline]
    assert len(figs.cumulative_figure(tiny_result).data) == len(headline)
    picked = figs.latency_figure(tiny_result, modes=["no_cache", "generate_cache"])
    assert [t.name for t in picked.data] == ["no cache", "generate(cache)"]
    too_many = figs.cumulative_figure(tiny_result, modes=[m.mode for m in tiny_result.modes])
    assert len(too_many.data) == MAX_LEGEND_ENTRIES
    speedup = figs.speedup_figure(tiny_result)
    assert [t.name for t in speedup.data][-1].endswith("(theory)")
    roof = figs.roofline_figure(tiny_result)
    names = [t.name for t in roof.data]
    assert "memory roof" in names and "compute roof" in names
    notes = " ".join(a.text for a in roof.layout.annotations)
    assert "memory roof" in notes and "compute roof" in notes  # labelled on the line, not in the legend
    assert sum(len(t.x) for t in roof.data if t.mode == "markers") == len(tables.pass_points(tiny_result))
    for fig in (latency, speedup, roof, too_many):
        assert legend_entries(fig) <= MAX_LEGEND_ENTRIES
        for axis in (fig.layout.xaxis, fig.layout.yaxis):
            assert axis.tickfont.size >= MIN_TICK_FONT_PX
            if axis.type == "log":
                assert "log" in f"{axis.title.text} {fig.layout.title.text}" and len(axis.tickvals) >= 2


@pytest.mark.model
def test_cli_json(capsys):
    from kvviz.cli import bench as cli_bench

    rc = cli_bench.main(
        ["--prompt-len", "3", "--new-tokens", "4", "--repeats", "1", "--warmup", "0", "--threads", "1", "--json"]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tokens_match"] is True and out["machine"]["threads"] == 1
    assert set(out["modes"]) == set(MODES + REFERENCES) - {"static_compiled"}  # --compile not passed
    pre = out["modes"]["preallocated"]
    assert len(pre["median_token_ms"]) == 4 and pre["speedup_over_no_cache"] > 0
    assert len(pre["roofline_fraction_by_round"]) == 1 and out["estimator"]
    assert out["weight_format"]["chosen"] in ("stored", "onednn")


@pytest.mark.model
def test_cli_text_report(capsys):
    from kvviz.cli import bench as cli_bench

    rc = cli_bench.main(
        [
            "--prompt-len",
            "3",
            "--new-tokens",
            "3",
            "--repeats",
            "1",
            "--warmup",
            "0",
            "--threads",
            "1",
            "--no-generate",
            "--no-prepack",
            "--no-int8",
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "read roofline" in out and "Flat pre-allocated" in out and "model.generate" not in out
    assert "flat engine weights: stored (forced by the settings)" in out and "int8" not in out


@pytest.mark.model
@pytest.mark.parametrize(
    "argv, rc, message",
    [
        (["--new-tokens", "0"], 2, "--new-tokens: the value must be from 1 to 1,000,000 (got 0)"),
        (["--prompt-len", "200", "--new-tokens", "100"], 2, "only 256 positions"),
        (["--model", "/nonexistent/kvviz-model"], 1, "kvviz bench:"),
        (["--repeats", "many"], 2, "must be a whole number"),  # the app's parser (kvviz.cli.whole)
    ],
)
def test_cli_bad_input(capsys, argv, rc, message):
    from kvviz.cli import bench as cli_bench

    assert cli_bench.main(argv) == rc
    assert message in capsys.readouterr().err


@pytest.mark.model
def test_a_non_gpt2_model_is_refused_with_a_message_before_anything_runs(bundled):
    """The engines mirror GPT2LMHeadModel: a Llama-type model gets one clear line, not an AttributeError."""
    import dataclasses

    from kvviz.speedup.settings import BenchInputError, BenchSettings, validate

    llama_info = dataclasses.replace(bundled.info, model_type="llama", label="a Llama model")
    with pytest.raises(BenchInputError, match="written for GPT-2.*llama model"):
        validate(BenchSettings(prompt_len=4, new_tokens=4), llama_info.n_positions, llama_info)
    validate(BenchSettings(prompt_len=4, new_tokens=4), bundled.info.n_positions, bundled.info)  # GPT-2 passes


# ----- the torch.compile reference (off by default) -------------------------------------------------------------
@pytest.mark.model
def test_compiled_static_reference_picks_the_same_tokens_or_says_why_not(sdpa_model):
    from kvviz.cli import bench as cli_bench
    from kvviz.speedup import harness

    settings = BenchSettings(
        prompt_len=5,
        new_tokens=6,
        repeats=1,
        warmup=1,
        threads=1,
        include_generate=False,
        include_int8=False,
        include_compiled=True,
        weight_format="stored",
    )
    result = harness.run_benchmark(sdpa_model, settings)
    if result.has("static_compiled"):  # a C++ compiler is here: one graph, timed, the no-cache tokens
        assert result.compile_note.startswith("torch.compile took ")
        assert result.tokens_match("static_compiled") and result.mode("static_compiled").is_reference
        assert [m.mode for m in result.modes][-1] == "static_compiled"
    else:  # no compiler: skipped with the reason, the other modes still ran
        assert result.compile_note.startswith("StaticCache + torch.compile skipped: torch.compile failed here")
        assert result.has("preallocated")
    assert tables.to_dict(result)["compile_note"] == result.compile_note
    assert result.compile_note in cli_bench.format_report(result)
    assert not BenchSettings().include_compiled  # a reference, never on unless asked
