"""Cache internals 1: memory layout. Where K[layer, head, pos, dim] lives under four real designs, what one
head reads, and what appending a token costs (ncnn's transposed cache vs pre-allocated vs DynamicCache)."""
from __future__ import annotations

import streamlit as st

from kvviz import ui
from kvviz.speedup.noise import load_label
from kvviz.figures import internals as fig
from kvviz.internals import layout
from kvviz.inputs.prompt_rules import check_int_in_range
from pages.internals_shared import PLOT, explain, run_queued

ui.ensure_router()  # before anything is drawn: see its docstring
st.title("Memory layout of the cache")
explain(
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

info = ui.current_info()
shape = layout.BufferShape(info.n_kv_heads, info.n_positions, info.head_dim, 4)
c1, c2, c3, c4 = st.columns(4)
name = c1.selectbox("Layout", list(layout.LAYOUTS), format_func=layout.SHORT_NAMES.get,
                     key="int_layout_name")
# Bounds are checked below, not clamped by the widgets: a value past its bound gets a message.
layer = c2.number_input(f"Layer (0..{info.n_layer - 1})", min_value=0, value=0, key="int_layout_layer")
head = c3.number_input(f"Head (0..{info.n_kv_heads - 1})", min_value=0, value=min(1, info.n_kv_heads - 1),
                       key="int_layout_head")
seq_len = c4.number_input(f"Cached positions (1..{info.n_positions})", min_value=1, value=24, key="int_layout_seq")
c5, c6 = st.columns(2)
pos = c5.number_input(f"Position (0..{info.n_positions - 1})", min_value=0, value=5, key="int_layout_pos")
dim = c6.number_input(f"Dim (0..{info.head_dim - 1})", min_value=0, value=3, key="int_layout_dim")
try:
    layer, head, seq_len, pos, dim = (check_int_in_range(value, 0 if what != "cached positions" else 1, top, what)
                                      for value, top, what in ((layer, info.n_layer - 1, "layer"),
                                                               (head, info.n_kv_heads - 1, "head"),
                                                               (seq_len, info.n_positions, "cached positions"),
                                                               (pos, info.n_positions - 1, "position"),
                                                               (dim, info.head_dim - 1, "dim")))
except ValueError as exc:
    st.error(str(exc))
    st.stop()

buf = layout.buffer_shape(name, shape, int(seq_len))  # exact-size layouts hold only seq_len positions
if int(pos) >= int(seq_len):
    st.warning(f"Position {pos} is not cached yet: the cache holds positions 0..{int(seq_len) - 1}.")
    offset = None
else:
    address = layout.element_address_bytes(name, buf, info.n_layer, int(layer), int(head), int(pos), int(dim))
    offset = layout.element_offset_bytes(name, buf, int(head), int(pos), int(dim))
    st.markdown(
        f"**K[layer {layer}, head {head}, pos {pos}, dim {dim}]** is at byte **{address:,}** (layer buffers of "
        f"{buf.layer_bytes:,} B end to end; strides {layout.strides_bytes(name, buf)} bytes for "
        f"`{layout.dims(name, buf)}` float32)."
    )
read = layout.head_read_runs(name, shape, int(head), int(seq_len))
cost = layout.append_cost(name, shape, min(int(seq_len), info.n_positions - 1))
m = st.columns(4)
m[0].metric("Bytes one head reads", f"{read.bytes_read:,}")
m[1].metric("Contiguous runs", f"{read.runs:,}", help=f"{read.run_bytes:,} B each, {read.gap_bytes:,} B gaps")
m[2].metric("Buffer size (this layer's K)", f"{buf.layer_bytes:,} B")
m[3].metric("Copied per new token", f"{cost.copied_bytes:,} B",
            help="bytes of past rows copied into a new buffer to append one token; pre-allocated buffers "
                 "write the new row in place and copy nothing")
mask = layout.head_read_mask(name, shape, int(head), int(seq_len))
row = layout.picture_row_elems(name, shape, int(seq_len))
st.plotly_chart(fig.layout_read_map(mask, row, 4, f"Layer {layer} buffer, {name}: what head {head} reads "
                                    "(dark); the element above (red x)", offset), **PLOT)

st.subheader("The price of appending: copy or write in place")
lens = list(range(0, info.n_positions, max(1, info.n_positions // 64)))
copied = {layout.SHORT_NAMES[k]: [layout.append_cost(k, shape, n).copied_bytes for n in lens] for k in layout.LAYOUTS}
st.plotly_chart(fig.append_copy_figure(lens, copied, cost.written_bytes, "Bytes moved to append one token (one "
                                       "layer's K): copy every past row, or write one row in place"), **PLOT)
total_new = min(256, info.n_positions - 1)
st.caption(
    f"Generating {total_new} tokens after a 1-token prompt, one layer's K: the exact-size layouts copy "
    f"{layout.generation_copy_bytes('transposed', shape, 1, total_new):,} bytes of past rows in total (O(n^2)); "
    "the pre-allocated ones copy 0 and write "
    f"{total_new * cost.written_bytes:,} bytes of new rows. Every layer and V pay the same again."
)

st.subheader("Reading one head: contiguous vs strided, measured here")
st.caption(f"Each read is timed {layout.BENCH_REPEATS} times, taken in turn with the other, after one untimed "
           "warm-up each; the page shows the median with the fastest and slowest run and the machine's load. When "
           "the middle halves of the two sets of runs overlap, the difference is inside the noise and no side is "
           "called faster.")
if st.button("Measure the read on this machine", key="int_layout_measure"):
    bench = run_queued("Timing the reads", lambda: layout.bench_head_read(16, 4096, 64, layout.BENCH_REPEATS))
    if bench is not None:
        st.session_state["int_layout_bench"] = bench
stored = st.session_state.get("int_layout_bench")  # per session: a timing is never shared with other users
if isinstance(stored, layout.LayoutBench):
    bench = stored
    m = st.columns(3)
    m[0].metric("Contiguous read (median)", f"{bench.contiguous_us:,.1f} µs", help=layout.us_label(bench.contiguous))
    m[1].metric("Strided read (median)", f"{bench.strided_us:,.1f} µs", help=layout.us_label(bench.strided),
                delta=None if bench.inside_noise else f"{bench.slowdown:.2f}x the contiguous time",
                delta_color="inverse")
    m[2].metric("Machine load (1 min)", f"{bench.load_1min:.2f}" if bench.load_1min == bench.load_1min else "unknown",
                help=load_label(bench.load_1min))
    (st.info if bench.inside_noise else st.success)(bench.sentence())
    st.plotly_chart(fig.layout_bench_figure(bench), **PLOT)
    st.caption(f"numpy copy of one head's keys from a {bench.kv_heads} heads x {bench.seq_len:,} positions x "
               f"{bench.head_dim} float32 buffer. Contiguous: {layout.us_label(bench.contiguous)}; strided: "
               f"{layout.us_label(bench.strided)}; {load_label(bench.load_1min)} at the time. A measurement: it "
               "varies with the CPU and its load.")
else:
    st.caption("Press the button to time a contiguous (head-major) and a strided (position-major) read here.")
