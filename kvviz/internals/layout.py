"""Memory layout of one layer's K (or V) buffer: where element (head, position, dim) lives, and what one head reads.

Three layouts of a per-layer buffer pre-allocated for `max_len` positions (row-major, C order):

    head_major       [kv_heads, max_len, head_dim]   transformers' cache layout (batch 1) and the flat
                                                     per-layer buffer of simple engines
    position_major   [max_len, kv_heads, head_dim]   one token's K for every head side by side: appending
                                                     a token writes one contiguous run
    transposed       [embed_dim, max_len]            embed_dim = kv_heads * head_dim; some mobile runtimes keep
                                                     K transposed so Q @ K^T is a plain GEMM over contiguous rows

A full address adds the layer: layers are separate buffers of equal size laid end to end, so
layer_stride_bytes = kv_heads * max_len * head_dim * elem_bytes.

Attention for one head reads that head's keys at positions 0..seq_len-1. Under head_major they are one
contiguous run; under position_major they are seq_len runs of head_dim elements, kv_heads*head_dim apart;
under transposed they are head_dim runs of seq_len elements. `head_read_runs` counts those runs and
`bench_head_read` times a contiguous vs a strided read on this machine (a measurement, not a promise).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

LAYOUTS: dict[str, str] = {
    "head_major": "[kv_heads, max_len, head_dim] (transformers, simple engines)",
    "position_major": "[max_len, kv_heads, head_dim] (token-contiguous)",
    "transposed": "[embed_dim, max_len] (per-head rows contiguous, mobile GEMM)",
}


class LayoutError(ValueError):
    """A shape or an index outside the buffer; the message says which and the allowed range."""


@dataclass(frozen=True)
class BufferShape:
    """One layer's K buffer: kv_heads x max_len x head_dim elements of elem_bytes each."""

    kv_heads: int
    max_len: int
    head_dim: int
    elem_bytes: int = 4

    def __post_init__(self) -> None:
        for name in ("kv_heads", "max_len", "head_dim", "elem_bytes"):
            if getattr(self, name) < 1:
                raise LayoutError(f"{name} must be at least 1 (got {getattr(self, name)})")

    @property
    def layer_elems(self) -> int:
        return self.kv_heads * self.max_len * self.head_dim

    @property
    def layer_bytes(self) -> int:
        return self.layer_elems * self.elem_bytes


def dims(layout: str, shape: BufferShape) -> tuple[int, ...]:
    """The array dimensions of one layer's buffer under `layout`."""
    if layout == "head_major":
        return (shape.kv_heads, shape.max_len, shape.head_dim)
    if layout == "position_major":
        return (shape.max_len, shape.kv_heads, shape.head_dim)
    if layout == "transposed":
        return (shape.kv_heads * shape.head_dim, shape.max_len)
    raise LayoutError(f"unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}")


def strides_bytes(layout: str, shape: BufferShape) -> tuple[int, ...]:
    """Byte strides of the buffer's dimensions (row-major), comparable with numpy's `ndarray.strides`."""
    extents = dims(layout, shape)
    strides, step = [], shape.elem_bytes
    for extent in reversed(extents):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def _check_index(shape: BufferShape, n_layer: int, layer: int, head: int, pos: int, dim: int) -> None:
    bounds = {"layer": (layer, n_layer), "head": (head, shape.kv_heads), "position": (pos, shape.max_len),
              "dim": (dim, shape.head_dim)}
    for name, (value, extent) in bounds.items():
        if not 0 <= value < extent:
            raise LayoutError(f"{name} {value} is outside 0..{extent - 1}")


def element_offset_bytes(layout: str, shape: BufferShape, head: int, pos: int, dim: int) -> int:
    """Byte offset of K[head, pos, dim] inside one layer's buffer."""
    _check_index(shape, 1, 0, head, pos, dim)
    strides = strides_bytes(layout, shape)
    if layout == "head_major":
        return head * strides[0] + pos * strides[1] + dim * strides[2]
    if layout == "position_major":
        return pos * strides[0] + head * strides[1] + dim * strides[2]
    # transposed: row = the channel (head * head_dim + dim) of the embedding, column = position
    return (head * shape.head_dim + dim) * strides[0] + pos * strides[1]


def element_address_bytes(layout: str, shape: BufferShape, n_layer: int, layer: int, head: int, pos: int,
                          dim: int) -> int:
    """Byte address of K[layer, head, pos, dim] from the start of the whole cache (layers end to end)."""
    _check_index(shape, n_layer, layer, head, pos, dim)
    return layer * shape.layer_bytes + element_offset_bytes(layout, shape, head, pos, dim)


def head_read_mask(layout: str, shape: BufferShape, head: int, seq_len: int) -> np.ndarray:
    """(layer_elems,) bool: which elements of the layer buffer one head's attention reads (positions < seq_len)."""
    if not 1 <= seq_len <= shape.max_len:
        raise LayoutError(f"seq_len must be between 1 and max_len={shape.max_len} (got {seq_len})")
    _check_index(shape, 1, 0, head, 0, 0)
    dims(layout, shape)  # rejects an unknown layout name
    # Build the mask in the logical [head, pos, dim] order, then lay it out like the real buffer.
    logical = np.zeros((shape.kv_heads, shape.max_len, shape.head_dim), dtype=bool)
    logical[head, :seq_len, :] = True
    if layout == "head_major":
        laid_out = logical
    elif layout == "position_major":
        laid_out = logical.transpose(1, 0, 2)
    else:
        laid_out = logical.transpose(0, 2, 1).reshape(shape.kv_heads * shape.head_dim, shape.max_len)
    return np.ascontiguousarray(laid_out).reshape(-1)


@dataclass(frozen=True)
class HeadRead:
    """How one head's key read maps onto memory."""

    layout: str
    bytes_read: int  # seq_len * head_dim * elem_bytes, the same for every layout
    runs: int  # contiguous byte ranges touched
    run_bytes: int  # length of each run
    gap_bytes: int  # distance between the starts of consecutive runs minus run_bytes (0 = one run)
    span_bytes: int  # first byte read to last byte read


def head_read_runs(layout: str, shape: BufferShape, head: int, seq_len: int) -> HeadRead:
    """Contiguous runs touched when one head reads its keys for positions 0..seq_len-1 (from the mask)."""
    mask = head_read_mask(layout, shape, head, seq_len)
    idx = np.flatnonzero(mask)
    breaks = np.flatnonzero(np.diff(idx) != 1)
    runs = len(breaks) + 1
    run_elems = len(idx) // runs
    stride_elems = int(idx[breaks[0] + 1] - idx[0]) if runs > 1 else run_elems
    eb = shape.elem_bytes
    return HeadRead(
        layout=layout,
        bytes_read=len(idx) * eb,
        runs=runs,
        run_bytes=run_elems * eb,
        gap_bytes=(stride_elems - run_elems) * eb,
        span_bytes=int(idx[-1] - idx[0] + 1) * eb,
    )


@dataclass(frozen=True)
class LayoutBench:
    """Median time to copy one head's keys out of a buffer laid out each way (numpy, this machine)."""

    kv_heads: int
    seq_len: int
    head_dim: int
    bytes_read: int
    contiguous_us: float  # head_major: one contiguous block
    strided_us: float  # position_major: seq_len short runs, kv_heads*head_dim apart
    repeats: int

    @property
    def slowdown(self) -> float:
        return self.strided_us / self.contiguous_us if self.contiguous_us > 0 else float("nan")


def bench_head_read(kv_heads: int = 16, seq_len: int = 4096, head_dim: int = 64, repeats: int = 15) -> LayoutBench:
    """Time reading (copying) one head's keys: contiguous head_major vs strided position_major, float32.

    Default buffers are 16 MiB each; 15 repeats take well under a second. Reported as medians.
    """
    if not (1 <= kv_heads <= 64 and 1 <= seq_len <= 32768 and 1 <= head_dim <= 256 and 1 <= repeats <= 200):
        raise LayoutError("benchmark sizes out of range: kv_heads 1..64, seq_len 1..32768, head_dim 1..256")
    rng = np.random.default_rng(0)
    head_major = rng.standard_normal((kv_heads, seq_len, head_dim), dtype=np.float32)
    position_major = np.ascontiguousarray(head_major.transpose(1, 0, 2))  # (seq_len, kv_heads, head_dim)
    head = kv_heads // 2
    out = np.empty((seq_len, head_dim), dtype=np.float32)

    def median_us(view: np.ndarray) -> float:
        times = []
        for _ in range(repeats):
            began = time.perf_counter()
            np.copyto(out, view)
            times.append(time.perf_counter() - began)
        return float(np.median(times) * 1e6)

    median_us(head_major[head])  # warm-up: page in the buffers
    median_us(position_major[:, head])
    return LayoutBench(
        kv_heads=kv_heads,
        seq_len=seq_len,
        head_dim=head_dim,
        bytes_read=seq_len * head_dim * 4,
        contiguous_us=median_us(head_major[head]),
        strided_us=median_us(position_major[:, head]),
        repeats=repeats,
    )
