"""In-context copying: the training mix that grows induction heads, and the held-out copying measurement.

A language model trained only on Tiny Shakespeare at this size never learns to copy: a span seen earlier in
the context is no easier to predict the second time. Induction heads (Olsson et al. 2022, "In-context
Learning and Induction Heads") form when the training data rewards copying, so a share of the training
sequences (`repeat_share`) is built as

    [natural text, P tokens][span, L tokens][span][span]...   cut to n_positions tokens

with L drawn uniformly in [MIN_SPAN, max_span] (max_span <= n_positions // 2: the span repeats at least once) and P in
[0, n_positions - 2L]; the span is, with probability `random_span_share`, uniformly random token ids, else a
random corpus span. Random tokens are what grows induction heads fastest: nothing but copying predicts them.
Random tokens cannot be predicted the first time, so their first copy is masked out of the loss (label -100): the
model is trained only to copy them, not to spread probability over noise.

The measurement (`copying_accuracy`): held-out sequences whose second half repeats the first (L tokens,
then the same L tokens); top-1 accuracy of the next-token prediction over the repeated half (targets at
positions L+1 .. 2L-1: the first token of the repeat cannot be known to repeat) against the same figure over
the first half (targets 1 .. L-1). A model that copies scores near 100% on the repeat whatever it scores on
the first half.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kvviz.training.recipes import MIN_SPAN

IGNORE_INDEX = -100  # transformers' loss ignores labels equal to this


def repeat_batch(
    ids: torch.Tensor,
    n_rows: int,
    n_positions: int,
    vocab_size: int,
    gen: torch.Generator,
    random_span_share: float = 0.5,
    max_span: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """n_rows sequences with a repeated span: (input_ids, labels), both (n_rows, n_positions)."""
    inputs, labels = [], []
    for _ in range(n_rows):
        longest = min(max_span or n_positions // 2, n_positions // 2)
        span_len = int(torch.randint(MIN_SPAN, longest + 1, (1,), generator=gen))
        prefix_len = int(torch.randint(0, n_positions - 2 * span_len + 1, (1,), generator=gen))
        prefix_start = int(torch.randint(0, len(ids) - prefix_len, (1,), generator=gen))
        prefix = ids[prefix_start : prefix_start + prefix_len]
        random_span = bool(torch.rand((1,), generator=gen) < random_span_share)
        if random_span:
            span = torch.randint(1, vocab_size, (span_len,), generator=gen)  # id 0 is <|endoftext|>
        else:
            start = int(torch.randint(0, len(ids) - span_len, (1,), generator=gen))
            span = ids[start : start + span_len]
        n_copies = -(-(n_positions - prefix_len) // span_len)  # ceil: enough copies to fill the row
        row = torch.cat([prefix, span.repeat(n_copies)])[:n_positions]
        label = row.clone()
        if random_span:
            label[prefix_len : prefix_len + span_len] = IGNORE_INDEX
        inputs.append(row)
        labels.append(label)
    return torch.stack(inputs), torch.stack(labels)


def held_out_repeats(val_ids: torch.Tensor, n_sequences: int, half_len: int) -> torch.Tensor:
    """n_sequences held-out spans of half_len tokens, each followed by itself: (n_sequences, 2 * half_len).
    Spans start at evenly spaced offsets of the held-out text: deterministic, nothing drawn at random."""
    last_start = len(val_ids) - half_len
    starts = [round(i * last_start / max(1, n_sequences - 1)) for i in range(n_sequences)]
    spans = torch.stack([val_ids[s : s + half_len] for s in starts])
    return torch.cat([spans, spans], dim=1)


def random_repeats(vocab_size: int, n_sequences: int, half_len: int, seed: int) -> torch.Tensor:
    """n_sequences rows of half_len seeded random token ids (1..vocab_size-1), each followed by itself: a copy
    test that needs no corpus (no text can help; only copying predicts the second half)."""
    gen = torch.Generator().manual_seed(seed)
    spans = torch.randint(1, vocab_size, (n_sequences, half_len), generator=gen)
    return torch.cat([spans, spans], dim=1)


@dataclass(frozen=True)
class CopyingResult:
    n_sequences: int
    half_len: int  # tokens in each half
    first_half_top1: float  # fraction of next-token predictions right on the first (unseen) half
    repeated_half_top1: float  # ... on the second half, which repeats the first


@torch.no_grad()
def copying_accuracy(model: torch.nn.Module, sequences: torch.Tensor) -> CopyingResult:
    """Top-1 accuracy on the first half and on the repeated half of each row of `sequences`, [batch_size, seq_len]
    (seq_len = 2 x half_len)."""
    was_training = model.training
    model.eval()
    half_len = sequences.shape[1] // 2
    logits = model(input_ids=sequences).logits  # [batch_size, seq_len, vocab_size]
    predicted = logits[:, :-1].argmax(dim=-1)  # predicted[:, t] guesses sequences[:, t + 1]
    right = predicted == sequences[:, 1:]
    first = right[:, : half_len - 1]  # targets 1 .. L-1
    repeated = right[:, half_len:]  # targets L+1 .. 2L-1
    model.train(was_training)
    return CopyingResult(
        n_sequences=sequences.shape[0],
        half_len=half_len,
        first_half_top1=first.float().mean().item(),
        repeated_half_top1=repeated.float().mean().item(),
    )
