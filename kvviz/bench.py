"""Timing harness: the same greedy generation with no cache, a growing cache and a pre-allocated cache.

Three ways to produce the same N tokens after a P-token prompt (all compute logits for the last position
only, as `generate` does):

    no_cache      every pass re-feeds the whole sequence (P, P+1, ..., P+N-1 tokens): the true baseline
    dynamic       transformers' DynamicCache: each pass feeds one token; K/V grow by concatenation
    preallocated  flat K/V buffers sized to the whole request up front and written in place (the design
                  of transformers' StaticCache and of real serving engines), driven by a lean decode loop:
                  no per-step mask building or cache bookkeeping, and (`prepack_weights`) the weight
                  matrices copied once into the layout the CPU's GEMV kernel streams fastest

plus two references, `model.generate(use_cache=True)` and `model.generate(use_cache=False)`, timed per token
through a streamer, so the app can show that its own loop adds no overhead. All modes must pick the same
tokens: caching changes speed, never results.

Method: one short untimed warm-up run per mode, then `repeats` rounds that run every mode once each,
interleaved, so that background noise hits all modes alike; we report medians and the min-max spread.
Pass 1 (the prefill of the prompt, which picks new token 1) is timed apart from the N-1 decode passes.

Heavy runs are serialized by a process-wide lock (`run_benchmark` waits for it; `benchmark_busy()` lets a
page say "busy" before waiting): two benchmarks sharing two cores would both measure nonsense. The torch
thread count is capped for the run and restored afterwards.
"""
from __future__ import annotations

import csv
import io
import os
import platform
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
import transformers
from transformers import DynamicCache, GenerationConfig
from transformers.generation.streamers import BaseStreamer

from kvviz import ops, roofline
from kvviz.models import LoadedModel
from kvviz.stepping import cache_bytes

MODES: tuple[str, ...] = ("no_cache", "dynamic", "preallocated")
REFERENCES: tuple[str, ...] = ("generate_cache", "generate_no_cache")
MODE_LABELS: dict[str, str] = {
    "no_cache": "No cache (recompute everything)",
    "dynamic": "DynamicCache (grows by concatenation)",
    "preallocated": "Pre-allocated cache (flat buffers, in place)",
    "generate_cache": "model.generate(use_cache=True)",
    "generate_no_cache": "model.generate(use_cache=False)",
}
CACHED_MODES: tuple[str, ...] = ("dynamic", "preallocated", "generate_cache")
MAX_THREADS = 8  # beyond this, small GEMVs gain nothing and a shared server loses everything
WARMUP_TOKENS = 8
COPIES_PER_ROUND = 4  # bandwidth copies before the runs and after every round
LOCK_WAIT_S = 600.0
BENCH_PROMPT = (
    "ROMEO:\nBut soft, what light through yonder window breaks? It is the east, and Juliet is the sun.\n"
    "Arise, fair sun, and kill the envious moon, who is already sick and pale with grief.\n"
)

ProgressFn = Callable[[float, str], None]  # (fraction done in [0, 1], what is running now)


class BenchInputError(ValueError):
    """Settings that cannot be benchmarked; the message says what to change."""


class BenchBusyError(RuntimeError):
    """Another benchmark held the lock for longer than we were willing to wait."""


# ----- settings and results -------------------------------------------------------------------------------
@dataclass(frozen=True)
class BenchSettings:
    prompt_len: int = 16  # P prompt tokens, prefilled in one pass
    new_tokens: int = 64  # N generated tokens: 1 prefill pass + N-1 decode passes
    repeats: int = 3
    warmup: int = 1  # untimed runs per mode before the timed rounds
    threads: int | None = None  # None: default_thread_count()
    include_generate: bool = True  # also time model.generate(use_cache=True)
    include_generate_no_cache: bool = True  # and model.generate(use_cache=False) (as slow as no_cache)
    prepack_weights: bool = True  # preallocated mode: weight copies in the GEMV kernel's layout


@dataclass(frozen=True)
class RunTiming:
    """One timed generation of N tokens by one mode."""

    prefill_ms: float  # pass 1: the P prompt tokens; picks new token 1
    decode_ms: tuple[float, ...]  # pass k+1 (k = 1..N-1) feeds new token k and picks token k+1
    total_ms: float  # wall time of the whole call, set-up included (for generate: the whole generate())
    token_ids: tuple[int, ...]  # the N generated tokens
    peak_cache_bytes: int | None  # K/V bytes held at the end (0 without a cache; None: not observable)

    @property
    def token_ms(self) -> np.ndarray:
        """(N,) latency of the pass that picked each generated token."""
        return np.array((self.prefill_ms, *self.decode_ms))

    @property
    def tokens_per_s(self) -> float:
        return len(self.token_ids) / (self.total_ms / 1000.0)

    @property
    def decode_tokens_per_s(self) -> float:
        """Decode passes per second, prefill excluded (NaN when N = 1)."""
        return len(self.decode_ms) / (sum(self.decode_ms) / 1000.0) if self.decode_ms else float("nan")


@dataclass(frozen=True)
class ModeResult:
    mode: str
    label: str
    runs: tuple[RunTiming, ...]

    @property
    def is_reference(self) -> bool:
        return self.mode in REFERENCES

    @property
    def tokens_per_s(self) -> np.ndarray:
        return np.array([r.tokens_per_s for r in self.runs])

    @property
    def median_tokens_per_s(self) -> float:
        return float(np.median(self.tokens_per_s))

    @property
    def median_decode_tokens_per_s(self) -> float:
        return float(np.median([r.decode_tokens_per_s for r in self.runs]))

    @property
    def median_prefill_ms(self) -> float:
        return float(np.median([r.prefill_ms for r in self.runs]))

    @property
    def median_total_ms(self) -> float:
        return float(np.median([r.total_ms for r in self.runs]))

    @property
    def spread_pct(self) -> float:
        """(max - min) / median of tokens/s over the repeats, in percent."""
        tps = self.tokens_per_s
        return float((tps.max() - tps.min()) / np.median(tps) * 100.0)

    @property
    def median_token_ms(self) -> np.ndarray:
        """(N,) per generated token: the median over repeats of the latency of the pass that picked it."""
        return np.median(np.stack([r.token_ms for r in self.runs]), axis=0)

    @property
    def token_ids(self) -> tuple[int, ...]:
        return self.runs[0].token_ids

    @property
    def peak_cache_bytes(self) -> int | None:
        sizes = [r.peak_cache_bytes for r in self.runs]
        return None if None in sizes else max(sizes)


@dataclass(frozen=True)
class MachineInfo:
    cpu: str
    logical_cpus: int
    physical_cores: int
    threads: int  # torch intra-op threads used for the run
    torch_version: str
    transformers_version: str
    python_version: str
    dtype: str
    attn_implementation: str


@dataclass(frozen=True)
class BenchResult:
    model_spec: str
    model_label: str
    settings: BenchSettings
    prompt_ids: tuple[int, ...]
    modes: tuple[ModeResult, ...]  # MODES first, then the references that were run
    machine: MachineInfo
    bandwidth: roofline.Bandwidth
    weight_bytes_per_token: int
    kv_bytes_per_token: int  # K/V read per decode step, averaged over the decode steps
    weight_format: str  # how the pre-allocated mode held its weights (see FlatCacheGPT2)
    op_ratio: tuple[tuple[int, float], ...] = field(repr=False)  # (k tokens generated, uncached/cached ops)
    lock_acquired_at: float = field(repr=False, default=0.0)  # time.perf_counter() inside the lock
    lock_released_at: float = field(repr=False, default=0.0)

    def mode(self, name: str) -> ModeResult:
        for result in self.modes:
            if result.mode == name:
                return result
        raise KeyError(f"mode {name!r} was not run")

    def has(self, name: str) -> bool:
        return any(result.mode == name for result in self.modes)

    def tokens_match(self, name: str) -> bool:
        """Every run of `name` generated exactly the no-cache baseline's tokens."""
        baseline = self.mode("no_cache").token_ids
        return all(run.token_ids == baseline for run in self.mode(name).runs)

    @property
    def all_tokens_match(self) -> bool:
        return all(self.tokens_match(m.mode) for m in self.modes)

    def speedup(self, name: str, over: str = "no_cache") -> float:
        """Median tokens/s of `name` divided by that of `over` (end to end, prefill included)."""
        return self.mode(name).median_tokens_per_s / self.mode(over).median_tokens_per_s

    def speedup_by_length(self, name: str) -> np.ndarray:
        """(N,) cumulative no-cache time / cumulative `name` time after k = 1..N generated tokens."""
        return np.cumsum(self.mode("no_cache").median_token_ms) / np.cumsum(self.mode(name).median_token_ms)

    def roofline(self, name: str) -> roofline.Roofline:
        return roofline.Roofline(
            bandwidth_bytes_per_s=self.bandwidth.bytes_per_s,
            weight_bytes_per_token=self.weight_bytes_per_token,
            kv_bytes_per_token=self.kv_bytes_per_token,
            achieved_tokens_per_s=self.mode(name).median_decode_tokens_per_s,
        )

    def to_dict(self) -> dict:
        """Plain JSON-ready numbers (the CLI's --json output)."""
        modes = {}
        for m in self.modes:
            entry = {
                "label": m.label,
                "median_tokens_per_s": m.median_tokens_per_s,
                "min_tokens_per_s": float(m.tokens_per_s.min()),
                "max_tokens_per_s": float(m.tokens_per_s.max()),
                "spread_pct": m.spread_pct,
                "median_decode_tokens_per_s": m.median_decode_tokens_per_s,
                "median_prefill_ms": m.median_prefill_ms,
                "median_total_ms": m.median_total_ms,
                "median_token_ms": [round(float(x), 4) for x in m.median_token_ms],
                "speedup_over_no_cache": self.speedup(m.mode),
                "tokens_match_no_cache": self.tokens_match(m.mode),
                "peak_cache_bytes": m.peak_cache_bytes,
            }
            if self.has("generate_cache") and m.mode != "generate_cache":
                entry["ratio_to_generate_cache"] = self.speedup(m.mode, over="generate_cache")
            if m.mode in CACHED_MODES:
                roof = self.roofline(m.mode)
                entry["roofline_fraction"] = roof.fraction
                entry["achieved_bytes_per_s"] = roof.achieved_bytes_per_s
            modes[m.mode] = entry
        roof = self.roofline("preallocated")
        return {
            "model": self.model_spec,
            "model_label": self.model_label,
            "settings": asdict(self.settings),
            "machine": asdict(self.machine),
            "tokens_match": self.all_tokens_match,
            "roofline": {
                "bandwidth_bytes_per_s": self.bandwidth.bytes_per_s,
                "bandwidth_method": self.bandwidth.method,
                "weight_bytes_per_token": self.weight_bytes_per_token,
                "kv_bytes_per_token": self.kv_bytes_per_token,
                "bytes_per_token": roof.bytes_per_token,
                "roofline_tokens_per_s": roof.roofline_tokens_per_s,
            },
            "preallocated_weight_format": self.weight_format,
            "op_ratio_at_end": self.op_ratio[-1][1],
            "modes": modes,
        }


# ----- threads and the machine --------------------------------------------------------------------------
def physical_cores() -> int:
    """Distinct (socket, core) pairs in /proc/cpuinfo, else the logical CPU count."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            pairs, socket = set(), "0"
            for line in fh:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "physical id":
                    socket = value.strip()
                elif key == "core id":
                    pairs.add((socket, value.strip()))
        if pairs:
            return len(pairs)
    except OSError:
        pass
    return os.cpu_count() or 1


def default_thread_count() -> int:
    """min(physical cores we may run on, MAX_THREADS): hyper-threads only fight over the same FMA units."""
    try:
        allowed = len(os.sched_getaffinity(0))
    except AttributeError:
        allowed = os.cpu_count() or 1
    return max(1, min(physical_cores(), allowed, MAX_THREADS))


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def machine_info(loaded: LoadedModel, threads: int) -> MachineInfo:
    return MachineInfo(
        cpu=cpu_name(),
        logical_cpus=os.cpu_count() or 1,
        physical_cores=physical_cores(),
        threads=threads,
        torch_version=torch.__version__,
        transformers_version=transformers.__version__,
        python_version=platform.python_version(),
        dtype=loaded.info.dtype,
        attn_implementation=loaded.info.attn_implementation,
    )


# ----- the process-wide lock -----------------------------------------------------------------------------
_BENCH_LOCK = threading.Lock()
_busy_since: float | None = None  # time.monotonic() when the current holder took the lock


def benchmark_busy() -> bool:
    """True while some benchmark (any session, any thread of this process) holds the lock."""
    return _BENCH_LOCK.locked()


def busy_for_s() -> float | None:
    """Seconds the current benchmark has been running, or None when idle."""
    since = _busy_since
    return None if since is None or not benchmark_busy() else time.monotonic() - since


# ----- validation ----------------------------------------------------------------------------------------
def _whole(name: str, value: object, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BenchInputError(f"{name} must be a whole number, got {value!r}.")
    if not lo <= value <= hi:
        raise BenchInputError(f"{name} must be between {lo} and {hi}, got {value}.")
    return value


def validate(settings: BenchSettings, n_positions: int) -> None:
    """Raise BenchInputError with a user-facing message when the settings cannot run on this model."""
    _whole("Prompt length", settings.prompt_len, 1, n_positions)
    _whole("New tokens", settings.new_tokens, 1, n_positions)
    _whole("Repeats", settings.repeats, 1, 50)
    _whole("Warm-up runs", settings.warmup, 0, 10)
    if settings.threads is not None:
        _whole("Threads", settings.threads, 1, 256)
    total = settings.prompt_len + settings.new_tokens
    if total > n_positions:
        raise BenchInputError(
            f"Prompt ({settings.prompt_len}) + new tokens ({settings.new_tokens}) = {total} tokens, but this "
            f"model has only {n_positions} positions (GPT-2 cannot go past its learned positions). "
            f"Reduce them by {total - n_positions}."
        )


def prompt_token_ids(loaded: LoadedModel, prompt_len: int) -> list[int]:
    """The first prompt_len tokens of a fixed Shakespeare passage, repeated as needed (deterministic)."""
    ids: list[int] = []
    chunk = loaded.tokenizer(BENCH_PROMPT).input_ids
    while len(ids) < prompt_len:
        ids.extend(chunk)
    return ids[:prompt_len]


# ----- the pre-allocated engine --------------------------------------------------------------------------
PREPACK_MAX_WEIGHT_BYTES = 2 * 2**30  # packing copies the weights; above this we keep the stored layout
WEIGHTS_AS_STORED = "as stored (Conv1D [in, out], LM head [vocab, n_embd])"
WEIGHTS_LM_HEAD_TRANSPOSED = "LM head copied to [n_embd, vocab]"
WEIGHTS_ONEDNN = "pre-packed for oneDNN GEMV (a copy of every matrix)"


def _addmm_linear(x: torch.Tensor, weight_in_out: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """x @ W + b with W stored [in, out], exactly as transformers' Conv1D computes it."""
    return torch.mm(x, weight_in_out) if bias is None else torch.addmm(bias, x, weight_in_out)


def _onednn_linear(x: torch.Tensor, packed_weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """x @ W^T + b with W pre-packed into oneDNN's blocked layout (what torch.compile does on CPU)."""
    return torch.ops.mkldnn._linear_pointwise(x, packed_weight, bias, "none", [], "")


def _onednn_pack(weight_out_in: torch.Tensor) -> torch.Tensor | None:
    """oneDNN's blocked copy of a [out, in] weight, or None where this torch build cannot do it."""
    try:
        return torch.ops.mkldnn._reorder_linear_weight(weight_out_in.contiguous(), 1)
    except (AttributeError, RuntimeError, NotImplementedError):
        return None


class FlatCacheGPT2:
    """Greedy GPT-2 forward passes over flat, pre-allocated K/V buffers, written in place.

    Reads the model's weights (never modifies them, never registers hooks) and runs transformers' GPT-2 math
    with SDPA attention. What it drops is the per-step work around the math: no cache object to grow (the
    buffers are sized once to max_len), no attention mask to build (a one-token query may see every cached
    row, so slicing the buffer *is* the mask), no model-output objects. K and V live in
    [n_layer, 1, n_head, max_len, head_dim] buffers.

    prepack_weights: one-off copies of the weight matrices in the layout the CPU's GEMV kernel streams
    fastest, as CPU inference engines do at load time: oneDNN's blocked layout when this torch build has it
    (GEMV ~1.4x faster than MKL on GPT-2's matrices here), else just the LM head as [n_embd, vocab].
    Without packing, the numbers match transformers' bit for bit; with it, to ~1e-5 (another kernel sums in
    another order), and the benchmark checks that the tokens still match.
    """

    def __init__(self, model: torch.nn.Module, max_len: int, prepack_weights: bool = True) -> None:
        cfg = model.config
        transformer = model.transformer
        self.n_embd = cfg.n_embd
        self.n_head = cfg.n_head
        self.head_dim = cfg.n_embd // cfg.n_head
        self.eps = cfg.layer_norm_epsilon
        self.max_len = max_len
        self.wte = transformer.wte.weight  # (vocab, n_embd)
        self.wpe = transformer.wpe.weight  # (n_positions, n_embd)
        weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
        matrices = [
            (b.attn.c_attn, b.attn.c_proj, b.mlp.c_fc, b.mlp.c_proj) for b in transformer.h
        ]  # Conv1D weights are [in, out]
        with torch.no_grad():
            packed = None
            if prepack_weights and weight_bytes <= PREPACK_MAX_WEIGHT_BYTES:
                packed = [[_onednn_pack(conv.weight.t()) for conv in layer] for layer in matrices]
                lm_packed = _onednn_pack(model.lm_head.weight)
                if lm_packed is None or any(w is None for layer in packed for w in layer):
                    packed = None
            if packed is not None:
                self.linear = _onednn_linear
                weights = packed
                self.lm_head, self.lm_head_bias = lm_packed, None
                self.weight_format = WEIGHTS_ONEDNN
            else:
                self.linear = _addmm_linear
                weights = [[conv.weight for conv in layer] for layer in matrices]
                self.lm_head_bias = None
                if prepack_weights:  # MKL streams x @ W fastest when W is [n_embd, vocab]
                    self.lm_head = model.lm_head.weight.t().contiguous()
                    self.weight_format = WEIGHTS_LM_HEAD_TRANSPOSED
                else:
                    self.lm_head = model.lm_head.weight.t()  # a view: F.linear's own [vocab, n_embd] read
                    self.weight_format = WEIGHTS_AS_STORED
        # One flat tuple per block, looked up once instead of through module attributes on every step.
        self.blocks = tuple(
            (
                block.ln_1.weight, block.ln_1.bias,
                w_qkv, block.attn.c_attn.bias,  # (n_embd, 3 n_embd) stored, or packed
                w_o, block.attn.c_proj.bias,
                block.ln_2.weight, block.ln_2.bias,
                w_fc, block.mlp.c_fc.bias,
                w_pr, block.mlp.c_proj.bias,
                block.mlp.act,  # the model's own GELU
                block.attn.scaling,
            )
            for block, (w_qkv, w_o, w_fc, w_pr) in zip(transformer.h, weights)
        )
        self.ln_f = (transformer.ln_f.weight, transformer.ln_f.bias)
        shape = (cfg.n_layer, 1, cfg.n_head, max_len, self.head_dim)
        dtype = self.wte.dtype
        self.keys = torch.zeros(shape, dtype=dtype)  # allocated once; every step writes one row in place
        self.values = torch.zeros(shape, dtype=dtype)
        self.length = 0  # rows filled

    @property
    def cache_bytes(self) -> int:
        return 2 * self.keys.numel() * self.keys.element_size()

    def reset(self) -> None:
        self.length = 0  # stale rows beyond `length` are never read: attention slices [:length]

    @torch.inference_mode()
    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        """Feed T tokens (a prompt when the cache is empty, else one token); logits (1, vocab) of the last."""
        n_new = token_ids.shape[0]
        start, end = self.length, self.length + n_new
        if end > self.max_len or (start and n_new != 1):
            raise ValueError("FlatCacheGPT2 feeds a prompt into an empty cache, then one token at a time")
        n_embd, n_head, head_dim, eps, linear = self.n_embd, self.n_head, self.head_dim, self.eps, self.linear
        x = self.wte[token_ids] + self.wpe[start:end]  # (T, n_embd)
        for layer, (w1, b1, w_qkv, b_qkv, w_o, b_o, w2, b2, w_fc, b_fc, w_pr, b_pr, act, scale) in enumerate(
            self.blocks
        ):
            h = F.layer_norm(x, (n_embd,), w1, b1, eps)
            qkv = linear(h, w_qkv, b_qkv).view(n_new, 3, n_head, head_dim)  # (T, 3, H, D)
            keys, values = self.keys[layer], self.values[layer]  # (1, H, max_len, D) views
            keys[0, :, start:end] = qkv[:, 1].transpose(0, 1)  # written in place: nothing is reallocated
            values[0, :, start:end] = qkv[:, 2].transpose(0, 1)
            query = qkv[:, 0].transpose(0, 1).unsqueeze(0)  # (1, H, T, D)
            attn = F.scaled_dot_product_attention(
                query, keys[:, :, :end], values[:, :, :end], is_causal=n_new > 1, scale=scale
            )  # (1, H, T, D)
            x = linear(attn[0].transpose(0, 1).reshape(n_new, n_embd), w_o, b_o) + x
            h = F.layer_norm(x, (n_embd,), w2, b2, eps)
            x = linear(act(linear(h, w_fc, b_fc)), w_pr, b_pr) + x
        self.length = end
        last = F.layer_norm(x[-1:], (n_embd,), self.ln_f[0], self.ln_f[1], eps)  # (1, n_embd)
        return linear(last, self.lm_head, self.lm_head_bias)  # (1, vocab)


# ----- one timed run per mode ----------------------------------------------------------------------------
@torch.inference_mode()
def run_no_cache(model: torch.nn.Module, prompt_ids: list[int], new_tokens: int) -> RunTiming:
    began = time.perf_counter()
    p = len(prompt_ids)
    ids = torch.zeros((1, p + new_tokens), dtype=torch.long)  # (1, P+N): filled as tokens are picked
    ids[0, :p] = torch.tensor(prompt_ids)
    pass_ms, tokens = [], []
    for k in range(new_tokens):
        t0 = time.perf_counter()
        out = model(input_ids=ids[:, : p + k], use_cache=False, logits_to_keep=1)
        token = int(out.logits[0, -1].argmax())
        pass_ms.append((time.perf_counter() - t0) * 1000.0)
        tokens.append(token)
        ids[0, p + k] = token
    total_ms = (time.perf_counter() - began) * 1000.0
    return RunTiming(pass_ms[0], tuple(pass_ms[1:]), total_ms, tuple(tokens), 0)


@torch.inference_mode()
def run_dynamic(model: torch.nn.Module, prompt_ids: list[int], new_tokens: int) -> RunTiming:
    began = time.perf_counter()
    cache = DynamicCache(config=model.config)
    feed = torch.tensor([prompt_ids])  # (1, P), then (1, 1)
    pass_ms, tokens = [], []
    for _ in range(new_tokens):
        t0 = time.perf_counter()
        out = model(input_ids=feed, past_key_values=cache, use_cache=True, logits_to_keep=1)
        feed = out.logits[:, -1].argmax(dim=-1, keepdim=True)  # (1, 1): the next token to feed
        token = int(feed)
        pass_ms.append((time.perf_counter() - t0) * 1000.0)
        tokens.append(token)
    total_ms = (time.perf_counter() - began) * 1000.0
    return RunTiming(pass_ms[0], tuple(pass_ms[1:]), total_ms, tuple(tokens), cache_bytes(cache))


@torch.inference_mode()
def run_preallocated(engine: FlatCacheGPT2, prompt_ids: list[int], new_tokens: int) -> RunTiming:
    began = time.perf_counter()
    engine.reset()
    feed = torch.tensor(prompt_ids)  # (P,), then (1,)
    pass_ms, tokens = [], []
    for _ in range(new_tokens):
        t0 = time.perf_counter()
        logits = engine.forward(feed)  # (1, vocab)
        feed = logits[0].argmax(dim=-1, keepdim=True)  # (1,)
        token = int(feed)
        pass_ms.append((time.perf_counter() - t0) * 1000.0)
        tokens.append(token)
    total_ms = (time.perf_counter() - began) * 1000.0
    return RunTiming(pass_ms[0], tuple(pass_ms[1:]), total_ms, tuple(tokens), engine.cache_bytes)


class _TimingStreamer(BaseStreamer):
    """generate() calls put() with the prompt, then once per new token: a timestamp each time."""

    def __init__(self) -> None:
        self.stamps: list[float] = []

    def put(self, value: torch.Tensor) -> None:
        self.stamps.append(time.perf_counter())

    def end(self) -> None:
        pass


@torch.inference_mode()
def run_generate(model: torch.nn.Module, prompt_ids: list[int], new_tokens: int, use_cache: bool) -> RunTiming:
    """Plain greedy model.generate; no EOS stop, so it always produces exactly new_tokens tokens."""
    config = GenerationConfig(
        max_new_tokens=new_tokens,
        do_sample=False,
        use_cache=use_cache,
        eos_token_id=None,
        pad_token_id=model.config.eos_token_id if model.config.eos_token_id is not None else 0,
    )
    input_ids = torch.tensor([prompt_ids])
    streamer = _TimingStreamer()
    began = time.perf_counter()
    out = model.generate(
        input_ids, attention_mask=torch.ones_like(input_ids), generation_config=config, streamer=streamer
    )
    total_ms = (time.perf_counter() - began) * 1000.0
    stamps_ms = np.diff(np.array(streamer.stamps)) * 1000.0  # (N,): pass k ends at stamp k
    tokens = tuple(int(t) for t in out[0, len(prompt_ids) :])
    # generate's cache is internal and gone by now (it is a DynamicCache, the size of the dynamic mode's)
    return RunTiming(float(stamps_ms[0]), tuple(float(x) for x in stamps_ms[1:]), total_ms, tokens, None)


# ----- the benchmark -------------------------------------------------------------------------------------
def op_ratio_curve(loaded: LoadedModel, prompt_len: int, new_tokens: int) -> tuple[tuple[int, float], ...]:
    """(k, uncached ops / cached ops) after k generated tokens, from kvviz.ops (logits for the last position
    only, as every mode here computes)."""
    shape = ops.ModelShape.from_info(loaded.info)
    points = ops.curve(shape, prompt_len, new_tokens, lm_head_all_positions=False)
    return tuple((k, uncached.total_ops / cached.total_ops) for k, cached, uncached in points)


def run_benchmark(
    loaded: LoadedModel,
    settings: BenchSettings,
    progress: ProgressFn | None = None,
    lock_wait_s: float = LOCK_WAIT_S,
) -> BenchResult:
    """Run every mode side by side; waits (up to lock_wait_s) for any other benchmark in this process.

    Raises BenchInputError for impossible settings, BenchBusyError if the wait times out. If interrupted
    (Ctrl-C, a Streamlit rerun), the lock is released and the thread count restored; nothing is returned.
    """
    global _busy_since
    validate(settings, loaded.info.n_positions)
    threads = settings.threads or default_thread_count()
    if not _BENCH_LOCK.acquire(timeout=lock_wait_s):
        raise BenchBusyError(
            f"Another benchmark has been running for over {lock_wait_s:.0f} s; try again when it finishes."
        )
    previous_threads = torch.get_num_threads()
    try:
        _busy_since = time.monotonic()
        acquired_at = time.perf_counter()
        torch.set_num_threads(threads)
        result = _run_locked(loaded, settings, threads, progress or (lambda fraction, message: None))
        return _with_lock_times(result, acquired_at, time.perf_counter())
    finally:
        torch.set_num_threads(previous_threads)
        _busy_since = None
        _BENCH_LOCK.release()


def _with_lock_times(result: BenchResult, acquired_at: float, released_at: float) -> BenchResult:
    fields = {name: getattr(result, name) for name in result.__dataclass_fields__}
    fields.update(lock_acquired_at=acquired_at, lock_released_at=released_at)
    return BenchResult(**fields)


def _run_locked(loaded: LoadedModel, settings: BenchSettings, threads: int, progress: ProgressFn) -> BenchResult:
    model = loaded.model
    p, n = settings.prompt_len, settings.new_tokens
    prompt = prompt_token_ids(loaded, p)
    engine = FlatCacheGPT2(model, max_len=p + n, prepack_weights=settings.prepack_weights)
    runners: dict[str, Callable[[int], RunTiming]] = {
        "no_cache": lambda tokens: run_no_cache(model, prompt, tokens),
        "dynamic": lambda tokens: run_dynamic(model, prompt, tokens),
        "preallocated": lambda tokens: run_preallocated(engine, prompt, tokens),
    }
    if settings.include_generate:
        runners["generate_cache"] = lambda tokens: run_generate(model, prompt, tokens, use_cache=True)
        if settings.include_generate_no_cache:
            runners["generate_no_cache"] = lambda tokens: run_generate(model, prompt, tokens, use_cache=False)

    # Progress in units of "one token-pass over the sequence": an uncached run costs ~N times a cached one.
    def cost(mode: str, tokens: int) -> float:
        return tokens * (p + tokens / 2) / p if "no_cache" in mode else float(tokens)

    warm_tokens = min(n, WARMUP_TOKENS)
    total_cost = sum(cost(m, warm_tokens) * settings.warmup + cost(m, n) * settings.repeats for m in runners)
    done = 0.0
    progress(0.0, "Measuring memory bandwidth (a large copy)")
    # A few copies before the runs and a few in every round, like the modes: one busy moment of a shared
    # machine cannot skew the roofline on its own.
    copies = [roofline.measure_copy_bandwidth(repeats=COPIES_PER_ROUND)]
    for _ in range(settings.warmup):
        for mode, run in runners.items():
            progress(done / total_cost, f"Warm-up: {MODE_LABELS[mode]}")
            run(warm_tokens)
            done += cost(mode, warm_tokens)
    timings: dict[str, list[RunTiming]] = {mode: [] for mode in runners}
    for repeat in range(settings.repeats):
        for mode, run in runners.items():
            progress(done / total_cost, f"Repeat {repeat + 1}/{settings.repeats}: {MODE_LABELS[mode]}")
            timings[mode].append(run(n))
            done += cost(mode, n)
        copies.append(roofline.measure_copy_bandwidth(repeats=COPIES_PER_ROUND))
    progress(1.0, "Done")
    info = loaded.info
    return BenchResult(
        model_spec=info.spec,
        model_label=info.label,
        settings=settings,
        prompt_ids=tuple(prompt),
        modes=tuple(ModeResult(mode, MODE_LABELS[mode], tuple(runs)) for mode, runs in timings.items()),
        machine=machine_info(loaded, threads),
        bandwidth=roofline.combine(copies),
        weight_bytes_per_token=roofline.weight_bytes_per_decode_token(model),
        kv_bytes_per_token=roofline.kv_bytes_read_per_decode_token(
            info.n_layer, info.n_kv_heads, info.head_dim, engine.keys.element_size(), p, n
        ),
        weight_format=engine.weight_format,
        op_ratio=op_ratio_curve(loaded, p, n),
    )


# ----- tables for pages and the CLI ----------------------------------------------------------------------
def summary_rows(result: BenchResult) -> list[dict[str, object]]:
    """One row per mode: the numbers behind the charts, rounded for display."""
    rows = []
    for m in result.modes:
        row: dict[str, object] = {
            "mode": m.label,
            "tokens/s (median)": round(m.median_tokens_per_s, 2),
            "tokens/s min": round(float(m.tokens_per_s.min()), 2),
            "tokens/s max": round(float(m.tokens_per_s.max()), 2),
            "decode tokens/s": round(m.median_decode_tokens_per_s, 2),
            "prefill ms": round(m.median_prefill_ms, 2),
            "speed-up vs no cache": round(result.speedup(m.mode), 2),
            "tokens match": result.tokens_match(m.mode),
            "peak cache KiB": None if m.peak_cache_bytes is None else round(m.peak_cache_bytes / 2**10, 1),
        }
        if result.has("generate_cache"):
            row["x generate(cache)"] = round(result.speedup(m.mode, over="generate_cache"), 3)
        rows.append(row)
    return rows


def per_token_csv(result: BenchResult) -> str:
    """Every timed pass of every run: mode, repeat, generated token index, pass kind, context length, ms."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["model", "mode", "repeat", "token_index", "pass", "tokens_in_context", "ms"])
    p = result.settings.prompt_len
    for m in result.modes:
        for repeat, run in enumerate(m.runs, start=1):
            for k, ms in enumerate(run.token_ms, start=1):
                kind = "prefill" if k == 1 else "decode"
                writer.writerow([result.model_spec, m.mode, repeat, k, kind, p + k - 1, f"{ms:.4f}"])
    return buffer.getvalue()
