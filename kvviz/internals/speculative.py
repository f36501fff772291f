"""Speculative decoding's rollback, its settings: the default prompt, the draft length, the tokens to generate, the
draft's temperature, and the error in the reader's words. Torch-free: a page imports it at its top; the run (draft,
verify, crop) is kvviz.internals.lab.speculative.

What drives acceptance: how often the draft's guess is the verifier's greedy choice. Text both models can
predict (a line repeated from the prompt: both bundled models learned to copy) is accepted in long runs; free
invention (a new line of verse) is where two small models disagree, and a hotter sampled draft disagrees more.
"""

from __future__ import annotations

from kvviz.i18n import N_
from kvviz.inputs.prompt_rules import FloatSetting, IntSetting
from kvviz.internals.records import SpecRound, SpecRun

__all__ = [
    "DEFAULT_PROMPT",
    "DRAFT_K",
    "DRAFT_TEMPERATURE",
    "MAX_K",
    "NEW_TOKENS",
    "MAX_NEW",
    "MAX_TEMPERATURE",
    "MIN_TEMPERATURE",
    "SpecRound",
    "SpecRun",
    "SpeculativeError",
]

# The page's default prompt (bench/timed_comparisons.py times it too). The default pairing and prompt were
# measured (greedy, k = 4, 24 tokens): with the bundled GPT-2 verifying and the bundled GQA Llama drafting, this
# prompt accepts 64% of the drafts and needs 8 verifier passes for 24 tokens: the repeated line is accepted in runs
# of four, the invented line after it is where the two disagree and rows are cropped. The same model sampled at
# 0.7 accepted 9% on "ROMEO: But soft, what light".
DEFAULT_PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?\n\nJULIET:\nBut soft,"
MAX_K = 8
MAX_NEW = 64
DRAFT_K = IntSetting(N_("draft length k"), 1, MAX_K, default=4)  # the page's inputs
NEW_TOKENS = IntSetting(N_("tokens to generate"), 1, MAX_NEW, default=24)
MIN_TEMPERATURE, MAX_TEMPERATURE = 0.05, 5.0
DRAFT_TEMPERATURE = FloatSetting(N_("draft temperature"), MIN_TEMPERATURE, MAX_TEMPERATURE, default=0.7, step=0.05)


class SpeculativeError(ValueError):
    """Settings outside sensible bounds; the message says what is allowed."""
