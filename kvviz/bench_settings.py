"""What a benchmark is asked to do, and the checks that refuse impossible requests with a one-line message.

Torch-free: the speed-up page checks its inputs before importing the harness. Caps are stated here once.
"""
from __future__ import annotations

from dataclasses import dataclass

from kvviz.prompt_rules import check_int_in_range

MAX_REPEATS = 50
MAX_WARMUP = 10
MAX_THREADS_INPUT = 256
WEIGHT_FORMAT_CHOICES = ("auto", "stored", "onednn")


class BenchInputError(ValueError):
    """Settings that cannot be benchmarked; the message says what to change."""


@dataclass(frozen=True)
class BenchSettings:
    prompt_len: int = 16  # P prompt tokens, prefilled in one pass
    new_tokens: int = 64  # N generated tokens: 1 prefill pass + N-1 decode passes
    repeats: int = 3
    warmup: int = 1  # untimed runs per mode before the timed rounds
    threads: int | None = None  # None: kvviz.bench_machine.default_thread_count()
    include_generate: bool = True  # also time model.generate(use_cache=True)
    include_generate_no_cache: bool = False  # and model.generate(use_cache=False) (as slow as no_cache)
    include_static: bool = True  # transformers' StaticCache, driven by the same loop as DynamicCache
    include_int8: bool = True  # the flat engine with int8 weights (a lossy weight-format lever)
    include_compiled: bool = False  # StaticCache + torch.compile: a reference, off by default (compiles C++ first)
    weight_format: str = "auto"  # flat engine fp32 weights: "auto" (measure), "stored" or "onednn"


def whole(name: str, value: object, lo: int, hi: int) -> int:
    """The project's one bounded-integer rule (kvviz.prompt_rules), raising BenchInputError."""
    return check_int_in_range(value, lo, hi, name, error=BenchInputError)


def check_gpt2(info) -> None:
    """The timed engines (the flat engine, the batch sweep, the weight bytes) are written for GPT2LMHeadModel."""
    kind = getattr(info, "model_type", "gpt2")
    if kind != "gpt2":
        raise BenchInputError(
            f"The benchmark's engines are written for GPT-2 (the flat engine mirrors GPT2LMHeadModel); "
            f"{getattr(info, 'label', 'this model')} is a {kind} model. Pick the bundled GPT-2, the GPT-2 shape "
            "with random weights or a pretrained GPT-2.")


def validate(settings: BenchSettings, n_positions: int, info=None) -> None:
    """Raise BenchInputError with a user-facing message when the settings cannot run on this model."""
    if info is not None:
        check_gpt2(info)
    whole("Prompt length", settings.prompt_len, 1, n_positions)
    whole("New tokens", settings.new_tokens, 1, n_positions)
    whole("Repeats", settings.repeats, 1, MAX_REPEATS)
    whole("Warm-up runs", settings.warmup, 0, MAX_WARMUP)
    if settings.threads is not None:
        whole("Threads", settings.threads, 1, MAX_THREADS_INPUT)
    if settings.weight_format not in WEIGHT_FORMAT_CHOICES:
        raise BenchInputError(f"Weight format must be auto, stored or onednn, got {settings.weight_format!r}.")
    total = settings.prompt_len + settings.new_tokens
    if total > n_positions:
        raise BenchInputError(
            f"Prompt ({settings.prompt_len}) + new tokens ({settings.new_tokens}) = {total} tokens, but this "
            f"model has only {n_positions} positions (GPT-2 cannot go past its learned positions). "
            f"Reduce them by {total - n_positions}."
        )
