"""Pick the flat engine's fp32 weight format by measuring, on this CPU, at this thread count.

Which GEMV kernel streams GPT-2's matrices fastest depends on the CPU: oneDNN's packed layout beat MKL on
the stored layout by ~1.4x on an AMD EPYC, and lost by ~1.2x on an Intel Xeon. So nothing is
assumed: at the start of a benchmark both formats run the real decode work (every matrix of the model times
one activation vector, as one decode step does), interleaved over a few rounds, and the faster is kept.
The loser's copies are dropped at once: the engine never holds two copies of a matrix it does not use.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from kvviz.i18n import N_, gettext
from kvviz.speedup.flat_engine import FlatCacheGPT2, FormatUnavailable
from kvviz.speedup.records import FormatChoice

CHOOSER_ROUNDS = 5
CANDIDATES: tuple[str, ...] = ("stored", "onednn")


def pick_fastest(
    candidates: dict[str, Callable[[], Any]], rounds: int = CHOOSER_ROUNDS, how: str = N_("measured")
) -> FormatChoice:
    """Time every candidate once per round, interleaved (one warm-up call each first); keep the fastest.

    Each candidate's figure is its best round (as `timeit` reports): other work on the machine only ever adds
    time, so the minimum is the least disturbed estimate of what the kernel itself costs.
    """
    if not candidates or rounds < 1:
        raise ValueError("need at least one candidate and one round")
    for work in candidates.values():
        work()
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, work in candidates.items():
            began = time.perf_counter()
            work()
            times[name].append((time.perf_counter() - began) * 1000.0)
    best = tuple((name, min(ms)) for name, ms in times.items())
    chosen = min(best, key=lambda item: item[1])[0]
    return FormatChoice(chosen, best, how)


def decode_matrices_work(engine: FlatCacheGPT2) -> Callable[[], None]:
    """One decode step's matrix work in the engine's format: every matrix times one activation vector."""
    linear = engine.linear
    matrices = engine.matrices()
    inputs = [torch.randn(1, _in_features(engine, weight)) for weight, _ in matrices]

    @torch.inference_mode()
    def work() -> None:
        for (weight, bias), x in zip(matrices, inputs, strict=True):
            linear(x, weight, bias)

    return work


def _in_features(engine: FlatCacheGPT2, weight: Any) -> int:
    if engine.weight_format == "stored":
        return weight.shape[0]  # [in, out]
    if engine.weight_format == "onednn":
        return weight.shape[1]  # oneDNN keeps the logical [out, in] shape
    return weight.weight().shape[1]  # quantized nn.Linear: [out, in]


def choose_engine(
    model: torch.nn.Module, max_len: int, weight_format: str = "auto", rounds: int = CHOOSER_ROUNDS
) -> tuple[FlatCacheGPT2, FormatChoice]:
    """The flat fp32 engine in the faster format ("auto"), or in the one asked for; with the evidence."""
    if weight_format in CANDIDATES:
        forced = FormatChoice(weight_format, (), N_("forced by the settings"))
        return FlatCacheGPT2(model, max_len, weight_format), forced
    if weight_format != "auto":
        raise ValueError(f"weight_format must be 'auto' or one of {CANDIDATES}, got {weight_format!r}")
    stored = FlatCacheGPT2(model, max_len, "stored")  # views of the model's weights: no copy
    try:
        packed = FlatCacheGPT2(model, max_len, "onednn")
    except FormatUnavailable as exc:
        return stored, FormatChoice("stored", (), gettext("the only usable format: {error}").format(error=exc))
    choice = pick_fastest({"stored": decode_matrices_work(stored), "onednn": decode_matrices_work(packed)}, rounds)
    if choice.chosen == "stored":
        del packed  # the packed copies go now, not at the end of the benchmark
        return stored, choice
    return packed, choice
