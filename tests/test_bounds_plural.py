"""One token is "1 token": the counts a reader is told about use the singular, and a setting's bounds refuse an
empty box by name (kvviz.inputs.prompt_rules)."""

from __future__ import annotations

import pytest

from kvviz.inputs.prompt_rules import FloatSetting, IntSetting, PromptError, check_prompt, shorten_by


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


def test_one_token_still_to_generate_and_a_one_token_prompt_are_singular():
    with pytest.raises(PromptError, match=r"minus the 1 token still to generate\."):
        check_prompt(_Tokenizer(), "a b c", 3, new_tokens=1)
    with pytest.raises(PromptError, match=r"minus the 2 tokens still to generate\."):
        check_prompt(_Tokenizer(), "a b c", 3, new_tokens=2)
    with pytest.raises(PromptError, match=r"The prompt is 1 token, but"):
        check_prompt(_Tokenizer(), "a", 1, new_tokens=1)


def test_a_float_setting_refuses_none_and_its_bounds_by_name():
    t = FloatSetting("draft temperature", 0.05, 5.0, default=0.7, step=0.05)
    with pytest.raises(ValueError, match="draft temperature must be a number from 0.05 to 5: the box was empty"):
        t.check(None)
    with pytest.raises(ValueError, match="draft temperature must be between 0.05 and 5"):
        t.check(5.5)
    assert t.check(1) == 1.0
    with pytest.raises(ValueError):
        FloatSetting("x", 0.1, 1.0, default=2.0, step=0.1)


def test_a_published_figure_for_one_token_says_token():
    from kvviz import claims

    one = [c.explanation for c in claims.published_figure_checks() if c.figure.context_len == 1]
    assert one and all(" x 1 token x batch" in text for text in one)
