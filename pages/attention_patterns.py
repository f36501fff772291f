"""Attention patterns: every head's full causal attention matrix in one layer, from one uncached forward pass,
with the one row a cached decode step computes outlined in each; one head large with token labels; and the
patterns the numbers show (previous-token, first-token, induction heads), scored from the matrices."""

from __future__ import annotations

import numpy as np
import streamlit as st

from kvviz import routes
from kvviz.figures import export_config
from kvviz.figures import patterns as figs
from kvviz.i18n import N_, _, join_sentences, ngettext
from kvviz.inputs.prompt_rules import MAX_TEXT_CHARS, TEXT_CAP_HELP, PromptError, check_prompt, shorten_by
from kvviz.memory import units
from kvviz.model.loading import LoadedModel
from kvviz.step.pattern_records import (
    MAX_PATTERN_TOKENS,
    PROBE_HALF_TOKENS,
    PatternRun,
    head_labels,
    strongest_induction_head,
    thresholds_text,
)
from kvviz.step.view import REPEAT_PROMPT, kv_head_of
from kvviz.ui import a11y, assets, engines, models, router, url_state

PRESETS = {  # name (a stable value, also the lesson's; shown through _()) -> prompt
    N_("Repeat a pattern"): REPEAT_PROMPT,
    N_("A repeated line"): "ROMEO:\nBut soft, what light through yonder window breaks?\nROMEO:\nBut soft, what light",
    N_("First Citizen"): "First Citizen:\nBefore we proceed any further, hear me speak.",
}
STEP_SEQUENCE = N_("The step page's sequence")
TYPE_A_PROMPT = N_("Type a prompt")
HEAD_FIRST_PX = 480  # the large head under the pickers (head_first): its last row above a 720-px screen's fold


@st.cache_data(
    show_spinner=False, max_entries=32, hash_funcs=models.MODEL_HASH
)  # the spinner: at the call (translated)
def pattern_run(loaded: LoadedModel, token_ids: tuple[int, ...]) -> PatternRun:
    from kvviz.step import patterns  # torch: imported only when the model runs

    return patterns.pattern_run(loaded, list(token_ids))


def head_first() -> bool:
    """A link that names a head (For teachers' row 4: layer 3, head 1, its copying stripe) is about that head: its
    large view comes right under the pickers, a screen high, the explanation folded, for the whole visit (nothing
    moves under the reader). Below the gallery and the table it started 1,337 px down a 1280x720 screen."""
    return url_state.of(routes.ATTENTION_PATTERNS).visit_opened_naming("head")


router.ensure_router()  # before anything is drawn: see its docstring
HEAD_FIRST = head_first()
if HEAD_FIRST:
    st.html(assets.style("link_view_first.css"))
st.title(_("Attention patterns"))
with st.expander(_("What you are seeing"), expanded=not HEAD_FIRST):
    st.markdown(
        _(
            "Each square is one attention head of the chosen layer: row *i* is what the token at position *i* "
            "attends to, column *j* the earlier token it reads (only *j* ≤ *i*: the model cannot look ahead, so each "
            "matrix is a triangle). The outlined **last row** is the only row a **cached** decode step computes: the "
            "newest query against every cached key. An **uncached** step recomputes the **whole triangle** to get that "
            "same row. Heads differ: some look one token back (*previous-token*), some park on the first token "
            "(*first-token*), and an *induction* head looks at the token that came **after** the previous occurrence "
            "of the current token, which is how a model copies a pattern it has seen in its context."
        )
    )

loaded = models.current_model("eager")
info = loaded.info
engine = st.session_state.get(engines.STEP_ENGINE_KEY)
step_ids = engine.token_ids if engine is not None and engine.loaded is loaded and engine.started else []
sources = ([STEP_SEQUENCE] if 2 <= len(step_ids) <= MAX_PATTERN_TOKENS else []) + [*PRESETS, TYPE_A_PROMPT]
c1, c2, c3 = st.columns([2, 1, 1])
source = c1.selectbox(
    _("Sequence"),
    sources,
    key="pat_source",
    bind="query-params",
    format_func=_,
    help=_("Up to {n} tokens, so every cell stays visible.").format(n=MAX_PATTERN_TOKENS),
)
# a hybrid's linear-attention layers compute no attention matrix: only its attention layers are offered
layer = c2.selectbox(_("Layer"), list(info.attention_layers), key="pat_layer", bind="query-params")
head = c3.selectbox(_("Head to enlarge"), list(range(info.n_head)), key="pat_head", bind="query-params")
large_head = st.container() if HEAD_FIRST else None
if source == STEP_SEQUENCE:
    token_ids = list(step_ids)
else:
    text = PRESETS.get(source)
    if text is None:
        text = st.text_area(
            _("Prompt"),
            PRESETS["Repeat a pattern"],
            key="pat_prompt",
            height=70,
            max_chars=MAX_TEXT_CHARS,
            help=_(TEXT_CAP_HELP),
        )
    try:
        token_ids = check_prompt(loaded.tokenizer, text, info.n_positions)
    except PromptError as exc:
        st.error(str(exc))
        st.stop()
    if len(token_ids) > MAX_PATTERN_TOKENS:
        st.error(
            join_sentences(
                (
                    _("The prompt is {n} tokens, but this page draws at most {max} positions.").format(
                        n=len(token_ids), max=MAX_PATTERN_TOKENS
                    ),
                    shorten_by(len(token_ids) - MAX_PATTERN_TOKENS),
                )
            )
        )
        st.stop()
if len(token_ids) < 2:
    st.error(_("One token has no pattern to show: type at least two tokens."))
    st.stop()

with st.spinner(_("Running the model once, without the cache...")):
    run = pattern_run(loaded, tuple(token_ids))
lp = run.layers[info.attention_layers.index(layer)]
t = run.seq_len
if not info.all_attention:
    recurrent_bytes, conv_bytes = info.linear_state_bytes()  # as the model runs here (float32)
    st.info(
        ngettext(
            "Layer {layers} is linear attention (Gated DeltaNet) and has no attention matrix: instead of comparing the "
            "newest query with every cached key, it keeps per head one {d_k} x {d_v} state matrix that each token "
            "updates, and the last {kernel} inputs of its short convolution ({size} in all, whatever the length).",
            "Layers {layers} are linear attention (Gated DeltaNet) and have no attention matrix: instead of comparing "
            "the newest query with every cached key, each keeps per head one {d_k} x {d_v} state matrix that each token "
            "updates, and the last {kernel} inputs of its short convolution ({size} per layer, whatever the length).",
            len(info.linear_layers),
        ).format(
            layers=_(", ").join(str(i) for i in info.linear_layers),
            d_k=info.linear_key_dim,
            d_v=info.linear_value_dim,
            kernel=info.conv_kernel,
            size=units.short_bytes(recurrent_bytes + conv_bytes),
        ),
        icon=":material/info:",
    )
st.markdown(
    ngettext("**{t} token.**", "**{t} tokens.**", t).format(t=t)
    + " "
    + _(
        "A cached step computes **{t}** attention weights per head (the outlined row); an uncached "
        "step recomputes all **{triangle:,}** of the triangle, for each of the **{heads}** heads of each of the "
        "**{layers}** layers."
    ).format(t=t, triangle=t * (t + 1) // 2, heads=info.n_head, layers=len(info.attention_layers))
    + (
        " "
        + _(
            "This model has **{kv_heads} K/V heads** for {heads} query heads: query head *q* reads K/V head *q* "
            "// {group}, so each matrix below is a query head's own pattern over the shared cached rows."
        ).format(kv_heads=info.n_kv_heads, heads=info.n_head, group=info.n_head // info.n_kv_heads)
        if info.n_kv_heads != info.n_head
        else ""
    )
)
a11y.chart(st, figs.gallery_figure(lp, info.n_kv_heads), config=export_config("attention_patterns"), key="pat_gallery")

st.header(_("Named patterns in this layer"))
strongest = strongest_induction_head(lp)


def _score(value: float) -> str:
    return "—" if np.isnan(value) else f"{float(value):.3f}"  # NaN: no token of this sequence repeats


def _pattern(h: int) -> str:
    names = [_(label) for label in head_labels(lp, h)]
    if h == strongest:
        names.append(_("copies most here"))
    return _(", ").join(names) or "—"


rows = [
    {
        _("head"): h,
        _("kv head"): kv_head_of(h, info.n_head, info.n_kv_heads),
        _("previous-token"): _score(lp.previous_token_score[h]),
        _("first-token"): _score(lp.first_token_score[h]),
        _("induction (probe)"): _score(lp.probe_induction_score[h]),
        _("induction (this sequence)"): _score(lp.induction_score[h]),
        _("pattern"): _pattern(h),
    }
    for h in range(info.n_head)
]
st.table(rows, hide_index=True)  # a static table: a long pattern name wraps instead of being cut
if strongest is not None:
    st.caption(
        _(
            "Several heads of this layer may be induction heads (each copies on the probe); on this sequence "
            "head {head} copies most (induction {score:.3f}): on the *Repeat a pattern* prompt it is the copying "
            "head the lesson asks about."
        ).format(head=strongest, score=float(lp.induction_score[strongest]))
    )
st.caption(
    _(
        "Scores are means of attention weights: previous-token = weight on position i-1; first-token = weight on "
        "position 0 (both over queries i ≥ 1); induction = weight on the token after the previous occurrence of the "
        "current token, on a probe of {probe} seeded random tokens repeated once (and on this sequence where a token "
        "repeats). A head is named when its score reaches: {thresholds}."
    ).format(probe=PROBE_HALF_TOKENS, thresholds=thresholds_text())
)

with large_head or st.container():
    st.header(_("Head {head}, large").format(head=head))
    a11y.chart(
        st,
        figs.head_figure(lp, head, run.tokens, info.n_kv_heads, height_px=HEAD_FIRST_PX if HEAD_FIRST else 640),
        config=export_config("attention_patterns"),
        key="pat_head_fig",
    )
