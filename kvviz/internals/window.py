"""Sliding-window attention, its settings and arithmetic: which rows a window of W tokens evicts, who may attend to
whom, the loaded model's layout with a window (and a hybrid pattern) as the calculator sees it, and a real preset's
layers (Gemma 3). Torch-free: a page imports it at its top; the run on the real cache is kvviz.internals.lab.window.

A local (sliding-window) layer keeps only the last W positions: when token t arrives, row t - W is evicted
(Mistral's rolling buffer). Its cache stops growing at W rows; a global layer keeps every row. Hybrid models
interleave them (Gemma 3: 5 local layers, then 1 global). Per-layer sizes come from `kvviz.memory` (the memory
calculator).
"""

from __future__ import annotations

import numpy as np

from kvviz import memory
from kvviz.i18n import N_, _
from kvviz.inputs.prompt_rules import IntSetting, check_int_in_range
from kvviz.internals.records import LayerWindow, PresetLayers, WindowRun, WindowState
from kvviz.memory.presets import get_preset
from kvviz.model.loading import LoadedModel

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


def preset_layers(preset_name: str = "gemma-3-4b", context_len: int = 32768) -> PresetLayers:
    """e.g. Gemma 3 4B: 34 layers, 5 local (1024-token window) : 1 global, bf16."""
    context_len = check_int_in_range(context_len, 1, 2**24, _("context length (tokens)"), error=WindowError)
    config = get_preset(preset_name).kv
    b = memory.budget(config, context_len)
    full = memory.kv_bytes(config.all_global(), context_len)
    kinds = tuple("global" if config.layer_window(i) is None else "local" for i in range(config.n_layer))
    return PresetLayers(preset_name, context_len, kinds, b.layer_bytes, b.total_bytes, full)
