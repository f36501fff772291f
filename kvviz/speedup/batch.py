"""Batched cached decode: tokens/s at a few batch sizes, and where decode stops being memory-bound.

One decode step of a batch of B sequences multiplies every weight matrix by B vectors at once: the weights
are read once for the whole batch, so FLOPs per weight byte grow ~B x, and tokens/s grows almost for free
until the matmuls reach the compute roof. Each sequence still reads its own cached K/V rows, so the K/V
bytes grow with B x context: past kvviz.speedup.roofline.kv_overtakes_weights_batch they are most of what a step
reads. That is why serving engines care so much about the cache.

The cache is filled by setting its length, not by prefilling B x context tokens (minutes on a laptop):
attention's time depends on how many rows it reads, not on their values. Every step is timed at the same
context (the cache length is reset before each step). Runs in the benchmark line (kvviz.speedup.harness.hold_turn).
"""

from __future__ import annotations

import time

import torch

from kvviz.i18n import gettext
from kvviz.measure import timing
from kvviz.model.loading import LoadedModel
from kvviz.speedup import probes, roofline
from kvviz.speedup.flat_engine import FlatCacheGPT2
from kvviz.speedup.harness import ProgressFn, WaitFn, hold_turn, torch_threads
from kvviz.speedup.settings import LARGEST_BATCH, BenchInputError, check_gpt2, whole

MAX_BATCH = LARGEST_BATCH.hi
MAX_CACHE_BYTES = 2**30  # the K/V buffers of the largest batch; beyond this a shared laptop starts swapping
STEPS = 5


def batch_sizes(max_batch: int) -> list[int]:
    """1, 2, 4, ... up to max_batch, and max_batch itself."""
    sizes = [1]
    while sizes[-1] * 2 <= max_batch:
        sizes.append(sizes[-1] * 2)
    return sizes if sizes[-1] == max_batch else sizes + [max_batch]


def validate(loaded: LoadedModel, max_batch: int, context: int) -> int:
    """Raise BenchInputError for a sweep that cannot run; return the K/V bytes of the largest batch."""
    info = loaded.info
    check_gpt2(info)
    LARGEST_BATCH.check(max_batch, error=BenchInputError)
    whole(gettext("Context length"), context, 1, info.n_positions - 1)
    row = info.kv_bytes_per_position(4)
    cache_bytes = max_batch * (context + 1) * row
    if cache_bytes > MAX_CACHE_BYTES:
        raise BenchInputError(
            gettext(
                "Batch {batch} x {positions} positions needs {gib:.2f} GiB of K/V buffers; the cap is {cap:.0f} GiB. "
                "Lower the batch or the context."
            ).format(batch=max_batch, positions=context + 1, gib=cache_bytes / 2**30, cap=MAX_CACHE_BYTES / 2**30)
        )
    return cache_bytes


@torch.inference_mode()
def time_decode_step(engine: FlatCacheGPT2, context: int, steps: int = STEPS) -> float:
    """Median ms of one decode step of the whole batch at a fixed context (one untimed step first)."""
    tokens = torch.zeros((engine.batch, 1), dtype=torch.long)
    times = []
    for i in range(steps + 1):
        engine.length = context  # `context` rows count as cached; the step writes row `context`
        began = time.perf_counter()
        engine.forward(tokens)
        if i:
            times.append((time.perf_counter() - began) * 1000.0)
    return timing.median(times)


def run_batch_sweep(
    loaded: LoadedModel,
    max_batch: int,
    context: int,
    threads: int,
    weight_format: str = "stored",
    progress: ProgressFn | None = None,
    on_wait: WaitFn | None = None,
) -> roofline.BatchSweep:
    """Decode tokens/s at batch 1, 2, 4, ... max_batch, each sequence attending over `context` rows."""
    validate(loaded, max_batch, context)
    whole(gettext("Threads"), threads, 1, 256)
    progress = progress or (lambda fraction, message: None)
    model, info = loaded.model, loaded.info
    shape = info.ops_shape()
    weights = roofline.weight_bytes_per_decode_token(model)
    row = info.kv_bytes_per_position(model.transformer.wte.weight.element_size())
    sizes = batch_sizes(max_batch)
    with hold_turn(on_wait), torch_threads(threads):
        progress(0.0, gettext("Probing peak FLOP/s and read bandwidth"))
        roofs = roofline.Roofs(probes.measure_peak_flops(), probes.ReadProbe().measure().bytes_per_s)
        points = []
        for i, batch in enumerate(sizes):
            progress(
                (i + 1) / (len(sizes) + 1),
                gettext("Batch {batch}: timing {steps} decode steps at context {context}").format(
                    batch=batch, steps=STEPS, context=context
                ),
            )
            engine = FlatCacheGPT2(model, context + 1, weight_format, batch=batch)
            step = roofline.batch_step(shape, batch, context + 1, weights, row)
            points.append(roofline.BatchPoint(step, time_decode_step(engine, context)))
            del engine
        progress(1.0, gettext("Done"))
    return roofline.BatchSweep(info.label, context, threads, weight_format, tuple(points), roofs, row)
