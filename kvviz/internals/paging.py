"""Paged KV cache (PagedAttention, Kwon et al. 2023, arXiv:2309.06180): fixed-size blocks and a block table.

Instead of one buffer of max_len rows per sequence, the cache is a pool of blocks of `block_size` token rows.
Each sequence owns a block table: logical block j (positions j*block_size .. (j+1)*block_size - 1) lives in
physical block table[j]. Only the last block is partly filled, so at most block_size - 1 slots are wasted per
sequence instead of max_len - seq_len. Two sequences with a common prefix (parallel sampling, a shared system
prompt) point at the same physical blocks for the prefix's *full* blocks; a reference count says how many
tables use each block (a partly filled block is not shared: the next token would be written into it, so an
engine copies it first).

This module holds the block tables and the two-sequence plan (plain arithmetic), the settings and the error; it
imports no torch, so a page imports it at its top. kvviz.internals.lab.paging runs the real model for two sequences
from one prompt, writes their real K/V rows into a block pool through their block tables, and reads them back
through the tables to check the layout.
"""

from __future__ import annotations

from kvviz.i18n import N_, _
from kvviz.inputs.prompt_rules import IntSetting
from kvviz.internals.records import BlockTable, PagedRun, PagingPlan

__all__ = [
    "BLOCK_SIZE",
    "MAX_BLOCK_SIZE",
    "MAX_NEW_TOKENS",
    "NEW_TOKENS_A",
    "NEW_TOKENS_B",
    "BlockTable",
    "PagedRun",
    "PagingError",
    "PagingPlan",
    "block_table",
    "plan_two_sequences",
]

MAX_BLOCK_SIZE = 256
MAX_NEW_TOKENS = 128
# The page's inputs: each setting's bounds, default and name, for the widget and the check below
BLOCK_SIZE = IntSetting(N_("block size (tokens)"), 1, MAX_BLOCK_SIZE, default=16)
NEW_TOKENS_A = IntSetting(N_("tokens for sequence A"), 0, MAX_NEW_TOKENS, default=20)
NEW_TOKENS_B = IntSetting(N_("tokens for sequence B"), 0, MAX_NEW_TOKENS, default=12)


class PagingError(ValueError):
    """Block sizes or lengths outside sensible bounds; the message says what is allowed."""


def block_table(seq_len: int, block_size: int) -> BlockTable:
    block_size = BLOCK_SIZE.check(block_size, error=PagingError)
    if seq_len < 0:
        raise PagingError(_("sequence length must be 0 or more (got {n})").format(n=seq_len))
    n_blocks = -(-seq_len // block_size)
    return BlockTable(
        seq_len,
        block_size,
        n_blocks,
        seq_len - (n_blocks - 1) * block_size if n_blocks else 0,
        n_blocks * block_size - seq_len,
    )


def plan_two_sequences(
    len_a: int, len_b: int, shared_prefix_len: int, block_size: int, max_len: int, bytes_per_token: int
) -> PagingPlan:
    """Block tables for sequences A and B (A allocated first, B reuses A's full prefix blocks)."""
    a, b = block_table(len_a, block_size), block_table(len_b, block_size)
    if not 0 <= shared_prefix_len <= min(len_a, len_b):
        raise PagingError(f"shared prefix ({shared_prefix_len}) must be between 0 and the shorter length")
    if max_len < max(len_a, len_b):
        raise PagingError(f"max length ({max_len}) must be at least the longest sequence ({max(len_a, len_b)})")
    if bytes_per_token < 1:
        raise PagingError("bytes per token must be positive")
    shared = shared_prefix_len // block_size
    table_a = tuple(range(a.n_blocks))
    table_b = table_a[:shared] + tuple(range(a.n_blocks, a.n_blocks + b.n_blocks - shared))
    physical = a.n_blocks + b.n_blocks - shared
    refcounts = tuple(2 if block < shared else 1 for block in range(physical))
    used_rows = len_a + len_b - shared * block_size
    return PagingPlan(
        block_size=block_size,
        max_len=max_len,
        bytes_per_token=bytes_per_token,
        seq_lens=(len_a, len_b),
        shared_prefix_len=shared_prefix_len,
        shared_blocks=shared,
        tables=(table_a, table_b),
        refcounts=refcounts,
        physical_blocks=physical,
        paged_bytes=physical * block_size * bytes_per_token,
        unshared_paged_bytes=(a.n_blocks + b.n_blocks) * block_size * bytes_per_token,
        preallocated_bytes=2 * max_len * bytes_per_token,
        used_bytes=used_rows * bytes_per_token,
    )
