"""Prefix reuse, run: serve prompt B from prompt A's real cache, cropped to their shared prefix, prefill only B's
remaining tokens, time it against a fresh prefill of B (interleaved repeats, kvviz.measure), and check that both
give the same logits and K/V. The default prompts, repeats and error are kvviz.internals.prefix's (torch-free).
"""

from __future__ import annotations

import copy

import torch
from transformers import DynamicCache

from kvviz.i18n import _
from kvviz.inputs.prompt_rules import check_int_in_range, check_prompt
from kvviz.internals.prefix import TIMING_REPEATS, PrefixError, shared_prefix_len
from kvviz.internals.records import PrefixReuse
from kvviz.measure.repeats import time_pair
from kvviz.model.loading import LoadedModel
from kvviz.step.engine import cache_bytes, crop_cache

__all__ = ["prefix_reuse"]


def _tokenize(loaded: LoadedModel, prompt: str, name: str) -> list[int]:
    return check_prompt(
        loaded.tokenizer, prompt, loaded.info.n_positions, _("prompt {name}").format(name=name), error=PrefixError
    )


@torch.inference_mode()
def prefix_reuse(loaded: LoadedModel, prompt_a: str, prompt_b: str, repeats: int = TIMING_REPEATS) -> PrefixReuse:
    """Serve prompt B from prompt A's cache (crop to the shared prefix, prefill the rest) and check it."""
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
