"""The eviction lab: the runs behind kvviz.internals.eviction's policies, on a real model. Every module here imports
torch at its top; a page imports them inside the functions that run a model (the policies' settings, names and
rules, and the takeaways, are torch-free: kvviz.internals.eviction, kvviz.internals.eviction_takeaways).

    scoring    a real prefill (its cache and attention weights, KVzip's re-read) and each policy's row scores and
               keep order
    cache      the pruned cache: prune (rectangular), HeadSplitCache (heads keep different rows), their bytes, and
               decoding on from them at the continued positions
    policies   the policies whose heads differ: DuoAttention's head ranking and split, KVzip's ranking across every
               head; evict, the cache any policy leaves at a budget
    measures   the texts (held-out spans and passages) and the two measures: the copy test and the loss change
    quantized  the quantized formats on the same bytes axis (kvviz.internals.quant's arithmetic, fp8, transformers'
               own fp8 cache)
    runs       what a page and the CLI ask for: the sweep, one policy's line, the quantized points, a token grid
"""
