"""What transformers' own caches hold for an imported config, and where that differs from kvviz's figure.

kvviz counts what a serving engine must keep; transformers 5.x's classes (cache_utils.py) differ in three
documented ways, each counted here to the byte (tests/test_transformers_oracle.py checks them on real caches):

    sliding layers   DynamicSlidingWindowLayer keeps the last `sliding_window - 1` tokens (cache_utils.py,
                     "Only cache the last `self.sliding_window - 1` tokens"): the token being added is attended to
                     from the fresh K/V, not from the cache. kvviz counts `window` tokens. After a prompt
                     longer than W the layer stores W - 1 rows at once: the whole prompt's K/V exist only inside
                     the prefill pass (returned for attention, not kept): a transient peak, not cache contents.
    Falcon-40B       FalconAttention with `new_decoder_architecture` reshapes K/V to `num_heads` before caching,
                     i.e. already broadcast to every query head (num_attention_heads / num_kv_heads times the
                     GQA figure); kvviz shows the GQA figure, which is what vLLM/TGI store.
    fp8              (not a difference: kvviz counts it too) QuantizedCache(backend="fp8") -> Fp8QuantizedLayer:
                     1 byte per number plus one fp32 scale for keys and one for values per layer: 8 bytes/layer.

Also here: reading the layer pattern (which layers slide) from a transformers config or a plain dict.
Torch-free: the transformers config object is passed in, never imported here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvviz.i18n import N_, Joined, Message, _
from kvviz.memory import FP8_SCALE_BYTES_PER_LAYER, KVConfig, MemoryInputError, kv_bytes


def _also(note: Message | Joined | None, more: Message) -> Message | Joined:
    """A note with one more clause, joined as a list in the reader's language."""
    return more if note is None else Joined((note, more))


def _pattern(types: list[str], n_layer: int) -> tuple[bool, int | None, int, Message | Joined | None]:
    """(any sliding, local_per_global, first_windowed_layer, note) from a list of layer types."""
    sliding = [t == "sliding_attention" for t in types[:n_layer]]
    other = sorted({t for t in types if t not in ("sliding_attention", "full_attention")})
    note = (
        Message.lazy(
            N_("layer types {types} are counted as full attention (kvviz models only full and sliding layers)"),
            types=", ".join(other),
        )
        if other
        else None
    )
    if not any(sliding):
        return False, None, 0, note
    if all(sliding):
        return True, None, 0, note
    first_sliding = sliding.index(True)
    if all(sliding[first_sliding:]):  # Qwen2: layers below max_window_layers are full
        return True, None, first_sliding, note
    per_global = sliding.index(False)
    probe = KVConfig(1, 1, 1, 1, window=1, local_per_global=per_global)
    if sliding != [probe.layer_window(i) is not None for i in range(len(sliding))]:
        note = _also(
            note,
            Message.lazy(
                N_("layer_types is not a regular {n} local : 1 global pattern (counted as if it were)"), n=per_global
            ),
        )
    return True, per_global, 0, note


def window_fields(
    t: Any, n_layer: int, take: Callable[..., Any]
) -> tuple[int | None, int | None, int, Message | Joined | None]:
    """(window, local_per_global, first_windowed_layer, note) from a transformers config object."""
    window = getattr(t, "sliding_window", None)
    types = getattr(t, "layer_types", None)
    if isinstance(types, list):
        any_sliding, per_global, first, note = _pattern(types, n_layer)
        if getattr(t, "use_sliding_window", False) is True and isinstance(getattr(t, "max_window_layers", None), int):
            take("use_sliding_window", True)  # Qwen2: transformers derived layer_types from these two
            take("max_window_layers", t.max_window_layers)
            if not any_sliding:
                note = _also(
                    note,
                    Message.lazy(
                        N_(
                            "use_sliding_window is on, but max_window_layers ({max_window_layers:,}) is not below the "
                            "{layers:,} layers: transformers' layer_types has no sliding layer, so none slides"
                        ),
                        max_window_layers=t.max_window_layers,
                        layers=n_layer,
                    ),
                )
        if not any_sliding or window is None:
            return None, None, 0, note
        n_sliding = sum(x == "sliding_attention" for x in types)
        take("sliding_window", window)
        take(
            "layer_types",
            Message.lazy(
                N_("{sliding} sliding + {full} full of {n}"),
                sliding=n_sliding,
                full=len(types) - n_sliding,
                n=len(types),
            ),
            "sliding_window_pattern",
            "max_window_layers",
        )
        return window, per_global, first, note
    if window and getattr(t, "use_sliding_window", True):
        return take("sliding_window", window), None, 0, None
    return None, None, 0, None


def window_from_dict(
    cfg: dict[str, Any], used: dict[str, Any], missing: list[Message | Joined]
) -> tuple[int | None, int | None, int]:
    """(window, local_per_global, first_windowed_layer) from a config read as written (no transformers)."""
    window = cfg.get("sliding_window")
    n_layer = next((cfg[k] for k in ("num_hidden_layers", "n_layer", "num_layers", "n_layers") if cfg.get(k)), 0)
    types = cfg.get("layer_types")
    if isinstance(types, list) and len(types) != n_layer:  # transformers' validate_layer_type refuses it too
        raise MemoryInputError(
            _("layer_types has {n:,} entries for {layers:,} layers: give one per layer, or remove it").format(
                n=len(types), layers=n_layer
            )
        )
    if isinstance(types, list) and window is None and "sliding_attention" in types:
        missing.append(
            Message.lazy(
                N_(
                    "layer_types names sliding layers but sliding_window is absent: every layer counted as full attention"
                )
            )
        )
    if window is None or cfg.get("use_sliding_window") is False:
        if window is not None:
            used["use_sliding_window"] = False  # Qwen2 configs carry a window they do not use
        return None, None, 0
    used["sliding_window"] = window
    if isinstance(cfg.get("layer_types"), list):
        used["layer_types"] = Message.lazy(N_("list of {n}"), n=len(cfg["layer_types"]))
        any_sliding, per_global, first, note = _pattern(cfg["layer_types"], n_layer)
        if note:
            missing.append(note)
        return (window, per_global, first) if any_sliding else (None, None, 0)
    if cfg.get("sliding_window_pattern"):
        used["sliding_window_pattern"] = cfg["sliding_window_pattern"]
        return window, cfg["sliding_window_pattern"] - 1, 0
    if cfg.get("use_sliding_window") and cfg.get("max_window_layers") is not None:
        used["max_window_layers"] = first = cfg["max_window_layers"]  # Qwen2: layers >= it slide
        return (None, None, 0) if first >= n_layer else (window, None, first)
    return window, None, 0


def kv_heads_transformers_stores(t: Any, n_kv_heads: int) -> int:
    """Heads per layer in transformers' cache: Falcon's new decoder architecture caches all query heads."""
    if getattr(t, "model_type", None) == "falcon" and getattr(t, "new_decoder_architecture", False):
        return t.num_attention_heads
    return n_kv_heads


def falcon_notes(t: Any, n_kv_heads: int, stored_heads: int) -> list[Message]:
    if stored_heads == n_kv_heads:
        return []
    return [
        Message.lazy(
            N_(
                "Falcon new_decoder_architecture: transformers caches K/V already broadcast to all {stored} "
                "query heads, {factor}x the GQA figure of {kv} K/V heads shown here; "
                "serving engines (vLLM, TGI) store the GQA figure."
            ),
            stored=stored_heads,
            factor=stored_heads // n_kv_heads,
            kv=n_kv_heads,
        )
    ]


def transformers_cache_bytes(
    imported: Any, context_len: int, batch: int = 1, encoder_len: int = 0, fp8_cache: bool = False
) -> int:
    """Bytes of the tensors transformers 5.x's cache holds after `context_len` tokens went through the model.

    `imported`: a config_import.ImportedConfig, or a plain KVConfig (a preset). DynamicCache (EncoderDecoderCache
    for encoder-decoders); fp8_cache=True: QuantizedCache(backend="fp8") on a full-attention model, whose numbers
    are 1 byte each plus FP8_SCALE_BYTES_PER_LAYER per layer.
    """
    c: KVConfig = imported if isinstance(imported, KVConfig) else imported.config
    stored = getattr(imported, "transformers_kv_heads", None) or c.n_kv_heads
    per_token_layer = (
        c.bytes_per_token_per_layer
        if c.is_mla
        else 2
        * stored
        * c.head_dim
        * (1 if fp8_cache else c.bytes_per_token_per_layer // (2 * c.n_kv_heads * c.head_dim))
    )
    total = 0
    for layer in range(c.n_layer):
        w = c.layer_window(layer)
        tokens = context_len if w is None else min(context_len, w - 1)
        total += batch * tokens * per_token_layer
    if fp8_cache and context_len:
        total += c.n_layer * FP8_SCALE_BYTES_PER_LAYER
    if getattr(imported, "cross_attention", None) is not None:
        total += kv_bytes(imported.cross_attention, encoder_len, batch)
    return total
