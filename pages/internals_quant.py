"""Cache internals 6: quantized caches. The real cache of a prompt stored in fp16 / bf16 / int8 / int4 (optionally
with transformers' full-precision residual window), its bytes and error, and a bounded greedy-agreement test."""

from __future__ import annotations

import streamlit as st

from kvviz.figures import internals as fig
from kvviz.i18n import _, list_sep, ngettext
from kvviz.inputs.prompt_rules import MAX_TEXT_CHARS, TEXT_CAP_HELP
from kvviz.internals import quant
from kvviz.internals.quant import (
    AGREEMENT_MAX_PROMPT_TOKENS,
    AGREEMENT_MAX_PROMPTS,
    AGREEMENT_MAX_TOKENS,
    QuantError,
    check_agreement_work,
)
from kvviz.internals.records import QuantReport, SchemeAgreement
from kvviz.memory import dtypes
from kvviz.model.loading import LoadedModel
from kvviz.ui import a11y, bounded, models, router, sidebar
from pages.internals_shared import DEFAULT_PROMPT, MODEL_HASH, PLOT, explain, run_queued

DEFAULT_AGREEMENT_PROMPTS = "ROMEO:\nJULIET: O Romeo, Romeo\nFirst Citizen:\nKING RICHARD II:\nMENENIUS: What work"
AGREEMENT_KEY = "int_quant_agreement"  # (inputs, results) of this session's last agreement run


def transformers_residual_length() -> int:
    """QuantizedCache's `residual_length` default, read from transformers' source without importing torch."""
    return int(dtypes.transformers_quantized_defaults().get("residual_length", 128))


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=MODEL_HASH)  # spinner at the call, translated
def reports(loaded: LoadedModel, prompt: str, group: int, residual_rows: int) -> list[QuantReport]:
    """Deterministic (no timing): safe to share between sessions."""
    from kvviz.internals.lab import quant as quant_lab  # torch: imported only when the model runs

    return [quant_lab.quant_report(loaded, prompt, s, group, residual_rows) for s in quant.SCHEMES]


@st.cache_data(show_spinner=False, max_entries=8, hash_funcs=MODEL_HASH)
def agreement(loaded: LoadedModel, prompts: tuple[str, ...], n_new: int, group: int) -> tuple[SchemeAgreement, ...]:
    from kvviz.internals.lab import quant as quant_lab  # torch: imported only when the model runs

    return quant_lab.greedy_agreement(loaded, list(prompts), n_new, quant.SCHEMES, group)


router.ensure_router()  # before anything is drawn: see its docstring
st.title(_("Quantized caches"))
sidebar.needs_all_attention(models.current_info())  # K/V in every layer: not a hybrid
residual_length = transformers_residual_length()
explain(
    _(
        "The real cache of your prompt is stored in fp16, bf16, int8 and int4 and read back. int8/int4 use "
        "asymmetric round-to-nearest with an **fp16 scale and fp16 zero point per group** of G consecutive channels "
        "of one token's K or V head vector (4 bytes per group), int4 packed two per byte; the error per element is "
        "at most scale/2.\n\n"
        "**Per token or per channel?** kvviz groups *per token*, for keys and values alike. KIVI (arXiv:2402.02750) "
        "quantizes **keys per channel** (a group runs along positions, because key outliers sit in fixed channels) "
        "and values per token. transformers' `QuantizedCache` keeps the newest tokens in full precision: a "
        "**residual window** of `residual_length` = {residual} rows (its default, read from transformers). "
        "After t decode steps it holds t mod {residual} full-precision rows, then quantizes them all at once; "
        "right after a prefill it holds none. Set how many newest rows stay in full precision to see what they cost.\n\n"
        "Then the model generates greedily with each format (every new K/V row quantized as it enters the cache) "
        "and we count how often it picks the full-precision token."
    ).format(residual=residual_length)
)
info = models.current_info()
prompt = st.text_area(
    _("Prompt"), DEFAULT_PROMPT, key="int_quant_prompt", height=70, max_chars=MAX_TEXT_CHARS, help=_(TEXT_CAP_HELP)
)
c1, c2 = st.columns(2)
# Each box has its setting's bounds; a value past them (sent by a client, not the box) gets a message.
group = bounded.number(
    c1,
    quant.GROUP_SIZE.up_to(info.head_dim),
    _("Group size G (must divide head_dim = {head_dim})").format(head_dim=info.head_dim),
    key="int_quant_group",
)
residual = bounded.number(
    c2,
    quant.RESIDUAL_ROWS.up_to(residual_length - 1),
    _("Newest rows kept in full precision (0..{top}: the residual window)").format(top=residual_length - 1),
    key="int_quant_residual",
)
try:
    with st.spinner(_("Quantizing the real cache...")):
        rows = reports(models.current_model(), prompt, int(group), residual)
except QuantError as exc:
    st.error(str(exc))
    st.stop()
st.dataframe(
    [
        {
            _("format"): r.scheme,
            _("bytes"): r.stored_bytes,
            _("of which scales+zeros"): r.overhead_bytes,
            _("of which full-precision residual"): r.residual_bytes,
            _("vs fp32"): f"{r.stored_bytes / r.fp32_bytes:.1%}",
            _("calculator bytes"): r.calculator_bytes,
            _("worst layer K error"): f"{max(la.key_rel_rms for la in r.layers):.2e}",
            _("worst layer V error"): f"{max(la.value_rel_rms for la in r.layers):.2e}",
        }
        for r in rows
    ],
    hide_index=True,
)
st.caption(
    ngettext("{n} cached token; {newest}.", "{n} cached tokens; {newest}.", rows[0].seq_len).format(
        n=rows[0].seq_len,
        newest=ngettext(
            "{residual} newest row per layer left in full precision",
            "{residual} newest rows per layer left in full precision",
            rows[0].residual_rows,
        ).format(residual=rows[0].residual_rows),
    )
)
c1, c2 = st.columns(2)
a11y.chart(c1, fig.quant_bytes_figure(rows), **PLOT)
a11y.chart(c2, fig.quant_error_figure(rows), **PLOT)

st.header(_("Does generation change? Greedy agreement"))
st.caption(
    _(
        "Bounded work: at most {prompts} prompts, {tokens} tokens each, and prompts x tokens at most {total}; "
        "one measurement at a time on this server."
    ).format(prompts=AGREEMENT_MAX_PROMPTS, tokens=AGREEMENT_MAX_TOKENS, total=AGREEMENT_MAX_PROMPT_TOKENS)
)
prompts = st.text_area(
    _("Prompts for the agreement test (one per line, at most {n})").format(n=AGREEMENT_MAX_PROMPTS),
    DEFAULT_AGREEMENT_PROMPTS,
    key="int_quant_prompts",
    height=110,
    max_chars=MAX_TEXT_CHARS,
    help=_(TEXT_CAP_HELP),
)
n_new = bounded.number(
    st, quant.AGREEMENT_TOKENS, _("Tokens per prompt (1..{top})").format(top=AGREEMENT_MAX_TOKENS), key="int_quant_n"
)
lines = tuple(line for line in prompts.splitlines() if line.strip())
if st.button(_("Measure greedy agreement"), key="int_quant_run"):
    try:
        check_agreement_work(len(lines), int(n_new))  # refuse past-cap work before queueing for it
        loaded = models.current_model()
        results = run_queued(
            _("Generating with each cache format"), lambda: agreement(loaded, lines, int(n_new), int(group))
        )
    except QuantError as exc:
        st.error(str(exc))
        results = None
    if results is not None:
        st.session_state[AGREEMENT_KEY] = ((lines, int(n_new), int(group)), results)
stored = st.session_state.get(AGREEMENT_KEY)
if stored is not None:
    (done_lines, done_n, done_group), results = stored
    a11y.chart(st, fig.quant_agreement_figure(results), **PLOT)
    st.caption(
        _(
            "{per_format} over {n} tokens each, group size {group} (teacher-forced: both runs see the "
            "full-precision tokens)."
        ).format(
            per_format=list_sep().join(
                _("{format}: {same}/{total} prompts identical").format(
                    format=r.scheme, same=r.identical_prompts, total=len(done_lines)
                )
                for r in results
            ),
            n=done_n,
            group=done_group,
        )
    )
