"""Speculative decoding's rollback, run: a draft proposes k tokens, the verifier checks them in one pass, and the
verifier's cache is cropped back to the accepted length (Leviathan et al. 2023, arXiv:2211.17192).

One round, with the verifier's cache holding L rows and its chosen-but-unfed token `pending`:

    draft     proposes d_1..d_k: another small model sharing the tokenizer (the two bundled models), greedy;
              or the verifier itself *sampled* at a temperature, so it sometimes disagrees
    verify    feed [pending, d_1..d_k] in ONE pass            -> cache grows to L + k + 1 rows
              the verifier's greedy choice after each fed token: v_0..v_k
    accept    a = number of leading d_i with d_i == v_{i-1}
    crop      keep pending + d_1..d_a: crop_cache(cache, L + 1 + a); rows of rejected drafts are removed
    emit      d_1..d_a, then v_a (the correction, or a bonus token when all k were accepted)

With a greedy verifier the output is exactly the verifier's own greedy text, however bad the draft. The settings
and their checks are kvviz.internals.speculative's (torch-free).
"""

from __future__ import annotations

import torch
from transformers import DynamicCache

from kvviz.i18n import _
from kvviz.inputs.prompt_rules import check_prompt
from kvviz.internals.records import SPEC_SELF_DRAFT, SpecRound, SpecRun
from kvviz.internals.speculative import DRAFT_K, DRAFT_TEMPERATURE, NEW_TOKENS, SpeculativeError
from kvviz.model.loading import LoadedModel
from kvviz.step.engine import crop_cache

__all__ = ["same_tokenizer", "speculative_decode"]


def same_tokenizer(a: LoadedModel, b: LoadedModel) -> bool:
    """The two models map text to the same token ids (a draft must propose ids the verifier reads)."""
    return a.tokenizer.get_vocab() == b.tokenizer.get_vocab() and a.model.config.vocab_size == b.model.config.vocab_size


@torch.inference_mode()
def _draft(
    draft: LoadedModel, context: list[int], k: int, temperature: float | None, gen: torch.Generator
) -> list[int]:
    """k tokens from the draft model continuing `context` (its own cache, thrown away): greedy when
    temperature is None, else sampled at `temperature`."""
    model = draft.model
    cache = DynamicCache(config=model.config)
    feed, out = context, []
    for _draft in range(k):
        logits = model(input_ids=torch.tensor([feed]), past_key_values=cache, use_cache=True).logits[0, -1]
        if temperature is None:
            token = int(logits.argmax())
        else:
            token = int(torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=gen))
        out.append(token)
        feed = [token]
    return out


@torch.inference_mode()
def speculative_decode(
    loaded: LoadedModel,
    prompt: str,
    n_new: int = 24,
    k: int = 4,
    draft_temperature: float | None = 1.0,
    seed: int = 0,
    draft: LoadedModel | None = None,
) -> SpecRun:
    """Generate n_new tokens with a draft and a greedy verifier (`loaded`) over one real DynamicCache.

    draft: the model that proposes (None: the verifier itself); draft_temperature: None for a greedy draft,
    else the draft samples at this temperature.
    """
    k = DRAFT_K.check(k, error=SpeculativeError)
    n_new = NEW_TOKENS.check(n_new, error=SpeculativeError)
    if draft_temperature is not None:
        draft_temperature = DRAFT_TEMPERATURE.check(draft_temperature, error=SpeculativeError)
    draft = loaded if draft is None else draft
    if draft is not loaded and not same_tokenizer(loaded, draft):
        raise SpeculativeError(
            _(
                "{draft} and {verifier} use different tokenizers: a draft must propose token ids "
                "the verifier reads. Pick a draft with the same tokenizer."
            ).format(draft=draft.info.shown_label(), verifier=loaded.info.shown_label())
        )
    limit = min(loaded.info.n_positions, draft.info.n_positions)
    ids = check_prompt(loaded.tokenizer, prompt, limit, new_tokens=n_new, error=SpeculativeError)
    model = loaded.model
    gen = torch.Generator().manual_seed(seed)
    cache = DynamicCache(config=model.config)
    logits = model(input_ids=torch.tensor([ids]), past_key_values=cache, use_cache=True).logits[0, -1]
    tokens = [int(logits.argmax())]  # the last one is always `pending`: chosen, not yet in the cache
    passes, rounds = 1, []
    while len(tokens) < n_new:
        before = cache.get_seq_length()
        k_now = min(k, n_new - len(tokens), limit - before - 1)
        proposed = _draft(draft, ids + tokens, k_now, draft_temperature, gen)
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
        rounds.append(
            SpecRound(
                index=len(rounds),
                proposed=tuple(proposed),
                proposed_text=tuple(loaded.tokenizer.decode([t]) for t in proposed),
                verifier_choice=tuple(choice),
                accepted=accepted,
                cache_len_before=before,
                cache_len_verified=verified,
                cache_len_after_crop=cache.get_seq_length(),
                emitted=tuple(emitted),
            )
        )
    tokens = tokens[:n_new]
    fed = ids + tokens[:-1]  # what the cache should now hold
    crop_cache(cache, min(cache.get_seq_length(), len(fed)))
    fresh = model(
        input_ids=torch.tensor([fed[: cache.get_seq_length()]]),
        past_key_values=DynamicCache(config=model.config),
        use_cache=True,
    ).past_key_values
    diff = max(
        max(float((a.keys - b.keys).abs().max()), float((a.values - b.values).abs().max()))
        for a, b in zip(cache.layers, fresh.layers, strict=True)
    )
    return SpecRun(
        prompt_tokens=len(ids),
        k=k,
        draft_temperature=draft_temperature,
        rounds=tuple(rounds),
        tokens=tuple(tokens),
        draft_label=draft.info.label if draft is not loaded else SPEC_SELF_DRAFT,
        text=loaded.tokenizer.decode(tokens),
        verifier_passes=passes,
        final_cache_len=cache.get_seq_length(),
        cache_vs_fresh_max_abs_diff=diff,
    )
