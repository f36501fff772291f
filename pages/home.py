"""Start here: what the KV cache is, and a map of the app."""
from __future__ import annotations

import streamlit as st

from kvviz import ui

ui.ensure_router()  # before anything is drawn: see its docstring
st.title("kvviz: the KV cache, step by step")
st.markdown(
    "When a transformer writes text it produces **one token per forward pass**. In every layer, attention "
    "compares the newest token's *query* with the *keys* of all earlier tokens and mixes their *values*. "
    "Those keys and values do not change once computed, so inference engines keep them in memory: the "
    "**KV cache**. It turns each step's work from *recompute the whole sequence* into *compute one new row "
    "and read the rest*, at the price of memory that grows with every token."
)

info = ui.current_info()  # no torch import needed: the first page renders fast
bytes_per_token = 2 * info.n_layer * info.n_kv_heads * info.head_dim * 4  # K and V, fp32
st.info(
    f"**Model loaded:** {info.label}.\n\n"
    f"Its cache stores, per token: 2 (K and V) x {info.n_layer} layers x {info.n_kv_heads} heads x "
    f"{info.head_dim} dims x 4 bytes (float32) = **{bytes_per_token:,} bytes**; "
    f"at its full context of {info.n_positions} tokens that is {bytes_per_token * info.n_positions:,} bytes "
    f"({bytes_per_token * info.n_positions / 2**20:.2f} MiB)."
)

st.subheader("A lesson in five pages")
lessons = [
    ("pages/step_through.py", "Step through generation",
     "Prefill a prompt, then generate one token per click. Watch every layer's K and V cache grow by one row, "
     "see where the new query attends, the next-token probabilities, and step back."),
    ("pages/attention_ops.py", "Count the work",
     "Exact operation counts with and without the cache: attention is where the quadratic cost goes, the MLP "
     "and projections are not saved at all. Popular claims checked."),
    ("pages/memory_budget.py", "Memory budget",
     "KV-cache bytes for any model (MHA, GQA, MQA, MLA, sliding windows, quantized caches), what fits on a GPU, "
     "side-by-side what-ifs you can share as a link."),
    ("pages/speedup.py", "Measured speed-up",
     "Time a real generation without cache, with transformers' growing cache and with a pre-allocated one, "
     "on this machine; compare with the memory-bandwidth roofline."),
    ("pages/internals_layout.py", "Cache internals",
     "Memory layouts, prefix reuse, cross-attention, sliding windows, paged blocks, quantized caches and "
     "speculative decoding's rollback, on the real model."),
]
for path, title, blurb in lessons:
    with st.container(border=True):
        st.page_link(path, label=f"**{title}**")
        st.caption(blurb)

with st.expander("For teachers: a 10-minute classroom walkthrough"):
    st.markdown(
        "1. *Step through generation*: prefill `ROMEO:`, press **Next token** three times. Ask: how many K rows "
        "did layer 0 gain per click? (One.) Which token is not yet in the cache? (The dashed one.)\n"
        "2. Open *Without the cache*: the same logits, but every row recomputed. Caching is an optimization, "
        "not an approximation.\n"
        "3. *Count the work*: set 1000 new tokens and find which quantity the cache saves ~500x, and which it "
        "does not save at all.\n"
        "4. *Memory budget*: load Llama-3-8B, set 128k context: why GQA and quantized caches exist.\n"
        "5. *Measured speed-up*: run the default benchmark and compare the measured ratio to the op-count ratio."
    )
st.caption("Everything runs offline on a CPU. The bundled model was trained by `python -m kvviz.train` on "
           "public-domain Shakespeare; pretrained GPT-2 weights are used when you have them locally.")
