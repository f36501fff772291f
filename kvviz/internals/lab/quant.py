"""Quantized KV cache, run: store the real K/V in int8 / int4 / int2 (or fp16 / bf16) and measure what it costs and
breaks. The formats, limits and checks are kvviz.internals.quant's (torch-free); this module runs the model.

Scheme (stated, because the numbers depend on it): asymmetric round-to-nearest, per token and per group of
`group_size` consecutive channels of one head's K or V vector (group_size must divide head_dim). Each group
stores an fp16 scale and an fp16 zero point (4 bytes per group, as `kvviz.memory` counts them):

    zero = min(group) rounded down to fp16      scale = (max - zero) / (2^bits - 1) rounded up to fp16
    q    = clamp(round((x - zero) / scale), 0, 2^bits - 1)          x_hat = zero + q * scale

Rounding zero down and scale up keeps every x inside [zero, zero + (2^bits - 1) * scale], so the
round-trip error is at most scale / 2 per element (plus float32 rounding). int4 values are packed two per
byte, int2 four per byte. fp16 / bf16 are plain casts (no scales). The eviction lab
(kvviz.internals.eviction_lab.quantized) puts int2 on its equal-bytes axis, via round_trip.

`greedy_agreement` measures the effect on generation: the real model generates greedily; the same run is
repeated with every new K/V row quantized-then-dequantized as it enters the cache (the prefill pass itself
attends in full precision, like Hugging Face's QuantizedCache residual), feeding the full-precision tokens
(teacher forcing), and we count the steps where the quantized cache picks the same next token. Its work is
capped (AGREEMENT_MAX_*): prompts x tokens is bounded, and a prompt too long for the model is refused.

Grouping, compared: kvviz groups each *token's* head vector (per token, for keys and values alike). KIVI
(arXiv:2402.02750) quantizes keys per *channel* (a group runs along positions) and values per token, because
key outliers sit in fixed channels. transformers' QuantizedCache keeps the newest tokens in full precision
(a residual window of `residual_length` rows, read from transformers by `transformers_residual_length`):
after t decode steps it holds t mod residual_length full-precision rows, then re-quantizes them all at once.
`quant_report(..., residual_rows=r)` counts the bytes and errors with the newest r rows left unquantized.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np
import torch
from transformers import DynamicCache
from transformers.cache_utils import QuantizedLayer

from kvviz import memory
from kvviz.i18n import _
from kvviz.inputs.prompt_rules import check_prompt
from kvviz.internals.quant import BITS, RESIDUAL_ROWS, SCHEMES, QuantError, check_agreement_work, check_scheme
from kvviz.internals.records import LayerError, QuantReport, SchemeAgreement
from kvviz.memory import dtypes
from kvviz.model.loading import LoadedModel

__all__ = [
    "Quantized",
    "dequantize",
    "error_bound",
    "greedy_agreement",
    "prompt_cache",
    "quant_report",
    "quantize",
    "round_trip",
    "transformers_residual_length",
]

FP16_MAX = 65504.0  # largest finite float16: scale and zero point are stored in fp16


def transformers_residual_length() -> int:
    """transformers' QuantizedCache default `residual_length` (full-precision recent rows), read from its code."""
    return int(inspect.signature(QuantizedLayer.__init__).parameters["residual_length"].default)


@dataclass(frozen=True)
class Quantized:
    """One tensor [..., head_dim] in int8/int4 with per-group fp16 scale and zero point."""

    packed: torch.Tensor  # uint8 [..., head_dim] for int8, [..., head_dim // 2] for int4, [..., head_dim // 4] int2
    scale: torch.Tensor  # float16 [..., n_groups]
    zero: torch.Tensor  # float16 [..., n_groups]
    bits: int
    group_size: int

    @property
    def stored_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.packed, self.scale, self.zero))


def _round_fp16(x: torch.Tensor, up: bool) -> torch.Tensor:
    """x rounded to a float16 that is >= x (up) or <= x (down)."""
    h = x.to(torch.float16)
    off = h.float() < x if up else h.float() > x
    toward = torch.full_like(h, float("inf") if up else float("-inf"))
    return torch.where(off, torch.nextafter(h, toward), h)


def quantize(x: torch.Tensor, bits: int, group_size: int) -> Quantized:
    """x: float [..., head_dim] -> integers + per-group fp16 scale/zero."""
    if bits not in (2, 4, 8):
        raise QuantError(f"bit width must be 8, 4 or 2 (got {bits})")
    head_dim = x.shape[-1]
    if group_size < 1 or head_dim % group_size:
        raise QuantError(f"group size {group_size} does not divide head_dim {head_dim}")
    if head_dim % (8 // bits):
        raise QuantError(f"head_dim {head_dim} must be a multiple of {8 // bits} to pack {bits}-bit values")
    if not torch.isfinite(x).all() or float(x.abs().max()) > FP16_MAX:
        raise QuantError(
            f"values must be finite and within ±{FP16_MAX:g}: the fp16 scale and zero point cannot hold them"
        )
    levels = 2**bits - 1
    g = x.float().reshape(*x.shape[:-1], head_dim // group_size, group_size)  # (..., n_groups, group_size)
    zero = _round_fp16(g.amin(-1), up=False)  # (..., n_groups)
    scale = _round_fp16((g.amax(-1) - zero.float()) / levels, up=True)
    safe = torch.where(scale > 0, scale.float(), torch.ones_like(scale, dtype=torch.float32))  # constant group
    q = torch.clamp(torch.round((g - zero.float()[..., None]) / safe[..., None]), 0, levels).to(torch.uint8)
    q = q.reshape(x.shape)
    if bits == 4:
        q = q[..., 0::2] | (q[..., 1::2] << 4)  # two 4-bit values per byte
    elif bits == 2:
        q = q[..., 0::4] | (q[..., 1::4] << 2) | (q[..., 2::4] << 4) | (q[..., 3::4] << 6)  # four per byte
    return Quantized(q, scale, zero, bits, group_size)


def dequantize(qt: Quantized) -> torch.Tensor:
    q = qt.packed
    if qt.bits == 4:
        q = torch.stack((q & 0x0F, q >> 4), dim=-1).reshape(*q.shape[:-1], q.shape[-1] * 2)
    elif qt.bits == 2:
        q = torch.stack([(q >> shift) & 0x03 for shift in (0, 2, 4, 6)], dim=-1).reshape(*q.shape[:-1], q.shape[-1] * 4)
    head_dim = q.shape[-1]
    g = q.float().reshape(*q.shape[:-1], head_dim // qt.group_size, qt.group_size)
    x = qt.zero.float()[..., None] + g * qt.scale.float()[..., None]
    return x.reshape(q.shape)


def error_bound(qt: Quantized) -> torch.Tensor:
    """Per element: the largest round-trip error the scheme allows (scale / 2), shape [..., head_dim]."""
    return (qt.scale.float() / 2).repeat_interleave(qt.group_size, dim=-1)


def round_trip(x: torch.Tensor, scheme: str, group_size: int) -> tuple[torch.Tensor, int]:
    """x stored in `scheme` and read back (float32), with the bytes it occupies stored that way."""
    if scheme in BITS:
        qt = quantize(x, BITS[scheme], group_size)
        return dequantize(qt), qt.stored_bytes
    dtype = torch.float16 if scheme == "fp16" else torch.bfloat16
    if scheme not in ("fp16", "bf16"):
        raise QuantError(f"unknown cache format {scheme!r}; choose one of {', '.join(SCHEMES)}")
    stored = x.to(dtype)
    return stored.float(), stored.numel() * stored.element_size()


@torch.inference_mode()
def prompt_cache(loaded: LoadedModel, prompt: str) -> DynamicCache:
    ids = check_prompt(loaded.tokenizer, prompt, loaded.info.n_positions, error=QuantError)
    return loaded.model(
        input_ids=torch.tensor([ids]), past_key_values=DynamicCache(config=loaded.model.config), use_cache=True
    ).past_key_values


@torch.inference_mode()
def quant_report(
    loaded: LoadedModel, prompt: str, scheme: str, group_size: int = 32, residual_rows: int = 0
) -> QuantReport:
    """`scheme` applied to the real cache of `prompt`; the newest `residual_rows` rows stay full precision."""
    info = loaded.info
    check_scheme(scheme, info.head_dim, group_size)
    residual_rows = RESIDUAL_ROWS.up_to(info.n_positions).check(residual_rows, error=QuantError)
    cache = prompt_cache(loaded, prompt)
    seq_len = cache.get_seq_length()
    kept = min(residual_rows, seq_len)  # rows left as computed (float32)
    split = seq_len - kept  # rows 0..split-1 are stored in `scheme`
    stored = fp32 = overhead = residual_bytes = 0
    layers = []
    for i, layer in enumerate(cache.layers):
        errs = []
        for x in (layer.keys, layer.values):  # [batch_size = 1, num_kv_heads, seq_len, head_dim]
            x_hat = x.float().clone()
            if split:
                x_hat[:, :, :split], n_bytes = round_trip(x[:, :, :split], scheme, group_size)
                stored += n_bytes
            tail = x[:, :, split:]
            residual_bytes += tail.numel() * tail.element_size()
            fp32 += x.numel() * x.element_size()
            diff = x_hat - x.float()
            errs.append((float(diff.norm() / x.float().norm()), float(diff.abs().max())))
        if scheme in BITS:
            n_groups = 2 * layer.keys[:, :, :split].numel() // group_size
            overhead += n_groups * dtypes.QUANT_OVERHEAD_BYTES_PER_GROUP
        layers.append(LayerError(i, errs[0][0], errs[1][0], errs[0][1], errs[1][1]))
    stored += residual_bytes
    config = info.kv_config(dtype=scheme, quant_group_size=group_size)
    full = info.kv_config()  # the model's own dtype: what the residual rows stay in
    calculator = memory.kv_bytes(config, split) + memory.kv_bytes(full, kept)
    return QuantReport(
        scheme,
        group_size,
        seq_len,
        fp32,
        stored,
        calculator,
        overhead,
        tuple(layers),
        residual_rows=kept,
        residual_bytes=residual_bytes,
    )


@torch.inference_mode()
def _qdq_new_rows(cache: DynamicCache, start: int, scheme: str, group_size: int) -> None:
    """Replace the rows appended from `start` on with their stored-and-read-back version, in place."""
    for layer in cache.layers:
        for x in (layer.keys, layer.values):
            x[:, :, start:] = round_trip(x[:, :, start:], scheme, group_size)[0].to(x.dtype)


@torch.inference_mode()
def _run(
    loaded: LoadedModel, ids: list[int], n_new: int, scheme: str | None, group_size: int, forced: list[int] | None
) -> list[int]:
    """Greedy choices for n_new steps; with `forced`, feed those tokens instead of the model's own choices."""
    model = loaded.model
    cache = DynamicCache(config=model.config)
    chosen: list[int] = []
    feed = list(ids)
    for step in range(n_new):
        start = cache.get_seq_length()
        if start + len(feed) > loaded.info.n_positions:
            break
        logits = model(input_ids=torch.tensor([feed]), past_key_values=cache, use_cache=True).logits[0, -1]
        if scheme is not None:
            _qdq_new_rows(cache, start, scheme, group_size)
        chosen.append(int(logits.argmax()))
        feed = [forced[step] if forced is not None else chosen[-1]]
    return chosen


def greedy_agreement(
    loaded: LoadedModel, prompts: list[str], n_new: int = 16, schemes: tuple[str, ...] = SCHEMES, group_size: int = 32
) -> tuple[SchemeAgreement, ...]:
    """For each format: how often greedy decoding over a quantized cache picks the full-precision token."""
    prompts = [p for p in prompts if p and p.strip()]
    if not prompts:
        raise QuantError(_("Give at least one non-empty prompt (one per line)."))
    check_agreement_work(len(prompts), n_new)
    for scheme in schemes:
        check_scheme(scheme, loaded.info.head_dim, group_size)
    prompt_ids = [
        check_prompt(
            loaded.tokenizer,
            p,
            loaded.info.n_positions,
            _("prompt on line {n}").format(n=i + 1),
            new_tokens=n_new,
            error=QuantError,
        )
        for i, p in enumerate(prompts)
    ]
    baselines = [_run(loaded, ids, n_new, None, group_size, None) for ids in prompt_ids]
    results = []
    for scheme in schemes:
        same = steps = identical = 0
        firsts: list[int | None] = []
        for ids, base in zip(prompt_ids, baselines, strict=True):
            quant = _run(loaded, ids, len(base), scheme, group_size, forced=base)
            matches = np.array(quant) == np.array(base)
            same += int(matches.sum())
            steps += len(base)
            identical += bool(matches.all())
            firsts.append(None if matches.all() else int(np.argmin(matches)))
        results.append(SchemeAgreement(scheme, steps, same, identical, tuple(firsts)))
    return tuple(results)
