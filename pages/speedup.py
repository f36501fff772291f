"""Measured speed-up: the same greedy generation with no cache, a growing cache and a pre-allocated cache."""
from __future__ import annotations

import streamlit as st

from kvviz import bench, models, ui, ui_bench

ui.ensure_router()  # before anything is drawn: see its docstring
st.title("Measured speed-up")
with st.expander("What you are seeing", expanded=False):
    st.markdown(
        "We time the **same greedy generation three ways** on this machine, and check they pick the same tokens:\n"
        "1. **No cache**: every step feeds the whole text again and recomputes every key and value.\n"
        "2. **DynamicCache**: transformers' default cache; each step feeds one token and *appends* its K/V rows "
        "(the tensors grow by concatenation).\n"
        "3. **Pre-allocated cache**: K/V buffers sized for the whole request once, written in place, with a lean "
        "loop around them and the weights pre-packed once for the CPU's GEMV kernel (how inference engines do it; "
        "untick *pre-pack* under Advanced to see the cache design alone).\n\n"
        "Dotted lines are plain `model.generate(use_cache=True/False)`, for reference. Token 1 is the "
        "**prefill** (the whole prompt in one pass), timed apart from the one-token **decode** steps.\n\n"
        "**Decode is memory-bound**: with a cache each step multiplies every weight matrix by one vector (GEMV), "
        "so every weight byte is read from memory for a single multiply-add. **Prefill and uncached steps are "
        "compute-bound**: they multiply the weights by many token vectors at once (GEMM) and reuse each byte. "
        "The **roofline** is the fastest decode this machine's memory allows: measured copy bandwidth divided "
        "by the bytes read per token (weights + K/V). Small models never get near it: fixed per-layer "
        "overhead dominates."
    )

sidebar_spec = st.session_state.get(ui.MODEL_SPEC_KEY, models.BUNDLED)
with st.form("bench_form"):
    spec = ui_bench.model_choice(sidebar_spec)
    c1, c2, c3 = st.columns(3)
    prompt_len = c1.number_input("Prompt tokens", 1, 1023, 16, key="bench_prompt_len")
    new_tokens = c2.number_input("New tokens", 1, 1023, 64, key="bench_new_tokens",
                                 help="Prompt + new tokens must fit the model's positions (256 bundled, 1024 GPT-2).")
    repeats = c3.number_input("Repeats", 1, 10, 3, key="bench_repeats", help="We report medians and min-max.")
    with st.expander("Advanced"):
        a1, a2 = st.columns(2)
        threads = a1.number_input("Torch threads", 1, 256, bench.default_thread_count(), key="bench_threads",
                                  help="Default: physical cores, at most 8.")
        warmup = a2.number_input("Warm-up runs", 0, 5, 1, key="bench_warmup")
        include_generate = st.checkbox("Also time model.generate(use_cache=True)", True, key="bench_generate")
        include_generate_no_cache = st.checkbox("... and model.generate(use_cache=False) (slow)", False,
                                                key="bench_generate_no_cache")
        prepack = st.checkbox("Pre-allocated mode: pre-pack weights for the GEMV kernel", True, key="bench_prepack",
                              help="One-off weight copies in the layout the CPU kernel streams fastest.")
    submitted = st.form_submit_button("Run benchmark", type="primary", key="bench_run")
st.caption("With the defaults: the bundled model takes seconds, the GPT-2 124M shape about 45 s on a 2-core laptop.")

if submitted:
    settings = bench.BenchSettings(
        prompt_len=int(prompt_len), new_tokens=int(new_tokens), repeats=int(repeats), warmup=int(warmup),
        threads=int(threads), include_generate=include_generate,
        include_generate_no_cache=include_generate_no_cache, prepack_weights=prepack,
    )
    try:
        loaded = ui.cached_model(spec, "sdpa")
    except models.ModelLoadError as exc:
        st.warning(f"{exc} Choose another model; earlier results are kept below.")
    else:
        result = ui_bench.run_with_progress(loaded, settings)
        if result is not None:
            st.session_state[ui_bench.RESULT_KEY] = result

result = st.session_state.get(ui_bench.RESULT_KEY)
if result is None:
    st.info("Choose a model and lengths, then press **Run benchmark**. The bundled model finishes in seconds.")
else:
    ui_bench.render_results(result)
