"""transformers' own config class for a config.json: whether the installed transformers knows its model_type, the
layer types its classes accept, and the config object itself, built the way `AutoConfig` builds it
(`CONFIG_MAPPING[model_type](**config)`), so every field the file leaves out takes that architecture's default.

transformers (and through it torch) is imported at this module's top. A config without a model_type is read as
written without it, so kvviz.memory.config_import imports this module only when a config names a model_type (the
memory page's form and the pure tests read configs without one). The construction runs bounded in memory and time
(kvviz.memory.config_build), and the layer-type rule is kvviz.memory.config_json.check_layer_types.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.configuration_utils import (
    _LEGACY_LAYER_TYPE_REMAP,
    ALLOWED_ATTN_LAYER_TYPES,
    ALLOWED_MLP_LAYER_TYPES,
    PreTrainedConfig,
)
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
from transformers.utils import logging

from kvviz.i18n import _
from kvviz.memory import MemoryInputError, config_build, short_repr

__all__ = ["TRANSFORMERS_LAYER_TYPES", "known_model_type", "sub_configs", "transformers_config"]

# What transformers' config classes accept as layer types: today's names, and the old ones they remap (mamba,
# attention ...); nemotron_h's "mlp" blocks too (a layer without attention: DynamicCache's "dummy")
TRANSFORMERS_LAYER_TYPES: tuple[str, ...] = (
    *ALLOWED_ATTN_LAYER_TYPES,
    *ALLOWED_MLP_LAYER_TYPES,
    *_LEGACY_LAYER_TYPE_REMAP,
    "mlp",
)


def known_model_type(model_type: str) -> bool:
    return model_type in CONFIG_MAPPING


def sub_configs(model_type: str) -> dict[str, Any]:
    return dict(getattr(CONFIG_MAPPING[model_type], "sub_configs", None) or {})


def transformers_config(raw: dict[str, Any]) -> Any | None:
    """transformers' own config object for this config.json, or None when its model_type is unknown/absent."""
    model_type = raw.get("model_type")
    if not isinstance(model_type, str):
        return None
    if model_type not in CONFIG_MAPPING:
        return None
    _check_torch_dtype(raw)
    cls = CONFIG_MAPPING[model_type]
    for value in raw.values():  # import the sub-configs' modules here, once, not in every child
        sub_type = value.get("model_type") if isinstance(value, dict) else None
        if isinstance(sub_type, str) and sub_type in CONFIG_MAPPING:
            CONFIG_MAPPING[sub_type]
    # save_pretrained writes inf/nan as {"__float__": "Infinity"} (Mamba-2's time_step_limit); from_pretrained decodes
    # them with this classmethod before the class sees them, and so does kvviz
    raw = PreTrainedConfig._decode_special_floats(raw)
    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        outcome = config_build.build_bounded(cls, raw)
    finally:
        logging.set_verbosity(verbosity)
    kind, payload = outcome
    if kind == "ok":
        return payload
    if kind == "deep":
        raise MemoryInputError(_("this config is nested too deeply"))
    if kind == "memory":
        raise MemoryInputError(
            _(
                "building transformers' {model_type} config from this file needed more than "
                "{mib:,} MiB of memory; a real config needs a few: check its counts and lists"
            ).format(model_type=model_type, mib=config_build.BUILD_MEMORY_BYTES // 2**20)
        )
    if kind == "time":
        raise MemoryInputError(
            _(
                "building transformers' {model_type} config from this file took more than {s:g} s "
                "(a real config takes milliseconds): check its counts and lists"
            ).format(model_type=model_type, s=config_build.BUILD_SECONDS)
        )
    # transformers' validators raise many types; the user gets its whole reason, one line
    raise MemoryInputError(
        _("transformers' {model_type} config class refuses this config: {reason}").format(
            model_type=model_type, reason=payload
        )
    )


def _check_torch_dtype(raw: dict[str, Any]) -> None:
    """transformers' config classes look a dtype string up as `getattr(torch, name)`: refuse one that names no
    torch dtype here, in a sentence, instead of quoting "module 'torch' has no attribute ..."."""
    for cfg in (raw, raw.get("text_config") if isinstance(raw.get("text_config"), dict) else {}):
        for key in ("torch_dtype", "dtype"):
            value = cfg.get(key)
            if isinstance(value, str) and not isinstance(
                getattr(torch, value, None) if value.isidentifier() else None, torch.dtype
            ):
                raise MemoryInputError(
                    _(
                        "{key} {value} is not a torch dtype name (e.g. bfloat16, float16, "
                        "float32): correct it, or remove it (transformers then loads float32)"
                    ).format(key=key, value=short_repr(value))
                )
