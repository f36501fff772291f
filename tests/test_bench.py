"""kvviz.bench, kvviz.roofline, kvviz.cli_bench and kvviz.figures.bench on the real bundled GPT-2.

Invariants only (they hold for any weights): the three modes pick the same tokens, the pre-allocated engine
computes the model's own logits and K/V, records have the right shapes, the lock serializes real threads.
No timing is asserted: timings live in `python -m kvviz bench` and bench/.
"""
from __future__ import annotations

import json
import threading

import pytest
import torch
from transformers import DynamicCache

from kvviz import bench, cli_bench, roofline
from kvviz.figures import bench as figs
from kvviz.models import load_model

TINY = bench.BenchSettings(prompt_len=5, new_tokens=6, repeats=2, warmup=1, threads=1)


@pytest.fixture(scope="module")
def sdpa_model():
    """The bundled model with SDPA attention, as the benchmark page loads it."""
    return load_model("bundled", attn_implementation="sdpa")


@pytest.fixture(scope="module")
def tiny_result(sdpa_model):
    return bench.run_benchmark(sdpa_model, TINY)


# ----- correctness: caching changes speed, never tokens ------------------------------------------------------
def test_all_modes_generate_identical_tokens(tiny_result):
    assert [m.mode for m in tiny_result.modes] == list(bench.MODES + bench.REFERENCES)
    baseline = tiny_result.mode("no_cache").token_ids
    assert len(baseline) == TINY.new_tokens
    for mode in tiny_result.modes:
        for run in mode.runs:
            assert run.token_ids == baseline, mode.mode
    assert tiny_result.all_tokens_match


def test_no_cache_tokens_are_the_models_greedy_tokens(sdpa_model, tiny_result):
    ids = list(tiny_result.prompt_ids)
    with torch.inference_mode():
        for _ in range(TINY.new_tokens):
            ids.append(int(sdpa_model.model(input_ids=torch.tensor([ids])).logits[0, -1].argmax()))
    assert tuple(ids[TINY.prompt_len :]) == tiny_result.mode("no_cache").token_ids


@pytest.mark.parametrize("prepack", [True, False])
def test_preallocated_engine_matches_model_logits_and_cache(sdpa_model, prepack):
    model = sdpa_model.model
    prompt = bench.prompt_token_ids(sdpa_model, 7)
    engine = bench.FlatCacheGPT2(model, max_len=12, prepack_weights=prepack)
    cache = DynamicCache(config=model.config)
    with torch.inference_mode():
        ours = engine.forward(torch.tensor(prompt))
        theirs = model(input_ids=torch.tensor([prompt]), past_key_values=cache, use_cache=True).logits[:, -1]
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-4)
        for _ in range(4):
            token = int(ours.argmax())
            ours = engine.forward(torch.tensor([token]))
            theirs = model(input_ids=torch.tensor([[token]]), past_key_values=cache, use_cache=True).logits[:, -1]
            torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-4)
    assert engine.length == cache.get_seq_length() == 11
    assert (engine.weight_format == bench.WEIGHTS_AS_STORED) == (not prepack)
    for layer, cached in enumerate(cache.layers):
        torch.testing.assert_close(engine.keys[layer, :, :, :11], cached.keys, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(engine.values[layer, :, :, :11], cached.values, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        engine.forward(torch.tensor([1, 2]))  # only one token at a time once the cache holds rows
    engine.reset()
    assert engine.length == 0


def test_model_is_left_untouched(sdpa_model, tiny_result):
    model = sdpa_model.model
    assert not model.training
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())
    assert model.lm_head.weight is model.transformer.wte.weight  # the pre-packed LM head is a copy


# ----- record shapes ---------------------------------------------------------------------------------------
def test_record_shapes_and_positive_latencies(sdpa_model, tiny_result):
    info = sdpa_model.info
    p, n = TINY.prompt_len, TINY.new_tokens
    row_bytes = 2 * info.n_layer * info.n_kv_heads * info.head_dim * 4  # K + V, fp32, per position
    expected_cache = {"no_cache": 0, "dynamic": (p + n - 1) * row_bytes, "preallocated": (p + n) * row_bytes}
    for mode in tiny_result.modes:
        assert len(mode.runs) == TINY.repeats
        for run in mode.runs:
            assert len(run.decode_ms) == n - 1
            assert run.token_ms.shape == (n,)
            assert run.prefill_ms > 0 and min(run.decode_ms) > 0
            assert run.total_ms >= run.prefill_ms + sum(run.decode_ms) - 1e-6 or mode.is_reference
            assert run.tokens_per_s > 0
        assert mode.median_token_ms.shape == (n,)
        assert mode.median_tokens_per_s > 0 and mode.spread_pct >= 0
        assert mode.peak_cache_bytes == expected_cache.get(mode.mode), mode.mode  # None: inside generate()
    assert tiny_result.machine.threads == 1
    assert tiny_result.speedup("no_cache") == pytest.approx(1.0)
    assert tiny_result.speedup_by_length("dynamic").shape == (n,)


def test_op_ratio_overlay_comes_from_kvviz_ops(tiny_result):
    ks = [k for k, _ in tiny_result.op_ratio]
    ratios = [r for _, r in tiny_result.op_ratio]
    assert ks == list(range(1, TINY.new_tokens + 1))
    assert ratios[0] == pytest.approx(1.0)  # the prefill is the same pass with or without a cache
    assert all(b > a for a, b in zip(ratios, ratios[1:]))


def test_roofline_numbers(sdpa_model, tiny_result):
    model, info = sdpa_model.model, sdpa_model.info
    wpe = model.transformer.wpe.weight
    # tied LM head: every parameter once, except the position table of which one row is read
    assert roofline.weight_bytes_per_decode_token(model) == 4 * (info.n_params - wpe.numel() + wpe.shape[1])
    row = 2 * info.n_layer * info.n_kv_heads * info.head_dim * 4
    brute = [(TINY.prompt_len + k) * row for k in range(1, TINY.new_tokens)]
    assert tiny_result.kv_bytes_per_token == sum(brute) // len(brute)
    roof = tiny_result.roofline("preallocated")
    assert roof.bytes_per_token == tiny_result.weight_bytes_per_token + tiny_result.kv_bytes_per_token
    assert roof.fraction == pytest.approx(roof.achieved_bytes_per_s / tiny_result.bandwidth.bytes_per_s)
    assert tiny_result.bandwidth.bytes_per_s > 0 and tiny_result.bandwidth.threads == 1
    assert roofline.kv_bytes_read_per_decode_token(2, 2, 4, 4, 10, 1) == 0  # no decode step, nothing read


# ----- the lock --------------------------------------------------------------------------------------------
def test_lock_serializes_two_concurrent_runs(sdpa_model):
    settings = bench.BenchSettings(prompt_len=4, new_tokens=4, repeats=1, warmup=0, threads=1,
                                   include_generate=False)
    results: dict[str, bench.BenchResult] = {}
    busy_seen: list[bool] = []
    errors: list[BaseException] = []
    threads_before = torch.get_num_threads()

    def worker(name: str) -> None:
        try:
            results[name] = bench.run_benchmark(
                sdpa_model, settings, progress=lambda fraction, text: busy_seen.append(bench.benchmark_busy())
            )
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    workers = [threading.Thread(target=worker, args=(name,)) for name in ("a", "b")]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert not errors and set(results) == {"a", "b"}
    first, second = sorted(results.values(), key=lambda r: r.lock_acquired_at)
    assert first.lock_released_at <= second.lock_acquired_at  # no overlap: one after the other
    assert busy_seen and all(busy_seen)
    assert not bench.benchmark_busy() and bench.busy_for_s() is None
    assert torch.get_num_threads() == threads_before


def test_busy_lock_times_out_with_a_clear_error(sdpa_model):
    assert bench._BENCH_LOCK.acquire(timeout=5)
    try:
        assert bench.benchmark_busy()
        with pytest.raises(bench.BenchBusyError, match="Another benchmark"):
            bench.run_benchmark(sdpa_model, TINY, lock_wait_s=0.05)
    finally:
        bench._BENCH_LOCK.release()


def test_interrupted_run_releases_lock_and_restores_threads(sdpa_model):
    threads_before = torch.get_num_threads()

    def interrupt(fraction: float, text: str) -> None:
        if fraction > 0:
            raise KeyboardInterrupt  # what Ctrl-C or a Streamlit rerun does mid-run

    settings = bench.BenchSettings(prompt_len=3, new_tokens=3, repeats=1, warmup=0,
                                   threads=max(1, threads_before - 1) if threads_before > 1 else 2)
    with pytest.raises(KeyboardInterrupt):
        bench.run_benchmark(sdpa_model, settings, progress=interrupt)
    assert not bench.benchmark_busy()
    assert torch.get_num_threads() == threads_before


# ----- bad input -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "settings, message",
    [
        (bench.BenchSettings(prompt_len=200, new_tokens=100), "only 256 positions"),
        (bench.BenchSettings(prompt_len=0), "Prompt length must be between 1"),
        (bench.BenchSettings(new_tokens=-3), "New tokens must be between 1"),
        (bench.BenchSettings(repeats=0), "Repeats must be between 1"),
        (bench.BenchSettings(threads=0), "Threads must be between 1"),
        (bench.BenchSettings(prompt_len=2.5), "whole number"),
    ],
)
def test_validate_rejects_bad_settings(settings, message):
    with pytest.raises(bench.BenchInputError, match=message):
        bench.validate(settings, n_positions=256)


def test_default_thread_count_is_capped():
    assert 1 <= bench.default_thread_count() <= bench.MAX_THREADS
    assert bench.default_thread_count() <= bench.physical_cores()


# ----- tables, CSV, figures --------------------------------------------------------------------------------
def test_summary_and_csv(tiny_result):
    rows = bench.summary_rows(tiny_result)
    assert [r["mode"] for r in rows] == [m.label for m in tiny_result.modes]
    assert all(r["tokens match"] for r in rows)
    lines = bench.per_token_csv(tiny_result).strip().splitlines()
    assert lines[0].startswith("model,mode,repeat,token_index")
    assert len(lines) == 1 + len(tiny_result.modes) * TINY.repeats * TINY.new_tokens
    assert lines[1].split(",")[4:6] == ["prefill", str(TINY.prompt_len)]


def test_figures(tiny_result):
    n_modes = len(tiny_result.modes)
    assert len(figs.latency_figure(tiny_result).data) == n_modes
    assert len(figs.cumulative_figure(tiny_result).data) == n_modes
    speedup = figs.speedup_figure(tiny_result)
    assert [t.name for t in speedup.data][-1].startswith("theory")
    assert len(speedup.data) == 4  # dynamic, preallocated, generate(cache), op ratio
    roof = figs.roofline_figure(tiny_result)
    assert len(roof.data[0].x) == 4  # three cached modes + the roofline bar


# ----- CLI -------------------------------------------------------------------------------------------------
def test_cli_json(capsys):
    rc = cli_bench.main(["--prompt-len", "3", "--new-tokens", "4", "--repeats", "1", "--warmup", "0",
                         "--threads", "1", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tokens_match"] is True and out["machine"]["threads"] == 1
    assert set(out["modes"]) == set(bench.MODES + bench.REFERENCES)
    pre = out["modes"]["preallocated"]
    assert len(pre["median_token_ms"]) == 4 and pre["roofline_fraction"] > 0 and pre["speedup_over_no_cache"] > 0


def test_cli_text_report(capsys):
    rc = cli_bench.main(["--prompt-len", "3", "--new-tokens", "3", "--repeats", "1", "--warmup", "0",
                         "--threads", "1", "--no-generate"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "of roofline" in out and "Pre-allocated cache" in out and "generate" not in out.split("roofline")[0]


@pytest.mark.parametrize(
    "argv, rc, message",
    [
        (["--new-tokens", "0"], 2, "New tokens must be between 1"),
        (["--prompt-len", "200", "--new-tokens", "100"], 2, "only 256 positions"),
        (["--model", "/nonexistent/kvviz-model"], 1, "kvviz bench:"),
        (["--repeats", "many"], 2, "invalid int value"),
    ],
)
def test_cli_bad_input(capsys, argv, rc, message):
    assert cli_bench.main(argv) == rc
    assert message in capsys.readouterr().err


def test_copy_bandwidth_measurement():
    bandwidth = roofline.measure_copy_bandwidth(buffer_bytes=4 * 2**20, repeats=3)
    assert 0 < bandwidth.bytes_per_s <= bandwidth.best_bytes_per_s
    assert bandwidth.buffer_bytes == 4 * 2**20 and bandwidth.repeats == 3
    with pytest.raises(ValueError):
        roofline.measure_copy_bandwidth(buffer_bytes=1024)


def test_bandwidth_is_combined_over_rounds(tiny_result):
    bandwidth = tiny_result.bandwidth
    assert bandwidth.repeats == len(bandwidth.rates) == bench.COPIES_PER_ROUND * (TINY.repeats + 1)
    assert bandwidth.bytes_per_s == sorted(bandwidth.rates)[len(bandwidth.rates) // 2]
