"""Memory budget: exact KV-cache bytes for any model layout, what fits on a GPU, and textbook figures checked.

Every input is a widget bound to the URL (`bind="query-params"`), so the address bar is a shareable what-if.
The first view imports no torch: only the "The loaded model" tab runs the model. The four calculator tabs always run
(their inputs stay in the URL whichever tab is open); the textbook and loaded-model tabs render only when open.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import streamlit as st

from kvviz import claims, i18n, memory, routes
from kvviz.figures import MAX_LEGEND_ENTRIES, export_config
from kvviz.figures import layers as layer_figs
from kvviz.figures import memory as figs
from kvviz.i18n import N_, _, ngettext
from kvviz.inputs import echo
from kvviz.inputs.links import link_refusals
from kvviz.memory import capacity, config_import, config_json, dtypes, hf_cache, serving, units
from kvviz.memory.layers import KIND_NAMES, KINDS, CacheLayers
from kvviz.memory.presets import GPUS, LAYERED_PRESETS, PRESETS, get_preset, past_trained_positions
from kvviz.ui import a11y, assets, bounded, engines, models, router, url_state

URL = url_state.of(routes.MEMORY_BUDGET)  # the page's keys in its link (its widgets bind the rest: mem_*)
CUSTOM, DEFAULT_PRESET, CUSTOM_GPU = "custom", "llama-3-8b", "custom"
PROBE_PROMPT = "ROMEO: What light through yonder window breaks?"
RESIDUAL_DEFAULT = dtypes.transformers_quantized_defaults().get("residual_length", 0)
TABS = [
    N_("Size vs context"),
    N_("Per layer"),
    N_("What fits"),
    N_("Paged vs flat"),
    N_("Textbook figures"),
    N_("The loaded model"),
]


def custom_label(value: str) -> str:
    """Display label of a picker option: "custom" in the reader's language, names as they are."""
    return _("custom") if value == CUSTOM else value


def layout_values(kv: memory.KVConfig) -> dict[str, Any]:
    """The layout boxes' values for a config (a preset's, a mixed preset's attention layers, an import's): the one
    KVConfig -> mem_* mapping (memory_form reads the boxes back into a KVConfig). The head dim is given, so the
    hidden size is 0."""
    return {
        "mem_layers": kv.n_layer,
        "mem_heads": kv.n_head,
        "mem_kv_heads": kv.n_kv_heads,
        "mem_head_dim": kv.head_dim,
        "mem_mla_rank": kv.mla_latent_rank,
        "mem_mla_rope": kv.mla_rope_dim,
        "mem_window": kv.window or 0,
        "mem_local": kv.local_per_global or 0,
        "mem_window_from": kv.first_windowed_layer,
        "mem_dtype": kv.dtype,
        "mem_hidden": 0,
    }


def preset_values(name: str) -> dict[str, Any]:
    if name in LAYERED_PRESETS:  # a uniform one fills the form whole; a mixed one shows its attention layers' shape
        layered = LAYERED_PRESETS[name]
        return {
            **layout_values(layered.imported().config),
            "mem_params": layered.n_params or 0,
            "mem_maxlen": layered.max_context or 4096,
        }
    p = get_preset(name)
    return {**layout_values(p.kv), "mem_params": p.n_params, "mem_maxlen": p.max_context}


def defaults() -> dict[str, Any]:
    """Each bound widget's default: the chosen preset's numbers (the link's preset on a first visit), so a link
    carries only what differs from its preset; `bind="query-params"` leaves defaults out of the URL."""
    linked = URL.raw("preset")
    known = (*PRESETS, *LAYERED_PRESETS)
    start = st.session_state.get("mem_preset", linked if linked in known else DEFAULT_PRESET)
    return {
        **preset_values(start if start in known else DEFAULT_PRESET),
        "mem_context": 4096,
        "mem_batch": 1,
        "mem_gpu_gib": 80,
        "mem_reserve_mib": 2048,
        "mem_block": 16,
        "mem_residual": RESIDUAL_DEFAULT,
    }


def apply_preset() -> None:
    """on_change of the preset picker: copy the preset's numbers into the form (through st.session_state, the one
    way to set a URL-bound widget; deleting the keys instead would let the page's first link win again)."""
    if st.session_state["mem_preset"] != CUSTOM:
        st.session_state.update(preset_values(st.session_state["mem_preset"]))
        st.session_state.pop("mem_encdec", None)  # a preset is decoder-only: no cross-attention cache
        st.session_state.pop("mem_layers_text", None)  # an imported layer list gives way to the preset


def apply_import() -> None:
    """on_click of "Use this config.json": parse the upload or the pasted text into the form."""
    upload = st.session_state.get("mem_upload")
    text = upload.getvalue() if upload is not None else st.session_state.get("mem_paste", "")
    imported, report = read_config(text)
    # the report, its language and the text it was read from (import_report reads it again in another language)
    st.session_state["mem_import_report"] = (*report, i18n.current(), text)
    if imported is None:  # refused: the form untouched
        return
    kv = imported.config
    mixed = imported.layers is not None and not config_import.plain_attention(imported.layers)
    if mixed:  # its layers are the answer: kept (as its text) while "custom" stays chosen
        st.session_state["mem_layers_text"] = text
    else:
        st.session_state.pop("mem_layers_text", None)
    if kv is None:  # no attention layer at all (Mamba-2): the form keeps its numbers, the layer list answers
        st.session_state.update({"mem_preset": CUSTOM, "mem_dtype": imported.layers.dtype})
        st.session_state["mem_encdec"] = None
        return
    st.session_state.update(
        {
            "mem_preset": CUSTOM,
            **layout_values(kv),
            **({"mem_maxlen": imported.max_context} if imported.max_context else {}),
        }
    )
    # encoder-decoder: its name; the cross-attention cache is then counted in the total once the encoder length is in
    st.session_state["mem_encdec"] = kv.name if imported.cross_attention is not None else None


def read_config(text: str | bytes) -> tuple[config_import.ImportedConfig | None, tuple[str, str]]:
    """(the import or None, (kind, one-paragraph report in the current language)) for a config.json's text."""
    try:
        if not text or not str(text).strip():
            raise memory.MemoryInputError(_("nothing to import: upload a config.json or paste its text"))
        imported = config_import.parse_hf_config(text)
    except memory.MemoryInputError as exc:  # parse_hf_config raises nothing else: one line
        return None, ("error", _("Not imported: {reason}.").format(reason=echo.literal(i18n.as_clause(str(exc)), None)))
    used = i18n.item_sep().join(  # the file's words, and kvviz's about a field (a Message) in the reader's
        f"{echo.code(k)} = {echo.literal(i18n.shown(v))}" for k, v in imported.used.items()
    )
    name = imported.layers.name if imported.layers is not None else imported.config.name
    return imported, (
        "ok",
        _("Imported **{name}**. Used: {used}. Missing: {missing}. {notes}").format(
            name=echo.literal(name),
            used=used,
            missing=i18n.list_sep().join(echo.literal(m.shown(), None) for m in imported.missing) or _("nothing"),
            notes=i18n.join_sentences(echo.literal(n.shown(), None) for n in imported.notes),
        ),
    )


def import_report() -> tuple[str, str] | None:
    """The last import's (kind, text); read again from the same text when the language changed since."""
    report = st.session_state.get("mem_import_report")
    if report is None:
        return None
    kind, message, lang, source = report
    if lang != i18n.current():
        kind, message = read_config(source)[1]
        st.session_state["mem_import_report"] = (kind, message, i18n.current(), source)
    return kind, message


# Each box's setting (kvviz.memory.INPUTS: the bounds `kvviz memory` and the calculator check too)
INPUT_OF = {
    "mem_layers": "n_layer",
    "mem_hidden": "hidden_size",
    "mem_heads": "n_head",
    "mem_kv_heads": "n_kv_heads",
    "mem_residual": "quant_residual_tokens",
    "mem_head_dim": "head_dim",
    "mem_mla_rank": "mla_latent_rank",
    "mem_mla_rope": "mla_rope_dim",
    "mem_window": "window",
    "mem_local": "local_per_global",
    "mem_window_from": "first_windowed_layer",
    "mem_params": "n_params",
    "mem_reserve_mib": "reserve_mib",
    "mem_gpu_gib": "gpu_gib",
    "mem_block": "block_size",
    "mem_maxlen": "max_len",
    "mem_context": "context_len",
    "mem_batch": "batch",
}


def int_input(label: str, key: str, **kwargs: Any) -> int:
    """A bounded whole-number input whose value lives in the URL; its default is the chosen preset's. A value a
    browser sends past the setting's bounds is named (kvviz.ui.bounded)."""
    return bounded.linked_number(
        st, memory.INPUTS[INPUT_OF[key]], label, key=key, value=defaults()[key], bind="query-params", **kwargs
    )


def show_bytes(label: str, n_bytes: int, col: Any, help: str | None = None) -> None:
    col.metric(label, units.short_bytes(n_bytes), help=(help + "\n\n" if help else "") + units.format_bytes(n_bytes))


def memory_form(locked: bool = False) -> memory.KVConfig | None:
    """The layout inputs; returns the config, or None after showing why it is invalid. `locked`: a model of mixed
    layers answers from its own layer list; the boxes show its attention layers' shape and stay as they are."""
    c = st.columns(4)
    with c[0]:
        layers = int_input(_("Layers"), "mem_layers", disabled=locked)
        hidden = int_input(
            _("Hidden size (0 = give head dim)"),
            "mem_hidden",
            disabled=locked,
            help=_("if set, head dim = hidden size / query heads"),
        )
        dtype = st.selectbox(
            _("Cache dtype"),
            list(dtypes.DTYPES),
            index=list(dtypes.DTYPES).index(defaults()["mem_dtype"]),
            key="mem_dtype",
            bind="query-params",
            help="\n".join(f"- {d}: {_(t.note)}" for d, t in dtypes.DTYPES.items()),
        )
    with c[1]:
        heads = int_input(_("Query heads"), "mem_heads", disabled=locked)
        kv_heads = int_input(
            _("KV heads"), "mem_kv_heads", disabled=locked, help=_("= query heads: MHA; 1: MQA; between: GQA")
        )
        residual = int_input(
            _("Full-precision residual (tokens)"),
            "mem_residual",
            disabled=not dtypes.DTYPES[dtype].quantized,
            help=_(
                "transformers' QuantizedCache keeps the newest tokens unquantized "
                "(`residual_length`, default {n} read from its QuantizedLayer); 0 = off"
            ).format(n=RESIDUAL_DEFAULT),
        )
    with c[2]:
        head_dim = int_input(_("Head dim"), "mem_head_dim", disabled=hidden > 0 or locked)
        mla_rank = int_input(
            _("MLA latent rank (0 = off)"),
            "mem_mla_rank",
            disabled=locked,
            help=_("DeepSeek's kv_lora_rank: the cache holds this latent instead of per-head K and V"),
        )
        mla_rope = int_input(_("MLA RoPE key dim"), "mem_mla_rope", disabled=mla_rank == 0 or locked)
    with c[3]:
        window = int_input(_("Sliding window (0 = off)"), "mem_window", disabled=locked)
        local = int_input(
            _("Local layers per global (0 = all local)"),
            "mem_local",
            disabled=window == 0 or locked,
            help=_("Gemma 3: 5 (five 1024-token window layers, then one global layer)"),
        )
        window_from = int_input(
            _("Full layers below the window"),
            "mem_window_from",
            disabled=window == 0 or local > 0 or locked,
            help=_(
                "Qwen2's max_window_layers: layers 0 .. N-1 keep every token, layers N and up "
                "slide (0 = every layer slides)"
            ),
        )
    try:
        if hidden:
            head_dim = memory.head_dim_from_hidden(hidden, heads)
        if dtypes.DTYPES[dtype].quantized:
            st.caption(
                _(
                    "{dtype}: an fp16 scale + fp16 zero point per {group} numbers. transformers groups keys and "
                    "values per channel; KIVI groups keys per channel, values per token (same bytes). "
                    "Residual: at peak {n:,} newest tokens per layer are held at 16 bits."
                ).format(dtype=dtype, group=dtypes.DEFAULT_QUANT_GROUP, n=max(residual - 1, 0))
            )
        return memory.KVConfig(
            layers,
            heads,
            kv_heads,
            head_dim,
            dtype,
            mla_rank,
            mla_rope if mla_rank else 0,
            window or None,
            (local or None) if window else None,
            quant_residual_tokens=residual,
            first_windowed_layer=window_from if window and not local else 0,
            name=st.session_state["mem_preset"] if st.session_state["mem_preset"] != CUSTOM else _("your config"),
        )
    except memory.MemoryInputError as exc:
        st.error(_("This layout cannot be computed: {reason}.").format(reason=i18n.as_clause(str(exc))))
        return None


@st.cache_data(hash_funcs=models.MODEL_HASH, show_spinner=False)
def probe_reading(loaded: Any) -> tuple[int, int]:
    """A short prefill's real cache (tokens, bytes), once per model for every session (models.MODEL_HASH: spec +
    attention). Numbers only: the words are the page's, in the reader's language."""
    from kvviz.step.engine import StepEngine  # the one torch import of this page, only when this tab opens

    probe = StepEngine(loaded)
    probe.prefill(PROBE_PROMPT)
    return probe.cache_len, probe.held_bytes


def real_cache_reading() -> tuple[int, int, str]:
    """(tokens, bytes summed from the DynamicCache tensors, where from): the step-through engine if it has run."""
    loaded = models.current_model("eager")
    engine = st.session_state.get(engines.STEP_ENGINE_KEY)
    if engine is not None and engine.loaded is loaded and engine.started:
        return engine.cache_len, engine.held_bytes, _("your step-through session")
    return (*probe_reading(loaded), _("a prefill of {prompt}").format(prompt=repr(PROBE_PROMPT)))


def gpu_inputs() -> tuple[int, int, str, int]:
    """(GPU bytes, parameters, weight dtype, reserve MiB) from the What fits tab's boxes."""
    g = st.columns(4)
    gpu = g[0].selectbox(
        "GPU",
        [*GPUS, CUSTOM_GPU],
        index=list(GPUS).index("NVIDIA A100 80GB"),
        key="mem_gpu",
        format_func=custom_label,
        bind="query-params",
    )
    with g[1]:
        params = int_input(_("Model parameters"), "mem_params")
    wdt = g[2].selectbox(
        _("Weight dtype"),
        list(dtypes.DTYPES),
        index=list(dtypes.DTYPES).index("bf16"),
        key="mem_weight_dtype",
        bind="query-params",
    )
    with g[3]:
        reserve = int_input(_("Reserve (MiB)"), "mem_reserve_mib", help=_("activations, CUDA context..."))
    if gpu == CUSTOM_GPU:
        gpu_bytes = int_input(_("Custom memory (GiB)"), "mem_gpu_gib") * units.GIB
    else:
        gpu_bytes = GPUS[gpu].memory_bytes
        st.caption(_("{note} [Vendor page]({url}).").format(note=GPUS[gpu].capacity_note, url=GPUS[gpu].source))
    return gpu_bytes, params, wdt, reserve


def what_fits(cfg: memory.KVConfig, context: int, batch: int) -> None:
    gpu_bytes, params, wdt, reserve = gpu_inputs()
    preset = st.session_state["mem_preset"]
    report = capacity.fit_report(
        cfg,
        gpu_bytes,
        params,
        wdt,
        reserve,
        batch,
        context,
        preset,
        get_preset(preset).max_context if preset in PRESETS else None,
    )
    if report.no_room:
        st.error(report.no_room)
        return
    st.markdown(report.free_line)
    f = st.container(key="mem_metrics_fit").columns(2)
    f[0].metric(report.longest_label, report.longest_value)
    if report.unbounded_note:
        st.info(report.unbounded_note)
    f[1].metric(report.batch_label, report.batch_value)
    if report.over:  # the batch asked for does not fit: say so, with the numbers
        st.error(report.over)
    if report.crossover:
        st.markdown(report.crossover)
    if report.past_window:
        st.caption(report.past_window)


def paged(cfg: memory.KVConfig, context: int, batch: int) -> None:
    p = st.columns(2)
    with p[0]:
        block = int_input(_("Block size (tokens)"), "mem_block")
    with p[1]:
        max_len = int_input(_("Flat buffer: pre-allocated length"), "mem_maxlen")
    if max_len < context:
        st.warning(
            _(
                "The flat buffer ({max_len:,} tokens) is shorter than the context ({context:,}): a flat cache that "
                "size cannot hold this sequence. Drawn with the flat buffer at exactly {context:,} tokens "
                "instead."
            ).format(max_len=max_len, context=context)
        )
        max_len = context
    view = capacity.paged_view(cfg, context, batch, block, max_len)
    st.markdown(
        _(
            "{blocks:,} blocks per sequence; the last one wastes {waste} token slots. The flat buffer wastes "
            "{flat_waste}."
        ).format(
            blocks=view.blocks_per_sequence,
            waste=view.waste_tokens_last_block,
            flat_waste=units.format_bytes(view.flat_bytes - view.used_bytes),
        )
    )
    a11y.chart(
        st,
        figs.paged_figure(view),
        text=figs.paged_figure_text(view),
        key="mem_chart_paged",
        config=export_config("paged_vs_flat"),
    )


def textbook() -> None:
    checks = claims.published_figure_checks()
    # The verdicts and their arithmetic are kvviz.claims' words; the Claims page checks every other claim.
    a11y.text_table(
        [
            {
                _("model"): c.figure.model,
                _("tokens"): f"{c.figure.context_len:,}",
                "dtype": c.figure.dtype,
                _("printed"): f"{c.figure.claimed:g} {c.figure.claimed_unit}",
                _("exact"): units.format_bytes(c.actual_bytes),
                _("verdict"): c.verdict_text,
                _("why"): c.explanation,
                _("source"): f"[{urlparse(c.figure.where).hostname}]({c.figure.where})",
            }
            for c in checks
        ],
        alt=_("Published KV-cache sizes checked: each row's printed figure, the exact bytes, the verdict and why."),
    )
    real = get_preset("llama-3-8b").kv
    mha, factor = memory.mha_cost(real, 4096)
    st.caption(
        _(
            "Forgetting GQA (Llama-3-8B with {heads} KV heads instead of {kv}) gives {bytes_} at 4,096 tokens: "
            "{factor:g}x the real cache."
        ).format(heads=real.n_head, kv=real.n_kv_heads, bytes_=units.format_bytes(mha), factor=factor)
    )


def loaded_model() -> None:
    tokens, real_bytes, source = real_cache_reading()
    info = models.current_model("eager").info
    stack = info.cache_layers()
    predicted = stack.bytes_at(tokens)
    r = st.container(key="mem_metrics_real").columns(2)
    show_bytes(_("Calculator at {n} tokens (fp32)").format(n=tokens), predicted, r[0])
    show_bytes(_("Real DynamicCache tensors"), real_bytes, r[1], help=_("from {source}").format(source=source))
    attention = len(info.attention_layers)
    arithmetic = _(
        "{model}: 2 x {layers} layers x {heads} heads x {head_dim} x 4 B x {n} tokens = {predicted:,} B; "
        "the tensors hold {real:,} B (from {source})."
    ).format(
        model=info.shown_label(),
        layers=attention,
        heads=info.n_kv_heads,
        head_dim=info.head_dim,
        n=tokens,
        predicted=stack.growing_bytes_at(tokens),
        real=real_bytes,
        source=source,
    )
    if stack.fixed_bytes:  # a hybrid: its linear layers' states beside the attention layers' rows
        arithmetic = ngettext(
            "{model}: K/V 2 x {layers} attention layer x {heads} heads x {head_dim} x 4 B x {n} tokens = {kv:,} B, "
            "plus the fixed states of {linear} linear-attention layers, {state:,} B: {predicted:,} B; the tensors "
            "hold {real:,} B (from {source}).",
            "{model}: K/V 2 x {layers} attention layers x {heads} heads x {head_dim} x 4 B x {n} tokens = {kv:,} B, "
            "plus the fixed states of {linear} linear-attention layers, {state:,} B: {predicted:,} B; the tensors "
            "hold {real:,} B (from {source}).",
            attention,
        ).format(
            model=info.shown_label(),
            layers=attention,
            heads=info.n_kv_heads,
            head_dim=info.head_dim,
            n=tokens,
            kv=stack.growing_bytes_at(tokens),
            linear=len(info.linear_layers),
            state=stack.fixed_bytes,
            predicted=predicted,
            real=real_bytes,
            source=source,
        )
    (st.success if predicted == real_bytes else st.error)(arithmetic)


def encoder_decoder_result(cfg: memory.KVConfig, b: memory.KVBudget, name: str) -> None:
    """An imported encoder-decoder (T5, BART): the whole EncoderDecoderCache is self-attention (the decoder's
    tokens) + cross-attention (K/V of every encoder token in each decoder layer, the same layout, no window).
    Without an encoder length the total is the self-attention part, and its label says so."""
    encoder_len = memory.INPUTS["encoder_len"]
    bounded.guard(
        st, encoder_len, "mem_encoder_len", default=bounded.EMPTY, reset=False, shown=_("none")
    )  # may be empty
    enc = st.number_input(
        _("Encoder length (tokens)"),
        encoder_len.lo,
        encoder_len.hi,
        None,
        step=1,
        key="mem_encoder_len",
        placeholder=_("source tokens, e.g. 512"),
        help=_(
            "{name} is an encoder-decoder: each decoder layer also caches K and V of every "
            "encoder token (cross-attention), computed once from the encoder output"
        ).format(name=echo.literal(name)),
    )
    whole = memory.encoder_decoder_budget(
        cfg, cfg.cross_attention_layout(), b.context_len, b.batch, None if enc is None else int(enc)
    )
    m = st.container(key="mem_metrics").columns(3)
    show_bytes(
        _("Self-attention: {n:,} decoder tokens x batch {batch}").format(n=b.context_len, batch=b.batch),
        b.total_bytes,
        m[0],
        help=_("grows by one row per generated token"),
    )
    if whole.complete:
        show_bytes(
            _("Cross-attention: {n:,} encoder tokens x batch {batch}").format(n=whole.encoder_len, batch=b.batch),
            whole.cross_bytes,
            m[1],
            help=_("{n:,} B per encoder token, computed once per input").format(n=whole.cross_bytes_per_encoder_token),
        )
        show_bytes(
            _("Total: self + cross-attention"),
            whole.total_bytes,
            m[2],
            help=_("what transformers' EncoderDecoderCache holds"),
        )
        st.markdown(
            _(
                "**{kind}, encoder-decoder** · self-attention {self_:,} B + cross-attention {cross:,} B = "
                "**total {total}**"
            ).format(
                kind=cfg.attention_kind,
                self_=b.total_bytes,
                cross=whole.cross_bytes,
                total=units.format_bytes(whole.total_bytes),
            )
        )
    else:
        m[1].metric(_("Cross-attention"), _("not counted"), help=_("enter the encoder length above"))
        show_bytes(
            _("Total: decoder self-attention only"),
            whole.total_bytes,
            m[2],
            help=_("the cross-attention cache is missing until the encoder length is given"),
        )
        st.markdown(
            _(
                "**{kind}, encoder-decoder** · total {total} is the **decoder's self-attention only**: enter the "
                "encoder length to add the cross-attention cache ({n:,} B per encoder token x batch "
                "{batch})."
            ).format(
                kind=cfg.attention_kind,
                total=units.format_bytes(whole.total_bytes),
                n=whole.cross_bytes_per_encoder_token,
                batch=b.batch,
            )
        )


# ----- a model of mixed layers (a layered preset, or an imported config whose layers differ) ------------------------
def layers_locked() -> bool:
    """The model's layers come from its config (a layered preset, or an import of mixed layers), not from the form."""
    preset = st.session_state.get("mem_preset", URL.raw("preset"))
    if preset in LAYERED_PRESETS:
        return LAYERED_PRESETS[preset].mixed
    return preset == CUSTOM and bool(st.session_state.get("mem_layers_text"))


@st.cache_data(show_spinner=False, max_entries=32)
def imported_layers(text: str | bytes, dtype: str) -> CacheLayers:
    """An imported config's layer list in `dtype` (the form's cache dtype), read once per text and dtype."""
    return config_import.parse_hf_config(text, dtype=dtype).layers


def layered_source(dtype: str) -> CacheLayers:
    preset = st.session_state["mem_preset"]
    if preset in LAYERED_PRESETS:
        return LAYERED_PRESETS[preset].imported(dtype).layers
    return imported_layers(st.session_state["mem_layers_text"], dtype)


def layered_result(stack: CacheLayers, context: int, batch: int, results_slot: Any = st) -> None:
    """The cache of a model whose layers differ: the two parts (K/V that grows, state that does not), the layer strip,
    what fits, and where vLLM stores it differently; its tabs in `results_slot` (result_tabs). Every byte is
    transformers' (kvviz.memory.layers)."""
    total, peak = stack.bytes_at(context, batch), stack.peak_bytes_at(context, batch)
    m = st.container(key="mem_metrics").columns(3)
    show_bytes(
        _("K/V per token (grows)"),
        stack.bytes_per_token,
        m[0],
        help=_("every layer that grows with the context, one sequence"),
    )
    show_bytes(_("Fixed state per sequence"), stack.fixed_bytes, m[1], help=_("the same after 1 token or 1 million"))
    show_bytes(
        _("Total: {n:,} tokens x batch {batch}").format(n=context, batch=batch),
        total,
        m[2],
        help=_("what the cache stores between steps, as transformers' DynamicCache holds it"),
    )
    kinds = i18n.item_sep().join(_("{kind}: {n}").format(kind=_(KIND_NAMES[k]), n=stack.count(k)) for k in stack.kinds)
    st.markdown(
        _("**{n} layers** ({kinds}) · K/V {kv} + state {state} = **{total}**").format(
            n=stack.n_layer,
            kinds=kinds,
            kv=units.short_bytes(stack.growing_bytes_at(context, batch)),
            state=units.short_bytes(batch * stack.fixed_bytes),
            total=units.format_bytes(total),
        )
    )
    if peak != total:
        st.caption(
            _("During a step each windowed layer also holds the newest token's row: {peak} at peak.").format(
                peak=units.format_bytes(peak)
            )
        )
    until = stack.state_dominates_until()
    if until is not None:
        st.markdown(
            _("The fixed state outweighs the K/V until **{n:,} tokens**; past that the K/V dominates.").format(n=until)
        )
    every = stack.as_all_attention()
    if every is not None and not stack.uniform and every.bytes_at(context, batch):
        whole = every.bytes_at(context, batch)
        st.markdown(
            _(
                "The same model with every layer full attention would hold {whole} at {n:,} tokens: this "
                "one keeps **{share}** of that."
            ).format(whole=units.format_bytes(whole), n=context, share=f"{total / whole:.1%}")
        )
    if dtypes.DTYPES[stack.dtype].quantized or stack.dtype == "fp8":
        st.info(
            _(
                "transformers' QuantizedCache quantizes full-attention layers only: it refuses this model. The "
                "figure is a what-if: K/V rows in {dtype}, states as the model keeps them."
            ).format(dtype=stack.dtype)
        )
    for note in config_import.layer_notes(stack):
        st.caption(note.shown())
    tabs = result_tabs(results_slot)
    with tabs[0]:
        drawn = (stack, max(context, until or 0, 1), batch, context)
        a11y.chart(
            st,
            layer_figs.two_part_figure(*drawn),
            text=layer_figs.two_part_text(*drawn),
            key="mem_chart_parts",
            config=export_config("cache_two_parts"),
        )
    with tabs[1]:
        a11y.chart(
            st,
            layer_figs.layer_strip_figure(stack, context, batch),
            text=layer_figs.layer_strip_text(stack, context, batch),
            key="mem_chart_strip",
            config=export_config("cache_layer_strip"),
        )
        layer_kind_table(stack, context, batch)
    with tabs[2]:
        layered_fits(stack, context, batch)
    with tabs[3]:
        layout = serving.paged_layout(stack)
        if not layout.attention_page_bytes:  # no attention layer (Mamba-2): pages of states only
            st.markdown(
                _(
                    "vLLM gives each state layer one page per sequence: {page:,} B, in the model's dtype; "
                    "transformers holds {held} per sequence."
                ).format(page=layout.state_page_bytes, held=units.format_bytes(stack.bytes_at(context, 1)))
            )
        else:
            paged_text(stack, layout, context)
    reference_tabs(tabs)


def results_first() -> bool:
    """A link that names a tab (For teachers' plan opens "What fits" for its question) puts the tabs right under
    the preset box, the model's inputs below them, for the whole visit (the order never jumps under the reader). The
    inputs fill a 1280x720 screen: below them, the tab's answer (the context where the cache outweighs the weights)
    was off the first screen, and scrolling down to it hid the preset box the teacher names."""
    return URL.visit_opened_naming("tab")


def result_tabs(where: Any = st) -> list:
    """The result's tabs in `where` (the page, or the slot under the preset box: results_first), bound to the URL
    (it keeps the tab's label, in the link's language). The first four always run (their inputs live in the URL: a
    closed tab's widgets would drop theirs from a copied link); reference_tabs runs the last two only when open."""
    return where.tabs([_(t) for t in TABS], key="mem_tab", bind="query-params")


def reference_tabs(tabs: list) -> None:
    """The textbook figures and the loaded model's real cache, drawn only when open (the last imports torch)."""
    if tabs[4].open:
        with tabs[4]:
            textbook()
    if tabs[5].open:
        with tabs[5]:
            loaded_model()


def paged_text(stack: CacheLayers, layout: serving.PagedLayout, context: int) -> None:
    """vLLM's page geometry for a model with attention layers, beside transformers' bytes."""
    st.markdown(
        _(
            "vLLM pages this model in blocks of **{block:,} tokens**: an attention layer's page holds "
            "{page:,} B; a state layer gets one page per sequence, padded to that size ({pad:,} B of "
            "padding per state layer). One sequence of {n:,} tokens: {paged} in pages, {held} as "
            "transformers holds it."
        ).format(
            block=layout.block_tokens,
            page=layout.attention_page_bytes,
            pad=layout.state_padding_bytes,
            n=context,
            paged=units.format_bytes(serving.paged_per_sequence(stack, context)),
            held=units.format_bytes(stack.bytes_at(context, 1)),
        )
    )


def layer_kind_table(stack: CacheLayers, context: int, batch: int) -> None:
    held = stack.layer_bytes(context, batch)
    a11y.text_table(
        [
            {
                _("kind"): _(KINDS[kind]),
                _("layers"): f"{n:,}",
                _("per token"): units.short_bytes(per_token),
                _("fixed"): units.short_bytes(fixed),
                _("at {n:,} tokens").format(n=context): units.short_bytes(
                    sum(b for x, b in zip(stack.layers, held, strict=True) if x.kind == kind)
                ),
            }
            for kind, n, per_token, fixed in stack.kind_summary()
        ],
        alt=_("Per kind of layer: how many, bytes per token, fixed bytes, and bytes at this context."),
    )


def layered_fits(stack: CacheLayers, context: int, batch: int) -> None:
    gpu_bytes, params, wdt, reserve = gpu_inputs()
    free = gpu_bytes - capacity.weight_bytes(params, wdt) - reserve * units.MIB
    if free <= 0:
        weights = capacity.weight_bytes(params, wdt)
        st.error(
            _(
                "The weights alone ({weights}) plus the {reserve:,} MiB reserve do not fit in {gpu}: nothing is "
                "left for the cache, so no context and no batch fits. Splitting the weights needs at least "
                "{need:,} such GPUs, or fewer bits per weight."
            ).format(
                weights=units.format_bytes(weights),
                reserve=reserve,
                gpu=units.short_bytes(gpu_bytes),
                need=-(-(weights + reserve * units.MIB) // gpu_bytes),
            )
        )
        return
    st.markdown(
        _("GPU {gpu} - weights - reserve = **{free}** for the cache.").format(
            gpu=units.format_bytes(gpu_bytes), free=units.format_bytes(free)
        )
    )
    longest = serving.longest_context(stack, batch, free)
    fit = serving.fits(stack, free, context)
    f = st.container(key="mem_metrics_fit").columns(3)
    f[0].metric(
        _("Longest context, batch {batch}").format(batch=batch),
        _("unbounded") if longest is None else capacity.tokens_text(longest),
    )
    f[1].metric(
        _("Largest batch at {n:,} tokens").format(n=context),
        f"{fit.transformers_sequences:,}",
        help=_("sequences whose cache fits, counted as transformers holds them"),
    )
    f[2].metric(
        _("Sequences of {n:,} tokens (vLLM's pages)").format(n=context),
        f"{fit.vllm_sequences:,}",
        help=_(
            "vLLM's 'Maximum concurrency for {n:,} tokens per request': whole blocks of {block:,} tokens, "
            "one padded page per state layer, states in the model's dtype "
            "(vllm/v1/core/kv_cache_utils.py)"
        ).format(n=context, block=fit.block_tokens),
    )
    if fit.transformers_sequences < batch:
        st.error(
            _("**Does not fit:** batch {batch} at {n:,} tokens needs {need}; {free} is left.").format(
                batch=batch,
                n=context,
                need=units.format_bytes(stack.bytes_at(context, batch)),
                free=units.format_bytes(free),
            )
        )
    st.caption(
        _(
            "kvviz counts each sequence's bytes exactly ({exact:,} B at {n:,} tokens); vLLM rounds the K/V up "
            "to whole blocks and a state up to a page: {paged:,} B."
        ).format(exact=fit.transformers_bytes_per_sequence, n=context, paged=fit.vllm_bytes_per_sequence)
    )


@st.fragment
def calculator() -> None:
    notices = st.container()
    for message in URL.drop_refused_numbers(
        [k for k, v in defaults().items() if isinstance(v, int)], "mem_link_refused"
    ):  # before any number input reads the URL
        notices.warning(message)
    first_run, st.session_state["mem_link_checked"] = not st.session_state.get("mem_link_checked"), True
    linked = URL.bound_values() if first_run else {}  # the link's values before the widgets read them
    top = st.columns([2, 3])
    top[0].selectbox(
        _("Preset"),
        [CUSTOM, *PRESETS, *LAYERED_PRESETS],
        index=1 + list(PRESETS).index(DEFAULT_PRESET),
        key="mem_preset",
        format_func=custom_label,
        on_change=apply_preset,
        bind="query-params",
    )
    if st.session_state["mem_preset"] in LAYERED_PRESETS:
        lp = LAYERED_PRESETS[st.session_state["mem_preset"]]
        top[1].caption(
            _("{name}, layer by layer from its config.json: [{url}]({url})").format(name=lp.title, url=lp.source)
            + ("" if lp.complete else " · " + _("an excerpt: the fields that shape the cache"))
        )
    elif st.session_state["mem_preset"] != CUSTOM:
        p = get_preset(st.session_state["mem_preset"])
        top[1].caption(
            _("Source: [{url}]({url}) · {paper}").format(url=p.source, paper=p.paper)
            + (f" · {_(p.note)}" if p.note else "")
        )
    results_slot = st
    if results_first():
        st.html(assets.style("link_view_first.css"))
        results_slot = st.container()
    with st.expander(_("Import a Hugging Face config.json")):
        # Streamlit draws the box's own words (Upload, "200MB per file • JSON") in English whatever the page's
        # language: the help says in the reader's what the box wants.
        st.file_uploader(
            _("Upload config.json"),
            type=["json"],
            key="mem_upload",
            help=_("Drop a config.json onto the box, or press Upload to choose one: a real config.json is a few KB."),
        )
        # The import's own cap, applied by the box itself: a 50 MB paste never reaches Streamlit's 25 MB limit.
        st.text_area(
            _("...or paste it"),
            key="mem_paste",
            height=100,
            max_chars=config_json.MAX_CONFIG_CHARS,
            help=_("At most {n:,} characters: a real config.json is a few KB.").format(n=config_json.MAX_CONFIG_CHARS),
        )
        st.button(_("Use this config.json"), key="mem_import", on_click=apply_import)
        if report := import_report():  # (kind, text) from apply_import
            (st.success if report[0] == "ok" else st.error)(report[1])
    locked = layers_locked()
    if locked:
        st.caption(
            _(
                "This model's layers are not all one attention layout: the boxes show its attention layers' "
                "shape, and the figures count every layer from its config.json. Choose custom to edit a "
                "uniform layout."
            )
        )
    cfg = memory_form(locked)
    c = st.columns(2)
    with c[0]:
        context = int_input(_("Context length (tokens)"), "mem_context")
    with c[1]:
        batch = int_input(_("Batch (sequences)"), "mem_batch")
    if locked:
        if (too_long := past_trained_positions(st.session_state["mem_preset"], context)) is not None:
            notices.warning(too_long)
        try:
            stack = layered_source(st.session_state["mem_dtype"])
        except memory.MemoryInputError as exc:
            st.error(_("This layout cannot be computed: {reason}.").format(reason=i18n.as_clause(str(exc))))
        else:
            layered_result(stack, context, batch, results_slot)
        report_link(linked, notices)
        return
    if cfg is None:
        report_link(linked, notices)
        return
    preset = st.session_state["mem_preset"]
    if (too_long := past_trained_positions(preset, context)) is not None:
        notices.warning(too_long)
    b = memory.budget(cfg, context, batch)
    for w in b.warnings:
        st.warning(w)
    encdec = st.session_state.get("mem_encdec") if st.session_state["mem_preset"] == CUSTOM else None
    if encdec is not None:
        encoder_decoder_result(cfg, b, encdec)
    else:
        m = st.container(key="mem_metrics").columns(3)
        show_bytes(_("Per token (all layers)"), b.bytes_per_token, m[0], help=_("a token inside every window"))
        show_bytes(_("Per token, one layer"), b.bytes_per_token_per_layer, m[1])
        show_bytes(_("Total: {n:,} tokens x batch {batch}").format(n=context, batch=batch), b.total_bytes, m[2])
        st.markdown(
            _("**{kind}** · per token: {per_token} · total: {total}").format(
                kind=cfg.attention_kind,
                per_token=units.format_bytes(b.bytes_per_token),
                total=units.format_bytes(b.total_bytes),
            )
        )
    held = hf_cache.transformers_cache_bytes(cfg, context, batch)
    if cfg.window is not None and held != b.total_bytes:
        st.caption(
            _(
                "transformers' DynamicCache holds {held} here: its sliding layers keep the last {kept:,} tokens "
                "(window - 1; the newest token is attended to before it is stored), kvviz counts "
                "{window:,}."
            ).format(held=units.format_bytes(held), kept=cfg.window - 1, window=cfg.window)
        )

    tabs = result_tabs(results_slot)
    with tabs[0]:
        compare = st.multiselect(
            _("Compare with"),
            list(PRESETS),
            default=[],
            key="mem_compare",
            bind="query-params",
            max_selections=MAX_LEGEND_ENTRIES - 1,
            placeholder=_("Choose options"),
        )  # four lines at most: readable
        compare = compare[: MAX_LEGEND_ENTRIES - 1]  # a shared link may carry more
        horizon = max(context, *(get_preset(n).max_context for n in compare)) if compare else context
        own_max = get_preset(preset).max_context if preset in PRESETS else None
        lines = ([cfg, *(get_preset(n).kv for n in compare)], horizon, batch)
        drawn = {"mark_context": context, "max_contexts": [own_max, *(get_preset(n).max_context for n in compare)]}
        a11y.chart(
            st,
            figs.size_vs_context_figure(*lines, **drawn),
            text=figs.size_vs_context_figure_text(*lines, **drawn),
            key="mem_chart_ctx",
            config=export_config("kv_cache_vs_context"),
        )
    with tabs[1]:
        if len(set(b.layer_bytes)) > 1:
            a11y.chart(
                st,
                figs.per_layer_figure(b),
                text=figs.per_layer_figure_text(b),
                key="mem_chart_layers",
                config=export_config("kv_per_layer"),
            )
        else:
            st.info(
                _("All {n} layers are alike: {bytes_} each.").format(
                    n=cfg.n_layer, bytes_=units.format_bytes(b.layer_bytes[0])
                )
            )
    for tab, draw in zip(tabs[2:4], (what_fits, paged), strict=True):
        with tab:
            draw(cfg, context, batch)
    reference_tabs(tabs)
    report_link(linked, notices)  # after the tabs: their widgets (mem_tab, mem_compare, mem_gpu) read the link too


def report_link(linked: dict[str, list[str]], notices: Any) -> None:
    """One notice per link value the page's widgets dropped or changed (kvviz.inputs.links)."""
    now = URL.bound_values(linked)
    for message in link_refusals(linked, now, st.session_state):
        notices.warning(message)


router.ensure_router()  # before anything is drawn: see its docstring
st.title(_("Memory budget"))
st.html(assets.style("metric_wrap.css"))  # wrap, never "12.2…"
with st.expander(_("What you are seeing"), expanded=False):
    st.markdown(
        _(
            "Every layer keeps, for every token, one **key** and one **value** vector per K/V head. So the cache "
            "costs `2 x layers x KV heads x head dim x bytes per number` **per token**, times the context length, "
            "times the batch. GQA/MQA shrink it by sharing K/V heads between query heads, MLA stores one small "
            "latent instead, a sliding window stops local layers from growing past the window.\n\n"
            "Bytes are exact integers; **1 GiB = 2^30 bytes**, **1 GB = 10^9 bytes**. The address bar keeps your "
            "inputs (and the language): copy it to share this exact comparison."
        )
    )
    st.markdown(
        _(
            "Not every layer keeps K and V. A **hybrid model** (Qwen3-Next, Jamba, Granite-4.0-H, Nemotron-H) keeps them "
            "only in its attention layers; its linear-attention or SSM layers keep a **fixed state** instead, the same "
            "size after ten tokens or a million. Choose such a preset, or import its config.json, and the page counts "
            "the model layer by layer, as transformers builds its cache: the strip shows which layers grow and which do "
            "not."
        )
    )
calculator()
