"""What real inference engines do inside the KV cache, one small module per idea, on the real model.

    records      the result records the ideas return (frozen dataclasses; figures draw them)
    layout       where element (layer, head, position, dim) lives under four real layouts (pre-allocated
                 head-major / position-major, DynamicCache's torch.cat, ncnn's exact-width transposed cache),
                 what one head reads, what appending a token copies; a read benchmark (numpy only)
    prefix       prefix reuse: roll the cache back to a shared prefix and prefill only the new tokens
    crossattn    encoder-decoder: a growing self-attention cache next to a fixed cross-attention cache
    window       sliding windows and hybrid local/global layer patterns
    paging       fixed-size blocks, block tables and reference-counted prefix sharing (as in vLLM)
    quant        int8 / int4 / fp16 / bf16 caches: bytes (with QuantizedCache's residual window), reconstruction
                 error, capped greedy agreement
    speculative  draft, verify, and crop the verifier's cache to the accepted length
    eviction     what to forget: eight policies prune the real DynamicCache after a prefill (bytes from the pruned
                 tensors), decoding goes on at the continued positions; copy test and loss change, with the
                 quantized formats on the same bytes axis

Each idea's module holds the whole idea: its limits, default prompts, texts, checks, errors and takeaways, with the
code that measures it. Torch and transformers are imported inside the functions that run a model, so a page imports
an idea's module for its limits and texts without loading torch (tests/test_layering.py checks it).
Everything here is UI-free (no streamlit). Prompts are checked by kvviz.inputs.prompt_rules (refused, never truncated).
"""
