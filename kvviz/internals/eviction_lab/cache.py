"""The cache a policy leaves, and decoding on from it.

prune gathers the kept rows of every layer and KV head into a new DynamicCache: [batch_size, num_kv_heads, rows,
head_dim], rectangular, because every head keeps the same number of rows. A policy whose KV heads keep different rows
(DuoAttention, KVzip) gives a HeadSplitCache: each layer's KV heads stored as separate tensors, whose bytes are theirs;
attention reads them through a padded view in which the padding is masked per query head (a forward pre-hook on each
attention module adds the mask to the eager attention mask). The bytes reported are the tensors' own `nbytes`
(cache_nbytes): nothing is masked in place, the rows are gone.

Positions after eviction continue from the ORIGINAL length. After a prefill of S tokens pruned to k rows the cache
holds k rows, and transformers would place the next token at position k (it reads `get_seq_length()`). But the kept
rows still carry their original positions: GPT-2's keys and values were computed from learned position embeddings
0..S-1, the Llama's keys are stored already rotated (RoPE) by their original positions. The next token is token S of
the text: at position k it would reuse a position a kept row already holds and see every kept row nearer than it
is (with RoPE, the relative distance q - k in each score would be wrong). So every pass after pruning gets explicit
`position_ids = S, S+1, ...`. The causal mask stays right without help: transformers 5 sizes it from the cache's
physical length (`get_mask_sizes`), not from the positions, so the new tokens see every kept row and each other
causally. (transformers 5 takes no `cache_position` argument; position_ids is the one to set.)
"""

from __future__ import annotations

import contextlib

import torch
from transformers import DynamicCache

from kvviz.internals.eviction_lab.scoring import Prefill
from kvviz.model.loading import MODEL_LOCK, LoadedModel

__all__ = ["HeadSplitCache", "cache_nbytes", "continue_from", "prune"]


def prune(pre: Prefill, kept: list[torch.Tensor]) -> DynamicCache:
    """A new DynamicCache holding only the kept rows of every layer and KV head (the prefill's stays untouched)."""
    pruned = DynamicCache(config=pre.loaded.model.config)
    for i, (layer, idx) in enumerate(zip(pre.cache.layers, kept, strict=True)):
        index = idx[..., None].expand(-1, -1, -1, layer.keys.shape[-1])  # [batch_size, num_kv_heads, rows, head_dim]
        pruned.update(
            torch.gather(layer.keys, 2, index).contiguous(), torch.gather(layer.values, 2, index).contiguous(), i
        )
    return pruned


class HeadSplitCache:
    """A cache whose KV heads keep different rows (DuoAttention, KVzip ranked across heads): every sequence's
    layers' KV heads stored as separate K and V tensors [rows of that head, head_dim], so its bytes are those rows'
    and no more. Attention reads it through `view()`: a DynamicCache padded to the longest head, plus which of its
    rows are real.

    kept: [layer][kv head] positions kept, ascending, the same for every sequence of the batch (DuoAttention: the
    heads are the model's); or per_sequence: [sequence][layer][kv head], each sequence its own (KVzip's global
    ranking scores each sequence's rows)."""

    def __init__(
        self,
        pre: Prefill,
        kept: list[list[torch.Tensor]] | None = None,
        per_sequence: list[list[list[torch.Tensor]]] | None = None,
    ):
        self.config = pre.loaded.model.config
        b = pre.input_ids.shape[0]
        self.per_sequence = per_sequence if per_sequence is not None else [kept] * b
        self.kept = self.per_sequence[0]  # [layer][kv head] positions kept by the first sequence (all, if shared)
        self.heads = [
            [
                [
                    (layer.keys[i, h, idx].contiguous(), layer.values[i, h, idx].contiguous())
                    for h, idx in enumerate(per_head)
                ]
                for layer, per_head in zip(pre.cache.layers, seq, strict=True)
            ]
            for i, seq in enumerate(self.per_sequence)
        ]  # [sequence][layer][kv head] (K, V)

    @property
    def nbytes(self) -> int:
        return sum(k.nbytes + v.nbytes for seq in self.heads for layer in seq for k, v in layer)

    def layer_nbytes(self, sequence: int = 0) -> list[int]:
        """Each layer's bytes, one sequence."""
        return [sum(k.nbytes + v.nbytes for k, v in layer) for layer in self.heads[sequence]]

    def rows_per_head(self) -> int:
        """Rows kept per KV head on average, over every layer and sequence (floor): what the bytes hold."""
        counts = [k.shape[0] for seq in self.heads for layer in seq for k, _v in layer]
        return sum(counts) // len(counts)

    def view(self) -> tuple[DynamicCache, list[torch.Tensor]]:
        """(the padded cache, per layer [batch_size, num_kv_heads, rows] bool: True = a stored row, False =
        padding). The view is compute's working copy, made per pass and dropped; the bytes held are the heads'
        (nbytes)."""
        cache = DynamicCache(config=self.config)
        real = []
        # one padded length for every layer: transformers sizes one attention mask from the first layer's cache
        rows = max(k.shape[0] for seq in self.heads for layer in seq for k, _v in layer)
        b, n_layers = len(self.heads), len(self.heads[0])
        for i in range(n_layers):
            first = self.heads[0][i][0][0]
            hkv, d = len(self.heads[0][i]), first.shape[-1]
            keys, values = (torch.zeros(b, hkv, rows, d, dtype=first.dtype) for _ in range(2))
            ok = torch.zeros(b, hkv, rows, dtype=torch.bool)
            for n, seq in enumerate(self.heads):
                for h, (k, v) in enumerate(seq[i]):
                    keys[n, h, : k.shape[0]], values[n, h, : k.shape[0]], ok[n, h, : k.shape[0]] = k, v, True
            cache.update(keys, values, i)
            real.append(ok)
        return cache, real


def cache_nbytes(cache: DynamicCache | HeadSplitCache) -> int:
    """The bytes the cache's K and V tensors occupy (their own nbytes), all layers."""
    if isinstance(cache, HeadSplitCache):
        return cache.nbytes
    return sum(layer.keys.nbytes + layer.values.nbytes for layer in cache.layers)


def _head_masks(model, real: list[torch.Tensor]):
    """While active, each attention layer i masks the padding of a HeadSplitCache view: a forward pre-hook takes
    the eager attention mask [batch_size, 1, q_len, rows + q_len] and sets -inf-like (the dtype's minimum, as
    transformers' masks do) on the columns of padded rows, per sequence and query head (each KV head's mask
    repeated over the query heads that share it). The new tokens' own columns keep their causal mask."""

    @contextlib.contextmanager
    def active():
        handles = []
        for module in model.modules():
            if getattr(module, "layer_idx", None) is None or not type(module).__name__.endswith("Attention"):
                continue

            def hook(mod, args, kwargs):
                mask, ok = kwargs["attention_mask"], real[mod.layer_idx]  # [b, 1, q, k], [b, num_kv_heads, rows]
                b, hkv, rows = ok.shape
                group = model.config.num_attention_heads // hkv
                new = torch.ones(b, hkv, mask.shape[-1] - rows, dtype=torch.bool)
                ok_all = torch.cat([ok, new], dim=2).repeat_interleave(group, dim=1)  # [b, num_heads, k]
                kwargs["attention_mask"] = mask.masked_fill(~ok_all[:, :, None, :], torch.finfo(mask.dtype).min)
                return args, kwargs

            handles.append(module.register_forward_pre_hook(hook, with_kwargs=True))
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

    return active()


def continue_from(
    loaded: LoadedModel, cache: DynamicCache | HeadSplitCache, input_ids: torch.Tensor, original_len: int
) -> torch.Tensor:
    """Feed input_ids [batch_size, q_len] after a (possibly pruned) cache of a prefill of `original_len` tokens:
    positions continue at original_len (module docstring: why). Returns the logits [batch_size, q_len, vocab_size]."""
    b, n = input_ids.shape
    position_ids = torch.arange(original_len, original_len + n)[None, :].expand(b, n)
    masks = contextlib.nullcontext()
    if isinstance(cache, HeadSplitCache):
        cache, real = cache.view()
        masks = _head_masks(loaded.model, real)
    with MODEL_LOCK, torch.inference_mode(), masks:
        return loaded.model(
            input_ids=input_ids, past_key_values=cache, position_ids=position_ids, use_cache=True
        ).logits
