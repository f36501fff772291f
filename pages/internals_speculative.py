"""Cache internals 7: speculative decoding's rollback. A draft proposes k tokens, the verifier checks them in one
pass, and its cache is cropped back to the accepted length; the output equals plain greedy decoding."""

from __future__ import annotations

import streamlit as st

from kvviz import i18n
from kvviz.figures import internals as fig
from kvviz.i18n import _
from kvviz.inputs import echo
from kvviz.inputs.prompt_rules import MAX_TEXT_CHARS, TEXT_CAP_HELP
from kvviz.internals import speculative
from kvviz.internals.records import SpecRun
from kvviz.model import loading
from kvviz.model.loading import LoadedModel
from kvviz.ui import a11y, bounded, models, router, sidebar
from pages.internals_shared import MODEL_HASH, PLOT, explain

# A draft shares the verifier's tokenizer: the two bundled models do (same BPE, 2,048 ids).
OTHER_BUNDLED = {loading.BUNDLED: loading.BUNDLED_GQA, loading.BUNDLED_GQA: loading.BUNDLED}
SELF = "self"


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=MODEL_HASH)  # spinner at the call, translated
def spec_run(
    loaded: LoadedModel, prompt: str, n_new: int, k: int, temperature: float | None, draft: LoadedModel | None
) -> SpecRun:
    """Deterministic (fixed seed, no timing): safe to share between sessions."""
    from kvviz.internals.lab import speculative as speculative_lab  # torch: imported only when the model runs

    return speculative_lab.speculative_decode(loaded, prompt, n_new, k, temperature, draft=draft)


router.ensure_router()  # before anything is drawn: see its docstring
st.title(_("Speculative decoding: rollback"))
sidebar.needs_all_attention(models.current_info())  # K/V in every layer: not a hybrid
explain(
    _(
        "A small **draft** model proposes k tokens; the **verifier** (the model in the sidebar, greedy) checks all "
        "of them in ONE forward pass, which appends k+1 rows to its cache. It keeps the proposals up to the first "
        "disagreement, and the cache is cropped back with `crop_cache`: the rejected rows are removed. The output "
        "equals the verifier's plain greedy decoding, however bad the draft.\n\n"
        "**What drives acceptance** is how often the draft's guess is the verifier's own choice. Text both models "
        "can predict is accepted in long runs: here the line repeated from the prompt (both bundled models learned "
        "to copy from their cache). New invention is where two small models disagree, and a draft sampled at a "
        "higher temperature disagrees more. Every accepted run of k tokens saves k verifier passes."
    )
)
verifier = models.current_info()
other = OTHER_BUNDLED.get(verifier.spec)
drafts = ([other] if other is not None else []) + [SELF]
labels = {SELF: _("itself, sampled (temperature)")}
if other is not None:  # the model's name, shortened to fit its box
    title = _(loading.BUNDLED_MODELS[other].title).replace("Tiny-Shakespeare ", "")
    labels[other] = _("{model} (greedy)").format(model=title)
prompt = st.text_area(
    _("Prompt"),
    speculative.DEFAULT_PROMPT,
    key="int_spec_prompt",
    height=110,
    max_chars=MAX_TEXT_CHARS,
    help=_(TEXT_CAP_HELP),
)
c0, c1, c2, c3 = st.columns([3, 2, 2, 2])
draft_choice = c0.selectbox(
    _("Draft model"),
    drafts,
    format_func=labels.__getitem__,
    key="int_spec_draft",
    help=_("A draft must share the verifier's tokenizer: the two bundled models do."),
)
# Each box has its setting's bounds; a value past them (sent by a client, not the box) gets a message.
k = bounded.number(
    c1, speculative.DRAFT_K, _("Draft length k (1..{top})").format(top=speculative.MAX_K), key="int_spec_k"
)
n_new = bounded.number(
    c2, speculative.NEW_TOKENS, _("Tokens to generate (1..{top})").format(top=speculative.MAX_NEW), key="int_spec_n"
)
temp = bounded.number(
    c3,
    speculative.DRAFT_TEMPERATURE,
    _("Draft temperature ({low}..{high:g})").format(low=speculative.MIN_TEMPERATURE, high=speculative.MAX_TEMPERATURE),
    key="int_spec_t",
    disabled=draft_choice != SELF,
    help=_("Only for a sampled draft; the other bundled model drafts greedily."),
)
try:
    draft = None if draft_choice == SELF else models.cached_model(draft_choice)
    with st.spinner(_("Drafting and verifying...")):
        run = spec_run(
            models.current_model(), prompt, int(n_new), int(k), float(temp) if draft_choice == SELF else None, draft
        )
except (speculative.SpeculativeError, loading.ModelLoadError) as exc:
    st.error(str(exc))
    st.stop()
m = st.columns(3)
m[0].metric(
    _("Acceptance"),
    f"{run.acceptance_rate:.0%}",
    help=_("{accepted} of {proposed} proposed tokens were the verifier's own greedy choice").format(
        accepted=sum(r.accepted for r in run.rounds), proposed=run.draft_passes
    ),
)
m[1].metric(
    _("Verifier passes (plain greedy: {n})").format(n=len(run.tokens)),
    run.verifier_passes,
    help=_("plain greedy decoding needs one pass per generated token, the prefill included"),
)
m[2].metric(_("Cache vs fresh prefill"), f"{run.cache_vs_fresh_max_abs_diff:.1e}")
a11y.chart(st, fig.speculative_figure(run), **PLOT)
st.dataframe(
    [
        {
            _("round"): r.index,
            _("proposed"): " | ".join(repr(t)[1:-1] for t in r.proposed_text),
            _("accepted"): r.accepted,
            _("rows before"): r.cache_len_before,
            _("after verify"): r.cache_len_verified,
            _("after crop"): r.cache_len_after_crop,
        }
        for r in run.rounds
    ],
    hide_index=True,
)
st.caption(
    _(
        "Draft: {draft}. It made {passes} passes of its own; {cropped} verifier cache rows were computed for "
        "rejected proposals and cropped away."
    ).format(draft=i18n.shown_english(run.draft_label), passes=run.draft_passes, cropped=run.rows_cropped)
)
st.markdown(_("**Generated:** {text}").format(text=echo.code(repr(run.text), None)))  # the prompt + the model's text
