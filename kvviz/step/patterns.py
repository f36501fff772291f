"""Every head's full attention matrix over a sequence, from one uncached forward pass (torch; records are
torch-free in kvviz.step.pattern_records).

    run = pattern_run(loaded, token_ids)      # PatternRun: per layer [num_heads, seq_len, seq_len] + scores

The model must use eager attention (the only implementation that returns attention weights); the app loads
every model that way. The pass runs under the shared model's MODEL_LOCK (kvviz.model.loading), like the step page's and the
lesson's passes, so a classroom of sessions never piles passes onto the cores. A second, fixed pass over the induction
probe (seeded random tokens, repeated once) scores every head's induction behaviour whatever the prompt is.
"""

from __future__ import annotations

import weakref

import numpy as np
import torch

from kvviz.model.loading import MODEL_LOCK, LoadedModel
from kvviz.model.tokens import token_text
from kvviz.step import pattern_records as pr

MAX_PATTERN_TOKENS = pr.MAX_PATTERN_TOKENS


def _attentions(loaded: LoadedModel, token_ids: list[int]) -> list[np.ndarray]:
    """Per attention layer [num_heads, seq_len, seq_len] attention weights of one uncached pass (every layer but a
    hybrid's linear-attention layers, which compute no attention matrix)."""
    if loaded.model.config._attn_implementation != "eager":
        raise ValueError("Attention patterns need a model loaded with eager attention.")
    input_ids = torch.tensor([token_ids], dtype=torch.long)  # [1, seq_len]
    with MODEL_LOCK, torch.inference_mode():
        out = loaded.model(input_ids=input_ids, use_cache=False, output_attentions=True)
    # out.attentions: one [1, num_heads, seq_len, seq_len] tensor per layer; num_heads counts QUERY heads (GQA too)
    return [a[0].float().numpy() for a in out.attentions]


# Per shared model object, weakly: when st.cache_resource drops a model, its probe scores go with it (an
# lru_cache here would keep up to 8 evicted models alive, over the server's memory budget).
_PROBE_SCORES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _probe_scores(loaded: LoadedModel) -> tuple[np.ndarray, ...]:
    """Per layer [num_heads] induction scores on the fixed probe, computed once per loaded model."""
    scores = _PROBE_SCORES.get(loaded.model)
    if scores is None:
        ids = pr.probe_token_ids(loaded.info.vocab_size)
        attentions = _attentions(loaded, ids)
        scores = _PROBE_SCORES[loaded.model] = tuple(pr.induction_score(a, ids) for a in attentions)
    return scores


def probe_induction_scores(loaded: LoadedModel) -> tuple[np.ndarray, ...]:
    """Per layer [num_heads] (query heads) induction scores on the fixed probe: the copy probe other concepts use
    to find the heads that read far back (the eviction lab's DuoAttention-style retrieval heads)."""
    return _probe_scores(loaded)


def pattern_run(loaded: LoadedModel, token_ids: list[int]) -> pr.PatternRun:
    """Every layer's full causal attention over token_ids (at most MAX_PATTERN_TOKENS, at least 2)."""
    if not 2 <= len(token_ids) <= MAX_PATTERN_TOKENS:
        raise ValueError(
            f"Attention patterns are drawn for 2 to {MAX_PATTERN_TOKENS} tokens; this sequence has {len(token_ids)}."
        )
    attentions = _attentions(loaded, list(token_ids))  # one per attention layer (a hybrid's linear layers have none)
    probe = _probe_scores(loaded)
    layers = tuple(
        pr.LayerPatterns(
            layer=loaded.info.attention_layers[i],
            attention=a,
            previous_token_score=pr.previous_token_score(a),
            first_token_score=pr.first_token_score(a),
            induction_score=pr.induction_score(a, token_ids),
            probe_induction_score=probe[i],
        )
        for i, a in enumerate(attentions)
    )
    info = loaded.info
    return pr.PatternRun(
        model_label=info.label,
        token_ids=tuple(token_ids),
        tokens=tuple(token_text(loaded.tokenizer, t) for t in token_ids),
        n_head=info.n_head,
        n_kv_heads=info.n_kv_heads,
        layers=layers,
    )
