"""The roofline side of kvviz.speedup.harness on the real bundled GPT-2: exact bytes, per-round fractions from each
round's own probe, disturbed runs flagged (never shown above 100%), weights in cache, pass points on the two
roofs, the probes themselves, and the batched-decode sweep. No timing is asserted.
"""

from __future__ import annotations

import dataclasses

import pytest

from kvviz.figures import bench as figs
from kvviz.speedup import machine, roofline, tables
from kvviz.speedup.records import BenchSettings
from kvviz.speedup.settings import BenchInputError
from support.pages import REPO

TINY = BenchSettings(prompt_len=5, new_tokens=6, repeats=2, warmup=0, threads=1, include_generate=False)


@pytest.fixture(scope="module")
def tiny_result(sdpa_model):
    from kvviz.speedup import harness

    return harness.run_benchmark(sdpa_model, TINY)


# ----- roofline --------------------------------------------------------------------------------------------
@pytest.mark.model
def test_roofline_bytes_and_per_round_fractions(sdpa_model, tiny_result):
    model, info = sdpa_model.model, sdpa_model.info
    wpe = model.transformer.wpe.weight
    assert roofline.weight_bytes_per_decode_token(model) == 4 * (info.n_params - wpe.numel() + wpe.shape[1])
    row = tiny_result.kv_row_bytes
    brute = [(TINY.prompt_len + k) * row for k in range(1, TINY.new_tokens)]
    assert tiny_result.kv_bytes_per_token == sum(brute) // len(brute)
    assert 0 < tiny_result.int8_weight_bytes_per_token < tiny_result.weight_bytes_per_token
    assert len(tiny_result.read_bandwidth) == TINY.repeats  # one probe per round
    llc = machine.last_level_cache_bytes()
    assert all(b.buffer_bytes >= 4 * (llc or 0) and b.bytes_per_s > 0 for b in tiny_result.read_bandwidth)
    runs = tiny_result.mode("preallocated").runs
    verdict = tiny_result.roofline_verdict("preallocated")
    expected = [
        run.decode_tokens_per_s * tiny_result.bytes_per_token("preallocated") / probe.bytes_per_s
        for run, probe in zip(runs, tiny_result.read_bandwidth, strict=True)
    ]
    assert verdict.fractions == pytest.approx(expected)
    assert roofline.kv_bytes_read_per_decode_token(2 * 2 * 2 * 4 * 4, 10, 1) == 0  # no decode step, nothing read


@pytest.mark.model
def test_disturbed_run_is_flagged_and_never_shows_over_100_percent(tiny_result):
    """A probe far below what the decode achieved (the machine was busy during the probe) marks the run."""
    from kvviz.cli import bench as cli_bench

    achieved = [
        run.decode_tokens_per_s * tiny_result.bytes_per_token("preallocated")
        for run in tiny_result.mode("preallocated").runs
    ]
    slow = tuple(
        dataclasses.replace(b, bytes_per_s=a / 3) for b, a in zip(tiny_result.read_bandwidth, achieved, strict=True)
    )
    small_cache = dataclasses.replace(tiny_result.machine, last_level_cache_bytes=2**20)  # weights cannot fit
    disturbed = dataclasses.replace(tiny_result, read_bandwidth=slow, machine=small_cache)
    verdict = disturbed.roofline_verdict("preallocated")
    assert verdict.disturbed and verdict.fraction is None and max(verdict.fractions) > 1
    assert "disturbed" in verdict.describe() and "%" not in verdict.describe()
    row = next(r for r in tables.summary_rows(disturbed) if r["mode"] == disturbed.mode("preallocated").label)
    assert row["read roofline"] == "disturbed"
    assert tables.to_dict(disturbed)["modes"]["preallocated"]["roofline_fraction"] is None
    report = cli_bench.format_report(disturbed)
    line = [ln for ln in report.splitlines() if ln.strip().startswith("Flat pre-allocated")][-1]  # roofline part
    assert "disturbed" in line and "%" not in line
    assert "disturbed" in figs.roofline_figure(disturbed).layout.title.text


@pytest.mark.model
def test_weights_in_cache_are_never_shown_above_the_dram_roof(tiny_result):
    """The bundled model's 4 MB of weights sit in a 32 MB L3: beating the DRAM probe is not a disturbance."""
    achieved = [
        run.decode_tokens_per_s * tiny_result.bytes_per_token("preallocated")
        for run in tiny_result.mode("preallocated").runs
    ]
    slow = tuple(
        dataclasses.replace(b, bytes_per_s=a / 3) for b, a in zip(tiny_result.read_bandwidth, achieved, strict=True)
    )
    big_cache = dataclasses.replace(tiny_result.machine, last_level_cache_bytes=2**30)
    in_cache = dataclasses.replace(tiny_result, read_bandwidth=slow, machine=big_cache)
    verdict = in_cache.roofline_verdict("preallocated")
    assert verdict.in_cache and not verdict.disturbed and verdict.fraction is None
    assert verdict.label == "in cache" and "%" not in verdict.describe()


@pytest.mark.model
def test_pass_points_sit_where_the_physics_says(tiny_result):
    points = tables.pass_points(tiny_result)
    kinds = {p.kind for p in points}
    assert {"prefill", "uncached", "cached decode"} <= kinds
    decode = [p for p in points if p.kind == "cached decode"]
    prefill = next(p for p in points if p.kind == "prefill")
    assert all(p.intensity < prefill.intensity for p in decode)  # GEMV left of GEMM
    assert all(0.4 < p.intensity < 0.6 for p in decode)  # fp32 GEMV: ~2 FLOPs per 4-byte weight


@pytest.mark.model
def test_probes():
    from kvviz.speedup import probes

    probe = probes.ReadProbe(buffer_bytes=4 * 2**20)
    bandwidth = probe.measure(repeats=3)
    assert 0 < bandwidth.bytes_per_s <= bandwidth.best_bytes_per_s and bandwidth.repeats == 3
    assert bandwidth.method == roofline.READ_METHOD
    assert probes.measure_copy_bandwidth(4 * 2**20, repeats=2).method == roofline.COPY_METHOD
    assert probes.measure_peak_flops(size=64, repeats=3) > 0
    with pytest.raises(ValueError):
        probes.ReadProbe(buffer_bytes=1024)
    llc = machine.last_level_cache_bytes()
    assert probes.read_buffer_bytes() >= (4 * llc if llc else 64 * 2**20)


def test_roofs_and_batch_arithmetic():
    roofs = roofline.Roofs(peak_flops=100e9, bandwidth_bytes_per_s=25e9)
    assert roofs.ridge_flop_per_byte == 4.0
    assert roofs.attainable_flops(1.0) == 25e9 and roofs.attainable_flops(100.0) == 100e9
    weights, row = 1000, 10
    b = roofline.kv_overtakes_weights_batch(context=20, weight_bytes=weights, row_bytes=row)
    assert b * 20 * row > weights >= (b - 1) * 20 * row


# ----- batch sweep -----------------------------------------------------------------------------------------
@pytest.mark.model
def test_batch_sweep_on_the_real_model(sdpa_model):
    from kvviz.speedup import batch

    sweep = batch.run_batch_sweep(sdpa_model, max_batch=4, context=8, threads=1)
    assert [p.step.batch for p in sweep.points] == [1, 2, 4]
    for point in sweep.points:
        assert point.step.kv_bytes == point.step.batch * 9 * sweep.row_bytes and point.tokens_per_s > 0
    intensities = [p.step.intensity for p in sweep.points]
    assert intensities == sorted(intensities)  # weights shared by the batch: intensity grows with it
    assert batch.batch_sizes(64) == [1, 2, 4, 8, 16, 32, 64] and batch.batch_sizes(5) == [1, 2, 4, 5]
    with pytest.raises(BenchInputError, match="between 1 and 64"):
        batch.validate(sdpa_model, 65, 8)
    assert len(figs.batch_figure(sweep).data) >= 2


@pytest.mark.model
def test_gemv_ceiling_times_every_kernel_on_the_real_matrices(tmp_path):
    """bench/gemv_ceiling.py on the bundled GPT-2: every kernel computed the same products (it refuses otherwise),
    the bytes are the model's decode matrices, and each bound is 1000 / its best step time."""
    import importlib.util
    import json

    from kvviz.model.loaders import load_bundled

    path = REPO / "bench" / "gemv_ceiling.py"
    spec = importlib.util.spec_from_file_location("gemv_ceiling", path)
    ceiling = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ceiling)
    out = tmp_path / "ceiling.json"
    assert ceiling.main(["--model", "bundled", "--threads", "1", "--rounds", "2", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    model = load_bundled("sdpa").model
    cfg = model.config
    matrix_weights = (
        cfg.n_layer * (3 * cfg.n_embd**2 + cfg.n_embd**2 + 2 * 4 * cfg.n_embd**2) + cfg.vocab_size * cfg.n_embd
    )
    assert report["weight_bytes_per_step"] == 4 * matrix_weights
    assert {"stored", "linear"} <= set(report["kernels"])
    for k in report["kernels"].values():
        assert k["tokens_per_s_bound"] == pytest.approx(1000.0 / k["best_ms"])
        assert k["best_ms"] <= k["median_ms"]
