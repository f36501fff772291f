"""Model presets (attention layout, sizes) and GPU presets, each with its source.

Every model number below is copied from the model's config.json on the Hugging Face hub (URL given) and
the paper that introduced it. Parameter counts are the model cards' (rounded where the card rounds); they
only feed the "what fits" weight estimate. `shape` is set for dense models, for op counts; MoE and MLA
models have no op-count shape here (their MLP / attention work is not the plain formula in kvviz.ops).
These presets are the project's one source of the GPT-2 family's numbers (kvviz.model.dims.GPT2_FAMILY reads them
for random-weight GPT-2s). GPU capacities say whether they are the driver's usable figure or the marketed one
(`GPU.capacity_note`). Published KV-size figures and their checks live in kvviz.claims.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kvviz.i18n import N_, _
from kvviz.memory import KVConfig, MemoryInputError
from kvviz.memory.units import GIB, MIB
from kvviz.ops import ModelShape

HF = "https://huggingface.co/{}/blob/main/config.json"


@dataclass(frozen=True)
class Preset:
    name: str
    kv: KVConfig
    n_params: int
    max_context: int
    source: str  # config.json URL
    paper: str  # paper / model card
    shape: ModelShape | None = None
    note: str = ""


def _p(
    name: str,
    repo: str,
    paper: str,
    *,
    layers: int,
    heads: int,
    kv: int,
    head_dim: int,
    n_params: int,
    ctx: int,
    dtype: str = "bf16",
    hidden: int | None = None,
    d_ff: int | None = None,
    vocab: int | None = None,
    mlp: int = 3,
    window: int | None = None,
    local_per_global: int | None = None,
    mla: tuple[int, int] = (0, 0),
    note: str = "",
) -> Preset:
    kvc = KVConfig(layers, heads, kv, head_dim, dtype, mla[0], mla[1], window, local_per_global, name=name)
    shape = None
    if hidden and d_ff and vocab:
        shape = ModelShape(layers, heads, kv, head_dim, hidden, d_ff, vocab, mlp, name=name)
    return Preset(name, kvc, n_params, ctx, HF.format(repo), paper, shape, note)


_GPT2 = "Radford et al. 2019, Language Models are Unsupervised Multitask Learners (OpenAI)"
_LLAMA2 = "Touvron et al. 2023, Llama 2, arXiv:2307.09288"
_LLAMA3 = "Llama Team 2024, The Llama 3 Herd of Models, arXiv:2407.21783"

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in [
        _p(
            "distilgpt2",
            "distilbert/distilgpt2",
            "Sanh et al. 2019, DistilBERT (distilled GPT-2), arXiv:1910.01108",
            layers=6,
            heads=12,
            kv=12,
            head_dim=64,
            n_params=81_912_576,
            ctx=1024,
            dtype="fp32",
            hidden=768,
            d_ff=3072,
            vocab=50257,
            mlp=2,
            note=N_("GPT-2 small with 6 of its 12 layers (124,439,808 - 6 x 7,087,872 parameters)"),
        ),
        _p(
            "gpt2",
            "openai-community/gpt2",
            _GPT2,
            layers=12,
            heads=12,
            kv=12,
            head_dim=64,
            n_params=124_439_808,
            ctx=1024,
            dtype="fp32",
            hidden=768,
            d_ff=3072,
            vocab=50257,
            mlp=2,
        ),
        _p(
            "gpt2-medium",
            "openai-community/gpt2-medium",
            _GPT2,
            layers=24,
            heads=16,
            kv=16,
            head_dim=64,
            n_params=354_823_168,
            ctx=1024,
            dtype="fp32",
            hidden=1024,
            d_ff=4096,
            vocab=50257,
            mlp=2,
        ),
        _p(
            "gpt2-large",
            "openai-community/gpt2-large",
            _GPT2,
            layers=36,
            heads=20,
            kv=20,
            head_dim=64,
            n_params=774_030_080,
            ctx=1024,
            dtype="fp32",
            hidden=1280,
            d_ff=5120,
            vocab=50257,
            mlp=2,
        ),
        _p(
            "gpt2-xl",
            "openai-community/gpt2-xl",
            _GPT2,
            layers=48,
            heads=25,
            kv=25,
            head_dim=64,
            n_params=1_557_611_200,
            ctx=1024,
            dtype="fp32",
            hidden=1600,
            d_ff=6400,
            vocab=50257,
            mlp=2,
        ),
        _p(
            "opt-13b",
            "facebook/opt-13b",
            "Zhang et al. 2022, OPT, arXiv:2205.01068",
            layers=40,
            heads=40,
            kv=40,
            head_dim=128,
            n_params=12_853_473_280,
            ctx=2048,
            dtype="fp16",
            hidden=5120,
            d_ff=20480,
            vocab=50272,
            mlp=2,
        ),
        _p(
            "falcon-7b",
            "tiiuae/falcon-7b",
            "Almazrouei et al. 2023, The Falcon Series, arXiv:2311.16867",
            layers=32,
            heads=71,
            kv=1,
            head_dim=64,
            n_params=6_921_720_704,
            ctx=2048,
            hidden=4544,
            d_ff=18176,
            vocab=65024,
            mlp=2,
            note=N_("multi-query attention: one K/V head shared by all 71 query heads"),
        ),
        _p(
            "llama-2-7b",
            "meta-llama/Llama-2-7b-hf",
            _LLAMA2,
            layers=32,
            heads=32,
            kv=32,
            head_dim=128,
            n_params=6_738_415_616,
            ctx=4096,
            dtype="fp16",
            hidden=4096,
            d_ff=11008,
            vocab=32000,
        ),
        _p(
            "llama-2-13b",
            "meta-llama/Llama-2-13b-hf",
            _LLAMA2,
            layers=40,
            heads=40,
            kv=40,
            head_dim=128,
            n_params=13_015_864_320,
            ctx=4096,
            dtype="fp16",
            hidden=5120,
            d_ff=13824,
            vocab=32000,
        ),
        _p(
            "llama-2-70b",
            "meta-llama/Llama-2-70b-hf",
            _LLAMA2,
            layers=80,
            heads=64,
            kv=8,
            head_dim=128,
            n_params=68_976_648_192,
            ctx=4096,
            dtype="fp16",
            hidden=8192,
            d_ff=28672,
            vocab=32000,
        ),
        _p(
            "llama-3-8b",
            "meta-llama/Meta-Llama-3-8B",
            _LLAMA3,
            layers=32,
            heads=32,
            kv=8,
            head_dim=128,
            n_params=8_030_261_248,
            ctx=8192,
            hidden=4096,
            d_ff=14336,
            vocab=128256,
        ),
        _p(
            "llama-3-70b",
            "meta-llama/Meta-Llama-3-70B",
            _LLAMA3,
            layers=80,
            heads=64,
            kv=8,
            head_dim=128,
            n_params=70_553_706_496,
            ctx=8192,
            hidden=8192,
            d_ff=28672,
            vocab=128256,
        ),
        _p(
            "llama-3.1-70b",
            "meta-llama/Llama-3.1-70B",
            _LLAMA3,
            layers=80,
            heads=64,
            kv=8,
            head_dim=128,
            n_params=70_553_706_496,
            ctx=131072,
            hidden=8192,
            d_ff=28672,
            vocab=128256,
            note=N_("same layout as Llama-3-70B; 128K context"),
        ),
        _p(
            "llama-3.1-405b",
            "meta-llama/Llama-3.1-405B",
            _LLAMA3,
            layers=126,
            heads=128,
            kv=8,
            head_dim=128,
            n_params=405_853_388_800,
            ctx=131072,
            hidden=16384,
            d_ff=53248,
            vocab=128256,
        ),
        _p(
            "mistral-7b",
            "mistralai/Mistral-7B-v0.1",
            "Jiang et al. 2023, Mistral 7B, arXiv:2310.06825",
            layers=32,
            heads=32,
            kv=8,
            head_dim=128,
            n_params=7_241_732_096,
            ctx=32768,
            hidden=4096,
            d_ff=14336,
            vocab=32000,
            window=4096,
            note=N_("v0.1: sliding window of 4096 tokens on every layer (rolling buffer cache)"),
        ),
        _p(
            "mixtral-8x7b",
            "mistralai/Mixtral-8x7B-v0.1",
            "Jiang et al. 2024, Mixtral of Experts, arXiv:2401.04088",
            layers=32,
            heads=32,
            kv=8,
            head_dim=128,
            n_params=46_702_792_704,
            ctx=32768,
            note=N_("mixture of experts: the MLP differs, the attention and its cache are Mistral's (no window)"),
        ),
        _p(
            "qwen2.5-7b",
            "Qwen/Qwen2.5-7B",
            "Qwen Team 2024, Qwen2.5 Technical Report, arXiv:2412.15115",
            layers=28,
            heads=28,
            kv=4,
            head_dim=128,
            n_params=7_615_616_512,
            ctx=131072,
            hidden=3584,
            d_ff=18944,
            vocab=152064,
            note=N_("GQA with 7 query heads per K/V head; config has use_sliding_window: false"),
        ),
        _p(
            "gemma-2-9b",
            "google/gemma-2-9b",
            "Gemma Team 2024, Gemma 2, arXiv:2408.00118",
            layers=42,
            heads=16,
            kv=8,
            head_dim=256,
            n_params=9_241_705_984,
            ctx=8192,
            hidden=3584,
            d_ff=14336,
            vocab=256000,
            window=4096,
            local_per_global=1,
            note=N_("local (4096-token window) and global layers alternate 1:1"),
        ),
        _p(
            "gemma-3-4b",
            "google/gemma-3-4b-pt",
            "Gemma Team 2025, Gemma 3 Technical Report, arXiv:2503.19786",
            layers=34,
            heads=8,
            kv=4,
            head_dim=256,
            n_params=4_300_079_472,
            ctx=131072,
            hidden=2560,
            d_ff=10240,
            vocab=262208,
            window=1024,
            local_per_global=5,
            note=N_("5 local layers (1024-token window) per global layer; text_config of the multimodal config"),
        ),
        _p(
            "deepseek-v3",
            "deepseek-ai/DeepSeek-V3",
            "DeepSeek-AI 2024, DeepSeek-V3 Technical Report, arXiv:2412.19437",
            layers=61,
            heads=128,
            kv=128,
            head_dim=192,
            n_params=671_000_000_000,
            ctx=163840,
            mla=(512, 64),
            note=N_("MLA: caches a 512-number latent + a 64-number RoPE key per token per layer, for all 128 heads"),
        ),
    ]
}


# ----- presets read layer by layer from their published config.json ----------------------------------------------
# Models whose layers are not all attention of one shape (linear-attention and SSM hybrids, chunked and indexed
# attention, per-layer shapes): each is its published config.json (preset_configs/<name>.json: the file's fields as
# published, with where it was read), imported as the memory page imports a pasted config, through transformers'
# own config class and kvviz.memory.layers. transformers is imported only when one is chosen.
PRESET_CONFIGS = Path(__file__).resolve().parent / "preset_configs"


@dataclass(frozen=True)
class LayeredPreset:
    name: str  # the file's stem: the preset's key in links and the CLI
    title: str  # the model's own name
    repo: str
    source: str  # the config.json URL in the model's repository
    retrieved_from: str  # the copy the numbers were read from
    n_params: int | None
    complete: bool  # False: the copy is an excerpt of the cache-shaping fields
    config: dict[str, Any]  # the config.json as published
    as_transformers: dict[str, Any]  # fields that read a remote-code config with transformers' own class

    @property
    def max_context(self) -> int | None:
        text = self.config.get("text_config") if isinstance(self.config.get("text_config"), dict) else {}
        value = text.get("max_position_embeddings", self.config.get("max_position_embeddings"))
        return value if isinstance(value, int) and value > 0 else None

    def transformers_config(self) -> dict[str, Any]:
        """The config transformers reads: the published one, or, for a remote-code model (MiniMax-M1), the same
        numbers under the transformers class that implements it, with its layer list spelled as that class spells it
        (MiniMax's attn_type_list: 0 = lightning/linear, 1 = softmax attention)."""
        if not self.as_transformers:
            return self.config
        cfg = {k: v for k, v in self.config.items() if k not in ("auto_map", "architectures")}
        cfg.update({k: v for k, v in self.as_transformers.items() if k != "layer_types_from"})
        if self.as_transformers.get("layer_types_from") == "attn_type_list":
            cfg["layer_types"] = ["full_attention" if t == 1 else "linear_attention" for t in cfg.pop("attn_type_list")]
        return cfg

    @property
    def mixed(self) -> bool:
        """Its layers are not one uniform attention layout (a hybrid, per-layer shapes...): the layer list answers.
        False for one that a KVConfig describes whole (GPT-OSS: full and sliding layers of one shape)."""
        from kvviz.memory import config_import

        return not config_import.plain_attention(self.imported().layers)

    def imported(self, dtype: str | None = None) -> Any:
        """The config_import.ImportedConfig of this preset (cached: transformers builds it once per process)."""
        return _import_preset(self.name, dtype)


def _read_layered() -> dict[str, LayeredPreset]:
    found = {}
    for path in sorted(PRESET_CONFIGS.glob("*.json")):
        d = json.loads(path.read_text(encoding="utf-8"))
        found[path.stem] = LayeredPreset(
            path.stem,
            d["name"],
            d["repo"],
            d["source"],
            d["retrieved_from"],
            d.get("n_params"),
            d.get("complete", True),
            d["config"],
            d.get("as_transformers", {}),
        )
    return found


LAYERED_PRESETS: dict[str, LayeredPreset] = _read_layered()


@functools.lru_cache(maxsize=64)
def _import_preset(name: str, dtype: str | None) -> Any:
    from kvviz.memory import config_import

    preset = LAYERED_PRESETS[name]
    imported = config_import.parse_hf_config(preset.transformers_config(), dtype=dtype)
    return replace(
        imported,
        layers=replace(imported.layers, name=preset.title),
        config=None if imported.config is None else replace(imported.config, name=preset.title),
    )


def get_preset(name: str) -> Preset:
    key = name.strip().lower()
    if key not in PRESETS:
        from kvviz.inputs.query_values import shown  # the one cut of a quoted value: the known presets stay whole

        raise MemoryInputError(
            f"unknown preset {shown(repr(name))}; known presets: {', '.join((*PRESETS, *LAYERED_PRESETS))}"
        )
    return PRESETS[key]


def past_trained_positions(name: str, context: int) -> str | None:
    """The one rule for a context longer than a preset's trained positions (the memory page and `python -m kvviz
    memory` both say it): None when `name` is no preset or `context` is within its max_context, else the warning,
    in the current language."""
    key = name.strip().lower()
    preset = PRESETS.get(key) or LAYERED_PRESETS.get(key)
    if preset is None or preset.max_context is None or context <= preset.max_context:
        return None
    return _(
        "{n:,} tokens exceeds {preset}'s own context window of {own:,} tokens: the bytes are exact arithmetic, "
        "but the model was not trained to run that long."
    ).format(n=context, preset=preset.name, own=preset.max_context)


def ops_presets() -> dict[str, Preset]:
    """Presets whose op counts kvviz.ops can give (dense models with a known MLP)."""
    return {name: p for name, p in PRESETS.items() if p.shape is not None}


@dataclass(frozen=True)
class GPU:
    name: str
    marketed: str  # the capacity as the vendor sells it, e.g. "80 GB"
    memory_bytes: int  # what the calculator uses
    driver_reported: bool  # True: memory_bytes is nvidia-smi's memory.total (as it prints on that GPU, in MiB);
    source: str  # the vendor's page             False: the marketed figure taken as GiB

    @property
    def capacity_note(self) -> str:
        gib = self.memory_bytes / GIB
        if self.driver_reported:
            return _(
                "{name}: marketed {marketed}; the driver reports {mib:,} MiB = "
                "{gib:.2f} GiB usable (nvidia-smi memory.total), used here."
            ).format(name=self.name, marketed=self.marketed, mib=self.memory_bytes // MIB, gib=gib)
        return _(
            "{name}: marketed {marketed}, taken here as {gib:g} GiB; the driver reports somewhat "
            "less (the H100 and H200 entries use the driver's own figure)."
        ).format(name=self.name, marketed=self.marketed, gib=gib)


GPUS: dict[str, GPU] = {
    g.name: g
    for g in [
        GPU("NVIDIA T4", "16 GB", 16 * GIB, False, "https://www.nvidia.com/en-us/data-center/tesla-t4/"),
        GPU("NVIDIA L4", "24 GB", 24 * GIB, False, "https://www.nvidia.com/en-us/data-center/l4/"),
        GPU(
            "NVIDIA RTX 4090",
            "24 GB",
            24 * GIB,
            False,
            "https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4090/",
        ),
        GPU("NVIDIA A100 40GB", "40 GB", 40 * GIB, False, "https://www.nvidia.com/en-us/data-center/a100/"),
        GPU("NVIDIA A100 80GB", "80 GB", 80 * GIB, False, "https://www.nvidia.com/en-us/data-center/a100/"),
        GPU("NVIDIA H100 80GB", "80 GB", 81_559 * MIB, True, "https://www.nvidia.com/en-us/data-center/h100/"),
        GPU("NVIDIA H200", "141 GB", 143_771 * MIB, True, "https://www.nvidia.com/en-us/data-center/h200/"),
        GPU(
            "AMD MI300X",
            "192 GB",
            192 * GIB,
            False,
            "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html",
        ),
    ]
}
