"""Speculative decoding's rollback: a draft proposes k tokens, the verifier checks them in one pass, and the
verifier's cache is cropped back to the accepted length (Leviathan et al. 2023, arXiv:2211.17192).

One round, with the verifier's cache holding L rows and its chosen-but-unfed token `pending`:

    draft     proposes d_1..d_k (here: the same bundled model, *sampled* at a temperature, so it sometimes
              disagrees; a real draft is a smaller model)
    verify    feed [pending, d_1..d_k] in ONE pass            -> cache grows to L + k + 1 rows
              the verifier's greedy choice after each fed token: v_0..v_k
    accept    a = number of leading d_i with d_i == v_{i-1}
    crop      keep pending + d_1..d_a: crop_cache(cache, L + 1 + a); rows of rejected drafts are removed
    emit      d_1..d_a, then v_a (the correction, or a bonus token when all k were accepted)

With a greedy verifier the output is exactly the verifier's own greedy text, however bad the draft.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import DynamicCache

from kvviz.models import LoadedModel
from kvviz.stepping import crop_cache

MAX_K = 8
MAX_NEW = 64


class SpeculativeError(ValueError):
    """Settings outside sensible bounds; the message says what is allowed."""


@dataclass(frozen=True)
class SpecRound:
    index: int
    proposed: tuple[int, ...]  # d_1..d_k
    proposed_text: tuple[str, ...]
    verifier_choice: tuple[int, ...]  # v_0..v_k
    accepted: int  # a
    cache_len_before: int  # L
    cache_len_verified: int  # L + k + 1: every proposal's row was computed
    cache_len_after_crop: int  # L + 1 + a
    emitted: tuple[int, ...]  # d_1..d_a, v_a

    @property
    def rejected(self) -> int:
        return len(self.proposed) - self.accepted


@dataclass(frozen=True)
class SpecRun:
    prompt_tokens: int
    k: int
    draft_temperature: float
    rounds: tuple[SpecRound, ...]
    tokens: tuple[int, ...]  # generated tokens (the first comes from the prefill)
    text: str
    verifier_passes: int  # forward passes of the verifier, prefill included
    final_cache_len: int
    cache_vs_fresh_max_abs_diff: float  # the cropped cache vs a fresh prefill of the same tokens

    @property
    def draft_passes(self) -> int:
        return sum(len(r.proposed) for r in self.rounds)

    @property
    def rows_cropped(self) -> int:
        return sum(r.cache_len_verified - r.cache_len_after_crop for r in self.rounds)

    @property
    def acceptance_rate(self) -> float:
        proposed = sum(len(r.proposed) for r in self.rounds)
        return sum(r.accepted for r in self.rounds) / proposed if proposed else float("nan")


@torch.inference_mode()
def _draft(loaded: LoadedModel, context: list[int], k: int, temperature: float, gen: torch.Generator) -> list[int]:
    """k tokens sampled from the model at `temperature`, continuing `context` (its own cache, thrown away)."""
    model = loaded.model
    cache = DynamicCache(config=model.config)
    feed, out = context, []
    for _ in range(k):
        logits = model(input_ids=torch.tensor([feed]), past_key_values=cache, use_cache=True).logits[0, -1]
        token = int(torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=gen))
        out.append(token)
        feed = [token]
    return out


@torch.inference_mode()
def speculative_decode(loaded: LoadedModel, prompt: str, n_new: int = 24, k: int = 4, draft_temperature: float = 1.0,
                       seed: int = 0) -> SpecRun:
    """Generate n_new tokens with a sampled draft and a greedy verifier over one real DynamicCache."""
    if not 1 <= k <= MAX_K:
        raise SpeculativeError(f"draft length k must be between 1 and {MAX_K} (got {k})")
    if not 1 <= n_new <= MAX_NEW:
        raise SpeculativeError(f"tokens to generate must be between 1 and {MAX_NEW} (got {n_new})")
    if not 0.05 <= draft_temperature <= 5.0:
        raise SpeculativeError(f"draft temperature must be between 0.05 and 5.0 (got {draft_temperature})")
    if prompt is None or not prompt.strip():
        raise SpeculativeError("The prompt is empty: type a few words.")
    ids = loaded.tokenizer(prompt).input_ids
    limit = loaded.info.n_positions
    if len(ids) + n_new > limit:
        raise SpeculativeError(f"prompt ({len(ids)} tokens) + {n_new} new tokens exceeds the model's {limit} positions")
    model = loaded.model
    gen = torch.Generator().manual_seed(seed)
    cache = DynamicCache(config=model.config)
    logits = model(input_ids=torch.tensor([ids]), past_key_values=cache, use_cache=True).logits[0, -1]
    tokens = [int(logits.argmax())]  # the last one is always `pending`: chosen, not yet in the cache
    passes, rounds = 1, []
    while len(tokens) < n_new:
        before = cache.get_seq_length()
        k_now = min(k, n_new - len(tokens), limit - before - 1)
        proposed = _draft(loaded, ids + tokens, k_now, draft_temperature, gen)
        out = model(input_ids=torch.tensor([[tokens[-1]] + proposed]), past_key_values=cache, use_cache=True)
        passes += 1
        choice = [int(t) for t in out.logits[0].argmax(-1)]  # v_0..v_k: greedy after each fed token
        verified = cache.get_seq_length()
        accepted = 0
        while accepted < k_now and proposed[accepted] == choice[accepted]:
            accepted += 1
        crop_cache(cache, before + 1 + accepted)  # drop the rows of the rejected proposals
        emitted = proposed[:accepted] + [choice[accepted]]
        tokens.extend(emitted)
        rounds.append(SpecRound(
            index=len(rounds), proposed=tuple(proposed),
            proposed_text=tuple(loaded.tokenizer.decode([t]) for t in proposed), verifier_choice=tuple(choice),
            accepted=accepted, cache_len_before=before, cache_len_verified=verified,
            cache_len_after_crop=cache.get_seq_length(), emitted=tuple(emitted),
        ))
    tokens = tokens[:n_new]
    fed = ids + tokens[:-1]  # what the cache should now hold
    crop_cache(cache, min(cache.get_seq_length(), len(fed)))
    fresh = model(input_ids=torch.tensor([fed[: cache.get_seq_length()]]), past_key_values=DynamicCache(
        config=model.config), use_cache=True).past_key_values
    diff = max(
        max(float((a.keys - b.keys).abs().max()), float((a.values - b.values).abs().max()))
        for a, b in zip(cache.layers, fresh.layers)
    )
    return SpecRun(
        prompt_tokens=len(ids), k=k, draft_temperature=draft_temperature, rounds=tuple(rounds), tokens=tuple(tokens),
        text=loaded.tokenizer.decode(tokens), verifier_passes=passes, final_cache_len=cache.get_seq_length(),
        cache_vs_fresh_max_abs_diff=diff,
    )
