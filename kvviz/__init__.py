"""kvviz: a UI-free library for teaching and reasoning about the transformer KV cache with a real GPT-2.

One package per idea the app teaches, bottom to top:
  model/        load a model + tokenizer (bundled, pretrained, random-weights shape); what a load costs, checked
                before weights are read; what a shared classroom server lets a student's browser load
  step/         prefill + decode one token at a time over transformers' DynamicCache; the torch-free records of
                each step; the stage's view-model; full attention patterns
  ops           exact operation / FLOP counts with vs without the cache (pure integers), and what they mean
  memory/       KV-cache bytes, dtypes, units, published presets, HF config.json import, what fits
  measure/      the floor every timing stands on: cores, load, median and spread, "inside the noise", interleaving
  speedup/      cached vs uncached timing; the flat pre-allocated-cache engine; the roofline
  internals/    cache layouts, prefix reuse, windows, paging, quantization, speculative decoding
  teaching/     the guided lesson, its handout, the glossary, the teacher's guide
  claims        published KV-cache figures and popular sentences, checked against kvviz's own arithmetic
  inputs/       where a user's text becomes a value (links, prompts, numbers)
  work_queue    one long timed job at a time per server process, first come first served
  training/     the training script, its recipes, the copying data
  cli/          `python -m kvviz <command>`
  figures/      plotly figures from plain records (no Streamlit)
  ui            the one Streamlit adapter (cached model, sidebar model picker, shared widgets)

Only kvviz.ui imports streamlit; torch and transformers are imported only where a model runs.
`python -m kvviz --help` lists the command-line tools.
"""
