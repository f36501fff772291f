"""Load a model + tokenizer + a description of what was loaded.

Three kinds of model, one loader (`load_model(spec)`):

    "bundled"            a model shipped in kvviz/assets (BUNDLED_MODELS; the default: a small GPT-2 trained by
                         `python -m kvviz train` on Tiny Shakespeare; "bundled-gqa": a small Llama with
                         grouped-query attention, 8 query heads sharing 2 K/V heads, same corpus and tokenizer;
                         "bundled-hybrid": a small OLMo-hybrid, 3 Gated DeltaNet linear-attention layers with a
                         fixed-size state and 1 attention layer with a K/V cache)
    "gpt2", "distilgpt2" pretrained GPT-2 weights by name, from the Hugging Face cache (or the hub, if online)
    "/path/to/folder"    a local folder holding config.json + model.safetensors + tokenizer files
    "random:gpt2"        a GPT-2 architecture with random weights (realistic sizes and timings, gibberish text)

Start-up: torch and transformers take seconds to import, so they are imported inside the loaders, and
`bundled_info()` describes a bundled model from its config.json and safetensors header alone. The app's
first page renders from that while the real import runs in a background thread (kvviz.ui).

Safety: safetensors only (`use_safetensors=True`), never `trust_remote_code`. The hub is never waited on:
if the name is not in the local cache we probe the hub with a 2-second TCP connect and give up with a
clear message when it is unreachable, instead of transformers' 30 s of retries (kvviz.model.hub). A shared classroom server
(kvviz.model.shared_mode) passes a cap, checked from config.json and the safetensors headers before any weight
is read (kvviz.model.load_cost), and forbids downloads. One load runs at a time per process; every failure is a
ModelLoadError with a one-line message.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from kvviz import i18n
from kvviz.i18n import N_, _
from kvviz.inputs import echo
from kvviz.memory import KVConfig
from kvviz.memory.layers import CacheLayers
from kvviz.model import load_cost
from kvviz.model.dims import GPT2_FAMILY, ModelDims
from kvviz.model.hub import cached_snapshot, hub_reachable
from kvviz.model.load_cost import LoadCap
from kvviz.ops import ModelShape

if TYPE_CHECKING:  # imported for real inside the loaders (slow imports; see the module docstring)
    from transformers import GPT2TokenizerFast, PreTrainedModel

ASSETS_DIR = Path(__file__).resolve().parents[1] / "assets"
BUNDLED = "bundled"
BUNDLED_GQA = "bundled-gqa"
BUNDLED_HYBRID = "bundled-hybrid"
RANDOM_PREFIX = "random:"
LOAD_WAIT_S = 600.0  # the longest a load waits for another one to finish
MESSAGE_CHARS = 300  # a failure message is one line, at most this long
TOKENIZER_FILES = (("tokenizer.json",), ("vocab.json", "merges.txt"))  # either set loads GPT2TokenizerFast


# One forward pass at a time per server on a shared model, for every session's stepping engine (the step page, the
# lesson, the attention patterns) and the eviction lab's passes; the timed internals measurements and the benchmark
# queue in kvviz.work_queue instead. Streamlit serves each session in its own thread; torch releases the GIL inside
# its kernels, so the cheap Python work of other sessions (records, figures) runs beside a forward pass while
# forward passes themselves never pile up on the cores.
MODEL_LOCK = threading.Lock()


# The cache-internals ideas decorate their model-running functions with this, not `@torch.inference_mode()`, which
# would import torch as the module loads: a page imports an idea's module for its limits and texts only.
P = ParamSpec("P")
R = TypeVar("R")


def inference_mode(fn: Callable[P, R]) -> Callable[P, R]:
    """`fn` run under `torch.inference_mode()` (no autograd records, tensors it makes are inference tensors)."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        import torch

        with torch.inference_mode():
            return fn(*args, **kwargs)

    return run


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
# model_type -> transformers class
MODEL_CLASSES = {"gpt2": "GPT2LMHeadModel", "llama": "LlamaForCausalLM", "olmo_hybrid": "OlmoHybridForCausalLM"}
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


def _label(message: str, **fields: Any) -> dict[str, Any]:
    """ModelInfo's label fields for a label built from `message` (N_-marked): the English text and the text."""
    text = i18n.Message.of(message, **fields)
    return dict(label=text.english, label_text=text)


@dataclass(frozen=True)
class LoadedModel:
    # a causal LM of a MODEL_CLASSES class (GPT2LMHeadModel, LlamaForCausalLM); shared across sessions: never mutate
    # it, never leave hooks on it
    model: PreTrainedModel
    tokenizer: GPT2TokenizerFast
    info: ModelInfo


def _info(dims: ModelDims, **loaded: Any) -> ModelInfo:
    """A ModelInfo: the dimensions and what was loaded."""
    return ModelInfo(**asdict(dims), **loaded)


def _describe(spec: str, kind: str, label: dict[str, Any], model: Any) -> ModelInfo:
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


def _from_folder(folder: Path | str, attn_implementation: str, local_files_only: bool = True) -> tuple[Any, Any]:
    import torch
    import transformers
    from transformers import GPT2TokenizerFast
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # a server's log is no place for a "Loading weights" bar per load
    # config.json picks the class: llama only for a bundled model (load_cost admits GPT-2 folders only)
    model_type = load_cost.read_config(Path(folder)).get("model_type") if Path(folder).is_dir() else "gpt2"
    model_class = getattr(transformers, MODEL_CLASSES.get(model_type, MODEL_CLASSES["gpt2"]))
    model = model_class.from_pretrained(
        folder,
        use_safetensors=True,
        trust_remote_code=False,
        dtype=torch.float32,
        local_files_only=local_files_only,
        attn_implementation=attn_implementation,
    )
    tokenizer = GPT2TokenizerFast.from_pretrained(folder, local_files_only=local_files_only)
    if not 1 < len(tokenizer) <= model.config.vocab_size:
        # transformers 5 builds an EMPTY tokenizer from a folder without tokenizer files, instead of failing
        raise ValueError(
            _("its tokenizer has {n_tokens} tokens for a model of {vocab_size}").format(
                n_tokens=len(tokenizer), vocab_size=model.config.vocab_size
            )
        )
    return model.eval(), tokenizer


def _bundled_label(title: str, dims: ModelDims) -> dict[str, Any]:
    shown = dict(
        title=i18n.Message(title),
        n_layer=dims.n_layer,
        n_head=dims.n_head,
        head_dim=dims.head_dim,
        n_positions=dims.n_positions,
    )
    if not dims.all_attention:
        return _label(
            N_(
                "{title} ({n_linear} Gated DeltaNet layers with a fixed state + {n_attention} attention "
                "layer of {n_head} heads, head_dim {head_dim}, {n_positions} positions)"
            ),
            **shown,
            n_linear=len(dims.linear_layers),
            n_attention=len(dims.attention_layers),
        )
    if dims.n_kv_heads != dims.n_head:
        return _label(
            N_(
                "{title} ({n_layer} layers x {n_head} heads sharing {n_kv_heads} K/V heads, head_dim "
                "{head_dim}, {n_positions} positions)"
            ),
            **shown,
            n_kv_heads=dims.n_kv_heads,
        )
    return _label(
        N_("{title} ({n_layer} layers x {n_head} heads, head_dim {head_dim}, {n_positions} positions)"), **shown
    )


@functools.lru_cache(maxsize=8)
def bundled_info(attn_implementation: str = "eager", name: str = BUNDLED) -> ModelInfo:
    """A bundled model's ModelInfo without importing torch: config.json plus the safetensors header
    (8-byte little-endian length, then JSON with each tensor's dtype and shape). Equal to
    load_bundled().info (tested)."""
    spec = BUNDLED_MODELS[name]
    dims = ModelDims.from_config(json.loads((spec.folder / "config.json").read_text(encoding="utf-8")))
    weights = spec.folder / load_cost.SAFETENSORS_FILE
    n_params = load_cost.stored_elements(weights)
    dtypes = {t["dtype"] for t in load_cost.safetensors_header(weights).values()}
    return _info(
        dims,
        spec=name,
        kind="bundled",
        **_bundled_label(spec.title, dims),
        n_params=n_params,
        dtype="float32" if dtypes == {"F32"} else ",".join(sorted(dtypes)),
        attn_implementation=attn_implementation,
        weights_are_random=False,
    )


def load_bundled(attn_implementation: str = "eager", name: str = BUNDLED) -> LoadedModel:
    spec = BUNDLED_MODELS[name]
    if not (spec.folder / "model.safetensors").is_file():
        raise ModelLoadError(
            _(
                "The bundled model is missing from {folder}. Re-create it with "
                "`python -m kvviz.training.train --text ../shared/data/tinyshakespeare.txt`."
            ).format(folder=spec.folder)
        )
    model, tokenizer = _from_folder(spec.folder, attn_implementation)
    label = _bundled_label(spec.title, ModelDims.from_config(model.config.to_dict()))
    return LoadedModel(model, tokenizer, _describe(name, "bundled", label, model))


@functools.lru_cache(maxsize=1)
def attention_twin(name: str = BUNDLED_HYBRID) -> LoadedModel:
    """An all-attention model of a bundled hybrid's shape, for the race of the two as the context grows: transformers'
    Olmo3ForCausalLM (OLMo-hybrid's attention layers are Olmo3's: QK-norm, RoPE, SwiGLU), every layer full attention,
    the same hidden size, heads, MLP, positions and tokenizer, random weights (only its timing is used). ~1 M
    parameters, built in milliseconds, once per process (shared: never mutate it)."""
    import torch
    from transformers import GPT2TokenizerFast, Olmo3Config, Olmo3ForCausalLM

    spec = BUNDLED_MODELS[name]
    cfg = json.loads((spec.folder / "config.json").read_text(encoding="utf-8"))
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(0)
    model = Olmo3ForCausalLM(
        Olmo3Config(
            vocab_size=cfg["vocab_size"],
            hidden_size=cfg["hidden_size"],
            intermediate_size=cfg["intermediate_size"],
            num_hidden_layers=cfg["num_hidden_layers"],
            num_attention_heads=cfg["num_attention_heads"],
            num_key_value_heads=cfg["num_key_value_heads"],
            max_position_embeddings=cfg["max_position_embeddings"],
            layer_types=["full_attention"] * cfg["num_hidden_layers"],
            tie_word_embeddings=cfg["tie_word_embeddings"],
            pad_token_id=None,
            bos_token_id=cfg["bos_token_id"],
            eos_token_id=cfg["eos_token_id"],
        )
    )
    torch.random.set_rng_state(generator_state)
    model.set_attn_implementation("eager")
    tokenizer = GPT2TokenizerFast.from_pretrained(spec.folder, local_files_only=True)
    label = _label(N_("All-attention twin of the {title} (random weights, for timing)"), title=i18n.Message(spec.title))
    return LoadedModel(model.eval(), tokenizer, _describe(f"attention-twin:{name}", "random", label, model))


def load_random(
    arch: str, attn_implementation: str = "eager", seed: int = 0, cap: LoadCap | None = None
) -> LoadedModel:
    """A GPT-2 architecture with random weights. Timings and cache sizes are real; the text is not."""
    if arch not in GPT2_FAMILY:
        raise ModelLoadError(
            _("Unknown GPT-2 architecture {arch}; choose one of {choices}.").format(
                arch=shown_spec(arch), choices=", ".join(GPT2_FAMILY)
            )
        )
    config = GPT2_FAMILY[arch].gpt2_config()
    if cap is not None:
        n_params = load_cost.params_from_config(config)
        load_cost.refuse_over_cap(n_params, cap, _("the {arch} shape").format(arch=arch))
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

    torch.manual_seed(seed)
    model = GPT2LMHeadModel(GPT2Config(**config))
    model.set_attn_implementation(attn_implementation)
    # Any GPT-2 byte-level tokenizer yields ids < 50257; the bundled one is always at hand offline.
    tokenizer = GPT2TokenizerFast.from_pretrained(BUNDLED_DIR, local_files_only=True)
    label = _label(N_("{arch} shape with RANDOM weights (real sizes and timings; the text is gibberish)"), arch=arch)
    return LoadedModel(model.eval(), tokenizer, _describe(RANDOM_PREFIX + arch, "random", label, model))


def _check_local(folder: Path, cap: LoadCap | None) -> None:
    """Everything that can be refused without reading a weight: config, cap, weight headers, tokenizer files."""
    load_cost.check_folder(folder, cap)
    if not any(all((folder / f).is_file() for f in group) for group in TOKENIZER_FILES):
        raise ValueError(_("the folder has no tokenizer files (tokenizer.json, or vocab.json + merges.txt)"))


def load_pretrained(
    name: str, attn_implementation: str = "eager", cap: LoadCap | None = None, allow_download: bool = True
) -> LoadedModel:
    """Pretrained GPT-2 weights: a local folder, else the HF cache, else the hub (if allowed and answering)."""
    folder = Path(name).expanduser()
    if looks_like_path(name) and not folder.is_dir():  # never suggest `hf download /some/path`
        raise ModelLoadError(
            _(
                "There is no model folder at {path}: give a folder holding config.json, "
                "model.safetensors and the tokenizer files, or a model name such as gpt2."
            ).format(path=shown_spec(name))
        )
    if folder.is_dir():
        where, label = shown_spec(str(folder)), _label(N_("{name} (local folder)"), name=folder.name)
    else:
        where, label, folder = (
            shown_spec(name),
            _label(N_("{name} (pretrained weights)"), name=name),
            cached_snapshot(name),
        )
    if folder is not None:
        try:
            _check_local(folder, cap)
            model, tokenizer = _from_folder(folder, attn_implementation)
        except Exception as exc:  # noqa: BLE001 - any loader failure becomes one line for the user
            raise ModelLoadError(
                _("Could not load {model}: {reason}.").format(model=where, reason=_one_line(exc))
            ) from exc
        return LoadedModel(model, tokenizer, _describe(name, "pretrained", label, model))
    if not allow_download:
        raise ModelLoadError(
            _("{model} is not in this server's Hugging Face cache, and this server downloads nothing.").format(
                model=shown_spec(name)
            )
        )
    if not hub_reachable():
        raise ModelLoadError(
            _(
                "{model} is not in the local Hugging Face cache and the hub is unreachable (offline). "
                "Staying on the current model. To use it, download it once on a connected machine "
                "(e.g. {command}) or pass a local folder."
            ).format(model=shown_spec(name), command=echo.code(f"hf download {name}", 120))
        )
    try:
        model, tokenizer = _from_folder(name, attn_implementation, local_files_only=False)
        if model.config.model_type != "gpt2":
            raise ValueError(
                _("it is a {model_type} model; kvviz steps through GPT-2 models").format(
                    model_type=repr(model.config.model_type)
                )
            )
    except Exception as exc:  # noqa: BLE001
        raise ModelLoadError(
            _("Could not download {model} as a GPT-2 safetensors model: {reason}.").format(
                model=shown_spec(name), reason=_one_line(exc)
            )
        ) from exc
    return LoadedModel(model, tokenizer, _describe(name, "pretrained", label, model))


@dataclass(frozen=True)
class LoadEstimate:
    """What loading a spec would cost, known before reading a weight (asked before a link's model is loaded)."""

    n_params: int | None  # None: not known on this server (a hub name not in the cache, an unreadable folder)
    downloads: bool  # the weights are not on this server: the load would fetch them from the hub

    @property
    def float32_bytes(self) -> int | None:
        return None if self.n_params is None else self.n_params * load_cost.FLOAT32_BYTES


def estimate_load(spec: str) -> LoadEstimate:
    """The cost of load_model(spec) from config.json alone (a random shape's from its family entry); torch-free."""
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


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, echo.RAW_PYTHON_ERRORS) or "set_int_max_str_digits" in str(exc):
        return _(
            "its files do not describe a GPT-2 model transformers can build ({error}); "
            "check config.json against a working GPT-2 folder"
        ).format(error=exc.__class__.__name__)
    text = " ".join(str(exc).split()) or exc.__class__.__name__
    return echo.one_line(text.rstrip("."), MESSAGE_CHARS)


_LOAD_LOCK = threading.Lock()
_load_started_at: list[float] = []  # perf_counter() of the load in progress (empty when idle)


def load_busy_for_s() -> float | None:
    """Seconds the load in progress has been running, or None when no load is running in this process."""
    started = list(_load_started_at)
    return time.perf_counter() - started[0] if started else None


def load_model(
    spec: str = BUNDLED, attn_implementation: str = "eager", cap: LoadCap | None = None, allow_download: bool = True
) -> LoadedModel:
    """The one entry point. `spec`: a bundled name, a pretrained name or folder, or "random:<arch>".

    attn_implementation: "eager" lets the stepping engine read attention weights; "sdpa" is faster for
    benchmarks. cap: refuse models over it before reading weights (bundled models are exempt). One load
    runs at a time per process; the others wait (load_busy_for_s() says for how long). Raises
    ModelLoadError with a one-line message (never a transformers traceback) when the model cannot be loaded.
    """
    spec = (spec or BUNDLED).strip()
    if not _LOAD_LOCK.acquire(timeout=LOAD_WAIT_S):
        raise ModelLoadError(_("Another model load has been running for a long time; try again later."))
    _load_started_at.append(time.perf_counter())
    try:
        if spec in BUNDLED_MODELS:
            return load_bundled(attn_implementation, spec)
        if spec.startswith(RANDOM_PREFIX):
            return load_random(spec.removeprefix(RANDOM_PREFIX), attn_implementation, cap=cap)
        return load_pretrained(spec, attn_implementation, cap=cap, allow_download=allow_download)
    except ModelLoadError:
        raise
    except Exception as exc:  # noqa: BLE001 - e.g. out of memory while building a random model
        raise ModelLoadError(
            _("Could not load {model}: {reason}.").format(model=shown_spec(spec), reason=_one_line(exc))
        ) from exc
    finally:
        _load_started_at.clear()
        _LOAD_LOCK.release()
