"""Sliding-window attention on the real cache: which rows a window of W tokens evicts, what it caps, what is lost.

A local (sliding-window) layer keeps only the last W positions: when token t arrives, row t - W is evicted
(Mistral's rolling buffer). Its cache stops growing at W rows; a global layer keeps every row. Hybrid models
interleave them (Gemma 3: 5 local layers, then 1 global). Per-layer sizes come from `kvviz.memory` (the memory
calculator), and are checked here against the bytes of the real tensors a window would keep.

GPT-2 was trained with full attention, so we do not pretend it runs windowed. Instead we run it normally and
measure, from its real attention weights, how much attention the newest token paid to the rows a window would
have evicted: the information a windowed layer could no longer read directly.
"""

from __future__ import annotations

import numpy as np

from kvviz import memory
from kvviz.i18n import N_, _
from kvviz.inputs.prompt_rules import IntSetting, check_int_in_range, check_prompt
from kvviz.internals.records import LayerWindow, PresetLayers, WindowRun, WindowState
from kvviz.model.loading import LoadedModel, inference_mode

__all__ = [
    "GEMMA_CONTEXT",
    "WINDOW",
    "LayerWindow",
    "PresetLayers",
    "WindowError",
    "WindowRun",
    "WindowState",
    "layer_config",
    "preset_layers",
    "visibility",
    "window_on_model",
    "window_state",
]


# The page's inputs. The window's maximum is the model's context (WINDOW.up_to(n_positions)).
WINDOW = IntSetting(N_("the window (tokens)"), 1, 2**31 - 1, default=8)
GEMMA_CONTEXT = IntSetting(N_("Gemma 3 4B context (tokens)"), 1, 131072, default=32768)


class WindowError(ValueError):
    """A window or layer pattern outside sensible bounds; the message says the allowed range."""


def window_state(seq_len: int, window: int) -> WindowState:
    if seq_len < 0:
        raise WindowError(_("sequence length must be 0 or more (got {n})").format(n=seq_len))
    if window < 1:
        raise WindowError(_("the window must be at least 1 token (got {n})").format(n=window))
    kept = min(seq_len, window)
    return WindowState(seq_len, window, seq_len - kept, kept, seq_len - kept)


def visibility(seq_len: int, window: int | None) -> np.ndarray:
    """[seq_len, seq_len] bool: query position q may attend to key position k (causal, optionally windowed)."""
    q = np.arange(seq_len)[:, None]
    k = np.arange(seq_len)[None, :]
    visible = k <= q
    if window is not None:
        visible &= k > q - window
    return visible


def layer_config(loaded: LoadedModel, window: int, local_per_global: int | None) -> memory.KVConfig:
    """The loaded model's cache layout with a sliding window (and hybrid pattern) added, as the calculator sees it."""
    window = WINDOW.up_to(loaded.info.n_positions).check(window, error=WindowError)
    if local_per_global is not None:
        local_per_global = check_int_in_range(
            local_per_global, 0, 64, _("local layers per global layer"), error=WindowError
        )
    return loaded.info.kv_config(window=window, local_per_global=local_per_global)


@inference_mode
def window_on_model(loaded: LoadedModel, prompt: str, window: int, local_per_global: int | None = None) -> WindowRun:
    """Run the real model on `prompt` (full attention) and apply the window/pattern to its real cache."""
    import torch
    from transformers import DynamicCache

    config = layer_config(loaded, window, local_per_global)
    ids = check_prompt(loaded.tokenizer, prompt, loaded.info.n_positions, error=WindowError)  # [seq_len]
    out = loaded.model(
        input_ids=torch.tensor([ids]),
        past_key_values=DynamicCache(config=loaded.model.config),
        use_cache=True,
        output_attentions=True,
    )
    seq_len = len(ids)
    budget = memory.budget(config, seq_len)
    layers = []
    for i, layer in enumerate(out.past_key_values.layers):
        rows_kept = budget.layer_tokens[i]
        kept_k, kept_v = layer.keys[:, :, seq_len - rows_kept :], layer.values[:, :, seq_len - rows_kept :]
        attn_last = out.attentions[i][0, :, -1, :]  # [num_heads, seq_len]: the newest token's query
        lost = float(attn_last[:, : seq_len - rows_kept].sum(-1).mean())
        layers.append(
            LayerWindow(
                layer=i,
                kind="global" if config.layer_window(i) is None else "local",
                rows_full=layer.keys.shape[2],
                rows_kept=rows_kept,
                bytes_full=(layer.keys.numel() + layer.values.numel()) * layer.keys.element_size(),
                bytes_kept=(kept_k.numel() + kept_v.numel()) * kept_k.element_size(),
                calculator_bytes=budget.layer_bytes[i],
                attention_lost=lost,
            )
        )
    state = window_state(seq_len, window)
    tok = loaded.tokenizer
    return WindowRun(
        tokens=tuple(tok.decode([t]) for t in ids),
        window=window,
        local_per_global=local_per_global,
        state=state,
        layers=tuple(layers),
        evicted_tokens=tuple(tok.decode([t]) for t in ids[: state.kept_start]),
    )


def preset_layers(preset_name: str = "gemma-3-4b", context_len: int = 32768) -> PresetLayers:
    """e.g. Gemma 3 4B: 34 layers, 5 local (1024-token window) : 1 global, bf16."""
    from kvviz.memory.presets import get_preset

    context_len = check_int_in_range(context_len, 1, 2**24, _("context length (tokens)"), error=WindowError)
    config = get_preset(preset_name).kv
    b = memory.budget(config, context_len)
    full = memory.kv_bytes(config.all_global(), context_len)
    kinds = tuple("global" if config.layer_window(i) is None else "local" for i in range(config.n_layer))
    return PresetLayers(preset_name, context_len, kinds, b.layer_bytes, b.total_bytes, full)
