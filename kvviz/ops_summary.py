"""What the op counts mean: the one-sentence summary of what the cache saves, the popular "1000 tokens,
~500x fewer computations" claim read four ways, and the cumulative curve the charts draw. Every number comes
from kvviz.ops' exact counts.
"""
from __future__ import annotations

from dataclasses import dataclass

from kvviz.ops import (
    MAX_TOKENS,
    ModelShape,
    PassCounts,
    _check_generation,
    _positive_int,
    forward_pass_counts,
    generation_totals,
)


@dataclass(frozen=True)
class ClaimRow:
    """One reading of "1000 tokens, ~500x fewer computations": which quantity, its exact ratio, verdict."""

    quantity: str
    uncached: int
    cached: int
    ratio: float  # for display only; uncached / cached
    holds: bool  # within 10% of the claimed factor


def check_speedup_claim(
    shape: ModelShape, n_tokens: int = 1000, claimed_factor: float = 500.0
) -> list[ClaimRow]:
    """Test the popular claim on four quantities: generate n_tokens from a 1-token prompt.

    Per step at the end (L = n_tokens): attention is L(L+1)/2 vs L dot products (~L/2); projections and MLP
    L tokens vs 1 (L). Whole generation: attention sum L(L+1)/2 vs sum L (~n/3); projections and MLP sum L vs n
    (~n/2). The LM head is counted for the last position only in both runs (it is in "All ops" only).
    """
    _positive_int("n_tokens", n_tokens, MAX_TOKENS)
    last = forward_pass_counts(shape, n_tokens - 1, 1, True, lm_head_all_positions=False)
    last_u = forward_pass_counts(shape, n_tokens - 1, 1, False, lm_head_all_positions=False)
    cached, uncached = generation_totals(shape, 1, n_tokens, lm_head_all_positions=False)
    rows = [
        ("Attention (QK^T + AV), the last step alone", last_u.attention_ops, last.attention_ops),
        ("Projections + MLP, the last step alone", last_u.linear_ops, last.linear_ops),
        ("All ops, the last step alone", last_u.total_ops, last.total_ops),
        ("Attention (QK^T + AV), the whole generation", uncached.attention_ops, cached.attention_ops),
        ("Projections + MLP, the whole generation", uncached.linear_ops, cached.linear_ops),
        ("All ops, the whole generation", uncached.total_ops, cached.total_ops),
    ]
    out = []
    for quantity, u, c in rows:
        ratio = u / c
        out.append(ClaimRow(quantity, u, c, ratio, abs(ratio - claimed_factor) <= 0.1 * claimed_factor))
    return out


# ----- what the cache saves, in words derived from the counts ------------------------------------------------
SUMMARY_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("the Q/K/V and output projections and the MLP", ("qkv_proj", "out_proj", "mlp")),
    ("attention (QK^T and AV)", ("attn_scores", "attn_values")),
    ("the LM head", ("lm_head",)),
)


def savings_sentence(
    shape: ModelShape, prompt_len: int, new_tokens: int, *, lm_head_all_positions: bool = False
) -> str:
    """One sentence of what the cache saves, per group of components, every factor computed from the counts.

    e.g. (bundled model, P=16, N=200) "Generating 200 tokens after a 16-token prompt, the KV cache does 107.4x less
    work in the Q/K/V and output projections and the MLP, 72.3x less work in attention (QK^T and AV), and the same
    work in the LM head (only the last position's logits are computed either way): 81.3x less in total."
    """
    cached, uncached = generation_totals(shape, prompt_len, new_tokens, lm_head_all_positions=lm_head_all_positions)
    parts = []
    for words, components in SUMMARY_GROUPS:
        c, u = sum(cached.ops(k) for k in components), sum(uncached.ops(k) for k in components)
        if c == u:
            why = " (only the last position's logits are computed either way)" if components == ("lm_head",) else ""
            parts.append(f"the same work in {words}{why}")
        else:
            parts.append(f"{u / c:,.1f}x less work in {words}")
    listed = ", ".join(parts[:-1]) + f", and {parts[-1]}"
    total = uncached.total_ops / cached.total_ops
    return (f"Generating {new_tokens:,} tokens after a {prompt_len:,}-token prompt, the KV cache does {listed}: "
            f"{total:,.1f}x less in total.")


def curve(
    shape: ModelShape, prompt_len: int, new_tokens: int, *, max_points: int = 400, lm_head_all_positions: bool = True
) -> list[tuple[int, PassCounts, PassCounts]]:
    """(k, cached cumulative, uncached cumulative) at up to max_points evenly spread k (always incl. 1 and N),
    from the closed form, so a chart of a million-token generation costs max_points evaluations."""
    _check_generation(prompt_len, new_tokens)
    if new_tokens <= max_points:
        ks = list(range(1, new_tokens + 1))
    else:
        ks = sorted({1 + (new_tokens - 1) * i // (max_points - 1) for i in range(max_points)})
    out = []
    for k in ks:
        cached, uncached = generation_totals(shape, prompt_len, k, lm_head_all_positions=lm_head_all_positions)
        out.append((k, cached, uncached))
    return out
