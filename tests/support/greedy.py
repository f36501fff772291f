"""Greedy generation, the tests' oracle: tokens with the stepping engine (cached) and with full recomputation; the
prompts the model tests run them on. torch is imported when a generation runs, never when a test module is
collected (a bare `pytest` stays torch-free)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from kvviz.model.loading import LoadedModel

# 20+ prompts of different lengths, scripts and styles: Shakespeare, modern English, code, numbers, non-Latin.
PROMPTS = [
    "ROMEO:",
    "JULIET:\nO Romeo, Romeo!",
    "First Citizen:\nBefore we proceed any further, hear me speak.",
    "KING RICHARD III:\nNow is the winter",
    "To be, or not to be",
    "What light through yonder window breaks?",
    "A.",
    "MENENIUS:\nThere was a time when all the body's members",
    "A",
    "the the the the the",
    "one two three one two three",
    "def f(x): return x + 1",
    "1 2 3 4 5 6 7 8 9",
    "Hello, world!",
    "Ça va? Très bien.",
    "Привет, мир",
    "こんにちは",
    "emoji 🙂 test",
    "CORIOLANUS:\nYou common cry of curs!",
    "Good morrow, cousin.",
    "LADY MACBETH:\nOut, damned spot!",
    "    indented text",
]


def generate_greedy(loaded: LoadedModel, prompt: str, n_new: int) -> tuple[list[int], list[np.ndarray]]:
    """Greedy tokens and per-step logits from the engine (with cache)."""
    from kvviz.step.engine import StepEngine

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


def generate_greedy_uncached(loaded: LoadedModel, prompt: str, n_new: int) -> tuple[list[int], list[np.ndarray]]:
    """The baseline: every step is a full forward over the whole sequence, no cache at all."""
    import torch

    ids = loaded.tokenizer(prompt).input_ids
    tokens, logits = [], []
    for _ in range(n_new):
        with torch.inference_mode():
            out = loaded.model(input_ids=torch.tensor([ids]), use_cache=False)
        last = out.logits[0, -1].float()
        tokens.append(int(torch.argmax(last)))
        logits.append(last.numpy().copy())
        ids.append(tokens[-1])
        if len(ids) > loaded.info.n_positions:
            break
    return tokens, logits
