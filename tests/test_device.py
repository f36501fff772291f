"""The speed-up on an accelerator: the device choice, its refusals, and the device report.

Tests that need a GPU skip with the one line kvviz prints without it; every other runs on the CPU with the real
bundled model through the same code a GPU runs (the runners make their tensors on the model's device and
synchronise it around every timed pass).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from support.pages import app_test


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kvviz", "bench", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cuda", "mps"])
def test_a_missing_device_is_one_clear_line_and_a_non_zero_exit(name):
    import torch

    from kvviz.speedup import device

    probe = {"cuda": torch.cuda.is_available, "mps": torch.backends.mps.is_available}[name]
    if probe():
        pytest.skip(f"{name} is here")
    reason = device.unavailable_reason(name)
    assert reason and "is_available() is False" in reason and "\n" not in reason
    assert name not in device.available()
    with pytest.raises(device.DeviceUnavailable, match="is_available"):
        device.require(name)
    done = _cli("--device", name)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip() == f"kvviz bench: {reason}"


@pytest.mark.slow
def test_unknown_device_and_senseless_dtype_are_refused_before_any_work():
    from kvviz.speedup import device

    assert device.unavailable_reason("tpu").startswith("Unknown device")
    assert "float32" in device.dtype_problem("cpu", "float16")
    assert device.dtype_problem("cpu", "int3").startswith("Unknown dtype")
    done = _cli("--device", "cpu", "--dtype", "bfloat16", "--sweep")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "float32" in done.stderr
    done = _cli("--device", "tpu")
    assert done.returncode == 2 and "invalid choice" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.model
def test_cpu_is_always_offered_first():
    from kvviz.speedup import device

    assert device.available()[0] == "cpu"
    device.synchronize("cpu")  # a no-op, never an error


@pytest.mark.model
def test_clock_times_real_work():
    import torch

    from kvviz.speedup import device

    clock = device.Clock("cpu")
    with clock:
        torch.ones(512, 512) @ torch.ones(512, 512)
    assert 0 < clock.ms < 60_000


@pytest.fixture(scope="module")
def cpu_report(bundled):
    import torch

    from kvviz.speedup import accelerator, harness

    prompt_ids = harness.prompt_token_ids(bundled, 6)
    before = {k: v.clone() for k, v in bundled.model.state_dict().items()}
    result = accelerator.run_device_benchmark(
        bundled, prompt_ids, 5, "cpu", "float32", repeats=2, warmup=1, sweep_contexts_=(32, 64, 4096)
    )
    after = bundled.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # the shared model is never touched
    assert next(bundled.model.parameters()).device.type == "cpu"
    return result


@pytest.mark.model
def test_device_report_runs_every_device_mode_and_the_tokens_agree(cpu_report):
    names = [m.mode for m in cpu_report.modes]
    assert names == ["no_cache", "dynamic", "static", "generate_cache"]
    assert "static_compiled" in cpu_report.skipped  # not asked for: said, not silently left out
    for name in names:
        assert cpu_report.tokens_match(name), name
        assert len(cpu_report.mode(name).rounds) == 2
        assert 0 < cpu_report.roof_fraction(name) <= 1.0
    assert cpu_report.speedup("no_cache") == pytest.approx(1.0)


@pytest.mark.model
def test_device_report_names_the_device_and_serialises(cpu_report):
    import torch

    from kvviz.speedup import accelerator

    as_json = json.loads(json.dumps(cpu_report.to_dict()))
    assert as_json["device"]["kind"] == "cpu" and as_json["device"]["dtype"] == "float32"
    assert as_json["device"]["torch_version"] == torch.__version__
    assert "torch threads" in as_json["device"]["runtime"]
    assert as_json["roofs"]["read_bytes_per_s"] > 0 and as_json["roofs"]["peak_flops"] > 0
    text = accelerator.format_report(cpu_report)
    assert "device: cpu:" in text and "context sweep" in text


@pytest.mark.model
def test_sweep_is_bounded_by_the_models_positions_and_counts_bytes_exactly(cpu_report, bundled):
    n_positions = bundled.info.n_positions
    contexts = [p.context for p in cpu_report.sweep]
    assert contexts == [32, 64, n_positions - 1]  # 4096 is past the model's positions: said in a note
    assert any("4096 tokens: past the model's" in note for note in cpu_report.sweep_notes)
    config = bundled.model.config
    row = 2 * config.n_layer * config.n_embd * 4  # K and V, every layer, float32
    for point in cpu_report.sweep:
        assert point.kv_bytes_read == point.context * row
        assert point.bytes_read == cpu_report.weight_bytes + point.kv_bytes_read
        assert len(point.cached_step_ms) == 9 and len(point.uncached_ms) == 3
        assert 0 < point.roof_fraction <= 1.0 and point.bound in {"unexplained", "weights", "cache", "mixed", "unclear"}


@pytest.mark.model
def test_cuda_report_float32_tokens_agree(bundled):  # pragma: no cover - runs only where a GPU is lent
    import torch

    from kvviz.speedup import accelerator, device, harness

    if not torch.cuda.is_available():
        pytest.skip(device.unavailable_reason("cuda") or "")

    result = accelerator.run_device_benchmark(
        bundled, harness.prompt_token_ids(bundled, 8), 8, "cuda", "float32", repeats=2, sweep_contexts_=(128,)
    )
    assert result.device.kind == "cuda" and result.device.runtime.startswith("CUDA")
    assert set(result.skipped) >= {"preallocated", "int8"}
    assert all(result.tokens_match(m.mode) for m in result.modes)


@pytest.mark.app
def test_speedup_page_offers_only_the_devices_found_and_draws_the_sweep(fresh_streamlit_caches):
    from kvviz.speedup import device
    from support.pages import APP_TIMEOUT_S

    at = app_test("pages/speedup.py", timeout=APP_TIMEOUT_S * 3)
    at.run()
    assert not at.exception
    devices_offered = device.available()
    assert bool([s for s in at.selectbox if s.key == "bench_device"]) == (len(devices_offered) > 1)
    if len(devices_offered) == 1:  # no GPU: the page says why in one line, and offers nothing to pick
        assert any("is_available() is False" in c.value for c in at.caption)
    at.button(key="bench_device_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    tables = [d.value for d in at.dataframe]
    sweep = next(t for t in tables if "cached tokens" in t.columns)
    assert list(sweep["cached tokens"]) == [32, 64, 128, 255]  # the bundled model's 256 positions bound it
    assert set(sweep["bound by"]) <= {
        "below 15% of the read roof: time not explained by reading bytes",
        "reading the weights",
        "reading the cache",
        "neither dominates",
        "unclear within the spread",
    }
    assert all(s.endswith("%") and "–" in s for s in sweep["read roof, slowest-fastest"])  # the spread, shown
    modes = next(t for t in tables if "same tokens as no cache" in t.columns)
    assert list(modes["same tokens as no cache"]) == ["yes"] * len(modes)
    assert len(at.get("plotly_chart")) >= 1


@pytest.mark.model
def test_bound_by_names_what_sets_the_steps_pace():
    """Pure arithmetic on the read roof: 1 GB/s roof, so 1 ms reads 1 MB."""
    from kvviz.speedup import accelerator

    def point(step_ms: float, weight_bytes: int, kv_bytes: int) -> accelerator.SweepPoint:
        return accelerator.SweepPoint(64, (step_ms,), (10 * step_ms,), weight_bytes + kv_bytes, kv_bytes, 1e9)

    assert point(10.0, 1_000_000, 100_000).bound == "unexplained"  # 1.1 ms of reading in a 10 ms step
    assert point(10.0, 2_000_000, 500_000).bound == "mixed"  # 2.5 ms of 10: neither dominates
    assert point(10.0, 3_000_000, 600_000).bound == "weights"  # 3.6 ms of reading, mostly weights
    assert point(10.0, 1_000_000, 3_000_000).bound == "cache"  # 4 ms of reading, three quarters of it the cache
    fast = point(1.0, 2_000_000, 0)  # 2 MB in 1 ms beats a 1 GB/s roof: shown as 100%, flagged
    assert fast.roof_fraction == 1.0 and fast.beats_roof
    assert point(10.0, 1_000_000, 0).ratio == pytest.approx(10.0)


@pytest.mark.model
def test_bound_is_named_only_when_the_whole_spread_falls_in_one_zone():
    """The repeats' fastest-slowest range of the read share decides; a range that crosses 15% or a
    third (docs/measurements.md's 27-52% run-to-run range crosses a third) is "unclear", never a coin flip between
    labels."""
    from kvviz.speedup import accelerator

    def point(steps_ms: tuple[float, ...], weight_bytes: int, kv_bytes: int = 0) -> accelerator.SweepPoint:
        return accelerator.SweepPoint(64, steps_ms, (100.0,), weight_bytes + kv_bytes, kv_bytes, 1e9)

    # 1 GB/s roof: 2.7 MB read in steps of 10 and 5.2 ms -> 27% to 52% of the read roof, across the 1/3 line
    straddling = point((10.0, 7.0, 5.1923), 2_700_000)
    assert straddling.read_share_range == pytest.approx((0.27, 0.52), abs=1e-3)
    assert straddling.bound == "unclear" and straddling.roof_fraction == pytest.approx(0.3857, abs=1e-3)
    assert point((10.0, 9.0, 8.0), 2_700_000).bound == "unclear"  # 27%-33.75%: the fastest crosses a third
    assert point((10.0, 9.0, 8.5), 2_700_000).bound == "mixed"  # 27%-32%: all between 15% and a third
    assert point((10.0, 8.0, 7.0), 4_000_000).bound == "weights"  # 40%-57%: all a third or more
    assert point((10.0, 12.0), 1_000_000).bound == "unexplained"  # 8%-10%: all under 15%
    assert point((10.0, 6.0), 1_000_000).bound == "unclear"  # 10%-17%: crosses 15%
    assert accelerator.BOUND_NAMES["unexplained"] == "below 15% of the read roof: time not explained by reading bytes"
    assert (
        accelerator.BOUND_NAMES["unclear"] == "unclear within the spread" and "overhead" not in accelerator.BOUND_NAMES
    )


@pytest.mark.slow
def test_device_report_refuses_a_model_its_byte_counts_do_not_describe():
    """The weight bytes per step are read off GPT2LMHeadModel: the bundled Llama is refused in one line, as the CPU
    benchmark refuses it, not failed on halfway."""
    done = _cli("--sweep", "--model", "bundled-gqa", "--prompt-len", "4", "--new-tokens", "4", "--repeats", "1")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "written for GPT-2" in done.stderr and "llama" in done.stderr
