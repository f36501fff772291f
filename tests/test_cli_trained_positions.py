"""The CLI half: `python -m kvviz memory` warns about a context past a preset's trained
positions, with the rule and the words the memory page uses (kvviz.memory.presets.past_trained_positions)."""

from __future__ import annotations

import json

import pytest

from kvviz.__main__ import main
from kvviz.memory.presets import get_preset, past_trained_positions
from support.pages import app_test


def test_memory_cli_warns_past_the_trained_positions(capsys):
    assert get_preset("llama-3-8b").max_context == 8192
    warning = past_trained_positions("llama-3-8b", 131072)
    assert warning is not None and "131,072 tokens" in warning and "8,192 tokens" in warning
    assert main(["memory", "--preset", "llama-3-8b", "--context", "131072"]) == 0
    out = capsys.readouterr().out
    assert f"warning      {warning}" in out
    assert main(["memory", "--preset", "llama-3-8b", "--context", "131072", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["warnings"][0] == warning and data["total_bytes"] == 32 * 2 * 8 * 128 * 2 * 131072


def test_memory_cli_is_quiet_within_the_trained_positions(capsys):
    assert past_trained_positions("llama-3-8b", 8192) is None and past_trained_positions("no-such-model", 10**6) is None
    assert main(["memory", "--preset", "llama-3-8b", "--context", "8192"]) == 0
    assert "not trained to run that long" not in capsys.readouterr().out


@pytest.mark.app
def test_memory_page_warns_with_the_same_words(fresh_streamlit_caches):
    """The page's warning is the CLI's: one rule, one sentence."""

    at = app_test("pages/memory_budget.py", query={"mem_preset": "llama-3-8b", "mem_context": "131072"})
    at.run()
    assert not at.exception
    assert past_trained_positions("llama-3-8b", 131072) in [w.value for w in at.warning]
