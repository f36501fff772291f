"""Stop a long forward pass between two transformer blocks: a check called before every block of a shared model.

Streamlit ends a run (a newer rerun, a closed tab) by raising inside the run's thread when the run next calls
Streamlit; a forward pass makes no such call for seconds (1,000 tokens through GPT-2 124M). A check that calls
Streamlit (a status line's write) before every block gives the pass those stopping points. The stage's race and the
benchmark both use it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

import torch


@contextlib.contextmanager
def checks_inside_passes(model: torch.nn.Module, check: Callable[[], None]) -> Iterator[None]:
    """Call check() before every transformer block of `model`, in this thread only, for the `with` body.

    A long uncached pass (1,000 tokens through GPT-2 124M: seconds) can then be stopped mid-pass. The model is
    shared by every session: the hooks act only in the thread that set them and are removed on the way out.
    """
    owner = threading.get_ident()

    def hook(module, args):  # noqa: ANN001 - torch's forward pre-hook signature
        if threading.get_ident() == owner:
            check()

    blocks = getattr(getattr(model, "transformer", None), "h", None) or getattr(
        getattr(model, "model", None), "layers", []
    )
    handles = [block.register_forward_pre_hook(hook) for block in blocks]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
