"""Streamlit helpers for the "Count the work" and "Memory budget" pages: URL state, forms, the real cache.

URL state: each page declares its shareable widgets with a default; `seed_from_url` fills st.session_state from
st.query_params once (refusing malformed or out-of-range values with a notice), `push_to_url` writes the
current values back, so a teacher can copy the address bar and reopen the same what-if.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from kvviz import config_import, memory, ops, ui
from kvviz.presets import GPUS, PRESETS, get_preset, ops_presets
from kvviz.stepping import StepEngine

PROBE_PROMPT = "ROMEO: What light through yonder window breaks?"


@dataclass(frozen=True)
class UrlField:
    default: Any  # int, str, or list[str]
    lo: int | None = None
    hi: int | None = None
    choices: tuple[str, ...] | None = None


def _parse(raw: str, field: UrlField) -> Any:
    if isinstance(field.default, bool):
        if raw not in ("true", "false"):
            raise ValueError(raw)
        return raw == "true"
    if isinstance(field.default, int):
        value = int(raw)  # ValueError for "1.5", "nan", "abc"
        if (field.lo is not None and value < field.lo) or (field.hi is not None and value > field.hi):
            raise ValueError(raw)
        return value
    if isinstance(field.default, list):
        items = [x for x in raw.split(",") if x]
        if field.choices is not None and any(x not in field.choices for x in items):
            raise ValueError(raw)
        return items
    if field.choices is not None and raw not in field.choices:
        raise ValueError(raw)
    return raw


def _encode(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    return str(value)


def seed_from_url(fields: dict[str, UrlField]) -> list[str]:
    """Fill session_state from the URL (first run of a session only); returns messages for refused values."""
    refused = []
    for key, field in fields.items():
        if key in st.session_state:
            continue
        raw = st.query_params.get(key)
        value = field.default
        if raw is not None:
            try:
                value = _parse(raw, field)
            except ValueError:
                refused.append(f"Ignored `{key}={raw}` from the link (not a valid value); using {_encode(field.default)!r}.")
        st.session_state[key] = value
    return refused


def push_to_url(fields: dict[str, UrlField]) -> None:
    """Mirror the shareable widgets into the address bar (only keys that differ are rewritten)."""
    for key in fields:
        encoded = _encode(st.session_state.get(key, fields[key].default))
        if st.query_params.get(key) != encoded:
            st.query_params[key] = encoded


def int_input(label: str, key: str, lo: int, hi: int, help: str | None = None, disabled: bool = False) -> int:
    """A bounded whole-number input (the value comes from session_state, seeded from the URL)."""
    return int(st.number_input(label, min_value=lo, max_value=hi, step=1, key=key, help=help, disabled=disabled))


def show_bytes(label: str, n_bytes: int, help: str | None = None, col=None) -> None:
    (col or st).metric(label, memory.short_bytes(n_bytes), help=(help + "\n\n" if help else "") + memory.format_bytes(n_bytes))


@dataclass(frozen=True)
class RealCache:
    cache_len: int
    real_bytes: int  # summed from the DynamicCache tensors
    source: str  # where the reading came from


def real_cache_reading() -> RealCache:
    """The loaded model's real cache: the user's step-through engine if it has run, else a short prefill."""
    loaded = ui.current_model("eager")
    engine = st.session_state.get(ui.STEP_ENGINE_KEY)
    if engine is not None and engine.loaded is loaded and engine.started:
        return RealCache(engine.cache_len, engine.cache_bytes, "your step-through session")
    probe_key = f"mem_probe_{loaded.info.spec}"
    if probe_key not in st.session_state:
        probe = StepEngine(loaded)
        probe.prefill(PROBE_PROMPT)
        st.session_state[probe_key] = RealCache(probe.cache_len, probe.cache_bytes, f"a prefill of {PROBE_PROMPT!r}")
    return st.session_state[probe_key]


# ----- memory page: the config form ----------------------------------------------------------------------------
CUSTOM = "custom"
MEM_DEFAULT_PRESET = "llama-3-8b"
CUSTOM_GPU = "custom"


def _preset_values(name: str) -> dict[str, Any]:
    p = get_preset(name)
    kv = p.kv
    return {
        "mem_layers": kv.n_layer, "mem_heads": kv.n_head, "mem_kv_heads": kv.n_kv_heads, "mem_head_dim": kv.head_dim,
        "mem_mla_rank": kv.mla_latent_rank, "mem_mla_rope": kv.mla_rope_dim, "mem_window": kv.window or 0,
        "mem_local": kv.local_per_global or 0, "mem_dtype": kv.dtype, "mem_params": p.n_params, "mem_hidden": 0,
    }


def memory_fields() -> dict[str, UrlField]:
    d = _preset_values(MEM_DEFAULT_PRESET)
    L = memory.LIMITS
    return {
        "mem_preset": UrlField(MEM_DEFAULT_PRESET, choices=(CUSTOM, *PRESETS)),
        "mem_layers": UrlField(d["mem_layers"], 1, L["n_layer"]),
        "mem_heads": UrlField(d["mem_heads"], 1, L["n_head"]),
        "mem_kv_heads": UrlField(d["mem_kv_heads"], 1, L["n_kv_heads"]),
        "mem_head_dim": UrlField(d["mem_head_dim"], 1, L["head_dim"]),
        "mem_hidden": UrlField(0, 0, 10**7),
        "mem_mla_rank": UrlField(0, 0, L["mla_latent_rank"]),
        "mem_mla_rope": UrlField(0, 0, L["mla_rope_dim"]),
        "mem_window": UrlField(0, 0, L["window"]),
        "mem_local": UrlField(0, 0, 10_000),
        "mem_dtype": UrlField(d["mem_dtype"], choices=tuple(memory.DTYPES)),
        "mem_context": UrlField(4096, 1, L["context_len"]),
        "mem_batch": UrlField(1, 1, L["batch"]),
        "mem_compare": UrlField(["llama-2-7b", "deepseek-v3"], choices=tuple(PRESETS)),
        "mem_gpu": UrlField("NVIDIA A100 80GB", choices=(*GPUS, CUSTOM_GPU)),
        "mem_gpu_gib": UrlField(80, 1, 1_000_000),
        "mem_params": UrlField(d["mem_params"], 0, 10**14),
        "mem_weight_dtype": UrlField("bf16", choices=tuple(memory.DTYPES)),
        "mem_reserve_mib": UrlField(2048, 0, 10**9),
        "mem_block": UrlField(16, 1, 4096),
        "mem_maxlen": UrlField(8192, 1, L["context_len"]),
    }


def apply_preset() -> None:
    """on_change of the preset picker: copy the preset's numbers into the form."""
    name = st.session_state["mem_preset"]
    if name != CUSTOM:
        st.session_state.update(_preset_values(name))
        st.session_state["mem_maxlen"] = get_preset(name).max_context


def apply_import() -> None:
    """on_click of "Use this config.json": parse the upload or the pasted text into the form."""
    upload = st.session_state.get("mem_upload")
    text = upload.getvalue() if upload is not None else st.session_state.get("mem_paste", "")
    try:
        if not text or not str(text).strip():
            raise memory.MemoryInputError("nothing to import: upload a config.json or paste its text")
        imported = config_import.parse_hf_config(text)
    except memory.MemoryInputError as exc:
        st.session_state["mem_import_report"] = ("error", str(exc))
        return
    kv = imported.config
    st.session_state.update({
        "mem_preset": CUSTOM, "mem_layers": kv.n_layer, "mem_heads": kv.n_head, "mem_kv_heads": kv.n_kv_heads,
        "mem_head_dim": kv.head_dim, "mem_mla_rank": kv.mla_latent_rank, "mem_mla_rope": kv.mla_rope_dim,
        "mem_window": kv.window or 0, "mem_local": kv.local_per_global or 0, "mem_dtype": kv.dtype, "mem_hidden": 0,
    })
    if imported.max_context:
        st.session_state["mem_maxlen"] = min(imported.max_context, memory.LIMITS["context_len"])
    used = ", ".join(f"`{k}` = {v}" for k, v in imported.used.items())
    missing = "; ".join(imported.missing) or "nothing"
    st.session_state["mem_import_report"] = ("ok", f"Imported **{kv.name}**. Used: {used}. Missing: {missing}.")


def memory_form() -> memory.KVConfig | None:
    """The layout inputs; returns the config, or None after showing why it is invalid."""
    L = memory.LIMITS
    c = st.columns(4)
    with c[0]:
        layers = int_input("Layers", "mem_layers", 1, L["n_layer"])
        hidden = int_input("Hidden size (0 = give head dim)", "mem_hidden", 0, 10**7,
                           help="if set, head dim = hidden size / query heads")
        dtype = st.selectbox("Cache dtype", list(memory.DTYPES), key="mem_dtype",
                             format_func=lambda d: f"{d}: {memory.DTYPES[d].note}")
    with c[1]:
        heads = int_input("Query heads", "mem_heads", 1, L["n_head"])
        kv_heads = int_input("KV heads", "mem_kv_heads", 1, L["n_kv_heads"], help="= query heads: MHA; 1: MQA; between: GQA")
    with c[2]:
        head_dim = int_input("Head dim", "mem_head_dim", 1, L["head_dim"], disabled=hidden > 0,
                             help="often hidden size / query heads")
        mla_rank = int_input("MLA latent rank (0 = off)", "mem_mla_rank", 0, L["mla_latent_rank"],
                             help="DeepSeek's kv_lora_rank: the cache holds this latent instead of per-head K and V")
        mla_rope = int_input("MLA RoPE key dim", "mem_mla_rope", 0, L["mla_rope_dim"], disabled=mla_rank == 0)
    with c[3]:
        window = int_input("Sliding window (0 = off)", "mem_window", 0, L["window"])
        local = int_input("Local layers per global (0 = all local)", "mem_local", 0, 10_000, disabled=window == 0,
                          help="Gemma 3: 5 (five 1024-token window layers, then one global layer)")
    try:
        if hidden:
            head_dim = memory.head_dim_from_hidden(hidden, heads)
        st.caption(f"Head dim {head_dim}; query heads x head dim = {heads * head_dim:,}. Quantized dtypes add an fp16 "
                   f"scale + fp16 zero point per {memory.DEFAULT_QUANT_GROUP} numbers of each vector.")
        return memory.KVConfig(
            layers, heads, kv_heads, head_dim, dtype, mla_rank, mla_rope if mla_rank else 0,
            window or None, (local or None) if window else None,
            name=st.session_state["mem_preset"] if st.session_state["mem_preset"] != CUSTOM else "your config",
        )
    except memory.MemoryInputError as exc:
        st.error(f"This layout cannot be computed: {exc}.")
        return None


# ----- ops page: which model ------------------------------------------------------------------------------------
LOADED = "loaded model (sidebar)"


def ops_fields() -> dict[str, UrlField]:
    return {
        "ops_model": UrlField(LOADED, choices=(LOADED, *ops_presets(), CUSTOM)),
        "ops_prompt": UrlField(16, 1, 10**6),
        "ops_new": UrlField(200, 1, 10**6),
        "ops_lm": UrlField("last", choices=("last", "all")),
        "ops_flops": UrlField(False),
        "ops_log": UrlField(False),
        "ops_quantity": UrlField("total", choices=("total", "attention", "linear", *ops.COMPONENTS)),
        "ops_layers": UrlField(12, 1, 10_000), "ops_heads": UrlField(12, 1, 100_000),
        "ops_kv_heads": UrlField(12, 1, 100_000), "ops_head_dim": UrlField(64, 1, 100_000),
        "ops_hidden": UrlField(768, 1, 10**6), "ops_dff": UrlField(3072, 1, 10**7),
        "ops_vocab": UrlField(50257, 1, 10**7), "ops_gated": UrlField(False),
    }


def ops_shape() -> tuple[ops.ModelShape | None, int | None]:
    """The chosen shape and its context limit (None if unknown); None shape after showing why it is invalid."""
    choice = st.session_state["ops_model"]
    if choice == LOADED:
        info = ui.current_model("eager").info
        return ops.ModelShape.from_info(info), info.n_positions
    if choice != CUSTOM:
        preset = ops_presets()[choice]
        st.caption(f"Source: [{preset.source}]({preset.source}) · {preset.paper}")
        return preset.shape, preset.max_context
    c = st.columns(4)
    with c[0]:
        layers, heads = int_input("Layers", "ops_layers", 1, 10_000), int_input("Query heads", "ops_heads", 1, 100_000)
    with c[1]:
        kv, head_dim = int_input("KV heads", "ops_kv_heads", 1, 100_000), int_input("Head dim", "ops_head_dim", 1, 100_000)
    with c[2]:
        hidden, d_ff = int_input("Hidden size", "ops_hidden", 1, 10**6), int_input("MLP width", "ops_dff", 1, 10**7)
    with c[3]:
        vocab = int_input("Vocabulary", "ops_vocab", 1, 10**7)
        gated = st.checkbox("Gated MLP (SwiGLU: 3 matrices)", key="ops_gated")
    try:
        return ops.ModelShape(layers, heads, kv, head_dim, hidden, d_ff, vocab, 3 if gated else 2, "custom"), None
    except ops.OpsInputError as exc:
        st.error(f"This shape cannot be counted: {exc}.")
        return None, None


def big_number(n: int) -> str:
    """'245.3 million' style for metric tiles (the exact integer goes in the tooltip)."""
    for size, word in ((10**18, "quintillion"), (10**15, "quadrillion"), (10**12, "trillion"), (10**9, "billion"), (10**6, "million")):
        if abs(n) >= size:
            return f"{n / size:,.4g} {word}"
    return f"{n:,}"
