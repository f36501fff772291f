"""A real prefill and each policy's scores: which rows of transformers' own DynamicCache every policy would keep.

Every score is per layer and KV head, [batch_size, num_kv_heads, seq_len], higher = keep; a policy's keep order
sorts it, and any budget keeps a prefix of that order (H2O's recent half aside: kept_rows). Attention-based scores
read the prefill's attention weights (eager attention, which the app loads). With GQA the query heads that share a
KV head are averaged (a sum would rank the rows the same), so the choice is per KV head and every head keeps the same
number of rows: the pruned tensors stay rectangular (kvviz.internals.eviction_lab.cache.prune).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers import DynamicCache

from kvviz.i18n import _
from kvviz.internals.eviction import (
    EVICT_RAGGED,
    EVICT_SNAP_POOL,
    KVZIP_REPEAT_PROMPT,
    EvictionError,
    EvictSettings,
    check_policy,
)
from kvviz.model.loading import MODEL_LOCK, LoadedModel

__all__ = ["Prefill", "keep_order", "keep_rows", "kept_rows", "prefill", "row_scores"]


class Prefill:
    """A real prefill of a batch: its cache (float32, [batch_size, num_kv_heads, seq_len, head_dim] per layer) and
    attention weights ([batch_size, num_heads, seq_len, seq_len] per layer), kept read-only: every policy prunes a
    copy."""

    def __init__(self, loaded: LoadedModel, input_ids: torch.Tensor):
        if loaded.model.config._attn_implementation != "eager":
            raise EvictionError("eviction needs a model loaded with eager attention (it reads attention weights)")
        self.loaded = loaded
        self.input_ids = input_ids  # [batch_size, seq_len]
        with MODEL_LOCK, torch.inference_mode():
            out = loaded.model(
                input_ids=input_ids,
                past_key_values=DynamicCache(config=loaded.model.config),
                use_cache=True,
                output_attentions=True,
            )
        self.cache: DynamicCache = out.past_key_values
        self.attentions = [a.float() for a in out.attentions]  # per layer [batch_size, num_heads, seq_len, seq_len]

        self._reread: list[torch.Tensor] | None = None

    @property
    def seq_len(self) -> int:
        return self.input_ids.shape[1]

    def reread_attentions(self) -> list[torch.Tensor]:
        """KVzip's reconstruction pass, once: the repeat prompt and the input again, fed on top of a copy of this
        cache at the continued positions, in chunks that fit the model's positions (KVzip re-reads long contexts
        chunk by chunk too). Per layer [batch_size, num_heads, seq_len]: the most attention any re-reading query
        gave each of the prefill's rows (the rows the pass appends are left out).
        Where a second chunk is needed (the 160-token loss context: 77 + 77 + 6 tokens) this differs from KVzip's
        code (kvpress's port): there every chunk, the first included, is scored by a softmax over the first 4 rows,
        that chunk's own rows of the context and the re-read alone, not over the whole cache; every chunk after the
        first is prompted "Repeat the part of the previous context exactly, starting with" + the previous chunk's
        last 8 tokens; kvpress also pins the first 4 rows' score at 1. Here every chunk gets the first prompt and
        the whole cache's softmax. A one-chunk span (the 64-token copy test: its own rows are the whole cache) is
        scored as the code scores it."""
        if self._reread is None:
            loaded, b, s = self.loaded, self.input_ids.shape[0], self.seq_len
            prompt = torch.tensor(loaded.tokenizer(KVZIP_REPEAT_PROMPT).input_ids, dtype=torch.long).expand(b, -1)
            chunk = min(s, loaded.info.n_positions - s - prompt.shape[1])
            if chunk < 1:
                raise EvictionError(
                    _(
                        "KVzip re-reads the context after it: {need} positions, where the model has "
                        "{have}; lower the loss context."
                    ).format(need=2 * s + prompt.shape[1], have=loaded.info.n_positions)
                )
            best = None
            for start in range(0, s, chunk):
                feed = torch.cat([prompt, self.input_ids[:, start : start + chunk]], dim=1)
                cache = DynamicCache(config=loaded.model.config)
                for i, layer in enumerate(self.cache.layers):  # the next update concatenates: this cache stays intact
                    cache.update(layer.keys, layer.values, i)
                position_ids = torch.arange(s, s + feed.shape[1])[None, :].expand(b, -1)
                with MODEL_LOCK, torch.inference_mode():
                    out = loaded.model(
                        input_ids=feed,
                        past_key_values=cache,
                        position_ids=position_ids,
                        use_cache=True,
                        output_attentions=True,
                    )
                got = [a[..., :s].float().amax(dim=-2) for a in out.attentions]  # [batch_size, num_heads, seq_len]
                best = got if best is None else [torch.maximum(x, y) for x, y in zip(best, got, strict=True)]
            self._reread = best
        return self._reread


def prefill(loaded: LoadedModel, input_ids: torch.Tensor) -> Prefill:
    return Prefill(loaded, input_ids)


# ----- scores: higher = keep ----------------------------------------------------------------------------------
def _per_kv_head(attn: torch.Tensor, n_kv_heads: int) -> torch.Tensor:
    """[batch_size, num_heads, seq_len, seq_len] -> [batch_size, num_kv_heads, seq_len, seq_len]: the query heads
    sharing a KV head, averaged (GQA; MHA: unchanged)."""
    b, hq, s, _s = attn.shape
    return attn.reshape(b, n_kv_heads, hq // n_kv_heads, s, s).mean(2)


def row_scores(policy: str, pre: Prefill, layer: int, settings: EvictSettings) -> torch.Tensor:
    """[batch_size, num_kv_heads, seq_len] float64 scores of one layer's rows. Positional policies score by position,
    so that the same top-k selection serves every policy; ties never decide a pick (scores are distinct or broken by
    position)."""
    keys = pre.cache.layers[layer].keys  # [batch_size, num_kv_heads, seq_len, head_dim]
    b, hkv, s, _d = keys.shape
    position = torch.arange(s, dtype=torch.float64).expand(b, hkv, s)
    if policy in ("full", "recent"):
        return position.clone()  # newest first
    if policy == "streaming":  # the sinks outrank every window row, the earliest first: a budget of at most S
        # rows keeps positions 0..rows-1 (position 0 is the sink StreamingLLM exists to keep)
        return torch.where(position < settings.sink_tokens, 2.0 * s - position, position)
    if policy == "random":
        gen = torch.Generator().manual_seed(settings.seed * 1009 + layer)  # a different draw per layer
        return torch.rand((b, hkv, s), generator=gen, dtype=torch.float64)
    if policy == "key_norm":
        return -keys.double().norm(dim=-1)  # smallest norm kept
    if policy == "keydiff":  # the least like the anchor kept: the mean of the cached keys at unit length (kvpress's
        k = keys.double()  # KeyDiffPress computes the paper's anchor so)
        return -F.cosine_similarity(k, F.normalize(k, dim=-1).mean(dim=2, keepdim=True), dim=-1)
    if policy in ("kvzip", "kvzip_head"):  # the most attention any re-reading query of the KV head's query heads
        reread = pre.reread_attentions()[layer].double()  # gives the row; [batch_size, num_heads, seq_len]
        return reread.reshape(b, hkv, -1, s).amax(dim=2)
    attn = pre.attentions[layer].double()  # [batch_size, num_heads, seq_len, seq_len]
    if policy in ("h2o", "h2o_heavy"):  # kept_rows splits the budget for h2o
        return _per_kv_head(attn, hkv).sum(dim=-2)  # attention each row received, summed over all queries
    if policy == "tova":
        last = attn[:, :, -1, :].mean(dim=1)  # [batch_size, seq_len]: the newest query, averaged over the layer's heads
        return last[:, None, :].expand(b, hkv, s).clone()
    if policy == "snapkv":
        window = min(settings.snap_window, s)
        prefix = s - window
        # the window outranks the prefix, its newest rows first (a budget under the window keeps those)
        scores = position + 2.0 * s
        if prefix:  # as SnapKV's code: the window's queries on the prefix only, padding counted in the average
            observed = _per_kv_head(attn, hkv)[:, :, prefix:, :prefix].sum(dim=-2)  # [batch_size, num_kv_heads, prefix]
            pooled = F.avg_pool1d(
                observed.reshape(b * hkv, 1, prefix), EVICT_SNAP_POOL, stride=1, padding=EVICT_SNAP_POOL // 2
            ).reshape(b, hkv, prefix)
            scores[..., :prefix] = pooled  # at most `window` (a sum of window attention rows), below 2 s
        return scores
    raise EvictionError(f"no scorer for {policy!r}")


def keep_order(policy: str, pre: Prefill, settings: EvictSettings) -> list[torch.Tensor]:
    """Per layer [batch_size, num_kv_heads, seq_len] long: positions from most to least worth keeping. Any budget
    keeps a prefix of it."""
    check_policy(policy)
    if policy in EVICT_RAGGED:
        raise EvictionError(f"{policy} keeps different rows per head: use evict()")
    return [
        torch.argsort(row_scores(policy, pre, i, settings), dim=-1, descending=True, stable=True)
        for i in range(len(pre.cache.layers))
    ]


def keep_rows(order: list[torch.Tensor], rows: int) -> list[torch.Tensor]:
    """Per layer [batch_size, num_kv_heads, rows] long: the first `rows` of the order, sorted back into position
    order."""
    return [torch.sort(o[..., :rows], dim=-1).values for o in order]


def kept_rows(policy: str, order: list[torch.Tensor], rows: int) -> list[torch.Tensor]:
    """Per layer [batch_size, num_kv_heads, rows] long, in position order: what `policy` keeps at `rows` given its
    keep_order. Every policy keeps a prefix of its order but H2O, whose recent half grows with the budget: the
    newest rows - rows // 2, plus the rows // 2 best of the order among the rows before them."""
    if policy != "h2o":
        return keep_rows(order, rows)
    heavy = rows // 2
    out = []
    for o in order:
        b, h, s = o.shape
        recent = rows - heavy
        older = o[o < s - recent].reshape(b, h, s - recent)  # the order, the recent rows left out
        newest = torch.arange(s - recent, s).expand(b, h, recent)
        out.append(torch.sort(torch.cat([older[..., :heavy], newest], dim=-1), dim=-1).values)
    return out
