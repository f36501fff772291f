"""Streamlit pieces of the "Measured speed-up" page: model choice, a lock-aware run with progress, results.

Kept out of pages/speedup.py so the page reads like a lesson plan. All numbers come from kvviz.bench.
"""
from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from kvviz import bench, models
from kvviz.figures import bench as figs

RESULT_KEY = "bench_result"  # the last finished benchmark of this session (kept across reruns and errors)
WAIT_POLL_S = 0.5
MODEL_CHOICES = {
    models.BUNDLED: "Bundled Tiny-Shakespeare GPT-2 (tiny: overhead-bound)",
    "random:gpt2": "GPT-2 124M shape, random weights (realistic size and timings)",
    "gpt2": "Pretrained GPT-2 124M (needs it in the local Hugging Face cache)",
}


def model_choice(default_spec: str) -> str:
    """A selectbox over the bundled / random-shape / pretrained models, defaulting to the sidebar's model."""
    choices = dict(MODEL_CHOICES)
    if default_spec not in choices:
        choices[default_spec] = f"{default_spec} (the sidebar's model)"
    specs = list(choices)
    return st.selectbox(
        "Model", specs, index=specs.index(default_spec), format_func=choices.__getitem__, key="bench_model",
        help="Timings depend on the shapes, not on the weight values: random weights time like real ones.",
    )


def wait_until_free() -> None:
    """Show a wait message (not an error) while another session's benchmark holds the lock.

    Polling with short sleeps, rather than blocking on the lock, lets Streamlit stop this script if the
    user navigates away while waiting.
    """
    placeholder = st.empty()
    while bench.benchmark_busy():
        running_s = bench.busy_for_s() or 0.0
        placeholder.info(
            f"Another benchmark is running (for {running_s:.0f} s). Yours starts as soon as it finishes: "
            "two benchmarks sharing the same CPU cores would both measure nonsense."
        )
        time.sleep(WAIT_POLL_S)
    placeholder.empty()


def run_with_progress(loaded: models.LoadedModel, settings: bench.BenchSettings) -> bench.BenchResult | None:
    """Run the benchmark with a progress bar; a clear message (and None) instead of a traceback."""
    try:
        bench.validate(settings, loaded.info.n_positions)
    except bench.BenchInputError as exc:
        st.error(str(exc))
        return None
    wait_until_free()
    bar = st.progress(0.0, text="Starting...")
    try:
        result = bench.run_benchmark(loaded, settings, progress=lambda fraction, text: bar.progress(
            min(max(fraction, 0.0), 1.0), text=text))
    except bench.BenchBusyError as exc:
        st.warning(str(exc))
        return None
    bar.empty()
    return result


def render_results(result: bench.BenchResult) -> None:
    s, m = result.settings, result.machine
    st.subheader("Results")
    st.caption(
        f"{result.model_label} · prompt {s.prompt_len} tokens, {s.new_tokens} new tokens, median of {s.repeats} "
        f"repeats (+{s.warmup} warm-up) · {m.cpu}, {m.physical_cores} cores, {m.threads} torch threads · "
        f"torch {m.torch_version}, transformers {m.transformers_version} · {m.dtype}, {m.attn_implementation} · "
        f"pre-allocated mode weights: {result.weight_format}"
    )
    if not result.all_tokens_match:
        st.warning("Some modes generated different tokens from the no-cache run (see the table).")
    roof = result.roofline("preallocated")
    cols = st.columns(4)
    cols[0].metric("DynamicCache vs no cache", f"{result.speedup('dynamic'):.2f}x")
    cols[1].metric("Pre-allocated vs no cache", f"{result.speedup('preallocated'):.2f}x")
    if result.has("generate_cache"):
        cols[2].metric("Pre-allocated vs generate(cache)", f"{result.speedup('preallocated', 'generate_cache'):.2f}x",
                       help=f"DynamicCache loop vs generate(cache): "
                            f"{result.speedup('dynamic', 'generate_cache'):.2f}x")
    cols[3].metric("Pre-allocated, share of roofline", f"{roof.fraction:.0%}",
                   help=f"{roof.roofline_tokens_per_s:.0f} tokens/s would stream every byte at copy bandwidth")
    st.markdown("All modes picked the same tokens as the no-cache run." if result.all_tokens_match else "")
    left, right = st.columns(2)
    left.plotly_chart(figs.latency_figure(result), key="bench_fig_latency")
    right.plotly_chart(figs.cumulative_figure(result), key="bench_fig_cumulative")
    left.plotly_chart(figs.speedup_figure(result), key="bench_fig_speedup")
    right.plotly_chart(figs.roofline_figure(result), key="bench_fig_roofline")
    op_ratio = result.op_ratio[-1][1]
    measured = result.speedup_by_length("preallocated")[-1]
    st.markdown(
        f"**Why the measured speed-up ({measured:.1f}x) is far below the op-count ratio ({op_ratio:.1f}x).** "
        "The op ratio counts multiply-adds. Without the cache, pass k multiplies every weight matrix by all "
        f"{s.prompt_len}+k-1 token vectors at once (a GEMM): each weight byte fetched from memory is reused for "
        "many tokens, so the CPU runs near its arithmetic peak. With the cache, pass k multiplies each matrix by "
        "a single vector (a GEMV): every weight byte is fetched to do one multiply-add, so the CPU mostly waits "
        f"for memory. Reading the {roof.weight_bytes_per_token / 1e6:.1f} MB of weights (plus "
        f"{roof.kv_bytes_per_token / 1e6:.2f} MB of K/V) per token at {result.bandwidth.bytes_per_s / 1e9:.1f} GB/s "
        f"caps decoding at {roof.roofline_tokens_per_s:.0f} tokens/s: the roofline. A cached op therefore costs "
        "far more time than an uncached one. On a tiny model the weights fit in the CPU caches and each pass is "
        "dominated by fixed per-layer overhead (Python, dispatch), which hurts the one-token passes most."
    )
    st.dataframe(pd.DataFrame(bench.summary_rows(result)), hide_index=True, key="bench_table")
    st.download_button("Download every timed pass (CSV)", bench.per_token_csv(result), file_name="kvviz_bench.csv",
                       mime="text/csv", key="bench_download")
