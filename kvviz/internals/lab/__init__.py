"""The cache-internals labs: the runs behind each idea's settings, on a real model. Every module here imports torch
and transformers at its top; a page imports one inside the function that runs the model (each idea's settings,
limits, checks and texts are torch-free, in its module one level up: kvviz.internals.quant for lab.quant, ...).

    quant        int8 / int4 / int2 (packed, per-group fp16 scale and zero) and fp16 / bf16 round trips, the real
                 cache of a prompt stored that way (bytes, error, QuantizedCache's residual window), capped greedy
                 agreement
    speculative  a draft proposes, the verifier checks in one pass, its DynamicCache is cropped to the accepted length
    crossattn    a tiny random BART: the self-attention cache grows, the cross-attention cache stays as first computed
    window       a window and layer pattern applied to the real cache of a prompt: rows kept, bytes, attention lost
    prefix       prompt B served from prompt A's cache cropped to their shared prefix, timed and checked
    paging       two real generations written into a block pool through their block tables and read back

The eviction lab (kvviz.internals.eviction_lab), the largest idea, is a package of its own.
"""
