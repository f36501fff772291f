"""Where a pretrained model's files are: the local Hugging Face cache, or the hub if it answers at once.

The hub is never waited on: one 2-second TCP connect says whether it is reachable, instead of transformers'
30 s of retries when offline. Torch-free (huggingface_hub only).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

HUB_HOST = "huggingface.co"
HUB_PROBE_TIMEOUT_S = 2.0


def hub_reachable(timeout_s: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """One TCP connect to the hub, with a short timeout; False when offline or HF_HUB_OFFLINE is set."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes"}:
        return False
    try:
        with socket.create_connection((HUB_HOST, 443), timeout=timeout_s):
            return True
    except OSError:
        return False


def cached_snapshot(name: str) -> Path | None:
    """The folder of `name` in the local Hugging Face cache (models--NAME/snapshots/<commit>/), or None."""
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(name, "config.json")
    except ValueError:  # not a valid repo id (HFValidationError is a ValueError)
        return None
    return Path(found).parent if isinstance(found, str) else None
