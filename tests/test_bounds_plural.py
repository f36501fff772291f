"""One token is "1 token": the counts a reader is told about use the singular, and a setting's bounds refuse an
empty box by name (kvviz.inputs.prompt_rules)."""
from __future__ import annotations

import pytest

from kvviz.inputs.prompt_rules import IntSetting, PromptError, check_prompt, shorten_by


class _Tokenizer:
    def __call__(self, text):
        return type("Ids", (), {"input_ids": text.split()})()


def test_one_token_is_singular():
    assert shorten_by(1) == "Shorten it by at least 1 token."
    assert shorten_by(3) == "Shorten it by at least 3 tokens."
    with pytest.raises(PromptError, match=r"Shorten it by at least 1 token\.$"):
        check_prompt(_Tokenizer(), "a b c", 2)


def test_a_setting_refuses_none_and_its_bounds_by_name():
    s = IntSetting("block size", 1, 8, default=4)
    with pytest.raises(ValueError, match="block size must be a whole number from 1 to 8: the box was empty"):
        s.check(None)
    with pytest.raises(ValueError, match="block size must be between 1 and 8"):
        s.check(9)
    assert s.check(8.0) == 8 and s.up_to(3).default == 3
    with pytest.raises(ValueError):
        IntSetting("x", 1, 2, default=5)
