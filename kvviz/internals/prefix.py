"""Prefix reuse: two prompts that start with the same tokens share the cached K/V of those tokens.

    fresh:  prefill all of prompt B                         -> len(B) tokens computed
    reuse:  prefill prompt A, crop the cache to the shared
            prefix, prefill only B's remaining tokens       -> len(B) - shared tokens computed

Causal attention makes this exact: the K/V row of position p depends only on tokens 0..p, so the shared
rows of A's cache are exactly the rows B would compute. The prefix is shared in *tokens*, not characters:
BPE may split the same text differently once the following characters change.
"""

from __future__ import annotations

import copy

from kvviz.i18n import _
from kvviz.inputs.prompt_rules import check_int_in_range, check_prompt
from kvviz.internals.records import PrefixReuse
from kvviz.measure.repeats import time_pair
from kvviz.model.loading import LoadedModel, inference_mode

__all__ = [
    "DEFAULT_A",
    "DEFAULT_B",
    "SHARED_OPENING",
    "PrefixError",
    "PrefixReuse",
    "TIMING_REPEATS",
    "prefix_reuse",
    "shared_prefix_len",
]

TIMING_REPEATS = 9  # median of this many runs for each measured prefill (interleaved, 1 warm-up)
# The page's default prompts (bench/timed_comparisons.py times them too): a long shared opening (like a system
# prompt every request starts with) and two different endings, the case prefix caching is for. Shakespeare's Romeo
# and Juliet, the Prologue (public domain), as the bundled model knows it.
SHARED_OPENING = (
    "Two households, both alike in dignity,\nIn fair Verona, where we lay our scene,\nFrom "
    "ancient grudge break to new mutiny,\nWhere civil blood makes civil hands unclean.\nFrom "
    "forth the fatal loins of these two foes\nA pair of star-cross'd lovers take their life;\n\n"
)
DEFAULT_A = SHARED_OPENING + "ROMEO:\nBut soft, what light through yonder window breaks?"
DEFAULT_B = SHARED_OPENING + "JULIET:\nO Romeo, Romeo! wherefore art thou Romeo?"


class PrefixError(ValueError):
    """The prompt pair cannot be compared; the message says what to change."""


def shared_prefix_len(ids_a: list[int], ids_b: list[int]) -> int:
    """Number of leading token ids the two sequences have in common."""
    n = 0
    for a, b in zip(ids_a, ids_b, strict=False):  # the shorter sequence bounds the common prefix
        if a != b:
            break
        n += 1
    return n


def _tokenize(loaded: LoadedModel, prompt: str, name: str) -> list[int]:
    return check_prompt(
        loaded.tokenizer, prompt, loaded.info.n_positions, _("prompt {name}").format(name=name), error=PrefixError
    )


@inference_mode
def prefix_reuse(loaded: LoadedModel, prompt_a: str, prompt_b: str, repeats: int = TIMING_REPEATS) -> PrefixReuse:
    """Serve prompt B from prompt A's cache (crop to the shared prefix, prefill the rest) and check it."""
    import torch
    from transformers import DynamicCache

    from kvviz.step.engine import cache_bytes, crop_cache

    repeats = check_int_in_range(repeats, 1, 50, _("timing repeats"), error=PrefixError)
    model = loaded.model
    ids_a, ids_b = _tokenize(loaded, prompt_a, "A"), _tokenize(loaded, prompt_b, "B")
    shared = shared_prefix_len(ids_a, ids_b)
    reused = min(shared, len(ids_b) - 1)  # B's last token must still be fed to produce its next-token logits

    # Prompt A's cache, then rolled back to the shared prefix: rows 0..reused-1 are kept untouched.
    cache_a = model(
        input_ids=torch.tensor([ids_a]), past_key_values=DynamicCache(config=model.config), use_cache=True
    ).past_key_values
    crop_cache(cache_a, reused)
    reused_bytes = cache_bytes(cache_a)
    suffix = torch.tensor([ids_b[reused:]])  # (1, len(B) - reused)

    full = torch.tensor([ids_b])  # (1, len(B))

    def run_reuse(cache):  # each timed run starts from its own copy of the cropped prefix, made untimed
        return model(input_ids=suffix, past_key_values=cache, use_cache=True)

    def run_fresh(cache):  # the empty cache is made untimed too: both sides time the forward alone
        return model(input_ids=full, past_key_values=cache, use_cache=True)

    def empty():
        return DynamicCache(config=model.config)

    reuse_out, fresh_out = run_reuse(copy.deepcopy(cache_a)), run_fresh(empty())
    reuse_t, fresh_t = time_pair(
        run_reuse, run_fresh, repeats, prepare_a=lambda: copy.deepcopy(cache_a), prepare_b=empty
    )
    logits_reuse, logits_fresh = reuse_out.logits[0, -1], fresh_out.logits[0, -1]
    kv_diff = max(
        max(float((a.keys - b.keys).abs().max()), float((a.values - b.values).abs().max()))
        for a, b in zip(reuse_out.past_key_values.layers, fresh_out.past_key_values.layers, strict=True)
    )
    tok = loaded.tokenizer
    return PrefixReuse(
        tokens_a=tuple(tok.decode([i]) for i in ids_a),
        tokens_b=tuple(tok.decode([i]) for i in ids_b),
        shared_len=shared,
        reused_len=reused,
        new_tokens_computed=len(ids_b) - reused,
        tokens_saved=reused,
        reused_cache_bytes=reused_bytes,
        fresh=fresh_t,
        reuse=reuse_t,
        max_abs_logit_diff=float((logits_reuse - logits_fresh).abs().max()),
        max_abs_kv_diff=kv_diff,
        same_next_token=int(logits_reuse.argmax()) == int(logits_fresh.argmax()),
    )
