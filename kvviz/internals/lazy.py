"""torch's inference mode for the functions that run a model, with torch imported when one is called.

Pages import an idea's module for its limits, prompts and texts; a decorator written as `@torch.inference_mode()`
would import torch as the module loads, so the modules decorate with this one instead.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def inference_mode(fn: Callable[P, R]) -> Callable[P, R]:
    """`fn` run under `torch.inference_mode()` (no autograd records, tensors it makes are inference tensors)."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        import torch

        with torch.inference_mode():
            return fn(*args, **kwargs)

    return run
