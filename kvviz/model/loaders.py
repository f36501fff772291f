"""Load a model + tokenizer + a description of what was loaded: the loaders, with torch and transformers imported at
this module's top. What they load and give is kvviz.model.loading's (torch-free): the bundled models, the records
(LoadedModel, ModelInfo), the labels and ModelLoadError. `load_model(spec)` is the one entry point; a page gets a
model through kvviz.ui.models, which imports this module when a model is first needed.

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
from pathlib import Path
from typing import Any

import torch
import transformers
from transformers import GPT2TokenizerFast
from transformers.utils import logging as hf_logging

from kvviz import i18n
from kvviz.i18n import N_, _
from kvviz.inputs import echo
from kvviz.model import load_cost
from kvviz.model.dims import GPT2_FAMILY, ModelDims
from kvviz.model.hub import cached_snapshot, hub_reachable
from kvviz.model.load_cost import LoadCap
from kvviz.model.loading import (
    BUNDLED,
    BUNDLED_DIR,
    BUNDLED_HYBRID,
    BUNDLED_MODELS,
    RANDOM_PREFIX,
    LoadedModel,
    ModelLoadError,
    bundled_label,
    describe,
    failure_reason,
    label_fields,
    looks_like_path,
    one_load_at_a_time,
    shown_spec,
)

__all__ = [
    "MODEL_CLASSES",
    "attention_twin",
    "load_bundled",
    "load_model",
    "load_pretrained",
    "load_random",
]

TOKENIZER_FILES = (("tokenizer.json",), ("vocab.json", "merges.txt"))  # either set loads GPT2TokenizerFast
# model_type -> transformers class (looked up on the `transformers` package, which imports a model's module only
# when its class is first asked for)
MODEL_CLASSES = {"gpt2": "GPT2LMHeadModel", "llama": "LlamaForCausalLM", "olmo_hybrid": "OlmoHybridForCausalLM"}


def _from_folder(folder: Path | str, attn_implementation: str, local_files_only: bool = True) -> tuple[Any, Any]:
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
    label = bundled_label(spec.title, ModelDims.from_config(model.config.to_dict()))
    return LoadedModel(model, tokenizer, describe(name, "bundled", label, model))


@functools.lru_cache(maxsize=1)
def attention_twin(name: str = BUNDLED_HYBRID) -> LoadedModel:
    """An all-attention model of a bundled hybrid's shape, for the race of the two as the context grows: transformers'
    Olmo3ForCausalLM (OLMo-hybrid's attention layers are Olmo3's: QK-norm, RoPE, SwiGLU), every layer full attention,
    the same hidden size, heads, MLP, positions and tokenizer, random weights (only its timing is used). ~1 M
    parameters, built in milliseconds, once per process (shared: never mutate it)."""
    spec = BUNDLED_MODELS[name]
    cfg = json.loads((spec.folder / "config.json").read_text(encoding="utf-8"))
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(0)
    model = transformers.Olmo3ForCausalLM(
        transformers.Olmo3Config(
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
    label = label_fields(
        N_("All-attention twin of the {title} (random weights, for timing)"), title=i18n.Message(spec.title)
    )
    return LoadedModel(model.eval(), tokenizer, describe(f"attention-twin:{name}", "random", label, model))


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
    torch.manual_seed(seed)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**config))
    model.set_attn_implementation(attn_implementation)
    # Any GPT-2 byte-level tokenizer yields ids < 50257; the bundled one is always at hand offline.
    tokenizer = GPT2TokenizerFast.from_pretrained(BUNDLED_DIR, local_files_only=True)
    label = label_fields(
        N_("{arch} shape with RANDOM weights (real sizes and timings; the text is gibberish)"), arch=arch
    )
    return LoadedModel(model.eval(), tokenizer, describe(RANDOM_PREFIX + arch, "random", label, model))


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
        where, label = shown_spec(str(folder)), label_fields(N_("{name} (local folder)"), name=folder.name)
    else:
        where, label, folder = (
            shown_spec(name),
            label_fields(N_("{name} (pretrained weights)"), name=name),
            cached_snapshot(name),
        )
    if folder is not None:
        try:
            _check_local(folder, cap)
            model, tokenizer = _from_folder(folder, attn_implementation)
        except Exception as exc:  # noqa: BLE001 - any loader failure becomes one line for the user
            raise ModelLoadError(
                _("Could not load {model}: {reason}.").format(model=where, reason=failure_reason(exc))
            ) from exc
        return LoadedModel(model, tokenizer, describe(name, "pretrained", label, model))
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
                model=shown_spec(name), reason=failure_reason(exc)
            )
        ) from exc
    return LoadedModel(model, tokenizer, describe(name, "pretrained", label, model))


def load_model(
    spec: str = BUNDLED, attn_implementation: str = "eager", cap: LoadCap | None = None, allow_download: bool = True
) -> LoadedModel:
    """The one entry point. `spec`: a bundled name, a pretrained name or folder, or "random:<arch>".

    attn_implementation: "eager" lets the stepping engine read attention weights; "sdpa" is faster for
    benchmarks. cap: refuse models over it before reading weights (bundled models are exempt). One load
    runs at a time per process; the others wait (kvviz.model.loading.load_busy_for_s() says for how long). Raises
    ModelLoadError with a one-line message (never a transformers traceback) when the model cannot be loaded.
    """
    spec = (spec or BUNDLED).strip()
    with one_load_at_a_time():
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
                _("Could not load {model}: {reason}.").format(model=shown_spec(spec), reason=failure_reason(exc))
            ) from exc
