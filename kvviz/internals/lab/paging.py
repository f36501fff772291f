"""Paged KV cache, run: two real generations from one prompt (one greedy, one sampled), their real K/V rows written
into a block pool through the block tables of kvviz.internals.paging (torch-free: the tables, the plan, the
settings), then gathered back through the tables and compared with the caches they came from.
"""

from __future__ import annotations

import torch

from kvviz.i18n import _
from kvviz.inputs.prompt_rules import check_prompt
from kvviz.internals.paging import NEW_TOKENS_A, NEW_TOKENS_B, PagingError, block_table, plan_two_sequences
from kvviz.internals.prefix import shared_prefix_len
from kvviz.internals.records import PagedRun
from kvviz.model.loading import LoadedModel
from kvviz.step.engine import StepEngine
from kvviz.step.records import Sampling

__all__ = ["paged_generation"]


def _generate(loaded: LoadedModel, prompt: str, n_new: int, sampling: Sampling) -> StepEngine:
    engine = StepEngine(loaded, sampling)
    engine.prefill(prompt)
    for _step in range(n_new):
        if engine.at_context_limit:
            break
        engine.step()
    return engine


@torch.inference_mode()
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
