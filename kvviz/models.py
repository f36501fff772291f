"""Load a GPT-2 model + tokenizer + a description of what was loaded.

Three kinds of model, one loader (`load_model(spec)`):

    "bundled"            the small GPT-2 trained by `python -m kvviz.train` on Tiny Shakespeare (the default)
    "gpt2", "distilgpt2" pretrained GPT-2 weights by name, from the Hugging Face cache (or the hub, if online)
    "/path/to/folder"    a local folder holding config.json + model.safetensors + tokenizer files
    "random:gpt2"        a GPT-2 architecture with random weights (realistic sizes and timings, gibberish text)

Start-up: torch and transformers take seconds to import, so they are imported inside the loaders, and
`bundled_info()` describes the bundled model from its config.json and safetensors header alone. The app's
first page renders from that while the real import runs in a background thread (kvviz.ui).

Safety: safetensors only (`use_safetensors=True`), never `trust_remote_code`. The hub is never waited on:
if the name is not in the local cache we probe the hub with a 2-second TCP connect and give up with a
clear message when it is unreachable, instead of transformers' 30 s of retries.
"""
from __future__ import annotations

import functools
import json
import os
import socket
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported for real inside the loaders (slow imports; see the module docstring)
    from transformers import GPT2LMHeadModel, GPT2TokenizerFast

BUNDLED_DIR = Path(__file__).resolve().parent / "assets" / "bundled"
BUNDLED = "bundled"
RANDOM_PREFIX = "random:"
HUB_HOST = "huggingface.co"
HUB_PROBE_TIMEOUT_S = 2.0

# Shapes of the public GPT-2 checkpoints (from their config.json on the Hugging Face hub), used for
# random-weight architectures. n_positions is 1024 for all of them.
GPT2_SHAPES: dict[str, dict[str, int]] = {
    "distilgpt2": {"n_layer": 6, "n_head": 12, "n_embd": 768},
    "gpt2": {"n_layer": 12, "n_head": 12, "n_embd": 768},
    "gpt2-medium": {"n_layer": 24, "n_head": 16, "n_embd": 1024},
    "gpt2-large": {"n_layer": 36, "n_head": 20, "n_embd": 1280},
    "gpt2-xl": {"n_layer": 48, "n_head": 25, "n_embd": 1600},
}
PRETRAINED_NAMES = tuple(GPT2_SHAPES) + tuple(f"openai-community/{n}" for n in GPT2_SHAPES if n != "distilgpt2")


class ModelLoadError(RuntimeError):
    """The model could not be loaded; the message says why and what to do, in plain words."""


@dataclass(frozen=True)
class ModelInfo:
    """What was loaded, in numbers a student can check against the cache tensors."""

    spec: str  # what the caller asked for, e.g. "bundled", "gpt2", "random:gpt2"
    kind: str  # "bundled" | "pretrained" | "random"
    label: str  # one line for the UI
    n_layer: int
    n_head: int
    n_kv_heads: int  # GPT-2 is plain multi-head attention: one K/V head per query head
    head_dim: int
    n_embd: int
    n_positions: int  # the context limit: GPT-2 has learned absolute positions 0..n_positions-1
    vocab_size: int
    n_params: int
    dtype: str  # e.g. "float32"
    attn_implementation: str
    weights_are_random: bool


@dataclass(frozen=True)
class LoadedModel:
    model: GPT2LMHeadModel  # shared across sessions: never mutate it, never leave hooks on it
    tokenizer: GPT2TokenizerFast
    info: ModelInfo


def _describe(spec: str, kind: str, label: str, model: GPT2LMHeadModel) -> ModelInfo:
    cfg = model.config
    return ModelInfo(
        spec=spec,
        kind=kind,
        label=label,
        n_layer=cfg.n_layer,
        n_head=cfg.n_head,
        n_kv_heads=cfg.n_head,
        head_dim=cfg.n_embd // cfg.n_head,
        n_embd=cfg.n_embd,
        n_positions=cfg.n_positions,
        vocab_size=cfg.vocab_size,
        n_params=sum(p.numel() for p in model.parameters()),
        dtype=str(next(model.parameters()).dtype).removeprefix("torch."),
        attn_implementation=cfg._attn_implementation,
        weights_are_random=(kind == "random"),
    )


def _from_folder(folder: Path, attn_implementation: str, local_files_only: bool = True) -> tuple[Any, Any]:
    import torch
    from transformers import GPT2LMHeadModel, GPT2TokenizerFast

    model = GPT2LMHeadModel.from_pretrained(
        folder,
        use_safetensors=True,
        trust_remote_code=False,
        local_files_only=local_files_only,
        attn_implementation=attn_implementation,
        dtype=torch.float32,
    )
    tokenizer = GPT2TokenizerFast.from_pretrained(folder, local_files_only=local_files_only)
    return model.eval(), tokenizer


def _bundled_label(n_layer: int, n_head: int, head_dim: int, n_positions: int) -> str:
    return (
        f"Bundled Tiny-Shakespeare GPT-2 ({n_layer} layers x {n_head} heads, "
        f"head_dim {head_dim}, {n_positions} positions)"
    )


@functools.lru_cache(maxsize=4)
def bundled_info(attn_implementation: str = "eager") -> ModelInfo:
    """The bundled model's ModelInfo without importing torch: config.json plus the safetensors header
    (8-byte little-endian length, then JSON with each tensor's dtype and shape). Equal to
    load_bundled().info (tested)."""
    cfg = json.loads((BUNDLED_DIR / "config.json").read_text(encoding="utf-8"))
    with open(BUNDLED_DIR / "model.safetensors", "rb") as fh:
        header = json.loads(fh.read(struct.unpack("<Q", fh.read(8))[0]))
    tensors = [t for name, t in header.items() if name != "__metadata__"]
    n_params = sum(functools.reduce(lambda a, b: a * b, t["shape"], 1) for t in tensors)
    dtypes = {t["dtype"] for t in tensors}
    n_layer, n_head, n_embd, n_positions = cfg["n_layer"], cfg["n_head"], cfg["n_embd"], cfg["n_positions"]
    return ModelInfo(
        spec=BUNDLED, kind="bundled", label=_bundled_label(n_layer, n_head, n_embd // n_head, n_positions),
        n_layer=n_layer, n_head=n_head, n_kv_heads=n_head, head_dim=n_embd // n_head, n_embd=n_embd,
        n_positions=n_positions, vocab_size=cfg["vocab_size"], n_params=n_params,
        dtype="float32" if dtypes == {"F32"} else ",".join(sorted(dtypes)),
        attn_implementation=attn_implementation, weights_are_random=False,
    )


def load_bundled(attn_implementation: str = "eager") -> LoadedModel:
    if not (BUNDLED_DIR / "model.safetensors").is_file():
        raise ModelLoadError(
            f"The bundled model is missing from {BUNDLED_DIR}. Re-create it with "
            "`python -m kvviz.train --text ../shared/data/tinyshakespeare.txt`."
        )
    model, tokenizer = _from_folder(BUNDLED_DIR, attn_implementation)
    cfg = model.config
    label = _bundled_label(cfg.n_layer, cfg.n_head, cfg.n_embd // cfg.n_head, cfg.n_positions)
    return LoadedModel(model, tokenizer, _describe(BUNDLED, "bundled", label, model))


def load_random(arch: str, attn_implementation: str = "eager", seed: int = 0) -> LoadedModel:
    """A GPT-2 architecture with random weights. Timings and cache sizes are real; the text is not."""
    if arch not in GPT2_SHAPES:
        raise ModelLoadError(f"Unknown GPT-2 architecture {arch!r}; choose one of {', '.join(GPT2_SHAPES)}.")
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

    torch.manual_seed(seed)
    config = GPT2Config(**GPT2_SHAPES[arch], n_positions=1024, vocab_size=50257)
    config._attn_implementation = attn_implementation
    model = GPT2LMHeadModel(config).eval()
    # Any GPT-2 byte-level tokenizer yields ids < 50257; the bundled one is always at hand offline.
    tokenizer = GPT2TokenizerFast.from_pretrained(BUNDLED_DIR, local_files_only=True)
    label = f"{arch} shape with RANDOM weights (real sizes and timings; the text is gibberish)"
    return LoadedModel(model, tokenizer, _describe(RANDOM_PREFIX + arch, "random", label, model))


def hub_reachable(timeout_s: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """One TCP connect to the hub, with a short timeout; False when offline or HF_HUB_OFFLINE is set."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes"}:
        return False
    try:
        with socket.create_connection((HUB_HOST, 443), timeout=timeout_s):
            return True
    except OSError:
        return False


def load_pretrained(name: str, attn_implementation: str = "eager") -> LoadedModel:
    """Pretrained GPT-2 weights: a local folder, else the HF cache, else the hub if it answers quickly."""
    folder = Path(name).expanduser()
    if folder.is_dir():
        if not (folder / "config.json").is_file():
            raise ModelLoadError(f"{folder} has no config.json: it is not a saved model folder.")
        try:
            model, tokenizer = _from_folder(folder, attn_implementation)
        except (OSError, ValueError) as exc:
            raise ModelLoadError(f"Could not load {folder} as a GPT-2 safetensors model: {exc}") from exc
        _require_gpt2(model, str(folder))
        return LoadedModel(model, tokenizer, _describe(name, "pretrained", f"{folder.name} (local folder)", model))
    try:
        model, tokenizer = _from_folder(Path(name), attn_implementation, local_files_only=True)
    except (OSError, ValueError):
        if not hub_reachable():
            raise ModelLoadError(
                f"{name!r} is not in the local Hugging Face cache and the hub is unreachable (offline). "
                "Staying on the bundled model. To use it, download it once on a connected machine "
                "(e.g. `hf download " + name + "`) or pass a local folder."
            ) from None
        try:
            model, tokenizer = _from_folder(Path(name), attn_implementation, local_files_only=False)
        except (OSError, ValueError) as exc:
            raise ModelLoadError(f"Could not download {name!r} as safetensors from the hub: {exc}") from exc
    _require_gpt2(model, name)
    return LoadedModel(model, tokenizer, _describe(name, "pretrained", f"{name} (pretrained weights)", model))


def _require_gpt2(model: Any, where: str) -> None:
    if getattr(model.config, "model_type", None) != "gpt2":
        raise ModelLoadError(f"{where} is a {model.config.model_type!r} model; kvviz steps through GPT-2 models.")


def load_model(spec: str = BUNDLED, attn_implementation: str = "eager") -> LoadedModel:
    """The one entry point. `spec`: "bundled", a pretrained name or folder, or "random:<arch>".

    attn_implementation: "eager" lets the stepping engine read attention weights; "sdpa" is faster for
    benchmarks. Raises ModelLoadError (never a transformers traceback) when the model cannot be loaded.
    """
    spec = (spec or BUNDLED).strip()
    if spec == BUNDLED:
        return load_bundled(attn_implementation)
    if spec.startswith(RANDOM_PREFIX):
        return load_random(spec.removeprefix(RANDOM_PREFIX), attn_implementation)
    return load_pretrained(spec, attn_implementation)


def load_model_or_bundled(spec: str, attn_implementation: str = "eager") -> tuple[LoadedModel, str | None]:
    """Like load_model, but falls back to the bundled model; returns (model, notice or None)."""
    try:
        return load_model(spec, attn_implementation), None
    except ModelLoadError as exc:
        if spec.strip() == BUNDLED:
            raise
        return load_bundled(attn_implementation), str(exc)
