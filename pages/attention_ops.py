"""Count the work: exact matmul operations of a generation with the KV cache and without it.

Every input is a widget bound to the URL (`bind="query-params"`). Pure integer arithmetic (kvviz.ops): the page
imports no torch; the bundled model's shape is read from its config on disk (models.current_info).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from kvviz import ops, routes
from kvviz.figures import export_config
from kvviz.figures import ops as figs
from kvviz.i18n import N_, _, numbers
from kvviz.inputs.links import link_refusals
from kvviz.memory.presets import ops_presets
from kvviz.ui import a11y, assets, bounded, models, router, sidebar, url_state

LOADED, CUSTOM = "loaded model (sidebar)", "custom"  # option values (stable); shown as _(MODEL_LABELS[v])
MODEL_LABELS = {LOADED: N_("loaded model (sidebar)"), CUSTOM: N_("custom")}
CLAIM_TOKENS = 1000
# the numbers' defaults (from their settings, kvviz.ops.INPUTS); selectors default to their first option
DEFAULTS: dict[str, Any] = {f"ops_{name}": setting.default for name, setting in ops.INPUTS.items()}
URL = url_state.of(routes.ATTENTION_OPS)  # the page's keys in its link (its widgets bind the rest: ops_*)
LM_LABELS = {"last": N_("last"), "all": N_("all")}  # option values -> their labels (an English URL says last / all)
LM_CAPTIONS = {"last": N_("last position (generate)"), "all": N_("every position (model(ids))")}
TAB_LABELS = (
    N_("Cumulative"),
    N_("Ratio"),
    N_("Per component"),
    N_("Per pass"),
    N_("The '500x' claim"),
    N_("Why no Q cache?"),
)
# The popular figure, as the Chinese visualiser page prints it; a translation quotes that page's own words.
CLAIM_QUOTE = N_("with a KV cache, generating {n} tokens takes ~500x fewer computations.")


def int_input(label: str, key: str) -> int:
    """A whole number bound to the URL (a link value equal to the default is left out of the URL), bounded by its
    setting (kvviz.ops.INPUTS, which `kvviz ops` reads too); a value a browser sends past it is named."""
    setting = ops.INPUTS[key.removeprefix("ops_")]
    return bounded.linked_number(st, setting, label, key=key, value=setting.default, bind="query-params")


def big_number(n: int) -> str:
    """'245.3 million' / '2.453 亿' for metric tiles from a million on (the exact integer goes in the tooltip)."""
    return numbers.count_in_words(n, scale_from=10**6)


def chosen_shape() -> tuple[ops.ModelShape | None, int | None]:
    """The chosen shape and its context limit (None if unknown); None shape after showing why it is invalid."""
    choice = st.session_state.get("ops_model", LOADED)
    if choice == LOADED:
        info = models.current_info()
        if not sidebar.needs_all_attention(info, stop=False, message=sidebar.NOT_ALL_ATTENTION_COUNTS):
            hybrid_step(info)  # what it can show: one token's cost in each kind of layer
            return None, None
        return info.ops_shape(), info.n_positions
    if choice != CUSTOM:
        preset = ops_presets()[choice]
        st.caption(_("Source: [{url}]({url}) · {paper}").format(url=preset.source, paper=preset.paper))
        return preset.shape, preset.max_context
    c = st.columns(4)
    with c[0]:
        layers = int_input(_("Layers"), "ops_layers")
        heads = int_input(_("Query heads"), "ops_heads")
    with c[1]:
        kv = int_input(_("KV heads"), "ops_kv_heads")
        head_dim = int_input(_("Head dim"), "ops_head_dim")
    with c[2]:
        hidden = int_input(_("Hidden size"), "ops_hidden")
        d_ff = int_input(_("MLP width"), "ops_dff")
    with c[3]:
        vocab = int_input(_("Vocabulary"), "ops_vocab")
        gated = st.checkbox(_("Gated MLP (SwiGLU: 3 matrices)"), value=False, key="ops_gated", bind="query-params")
    try:
        return ops.ModelShape(layers, heads, kv, head_dim, hidden, d_ff, vocab, 3 if gated else 2, "custom"), None
    except ops.OpsInputError as exc:
        st.error(_("This shape cannot be counted: {reason}.").format(reason=exc))
        return None, None


def claim_tab(shape: ops.ModelShape) -> None:
    """The popular "1000 tokens, ~500x" claim against the exact counts, and the growth laws behind it."""
    n = CLAIM_TOKENS
    per_head, readings = ops.attention_per_head(shape, 1, n), ops.check_speedup_claim(shape, n)
    st.markdown(_("**Claim:** *{quote}*").format(quote=_(CLAIM_QUOTE).format(n=n)))
    st.markdown(
        _(
            "**The correction.** With the cache, attention is still **O(n) per step** (the new query reads every cached "
            "key) and so **O(n²) over a generation**; without it, **O(n²) per step** and **O(n³) in total**. "
            "Counted per head, {n:,} passes from a 1-token prompt (QK^T dot products):"
        ).format(n=n)
    )
    rows = [
        ("", _("with cache"), _("without"), _("ratio")),
        ("---", "---:", "---:", "---:"),
        (
            _("whole run"),
            f"N(N+1)/2 = {per_head.run_cached:,}",
            f"N(N+1)(N+2)/6 = {per_head.run_uncached:,}",
            f"(N+2)/3 = **{numbers.ratio(per_head.run_ratio)}**",
        ),
        (
            _("the last step alone"),
            f"N = {per_head.last_step_cached:,}",
            f"N(N+1)/2 = {per_head.last_step_uncached:,}",
            f"(N+1)/2 = **{numbers.ratio(per_head.last_step_ratio)}**",
        ),
    ]
    st.markdown("\n".join("| " + " | ".join(cells) + " |" for cells in rows))
    st.markdown(
        _(
            'So "~500x" holds for two quantities: the last step\'s attention and the projections + MLP summed '
            "over the whole run ((N+1)/2 = {linear:,.1f}x). Attention over the whole run shrinks only {whole:,.0f}x. "
            "For this model, LM head on the last position only:"
        ).format(linear=next(r.ratio for r in readings if r.quantity == ops.LINEAR_WHOLE_RUN), whole=per_head.run_ratio)
    )
    yes, no = _("yes"), _("no")
    a11y.table(
        [
            {
                _("quantity"): _(r.quantity),
                _("without cache"): f"{r.uncached:,}",
                _("with cache"): f"{r.cached:,}",
                _("ratio"): numbers.ratio(r.ratio),
                _("~500x?"): yes if r.holds else no,
            }
            for r in readings
        ],
        hide_index=True,
    )


@st.fragment
def hybrid_step(info) -> None:
    """A hybrid (the loaded model): one decode token's cost in its attention layer beside a linear layer's."""
    costs = ops.hybrid_token_costs(
        info.n_head,
        info.head_dim,
        info.linear_heads,
        info.linear_key_dim,
        info.linear_value_dim,
        info.conv_channels,
        info.conv_kernel,
        info.n_positions,
    )
    st.subheader(_("One decode token: attention beside linear attention"))
    a11y.chart(st, figs.hybrid_token_figure(costs), key="ops_chart_hybrid", config=export_config("ops_hybrid"))
    last = costs.positions[-1]
    state_ops = 3 * info.linear_heads * info.linear_key_dim * info.linear_value_dim
    st.markdown(
        _(
            "At position p the attention layer's step costs 2 x {heads} heads x {head_dim} x (p + 1) ops: **{per_row:,} "
            "more for every row its cache holds**. Each linear layer's step costs **{linear:,} ops at any position**: "
            "three products with each head's {d_k} x {d_v} state ({state:,}) and its short convolution ({conv:,}). From "
            "position **{cross}** on, the linear layer's step is the cheaper one; at the last position, {last}, the "
            "attention layer's costs {ratio:.1f}x as much. Projections and MLPs cost the same per token in both kinds of "
            "layer and are left out."
        ).format(
            heads=info.n_head,
            head_dim=info.head_dim,
            per_row=costs.ops_per_row,
            linear=costs.linear_ops,
            d_k=info.linear_key_dim,
            d_v=info.linear_value_dim,
            state=state_ops,
            conv=costs.linear_ops - state_ops,
            cross=costs.linear_cheaper_from,
            last=last,
            ratio=costs.attention_ops[-1] / costs.linear_ops,
        )
    )


def counter() -> None:
    notices = st.container()
    for message in URL.drop_refused_numbers(DEFAULTS, "ops_link_refused"):  # before any number input
        notices.warning(message)
    first_run, st.session_state["ops_link_checked"] = not st.session_state.get("ops_link_checked"), True
    linked = URL.bound_values() if first_run else {}  # the link's values before the widgets read them
    c = st.columns([2, 1, 1, 2])
    c[0].selectbox(
        _("Model"),
        [LOADED, *ops_presets(), CUSTOM],
        index=0,
        key="ops_model",
        bind="query-params",
        format_func=lambda v: _(MODEL_LABELS[v]) if v in MODEL_LABELS else v,
    )
    with c[1]:
        prompt_len = int_input(_("Prompt tokens P"), "ops_prompt")
    with c[2]:
        new_tokens = int_input(_("New tokens N"), "ops_new")
    lm = c[3].radio(
        _("Logits computed for"),
        list(LM_CAPTIONS),
        index=0,
        key="ops_lm",
        horizontal=True,
        bind="query-params",
        format_func=lambda v: _(LM_LABELS[v]),
        captions=[_(caption) for caption in LM_CAPTIONS.values()],
    )
    shape, limit = chosen_shape()
    t = st.columns(3)
    flops = t[0].toggle(_("Show FLOPs (2 per op)"), value=False, key="ops_flops", bind="query-params")
    log_y = t[1].toggle(_("Log scale"), value=False, key="ops_log", bind="query-params")
    now = URL.bound_values(linked)
    for message in link_refusals(linked, now, st.session_state):
        notices.warning(message)
    if shape is None:
        return
    if limit is not None and prompt_len + new_tokens - 1 > limit:
        st.warning(
            _(
                "P + N - 1 = {tokens:,} tokens exceeds this model's context limit of {limit:,}; the counts are "
                "still exact arithmetic, but the model could not run that far."
            ).format(tokens=prompt_len + new_tokens - 1, limit=limit)
        )
    lm_all = lm == "all"
    cached, uncached = ops.generation_totals(shape, prompt_len, new_tokens, lm_head_all_positions=lm_all)
    scale, unit = (ops.FLOPS_PER_OP, "FLOPs") if flops else (1, _("ops"))
    m = st.container(key="ops_metrics").columns(3)
    m[0].metric(
        _("With KV cache ({unit})").format(unit=unit),
        big_number(scale * cached.total_ops),
        help=f"{scale * cached.total_ops:,}",
    )
    m[1].metric(
        _("Without cache ({unit})").format(unit=unit),
        big_number(scale * uncached.total_ops),
        help=f"{scale * uncached.total_ops:,}",
    )
    m[2].metric(_("Without / with"), numbers.ratio(uncached.total_ops / cached.total_ops))
    st.markdown(ops.savings_sentence(shape, prompt_len, new_tokens, lm_head_all_positions=lm_all))

    labels = [_(label) for label in TAB_LABELS]
    tabs = st.tabs(labels, key="ops_tab", bind="query-params")  # lazy: only the open tab runs
    export = export_config
    if tabs[0].open or tabs[1].open:
        points = ops.curve(shape, prompt_len, new_tokens, max_points=300, lm_head_all_positions=lm_all)
    if tabs[0].open:
        with tabs[0]:
            quantity = st.selectbox(
                _("Quantity"),
                list(figs.QUANTITIES),
                index=0,
                key="ops_quantity",
                bind="query-params",
                format_func=lambda q: _(figs.QUANTITIES[q][0]),
            )
            a11y.chart(
                st,
                figs.cumulative_figure(points, quantity, flops, log_y),
                key="ops_chart_cum",
                config=export("cumulative_ops"),
            )
    if tabs[1].open:
        with tabs[1]:
            a11y.chart(st, figs.ratio_figure(points), key="ops_chart_ratio", config=export("ops_ratio"))
    if tabs[2].open:
        with tabs[2]:
            a11y.chart(
                st,
                figs.breakdown_figure(cached, uncached, flops, log_y),
                key="ops_chart_parts",
                config=export("ops_per_component"),
            )
            a11y.table(
                [
                    {
                        _("component"): _(ops.COMPONENT_LABELS[k]),
                        _("with cache ({unit})").format(unit=unit): f"{scale * cached.ops(k):,}",
                        _("without ({unit})").format(unit=unit): f"{scale * uncached.ops(k):,}",
                        _("saved"): f"{scale * (uncached.ops(k) - cached.ops(k)):,}",
                        _("without / with"): numbers.ratio(uncached.ops(k) / cached.ops(k)),
                    }
                    for k in ops.COMPONENTS
                ],
                hide_index=True,
            )
            st.markdown(
                _("Attention dot products: **{cached:,}** with the cache, **{uncached:,}** without.").format(
                    cached=cached.attention_dot_products, uncached=uncached.attention_dot_products
                )
            )
    if tabs[3].open:
        with tabs[3]:
            shown = min(new_tokens, 64)
            steps = list(ops.generation_steps(shape, prompt_len, shown, lm_head_all_positions=lm_all))
            a11y.chart(
                st,
                figs.per_step_figure([s.index for s in steps], [s.cached for s in steps], [s.uncached for s in steps]),
                key="ops_chart_steps",
                config=export("ops_per_pass"),
            )
            # Exact counts reach the table as text: a custom shape's counts overflow int64 (Arrow's integers).
            a11y.table(
                [
                    {
                        _("pass"): s.index,
                        _("context after"): f"{s.context_len:,}",
                        _("tokens fed (cache)"): f"{s.cached.tokens_fed:,}",
                        _("dot products (cache)"): f"{s.cached.attention_dot_products:,}",
                        _("ops (cache)"): f"{s.cached.total_ops:,}",
                        _("tokens fed (no cache)"): f"{s.uncached.tokens_fed:,}",
                        _("dot products (no cache)"): f"{s.uncached.attention_dot_products:,}",
                        _("ops (no cache)"): f"{s.uncached.total_ops:,}",
                    }
                    for s in steps
                ],
                hide_index=True,
            )
            if shown < new_tokens:
                st.caption(
                    _("First {shown} passes shown; the totals above cover all {total:,}.").format(
                        shown=shown, total=new_tokens
                    )
                )
    if tabs[4].open:
        with tabs[4]:
            claim_tab(shape)
    if tabs[5].open:
        with tabs[5]:
            st.markdown(
                _(
                    "A query is used once: by its own token, at its own step, to read the past. No later token ever "
                    "needs an old query. Keys and values are the opposite: every future query reads all of them. So "
                    "the cache keeps K and V and throws Q away. With the cache, a decode pass computes exactly "
                    "**one** query per head per layer ({queries:,} queries for this model), "
                    "and one new K and V row per K/V head per layer for the token it feeds."
                ).format(queries=shape.n_layer * shape.n_head)
            )


router.ensure_router()  # before anything is drawn: see its docstring
st.title(_("Count the work"))
# Metric values wrap ("245.3 / million") instead of being cut to "245.3 mil…" at 1024 px wide.
st.html(assets.style("metric_wrap.css"))
with st.expander(_("What you are seeing"), expanded=False):
    st.markdown(
        _(
            "Generating N tokens after a P-token prompt takes N forward passes. **With the cache**, pass k feeds "
            "one token: its Q, K, V, its MLP, and one query against every cached key. **Without it**, pass k "
            "recomputes everything for all P + k - 1 tokens: per pass, its attention grows with the square of the "
            "length and its projections and MLP linearly; over a whole run, attention's total grows with the square of "
            "the length with the cache and with its cube without.\n\n"
            "**Units.** 1 op = 1 multiply-add; **1 FLOP = half an op** (FLOPs = 2 x ops). One *attention dot "
            "product* is one query . key score over head_dim numbers (= head_dim ops). **Causal**: the query at "
            "position p scores keys 0..p; masked pairs are not counted. Only matrix multiplications are counted "
            "(layer norms, softmax, GELU and biases are small and elementwise). Pass 1 is the prefill."
        )
    )
counter()
