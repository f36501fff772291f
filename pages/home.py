"""Start here: what the KV cache is, and a map of the app."""

from __future__ import annotations

import streamlit as st

from kvviz import ops, routes
from kvviz.i18n import _
from kvviz.teaching import LESSON_STEPS
from kvviz.ui import links, models, router

router.ensure_router()  # before anything is drawn: see its docstring
link_params = links.link_params()  # every link the page makes keeps the language and the model
st.title(_("kvviz: the KV cache, step by step"))
st.markdown(
    _(
        "When a transformer writes text it produces **one token per forward pass**. In every layer, attention "
        "compares the newest token's *query* with the *keys* of every token so far, its own included, and mixes "
        "their *values*. "
        "Those keys and values do not change once computed, so inference engines keep them in memory: the "
        "**KV cache**. It turns each step's work from *recompute the whole sequence* into *compute one new row "
        "and read the rest*, at the price of memory that grows with every token."
    )
)

info = models.current_info()  # no torch import needed: the first page renders fast
cache = info.cache_layers()  # layer by layer, as transformers builds it (float32 here)
bytes_per_token = cache.bytes_per_token  # K and V of one token, every attention layer
full_context = cache.bytes_at(info.n_positions)
st.info(
    _(
        "**Model loaded:** {label}.\n\n"
        "Its cache stores, per token: 2 (K and V) x {layers} layers x {heads} heads x "
        "{head_dim} dims x 4 bytes (float32) = **{bytes_per_token:,} bytes**; "
        "at its full context of {positions} tokens that is {full_context:,} bytes "
        "({full_mib:.2f} MiB)."
    ).format(
        label=info.shown_label(),
        layers=len(info.attention_layers),
        heads=info.n_kv_heads,
        head_dim=info.head_dim,
        bytes_per_token=bytes_per_token,
        positions=info.n_positions,
        full_context=full_context,
        full_mib=full_context / 2**20,
    )
)
if cache.fixed_bytes:  # a hybrid: only its attention layers grow
    st.caption(
        _(
            "Only {attention} of its {layers} layers keep K and V; the other {linear} keep a fixed state of "
            "{state:,} bytes in all, counted in the full-context figure and the same at every length."
        ).format(
            attention=len(info.attention_layers),
            layers=info.n_layer,
            linear=len(info.linear_layers),
            state=cache.fixed_bytes,
        )
    )

with st.container(border=True):
    st.page_link(
        routes.LESSON.file,
        label=_("**Start the lesson: the KV cache in {n} questions**").format(n=LESSON_STEPS),
        icon=routes.LESSON.icon,
        query_params=link_params,
    )
    st.caption(
        _(
            "Each step asks a question (how many rows? how many bytes?), gives a hint after a first wrong answer "
            "and the worked answer after a second, with a figure computed live on the real model. It ends with "
            "a summary and a score. For a class: *Class mode* puts the question up large and reveals it with "
            "one click; a printable handout downloads from the lesson."
        )
    )
    row = st.container(horizontal=True)
    row.page_link(
        routes.TEACHERS.file,
        label=_("For teachers: 30- and 45-minute plans"),
        icon=routes.TEACHERS.icon,
        query_params=link_params,
    )
    row.page_link(
        routes.GLOSSARY.file, label=_(routes.GLOSSARY.title), icon=routes.GLOSSARY.icon, query_params=link_params
    )

shape = info.ops_shape()
st.header(_("The pages"))
cards = [
    (
        routes.STEP_THROUGH,
        _(routes.STEP_THROUGH.title),
        _(
            "Prefill a prompt, then one token per click (or the Right arrow). Watch every layer's K and V cache grow by "
            "one row, the new query's attention beside the rows it reads, the next-token probabilities; step back; "
            "race the cached step against full recomputation. Presenter mode for a projector."
        ),
    ),
    (
        routes.ATTENTION_OPS,
        _(routes.ATTENTION_OPS.title),
        _(
            "Exact operation counts with and without the cache. {savings} (Attention counted as the causal pairs "
            "L(L+1)/2 a query actually needs; eager attention computes the full L x L square and masks the future "
            "half.)"
        ).format(savings=ops.savings_sentence(shape, 16, 200)),
    ),
    (
        routes.MEMORY_BUDGET,
        _(routes.MEMORY_BUDGET.title),
        _(
            "KV-cache bytes for any model (MHA, GQA, MQA, MLA, sliding windows, quantized caches), what fits on a GPU, "
            "side-by-side what-ifs you can share as a link."
        ),
    ),
    (
        routes.SPEEDUP,
        _(routes.SPEEDUP.title),
        _(
            "Time a real generation without cache, with transformers' growing cache and with a pre-allocated one, "
            "on this machine; compare with the roofline."
        ),
    ),
    (
        routes.CLAIMS,
        _(routes.CLAIMS.title),
        _("Published KV-cache figures and popular sentences, each with its source, the arithmetic and a verdict."),
    ),
    (
        routes.INTERNALS_LAYOUT,
        _(routes.INTERNALS),  # the section's first page
        _(
            "Memory layouts, prefix reuse, cross-attention, sliding windows, paged blocks, quantized caches and "
            "speculative decoding's rollback, one page each, on the real model."
        ),
    ),
]
for route, title, blurb in cards:
    with st.container(border=True):
        st.page_link(route.file, label=f"**{title}**", query_params=link_params)
        st.caption(blurb)
st.caption(
    _(
        "Everything runs offline on a CPU. The bundled model was trained by `python -m kvviz.training.train` "
        "on public-domain Shakespeare; pretrained GPT-2 weights are used when you have them locally."
    )
)
