"""`python -m kvviz bench`: measure no cache vs transformers' caches vs the flat pre-allocated engine here.

    python -m kvviz bench --model random:gpt2 --prompt-len 16 --new-tokens 128 --repeats 5 --json
    python -m kvviz bench --device cuda --dtype float16 --model random:gpt2 --compile --sweep

prints, per mode, the median tokens/s (with min-max), the speed-up over no cache (one estimator, named in the
output), whether the tokens matched the no-cache run (agreement for int8), the weight format the flat engine
measured fastest, and each cached mode's share of the read-bandwidth roofline (or "disturbed").
The same harness (kvviz.speedup.harness) drives the "Measured speed-up" page, so these are the app's numbers.

`--device cuda|mps` (or `--sweep`, on any device) runs the device report instead (kvviz.speedup.accelerator):
the modes that make sense on that device, its measured read and matmul roofs, and the cached decode step
against the uncached pass across 128 ... 8192 cached tokens. A device that is not here: one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from kvviz.cli import Parser, one_line, output_problem, say, whole
from kvviz.measure.load import load_number
from kvviz.model.loading import ModelLoadError
from kvviz.speedup import tables
from kvviz.speedup.records import CACHED_MODES, ESTIMATOR, LOSSY_MODES, MODE_LABELS, BenchResult, BenchSettings
from kvviz.speedup.settings import (
    ANY_LENGTH,
    DEVICE_DTYPES,
    DEVICES,
    MAX_REPEATS,
    MAX_THREADS_INPUT,
    MAX_WARMUP,
    BenchInputError,
    duration,
    validate,
)

T = TypeVar("T")
# The app's parser of a whole number ('٣', '1_6', 5,000 digits refused in one line), each flag with the speed-up
# page's own range (kvviz.speedup.settings), so a flag's range is stated once, by argparse. The one bound left to
# the model is its positions: prompt + new tokens must fit them (checked after loading it, naming them).
LENGTH = whole(1, ANY_LENGTH)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="python -m kvviz bench",
        description="Time the same greedy generation with no cache, DynamicCache, StaticCache, the flat pre-allocated "
        "engine (fp32 in the format measured fastest, and int8) and model.generate.",
    )
    parser.add_argument("--model", default="bundled", help="bundled (default), random:gpt2, gpt2, or a folder")
    parser.add_argument("--prompt-len", type=LENGTH, default=16, help="prompt tokens P (default 16)")
    parser.add_argument("--new-tokens", type=LENGTH, default=64, help="generated tokens N (default 64)")
    parser.add_argument(
        "--repeats", type=whole(1, MAX_REPEATS), default=3, help="timed rounds; medians are reported (default 3)"
    )
    parser.add_argument(
        "--warmup", type=whole(0, MAX_WARMUP), default=1, help="untimed warm-up runs per mode (default 1)"
    )
    parser.add_argument(
        "--threads",
        type=whole(1, MAX_THREADS_INPUT),
        default=None,
        help="torch threads (default: the free cores from the load average, at most 8)",
    )
    parser.add_argument("--attn", default="sdpa", choices=("sdpa", "eager"), help="attention kernel (default sdpa)")
    parser.add_argument("--no-generate", action="store_true", help="skip the model.generate reference runs")
    parser.add_argument(
        "--no-generate-uncached", action="store_true", help="keep generate(use_cache=True), skip use_cache=False"
    )
    parser.add_argument(
        "--weight-format",
        default="auto",
        choices=("auto", "stored", "onednn"),
        help="flat engine fp32 weights: auto measures both here and keeps the faster (default)",
    )
    parser.add_argument("--no-prepack", action="store_true", help="same as --weight-format stored")
    parser.add_argument("--no-static", action="store_true", help="skip transformers' StaticCache mode")
    parser.add_argument("--no-int8", action="store_true", help="skip the int8-weight mode")
    parser.add_argument(
        "--compile",
        action="store_true",
        help="also time StaticCache with torch.compile (a reference; compiling takes 10-60 s first)",
    )
    parser.add_argument(
        "--device",
        default="cpu",
        choices=DEVICES,
        help="where to run (default cpu); cuda or mps runs the device report",
    )
    parser.add_argument(
        "--dtype",
        default=None,
        choices=DEVICE_DTYPES,
        help="weights and cache dtype for the device report (default float16 on a GPU, float32 on the CPU)",
    )
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="run the device report (on --device, the CPU included) with its context sweep",
    )
    parser.add_argument("--no-sweep", action="store_true", help="device report without the context sweep")
    parser.add_argument("--json", action="store_true", help="print the full results as JSON")
    parser.add_argument("--csv", metavar="PATH", help="also write every timed pass to a CSV file")
    return parser


def _progress(fraction: float, message: str) -> None:
    print(f"[{fraction * 100:5.1f}%] {message}", file=sys.stderr, flush=True)


def format_report(result: BenchResult) -> str:
    s, m = result.settings, result.machine
    lines = [
        f"model: {result.model_label}",
        f"prompt {s.prompt_len} tokens, {s.new_tokens} new tokens, {s.repeats} rounds (+{s.warmup} warm-up); "
        f"{m.cpu}, {m.threads} threads ({m.thread_reason}), torch {m.torch_version}, {m.dtype}",
        f"load average before {load_number(m.load_before[0])}, after {load_number(m.load_after[0])} (1 min)",
        f"flat engine weights: {result.weight_choice.describe(plain=True)}",
        *([result.compile_note] if result.compile_note else []),
        f"speed-up estimator: {ESTIMATOR}",
        "",
        f"{'mode':<50} {'tok/s':>8} {'min-max':>15} {'decode tok/s':>13} {'x no cache':>11} {'tokens':>7}",
    ]
    for mode in result.modes:
        tps = mode.tokens_per_s
        same = (
            f"{result.token_agreement(mode.mode):.0%}"
            if mode.mode in LOSSY_MODES
            else "same"
            if result.tokens_match(mode.mode)
            else "DIFFER"
        )
        lines.append(
            f"{mode.label:<50} {mode.median_tokens_per_s:8.2f} {f'{tps.min():.2f}-{tps.max():.2f}':>15} "
            f"{mode.median_decode_tokens_per_s:13.2f} {result.speedup(mode.mode):11.2f} {same:>7}"
        )
    reads = ", ".join(f"{b.bytes_per_s / 1e9:.1f}" for b in result.read_bandwidth)
    lines += [
        "",
        f"read bandwidth by round (GB/s): {reads}; copy (read + write, once): "
        f"{result.copy_bandwidth.bytes_per_s / 1e9:.1f} GB/s; peak matmul {result.peak_flops / 1e9:.0f} GFLOP/s",
        f"bytes read per decode token: {result.bytes_per_token('preallocated') / 1e6:.1f} MB fp32 -> read roofline "
        f"{result.roofline_tokens_per_s():.1f} tokens/s",
    ]
    for name in CACHED_MODES:
        if result.has(name):
            lines.append(f"  {MODE_LABELS[name]:<50} {result.roofline_verdict(name).describe()}")
    if result.has("generate_cache"):
        lines += [
            "",
            "  ".join(
                f"{name} / generate(cache) = {result.speedup(name, over='generate_cache'):.3f}x"
                for name in ("dynamic", "static", "static_compiled", "preallocated", "int8")
                if result.has(name)
            ),
        ]
    lines.append(f"theoretical op ratio (no cache / cache) after {s.new_tokens} tokens: {result.op_ratio[-1][1]:.1f}x")
    return "\n".join(lines)


def _in_one_line(work: Callable[[], T], refused: tuple[type[Exception], ...]) -> tuple[T | None, int]:
    """(work(), 0), or (None, exit code) with one line on stderr: a refused input 2, a model that cannot load 1,
    Ctrl-C 130. Both reports (the CPU benchmark, the device report) end this way."""
    try:
        return work(), 0
    except refused as exc:
        say(f"kvviz bench: {one_line(exc, 2000)}", file=sys.stderr)
        return None, 2
    except ModelLoadError as exc:
        say(f"kvviz bench: {one_line(exc, 2000)}", file=sys.stderr)
        return None, 1
    except KeyboardInterrupt:
        say("kvviz bench: interrupted; no results.", file=sys.stderr)
        return None, 130


def main(argv: list[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed its one-line message
        return int(exc.code or 0)
    if args.device != "cpu" or args.sweep:
        return _device_report(args)
    if args.csv and (problem := output_problem(Path(args.csv), folder=False)):  # before the run, not after it
        say(f"kvviz bench: {problem}", file=sys.stderr)
        return 2
    settings = BenchSettings(
        prompt_len=args.prompt_len,
        new_tokens=args.new_tokens,
        repeats=args.repeats,
        warmup=args.warmup,
        threads=args.threads,
        include_generate=not args.no_generate,
        include_generate_no_cache=not (args.no_generate or args.no_generate_uncached),
        include_static=not args.no_static,
        include_int8=not args.no_int8,
        include_compiled=args.compile,
        weight_format="stored" if args.no_prepack else args.weight_format,
    )

    # The harness and the loaders import torch: only now, the flags accepted and the CSV's folder writable, so a
    # refusal answers at once (as the speed-up page imports them when a run is asked for).
    from kvviz.model.loaders import load_model
    from kvviz.speedup import harness

    def work() -> BenchResult:
        validate(settings, n_positions=ANY_LENGTH)  # the flags' own ranges (argparse's): no model load for a typo
        loaded = load_model(args.model, attn_implementation=args.attn)
        validate(settings, loaded.info.n_positions, loaded.info)
        # The CLI may run long on purpose, but says so first: the same estimate as the page's bound
        say(
            f"kvviz bench: this run should take about {duration(harness.estimate(loaded, settings))} here "
            "(estimated from two timed passes of this model; Ctrl-C stops it).",
            file=sys.stderr,
            flush=True,
        )
        return harness.run_benchmark(loaded, settings, progress=None if args.json else _progress)

    result, code = _in_one_line(work, refused=(BenchInputError, harness.BenchBusyError))
    if result is None:
        return code
    # allow_nan=False: an unknown load (nan) must not print as NaN, which is not JSON; tables.to_dict writes null
    say(
        json.dumps(tables.to_dict(result), indent=2, allow_nan=False) if args.json else format_report(result),
        flush=True,
    )
    if args.csv:  # after the report: a disk that fills up (/dev/full) loses the CSV, never the measured results
        try:
            with open(args.csv, "w", encoding="utf-8", newline="") as fh:
                fh.write(tables.per_token_csv(result))
        except OSError as exc:
            say(
                f"kvviz bench: the report above is complete, but the CSV was not written: cannot write {args.csv} "
                f"({exc.strerror or type(exc).__name__})",
                file=sys.stderr,
            )
            return 1
    return 0


def _device_report(args: argparse.Namespace) -> int:
    """The device report (kvviz.speedup.accelerator): refusals first, in one line each, before any model load."""
    from kvviz.model.loaders import load_model
    from kvviz.speedup import accelerator, harness
    from kvviz.speedup import device as devices
    from kvviz.speedup.settings import whole

    dtype = args.dtype or ("float32" if args.device == "cpu" else "float16")
    reason = devices.unavailable_reason(args.device) or devices.dtype_problem(args.device, dtype)
    if reason:
        say(f"kvviz bench: {reason}", file=sys.stderr)
        return 2

    def work() -> accelerator.DeviceBenchResult:
        prompt_len = whole("prompt length", args.prompt_len, 1, 8192)
        new_tokens = whole("new tokens", args.new_tokens, 2, 8192)
        repeats = whole("repeats", args.repeats, 1, 100)
        warmup = whole("warm-up runs", args.warmup, 0, 10)
        loaded = load_model(args.model, attn_implementation=args.attn)
        if prompt_len + new_tokens > loaded.info.n_positions:
            raise BenchInputError(
                f"prompt + new tokens ({prompt_len + new_tokens}) is more than the model's "
                f"{loaded.info.n_positions} positions"
            )
        return accelerator.run_device_benchmark(
            loaded,
            harness.prompt_token_ids(loaded, prompt_len),
            new_tokens,
            args.device,
            dtype,
            repeats=repeats,
            warmup=warmup,
            compile_step=args.compile,
            sweep=not args.no_sweep,
            progress=None
            if args.json
            else (lambda message: say(f"[{args.device}] {message}", file=sys.stderr, flush=True)),
        )

    result, code = _in_one_line(work, refused=(BenchInputError, ValueError, devices.DeviceUnavailable))
    if result is None:
        return code
    say(json.dumps(result.to_dict(), indent=2) if args.json else accelerator.format_report(result))
    return 0
