"""A config.json read into a dict, and bounded before anything reads it.

A 100-byte config can make transformers allocate gigabytes: `num_labels` becomes an `id2label` dict with one entry
per label, and the config classes build lists and loop over their layer counts. So before transformers sees the
dict (`bound_allocations`, recursively through every nested sub-config): nesting at most MAX_NESTING levels, every
whole number within int64, at most MAX_ENTRIES entries in any object or list, label counts at most MAX_LABELS in
all, every layer/block/stage count at most LIMITS["n_layer"]. The fields that size the cache are checked too
(`precheck`): a 0, a string or a float where a whole number belongs is refused in one sentence naming the field,
never turned into a default or a TypeError.

The layer types are checked here too (`check_layer_types`): a type transformers does not know is refused, never
counted as attention; transformers' own list is handed in by the caller. No transformers here: kvviz.memory.hf_config
builds transformers' own config from the checked dict, and kvviz.memory.config_import reads the cache layout from it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kvviz.i18n import _
from kvviz.inputs import echo
from kvviz.memory import LIMITS, MemoryInputError, check_int, short_repr

MAX_CONFIG_CHARS = 5_000_000  # a real config.json is a few KB; refuse megabytes of paste before parsing
MAX_MESSAGE_CHARS = 300  # a quoted transformers message is cut here (its lists of every model type are not)
MAX_NESTING = 32  # objects/lists inside each other: a real config.json nests 4 or 5 levels
MAX_LABELS = 100_000  # class labels in the whole config (num_labels, id2label, label2id): ImageNet-22k has 21,843
MAX_ENTRIES = 10_000  # fields in one object / entries in one list (id2label aside): a real one has a few hundred
MAX_INT = 2**63 - 1  # no config field is larger than an int64; a bigger number only costs time
# Counts that transformers' config classes loop over or multiply a list by (`range(self.num_hidden_layers)`,
# `["dense"] * n_dense`, `first_k_dense_replace`, `num_mtp_layers`, `num_residual_layers`...), at any depth
# Layer types kvviz counts when transformers' class is not there to read them (a config read as written)
_ATTENTION_TYPES = ("full_attention", "sliding_attention")
# What other configs call their layer list: a non-attention entry in any of these is never counted as attention
_OTHER_LAYER_LISTS = {
    "attn_type_list": (0,),
    "layers_block_type": ("mamba", "linear_attention", "mlp", "moe"),
    "block_types": ("recurrent",),
}
_COUNT_KEY = re.compile(r"(^|_)(layers?|blocks?|stages?|depth|cycles|replace)$")
_LAYER_KEYS = (
    "num_hidden_layers",
    "n_layer",
    "num_layers",
    "n_layers",
    "num_decoder_layers",
    "decoder_layers",
    "encoder_layers",
)
# Whole-number fields that size the cache, checked before any code reads them: (keys, largest value). Each must be
# >= 1 where given: a head of 0 numbers or 0 heads caches nothing, and a 0 must not quietly become a default.
_SHAPE_FIELDS: tuple[tuple[tuple[str, ...], int], ...] = (
    (
        ("num_attention_heads", "n_head", "num_heads", "decoder_attention_heads", "encoder_attention_heads"),
        LIMITS["n_head"],
    ),
    (("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num"), LIMITS["n_kv_heads"]),
    (("head_dim", "d_kv", "kv_channels", "qk_nope_head_dim", "v_head_dim"), LIMITS["head_dim"]),
    (("qk_rope_head_dim",), LIMITS["mla_rope_dim"]),
    (("kv_lora_rank",), LIMITS["mla_latent_rank"]),
    (("hidden_size", "n_embd", "d_model"), 10**7),
)
# Every whole-number field precheck refuses out of range: (key, smallest, largest)
_BOUNDED_FIELDS: tuple[tuple[str, int, int], ...] = (
    *((key, 1, LIMITS["n_layer"]) for key in _LAYER_KEYS),
    *((key, 1, hi) for keys, hi in _SHAPE_FIELDS for key in keys),
    ("sliding_window_pattern", 1, LIMITS["n_layer"]),
    ("sliding_window", 0, LIMITS["window"]),
    ("max_window_layers", 0, LIMITS["window"]),
)
_LABEL_TABLES = ("id2label", "label2id")


def load_json_object(text_or_dict: str | bytes | dict[str, Any]) -> dict[str, Any]:
    """The config as a dict; one clear MemoryInputError for anything else (bad JSON, too deep, too big)."""
    if isinstance(text_or_dict, dict):
        return text_or_dict
    if len(text_or_dict) > MAX_CONFIG_CHARS:
        raise MemoryInputError(
            _("this is {n:,} characters; a config.json is a few thousand").format(n=len(text_or_dict))
        )
    try:
        raw = json.loads(text_or_dict)
    except RecursionError:
        raise MemoryInputError(_("this JSON is nested too deeply to be a config.json")) from None
    except (ValueError, UnicodeDecodeError) as exc:
        if "digits" in str(exc) and "integer string conversion" in str(exc):  # Python's 4,300-digit guard
            raise MemoryInputError(
                _("a number in this JSON has thousands of digits; no config.json field needs that: correct the number")
            ) from None
        raise MemoryInputError(
            _("this is not valid JSON ({reason}); paste the model's config.json").format(
                reason=echo.one_line(exc, MAX_MESSAGE_CHARS)
            )
        ) from None
    if not isinstance(raw, dict):
        raise MemoryInputError(_("config.json must be a JSON object ({...}), not a list or a single value"))
    return raw


def _shape_int(key: str, value: Any, lo: int, hi: int) -> int:
    try:
        return check_int(key, value, lo=lo, hi=hi)
    except MemoryInputError:
        raise MemoryInputError(
            _(
                "{key} must be a whole number from {lo:,} to {hi:,}, not {value}: correct it, or remove the field"
            ).format(key=key, lo=lo, hi=hi, value=short_repr(value))
        ) from None


def precheck(cfg: dict[str, Any]) -> None:
    """Refuse values that would crash or hang transformers' config classes, or that would quietly become a default
    (head_dim 0 read as "absent"), before anything reads them. One sentence each, naming the field."""
    for key, lo, hi in _BOUNDED_FIELDS:
        if cfg.get(key) is not None:
            _shape_int(key, cfg[key], lo, hi)
    _check_layer_type_names(cfg.get("layer_types"))


def _check_layer_type_names(types: Any) -> None:
    """layer_types, where given: a list of short strings, at most one per layer kvviz counts."""
    if types is None:
        return
    if not isinstance(types, list) or len(types) > LIMITS["n_layer"] or not all(isinstance(t, str) for t in types):
        raise MemoryInputError(_('layer_types must be a list of strings such as "sliding_attention", one per layer'))
    if any(len(t) > 100 for t in types):
        raise MemoryInputError(
            _('layer_types entries are short names such as "sliding_attention" or "full_attention"; correct them')
        )


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
    """Refuse objects and lists nested more than MAX_NESTING deep (transformers deep-copies and recurses), naming the
    first value past that depth in _walk's order. Only objects and lists are descended into: a scalar entry costs an
    isinstance test, not a path (the walk of million-entry lists was 43 s of the hostile-config property's 51 s under
    cProfile)."""
    end = object()
    stack = [((), _entries(raw))]  # the objects and lists being read, outermost first
    while stack:
        path, entries = stack[-1]
        if len(path) >= MAX_NESTING:  # its entries lie past the bound: the first of them is the first too deep
            first = next(entries, end)
            if first is not end:
                raise MemoryInputError(
                    _(
                        "this config nests objects and lists more than {max} levels deep (at {path}); "
                        "a config.json nests a few: correct it"
                    ).format(max=MAX_NESTING, path=_path((*path, first[0])[:3]) + "…")
                )
            stack.pop()
            continue
        for key, value in entries:
            if isinstance(value, (dict, list)):
                stack.append(((*path, key), _entries(value)))  # read it now, then go on with this one's entries
                break
        else:
            stack.pop()


def bound_allocations(raw: dict[str, Any]) -> None:
    """Refuse, before transformers sees the dict, every value that would make it allocate in proportion to the value:
    label counts (`num_labels` -> an id2label dict with one entry per label; given id2label / label2id tables),
    counts it loops over (layers, blocks, stages, first_k_dense_replace ... at any depth), and whole numbers
    beyond int64 anywhere. One sentence, naming the field by its path."""
    labels = 0
    for path, value, _depth in _walk(raw):
        key = path[-1] if path and isinstance(path[-1], str) else None
        _bound_size(path, key, value)
        if key is not None and value is not None:
            labels += _bound_field(path, key, value)
        if labels > MAX_LABELS:
            raise MemoryInputError(
                _(
                    "this config asks for more than {max:,} class labels in all (num_labels, "
                    "id2label, label2id); labels do not change the KV cache: remove them"
                ).format(max=MAX_LABELS)
            )


def _bound_size(path: tuple[Any, ...], key: str | None, value: Any) -> None:
    """Any value: a whole number within int64, an object or list of at most MAX_ENTRIES (label tables aside)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        raise MemoryInputError(
            _("{path} = {value} is larger than any config.json field can be (at most 2^63 - 1): correct it").format(
                path=_path(path), value=short_repr(value)
            )
        )
    if isinstance(value, (dict, list)) and len(value) > MAX_ENTRIES and key not in _LABEL_TABLES:
        raise MemoryInputError(
            _(
                "{path} holds {n:,} entries; an object or list in a config.json holds a few "
                "hundred (kvviz reads at most {max:,}): correct it"
            ).format(path=_path(path), n=len(value), max=MAX_ENTRIES)
        )


def _bound_field(path: tuple[Any, ...], key: str, value: Any) -> int:
    """A named field that makes transformers allocate: refused past its bound. Returns the class labels it adds."""
    if key == "num_labels":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_LABELS:
            raise MemoryInputError(
                _(
                    "{path} = {value}: transformers builds a table with one entry per class "
                    "label, and labels do not change the KV cache; kvviz reads at most {max:,} "
                    "labels: remove the field"
                ).format(path=_path(path), value=short_repr(value), max=MAX_LABELS)
            )
        return value
    if key in _LABEL_TABLES:
        if (
            not isinstance(value, dict)
            or key == "id2label"
            and not all(
                isinstance(k, int) or isinstance(k, str) and k.isascii() and k.isdigit() and len(k) <= 9 for k in value
            )
        ):
            raise MemoryInputError(
                _(
                    '{path} must be an object of class labels (id2label: {{"0": "LABEL_0"}}); '
                    "labels do not change the KV cache: correct it, or remove it"
                ).format(path=_path(path))
            )
        return len(value)
    if key == "per_layer_config" and not (
        isinstance(value, dict)
        and all(
            isinstance(k, str) and k.isascii() and k.isdigit() and len(k) <= 5 and isinstance(v, dict)
            for k, v in value.items()
        )
    ):
        raise MemoryInputError(
            _(
                "{path} must be an object from layer numbers to the fields that differ in that "
                'layer, e.g. {{"5": {{"head_dim": 512}}}}: correct it, or remove it'
            ).format(path=_path(path))
        )
    if _COUNT_KEY.search(key) and isinstance(value, int) and not isinstance(value, bool) and value > LIMITS["n_layer"]:
        raise MemoryInputError(
            _(
                "{path} = {value}: transformers builds a list with one entry per layer (or block) "
                "it counts; kvviz reads at most {max:,}: correct it"
            ).format(path=_path(path), value=short_repr(value), max=LIMITS["n_layer"])
        )
    return 0


def check_layer_types(cfg: dict[str, Any], known: bool = False, transformers_types: tuple[str, ...] = ()) -> None:
    """Refuse, in one sentence naming it and its layer, a layer type transformers does not know (never counted as
    attention), and a layer list whose length disagrees with the layer count. A config whose model_type transformers
    does not know is read as written: a layer that is not attention is refused there too (kvviz cannot size its
    state without the model's class).

    known: the installed transformers knows cfg's model_type; transformers_types: the layer types its classes accept
    (kvviz.memory.hf_config.TRANSFORMERS_LAYER_TYPES). A config without a model_type passes neither: it is read as
    written, and no transformers is imported for it."""
    types = cfg.get("layer_types")
    n_layer = cfg.get("num_hidden_layers")
    model_type = cfg.get("model_type")
    if isinstance(types, list):
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
