"""What one model load would cost, read from config.json and the safetensors headers BEFORE any weights.

A shared classroom server caps each load (kvviz.model.shared_mode): a student must not be able to make the
teacher's machine read gpt2-xl into memory for everyone. The cap is checked twice, both times without
reading a single weight byte:

1. config.json: a GPT-2's parameter count follows from its shape (`gpt2_param_count`, exact for the
   tied-embedding GPT2LMHeadModel that kvviz loads);
2. the safetensors headers: each file starts with an 8-byte little-endian length and a JSON table of every
   tensor's dtype and shape, so the stored element count is exact even if config.json lies.

The loader keeps every weight in float32, so the memory a load takes is 4 bytes per parameter.
UI-free and torch-free.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvviz.i18n import _
from kvviz.inputs import echo
from kvviz.memory.config_fields import config_field

FLOAT32_BYTES = 4  # kvviz loads every model in float32 (kvviz.model.loading)
MAX_HEADER_BYTES = 8 * 2**20  # refused before reading: a GPT-2's header is 15-60 KB (the format allows 100 MB,
# and an 85 MB header costs 8 s and ~1 GB to parse)
TORCH_DTYPES = ("float32", "float16", "bfloat16", "float64", "auto")  # config.json's torch_dtype / dtype values
SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"  # sharded checkpoints: weight_map -> shard file names

# GPT2Config's defaults (the 124M gpt2 shape): a config.json may leave any of them out.
GPT2_CONFIG_DEFAULTS: dict[str, Any] = {
    "n_layer": 12,
    "n_embd": 768,
    "n_positions": 1024,
    "vocab_size": 50257,
    "n_inner": None,
    "tie_word_embeddings": True,
}


class LoadTooLarge(ValueError):
    """The load would exceed the cap; the message states the cost and the cap."""


@dataclass(frozen=True)
class LoadCap:
    """The most one load may cost on this server."""

    max_params: int

    @property
    def max_float32_bytes(self) -> int:
        return self.max_params * FLOAT32_BYTES

    def describe(self) -> str:
        """One line for the UI and docs/deploying.md, e.g. '200,000,000 parameters (0.75 GiB of float32 weights)'."""
        return _("{params:,} parameters ({gib:.2f} GiB of float32 weights)").format(
            params=self.max_params, gib=self.max_float32_bytes / 2**30
        )


def gpt2_param_count(
    n_layer: int,
    n_embd: int,
    n_positions: int,
    vocab_size: int,
    n_inner: int | None = None,
    tie_word_embeddings: bool = True,
) -> int:
    """Parameters of a GPT2LMHeadModel: token + position embeddings, n_layer blocks, final LayerNorm.

    One block: ln_1 (2d), c_attn (d x 3d + 3d), attn c_proj (d x d + d), ln_2 (2d), c_fc (d x inner + inner),
    mlp c_proj (inner x d + d), with inner = 4d unless n_inner says otherwise. The LM head shares the token
    embedding's matrix when tied (GPT-2's checkpoints are).
    """
    d = n_embd
    inner = n_inner or 4 * d
    per_block = 2 * d + (3 * d * d + 3 * d) + (d * d + d) + 2 * d + (d * inner + inner) + (inner * d + d)
    embeddings = vocab_size * d + n_positions * d
    lm_head = 0 if tie_word_embeddings else vocab_size * d
    return embeddings + n_layer * per_block + 2 * d + lm_head


def read_config(folder: Path) -> dict[str, Any]:
    """config.json as a dict; ValueError with a plain message when it is missing or not a JSON object."""
    path = folder / "config.json"
    if not path.is_file():
        raise ValueError(_("the folder has no config.json: it is not a saved model folder"))
    try:
        if path.stat().st_size > MAX_HEADER_BYTES:
            raise ValueError(
                _("its config.json is {size:,} bytes: far too large for a model config").format(
                    size=path.stat().st_size
                )
            )
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(
            _("its config.json is not valid JSON ({error})").format(error=exc.__class__.__name__)
        ) from None
    except ValueError as exc:  # Python's 4,300-digit limit on a number, or the size above (which names config.json)
        raise ValueError(
            str(exc) if "config.json" in str(exc) else _("its config.json holds a number with thousands of digits")
        ) from None
    if not isinstance(cfg, dict):
        raise ValueError(_("its config.json is not a JSON object"))
    return cfg


def params_from_config(cfg: dict[str, Any]) -> int:
    """A GPT-2 config's parameter count (missing keys take GPT2Config's defaults)."""
    values = {key: _gpt2_value(cfg, key, default) for key, default in GPT2_CONFIG_DEFAULTS.items()}
    for key in ("n_layer", "n_embd", "n_positions", "vocab_size"):
        if not isinstance(values[key], int) or isinstance(values[key], bool) or values[key] <= 0:
            raise ValueError(
                _("its config.json has no usable {key} (got {value})").format(key=key, value=_short(values[key]))
            )
    if values["n_inner"] is not None and (not isinstance(values["n_inner"], int) or values["n_inner"] <= 0):
        raise ValueError(
            _("its config.json has no usable {key} (got {value})").format(
                key="n_inner", value=_short(values["n_inner"])
            )
        )
    n_head = _gpt2_value(cfg, "n_head", 12)
    if not isinstance(n_head, int) or isinstance(n_head, bool) or n_head <= 0 or values["n_embd"] % n_head:
        raise ValueError(
            _(
                "its config.json needs n_head, a positive whole number dividing n_embd = {n_embd:,} (got {value})"
            ).format(n_embd=values["n_embd"], value=_short(n_head))
        )
    for key in ("torch_dtype", "dtype"):
        if key in cfg and cfg[key] is not None and cfg[key] not in TORCH_DTYPES:
            raise ValueError(
                _("its config.json gives {key} = {value}; use one of {choices}").format(
                    key=key, value=_short(cfg[key]), choices=", ".join(TORCH_DTYPES)
                )
            )
    return gpt2_param_count(**values)


# GPT2Config's argument -> the dimension config.json may name it by (kvviz.memory.config_fields.CONFIG_FIELDS)
_GPT2_DIMENSIONS = {
    "n_layer": "n_layer",
    "n_head": "n_head",
    "n_embd": "hidden",
    "n_positions": "max_context",
    "vocab_size": "vocab_size",
    "n_inner": "d_ff",
}


def _gpt2_value(cfg: dict[str, Any], key: str, default: Any) -> Any:
    """GPT2Config's argument `key` as config.json gives it, under any of its dimension's names; else the value
    written under `key` itself (null included), else GPT2Config's default."""
    found = config_field(cfg, _GPT2_DIMENSIONS[key]) if key in _GPT2_DIMENSIONS else None
    return found[1] if found is not None else cfg.get(key, default)


def _short(value: Any, max_chars: int = 40) -> str:
    """A config value as a message quotes it, cut short (a 1 MB string is never echoed)."""
    return echo.one_line(repr(value), max_chars)


def safetensors_files(folder: Path) -> list[Path]:
    """The weight files transformers would read: model.safetensors, or the shards an index names."""
    if (folder / SAFETENSORS_FILE).is_file():
        return [folder / SAFETENSORS_FILE]
    index = folder / SAFETENSORS_INDEX
    if not index.is_file():
        raise ValueError(_("the folder has no model.safetensors (kvviz loads safetensors weights only)"))
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
        names = sorted(set(weight_map.values()))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, AttributeError):
        raise ValueError(_("its {index} is not a valid index").format(index=SAFETENSORS_INDEX)) from None
    files = []
    for name in names:
        if not isinstance(name, str) or Path(name).name != name or not (folder / name).is_file():
            raise ValueError(
                _("its {index} names a shard that is not a file in the folder").format(index=SAFETENSORS_INDEX)
            )
        files.append(folder / name)
    return files


def safetensors_header(path: Path) -> dict[str, dict[str, Any]]:
    """A safetensors file's tensor table ({name: {"dtype", "shape", ...}}), read from its header alone."""
    with open(path, "rb") as fh:
        raw_len = fh.read(8)
        if len(raw_len) != 8:
            raise ValueError(_("{file} is too short to be a safetensors file").format(file=path.name))
        (header_len,) = struct.unpack("<Q", raw_len)
        if header_len > MAX_HEADER_BYTES:
            raise ValueError(
                _(
                    "{file} declares a {size:,}-byte header, more than the {limit_mib} MiB kvviz reads "
                    "(a GPT-2's is under 100 KB)"
                ).format(file=path.name, size=header_len, limit_mib=MAX_HEADER_BYTES // 2**20)
            )
        try:
            header = json.loads(fh.read(header_len))
            tensors = {name: t for name, t in header.items() if name != "__metadata__"}
        except (UnicodeDecodeError, json.JSONDecodeError, AttributeError):
            raise ValueError(_("{file} has no valid safetensors header").format(file=path.name)) from None
    for t in tensors.values():
        shape = t.get("shape") if isinstance(t, dict) else None
        if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
            raise ValueError(_("{file} has a tensor with an invalid shape").format(file=path.name))
    return tensors


def stored_elements(path: Path) -> int:
    """Tensor elements stored in one safetensors file, from its header alone (no tensor data is read)."""
    return sum(math.prod(t["shape"]) for t in safetensors_header(path).values())


def check_folder(folder: Path, cap: LoadCap | None) -> int:
    """Refuse (LoadTooLarge) a model folder over the cap; returns the stored element count.

    Order matters: config.json first, so an over-size config is refused even where no weights are present;
    then the safetensors headers (exact, and a check on config.json). Raises ValueError for a folder that
    is not a GPT-2 safetensors model.
    """
    cfg = read_config(folder)
    if cfg.get("model_type") != "gpt2":
        raise ValueError(
            _("it is a {model_type} model; kvviz steps through GPT-2 models").format(
                model_type=_short(cfg.get("model_type"))
            )
        )
    from_config = params_from_config(cfg)  # checks the shape too: transformers would fail on it in raw words
    if cap is not None:
        refuse_over_cap(from_config, cap, _("its config.json"))
    stored = sum(stored_elements(path) for path in safetensors_files(folder))
    if stored == 0:  # transformers would build a GPT-2 with random weights and call it loaded
        raise ValueError(_("its safetensors file holds no tensors: there are no weights to load"))
    if cap is not None:
        refuse_over_cap(stored, cap, _("its safetensors header"))
    return stored


def refuse_over_cap(n_params: int, cap: LoadCap, where: str) -> None:
    if n_params > cap.max_params:
        raise LoadTooLarge(
            _(
                "the model is too large for this server: {where} says {params:,} parameters ({gib:.2f} GiB as "
                "float32); one load may take at most {cap}"
            ).format(where=where, params=n_params, gib=n_params * FLOAT32_BYTES / 2**30, cap=cap.describe())
        )
