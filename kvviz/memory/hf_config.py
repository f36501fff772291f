"""transformers' own config class for a config.json: whether the installed transformers knows its model_type, the
layer types its classes accept, and the config object itself, built the way `AutoConfig` builds it
(`CONFIG_MAPPING[model_type](**config)`), so every field the file leaves out takes that architecture's default.

The construction runs in a forked child process (Linux) with its own address-space limit (BUILD_MEMORY_BYTES above
what the process already maps) and time limit (BUILD_SECONDS): whatever a config class does with a value no check
before it foresaw (kvviz.memory.config_json), the server keeps its memory and the import is refused in one line.
transformers pulls in torch, so it is imported inside the functions here, only when a config is actually imported:
the memory page imports kvviz.memory.config_import without torch.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import sys
import time
from typing import Any, NoReturn

from kvviz.i18n import _
from kvviz.inputs import echo
from kvviz.memory import MemoryInputError, short_repr
from kvviz.memory.config_json import MAX_MESSAGE_CHARS

BUILD_MEMORY_BYTES = 512 * 2**20  # transformers' config construction: address space above what the process maps
BUILD_SECONDS = 15.0  # ... and wall time (a real config takes milliseconds; the margin is for a loaded 2-core CPU)
# Layer types kvviz counts when transformers' class is not there to read them (a config read as written)
_ATTENTION_TYPES = ("full_attention", "sliding_attention")
# What other configs call their layer list: a non-attention entry in any of these is never counted as attention
_OTHER_LAYER_LISTS = {
    "attn_type_list": (0,),
    "layers_block_type": ("mamba", "linear_attention", "mlp", "moe"),
    "block_types": ("recurrent",),
}


def known_model_type(model_type: str) -> bool:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING  # lazy: pulls in torch

    return model_type in CONFIG_MAPPING


def sub_configs(model_type: str) -> dict[str, Any]:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return dict(getattr(CONFIG_MAPPING[model_type], "sub_configs", None) or {})


def check_layer_types(cfg: dict[str, Any]) -> None:
    """Refuse, in one sentence naming it and its layer, a layer type transformers does not know (never counted as
    attention), and a layer list whose length disagrees with the layer count. A config whose model_type transformers
    does not know is read as written: a layer that is not attention is refused there too (kvviz cannot size its
    state without the model's class)."""
    types = cfg.get("layer_types")
    n_layer = cfg.get("num_hidden_layers")
    model_type = cfg.get("model_type")
    known = isinstance(model_type, str) and known_model_type(model_type)
    if isinstance(types, list):
        transformers_types: tuple[str, ...] = ()
        if isinstance(model_type, str):  # (without one, no transformers is imported: a plain dict is read as written)
            from transformers.configuration_utils import (  # lazy: torch
                _LEGACY_LAYER_TYPE_REMAP,
                ALLOWED_ATTN_LAYER_TYPES,
                ALLOWED_MLP_LAYER_TYPES,
            )

            # what its classes accept: today's names, and the old ones they remap (mamba, attention ...); nemotron_h's
            # "mlp" blocks too (a layer without attention: DynamicCache's "dummy")
            transformers_types = (*ALLOWED_ATTN_LAYER_TYPES, *ALLOWED_MLP_LAYER_TYPES, *_LEGACY_LAYER_TYPE_REMAP, "mlp")
        allowed = transformers_types if known else _ATTENTION_TYPES
        for i, layer_type in enumerate(types):
            if layer_type not in allowed:
                if layer_type in transformers_types:
                    raise MemoryInputError(
                        _(
                            "layer {layer} is a {type} layer, but model_type {model_type} is not one the installed "
                            "transformers knows, so kvviz cannot size its state; it is never counted as attention: use "
                            "the model_type of the transformers class that implements it"
                        ).format(layer=i, type=short_repr(layer_type), model_type=short_repr(model_type))
                    )
                raise MemoryInputError(
                    _(
                        "layer {layer} has the layer type {type}, which transformers does not know "
                        "(e.g. full_attention, sliding_attention, linear_attention); kvviz never "
                        "counts an unknown layer as attention"
                    ).format(layer=i, type=short_repr(layer_type))
                )
        if isinstance(n_layer, int) and not isinstance(n_layer, bool) and len(types) != n_layer:
            raise MemoryInputError(
                _("layer_types has {n:,} entries for {layers:,} layers: give one per layer, or remove it").format(
                    n=len(types), layers=n_layer
                )
            )
    if known:
        return
    for key, others in _OTHER_LAYER_LISTS.items():
        listed = cfg.get(key)
        if isinstance(listed, list) and any(x in others for x in listed):
            layer = next(i for i, x in enumerate(listed) if x in others)
            raise MemoryInputError(
                _(
                    "{key} makes layer {layer} something other than attention ({value}), and model_type {model_type} is "
                    "not one the installed transformers knows, so kvviz cannot size its state; it is never counted as "
                    "attention: use the model_type of the transformers class that implements it"
                ).format(key=key, layer=layer, value=short_repr(listed[layer]), model_type=short_repr(model_type))
            )


def transformers_config(raw: dict[str, Any]) -> Any | None:
    """transformers' own config object for this config.json, or None when its model_type is unknown/absent."""
    model_type = raw.get("model_type")
    if not isinstance(model_type, str):
        return None
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING  # lazy: pulls in torch
    from transformers.utils import logging

    if model_type not in CONFIG_MAPPING:
        return None
    from transformers.configuration_utils import PreTrainedConfig

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
        outcome = _build_bounded(cls, raw)
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
            ).format(model_type=model_type, mib=BUILD_MEMORY_BYTES // 2**20)
        )
    if kind == "time":
        raise MemoryInputError(
            _(
                "building transformers' {model_type} config from this file took more than {s:g} s "
                "(a real config takes milliseconds): check its counts and lists"
            ).format(model_type=model_type, s=BUILD_SECONDS)
        )
    # transformers' validators raise many types; the user gets its whole reason, one line
    raise MemoryInputError(
        _("transformers' {model_type} config class refuses this config: {reason}").format(
            model_type=model_type, reason=payload
        )
    )


def _construct(cls: Any, raw: dict[str, Any]) -> tuple[str, Any]:
    """("ok", config) | ("deep", None) | ("memory", None) | ("error", transformers' reason on one line)."""
    try:
        return "ok", cls(**raw)
    except RecursionError:
        return "deep", None
    except MemoryError:
        return "memory", None
    except echo.RAW_PYTHON_ERRORS as exc:  # the class's own code tripped on a value: Python's words say nothing
        return "error", _(
            "its values do not fit together ({error}); compare them with the model's published config.json"
        ).format(error=type(exc).__name__)
    except Exception as exc:  # noqa: BLE001 -- transformers' validators raise many types
        return "error", echo.one_line(exc, MAX_MESSAGE_CHARS) or type(exc).__name__


def _vm_size_bytes() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):
        return None


def _build_bounded(cls: Any, raw: dict[str, Any]) -> tuple[str, Any]:
    """transformers' config construction with a memory and time bound of its own.

    On Linux it runs in a forked child: the child caps its address space at what the process maps now plus
    BUILD_MEMORY_BYTES, builds the config, and sends it back pickled; the parent waits at most BUILD_SECONDS and
    kills the child past that. A Streamlit server shared by a class keeps its memory and its other sessions'
    time, whatever the config class does. Elsewhere (no fork) it runs in-process, bounded by the checks before it."""
    vm_size = _vm_size_bytes()
    if not (sys.platform.startswith("linux") and hasattr(os, "fork")) or vm_size is None:
        return _construct(cls, raw)
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # no process to spare (EAGAIN, ENOMEM): in-process, bounded by the checks before it
        os.close(read_fd)
        os.close(write_fd)
        return _construct(cls, raw)
    if pid == 0:
        _build_in_child(cls, raw, vm_size, read_fd, write_fd)
    os.close(write_fd)
    return _answer_of(pid, read_fd)


def _build_in_child(cls: Any, raw: dict[str, Any], vm_size: int, read_fd: int, write_fd: int) -> NoReturn:
    """The forked child: cap the address space, build, write the pickled outcome, exit; never returns into the
    caller's code."""
    status = 1
    try:
        import gc
        import resource

        os.close(read_fd)
        gc.disable()  # a collection would touch (and copy) every page shared with the parent
        limit = vm_size + BUILD_MEMORY_BYTES
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
        view = memoryview(_pickled(_construct(cls, raw)))
        while view:
            view = view[os.write(write_fd, view) :]
        status = 0
    finally:
        os._exit(status)


def _pickled(outcome: tuple[str, Any]) -> bytes:
    try:
        return pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        return pickle.dumps(("memory", None))
    except Exception as exc:  # noqa: BLE001 -- an attribute transformers set that cannot be pickled
        return pickle.dumps(("error", echo.one_line(exc, MAX_MESSAGE_CHARS) or type(exc).__name__))


def _answer_of(pid: int, read_fd: int) -> tuple[str, Any]:
    """The parent: the child's outcome, read within BUILD_SECONDS; ("time", None) past that, ("memory", None) when
    the child died before it answered whole. The child is killed and reaped either way."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + BUILD_SECONDS
    poller = select.poll()  # not select(): a server with many sockets has descriptors past FD_SETSIZE
    poller.register(read_fd, select.POLLIN | select.POLLHUP)
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(left * 1000):
                return "time", None
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            if len(chunks) > BUILD_MEMORY_BYTES >> 20:  # more pickle than the child could hold
                return "memory", None
    finally:
        os.close(read_fd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
        os.waitpid(pid, 0)
    if not chunks:  # killed (out of memory before it could answer) or crashed
        return "memory", None
    try:
        return pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 -- a truncated answer: the child died while writing
        return "memory", None


def _check_torch_dtype(raw: dict[str, Any]) -> None:
    """transformers' config classes look a dtype string up as `getattr(torch, name)`: refuse one that names no
    torch dtype here, in a sentence, instead of quoting "module 'torch' has no attribute ..."."""
    import torch

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
