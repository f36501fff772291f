"""kvviz: a UI-free library for teaching and reasoning about the transformer KV cache with a real GPT-2.

Each module has one job; the main ones, bottom to top:
  models, hub, load_cost          load a model + tokenizer (bundled, pretrained, random-weights shape); where a
                                   pretrained model's files are; what a load costs, checked before weights are read
  shared_mode                      what a shared classroom server lets a student's browser load
  stepping, step_records           prefill + decode one token at a time over transformers' DynamicCache; the
                                   torch-free records of each step
  ops                              exact operation / FLOP counts with vs without the cache (pure integers)
  memory, presets, config_import,  KV-cache bytes, published model configs, HF config.json import, what fits
  capacity
  bench*, engine_flat, roofline    cached vs uncached timing; the flat pre-allocated-cache engine; the memory roofline
  internals/                       cache layouts, prefix reuse, windows, paging, quantization, speculative decoding
  figures/                         plotly figures from plain records (no Streamlit)
  ui                               the one Streamlit adapter (cached model, sidebar model picker, shared widgets)

Only kvviz.ui imports streamlit; torch and transformers are imported only where a model runs.
`python -m kvviz --help` lists the command-line tools.
"""
