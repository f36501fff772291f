"""Claims checked: every published figure and popular sentence about the KV cache that kvviz tests, in one place.

Each claim carries its source, the arithmetic (computed here by kvviz's own functions: memory.kv_bytes,
ops.generation_totals, ops_summary.check_speedup_claim, ...; never typed in), a verdict and the page where a student
sees it live. Verdicts: "holds", "wrong" (by how much), or "partly true" (true only for the quantity named).
`python -m kvviz claims [--json]` prints them; pages/claims.py shows them; tests/test_claims.py pins the numbers.
Pure Python: no torch, no Streamlit.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from kvviz import ops, ops_summary
from kvviz.memory import GB, GIB, KIB, MIB, KVConfig, format_bytes, kv_bytes
from kvviz.presets import get_preset

PAGE_MEMORY = ("pages/memory_budget.py", "Memory budget")
PAGE_OPS = ("pages/attention_ops.py", "Count the work")
PAGE_STEP = ("pages/step_through.py", "Step through generation")


@dataclass(frozen=True)
class Claim:
    key: str
    quote: str  # the sentence or figure as published
    source: str
    verdict: str  # "holds" | "wrong" | "partly true"
    finding: str  # one line: wrong by how much, or true only for which quantity
    arithmetic: tuple[str, ...]  # the computation, line by line
    numbers: dict[str, Any] = field(default_factory=dict)  # the exact figures (tests pin them)
    page: tuple[str, str] = PAGE_MEMORY  # (page file, label) where it is live
    page_query: dict[str, str] = field(default_factory=dict)  # that page's URL widget state showing this claim

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "quote": self.quote, "source": self.source, "verdict": self.verdict,
                "finding": self.finding, "arithmetic": list(self.arithmetic), "numbers": self.numbers,
                "page": self.page[0], "page_query": self.page_query}


# ----- published KV-cache sizes (moved here from kvviz.memory / kvviz.presets) --------------------------------
@dataclass(frozen=True)
class PublishedFigure:
    """A KV-cache size as printed somewhere, and the config it is about."""

    model: str  # a preset name (kvviz.presets)
    context_len: int
    batch: int
    dtype: str
    claimed: float
    claimed_unit: str  # "GB" | "GiB" | "KB" | "MB" (as printed)
    where: str  # the source, with URL
    quote: str


@dataclass(frozen=True)
class FigureCheck:
    figure: PublishedFigure
    actual_bytes: int
    verdict: str  # "correct" | "correct if GB means binary units" | "wrong"
    explanation: str  # the arithmetic


_UNIT_BYTES = {"KB": (KIB, 10**3), "MB": (MIB, 10**6), "GB": (GIB, GB), "GiB": (GIB, GIB), "KiB": (KIB, KIB),
               "MiB": (MIB, MIB)}


def check_figure(fig: PublishedFigure, config: KVConfig, tolerance: float = 0.05) -> FigureCheck:
    """Compare a printed figure with the exact bytes, allowing for rounding and for 'GB' meaning GiB."""
    cfg = replace(config, dtype=fig.dtype)
    actual = kv_bytes(cfg, fig.context_len, fig.batch)
    binary, decimal = _UNIT_BYTES[fig.claimed_unit]
    arithmetic = (
        f"{cfg.n_layer} layers x {cfg.bytes_per_token_per_layer:,} B/token/layer "
        f"({cfg.attention_kind}, {cfg.n_kv_heads} KV heads x head_dim {cfg.head_dim}, {cfg.dtype}) "
        f"x {fig.context_len:,} tokens x batch {fig.batch} = {format_bytes(actual)}"
    )
    decimal_error = abs(fig.claimed * decimal - actual) / actual
    binary_error = abs(fig.claimed * binary - actual) / actual
    if min(decimal_error, binary_error) <= tolerance:
        if decimal_error <= binary_error or decimal == binary:
            return FigureCheck(fig, actual, "correct", arithmetic)
        return FigureCheck(fig, actual, f"correct if {fig.claimed_unit} means binary units", arithmetic)
    factor = fig.claimed * binary / actual
    return FigureCheck(fig, actual, "wrong", f"{arithmetic}; the printed figure is {factor:.3g}x that")


_DEVTO = "https://dev.to/jagmarques/kv-cache-memory-calculator-how-much-does-your-llm-actually-use-85n"
_DENNEMAN = "https://frankdenneman.nl/2026/01/12/the-dynamic-world-of-llm-runtime-memory"
_TOOLJOLT = "https://tooljolt.com/tools/llama-3-1-405b-kv-cache-calculator"

PUBLISHED_FIGURES: tuple[PublishedFigure, ...] = (
    PublishedFigure("llama-3-8b", 4096, 1, "fp16", 0.5, "GB", _DEVTO, "Llama-3-8B ... 4K tokens 0.5 GB"),
    PublishedFigure("llama-3-8b", 131072, 1, "fp16", 16, "GB", _DEVTO, "Llama-3-8B ... 128K tokens 16 GB"),
    PublishedFigure("llama-3-70b", 4096, 1, "fp16", 5, "GB", _DEVTO, "Llama-3-70B (L=80, H=8 KV heads, d=128) 4K tokens 5 GB"),
    PublishedFigure("llama-3-70b", 32768, 1, "fp16", 40, "GB", _DEVTO, "Llama-3-70B ... 32K tokens 40 GB"),
    PublishedFigure("llama-3-70b", 131072, 1, "fp16", 160, "GB", _DEVTO, "Llama-3-70B ... 128K tokens 160 GB"),
    PublishedFigure("llama-3.1-70b", 131072, 1, "fp16", 42.95, "GB", _DENNEMAN,
                    "327,680 = 0.33MB / token x 131072 = 42.95GB (decimal GB)"),
    PublishedFigure("llama-3.1-405b", 1, 1, "fp16", 504.0, "KB", _TOOLJOLT, "~504.0 KB per token at FP16"),
)


def published_figure_checks() -> list[FigureCheck]:
    return [check_figure(f, get_preset(f.model).kv) for f in PUBLISHED_FIGURES]


def _figures_claim() -> Claim:
    checks = published_figure_checks()
    wrong = [c for c in checks if c.verdict == "wrong"]
    factors = sorted({round(c.figure.claimed * _UNIT_BYTES[c.figure.claimed_unit][0] / c.actual_bytes, 3)
                      for c in wrong})
    return Claim(
        "published-kv-sizes", "KV-cache sizes printed in calculators and blog posts (Llama-3-8B/70B, 3.1-70B/405B)",
        f"{_DEVTO}; {_DENNEMAN}; {_TOOLJOLT}", "wrong" if wrong else "holds",
        f"{len(wrong)} of {len(checks)} figures are wrong (all Llama-3-70B rows of the dev.to calculator, "
        f"{' / '.join(f'{f:g}x' for f in factors)} too large); the others hold (some only with GB read as GiB).",
        tuple(f"{c.figure.quote}: {c.verdict}. {c.explanation}" for c in checks),
        {f"{c.figure.model}@{c.figure.context_len}": c.actual_bytes for c in checks}, PAGE_MEMORY,
        {"mem_tab": "Textbook figures"},
    )


# ----- memory claims ------------------------------------------------------------------------------------------
def _four_gb_claim() -> Claim:
    cfg = KVConfig(32, 32, 32, 128, "fp16", name="32 layers x 4096 dims (32 heads x 128)")
    actual = kv_bytes(cfg, 4096)
    return Claim(
        "4gb-per-sample", "32 layers x 4096 length x 4096 dims x 2 x 2 B ≈ 4 GB per sample",
        "a popular KV-cache explainer (as quoted in kvviz issue 11)", "wrong",
        f"the product is {format_bytes(actual)}: the printed 4 GB is {4 * GB / actual:.3g}x too large "
        f"({4 * GIB // actual}x if it meant GiB).",
        (f"K and V: 2 x 32 heads x 128 = 8,192 numbers per token per layer x 2 B = "
         f"{cfg.bytes_per_token_per_layer:,} B", f"x 32 layers x 4,096 tokens = {actual:,} B = {actual / GIB:g} GiB"),
        {"bytes": actual}, PAGE_MEMORY, {"mem_preset": "llama-2-7b", "mem_context": "4096"},
    )


def _gemma3_claims() -> list[Claim]:
    gemma = get_preset("gemma-3-4b").kv
    all_global = replace(gemma, window=None, local_per_global=None)
    flat, hybrid = kv_bytes(all_global, 4096), kv_bytes(gemma, 4096)
    src = "a Metal inference engine's KV-cache chapter (KV-cache size table; as quoted in kvviz issue 11)"
    wrong = Claim(
        "gemma3-896mb", "Gemma 3-4B, 34 layers, 4 KV heads, head_dim 256, 4096 tokens: 896 MB", src, "wrong",
        f"{flat / MIB:g} MiB if every layer were global ({896 * MIB / flat:.3g}x smaller than printed); "
        f"{hybrid / MIB:g} MiB with Gemma 3's real 5 local (window {gemma.window}) : 1 global layers "
        f"({896 * MIB / hybrid:.3g}x smaller).",
        (f"per token per layer: 2 x 4 x 256 x 2 B = {gemma.bytes_per_token_per_layer:,} B",
         f"all 34 layers global: 34 x 4,096 x {gemma.bytes_per_token_per_layer:,} = {format_bytes(flat)}",
         f"{gemma.n_global_layers} global layers x 4,096 tokens + {gemma.n_layer - gemma.n_global_layers} local "
         f"layers x {gemma.window:,} tokens = {format_bytes(hybrid)}"),
        {"all_global_bytes": flat, "hybrid_bytes": hybrid}, PAGE_MEMORY,
        {"mem_preset": "gemma-3-4b", "mem_context": "4096", "mem_tab": "Per layer"},
    )
    rows = [("Llama-3-8B, 4,096 tokens", "llama-3-8b", 4096, 512 * MIB, "512 MiB"),
            ("Llama-3-8B, 8,192 tokens", "llama-3-8b", 8192, GIB, "1 GiB"),
            ("Qwen2.5-7B, 4,096 tokens", "qwen2.5-7b", 4096, 224 * MIB, "224 MiB"),
            ("Llama-3-70B, 4,096 tokens", "llama-3-70b", 4096, 5 * GIB // 4, "1.25 GiB"),
            ("Llama-3-70B, 8,192 tokens", "llama-3-70b", 8192, 5 * GIB // 2, "2.5 GiB"),
            ("Llama-3-70B, 65,536 tokens", "llama-3-70b", 65536, 20 * GIB, "20 GiB")]
    computed = {label: kv_bytes(replace(get_preset(m).kv, dtype="fp16"), n) for label, m, n, _, _ in rows}
    holds = all(computed[label] == printed for label, _, _, printed, _ in rows)
    others = Claim(
        "gemma3-table-other-rows", "the same table: 512 MiB, 1 GiB, 224 MiB, 1.25 GiB, 2.5 GiB (Llama-3-70B, 8k), "
        "20 GiB", src, "holds" if holds else "wrong",
        "every other row is exact (fp16, rows read at the lengths named here)." if holds else "a row differs",
        tuple(f"{label}: {format_bytes(computed[label])} (printed {shown})" for label, _, _, _, shown in rows),
        {label: computed[label] for label, *_ in rows}, PAGE_MEMORY,
        {"mem_preset": "llama-3-70b", "mem_context": "8192", "mem_dtype": "fp16"},
    )
    return [wrong, others]


def _gpt3_claim() -> Claim:
    cfg = KVConfig(96, 96, 96, 128, "fp16", name="GPT-3 175B")  # d_model 12288 = 96 heads x 128
    actual = kv_bytes(cfg, 100)
    return Claim(
        "gpt3-100-tokens", "GPT-3 175B, 100 tokens: 2 x 100 x 12288 x 96 x 2 B = 471,859,200 B ≈ 472 MB",
        "widely quoted; GPT-3's shape from Brown et al. 2020, arXiv:2005.14165, Table 2.1 (96 layers, d_model "
        "12288, 96 heads)", "holds" if actual == 471_859_200 else "wrong",
        f"exact: {format_bytes(actual)}.", (f"96 layers x {cfg.bytes_per_token_per_layer:,} B/token/layer x 100 "
                                            f"tokens = {actual:,} B",), {"bytes": actual},
    )


# ----- work claims ----------------------------------------------------------------------------------------------
def _gpt2_shape() -> ops.ModelShape:
    shape = get_preset("gpt2").shape
    assert shape is not None
    return shape


def _only_q_claim() -> Claim:
    s = _gpt2_shape()
    step = ops.forward_pass_counts(s, 100, 1, True, lm_head_all_positions=False)
    q_only = s.n_layer * s.n_embd * s.n_head * s.head_dim
    return Claim(
        "only-own-q", "With the cache, the new token only computes its own Q",
        "a common explanation of the KV cache", "wrong",
        f"the new token computes its own Q, K and V (K and V are appended to the cache): "
        f"{step.qkv_proj / q_only:g}x the projection work of Q alone on GPT-2 124M.",
        (f"Q/K/V projections of one cached GPT-2 step: 12 layers x 768 x (768 + 2 x 768) = {step.qkv_proj:,} ops",
         f"Q alone: 12 x 768 x 768 = {q_only:,} ops"),
        {"qkv_ops": step.qkv_proj, "q_only_ops": q_only}, PAGE_STEP,
    )


def _total_on_claim(n: int = 1000) -> Claim:
    s = _gpt2_shape()
    cached, uncached = ops.generation_totals(s, 1, n, lm_head_all_positions=False)
    heads = s.n_layer * s.n_head
    per_head_c, per_head_u = cached.attention_dot_products // heads, uncached.attention_dot_products // heads
    return Claim(
        "total-work-o-n", "With the cache, total work is O(n)", "a common summary of the KV cache", "partly true",
        "true only for the projections and MLP (one token per step); attention is O(n) per step and O(n^2) over "
        "a generation with the cache (O(n^3) without).",
        (f"QK^T dot products per head, {n:,} tokens from a 1-token prompt: with cache N(N+1)/2 = {per_head_c:,}",
         f"without cache N(N+1)(N+2)/6 = {per_head_u:,}; ratio (N+2)/3 = {per_head_u / per_head_c:.4g}"),
        {"cached_dots_per_head": per_head_c, "uncached_dots_per_head": per_head_u}, PAGE_OPS,
        {"ops_model": "gpt2", "ops_prompt": "1", "ops_new": "1000", "ops_tab": "Per component"},
    )


def _five_hundred_claim(n: int = 1000) -> Claim:
    rows = ops_summary.check_speedup_claim(_gpt2_shape(), n)
    return Claim(
        "1000-tokens-500x", "With a KV cache, generating 1000 tokens takes ~500x fewer computations",
        "a popular KV-cache explainer", "partly true",
        "true only for the last step's attention ((L+1)/2 = 500.5x) and the projections + MLP summed over the "
        f"run ((N+1)/2 = 500.5x); whole-run attention saves (N+2)/3 = {(n + 2) / 3:.4g}x.",
        tuple(f"{r.quantity}: {r.uncached:,} / {r.cached:,} = {r.ratio:,.4g}x ({'~500x' if r.holds else 'not ~500x'})"
              for r in rows),
        {r.quantity: round(r.ratio, 4) for r in rows}, PAGE_OPS,
        {"ops_model": "gpt2", "ops_prompt": "1", "ops_new": "1000", "ops_tab": "The '500x' claim"},
    )


@dataclass(frozen=True)
class GPUCompute:
    name: str
    peak_flops: float  # dense bf16/fp16 tensor-core FLOP/s (no sparsity), from the datasheet
    source: str


GPU_COMPUTE: dict[str, GPUCompute] = {g.name: g for g in [
    GPUCompute("NVIDIA T4", 65e12, "T4 datasheet: 65 TFLOPS mixed-precision FP16"),
    GPUCompute("NVIDIA L4", 121e12, "L4 datasheet: 242 TFLOPS BF16 with sparsity, 121 dense"),
    GPUCompute("NVIDIA A100", 312e12, "A100 datasheet: 312 TFLOPS BF16 dense"),
    GPUCompute("NVIDIA H100 SXM", 989e12, "H100 datasheet: 1,979 TFLOPS BF16 with sparsity, 989 dense"),
    GPUCompute("AMD MI300X", 1307e12, "MI300X datasheet: 1,307.4 TFLOPS BF16 dense"),
]}
DEFAULT_GPU = "NVIDIA H100 SXM"


def prefill_claim(gpu: str = DEFAULT_GPU, prompt: int = 2048) -> Claim:
    """The 2048-token system-prompt claim, worked out on `gpu` (a GPU_COMPUTE key): its verdict depends on it."""
    g = GPU_COMPUTE[gpu]
    preset = get_preset("llama-3-8b")
    assert preset.shape is not None
    rule = 2 * preset.n_params * prompt
    exact = ops.forward_pass_counts(preset.shape, 0, prompt, True, lm_head_all_positions=False).total_flops
    ms = exact / g.peak_flops * 1000
    verdict = "holds" if 2 * ms <= 100 else "partly true" if ms <= 100 else "wrong"
    return Claim(
        "system-prompt-prefill", "Sharing a 2048-token system prompt saves 50-100 ms of prefill (8B model)",
        "a popular prefix-caching explanation (as quoted in kvviz issue 11)", verdict,
        f"on an {g.name} the prefill takes at least {ms:,.0f} ms (100% of peak), {2 * ms:,.0f} ms at 50%: "
        + {"holds": "50-100 ms is right at a realistic utilization.",
           "partly true": "only at near-peak utilization, which prefill rarely reaches.",
           "wrong": f"the saving is {ms / 100:.3g}x the claim or more."}[verdict],
        (f"rule of thumb 2 x params x tokens = 2 x {preset.n_params:,} x {prompt:,} = {rule:.3e} FLOP",
         f"kvviz's exact matmul count (Llama-3-8B shape, attention included) = {exact:.4e} FLOP",
         f"/ {g.peak_flops:.4g} FLOP/s ({g.source}) = {ms:,.1f} ms at 100% of peak; {2 * ms:,.1f} ms at 50%"),
        {"rule_flops": rule, "exact_flops": exact, "ms_at_peak": round(ms, 3), "gpu": g.name}, PAGE_OPS,
        {"ops_model": "llama-3-8b", "ops_prompt": str(prompt), "ops_new": "1", "ops_tab": "Per component"},
    )


def fixed_claims() -> list[Claim]:
    """Every claim whose verdict does not depend on a choice."""
    return [_four_gb_claim(), *_gemma3_claims(), _gpt3_claim(), _figures_claim(), _only_q_claim(),
            _total_on_claim(), _five_hundred_claim()]


def all_claims(gpu: str = DEFAULT_GPU) -> list[Claim]:
    """Every claim kvviz checks, the prefill claim worked out for `gpu` (a GPU_COMPUTE key) last."""
    return [*fixed_claims(), prefill_claim(gpu)]
