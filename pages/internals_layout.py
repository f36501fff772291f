"""Cache internals 1: memory layout. Where K[layer, head, pos, dim] lives under four real designs, what one
head reads, and what appending a token costs (ncnn's transposed cache vs pre-allocated vs DynamicCache)."""

from __future__ import annotations

import streamlit as st

from kvviz.figures import internals as fig
from kvviz.i18n import _
from kvviz.internals import layout
from kvviz.measure.load import load_label
from kvviz.ui import a11y, bounded, models, router, sidebar
from pages.internals_shared import PLOT, explain, run_queued

router.ensure_router()  # before anything is drawn: see its docstring
st.title(_("Memory layout of the cache"))
sidebar.needs_all_attention(models.current_info())  # K/V in every layer: not a hybrid
explain(
    _(
        "A layer's keys are one block of memory; the **layout** decides where element (head, position, dim) lands. "
        "Attention for one head reads that head's keys at every cached position.\n\n"
        "- **Pre-allocated, head-major** `[kv_heads, max_len, head_dim]` (transformers' `StaticCache`, flat engines "
        "such as Akunu): one head's keys are one contiguous run; a new token is written in place, nothing is copied.\n"
        "- **Pre-allocated, position-major** `[max_len, kv_heads, head_dim]` (llama.cpp's K cache): a token's row "
        "holds every head, so one head's read is `seq_len` short runs.\n"
        "- **Grown by `torch.cat`** `[kv_heads, seq_len, head_dim]` (transformers' `DynamicCache`): contiguous, but "
        "every step allocates a new tensor and copies all past rows.\n"
        "- **ncnn's transposed cache** `[embed_dim, seq_len]`: exactly `seq_len` wide, so each head's rows are one "
        "contiguous slice and `Q @ K^T` is a plain matrix product; the price is the same O(n) copy of every past "
        "row at each step (ncnn creates a `dst_seqlen`-wide buffer and `memcpy`s the old rows in).\n\n"
        "The grid is the real buffer of this model's layer, one cell per number; dark cells are what one head reads."
    )
)

info = models.current_info()
shape = layout.BufferShape.of(info)  # one layer's K buffer, room for the whole context, float32
c1, c2, c3, c4 = st.columns([2.2, 1, 1, 1.2])  # the layout names are long (a Chinese one ~17 characters)
name = c1.selectbox(_("Layout"), list(layout.LAYOUTS), format_func=layout.short_name, key="int_layout_name")
# Each box has its setting's bounds (the model's sizes); a value past them (sent by a client) gets a message.
s_layer, s_head, s_seq, s_pos, s_dim = layout.index_settings(info)
layer = bounded.number(c2, s_layer, _("Layer (0..{top})").format(top=s_layer.hi), key="int_layout_layer")
head = bounded.number(c3, s_head, _("Head (0..{top})").format(top=s_head.hi), key="int_layout_head")
seq_len = bounded.number(c4, s_seq, _("Cached positions (1..{top})").format(top=s_seq.hi), key="int_layout_seq")
c5, c6 = st.columns(2)
pos = bounded.number(c5, s_pos, _("Position (0..{top})").format(top=s_pos.hi), key="int_layout_pos")
dim = bounded.number(c6, s_dim, _("Dim (0..{top})").format(top=s_dim.hi), key="int_layout_dim")

buf = layout.buffer_shape(name, shape, int(seq_len))  # exact-size layouts hold only seq_len positions
if int(pos) >= int(seq_len):
    st.warning(
        _("Position {pos} is not cached yet: the cache holds positions 0..{top}.").format(pos=pos, top=int(seq_len) - 1)
    )
    offset = None
else:
    address = layout.element_address_bytes(name, buf, info.n_layer, int(layer), int(head), int(pos), int(dim))
    offset = layout.element_offset_bytes(name, buf, int(head), int(pos), int(dim))
    st.markdown(
        _(
            "**K[layer {layer}, head {head}, pos {pos}, dim {dim}]** is at byte **{address:,}** (layer buffers of "
            "{layer_bytes:,} B end to end; strides {strides} bytes for `{dims}` float32)."
        ).format(
            layer=layer,
            head=head,
            pos=pos,
            dim=dim,
            address=address,
            layer_bytes=buf.layer_bytes,
            strides=layout.strides_bytes(name, buf),
            dims=layout.dims(name, buf),
        )
    )
read = layout.head_read_runs(name, shape, int(head), int(seq_len))
cost = layout.append_cost(name, shape, min(int(seq_len), info.n_positions - 1))
m = st.columns(4)
m[0].metric(_("Bytes one head reads"), f"{read.bytes_read:,}")
m[1].metric(
    _("Contiguous runs"),
    f"{read.runs:,}",
    help=_("{run:,} B each, {gap:,} B gaps").format(run=read.run_bytes, gap=read.gap_bytes),
)
m[2].metric(_("Buffer size (this layer's K)"), f"{buf.layer_bytes:,} B")
m[3].metric(
    _("Copied per new token"),
    f"{cost.copied_bytes:,} B",
    help=_(
        "bytes of past rows copied into a new buffer to append one token; pre-allocated buffers "
        "write the new row in place and copy nothing"
    ),
)
mask = layout.head_read_mask(name, shape, int(head), int(seq_len))
row = layout.picture_row_elems(name, shape, int(seq_len))
a11y.chart(
    st,
    fig.layout_read_map(
        mask,
        row,
        4,
        _("Layer {layer} buffer, {name}: what head {head} reads (dark); the element above (red x)").format(
            layer=layer, name=layout.short_name(name), head=head
        ),
        offset,
    ),
    **PLOT,
)

st.header(_("The price of appending: copy or write in place"))
lens = list(range(0, info.n_positions, max(1, info.n_positions // 64)))
copied = {layout.short_name(k): [layout.append_cost(k, shape, n).copied_bytes for n in lens] for k in layout.LAYOUTS}
a11y.chart(
    st,
    fig.append_copy_figure(
        lens,
        copied,
        cost.written_bytes,
        _("Bytes moved to append one token (one layer's K): copy every past row, or write one row in place"),
    ),
    **PLOT,
)
total_new = min(256, info.n_positions - 1)
st.caption(
    _(
        "Generating {n} tokens after a 1-token prompt, one layer's K: the exact-size layouts copy {copied:,} bytes of "
        "past rows in total (O(n^2)); the pre-allocated ones copy 0 and write {written:,} bytes of new rows. Every layer "
        "and V pay the same again."
    ).format(
        n=total_new,
        copied=layout.generation_copy_bytes("transposed", shape, 1, total_new),
        written=total_new * cost.written_bytes,
    )
)

st.header(_("Reading one head: contiguous vs strided, measured here"))
st.caption(
    _(
        "Each read is timed {n} times, taken in turn with the other, after one untimed warm-up each; the "
        "page shows the median with the fastest and slowest run and the machine's load. When the middle halves "
        "of the two sets of runs overlap, the difference is inside the noise and no side is called "
        "faster."
    ).format(n=layout.BENCH_REPEATS)
)
if st.button(_("Measure the read on this machine"), key="int_layout_measure"):
    bench = run_queued(_("Timing the reads"), lambda: layout.bench_head_read(16, 4096, 64, layout.BENCH_REPEATS))
    if bench is not None:
        st.session_state["int_layout_bench"] = bench
stored = st.session_state.get("int_layout_bench")  # per session: a timing is never shared with other users
if isinstance(stored, layout.LayoutBench):
    bench = stored
    m = st.columns(3)
    m[0].metric(_("Contiguous read (median)"), f"{bench.contiguous_us:,.1f} µs", help=layout.us_label(bench.contiguous))
    m[1].metric(
        _("Strided read (median)"),
        f"{bench.strided_us:,.1f} µs",
        help=layout.us_label(bench.strided),
        delta=None if bench.inside_noise else _("{ratio:.2f}x the contiguous time").format(ratio=bench.slowdown),
        delta_color="inverse",
    )
    m[2].metric(
        _("Machine load (1 min)"),
        f"{bench.load_1min:.2f}" if bench.load_1min == bench.load_1min else _("unknown"),
        help=load_label(bench.load_1min),
    )
    (st.info if bench.inside_noise else st.success)(bench.sentence())
    a11y.chart(st, fig.layout_bench_figure(bench), **PLOT)
    st.caption(
        _(
            "numpy copy of one head's keys from a {heads} heads x {positions:,} positions x {head_dim} float32 "
            "buffer. Contiguous: {contiguous}; strided: {strided}; {load} at the time. A measurement: it varies "
            "with the CPU and its load."
        ).format(
            heads=bench.kv_heads,
            positions=bench.seq_len,
            head_dim=bench.head_dim,
            contiguous=layout.us_label(bench.contiguous),
            strided=layout.us_label(bench.strided),
            load=load_label(bench.load_1min),
        )
    )
else:
    st.caption(_("Press the button to time a contiguous (head-major) and a strided (position-major) read here."))
