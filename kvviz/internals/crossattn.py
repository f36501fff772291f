"""Self-attention vs cross-attention caches in an encoder-decoder model, its settings: the source length and decode
steps a page offers (the tiny BART's positions bound them), its vocabulary, and the error in the reader's words.
Torch-free: a page imports it at its top; the run (a tiny random BART, both caches inspected each step) is
kvviz.internals.lab.crossattn.
"""

from __future__ import annotations

from kvviz.i18n import N_
from kvviz.inputs.prompt_rules import IntSetting
from kvviz.internals.records import CrossAttnRun, CrossStep

__all__ = [
    "DECODE_STEPS",
    "MAX_SOURCE_LEN",
    "MAX_STEPS",
    "SOURCE_LEN",
    "VOCAB_SIZE",
    "CrossAttnError",
    "CrossAttnRun",
    "CrossStep",
]

MAX_SOURCE_LEN = 64
MAX_STEPS = 48
SOURCE_LEN = IntSetting(N_("source length (tokens)"), 1, MAX_SOURCE_LEN, default=12)  # the page's inputs
DECODE_STEPS = IntSetting(N_("decode steps"), 1, MAX_STEPS, default=8)
VOCAB_SIZE = 64


class CrossAttnError(ValueError):
    """Bad demo settings; the message gives the allowed range."""
