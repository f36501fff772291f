"""KV-cache eviction: what to forget, measured on the real cache of a real prefill.

Each policy scores the rows of transformers' own `DynamicCache` after a prefill and keeps the best `rows` of every
layer and KV head (`keep_rows`); `prune` gathers them into a new DynamicCache, and decoding goes on from it. The
scorers are a few lines each, written here on the cache tensors (NVIDIA's kvpress is the reference implementation
of these "presses"; kvpress 0.5.5 pins transformers < 5.3 and does not take GPT-2; transformers 5 removed SinkCache):

    full       every row (the reference)
    random     a seeded random set, per layer and KV head (the control)
    recent     the last W rows (StreamingLLM with S = 0)
    streaming  the first S rows (attention sinks) + the last W - S  (StreamingLLM, Xiao et al. 2023, arXiv:2309.17453)
    h2o        the most accumulated attention, summed over every prefill query (H2O, Zhang et al. 2023,
               arXiv:2306.14048; its heavy-hitter half alone, without the paper's recent window)
    tova       the newest query's attention, averaged over all heads of the layer (TOVA, Oren et al. 2024,
               arXiv:2401.06104): one choice per layer
    snapkv     the attention of the last `snap_window` queries, summed and smoothed over 5 positions, the window
               itself always kept (SnapKV, Li et al. 2024, arXiv:2404.14469)
    key_norm   the keys with the smallest L2 norm (Devoto et al. 2024, arXiv:2406.11430), no attention read

Attention-based scores read the prefill's attention weights (eager attention, which the app loads). With GQA the
query heads that share a KV head are averaged, so the choice is per KV head: the pruned tensors stay
[batch_size, num_kv_heads, seq_len, head_dim] with seq_len = the rows kept, rectangular, because every head keeps
the same number of rows.

Budget: a whole percent of the KV bytes; rows per head = floor(S x percent / 100) (records.rows_for_budget), and the
bytes reported are the pruned tensors' own `nbytes`, never the percent asked for. Masking rows or zeroing channels
would keep the bytes and save nothing, so nothing here masks: the rows are gone from the tensors.

Positions after eviction continue from the ORIGINAL length. After a prefill of S tokens pruned to k rows the cache
holds k rows, and transformers would place the next token at position k (it reads `get_seq_length()`). But the kept
rows still carry their original positions: GPT-2's keys and values were computed from learned position embeddings
0..S-1, the Llama's keys are stored already rotated (RoPE) by their original positions. The next token is token S of
the text: at position k it would reuse a position a kept row already holds and see every kept row nearer than it
is (with RoPE, the relative distance q - k in each score would be wrong). So every pass after pruning gets explicit
`position_ids = S, S+1, ...`. The causal mask stays right without help: transformers 5 sizes it from the cache's
physical length (`get_mask_sizes`), not from the positions, so the new tokens see every kept row and each other
causally. (transformers 5 has no `cache_position` argument left; position_ids is the one to set.)

Quality: the copy test (held-out spans: prefill the span, prune, feed the span again, top-1 next-token accuracy on
the repeat, the targets kvviz.training.copying.copying_accuracy scores) and the next-token loss of a continuation
after a pruned context. The quantized formats of kvviz.internals.quant are measured the same way at their bytes.
"""
from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from transformers import DynamicCache

from kvviz.i18n import _
from kvviz.internals import quant
from kvviz.internals.records import (EVICT_KEEP_PERCENTS, EVICT_POLICIES, EVICT_QUANT_SCHEMES, EVICT_SNAP_POOL,
                                    EvictionError, EvictionGrid, EvictionPoint, EvictionSweep, EvictSettings,
                                    LayerKept, check_keep_percent, check_policy, held_out_text, rows_for_budget)
from kvviz.model.loading import LoadedModel
from kvviz.step.engine import MODEL_LOCK, token_text

__all__ = ["EVICT_KEEP_PERCENTS", "EVICT_POLICIES", "EvictionError", "EvictSettings", "Prefill", "cache_nbytes",
           "SweepTexts", "continue_from", "copy_correct", "copy_sequences", "eviction_grid", "keep_order", "keep_rows", "loss_passages", "measure_policy",
           "measure_quantized", "policy_points", "prefill", "prune", "quant_points", "sweep", "sweep_of", "text_ids"]

Progress = Callable[[float, str], None]


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
            out = loaded.model(input_ids=input_ids, past_key_values=DynamicCache(config=loaded.model.config),
                               use_cache=True, output_attentions=True)
        self.cache: DynamicCache = out.past_key_values
        self.attentions = [a.float() for a in out.attentions]  # per layer [batch_size, num_heads, seq_len, seq_len]

    @property
    def seq_len(self) -> int:
        return self.input_ids.shape[1]


def prefill(loaded: LoadedModel, input_ids: torch.Tensor) -> Prefill:
    return Prefill(loaded, input_ids)


# ----- scores: higher = keep ----------------------------------------------------------------------------------
def _per_kv_head(attn: torch.Tensor, n_kv_heads: int) -> torch.Tensor:
    """[batch_size, num_heads, seq_len, seq_len] -> [batch_size, num_kv_heads, seq_len, seq_len]: the query heads
    sharing a KV head, averaged (GQA; MHA: unchanged)."""
    b, hq, s, _s = attn.shape
    return attn.reshape(b, n_kv_heads, hq // n_kv_heads, s, s).mean(2)


def _scores(policy: str, pre: Prefill, layer: int, settings: EvictSettings) -> torch.Tensor:
    """[batch_size, num_kv_heads, seq_len] float64 scores of one layer's rows. Positional policies score by position,
    so that the same top-k selection serves every policy; ties never decide a pick (scores are distinct or broken by
    position)."""
    keys = pre.cache.layers[layer].keys  # [batch_size, num_kv_heads, seq_len, head_dim]
    b, hkv, s, _d = keys.shape
    position = torch.arange(s, dtype=torch.float64).expand(b, hkv, s)
    if policy in ("full", "recent"):
        return position.clone()  # newest first
    if policy == "streaming":  # a budget below S rows keeps only the first rows (no window left)
        return position + (position < settings.sink_tokens) * s  # the sinks outrank every window row
    if policy == "random":
        gen = torch.Generator().manual_seed(settings.seed * 1009 + layer)  # a different draw per layer
        return torch.rand((b, hkv, s), generator=gen, dtype=torch.float64)
    if policy == "key_norm":
        return -keys.double().norm(dim=-1)  # smallest norm kept
    attn = pre.attentions[layer].double()  # [batch_size, num_heads, seq_len, seq_len]
    if policy == "h2o":
        return _per_kv_head(attn, hkv).sum(dim=-2)  # attention each row received, summed over all queries
    if policy == "tova":
        last = attn[:, :, -1, :].mean(dim=1)  # [batch_size, seq_len]: the newest query, averaged over the layer's heads
        return last[:, None, :].expand(b, hkv, s).clone()
    if policy == "snapkv":
        window = min(settings.snap_window, s)
        observed = _per_kv_head(attn, hkv)[:, :, s - window:, :].sum(dim=-2)  # [batch_size, num_kv_heads, seq_len]
        pooled = F.avg_pool1d(observed.reshape(b * hkv, 1, s), EVICT_SNAP_POOL, stride=1,
                              padding=EVICT_SNAP_POOL // 2, count_include_pad=False).reshape(b, hkv, s)
        return torch.where(position >= s - window, pooled + 2.0 * s, pooled)  # the window always outranks
    raise EvictionError(f"no scorer for {policy!r}")


def keep_order(policy: str, pre: Prefill, settings: EvictSettings) -> list[torch.Tensor]:
    """Per layer [batch_size, num_kv_heads, seq_len] long: positions from most to least worth keeping. Any budget
    keeps a prefix of it."""
    check_policy(policy)
    return [torch.argsort(_scores(policy, pre, i, settings), dim=-1, descending=True, stable=True)
            for i in range(len(pre.cache.layers))]


def keep_rows(order: list[torch.Tensor], rows: int) -> list[torch.Tensor]:
    """Per layer [batch_size, num_kv_heads, rows] long: the first `rows` of the order, sorted back into position
    order."""
    return [torch.sort(o[..., :rows], dim=-1).values for o in order]


def prune(pre: Prefill, kept: list[torch.Tensor]) -> DynamicCache:
    """A new DynamicCache holding only the kept rows of every layer and KV head (the prefill's stays untouched)."""
    pruned = DynamicCache(config=pre.loaded.model.config)
    for i, (layer, idx) in enumerate(zip(pre.cache.layers, kept)):
        index = idx[..., None].expand(-1, -1, -1, layer.keys.shape[-1])  # [batch_size, num_kv_heads, rows, head_dim]
        pruned.update(torch.gather(layer.keys, 2, index).contiguous(),
                      torch.gather(layer.values, 2, index).contiguous(), i)
    return pruned


def cache_nbytes(cache: DynamicCache) -> int:
    """The bytes the cache's K and V tensors occupy (their own nbytes), all layers."""
    return sum(layer.keys.nbytes + layer.values.nbytes for layer in cache.layers)


def continue_from(loaded: LoadedModel, cache: DynamicCache, input_ids: torch.Tensor, original_len: int) -> torch.Tensor:
    """Feed input_ids [batch_size, q_len] after a (possibly pruned) cache of a prefill of `original_len` tokens:
    positions continue at original_len (module docstring: why). Returns the logits [batch_size, q_len, vocab_size]."""
    b, n = input_ids.shape
    position_ids = torch.arange(original_len, original_len + n)[None, :].expand(b, n)
    with MODEL_LOCK, torch.inference_mode():
        return loaded.model(input_ids=input_ids, past_key_values=cache, position_ids=position_ids,
                            use_cache=True).logits


# ----- the texts the measures run on -------------------------------------------------------------------------
def text_ids(loaded: LoadedModel, text: str | None) -> torch.Tensor:
    text = held_out_text() if text is None else text
    if not isinstance(text, str) or not text.strip():
        raise EvictionError(_("The text is empty: paste a few paragraphs (the default is held-out Shakespeare)."))
    return torch.tensor(loaded.tokenizer(text).input_ids, dtype=torch.long)


def _need(ids: torch.Tensor, tokens: int, what: str) -> None:
    if len(ids) < tokens:
        raise EvictionError(_("The text has {n} tokens; {what} needs at least {need}: paste a longer text or "
                              "lower the setting.").format(n=len(ids), what=what, need=tokens))


def _evenly_spaced_starts(n_tokens: int, length: int, n: int) -> list[int]:
    """n start offsets of `length`-token windows, evenly spaced over n_tokens (first at 0, last at the end)."""
    last = n_tokens - length
    return [round(i * last / max(1, n - 1)) for i in range(n)]


def copy_sequences(ids: torch.Tensor, settings: EvictSettings) -> torch.Tensor:
    """(n_spans, 2L): held-out spans at evenly spaced offsets, each followed by itself: the rows
    kvviz.training.copying.held_out_repeats cuts for copying_accuracy (tests/test_eviction.py checks they are
    equal; not imported from there, because kvviz.training sits above the CLI and kvviz.cli imports this module)."""
    _need(ids, settings.half_tokens, _("the copy test"))
    half = settings.half_tokens
    spans = torch.stack([ids[s:s + half] for s in _evenly_spaced_starts(len(ids), half, settings.n_spans)])
    return torch.cat([spans, spans], dim=1)


def loss_passages(ids: torch.Tensor, settings: EvictSettings) -> torch.Tensor:
    """(n_passages, context + continuation) at evenly spaced offsets of the text."""
    length = settings.context_tokens + settings.continuation_tokens
    _need(ids, length, _("the loss measure"))
    return torch.stack([ids[s:s + length] for s in _evenly_spaced_starts(len(ids), length, settings.n_passages)])


# ----- the measures -------------------------------------------------------------------------------------------
def copy_correct(loaded: LoadedModel, cache: DynamicCache, sequences: torch.Tensor) -> tuple[int, int]:
    """Feed the span again after the (pruned) cache of its first copy; count top-1 hits on targets L+1..2L-1."""
    half = sequences.shape[1] // 2
    logits = continue_from(loaded, cache, sequences[:, half:], half)  # [batch_size, q_len = half, vocab_size]
    right = logits[:, :-1].argmax(-1) == sequences[:, half + 1:]  # logits[:, t] guesses token half + t + 1
    return int(right.sum()), right.numel()


def _loss(loaded: LoadedModel, cache: DynamicCache, passages: torch.Tensor, context: int) -> float:
    """Mean next-token loss (nats) over the continuation, after the (pruned) cache of the context."""
    logits = continue_from(loaded, cache, passages[:, context:], context)  # [batch_size, q_len, vocab_size]
    targets = passages[:, context + 1:]
    return float(F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(), targets.reshape(-1)))


class SweepTexts:
    """The two prefills every point of a sweep starts from (computed once per model, text and settings)."""

    def __init__(self, loaded: LoadedModel, text: str | None, settings: EvictSettings):
        self.settings = settings = settings.checked(loaded.info.n_positions)
        ids = text_ids(loaded, text)
        self.n_tokens = len(ids)
        self.sequences = copy_sequences(ids, settings)
        self.passages = loss_passages(ids, settings)
        half = settings.half_tokens
        self.copy = prefill(loaded, self.sequences[:, :half])
        self.context = prefill(loaded, self.passages[:, :settings.context_tokens])
        self.full_bytes = cache_nbytes(self.copy.cache) // settings.n_spans  # one sequence
        self.loss_full = _loss(loaded, prune(self.context, keep_rows(keep_order("full", self.context, settings),
                                                                     settings.context_tokens)),
                               self.passages, settings.context_tokens)


def policy_points(loaded: LoadedModel, texts: SweepTexts, policy: str,
                  keep_percents: tuple[int, ...] = EVICT_KEEP_PERCENTS) -> list[EvictionPoint]:
    """One policy at every budget (the full cache: once, at 100%)."""
    settings = texts.settings
    copy_order = keep_order(policy, texts.copy, settings)
    context_order = keep_order(policy, texts.context, settings)
    points = []
    for keep in ((100,) if policy == "full" else tuple(check_keep_percent(k) for k in keep_percents)):
        rows = rows_for_budget(keep, texts.copy.seq_len)
        cache = prune(texts.copy, keep_rows(copy_order, rows))
        kept_bytes = cache_nbytes(cache) // settings.n_spans  # counted before the repeat appends its rows
        correct, total = copy_correct(loaded, cache, texts.sequences)
        context_rows = rows_for_budget(keep, settings.context_tokens)
        loss = _loss(loaded, prune(texts.context, keep_rows(context_order, context_rows)), texts.passages,
                     settings.context_tokens)
        points.append(EvictionPoint(policy, "eviction", keep, rows, texts.copy.seq_len, kept_bytes,
                                    texts.full_bytes, correct, total, loss, texts.loss_full))
    return points


def _quantized_cache(pre: Prefill, scheme: str, group_size: int) -> tuple[DynamicCache, int]:
    """The prefill's cache stored in `scheme` and read back (kvviz.internals.quant.round_trip: its arithmetic,
    its bytes); the rows the measure appends afterwards stay full precision, as in QuantizedCache's residual
    window (residual_length 128 > any span here)."""
    cache = DynamicCache(config=pre.loaded.model.config)
    stored = 0
    for i, layer in enumerate(pre.cache.layers):
        k_hat, k_bytes = quant.round_trip(layer.keys, scheme, group_size)
        v_hat, v_bytes = quant.round_trip(layer.values, scheme, group_size)
        cache.update(k_hat.to(layer.keys.dtype), v_hat.to(layer.values.dtype), i)
        stored += k_bytes + v_bytes
    return cache, stored


def _fp8_run(loaded: LoadedModel, prefix: torch.Tensor, feed: torch.Tensor) -> tuple[torch.Tensor, int]:
    """transformers' own QuantizedCache(backend="fp8") (Fp8QuantizedLayer, no extra package): prefill `prefix`
    [1, seq_len] into it, then feed `feed` [1, q_len]. Returns the feed's logits [1, q_len, vocab_size] and the bytes
    the cache held after the prefill: 1 byte per number + one float32 scale for K and one for V per layer, read from
    its tensors.
    One sequence per cache: the scale is per tensor, so a batch would share one scale between sequences."""
    from transformers import QuantizedCache

    cache = QuantizedCache(backend="fp8", config=loaded.model.config)
    with MODEL_LOCK, torch.inference_mode():
        loaded.model(input_ids=prefix, past_key_values=cache, use_cache=True)
        stored = sum(t.nbytes for layer in cache.layers
                     for t in (*layer._quantized_keys, *layer._quantized_values))  # (fp8 tensor, fp32 scale) x 2
        logits = loaded.model(input_ids=feed, past_key_values=cache, use_cache=True).logits
    return logits, stored


def _fp8_point(loaded: LoadedModel, texts: SweepTexts) -> EvictionPoint:
    """The fp8 format, measured sequence by sequence through transformers' QuantizedCache."""
    half, context = texts.settings.half_tokens, texts.settings.context_tokens
    correct = total = 0
    stored = None
    for row in texts.sequences:
        logits, stored = _fp8_run(loaded, row[None, :half], row[None, half:])
        right = logits[0, :-1].argmax(-1) == row[half + 1:]
        correct, total = correct + int(right.sum()), total + right.numel()
    losses = []
    for row in texts.passages:
        logits, _bytes = _fp8_run(loaded, row[None, :context], row[None, context:])
        losses.append(F.cross_entropy(logits[0, :-1].float(), row[context + 1:], reduction="sum"))
    loss = float(torch.stack(losses).sum()) / (len(texts.passages) * (texts.passages.shape[1] - context - 1))
    return EvictionPoint("fp8", "quantized", 100, half, half, stored, texts.full_bytes, correct, total, loss,
                         texts.loss_full)


def quant_points(loaded: LoadedModel, texts: SweepTexts, schemes: tuple[str, ...] = EVICT_QUANT_SCHEMES,
                 group_size: int | None = None) -> list[EvictionPoint]:
    """The quantized formats on the same axis: every row kept, at the bytes they store (fp16/int8/int4:
    quant.round_trip's; fp8: transformers' QuantizedCache(backend="fp8"))."""
    group = loaded.info.head_dim if group_size is None else group_size
    points = []
    for scheme in schemes:
        if scheme == "fp8":
            points.append(_fp8_point(loaded, texts))
            continue
        quant.check_scheme(scheme, loaded.info.head_dim, group, schemes=(*quant.SCHEMES, "int2"))
        cache, stored = _quantized_cache(texts.copy, scheme, group)
        correct, total = copy_correct(loaded, cache, texts.sequences)
        context_cache, _stored = _quantized_cache(texts.context, scheme, group)
        loss = _loss(loaded, context_cache, texts.passages, texts.settings.context_tokens)
        points.append(EvictionPoint(scheme, "quantized", 100, texts.copy.seq_len, texts.copy.seq_len,
                                    stored // texts.settings.n_spans, texts.full_bytes, correct, total, loss,
                                    texts.loss_full))
    return points


def sweep(loaded: LoadedModel, text: str | None = None, settings: EvictSettings = EvictSettings(),
          policies: tuple[str, ...] = EVICT_POLICIES, keep_percents: tuple[int, ...] = EVICT_KEEP_PERCENTS,
          schemes: tuple[str, ...] = EVICT_QUANT_SCHEMES, progress: Progress | None = None) -> EvictionSweep:
    """Every policy x every budget x both measures, then the quantized formats. `progress(fraction, what)` is
    called before each policy (a page's progress bar; a Streamlit rerun stops the run there)."""
    for policy in policies:
        check_policy(policy)
    texts = SweepTexts(loaded, text, settings)
    points: list[EvictionPoint] = []
    steps = len(policies) + (1 if schemes else 0)
    for n, policy in enumerate(policies):
        if progress:
            progress(n / steps, policy)
        points += policy_points(loaded, texts, policy, keep_percents)
    if schemes:
        if progress:
            progress(len(policies) / steps, ", ".join(schemes))
        points += quant_points(loaded, texts, schemes)
    if progress:
        progress(1.0, "")
    return EvictionSweep(loaded.info.label, texts.settings, tuple(points), loaded.info.head_dim, texts.n_tokens)


def measure_policy(loaded: LoadedModel, policy: str, text: str | None = None,
                   settings: EvictSettings = EvictSettings(),
                   keep_percents: tuple[int, ...] = EVICT_KEEP_PERCENTS) -> tuple[EvictionPoint, ...]:
    """One policy's line of the sweep (a page caches and shows progress per line)."""
    check_policy(policy)
    return tuple(policy_points(loaded, SweepTexts(loaded, text, settings), policy, keep_percents))


def measure_quantized(loaded: LoadedModel, text: str | None = None,
                      settings: EvictSettings = EvictSettings()) -> tuple[EvictionPoint, ...]:
    """The quantized formats' points of the sweep."""
    return tuple(quant_points(loaded, SweepTexts(loaded, text, settings)))


def sweep_of(loaded: LoadedModel, points: tuple[EvictionPoint, ...], text: str | None = None,
             settings: EvictSettings = EvictSettings()) -> EvictionSweep:
    """The sweep record of points measured line by line (measure_policy, measure_quantized)."""
    return EvictionSweep(loaded.info.label, settings.checked(loaded.info.n_positions), tuple(points),
                         loaded.info.head_dim, len(text_ids(loaded, text)))


def eviction_grid(loaded: LoadedModel, policy: str, keep_percent: int, text: str | None = None,
                  settings: EvictSettings = EvictSettings()) -> EvictionGrid:
    """Which rows `policy` keeps at `keep_percent`, per layer and KV head, on the first copy-test span."""
    check_policy(policy)
    keep = 100 if policy == "full" else check_keep_percent(keep_percent)
    settings = settings.checked(loaded.info.n_positions)
    ids = text_ids(loaded, text)
    span = copy_sequences(ids, settings)[:1, :settings.half_tokens]  # (1, L)
    pre = prefill(loaded, span)
    rows = rows_for_budget(keep, pre.seq_len)
    kept = keep_rows(keep_order(policy, pre, settings), rows)
    cache = prune(pre, kept)
    layers = []
    for i, (idx, full, small) in enumerate(zip(kept, pre.cache.layers, cache.layers)):
        mask = torch.zeros(idx.shape[1], pre.seq_len, dtype=torch.bool)
        mask.scatter_(1, idx[0], True)
        layers.append(LayerKept(i, tuple(tuple(bool(x) for x in row) for row in mask.tolist()), rows,
                                small.keys.nbytes + small.values.nbytes, full.keys.nbytes + full.values.nbytes))
    return EvictionGrid(policy, keep, tuple(token_text(loaded.tokenizer, int(t)) for t in span[0]),
                        settings.sink_tokens, tuple(layers))
