"""Cache internals 2: prefix reuse. Serve prompt B from prompt A's cache, cropped to their shared tokens, and
check it against a fresh prefill of B. Timings are measured per session, on request: medians of interleaved
repeats with their spread and the machine's load, and one sentence when the difference is inside the noise."""

from __future__ import annotations

import streamlit as st

from kvviz.figures import internals as fig
from kvviz.i18n import _
from kvviz.inputs.prompt_rules import MAX_TEXT_CHARS, TEXT_CAP_HELP
from kvviz.internals import prefix
from kvviz.internals.records import PrefixReuse
from kvviz.measure.load import load_number
from kvviz.ui import a11y, models, router, sidebar
from pages.internals_shared import PLOT, explain, run_queued

RESULT_KEY = "int_prefix_result"  # (inputs, PrefixReuse) of this session's last measurement

router.ensure_router()  # before anything is drawn: see its docstring
st.title(_("Prefix reuse"))
sidebar.needs_all_attention(models.current_info())  # K/V in every layer: not a hybrid
explain(
    _(
        "Prompt A is prefilled; then its cache is rolled back (cropped) to the tokens it shares with prompt B, and "
        "only B's remaining tokens are fed. Because attention is causal, the kept rows are exactly what B would "
        "have computed: the logits match a fresh prefill of B. Sharing is counted in *tokens*, not characters.\n\n"
        "The default prompts share a long opening, as every request to a chat server shares its system prompt: "
        "that is where prefix caching pays. The times are measured on this machine when you press the button: "
        "{repeats} runs of each, taken in turn, and the median with the fastest and slowest run, "
        "for you only. When the two sets of runs overlap, the page says the difference is inside the noise. "
        "Every forward pass also pays a fixed cost whatever its length (Python, one call per layer), so the time "
        "saved is smaller than the share of tokens saved."
    ).format(repeats=prefix.TIMING_REPEATS)
)
a = st.text_area(
    _("Prompt A (cached first)"),
    prefix.DEFAULT_A,
    key="int_prefix_a",
    height=120,
    max_chars=MAX_TEXT_CHARS,
    help=_(TEXT_CAP_HELP),
)
b = st.text_area(
    _("Prompt B"), prefix.DEFAULT_B, key="int_prefix_b", height=120, max_chars=MAX_TEXT_CHARS, help=_(TEXT_CAP_HELP)
)
inputs = (models.current_info().spec, a, b)

if st.button(_("Prefill both and compare"), key="int_prefix_run", type="primary"):
    loaded = models.current_model()

    def measure() -> PrefixReuse:
        from kvviz.internals.lab import prefix as prefix_lab  # torch: imported only when the model runs

        return prefix_lab.prefix_reuse(loaded, a, b)

    try:
        result = run_queued(_("Prefilling both prompts"), measure)
    except prefix.PrefixError as exc:
        st.error(str(exc))
        result = None
    if result is not None:
        st.session_state[RESULT_KEY] = (inputs, result)

stored = st.session_state.get(RESULT_KEY)
if stored is None:
    st.info(_("Press **Prefill both and compare** to run both prompts through the model."))
    st.stop()
stored_inputs, r = stored
if stored_inputs != inputs:
    st.caption(_("The prompts changed since this measurement: press the button again to measure the new ones."))
if r.shared_len == 0:
    st.warning(_("The prompts share no leading token, so nothing can be reused. Start both the same way."))
t = r.timing
m = st.columns(4)
m[0].metric(_("Shared tokens"), r.shared_len)
m[1].metric(_("Tokens computed"), r.new_tokens_computed, delta=-r.tokens_saved, delta_color="inverse")
m[2].metric(
    _("Prefill with reuse (median)"),
    f"{r.reuse_ms:.1f} ms",
    delta=None if t.inside_noise else _("{ms:.1f} ms vs fresh").format(ms=-r.time_saved_ms),
    delta_color="inverse",
    help=_("With reuse: {reuse}. Fresh: {fresh}.").format(reuse=r.reuse.label(), fresh=r.fresh.label()),
)
m[3].metric(_("Max |logit diff| vs fresh"), f"{r.max_abs_logit_diff:.2e}")
if r.timing_contradicts_lesson:
    st.warning(
        _(
            "Measured on a busy machine: reuse took {reuse_ms:.1f} ms, a fresh prefill {fresh_ms:.1f} ms, although "
            "reuse computed {saved} fewer tokens (1-min load average {load} at the time). Other work on the CPU "
            "distorted the timing; the token counts above are exact. Measure again when it is quieter."
        ).format(reuse_ms=r.reuse_ms, fresh_ms=r.fresh_ms, saved=r.tokens_saved, load=load_number(r.load_avg_1min))
    )
elif t.inside_noise:  # the verdict's wording is the noise rule's (kvviz.measure.timing), in the current language
    st.info(
        _("{verdict} The token counts above are exact.").format(verdict=r.timing_sentence())
        if r.tokens_saved
        else r.timing_sentence()
    )
else:
    st.success(r.timing_sentence())
a11y.chart(
    st,
    fig.token_strip_figure(
        r.tokens_b, r.reused_len, _("Prompt B: green rows reused from A's cache, orange rows computed now")
    ),
    **PLOT,
)
a11y.chart(st, fig.prefix_figure(r), **PLOT)
st.caption(
    _(
        "Fresh prefill of B: {fresh}; reuse: {reuse} (wall-clock on this machine, runs taken in turn after one "
        "warm-up each, 1-min load average {load} then). Reused rows: {bytes_:,} bytes. Same next token: "
        "{same}. Largest K/V difference: {diff:.2e}."
    ).format(
        fresh=r.fresh.label(),
        reuse=r.reuse.label(),
        load=load_number(r.load_avg_1min),
        bytes_=r.reused_cache_bytes,
        same=_("yes") if r.same_next_token else _("no"),
        diff=r.max_abs_kv_diff,
    )
)
