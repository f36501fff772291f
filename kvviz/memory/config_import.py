"""Hugging Face config.json import: read a model's cache layout the way transformers itself would build it.

`parse_hf_config` returns a kvviz.memory.KVConfig plus the fields it used, the ones it filled in, and notes. It
takes three steps, each in its own module:

    kvviz.memory.config_json    the text read into a dict and bounded before anything reads it (`precheck`,
                                `bound_nesting`, `bound_allocations`): one sentence naming a refused field
    kvviz.memory.hf_config      transformers' own config class for the model_type
                                (`CONFIG_MAPPING[model_type](**config)`, what `AutoConfig` does), built in a child
                                process bounded in memory and time (kvviz.memory.config_build); transformers (and
                                torch) at its top, so it is imported here only for a config that names a model_type
    kvviz.memory.config_import  the cache layout read from that object (here), or from the fields as written

When the config names a `model_type` that the installed transformers knows, every field the file leaves out takes
transformers' default for that architecture, and derived fields (Gemma 3's 5 local : 1 global `layer_types`, Qwen2's
`max_window_layers` rule) come from transformers' own code, not a copied table. The fields filled that way are listed
in `ImportedConfig.defaults`. Without a known `model_type` the fields are read as written (no defaults besides MHA and
float32). Where transformers' own class refuses, its whole reason is quoted on one line.
Multimodal configs (Gemma 3, LLaVA) are read from their text model; encoder-decoder models (T5, BART) get a
second KVConfig for the cross-attention cache (one K and V per encoder token per decoder layer).


Every decoder config is also read as the list of layers transformers' cache builds from it (kvviz.memory.layers,
`ImportedConfig.layers`). A model whose layers are not one attention layout (linear-attention and SSM hybrids,
MLP blocks without attention, indexers, Gemma 4's full-attention layers with head_dim 512 beside sliding ones
with 256: transformers' `per_layer_config`) is answered by that list (`_parse_layers`), never refused and never
counted as all attention; `config` then holds its attention layers' shape, for the form. A layer type transformers
does not know is refused naming it and its layer (`config_json.check_layer_types`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

from kvviz.i18n import N_, Joined, Message, _
from kvviz.inputs import echo
from kvviz.memory import (
    LIMITS,
    KVConfig,
    MemoryInputError,
    check_int,
    head_dim_from_hidden,
    layers,
    resolve_dtype,
    serving,
    short_repr,
)
from kvviz.memory.config_fields import config_field
from kvviz.memory.config_json import (
    MAX_MESSAGE_CHARS,
    bound_allocations,
    bound_nesting,
    check_layer_types,
    load_json_object,
    precheck,
)
from kvviz.memory.hf_cache import falcon_notes, kv_heads_transformers_stores, window_fields, window_from_dict

MAX_NAME_CHARS = 80  # `_name_or_path` as shown: a label, not a payload


@dataclass(frozen=True)
class ImportedConfig:
    config: KVConfig | None  # a uniform layout's self-attention cache; for a model of mixed layers, its attention
    # layers' shape as if every layer were one (None: no attention layer at all, e.g. Mamba-2)
    used: dict[str, Any]  # config.json field -> value, for every field that fed the calculator
    missing: tuple[Message | Joined, ...]  # what was not in the file and what was taken instead (defaults
    # included); lazy texts, drawn in the reader's language (.shown())
    max_context: int | None
    extras: dict[str, int]  # n_embd, d_ff, vocab_size when known (for op counts)
    defaults: dict[str, Any] = field(default_factory=dict)  # field -> value taken from transformers' defaults
    notes: tuple[Message, ...] = ()  # where transformers' own cache differs from the figure kvviz shows, and why
    cross_attention: KVConfig | None = None  # encoder-decoder: cache of encoder K/V, one row per encoder token
    transformers_kv_heads: int | None = None  # heads transformers' DynamicCache stores, if not config.n_kv_heads
    transformers_class: str | None = None  # the config class that resolved the fields, e.g. "Gemma3TextConfig"
    layers: layers.CacheLayers | None = None  # layer by layer, as DynamicCache(config=...) builds it (decoders)


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
        raise MemoryInputError(
            _(
                "a field of this config has a value of the wrong kind ({kind}): check "
                "that layers, heads and head sizes are whole numbers"
            ).format(kind=type(exc).__name__)
        ) from None


def _parse(raw: dict[str, Any], dtype: str | None) -> ImportedConfig:
    bound_nesting(raw)
    text_raw, text_note = _text_config(raw)
    precheck(raw)
    precheck(text_raw)
    bound_allocations(raw)
    if text_note is not None:  # transformers reads such a config from its top-level fields: hand it those
        raw = {k: v for k, v in raw.items() if k != "text_config"}
    for cfg in (raw, text_raw):
        _check_layer_types(cfg)
    resolved = _hf_config().transformers_config(raw) if isinstance(raw.get("model_type"), str) else None
    imported = (
        _parse_as_written(raw, text_raw, dtype) if resolved is None else _parse_resolved(raw, text_raw, resolved, dtype)
    )
    if text_note is not None:
        imported = replace(imported, missing=(*imported.missing, text_note))
    max_ctx = imported.max_context
    return replace(
        imported,
        used={k: _shown(v) for k, v in imported.used.items()},
        max_context=max_ctx if max_ctx is not None and 1 <= max_ctx <= LIMITS["context_len"] else None,
        extras={k: v for k, v in imported.extras.items() if 1 <= v <= 10**12},
    )


def _check_layer_types(cfg: dict[str, Any]) -> None:
    """config_json.check_layer_types with transformers' knowledge of cfg's model_type; a config without one is read
    as written, and no transformers is imported for it (the memory page's form, the pure tests)."""
    model_type = cfg.get("model_type")
    if not isinstance(model_type, str):
        check_layer_types(cfg)
        return
    hf_config = _hf_config()
    check_layer_types(cfg, hf_config.known_model_type(model_type), hf_config.TRANSFORMERS_LAYER_TYPES)


def _text_config(raw: dict[str, Any]) -> tuple[dict[str, Any], Message | None]:
    """(the language model's fields, a note): `text_config` when it is an object; when it is anything else,
    transformers' config classes without a text sub-config ignore it and read the top-level fields (so does kvviz,
    and says so); those with one (LLaVA, Gemma 3) refuse it, and so does kvviz, in one sentence."""
    text = raw.get("text_config")
    if text is None:
        return {}, None
    if isinstance(text, dict):
        sub_type = text.get("model_type")
        if sub_type is not None and not (isinstance(sub_type, str) and _hf_config().known_model_type(sub_type)):
            raise MemoryInputError(
                _(
                    "text_config's model_type {value} is not one the installed "
                    "transformers knows: use the language model's own type (e.g. llama, "
                    "gemma3_text), or remove it"
                ).format(value=short_repr(sub_type))
            )
        return text, None
    model_type = raw.get("model_type")
    if (
        isinstance(model_type, str)
        and _hf_config().known_model_type(model_type)
        and "text_config" in _hf_config().sub_configs(model_type)
    ):
        raise MemoryInputError(
            _(
                "text_config must be a JSON object ({{...}}) holding the language model's fields, "
                "not {value}: transformers' {model_type} config refuses it too"
            ).format(value=short_repr(text), model_type=model_type)
        )
    return {}, Message.lazy(
        N_(
            "text_config {value} is not an object of fields: ignored, as transformers does; the top-level fields were read"
        ),
        value=short_repr(text),
    )


def _hf_config() -> ModuleType:
    """kvviz.memory.hf_config, for a config that names a model_type. It imports transformers (and torch) at its top;
    a config without a model_type is read as written without them (the memory page's form, the pure tests), so this
    is the one place config_import imports it, when a model_type asks."""
    from kvviz.memory import hf_config

    return hf_config


def _shown(value: Any) -> Any:
    """A used field's value as the report may echo it: kept when short, else summarised (never a megabyte)."""
    if (
        value is None
        or isinstance(value, (bool, float, Message))
        or (isinstance(value, int) and value.bit_length() <= 96)
    ):
        return value  # a Message: kvviz's own words about the field (drawn in the reader's language), never long
    return value if isinstance(value, str) and len(value) <= 60 else short_repr(value, 60)


def display_name(raw: dict[str, Any], text_raw: dict[str, Any] | None = None) -> str:
    """The config's label: `_name_or_path` (cut to MAX_NAME_CHARS), else its model_type, else the file's name (the same
    in every language: a name is kept, and drawn as written)."""
    cfg = {**raw, **(text_raw or {})}
    name = cfg.get("_name_or_path") or cfg.get("model_type") or "config.json"
    name = str(name) if isinstance(name, str) else short_repr(name)
    return echo.one_line(name, MAX_NAME_CHARS)


# ----- through transformers' config class --------------------------------------------------------------------
class _Reading:
    """What one import read from transformers' config object: `used` (fields the file gave), `defaults` (fields
    transformers' class filled in), and `take`, which files a field under one or the other."""

    def __init__(self, t: Any, raw: dict[str, Any], text_raw: dict[str, Any]):
        given = {**raw, **text_raw} if text_raw else dict(raw)
        aliases = dict(type(t).attribute_map)
        self.given_names = (
            set(given) | {aliases.get(k, k) for k in given} | {a for a, n in aliases.items() if n in given}
        )
        self.used = _used_start(raw, text_raw)
        self.defaults: dict[str, Any] = {}

    def take(self, name: str, value: Any, *sources: str) -> Any:
        (self.used if {name, *sources} & self.given_names else self.defaults)[name] = value
        return value


def _used_start(raw: dict[str, Any], text_raw: dict[str, Any]) -> dict[str, Any]:
    used: dict[str, Any] = {"model_type": raw.get("model_type")}
    if text_raw:
        used["text_config"] = Message.lazy(N_("(the language model's fields were read from here)"))
    return used


def _parse_resolved(raw: dict[str, Any], text_raw: dict[str, Any], top: Any, dtype: str | None) -> ImportedConfig:
    enc_dec = bool(getattr(top, "is_encoder_decoder", False)) and (
        hasattr(top, "num_decoder_layers") or hasattr(top, "decoder_layers")
    )
    t = top if enc_dec else top.get_text_config(decoder=True)  # (BART's decoder view resets to defaults)
    stack = None if enc_dec else _layer_list(raw, text_raw, top, t, dtype)
    if stack is not None and not plain_attention(stack):  # hybrids, per-layer shapes: counted layer by layer
        return _parse_layers(raw, text_raw, top, t, stack, dtype)
    t = uniform_layers(t)
    reading = _Reading(t, raw, text_raw)
    n_layer, n_head = _layers_and_heads(t, enc_dec, reading.take)
    n_kv = kv_heads(t, n_head, reading.take)
    head_dim, mla_rank, mla_rope, derived_note = _head_shape(t, n_head, reading)
    n_layer, shared_note = _cached_layers(t, n_layer)
    window, per_global, first_windowed, window_note = window_fields(t, n_layer, reading.take)
    dt, dtype_note = _dtype(dtype, t, top, reading.used, reading.given_names)
    missing = [
        Message.lazy(N_("{field} = {value} (transformers' {cls} default)"), field=k, value=v, cls=type(t).__name__)
        for k, v in reading.defaults.items()
    ]
    missing += [m for m in (derived_note, dtype_note, window_note, shared_note) if m]
    name = display_name(raw)
    config = KVConfig(
        n_layer,
        n_head,
        n_kv,
        head_dim,
        dt,
        mla_rank,
        mla_rope,
        window,
        per_global,
        name=name,
        first_windowed_layer=first_windowed,
    )
    stored = kv_heads_transformers_stores(t, n_kv)
    extras = _extras(t, getattr(t, "hidden_size", None))
    return ImportedConfig(
        config,
        reading.used,
        tuple(missing),
        _max_context(t),
        extras,
        reading.defaults,
        _resolved_notes(t, enc_dec, n_layer, n_kv, head_dim, window, stored),
        config.cross_attention_layout() if enc_dec else None,
        stored if stored != n_kv else None,
        type(t).__name__,
        None if stack is None else replace(stack, name=name),
    )


def _layer_list(
    raw: dict[str, Any], text_raw: dict[str, Any], top: Any, t: Any, dtype: str | None
) -> layers.CacheLayers | None:
    """The layer list DynamicCache(config=...) builds: the figure every page and the CLI count. None where
    transformers cannot read the layer types: the reading after says why, in its own words (an assistant model: no
    cache of its own)."""
    try:
        return layers.from_transformers(t, _dtype(dtype, t, top, {}, set())[0], display_name(raw, text_raw))
    except layers.LayerTypesUnreadable:
        return None


def _layers_and_heads(t: Any, enc_dec: bool, take: Any) -> tuple[int, int]:
    """(decoder layers, query heads), under the names the config class gives them (an encoder-decoder's decoder)."""
    if enc_dec:
        layers_name = "num_decoder_layers" if hasattr(t, "num_decoder_layers") else "decoder_layers"
        heads_name = "decoder_attention_heads" if hasattr(t, "decoder_attention_heads") else "num_attention_heads"
    else:
        layers_name, heads_name = "num_hidden_layers", "num_attention_heads"
    if getattr(t, layers_name, None) is None or getattr(t, heads_name, None) is None:
        raise MemoryInputError(
            _(
                "transformers' {cls} has no {layers} / {heads}: not an attention model whose KV cache kvviz can count"
            ).format(cls=type(t).__name__, layers=layers_name, heads=heads_name)
        )
    n_layer = take(layers_name, check_int(layers_name, getattr(t, layers_name), hi=LIMITS["n_layer"]))
    return n_layer, take(heads_name, check_int("n_head", getattr(t, heads_name)))


def _head_shape(t: Any, n_head: int, reading: _Reading) -> tuple[int, int, int, Message | None]:
    """(head_dim, MLA latent rank, MLA RoPE key dim, a note where head_dim was derived from hidden_size)."""
    mla_rank = getattr(t, "kv_lora_rank", None) or 0
    hidden = getattr(t, "hidden_size", None)
    if mla_rank:  # MLA caches a latent: no head size is needed or shown besides the query/key head size
        mla_rope = getattr(t, "qk_rope_head_dim", None) or 0
        reading.take("kv_lora_rank", mla_rank)
        reading.take("qk_rope_head_dim", mla_rope)
        return (getattr(t, "qk_nope_head_dim", 0) or 0) + mla_rope, mla_rank, mla_rope, None
    if getattr(t, "head_dim", None):
        derived = isinstance(hidden, int) and hidden % n_head == 0 and t.head_dim == hidden // n_head
        if "head_dim" in reading.given_names or not derived:
            return reading.take("head_dim", t.head_dim), 0, 0, None
        return (
            t.head_dim,
            0,
            0,
            Message.lazy(N_("head_dim (took hidden_size / num_attention_heads = {n})"), n=t.head_dim),
        )
    return head_dim_from_hidden(check_int("hidden_size", hidden, hi=10**7), check_int("n_head", n_head)), 0, 0, None


def _resolved_notes(
    t: Any, enc_dec: bool, n_layer: int, n_kv: int, head_dim: int, window: int | None, stored: int
) -> tuple[Message, ...]:
    """Where transformers' own cache differs from the figure kvviz shows: the cross-attention cache, Falcon's
    stored heads, the sliding layers' window - 1."""
    notes: list[Message] = []
    if enc_dec:
        notes.append(
            Message.lazy(
                N_(
                    "Encoder-decoder: besides the self-attention cache above, each of the {layers} decoder "
                    "layers caches K and V of every encoder token for cross-attention (encoder length x "
                    "{layers} layers x {heads} heads x {head_dim} x 2 numbers), computed once per input."
                ),
                layers=n_layer,
                heads=n_kv,
                head_dim=head_dim,
            )
        )
    notes += falcon_notes(t, n_kv, stored)
    if window is not None:
        notes.append(
            Message.lazy(
                N_(
                    "transformers' sliding layers keep the last {kept:,} tokens (window - 1), kvviz counts "
                    "{window:,}: the token being added is attended to without being stored yet."
                ),
                kept=window - 1,
                window=window,
            )
        )
    return tuple(notes)


def _max_context(t: Any) -> int | None:
    max_ctx = getattr(t, "max_position_embeddings", None)
    return max_ctx if isinstance(max_ctx, int) else None


def plain_attention(stack: layers.CacheLayers) -> bool:
    """Every layer full, sliding or MLA attention of one K/V shape (windows aside), or a layer that reuses an earlier
    layer's K/V (Gemma 3n's and Gemma 4's shared layers, which the KVConfig reading leaves out): what one KVConfig
    describes. An MLP/MoE block without attention (Nemotron-H) is not: the layer list counts it as nothing."""
    attention = stack.attention_layers()
    shared = [x for x in stack.layers if x.kind == "none" and x.layer_type not in ("mlp", "moe")]
    return (
        bool(attention)
        and len(attention) + len(shared) == stack.n_layer
        and {x.kind for x in attention} <= {"full", "sliding", "mla"}
        and len({x.parts for x in attention}) == 1
    )


def _parse_layers(
    raw: dict[str, Any], text_raw: dict[str, Any], top: Any, t: Any, stack: layers.CacheLayers, dtype: str | None
) -> ImportedConfig:
    """A model whose layers are not all attention of one shape (Qwen3-Next, Jamba, Mamba-2, Gemma 4 ...): the layer
    list is the result. `config` is its attention layers' shape as if every layer were one (None without
    attention): the comparison "every layer full attention", and what the form shows."""
    given = {**raw, **text_raw} if text_raw else dict(raw)
    used = _used_start(raw, text_raw)
    dt, dtype_note = _dtype(dtype, t, top, used, set(given))
    types = getattr(t, "layer_types", None)
    if isinstance(types, (list, tuple)):
        counts: dict[str, int] = {}
        for layer_type in types:
            counts[str(layer_type)] = counts.get(str(layer_type), 0) + 1
        used["layer_types"] = " + ".join(f"{n} {kind}" for kind, n in counts.items())
    for key in (
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "index_head_dim",
        "sliding_window",
        "attention_chunk_size",
        "linear_num_key_heads",
        "linear_num_value_heads",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "linear_conv_kernel_dim",
        "linear_num_heads",
        "linear_head_dim",
        "mamba_d_state",
        "mamba_d_conv",
        "mamba_expand",
        "mamba_n_heads",
        "mamba_d_head",
        "mamba_n_groups",
        "mamba_num_heads",
        "mamba_head_dim",
        "ssm_state_size",
        "state_size",
        "conv_kernel",
        "num_heads",
        "n_groups",
        "conv_L_cache",
        "lru_width",
        "conv1d_width",
        "attention_window_size",
        "num_kv_shared_layers",
        "global_head_dim",
        "num_global_key_value_heads",
    ):
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
            config = KVConfig(
                stack.n_layer,
                heads or 1,
                1,
                int(keys.shape[-1]) + int(rope),
                dt,
                int(keys.shape[-1]),
                int(rope),
                name=name,
            )
        else:
            kv_heads, head_dim = int(keys.shape[0]), int(keys.shape[-1])
            heads = heads if isinstance(heads, int) and heads >= kv_heads and heads % kv_heads == 0 else kv_heads
            config = KVConfig(stack.n_layer, heads, kv_heads, head_dim, dt, name=name)
    notes = list(layer_notes(stack))
    extras = _extras(t, getattr(t, "hidden_size", None))
    return ImportedConfig(
        config, used, tuple(missing), _max_context(t), extras, {}, tuple(notes), None, None, type(t).__name__, stack
    )


def _global_attr(t: Any, key: str) -> Any:
    """A config's global value of `key`, or None: a heterogeneous config (Gemma 4) refuses to give one for a field
    that varies by layer (its per-layer values are in the layer list)."""
    try:
        return getattr(t, key, None)
    except Exception:  # noqa: BLE001 -- transformers' AmbiguousGlobalPerLayerAttributeError, among others
        return None


def layer_notes(stack: layers.CacheLayers) -> tuple[Message, ...]:
    """What the layer list means for the figure: which layers grow, which hold a fixed state, and where transformers'
    storage differs from vLLM's (cited in kvviz.memory.serving)."""
    notes = []
    windowed = [x for x in stack.layers if x.window is not None]
    if windowed:
        notes.append(
            Message.lazy(
                N_(
                    "transformers' windowed layers keep the last window - 1 tokens ({kept:,}); the figure counts "
                    "that, and the peak during a step holds one row more per windowed layer."
                ),
                kept=windowed[0].window - 1,
            )
        )
    notes += serving.vllm_notes(stack)
    return tuple(notes)


# What shapes a layer's K/V cache: these must be one value across the layers that hold a cache.
_KV_SHAPE_ATTRS = (
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "hidden_size",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "sliding_window",
    "attention_chunk_size",
    "multi_query",
    "num_kv_heads",
    "layer_types",
)


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
    sliding = [
        i for i in range(n_layer) if isinstance(types, list) and i < len(types) and types[i] == "sliding_attention"
    ]
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
        raise MemoryInputError(
            _(
                "transformers' {cls} gives its layers different K/V shapes ({fields}, in "
                "per_layer_config); kvviz counts one shape for every layer, so it cannot count this "
                "model yet"
            ).format(cls=type(t).__name__, fields="; ".join(differ))
        )
    return view


def _cached_layers(t: Any, n_layer: int) -> tuple[int, Message | None]:
    """(layers holding a cache of their own, note): Gemma 4's last `num_kv_shared_layers` layers reuse an earlier
    layer's K/V (transformers' `kv_sharing_modes`: "reuse"), so they add nothing to the cache."""
    shared = getattr(t, "num_kv_shared_layers", None)
    if not shared or not hasattr(type(t), "kv_sharing_modes"):
        return n_layer, None
    shared = check_int("num_kv_shared_layers", shared, lo=0, hi=LIMITS["n_layer"])
    if shared >= n_layer:
        raise MemoryInputError(
            _(
                "num_kv_shared_layers = {shared:,} of {layers:,} layers: every layer reuses K/V "
                "computed elsewhere (an assistant model that reads its target model's cache), so "
                "it has no KV cache of its own to count"
            ).format(shared=shared, layers=n_layer)
        )
    try:
        modes = t.kv_sharing_modes
    except (ValueError, TypeError, IndexError) as exc:
        raise MemoryInputError(
            _("transformers' {cls} refuses this layer sharing: {reason}").format(
                cls=type(t).__name__, reason=echo.one_line(exc, MAX_MESSAGE_CHARS)
            )
        ) from None
    cached = sum(mode != "reuse" for mode in modes)
    if list(modes[cached:]) != ["reuse"] * (n_layer - cached):  # the shared layers are the last ones
        raise MemoryInputError(
            _(
                "transformers' {cls} shares K/V between layers in a pattern kvviz cannot count (num_kv_shared_layers)"
            ).format(cls=type(t).__name__)
        )
    return cached, Message.lazy(
        N_(
            "num_kv_shared_layers = {shared:,}: the last {shared:,} of {layers:,} layers reuse an earlier "
            "layer's K/V, so {cached:,} layers hold a cache (counted as the layers)"
        ),
        shared=shared,
        layers=n_layer,
        cached=cached,
    )


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
    return {
        k: v
        for k, v in (("n_embd", hidden), ("d_ff", _d_ff(t, hidden)), ("vocab_size", getattr(t, "vocab_size", None)))
        if isinstance(v, int)
    }


def _d_ff(t: Any, hidden: Any) -> Any:
    for name in ("intermediate_size", "n_inner", "ffn_dim", "d_ff", "decoder_ffn_dim", "ffn_hidden_size"):
        if isinstance(getattr(t, name, None), int):
            return getattr(t, name)
    return 4 * hidden if getattr(t, "model_type", None) == "gpt2" and isinstance(hidden, int) else None


def _dtype(dtype: str | None, t: Any, top: Any, used: dict[str, Any], given: set[str]) -> tuple[str, Message | None]:
    """The cache dtype: the one asked for, else the config's, else float32 (what transformers loads then)."""
    if dtype is not None:
        return resolve_dtype(dtype).name, None
    found = getattr(t, "dtype", None) or getattr(top, "dtype", None)
    if found is None:
        return "fp32", Message.lazy(
            N_("torch_dtype absent: transformers loads such a model in float32, so kvviz counts fp32")
        )
    name = str(found).removeprefix("torch.")
    used["torch_dtype"] = name
    try:
        return resolve_dtype(name).name, None
    except MemoryInputError:
        return "bf16", Message.lazy(
            N_("dtype {value} is not a cache dtype kvviz knows (took bf16)"), value=short_repr(name)
        )


# ----- as written (no model_type transformers knows) ----------------------------------------------------------


def _first(cfg: dict[str, Any], dimension: str, used: dict[str, Any]) -> Any:
    found = config_field(cfg, dimension)
    if found is None:
        return None
    used[found[0]] = found[1]
    return found[1]


def _parse_as_written(raw: dict[str, Any], text_raw: dict[str, Any], dtype: str | None) -> ImportedConfig:
    cfg = {**raw, **text_raw}
    used: dict[str, Any] = {}
    missing = [
        Message.lazy(
            N_("model_type absent or unknown to the installed transformers: fields read as written, no defaults")
        )
    ]
    if raw.get("is_encoder_decoder"):
        raise MemoryInputError(_("an encoder-decoder config needs its model_type (e.g. t5, bart) to be read"))
    n_layer = _first(cfg, "n_layer", used)
    n_head = _first(cfg, "n_head", used)
    if n_layer is None or n_head is None:
        raise MemoryInputError(
            _(
                "this JSON does not look like a transformer config.json: it has no number of layers "
                "(num_hidden_layers / n_layer) or no number of attention heads (num_attention_heads / n_head)"
            )
        )
    n_kv = _kv_heads_as_written(cfg, n_head, used, missing)
    head_dim, mla_rank, mla_rope, hidden = _head_shape_as_written(cfg, n_head, used, missing)
    window, per_global, first_windowed = window_from_dict(cfg, used, missing)
    dt = _dtype_as_written(dtype, cfg, used, missing)
    max_ctx = _first(cfg, "max_context", used)
    extras = {k: v for k in ("d_ff", "vocab_size") if isinstance(v := _first(cfg, k, used), int)}
    if isinstance(hidden, int):
        extras["n_embd"] = hidden
    name = display_name(raw, text_raw)
    config = KVConfig(
        n_layer,
        n_head,
        n_kv,
        head_dim,
        dt,
        mla_rank,
        mla_rope,
        window,
        per_global,
        name=name,
        first_windowed_layer=first_windowed,
    )
    notes = (
        ()
        if window is None
        else (
            Message.lazy(
                N_("transformers' sliding layers keep the last {kept:,} tokens (window - 1); kvviz counts {window:,}."),
                kept=window - 1,
                window=window,
            ),
        )
    )
    return ImportedConfig(
        config, used, tuple(missing), max_ctx if isinstance(max_ctx, int) else None, extras, notes=notes
    )


def _kv_heads_as_written(cfg: dict[str, Any], n_head: Any, used: dict[str, Any], missing: list[Message]) -> Any:
    n_kv = _first(cfg, "n_kv_heads", used)
    if n_kv is None and cfg.get("multi_query"):
        used["multi_query"] = n_kv = 1
    if n_kv is None:
        missing.append(Message.lazy(N_("num_key_value_heads (took n_head: plain multi-head attention)")))
        n_kv = n_head
    return n_kv


def _head_shape_as_written(
    cfg: dict[str, Any], n_head: Any, used: dict[str, Any], missing: list[Message]
) -> tuple[Any, int, int, Any]:
    """(head_dim, MLA latent rank, MLA RoPE key dim, hidden_size) as the file writes them."""
    mla_rank = cfg.get("kv_lora_rank") or 0
    mla_rope = (cfg.get("qk_rope_head_dim") or 0) if mla_rank else 0
    head_dim = _first(cfg, "head_dim", used)
    hidden = _first(cfg, "hidden", used)
    if mla_rank:
        used["kv_lora_rank"], used["qk_rope_head_dim"] = mla_rank, mla_rope
        return head_dim or (cfg.get("qk_nope_head_dim") or 0) + mla_rope or 1, mla_rank, mla_rope, hidden
    if head_dim is None:
        if hidden is None:
            raise MemoryInputError(_("config.json has neither head_dim nor hidden_size, so the head size is unknown"))
        missing.append(Message.lazy(N_("head_dim (took hidden_size / num_attention_heads)")))
        head_dim = head_dim_from_hidden(check_int("hidden_size", hidden, hi=10**7), check_int("n_head", n_head))
    return head_dim, mla_rank, mla_rope, hidden


def _dtype_as_written(dtype: str | None, cfg: dict[str, Any], used: dict[str, Any], missing: list[Message]) -> str:
    dt = dtype or _first(cfg, "dtype", used)
    if dt is None:
        missing.append(
            Message.lazy(N_("torch_dtype absent: transformers loads such a model in float32, so kvviz counts fp32"))
        )
        return "fp32"
    try:
        resolve_dtype(dt)
    except MemoryInputError:
        missing.append(
            Message.lazy(N_("dtype {value} is not a cache dtype kvviz knows (took bf16)"), value=short_repr(dt))
        )
        return "bf16"
    return dt
