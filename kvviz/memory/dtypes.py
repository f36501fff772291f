"""The number formats a KV cache can be stored in, and what each costs beyond its bits (UI-free, no torch).

Quantized caches (int8, int4) store, besides the packed integers, an fp16 scale and an fp16 zero point for
every group of `quant_group_size` numbers (4 bytes per group), the scheme of Hugging Face's QuantizedCache
(group size 64 by default). transformers groups keys and values per channel; KIVI (arXiv:2402.02750) groups keys
per channel and values per token; with whole groups the scale count, and so the bytes, are the same either way.
QuantizedCache also keeps a residual window of recent tokens in full precision (`residual_length`, default read
from transformers' own QuantizedLayer): it fills up to residual_length - 1 tokens, then is quantized and emptied,
so `quant_residual_tokens` = R counts the peak, min(tokens, R - 1) rows at 16 bits. fp8 (transformers'
QuantizedCache(backend="fp8"), cache_utils.Fp8QuantizedLayer) keeps one float32 scale for the keys and one for the
values of each layer, per tensor (whole batch): FP8_SCALE_BYTES_PER_LAYER = 8 bytes per layer, counted once.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from kvviz.i18n import N_


@dataclass(frozen=True)
class CacheDType:
    name: str
    bits: int  # bits per stored number
    quantized: bool  # True: + an fp16 scale and fp16 zero point per group
    note: str


DTYPES: dict[str, CacheDType] = {
    "fp32": CacheDType("fp32", 32, False, N_("32-bit float, 4 bytes (what kvviz's GPT-2 runs in on CPU)")),
    "fp16": CacheDType("fp16", 16, False, N_("16-bit float, 2 bytes")),
    "bf16": CacheDType("bf16", 16, False, N_("bfloat16, 2 bytes (what most open models ship in)")),
    "fp8": CacheDType("fp8", 8, False, N_("8-bit float (E4M3), 1 byte; + two fp32 scales per layer (8 B)")),
    "int8": CacheDType("int8", 8, True, N_("8-bit integers + fp16 scale and zero point per group")),
    "int4": CacheDType("int4", 4, True, N_("4-bit integers packed 2 per byte + fp16 scale and zero point per group")),
}
FP8_SCALE_BYTES_PER_LAYER = 2 * 4  # Fp8QuantizedLayer: one float32 scale for K, one for V, per layer
QUANT_OVERHEAD_BYTES_PER_GROUP = 4  # fp16 scale (2 bytes) + fp16 zero point (2 bytes)
DEFAULT_QUANT_GROUP = 64
DTYPE_ALIASES = {
    "float32": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "float8": "fp8",
    "float8_e4m3fn": "fp8",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
}


@functools.lru_cache(maxsize=1)
def transformers_quantized_defaults() -> dict[str, int]:
    """The defaults of transformers' QuantizedLayer.__init__ (residual_length, q_group_size, nbits, axis_key, ...),
    read from the installed package's own source with `ast`: no torch import, no hand-copied numbers. {} when
    transformers or the class is not found."""
    spec = importlib.util.find_spec("transformers")
    if spec is None or spec.origin is None:
        return {}
    try:
        tree = ast.parse((Path(spec.origin).parent / "cache_utils.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "QuantizedLayer":
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
                    named = fn.args.args[len(fn.args.args) - len(fn.args.defaults) :]
                    found = {}
                    for a, d in zip(named, fn.args.defaults, strict=True):
                        try:  # a default that is not a literal (a named constant) is simply not reported
                            found[a.arg] = ast.literal_eval(d)
                        except ValueError:
                            continue
                    return found
    return {}
