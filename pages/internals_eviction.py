"""Cache internals 8: what to forget. Eviction policies pruning the real cache after a prefill, and quantized
formats, compared at the bytes they really keep: the token grid of one policy and budget, quality vs bytes for
every policy (the copy test and the loss change), and what a class takes away, computed from the sweep."""

from __future__ import annotations

import streamlit as st

from kvviz import routes
from kvviz.figures import MAX_LEGEND_ENTRIES
from kvviz.figures import eviction as fig
from kvviz.i18n import N_, _, ngettext
from kvviz.inputs.echo import code
from kvviz.inputs.links import link_refusals
from kvviz.inputs.prompt_rules import MAX_TEXT_CHARS, TEXT_CAP_HELP
from kvviz.internals import eviction
from kvviz.internals.eviction import (
    EVICT_AT_SCALE,
    EVICT_DUO_RECENT,
    EVICT_KEEP_PERCENTS,
    EVICT_POLICIES,
    EVICT_POLICY_RULES,
    EVICT_QUANT_SCHEMES,
    EVICT_RAGGED,
    EvictionError,
    EvictSettings,
    held_out_text,
    policy_label,
    policy_short,
)
from kvviz.internals.eviction_takeaways import eviction_takeaways
from kvviz.internals.records import EvictionGrid, EvictionPoint, EvictionSweep
from kvviz.model.loading import LoadedModel
from kvviz.ui import a11y, bounded, models, router, sidebar, url_state
from pages.internals_shared import MODEL_HASH, PLOT, explain, run_queued

DEFAULT_DRAWN = ("random", "recent", "streaming", "h2o")  # the takeaways cite the random control
URL = url_state.of(routes.INTERNALS_EVICTION)  # the page's keys in its link, all held by bound widgets
SINKS_KEY = "evict_sinks"
LINKED_KEYS = ("evict_policy", "evict_keep", "evict_drawn")  # read by their widgets; a refused value gets a message
STOPPED_KEY, SINKS_NOTICE_KEY = "evict_stopped_inputs", "evict_sinks_notice"
LINK_CHECKED_KEY, LINK_SEEN_KEY = "evict_sinks_link_checked", "evict_link_seen"
SOURCES = (
    ("StreamingLLM", "Xiao et al. 2023", "https://arxiv.org/abs/2309.17453"),
    ("H2O", "Zhang et al. 2023", "https://arxiv.org/abs/2306.14048"),
    ("TOVA", "Oren et al. 2024", "https://arxiv.org/abs/2401.06104"),
    ("SnapKV", "Li et al. 2024", "https://arxiv.org/abs/2404.14469"),
    ("Knorm", "Devoto et al. 2024", "https://arxiv.org/abs/2406.11430"),
    ("KeyDiff", "2025", "https://arxiv.org/abs/2504.15364"),
    ("DuoAttention", "Xiao et al. 2024", "https://arxiv.org/abs/2410.10819"),
    ("KVzip", "Kim et al. 2025", "https://arxiv.org/abs/2505.23416"),
)


@st.cache_data(show_spinner=False, max_entries=32, hash_funcs=MODEL_HASH)  # deterministic: safe to share
def grid(loaded: LoadedModel, policy: str, keep: int, text: str, settings: EvictSettings) -> EvictionGrid:
    from kvviz.internals.eviction_lab import runs  # torch: imported only when the model runs

    return runs.eviction_grid(loaded, policy, keep, text, settings)


# Keyed on settings.for_policy(policy): a new S re-measures StreamingLLM alone, the other lines come from here.
@st.cache_data(show_spinner=False, max_entries=64, hash_funcs=MODEL_HASH)
def policy_line(loaded: LoadedModel, policy: str, text: str, settings: EvictSettings) -> tuple[EvictionPoint, ...]:
    from kvviz.internals.eviction_lab import runs  # torch: imported only when the model runs

    return runs.measure_policy(loaded, policy, text, settings)


@st.cache_data(show_spinner=False, max_entries=8, hash_funcs=MODEL_HASH)
def quantized_points(loaded: LoadedModel, text: str, settings: EvictSettings) -> tuple[EvictionPoint, ...]:
    from kvviz.internals.eviction_lab import runs  # torch: imported only when the model runs

    return runs.measure_quantized(loaded, text, settings)


def measure_sweep(loaded: LoadedModel, text: str, settings: EvictSettings, place) -> EvictionSweep | None:
    """Every policy x every budget, line by line (each line cached on what it reads), with a progress bar in
    `place`. Between two lines, a check: the bar's update is a Streamlit call, where Streamlit ends this run when a
    rerun was asked (Stop, any widget) or the tab was closed (its StopException); and a Stop of these inputs,
    seen there, ends the sweep. Returns None when stopped."""
    from kvviz.internals.eviction_lab import runs  # torch: the model given has loaded it already

    steps = len(EVICT_POLICIES) + 1
    bar = place.progress(0.0, text=_("Measuring every policy at every budget..."))
    points: list[EvictionPoint] = []
    try:
        for n, policy in enumerate(EVICT_POLICIES):
            bar.progress(
                n / steps,
                text=_("Measuring {policy} ({n} of {total})...").format(
                    policy=policy_short(policy), n=n + 1, total=steps
                ),
            )
            if stopped(loaded, text, settings):
                return None
            points += policy_line(loaded, policy, text, settings.for_policy(policy))
        bar.progress(
            len(EVICT_POLICIES) / steps,
            text=_("Measuring the quantized formats ({n} of {total})...").format(n=steps, total=steps),
        )
        if stopped(loaded, text, settings):
            return None
        points += quantized_points(loaded, text, settings.for_policy("quantized"))
        return runs.sweep_of(loaded, tuple(points), text, settings)
    finally:
        bar.empty()


def _inputs_key(loaded: LoadedModel, text: str, settings: EvictSettings) -> tuple:
    return (loaded.info.label, hash(text), settings)


def stopped(loaded: LoadedModel, text: str, settings: EvictSettings) -> bool:
    """Whether the reader stopped the sweep of these inputs (a new model, text or S measures again)."""
    return st.session_state.get(STOPPED_KEY) == _inputs_key(loaded, text, settings)


def sinks_refusal() -> str | None:
    """Before the S widget is drawn: the value a link (first run) or the browser sent, through the settings' own
    rule (eviction.check_sink_tokens). A refused value becomes the default S and the page says why, once: the
    widget itself would reset it silently (a link's below its minimum, the browser's -1), or fail (a link's inf)."""
    first_run, st.session_state[LINK_CHECKED_KEY] = not st.session_state.get(LINK_CHECKED_KEY), True
    notice = st.session_state.pop(SINKS_NOTICE_KEY, None)
    try:
        if SINKS_KEY in st.session_state:
            eviction.check_sink_tokens(st.session_state[SINKS_KEY])
        elif first_run and URL.holds("sinks"):
            eviction.check_sink_tokens(URL.raw("sinks"), text=True)
    except EvictionError as exc:
        message = _("{error}. The page shows S = {default} until it is changed.").format(
            error=str(exc).rstrip("."), default=EvictSettings().sink_tokens
        )
        if SINKS_KEY in st.session_state:
            st.session_state[SINKS_KEY] = EvictSettings().sink_tokens  # before the widget: allowed, and kept
            return message
        URL.drop("sinks")
        st.session_state[SINKS_NOTICE_KEY] = message
        st.rerun()  # the rerun's link no longer holds it
    return notice


router.ensure_router()  # before anything is drawn: see its docstring
st.title(_("What to forget: eviction and compression"))
sidebar.needs_all_attention(models.current_info())  # K/V in every layer: not a hybrid
explain(
    _(
        "Once the cache is too big, an engine must keep less. **Eviction** throws rows away (a row is one position's "
        "K and V in one layer and KV head); **compression** keeps every row in fewer bits. Here both run on the real "
        "cache of the model in the sidebar.\n\n"
        "1. The model prefills a span of held-out Shakespeare (text it never trained on).\n"
        "2. A **policy** scores the rows of transformers' own `DynamicCache` and keeps the best ones, the same number "
        "in every layer and KV head, so the bytes really shrink: the **budget** is the share of the cache's bytes "
        "kept, counted from the pruned tensors. DuoAttention keeps whole heads, so it holds a little less than its "
        "budget and is shown at the bytes it holds; KVzip lets the rows of all heads compete, so its heads keep "
        "different numbers of rows at the budget's bytes.\n"
        "3. The model reads the span **again** from the pruned cache. Its copying heads (induction heads) predict "
        "each next token of the repeat by finding it in the first copy: the **copy test** counts how often they "
        "still can. Beside it, the change in next-token loss on ordinary text.\n\n"
        "New tokens keep the positions they would have had without eviction: token S of the text is at position S "
        "even when fewer than S rows are left. The kept rows still carry their original positions, so restarting "
        "the count would put two tokens at one position.\n\n"
        "The grid below shows what one policy keeps at one budget; the charts show every policy at every budget, "
        "and the quantized formats (the Quantized caches page's arithmetic) at their real bytes."
    )
)

info = models.current_info()
notices = st.container()  # one message per refused setting, above the inputs it names
sinks_notice = sinks_refusal()
if sinks_notice:
    notices.error(sinks_notice)
first_link = URL.bound_values(LINKED_KEYS) if not st.session_state.get(LINK_SEEN_KEY) else {}
st.session_state[LINK_SEEN_KEY] = True
c1, c2, c3 = st.columns([2, 2, 1])
# The URL holds each input (bind="query-params"): a teacher's link opens the page at its policy, budget, S, drawn
# policies and (the sidebar's) model. A selectbox writes its shown text to the URL: the short names keep it short.
policy = c1.selectbox(
    _("Policy"),
    EVICT_POLICIES,
    index=EVICT_POLICIES.index("streaming"),
    key="evict_policy",
    format_func=policy_short,
    bind="query-params",
)
if message := bounded.sent_option_refusal(
    "evict_keep",
    N_("the budget (% of the KV bytes kept)"),  # not an option
    [str(p) for p in sorted(EVICT_KEEP_PERCENTS)],
    25,
):
    notices.error(message)
keep = c2.select_slider(
    _("Budget: % of the KV bytes kept"),
    options=sorted(EVICT_KEEP_PERCENTS),
    value=25,
    key="evict_keep",
    bind="query-params",
)
sinks = bounded.number(
    c3,
    eviction.SINK_TOKENS,
    _("Sink tokens S"),
    key=SINKS_KEY,
    notices=notices,
    bind="query-params",
    help=_(
        "StreamingLLM keeps the first S rows (the attention sinks) and fills the rest of the "
        "budget with the newest rows. S = 0 is the plain recent window."
    ),
)
with st.expander(_("The text (held-out Shakespeare by default)")):
    text = st.text_area(
        _("Text for the copy test and the loss"),
        held_out_text(),
        key="evict_text",
        height=160,
        max_chars=MAX_TEXT_CHARS,
        help=_(TEXT_CAP_HELP),
    )
try:
    settings = EvictSettings(sink_tokens=sinks).checked(info.n_positions)
except EvictionError as exc:  # one message naming the setting; the page goes on with the default S
    notices.error(
        _("{error}. The page shows S = {default} until it is changed.").format(
            error=str(exc).rstrip("."), default=EvictSettings().sink_tokens
        )
    )
    settings = EvictSettings().checked(info.n_positions)
# The sweep's progress, its Stop and its place in line: here, under the inputs the reader just changed, above the
# grid and the charts (they come from the sweep, further down).
work = st.container()
try:
    loaded = models.current_model()
    with st.spinner(_("Pruning the real cache...")):
        shown = grid(loaded, policy, keep, text, settings.for_policy(policy))
except EvictionError as exc:
    notices.error(str(exc))
    st.stop()

st.header(_("What {policy} keeps at {keep}%").format(policy=policy_label(policy), keep=shown.keep_percent))
# DuoAttention's retrieval heads are the ones that keep every row (at 100% every head does)
retrieval = sum(all(row) for layer in shown.layers for row in layer.kept)
n_heads = sum(len(layer.kept) for layer in shown.layers)
st.markdown(
    _(EVICT_POLICY_RULES[policy]).format(
        window=settings.snap_window, recent=EVICT_DUO_RECENT, retrieval=retrieval, heads=n_heads
    )
)
if policy in EVICT_AT_SCALE:
    st.caption(_(EVICT_AT_SCALE[policy]))
note = eviction.policy_note(policy, shown.layers[0].rows_kept, settings, retrieval_heads=retrieval)
if note:
    st.info(note)
kept_bytes = sum(layer.kv_bytes_kept for layer in shown.layers)
full_bytes = sum(layer.kv_bytes_full for layer in shown.layers)
span = len(shown.tokens)
if policy in ("duoattention", "duo_probe") and kept_bytes * span < full_bytes * eviction.rows_for_budget(
    shown.keep_percent, span
):
    st.info(
        _(
            "At the {keep}% budget DuoAttention holds {share:.1%} of the bytes: only whole retrieval heads fit, "
            "so the charts and the takeaways compare it at the bytes it holds."
        ).format(keep=shown.keep_percent, share=kept_bytes / full_bytes)
    )
m1, m2, m3 = st.columns(3)
if policy in EVICT_RAGGED:  # its heads keep different counts: all rows kept over all heads, per head
    m1.metric(
        _("rows kept per KV head, on average"),
        f"{sum(sum(row) for layer in shown.layers for row in layer.kept) / n_heads:.1f} / {len(shown.tokens)}",
    )
else:
    m1.metric(_("rows kept per layer and KV head"), f"{shown.layers[0].rows_kept} / {len(shown.tokens)}")
m2.metric(
    _("KV bytes kept (one span)"),
    f"{kept_bytes:,} B",
    f"{kept_bytes / full_bytes:.1%}",
    delta_color="off",
    delta_arrow="off",
)
m3.metric(_("KV bytes evicted"), f"{full_bytes - kept_bytes:,} B")
a11y.chart(st, fig.grid_figure(shown), **PLOT)
st.caption(
    ngettext(
        "The first copy-test span, {n} token: {text}", "The first copy-test span, {n} tokens: {text}", len(shown.tokens)
    ).format(n=len(shown.tokens), text=code("".join(shown.tokens), limit=600))
)
a11y.chart(st, fig.layer_bytes_figure(shown), **PLOT)

st.header(_("Quality vs bytes kept: every policy, every budget"))
st.caption(
    _(
        "Bounded work: the full cache once, {policies} policies x {budgets} budgets x 2 measures, plus {formats} "
        "quantized formats; "
        "{spans} spans of {half} tokens for the copy test, {passages} passages of {context} tokens of context "
        "then {preds} predictions for the loss. Bars: ± the interval at 95% over the units sampled, the spans "
        "(copy) and the passages (loss, each against the full cache on the same passage). Two points differ "
        "only where the paired interval of their difference excludes 0. One measurement at a time on this "
        "server; results are kept per model, text and settings."
    ).format(
        preds=settings.continuation_tokens - 1,
        policies=len(EVICT_POLICIES) - 1,
        budgets=len(EVICT_KEEP_PERCENTS),
        formats=len(EVICT_QUANT_SCHEMES),
        spans=settings.n_spans,
        half=settings.half_tokens,
        passages=settings.n_passages,
        context=settings.context_tokens,
        cont=settings.continuation_tokens,
    )
)
inputs = _inputs_key(loaded, text, settings)
with work:
    if stopped(loaded, text, settings):
        st.info(
            _("Stopped. The lines measured so far are kept: Measure the rest goes on from them."),
            icon=":material/stop_circle:",
        )
        st.button(
            _("Measure the rest"),
            key="evict_resume",
            icon=":material/play_arrow:",
            on_click=st.session_state.pop,
            args=(STOPPED_KEY, None),
        )
        sweep = None
    else:
        st.button(
            _("Stop"),
            key="evict_stop",
            icon=":material/stop:",
            on_click=st.session_state.__setitem__,
            args=(STOPPED_KEY, inputs),
            help=_(
                "Stop the sweep at the next policy; the lines measured so far stay cached, and Measure the "
                "rest goes on from them"
            ),
        )
        try:
            sweep = run_queued(
                _("Measuring every policy at every budget"), lambda: measure_sweep(loaded, text, settings, st)
            )
        except EvictionError as exc:
            notices.error(str(exc))
            st.stop()
if sweep is None:
    st.stop()
drawn = st.multiselect(
    _("Policies drawn (at most {n}: the full cache and the quantized formats are always there)").format(
        n=MAX_LEGEND_ENTRIES
    ),
    EVICT_POLICIES[1:],
    default=list(DEFAULT_DRAWN),
    max_selections=MAX_LEGEND_ENTRIES,
    format_func=policy_short,
    key="evict_drawn",
    bind="query-params",
    placeholder=_("Choose options"),
)
for message in link_refusals(
    first_link,
    URL.bound_values(first_link),
    {"evict_policy": policy_short(policy), "evict_keep": keep, "evict_drawn": [policy_short(p) for p in drawn]},
):
    notices.warning(message)
a11y.chart(st, fig.quality_figure(sweep, drawn, "copy"), **PLOT)
st.caption(_("The copy test needs the rows of the whole first copy: the induction heads look the next token up there."))
a11y.chart(st, fig.quality_figure(sweep, drawn, "loss"), **PLOT)
full = sweep.point("full", 100)
st.caption(
    _(
        "Full cache: copy test {acc:.1%} ({right}/{total} predictions), loss {loss:.3f} nats/token. A model "
        "this small leans on local context for ordinary text, so the loss mostly shows what the newest and "
        "the first rows are worth; the copy test shows what the rows in between are worth."
    ).format(acc=full.copy_accuracy, right=full.copy_correct, total=full.copy_total, loss=full.loss_full_nats)
)

st.header(_("What a class takes away (computed from the sweep above)"))
st.markdown("\n".join(f"- {line.shown()}" for line in eviction_takeaways(sweep)))  # drawn in the reader's language

with st.expander(_("Every measured point")):
    st.dataframe(
        [
            {
                _("policy or format"): policy_short(p.policy),
                _("budget %"): p.keep_percent,
                _("rows kept"): p.rows_kept,
                _("KV bytes kept"): p.kv_bytes_kept,
                _("% of bytes"): round(100 * p.bytes_fraction, 1),
                _("copy accuracy %"): round(100 * p.copy_accuracy, 1),
                _("± 95% (points)"): round(100 * p.copy_half_width, 1),
                _("loss change (nats)"): round(p.loss_change_nats, 4),
                _("± 95% (nats)"): round(p.loss_change_half_width, 4),
            }
            for p in sweep.points
        ],
        hide_index=True,
    )

st.header(_("Sources"))
st.markdown(
    "\n".join(f"- {name} ({who}): [{url.rsplit('/', 1)[-1]}]({url})" for name, who, url in SOURCES)
    + "\n"
    + _(
        '- NVIDIA\'s kvpress is the reference implementation of these policies (its "presses"). kvviz writes the '
        "scorers on the cache tensors itself: kvpress 0.5.5 pins transformers < 5.3 and does not take GPT-2.\n"
        "- transformers 5 removed `SinkCache` (StreamingLLM's cache); here the sinks are kept by pruning a "
        "`DynamicCache`."
    )
)
st.subheader(_("The newer methods on a large model"))
st.markdown("\n".join(f"- **{policy_short(p)}**: {_(text)}" for p, text in EVICT_AT_SCALE.items()))
