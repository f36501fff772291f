"""A GPT-2 decoder over a flat, pre-allocated KV cache: the smallest engine that does what serving engines do.

Read it beside transformers' cache_utils.py (shapes in its words: kvviz.model.dims's axis legend):

    DynamicCache   each layer's keys/values start empty and grow by torch.cat on every step: a new tensor of
                   [batch_size, num_heads, seq_len + 1, head_dim] is allocated and the old rows are copied into it.
    StaticCache    each layer's keys/values are allocated once at [batch_size, num_heads, max_cache_len, head_dim]
                   and written in place with index_copy_ at cache_position; attention reads the whole buffer,
                   with a mask hiding the rows not yet written.
    FlatCacheGPT2  (here) the StaticCache idea with nothing around it: ONE pair of buffers
                   [num_layers, batch_size, num_heads, max_cache_len, head_dim] for the whole model, a row written
                   in place per
                   step, and attention over the slice [:length] (the slice *is* the mask for a one-token
                   query, so no mask is built). No cache object, no output objects, one lean loop.

The math is transformers' GPT-2 (pre-LN blocks, fused QKV Conv1D, the model's own GELU, SDPA attention),
over the model's own weights: nothing is modified and no hooks are registered.

Weight formats (the part that decides decode speed at these lengths; the cache layout buys little):

    stored   the model's own tensors, no copy: Conv1D weights are [in, out], so x @ W runs MKL's GEMV on
             the stored layout; the tied LM head is read as wte^T, a view.
    onednn   a copy of every matrix in oneDNN's blocked layout, multiplied by oneDNN's packed linear (what
             torch.compile emits on CPU). Faster on some CPUs, slower on others: kvviz.speedup.weight_format
             measures both and keeps one.
    int8     weight-only int8 with torch's own dynamic quantization (quantize_dynamic on each matrix as an
             nn.Linear; activations are quantized on the fly per call): 4x fewer weight bytes per token,
             logits within ~1e-1 of fp32, tokens usually, not always, the same.

The oneDNN ops are private (torch.ops.mkldnn); packing is probed with the forward op on a real vector and
compared with MKL's result, so a changed signature gives a clear FormatUnavailable, not a crash mid-run.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

WEIGHT_FORMATS: tuple[str, ...] = ("stored", "onednn", "int8")
FORMAT_LABELS: dict[str, str] = {
    "stored": "fp32 as stored (MKL GEMV on Conv1D [in, out]; no copy)",
    "onednn": "fp32 packed for oneDNN (one copy of every matrix)",
    "int8": "int8 weight-only (torch dynamic quantization)",
}
Kernel = Callable[[torch.Tensor, Any, Any], torch.Tensor]  # (x, weight in this format, bias) -> x W + b


class FormatUnavailable(RuntimeError):
    """This torch build cannot run a weight format (the message says why)."""


# ----- the three kernels ----------------------------------------------------------------------------------
def _stored_linear(x: torch.Tensor, weight_in_out: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """x @ W + b with W [in, out], exactly as transformers' Conv1D computes it."""
    return torch.mm(x, weight_in_out) if bias is None else torch.addmm(bias, x, weight_in_out)


def _onednn_linear(x: torch.Tensor, packed: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], "")


def _int8_linear(x: torch.Tensor, module: torch.nn.Module, bias: None) -> torch.Tensor:
    return module(x)  # a DynamicQuantizedLinear: its bias is inside


def onednn_pack(weight_in_out: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """oneDNN's blocked copy of a [in, out] weight, probed with the forward op against MKL."""
    try:
        packed = torch.ops.mkldnn._reorder_linear_weight(weight_in_out.t().contiguous(), 1)
        probe = torch.randn(1, weight_in_out.shape[0])
        got = _onednn_linear(probe, packed, bias)
    except (AttributeError, RuntimeError, NotImplementedError, TypeError) as exc:
        raise FormatUnavailable(f"oneDNN packed linear is not usable in this torch build: {exc}") from exc
    want = _stored_linear(probe, weight_in_out, bias)
    if got.shape != want.shape or not torch.allclose(got, want, rtol=1e-3, atol=1e-3):
        raise FormatUnavailable("oneDNN packed linear gives different numbers from MKL here")
    return packed


def _int8_quantize(weight_in_out: torch.Tensor, bias: torch.Tensor | None) -> torch.nn.Module:
    linear = torch.nn.Linear(weight_in_out.shape[0], weight_in_out.shape[1], bias=bias is not None)
    with torch.no_grad():
        linear.weight.copy_(weight_in_out.t())  # a temporary fp32 copy, dropped once quantized
        if bias is not None:
            linear.bias.copy_(bias)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization's deprecation notice
        try:
            quantized = torch.ao.quantization.quantize_dynamic(
                torch.nn.Sequential(linear), {torch.nn.Linear}, dtype=torch.qint8
            )[0]
        except (AttributeError, RuntimeError) as exc:
            raise FormatUnavailable(f"torch dynamic int8 quantization is not usable here: {exc}") from exc
    return quantized


def _convert(weight_format: str, weight_in_out: torch.Tensor, bias: torch.Tensor | None) -> tuple[Any, Any]:
    """(weight, bias) in the format's own representation."""
    if weight_format == "stored":
        return weight_in_out, bias
    if weight_format == "onednn":
        return onednn_pack(weight_in_out, bias), bias
    return _int8_quantize(weight_in_out, bias), None


KERNELS: dict[str, Kernel] = {"stored": _stored_linear, "onednn": _onednn_linear, "int8": _int8_linear}


class FlatCacheGPT2:
    """Greedy GPT-2 forward passes over flat, pre-allocated K/V buffers, written in place.

    keys, values: [num_layers, batch_size, num_heads, max_cache_len = max_len, head_dim], allocated once (GPT-2:
    num_kv_heads = num_heads); `length` rows are filled.
    forward() feeds a prompt into an empty cache, then one token per sequence per call.
    Raises FormatUnavailable if this torch build cannot run `weight_format`.
    """

    def __init__(self, model: torch.nn.Module, max_len: int, weight_format: str = "stored", batch: int = 1):
        if weight_format not in WEIGHT_FORMATS:
            raise ValueError(f"weight_format must be one of {WEIGHT_FORMATS}, got {weight_format!r}")
        cfg, transformer = model.config, model.transformer
        self.n_embd, self.n_head = cfg.n_embd, cfg.n_head
        self.head_dim = cfg.n_embd // cfg.n_head
        self.eps = cfg.layer_norm_epsilon
        self.max_len, self.batch, self.weight_format = max_len, batch, weight_format
        self.wte = transformer.wte.weight  # [vocab_size, hidden_size]: embedding lookups
        self.wpe = transformer.wpe.weight  # [n_positions, hidden_size]
        self.linear = KERNELS[weight_format]
        with torch.no_grad():
            self.blocks = tuple(  # Conv1D weights are [in, out]; E = hidden_size
                (
                    block.ln_1.weight,
                    block.ln_1.bias,
                    *_convert(weight_format, block.attn.c_attn.weight, block.attn.c_attn.bias),  # [E, 3 * E]
                    *_convert(weight_format, block.attn.c_proj.weight, block.attn.c_proj.bias),  # [E, E]
                    block.ln_2.weight,
                    block.ln_2.bias,
                    *_convert(weight_format, block.mlp.c_fc.weight, block.mlp.c_fc.bias),  # [E, 4 * E]
                    *_convert(weight_format, block.mlp.c_proj.weight, block.mlp.c_proj.bias),  # [4 * E, E]
                    block.mlp.act,  # the model's own GELU
                    block.attn.scaling,
                )
                for block in transformer.h
            )
            self.lm_head, _ = _convert(weight_format, model.lm_head.weight.t(), None)  # [E, vocab_size], view or copy
        self.ln_f = (transformer.ln_f.weight, transformer.ln_f.bias)
        shape = (cfg.n_layer, batch, cfg.n_head, max_len, self.head_dim)
        self.keys = torch.zeros(shape, dtype=self.wte.dtype)  # allocated once; every step writes rows in place
        self.values = torch.zeros(shape, dtype=self.wte.dtype)
        self.length = 0  # rows filled

    @property
    def cache_bytes(self) -> int:
        return 2 * self.keys.numel() * self.keys.element_size()

    def matrices(self) -> list[tuple[Any, Any]]:
        """(weight, bias) of every matrix a decode step multiplies, in this engine's format."""
        out = []
        for _, _, w_qkv, b_qkv, w_o, b_o, _, _, w_fc, b_fc, w_pr, b_pr, _, _ in self.blocks:
            out += [(w_qkv, b_qkv), (w_o, b_o), (w_fc, b_fc), (w_pr, b_pr)]
        return out + [(self.lm_head, None)]

    def int8_weight_bytes(self) -> int:
        """Bytes of the int8 matrices (one int8 per weight + an fp32 scale and an int32 zero point each)."""
        if self.weight_format != "int8":
            raise ValueError("only an int8 engine has int8 matrices")
        return sum(m.weight().numel() + 8 for m, _ in self.matrices())

    def reset(self) -> None:
        self.length = 0  # stale rows beyond `length` are never read: attention slices [:length]

    @torch.inference_mode()
    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        """Feed token_ids [batch_size, q_len]: a prompt when the cache is empty, else q_len = 1; logits
        [batch_size, vocab_size] of the last position."""
        batch, n_new = token_ids.shape
        start, end = self.length, self.length + n_new
        if batch != self.batch or end > self.max_len or (start and n_new != 1):
            raise ValueError("FlatCacheGPT2 feeds (batch, T) prompts into an empty cache, then (batch, 1) tokens")
        n_embd, n_head, head_dim, eps, linear = self.n_embd, self.n_head, self.head_dim, self.eps, self.linear
        x = (self.wte[token_ids] + self.wpe[start:end]).view(batch * n_new, n_embd)  # [batch_size * q_len, hidden_size]
        for layer, (w1, b1, w_qkv, b_qkv, w_o, b_o, w2, b2, w_fc, b_fc, w_pr, b_pr, act, scale) in enumerate(
            self.blocks
        ):
            h = F.layer_norm(x, (n_embd,), w1, b1, eps)
            # [batch_size, q_len, 3, num_heads, head_dim]
            qkv = linear(h, w_qkv, b_qkv).view(batch, n_new, 3, n_head, head_dim)
            # views, [batch_size, num_heads, max_cache_len, head_dim]
            keys, values = self.keys[layer], self.values[layer]
            keys[:, :, start:end] = qkv[:, :, 1].transpose(1, 2)  # written in place: nothing is reallocated
            values[:, :, start:end] = qkv[:, :, 2].transpose(1, 2)
            query = qkv[:, :, 0].transpose(1, 2)  # [batch_size, num_heads, q_len, head_dim]
            attn = F.scaled_dot_product_attention(
                query, keys[:, :, :end], values[:, :, :end], is_causal=n_new > 1, scale=scale
            )  # [batch_size, num_heads, q_len, head_dim]
            x = linear(attn.transpose(1, 2).reshape(batch * n_new, n_embd), w_o, b_o) + x
            h = F.layer_norm(x, (n_embd,), w2, b2, eps)
            x = linear(act(linear(h, w_fc, b_fc)), w_pr, b_pr) + x
        self.length = end
        last = x.view(batch, n_new, n_embd)[:, -1]  # [batch_size, hidden_size]
        last = F.layer_norm(last, (n_embd,), self.ln_f[0], self.ln_f[1], eps)
        return linear(last, self.lm_head, None)  # [batch_size, vocab_size]
