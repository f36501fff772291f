"""The roofline of a CPU for decoding: two roofs, and where each forward pass sits under them.

A pass does W FLOPs and moves Q bytes from memory; its arithmetic intensity is I = W / Q (FLOP per byte).
The machine has two ceilings (Williams, Waterman & Patterson, "Roofline", CACM 2009):

    attainable FLOP/s = min(peak FLOP/s, bandwidth x I)

The ridge point I* = peak / bandwidth separates memory-bound passes (left, I < I*) from compute-bound ones.

A cached decode step feeds one token: every weight matrix is multiplied by a single vector (a GEMV), so each
4-byte fp32 weight is read once for one multiply-add (2 FLOPs): I ~ 0.5 FLOP/byte, far left of the ridge.
Prefill and uncached passes multiply the weights by many token vectors at once (a GEMM) and reuse each byte:
they sit to the right. With a batch of B sequences, one decode step reads the weights once for all B rows
(I grows ~B x) while each sequence reads its own K/V rows: at B x context x row bytes > weight bytes, the
cache, not the weights, is what a decode step mostly reads.

This module is arithmetic only (no torch): exact Python ints for bytes and FLOPs, floats for rates. The
probes that measure bandwidth and peak FLOP/s live in kvviz.speedup.probes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvviz import ops

READ_METHOD = "read-only sum over a buffer >= 4x the last-level cache, median of repeats (bytes read)"
COPY_METHOD = "STREAM copy of a large buffer, median of repeats (bytes read + bytes written)"


@dataclass(frozen=True)
class Bandwidth:
    """A measured memory bandwidth: the median of `repeats` passes over a large buffer."""

    bytes_per_s: float  # median repeat
    best_bytes_per_s: float
    buffer_bytes: int
    repeats: int
    threads: int
    rates: tuple[float, ...] = ()  # every repeat, in the order measured
    method: str = READ_METHOD


def summarize(rates: list[float], buffer_bytes: int, threads: int, method: str) -> Bandwidth:
    """One Bandwidth from raw rates: the median (a lucky pass on a shared machine would swing the roof)."""
    ordered = sorted(rates)
    return Bandwidth(ordered[len(ordered) // 2], ordered[-1], buffer_bytes, len(ordered), threads, tuple(rates), method)


def combine(measurements: list[Bandwidth]) -> Bandwidth:
    """Several measurements (e.g. one per round) as one: the median of all their repeats."""
    rates = [rate for m in measurements for rate in m.rates]
    first = measurements[0]
    return summarize(rates, first.buffer_bytes, first.threads, first.method)


def weight_bytes_per_decode_token(model: Any) -> int:
    """Bytes of weights one cached decode step reads: every matrix once, but one row of each embedding table.

    The token- and position-embedding tables are looked up, not multiplied: one row each is read. The LM head
    is a full GEMV over the vocabulary; in GPT-2 it *is* the token-embedding table (tied weights), counted once.
    """
    transformer = model.transformer
    wte, wpe = transformer.wte.weight, transformer.wpe.weight
    embedding_ids = {id(wte), id(wpe)}
    total = 0
    for param in {id(p): p for p in model.parameters()}.values():
        if id(param) not in embedding_ids:
            total += param.numel() * param.element_size()
    lm_head = model.lm_head.weight
    total += wpe.shape[1] * wpe.element_size()  # one position row
    if lm_head is wte:
        total += wte.numel() * wte.element_size()  # the tied LM head reads the whole table (the lookup row is in it)
    else:
        total += wte.shape[1] * wte.element_size() + lm_head.numel() * lm_head.element_size()
    return total


def kv_bytes_read_per_decode_token(row_bytes: int, prompt_len: int, new_tokens: int) -> int:
    """K and V bytes attention reads, averaged (floor) over the new_tokens - 1 decode steps of a generation;
    row_bytes: K and V of one position in every layer (ModelDims.kv_bytes_per_position, kvviz.model.dims).

    Decode step k (k = 1..N-1) feeds one token at position P + k - 1 and attends over P + k cached rows.
    """
    steps = new_tokens - 1
    if steps < 1:
        return 0
    rows_total = sum(prompt_len + k for k in range(1, steps + 1))
    return rows_total * row_bytes // steps


@dataclass(frozen=True)
class Roofs:
    """The two measured ceilings."""

    peak_flops: float  # FLOP/s of a large matmul
    bandwidth_bytes_per_s: float  # read bandwidth

    @property
    def ridge_flop_per_byte(self) -> float:
        return self.peak_flops / self.bandwidth_bytes_per_s

    def attainable_flops(self, intensity: float) -> float:
        return min(self.peak_flops, self.bandwidth_bytes_per_s * intensity)


@dataclass(frozen=True)
class PassPoint:
    """One measured forward pass (or a median of several) placed on the roofline."""

    label: str
    kind: str  # "prefill", "uncached", "cached decode", "batched decode"
    flops: int  # 2 x multiply-adds of the matmuls (kvviz.ops)
    bytes_moved: int  # weights read + K/V read (activations are small and not counted)
    ms: float

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes_moved

    @property
    def achieved_flops(self) -> float:
        return self.flops / (self.ms / 1000.0)


def pass_point(
    label: str,
    kind: str,
    shape: ops.ModelShape,
    cached_before: int,
    n_new: int,
    cached: bool,
    weight_bytes: int,
    row_bytes: int,
    ms: float,
    batch: int = 1,
) -> PassPoint:
    """A pass adding n_new tokens to cached_before earlier ones (logits for the last position only).

    Bytes: the weights once per pass (for the whole batch) plus, with a cache, every cached K/V row read by
    every sequence of the batch.
    """
    counts = ops.forward_pass_counts(shape, cached_before, n_new, cached, lm_head_all_positions=False)
    kv_read = batch * (cached_before + n_new) * row_bytes if cached else 0
    return PassPoint(label, kind, batch * counts.total_flops, weight_bytes + kv_read, ms)


@dataclass(frozen=True)
class BatchStep:
    """Bytes and FLOPs of one batched decode step at a given context (per-step arithmetic, no timing)."""

    batch: int
    context: int  # cached rows each sequence attends over
    weight_bytes: int
    kv_bytes: int  # batch x context x row bytes
    flops: int

    @property
    def intensity(self) -> float:
        return self.flops / (self.weight_bytes + self.kv_bytes)

    @property
    def kv_share(self) -> float:
        return self.kv_bytes / (self.weight_bytes + self.kv_bytes)


def batch_step(shape: ops.ModelShape, batch: int, context: int, weight_bytes: int, row_bytes: int) -> BatchStep:
    counts = ops.forward_pass_counts(shape, context - 1, 1, True, lm_head_all_positions=False)
    return BatchStep(batch, context, weight_bytes, batch * context * row_bytes, batch * counts.total_flops)


def kv_overtakes_weights_batch(context: int, weight_bytes: int, row_bytes: int) -> int:
    """Smallest batch whose K/V reads in one decode step exceed the weight reads, at this context."""
    return weight_bytes // (context * row_bytes) + 1


@dataclass(frozen=True)
class BatchPoint:
    """A measured batched decode step: `batch` sequences, each attending over `context` cached rows."""

    step: BatchStep
    step_ms: float  # median over the timed steps

    @property
    def tokens_per_s(self) -> float:
        return self.step.batch / (self.step_ms / 1000.0)

    @property
    def achieved_flops(self) -> float:
        return self.step.flops / (self.step_ms / 1000.0)


@dataclass(frozen=True)
class BatchSweep:
    """Cached decode at several batch sizes on one model, with the roofs probed in the same turn."""

    model_label: str
    context: int
    threads: int
    weight_format: str
    points: tuple[BatchPoint, ...]
    roofs: Roofs
    row_bytes: int  # K/V bytes of one position, all layers

    @property
    def kv_overtakes_at_batch(self) -> int:
        return kv_overtakes_weights_batch(self.context, self.points[0].step.weight_bytes, self.row_bytes)
