"""Cache internals 5: paged blocks. Two real generations from one prompt laid out in fixed-size blocks with
block tables and reference-counted prefix sharing (vLLM's PagedAttention), read back exactly."""

from __future__ import annotations

import streamlit as st

from kvviz.figures import internals as fig
from kvviz.i18n import _
from kvviz.inputs import echo
from kvviz.inputs.prompt_rules import MAX_TEXT_CHARS, TEXT_CAP_HELP
from kvviz.internals import paging
from kvviz.internals.records import PagedRun
from kvviz.model.loading import LoadedModel
from kvviz.ui import a11y, bounded, models, router, sidebar
from pages.internals_shared import DEFAULT_PROMPT, MODEL_HASH, PLOT, explain


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs=MODEL_HASH)  # spinner at the call, translated
def paged_run(loaded: LoadedModel, prompt: str, n_a: int, n_b: int, block: int) -> PagedRun:
    """Deterministic (fixed seed, no timing): safe to share between sessions."""
    from kvviz.internals.lab import paging as paging_lab  # torch: imported only when the model runs

    return paging_lab.paged_generation(loaded, prompt, n_a, n_b, block)


router.ensure_router()  # before anything is drawn: see its docstring
st.title(_("Paged blocks"))
sidebar.needs_all_attention(models.current_info())  # K/V in every layer: not a hybrid
explain(
    _(
        "vLLM-style paging: the cache is a pool of fixed-size blocks; each sequence has a block table mapping its "
        "logical blocks to physical ones. Here the real model generates two continuations of one prompt (A greedy, "
        "B sampled). The full blocks of their common prefix are stored once with reference count 2. Only each "
        "sequence's last block is partly empty, compared with reserving the maximum length up front."
    )
)
prompt = st.text_area(
    _("Prompt"), DEFAULT_PROMPT, key="int_paging_prompt", height=70, max_chars=MAX_TEXT_CHARS, help=_(TEXT_CAP_HELP)
)
c1, c2, c3 = st.columns(3)
# Each box has its setting's bounds; a value past them (sent by a client, not the box) gets a message.
block = bounded.number(
    c1, paging.BLOCK_SIZE, _("Block size (1..{top} tokens)").format(top=paging.MAX_BLOCK_SIZE), key="int_paging_block"
)
n_a = bounded.number(
    c2, paging.NEW_TOKENS_A, _("New tokens, A (0..{top})").format(top=paging.MAX_NEW_TOKENS), key="int_paging_na"
)
n_b = bounded.number(
    c3, paging.NEW_TOKENS_B, _("New tokens, B (0..{top})").format(top=paging.MAX_NEW_TOKENS), key="int_paging_nb"
)
try:
    with st.spinner(_("Generating two sequences...")):
        run = paged_run(models.current_model(), prompt, int(n_a), int(n_b), int(block))
except paging.PagingError as exc:
    st.error(str(exc))
    st.stop()
p = run.plan
m = st.columns(4)
m[0].metric(_("Lengths A / B"), f"{p.seq_lens[0]} / {p.seq_lens[1]}")
m[1].metric(_("Physical blocks"), p.physical_blocks, help=_("shared: {n}").format(n=p.shared_blocks))
m[2].metric(_("Slots allocated, unused"), f"{p.waste_bytes // p.bytes_per_token}")
m[3].metric(_("Paged / pre-allocated bytes"), f"{p.paged_bytes / p.preallocated_bytes:.0%}")
a11y.chart(st, fig.paging_blocks_figure(p), **PLOT)
a11y.chart(st, fig.paging_bytes_figure(p), **PLOT)
st.caption(
    _(
        "Block tables A {table_a}, B {table_b}; refcounts {refcounts}. {bytes_:,} bytes per token (from the real "
        "cache); pre-allocation reserves {max_len} positions per sequence. Reading both caches back through "
        "their block tables reproduces them exactly (max difference {diff:.1e})."
    ).format(
        table_a=list(p.tables[0]),
        table_b=list(p.tables[1]),
        refcounts=list(p.refcounts),
        bytes_=p.bytes_per_token,
        max_len=p.max_len,
        diff=run.gather_max_abs_diff,
    )
)
st.markdown(f"**A:** {echo.code(repr(run.texts[0]), None)}  \n**B:** {echo.code(repr(run.texts[1]), None)}")
