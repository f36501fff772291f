"""Library figures only tests need, computed through the functions the app itself calls."""

from __future__ import annotations

import re
from typing import Any

from kvviz import memory
from kvviz.teaching import glossary


def kvviz_total_bytes(imported: Any, context_len: int, batch: int = 1, encoder_len: int = 0) -> int:
    """kvviz's figure for an imported config (a config_import.ImportedConfig) as the memory page and
    `python -m kvviz memory` compute it: self-attention, plus cross-attention for an encoder-decoder."""
    if imported.cross_attention is None:
        return memory.budget(imported.config, context_len, batch).total_bytes
    return memory.encoder_decoder_budget(
        imported.config, imported.cross_attention, context_len, batch, encoder_len
    ).total_bytes


def term_named(name: str) -> glossary.Term:
    """The glossary term whose English name is exactly `name`."""
    return next(t for t in glossary.TERMS if t.name == name)


def english_names(term: glossary.Term) -> list[str]:
    """Every English name a term goes by: its name, the parts of a combined name ("MHA, GQA, MQA" -> MHA, GQA,
    MQA; a parenthesis aside), and its other names."""
    bare = re.sub(r"\s*\([^)]*\)", "", term.name)
    parts = [p.strip() for p in bare.split(",")] if "," in bare else []
    return [term.name, *parts, *term.also]
