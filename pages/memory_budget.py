"""Memory budget: exact KV-cache bytes for any model layout, what fits on a GPU, and textbook figures checked."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from kvviz import capacity, memory, ui
from kvviz import ui_ops_memory as uim
from kvviz.figures import memory as figs
from kvviz.presets import GPUS, PRESETS, PUBLISHED_FIGURES, get_preset

ui.ensure_router()  # before anything is drawn: see its docstring
st.title("Memory budget")
with st.expander("What you are seeing", expanded=False):
    st.markdown(
        "Every layer keeps, for every token, one **key** and one **value** vector per K/V head. So the cache "
        "costs `2 x layers x KV heads x head dim x bytes per number` **per token**, times the context length, "
        "times the batch. GQA/MQA shrink it by sharing K/V heads between query heads, MLA stores one small "
        "latent instead, a sliding window stops local layers from growing past the window.\n\n"
        "Bytes are exact integers; **1 GiB = 2^30 bytes**, **1 GB = 10^9 bytes**. The address bar keeps your "
        "inputs: copy it to share this exact comparison."
    )
FIELDS = uim.memory_fields()
for notice in uim.seed_from_url(FIELDS):
    st.warning(notice)


@st.fragment
def calculator() -> None:
    top = st.columns([2, 3])
    top[0].selectbox("Preset", [uim.CUSTOM, *PRESETS], key="mem_preset", on_change=uim.apply_preset)
    if st.session_state["mem_preset"] != uim.CUSTOM:
        p = get_preset(st.session_state["mem_preset"])
        top[1].caption(f"Source: [{p.source}]({p.source}) · {p.paper}" + (f" · {p.note}" if p.note else ""))
    with st.expander("Import a Hugging Face config.json"):
        st.file_uploader("Upload config.json", type=["json"], key="mem_upload")
        st.text_area("...or paste it", key="mem_paste", height=100)
        st.button("Use this config.json", key="mem_import", on_click=uim.apply_import)
        kind, text = st.session_state.get("mem_import_report", (None, None))
        if kind:
            (st.success if kind == "ok" else st.error)(text)
    cfg = uim.memory_form()
    c = st.columns(2)
    with c[0]:
        context = uim.int_input("Context length (tokens)", "mem_context", 1, memory.LIMITS["context_len"])
    with c[1]:
        batch = uim.int_input("Batch (sequences)", "mem_batch", 1, memory.LIMITS["batch"])
    uim.push_to_url(FIELDS)
    if cfg is None:
        return
    b = memory.budget(cfg, context, batch)
    for w in b.warnings:
        st.warning(w)
    m = st.columns(3)
    uim.show_bytes("Per token (all layers)", b.bytes_per_token, col=m[0], help="a token inside every window")
    uim.show_bytes("Per token, one layer", b.bytes_per_token_per_layer, col=m[1])
    uim.show_bytes(f"Total: {context:,} tokens x batch {batch}", b.total_bytes, col=m[2])
    st.markdown(f"**{cfg.attention_kind}** · per token: {memory.format_bytes(b.bytes_per_token)} · "
                f"total: {memory.format_bytes(b.total_bytes)}")

    tabs = st.tabs(["Size vs context", "Per layer", "What fits", "Paged vs flat", "Textbook figures", "The loaded model"])
    with tabs[0]:
        compare = st.multiselect("Compare with", list(PRESETS), key="mem_compare")
        horizon = max(context, *(get_preset(n).max_context for n in compare)) if compare else context
        st.plotly_chart(figs.size_vs_context_figure([cfg, *(get_preset(n).kv for n in compare)], horizon,
                                                    batch, mark_context=context), key="mem_chart_ctx")
    with tabs[1]:
        if len(set(b.layer_bytes)) > 1:
            st.plotly_chart(figs.per_layer_figure(b), key="mem_chart_layers")
        else:
            st.info(f"All {cfg.n_layer} layers are alike: {memory.format_bytes(b.layer_bytes[0])} each.")
    with tabs[2]:
        g = st.columns(4)
        gpu = g[0].selectbox("GPU", [*GPUS, uim.CUSTOM_GPU], key="mem_gpu")
        gib = uim.int_input("Custom memory (GiB)", "mem_gpu_gib", 1, 1_000_000) if gpu == uim.CUSTOM_GPU else None
        with g[1]:
            params = uim.int_input("Model parameters", "mem_params", 0, 10**14)
        wdt = g[2].selectbox("Weight dtype", list(memory.DTYPES), key="mem_weight_dtype")
        with g[3]:
            reserve = uim.int_input("Reserve (MiB)", "mem_reserve_mib", 0, 10**9, help="activations, CUDA context...")
        gpu_bytes = gib * memory.GIB if gib else GPUS[gpu].memory_bytes
        weights = -(-params * memory.DTYPES[wdt].bits // 8)
        fit = capacity.what_fits(cfg, gpu_bytes, weights, reserve * memory.MIB, batch, context)
        st.markdown(
            f"GPU {memory.format_bytes(gpu_bytes)} - weights {memory.format_bytes(weights)} - reserve "
            f"{reserve:,} MiB = **{memory.format_bytes(fit.free_bytes) if fit.free_bytes > 0 else 'nothing'}** for the cache."
        )
        f = st.columns(2)
        f[0].metric(f"Longest context at batch {batch}", f"{fit.max_context:,} tokens" + (" (no limit: windowed)" if fit.context_capped else ""))
        f[1].metric(f"Largest batch at {context:,} tokens", f"{fit.max_batch:,}")
        if st.session_state["mem_preset"] in PRESETS and fit.max_context > get_preset(st.session_state["mem_preset"]).max_context:
            st.caption(f"Memory allows more than the model's context limit of {get_preset(st.session_state['mem_preset']).max_context:,} tokens.")
    with tabs[3]:
        p = st.columns(2)
        with p[0]:
            block = uim.int_input("Block size (tokens)", "mem_block", 1, 4096)
        with p[1]:
            max_len = uim.int_input("Flat buffer: pre-allocated length", "mem_maxlen", 1, memory.LIMITS["context_len"])
        try:
            view = capacity.paged_view(cfg, context, batch, block, max_len)
        except memory.MemoryInputError as exc:
            st.warning(str(exc))
        else:
            st.markdown(f"{view.blocks_per_sequence:,} blocks per sequence; the last one wastes "
                        f"{view.waste_tokens_last_block} token slots. The flat buffer wastes "
                        f"{memory.format_bytes(view.flat_bytes - view.used_bytes)}.")
            st.plotly_chart(figs.paged_figure(view), key="mem_chart_paged")
    with tabs[4]:
        checks = [memory.check_figure(f, get_preset(f.model).kv) for f in PUBLISHED_FIGURES]
        st.dataframe(pd.DataFrame([{
            "model": c.figure.model, "tokens": f"{c.figure.context_len:,}", "dtype": c.figure.dtype,
            "printed": f"{c.figure.claimed:g} {c.figure.claimed_unit}", "exact": memory.format_bytes(c.actual_bytes),
            "verdict": c.verdict, "source": c.figure.where} for c in checks]), hide_index=True,
            column_config={"source": st.column_config.LinkColumn("source")})
        for c in checks:
            mark = ":red[**wrong**]" if c.verdict == "wrong" else f":green[{c.verdict}]"
            st.markdown(f"{mark} {c.figure.model}, {c.figure.context_len:,} tokens, printed {c.figure.claimed:g} "
                        f"{c.figure.claimed_unit}: {c.explanation}.")
        mha = memory.kv_bytes(memory.KVConfig(32, 32, 32, 128, "bf16"), 4096)
        st.caption(f"Forgetting GQA (Llama-3-8B with 32 KV heads instead of 8) gives {memory.format_bytes(mha)} "
                   "at 4,096 tokens: 4x the real cache.")
    with tabs[5]:
        reading = uim.real_cache_reading()
        info = ui.current_model("eager").info
        predicted = memory.predicted_cache_bytes(info, reading.cache_len)
        r = st.columns(2)
        uim.show_bytes(f"Calculator at {reading.cache_len} tokens (fp32)", predicted, col=r[0])
        uim.show_bytes("Real DynamicCache tensors", reading.real_bytes, col=r[1], help=f"from {reading.source}")
        (st.success if predicted == reading.real_bytes else st.error)(
            f"{info.label}: 2 x {info.n_layer} layers x {info.n_kv_heads} heads x {info.head_dim} x 4 B x "
            f"{reading.cache_len} tokens = {predicted:,} B; the tensors hold {reading.real_bytes:,} B (from {reading.source})."
        )


calculator()
