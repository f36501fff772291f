"""The oracle for kvviz's memory calculator: the real bytes transformers' own caches hold, per layer, for TINY
instances of 23 architectures (full attention, sliding / chunked windows, MLA, DSA indexers, KV sharing, linear
attention, Mamba-1/2, short convolutions, RG-LRU; the hybrids of these).

  TINY               model_type -> kwargs for that model type's own config class: a tiny model (hidden 64,
                     vocabulary 96, 2-12 layers, a few small experts) that keeps the architecture's layer mix and
                     leaves the cache-shaping dimensions at distinct values, so that a formula mixing two of them
                     up shows
  VARIANTS           extra name -> (model_type, kwargs): a second shape of one architecture (gemma4 KV sharing)
  real_cache_bytes   build the tiny model (AutoModelForCausalLM.from_config, seed fixed, eval, no_grad), run one
                     forward over `tokens` random ids and `extra_tokens` one-token forwards feeding the returned
                     cache back, and list per decoder layer every tensor the cache holds: shape, dtype, bytes
  real_total         the sum of those bytes
  report             the human-readable report (config fields that size the cache; per layer the cache class and
                     each part); `python tests/support/arch_oracle.py [PATH]` writes it (default
                     /tmp/arch_oracle_report.txt)

How the cache is made: as `generate` makes it. Every model here except two builds `DynamicCache(config=config)`
itself when called with use_cache=True and no cache; generate passes the same object in, so letting the model
build it is equivalent. MiniMax builds its own `MiniMaxCache` (generate passes none: `minimax` is on
GenerationMixin._supports_default_dynamic_cache's exclusion list). RecurrentGemma does build a DynamicCache but
does not return it (its output has no past_key_values), so the caller must pass one in, as generate does; its
recurrent layers keep their state on their modules (RecurrentGemmaRecurrentBlock.conv1d_state and
RecurrentGemmaRglru.recurrent_states), not in the cache object, and are read there.

Counting: `parts` holds every tensor reachable from the cache object's entries for that layer (cache.layers[i];
any other per-layer list, such as MiniMaxCache.linear_cache[i]: attributes, dicts, lists, tuples, nested
objects), and for models keeping state on modules, every plain tensor attribute (not a parameter, not a
buffer) that the run set on a module of that layer. `nbytes` is numel x element size of the tensor as held (a
view counts its own elements). A tensor reachable twice (the same view) is counted once, at its first place;
`storage_bytes` says what the views' underlying storages occupy, which can be more than the views (a sliding
layer's keys are a slice of the concatenation they were cut from). real_cache_bytes asserts that the per-layer
parts add up to an independent walk over the whole cache object (and the modules), so nothing is missed or
counted twice.

No network: every model is built from its config class. torch / transformers are imported inside functions only,
so collecting the test suite does not import torch.
"""

from __future__ import annotations

import re
from typing import Any

# Dimensions used throughout: distinct numbers, so that a head count standing for a head size (or a key head size
# for a value head size) changes the bytes.
_H, _V = 64, 96  # hidden size, vocabulary
_IDS = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)  # for configs whose default ids lie past a tiny vocab

# model_type -> config kwargs. Comments: the layer pattern the tiny model keeps, and what each layer kind caches.
TINY: dict[str, dict[str, Any]] = {
    # 2 x full attention. K, V: [b, num_key_value_heads, T, head_dim]; head_dim 24 != hidden/heads 16.
    "llama": dict(
        hidden_size=_H,
        intermediate_size=80,
        vocab_size=_V,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=24,
    ),
    # Qwen2 with use_sliding_window: layers < max_window_layers full, layers >= it sliding (window 8):
    # [full, full, sliding, sliding]. Sliding K/V keep sliding_window - 1 rows.
    "qwen2": dict(
        hidden_size=_H,
        intermediate_size=80,
        vocab_size=_V,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        use_sliding_window=True,
        sliding_window=8,
        max_window_layers=2,
    ),
    # Gemma-3 text: 5 sliding : 1 full (the default layer_types period of 6), window 8, head_dim 24.
    "gemma3_text": dict(
        hidden_size=_H,
        intermediate_size=80,
        vocab_size=_V,
        num_hidden_layers=6,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=24,
        query_pre_attn_scalar=24,
        sliding_window=8,
    ),
    # gpt-oss: alternating [sliding, full] (default layer_types), window 8; 4 experts, 2 active; attention sinks are
    # parameters, not cache.
    "gpt_oss": dict(
        hidden_size=_H,
        intermediate_size=32,
        vocab_size=_V,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=24,
        sliding_window=8,
        num_local_experts=4,
        num_experts_per_tok=2,
    ),
    # Gemma-3n text: the default pattern (4 sliding, 1 full) x 2 = 10 layers; the last num_kv_shared_layers=5
    # layers reuse the K/V of the last non-shared layer of their type (layer 3 sliding, layer 4 full) and hold
    # nothing themselves. AltUp / LAuReL / per-layer inputs kept, shrunk.
    "gemma3n_text": dict(
        hidden_size=_H,
        intermediate_size=80,
        vocab_size=_V,
        vocab_size_per_layer_input=_V,
        hidden_size_per_layer_input=8,
        num_hidden_layers=10,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=24,
        sliding_window=8,
        num_kv_shared_layers=5,
        laurel_rank=4,
        activation_sparsity_pattern=[0.95, 0.95] + [0.0] * 8,
    ),
    # DeepSeek-V3: MLA on every layer (layer 0 dense MLP, layer 1 MoE). transformers 5.x caches the compressed
    # latent, one "head": keys = normalised c_KV [b, 1, T, kv_lora_rank], values = the shared RoPE key
    # k_R [b, 1, T, qk_rope_head_dim]; not per-head K/V.
    "deepseek_v3": dict(
        hidden_size=_H,
        intermediate_size=80,
        moe_intermediate_size=16,
        vocab_size=_V,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        q_lora_rank=32,
        kv_lora_rank=24,
        qk_nope_head_dim=12,
        qk_rope_head_dim=8,
        v_head_dim=18,
        n_routed_experts=4,
        num_experts_per_tok=2,
        n_group=1,
        topk_group=1,
        first_k_dense_replace=1,
    ),
    # DeepSeek-V3.2: MLA + the DSA lightning indexer ("indexed_attention" layers): K/V as MLA plus
    # indexer_keys [b, T, index_head_dim]. index_topk 16 < 40 tokens, so the sparse selection is exercised.
    "deepseek_v32": dict(
        hidden_size=_H,
        intermediate_size=80,
        moe_intermediate_size=16,
        vocab_size=_V,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        q_lora_rank=32,
        kv_lora_rank=24,
        qk_nope_head_dim=12,
        qk_rope_head_dim=8,
        v_head_dim=18,
        n_routed_experts=4,
        num_experts_per_tok=2,
        n_group=1,
        topk_group=1,
        first_k_dense_replace=1,
        index_topk=16,
        index_head_dim=28,
        index_n_heads=2,
    ),
    # Qwen3-Next: 3 Gated DeltaNet (linear_attention) : 1 gated full attention; MoE MLP. DeltaNet: conv state
    # [b, 2*k_heads*k_dim + v_heads*v_dim, linear_conv_kernel_dim], recurrent [b, v_heads, k_dim, v_dim].
    "qwen3_next": dict(
        hidden_size=_H,
        intermediate_size=80,
        vocab_size=_V,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=24,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        linear_key_head_dim=12,
        linear_value_head_dim=20,
        linear_conv_kernel_dim=4,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=16,
        shared_expert_intermediate_size=16,
    ),
    # Qwen3.5 text: the same 3 : 1 Gated DeltaNet / full attention mix, dense MLP.
    "qwen3_5_text": dict(
        hidden_size=_H,
        intermediate_size=80,
        vocab_size=_V,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=24,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        linear_key_head_dim=12,
        linear_value_head_dim=20,
        linear_conv_kernel_dim=4,
    ),
    # OLMo-Hybrid: 3 Gated DeltaNet : 1 full attention (default layer_types period), dense MLP.
    "olmo_hybrid": dict(
        hidden_size=_H,
        intermediate_size=80,
        vocab_size=_V,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        linear_key_head_dim=12,
        linear_value_head_dim=20,
        linear_conv_kernel_dim=4,
        **_IDS,
    ),
    # Jamba: attention in 1 of attn_layer_period=4 layers (offset 2): [mamba, mamba, attention, mamba]; MoE every
    # 2nd layer. Mamba-1: conv [b, mamba_expand*hidden, mamba_d_conv], ssm [b, mamba_expand*hidden, mamba_d_state].
    "jamba": dict(
        hidden_size=_H,
        intermediate_size=80,
        vocab_size=_V,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        attn_layer_period=4,
        attn_layer_offset=2,
        expert_layer_period=2,
        expert_layer_offset=1,
        num_experts=4,
        num_experts_per_tok=2,
        mamba_d_state=12,
        mamba_d_conv=3,
        mamba_expand=2,
        mamba_dt_rank=8,
    ),
    # Falcon-H1: every layer is "hybrid": attention AND a Mamba-2 mixer side by side in the same layer, one cache
    # layer holding K/V + conv + ssm. mamba_d_ssm 48 = mamba_n_heads 4 x mamba_d_head 12.
    "falcon_h1": dict(
        hidden_size=_H,
        intermediate_size=80,
        vocab_size=_V,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=24,
        mamba_d_ssm=48,
        mamba_n_heads=4,
        mamba_d_head=12,
        mamba_n_groups=2,
        mamba_d_state=10,
        mamba_d_conv=3,
        mamba_chunk_size=16,
    ),
    # Zamba2: Mamba-2 layers, some of which ("hybrid") also run the shared transformer block (attention over
    # concat(hidden, embeddings): attention_hidden_size = 2*hidden, head_dim = 2*hidden/num_attention_heads).
    "zamba2": dict(
        hidden_size=_H,
        vocab_size=_V,
        num_hidden_layers=4,
        layers_block_type=["linear_attention", "hybrid", "linear_attention", "hybrid"],
        num_attention_heads=4,
        num_key_value_heads=4,
        mamba_d_state=10,
        mamba_d_conv=3,
        mamba_expand=2,
        mamba_ngroups=2,
        n_mamba_heads=4,
        chunk_size=16,
        intermediate_size=80,
    ),
    # Nemotron-H: separate blocks per layer: Mamba-2 ("linear_attention"), MoE, attention, MLP (the default
    # 4-block pattern); MoE / MLP layers hold nothing. mamba_ssm_cache_dtype float32 (the default).
    "nemotron_h": dict(
        hidden_size=_H,
        vocab_size=_V,
        layers_block_type=["linear_attention", "moe", "full_attention", "mlp"],
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=24,
        intermediate_size=80,
        ssm_state_size=10,
        mamba_num_heads=4,
        mamba_head_dim=12,
        n_groups=2,
        conv_kernel=3,
        chunk_size=16,
        n_routed_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=16,
        moe_shared_expert_intermediate_size=16,
    ),
    # LFM2: short gated convolutions ("conv") and full attention: [conv, attn, conv, conv, attn, conv].
    # conv: [b, hidden, conv_L_cache].
    "lfm2": dict(
        hidden_size=_H,
        intermediate_size=80,
        block_auto_adjust_ff_dim=False,
        vocab_size=_V,
        num_hidden_layers=6,
        num_attention_heads=4,
        num_key_value_heads=2,
        conv_L_cache=3,
        full_attn_idxs=[1, 4],
    ),
    # MiniMax-01: lightning (linear) attention and softmax attention alternating (the default layer_types):
    # [full, linear, full, linear]. Linear layers' state [b, heads, head_dim, head_dim] lives in
    # MiniMaxCache.linear_cache. block_size 16 < 40 so the prompt spans blocks.
    "minimax": dict(
        hidden_size=_H,
        intermediate_size=32,
        vocab_size=_V,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=24,
        block_size=16,
        num_local_experts=4,
        num_experts_per_tok=2,
    ),
    # Granite-4.0-H (GraniteMoeHybrid with Mamba-2 layers): 3 mamba : 1 attention; MoE + shared MLP.
    "granitemoehybrid": dict(
        hidden_size=_H,
        intermediate_size=32,
        shared_intermediate_size=48,
        vocab_size=_V,
        num_hidden_layers=4,
        layer_types=["mamba", "mamba", "attention", "mamba"],
        num_attention_heads=4,
        num_key_value_heads=2,
        mamba_n_heads=4,
        mamba_d_head=32,
        mamba_n_groups=2,
        mamba_d_state=10,
        mamba_d_conv=3,
        mamba_expand=2,
        mamba_chunk_size=16,
        num_local_experts=4,
        num_experts_per_tok=2,
    ),
    # Bamba: Mamba-2 layers with attention at attn_layer_indices: [mamba, attention, mamba, mamba].
    "bamba": dict(
        hidden_size=_H,
        intermediate_size=80,
        vocab_size=_V,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        attn_layer_indices=[1],
        mamba_n_heads=4,
        mamba_d_head=32,
        mamba_n_groups=2,
        mamba_d_state=10,
        mamba_d_conv=3,
        mamba_expand=2,
        mamba_chunk_size=16,
    ),
    # Kimi Linear: KDA (Kimi Delta Attention, "linear_attention") with MLA full-attention layers every 4th
    # (default layer_types for 5 layers: [KDA, KDA, KDA, KDA, MLA]); MoE from layer 1.
    "kimi_linear": dict(
        hidden_size=_H,
        intermediate_size=80,
        moe_intermediate_size=16,
        vocab_size=_V,
        num_hidden_layers=5,
        num_attention_heads=4,
        num_key_value_heads=4,
        kv_lora_rank=24,
        qk_nope_head_dim=12,
        qk_rope_head_dim=8,
        v_head_dim=18,
        num_experts=4,
        num_experts_per_token=2,
        linear_num_heads=2,
        linear_head_dim=28,
        linear_conv_kernel_dim=3,
        **_IDS,
    ),
    # Gemma-4 text (31B / 26B-A4B style): 5 sliding : 1 full, window 8; full layers with their own head size
    # (global_head_dim 40 vs head_dim 24) and, with attention_k_eq_v, their own K/V head count
    # (num_global_key_value_heads 1 vs num_key_value_heads 2; V computed from K's projection, stored apart).
    # No KV sharing: the config class's default num_kv_shared_layers is 0 (see VARIANTS for the E2B-style one).
    "gemma4_text": dict(
        hidden_size=_H,
        intermediate_size=80,
        vocab_size=_V,
        vocab_size_per_layer_input=_V,
        hidden_size_per_layer_input=8,
        num_hidden_layers=6,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=24,
        global_head_dim=40,
        attention_k_eq_v=True,
        num_global_key_value_heads=1,
        sliding_window=8,
    ),
    # Llama-4 text: 3 chunked (attention_chunk_size 8) : 1 full (the NoPE layer); MoE on every layer.
    # transformers caches chunked layers like sliding ones: attention_chunk_size - 1 rows.
    "llama4_text": dict(
        hidden_size=_H,
        intermediate_size=32,
        intermediate_size_mlp=80,
        vocab_size=_V,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=24,
        attention_chunk_size=8,
        num_local_experts=2,
        num_experts_per_tok=1,
    ),
    # Mamba-2: every layer a Mamba-2 mixer. conv [b, expand*hidden + 2*n_groups*state_size, conv_kernel],
    # ssm [b, num_heads, head_dim, state_size]; num_heads*head_dim = expand*hidden.
    "mamba2": dict(
        hidden_size=_H,
        vocab_size=_V,
        num_hidden_layers=2,
        num_heads=4,
        head_dim=32,
        expand=2,
        state_size=10,
        n_groups=2,
        conv_kernel=3,
        chunk_size=16,
    ),
    # Mamba-1 (and Falcon-Mamba, the same layer): 2 x mamba. conv [b, intermediate_size, conv_kernel]; recurrent
    # [b, intermediate_size, state_size]; intermediate_size = expand x hidden (128 = 2 x 64 here).
    "mamba": dict(hidden_size=_H, vocab_size=_V, num_hidden_layers=2, expand=2, state_size=10, conv_kernel=3),
    "falcon_mamba": dict(hidden_size=_H, vocab_size=_V, num_hidden_layers=2, expand=2, state_size=12, conv_kernel=3),
    # RecurrentGemma (Griffin): [recurrent, recurrent, attention] (block_types); local attention window 8 (MQA).
    # Recurrent layers: conv1d_state [b, lru_width, conv1d_width - 1] and RG-LRU state [b, lru_width] (float32),
    # held on the modules.
    "recurrent_gemma": dict(
        hidden_size=_H,
        intermediate_size=80,
        vocab_size=_V,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=1,
        lru_width=80,
        conv1d_width=3,
        attention_window_size=8,
    ),
}

# name -> (model_type, kwargs): another shape of an architecture already in TINY.
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    # Gemma-4 E2B / E4B style: KV sharing (the last num_kv_shared_layers layers reuse the K/V of the last
    # non-shared sliding / full layer; their cache layers are DummyLayer), no attention_k_eq_v.
    "gemma4_text+kv_shared": (
        "gemma4_text",
        dict(
            hidden_size=_H,
            intermediate_size=80,
            vocab_size=_V,
            vocab_size_per_layer_input=_V,
            hidden_size_per_layer_input=8,
            num_hidden_layers=12,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=24,
            global_head_dim=40,
            sliding_window=8,
            num_kv_shared_layers=6,
        ),
    ),
}

# Config fields worth printing (whichever a config has): the ones that size or shape the cache.
_FIELD_RE = re.compile(
    r"layer_types|block_type|layers_block|attn_layer|full_attn_idxs|max_window_layers|use_sliding_window|"
    r"num_hidden_layers|heads|head_dim|headdim|hidden_size$|attention_hidden_size|kv_channels|lora_rank|"
    r"index_|state|d_ssm|expand|n_groups|ngroups|conv|window|chunk|lru_width|kv_shared|k_eq_v|per_layer_config|"
    r"dtype|block_size|num_mem_blocks|hybrid_layer_ids|first_k_dense|mlp_only|no_rope"
)


def _resolve(name: str) -> tuple[str, dict[str, Any]]:
    if name in TINY:
        return name, TINY[name]
    if name in VARIANTS:
        return VARIANTS[name]
    raise KeyError(f"unknown architecture {name!r}; known: {sorted(TINY) + sorted(VARIANTS)}")


def build_config(name: str):
    """The tiny config: the model type's own config class, built from TINY / VARIANTS kwargs."""
    from transformers import AutoConfig

    model_type, kwargs = _resolve(name)
    return AutoConfig.for_model(model_type, **kwargs)


def _torch_dtype(dtype: str):
    import torch

    return {
        "float32": torch.float32,
        "fp32": torch.float32,
        "bfloat16": torch.bfloat16,
        "bf16": torch.bfloat16,
        "float16": torch.float16,
        "fp16": torch.float16,
    }[dtype]


# ----- walking: every tensor reachable from an object ----------------------------------------------------------


def _skip(obj) -> bool:
    """Objects a walk does not enter: classes, functions, modules, configs, streams, plain values."""
    import torch
    from transformers import PreTrainedConfig

    return (
        obj is None
        or callable(obj)
        or isinstance(
            obj,
            (type, str, bytes, int, float, bool, complex, torch.nn.Module, PreTrainedConfig, torch.dtype, torch.device),
        )
        or (type(obj).__module__.startswith("torch.") and not isinstance(obj, torch.Tensor))
    )


def _walk(obj, path: str, out: list, seen: set) -> None:
    """Append (path, tensor) for every tensor reachable from obj: attributes, dicts (UserDict too), lists, tuples,
    sets, nested plain objects. An object (not a tensor) is entered once."""
    import collections

    import torch

    if isinstance(obj, torch.Tensor):
        out.append((path, obj))
        return
    if _skip(obj) or id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, (dict, collections.UserDict)):
        for k, v in obj.items():
            _walk(v, f"{path}[{k!r}]" if not isinstance(k, int) else f"{path}[{k}]", out, seen)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _walk(v, f"{path}[{i}]", out, seen)
    elif isinstance(obj, (set, frozenset)):
        for i, v in enumerate(sorted(obj, key=repr)):
            _walk(v, f"{path}{{{i}}}", out, seen)
    elif hasattr(obj, "__dict__") or hasattr(obj, "__slots__"):
        names = list(getattr(obj, "__dict__", {}))
        for cls in type(obj).__mro__:
            names += [s for s in getattr(cls, "__slots__", ()) if s not in names]
        for name in names:
            try:
                value = getattr(obj, name)
            except AttributeError:
                continue
            _walk(value, f"{path}.{name}" if path else name, out, seen)


def _view_key(t) -> tuple:
    """Two tensors with this key are the same numbers held once (the same view of the same storage)."""
    if t.numel() == 0:
        return ("empty", id(t))
    return (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)


def _nbytes(t) -> int:
    return t.numel() * t.element_size()


def _dtype_name(t) -> str:
    return str(t.dtype).removeprefix("torch.")


def _module_state(model) -> dict[str, Any]:
    """Plain tensor attributes on the model's modules (not parameters, not buffers): qualified name -> tensor."""
    import torch

    held = {}
    for mod_name, module in model.named_modules():
        for attr, value in vars(module).items():
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
                held[f"{mod_name}.{attr}"] = value
    return held


_LAYER_RE = re.compile(r"(?:^|\.)layers\.(\d+)\.")


def real_cache_bytes(model_type: str, tokens: int = 40, dtype: str = "float32", extra_tokens: int = 1) -> list[dict]:
    """Per decoder layer, after one forward over `tokens` random ids and `extra_tokens` one-token forwards, the
    model (`model_type`: a key of TINY or VARIANTS) built in `dtype` ("float32", "bfloat16", "float16"):

      layer              its index
      cache_class        type(cache.layers[i]).__name__, plus where else the layer's state lives
                         ("MiniMaxCache.linear_cache", "module RecurrentGemmaRglru"); "(empty)" when the cache
                         layer itself holds nothing but another place does
      parts              {name: (shape, dtype, nbytes)}: every tensor held for the layer (keys, values,
                         conv_states[k], recurrent_states[k], indexer_keys, _sliding_window_tensor, linear_cache,
                         temporal_block.conv1d_state, ...); nbytes = numel x element size
      bytes              the parts' nbytes summed
      aliases            {name: (layer, part)}: a tensor already counted at another place (0 B here)
      storage_bytes      the bytes of the storages first met in this layer (a view keeps its whole storage)
      bookkeeping_bytes  the integer tensors among the parts (a sliding layer's 0-dim int64 window), in bytes
      windowed           for sliding / chunked layers {"window", "rows" held, "storage_rows"}, else None

    Raises AssertionError when the per-layer parts do not add up to an independent walk over the whole cache
    object (and the module-held state)."""
    return _run(model_type, tokens, dtype, extra_tokens)["layers"]


def real_total(model_type: str, tokens: int = 40, dtype: str = "float32", extra_tokens: int = 1) -> int:
    """The bytes of every tensor the cache holds after the run (real_cache_bytes summed)."""
    return sum(layer["bytes"] for layer in real_cache_bytes(model_type, tokens, dtype, extra_tokens))


def _run(name: str, tokens: int, dtype: str, extra_tokens: int) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, DynamicCache

    model_type, _ = _resolve(name)
    config = build_config(name)
    torch_dtype = _torch_dtype(dtype)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch_dtype).eval()
    config = model.config
    n_layers = config.num_hidden_layers
    # Mamba-2's forward names its cache cache_params (in and out); the others past_key_values.
    cache_arg = "cache_params" if "cache_params" in _forward_params(model) else "past_key_values"
    # RecurrentGemma builds a DynamicCache but does not return it: pass one in, as generate does.
    cache = DynamicCache(config=config) if model_type == "recurrent_gemma" else None
    state_before = {k: (id(v), v.data_ptr()) for k, v in _module_state(model).items()}

    gen = torch.Generator().manual_seed(1234)
    ids = torch.randint(1, config.vocab_size, (1, tokens), generator=gen)
    with torch.no_grad():
        out = model(input_ids=ids, use_cache=True, **({cache_arg: cache} if cache is not None else {}))
        cache = getattr(out, cache_arg, None) if getattr(out, cache_arg, None) is not None else cache
        for _ in range(extra_tokens):
            step = torch.randint(1, config.vocab_size, (1, 1), generator=gen)
            out = model(input_ids=step, use_cache=True, **{cache_arg: cache})
            cache = getattr(out, cache_arg, None) if getattr(out, cache_arg, None) is not None else cache
    if cache is None:
        raise RuntimeError(f"{name}: the model returned no cache")

    # State the run left on modules (RecurrentGemma's recurrent blocks): new or replaced plain tensor attributes.
    module_state = {k: v for k, v in _module_state(model).items() if state_before.get(k) != (id(v), v.data_ptr())}

    # 1. The independent total: one walk over the whole cache object, plus the module-held state.
    everything: list = []
    _walk(cache, "", everything, set())
    everything += list(module_state.items())
    unique: dict = {}
    for path, t in everything:
        unique.setdefault(_view_key(t), (path, t))
    walker_total = sum(_nbytes(t) for _, t in unique.values())
    walker_storage = sum(
        {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for _, t in unique.values() if t.numel()}.values()
    )

    # 2. Per layer: the cache's per-layer containers (cache.layers[i], and any other per-layer list such as
    # MiniMaxCache.linear_cache[i]) and the module state under model.layers.{i}.
    per_layer_lists = {
        attr: value
        for attr, value in vars(cache).items()
        if isinstance(value, (list, tuple)) and value and len(value) <= n_layers
    }
    counted: dict = {}  # view key -> (layer, part name), the first place a tensor is met
    storages: set = set()
    layers = []
    for i in range(n_layers):
        cache_layer = cache.layers[i] if i < len(getattr(cache, "layers", [])) else None
        found: list = []  # (part name, tensor): cache.layers[i]'s first, then the other per-layer lists'
        seen: set = set()
        _walk(cache_layer, "", found, seen)
        own_paths = {path for path, _ in found}
        for attr, value in per_layer_lists.items():
            if attr != "layers" and i < len(value):
                _walk(value[i], attr, found, seen)
        for qual, t in module_state.items():
            m = _LAYER_RE.search(qual)
            if m and int(m.group(1)) == i:
                found.append((qual[m.end() :], t))
        parts, aliases, storage_bytes, bookkeeping = {}, {}, 0, 0
        for path, t in found:
            key = _view_key(t)
            if key in counted:
                aliases[path] = counted[key]
                continue
            counted[key] = (i, path)
            parts[path] = (tuple(t.shape), _dtype_name(t), _nbytes(t))
            if not (t.is_floating_point() or t.is_complex()):
                bookkeeping += _nbytes(t)
            if t.numel() and t.untyped_storage().data_ptr() not in storages:
                storages.add(t.untyped_storage().data_ptr())
                storage_bytes += t.untyped_storage().nbytes()
        # The cache class: cache.layers[i]'s, then where else this layer's tensors live (MiniMaxCache.linear_cache,
        # a module); a cache layer holding nothing while another place does is named "(empty)".
        holders = [
            f"{type(cache).__name__}.{attr}"
            for attr in per_layer_lists
            if attr != "layers" and any(p == attr or p.startswith((attr + "[", attr + ".")) for p in parts)
        ]
        holders += sorted(
            {
                f"module {type(_module_at(model, q)).__name__}"
                for q in module_state
                if (m := _LAYER_RE.search(q)) and int(m.group(1)) == i
            }
        )
        if cache_layer is None:
            cache_class = " + ".join(holders) or "(no cache layer)"
        else:
            own = type(cache_layer).__name__
            if holders and not own_paths:
                own += " (empty)"
            cache_class = " + ".join([own, *holders])
        # Windowed (sliding / chunked) layers: the window, the rows the keys hold, the rows their storage holds.
        window = getattr(cache_layer, "sliding_window", None)
        keys = getattr(cache_layer, "keys", None)
        windowed = None
        if window is not None and isinstance(keys, torch.Tensor) and keys.numel():
            row = (keys.numel() // keys.shape[-2]) * keys.element_size()
            # keys is a [b, heads, rows, head_dim] slice along rows of a [b, heads, R, head_dim] tensor: R rows
            # live in its storage
            windowed = {
                "window": int(window),
                "rows": keys.shape[-2],
                "storage_rows": keys.untyped_storage().nbytes() // row,
            }
        layers.append(
            {
                "layer": i,
                "cache_class": cache_class,
                "parts": parts,
                "aliases": aliases,
                "bytes": sum(p[2] for p in parts.values()),
                "storage_bytes": storage_bytes,
                "bookkeeping_bytes": bookkeeping,
                "windowed": windowed,
            }
        )

    # Nothing missed (a tensor the cache holds outside every layer's container), nothing counted twice.
    per_layer_total = sum(layer["bytes"] for layer in layers)
    missed = [path for key, (path, _) in unique.items() if key not in counted]
    if missed or per_layer_total != walker_total:
        raise AssertionError(
            f"{name} ({dtype}): the layers' parts add up to {per_layer_total} B, the whole cache "
            f"holds {walker_total} B; held outside every layer: {missed}"
        )
    per_layer_storage = sum(layer["storage_bytes"] for layer in layers)
    if per_layer_storage != walker_storage:
        raise AssertionError(f"{name} ({dtype}): storages {per_layer_storage} B per layer, {walker_storage} B in all")
    return {
        "name": name,
        "model_type": model_type,
        "config": config,
        "cache_class": type(cache).__name__,
        "layers": layers,
        "model_dtype": dtype,
    }


def _forward_params(model) -> set[str]:
    import inspect

    return set(inspect.signature(model.forward).parameters)


def _module_at(model, qual: str):
    return model.get_submodule(qual.rsplit(".", 1)[0])


# ----- the report -----------------------------------------------------------------------------------------------

# What each layer kind stores, in the config's field names (b = batch, T = tokens so far, W = the window), and what
# the runs showed beyond the shapes. Observed with transformers 5.23 on CPU (its reference PyTorch paths).
NOTES: dict[str, str] = {
    "llama": "full: keys, values [b, num_key_value_heads, T, head_dim].",
    "qwen2": "layer i < max_window_layers: full K/V [b, num_key_value_heads, T, hidden_size/num_attention_heads]; "
    "i >= max_window_layers (use_sliding_window): sliding K/V [b, kv_heads, min(T, sliding_window-1), hd] "
    "+ a 0-dim int64 _sliding_window_tensor (8 B).",
    "gemma3_text": "sliding: K/V [b, num_key_value_heads, min(T, sliding_window-1), head_dim] + 8 B int64; full: "
    "[b, kv_heads, T, head_dim].",
    "gpt_oss": "as gemma3_text (sliding / full alternating); sinks are parameters, not cache.",
    "gemma3n_text": "non-shared layers as gemma3_text; the last num_kv_shared_layers layers are DummyLayer: 0 B "
    "(they read the last non-shared layer of their type's K/V through a per-forward dict that is not "
    "part of the cache).",
    "deepseek_v3": "MLA, compressed: keys = c_KV [b, 1, T, kv_lora_rank], values = k_rope [b, 1, T, "
    "qk_rope_head_dim]; nothing per head (num_key_value_heads, qk_nope_head_dim, v_head_dim unused).",
    "deepseek_v32": "as deepseek_v3 plus indexer_keys [b, T, index_head_dim] (one head: index_n_heads does not "
    "multiply it), cache layer DynamicIndexedLayer.",
    "qwen3_next": "linear_attention (Gated DeltaNet): conv_states[0] [b, 2*linear_num_key_heads*linear_key_head_dim "
    "+ linear_num_value_heads*linear_value_head_dim, linear_conv_kernel_dim] (model dtype), "
    "recurrent_states[0] [b, linear_num_value_heads, linear_key_head_dim, linear_value_head_dim] "
    "(float32 even in a bf16 model); full_attention: K/V [b, num_key_value_heads, T, head_dim].",
    "qwen3_5_text": "as qwen3_next.",
    "olmo_hybrid": "as qwen3_next (full attention head size hidden_size/num_attention_heads).",
    "jamba": "mamba (Mamba-1): conv_states[0] [b, mamba_expand*hidden_size, mamba_d_conv] (model dtype), "
    "recurrent_states[0] [b, mamba_expand*hidden_size, mamba_d_state] (float32); attention: K/V "
    "[b, num_key_value_heads, T, hidden_size/num_attention_heads].",
    "falcon_h1": "every layer hybrid, one LinearAttentionAndFullAttentionLayer holding K/V [b, num_key_value_heads, "
    "T, head_dim] + conv_states[0] [b, mamba_d_ssm + 2*mamba_n_groups*mamba_d_state, mamba_d_conv] + "
    "recurrent_states[0] [b, mamba_n_heads, mamba_d_head, mamba_d_state] (float32).",
    "zamba2": "mamba layers: conv_states[0] [b, mamba_expand*hidden_size + 2*mamba_ngroups*mamba_d_state, "
    "mamba_d_conv], recurrent_states[0] [b, n_mamba_heads, mamba_headdim, mamba_d_state] (float32); "
    "hybrid layers add K/V [b, num_key_value_heads, T, attention_head_dim = 2*hidden_size/"
    "num_attention_heads] (the shared block attends over concat(hidden, embeddings)).",
    "nemotron_h": "mamba (linear_attention): conv_states[0] [b, mamba_num_heads*mamba_head_dim + 2*n_groups*"
    "ssm_state_size, conv_kernel], recurrent_states[0] [b, mamba_num_heads, mamba_head_dim, "
    "ssm_state_size] (float32); attention: K/V [b, num_key_value_heads, T, head_dim]; moe / mlp: "
    "DummyLayer, 0 B. mamba_ssm_cache_dtype is read by no modeling code: with it set to bfloat16 "
    "the state is still float32.",
    "lfm2": "conv: conv_states[0] [b, hidden_size, conv_L_cache] only (no recurrent state); full_attention: K/V "
    "[b, num_key_value_heads, T, hidden_size/num_attention_heads].",
    "minimax": "full_attention: K/V [b, num_key_value_heads, T, head_dim] in cache.layers[i]; linear_attention: "
    "MiniMaxCache.linear_cache[i] [b, num_attention_heads, head_dim, head_dim] in the MODEL dtype "
    "(bf16 in a bf16 model), its cache.layers[i] an empty DynamicLayer (or none past the last full "
    "layer). The model builds MiniMaxCache itself; generate passes no cache for it.",
    "granitemoehybrid": "mamba: conv_states[0] [b, mamba_expand*hidden_size + 2*mamba_n_groups*mamba_d_state, "
    "mamba_d_conv], recurrent_states[0] [b, mamba_n_heads, mamba_d_head, mamba_d_state] "
    "(float32); attention: K/V [b, num_key_value_heads, T, hidden_size/num_attention_heads]. "
    "layer_types 'mamba'/'attention' become 'linear_attention'/'full_attention'.",
    "bamba": "as granitemoehybrid (attention at attn_layer_indices).",
    "kimi_linear": "KDA (linear_attention): conv_states[0] [b, 3*linear_num_heads*linear_head_dim, "
    "linear_conv_kernel_dim] (q, k, v convolutions in one tensor), recurrent_states[0] "
    "[b, linear_num_heads, linear_head_dim, linear_head_dim] (float32, cast explicitly); MLA "
    "(full_attention): keys = c_KV [b, 1, T, kv_lora_rank], values = k_rope [b, 1, T, "
    "qk_rope_head_dim].",
    "gemma4_text": "sliding: K/V [b, num_key_value_heads, min(T, sliding_window-1), head_dim]; full: K/V [b, "
    "num_global_key_value_heads (attention_k_eq_v; else num_key_value_heads), T, global_head_dim] "
    "(per_layer_config); with attention_k_eq_v V is computed from K's projection but stored as its "
    "own tensor (2 tensors, no aliasing).",
    "llama4_text": "chunked_attention: cached like sliding, K/V [b, num_key_value_heads, min(T, "
    "attention_chunk_size-1), head_dim]; full: [b, kv_heads, T, head_dim].",
    "mamba2": "conv_states[0] [b, expand*hidden_size + 2*n_groups*state_size, conv_kernel], recurrent_states[0] "
    "[b, num_heads, head_dim, state_size] (float32).",
    "recurrent_gemma": "recurrent: ON THE MODULES, not in the cache: temporal_block.conv1d_state [b, lru_width, "
    "conv1d_width-1] (model dtype) and temporal_block.rg_lru.recurrent_states [b, lru_width] "
    "(float32 always); their cache.layers[i] (LinearAttentionLayer) stay empty. attention: "
    "K/V [b, num_key_value_heads, min(T, attention_window_size-1), hidden_size/"
    "num_attention_heads] in the DynamicCache. The model builds a DynamicCache but does not "
    "return it, and a call with no cache re-zeroes the module state (_setup_cache): the caller "
    "must pass the cache in, as generate does.",
    "gemma4_text+kv_shared": "the last num_kv_shared_layers layers are DummyLayer (0 B); full layers K/V [b, "
    "num_key_value_heads, T, global_head_dim].",
}


def config_fields(config) -> dict[str, Any]:
    """The config fields (of the ones that size the cache) this config has, with their values."""
    d = config.to_dict()
    for extra in ("layer_types", "layers_block_type", "head_dim", "sliding_window"):
        try:
            value = getattr(config, extra)
        except Exception:  # noqa: BLE001 - e.g. gemma4's head_dim varies per layer and refuses a global read
            continue
        if value is not None and not callable(value):
            d[extra] = value
    drop = ("initializer", "time_step", "rope", "output_hidden_states", "chunk_size_feed_forward")
    return {k: v for k, v in sorted(d.items()) if _FIELD_RE.search(k) and not any(x in k for x in drop)}


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 400 else text[:400] + " ..."


def _kind(part: str) -> str:
    """A part's kind: its last name, without indices (conv_states[0] -> conv_states)."""
    return re.sub(r"\[[^]]*\]", "", part.rsplit(".", 1)[-1])


class _Fallbacks:
    """Collects transformers' 'falling back to its reference PyTorch implementation' log lines."""

    def __enter__(self):
        import logging

        from transformers.utils import logging as hf_logging

        self.seen: list[str] = []
        outer = self

        class Handler(logging.Handler):
            def emit(self, record):
                msg = record.getMessage()
                if "falling back" in msg:
                    outer.seen.append(msg.split(" is falling back")[0].strip("` "))

        self.handler = Handler()
        self.logger = hf_logging.get_logger("transformers")
        self.logger.addHandler(self.handler)
        return self

    def __exit__(self, *exc):
        self.logger.removeHandler(self.handler)


def report(
    names: list[str] | None = None,
    tokens: int = 40,
    extra_tokens: int = 1,
    dtypes: tuple[str, ...] = ("float32", "bfloat16"),
) -> str:
    """The human-readable report: per architecture, the config class and the fields that size the cache, then per
    dtype and layer the cache class and each part's shape, dtype and bytes; what each state is stored in under
    bf16; windowed layers' rows after the run and right after the prompt."""
    import time

    import torch
    import transformers

    names = names or [*TINY, *VARIANTS]
    body: list[str] = []
    all_fallbacks: dict[str, list[str]] = {}
    started = time.perf_counter()
    for name in names:
        model_type, _ = _resolve(name)
        config = build_config(name)
        body.append("=" * 118)
        body.append(f"{name}   ({type(config).__name__}, model_type {model_type})")
        for k, v in config_fields(config).items():
            body.append(f"    {k} = {_short(v)}")
        if name in NOTES:
            body.append("  stores: " + NOTES[name])
        runs = {}
        for dtype in dtypes:
            t0 = time.perf_counter()
            with _Fallbacks() as fb:
                try:
                    runs[dtype] = run = _run(name, tokens, dtype, extra_tokens)
                except Exception as exc:  # noqa: BLE001 - the report records the failure
                    body.append(f"  [{dtype}] FAILED: {type(exc).__name__}: {str(exc)[:500]}")
                    continue
            for f in fb.seen:
                all_fallbacks.setdefault(f, []).append(name)
            total = sum(layer["bytes"] for layer in run["layers"])
            body.append(
                f"  [{dtype}] cache object {run['cache_class']}: {total} B in {len(run['layers'])} layers "
                f"({time.perf_counter() - t0:.1f} s)"
            )
            for layer in run["layers"]:
                head = f"    layer {layer['layer']}: {layer['cache_class']}  {layer['bytes']} B"
                if layer["storage_bytes"] != layer["bytes"]:
                    head += f" (storage {layer['storage_bytes']} B)"
                body.append(head)
                for part, (shape, dt, nb) in layer["parts"].items():
                    body.append(f"        {part:<38} {str(list(shape)):<18} {dt:<9} {nb}")
                for part, (j, other) in layer["aliases"].items():
                    body.append(f"        {part:<38} = layer {j} {other} (same tensor, counted there)")
        # What each kind of state is stored in, per run dtype.
        for dtype, run in runs.items():
            kinds: dict[str, set] = {}
            for layer in run["layers"]:
                for part, (_, dt, _) in layer["parts"].items():
                    kinds.setdefault(_kind(part), set()).add(dt)
            body.append(
                f"  stored dtypes, {dtype} model: " + "; ".join(f"{k}: {'/'.join(sorted(v))}" for k, v in kinds.items())
            )
        # Windowed layers: rows kept after the run, and right after the prompt alone.
        run = next(iter(runs.values()), None)
        if run and any(layer["windowed"] for layer in run["layers"]):
            prompt_only = _run(name, tokens, dtypes[0], 0)
            for layer, first in zip(run["layers"], prompt_only["layers"], strict=True):
                w, w0 = layer["windowed"], first["windowed"]
                if w:
                    body.append(
                        f"  windowed layer {layer['layer']}: window {w['window']}: after {tokens}+"
                        f"{extra_tokens} tokens keys/values hold {w['rows']} rows (window - 1), their "
                        f"storage {w['storage_rows']} rows; right after the {tokens}-token prompt "
                        f"{w0['rows']} rows held, storage {w0['storage_rows']} rows"
                    )
        body.append("")

    head = [
        f"kvviz arch oracle (tests/support/arch_oracle.py): transformers {transformers.__version__}, torch "
        f"{torch.__version__}, CPU. Each model: one forward over {tokens} random token ids (use_cache=True, "
        f"the model making its cache as generate would), then {extra_tokens} one-token forward(s) feeding the "
        f"cache back: {tokens + extra_tokens} tokens, batch 1. Total run time {time.perf_counter() - started:.0f}"
        " s.",
        "Per layer: every tensor the cache holds (name, shape, dtype, bytes as held); 'storage' when the "
        "storages those views keep alive are larger (a sliding layer's keys are a slice of the tensor they were "
        "cut from). The per-layer parts are asserted to equal an independent walk over the whole cache object.",
        "Every architecture ran on CPU. transformers fell back to its reference PyTorch implementation for: "
        + ("; ".join(f"{k} ({', '.join(v)})" for k, v in all_fallbacks.items()) or "nothing")
        + ". (transformers logs each fallback once per process: the first model that used it is named.) The "
        "fused kernels (mamba_ssm, causal_conv1d, flash-linear-attention) were not run; their chunked scans also "
        "return the final state in float32.",
        "",
    ]
    return "\n".join(head + body)


if __name__ == "__main__":
    import sys

    path = sys.argv[1] if len(sys.argv) > 1 else "/tmp/arch_oracle_report.txt"
    text = report()
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    print(text)
