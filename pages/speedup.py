"""Measured speed-up: the same greedy generation with no cache, transformers' caches and a flat pre-allocated
cache, timed side by side on this machine; the roofline it runs under; batched decode.

Results live in this session only (never cached across sessions: another user's timings are not yours).
The harness (kvviz.speedup.harness, which imports torch) is imported only when a run is asked for.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from kvviz.speedup import machine, tables
from kvviz.model import loading
from kvviz import ui
from kvviz.speedup.noise import Comparison, Timing, load_avg_1min, load_label
from kvviz.i18n import N_
from kvviz.speedup.records import ESTIMATOR, MODE_LABELS, BenchResult
from kvviz.speedup.settings import PAGE_BUDGET_S, BenchInputError, BenchSettings, duration, validate, whole
from kvviz.figures import MAX_LEGEND_ENTRIES
from kvviz.figures import bench as figs
from kvviz.memory.presets import get_preset

RESULT_KEY = "bench_result"  # this session's last finished benchmark (kept across reruns and errors)
BATCH_KEY = "bench_batch_result"
DEVICE_KEY = "bench_device_result"
DEVICE_SWEEP_BUDGET_S = 20.0  # the page's sweep stops adding contexts past this (the CLI's is 60 s)
PAGE_MAX_REPEATS = 10
PAGE_MAX_WARMUP = 5
MODEL_CHOICES = {
    loading.BUNDLED: "Bundled Tiny-Shakespeare GPT-2 (tiny: overhead-bound)",
    "random:gpt2": "GPT-2 124M shape, random weights (realistic size and timings)",
    "gpt2": "Pretrained GPT-2 124M (needs it in the local Hugging Face cache)",
}


def model_choice(default_spec: str) -> str:
    choices = dict(MODEL_CHOICES)
    if default_spec not in choices:
        choices[default_spec] = f"{default_spec} (the sidebar's model)"
    specs = list(choices)
    return st.selectbox(
        "Model", specs, index=specs.index(default_spec), format_func=choices.__getitem__, key="bench_model",
        help="Timings depend on the shapes, not on the weight values: random weights time like real ones.",
    )


def queue_notice(box):
    return lambda ahead: box.info(
        f"The benchmark is busy: {ahead} ahead of you. Yours starts as soon as they finish: two benchmarks "
        "sharing the same CPU cores would both measure nonsense.", icon=":material/hourglass_top:")


def run(spec: str, settings: BenchSettings, thread_reason: str) -> BenchResult | None:
    """Load, wait for the line, run with a progress bar; a one-line message (and None) instead of a traceback."""
    try:
        loaded = ui.cached_model(spec, "sdpa")
    except loading.ModelLoadError as exc:
        st.warning(f"{exc} Choose another model; earlier results are kept below.")
        return None
    from kvviz.speedup import harness  # torch: only now

    try:
        validate(settings, loaded.info.n_positions, loaded.info)
        # Bound the work, not each knob: the estimate from two timed passes of this model (issue 23)
        with st.spinner("Estimating this run's cost from two timed passes of the model..."):
            estimate_s = harness.refuse_over_budget(loaded, settings, PAGE_BUDGET_S)
    except BenchInputError as exc:
        st.error(str(exc))
        return None
    box = st.empty()
    # Any click reruns the page, and the harness re-reports its progress inside long passes, so the run ends
    # within a fraction of a second of a Stop (this button, Streamlit's own, or the tab being closed).
    st.button("Stop", key="bench_stop", icon=":material/stop:", help="Stop the benchmark; earlier results are kept")
    bar = st.progress(0.0, text=f"Waiting for the benchmark line... (this run: about {duration(estimate_s)})")
    try:
        result = harness.run_benchmark(loaded, settings, on_wait=queue_notice(box), thread_reason=thread_reason,
                                     progress=lambda f, text: (box.empty(), bar.progress(min(max(f, 0.0), 1.0), text)))
    except harness.BenchBusyError as exc:
        st.warning(str(exc))
        return None
    finally:
        bar.empty()
    return result


def mode_timing(result: BenchResult, name: str) -> Timing:
    """A mode's rounds as one Timing: the estimator's time (sum of the timed passes) of each round."""
    return Timing(tuple(r.passes_ms for r in result.mode(name).runs), result.machine.load_after[0])


def versus(result: BenchResult, name: str, over: str) -> Comparison:
    return Comparison(figs.SHORT_LABELS[name], mode_timing(result, name), figs.SHORT_LABELS[over],
                      mode_timing(result, over))


def speedup_metric(col, label: str, result: BenchResult, name: str, over: str = "no_cache") -> None:
    """A speed-up tile: the estimator, and "inside the noise" instead of a winner where the rounds overlap."""
    c = versus(result, name, over)
    col.metric(label, f"{result.speedup(name, over):.2f}x", "inside the noise" if c.inside_noise else None,
               delta_color="off", delta_arrow="off", help=f"Speed-up: {ESTIMATOR}. {c.sentence()}")


def render_results(result: BenchResult) -> None:
    s, m = result.settings, result.machine
    st.subheader("Results")
    st.caption(
        f"{result.model_label} · prompt {s.prompt_len} tokens, {s.new_tokens} new tokens, median of {s.repeats} "
        f"rounds (+{s.warmup} warm-up) · {m.cpu}, {m.physical_cores} cores, **{m.threads} torch threads: "
        f"{m.thread_reason}** · load {m.load_before[0]:.2f} before, {m.load_after[0]:.2f} after · torch "
        f"{m.torch_version}, transformers {m.transformers_version} · {m.dtype}, {m.attn_implementation}"
    )
    if not result.all_tokens_match:
        st.warning("Some exact modes generated different tokens from the no-cache run (see the table).")
    verdict = result.roofline_verdict("preallocated")
    # What students just learned first (transformers' DynamicCache vs no cache), kvviz's flat engine second.
    cols = st.container(key="bench_metrics").columns(4)
    speedup_metric(cols[0], "DynamicCache vs no cache", result, "dynamic")
    speedup_metric(cols[1], "Flat cache vs no cache", result, "preallocated")
    choice = result.weight_choice
    cols[2].metric("Weight format (measured)", choice.chosen,
                   f"{choice.margin:.2f}x faster than the other" if choice.margin else choice.how, delta_color="off")
    cols[3].metric("Flat cache, share of read roofline",
                   verdict.label, help=verdict.describe())
    st.caption("Each mode, the time for all tokens (median of the rounds, fastest-slowest): "
               + "; ".join(f"{figs.SHORT_LABELS[n]} {mode_timing(result, n).label()}"
                           for n in ("no_cache", "dynamic", "preallocated", "int8") if result.has(n))
               + f" · {load_label(m.load_after[0])} after the run.")
    if verdict.disturbed:
        st.warning(f"This run was **disturbed**: {verdict.describe()}. Run it again when the machine is quieter.")
    shown = [n for n in figs.HEADLINE_MODES if result.has(n)]
    modes = st.multiselect(
        f"Lines on the charts (at most {MAX_LEGEND_ENTRIES})", [x.mode for x in result.modes], default=shown,
        format_func=lambda n: figs.SHORT_LABELS.get(n, n), max_selections=MAX_LEGEND_ENTRIES, key="bench_lines",
        help="Every mode's numbers are in the table below; four lines keep a chart readable on a projector.")
    left, right = st.columns(2)
    left.plotly_chart(figs.latency_figure(result, modes=modes), key="bench_fig_latency")
    right.plotly_chart(figs.cumulative_figure(result, modes=modes), key="bench_fig_cumulative")
    left.plotly_chart(figs.speedup_figure(result, modes=modes), key="bench_fig_speedup")
    right.plotly_chart(figs.roofline_figure(result), key="bench_fig_roofline")
    explain(result)
    rows = tables.summary_rows(result)
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="bench_table", column_config={  # never "spee..."
        name: st.column_config.Column(width=max(90, 9 * len(name) + 24)) for name in rows[0] if name != "mode"})
    st.download_button("Download every timed pass (CSV)", tables.per_token_csv(result),
                       file_name="kvviz_bench.csv", mime="text/csv", key="bench_download")


def explain(result: BenchResult) -> None:
    """The paragraphs under the charts, every number from this run and the one named estimator."""
    s = result.settings
    measured, op_ratio = result.speedup("preallocated"), result.op_ratio[-1][1]
    roof = result.roofline_tokens_per_s()
    st.markdown(
        f"**Why the measured speed-up ({measured:.1f}x) is far below the op-count ratio ({op_ratio:.1f}x).** "
        f"(Both after {s.new_tokens} tokens; speed-up = {ESTIMATOR}.) The op ratio counts multiply-adds. Without "
        f"the cache, pass k multiplies every weight matrix by all {s.prompt_len}+k-1 token vectors at once, a "
        "**GEMM** (general matrix-matrix multiply): each weight byte fetched is reused for many tokens, so its "
        "**arithmetic intensity** (FLOPs done per byte moved from memory) is high and the CPU runs near its "
        "arithmetic peak (the right of the roofline). With the cache, pass k multiplies each matrix by one vector, "
        "a **GEMV** (general matrix-vector multiply): every 4-byte weight is fetched for one multiply-add, about "
        "0.5 FLOP per byte, so the CPU mostly waits for memory (the left). Reading "
        f"{result.weight_bytes_per_token / 1e6:.1f} MB of weights (+ {result.kv_bytes_per_token / 1e6:.2f} MB of "
        f"K/V) per token at {result.median_read_bytes_per_s / 1e9:.1f} GB/s (read probe) caps decoding at "
        f"{roof:.0f} tokens/s. On a tiny model the weights sit in the CPU caches and fixed per-layer overhead "
        "(Python, dispatch) dominates, which hurts the one-token passes most."
    )
    parts = []
    if result.has("static"):
        parts.append(f"pre-allocating the cache inside transformers (StaticCache vs DynamicCache) gives "
                     f"{result.speedup('static', 'dynamic'):.2f}x")
    if result.has("static"):
        parts.append(f"the flat engine over StaticCache (no mask or cache bookkeeping, weights {result.weight_choice.chosen}) "
                     f"{result.speedup('preallocated', 'static'):.2f}x")
    if result.weight_choice.margin:
        parts.append(f"the weight kernel alone: {result.weight_choice.describe()}")
    if parts:
        threads = result.machine.threads
        st.markdown(f"**Where the lead comes from (this run, {threads} thread{'s' if threads != 1 else ''}).** At these "
                    "lengths the cache layout buys little and the weight kernel decides: " + "; ".join(parts) + ".")
    if result.has("int8"):
        st.markdown(int8_note(result))


def int8_note(result: BenchResult) -> str:
    """Why int8 weights are slower or faster here, from this run's bytes, cache size and bandwidth."""
    c = versus(result, "int8", "preallocated")
    fp32_mb, int8_mb = result.bytes_per_token("preallocated") / 1e6, result.bytes_per_token("int8") / 1e6
    bw = result.median_read_bytes_per_s
    measured = (c.sentence() if c.inside_noise else
                f"int8 ran {result.speedup('int8', 'preallocated'):.2f}x the fp32 flat engine ({c.sentence()})")
    head = (f"**int8 weights.** Each decode token reads {int8_mb:.1f} MB instead of {fp32_mb:.1f} MB, and picks "
            f"the no-cache token {result.token_agreement('int8'):.0%} of the time. {measured} ")
    llc = result.machine.last_level_cache_bytes
    if result.weights_fit_in_cache:
        gpt2 = get_preset("gpt2").shape  # where int8 wins: weights that stream from DRAM
        weights = (gpt2.qkv_ops_per_token + gpt2.out_proj_ops_per_token + gpt2.mlp_ops_per_token
                   + gpt2.lm_head_ops_per_position)  # one weight per multiply-add of a decode step's matrices
        return head + (
            f"Here the fp32 weights fit in this CPU's {llc / 2**20:.0f} MiB last-level cache, so a decode step "
            "does not wait for memory and reading 4x fewer bytes saves nothing, while dynamic quantization adds "
            "work to every matrix call (quantize the activation vector, run the int8 kernel, convert the result "
            "back to fp32): on matrices this small that costs more than it saves. int8 wins where the weights "
            f"stream from memory: GPT-2 124M's matrices hold {weights:,} weights, {4 * weights / 1e6:.0f} MB in "
            f"fp32 and {weights / 1e6:.0f} MB in int8, so at the {bw / 1e9:.1f} GB/s read here the memory roof "
            f"allows {bw / (4 * weights):.0f} tokens/s in fp32 and {bw / weights:.0f} in int8. Choose the GPT-2 "
            "124M shape above to measure it."
        )
    return head + (
        f"Here the fp32 weights do not fit in the {llc / 2**20:.0f} MiB last-level cache: every decode step "
        f"streams them from memory, so 4x fewer bytes raise the read roof from {bw / 1e6 / fp32_mb:.0f} to "
        f"{bw / 1e6 / int8_mb:.0f} tokens/s at {bw / 1e9:.1f} GB/s; the extra work of quantizing each "
        "activation vector is small beside the bytes saved." if llc else
        f"Reading 4x fewer bytes raises the read roof from {bw / 1e6 / fp32_mb:.0f} to {bw / 1e6 / int8_mb:.0f} "
        f"tokens/s at {bw / 1e9:.1f} GB/s."
    )


def batch_section(spec: str, threads: int) -> None:
    st.subheader("Batched decode: when does the cache, not the weights, fill the memory bus?")
    with st.form("bench_batch_form"):
        c1, c2 = st.columns(2)
        max_batch = c1.slider("Largest batch", 1, 64, 16, key="bench_batch_max",
                              help="Measured at 1, 2, 4, ... up to this. Capped at 64.")
        context = c2.number_input("Context (cached tokens per sequence)", min_value=1, value=128, key="bench_batch_ctx",
                                  help="At most the model's positions - 1; K/V buffers capped at 1 GiB.")
        measure = st.form_submit_button("Measure batched decode", key="bench_batch_run")
    if measure:
        try:
            loaded = ui.cached_model(spec, "sdpa")
        except loading.ModelLoadError as exc:
            st.warning(f"{exc} Choose another model.")
            return
        from kvviz.speedup import harness, batch

        box, bar = st.empty(), st.progress(0.0, text="Waiting for the benchmark line...")
        try:
            batch.validate(loaded, int(max_batch), int(context))
            st.session_state[BATCH_KEY] = batch.run_batch_sweep(
                loaded, int(max_batch), int(context), threads, on_wait=queue_notice(box),
                progress=lambda f, text: (box.empty(), bar.progress(min(max(f, 0.0), 1.0), text)))
        except (BenchInputError, harness.BenchBusyError) as exc:
            st.error(str(exc))
        finally:
            bar.empty()
    sweep = st.session_state.get(BATCH_KEY)
    if sweep is not None:
        st.plotly_chart(figs.batch_figure(sweep), key="bench_fig_batch")
        first, last = sweep.points[0], sweep.points[-1]
        ridge = sweep.roofs.ridge_flop_per_byte
        st.markdown(
            f"One decode step reads the {first.step.weight_bytes / 1e6:.1f} MB of weights once for the whole batch, "
            f"so its intensity grows from {first.step.intensity:.2f} FLOP/byte at batch 1 to "
            f"{last.step.intensity:.2f} at batch {last.step.batch} (this machine's ridge point: {ridge:.1f}); "
            f"tokens/s went from {first.tokens_per_s:.0f} to {last.tokens_per_s:.0f} "
            f"({last.tokens_per_s / first.tokens_per_s:.1f}x for {last.step.batch}x the sequences). Each sequence "
            f"still reads its own {sweep.context} cached rows: from batch {sweep.kv_overtakes_at_batch} on, K/V "
            f"bytes exceed the weight bytes. {sweep.model_label}, {sweep.threads} threads, weights "
            f"{sweep.weight_format}."
        )


@st.cache_resource(show_spinner=False)
def offered_devices() -> tuple[list[str], str | None]:
    """The devices this machine can time on (cpu first), and why a GPU is not among them (once per process)."""
    from kvviz.speedup import device as devices  # torch: only when this section is drawn

    offered = devices.available()
    return offered, None if len(offered) > 1 else "cuda"


BOUND_LABELS = {"overhead": N_("launch overhead"), "bandwidth": N_("reading bytes")}


def device_section(spec: str) -> None:
    """The context sweep on a device (kvviz.speedup.accelerator): the cached step against the uncached pass as
    the cache grows, on the CPU or a GPU this machine has (only the devices found are offered)."""
    from kvviz.i18n import _

    st.subheader(_("As the context grows: one cached step against one uncached pass"))
    st.caption(_("At short context a decode step is bound by launch overhead (its time barely moves with the "
                 "context); at long context reading the cache dominates and the step grows with it. The uncached "
                 "pass over the same tokens is cheap until it is not. Each point: the median of 9 cached steps and "
                 "3 uncached passes, interleaved, on a private copy of the model."))
    offered, missing = offered_devices()
    with st.form("bench_device_form"):
        if len(offered) > 1:
            c1, c2 = st.columns(2)
            where = c1.selectbox(_("Device"), offered, key="bench_device")
            dtype = c2.selectbox(_("Weights and cache dtype"), ["float16", "bfloat16", "float32"], key="bench_device_dtype",
                                 help=_("A GPU runs float16 or bfloat16; on the CPU only float32 makes sense."))
        else:
            from kvviz.speedup import device as devices

            where, dtype = "cpu", "float32"
            st.caption(_("On this machine's CPU, float32. {reason}").format(reason=devices.unavailable_reason(missing)))
        measure = st.form_submit_button(_("Measure the context sweep"), key="bench_device_run")
    if measure:
        try:
            loaded = ui.cached_model(spec, "sdpa")
        except loading.ModelLoadError as exc:
            st.warning(_("{error} Choose another model.").format(error=exc))
            return
        from kvviz.speedup import accelerator, harness
        from kvviz.speedup import device as devices

        problem = devices.unavailable_reason(where) or devices.dtype_problem(where, dtype)
        if problem:
            st.error(problem)
            return
        box = st.empty()
        try:
            with harness.hold_turn(on_wait=queue_notice(box)), st.spinner(_("Measuring on {device}...").format(device=where)):
                box.empty()
                load_before = load_avg_1min()
                st.session_state[DEVICE_KEY] = (accelerator.run_device_benchmark(
                    loaded.model, loaded.info.label, harness.prompt_token_ids(loaded, 16), 16, where, dtype,
                    repeats=3, warmup=1, sweep_budget_s=DEVICE_SWEEP_BUDGET_S), load_before)
        except (harness.BenchBusyError, devices.DeviceUnavailable, ValueError) as exc:
            st.error(str(exc))
    if st.session_state.get(DEVICE_KEY) is None:
        return
    result, load_before = st.session_state[DEVICE_KEY]
    from kvviz.figures.device import context_sweep_figure
    from kvviz.figures import export_config

    st.caption(_("Measured on {device}; {model}; machine load {load}.").format(
        device=result.device.describe(), model=result.model_label, load=load_label(load_before)))
    if result.sweep:
        st.plotly_chart(context_sweep_figure(result.sweep, result.device.kind), key="bench_fig_device_sweep",
                        config=export_config("kvviz_context_sweep"))
        st.dataframe(pd.DataFrame([{
            _("cached tokens"): p.context,
            _("cached step, ms"): round(p.cached_ms, 3),
            _("uncached pass, ms"): round(p.uncached_median_ms, 3),
            _("uncached / cached"): round(p.ratio, 1),
            _("cache's share of bytes read"): f"{p.kv_bytes_read / p.bytes_read:.0%}",
            _("of the read roof"): f"{p.roof_fraction:.0%}" + ("*" if p.beats_roof else ""),
            _("bound by"): _(BOUND_LABELS[p.bound]),
        } for p in result.sweep]), hide_index=True, key="bench_device_sweep_table")
        if any(p.beats_roof for p in result.sweep):
            st.caption(_("* moved more bytes per second than the read probe measured (caches helped): shown as 100%."))
    for note in result.sweep_notes:
        st.caption(_("Left out: {note}").format(note=note))
    st.dataframe(pd.DataFrame([{
        _("mode"): _(m.label),
        _("decode tokens/s (median)"): round(sorted(m.decode_tokens_per_s)[len(m.decode_tokens_per_s) // 2], 1),
        _("x no cache"): round(result.speedup(m.mode), 2),
        _("of the read roof"): f"{result.roof_fraction(m.mode):.0%}",
        _("same tokens as no cache"): _("yes") if result.tokens_match(m.mode) else _("no"),
    } for m in result.modes]), hide_index=True, key="bench_device_modes_table")
    for name, reason in result.skipped.items():
        st.caption(_("Not run: {mode}: {reason}").format(mode=_(MODE_LABELS.get(name, name)), reason=_(reason)))


ui.ensure_router()  # before anything is drawn: see its docstring
st.title("Measured speed-up")
st.html("<style>:is(.st-key-bench_metrics) :is([data-testid='stMetricValue'], [data-testid='stMetricLabel']) * "
        "{white-space: normal !important; overflow: visible !important; text-overflow: clip !important}</style>")
with st.expander("What you are seeing", expanded=False):
    st.markdown(
        "We time the **same greedy generation** several ways on this machine and check they pick the same tokens:\n"
        "1. **No cache**: every step feeds the whole text again and recomputes every key and value.\n"
        "2. **DynamicCache**: transformers' default; each step feeds one token and *appends* its K/V rows.\n"
        "3. **StaticCache**: transformers' pre-allocated cache, written in place.\n"
        "4. **Flat pre-allocated cache** (`kvviz/speedup/flat_engine.py`, short enough to read): one buffer for all "
        "layers, a lean loop, and the weight format **measured** fastest on this CPU at the start of the run.\n"
        "5. **int8 weights**: the same engine with torch's dynamic quantization, 4x fewer weight bytes.\n\n"
        "Dotted lines are plain `model.generate(...)`. Token 1 is the **prefill** (the whole prompt in one pass). "
        f"Every speed-up on this page is one estimator: {ESTIMATOR}.\n\n"
        "The **roofline** plots each pass at its **arithmetic intensity** (FLOPs done per byte moved from "
        "memory) against the FLOP/s it reached, under two roofs measured here: peak FLOP/s (a large matmul) and "
        "read bandwidth (probed in every round, beside the runs). A cached decode step is a **GEMV** (each "
        "weight matrix times one vector: ~0.5 FLOP per fp32 weight byte) and sits far left, memory-bound; the "
        "prefill and uncached passes are **GEMMs** (matrix times many token vectors, each weight reused) and sit "
        "to the right. If a round ever looks faster than memory allows, the run is marked **disturbed** instead.\n\n"
        "Every time shown is a median of the rounds with its fastest-slowest spread and the machine's load; "
        "where two modes' rounds overlap, the page says **inside the noise** instead of naming a winner."
    )

sidebar_spec = st.session_state.get(ui.MODEL_SPEC_KEY, loading.BUNDLED)
auto_threads, auto_reason = machine.default_thread_count(ui.other_active_sessions())
with st.form("bench_form"):
    spec = model_choice(sidebar_spec)
    c1, c2, c3 = st.columns(3)
    prompt_len = c1.number_input("Prompt tokens", min_value=1, value=16, key="bench_prompt_len",
                                 help="Prompt + new tokens must fit the model's positions (256 bundled, 1024 GPT-2).")
    new_tokens = c2.number_input("New tokens", min_value=1, value=64, key="bench_new_tokens")
    repeats = c3.number_input("Rounds", min_value=1, value=3, key="bench_repeats",
                              help=f"Medians over rounds; at most {PAGE_MAX_REPEATS}.")
    with st.expander("Advanced"):
        a1, a2 = st.columns(2)
        threads = a1.number_input("Torch threads", min_value=1, value=None, key="bench_threads",
                                  placeholder=f"auto ({auto_threads})",
                                  help=f"Empty: {auto_reason}. At most {machine.MAX_THREADS}.")
        warmup = a2.number_input("Warm-up runs", min_value=0, value=1, key="bench_warmup",
                                 help=f"At most {PAGE_MAX_WARMUP}.")
        include_generate = st.checkbox("Also time model.generate(use_cache=True)", True, key="bench_generate")
        include_generate_no_cache = st.checkbox("... and model.generate(use_cache=False) (slow)", False,
                                                key="bench_generate_no_cache")
        weight_format = st.radio("Flat engine weights", ["auto", "stored", "onednn"], horizontal=True,
                                 key="bench_weight_format", help="auto: measure both here and keep the faster.")
    submitted = st.form_submit_button("Run benchmark", type="primary", key="bench_run")
st.caption("Defaults: the bundled model takes about 10 s on a busy 2-core laptop, the GPT-2 124M shape about a minute.")

if submitted:
    try:
        whole("Rounds", int(repeats), 1, PAGE_MAX_REPEATS)
        whole("Warm-up runs", int(warmup), 0, PAGE_MAX_WARMUP)
        if threads is not None:
            whole("Torch threads", int(threads), 1, machine.MAX_THREADS)
    except BenchInputError as exc:
        st.error(str(exc))
    else:
        settings = BenchSettings(
            prompt_len=int(prompt_len), new_tokens=int(new_tokens), repeats=int(repeats), warmup=int(warmup),
            threads=auto_threads if threads is None else int(threads), include_generate=include_generate,
            include_generate_no_cache=include_generate_no_cache, weight_format=weight_format,
        )
        result = run(spec, settings, auto_reason if threads is None else "set by you")
        if result is not None:
            st.session_state[RESULT_KEY] = result

if st.session_state.get("bench_stop"):
    st.info("The benchmark was stopped: nothing was measured. Earlier results are kept below.")
result = st.session_state.get(RESULT_KEY)
if result is None:
    st.info("Choose a model and lengths, then press **Run benchmark**. The bundled model finishes in seconds.")
else:
    try:
        render_results(result)
    except Exception as exc:  # noqa: BLE001 - a result that cannot be shown must not stick to every rerun
        st.session_state.pop(RESULT_KEY, None)
        st.error(f"This run's results could not be shown ({type(exc).__name__}); they were dropped. Run it again "
                 "with other settings.")
    else:
        batch_section(result.model_spec, result.machine.threads)

device_section(st.session_state.get("bench_model", sidebar_spec))
