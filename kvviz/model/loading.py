"""What loading a model takes and gives, without torch: the models kvviz offers, what a spec would cost, and the
records of a load.

Three kinds of model, one loader (kvviz.model.loaders.load_model(spec), with torch and transformers at its top):

    "bundled"            a model shipped in kvviz/assets (BUNDLED_MODELS; the default: a small GPT-2 trained by
                         `python -m kvviz train` on Tiny Shakespeare; "bundled-gqa": a small Llama with
                         grouped-query attention, 8 query heads sharing 2 K/V heads, same corpus and tokenizer;
                         "bundled-hybrid": a small OLMo-hybrid, 3 Gated DeltaNet linear-attention layers with a
                         fixed-size state and 1 attention layer with a K/V cache)
    "gpt2", "distilgpt2" pretrained GPT-2 weights by name, from the Hugging Face cache (or the hub, if online)
    "/path/to/folder"    a local folder holding config.json + model.safetensors + tokenizer files
    "random:gpt2"        a GPT-2 architecture with random weights (realistic sizes and timings, gibberish text)

This module holds the bundled models' list, the records (ModelInfo, LoadedModel, LoadEstimate), the labels and the
one-line failure (ModelLoadError), `estimate_load` (a spec's cost from config.json) and the forward-pass lock. It
imports no torch: torch and transformers take seconds to import, and `bundled_info()` describes a bundled model from
its config.json and safetensors header alone, so the app's first page renders from it while the real import runs in
a background thread (kvviz.ui.warm). Pages, the sidebar and the lesson import it at their top; the loaders are
imported where a model is loaded.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvviz import i18n
from kvviz.i18n import N_, _
from kvviz.inputs import echo
from kvviz.memory import KVConfig
from kvviz.memory.layers import CacheLayers
from kvviz.model import load_cost
from kvviz.model.dims import GPT2_FAMILY, ModelDims
from kvviz.model.hub import cached_snapshot
from kvviz.model.load_cost import LoadCap
from kvviz.ops import ModelShape

if TYPE_CHECKING:  # a LoadedModel holds them; kvviz.model.loaders builds them (torch at its top)
    from transformers import GPT2TokenizerFast, PreTrainedModel

__all__ = [
    "ASSETS_DIR",
    "BUNDLED",
    "BUNDLED_DIR",
    "BUNDLED_GQA",
    "BUNDLED_HYBRID",
    "BUNDLED_MODELS",
    "MESSAGE_CHARS",
    "MODEL_LOCK",
    "RANDOM_PREFIX",
    "BundledSpec",
    "LoadCap",
    "LoadEstimate",
    "LoadedModel",
    "ModelInfo",
    "ModelLoadError",
    "bundled_info",
    "bundled_label",
    "describe",
    "estimate_load",
    "failure_reason",
    "label_fields",
    "load_busy_for_s",
    "looks_like_path",
    "one_load_at_a_time",
    "shown_spec",
]

ASSETS_DIR = Path(__file__).resolve().parents[1] / "assets"
BUNDLED = "bundled"
BUNDLED_GQA = "bundled-gqa"
BUNDLED_HYBRID = "bundled-hybrid"
RANDOM_PREFIX = "random:"
MESSAGE_CHARS = 300  # a failure message is one line, at most this long
LOAD_WAIT_S = 600.0  # the longest a load waits for another one to finish


# One forward pass at a time per server on a shared model, for every session's stepping engine (the step page, the
# lesson, the attention patterns) and the eviction lab's passes; the timed internals measurements and the benchmark
# queue in kvviz.work_queue instead. Streamlit serves each session in its own thread; torch releases the GIL inside
# its kernels, so the cheap Python work of other sessions (records, figures) runs beside a forward pass while
# forward passes themselves never pile up on the cores.
MODEL_LOCK = threading.Lock()


@dataclass(frozen=True)
class BundledSpec:
    """A model shipped with kvviz: offered offline, in every mode, without a cap."""

    name: str  # the spec that selects it, e.g. "bundled"
    folder: Path
    title: str  # the label's start; the shape is appended from config.json


# Add a bundled model here (its folder under kvviz/assets/): the sidebar, the shared-mode list and
# bundled_info() pick it up.
BUNDLED_MODELS: dict[str, BundledSpec] = {
    BUNDLED: BundledSpec(BUNDLED, ASSETS_DIR / "bundled", N_("Bundled Tiny-Shakespeare GPT-2")),
    BUNDLED_GQA: BundledSpec(BUNDLED_GQA, ASSETS_DIR / "bundled_gqa", N_("Bundled Tiny-Shakespeare Llama, GQA")),
    BUNDLED_HYBRID: BundledSpec(
        BUNDLED_HYBRID,
        ASSETS_DIR / "bundled_hybrid",
        N_("Bundled Tiny-Shakespeare hybrid, linear attention + attention"),
    ),
}
BUNDLED_DIR = BUNDLED_MODELS[BUNDLED].folder

# The GPT-2 architectures a random-weight model can take: kvviz.model.dims.GPT2_FAMILY (from kvviz.memory.presets).


class ModelLoadError(RuntimeError):
    """The model could not be loaded; the message says why and what to do, in plain words."""


@dataclass(frozen=True, kw_only=True)
class ModelInfo(ModelDims):
    """What was loaded: the model's dimensions (ModelDims: n_layer, n_head, n_kv_heads, head_dim, ...), in numbers a
    student can check against the cache tensors, and how it was loaded."""

    spec: str  # what the caller asked for, e.g. "bundled", "gpt2", "random:gpt2"
    kind: str  # "bundled" | "pretrained" | "random"
    label: str  # one line, in English (the CLI, records, keys); a page shows shown_label()
    n_params: int
    dtype: str  # e.g. "float32"
    attn_implementation: str
    weights_are_random: bool
    # The label as kvviz wrote it, to be shown in the session's language; None for a label given as it is (a
    # teacher's own words).
    label_text: i18n.Message | None = None

    def shown_label(self) -> str:
        """The label in the interface language (kvviz.i18n)."""
        return self.label_text.shown() if self.label_text else self.label

    def ops_shape(self, name: str | None = None) -> ModelShape:
        """ModelDims.ops_shape, named by this model's label."""
        return super().ops_shape(self.label if name is None else name)

    def kv_config(self, dtype: str | None = None, name: str | None = None, **layout: int | None) -> KVConfig:
        """ModelDims.kv_config in the dtype the model runs in (fp32 on CPU) unless told, named by its label."""
        return super().kv_config(self.dtype if dtype is None else dtype, self.label if name is None else name, **layout)

    def cache_layers(self, dtype: str | None = None, name: str | None = None) -> CacheLayers:
        """ModelDims.cache_layers in the dtype the model runs in unless told, named by its label."""
        return super().cache_layers(self.dtype if dtype is None else dtype, self.label if name is None else name)

    def linear_state_bytes(self, dtype: str | None = None) -> tuple[int, int]:
        """ModelDims.linear_state_bytes in the dtype the model runs in unless told."""
        return super().linear_state_bytes(self.dtype if dtype is None else dtype)


def label_fields(message: str, **fields: Any) -> dict[str, Any]:
    """ModelInfo's label fields for a label built from `message` (N_-marked): the English text and the text."""
    text = i18n.Message.of(message, **fields)
    return dict(label=text.english, label_text=text)


@dataclass(frozen=True)
class LoadedModel:
    # a causal LM of a kvviz.model.loaders.MODEL_CLASSES class (GPT2LMHeadModel, LlamaForCausalLM, ...); shared across sessions: never mutate
    # it, never leave hooks on it
    model: PreTrainedModel
    tokenizer: GPT2TokenizerFast
    info: ModelInfo


def _info(dims: ModelDims, **loaded: Any) -> ModelInfo:
    """A ModelInfo: the dimensions and what was loaded."""
    return ModelInfo(**asdict(dims), **loaded)


def describe(spec: str, kind: str, label: dict[str, Any], model: Any) -> ModelInfo:
    """A loaded model's ModelInfo, read from its config and parameters (the loaders call it once per load)."""
    cfg = model.config
    return _info(
        ModelDims.from_config(cfg.to_dict()),
        spec=spec,
        kind=kind,
        **label,
        n_params=sum(p.numel() for p in model.parameters()),
        dtype=str(next(model.parameters()).dtype).removeprefix("torch."),
        attn_implementation=cfg._attn_implementation,
        weights_are_random=(kind == "random"),
    )


def bundled_label(title: str, dims: ModelDims) -> dict[str, Any]:
    """A bundled model's label fields: its title and its shape (attention, grouped-query or hybrid layers)."""
    shown = dict(
        title=i18n.Message(title),
        n_layer=dims.n_layer,
        n_head=dims.n_head,
        head_dim=dims.head_dim,
        n_positions=dims.n_positions,
    )
    if not dims.all_attention:
        return label_fields(
            N_(
                "{title} ({n_linear} Gated DeltaNet layers with a fixed state + {n_attention} attention "
                "layer of {n_head} heads, head_dim {head_dim}, {n_positions} positions)"
            ),
            **shown,
            n_linear=len(dims.linear_layers),
            n_attention=len(dims.attention_layers),
        )
    if dims.n_kv_heads != dims.n_head:
        return label_fields(
            N_(
                "{title} ({n_layer} layers x {n_head} heads sharing {n_kv_heads} K/V heads, head_dim "
                "{head_dim}, {n_positions} positions)"
            ),
            **shown,
            n_kv_heads=dims.n_kv_heads,
        )
    return label_fields(
        N_("{title} ({n_layer} layers x {n_head} heads, head_dim {head_dim}, {n_positions} positions)"), **shown
    )


@functools.lru_cache(maxsize=8)
def bundled_info(attn_implementation: str = "eager", name: str = BUNDLED) -> ModelInfo:
    """A bundled model's ModelInfo without importing torch: config.json plus the safetensors header
    (8-byte little-endian length, then JSON with each tensor's dtype and shape). Equal to
    kvviz.model.loaders.load_bundled().info (tested)."""
    spec = BUNDLED_MODELS[name]
    dims = ModelDims.from_config(json.loads((spec.folder / "config.json").read_text(encoding="utf-8")))
    weights = spec.folder / load_cost.SAFETENSORS_FILE
    n_params = load_cost.stored_elements(weights)
    dtypes = {t["dtype"] for t in load_cost.safetensors_header(weights).values()}
    return _info(
        dims,
        spec=name,
        kind="bundled",
        **bundled_label(spec.title, dims),
        n_params=n_params,
        dtype="float32" if dtypes == {"F32"} else ",".join(sorted(dtypes)),
        attn_implementation=attn_implementation,
        weights_are_random=False,
    )


@dataclass(frozen=True)
class LoadEstimate:
    """What loading a spec would cost, known before reading a weight (asked before a link's model is loaded)."""

    n_params: int | None  # None: not known on this server (a hub name not in the cache, an unreadable folder)
    downloads: bool  # the weights are not on this server: the load would fetch them from the hub

    @property
    def float32_bytes(self) -> int | None:
        return None if self.n_params is None else self.n_params * load_cost.FLOAT32_BYTES


def estimate_load(spec: str) -> LoadEstimate:
    """The cost of kvviz.model.loaders.load_model(spec) from config.json alone (a random shape's from its family entry); torch-free."""
    spec = spec.strip()
    if spec in BUNDLED_MODELS:
        return LoadEstimate(bundled_info(name=spec).n_params, downloads=False)
    if spec.startswith(RANDOM_PREFIX):
        dims = GPT2_FAMILY.get(spec.removeprefix(RANDOM_PREFIX))
        return LoadEstimate(None if dims is None else load_cost.params_from_config(dims.gpt2_config()), False)
    folder = Path(spec).expanduser()
    if not folder.is_dir():
        folder = None if looks_like_path(spec) else cached_snapshot(spec)
        if folder is None:
            return LoadEstimate(None, downloads=not looks_like_path(spec))
    try:
        return LoadEstimate(load_cost.params_from_config(load_cost.read_config(folder)), downloads=False)
    except (OSError, ValueError):
        return LoadEstimate(None, downloads=False)


def looks_like_path(spec: str) -> bool:
    """A folder path rather than a hub name ("gpt2", "openai-community/gpt2" have at most one "/")."""
    return spec.startswith(("/", "~", ".")) or "\\" in spec or spec.count("/") > 1


def shown_spec(spec: str, max_chars: int = 80) -> str:
    """A spec as a message shows it: a code span no character of it can break out of (a name typed in the sidebar
    or carried by a link's ?model= is echoed, never read as markdown), cut short if it is long."""
    return echo.code(spec, max_chars)


def failure_reason(exc: BaseException) -> str:
    """Why a load failed, in one line a ModelLoadError can carry (never Python's own words for a broken file)."""
    if isinstance(exc, echo.RAW_PYTHON_ERRORS) or "set_int_max_str_digits" in str(exc):
        return _(
            "its files do not describe a GPT-2 model transformers can build ({error}); "
            "check config.json against a working GPT-2 folder"
        ).format(error=exc.__class__.__name__)
    text = " ".join(str(exc).split()) or exc.__class__.__name__
    return echo.one_line(text.rstrip("."), MESSAGE_CHARS)


# One load at a time per process (kvviz.model.loaders.load_model holds it); a page asks how long the load in progress
# has run, without torch, to tell its reader why it waits.
_LOAD_LOCK = threading.Lock()
_load_started_at: list[float] = []  # perf_counter() of the load in progress (empty when idle)


@contextlib.contextmanager
def one_load_at_a_time() -> Iterator[None]:
    """Hold the process's one load: wait up to LOAD_WAIT_S for the load in progress, then refuse in one line."""
    if not _LOAD_LOCK.acquire(timeout=LOAD_WAIT_S):
        raise ModelLoadError(_("Another model load has been running for a long time; try again later."))
    _load_started_at.append(time.perf_counter())
    try:
        yield
    finally:
        _load_started_at.clear()
        _LOAD_LOCK.release()


def load_busy_for_s() -> float | None:
    """Seconds the load in progress has been running, or None when no load is running in this process."""
    started = list(_load_started_at)
    return time.perf_counter() - started[0] if started else None
