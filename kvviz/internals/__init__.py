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
    eviction     what to forget: the policies that prune the real DynamicCache after a prefill, their settings,
                 limits, names and rules; eviction_takeaways: what a class takes away from a sweep
    lab          the runs of the ideas above on a real model (torch at each module's top), one module per idea
    eviction_lab the eviction runs (torch at each module's top): scores, the pruned cache (bytes from its tensors,
                 decoding on at the continued positions), copy test and loss change, the quantized formats on the
                 same bytes axis, the sweep

Each idea's module here holds the idea's settings: its limits, default prompts, texts, checks, errors and the
arithmetic that needs no model; it imports no torch, so a page imports it at its top (tests/test_layering.py checks
it). What runs the model is split off where the ideas part: lab/ holds one module per idea (lab.quant,
lab.speculative, lab.crossattn, lab.window, lab.prefix, lab.paging), and eviction_lab/ the eviction runs; their
modules import torch and transformers at their top, and a page imports them inside the functions that run a model.
Everything here is UI-free (no streamlit). Prompts are checked by kvviz.inputs.prompt_rules (refused, never truncated).
"""
