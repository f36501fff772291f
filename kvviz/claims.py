"""Claims checked: every published figure and popular sentence about the KV cache that kvviz tests, in one place.

Each claim carries its source (title, URL, date: a claim without a checkable public source is not shown), the
arithmetic (computed here by kvviz's own functions: memory.kv_bytes,
ops.generation_totals, ops.check_speedup_claim, ...; never typed in), a verdict and the page where a student
sees it live. Verdicts: "holds", "wrong" (by how much), or "partly true" (true only for the quantity named).
`python -m kvviz claims [--json]` prints them; pages/claims.py shows them; tests/test_claims.py pins the numbers.
Pure Python: no torch, no Streamlit.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from kvviz import ops
from kvviz.memory import KVConfig, kv_bytes
from kvviz.memory.units import GB, GIB, KIB, MIB, format_bytes
from kvviz.memory.presets import get_preset

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


# ----- published KV-cache sizes (moved here from kvviz.memory / kvviz.memory.presets) --------------------------------
@dataclass(frozen=True)
class PublishedFigure:
    """A KV-cache size as printed somewhere, and the config it is about."""

    model: str  # a preset name (kvviz.memory.presets)
    context_len: int
    batch: int
    dtype: str
    claimed: float
    claimed_unit: str  # "GB" | "GiB" | "KB" | "MB" (as printed)
    where: str  # the source, with URL
    quote: str
    source_units: str = ""  # "binary" / "decimal" when the source defines its unit, else "" (UNITS_RULE)


@dataclass(frozen=True)
class FigureCheck:
    figure: PublishedFigure
    actual_bytes: int
    verdict: str  # "correct" | "correct if GB means binary units" | "wrong"
    explanation: str  # the arithmetic


_UNIT_BYTES = {"KB": (KIB, 10**3), "MB": (MIB, 10**6), "GB": (GIB, GB), "GiB": (GIB, GIB), "KiB": (KIB, KIB),
               "MiB": (MIB, MIB)}

# The one units rule every claim below applies (and pages/claims.py and `python -m kvviz claims` state):
UNITS_RULE = (
    "Units: a printed GB, MB or KB is read as decimal (10^9, 10^6, 10^3 bytes), GiB, MiB and KiB as binary (2^30, "
    "2^20, 2^10), unless the source defines its own unit (e.g. '8,388,608 bytes = 8 MB' makes its MB binary). "
    "Where a figure matches better with its GB read as GiB, the verdict says so ('correct if GB means binary "
    "units'); a 'wrong' figure's factor is given for the reading the rule picks, with the other in brackets."
)


def printed_bytes(claimed: float, unit: str, source_units: str = "") -> tuple[float, float]:
    """(the rule's reading, the other reading) of a printed size, in bytes. source_units: "binary" or "decimal"
    when the source defines its units, "" when it does not (then decimal first)."""
    binary, decimal = _UNIT_BYTES[unit]
    if source_units == "binary":
        return claimed * binary, claimed * decimal
    return claimed * decimal, claimed * binary


def check_figure(fig: PublishedFigure, config: KVConfig, tolerance: float = 0.05) -> FigureCheck:
    """Compare a printed figure with the exact bytes under UNITS_RULE, allowing for rounding."""
    cfg = replace(config, dtype=fig.dtype)
    actual = kv_bytes(cfg, fig.context_len, fig.batch)
    arithmetic = (
        f"{cfg.n_layer} layers x {cfg.bytes_per_token_per_layer:,} B/token/layer "
        f"({cfg.attention_kind}, {cfg.n_kv_heads} KV heads x head_dim {cfg.head_dim}, {cfg.dtype}) "
        f"x {fig.context_len:,} tokens x batch {fig.batch} = {format_bytes(actual)}"
    )
    rule, other = printed_bytes(fig.claimed, fig.claimed_unit, fig.source_units)
    rule_error, other_error = abs(rule - actual) / actual, abs(other - actual) / actual
    if rule_error <= tolerance and rule_error <= other_error:
        return FigureCheck(fig, actual, "correct", arithmetic)
    if other_error <= tolerance:
        meaning = "binary" if fig.source_units != "binary" else "decimal"
        return FigureCheck(fig, actual, f"correct if {fig.claimed_unit} means {meaning} units", arithmetic)
    return FigureCheck(fig, actual, "wrong", f"{arithmetic}; the printed figure is {rule / actual:.3g}x that "
                                             f"({other / actual:.3g}x with the other reading of {fig.claimed_unit})")


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
                    "327,680 = 0.33MB / token x 131072 = 42.95GB (decimal GB)", "decimal"),
    PublishedFigure("llama-3.1-405b", 1, 1, "fp16", 504.0, "KB", _TOOLJOLT, "~504.0 KB per token at FP16"),
)


def published_figure_checks() -> list[FigureCheck]:
    return [check_figure(f, get_preset(f.model).kv) for f in PUBLISHED_FIGURES]


def _figures_claim() -> Claim:
    checks = published_figure_checks()
    wrong = [c for c in checks if c.verdict == "wrong"]
    factors = sorted({round(printed_bytes(c.figure.claimed, c.figure.claimed_unit, c.figure.source_units)[0]
                            / c.actual_bytes, 3) for c in wrong})
    binary = sorted({round(c.figure.claimed * _UNIT_BYTES[c.figure.claimed_unit][0] / c.actual_bytes, 3)
                     for c in wrong})
    return Claim(
        "published-kv-sizes", "KV-cache sizes printed in calculators and blog posts (Llama-3-8B/70B, 3.1-70B/405B)",
        f"{_DEVTO}; {_DENNEMAN}; {_TOOLJOLT}", "wrong" if wrong else "holds",
        f"{len(wrong)} of {len(checks)} figures are wrong (all Llama-3-70B rows of the dev.to calculator, "
        f"{' / '.join(f'{f:.3g}x' for f in factors)} too large; {' / '.join(f'{f:g}x' for f in binary)} if GB "
        "means GiB); the others hold (some only with GB read as GiB).",
        tuple(f"{c.figure.quote}: {c.verdict}. {c.explanation}" for c in checks),
        {f"{c.figure.model}@{c.figure.context_len}": c.actual_bytes for c in checks}, PAGE_MEMORY,
        {"mem_tab": "Textbook figures"},
    )


# ----- memory claims ------------------------------------------------------------------------------------------
# Each card's source: title, URL, date (or "undated" and when kvviz read it), and the words as printed.
_AKUNU = ("Akunu book, ch. 45 'KV Cache Design and Management', "
          "https://akunu.prabod.rathnayaka.me/part8/ch45-kv-cache.html (undated; read November 2026)")


def _gemma3_claims() -> list[Claim]:
    """The Akunu chapter's KV-size table. The chapter defines its MB as binary ('8,388,608 bytes = 8 MB'), so under
    UNITS_RULE its MB and GB are read as MiB and GiB."""
    gemma = get_preset("gemma-3-4b").kv
    all_global = replace(gemma, window=None, local_per_global=None)
    flat, hybrid = kv_bytes(all_global, 4096), kv_bytes(gemma, 4096)
    wrong = Claim(
        "gemma3-896mb", "Gemma 3-4B | 34 layers | 4 KV heads | head_dim 256 | 4096 | 896 MB", _AKUNU, "wrong",
        f"the chapter's MB is binary (it writes 8,388,608 bytes = 8 MB), so 896 MB = 896 MiB: {896 * MIB / flat:.3g}x "
        f"the {flat / MIB:g} MiB even an all-global cache takes, {896 * MIB / hybrid:.3g}x the {hybrid / MIB:g} MiB "
        f"with Gemma 3's real 5 local (window {gemma.window}) : 1 global layers.",
        (f"per token per layer: 2 x 4 x 256 x 2 B = {gemma.bytes_per_token_per_layer:,} B",
         f"all 34 layers global: 34 x 4,096 x {gemma.bytes_per_token_per_layer:,} = {format_bytes(flat)}",
         f"{gemma.n_global_layers} global layers x 4,096 tokens + {gemma.n_layer - gemma.n_global_layers} local "
         f"layers x {gemma.window:,} tokens = {format_bytes(hybrid)}"),
        {"all_global_bytes": flat, "hybrid_bytes": hybrid}, PAGE_MEMORY,
        {"mem_preset": "gemma-3-4b", "mem_context": "4096", "mem_tab": "Per layer"},
    )
    llama70 = get_preset("llama-3-70b").kv
    # (the row as the chapter prints it, kvviz's config for it, tokens, printed MiB)
    rows = [("LLaMA 3-8B | 32 | 8 | 128 | 4096 | 512 MB", get_preset("llama-3-8b").kv, 4096, 512 * MIB, "512 MB"),
            ("LLaMA 3-8B | 32 | 8 | 128 | 8192 | 1 GB", get_preset("llama-3-8b").kv, 8192, GIB, "1 GB"),
            ("Qwen 2.5-7B | 28 | 4 | 128 | 4096 | 224 MB", get_preset("qwen2.5-7b").kv, 4096, 224 * MIB, "224 MB"),
            ("LLaMA 3-70B | 80 | 8 | 128 | 4096 | 1.25 GB", llama70, 4096, 5 * GIB // 4, "1.25 GB"),
            ("LLaMA 3-70B | 80 | 8 | 128 | 8192 | 2.5 GB", llama70, 8192, 5 * GIB // 2, "2.5 GB"),
            ("70B without GQA (64 KV heads), 8192: 20 GB", replace(llama70, n_kv_heads=64), 8192, 20 * GIB,
             "20 GB")]
    computed = {label: kv_bytes(replace(cfg, dtype="fp16"), n) for label, cfg, n, _, _ in rows}
    holds = all(computed[label] == printed for label, _, _, printed, _ in rows)
    others = Claim(
        "gemma3-table-other-rows", "the same chapter's other sizes: 512 MB, 1 GB, 224 MB, 1.25 GB, 2.5 GB (table) and "
        "20 GB (its 70B-without-GQA example)", _AKUNU, "holds" if holds else "wrong",
        ("every other size is exact, checked at the layers, KV heads, head_dim and context length each row prints "
         "(fp16, the chapter's storage), with its MB and GB read as MiB and GiB as the chapter defines them."
         if holds else "a row differs"),
        tuple(f"{label}: {cfg.n_layer} x 2 x {cfg.n_kv_heads} x {cfg.head_dim} x 2 B x {n:,} = "
              f"{format_bytes(computed[label])} (printed {shown})" for label, cfg, n, _, shown in rows),
        {label: computed[label] for label, *_ in rows}, PAGE_MEMORY,
        {"mem_preset": "llama-3-70b", "mem_context": "8192", "mem_dtype": "fp16"},
    )
    return [wrong, others]


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
        "only-own-q", "Decode: each new token computes only Q; K/V are read from the cache",
        "Jimmy Song, AI handbook, 'KV 缓存' (KV cache): 'Decode 阶段每个新 token 只算 Q,K/V 从 Cache 读', "
        "https://jimmysong.io/book/ai-handbook/fundamentals/kv-cache (undated; read November 2026)", "wrong",
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
        "total-work-o-n", "KV cache: reduces time complexity from O(n²) to O(n) for generating n tokens",
        "Zack Hubert, 'Fast Generation with KV-Cache', https://zhubert.com/transformer/kv-cache/ (undated; read "
        "November 2026)", "partly true",
        "true only for the projections and MLP (one token per step, n in total); attention is O(n) per step and "
        "O(n^2) over a generation with the cache (O(n^3) without), so the total is not O(n).",
        (f"QK^T dot products per head, {n:,} tokens from a 1-token prompt: with cache N(N+1)/2 = {per_head_c:,}",
         f"without cache N(N+1)(N+2)/6 = {per_head_u:,}; ratio (N+2)/3 = {per_head_u / per_head_c:.4g}"),
        {"cached_dots_per_head": per_head_c, "uncached_dots_per_head": per_head_u}, PAGE_OPS,
        {"ops_model": "gpt2", "ops_prompt": "1", "ops_new": "1000", "ops_tab": "Per component"},
    )


@dataclass(frozen=True)
class GPUCompute:
    name: str
    peak_flops: float  # dense 16-bit tensor-core FLOP/s (no sparsity), from the datasheet: BF16, or FP16 (T4)
    source: str
    precision: str = "BF16"  # the 16-bit format the peak is for (T4 has no BF16)


GPU_COMPUTE: dict[str, GPUCompute] = {g.name: g for g in [
    GPUCompute("NVIDIA T4", 65e12, "T4 datasheet: 65 TFLOPS mixed-precision FP16 (T4 has no BF16)", "FP16"),
    GPUCompute("NVIDIA L4", 121e12, "L4 datasheet: 242 TFLOPS BF16 with sparsity, 121 dense"),
    GPUCompute("NVIDIA A100", 312e12, "A100 datasheet: 312 TFLOPS BF16 dense"),
    GPUCompute("NVIDIA H100 SXM", 989e12, "H100 datasheet: 1,979 TFLOPS BF16 with sparsity, 989 dense"),
    GPUCompute("AMD MI300X", 1307e12, "MI300X datasheet: 1,307.4 TFLOPS BF16 dense"),
]}
DEFAULT_GPU = "NVIDIA H100 SXM"
GPU_LABEL = "GPU for this claim (dense 16-bit tensor peak from its datasheet: BF16, FP16 on the T4)"
CLAIM_LOW_MS, CLAIM_HIGH_MS = 50.0, 100.0  # "50-100 ms"


def prefill_verdict(ms_at_peak: float, low_ms: float = CLAIM_LOW_MS, high_ms: float = CLAIM_HIGH_MS) -> str:
    """The verdict on "saves low-high ms", both bounds checked. A real prefill runs at 50-100% of peak, so it takes
    between ms_at_peak (100%) and 2 x ms_at_peak (50%). holds: the realistic time (50% of peak) is inside the
    claim's range; partly true: the range is reached only at some utilization between 50% and 100%; wrong: no
    utilization in 50-100% lands inside it (the saving is smaller than low_ms, or larger than high_ms)."""
    realistic = 2 * ms_at_peak
    if low_ms <= realistic <= high_ms:
        return "holds"
    if ms_at_peak <= high_ms and realistic >= low_ms:
        return "partly true"
    return "wrong"


def prefill_claim(gpu: str = DEFAULT_GPU, prompt: int = 2048) -> Claim:
    """The 2048-token system-prompt claim, worked out on `gpu` (a GPU_COMPUTE key): its verdict depends on it."""
    g = GPU_COMPUTE[gpu]
    preset = get_preset("llama-3-8b")
    assert preset.shape is not None
    rule = 2 * preset.n_params * prompt
    exact = ops.forward_pass_counts(preset.shape, 0, prompt, True, lm_head_all_positions=False).total_flops
    ms = exact / g.peak_flops * 1000
    verdict = prefill_verdict(ms)
    if verdict == "holds":
        how = f"{CLAIM_LOW_MS:.0f}-{CLAIM_HIGH_MS:.0f} ms is right at a realistic utilization (50% of peak)."
    elif verdict == "partly true":
        how = ("inside 50-100 ms only at some utilizations between 50% and 100% of peak, not at a typical 50%.")
    elif 2 * ms < CLAIM_LOW_MS:
        how = f"the saving is smaller than claimed: at most {2 * ms:,.0f} ms, below the claim's {CLAIM_LOW_MS:.0f} ms."
    else:
        how = f"the saving is larger than claimed: at least {ms:,.0f} ms, {ms / CLAIM_HIGH_MS:.3g}x the claim's top."
    return Claim(
        "system-prompt-prefill", "For a 2048-token system prompt, that can save 50-100ms of prefill time on each "
        "request", _AKUNU, verdict,
        f"for an 8B model (the chapter's running example, LLaMA 3.1-8B) on an {g.name} the prefill takes "
        f"{ms:,.0f} ms at 100% of its {g.precision} peak and {2 * ms:,.0f} ms at 50%: " + how,
        (f"rule of thumb 2 x params x tokens = 2 x {preset.n_params:,} x {prompt:,} = {rule:.3e} FLOP",
         f"kvviz's exact matmul count (Llama-3-8B shape, attention included) = {exact:.4e} FLOP",
         f"/ {g.peak_flops:.4g} FLOP/s ({g.source}) = {ms:,.1f} ms at 100% of peak; {2 * ms:,.1f} ms at 50%"),
        {"rule_flops": rule, "exact_flops": exact, "ms_at_peak": round(ms, 3), "gpu": g.name}, PAGE_OPS,
        {"ops_model": "llama-3-8b", "ops_prompt": str(prompt), "ops_new": "1", "ops_tab": "Per component"},
    )


def fixed_claims() -> list[Claim]:
    """Every claim whose verdict does not depend on a choice."""
    return [*_gemma3_claims(), _figures_claim(), _only_q_claim(), _total_on_claim()]


def all_claims(gpu: str = DEFAULT_GPU) -> list[Claim]:
    """Every claim kvviz checks, the prefill claim worked out for `gpu` (a GPU_COMPUTE key) last."""
    return [*fixed_claims(), prefill_claim(gpu)]
