"""kvviz's glossary: one definition per term, in the words every page and tooltip uses (no Streamlit, no torch).

pages/glossary.py shows it, one anchored entry per term (?term=... filters to it); `help_text(term)` gives a
tooltip in the same words, so a page's help= and the glossary never drift; pages draw a term as a link to the
glossary with that tooltip (`st.page_link("pages/glossary.py", query_params={"term": ...}, help=help_text(...))`).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    name: str
    definition: str  # markdown, a few sentences for a student
    see: str = ""  # the kvviz page where it is live (a pages/*.py path), "" if none
    also: tuple[str, ...] = ()  # other names for the same idea (searchable)

    @property
    def anchor(self) -> str:
        return "".join(c if c.isalnum() else "-" for c in self.name.lower()).strip("-")


TERMS: tuple[Term, ...] = (
    Term("Token", "A piece of text the model reads as one unit: a word, part of a word, or punctuation. GPT-2's "
         "tokenizer often splits a rare word (' green' may become ' gre' + 'en') and a space belongs to the token "
         "after it. Each token has a **position**, counted from 0.", "pages/step_through.py"),
    Term("Query, key, value (Q, K, V)", "In every head of every layer, each token's hidden vector is projected into "
         "three vectors of head_dim numbers. The newest token's **query** is scored against the **keys** of every "
         "token so far (its own included); the softmax of the scores weights an average of their **values**.",
         "pages/step_through.py", ("Q", "K", "V")),
    Term("Attention head", "One of several attention computations that run side by side in a layer, each with its "
         "own Q, K, V projections of head_dim numbers. Heads learn different jobs (previous-token, first-token, "
         "induction).", "pages/attention_patterns.py"),
    Term("head_dim", "The length of one head's query, key and value vectors: the hidden size divided by the number "
         "of query heads (768 / 12 = 64 in GPT-2 small). One cached K row of one head holds head_dim numbers.",
         "pages/step_through.py"),
    Term("KV cache", "The keys and values of every token processed so far, kept in memory for every layer and K/V "
         "head, so that each new token computes only its own row instead of recomputing all of them. Shape per "
         "layer: [batch, kv_heads, seq_len, head_dim]. It is exact: a cached run gives the same tokens as an "
         "uncached one.", "pages/step_through.py", ("past_key_values", "DynamicCache")),
    Term("Prefill", "The first forward pass: the whole prompt at once. It writes one K row and one V row per prompt "
         "token into every layer's cache, and predicts the first new token.", "pages/step_through.py"),
    Term("Decode step", "Each later forward pass: it feeds only the newest token, appends its K and V row to every "
         "layer's cache and reads all the cached rows to predict the next token.", "pages/step_through.py",
         ("Next token",)),
    Term("Dot product", "One attention score q · k: multiply a query and a key number by number and add up the "
         "head_dim products. A cached step computes one row of them per head (one per key, its own included); "
         "an uncached step recomputes the whole triangle. kvviz counts the causal pairs L(L+1)/2; eager attention "
         "computes all L x L and masks the future ones.", "pages/attention_ops.py", ("QK^T",)),
    Term("Causal mask", "A token may attend only to itself and earlier tokens, never to later ones: the attention "
         "matrix is a triangle. This is why earlier K and V never change, and why caching them is exact.",
         "pages/attention_patterns.py"),
    Term("Induction head", "A head that copies: when the newest token appeared earlier, it attends to the token that "
         "came right *after* that earlier occurrence, so the model can predict it again. It is why any old row "
         "of the cache may matter.", "pages/attention_patterns.py", ("copying head",)),
    Term("MHA, GQA, MQA", "Multi-head attention (MHA) gives every query head its own K/V head. Grouped-query "
         "attention (GQA) lets a group of query heads share one K/V head (Llama-3-8B: 32 query heads, 8 K/V "
         "heads), shrinking the cache by the group size. Multi-query attention (MQA) shares a single K/V head "
         "among all of them.", "pages/memory_budget.py", ("grouped-query attention", "multi-query attention")),
    Term("MLA", "Multi-head latent attention (DeepSeek-V2/V3): the cache stores one small compressed latent vector "
         "per token and layer (plus a small shared positional key) instead of full K and V per head; the heads' "
         "keys and values are rebuilt from it.", "pages/memory_budget.py"),
    Term("FLOP", "One floating-point operation. A multiply-add counts as 2 FLOP; kvviz's op counts count it as one "
         "op (so FLOP = 2 x ops). FLOP/s (FLOPS) is a rate: how many per second a chip can do at its peak.",
         "pages/attention_ops.py", ("FLOPS", "FLOP/s")),
    Term("GEMV, GEMM", "General matrix-vector multiply (GEMV) and matrix-matrix multiply (GEMM). A cached decode step "
         "multiplies each weight matrix by one token's vector: GEMVs, which read every weight for very little "
         "arithmetic. An uncached pass or a prefill multiplies by many tokens at once: GEMMs, which reuse each "
         "weight many times.", "pages/speedup.py"),
    Term("Arithmetic intensity", "FLOP done per byte read from memory. A GEMV does about 2 FLOP per weight read "
         "(low intensity: memory-bound); a GEMM over n tokens about 2n (high: compute-bound).", "pages/speedup.py"),
    Term("Roofline", "A chart of a chip's two ceilings: FLOP/s is capped by the compute peak, and by memory bandwidth "
         "x arithmetic intensity. Low-intensity work (a decode step) sits under the sloped memory roof, "
         "high-intensity work (prefill) under the flat compute roof.", "pages/speedup.py"),
    Term("Overhead", "Time a step pays whatever its size: Python, PyTorch's per-operator dispatch, and on a GPU the "
         "CPU's time to launch each kernel. For a small model a cached step is mostly overhead, so it is far "
         "less than the op ratio faster.", "pages/speedup.py"),
    Term("Paged blocks", "How serving engines (vLLM's PagedAttention) store the cache: fixed-size blocks of, say, 16 "
         "tokens, allocated as a sequence grows and shared between sequences with a common prefix, instead of "
         "one buffer pre-allocated for the maximum length.", "pages/internals_paging.py",
         ("PagedAttention", "block table")),
    Term("Sliding window", "A layer that attends only to the last W tokens, so its cache stops growing at W rows "
         "(Mistral; Gemma's local layers).", "pages/internals_window.py"),
    Term("Quantized cache", "Storing K and V in 8 or 4 bits instead of 16 or 32, with a scale per group of numbers: "
         "2 to 8x less memory for a small error in attention.", "pages/internals_quant.py"),
    Term("Prefix caching", "Reusing the cached rows of a shared beginning (a system prompt) across requests, so only "
         "the new part is prefilled.", "pages/internals_prefix.py"),
    Term("Bytes: GB and GiB", "kvviz's one rule: GB, MB, KB are decimal (10^9, 10^6, 10^3 bytes); GiB, MiB, KiB are "
         "binary (2^30, 2^20, 2^10). A figure printed as 'GB' is read as decimal first; when only the binary "
         "reading matches, kvviz says so.", "pages/memory_budget.py", ("GiB", "MiB", "GB", "MB")),
)
BY_NAME = {t.name: t for t in TERMS}


def find(word: str) -> Term | None:
    """The term named `word` (or one of its other names), case-insensitive."""
    w = word.lower()
    for t in TERMS:
        if w == t.name.lower() or w in (a.lower() for a in t.also):
            return t
    return None


def help_text(word: str) -> str:
    """A tooltip in the glossary's words, ending with where the full entry lives."""
    term = find(word)
    if term is None:
        raise KeyError(word)
    return f"**{term.name}.** {term.definition}\n\n(From the Glossary page: click to open it.)"
