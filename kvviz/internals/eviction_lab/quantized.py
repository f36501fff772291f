"""The quantized formats on the eviction sweep's bytes axis: every row kept, at the bytes each format stores,
measured by the same copy test and loss change (kvviz.internals.eviction_lab.measures).

fp16/int8/int4/int2: kvviz.internals.lab.quant's arithmetic (round_trip); fp8: transformers' Fp8QuantizedLayer arithmetic
on the prefill's rows, under the same protocol (the rows appended afterwards stay float32); fp8-hf: transformers' own
QuantizedCache(backend="fp8"), which stores the appended rows in fp8 too.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers import DynamicCache, QuantizedCache

from kvviz.internals import quant
from kvviz.internals.eviction import EVICT_QUANT_SCHEMES
from kvviz.internals.eviction_lab.measures import SweepTexts, copy_hits, token_losses
from kvviz.internals.eviction_lab.scoring import Prefill
from kvviz.internals.lab.quant import round_trip
from kvviz.internals.records import EvictionPoint
from kvviz.model.loading import MODEL_LOCK, LoadedModel

__all__ = ["quant_points"]


def _empty_cache(loaded: LoadedModel) -> DynamicCache:
    return DynamicCache(config=loaded.model.config)


def _quantized_cache(pre: Prefill, scheme: str, group_size: int) -> tuple[DynamicCache, int]:
    """The prefill's cache stored in `scheme` and read back (kvviz.internals.lab.quant.round_trip: its arithmetic,
    its bytes; fp8: _fp8_round_trip); the rows the measure appends afterwards stay full precision, as in
    QuantizedCache's residual window for its int backends (residual_length 128 > any span here)."""
    cache = _empty_cache(pre.loaded)
    stored = 0
    for i, layer in enumerate(pre.cache.layers):
        trip = _fp8_round_trip if scheme == "fp8" else lambda x: round_trip(x, scheme, group_size)
        k_hat, k_bytes = trip(layer.keys)
        v_hat, v_bytes = trip(layer.values)
        cache.update(k_hat.to(layer.keys.dtype), v_hat.to(layer.values.dtype), i)
        stored += k_bytes + v_bytes
    return cache, stored


def _fp8_round_trip(x: torch.Tensor) -> tuple[torch.Tensor, int]:
    """x [batch_size, num_kv_heads, seq_len, head_dim] stored as transformers' Fp8QuantizedLayer stores a
    prefill (float8_e4m3fn, one float32 scale per tensor = amax / 448), each sequence with its own scale as one
    sequence per cache would have, and read back. Returns (x read back, bytes: 1 per number + 4 per scale)."""
    fp8 = torch.float8_e4m3fn
    amax = x.abs().float().amax(dim=(1, 2, 3), keepdim=True)  # [batch_size, 1, 1, 1]
    scale = (amax / torch.finfo(fp8).max).clamp(min=torch.finfo(torch.float32).tiny)
    back = (x.float() / scale).to(fp8).float() * scale
    return back, x.numel() + 4 * x.shape[0]


def _fp8_run(loaded: LoadedModel, prefix: torch.Tensor, feed: torch.Tensor) -> tuple[torch.Tensor, int]:
    """transformers' own QuantizedCache(backend="fp8") (Fp8QuantizedLayer, no extra package): prefill `prefix`
    [1, seq_len] into it, then feed `feed` [1, q_len]: the fed rows are stored in fp8 too, at the prefill's scale.
    Returns the feed's logits [1, q_len, vocab_size] and the bytes the cache held after the prefill: 1 byte per
    number + one float32 scale for K and one for V per layer, read from its tensors.
    One sequence per cache: the scale is per tensor, so a batch would share one scale between sequences."""
    cache = QuantizedCache(backend="fp8", config=loaded.model.config)
    with MODEL_LOCK, torch.inference_mode():
        loaded.model(input_ids=prefix, past_key_values=cache, use_cache=True)
        stored = sum(
            t.nbytes for layer in cache.layers for t in (*layer._quantized_keys, *layer._quantized_values)
        )  # (fp8 tensor, fp32 scale) x 2
        logits = loaded.model(input_ids=feed, past_key_values=cache, use_cache=True).logits
    return logits, stored


def _fp8_hf_point(loaded: LoadedModel, texts: SweepTexts) -> EvictionPoint:
    """transformers' own fp8 cache, measured sequence by sequence (another protocol: the appended rows in fp8)."""
    half, context = texts.settings.half_tokens, texts.settings.context_tokens
    hits, losses = [], []
    stored = 0
    for row in texts.sequences:
        logits, stored = _fp8_run(loaded, row[None, :half], row[None, half:])
        hits.append(logits[0, :-1].argmax(-1) == row[half + 1 :])
    for row in texts.passages:
        logits, _bytes = _fp8_run(loaded, row[None, :context], row[None, context:])
        losses.append(F.cross_entropy(logits[0, :-1].float(), row[context + 1 :], reduction="none").double())
    return texts.point("fp8-hf", "quantized", 100, half, stored, torch.stack(hits), torch.cat(losses))


def quant_points(
    loaded: LoadedModel,
    texts: SweepTexts,
    schemes: tuple[str, ...] = EVICT_QUANT_SCHEMES,
    group_size: int | None = None,
) -> list[EvictionPoint]:
    """The quantized formats on the same axis: every row kept, at the bytes they store (fp16/int8/int4/int2:
    lab.quant.round_trip's; fp8: Fp8QuantizedLayer's arithmetic; fp8-hf: transformers' QuantizedCache itself)."""
    group = loaded.info.head_dim if group_size is None else group_size
    points = []
    for scheme in schemes:
        if scheme == "fp8-hf":
            points.append(_fp8_hf_point(loaded, texts))
            continue
        if scheme != "fp8":
            quant.check_scheme(scheme, loaded.info.head_dim, group, schemes=(*quant.SCHEMES, "int2"))
        cache, stored = _quantized_cache(texts.copy, scheme, group)
        hits = copy_hits(loaded, cache, texts.sequences)
        context_cache, _stored = _quantized_cache(texts.context, scheme, group)
        losses = token_losses(loaded, context_cache, texts.passages, texts.settings.context_tokens)
        points.append(
            texts.point(scheme, "quantized", 100, texts.copy.seq_len, stored // texts.settings.n_spans, hits, losses)
        )
    return points
