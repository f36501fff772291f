"""Hugging Face config.json import: read a model's cache layout the way transformers itself would build it.

`parse_hf_config` returns a kvviz.memory.KVConfig plus the fields it used, the ones it filled in, and notes.

When the config names a `model_type` that the installed transformers knows, the config is handed to that
architecture's own config class (`CONFIG_MAPPING[model_type](**config)`, what `AutoConfig` does), so every
field the file leaves out takes transformers' default for that architecture, and derived fields (Gemma 3's
5 local : 1 global `layer_types`, Qwen2's `max_window_layers` rule) come from transformers' own code, not a
copied table. The fields filled that way are listed in `ImportedConfig.defaults`. transformers pulls in torch,
so it is imported lazily, inside `_transformers_config`, only when a config is actually imported.

Without a known `model_type` the fields are read as written (no defaults besides MHA and float32).
Before anything reads them, the fields that size the cache are checked (`_precheck`): a 0, a string or a float
where a whole number belongs is refused in one sentence naming the field, never turned into a default or a
TypeError; where transformers' own class refuses, its whole reason is quoted on one line.
Multimodal configs (Gemma 3, LLaVA) are read from their text model; encoder-decoder models (T5, BART) get a
second KVConfig for the cross-attention cache (one K and V per encoder token per decoder layer).

A 100-byte config can make transformers allocate gigabytes: `num_labels` becomes an `id2label` dict with one entry
per label, and the config classes build lists and loop over their layer counts. So before transformers sees the
dict (`bound_allocations`, recursively through every nested sub-config): nesting at most MAX_NESTING levels, every
whole number within int64, at most MAX_ENTRIES entries in any object or list, label counts at most MAX_LABELS in
all, every layer/block/stage count at most LIMITS["n_layer"]. And the construction itself runs in a forked child
process (Linux) with its own address-space limit (BUILD_MEMORY_BYTES above what the process already maps) and time
limit (BUILD_SECONDS): whatever a config class does with a value no check above foresaw, the server keeps its
memory and the import is refused in one line.

Every decoder config is also read as the list of layers transformers' cache builds from it (kvviz.memory.layers,
`ImportedConfig.layers`). A model whose layers are not one attention layout (linear-attention and SSM hybrids,
MLP blocks without attention, indexers, Gemma 4's full-attention layers with head_dim 512 beside sliding ones
with 256: transformers' `per_layer_config`) is answered by that list (`_parse_layers`), never refused and never
counted as all attention; `config` then holds its attention layers' shape, for the form. A layer type transformers
does not know is refused naming it and its layer (`check_layer_types`).
"""
from __future__ import annotations

import contextlib
import json
import os
import pickle
import re
import select
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any

from kvviz.i18n import _
from kvviz.inputs import echo
from kvviz.memory import (
    LIMITS,
    KVConfig,
    MemoryInputError,
    check_int,
    head_dim_from_hidden,
    layers,
    resolve_dtype,
    short_repr,
)
from kvviz.memory.config_fields import config_field

MAX_CONFIG_CHARS = 5_000_000  # a real config.json is a few KB; refuse megabytes of paste before parsing
MAX_NAME_CHARS = 80  # `_name_or_path` as shown: a label, not a payload
MAX_MESSAGE_CHARS = 300  # a quoted transformers message is cut here (its lists of every model type are not)
MAX_NESTING = 32  # objects/lists inside each other: a real config.json nests 4 or 5 levels
MAX_LABELS = 100_000  # class labels in the whole config (num_labels, id2label, label2id): ImageNet-22k has 21,843
MAX_ENTRIES = 10_000  # fields in one object / entries in one list (id2label aside): a real one has a few hundred
MAX_INT = 2**63 - 1  # no config field is larger than an int64; a bigger number only costs time
BUILD_MEMORY_BYTES = 512 * 2**20  # transformers' config construction: address space above what the process maps
BUILD_SECONDS = 15.0  # ... and wall time (a real config takes milliseconds; the margin is for a loaded 2-core CPU)
# Counts that transformers' config classes loop over or multiply a list by (`range(self.num_hidden_layers)`,
# `["dense"] * n_dense`, `first_k_dense_replace`, `num_mtp_layers`, `num_residual_layers`...), at any depth
_COUNT_KEY = re.compile(r"(^|_)(layers?|blocks?|stages?|depth|cycles|replace)$")
_LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "num_decoder_layers", "decoder_layers",
               "encoder_layers")
# Whole-number fields that size the cache, checked before any code reads them: (keys, largest value). Each must be
# >= 1 where given: a head of 0 numbers or 0 heads caches nothing, and a 0 must not quietly become a default.
_SHAPE_FIELDS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("num_attention_heads", "n_head", "num_heads", "decoder_attention_heads", "encoder_attention_heads"),
     LIMITS["n_head"]),
    (("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num"), LIMITS["n_kv_heads"]),
    (("head_dim", "d_kv", "kv_channels", "qk_nope_head_dim", "v_head_dim"), LIMITS["head_dim"]),
    (("qk_rope_head_dim",), LIMITS["mla_rope_dim"]),
    (("kv_lora_rank",), LIMITS["mla_latent_rank"]),
    (("hidden_size", "n_embd", "d_model"), 10**7),
)


@dataclass(frozen=True)
class ImportedConfig:
    config: KVConfig | None  # a uniform layout's self-attention cache; for a model of mixed layers, its attention
    # layers' shape as if every layer were one (None: no attention layer at all, e.g. Mamba-2)
    used: dict[str, Any]  # config.json field -> value, for every field that fed the calculator
    missing: tuple[str, ...]  # what was not in the file and what was taken instead (defaults included)
    max_context: int | None
    extras: dict[str, int]  # n_embd, d_ff, vocab_size when known (for op counts)
    defaults: dict[str, Any] = field(default_factory=dict)  # field -> value taken from transformers' defaults
    notes: tuple[str, ...] = ()  # where transformers' own cache differs from the figure kvviz shows, and why
    cross_attention: KVConfig | None = None  # encoder-decoder: cache of encoder K/V, one row per encoder token
    transformers_kv_heads: int | None = None  # heads transformers' DynamicCache stores, if not config.n_kv_heads
    transformers_class: str | None = None  # the config class that resolved the fields, e.g. "Gemma3TextConfig"
    layers: layers.CacheLayers | None = None  # layer by layer, as DynamicCache(config=...) builds it (decoders)


def load_json_object(text_or_dict: str | bytes | dict[str, Any]) -> dict[str, Any]:
    """The config as a dict; one clear MemoryInputError for anything else (bad JSON, too deep, too big)."""
    if isinstance(text_or_dict, dict):
        return text_or_dict
    if len(text_or_dict) > MAX_CONFIG_CHARS:
        raise MemoryInputError(_("this is {n:,} characters; a config.json is a few thousand").format(n=len(text_or_dict)))
    try:
        raw = json.loads(text_or_dict)
    except RecursionError:
        raise MemoryInputError(_("this JSON is nested too deeply to be a config.json")) from None
    except (ValueError, UnicodeDecodeError) as exc:
        if "digits" in str(exc) and "integer string conversion" in str(exc):  # Python's 4,300-digit guard
            raise MemoryInputError(_("a number in this JSON has thousands of digits; no config.json field needs "
                                     "that: correct the number")) from None
        raise MemoryInputError(_("this is not valid JSON ({reason}); paste the model's config.json").format(
            reason=echo.one_line(exc, MAX_MESSAGE_CHARS))) from None
    if not isinstance(raw, dict):
        raise MemoryInputError(_("config.json must be a JSON object ({...}), not a list or a single value"))
    return raw


def _shape_int(key: str, value: Any, lo: int, hi: int) -> int:
    try:
        return check_int(key, value, lo=lo, hi=hi)
    except MemoryInputError:
        raise MemoryInputError(_("{key} must be a whole number from {lo:,} to {hi:,}, not {value}: "
                                 "correct it, or remove the field").format(key=key, lo=lo, hi=hi,
                                                                          value=short_repr(value))) from None


def _precheck(cfg: dict[str, Any]) -> None:
    """Refuse values that would crash or hang transformers' config classes, or that would quietly become a default
    (head_dim 0 read as "absent"), before anything reads them. One sentence each, naming the field."""
    for key in _LAYER_KEYS:
        if cfg.get(key) is not None:
            _shape_int(key, cfg[key], 1, LIMITS["n_layer"])
    for keys, hi in _SHAPE_FIELDS:
        for key in keys:
            if cfg.get(key) is not None:
                _shape_int(key, cfg[key], 1, hi)
    if cfg.get("sliding_window_pattern") is not None:
        _shape_int("sliding_window_pattern", cfg["sliding_window_pattern"], 1, LIMITS["n_layer"])
    for key in ("sliding_window", "max_window_layers"):
        if cfg.get(key) is not None:
            _shape_int(key, cfg[key], 0, LIMITS["window"])
    types = cfg.get("layer_types")
    if types is not None and (not isinstance(types, list) or len(types) > LIMITS["n_layer"]
                              or not all(isinstance(t, str) for t in types)):
        raise MemoryInputError(_("layer_types must be a list of strings such as \"sliding_attention\", one per layer"))
    if any(len(t) > 100 for t in types or ()):
        raise MemoryInputError(_("layer_types entries are short names such as \"sliding_attention\" or "
                                 "\"full_attention\"; correct them"))


def _path(path: tuple[Any, ...]) -> str:
    """A field's place in the config as a message names it: text_config.num_labels, attention_types[0][1]."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + short_repr(part, 40).strip("'")
    return out or _("the config")


def _walk(raw: Any) -> Any:
    """(path, value, depth) of every value in the config, depth first, without recursion; memory grows with the
    depth only (a million-entry list is read one entry at a time)."""
    yield (), raw, 0
    end = object()
    stack = [((), _entries(raw))]
    while stack:
        path, entries = stack[-1]
        entry = next(entries, end)
        if entry is end:
            stack.pop()
            continue
        key, value = entry
        here = (*path, key)
        yield here, value, len(here)
        if isinstance(value, (dict, list)):
            stack.append((here, _entries(value)))


def _entries(value: Any) -> Any:
    return iter(value.items()) if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else iter(())


def bound_nesting(raw: dict[str, Any]) -> None:
    """Refuse objects and lists nested more than MAX_NESTING deep (transformers deep-copies and recurses)."""
    for path, _value, depth in _walk(raw):
        if depth > MAX_NESTING:
            raise MemoryInputError(_("this config nests objects and lists more than {max} levels deep (at {path}); "
                                     "a config.json nests a few: correct it").format(max=MAX_NESTING,
                                                                                    path=_path(path[:3]) + "…"))


def bound_allocations(raw: dict[str, Any]) -> None:
    """Refuse, before transformers sees the dict, every value that would make it allocate in proportion to the value:
    label counts (`num_labels` -> an id2label dict with one entry per label; given id2label / label2id tables),
    counts it loops over (layers, blocks, stages, first_k_dense_replace ... at any depth), and whole numbers
    beyond int64 anywhere. One sentence, naming the field by its path."""
    labels = 0
    for path, value, _depth in _walk(raw):
        key = path[-1] if path and isinstance(path[-1], str) else None
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
            raise MemoryInputError(_("{path} = {value} is larger than any config.json field can be (at most "
                                     "2^63 - 1): correct it").format(path=_path(path), value=short_repr(value)))
        if isinstance(value, (dict, list)) and len(value) > MAX_ENTRIES and key not in ("id2label", "label2id"):
            raise MemoryInputError(_("{path} holds {n:,} entries; an object or list in a config.json holds a few "
                                     "hundred (kvviz reads at most {max:,}): correct it").format(
                                         path=_path(path), n=len(value), max=MAX_ENTRIES))
        if key == "num_labels" and value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_LABELS:
                raise MemoryInputError(_("{path} = {value}: transformers builds a table with one entry per class "
                                         "label, and labels do not change the KV cache; kvviz reads at most {max:,} "
                                         "labels: remove the field").format(path=_path(path), value=short_repr(value),
                                                                            max=MAX_LABELS))
            labels += value
        elif key in ("id2label", "label2id") and value is not None:
            if not isinstance(value, dict) or key == "id2label" and not all(
                    isinstance(k, int) or isinstance(k, str) and k.isascii() and k.isdigit() and len(k) <= 9
                    for k in value):
                raise MemoryInputError(_("{path} must be an object of class labels (id2label: {{\"0\": \"LABEL_0\"}}); "
                                         "labels do not change the KV cache: correct it, or remove it").format(
                                             path=_path(path)))
            labels += len(value)
        elif key == "per_layer_config" and value is not None and not (isinstance(value, dict) and all(
                isinstance(k, str) and k.isascii() and k.isdigit() and len(k) <= 5 and isinstance(v, dict)
                for k, v in value.items())):
            raise MemoryInputError(_("{path} must be an object from layer numbers to the fields that differ in that "
                                     "layer, e.g. {{\"5\": {{\"head_dim\": 512}}}}: correct it, or remove it").format(
                                         path=_path(path)))
        elif key is not None and _COUNT_KEY.search(key) and isinstance(value, int) and not isinstance(value, bool) \
                and value > LIMITS["n_layer"]:
            raise MemoryInputError(_("{path} = {value}: transformers builds a list with one entry per layer (or block) "
                                     "it counts; kvviz reads at most {max:,}: correct it").format(
                                         path=_path(path), value=short_repr(value), max=LIMITS["n_layer"]))
        if labels > MAX_LABELS:
            raise MemoryInputError(_("this config asks for more than {max:,} class labels in all (num_labels, "
                                     "id2label, label2id); labels do not change the KV cache: remove them").format(
                                         max=MAX_LABELS))


def _text_config(raw: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """(the language model's fields, a note): `text_config` when it is an object; when it is anything else,
    transformers' config classes without a text sub-config ignore it and read the top-level fields (so does kvviz,
    and says so); those with one (LLaVA, Gemma 3) refuse it, and so does kvviz, in one sentence."""
    text = raw.get("text_config")
    if text is None:
        return {}, None
    if isinstance(text, dict):
        sub_type = text.get("model_type")
        if sub_type is not None and not (isinstance(sub_type, str) and _known_model_type(sub_type)):
            raise MemoryInputError(_("text_config's model_type {value} is not one the installed "
                                     "transformers knows: use the language model's own type (e.g. llama, "
                                     "gemma3_text), or remove it").format(value=short_repr(sub_type)))
        return text, None
    model_type = raw.get("model_type")
    if isinstance(model_type, str) and _known_model_type(model_type) and "text_config" in _sub_configs(model_type):
        raise MemoryInputError(_("text_config must be a JSON object ({{...}}) holding the language model's fields, "
                                 "not {value}: transformers' {model_type} config refuses it too").format(
                                     value=short_repr(text), model_type=model_type))
    return {}, _("text_config {value} is not an object of fields: ignored, as transformers does; "
                 "the top-level fields were read").format(value=short_repr(text))


def _known_model_type(model_type: str) -> bool:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING  # lazy: pulls in torch

    return model_type in CONFIG_MAPPING


def _sub_configs(model_type: str) -> dict[str, Any]:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return dict(getattr(CONFIG_MAPPING[model_type], "sub_configs", None) or {})


def _transformers_config(raw: dict[str, Any]) -> Any | None:
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
        raise MemoryInputError(_("building transformers' {model_type} config from this file needed more than "
                                 "{mib:,} MiB of memory; a real config needs a few: check its counts and lists").format(
                                     model_type=model_type, mib=BUILD_MEMORY_BYTES // 2**20))
    if kind == "time":
        raise MemoryInputError(_("building transformers' {model_type} config from this file took more than {s:g} s "
                                 "(a real config takes milliseconds): check its counts and lists").format(
                                     model_type=model_type, s=BUILD_SECONDS))
    # transformers' validators raise many types; the user gets its whole reason, one line
    raise MemoryInputError(_("transformers' {model_type} config class refuses this config: {reason}").format(
        model_type=model_type, reason=payload))


def _construct(cls: Any, raw: dict[str, Any]) -> tuple[str, Any]:
    """("ok", config) | ("deep", None) | ("memory", None) | ("error", transformers' reason on one line)."""
    try:
        return "ok", cls(**raw)
    except RecursionError:
        return "deep", None
    except MemoryError:
        return "memory", None
    except echo.RAW_PYTHON_ERRORS as exc:  # the class's own code tripped on a value: Python's words say nothing
        return "error", _("its values do not fit together ({error}); compare them with the model's published "
                          "config.json").format(error=type(exc).__name__)
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
    if pid == 0:  # the child: never returns into the caller's code
        status = 1
        try:
            import gc
            import resource

            os.close(read_fd)
            gc.disable()  # a collection would touch (and copy) every page shared with the parent
            limit = vm_size + BUILD_MEMORY_BYTES
            _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard),
                                                    hard))
            outcome = _construct(cls, raw)
            try:
                data = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
            except MemoryError:
                data = pickle.dumps(("memory", None))
            except Exception as exc:  # noqa: BLE001 -- an attribute transformers set that cannot be pickled
                data = pickle.dumps(("error", echo.one_line(exc, MAX_MESSAGE_CHARS) or type(exc).__name__))
            view = memoryview(data)
            while view:
                view = view[os.write(write_fd, view):]
            status = 0
        finally:
            os._exit(status)
    os.close(write_fd)
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
            if isinstance(value, str) and not isinstance(getattr(torch, value, None) if value.isidentifier() else None,
                                                         torch.dtype):
                raise MemoryInputError(_("{key} {value} is not a torch dtype name (e.g. bfloat16, float16, "
                                         "float32): correct it, or remove it (transformers then loads float32)").format(
                                             key=key, value=short_repr(value)))


def parse_hf_config(text_or_dict: str | bytes | dict[str, Any], dtype: str | None = None) -> ImportedConfig:
    """Read the cache layout from a Hugging Face config.json (text, bytes or dict). Raises MemoryInputError only:
    every refusal is one line that says what to change."""
    raw = load_json_object(text_or_dict)
    try:
        return _parse(raw, dtype)
    except MemoryInputError:
        raise
    except RecursionError:
        raise MemoryInputError(_("this config is nested too deeply")) from None
    except (TypeError, ValueError, AttributeError, KeyError, ZeroDivisionError, OverflowError) as exc:
        # a value of a kind no check above foresaw: name the fault, never Python's own words
        raise MemoryInputError(_("a field of this config has a value of the wrong kind ({kind}): check "
                                 "that layers, heads and head sizes are whole numbers").format(
                                     kind=type(exc).__name__)) from None


def _parse(raw: dict[str, Any], dtype: str | None) -> ImportedConfig:
    bound_nesting(raw)
    text_raw, text_note = _text_config(raw)
    _precheck(raw)
    _precheck(text_raw)
    bound_allocations(raw)
    if text_note is not None:  # transformers reads such a config from its top-level fields: hand it those
        raw = {k: v for k, v in raw.items() if k != "text_config"}
    for cfg in (raw, text_raw):
        check_layer_types(cfg)
    resolved = _transformers_config(raw)
    imported = (_parse_as_written(raw, text_raw, dtype) if resolved is None
                else _parse_resolved(raw, text_raw, resolved, dtype))
    if text_note is not None:
        imported = replace(imported, missing=(*imported.missing, text_note))
    max_ctx = imported.max_context
    return replace(imported, used={k: _shown(v) for k, v in imported.used.items()},
                   max_context=max_ctx if max_ctx is not None and 1 <= max_ctx <= LIMITS["context_len"] else None,
                   extras={k: v for k, v in imported.extras.items() if 1 <= v <= 10**12})


# Layer types kvviz counts when transformers' class is not there to read them (a config read as written)
_ATTENTION_TYPES = ("full_attention", "sliding_attention")
# What other configs call their layer list: a non-attention entry in any of these is never counted as attention
_OTHER_LAYER_LISTS = {"attn_type_list": (0,), "layers_block_type": ("mamba", "linear_attention", "mlp", "moe"),
                      "block_types": ("recurrent",)}


def check_layer_types(cfg: dict[str, Any]) -> None:
    """Refuse, in one sentence naming it and its layer, a layer type transformers does not know (never counted as
    attention), and a layer list whose length disagrees with the layer count. A config whose model_type transformers
    does not know is read as written: a layer that is not attention is refused there too (kvviz cannot size its
    state without the model's class)."""
    types = cfg.get("layer_types")
    n_layer = cfg.get("num_hidden_layers")
    model_type = cfg.get("model_type")
    known = isinstance(model_type, str) and _known_model_type(model_type)
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
                    raise MemoryInputError(_(
                        "layer {layer} is a {type} layer, but model_type {model_type} is not one the installed "
                        "transformers knows, so kvviz cannot size its state; it is never counted as attention: use "
                        "the model_type of the transformers class that implements it").format(
                            layer=i, type=short_repr(layer_type), model_type=short_repr(model_type)))
                raise MemoryInputError(_("layer {layer} has the layer type {type}, which transformers does not know "
                                         "(e.g. full_attention, sliding_attention, linear_attention); kvviz never "
                                         "counts an unknown layer as attention").format(
                                             layer=i, type=short_repr(layer_type)))
        if isinstance(n_layer, int) and not isinstance(n_layer, bool) and len(types) != n_layer:
            raise MemoryInputError(_("layer_types has {n:,} entries for {layers:,} layers: give one per layer, "
                                     "or remove it").format(n=len(types), layers=n_layer))
    if known:
        return
    for key, others in _OTHER_LAYER_LISTS.items():
        listed = cfg.get(key)
        if isinstance(listed, list) and any(x in others for x in listed):
            layer = next(i for i, x in enumerate(listed) if x in others)
            raise MemoryInputError(_(
                "{key} makes layer {layer} something other than attention ({value}), and model_type {model_type} is "
                "not one the installed transformers knows, so kvviz cannot size its state; it is never counted as "
                "attention: use the model_type of the transformers class that implements it").format(
                    key=key, layer=layer, value=short_repr(listed[layer]), model_type=short_repr(model_type)))


def _shown(value: Any) -> Any:
    """A used field's value as the report may echo it: kept when short, else summarised (never a megabyte)."""
    if value is None or isinstance(value, (bool, float)) or (isinstance(value, int) and value.bit_length() <= 96):
        return value
    return value if isinstance(value, str) and len(value) <= 60 else short_repr(value, 60)


def display_name(raw: dict[str, Any], text_raw: dict[str, Any] | None = None) -> str:
    """The config's label: `_name_or_path` (cut to MAX_NAME_CHARS), else its model_type."""
    cfg = {**raw, **(text_raw or {})}
    name = cfg.get("_name_or_path") or cfg.get("model_type") or _("imported config")
    name = str(name) if isinstance(name, str) else short_repr(name)
    return echo.one_line(name, MAX_NAME_CHARS)


# ----- through transformers' config class --------------------------------------------------------------------
def _parse_resolved(raw: dict[str, Any], text_raw: dict[str, Any], top: Any, dtype: str | None) -> ImportedConfig:
    from kvviz.memory.hf_cache import falcon_notes, kv_heads_transformers_stores, window_fields

    enc_dec = bool(getattr(top, "is_encoder_decoder", False)) and (
        hasattr(top, "num_decoder_layers") or hasattr(top, "decoder_layers"))
    t = top if enc_dec else top.get_text_config(decoder=True)  # (BART's decoder view resets to defaults)
    stack = None
    if not enc_dec:  # the layer list DynamicCache(config=...) builds: the figure every page and the CLI count
        try:
            stack = layers.from_transformers(t, _dtype(dtype, t, top, {}, set())[0], display_name(raw, text_raw))
        except layers.LayerTypesUnreadable:
            stack = None  # the reading below says why, in its own words (an assistant model: no cache of its own)
        if stack is not None and not plain_attention(stack):  # hybrids, per-layer shapes: counted layer by layer
            return _parse_layers(raw, text_raw, top, t, stack, dtype)
    t = uniform_layers(t)
    given = {**raw, **text_raw} if text_raw else dict(raw)
    aliases = {alias: name for alias, name in type(t).attribute_map.items()}
    given_names = set(given) | {aliases.get(k, k) for k in given} | {a for a, n in aliases.items() if n in given}
    used: dict[str, Any] = {"model_type": raw.get("model_type")}
    if text_raw:
        used["text_config"] = _("(the language model's fields were read from here)")
    defaults: dict[str, Any] = {}

    def take(name: str, value: Any, *sources: str) -> Any:
        (used if {name, *sources} & given_names else defaults)[name] = value
        return value

    if enc_dec:
        layers_name = "num_decoder_layers" if hasattr(t, "num_decoder_layers") else "decoder_layers"
        heads_name = "decoder_attention_heads" if hasattr(t, "decoder_attention_heads") else "num_attention_heads"
    else:
        layers_name, heads_name = "num_hidden_layers", "num_attention_heads"
    if getattr(t, layers_name, None) is None or getattr(t, heads_name, None) is None:
        raise MemoryInputError(_("transformers' {cls} has no {layers} / {heads}: not an "
                                 "attention model whose KV cache kvviz can count").format(
                                     cls=type(t).__name__, layers=layers_name, heads=heads_name))
    n_layer = take(layers_name, check_int(layers_name, getattr(t, layers_name), hi=LIMITS["n_layer"]))
    n_head = take(heads_name, check_int("n_head", getattr(t, heads_name)))
    n_kv = kv_heads(t, n_head, take)
    derived_note = None
    mla_rank = getattr(t, "kv_lora_rank", None) or 0
    mla_rope = (getattr(t, "qk_rope_head_dim", None) or 0) if mla_rank else 0
    hidden = getattr(t, "hidden_size", None)
    if mla_rank:  # MLA caches a latent: no head size is needed or shown besides the query/key head size
        take("kv_lora_rank", mla_rank)
        take("qk_rope_head_dim", mla_rope)
        head_dim = (getattr(t, "qk_nope_head_dim", 0) or 0) + mla_rope
    elif getattr(t, "head_dim", None):
        derived = isinstance(hidden, int) and hidden % n_head == 0 and t.head_dim == hidden // n_head
        if "head_dim" in given_names or not derived:
            head_dim = take("head_dim", t.head_dim)
        else:
            head_dim = t.head_dim
            derived_note = _("head_dim (took hidden_size / num_attention_heads = {n})").format(n=head_dim)
    else:
        head_dim = head_dim_from_hidden(check_int("hidden_size", hidden, hi=10**7), check_int("n_head", n_head))
    n_layer, shared_note = _cached_layers(t, n_layer)
    window, per_global, first_windowed, window_note = window_fields(t, n_layer, take)
    dt, dtype_note = _dtype(dtype, t, top, used, given_names)
    missing = [_("{field} = {value} (transformers' {cls} default)").format(field=k, value=v, cls=type(t).__name__)
               for k, v in defaults.items()]
    missing += [m for m in (derived_note, dtype_note, window_note) if m]
    if shared_note:
        missing.append(shared_note)
    name = display_name(raw)
    config = KVConfig(n_layer, n_head, n_kv, head_dim, dt, mla_rank, mla_rope, window, per_global, name=name,
                      first_windowed_layer=first_windowed)
    cross = config.cross_attention_layout() if enc_dec else None
    notes: list[str] = []
    if enc_dec:
        notes.append(_("Encoder-decoder: besides the self-attention cache above, each of the {layers} decoder "
                       "layers caches K and V of every encoder token for cross-attention (encoder length x "
                       "{layers} layers x {heads} heads x {head_dim} x 2 numbers), computed once per input.").format(
                           layers=n_layer, heads=n_kv, head_dim=head_dim))
    stored = kv_heads_transformers_stores(t, n_kv)
    notes += falcon_notes(t, n_kv, stored)
    if window is not None:
        notes.append(_("transformers' sliding layers keep the last {kept:,} tokens (window - 1), kvviz counts "
                       "{window:,}: the token being added is attended to without being stored yet.").format(
                           kept=window - 1, window=window))
    max_ctx = getattr(t, "max_position_embeddings", None)
    extras = _extras(t, hidden)
    if stack is not None:
        stack = replace(stack, name=name)
    return ImportedConfig(config, used, tuple(missing), max_ctx if isinstance(max_ctx, int) else None, extras,
                          defaults, tuple(notes), cross, stored if stored != n_kv else None, type(t).__name__, stack)


def plain_attention(stack: layers.CacheLayers) -> bool:
    """Every layer full, sliding or MLA attention of one K/V shape (windows aside), or a layer that reuses an earlier
    layer's K/V (Gemma 3n's and Gemma 4's shared layers, which the KVConfig reading leaves out): what one KVConfig
    describes. An MLP/MoE block without attention (Nemotron-H) is not: the layer list counts it as nothing."""
    attention = stack.attention_layers()
    shared = [x for x in stack.layers if x.kind == "none" and x.layer_type not in ("mlp", "moe")]
    return (bool(attention) and len(attention) + len(shared) == stack.n_layer
            and {x.kind for x in attention} <= {"full", "sliding", "mla"} and len({x.parts for x in attention}) == 1)


def _parse_layers(raw: dict[str, Any], text_raw: dict[str, Any], top: Any, t: Any, stack: layers.CacheLayers,
                  dtype: str | None) -> ImportedConfig:
    """A model whose layers are not all attention of one shape (Qwen3-Next, Jamba, Mamba-2, Gemma 4 ...): the layer
    list is the result. `config` is its attention layers' shape as if every layer were one (None without
    attention): the comparison "every layer full attention", and what the form shows."""
    given = {**raw, **text_raw} if text_raw else dict(raw)
    used: dict[str, Any] = {"model_type": raw.get("model_type")}
    if text_raw:
        used["text_config"] = _("(the language model's fields were read from here)")
    dt, dtype_note = _dtype(dtype, t, top, used, set(given))
    types = getattr(t, "layer_types", None)
    if isinstance(types, (list, tuple)):
        counts: dict[str, int] = {}
        for layer_type in types:
            counts[str(layer_type)] = counts.get(str(layer_type), 0) + 1
        used["layer_types"] = " + ".join(f"{n} {kind}" for kind, n in counts.items())
    for key in ("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "kv_lora_rank",
                "qk_rope_head_dim", "index_head_dim", "sliding_window", "attention_chunk_size",
                "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
                "linear_conv_kernel_dim", "linear_num_heads", "linear_head_dim", "mamba_d_state", "mamba_d_conv",
                "mamba_expand", "mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_num_heads",
                "mamba_head_dim", "ssm_state_size", "state_size", "conv_kernel", "num_heads", "n_groups",
                "conv_L_cache", "lru_width", "conv1d_width", "attention_window_size", "num_kv_shared_layers",
                "global_head_dim", "num_global_key_value_heads"):
        if key in given and _global_attr(t, key) is not None:
            used[key] = _global_attr(t, key)
    missing = [m for m in (dtype_note,) if m]
    name = display_name(raw, text_raw)
    stack = replace(stack, name=name)
    attention = stack.as_all_attention()
    config = None
    if attention is not None:
        first = attention.layers[0]
        keys = first.parts[0]
        heads = _global_attr(t, "num_attention_heads")
        if first.kind == "mla":
            rope = first.parts[1].shape[-1] if len(first.parts) > 1 else 0
            config = KVConfig(stack.n_layer, heads or 1, 1, int(keys.shape[-1]) + int(rope), dt,
                              int(keys.shape[-1]), int(rope), name=name)
        else:
            kv_heads, head_dim = int(keys.shape[0]), int(keys.shape[-1])
            heads = heads if isinstance(heads, int) and heads >= kv_heads and heads % kv_heads == 0 else kv_heads
            config = KVConfig(stack.n_layer, heads, kv_heads, head_dim, dt, name=name)
    notes = list(layer_notes(stack))
    max_ctx = getattr(t, "max_position_embeddings", None)
    extras = _extras(t, getattr(t, "hidden_size", None))
    return ImportedConfig(config, used, tuple(missing), max_ctx if isinstance(max_ctx, int) else None, extras, {},
                          tuple(notes), None, None, type(t).__name__, stack)


def _global_attr(t: Any, key: str) -> Any:
    """A config's global value of `key`, or None: a heterogeneous config (Gemma 4) refuses to give one for a field
    that varies by layer (its per-layer values are in the layer list)."""
    try:
        return getattr(t, key, None)
    except Exception:  # noqa: BLE001 -- transformers' AmbiguousGlobalPerLayerAttributeError, among others
        return None


def layer_notes(stack: layers.CacheLayers) -> tuple[str, ...]:
    """What the layer list means for the figure: which layers grow, which hold a fixed state, and where transformers'
    storage differs from vLLM's (cited in kvviz.memory.serving)."""
    from kvviz.memory import serving

    notes = []
    windowed = [x for x in stack.layers if x.window is not None]
    if windowed:
        notes.append(_("transformers' windowed layers keep the last window - 1 tokens ({kept:,}); the figure counts "
                       "that, and the peak during a step holds one row more per windowed layer.").format(
                           kept=windowed[0].window - 1))
    notes += serving.vllm_notes(stack)
    return tuple(notes)


# What shapes a layer's K/V cache: these must be one value across the layers that hold a cache.
_KV_SHAPE_ATTRS = ("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "hidden_size",
                   "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "sliding_window",
                   "attention_chunk_size", "multi_query", "num_kv_heads", "layer_types")


def uniform_layers(t: Any) -> Any:
    """A heterogeneous transformers config (`per_layer_config`: Gemma 4, Dots3, NeoMME ...) as one homogeneous layer
    config, read as transformers defines it (`t.per_layer_config[i]`, each layer's own values), when every layer that
    holds a cache has the same K/V shape; one sentence naming the fields that differ otherwise. A field that does not
    shape the cache and differs (an MLP width) is left out (None). `sliding_window` is compared across the sliding
    layers only: a full-attention layer's window is never used."""
    if not getattr(t, "is_heterogeneous", False):
        return t
    n_layer = check_int("num_hidden_layers", t.num_hidden_layers, hi=LIMITS["n_layer"])
    types = getattr(t, "layer_types", None)
    sliding = [i for i in range(n_layer) if isinstance(types, list) and i < len(types)
               and types[i] == "sliding_attention"]
    sliding_set = set(sliding)
    attrs = sorted(t.per_layer_attributes or ())
    seen: dict[str, list[Any]] = {attr: [] for attr in attrs}
    for i in range(n_layer):  # one layer's copy at a time (a copy holds every field of the config)
        layer = t.per_layer_config[i]
        for attr in attrs:
            value = getattr(layer, attr, None)
            if (attr != "sliding_window" or not sliding or i in sliding_set) and value not in seen[attr]:
                seen[attr].append(value)
    view = t.per_layer_config[sliding[0] if sliding else 0]
    differ: list[str] = []
    for attr, values in seen.items():
        if len(values) <= 1:
            continue
        if attr in _KV_SHAPE_ATTRS:
            differ.append(f"{attr} " + "/".join(short_repr(v, 20) for v in values[:4]))
        else:
            setattr(view, attr, None)
    if differ:
        raise MemoryInputError(_("transformers' {cls} gives its layers different K/V shapes ({fields}, in "
                                 "per_layer_config); kvviz counts one shape for every layer, so it cannot count this "
                                 "model yet").format(cls=type(t).__name__, fields="; ".join(differ)))
    return view


def _cached_layers(t: Any, n_layer: int) -> tuple[int, str | None]:
    """(layers holding a cache of their own, note): Gemma 4's last `num_kv_shared_layers` layers reuse an earlier
    layer's K/V (transformers' `kv_sharing_modes`: "reuse"), so they add nothing to the cache."""
    shared = getattr(t, "num_kv_shared_layers", None)
    if not shared or not hasattr(type(t), "kv_sharing_modes"):
        return n_layer, None
    shared = check_int("num_kv_shared_layers", shared, lo=0, hi=LIMITS["n_layer"])
    if shared >= n_layer:
        raise MemoryInputError(_("num_kv_shared_layers = {shared:,} of {layers:,} layers: every layer reuses K/V "
                                 "computed elsewhere (an assistant model that reads its target model's cache), so "
                                 "it has no KV cache of its own to count").format(shared=shared, layers=n_layer))
    try:
        modes = t.kv_sharing_modes
    except (ValueError, TypeError, IndexError) as exc:
        raise MemoryInputError(_("transformers' {cls} refuses this layer sharing: {reason}").format(
            cls=type(t).__name__, reason=echo.one_line(exc, MAX_MESSAGE_CHARS))) from None
    cached = sum(mode != "reuse" for mode in modes)
    if list(modes[cached:]) != ["reuse"] * (n_layer - cached):  # the shared layers are the last ones
        raise MemoryInputError(_("transformers' {cls} shares K/V between layers in a pattern kvviz cannot count "
                                 "(num_kv_shared_layers)").format(cls=type(t).__name__))
    return cached, _("num_kv_shared_layers = {shared:,}: the last {shared:,} of {layers:,} layers reuse an earlier "
                     "layer's K/V, so {cached:,} layers hold a cache (counted as the layers)").format(
                         shared=shared, layers=n_layer, cached=cached)


def kv_heads(t: Any, n_head: int, take: Any) -> int:
    """K/V heads of the GQA layout (what a serving engine stores); MQA for `multi_query` models."""
    if getattr(t, "model_type", None) == "falcon":
        if t.new_decoder_architecture:
            return take("num_kv_heads", t.num_kv_heads)
        return take("multi_query", 1) if t.multi_query else take("num_kv_heads", t.num_kv_heads or n_head)
    if getattr(t, "multi_query", False):
        return take("multi_query", 1)
    value = getattr(t, "num_key_value_heads", None)
    return take("num_key_value_heads", value) if value else n_head


def _extras(t: Any, hidden: Any) -> dict[str, int]:
    """n_embd, d_ff and vocab_size when the config gives them as whole numbers (for op counts)."""
    return {k: v for k, v in (("n_embd", hidden), ("d_ff", _d_ff(t, hidden)), ("vocab_size",
            getattr(t, "vocab_size", None))) if isinstance(v, int)}


def _d_ff(t: Any, hidden: Any) -> Any:
    for name in ("intermediate_size", "n_inner", "ffn_dim", "d_ff", "decoder_ffn_dim", "ffn_hidden_size"):
        if isinstance(getattr(t, name, None), int):
            return getattr(t, name)
    return 4 * hidden if getattr(t, "model_type", None) == "gpt2" and isinstance(hidden, int) else None


def _dtype(dtype: str | None, t: Any, top: Any, used: dict[str, Any], given: set[str]) -> tuple[str, str | None]:
    """The cache dtype: the one asked for, else the config's, else float32 (what transformers loads then)."""
    if dtype is not None:
        return resolve_dtype(dtype).name, None
    found = getattr(t, "dtype", None) or getattr(top, "dtype", None)
    if found is None:
        return "fp32", _("torch_dtype absent: transformers loads such a model in float32, so kvviz counts fp32")
    name = str(found).removeprefix("torch.")
    used["torch_dtype"] = name
    try:
        return resolve_dtype(name).name, None
    except MemoryInputError:
        return "bf16", _("dtype {value} is not a cache dtype kvviz knows (took bf16)").format(value=short_repr(name))


# ----- as written (no model_type transformers knows) ----------------------------------------------------------


def _first(cfg: dict[str, Any], dimension: str, used: dict[str, Any]) -> Any:
    found = config_field(cfg, dimension)
    if found is None:
        return None
    used[found[0]] = found[1]
    return found[1]


def _parse_as_written(raw: dict[str, Any], text_raw: dict[str, Any], dtype: str | None) -> ImportedConfig:
    from kvviz.memory.hf_cache import window_from_dict

    cfg = {**raw, **text_raw}
    used: dict[str, Any] = {}
    missing = [_("model_type absent or unknown to the installed transformers: fields read as written, no defaults")]
    if raw.get("is_encoder_decoder"):
        raise MemoryInputError(_("an encoder-decoder config needs its model_type (e.g. t5, bart) to be read"))
    n_layer = _first(cfg, "n_layer", used)
    n_head = _first(cfg, "n_head", used)
    if n_layer is None or n_head is None:
        raise MemoryInputError(_(
            "this JSON does not look like a transformer config.json: it has no number of layers "
            "(num_hidden_layers / n_layer) or no number of attention heads (num_attention_heads / n_head)"
        ))
    n_kv = _first(cfg, "n_kv_heads", used)
    if n_kv is None and cfg.get("multi_query"):
        used["multi_query"] = n_kv = 1
    if n_kv is None:
        missing.append(_("num_key_value_heads (took n_head: plain multi-head attention)"))
        n_kv = n_head
    mla_rank = cfg.get("kv_lora_rank") or 0
    mla_rope = (cfg.get("qk_rope_head_dim") or 0) if mla_rank else 0
    head_dim = _first(cfg, "head_dim", used)
    hidden = _first(cfg, "hidden", used)
    if mla_rank:
        used["kv_lora_rank"], used["qk_rope_head_dim"] = mla_rank, mla_rope
        head_dim = head_dim or (cfg.get("qk_nope_head_dim") or 0) + mla_rope or 1
    elif head_dim is None:
        if hidden is None:
            raise MemoryInputError(_("config.json has neither head_dim nor hidden_size, so the head size is unknown"))
        missing.append(_("head_dim (took hidden_size / num_attention_heads)"))
        head_dim = head_dim_from_hidden(check_int("hidden_size", hidden, hi=10**7), check_int("n_head", n_head))
    window, per_global, first_windowed = window_from_dict(cfg, used, missing)
    dt = dtype or _first(cfg, "dtype", used)
    if dt is None:
        missing.append(_("torch_dtype absent: transformers loads such a model in float32, so kvviz counts fp32"))
        dt = "fp32"
    try:
        resolve_dtype(dt)
    except MemoryInputError:
        missing.append(_("dtype {value} is not a cache dtype kvviz knows (took bf16)").format(value=short_repr(dt)))
        dt = "bf16"
    max_ctx = _first(cfg, "max_context", used)
    extras = {k: v for k in ("d_ff", "vocab_size") if isinstance(v := _first(cfg, k, used), int)}
    if isinstance(hidden, int):
        extras["n_embd"] = hidden
    name = display_name(raw, text_raw)
    config = KVConfig(n_layer, n_head, n_kv, head_dim, dt, mla_rank, mla_rope, window, per_global, name=name,
                      first_windowed_layer=first_windowed)
    notes = () if window is None else (
        _("transformers' sliding layers keep the last {kept:,} tokens (window - 1); kvviz counts {window:,}.").format(
            kept=window - 1, window=window),)
    return ImportedConfig(config, used, tuple(missing), max_ctx if isinstance(max_ctx, int) else None, extras,
                          notes=notes)
