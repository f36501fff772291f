"""Streamlit rendering for the cache-internals page: one function per section, results cached per input.

Each `section_*` reads its widgets (keys prefixed `int_`), calls `kvviz.internals`, and draws the records with
`kvviz.figures.internals`. Model-driven results are cached with st.cache_data keyed on the model spec and the
inputs (the model itself is passed unhashed as `_loaded`), so re-rendering the page costs nothing.
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from kvviz import memory
from kvviz.figures import internals as fig
from kvviz.internals import crossattn, layout, paging, prefix, quant, speculative, window
from kvviz.models import LoadedModel

DEFAULT_PROMPT = "ROMEO: But soft, what light through yonder window breaks? It is the east, and Juliet is the sun."
DEFAULT_AGREEMENT_PROMPTS = "ROMEO:\nJULIET: O Romeo, Romeo\nFirst Citizen:\nKING RICHARD II:\nMENENIUS: What work"
PLOT = {"width": "stretch"}


def _explain(text: str) -> None:
    with st.expander("What you are seeing", expanded=False):
        st.markdown(text)


# ----- cached computations (keyed on the model spec and the inputs) ------------------------------------------
@st.cache_data(show_spinner=False, max_entries=8)
def _bench(kv_heads: int, seq_len: int, head_dim: int, nonce: int) -> layout.LayoutBench:
    return layout.bench_head_read(kv_heads, seq_len, head_dim)


@st.cache_data(show_spinner="Prefilling both prompts...", max_entries=16)
def _prefix(_loaded: LoadedModel, spec: str, prompt_a: str, prompt_b: str) -> prefix.PrefixReuse:
    return prefix.prefix_reuse(_loaded, prompt_a, prompt_b)


@st.cache_data(show_spinner=False, max_entries=16)
def _cross(source_len: int, n_steps: int) -> crossattn.CrossAttnRun:
    return crossattn.run_cross_attention(source_len, n_steps)


@st.cache_data(show_spinner=False, max_entries=16)
def _window(_loaded: LoadedModel, spec: str, prompt: str, w: int, local_per_global: int | None) -> window.WindowRun:
    return window.window_on_model(_loaded, prompt, w, local_per_global)


@st.cache_data(show_spinner="Generating two sequences...", max_entries=16)
def _paged(_loaded: LoadedModel, spec: str, prompt: str, n_a: int, n_b: int, block: int) -> paging.PagedRun:
    return paging.paged_generation(_loaded, prompt, n_a, n_b, block)


@st.cache_data(show_spinner=False, max_entries=16)
def _quant(_loaded: LoadedModel, spec: str, prompt: str, group: int) -> list[quant.QuantReport]:
    return [quant.quant_report(_loaded, prompt, s, group) for s in quant.SCHEMES]


@st.cache_data(show_spinner="Generating with each cache format...", max_entries=8)
def _agreement(_loaded: LoadedModel, spec: str, prompts: tuple[str, ...], n_new: int,
               group: int) -> tuple[quant.SchemeAgreement, ...]:
    return quant.greedy_agreement(_loaded, list(prompts), n_new, quant.SCHEMES, group)


@st.cache_data(show_spinner="Drafting and verifying...", max_entries=16)
def _spec(_loaded: LoadedModel, spec: str, prompt: str, n_new: int, k: int, temp: float) -> speculative.SpecRun:
    return speculative.speculative_decode(_loaded, prompt, n_new, k, temp)


# ----- 1. memory layout --------------------------------------------------------------------------------------
def section_layout(loaded: LoadedModel) -> None:
    info = loaded.info
    _explain(
        "A layer's keys are one block of memory. The *layout* decides where element (head, position, dim) "
        "lands. Attention for one head reads that head's keys for every cached position: in the head-major "
        "layout (transformers') that is one contiguous run; position-major interleaves the heads, so the same "
        "read becomes many short runs. The grid below is the real buffer size of this model's layer, one cell "
        "per number; dark cells are the ones a single head reads."
    )
    c1, c2, c3, c4 = st.columns(4)
    shape = layout.BufferShape(info.n_kv_heads, info.n_positions, info.head_dim, 4)
    name = c1.selectbox("Layout", list(layout.LAYOUTS), format_func=lambda k: f"{k} {layout.LAYOUTS[k]}",
                        key="int_layout_name")
    layer = c2.number_input("Layer", 0, info.n_layer - 1, 0, key="int_layout_layer")
    head = c3.number_input("Head", 0, info.n_kv_heads - 1, 1, key="int_layout_head")
    seq_len = c4.number_input("Cached positions", 1, info.n_positions, 24, key="int_layout_seq")
    c5, c6 = st.columns(2)
    pos = c5.number_input("Position", 0, info.n_positions - 1, 5, key="int_layout_pos")
    dim = c6.number_input("Dim", 0, info.head_dim - 1, 3, key="int_layout_dim")
    address = layout.element_address_bytes(name, shape, info.n_layer, int(layer), int(head), int(pos), int(dim))
    strides = layout.strides_bytes(name, shape)
    st.markdown(
        f"**K[layer {layer}, head {head}, pos {pos}, dim {dim}]** is at byte **{address:,}** "
        f"(layer buffers of {shape.layer_bytes:,} B end to end; strides {strides} bytes for "
        f"`{layout.dims(name, shape)}` float32)."
    )
    read = layout.head_read_runs(name, shape, int(head), int(seq_len))
    m1, m2, m3 = st.columns(3)
    m1.metric("Bytes one head reads", f"{read.bytes_read:,}")
    m2.metric("Contiguous runs", f"{read.runs:,}", help=f"{read.run_bytes:,} B each, {read.gap_bytes:,} B gaps")
    m3.metric("Span touched", f"{read.span_bytes:,} B")
    mask = layout.head_read_mask(name, shape, int(head), int(seq_len))
    row = info.n_kv_heads * info.head_dim if name != "transposed" else info.n_positions
    offset = layout.element_offset_bytes(name, shape, int(head), int(pos), int(dim))
    st.plotly_chart(fig.layout_read_map(mask, row, 4, f"Layer {layer} buffer, {name}: what head {head} reads "
                                        "(dark); the element above (red x)", offset), **PLOT)
    nonce = st.session_state.get("int_bench_nonce", 0)
    if st.button("Measure again", key="int_bench_again"):
        nonce += 1
        st.session_state["int_bench_nonce"] = nonce
    bench = _bench(16, 4096, 64, nonce)
    st.plotly_chart(fig.layout_bench_figure(bench), **PLOT)
    st.caption(f"numpy copy of one head's keys from a {bench.kv_heads} heads x {bench.seq_len} positions x "
               f"{bench.head_dim} float32 buffer, median of {bench.repeats}: strided is {bench.slowdown:.2f}x the "
               "contiguous time on this machine now (a measurement: it varies with the CPU and its load).")


# ----- 2. prefix reuse ---------------------------------------------------------------------------------------
def section_prefix(loaded: LoadedModel) -> None:
    _explain(
        "Prompt A is prefilled; then its cache is rolled back (cropped) to the tokens it shares with prompt B, "
        "and only B's remaining tokens are fed. Because attention is causal, the kept rows are exactly what "
        "B would have computed: the logits match a fresh prefill of B. Sharing is counted in *tokens*."
    )
    a = st.text_area("Prompt A (cached first)", DEFAULT_PROMPT, key="int_prefix_a", height=70)
    b = st.text_area("Prompt B", DEFAULT_PROMPT.replace("It is the east, and Juliet is the sun.",
                     "Arise, fair sun, and kill the envious moon."), key="int_prefix_b", height=70)
    try:
        r = _prefix(loaded, loaded.info.spec, a, b)
    except prefix.PrefixError as exc:
        st.error(str(exc))
        return
    if r.shared_len == 0:
        st.warning("The prompts share no leading token, so nothing can be reused. Start both the same way.")
    m = st.columns(4)
    m[0].metric("Shared tokens", r.shared_len)
    m[1].metric("Tokens computed", r.new_tokens_computed, delta=-r.tokens_saved, delta_color="inverse")
    m[2].metric("Prefill time", f"{r.reuse_ms:.1f} ms", delta=f"{-r.time_saved_ms:.1f} ms vs fresh",
                delta_color="inverse")
    m[3].metric("Max |logit diff| vs fresh", f"{r.max_abs_logit_diff:.2e}")
    st.plotly_chart(fig.token_strip_figure(r.tokens_b, r.reused_len, "Prompt B: green rows reused from A's "
                                           "cache, orange rows computed now"), **PLOT)
    st.plotly_chart(fig.prefix_figure(r), **PLOT)
    st.caption(f"Fresh prefill of B: {r.fresh_ms:.1f} ms; reuse: {r.reuse_ms:.1f} ms (medians of "
               f"{r.timing_repeats}; wall-clock on this machine now, noisy when the CPU is busy). Reused rows: {r.reused_cache_bytes:,} bytes. Same next token: "
               f"{r.same_next_token}. Largest K/V difference: {r.max_abs_kv_diff:.2e}.")


# ----- 3. cross-attention ------------------------------------------------------------------------------------
def section_cross(_loaded: LoadedModel) -> None:
    _explain(
        "An encoder-decoder model (translation, summarisation) has two caches per decoder layer. The "
        "self-attention cache holds the decoder's own tokens and grows by one row per step. The cross-attention "
        "cache holds K/V of the encoder's output: computed at the first step, then reused unchanged. This is a "
        "tiny BART built locally with **random weights** (2+2 layers, d_model 32), fed token ids directly; "
        "transformers' own `EncoderDecoderCache` holds both caches."
    )
    c1, c2 = st.columns(2)
    src = c1.number_input("Source tokens", 1, crossattn.MAX_SOURCE_LEN, 12, key="int_cross_src")
    steps = c2.number_input("Decoder steps", 1, crossattn.MAX_STEPS, 8, key="int_cross_steps")
    run = _cross(int(src), int(steps))
    st.caption(f"Tiny BART with RANDOM weights, built here in milliseconds: {run.n_layer} decoder layers x "
               f"{run.n_heads} heads x head_dim {run.head_dim}, float32; the encoder ran {run.encoder_passes} time "
               "for all the steps. The text is meaningless; the cache mechanics are real.")
    st.plotly_chart(fig.cross_attention_figure(run), **PLOT)
    st.dataframe([{
        "step": s.step, "self rows": s.self_rows, "self bytes": s.self_bytes, "cross rows": s.cross_rows,
        "cross bytes": s.cross_bytes, "cross K/V equal to step 0": s.cross_equal_to_first,
        "cross same memory": s.cross_same_storage, "old self rows unchanged": s.self_prefix_equal,
    } for s in run.steps], hide_index=True)


# ----- 4. sliding windows ------------------------------------------------------------------------------------
def section_window(loaded: LoadedModel) -> None:
    info = loaded.info
    _explain(
        "A sliding-window layer keeps only the last W rows: older rows are evicted and that layer can no longer "
        "attend to them, so its cache stops growing at W rows. Hybrid models mix local and global layers "
        "(Gemma 3: 5 local, then 1 global). Below, the real model runs with full attention on your prompt; we "
        "apply the window to its real cache and measure how much attention the last token paid to rows a "
        "window would have evicted. Per-layer sizes come from the memory calculator and match the real tensors."
    )
    prompt = st.text_area("Prompt", DEFAULT_PROMPT, key="int_window_prompt", height=70)
    c1, c2 = st.columns(2)
    w = c1.number_input("Window W (tokens)", 1, info.n_positions, 8, key="int_window_w")
    pattern = c2.selectbox("Layer pattern", ["all local", "1 local : 1 global", "3 local : 1 global"],
                           key="int_window_pattern")
    local_per_global = {"all local": None, "1 local : 1 global": 1, "3 local : 1 global": 3}[pattern]
    try:
        run = _window(loaded, info.spec, prompt, int(w), local_per_global)
    except window.WindowError as exc:
        st.error(str(exc))
        return
    s = run.state
    if s.rows_evicted == 0:
        st.warning(f"The prompt has {s.seq_len} tokens, not more than W = {s.window}: nothing is evicted yet. "
                   "Lower W or lengthen the prompt.")
    m = st.columns(3)
    m[0].metric("Rows a local layer keeps", f"{s.rows_kept} of {s.seq_len}")
    m[1].metric("Cache bytes kept", f"{run.bytes_kept:,}", delta=f"{run.bytes_kept - run.bytes_full:,}",
                delta_color="inverse")
    lost = [la.attention_lost for la in run.layers if la.kind == "local"]
    m[2].metric("Attention on evicted rows (local layers)", f"{np.mean(lost):.0%}" if lost else "n/a")
    if run.evicted_tokens:
        st.markdown("**Evicted (no longer visible to local layers):** `" + "".join(run.evicted_tokens) + "`")
    tokens = run.tokens[-48:]
    st.plotly_chart(fig.window_mask_figure(window.visibility(len(tokens), int(w)), tokens,
                                           f"Local layer: which rows each query sees (W = {w})"), **PLOT)
    st.plotly_chart(fig.window_layers_figure(run), **PLOT)
    st.caption("Calculator bytes per layer: " + ", ".join(f"{la.calculator_bytes:,}" for la in run.layers)
               + " (kvviz.memory.budget) = bytes of the kept slices of the real tensors.")
    ctx = st.number_input("Gemma 3 4B context (tokens)", 1, 131072, 32768, key="int_window_gemma_ctx")
    p = window.preset_layers("gemma-3-4b", int(ctx))
    st.plotly_chart(fig.preset_layers_figure(p), **PLOT)
    st.caption(f"Gemma 3 4B, one sequence: {memory.format_bytes(p.total_bytes)} with its 5:1 pattern vs "
               f"{memory.format_bytes(p.all_global_bytes)} if every layer were global.")


# ----- 5. paging ---------------------------------------------------------------------------------------------
def section_paging(loaded: LoadedModel) -> None:
    _explain(
        "vLLM-style paging: the cache is a pool of fixed-size blocks; each sequence has a block table mapping "
        "its logical blocks to physical ones. Here the real model generates two continuations of one prompt "
        "(A greedy, B sampled). The full blocks of their common prefix are stored once with reference count 2. "
        "Only each sequence's last block is partly empty, compared with reserving the maximum length up front."
    )
    prompt = st.text_area("Prompt", DEFAULT_PROMPT, key="int_paging_prompt", height=70)
    c1, c2, c3 = st.columns(3)
    block = c1.number_input("Block size (tokens)", 1, paging.MAX_BLOCK_SIZE, 16, key="int_paging_block")
    n_a = c2.number_input("New tokens, A", 0, paging.MAX_NEW_TOKENS, 20, key="int_paging_na")
    n_b = c3.number_input("New tokens, B", 0, paging.MAX_NEW_TOKENS, 12, key="int_paging_nb")
    if not prompt.strip():
        st.error("The prompt is empty: type some text for both sequences to share.")
        return
    try:
        run = _paged(loaded, loaded.info.spec, prompt, int(n_a), int(n_b), int(block))
    except (paging.PagingError, ValueError) as exc:
        st.error(str(exc))
        return
    p = run.plan
    m = st.columns(4)
    m[0].metric("Lengths A / B", f"{p.seq_lens[0]} / {p.seq_lens[1]}")
    m[1].metric("Physical blocks", p.physical_blocks, help=f"shared: {p.shared_blocks}")
    m[2].metric("Slots allocated, unused", f"{p.waste_bytes // p.bytes_per_token}")
    m[3].metric("Paged / pre-allocated bytes", f"{p.paged_bytes / p.preallocated_bytes:.0%}")
    st.plotly_chart(fig.paging_blocks_figure(p), **PLOT)
    st.plotly_chart(fig.paging_bytes_figure(p), **PLOT)
    st.caption(f"Block tables A {list(p.tables[0])}, B {list(p.tables[1])}; refcounts {list(p.refcounts)}. "
               f"{p.bytes_per_token:,} bytes per token (from the real cache); pre-allocation reserves "
               f"{p.max_len} positions per sequence. Reading both caches back through their block tables "
               f"reproduces them exactly (max difference {run.gather_max_abs_diff:.1e}).")
    st.markdown(f"**A:** `{run.texts[0]!r}`  \n**B:** `{run.texts[1]!r}`")


# ----- 6. quantization ---------------------------------------------------------------------------------------
def section_quant(loaded: LoadedModel) -> None:
    info = loaded.info
    _explain(
        "The real cache of your prompt is stored in fp16, bf16, int8 and int4 and read back. int8/int4 use "
        "asymmetric round-to-nearest with an **fp16 scale and fp16 zero point per group** of G consecutive "
        "channels of one token's K or V head vector (4 bytes per group), int4 packed two per byte. The error "
        "per element is at most scale/2. Then the model generates greedily with each format (every new K/V row "
        "quantized as it enters the cache) and we count how often it picks the full-precision token."
    )
    prompt = st.text_area("Prompt", DEFAULT_PROMPT, key="int_quant_prompt", height=70)
    group = st.number_input("Group size G (must divide head_dim)", quant.MIN_GROUP, info.head_dim, info.head_dim,
                            key="int_quant_group")
    try:
        reports = _quant(loaded, info.spec, prompt, int(group))
    except quant.QuantError as exc:
        st.error(str(exc))
        return
    st.dataframe([{
        "format": r.scheme, "bytes": r.stored_bytes, "of which scales+zeros": r.overhead_bytes,
        "vs fp32": f"{r.stored_bytes / r.fp32_bytes:.1%}", "calculator bytes": r.calculator_bytes,
        "worst layer K error": f"{max(la.key_rel_rms for la in r.layers):.2e}",
        "worst layer V error": f"{max(la.value_rel_rms for la in r.layers):.2e}",
    } for r in reports], hide_index=True)
    c1, c2 = st.columns(2)
    c1.plotly_chart(fig.quant_bytes_figure(reports), **PLOT)
    c2.plotly_chart(fig.quant_error_figure(reports), **PLOT)
    prompts = st.text_area("Prompts for the agreement test (one per line)", DEFAULT_AGREEMENT_PROMPTS,
                           key="int_quant_prompts", height=110)
    n_new = st.number_input("Tokens per prompt", 1, 64, 16, key="int_quant_n")
    if st.button("Measure greedy agreement", key="int_quant_run"):
        st.session_state["int_quant_requested"] = True
    if st.session_state.get("int_quant_requested"):
        lines = tuple(line for line in prompts.splitlines() if line.strip())
        try:
            results = _agreement(loaded, info.spec, lines, int(n_new), int(group))
        except quant.QuantError as exc:
            st.error(str(exc))
            return
        st.plotly_chart(fig.quant_agreement_figure(results), **PLOT)
        st.caption("; ".join(f"{r.scheme}: {r.identical_prompts}/{len(lines)} prompts identical" for r in results)
                   + f" over {n_new} tokens each (teacher-forced: both runs see the full-precision tokens).")


# ----- 7. speculative decoding -------------------------------------------------------------------------------
def section_speculative(loaded: LoadedModel) -> None:
    _explain(
        "A draft proposes k tokens; the verifier (the bundled model, greedy) checks all of them in ONE forward "
        "pass, which appends k+1 rows to its cache. It keeps the proposals up to the first disagreement and the "
        "cache is cropped back with `crop_cache`: the rejected rows are removed. Here the draft is the same "
        "model sampled at a temperature (lower = more agreement). The output equals plain greedy decoding."
    )
    prompt = st.text_area("Prompt", "ROMEO: But soft, what light", key="int_spec_prompt", height=70)
    c1, c2, c3 = st.columns(3)
    k = c1.number_input("Draft length k", 1, speculative.MAX_K, 4, key="int_spec_k")
    n_new = c2.number_input("Tokens to generate", 1, speculative.MAX_NEW, 16, key="int_spec_n")
    temp = c3.number_input("Draft temperature", 0.05, 5.0, 0.7, step=0.05, key="int_spec_t")
    try:
        run = _spec(loaded, loaded.info.spec, prompt, int(n_new), int(k), float(temp))
    except speculative.SpeculativeError as exc:
        st.error(str(exc))
        return
    m = st.columns(3)
    m[0].metric("Acceptance", f"{run.acceptance_rate:.0%}")
    m[1].metric(f"Verifier passes (plain greedy: {len(run.tokens)})", run.verifier_passes,
                help="plain greedy decoding needs one pass per generated token, the prefill included")
    m[2].metric("Cache vs fresh prefill", f"{run.cache_vs_fresh_max_abs_diff:.1e}")
    st.plotly_chart(fig.speculative_figure(run), **PLOT)
    st.dataframe([{
        "round": r.index, "proposed": " | ".join(repr(t)[1:-1] for t in r.proposed_text), "accepted": r.accepted,
        "rows before": r.cache_len_before, "after verify": r.cache_len_verified, "after crop": r.cache_len_after_crop,
    } for r in run.rounds], hide_index=True)
    st.caption(f"The draft made {run.draft_passes} passes of its own; {run.rows_cropped} verifier cache rows were "
               "computed for rejected proposals and cropped away.")
    st.markdown(f"**Generated:** `{run.text!r}`")
