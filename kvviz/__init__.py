"""kvviz: a UI-free library for teaching and reasoning about the transformer KV cache.

Modules (each has one job): models (load GPT-2 + tokenizer), stepping (prefill + decode one token at a time
over transformers' DynamicCache), ops (exact op/FLOP counts with vs without cache), memory (KV-cache bytes,
presets, config import, what-fits solver), bench (cached vs uncached timing), figures (plotly figures),
internals (layouts, prefix reuse, windows, paging, quantization), ui (the one Streamlit adapter).
"""
