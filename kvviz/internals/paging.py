"""Paged KV cache (PagedAttention, Kwon et al. 2023, arXiv:2309.06180): fixed-size blocks and a block table.

Instead of one buffer of max_len rows per sequence, the cache is a pool of blocks of `block_size` token rows.
Each sequence owns a block table: logical block j (positions j*block_size .. (j+1)*block_size - 1) lives in
physical block table[j]. Only the last block is partly filled, so at most block_size - 1 slots are wasted per
sequence instead of max_len - seq_len. Two sequences with a common prefix (parallel sampling, a shared system
prompt) point at the same physical blocks for the prefix's *full* blocks; a reference count says how many
tables use each block (a partly filled block is not shared: the next token would be written into it, so an
engine copies it first).

`paged_generation` runs the real model for two sequences from one prompt, writes their real K/V rows into a
block pool through their block tables, and reads them back through the tables to check the layout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvviz.i18n import N_, _
from kvviz.inputs.prompt_rules import IntSetting, check_prompt
from kvviz.internals.prefix import shared_prefix_len
from kvviz.internals.records import BlockTable, PagedRun, PagingPlan
from kvviz.model.loading import LoadedModel, inference_mode
from kvviz.step.records import Sampling

if TYPE_CHECKING:
    from kvviz.step.engine import StepEngine

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
    "paged_generation",
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


def _generate(loaded: LoadedModel, prompt: str, n_new: int, sampling: Sampling) -> StepEngine:
    from kvviz.step.engine import StepEngine

    engine = StepEngine(loaded, sampling)
    engine.prefill(prompt)
    for _step in range(n_new):
        if engine.at_context_limit:
            break
        engine.step()
    return engine


@inference_mode
def paged_generation(
    loaded: LoadedModel,
    prompt: str,
    n_new_a: int = 20,
    n_new_b: int = 12,
    block_size: int = 16,
    max_len: int | None = None,
    seed: int = 1,
) -> PagedRun:
    """Generate two continuations of `prompt` with the real model and page their real caches."""
    import torch

    max_len = loaded.info.n_positions if max_len is None else max_len
    for setting, n in ((NEW_TOKENS_A, n_new_a), (NEW_TOKENS_B, n_new_b)):
        setting.check(n, error=PagingError)
    block_table(1, block_size)  # validates the block size before any model work
    if not 1 <= max_len <= loaded.info.n_positions:
        raise PagingError(
            _("max length must be between 1 and the model's {n} positions").format(n=loaded.info.n_positions)
        )
    check_prompt(loaded.tokenizer, prompt, loaded.info.n_positions, error=PagingError)
    eng_a = _generate(loaded, prompt, n_new_a, Sampling())
    eng_b = _generate(loaded, prompt, n_new_b, Sampling(greedy=False, temperature=1.0, seed=seed))
    if max_len < max(eng_a.cache_len, eng_b.cache_len):
        raise PagingError(
            _(
                "max length ({max_len}) is shorter than the generated sequences ({n} tokens): raise it "
                "or generate fewer tokens"
            ).format(max_len=max_len, n=max(eng_a.cache_len, eng_b.cache_len))
        )
    shared = shared_prefix_len(eng_a.token_ids, eng_b.token_ids)
    bytes_per_token = eng_a.cache_bytes // eng_a.cache_len
    plan = plan_two_sequences(eng_a.cache_len, eng_b.cache_len, shared, block_size, max_len, bytes_per_token)

    # The pool: per layer, K and V blocks of shape [physical_blocks, num_kv_heads, block_size, head_dim].
    first = eng_a.cache.layers[0].keys
    pool_shape = (plan.physical_blocks, first.shape[1], block_size, first.shape[3])
    n_layer = len(eng_a.cache.layers)
    pools = [[torch.zeros(pool_shape, dtype=first.dtype) for _ in range(2)] for _ in range(n_layer)]
    shared_diff = 0.0
    for engine, table in ((eng_a, plan.tables[0]), (eng_b, plan.tables[1])):
        for layer_idx, layer in enumerate(engine.cache.layers):
            for kv, tensor in enumerate((layer.keys[0], layer.values[0])):  # [num_kv_heads, seq_len, head_dim]
                for logical, phys in enumerate(table):
                    rows = tensor[:, logical * block_size : (logical + 1) * block_size]
                    if engine is eng_b and logical < plan.shared_blocks:  # stored once, by A: compare only
                        stored = pools[layer_idx][kv][phys, :, : rows.shape[1]]
                        shared_diff = max(shared_diff, float((stored - rows).abs().max()))
                        continue
                    pools[layer_idx][kv][phys, :, : rows.shape[1]] = rows
    gather_diff = 0.0
    for engine, table in ((eng_a, plan.tables[0]), (eng_b, plan.tables[1])):
        idx = torch.tensor(table)
        for layer_idx, layer in enumerate(engine.cache.layers):
            for kv, tensor in enumerate((layer.keys[0], layer.values[0])):
                blocks = pools[layer_idx][kv][idx]  # [n_blocks, num_kv_heads, block_size, head_dim]
                gathered = blocks.permute(1, 0, 2, 3).reshape(tensor.shape[0], -1, tensor.shape[2])
                gather_diff = max(gather_diff, float((gathered[:, : engine.cache_len] - tensor).abs().max()))
    tok = loaded.tokenizer
    return PagedRun(
        prompt_tokens=eng_a.prompt_len,
        texts=(tok.decode(eng_a.generated_ids()), tok.decode(eng_b.generated_ids())),
        plan=plan,
        gather_max_abs_diff=gather_diff,
        shared_rows_max_abs_diff=shared_diff,
    )
