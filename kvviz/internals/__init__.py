"""What real inference engines do inside the KV cache, one small module per idea, on the real model.

    layout       where element (layer, head, position, dim) lives in memory under three layouts; a read benchmark
    prefix       prefix reuse: roll the cache back to a shared prefix and prefill only the new tokens
    crossattn    encoder-decoder: a growing self-attention cache next to a fixed cross-attention cache
    window       sliding windows and hybrid local/global layer patterns
    paging       fixed-size blocks, block tables and reference-counted prefix sharing (as in vLLM)
    quant        int8 / int4 / fp16 / bf16 caches: bytes, reconstruction error, greedy agreement
    speculative  draft, verify, and crop the verifier's cache to the accepted length

Everything here is UI-free (no streamlit) and returns frozen dataclasses of plain numbers and numpy arrays.
"""
