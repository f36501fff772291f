"""Prefix reuse: two prompts that start with the same tokens share the cached K/V of those tokens.

    fresh:  prefill all of prompt B                         -> len(B) tokens computed
    reuse:  prefill prompt A, crop the cache to the shared
            prefix, prefill only B's remaining tokens       -> len(B) - shared tokens computed

Causal attention makes this exact: the K/V row of position p depends only on tokens 0..p, so the shared
rows of A's cache are exactly the rows B would compute. The prefix is shared in *tokens*, not characters:
BPE may split the same text differently once the following characters change.

This module holds the default prompts, the timing repeats, the error and the shared-prefix count; it imports no
torch, so a page imports it at its top. The run (crop, prefill the rest, time both, check) is
kvviz.internals.lab.prefix.
"""

from __future__ import annotations

from kvviz.internals.records import PrefixReuse

__all__ = [
    "DEFAULT_A",
    "DEFAULT_B",
    "SHARED_OPENING",
    "PrefixError",
    "PrefixReuse",
    "TIMING_REPEATS",
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
