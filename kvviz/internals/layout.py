"""Memory layout of one layer's K (or V) buffer: where element (head, position, dim) lives, what one head reads,
and what appending one token costs. Four real designs (row-major, C order; axes named as in kvviz.model.dims's
legend, batch 1 dropped; ncnn's embed_dim = num_kv_heads * head_dim):

    head_major       [num_kv_heads, max_cache_len, head_dim]   PRE-ALLOCATED for max_cache_len positions, written
                                                              in place: transformers' StaticCache, flat engines
                                                              (Akunu's KV-cache chapter; kvviz's own bench engine,
                                                              kvviz/speedup/harness.py)
    position_major   [max_cache_len, num_kv_heads, head_dim]   PRE-ALLOCATED, one row of every head per position:
                                                              llama.cpp's K cache (ggml_new_tensor_3d(type_k,
                                                              n_embd_k_gqa, kv_size, ...))
    dynamic          [num_kv_heads, seq_len, head_dim]         EXACTLY seq_len long, grown by torch.cat each step:
                                                              transformers' DynamicCache (DynamicLayer.update)
    transposed       [num_kv_heads * head_dim, seq_len]        EXACTLY seq_len wide, rebuilt each step: ncnn's
                                                              MultiHeadAttention kv_cache (k_affine.create(
                                                              dst_seqlen, embed_dim), then every past row memcpy'd),
                                                              so Q @ K^T is a plain GEMM over contiguous rows

For the pre-allocated layouts `BufferShape.max_len` is the allocation (max_cache_len); for the exact-size ones the
buffer is exactly as long as the cache, so pass a shape whose max_len is the current seq_len (`buffer_shape` does
that). A model's buffer: `BufferShape.of(dims)`, from its dimensions (kvviz.model.dims).
A full address adds the layer: layers are separate buffers of equal size laid end to end.

Reading one head's keys for positions 0..seq_len-1: one contiguous run under head_major, dynamic and (because
it is exactly seq_len wide) ncnn's transposed; seq_len runs of head_dim elements under position_major.
Appending one token: the pre-allocated layouts write one row and copy nothing; the exact-size layouts allocate a
new buffer and copy every past row (an O(n) copy per step, O(n^2) bytes over a generation): `append_cost`.
`bench_head_read` times a contiguous vs a strided read on this machine (a measurement, not a promise), by the
one noise rule of kvviz.measure: interleaved repeats, medians with their spread and the load.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kvviz.i18n import N_, _
from kvviz.inputs.prompt_rules import IntSetting
from kvviz.measure.load import load_label
from kvviz.measure.repeats import time_pair
from kvviz.measure.timing import Comparison, Timing
from kvviz.model.dims import ModelDims

LAYOUTS: dict[str, str] = {
    "head_major": "[num_kv_heads, max_cache_len, head_dim] pre-allocated (StaticCache, Akunu, flat engines)",
    "position_major": "[max_cache_len, num_kv_heads, head_dim] pre-allocated (llama.cpp's K cache)",
    "dynamic": "[num_kv_heads, seq_len, head_dim] grown by torch.cat (transformers' DynamicCache)",
    "transposed": "[num_kv_heads * head_dim, seq_len] rebuilt each step (ncnn's MultiHeadAttention)",
}
SHORT_NAMES: dict[str, str] = {  # English (marked for the catalog): show with short_name() / _()
    "head_major": N_("pre-allocated, head-major (StaticCache, Akunu)"),
    "position_major": N_("pre-allocated, position-major (llama.cpp K)"),
    "dynamic": N_("grown by torch.cat (DynamicCache)"),
    "transposed": N_("rebuilt each step, transposed (ncnn)"),
}
BENCH_REPEATS = 31  # repeats of each read per measurement (interleaved); about 20 ms in all for 1 MiB reads
# The page's inputs; their maxima are the model's (`index_settings`), the numbers here only the defaults.
_ANY = 2**31 - 1
LAYER = IntSetting(N_("layer"), 0, _ANY, default=0)
HEAD = IntSetting(N_("head"), 0, _ANY, default=1)
SEQ_LEN = IntSetting(N_("cached positions"), 1, _ANY, default=24)
POSITION = IntSetting(N_("position"), 0, _ANY, default=5)
DIM = IntSetting(N_("dim"), 0, _ANY, default=3)


def index_settings(dims: ModelDims) -> tuple[IntSetting, ...]:
    """(layer, head, cached positions, position, dim), each bounded by this model's sizes."""
    return (
        LAYER.up_to(dims.n_layer - 1),
        HEAD.up_to(dims.n_kv_heads - 1),
        SEQ_LEN.up_to(dims.n_positions),
        POSITION.up_to(dims.n_positions - 1),
        DIM.up_to(dims.head_dim - 1),
    )


EXACT_SIZE = frozenset({"dynamic", "transposed"})  # the buffer is exactly seq_len long: appending copies it


def short_name(layout: str) -> str:
    """A layout's short label in the current language (the selectbox's and the chart legend's)."""
    return _(SHORT_NAMES[layout])


class LayoutError(ValueError):
    """A shape or an index outside the buffer; the message says which and the allowed range."""


@dataclass(frozen=True)
class BufferShape:
    """One layer's K buffer: [num_kv_heads, max_cache_len, head_dim] elements of elem_bytes each, in head-major order
    (`dims(layout, shape)` gives each layout's own)."""

    kv_heads: int  # num_kv_heads
    max_len: int  # max_cache_len: the positions the buffer has room for
    head_dim: int
    elem_bytes: int = 4

    def __post_init__(self) -> None:
        for name in ("kv_heads", "max_len", "head_dim", "elem_bytes"):
            if getattr(self, name) < 1:
                raise LayoutError(f"{name} must be at least 1 (got {getattr(self, name)})")

    @classmethod
    def of(cls, dims: ModelDims, max_len: int | None = None, elem_bytes: int = 4) -> BufferShape:
        """A model's K buffer: its K/V heads and head_dim, room for max_len positions (default: its whole context,
        n_positions)."""
        return cls(dims.n_kv_heads, dims.n_positions if max_len is None else max_len, dims.head_dim, elem_bytes)

    @property
    def layer_elems(self) -> int:
        return self.kv_heads * self.max_len * self.head_dim

    @property
    def layer_bytes(self) -> int:
        return self.layer_elems * self.elem_bytes


def buffer_shape(layout: str, shape: BufferShape, seq_len: int) -> BufferShape:
    """The buffer that really exists with seq_len cached positions: max_len for pre-allocated layouts, seq_len
    for exact-size ones."""
    dims(layout, shape)  # rejects an unknown layout name
    if not 1 <= seq_len <= shape.max_len:
        raise LayoutError(f"seq_len must be between 1 and max_len={shape.max_len} (got {seq_len})")
    if layout in EXACT_SIZE:
        return BufferShape(shape.kv_heads, seq_len, shape.head_dim, shape.elem_bytes)
    return shape


def dims(layout: str, shape: BufferShape) -> tuple[int, ...]:
    """The array dimensions of one layer's buffer under `layout` (max_len = the buffer's length)."""
    if layout in ("head_major", "dynamic"):
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
    bounds = {
        "layer": (layer, n_layer),
        "head": (head, shape.kv_heads),
        "position": (pos, shape.max_len),
        "dim": (dim, shape.head_dim),
    }
    for name, (value, extent) in bounds.items():
        if not 0 <= value < extent:
            raise LayoutError(f"{name} {value} is outside 0..{extent - 1}")


def element_offset_bytes(layout: str, shape: BufferShape, head: int, pos: int, dim: int) -> int:
    """Byte offset of K[head, pos, dim] inside one layer's buffer."""
    _check_index(shape, 1, 0, head, pos, dim)
    strides = strides_bytes(layout, shape)
    if layout in ("head_major", "dynamic"):
        return head * strides[0] + pos * strides[1] + dim * strides[2]
    if layout == "position_major":
        return pos * strides[0] + head * strides[1] + dim * strides[2]
    # transposed: row = the channel (head * head_dim + dim) of the embedding, column = position
    return (head * shape.head_dim + dim) * strides[0] + pos * strides[1]


def element_address_bytes(
    layout: str, shape: BufferShape, n_layer: int, layer: int, head: int, pos: int, dim: int
) -> int:
    """Byte address of K[layer, head, pos, dim] from the start of the whole cache (layers end to end)."""
    _check_index(shape, n_layer, layer, head, pos, dim)
    return layer * shape.layer_bytes + element_offset_bytes(layout, shape, head, pos, dim)


def head_read_mask(layout: str, shape: BufferShape, head: int, seq_len: int) -> np.ndarray:
    """[elements of the real buffer] bool: what one head's attention reads (positions < seq_len).

    The real buffer is `buffer_shape(layout, shape, seq_len)`: exact-size layouts hold only seq_len positions.
    """
    shape = buffer_shape(layout, shape, seq_len)
    _check_index(shape, 1, 0, head, 0, 0)
    # Build the mask in the logical [num_kv_heads, max_cache_len, head_dim] order, then lay it out like the real
    # buffer.
    logical = np.zeros((shape.kv_heads, shape.max_len, shape.head_dim), dtype=bool)
    logical[head, :seq_len, :] = True
    if layout in ("head_major", "dynamic"):
        laid_out = logical
    elif layout == "position_major":
        laid_out = logical.transpose(1, 0, 2)
    else:
        laid_out = logical.transpose(0, 2, 1).reshape(shape.kv_heads * shape.head_dim, shape.max_len)
    return np.ascontiguousarray(laid_out).reshape(-1)


def picture_row_elems(layout: str, shape: BufferShape, seq_len: int) -> int:
    """Elements per row when drawing the real buffer as a grid: its innermost two dimensions for the
    pre-allocated layouts, one channel row (transposed) or one head's block (dynamic) for the exact-size ones."""
    buf = buffer_shape(layout, shape, seq_len)
    if layout == "transposed":
        return buf.max_len
    if layout == "dynamic":
        return buf.max_len * buf.head_dim
    return buf.kv_heads * buf.head_dim  # pre-allocated: rows of kv_heads * head_dim elements


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
class AppendCost:
    """Bytes moved in one layer's K buffer (V is the same) to append one token to a cache of seq_len rows."""

    layout: str
    seq_len: int  # rows cached before the append
    written_bytes: int  # the new token's row: kv_heads * head_dim * elem_bytes
    copied_bytes: int  # past rows copied into a new buffer (0 when the buffer was pre-allocated)
    reallocates: bool


def append_cost(layout: str, shape: BufferShape, seq_len: int) -> AppendCost:
    """What appending token seq_len costs: exact-size layouts copy all seq_len past rows (O(n) per step)."""
    dims(layout, shape)
    if not 0 <= seq_len < shape.max_len:
        raise LayoutError(f"seq_len must be between 0 and max_len - 1 = {shape.max_len - 1} (got {seq_len})")
    row_bytes = shape.kv_heads * shape.head_dim * shape.elem_bytes
    exact = layout in EXACT_SIZE
    return AppendCost(layout, seq_len, row_bytes, seq_len * row_bytes if exact else 0, exact)


def generation_copy_bytes(layout: str, shape: BufferShape, prompt_len: int, n_new: int) -> int:
    """Past-row bytes copied while n_new tokens are appended after a prompt of prompt_len (one layer, K only).

    Exact-size layouts: row_bytes * (P + (P+1) + ... + (P+n_new-1)), the O(n^2) total; pre-allocated: 0.
    """
    if prompt_len < 0 or n_new < 0 or prompt_len + n_new > shape.max_len:
        raise LayoutError(f"prompt_len + n_new must fit in max_len={shape.max_len}")
    if layout not in EXACT_SIZE:
        dims(layout, shape)
        return 0
    row_bytes = shape.kv_heads * shape.head_dim * shape.elem_bytes
    return row_bytes * (n_new * prompt_len + n_new * (n_new - 1) // 2)


@dataclass(frozen=True)
class LayoutBench:
    """Repeats of copying one head's keys out of a buffer laid out each way (numpy, this machine), taken in turn.

    Reported by kvviz.measure.timing's rule: medians with the fastest and slowest repeat, the machine's load, and
    "inside the noise" (no faster side named) when the middle halves of the two sets of repeats overlap.
    """

    kv_heads: int
    seq_len: int
    head_dim: int
    bytes_read: int
    contiguous: Timing  # head_major: one contiguous block
    strided: Timing  # position_major: seq_len short runs, kv_heads*head_dim apart

    @property
    def repeats(self) -> int:
        return self.contiguous.repeats

    @property
    def contiguous_us(self) -> float:
        return self.contiguous.median_ms * 1000.0

    @property
    def strided_us(self) -> float:
        return self.strided.median_ms * 1000.0

    @property
    def load_1min(self) -> float:
        return self.comparison.load_1min

    @property
    def comparison(self) -> Comparison:
        return Comparison("the contiguous read", self.contiguous, "the strided read", self.strided)

    @property
    def inside_noise(self) -> bool:
        return self.comparison.inside_noise

    @property
    def slowdown(self) -> float | None:
        """Strided median / contiguous median, or None when the difference is inside the noise (no winner)."""
        if self.inside_noise:
            return None
        return self.strided_us / self.contiguous_us if self.contiguous_us > 0 else float("nan")

    def sentence(self) -> str:
        """One sentence for a class, in microseconds (a read of one head takes well under a millisecond):
        a faster side only when the repeats name one, else "inside the noise"."""
        c, s = self.contiguous_us, self.strided_us
        load = load_label(self.load_1min)
        if self.inside_noise:
            return _(
                "The contiguous read ({c:,.1f} µs) and the strided read ({s:,.1f} µs) are inside the noise: "
                "the middle halves of their {n_c} and {n_s} repeats overlap ({load}), so this machine cannot "
                "tell them apart at this size."
            ).format(c=c, s=s, n_c=self.contiguous.repeats, n_s=self.strided.repeats, load=load)
        comparison = self.comparison
        if comparison.faster_name == "the contiguous read":
            return _(
                "The contiguous read took {c:,.1f} µs, the strided read {s:,.1f} µs: {ratio:.2f}x faster, "
                "beyond the spread of the repeats ({load})."
            ).format(c=c, s=s, ratio=comparison.ratio, load=load)
        return _(
            "The strided read took {s:,.1f} µs, the contiguous read {c:,.1f} µs: {ratio:.2f}x faster, "
            "beyond the spread of the repeats ({load})."
        ).format(c=c, s=s, ratio=comparison.ratio, load=load)


def us_label(timing: Timing) -> str:
    """'112.4 µs (median of 15, 98.0-180.3 µs)': a Timing's label in microseconds."""
    return _("{median:,.1f} µs (median of {n}, {lo:,.1f}-{hi:,.1f} µs)").format(
        median=timing.median_ms * 1000, n=timing.repeats, lo=timing.min_ms * 1000, hi=timing.max_ms * 1000
    )


def head_read_views(kv_heads: int, seq_len: int, head_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """The same head's keys (head kv_heads // 2), as a view into a head_major and into a position_major buffer
    holding the same random float32 cache: (contiguous, strided), each [seq_len, head_dim]."""
    rng = np.random.default_rng(0)
    head_major = rng.standard_normal((kv_heads, seq_len, head_dim), dtype=np.float32)
    position_major = np.ascontiguousarray(head_major.transpose(1, 0, 2))  # [seq_len, num_kv_heads, head_dim]
    head = kv_heads // 2
    return head_major[head], position_major[:, head]


def bench_head_read(
    kv_heads: int = 16,
    seq_len: int = 4096,
    head_dim: int = 64,
    repeats: int = BENCH_REPEATS,
    clock: Callable[[], float] = time.perf_counter,
) -> LayoutBench:
    """Time reading (copying) one head's keys: contiguous head_major vs strided position_major, float32.

    The two reads are interleaved (contiguous, strided, contiguous, ...) after one untimed warm-up each
    (kvviz.measure.repeats.time_pair), so a load that comes and goes hits both alike. Default buffers are 16 MiB
    each; BENCH_REPEATS of each take well under a second.
    """
    if not (1 <= kv_heads <= 64 and 1 <= seq_len <= 32768 and 1 <= head_dim <= 256 and 1 <= repeats <= 200):
        raise LayoutError(
            "benchmark sizes out of range: kv_heads 1..64, seq_len 1..32768, head_dim 1..256, repeats 1..200"
        )
    contiguous, strided = head_read_views(kv_heads, seq_len, head_dim)
    out = np.empty((seq_len, head_dim), dtype=np.float32)
    contiguous_t, strided_t = time_pair(
        lambda: np.copyto(out, contiguous), lambda: np.copyto(out, strided), repeats, clock=clock
    )
    return LayoutBench(
        kv_heads=kv_heads,
        seq_len=seq_len,
        head_dim=head_dim,
        bytes_read=seq_len * head_dim * 4,
        contiguous=contiguous_t,
        strided=strided_t,
    )
