"""Benchmark harness: the same greedy generation timed several ways, side by side, one benchmark at a time.

Modes (runners in kvviz.speedup.runs, records in kvviz.speedup.records):

    no_cache      every pass re-feeds the whole sequence (P, P+1, ..., P+N-1 tokens): the true baseline
    dynamic       transformers' DynamicCache (K/V grow by concatenation)
    static        transformers' StaticCache (K/V pre-allocated to P+N, written in place), a reference
    static_compiled  the same with the decode passes through torch.compile (off by default: it compiles C++ first)
    preallocated  kvviz.speedup.flat_engine.FlatCacheGPT2, fp32 weights in the format measured fastest here
    int8          the same engine with int8 weights (lossy: reported as token agreement)

plus `model.generate(use_cache=True/False)` references. Caching changes speed, never tokens.

Method: the weight format is measured first (kvviz.speedup.weight_format), then one short untimed warm-up run per
mode, then `repeats` rounds that run every mode once each, interleaved, so background load hits all modes
alike. Each round probes the read bandwidth and the matmul peak right before the cached modes (the
roofline fraction of a round uses its own probe). Medians over rounds; pass 1 (the prefill) is timed apart from the N-1 decode passes.

One benchmark at a time per server process: a first-come-first-served line (`hold_turn`, over
kvviz.work_queue) makes the others wait and tells them how many runs are ahead of them. The torch thread count is set for the run and restored after.
"""

from __future__ import annotations

import contextlib
import platform
import time
from collections.abc import Callable, Iterator

import torch
import transformers

from kvviz import ops
from kvviz.i18n import N_, gettext
from kvviz.measure.cores import logical_cpus, physical_cores
from kvviz.measure.load import load_average
from kvviz.model.interrupt import checks_inside_passes
from kvviz.model.loading import LoadedModel
from kvviz.speedup import machine, probes, roofline
from kvviz.speedup.flat_engine import FlatCacheGPT2
from kvviz.speedup.records import MODE_LABELS, BenchResult, MachineInfo, ModeResult, RunTiming
from kvviz.speedup.runs import CompileUnavailable, compile_forward, run_flat, run_generate, run_hf_cache, run_no_cache
from kvviz.speedup.settings import BenchSettings, PassRates, check_budget, estimate_seconds, validate
from kvviz.speedup.weight_format import choose_engine
from kvviz.work_queue import QueueTimeout, timed_work_queue

WARMUP_TOKENS = 8
LOCK_WAIT_S = 600.0
PROBE_REPEATS = 3
BENCH_PROMPT = (
    "ROMEO:\nBut soft, what light through yonder window breaks? It is the east, and Juliet is the sun.\n"
    "Arise, fair sun, and kill the envious moon, who is already sick and pale with grief.\n"
)

ProgressFn = Callable[[float, str], None]  # (fraction done in [0, 1], what is running now)
WaitFn = Callable[[int], None]  # called while waiting, with the number of runs ahead in the line


class BenchBusyError(RuntimeError):
    """The line ahead did not clear within the wait we were willing to make."""


class BenchStopped(RuntimeError):
    """The caller asked the run to stop (should_stop() returned True); nothing is returned."""


CHECK_EVERY_S = 0.2  # how often a running benchmark re-reports its progress (and so can be stopped) mid-pass
CALIBRATION_TOKENS = 32  # the longer of the two passes timed to estimate a run's cost
RATES_FRESH_S = 300.0  # a measured PassRates is reused this long (same model, same threads)
_rates: dict[tuple[str, str, int, int], tuple[float, PassRates]] = {}


@torch.inference_mode()
def pass_rates(loaded: LoadedModel, threads: int) -> PassRates:
    """This machine's speed for this model: a 1-token and a 32-token uncached pass (median of 3 each), their
    exact op counts (kvviz.ops) -> seconds per op and a fixed cost per pass. Reused for RATES_FRESH_S."""
    key = (loaded.info.spec, loaded.info.attn_implementation, id(loaded.model), threads)
    cached = _rates.get(key)
    if cached is not None and time.monotonic() - cached[0] < RATES_FRESH_S:
        return cached[1]
    shape = loaded.info.ops_shape()
    long_len = max(2, min(CALIBRATION_TOKENS, loaded.info.n_positions))
    timed = {}
    with torch_threads(threads):
        for length in (1, long_len):
            ids = torch.zeros((1, length), dtype=torch.long)
            loaded.model(input_ids=ids, use_cache=False, logits_to_keep=1)  # untimed warm-up
            times = []
            for _ in range(3):
                began = time.perf_counter()
                loaded.model(input_ids=ids, use_cache=False, logits_to_keep=1)
                times.append(time.perf_counter() - began)
            timed[length] = sorted(times)[1]
    op = {n: ops.forward_pass_counts(shape, 0, n, False, lm_head_all_positions=False).total_ops for n in timed}
    s_per_op = max((timed[long_len] - timed[1]) / (op[long_len] - op[1]), timed[long_len] / op[long_len] / 4, 1e-15)
    rates = PassRates(overhead_s=max(timed[1] - op[1] * s_per_op, 0.0), s_per_op=s_per_op)
    _rates[key] = (time.monotonic(), rates)
    return rates


def estimate(loaded: LoadedModel, settings: BenchSettings) -> float:
    """Seconds this run should take here (kvviz.speedup.settings.estimate_seconds over measured rates)."""
    threads = settings.threads or machine.default_thread_count()[0]
    return estimate_seconds(settings, loaded.info.ops_shape(), pass_rates(loaded, threads))


def refuse_over_budget(loaded: LoadedModel, settings: BenchSettings, budget_s: float) -> float:
    """The estimate, or BenchInputError with the estimate and what would fit within budget_s."""
    threads = settings.threads or machine.default_thread_count()[0]
    return check_budget(settings, loaded.info.ops_shape(), pass_rates(loaded, threads), budget_s)


# ----- one benchmark at a time: the server's first-come-first-served line for timed work (kvviz.work_queue) ---
@contextlib.contextmanager
def hold_turn(on_wait: WaitFn | None = None, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """Wait for this caller's turn (on_wait(runs ahead) is called while waiting), run the block, leave.

    Raises BenchBusyError after wait_s. A caller interrupted while waiting leaves the line, so an abandoned
    page never blocks the ones behind it.
    """
    try:
        with timed_work_queue().turn(timeout_s=wait_s, on_wait=on_wait):
            yield
    except QueueTimeout as exc:
        raise BenchBusyError(gettext("The benchmark is busy: {reason}").format(reason=exc)) from exc


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def prompt_token_ids(loaded: LoadedModel, prompt_len: int) -> list[int]:
    """The first prompt_len tokens of a fixed Shakespeare passage, repeated as needed (deterministic)."""
    ids: list[int] = []
    chunk = loaded.tokenizer(BENCH_PROMPT).input_ids
    while len(ids) < prompt_len:
        ids.extend(chunk)
    return ids[:prompt_len]


def op_ratio_curve(shape: ops.ModelShape, prompt_len: int, new_tokens: int) -> tuple[tuple[int, float], ...]:
    """(k, uncached ops / cached ops) after k generated tokens (logits for the last position only)."""
    points = ops.curve(shape, prompt_len, new_tokens, lm_head_all_positions=False)
    return tuple((k, uncached.total_ops / cached.total_ops) for k, cached, uncached in points)


# ----- the benchmark -------------------------------------------------------------------------------------
def run_benchmark(
    loaded: LoadedModel,
    settings: BenchSettings,
    progress: ProgressFn | None = None,
    lock_wait_s: float = LOCK_WAIT_S,
    on_wait: WaitFn | None = None,
    thread_reason: str | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> BenchResult:
    """Run every mode side by side, after the benchmarks ahead in the line (waits up to lock_wait_s).

    Raises BenchInputError for impossible settings, BenchBusyError if the wait times out, BenchStopped when
    should_stop() turns True. progress() is called between passes and every CHECK_EVERY_S inside long passes
    (before each transformer block), so whatever it raises (Streamlit's stop when the user presses Stop or the
    session ends, Ctrl-C) ends the run within a fraction of a second: the turn is released and the thread
    count restored; nothing is returned.
    """
    validate(settings, loaded.info.n_positions, loaded.info)
    if settings.threads is None:
        threads, thread_reason = machine.default_thread_count()
    else:
        threads, thread_reason = settings.threads, thread_reason or N_("set for this run")
    report = progress or (lambda fraction, message: None)
    last = {"fraction": 0.0, "message": gettext("Starting"), "at": time.monotonic()}

    def tracked(fraction: float, message: str) -> None:  # every report: remember it, then check for a stop
        last.update(fraction=fraction, message=message, at=time.monotonic())
        if should_stop is not None and should_stop():
            raise BenchStopped("The benchmark was stopped; no results.")
        report(fraction, message)

    def check() -> None:  # inside a pass: re-report the last progress at most every CHECK_EVERY_S
        if time.monotonic() - last["at"] >= CHECK_EVERY_S:
            tracked(last["fraction"], last["message"])

    inside = (
        contextlib.nullcontext()
        if settings.include_compiled  # hooks would break torch.compile's graph
        else checks_inside_passes(loaded.model, check)
    )
    with hold_turn(on_wait, lock_wait_s), torch_threads(threads), inside:
        return _run(loaded, settings, threads, thread_reason, tracked, check)


def _run(
    loaded: LoadedModel,
    settings: BenchSettings,
    threads: int,
    thread_reason: str,
    progress: ProgressFn,
    check: Callable[[], None],
) -> BenchResult:
    load_before = load_average()
    model, p, n = loaded.model, settings.prompt_len, settings.new_tokens
    prompt = prompt_token_ids(loaded, p)
    progress(0.0, gettext("Probing the machine: read and copy bandwidth"))
    probe = probes.ReadProbe()
    copy_bandwidth = probes.measure_copy_bandwidth()
    progress(0.02, gettext("Choosing the weight format by measuring both on this CPU"))
    engine, choice = choose_engine(model, p + n, settings.weight_format)
    runners: dict[str, Callable[[int], RunTiming]] = {
        "no_cache": lambda tokens: run_no_cache(model, prompt, tokens),
        "dynamic": lambda tokens: run_hf_cache(model, prompt, tokens, "dynamic"),
    }
    if settings.include_static:
        runners["static"] = lambda tokens: run_hf_cache(model, prompt, tokens, "static")
    # F821: `del engine` below frees the flat cache once the rounds are over; this runner never runs after it.
    runners["preallocated"] = lambda tokens: run_flat(engine, prompt, tokens, between_passes=check)  # noqa: F821
    int8_bytes = 0
    if settings.include_int8:
        progress(0.04, gettext("Quantizing a copy of the weights to int8"))
        int8_engine = FlatCacheGPT2(model, p + n, "int8")
        runners["int8"] = lambda tokens: run_flat(int8_engine, prompt, tokens, between_passes=check)
        fp32_matrix_bytes = sum(
            4 * m.numel()
            for layer in model.transformer.h
            for m in (
                layer.attn.c_attn.weight,
                layer.attn.c_proj.weight,
                layer.mlp.c_fc.weight,
                layer.mlp.c_proj.weight,
            )
        )
        fp32_matrix_bytes += 4 * model.lm_head.weight.numel()
        int8_bytes = roofline.weight_bytes_per_decode_token(model) - fp32_matrix_bytes + int8_engine.int8_weight_bytes()
    compile_note = ""
    if settings.include_compiled:
        progress(0.045, gettext("Compiling the StaticCache decode step with torch.compile (once, untimed)"))
        try:
            compiled, compile_s = compile_forward(model, prompt, p + n)
            runners["static_compiled"] = lambda tokens: run_hf_cache(
                model, prompt, tokens, "static", decode_forward=compiled, cache_len=p + n
            )
            compile_note = f"torch.compile took {compile_s:.1f} s (inductor, one graph for every decode pass)"
        except CompileUnavailable as exc:
            compile_note = f"StaticCache + torch.compile skipped: {exc}"
    if settings.include_generate:
        runners["generate_cache"] = lambda tokens: run_generate(model, prompt, tokens, use_cache=True)
        if settings.include_generate_no_cache:
            runners["generate_no_cache"] = lambda tokens: run_generate(model, prompt, tokens, use_cache=False)

    def cost(mode: str, tokens: int) -> float:  # an uncached run costs ~N/2 times a cached one
        return tokens * (p + tokens / 2) / p if "no_cache" in mode else float(tokens)

    warm_tokens = min(n, WARMUP_TOKENS)
    total = sum(cost(m, warm_tokens) * settings.warmup + cost(m, n) * settings.repeats for m in runners)
    done, start = 0.0, 0.05
    for _ in range(settings.warmup):
        for mode, run in runners.items():
            progress(
                start + (1 - start) * done / total, gettext("Warm-up: {mode}").format(mode=gettext(MODE_LABELS[mode]))
            )
            run(warm_tokens)
            done += cost(mode, warm_tokens)
    timings: dict[str, list[RunTiming]] = {mode: [] for mode in runners}
    read_probes, peak_flops = [], []
    for repeat in range(settings.repeats):
        for mode, run in runners.items():
            if mode == "dynamic":  # the cached modes follow: probe the two roofs right beside them
                read_probes.append(probe.measure(PROBE_REPEATS))
                peak_flops.append(probes.measure_peak_flops(repeats=PROBE_REPEATS))
            progress(
                start + (1 - start) * done / total,
                gettext("Round {round}/{rounds}: {mode}").format(
                    round=repeat + 1, rounds=settings.repeats, mode=gettext(MODE_LABELS[mode])
                ),
            )
            timings[mode].append(run(n))
            done += cost(mode, n)
    del probe, engine
    progress(1.0, gettext("Done"))
    info = loaded.info
    shape = info.ops_shape()
    kv_row_bytes = info.kv_bytes_per_position(model.transformer.wte.weight.element_size())
    return BenchResult(
        model_spec=info.spec,
        model_label=info.label,
        settings=settings,
        shape=shape,
        prompt_ids=tuple(prompt),
        modes=tuple(ModeResult(mode, MODE_LABELS[mode], tuple(runs)) for mode, runs in timings.items()),
        machine=MachineInfo(
            cpu=machine.cpu_name(),
            logical_cpus=logical_cpus(),
            physical_cores=physical_cores(),
            threads=threads,
            thread_reason=thread_reason,
            last_level_cache_bytes=machine.last_level_cache_bytes(),
            load_before=load_before,
            load_after=load_average(),
            torch_version=torch.__version__,
            transformers_version=transformers.__version__,
            python_version=platform.python_version(),
            dtype=info.dtype,
            attn_implementation=info.attn_implementation,
        ),
        read_bandwidth=tuple(read_probes),
        copy_bandwidth=copy_bandwidth,
        peak_flops_by_round=tuple(peak_flops),
        weight_bytes_per_token=roofline.weight_bytes_per_decode_token(model),
        int8_weight_bytes_per_token=int8_bytes,
        kv_bytes_per_token=roofline.kv_bytes_read_per_decode_token(kv_row_bytes, p, n),
        kv_row_bytes=kv_row_bytes,
        weight_choice=choice,
        op_ratio=op_ratio_curve(shape, p, n),
        compile_note=compile_note,
    )
