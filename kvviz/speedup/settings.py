"""What a benchmark is asked to do, and the checks that refuse impossible requests with a one-line message.

Torch-free: the speed-up page checks its inputs before importing the harness. Caps are stated here once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kvviz.i18n import N_, _
from kvviz.inputs.prompt_rules import IntSetting, check_int_in_range

if TYPE_CHECKING:  # settings is torch-free and model-free at import: the speed-up page checks inputs first
    from kvviz.model.loading import ModelInfo

MAX_REPEATS = 50
MAX_WARMUP = 10
MAX_THREADS_INPUT = 256
WEIGHT_FORMAT_CHOICES = ("auto", "stored", "onednn")
DEVICES = ("cpu", "cuda", "mps")  # where the device report runs (kvviz.speedup.device: which are here)
DEVICE_DTYPES = ("float32", "float16", "bfloat16")  # its weights' and cache's dtypes, by torch's names
# The page's boxes (its caps are lower than the CLI's: one click's work). Lengths are bounded here only
# generously: the chosen model's positions are checked when it is loaded (validate).
ANY_LENGTH = 1_000_000
PROMPT_LEN = IntSetting(N_("Prompt length"), 1, ANY_LENGTH, default=16)
NEW_TOKENS = IntSetting(N_("New tokens"), 1, ANY_LENGTH, default=64)
PAGE_ROUNDS = IntSetting(N_("Rounds"), 1, 10, default=3)
PAGE_WARMUP = IntSetting(N_("Warm-up runs"), 0, 5, default=1)
LARGEST_BATCH = IntSetting(N_("Batch size"), 1, 64, default=16)
BATCH_CONTEXT = IntSetting(N_("Context length"), 1, ANY_LENGTH, default=128)


class BenchInputError(ValueError):
    """Settings that cannot be benchmarked; the message says what to change."""


@dataclass(frozen=True)
class BenchSettings:
    prompt_len: int = 16  # P prompt tokens, prefilled in one pass
    new_tokens: int = 64  # N generated tokens: 1 prefill pass + N-1 decode passes
    repeats: int = 3
    warmup: int = 1  # untimed runs per mode before the timed rounds
    threads: int | None = None  # None: kvviz.speedup.machine.default_thread_count()
    include_generate: bool = True  # also time model.generate(use_cache=True)
    include_generate_no_cache: bool = False  # and model.generate(use_cache=False) (as slow as no_cache)
    include_static: bool = True  # transformers' StaticCache, driven by the same loop as DynamicCache
    include_int8: bool = True  # the flat engine with int8 weights (a lossy weight-format lever)
    include_compiled: bool = False  # StaticCache + torch.compile: a reference, off by default (compiles C++ first)
    weight_format: str = "auto"  # flat engine fp32 weights: "auto" (measure), "stored" or "onednn"


def whole(name: str, value: object, lo: int, hi: int) -> int:
    """The project's one bounded-integer rule (kvviz.inputs.prompt_rules), raising BenchInputError."""
    return check_int_in_range(value, lo, hi, name, error=BenchInputError)


def check_gpt2(info: ModelInfo) -> None:
    """The timed engines (the flat engine, the batch sweep, the weight bytes) are written for GPT2LMHeadModel."""
    if info.model_type != "gpt2":
        raise BenchInputError(
            _(
                "The benchmark's engines are written for GPT-2 (the flat engine mirrors GPT2LMHeadModel); "
                "{model} is a {kind} model. Pick the bundled GPT-2, the GPT-2 shape with random weights or a "
                "pretrained GPT-2."
            ).format(model=info.label or _("this model"), kind=info.model_type)
        )


def validate(settings: BenchSettings, n_positions: int, info: ModelInfo | None = None) -> None:
    """Raise BenchInputError with a user-facing message when the settings cannot run on this model."""
    if info is not None:
        check_gpt2(info)
    whole(_("Prompt length"), settings.prompt_len, 1, n_positions)
    whole(_("New tokens"), settings.new_tokens, 1, n_positions)
    whole(_("Repeats"), settings.repeats, 1, MAX_REPEATS)
    whole(_("Warm-up runs"), settings.warmup, 0, MAX_WARMUP)
    if settings.threads is not None:
        whole(_("Threads"), settings.threads, 1, MAX_THREADS_INPUT)
    if settings.weight_format not in WEIGHT_FORMAT_CHOICES:
        raise BenchInputError(
            _("Weight format must be auto, stored or onednn, got {value!r}.").format(value=settings.weight_format)
        )
    total = settings.prompt_len + settings.new_tokens
    if total > n_positions:
        raise BenchInputError(
            _(
                "Prompt ({prompt}) + new tokens ({new}) = {total} tokens, but this model has only {positions} "
                "positions (GPT-2 cannot go past its learned positions). Reduce them by {excess}."
            ).format(
                prompt=settings.prompt_len,
                new=settings.new_tokens,
                total=total,
                positions=n_positions,
                excess=total - n_positions,
            )
        )


# ----- what a run costs, before it runs ---------------------------------------------------------------------
PAGE_BUDGET_S = 60.0  # the most work the speed-up page starts for one click (the CLI only states its estimate)
ROUND_PROBES_S = 0.6  # the read-bandwidth and matmul probes beside each round (measured: 0.3-0.6 s on 2 cores)
SETUP_S = 2.0  # copy-bandwidth probe, weight-format choice, int8 quantization (once per run)


@dataclass(frozen=True)
class PassRates:
    """How fast this machine runs one model at one thread count, from two real timed passes (kvviz.speedup.harness)."""

    overhead_s: float  # the fixed cost of one forward pass (Python, dispatch, one LM-head position)
    s_per_op: float  # seconds per multiply-add beyond that (GEMM-like work: the uncached passes)


def modes_run(settings: BenchSettings) -> tuple[tuple[str, bool], ...]:
    """(mode, uses a cache) for every mode these settings run (the harness's list, kvviz.speedup.harness)."""
    modes = [("no_cache", False), ("dynamic", True)]
    modes += [("static", True)] if settings.include_static else []
    modes += [("preallocated", True)] + ([("int8", True)] if settings.include_int8 else [])
    modes += [("static_compiled", True)] if settings.include_compiled else []
    if settings.include_generate:
        modes += [("generate_cache", True)] + (
            [("generate_no_cache", False)] if settings.include_generate_no_cache else []
        )
    return tuple(modes)


def estimate_seconds(settings: BenchSettings, shape, rates: PassRates, warmup_tokens: int = 8) -> float:
    """Seconds the whole run should take here: every mode's warm-up and timed generations, from exact op counts
    (kvviz.ops: an uncached generation's work grows with N^2, a cached one's with N) times the measured rates,
    plus the probes. An estimate, stated as one: the flat engine runs faster than this model of it."""
    from kvviz import ops  # torch-free

    def generation_s(tokens: int, cached: bool) -> float:
        with_cache, without = ops.generation_totals(shape, settings.prompt_len, tokens, lm_head_all_positions=False)
        return tokens * rates.overhead_s + (with_cache if cached else without).total_ops * rates.s_per_op

    warm = min(settings.new_tokens, warmup_tokens)
    total = SETUP_S + settings.repeats * ROUND_PROBES_S
    for _mode, cached in modes_run(settings):
        total += settings.warmup * generation_s(warm, cached) + settings.repeats * generation_s(
            settings.new_tokens, cached
        )
    return total


def longest_within(settings: BenchSettings, shape, rates: PassRates, budget_s: float) -> int:
    """The most new tokens these settings can ask for within budget_s (0 if even one token is over it)."""
    lo, hi = 0, settings.new_tokens
    while lo < hi:  # the estimate grows with the new tokens: bisect
        mid = (lo + hi + 1) // 2
        if estimate_seconds(replace(settings, new_tokens=mid), shape, rates) <= budget_s:
            lo = mid
        else:
            hi = mid - 1
    return lo


def duration(seconds: float) -> str:
    """'45 s', '4 min 10 s', '3 h 5 min' for a message."""
    s = int(round(seconds))
    if s < 120:
        return f"{max(s, 1)} s"
    if s < 2 * 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def check_budget(settings: BenchSettings, shape, rates: PassRates, budget_s: float = PAGE_BUDGET_S) -> float:
    """The estimate, or BenchInputError saying how long the run would take and what fits within budget_s."""
    estimate = estimate_seconds(settings, shape, rates)
    if estimate <= budget_s:
        return estimate
    fits = longest_within(settings, shape, rates, budget_s)
    uncached = [m for m, cached in modes_run(settings) if not cached]
    if fits < 1:
        hint = (
            _(
                "Even 1 new token does not fit at these settings; or ask for fewer rounds or warm-ups, or untick "
                "generate(use_cache=False)."
            )
            if "generate_no_cache" in uncached
            else _("Even 1 new token does not fit at these settings; or ask for fewer rounds or warm-ups.")
        )
    else:
        hint = (
            _(
                "At these settings at most {fits:,} new tokens fit; or ask for fewer rounds or warm-ups, or "
                "untick generate(use_cache=False)."
            )
            if "generate_no_cache" in uncached
            else _("At these settings at most {fits:,} new tokens fit; or ask for fewer rounds or warm-ups.")
        ).format(fits=fits)
    raise BenchInputError(
        _(
            "This run would take about {estimate} on this machine, over this page's {budget:.0f} s budget "
            "(estimated from two timed passes of this model; uncached work grows with the square of the length). "
            "{hint}"
        ).format(estimate=duration(estimate), budget=budget_s, hint=hint)
    )
