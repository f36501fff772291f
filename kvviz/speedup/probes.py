"""The probes behind the roofline: read bandwidth, copy bandwidth and peak matmul FLOP/s, at the current
torch thread count.

Read bandwidth is what a decode step needs: the weights are only read. The probe sums a float32 buffer at
least 4x the last-level cache (read from sysfs; 128 MiB when unknown), so almost every byte comes from DRAM.
A sum does one add per 4 bytes read, far below what the cores can add, so memory sets its pace. The harness
runs it in every round, beside the decode runs, because on a shared machine bandwidth changes minute to
minute. The STREAM copy (McCalpin, 1995: bytes read + bytes written) is kept as a second, labelled figure.

Peak FLOP/s: a large square fp32 matmul (a GEMM, compute-bound), median of repeats.
"""

from __future__ import annotations

import time

import torch

from kvviz.speedup import roofline
from kvviz.speedup.machine import last_level_cache_bytes

LLC_MULTIPLE = 4
FALLBACK_BUFFER_BYTES = 128 * 2**20
GEMM_SIZE = 1024  # 2 x 1024^3 FLOP per matmul: long enough to time, short enough for a 2-core laptop


def read_buffer_bytes() -> int:
    """LLC_MULTIPLE x the last-level cache, at least 64 MiB (fallback 128 MiB when sysfs is unreadable)."""
    llc = last_level_cache_bytes()
    return FALLBACK_BUFFER_BYTES if llc is None else max(LLC_MULTIPLE * llc, 64 * 2**20)


class ReadProbe:
    """Holds one large buffer (allocated and touched once) and measures read bandwidth on demand."""

    def __init__(self, buffer_bytes: int | None = None) -> None:
        buffer_bytes = read_buffer_bytes() if buffer_bytes is None else buffer_bytes
        if buffer_bytes < 2**20:
            raise ValueError("the read probe needs at least 1 MiB")
        self.buffer = torch.ones(buffer_bytes // 4, dtype=torch.float32)  # first touch: page faults happen here
        self.buffer_bytes = self.buffer.numel() * 4

    def measure(self, repeats: int = 3) -> roofline.Bandwidth:
        if repeats < 1:
            raise ValueError("at least one repeat")
        self.buffer.sum()  # untimed: warms the kernel, not the data (the buffer is far larger than the cache)
        rates = []
        for _ in range(repeats):
            began = time.perf_counter()
            self.buffer.sum()
            rates.append(self.buffer_bytes / (time.perf_counter() - began))
        return roofline.summarize(rates, self.buffer_bytes, torch.get_num_threads(), roofline.READ_METHOD)


def measure_copy_bandwidth(buffer_bytes: int | None = None, repeats: int = 4) -> roofline.Bandwidth:
    """STREAM copy: dst.copy_(src) over two buffers; bytes read + bytes written per second."""
    buffer_bytes = read_buffer_bytes() // 2 if buffer_bytes is None else buffer_bytes
    if buffer_bytes < 2**20 or repeats < 1:
        raise ValueError("the copy needs at least 1 MiB and one repeat")
    n_floats = buffer_bytes // 4
    src = torch.ones(n_floats, dtype=torch.float32)
    dst = torch.empty_like(src)
    dst.copy_(src)  # first touch
    rates = []
    for _ in range(repeats):
        began = time.perf_counter()
        dst.copy_(src)
        rates.append(2 * n_floats * 4 / (time.perf_counter() - began))
    return roofline.summarize(rates, n_floats * 4, torch.get_num_threads(), roofline.COPY_METHOD)


def measure_peak_flops(size: int = GEMM_SIZE, repeats: int = 5) -> float:
    """FLOP/s of a (size x size) @ (size x size) fp32 matmul: 2 size^3 FLOPs, median of repeats."""
    a = torch.randn(size, size)
    b = torch.randn(size, size)
    out = torch.empty(size, size)
    torch.mm(a, b, out=out)  # warm-up
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        torch.mm(a, b, out=out)
        times.append(time.perf_counter() - began)
    times.sort()
    return 2 * size**3 / times[len(times) // 2]
