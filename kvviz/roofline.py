"""The memory-bandwidth roofline for cached decoding: how fast *could* this machine generate?

A cached decode step feeds one token. Every weight matrix is multiplied by a single vector (a GEMV), so
each weight is read from memory once and used for just one multiply-add: the step is bound by how fast
memory streams bytes, not by arithmetic. The ceiling is therefore

    roofline tokens/s = memory bandwidth (bytes/s) / bytes read per decode token
    bytes read per decode token = weight bytes + K/V bytes of the cache read by attention

Prefill and uncached recomputation are different: they multiply every weight by many token vectors at once
(a GEMM), reusing each byte many times, so they are bound by arithmetic throughput instead.

Bandwidth is measured the way STREAM's "copy" kernel does (McCalpin, 1995): time `dst.copy_(src)` over
buffers far larger than the CPU caches and count the bytes read plus the bytes written. STREAM reports the
best repeat; we use the median, because on a shared or virtualized machine a single lucky copy can read
1.5x the typical rate and would make the roofline swing from run to run. Byte counts are exact Python
ints; rates are floats.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch

COPY_BUFFER_BYTES = 128 * 2**20  # per buffer; 2 x 128 MiB, far beyond any CPU cache (32 MiB L3 here)
COPY_REPEATS = 10


@dataclass(frozen=True)
class Bandwidth:
    """A measured memory bandwidth: the median of `repeats` large copies."""

    bytes_per_s: float  # (bytes read + bytes written) / seconds, median repeat
    best_bytes_per_s: float
    buffer_bytes: int  # size of one of the two buffers
    repeats: int
    threads: int
    rates: tuple[float, ...] = ()  # every copy, in the order measured
    method: str = "large copy, median of repeats (STREAM convention: read + write bytes)"


def measure_copy_bandwidth(buffer_bytes: int = COPY_BUFFER_BYTES, repeats: int = COPY_REPEATS) -> Bandwidth:
    """Copy a large float32 buffer `repeats` times (after one untimed warm-up copy) with the current threads."""
    if buffer_bytes < 2**20 or repeats < 1:
        raise ValueError("the copy needs at least 1 MiB and one repeat")
    n_floats = buffer_bytes // 4
    src = torch.ones(n_floats, dtype=torch.float32)
    dst = torch.empty_like(src)
    dst.copy_(src)  # first touch: page faults are not bandwidth
    rates: list[float] = []
    for _ in range(repeats):
        began = time.perf_counter()
        dst.copy_(src)
        elapsed_s = time.perf_counter() - began
        rates.append(2 * n_floats * 4 / elapsed_s)
    return _summarize(rates, n_floats * 4, torch.get_num_threads())


def _summarize(rates: list[float], buffer_bytes: int, threads: int) -> Bandwidth:
    ordered = sorted(rates)
    return Bandwidth(
        bytes_per_s=ordered[len(ordered) // 2],
        best_bytes_per_s=ordered[-1],
        buffer_bytes=buffer_bytes,
        repeats=len(ordered),
        threads=threads,
        rates=tuple(rates),
    )


def combine(measurements: list[Bandwidth]) -> Bandwidth:
    """One Bandwidth from several measurements (e.g. one per benchmark round): the median of all copies."""
    rates = [rate for m in measurements for rate in m.rates]
    return _summarize(rates, measurements[0].buffer_bytes, measurements[0].threads)


def weight_bytes_per_decode_token(model: torch.nn.Module) -> int:
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


def kv_bytes_read_per_decode_token(
    n_layer: int, n_kv_heads: int, head_dim: int, bytes_per_element: int, prompt_len: int, new_tokens: int
) -> int:
    """K and V bytes attention reads, averaged (floor) over the new_tokens - 1 decode steps of a generation.

    Decode step k (k = 1..N-1) feeds one token at position P + k - 1 and attends over P + k cached rows, each
    row holding a key and a value of n_kv_heads x head_dim numbers per layer.
    """
    steps = new_tokens - 1
    if steps < 1:
        return 0
    rows_total = sum(prompt_len + k for k in range(1, steps + 1))
    per_row = 2 * n_layer * n_kv_heads * head_dim * bytes_per_element
    return rows_total * per_row // steps


@dataclass(frozen=True)
class Roofline:
    """Cached decode against the bandwidth ceiling."""

    bandwidth_bytes_per_s: float
    weight_bytes_per_token: int
    kv_bytes_per_token: int  # average over the decode steps
    achieved_tokens_per_s: float  # measured decode tokens/s (prefill excluded)

    @property
    def bytes_per_token(self) -> int:
        return self.weight_bytes_per_token + self.kv_bytes_per_token

    @property
    def roofline_tokens_per_s(self) -> float:
        return self.bandwidth_bytes_per_s / self.bytes_per_token

    @property
    def achieved_bytes_per_s(self) -> float:
        return self.bytes_per_token * self.achieved_tokens_per_s

    @property
    def fraction(self) -> float:
        """Achieved / roofline: 1.0 would mean every byte streamed at full copy bandwidth."""
        return self.achieved_tokens_per_s / self.roofline_tokens_per_s
