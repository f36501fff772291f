"""An independent check of the eviction lab (kvviz.internals.eviction_lab), written from the papers.

Shared with the lab (so that both measure the same thing): the bundled weights, the tokenizer's ids of the lab's
text, the spans and passages it cuts (text_ids, copy_sequences, loss_passages), its settings (S, SnapKV's window, the
seed) and the rows per budget (the test checks rows_for_budget against floor(seq_len x percent / 100) itself).

Independent of the lab: no scorer, cache, prune or measure of kvviz.internals.eviction_lab is imported here.
- The model is loaded again straight from its folder with transformers' AutoModelForCausalLM, with an attention
  function of this module registered through transformers' AttentionInterface: q k^T x scaling, the positions a
  query may not see set to -inf, softmax, times v (GQA: each query head reads its KV head, h // group). It records
  the prefill's attention weights and keys (the keys as the attention reads them: GPT-2's, and the Llama's after
  RoPE, which is what a cache holds); no DynamicCache is used anywhere.
- The kept positions per layer and KV head come from each paper's definition (KEPT below); ties go to the earlier
  position.
- The measures are one ordinary forward pass over the whole sequence (prefill + what follows, at its original
  positions 0..T-1) with a mask per layer and head: a query after the prefill cannot see the prefill rows its
  layer and KV head evicted; the prefill's own queries see every earlier row, as in a real prefill. That is the
  same arithmetic as decoding on from a physically pruned cache, summed in another order (hence the tolerance on
  the loss; the copy count, an argmax, is compared exactly).

Random (FORWARD_ONLY): a seeded draw cannot be reproduced without copying the lab's generator recipe, so the test
hands the lab's kept set to `measure` and checks only the forward path (and that the set is `rows` distinct
positions per layer and head).

Also shared with the lab, for the newer methods: DuoAttention's rankings of the KV heads (which heads retrieve: the
lab's ablation ranking, `Observed.head_order`, and for duo_probe its copy probe, `Observed.retrieval_order`) and its
EVICT_DUO_RECENT; KVzip's repeat prompt (the test checks it equals kvpress's, the official code's port, for a model
without a chat template) and the model's position limit. Computed here: which rows each head keeps (KVzip's both
ways: per head, and ranked across all layers and heads per sequence, as the paper allocates), how many retrieval
heads the bytes hold, and KVzip's re-read, as one ordinary forward pass over [prefill, prompt, chunk] per chunk (no
cache) whose attention weights on the prefill rows are recorded.

Add a policy: a function (Observed, rows, settings) -> per layer [batch_size, num_kv_heads, rows] long, in KEPT
(a policy whose heads keep different counts: per layer [batch_size, num_kv_heads, P] bool, True = kept).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from transformers import AttentionInterface, AutoModelForCausalLM

ATTENTION_NAME = "kvviz_independent_masked"  # the registered attention implementation
SNAPKV_POOL = 5  # the official code's kernel_size (FasterDecoding/SnapKV, snapkv_utils.py)


@dataclass
class _Pass:
    """What one forward pass needs from the attention function: the prefill length, which prefill rows each
    layer's queries after the prefill may see, and where to record the prefill's weights and keys."""

    prefill_len: int
    kept: Sequence[torch.Tensor] | None = None  # per layer [batch_size, num_kv_heads, rows] positions < prefill_len,
    # or [batch_size, num_kv_heads, prefill_len] bool (True = kept) where the heads keep different counts
    record: bool = False
    attentions: dict | None = None
    keys: dict | None = None


_ACTIVE: list[_Pass] = []  # the pass running now (one at a time: the test runs in one thread)


def _masked_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """query [batch_size, num_heads, T, head_dim], key and value [batch_size, num_kv_heads, T, head_dim] (no cache:
    T is the whole sequence). transformers builds no mask for an implementation it does not know, so the causal
    rule and the eviction are both here."""
    run = _ACTIVE[-1]
    layer = module.layer_idx
    b, hq, t, d = query.shape
    hkv = key.shape[1]
    group = hq // hkv
    k = key.repeat_interleave(group, dim=1)  # query head h reads KV head h // group
    v = value.repeat_interleave(group, dim=1)
    scores = torch.matmul(query, k.transpose(-1, -2)) * (d**-0.5 if scaling is None else scaling)
    pos = torch.arange(t)
    visible = (pos[None, :] <= pos[:, None]).expand(b, hkv, t, t).clone()  # causal
    if run.kept is not None:
        p = run.prefill_len
        kept = run.kept[layer]
        if kept.dtype == torch.bool:
            evicted = ~kept
        else:
            evicted = torch.ones(b, hkv, p, dtype=torch.bool)
            evicted.scatter_(2, kept, False)
        visible[:, :, p:, :p] &= ~evicted[:, :, None, :]  # only the queries after the prefill lose the rows
    visible = visible.repeat_interleave(group, dim=1)
    weights = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1, dtype=torch.float32)
    if run.record:
        run.attentions[layer] = weights
        run.keys[layer] = key
    return torch.matmul(weights.to(value.dtype), v).transpose(1, 2), weights


AttentionInterface.register(ATTENTION_NAME, _masked_attention)


def load(folder) -> torch.nn.Module:
    """A bundled model straight from its folder, float32, running this module's attention."""
    model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation=ATTENTION_NAME, dtype=torch.float32)
    return model.eval()


def _forward(model, input_ids: torch.Tensor, run: _Pass) -> torch.Tensor:
    _ACTIVE.append(run)
    try:
        with torch.inference_mode():
            return model(input_ids=input_ids, use_cache=False).logits  # positions 0..T-1: the original ones
    finally:
        _ACTIVE.pop()


@dataclass
class Observed:
    """A prefill's attention weights (per layer [batch_size, num_heads, P, P], float32) and keys (per layer
    [batch_size, num_kv_heads, P, head_dim])."""

    attentions: list[torch.Tensor]
    keys: list[torch.Tensor]
    model: torch.nn.Module | None = None  # for a scorer that runs the model again (KVzip's re-read)
    input_ids: torch.Tensor | None = None  # [batch_size, P], the prefill
    retrieval_order: Sequence[tuple[int, int]] = ()  # (layer, KV head), most retrieving first: the test sets it
    # (the induction probe's ranking, duo_probe's) ...
    head_order: Sequence[tuple[int, int]] = ()  # ... and the ablation ranking's (duoattention's): the test sets it
    repeat_prompt_ids: Sequence[int] = ()  # KVzip's repeat prompt, tokenized: the test sets it

    @property
    def prefill_len(self) -> int:
        return self.keys[0].shape[2]

    @property
    def kv_heads(self) -> int:
        return self.keys[0].shape[1]


def observe(model, prefill_ids: torch.Tensor) -> Observed:
    """Run the prefill alone (as a cache would be filled) and record what the scorers read."""
    run = _Pass(prefill_ids.shape[1], record=True, attentions={}, keys={})
    _forward(model, prefill_ids, run)
    n = len(run.keys)
    return Observed([run.attentions[i] for i in range(n)], [run.keys[i] for i in range(n)], model, prefill_ids)


# ----- kept positions, from the papers ---------------------------------------------------------------------------
def _best(scores: torch.Tensor, k: int, among: range | None = None) -> list[int]:
    """The k positions with the highest scores ([n], float64), ties to the earlier position."""
    values = scores.tolist()
    candidates = range(len(values)) if among is None else among
    return sorted(candidates, key=lambda j: (-values[j], j))[:k]


def _per_head(obs: Observed, pick: Callable[[int, int, int], list[int]], rows: int) -> list[torch.Tensor]:
    """Per layer [batch_size, num_kv_heads, rows]: pick(layer, batch, kv_head) -> positions, sorted."""
    b = obs.keys[0].shape[0]
    out = []
    for layer in range(len(obs.keys)):
        chosen = [[sorted(pick(layer, i, h)) for h in range(obs.kv_heads)] for i in range(b)]
        assert all(len(c) == rows for per_b in chosen for c in per_b)
        out.append(torch.tensor(chosen, dtype=torch.long))
    return out


def _group_sum(attn: torch.Tensor, kv_heads: int) -> torch.Tensor:
    """[batch_size, num_heads, ...] -> [batch_size, num_kv_heads, ...]: the query heads of each KV head summed
    (float64). The lab averages them: a sum over a fixed group ranks the rows the same."""
    b, hq = attn.shape[:2]
    return attn.double().reshape(b, kv_heads, hq // kv_heads, *attn.shape[2:]).sum(2)


def kept_full(obs: Observed, rows: int, settings) -> list[torch.Tensor]:
    return _per_head(obs, lambda layer, i, h: list(range(obs.prefill_len)), obs.prefill_len)


def kept_recent(obs: Observed, rows: int, settings) -> list[torch.Tensor]:
    p = obs.prefill_len
    return _per_head(obs, lambda layer, i, h: list(range(p - rows, p)), rows)


def kept_streaming(obs: Observed, rows: int, settings) -> list[torch.Tensor]:
    """StreamingLLM (arXiv:2309.17453): the first S tokens (attention sinks) and the newest rows - S; a budget of
    S rows or fewer is all sinks, the earliest first."""
    p, sinks = obs.prefill_len, min(settings.sink_tokens, rows)
    return _per_head(obs, lambda layer, i, h: list(range(sinks)) + list(range(p - (rows - sinks), p)), rows)


def kept_h2o(obs: Observed, rows: int, settings) -> list[torch.Tensor]:
    """H2O (arXiv:2306.14048): half the budget heavy hitters (the most attention received, accumulated over the
    prefill's queries), half the most recent tokens; chosen once, after the prefill."""
    p = obs.prefill_len
    recent = rows - rows // 2
    received = [_group_sum(a, obs.kv_heads).sum(dim=-2) for a in obs.attentions]  # [b, kv, P]
    return _per_head(
        obs,
        lambda layer, i, h: _best(received[layer][i, h], rows // 2, range(p - recent)) + list(range(p - recent, p)),
        rows,
    )


def kept_h2o_heavy(obs: Observed, rows: int, settings) -> list[torch.Tensor]:
    """Heavy hitters alone (H2O's score, the whole budget, no recent half)."""
    received = [_group_sum(a, obs.kv_heads).sum(dim=-2) for a in obs.attentions]
    return _per_head(obs, lambda layer, i, h: _best(received[layer][i, h], rows), rows)


def kept_tova(obs: Observed, rows: int, settings) -> list[torch.Tensor]:
    """TOVA (arXiv:2401.06104): the newest query's attention, averaged over all heads of the layer; one choice per
    layer, every KV head keeps it."""
    newest = [a[:, :, -1, :].double().sum(dim=1) for a in obs.attentions]  # [b, P]; a sum ranks like the mean
    return _per_head(obs, lambda layer, i, h: _best(newest[layer][i], rows), rows)


def kept_snapkv(obs: Observed, rows: int, settings) -> list[torch.Tensor]:
    """SnapKV's official code (github.com/FasterDecoding/SnapKV, SnapKVCluster.update_kv): the last `window`
    queries' attention on the prefix (the rows before the window) summed over those queries, avg_pool1d(kernel 5,
    padding 2, stride 1; padding counted, F.avg_pool1d's default), the top rows - window of the prefix + the whole
    window. GQA: the query heads of a KV head summed (kvpress averages them; same ranking). Below the window the
    official code has no answer (a negative top-k); the lab keeps the window's newest rows, and so does this."""
    p = obs.prefill_len
    window = min(settings.snap_window, p)
    prefix = p - window
    if rows <= window:
        return kept_recent(obs, rows, settings)
    pooled = []
    for a in obs.attentions:
        summed = _group_sum(a[:, :, prefix:, :prefix], obs.kv_heads).sum(dim=-2)  # [b, kv, prefix]
        pooled.append(F.avg_pool1d(summed, kernel_size=SNAPKV_POOL, padding=SNAPKV_POOL // 2, stride=1))
    return _per_head(obs, lambda layer, i, h: _best(pooled[layer][i, h], rows - window) + list(range(prefix, p)), rows)


def kept_key_norm(obs: Observed, rows: int, settings) -> list[torch.Tensor]:
    """Devoto et al. 2024 (arXiv:2406.11430): the keys with the smallest L2 norm, no attention read."""
    squared = [k.double().pow(2).sum(dim=-1) for k in obs.keys]  # [b, kv, P]; the square ranks like the norm
    return _per_head(obs, lambda layer, i, h: _best(-squared[layer][i, h], rows), rows)


def kept_keydiff(obs: Observed, rows: int, settings) -> list[torch.Tensor]:
    """KeyDiff (arXiv:2504.15364, section 3): the anchor is the mean of the cache's keys normalised to unit length,
    mu = (1/n) sum k_i / |k_i|, per layer and KV head; a key's score is -cos(k_i, mu); the rows with the largest
    scores (the keys least like the anchor) are kept. One pass over the whole prefill (the paper evicts block by
    block while it reads; a span that fits at once is one block)."""
    chosen = []
    for k in obs.keys:
        k = k.double()
        unit = k / k.norm(dim=-1, keepdim=True)
        anchor = unit.mean(dim=2, keepdim=True)  # [b, kv, 1, d]
        cos = (unit * (anchor / anchor.norm(dim=-1, keepdim=True))).sum(dim=-1)  # [b, kv, P]
        chosen.append(-cos)
    return _per_head(obs, lambda layer, i, h: _best(chosen[layer][i, h], rows), rows)


def duo_retrieval_heads(n_heads: int, seq_len: int, rows: int, settings, recent: int) -> tuple[int, int]:
    """DuoAttention at the bytes of `rows` rows per head: (how many retrieval heads, rows per streaming head). A
    streaming head keeps S sinks + `recent` newest rows (at most `rows`); retrieval heads keep all seq_len rows;
    the count is the largest r with r x seq_len + (n_heads - r) x stream <= n_heads x rows (whole heads only)."""
    stream = min(rows, settings.sink_tokens + recent, seq_len)
    best = 0
    for r in range(n_heads + 1):
        if r * seq_len + (n_heads - r) * stream <= n_heads * rows:
            best = r
    return best, stream


def kept_duoattention(
    obs: Observed, rows: int, settings, recent: int = 4, order: Sequence[tuple[int, int]] | None = None
) -> list[torch.Tensor]:
    """DuoAttention (arXiv:2410.10819): a retrieval head keeps every row; a streaming head keeps the attention
    sinks (the first S rows) and the newest rows (StreamingLLM's rule per head). Which heads retrieve comes from the
    lab's ablation ranking (obs.head_order; the probe's for duo_probe); how many, from the budget
    (duo_retrieval_heads). Per layer
    [batch_size, num_kv_heads, P] bool: the heads keep different counts."""
    p, layers = obs.prefill_len, len(obs.keys)
    b = obs.keys[0].shape[0]
    retrieval, stream = duo_retrieval_heads(layers * obs.kv_heads, p, rows, settings, recent)
    heads = set(map(tuple, (obs.head_order if order is None else order)[:retrieval]))
    sinks = min(settings.sink_tokens, stream)
    streaming = torch.zeros(p, dtype=torch.bool)
    streaming[:sinks] = True
    streaming[p - (stream - sinks) :] = True
    return [
        torch.stack(
            [torch.ones(p, dtype=torch.bool) if (layer, h) in heads else streaming for h in range(obs.kv_heads)]
        )[None]
        .expand(b, -1, -1)
        .clone()
        for layer in range(layers)
    ]


def kvzip_scores(obs: Observed, n_positions: int) -> list[torch.Tensor]:
    """KVzip (arXiv:2505.23416, section 3): the model reads the repeat prompt and then the context again (teacher
    forced); a cached row's score is the largest attention weight any re-reading query of the KV head's query heads
    gives it. The lab's chunking: chunks of min(P, n_positions - P - prompt) tokens, each re-read as [prompt, chunk]
    after the whole prefill, at positions P...; the score is the max over the chunks. Here each chunk is one
    ordinary forward pass over [prefill, prompt, chunk] at positions 0.. (the prefill recomputed: no cache).
    Per layer [batch_size, num_kv_heads, P] float64."""
    ids, p = obs.input_ids, obs.prefill_len
    b = ids.shape[0]
    prompt = torch.tensor(list(obs.repeat_prompt_ids), dtype=torch.long)[None].expand(b, -1)
    chunk = min(p, n_positions - p - prompt.shape[1])
    assert chunk >= 1
    best = None
    for start in range(0, p, chunk):
        seq = torch.cat([ids, prompt, ids[:, start : start + chunk]], dim=1)
        run = _Pass(seq.shape[1], record=True, attentions={}, keys={})
        _forward(obs.model, seq, run)
        got = []
        for layer in range(len(obs.keys)):
            w = run.attentions[layer][:, :, p:, :p].double()  # the re-reading queries on the prefill rows
            got.append(w.reshape(b, obs.kv_heads, -1, w.shape[-2], p).amax(dim=(2, 3)))
        best = got if best is None else [torch.maximum(x, y) for x, y in zip(best, got, strict=True)]
    return best


def kept_duo_probe(obs: Observed, rows: int, settings) -> list[torch.Tensor]:
    """The variant: DuoAttention's split with the heads in the induction probe's order."""
    return kept_duoattention(obs, rows, settings, order=obs.retrieval_order)


def kept_kvzip_head(obs: Observed, rows: int, settings) -> list[torch.Tensor]:
    """The variant: KVzip's rows per KV head, the top `rows` by kvzip_scores in every head."""
    scores = kvzip_scores(obs, obs.model.config.max_position_embeddings)
    return _per_head(obs, lambda layer, i, h: _best(scores[layer][i, h], rows), rows)


def kept_kvzip(obs: Observed, rows: int, settings) -> list[torch.Tensor]:
    """KVzip as the paper allocates (section 3: the scores of all heads and layers ranked together): per sequence,
    the rows x layers x KV heads best kvzip_scores of the whole cache, ties to the earlier layer, head, position.
    Per layer [batch_size, num_kv_heads, P] bool: the heads keep different counts."""
    scores = kvzip_scores(obs, obs.model.config.max_position_embeddings)
    layers, b, p = len(scores), scores[0].shape[0], obs.prefill_len
    budget = rows * layers * obs.kv_heads
    masks = [torch.zeros(b, obs.kv_heads, p, dtype=torch.bool) for _ in range(layers)]
    for i in range(b):
        flat = torch.cat([scores[layer][i].reshape(-1) for layer in range(layers)])
        for j in _best(flat, budget):
            layer, rest = divmod(j, obs.kv_heads * p)
            masks[layer][i, rest // p, rest % p] = True
    return masks


KEPT: dict[str, Callable[[Observed, int, object], list[torch.Tensor]]] = {
    "full": kept_full,
    "recent": kept_recent,
    "streaming": kept_streaming,
    "h2o": kept_h2o,
    "h2o_heavy": kept_h2o_heavy,
    "tova": kept_tova,
    "snapkv": kept_snapkv,
    "key_norm": kept_key_norm,
    "keydiff": kept_keydiff,
    "duoattention": kept_duoattention,
    "duo_probe": kept_duo_probe,
    "kvzip": kept_kvzip,
    "kvzip_head": kept_kvzip_head,
}
RAGGED = frozenset({"duoattention", "duo_probe", "kvzip"})  # their KEPT returns per-head masks, not equal counts
# KVzip's repeat prompt as kvpress's port of the official code builds it for a model without a chat template: the
# first chunk's prompt + the "\n" suffix (github.com/NVIDIA/kvpress, kvzip_press.py, KVzipPress.prepare)
KVZIP_REPEAT_PROMPT = "\n\nRepeat the previous context exactly." + "\n"
FORWARD_ONLY = frozenset({"random"})  # the test takes the lab's kept set and checks the forward path only


# ----- the measures: one masked forward pass ----------------------------------------------------------------------
def copy_count(model, sequences: torch.Tensor, kept: Sequence[torch.Tensor]) -> int:
    """sequences [n_spans, 2L] (a span, then itself): top-1 hits on targets L+1..2L-1 when the repeat cannot see
    the first copy's evicted rows."""
    half = sequences.shape[1] // 2
    logits = _forward(model, sequences, _Pass(half, kept))
    return int((logits[:, half:-1].argmax(-1) == sequences[:, half + 1 :]).sum())


def mean_loss(model, passages: torch.Tensor, context: int, kept: Sequence[torch.Tensor] | None) -> float:
    """passages [n, context + continuation]: the mean next-token loss (nats) of the continuation's predictions
    (its first token is fed, not predicted) when it cannot see the context's evicted rows (kept None: it sees all)."""
    logits = _forward(model, passages, _Pass(context, kept))
    return float(
        F.cross_entropy(
            logits[:, context:-1].reshape(-1, logits.shape[-1]).float(),
            passages[:, context + 1 :].reshape(-1),
            reduction="none",
        )
        .double()
        .mean()
    )
