"""Self-attention vs cross-attention caches in an encoder-decoder model (a tiny BART built locally), run.

A decoder layer of an encoder-decoder model attends twice:

    self-attention   over the decoder's own tokens so far   -> its cache gains one row per step
    cross-attention  over the encoder output (source_len)   -> K/V = encoder_output @ W_k, W_v: computed at the
                                                               first decode step, then reused unchanged

transformers keeps both in one `EncoderDecoderCache(self_attention_cache, cross_attention_cache)`. The model
here has RANDOM weights (no download, no tokenizer: token ids are fed directly); the cache mechanics, not the
text, are the point. The settings and their checks are kvviz.internals.crossattn's (torch-free).
"""

from __future__ import annotations

import torch
from transformers import BartConfig, BartForConditionalGeneration, DynamicCache, EncoderDecoderCache

from kvviz.internals.crossattn import DECODE_STEPS, MAX_SOURCE_LEN, MAX_STEPS, SOURCE_LEN, VOCAB_SIZE, CrossAttnError
from kvviz.internals.records import CrossAttnRun, CrossStep

__all__ = ["build_tiny_bart", "run_cross_attention", "tiny_bart_config"]


def tiny_bart_config() -> BartConfig:
    """2 encoder + 2 decoder layers, d_model 32, 2 heads of 16: builds in milliseconds on CPU."""
    return BartConfig(
        vocab_size=VOCAB_SIZE,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=MAX_SOURCE_LEN + MAX_STEPS,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
        forced_eos_token_id=None,
    )


def build_tiny_bart(seed: int = 0) -> BartForConditionalGeneration:
    torch.manual_seed(seed)
    return BartForConditionalGeneration(tiny_bart_config()).eval()


def _bytes(cache: DynamicCache) -> int:
    return sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))


@torch.inference_mode()
def run_cross_attention(source_len: int = 12, n_steps: int = 8, seed: int = 0) -> CrossAttnRun:
    """Encode a random source once, then decode greedily step by step, inspecting both caches each step."""
    source_len = SOURCE_LEN.check(source_len, error=CrossAttnError)
    n_steps = DECODE_STEPS.check(n_steps, error=CrossAttnError)
    model = build_tiny_bart(seed)
    cfg = model.config
    gen = torch.Generator().manual_seed(seed)
    source = torch.randint(3, VOCAB_SIZE, (1, source_len), generator=gen)  # (1, source_len) ids, no tokenizer
    encoder_calls = [0]  # counted by a hook on this local model: the decoder steps must not re-run the encoder
    model.get_encoder().register_forward_hook(lambda *_: encoder_calls.__setitem__(0, encoder_calls[0] + 1))
    encoder_out = model.get_encoder()(input_ids=source)  # run once; every decoder step reuses it
    cache = EncoderDecoderCache(DynamicCache(config=cfg), DynamicCache(config=cfg))
    token = torch.tensor([[cfg.decoder_start_token_id]])
    first_cross: list[tuple[torch.Tensor, torch.Tensor]] = []
    first_ptrs: list[tuple[int, int]] = []
    prev_self: list[torch.Tensor] = []
    steps = []
    for step in range(n_steps):
        out = model(encoder_outputs=encoder_out, decoder_input_ids=token, past_key_values=cache, use_cache=True)
        cache = out.past_key_values
        self_c, cross_c = cache.self_attention_cache, cache.cross_attention_cache
        if step == 0:
            first_cross = [(la.keys.clone(), la.values.clone()) for la in cross_c.layers]
            first_ptrs = [(la.keys.data_ptr(), la.values.data_ptr()) for la in cross_c.layers]
        cross_equal = all(
            torch.equal(la.keys, k0) and torch.equal(la.values, v0)
            for la, (k0, v0) in zip(cross_c.layers, first_cross, strict=True)
        )
        same_storage = all(
            (la.keys.data_ptr(), la.values.data_ptr()) == ptrs
            for la, ptrs in zip(cross_c.layers, first_ptrs, strict=True)
        )
        rows = self_c.get_seq_length()
        prefix_equal = all(
            torch.equal(la.keys[:, :, : rows - 1], old)  # no earlier rows at the first step
            for la, old in zip(self_c.layers, prev_self, strict=False)
        )
        prev_self = [la.keys.clone() for la in self_c.layers]
        steps.append(
            CrossStep(
                step=step,
                fed_token_id=int(token[0, 0]),
                self_rows=rows,
                self_bytes=_bytes(self_c),
                cross_rows=cross_c.get_seq_length(),
                cross_bytes=_bytes(cross_c),
                cross_equal_to_first=cross_equal,
                cross_same_storage=same_storage,
                self_prefix_equal=prefix_equal,
            )
        )
        logits = out.logits[:, -1].clone()  # (1, vocab)
        logits[:, :3] = float("-inf")  # skip the special ids so random weights do not just repeat </s>
        token = logits.argmax(-1, keepdim=True)  # (1, 1) greedy next token
    return CrossAttnRun(
        source_len=source_len,
        n_layer=cfg.decoder_layers,
        n_heads=cfg.decoder_attention_heads,
        head_dim=cfg.d_model // cfg.decoder_attention_heads,
        encoder_passes=encoder_calls[0],
        steps=tuple(steps),
    )
