"""Test-only generation helpers: greedy tokens with the stepping engine (cached) and with full recomputation."""
from __future__ import annotations

import numpy as np
import torch

from kvviz.model.loading import LoadedModel
from kvviz.step.engine import StepEngine


def generate_greedy(loaded: LoadedModel, prompt: str, n_new: int) -> tuple[list[int], list[np.ndarray]]:
    """Greedy tokens and per-step logits from the engine (with cache)."""
    engine = StepEngine(loaded)
    record = engine.prefill(prompt)
    tokens, logits = [record.next_token_id], [record.next_logits]
    for _ in range(n_new - 1):
        if engine.at_context_limit:
            break
        record = engine.step()
        tokens.append(record.next_token_id)
        logits.append(record.next_logits)
    return tokens, logits


@torch.inference_mode()
def generate_greedy_uncached(loaded: LoadedModel, prompt: str, n_new: int) -> tuple[list[int], list[np.ndarray]]:
    """The baseline: every step is a full forward over the whole sequence, no cache at all."""
    ids = loaded.tokenizer(prompt).input_ids
    tokens, logits = [], []
    for _ in range(n_new):
        out = loaded.model(input_ids=torch.tensor([ids]), use_cache=False)
        last = out.logits[0, -1].float()
        tokens.append(int(torch.argmax(last)))
        logits.append(last.numpy().copy())
        ids.append(tokens[-1])
        if len(ids) > loaded.info.n_positions:
            break
    return tokens, logits
