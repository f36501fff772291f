"""Sliding-window attention on the real cache, run: the model runs in full attention on a prompt, and the window (and
hybrid pattern) of kvviz.internals.window is applied to its real cache: the rows and bytes each layer would keep,
checked against the calculator, and how much attention the newest token paid to the rows a window would evict.

GPT-2 was trained with full attention, so we do not pretend it runs windowed. Instead we run it normally and
measure, from its real attention weights, how much attention the newest token paid to the rows a window would
have evicted: the information a windowed layer could no longer read directly.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache

from kvviz import memory
from kvviz.inputs.prompt_rules import check_prompt
from kvviz.internals.records import LayerWindow, WindowRun
from kvviz.internals.window import WindowError, layer_config, window_state
from kvviz.model.loading import LoadedModel

__all__ = ["window_on_model"]


@torch.inference_mode()
def window_on_model(loaded: LoadedModel, prompt: str, window: int, local_per_global: int | None = None) -> WindowRun:
    """Run the real model on `prompt` (full attention) and apply the window/pattern to its real cache."""
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
