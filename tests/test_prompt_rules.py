"""The one prompt rule and the bounded-number validators (kvviz/inputs/prompt_rules.py), with the bundled tokenizer."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from kvviz.inputs.prompt_rules import PromptError, check_float_in_range, check_int_in_range, check_prompt


@pytest.mark.slow
def test_prompt_rules_does_not_import_torch():
    code = "import sys, kvviz.inputs.prompt_rules; print('torch' in sys.modules, 'transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


@pytest.mark.model
def test_check_prompt_returns_the_tokenizers_ids(bundled):
    tok = bundled.tokenizer
    assert check_prompt(tok, "ROMEO: hello", 1024) == list(tok("ROMEO: hello").input_ids)


@pytest.mark.model
@pytest.mark.parametrize("text", [None, "", "   ", "\n\t \n"])
def test_check_prompt_refuses_empty(bundled, text):
    with pytest.raises(PromptError, match="empty"):
        check_prompt(bundled.tokenizer, text, 1024)


@pytest.mark.model
def test_check_prompt_refuses_non_text(bundled):
    with pytest.raises(PromptError, match="must be text"):
        check_prompt(bundled.tokenizer, 123, 1024)


@pytest.mark.model
def test_check_prompt_refuses_too_long_never_truncates(bundled):
    tok = bundled.tokenizer
    text = "to be or not " * 10
    n = len(tok(text).input_ids)
    assert check_prompt(tok, text, n) == list(tok(text).input_ids)  # exactly at the limit: accepted whole
    with pytest.raises(PromptError, match=rf"is {n} tokens.*only {n - 1} positions.*at least 1 token\."):  # singular
        check_prompt(tok, text, n - 1)
    # Room reserved for generation counts against the prompt, and the message says so.
    with pytest.raises(PromptError, match=r"minus the 5 tokens still to generate.*at least 5 tokens"):
        check_prompt(tok, text, n, new_tokens=5, what="prompt")


@pytest.mark.model
def test_check_prompt_raises_the_callers_error_class(bundled):
    class MyError(ValueError):
        pass

    with pytest.raises(MyError, match="The prompt B is empty"):
        check_prompt(bundled.tokenizer, "", 10, what="prompt B", error=MyError)


def test_check_int_in_range_accepts_whole_numbers():
    assert check_int_in_range(3, 1, 5, "n") == 3
    assert check_int_in_range(np.int64(5), 1, 5, "n") == 5
    assert check_int_in_range(4.0, 1, 5, "n") == 4
    assert type(check_int_in_range(np.int64(2), 1, 5, "n")) is int


@pytest.mark.parametrize(
    "value, message",
    [
        (0, r"block size must be between 1 and 64 \(got 0\)"),
        (65, r"block size must be between 1 and 64 \(got 65\)"),
        (2.5, "whole number"),
        (math.nan, "whole number"),
        (math.inf, "whole number"),
        (True, "whole number"),
        ("7", "whole number"),
        (None, "whole number"),
    ],
)
def test_check_int_in_range_refuses(value, message):
    with pytest.raises(ValueError, match=message):
        check_int_in_range(value, 1, 64, "block size")


@pytest.mark.parametrize("value", [0.01, 5.5, math.nan, math.inf, "1", None, False])
def test_check_float_in_range_refuses(value):
    with pytest.raises(ValueError, match="temperature must be between 0.05 and 5"):
        check_float_in_range(value, 0.05, 5.0, "temperature")
    assert check_float_in_range(0.05, 0.05, 5.0, "temperature") == 0.05
