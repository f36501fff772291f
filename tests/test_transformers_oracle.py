"""transformers' own caches are the oracle for kvviz's bytes.

For each architecture, the published config.json (an excerpt: the fields that shape the model, copied from the
hub repo named beside it; no network) is
  1. imported by kvviz (`config_import.parse_hf_config`), and
  2. built by transformers 5.x itself (its config class for the model_type, `AutoModelFor*.from_config`):
     - at FULL size on the meta device (shapes only, no memory, no arithmetic): prefill + decode steps, and
     - SHRUNK on CPU with real numbers (small hidden size / vocabulary / MLP, fewer layers where the layer
       pattern survives; every field that sizes the cache unchanged): prefill + decode steps.
The bytes of the tensors the real cache holds (cache.layers[i].keys / .values; the quantized tensors and their
scales for the fp8 cache) must equal kvviz's figure, or differ by exactly the documented convention counted in
kvviz.memory.hf_cache (sliding layers keep W - 1 tokens; Falcon-40B caches K/V broadcast to every query head).
"""

from __future__ import annotations

import copy
import functools

import pytest

from kvviz import memory
from kvviz.memory import config_import, hf_cache
from support.library import kvviz_total_bytes

HUB = "https://huggingface.co/{}/blob/main/config.json"

# name: (hub repo, published config.json excerpt)
PUBLISHED: dict[str, tuple[str, dict]] = {
    "gpt2": (
        "openai-community/gpt2",
        {
            "model_type": "gpt2",
            "activation_function": "gelu_new",
            "n_ctx": 1024,
            "n_embd": 768,
            "n_head": 12,
            "n_layer": 12,
            "n_positions": 1024,
            "vocab_size": 50257,
        },
    ),  # no torch_dtype: loads in float32
    "opt-13b": (
        "facebook/opt-13b",
        {
            "model_type": "opt",
            "hidden_size": 5120,
            "num_attention_heads": 40,
            "num_hidden_layers": 40,
            "ffn_dim": 20480,
            "max_position_embeddings": 2048,
            "vocab_size": 50272,
            "word_embed_proj_dim": 5120,
            "do_layer_norm_before": True,
            "torch_dtype": "float16",
        },
    ),
    "llama-2-7b": (
        "meta-llama/Llama-2-7b-hf",
        {
            "model_type": "llama",
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 32,
            "max_position_embeddings": 4096,
            "vocab_size": 32000,
            "rms_norm_eps": 1e-05,
            "torch_dtype": "float16",
        },
    ),
    "llama-3-8b": (
        "meta-llama/Meta-Llama-3-8B",
        {
            "model_type": "llama",
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "max_position_embeddings": 8192,
            "vocab_size": 128256,
            "rope_theta": 500000.0,
            "rms_norm_eps": 1e-05,
            "torch_dtype": "bfloat16",
        },
    ),
    "mistral-7b": (
        "mistralai/Mistral-7B-v0.1",
        {  # every layer slides (rolling buffer of 4096)
            "model_type": "mistral",
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "max_position_embeddings": 32768,
            "sliding_window": 4096,
            "rope_theta": 10000.0,
            "vocab_size": 32000,
            "torch_dtype": "bfloat16",
        },
    ),
    "mixtral-8x7b": (
        "mistralai/Mixtral-8x7B-v0.1",
        {
            "model_type": "mixtral",
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "num_local_experts": 8,
            "num_experts_per_tok": 2,
            "max_position_embeddings": 32768,
            "sliding_window": None,
            "rope_theta": 1e6,
            "vocab_size": 32000,
            "torch_dtype": "bfloat16",
        },
    ),
    "qwen2.5-7b": (
        "Qwen/Qwen2.5-7B",
        {
            "model_type": "qwen2",
            "hidden_size": 3584,
            "intermediate_size": 18944,
            "num_attention_heads": 28,
            "num_hidden_layers": 28,
            "num_key_value_heads": 4,
            "max_position_embeddings": 131072,
            "max_window_layers": 28,
            "sliding_window": 131072,
            "use_sliding_window": False,
            "rope_theta": 1e6,
            "vocab_size": 152064,
            "tie_word_embeddings": False,
            "torch_dtype": "bfloat16",
        },
    ),
    "falcon-7b": (
        "tiiuae/falcon-7b",
        {
            "model_type": "falcon",
            "hidden_size": 4544,
            "num_attention_heads": 71,
            "num_hidden_layers": 32,
            "multi_query": True,
            "new_decoder_architecture": False,
            "parallel_attn": True,
            "alibi": False,
            "bias": False,
            "vocab_size": 65024,
            "torch_dtype": "bfloat16",
        },
    ),
    "falcon-40b": (
        "tiiuae/falcon-40b",
        {
            "model_type": "falcon",
            "hidden_size": 8192,
            "num_attention_heads": 128,
            "num_kv_heads": 8,
            "num_hidden_layers": 60,
            "new_decoder_architecture": True,
            "parallel_attn": True,
            "alibi": False,
            "bias": False,
            "vocab_size": 65024,
            "torch_dtype": "bfloat16",
        },
    ),
    "pythia-160m": (
        "EleutherAI/pythia-160m",
        {
            "model_type": "gpt_neox",
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "rotary_pct": 0.25,
            "max_position_embeddings": 2048,
            "vocab_size": 50304,
            "use_parallel_residual": True,
            "torch_dtype": "float16",
        },
    ),
    "deepseek-v2-lite": (
        "deepseek-ai/DeepSeek-V2-Lite",
        {
            "model_type": "deepseek_v2",
            "hidden_size": 2048,
            "intermediate_size": 10944,
            "moe_intermediate_size": 1408,
            "num_attention_heads": 16,
            "num_key_value_heads": 16,
            "num_hidden_layers": 27,
            "kv_lora_rank": 512,
            "q_lora_rank": None,
            "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64,
            "v_head_dim": 128,
            "n_routed_experts": 64,
            "n_shared_experts": 2,
            "num_experts_per_tok": 6,
            "first_k_dense_replace": 1,
            "max_position_embeddings": 163840,
            "vocab_size": 102400,
            "torch_dtype": "bfloat16",
        },
    ),
    "deepseek-v3": (
        "deepseek-ai/DeepSeek-V3",
        {
            "model_type": "deepseek_v3",
            "hidden_size": 7168,
            "intermediate_size": 18432,
            "moe_intermediate_size": 2048,
            "num_attention_heads": 128,
            "num_key_value_heads": 128,
            "num_hidden_layers": 61,
            "kv_lora_rank": 512,
            "q_lora_rank": 1536,
            "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64,
            "v_head_dim": 128,
            "n_routed_experts": 256,
            "n_shared_experts": 1,
            "num_experts_per_tok": 8,
            "first_k_dense_replace": 3,
            "max_position_embeddings": 163840,
            "vocab_size": 129280,
            "torch_dtype": "bfloat16",
        },
    ),
    "gemma-3-4b": (
        "google/gemma-3-4b-pt",
        {  # heads, head size and the layer pattern left to the defaults
            "architectures": ["Gemma3ForConditionalGeneration"],
            "model_type": "gemma3",
            "torch_dtype": "bfloat16",
            "text_config": {
                "hidden_size": 2560,
                "intermediate_size": 10240,
                "model_type": "gemma3_text",
                "num_hidden_layers": 34,
                "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                "sliding_window": 1024,
            },
        },
    ),
    "t5-3b": (
        "google-t5/t5-3b",
        {
            "model_type": "t5",
            "d_model": 1024,
            "d_kv": 128,
            "d_ff": 16384,
            "num_heads": 32,
            "num_layers": 24,
            "vocab_size": 32128,
            "is_encoder_decoder": True,
        },
    ),
    "bart-large": (
        "facebook/bart-large",
        {
            "model_type": "bart",
            "d_model": 1024,
            "encoder_layers": 12,
            "decoder_layers": 12,
            "encoder_attention_heads": 16,
            "decoder_attention_heads": 16,
            "encoder_ffn_dim": 4096,
            "decoder_ffn_dim": 4096,
            "max_position_embeddings": 1024,
            "vocab_size": 50265,
            "is_encoder_decoder": True,
        },
    ),
}
ENC_DEC = {"t5-3b", "bart-large"}


def no_grad(fn):
    """`@torch.no_grad()`, with torch imported at the first call (collecting this module never imports torch)."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        import torch

        return torch.no_grad()(fn)(*args, **kwargs)

    return call


# Shrinking for the CPU run: what gets smaller. Head counts / head sizes / windows / patterns stay unless noted.
_SMALL_LLAMA = {"hidden_size": 64, "intermediate_size": 32, "vocab_size": 64, "num_hidden_layers": 2}
SHRINK: dict[str, dict] = {
    "gpt2": {"vocab_size": 64, "n_layer": 2, "n_inner": 32},  # head size = n_embd / n_head: n_embd kept
    "opt-13b": {
        "hidden_size": 256,
        "word_embed_proj_dim": 256,
        "num_attention_heads": 2,
        "ffn_dim": 32,
        "vocab_size": 64,
        "num_hidden_layers": 2,
    },  # 2 heads x 128 (head size kept)
    "llama-2-7b": {**_SMALL_LLAMA, "head_dim": 128},
    "llama-3-8b": {**_SMALL_LLAMA, "head_dim": 128},
    "mistral-7b": {**_SMALL_LLAMA, "head_dim": 128, "sliding_window": 4},  # window < prompt: W - 1 shows
    "mixtral-8x7b": {**_SMALL_LLAMA, "head_dim": 128},
    "qwen2.5-7b": {**_SMALL_LLAMA, "head_dim": 128},
    "falcon-7b": {
        "hidden_size": 128,
        "num_attention_heads": 2,
        "ffn_hidden_size": 32,
        "vocab_size": 64,
        "num_hidden_layers": 2,
    },  # MQA kept: 2 query heads x 64 share one K/V head
    "falcon-40b": {
        "hidden_size": 1024,
        "num_attention_heads": 16,
        "num_kv_heads": 1,
        "ffn_hidden_size": 32,
        "vocab_size": 64,
        "num_hidden_layers": 2,
    },  # 16 query heads per K/V head, as in the real one
    "pythia-160m": {"intermediate_size": 32, "vocab_size": 64, "num_hidden_layers": 2},
    "deepseek-v2-lite": {
        "hidden_size": 64,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "intermediate_size": 32,
        "moe_intermediate_size": 16,
        "n_routed_experts": 4,
        "num_experts_per_tok": 2,
        "vocab_size": 64,
        "num_hidden_layers": 2,
    },  # latent kept
    "deepseek-v3": {
        "hidden_size": 64,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "q_lora_rank": 32,
        "intermediate_size": 32,
        "moe_intermediate_size": 16,
        "n_routed_experts": 4,
        "n_group": 1,
        "topk_group": 1,
        "num_experts_per_tok": 2,
        "first_k_dense_replace": 1,
        "vocab_size": 64,
        "num_hidden_layers": 2,
    },
    "t5-3b": {"d_model": 64, "d_ff": 32, "vocab_size": 64, "num_layers": 2},
    "bart-large": {
        "d_model": 128,
        "encoder_attention_heads": 2,
        "decoder_attention_heads": 2,
        "encoder_ffn_dim": 32,
        "decoder_ffn_dim": 32,
        "vocab_size": 64,
        "encoder_layers": 1,
        "decoder_layers": 2,
    },  # 2 heads x 64 (head size kept)
}
# Gemma-3: 6 layers keep one full 5 local : 1 global period; window shrunk to 4 so the prompt overflows it.
SHRINK_TEXT = {
    "gemma-3-4b": {
        "hidden_size": 64,
        "intermediate_size": 32,
        "vocab_size": 64,
        "num_hidden_layers": 6,
        "sliding_window": 4,
    }
}
PROMPT, DECODE, ENCODER = 6, 3, 7


def shrunk(name: str) -> dict:
    cfg = copy.deepcopy(PUBLISHED[name][1])
    cfg.update(SHRINK.get(name, {}))
    if name in SHRINK_TEXT:
        cfg["text_config"].update(SHRINK_TEXT[name])
    return cfg


def cache_tensor_bytes(cache) -> int:
    """Bytes of every tensor the cache holds for the sequence: keys/values, or fp8 tensors and their scales."""
    import torch

    if hasattr(cache, "self_attention_cache"):  # EncoderDecoderCache
        return cache_tensor_bytes(cache.self_attention_cache) + cache_tensor_bytes(cache.cross_attention_cache)
    total = 0
    for layer in cache.layers:
        for attr in ("keys", "values", "_quantized_keys", "_quantized_values"):
            held = getattr(layer, attr, None)
            for t in held if isinstance(held, tuple) else (held,):
                if isinstance(t, torch.Tensor):
                    total += t.numel() * t.element_size()
    return total


def build(cfg: dict, device: str):
    """transformers' model for this config.json, as transformers builds it (text model of a multimodal one)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    top = CONFIG_MAPPING[cfg["model_type"]](**cfg)
    auto = AutoModelForSeq2SeqLM if top.is_encoder_decoder else AutoModelForCausalLM
    text = top if top.is_encoder_decoder else top.get_text_config(decoder=True)
    dtype = getattr(text, "dtype", None) or getattr(top, "dtype", None) or torch.float32
    dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    with torch.device(device):
        torch.manual_seed(0)
        model = auto.from_config(text, dtype=dtype)
    return model.eval(), dtype


@no_grad
def run(model, enc_dec: bool, device: str, cache=None, steps: int = DECODE) -> tuple[int, list[int]]:
    """Prefill PROMPT tokens, then `steps` one-token decode passes; (bytes after prefill, bytes after each step)."""
    import torch

    ids = torch.arange(1, PROMPT + 1, device=device)[None] % 60 + 1
    kwargs = {}
    if enc_dec:
        enc = model.get_encoder()(input_ids=torch.arange(1, ENCODER + 1, device=device)[None])
        kwargs = {"encoder_outputs": enc}
        out = model(decoder_input_ids=ids, use_cache=True, past_key_values=cache, **kwargs)
    else:
        out = model(input_ids=ids, use_cache=True, past_key_values=cache)
    cache = out.past_key_values
    after_prefill, after_steps = cache_tensor_bytes(cache), []
    for step in range(steps):
        token = torch.full((1, 1), 3 + step, device=device)
        key = "decoder_input_ids" if enc_dec else "input_ids"
        cache = model(**{key: token}, past_key_values=cache, use_cache=True, **kwargs).past_key_values
        after_steps.append(cache_tensor_bytes(cache))
    return after_prefill, after_steps


def expected(imported, tokens: int) -> tuple[int, int]:
    """(kvviz's figure, transformers' figure per kvviz.memory.hf_cache) after `tokens` tokens."""
    return (
        kvviz_total_bytes(imported, tokens, encoder_len=ENCODER),
        hf_cache.transformers_cache_bytes(imported, tokens, encoder_len=ENCODER),
    )


@pytest.mark.model
@pytest.mark.parametrize("name", list(PUBLISHED))
@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_kvviz_bytes_equal_the_real_cache(name, device):
    if (name, device) == ("bart-large", "meta"):
        pytest.skip("BART's decoder mask calls .item() on the padding mask, which meta tensors cannot answer")
    cfg = PUBLISHED[name][1] if device == "meta" else shrunk(name)
    imported = config_import.parse_hf_config(cfg)
    model, dtype = build(cfg, device)
    steps = 1 if device == "meta" else DECODE  # meta: full-size MoE passes cost seconds each; one step shows growth
    after_prefill, after_steps = run(model, name in ENC_DEC, device, steps=steps)
    assert len(after_steps) == steps
    for tokens, held in zip(range(PROMPT, PROMPT + steps + 1), [after_prefill, *after_steps], strict=True):
        kvviz_bytes, transformers_bytes = expected(imported, tokens)
        assert held == transformers_bytes, (name, device, tokens)
        c = imported.config
        if c.window is None and imported.transformers_kv_heads is None:
            assert held == kvviz_bytes  # no convention between them: kvviz's figure IS the real cache
    # kvviz's dtype is the one transformers loaded the model in (float32 when config.json names none)
    assert memory.resolve_dtype(str(dtype).removeprefix("torch.")).name == imported.config.dtype


@pytest.mark.model
def test_sliding_layers_hold_window_minus_one_even_right_after_a_long_prompt():
    """Gemma-3 shrunk: window 4 < prompt 6. transformers stores the last 3 tokens of each sliding layer (the
    full prompt only lives inside the prefill pass); kvviz counts 4. The difference is exactly 1 token per
    sliding layer, and the real 5 local : 1 global pattern came from transformers' defaults."""
    cfg = shrunk("gemma-3-4b")
    imported = config_import.parse_hf_config(cfg)
    c = imported.config
    assert (c.window, c.local_per_global, c.n_global_layers) == (4, 5, 1)
    assert {"num_attention_heads", "num_key_value_heads", "head_dim", "layer_types"} <= set(imported.defaults)
    model, _ = build(cfg, "cpu")
    after_prefill, _ = run(model, False, "cpu", steps=0)
    per_layer_token = c.bytes_per_token_per_layer
    n_local = c.n_layer - c.n_global_layers
    assert after_prefill == per_layer_token * (PROMPT * 1 + 3 * n_local)
    assert memory.kv_bytes(c, PROMPT) - after_prefill == n_local * per_layer_token


@pytest.mark.model
def test_qwen2_max_window_layers_only_windows_the_layers_at_or_above_it():
    cfg = shrunk("qwen2.5-7b")
    cfg.update(num_hidden_layers=4, use_sliding_window=True, sliding_window=4, max_window_layers=2)
    imported = config_import.parse_hf_config(cfg)
    assert [imported.config.layer_window(i) for i in range(4)] == [None, None, 4, 4]
    model, _ = build(cfg, "cpu")
    held = [len_ for len_ in (layer.keys.shape[-2] for layer in run_cache(model))]
    assert held == [PROMPT + DECODE, PROMPT + DECODE, 3, 3]


@no_grad
def run_cache(model):
    import torch

    ids = torch.arange(1, PROMPT + 1)[None]
    cache = model(input_ids=ids, use_cache=True).past_key_values
    for step in range(DECODE):
        cache = model(input_ids=torch.full((1, 1), 3 + step), past_key_values=cache, use_cache=True).past_key_values
    return cache.layers


@pytest.mark.model
def test_falcon_40b_transformers_caches_16x_the_gqa_figure():
    imported = config_import.parse_hf_config(PUBLISHED["falcon-40b"][1])
    assert imported.config.n_kv_heads == 8 and imported.transformers_kv_heads == 128
    assert any("16x the GQA figure" in n.english for n in imported.notes)
    tokens = 4096
    assert hf_cache.transformers_cache_bytes(imported, tokens) == 16 * memory.kv_bytes(imported.config, tokens)


@pytest.mark.model
def test_fp8_cache_adds_two_fp32_scales_per_layer():
    """transformers' QuantizedCache(backend="fp8") (cache_utils.Fp8QuantizedLayer): 1 byte per number plus a
    float32 scale for keys and one for values in each layer."""
    from transformers import QuantizedCache

    cfg = shrunk("llama-3-8b")
    model, _ = build(cfg, "cpu")
    cache = QuantizedCache(backend="fp8", config=model.config)
    after_prefill, after_steps = run(model, False, "cpu", cache=cache)
    imported = config_import.parse_hf_config(cfg, dtype="fp8")
    for tokens, held in zip(range(PROMPT, PROMPT + DECODE + 1), [after_prefill, *after_steps], strict=True):
        assert held == hf_cache.transformers_cache_bytes(imported, tokens, fp8_cache=True)
        assert held == memory.kv_bytes(imported.config, tokens)  # kvviz counts the scales too
        assert held == tokens * imported.config.n_layer * 2 * 8 * 128 + imported.config.n_layer * 2 * 4


@pytest.mark.model
def test_encoder_decoder_counts_cross_attention_and_t5_d_kv():
    """T5-3B: head size is d_kv = 128, not d_model / heads = 32; the cross-attention cache is encoder length x
    layers x heads x d_kv x 2 numbers. Without both, the total is 8x too small at equal lengths."""
    imported = config_import.parse_hf_config(PUBLISHED["t5-3b"][1])
    c, cross = imported.config, imported.cross_attention
    assert (c.n_layer, c.n_kv_heads, c.head_dim, c.dtype) == (24, 32, 128, "fp32")
    assert memory.kv_bytes(cross, 512) == 512 * 24 * 32 * 128 * 2 * 4
    old_figure = 24 * 32 * (1024 // 32) * 2 * 2 * 512  # hidden/heads head size, bf16, no cross-attention
    assert kvviz_total_bytes(imported, 512, encoder_len=512) == 16 * old_figure


@pytest.mark.parametrize(
    "text",
    [
        '{"model_type": "gemma3_text", "sliding_window": 512, "sliding_window_pattern": "abc"}',
        '{"model_type": "gemma3_text", "sliding_window": 512, "sliding_window_pattern": [6]}',
        '{"model_type": "gemma3_text", "sliding_window": 512, "sliding_window_pattern": 1e400}',
        '{"n_layer": 2, "n_head": 2, "n_embd": 8, "sliding_window": 4, "sliding_window_pattern": "abc"}',
        "[" * 100_000 + "]" * 100_000,
        '{"text_config": ' * 100_000 + "{}" + "}" * 100_000,
        '{"model_type": "llama", "num_hidden_layers": 1000000000}',
    ],
)
def test_hostile_configs_give_one_clear_line(text):
    with pytest.raises(memory.MemoryInputError) as info:
        config_import.parse_hf_config(text)
    assert "\n" not in str(info.value) and len(str(info.value)) < 200


@pytest.mark.model
@pytest.mark.parametrize("name", ["deepseek-v2-lite", "deepseek-v3"])
def test_mla_cache_holds_the_compressed_latent_not_per_head_kv(name):
    """transformers 5.x's DeepSeek attention caches, per layer, the normalised latent c_KV (kv_lora_rank) as
    `keys` and the shared RoPE key k_R (qk_rope_head_dim) as `values`, each one single-head tensor: exactly
    kvviz's MLA figure, not heads x head_dim K and V."""
    model, _ = build(shrunk(name), "cpu")
    layers = run_cache(model)
    assert {tuple(layer.keys.shape) for layer in layers} == {(1, 1, PROMPT + DECODE, 512)}
    assert {tuple(layer.values.shape) for layer in layers} == {(1, 1, PROMPT + DECODE, 64)}


# ----- the encoder-decoder total, Qwen2's max_window_layers, two config readings ------------------------------
@no_grad
def run_encoder_decoder(model, batch: int, device: str, decoder_tokens: int, encoder_tokens: int, steps: int):
    """Encode `encoder_tokens` per sequence, prefill `decoder_tokens`, then `steps` one-token decode passes, all at
    `batch` sequences; yields (decoder tokens so far, bytes the EncoderDecoderCache holds) after each pass."""
    import torch

    enc_ids = (torch.arange(encoder_tokens * batch, device=device).reshape(batch, encoder_tokens) % 60) + 3
    dec_ids = (torch.arange(decoder_tokens * batch, device=device).reshape(batch, decoder_tokens) % 60) + 3
    enc = model.get_encoder()(input_ids=enc_ids)
    cache = model(encoder_outputs=enc, decoder_input_ids=dec_ids, use_cache=True).past_key_values
    yield decoder_tokens, cache_tensor_bytes(cache)
    for step in range(steps):
        token = torch.full((batch, 1), 3 + step, device=device)
        cache = model(
            encoder_outputs=enc, decoder_input_ids=token, past_key_values=cache, use_cache=True
        ).past_key_values
        yield decoder_tokens + step + 1, cache_tensor_bytes(cache)


@pytest.mark.model
@pytest.mark.parametrize("name", sorted(ENC_DEC))
@pytest.mark.parametrize("batch", [1, 2])
def test_encoder_decoder_total_is_the_whole_encoder_decoder_cache(name, batch, tmp_path, capsys):
    """With the encoder length known, kvviz's total (library, and the CLI's --json total_bytes) is every byte
    transformers' EncoderDecoderCache holds: self-attention + cross-attention, after the prefill and each step."""
    from kvviz.cli.memory import main as memory_cli

    cfg = shrunk(name)
    imported = config_import.parse_hf_config(cfg)
    model, _ = build(cfg, "cpu")
    path = tmp_path / "config.json"
    path.write_text(__import__("json").dumps(cfg))
    for tokens, held in run_encoder_decoder(model, batch, "cpu", PROMPT, ENCODER, DECODE):
        whole = memory.encoder_decoder_budget(imported.config, imported.cross_attention, tokens, batch, ENCODER)
        assert whole.complete and whole.total_bytes == held, (name, batch, tokens)
        assert whole.cross_bytes == batch * ENCODER * whole.cross_bytes_per_encoder_token  # the part that stays
        assert (
            memory_cli(
                [
                    "memory",
                    "--config",
                    str(path),
                    "--context",
                    str(tokens),
                    "--batch",
                    str(batch),
                    "--encoder-len",
                    str(ENCODER),
                    "--json",
                ][1:]
            )
            == 0
        )
        out = __import__("json").loads(capsys.readouterr().out)
        assert out["total_bytes"] == out["self_attention_bytes"] + out["cross_attention_bytes"] == held
    without = memory.encoder_decoder_budget(imported.config, imported.cross_attention, PROMPT, batch)
    assert not without.complete and "self-attention only" in without.total_covers
    assert without.total_bytes == memory.kv_bytes(imported.config, PROMPT, batch) < held


@pytest.mark.model
def test_t5_3b_full_size_batch_2_on_the_meta_device():
    """A worked figure: T5-3B, batch 2, a 1,500-token source and 1,502 decoder tokens (prefill 1,500 + 2
    steps): transformers' EncoderDecoderCache holds 4,721,737,728 B, and that is kvviz's total."""
    cfg = PUBLISHED["t5-3b"][1]
    imported = config_import.parse_hf_config(cfg)
    model, _ = build(cfg, "meta")
    *_, (tokens, held) = run_encoder_decoder(model, 2, "meta", 1500, 1500, 2)
    whole = memory.encoder_decoder_budget(imported.config, imported.cross_attention, tokens, 2, 1500)
    assert tokens == 1502 and held == whole.total_bytes == 4_721_737_728
    assert whole.self_attention.total_bytes == 2_362_441_728  # a part, not the whole total


@pytest.mark.model
@pytest.mark.parametrize("max_window_layers", [0, 1, 2, 3, 4])
def test_qwen2_sliding_window_follows_max_window_layers(max_window_layers):
    """Qwen2.5 with use_sliding_window: transformers' Qwen2Config derives layer_types from max_window_layers
    (layers at or above it slide); kvviz reads that list, so its layer pattern and transformers' real per-layer
    cache lengths agree at every value, and the bytes differ only by the documented W - 1 convention."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    cfg = shrunk("qwen2.5-7b")
    cfg.update(num_hidden_layers=4, use_sliding_window=True, sliding_window=4, max_window_layers=max_window_layers)
    imported = config_import.parse_hf_config(cfg)
    types = CONFIG_MAPPING["qwen2"](**cfg).layer_types
    c = imported.config
    assert ["full_attention" if c.layer_window(i) is None else "sliding_attention" for i in range(4)] == types
    model, _ = build(cfg, "cpu")
    layers = run_cache(model)
    tokens = PROMPT + DECODE
    assert [layer.keys.shape[-2] for layer in layers] == [tokens if t == "full_attention" else 3 for t in types]
    held = sum(layer.keys.numel() * layer.keys.element_size() * 2 for layer in layers)
    assert held == hf_cache.transformers_cache_bytes(imported, tokens)
    n_sliding = types.count("sliding_attention")
    assert memory.kv_bytes(c, tokens) == held + n_sliding * (4 - 3) * c.bytes_per_token_per_layer


def _transformers_reads(cfg: dict, tmp_path) -> tuple[object | None, str | None]:
    """(the config transformers' AutoConfig.from_pretrained reads from this config.json, or its refusal, whole)."""
    import json

    from transformers import AutoConfig

    (tmp_path / "config.json").write_text(json.dumps(cfg))
    try:
        return AutoConfig.from_pretrained(tmp_path), None
    except Exception as exc:  # noqa: BLE001 -- whatever transformers refuses with, kvviz must quote it
        return None, " ".join(line.strip() for line in str(exc).splitlines() if line.strip())


@pytest.mark.model
@pytest.mark.parametrize(
    "cfg",
    [
        {"model_type": "llama", "num_hidden_layers": 32.0, "torch_dtype": "bfloat16"},
        {
            "model_type": "llama",
            "num_hidden_layers": 4,
            "num_key_value_heads": 8,
            "text_config": "a string",
            "torch_dtype": "bfloat16",
        },
        {"model_type": "llava", "text_config": "a string"},
        {"model_type": "qwen2", "num_hidden_layers": 2.0, "sliding_window": 4, "use_sliding_window": True},
    ],
    ids=["float-layers", "llama-text-config-string", "llava-text-config-string", "qwen2-float-layers"],
)
def test_kvviz_reads_what_transformers_reads_and_quotes_what_it_refuses(cfg, tmp_path):
    """Where AutoConfig.from_pretrained reads a config, kvviz reads it too: the model transformers builds from it
    (full size, meta device) holds exactly kvviz's bytes after a prefill. Where it refuses, kvviz refuses on one
    line: transformers' whole reason (transformers 5.x's strict fields refuse 32.0), or, for a text sub-config
    given as a string, kvviz's own sentence saying what to change."""
    import torch
    from transformers import AutoModelForCausalLM

    top, reason = _transformers_reads(cfg, tmp_path)
    if top is not None:  # a llama's stray text_config string: AutoConfig keeps it as a plain attribute
        imported = config_import.parse_hf_config(cfg)
        # LlamaForCausalLM reads only top-level fields; its GenerationConfig step calls get_text_config(), which
        # returns the string and trips on it, so the stray attribute is deleted before building (same layers)
        del top.text_config
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(top, dtype=torch.bfloat16).eval()
        with torch.no_grad():
            cache = model(
                input_ids=torch.ones(1, PROMPT, dtype=torch.long, device="meta"), use_cache=True
            ).past_key_values
        assert cache_tensor_bytes(cache) == memory.kv_bytes(imported.config, PROMPT) > 0
        assert imported.config.n_layer == 4 and imported.config.n_kv_heads == 8
        assert any(
            "text_config" in m.english and "ignored, as transformers does" in m.english for m in imported.missing
        )
        return
    with pytest.raises(memory.MemoryInputError) as info:
        config_import.parse_hf_config(cfg)
    message = str(info.value)
    assert "\n" not in message and not message.endswith(":")
    if isinstance(cfg.get("text_config"), str):
        assert "text_config must be a JSON object" in message and "refuses it too" in message
    else:
        assert reason in message  # transformers' reason, whole, on one line
