"""Measured speed-up: the same greedy generation with no cache, transformers' caches and a flat pre-allocated
cache, timed side by side on this machine; the roofline it runs under; batched decode.

Results live in this session only (never cached across sessions: another user's timings are not yours).
The harness (kvviz.speedup.harness, which imports torch) is imported only when a run is asked for.
"""

from __future__ import annotations

import sys

import pandas as pd
import streamlit as st

from kvviz import i18n
from kvviz.figures import MAX_LEGEND_ENTRIES
from kvviz.figures import bench as figs
from kvviz.i18n import N_, _, list_sep, ngettext, numbers, text_width
from kvviz.measure.load import load_avg_1min, load_label, load_number
from kvviz.measure.timing import Comparison, Timing
from kvviz.memory.presets import get_preset
from kvviz.model import loading
from kvviz.speedup import machine, tables
from kvviz.speedup.records import ESTIMATOR, MODE_LABELS, BenchResult, format_name
from kvviz.speedup.settings import (
    BATCH_CONTEXT,
    LARGEST_BATCH,
    NEW_TOKENS,
    PAGE_BUDGET_S,
    PAGE_ROUNDS,
    PAGE_WARMUP,
    PROMPT_LEN,
    WEIGHT_FORMAT_CHOICES,
    BenchInputError,
    BenchSettings,
    duration,
    validate,
)
from kvviz.ui import a11y, assets, bounded, models, router

RESULT_KEY = "bench_result"  # this session's last finished benchmark (kept across reruns and errors)
BATCH_KEY = "bench_batch_result"
DEVICE_KEY = "bench_device_result"
DEVICE_SWEEP_BUDGET_S = 20.0  # the page's sweep stops adding contexts past this (the CLI's is 60 s)
MODEL_CHOICES = {
    loading.BUNDLED: N_("Bundled Tiny-Shakespeare GPT-2 (tiny: overhead-bound)"),
    "random:gpt2": N_("GPT-2 124M shape, random weights (realistic size and timings)"),
    "gpt2": N_("Pretrained GPT-2 124M (needs it in the local Hugging Face cache)"),
}
MODE_ORDER = ("no_cache", "dynamic", "preallocated", "int8")  # the modes of the timing caption


def model_choice(default_spec: str) -> str:
    choices = {spec: _(label) for spec, label in MODEL_CHOICES.items()}
    if default_spec not in choices:
        choices[default_spec] = _("{spec} (the sidebar's model)").format(spec=default_spec)
    specs = list(choices)
    return st.selectbox(
        _("Model"),
        specs,
        index=specs.index(default_spec),
        format_func=choices.__getitem__,
        key="bench_model",
        help=_("Timings depend on the shapes, not on the weight values: random weights time like real ones."),
    )


def model_or_warning(spec: str) -> loading.LoadedModel | None:
    """The model a section measures, or None with a one-line warning (the section's earlier results stay)."""
    try:
        return models.cached_model(spec, "sdpa")
    except loading.ModelLoadError as exc:
        st.warning(_("{error} Choose another model.").format(error=exc))
        return None


def queue_notice(box):
    return lambda ahead: box.info(
        _(
            "The benchmark is busy: {ahead} ahead of you. Yours starts as soon as they finish: two benchmarks "
            "sharing the same CPU cores would both measure nonsense."
        ).format(ahead=ahead),
        icon=":material/hourglass_top:",
    )


def run(spec: str, settings: BenchSettings, thread_reason: str) -> BenchResult | None:
    """Load, wait for the line, run with a progress bar; a one-line message (and None) instead of a traceback."""
    try:
        loaded = models.cached_model(spec, "sdpa")
    except loading.ModelLoadError as exc:
        st.warning(_("{error} Choose another model; earlier results are kept below.").format(error=exc))
        return None
    from kvviz.speedup import harness  # torch: only now

    try:
        validate(settings, loaded.info.n_positions, loaded.info)
        # Bound the work, not each knob: the estimate from two timed passes of this model
        with st.spinner(_("Estimating this run's cost from two timed passes of the model...")):
            estimate_s = harness.refuse_over_budget(loaded, settings, PAGE_BUDGET_S)
    except BenchInputError as exc:
        st.error(str(exc))
        return None
    box = st.empty()
    # Any click reruns the page, and the harness re-reports its progress inside long passes, so the run ends
    # within a fraction of a second of a Stop (this button, Streamlit's own, or the tab being closed).
    st.button(
        _("Stop"), key="bench_stop", icon=":material/stop:", help=_("Stop the benchmark; earlier results are kept")
    )
    bar = st.progress(
        0.0,
        text=_("Waiting for the benchmark line... (this run: about {duration})").format(duration=duration(estimate_s)),
    )
    try:
        result = harness.run_benchmark(
            loaded,
            settings,
            on_wait=queue_notice(box),
            thread_reason=thread_reason,
            progress=lambda f, text: (box.empty(), bar.progress(min(max(f, 0.0), 1.0), text)),
        )
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
    return Comparison(
        figs.short_label(name), mode_timing(result, name), figs.short_label(over), mode_timing(result, over)
    )


def speedup_metric(col, label: str, result: BenchResult, name: str, over: str = "no_cache") -> None:
    """A speed-up tile: the estimator, and "inside the noise" instead of a winner where the rounds overlap."""
    c = versus(result, name, over)
    col.metric(
        label,
        numbers.ratio(result.speedup(name, over), ".2f"),
        _("inside the noise") if c.inside_noise else None,
        delta_color="off",
        delta_arrow="off",
        help=_("Speed-up: {estimator}. {verdict}").format(estimator=_(ESTIMATOR), verdict=c.sentence()),
    )


def render_results(result: BenchResult) -> None:
    s, m = result.settings, result.machine
    st.header(_("Results"))
    st.caption(
        _(
            "{model} · prompt {prompt} tokens, {new} new tokens, median of {repeats} rounds (+{warmup} warm-up) · "
            "{cpu}, {cores} cores, **{threads} torch threads: {reason}** · load {load_before} before, "
            "{load_after} after · torch {torch}, transformers {transformers} · {dtype}, {attn}"
        ).format(
            model=i18n.shown_english(result.model_label),
            prompt=s.prompt_len,
            new=s.new_tokens,
            repeats=s.repeats,
            warmup=s.warmup,
            cpu=m.cpu,
            cores=m.physical_cores,
            threads=m.threads,
            reason=_(m.thread_reason),
            load_before=load_number(m.load_before[0]),
            load_after=load_number(m.load_after[0]),
            torch=m.torch_version,
            transformers=m.transformers_version,
            dtype=m.dtype,
            attn=m.attn_implementation,
        )
    )
    if not result.all_tokens_match:
        st.warning(_("Some exact modes generated different tokens from the no-cache run (see the table)."))
    verdict = result.roofline_verdict("preallocated")
    # What students just learned first (transformers' DynamicCache vs no cache), kvviz's flat engine second.
    cols = st.container(key="bench_metrics").columns(4)
    speedup_metric(cols[0], _("DynamicCache vs no cache"), result, "dynamic")
    speedup_metric(cols[1], _("Flat cache vs no cache"), result, "preallocated")
    choice = result.weight_choice
    cols[2].metric(
        _("Weight format (measured)"),
        format_name(choice.chosen, with_code=False),
        _("{margin:.2f}x faster than the other").format(margin=choice.margin) if choice.margin else _(choice.how),
        delta_color="off",
        help=_("The setting's value (Advanced, and the CLI's --weight-format): {code}").format(code=choice.chosen),
    )
    cols[3].metric(_("Flat cache, share of read roofline"), verdict.label, help=verdict.describe())
    timings = [(figs.short_label(n), mode_timing(result, n).label()) for n in MODE_ORDER if result.has(n)]
    st.caption(
        _(
            "Each mode, the time for all tokens (median of the rounds, fastest-slowest): {timings} · {load} "
            "after the run."
        ).format(timings=list_sep().join(f"{name} {t}" for name, t in timings), load=load_label(m.load_after[0]))
    )
    if verdict.disturbed:
        st.warning(
            _("This run was **disturbed**: {why}. Run it again when the machine is quieter.").format(
                why=verdict.describe()
            )
        )
    shown = [n for n in figs.HEADLINE_MODES if result.has(n)]
    modes = st.multiselect(
        _("Lines on the charts (at most {n})").format(n=MAX_LEGEND_ENTRIES),
        [x.mode for x in result.modes],
        default=shown,
        format_func=figs.short_label,
        max_selections=MAX_LEGEND_ENTRIES,
        key="bench_lines",
        placeholder=_("Choose options"),
        help=_("Every mode's numbers are in the table below; four lines keep a chart readable on a projector."),
    )
    left, right = st.columns(2)
    a11y.chart(left, figs.latency_figure(result, modes=modes), key="bench_fig_latency")
    a11y.chart(right, figs.cumulative_figure(result, modes=modes), key="bench_fig_cumulative")
    a11y.chart(left, figs.speedup_figure(result, modes=modes), key="bench_fig_speedup")
    a11y.chart(right, figs.roofline_figure(result), key="bench_fig_roofline")
    explain(result)
    rows = tables.summary_rows(result)
    st.dataframe(
        pd.DataFrame(rows),
        hide_index=True,
        key="bench_table",
        column_config={  # never "spee..."
            name: st.column_config.Column(width=max(90, 9 * text_width(name) + 24)) for name in list(rows[0])[1:]
        },
    )
    st.download_button(
        _("Download every timed pass (CSV)"),
        tables.per_token_csv(result),
        file_name="kvviz_bench.csv",
        mime="text/csv",
        key="bench_download",
    )


def explain(result: BenchResult) -> None:
    """The paragraphs under the charts, every number from this run and the one named estimator."""
    s = result.settings
    measured, op_ratio = result.speedup("preallocated"), result.op_ratio[-1][1]
    roof = result.roofline_tokens_per_s()
    st.markdown(
        _(
            "**Why the measured speed-up ({measured:.1f}x) is far below the op-count ratio ({op_ratio:.1f}x).** "
            "({after}; speed-up = {estimator}.) The op ratio counts multiply-adds. Without "
            "the cache, pass k multiplies every weight matrix by all {prompt}+k-1 token vectors at once, a "
            "**GEMM** (general matrix-matrix multiply): each weight byte fetched is reused for many tokens, so its "
            "**arithmetic intensity** (FLOPs done per byte moved from memory) is high and the CPU runs near its "
            "arithmetic peak (the right of the roofline). With the cache, pass k multiplies each matrix by one vector, "
            "a **GEMV** (general matrix-vector multiply): every 4-byte weight is fetched for one multiply-add, about "
            "0.5 FLOP per byte, so the CPU mostly waits for memory (the left). Reading "
            "{weight_mb:.1f} MB of weights (+ {kv_mb:.2f} MB of K/V) per token at {gb_s:.1f} GB/s (read probe) caps "
            "decoding at {roof:.0f} tokens/s. On a tiny model the weights sit in the CPU caches and fixed per-layer "
            "overhead (Python, dispatch) dominates, which hurts the one-token passes most."
        ).format(
            measured=measured,
            op_ratio=op_ratio,
            estimator=_(ESTIMATOR),
            prompt=s.prompt_len,
            after=ngettext("Both after {n} token", "Both after {n} tokens", s.new_tokens).format(n=s.new_tokens),
            weight_mb=result.weight_bytes_per_token / 1e6,
            kv_mb=result.kv_bytes_per_token / 1e6,
            gb_s=result.median_read_bytes_per_s / 1e9,
            roof=roof,
        )
    )
    parts = []
    if result.has("static"):
        parts.append(
            _("pre-allocating the cache inside transformers (StaticCache vs DynamicCache) gives {ratio:.2f}x").format(
                ratio=result.speedup("static", "dynamic")
            )
        )
        parts.append(
            _("the flat engine over StaticCache (no mask or cache bookkeeping, weights {format}) {ratio:.2f}x").format(
                format=format_name(result.weight_choice.chosen), ratio=result.speedup("preallocated", "static")
            )
        )
    if result.weight_choice.margin:
        parts.append(_("the weight kernel alone: {kernel}").format(kernel=result.weight_choice.describe()))
    if parts:
        threads = result.machine.threads
        st.markdown(
            ngettext(
                "**Where the lead comes from (this run, {threads} thread).** At these lengths the cache layout buys "
                "little and the weight kernel decides: {parts}.",
                "**Where the lead comes from (this run, {threads} threads).** At these lengths the cache layout buys "
                "little and the weight kernel decides: {parts}.",
                threads,
            ).format(threads=threads, parts=list_sep().join(parts))
        )
    if result.has("int8"):
        st.markdown(int8_note(result))


def int8_note(result: BenchResult) -> str:
    """Why int8 weights are slower or faster here, from this run's bytes, cache size and bandwidth."""
    c = versus(result, "int8", "preallocated")
    fp32_mb, int8_mb = result.bytes_per_token("preallocated") / 1e6, result.bytes_per_token("int8") / 1e6
    bw = result.median_read_bytes_per_s
    measured = (
        c.sentence()
        if c.inside_noise
        else _("int8 ran {ratio:.2f}x the fp32 flat engine ({verdict})").format(
            ratio=result.speedup("int8", "preallocated"), verdict=c.sentence()
        )
    )
    head = _(
        "**int8 weights.** Each decode token reads {int8_mb:.1f} MB instead of {fp32_mb:.1f} MB, and picks "
        "the no-cache token {agreement:.0%} of the time. {measured}"
    ).format(int8_mb=int8_mb, fp32_mb=fp32_mb, agreement=result.token_agreement("int8"), measured=measured)
    llc = result.machine.last_level_cache_bytes
    if result.weights_fit_in_cache:
        gpt2 = get_preset("gpt2").shape  # where int8 wins: weights that stream from DRAM
        weights = (
            gpt2.qkv_ops_per_token
            + gpt2.out_proj_ops_per_token
            + gpt2.mlp_ops_per_token
            + gpt2.lm_head_ops_per_position
        )  # one weight per multiply-add of a decode step's matrices
        return (
            head
            + " "
            + _(
                "Here the fp32 weights fit in this CPU's {llc_mib:.0f} MiB last-level cache, so a decode step "
                "does not wait for memory and reading 4x fewer bytes saves nothing, while dynamic quantization adds "
                "work to every matrix call (quantize the activation vector, run the int8 kernel, convert the result "
                "back to fp32): on matrices this small that costs more than it saves. int8 wins where the weights "
                "stream from memory: GPT-2 124M's matrices hold {weights:,} weights, {fp32_total:.0f} MB in "
                "fp32 and {int8_total:.0f} MB in int8, so at the {gb_s:.1f} GB/s read here the memory roof "
                "allows {fp32_roof:.0f} tokens/s in fp32 and {int8_roof:.0f} in int8. Choose the GPT-2 "
                "124M shape above to measure it."
            ).format(
                llc_mib=llc / 2**20,
                weights=weights,
                fp32_total=4 * weights / 1e6,
                int8_total=weights / 1e6,
                gb_s=bw / 1e9,
                fp32_roof=bw / (4 * weights),
                int8_roof=bw / weights,
            )
        )
    if llc:
        return (
            head
            + " "
            + _(
                "Here the fp32 weights do not fit in the {llc_mib:.0f} MiB last-level cache: every decode step "
                "streams them from memory, so 4x fewer bytes raise the read roof from {fp32_roof:.0f} to "
                "{int8_roof:.0f} tokens/s at {gb_s:.1f} GB/s; the extra work of quantizing each "
                "activation vector is small beside the bytes saved."
            ).format(llc_mib=llc / 2**20, fp32_roof=bw / 1e6 / fp32_mb, int8_roof=bw / 1e6 / int8_mb, gb_s=bw / 1e9)
        )
    return (
        head
        + " "
        + _(
            "Reading 4x fewer bytes raises the read roof from {fp32_roof:.0f} to {int8_roof:.0f} "
            "tokens/s at {gb_s:.1f} GB/s."
        ).format(fp32_roof=bw / 1e6 / fp32_mb, int8_roof=bw / 1e6 / int8_mb, gb_s=bw / 1e9)
    )


def batch_section(spec: str, threads: int) -> None:
    st.header(_("Batched decode: when does the cache, not the weights, fill the memory bus?"))
    with st.form("bench_batch_form"):
        c1, c2 = st.columns(2)
        # Each input has its setting's bounds; a value past them (sent by a client) is named and nothing runs.
        refused: list[str] = []
        bounded.guard(c1, LARGEST_BATCH, "bench_batch_max", refused=refused, reset=False)  # a slider: its value
        max_batch = c1.slider(
            _("Largest batch"),
            LARGEST_BATCH.lo,
            LARGEST_BATCH.hi,
            LARGEST_BATCH.default,
            key="bench_batch_max",
            help=_("Measured at 1, 2, 4, ... up to this. Capped at 64."),
        )
        context = bounded.number(
            c2,
            BATCH_CONTEXT,
            _("Context (cached tokens per sequence)"),
            key="bench_batch_ctx",
            refused=refused,
            help=_("At most the model's positions - 1; K/V buffers capped at 1 GiB."),
        )
        measure = st.form_submit_button(_("Measure batched decode"), key="bench_batch_run")
    if measure and not refused:
        loaded = model_or_warning(spec)
        if loaded is None:
            return
        from kvviz.speedup import batch, harness

        box, bar = st.empty(), st.progress(0.0, text=_("Waiting for the benchmark line..."))
        try:
            batch.validate(loaded, int(max_batch), int(context))
            st.session_state[BATCH_KEY] = batch.run_batch_sweep(
                loaded,
                int(max_batch),
                int(context),
                threads,
                on_wait=queue_notice(box),
                progress=lambda f, text: (box.empty(), bar.progress(min(max(f, 0.0), 1.0), text)),
            )
        except (BenchInputError, harness.BenchBusyError) as exc:
            st.error(str(exc))
        finally:
            bar.empty()
    sweep = st.session_state.get(BATCH_KEY)
    if sweep is not None:
        a11y.chart(st, figs.batch_figure(sweep), key="bench_fig_batch")
        first, last = sweep.points[0], sweep.points[-1]
        ridge = sweep.roofs.ridge_flop_per_byte
        st.markdown(
            _(
                "One decode step reads the {weight_mb:.1f} MB of weights once for the whole batch, so its intensity "
                "grows from {first_intensity:.2f} FLOP/byte at batch 1 to {last_intensity:.2f} at batch {last_batch} "
                "(this machine's ridge point: {ridge:.1f}); tokens/s went from {first_tps:.0f} to {last_tps:.0f} "
                "({gain:.1f}x for {last_batch}x the sequences). Each sequence still reads its own {context} cached "
                "rows: from batch {overtake} on, K/V bytes exceed the weight bytes. {model}, {threads} threads, "
                "weights {format}."
            ).format(
                weight_mb=first.step.weight_bytes / 1e6,
                first_intensity=first.step.intensity,
                last_intensity=last.step.intensity,
                last_batch=last.step.batch,
                ridge=ridge,
                first_tps=first.tokens_per_s,
                last_tps=last.tokens_per_s,
                gain=last.tokens_per_s / first.tokens_per_s,
                context=sweep.context,
                overtake=sweep.kv_overtakes_at_batch,
                model=i18n.shown_english(sweep.model_label),
                threads=sweep.threads,
                format=format_name(sweep.weight_format),
            )
        )


@st.cache_resource(show_spinner=False)
def _probe_devices() -> tuple[str, ...]:
    """The devices found, probed once per process. Only them: the reason a GPU is missing is a sentence, written in
    the language of whoever reads it (cached here, it would reach every reader in the first reader's language)."""
    from kvviz.speedup import device as devices

    return tuple(devices.available())


def offered_devices() -> tuple[list[str], str | None]:
    """The devices this machine can time on (cpu first), and why no GPU is among them (probed once per process).
    Never imports torch for a first render: until it is imported (the app's warm-up thread does within seconds,
    any run does), only the CPU is offered and nothing is said about GPUs."""
    if "torch" not in sys.modules:
        return ["cpu"], None
    from kvviz.speedup import device as devices

    offered = list(_probe_devices())
    return offered, None if len(offered) > 1 else devices.unavailable_reason("cuda")


def device_section(spec: str) -> None:
    """The context sweep on a device (kvviz.speedup.accelerator): the cached step against the uncached pass as
    the cache grows, on the CPU or a GPU this machine has (only the devices found are offered)."""

    st.header(_("As the context grows: one cached step against one uncached pass"))
    st.caption(
        _(
            "At short context most of a decode step's time is not explained by reading its bytes (on a GPU: "
            "launching kernels; on a CPU: Python, small ops, other processes): its time barely moves with the "
            "context. At long context reading the cache dominates and the step grows with it. The uncached pass "
            "over the same tokens is cheap until it is not. Each point: the median of 9 cached steps and 3 "
            'uncached passes, interleaved, on a private copy of the model. "Bound by" is named only when the '
            "step's whole slowest-fastest range of the read roof falls in one zone: under 15% (time not "
            "explained by reading bytes), a third or more (reading the weights or the cache, whichever is most "
            'of the bytes), or between (neither dominates); otherwise "unclear within the spread".'
        )
    )
    offered, no_gpu_reason = offered_devices()
    with st.form("bench_device_form"):
        if len(offered) > 1:
            c1, c2 = st.columns(2)
            where = c1.selectbox(_("Device"), offered, key="bench_device")
            dtype = c2.selectbox(
                _("Weights and cache dtype"),
                ["float16", "bfloat16", "float32"],
                key="bench_device_dtype",
                help=_("A GPU runs float16 or bfloat16; on the CPU only float32 makes sense."),
            )
        else:
            where, dtype = "cpu", "float32"
            st.caption(_("On this machine's CPU, float32. {reason}").format(reason=no_gpu_reason or ""))
        measure = st.form_submit_button(_("Measure the context sweep"), key="bench_device_run")
    if measure:
        loaded = model_or_warning(spec)
        if loaded is None:
            return
        from kvviz.speedup import accelerator, harness
        from kvviz.speedup import device as devices

        problem = devices.unavailable_reason(where) or devices.dtype_problem(where, dtype)
        if problem:
            st.error(problem)
            return
        box = st.empty()
        try:
            with (
                harness.hold_turn(on_wait=queue_notice(box)),
                st.spinner(_("Measuring on {device}...").format(device=where)),
            ):
                box.empty()
                load_before = load_avg_1min()
                st.session_state[DEVICE_KEY] = (
                    accelerator.run_device_benchmark(
                        loaded,
                        harness.prompt_token_ids(loaded, 16),
                        16,
                        where,
                        dtype,
                        repeats=3,
                        warmup=1,
                        sweep_budget_s=DEVICE_SWEEP_BUDGET_S,
                    ),
                    load_before,
                )
        except (harness.BenchBusyError, devices.DeviceUnavailable, ValueError) as exc:
            st.error(str(exc))
    if st.session_state.get(DEVICE_KEY) is None:
        return
    result, load_before = st.session_state[DEVICE_KEY]
    from kvviz.figures import export_config
    from kvviz.figures.device import context_sweep_figure
    from kvviz.speedup.accelerator import BOUND_NAMES

    st.caption(
        _("Measured on {device}; {model}; machine load {load}.").format(
            device=result.device.describe(), model=i18n.shown_english(result.model_label), load=load_label(load_before)
        )
    )
    if result.sweep:
        a11y.chart(
            st,
            context_sweep_figure(result.sweep, result.device.kind),
            key="bench_fig_device_sweep",
            config=export_config("kvviz_context_sweep"),
        )
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        _("cached tokens"): p.context,
                        _("cached step, ms"): round(p.cached_ms, 3),
                        _("uncached pass, ms"): round(p.uncached_median_ms, 3),
                        _("uncached / cached"): round(p.ratio, 1),
                        _("cache's share of bytes read"): f"{p.kv_bytes_read / p.bytes_read:.0%}",
                        _("of the read roof"): f"{p.roof_fraction:.0%}" + ("*" if p.beats_roof else ""),
                        _("read roof, slowest-fastest"): numbers.span(
                            *(f"{min(1.0, x):.0%}" for x in p.read_share_range)
                        ),
                        _("bound by"): _(BOUND_NAMES[p.bound]),
                    }
                    for p in result.sweep
                ]
            ),
            hide_index=True,
            key="bench_device_sweep_table",
        )
        if any(p.beats_roof for p in result.sweep):
            st.caption(_("* moved more bytes per second than the read probe measured (caches helped): shown as 100%."))
    for note in result.sweep_notes:
        st.caption(_("Left out: {note}").format(note=note))
    st.dataframe(
        pd.DataFrame(
            [
                {
                    _("mode"): _(m.label),
                    _("decode tokens/s (median)"): round(
                        sorted(m.decode_tokens_per_s)[len(m.decode_tokens_per_s) // 2], 1
                    ),
                    _("x no cache"): round(result.speedup(m.mode), 2),
                    _("of the read roof"): f"{result.roof_fraction(m.mode):.0%}",
                    _("same tokens as no cache"): _("yes") if result.tokens_match(m.mode) else _("no"),
                }
                for m in result.modes
            ]
        ),
        hide_index=True,
        key="bench_device_modes_table",
    )
    for name, reason in result.skipped.items():
        st.caption(_("Not run: {mode}: {reason}").format(mode=_(MODE_LABELS.get(name, name)), reason=_(reason)))


router.ensure_router()  # before anything is drawn: see its docstring
st.title(_("Measured speed-up"))
st.html(assets.style("metric_wrap.css"))  # metric values wrap, never cut short
with st.expander(_("What you are seeing"), expanded=False):
    st.markdown(
        _(
            "We time the **same greedy generation** several ways on this machine and check they pick the same tokens:\n"
            "1. **No cache**: every step feeds the whole text again and recomputes every key and value.\n"
            "2. **DynamicCache**: transformers' default; each step feeds one token and *appends* its K/V rows.\n"
            "3. **StaticCache**: transformers' pre-allocated cache, written in place.\n"
            "4. **Flat pre-allocated cache** (`kvviz/speedup/flat_engine.py`, short enough to read): one buffer for all "
            "layers, a lean loop, and the weight format **measured** fastest on this CPU at the start of the run.\n"
            "5. **int8 weights**: the same engine with torch's dynamic quantization, 4x fewer weight bytes.\n\n"
            "Dotted lines are plain `model.generate(...)`. Token 1 is the **prefill** (the whole prompt in one pass). "
            "Every speed-up on this page is one estimator: {estimator}.\n\n"
            "The **roofline** plots each pass at its **arithmetic intensity** (FLOPs done per byte moved from "
            "memory) against the FLOP/s it reached, under two roofs measured here: peak FLOP/s (a large matmul) and "
            "read bandwidth (probed in every round, beside the runs). A cached decode step is a **GEMV** (each "
            "weight matrix times one vector: ~0.5 FLOP per fp32 weight byte) and sits far left, memory-bound; the "
            "prefill and uncached passes are **GEMMs** (matrix times many token vectors, each weight reused) and sit "
            "to the right. If a round ever looks faster than memory allows, the run is marked **disturbed** instead.\n\n"
            "Every time shown is a median of the rounds with its fastest-slowest spread and the machine's load; "
            "where two modes' rounds overlap, the page says **inside the noise** instead of naming a winner."
        ).format(estimator=_(ESTIMATOR))
    )

sidebar_spec = st.session_state.get(models.MODEL_SPEC_KEY, loading.BUNDLED)
auto_threads, auto_reason = machine.default_thread_count(models.other_active_sessions())
with st.form("bench_form"):
    spec = model_choice(sidebar_spec)
    c1, c2, c3 = st.columns(3)
    # Each box has its setting's bounds; a value past them (sent by a client, not the box) is named, nothing runs.
    refused: list[str] = []
    prompt_len = bounded.number(
        c1,
        PROMPT_LEN,
        _("Prompt tokens"),
        key="bench_prompt_len",
        refused=refused,
        help=_("Prompt + new tokens must fit the model's positions (256 bundled, 1024 GPT-2)."),
    )
    new_tokens = bounded.number(c2, NEW_TOKENS, _("New tokens"), key="bench_new_tokens", refused=refused)
    repeats = bounded.number(
        c3,
        PAGE_ROUNDS,
        _("Rounds"),
        key="bench_repeats",
        refused=refused,
        help=_("Medians over rounds; at most {n}.").format(n=PAGE_ROUNDS.hi),
    )
    with st.expander(_("Advanced")):
        a1, a2 = st.columns(2)
        # the box may be empty (automatic), so its refusal is read as the browser sent it
        bounded.guard(
            a1,
            machine.PAGE_THREADS,
            "bench_threads",
            default=bounded.EMPTY,
            refused=refused,
            reset=False,
            shown=_("auto ({threads})").format(threads=auto_threads),
        )
        threads = a1.number_input(
            _("Torch threads"),
            min_value=machine.PAGE_THREADS.lo,
            max_value=machine.PAGE_THREADS.hi,
            value=None,
            key="bench_threads",
            placeholder=_("auto ({threads})").format(threads=auto_threads),
            help=_("Empty: {reason}. At most {n}.").format(reason=auto_reason, n=machine.MAX_THREADS),
        )
        warmup = bounded.number(
            a2,
            PAGE_WARMUP,
            _("Warm-up runs"),
            key="bench_warmup",
            refused=refused,
            help=_("At most {n}.").format(n=PAGE_WARMUP.hi),
        )
        include_generate = st.checkbox(_("Also time model.generate(use_cache=True)"), True, key="bench_generate")
        include_generate_no_cache = st.checkbox(
            _("... and model.generate(use_cache=False) (slow)"), False, key="bench_generate_no_cache"
        )
        weight_format = st.radio(
            _("Flat engine weights"),
            WEIGHT_FORMAT_CHOICES,
            horizontal=True,  # setting values
            key="bench_weight_format",
            help=_("auto: measure both here and keep the faster."),
        )
    submitted = st.form_submit_button(_("Run benchmark"), type="primary", key="bench_run")
st.caption(
    _("Defaults: the bundled model takes about 10 s on a busy 2-core laptop, the GPT-2 124M shape about a minute.")
)

if submitted and not refused:
    try:
        if threads is not None:
            machine.PAGE_THREADS.check(threads, error=BenchInputError)
    except BenchInputError as exc:
        st.error(str(exc))
    else:
        settings = BenchSettings(
            prompt_len=int(prompt_len),
            new_tokens=int(new_tokens),
            repeats=int(repeats),
            warmup=int(warmup),
            threads=auto_threads if threads is None else int(threads),
            include_generate=include_generate,
            include_generate_no_cache=include_generate_no_cache,
            weight_format=weight_format,
        )
        result = run(spec, settings, auto_reason if threads is None else N_("set by you"))  # shown through _()
        if result is not None:
            st.session_state[RESULT_KEY] = result

if st.session_state.get("bench_stop"):
    st.info(_("The benchmark was stopped: nothing was measured. Earlier results are kept below."))
result = st.session_state.get(RESULT_KEY)
if result is None:
    st.info(_("Choose a model and lengths, then press **Run benchmark**. The bundled model finishes in seconds."))
else:
    try:
        render_results(result)
    except Exception as exc:  # noqa: BLE001 - a result that cannot be shown must not stick to every rerun
        st.session_state.pop(RESULT_KEY, None)
        st.error(
            _(
                "This run's results could not be shown ({error}); they were dropped. Run it again with other settings."
            ).format(error=type(exc).__name__)
        )
    else:
        batch_section(result.model_spec, result.machine.threads)

device_section(st.session_state.get("bench_model", sidebar_spec))
