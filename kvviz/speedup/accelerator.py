"""The speed-up on one device (cpu, cuda, mps): the modes that make sense there, its own roofs, a context sweep.

The CPU benchmark (kvviz.speedup.harness) is tuned to a CPU: thread counts, the flat oneDNN engine, int8
dynamic quantization. A GPU teaches a different lesson, and this module measures it on whichever device runs:

    modes     no cache, DynamicCache, StaticCache, StaticCache under torch.compile (mode "reduce-overhead" on
              CUDA: the decode step replayed as a CUDA graph), model.generate; fp16/bf16 weights and cache on a
              GPU. The CPU-only modes are skipped with a one-line reason (CPU_ONLY_MODES).
    roofs     the device's measured read bandwidth (a sum over a buffer far larger than its caches) and its
              compute roof (a large matmul in the chosen dtype); every decode step placed on them, as a fraction
              of the read roof (never shown above 100%: a step that beats the probe is flagged as such).
    sweep     the cached decode step at 128 ... 8192 cached tokens (bounded by the device's memory, the
              model's positions and a time budget) beside the uncached pass over the same tokens: at short
              context the step's time is mostly not explained by reading bytes (flat in the context), at long
              context reading the cache sets it (growing with it), and the uncached pass is cheap until it is
              not. A bound is named only where the spread of the repeats leaves no doubt (SweepPoint.bound).

All timings synchronise the device (kvviz.speedup.device.Clock) and take a warm-up first; the rounds interleave
the modes (order rotating) and report medians with their fastest-slowest spread. Runs on a private copy of the
model (moved to the device and dtype): the shared model object is never touched.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable

import torch
from transformers import DynamicCache

from kvviz.i18n import N_, _
from kvviz.measure import timing
from kvviz.model.loading import LoadedModel
from kvviz.speedup import device as devices
from kvviz.speedup import probes, roofline, runs
from kvviz.speedup.records import MODE_LABELS, RunTiming
from kvviz.speedup.settings import check_gpt2

DEVICE_MODES: tuple[str, ...] = ("no_cache", "dynamic", "static", "static_compiled", "generate_cache")
CPU_ONLY_MODES: dict[str, str] = {  # translated where shown (N_): the CLI prints the English
    "preallocated": N_("the flat engine's fp32 path is oneDNN's CPU matmul (torch.ops.mkldnn): a CPU-only kernel"),
    "int8": N_("int8 dynamic quantization (torch.ao.quantization.quantize_dynamic) runs on the CPU only"),
}
SWEEP_CONTEXTS: tuple[int, ...] = (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
SWEEP_BUDGET_S = 60.0  # the whole sweep; the longest contexts are left out (and said) beyond it
SWEEP_MEMORY_SHARE = 0.5  # a context whose cache + uncached pass would need more of the free memory is skipped
# What bounds a step, from the share of it that reading its bytes at the measured read roof would take (the step's
# fraction of the read roof): under UNEXPLAINED_SHARE the bytes explain little of the step's time (on a GPU: kernel
# launches, Python, small ops; on a CPU there are no launches, and time lost to other processes lands here too);
# at BYTES_SHARE or more they are what it waits for: a forward's GEMVs stream at about half the probe's best (one
# sum over one contiguous buffer; 34-52% on the 2-core CPU here, `python -m kvviz bench --sweep --model
# random:gpt2`), so a third already means memory sets the pace. Between the two, neither dominates. The share
# moves between repeats (27-52% run to run on that CPU: the 1/3 line sits inside it), so a bound is named only
# when the whole fastest-slowest range of the share falls in one zone; otherwise the point is "unclear".
UNEXPLAINED_SHARE = 0.15
BYTES_SHARE = 1 / 3
# What each bound is called (English, marked N_(): show _(name)); the CLI prints these, the page translates them.
BOUND_NAMES: dict[str, str] = {
    "unexplained": N_("below 15% of the read roof: time not explained by reading bytes"),
    "mixed": N_("neither dominates"),
    "weights": N_("reading the weights"),
    "cache": N_("reading the cache"),
    "unclear": N_("unclear within the spread"),
}
ProgressFn = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class DeviceRoofs:
    read_bytes_per_s: float  # best of repeats: the roof is what the device can do
    peak_flops: float  # best of repeats, in the run's dtype
    read_buffer_bytes: int
    gemm_size: int


@dataclasses.dataclass(frozen=True)
class DeviceMode:
    mode: str
    label: str
    rounds: tuple[RunTiming, ...]

    @property
    def median_passes_ms(self) -> float:
        return timing.median([r.passes_ms for r in self.rounds])

    @property
    def decode_tokens_per_s(self) -> tuple[float, ...]:
        """Per round: decode passes per second (the prefill left out)."""
        return tuple(len(r.decode_ms) / (sum(r.decode_ms) / 1000.0) for r in self.rounds if r.decode_ms)

    @property
    def median_decode_step_ms(self) -> float:
        return timing.median([timing.median(r.decode_ms) for r in self.rounds if r.decode_ms])


@dataclasses.dataclass(frozen=True)
class SweepPoint:
    context: int  # cached tokens before the step
    cached_step_ms: tuple[float, ...]  # one decode step at this context, every repeat
    uncached_ms: tuple[float, ...]  # one uncached pass over context + 1 tokens, every repeat
    bytes_read: int  # weights + the cache, one cached step
    kv_bytes_read: int  # the cache's share of bytes_read
    read_roof_bytes_per_s: float

    @property
    def cached_ms(self) -> float:
        return timing.median(self.cached_step_ms)

    @property
    def uncached_median_ms(self) -> float:
        return timing.median(self.uncached_ms)

    @property
    def ratio(self) -> float:
        """How many times longer the uncached pass takes than the cached step (medians)."""
        return self.uncached_median_ms / self.cached_ms

    @property
    def roof_fraction(self) -> float:
        """The step's bytes per second over the read roof, at most 1 (see beats_roof)."""
        return min(1.0, self.bytes_read / (self.cached_ms / 1000.0) / self.read_roof_bytes_per_s)

    @property
    def beats_roof(self) -> bool:
        return self.bytes_read / (self.cached_ms / 1000.0) > self.read_roof_bytes_per_s

    def read_share(self, step_ms: float) -> float:
        """The share of a `step_ms` step that reading its bytes at the read roof would take (uncapped)."""
        return self.bytes_read / self.read_roof_bytes_per_s * 1000.0 / step_ms

    @property
    def read_share_range(self) -> tuple[float, float]:
        """(slowest repeat, fastest repeat): the spread of the read share across the repeats."""
        return self.read_share(max(self.cached_step_ms)), self.read_share(min(self.cached_step_ms))

    def _zone(self, share: float) -> str:
        if share < UNEXPLAINED_SHARE:
            return "unexplained"
        if share < BYTES_SHARE:
            return "mixed"
        return "cache" if 2 * self.kv_bytes_read >= self.bytes_read else "weights"

    @property
    def bound(self) -> str:
        """What sets the step's pace, named only when the whole fastest-slowest range of the read share falls in
        one zone: "unexplained" (under UNEXPLAINED_SHARE of the read roof: time not explained by reading bytes),
        "mixed" (between UNEXPLAINED_SHARE and BYTES_SHARE: neither dominates), "weights" or "cache" (BYTES_SHARE
        or more; whichever is most of the bytes read); "unclear" when the range crosses a zone's edge."""
        slowest, fastest = (self._zone(share) for share in self.read_share_range)
        return slowest if slowest == fastest else "unclear"


@dataclasses.dataclass(frozen=True)
class DeviceBenchResult:
    device: devices.DeviceInfo
    model_label: str
    prompt_len: int
    new_tokens: int
    repeats: int
    modes: tuple[DeviceMode, ...]
    skipped: dict[str, str]  # mode -> why it did not run here
    roofs: DeviceRoofs
    weight_bytes: int  # read by one cached decode step
    kv_row_bytes: int  # one token's K and V, all layers
    sweep: tuple[SweepPoint, ...]
    sweep_notes: tuple[str, ...]

    def mode(self, name: str) -> DeviceMode:
        return next(m for m in self.modes if m.mode == name)

    def speedup(self, name: str) -> float:
        """No cache's median time over this mode's (the CPU report's estimator: sums of the timed passes)."""
        return self.mode("no_cache").median_passes_ms / self.mode(name).median_passes_ms

    def tokens_match(self, name: str) -> bool:
        reference = self.mode("no_cache").rounds[0].token_ids
        return all(r.token_ids == reference for r in self.mode(name).rounds)

    def roof_fraction(self, name: str) -> float:
        """A mode's median decode step: bytes read (weights + the cache at mid-run) per second over the read
        roof, at most 1."""
        mid_context = self.prompt_len + self.new_tokens // 2
        bytes_read = self.weight_bytes + (mid_context * self.kv_row_bytes if name != "no_cache" else 0)
        return min(1.0, bytes_read / (self.mode(name).median_decode_step_ms / 1000.0) / self.roofs.read_bytes_per_s)

    def to_dict(self) -> dict:
        return {
            "device": dataclasses.asdict(self.device),
            "model": self.model_label,
            "prompt_len": self.prompt_len,
            "new_tokens": self.new_tokens,
            "repeats": self.repeats,
            "roofs": dataclasses.asdict(self.roofs),
            "weight_bytes_per_decode_step": self.weight_bytes,
            "kv_row_bytes": self.kv_row_bytes,
            "modes": {
                m.mode: {
                    "label": m.label,
                    "decode_tokens_per_s": list(m.decode_tokens_per_s),
                    "median_decode_step_ms": m.median_decode_step_ms,
                    "speedup_over_no_cache": self.speedup(m.mode),
                    "tokens_match_no_cache": self.tokens_match(m.mode),
                    "read_roof_fraction": self.roof_fraction(m.mode),
                }
                for m in self.modes
            },
            "skipped": self.skipped,
            "sweep": [
                {
                    "context": p.context,
                    "cached_step_ms": list(p.cached_step_ms),
                    "uncached_ms": list(p.uncached_ms),
                    "ratio": p.ratio,
                    "bytes_read": p.bytes_read,
                    "kv_bytes_read": p.kv_bytes_read,
                    "read_roof_fraction": p.roof_fraction,
                    "beats_roof": p.beats_roof,
                    "read_share_slowest_fastest": list(p.read_share_range),
                    "bound": p.bound,
                }
                for p in self.sweep
            ],
            "sweep_notes": list(self.sweep_notes),
        }


def on_device(model: torch.nn.Module, device: str, dtype: str) -> torch.nn.Module:
    """A private copy of `model` on `device` in `dtype` (the shared model stays where it is)."""
    twin = copy.deepcopy(model)
    return twin.to(device=torch.device(device), dtype=devices.DTYPES[dtype]).eval()


def measure_roofs(device: str, dtype: str, repeats: int = 5) -> DeviceRoofs:
    """The device's read bandwidth (best of repeats of a sum over a large buffer) and matmul FLOP/s in dtype."""
    if device == "cpu":
        probe = probes.ReadProbe()
        read = probe.measure(repeats=repeats)
        return DeviceRoofs(
            max(read.rates), probes.measure_peak_flops(repeats=repeats), probe.buffer_bytes, probes.GEMM_SIZE
        )
    free = devices.free_memory_bytes(device)
    buffer_bytes = min(2 * 2**30, free // 4) if free else 512 * 2**20
    buffer = torch.ones(buffer_bytes // 4, dtype=torch.float32, device=device)
    clock = devices.Clock(device)
    buffer.sum()  # warm-up: the kernel, not the data (the buffer is far larger than any cache)
    rates = []
    for _repeat in range(repeats):
        with clock:
            buffer.sum()
        rates.append(buffer_bytes / (clock.ms / 1000.0))
    del buffer
    size = 8192 if device == "cuda" else 4096
    a = torch.randn(size, size, device=device, dtype=devices.DTYPES[dtype])
    b = torch.randn(size, size, device=device, dtype=devices.DTYPES[dtype])
    torch.mm(a, b)  # warm-up (and cuBLAS's heuristics)
    times = []
    for _repeat in range(repeats):
        with clock:
            torch.mm(a, b)
        times.append(clock.ms / 1000.0)
    return DeviceRoofs(max(rates), 2 * size**3 / min(times), buffer_bytes, size)


def run_modes(
    model: torch.nn.Module,
    prompt_ids: list[int],
    new_tokens: int,
    repeats: int,
    warmup: int,
    compile_step: bool,
    progress: ProgressFn | None = None,
) -> tuple[list[DeviceMode], dict[str, str]]:
    """Every device mode on the same prompt: warm-up runs, then `repeats` rounds with the order rotating."""
    device = model.device.type
    skipped = dict(CPU_ONLY_MODES) if device != "cpu" else {}
    runners: dict[str, Callable[[], RunTiming]] = {
        "no_cache": lambda: runs.run_no_cache(model, prompt_ids, new_tokens),
        "dynamic": lambda: runs.run_hf_cache(model, prompt_ids, new_tokens, "dynamic"),
        "static": lambda: runs.run_hf_cache(model, prompt_ids, new_tokens, "static"),
        "generate_cache": lambda: runs.run_generate(model, prompt_ids, new_tokens, use_cache=True),
    }
    if compile_step:
        try:
            forward, _seconds = runs.compile_forward(
                model, prompt_ids, len(prompt_ids) + new_tokens, mode="reduce-overhead" if device == "cuda" else None
            )
            runners["static_compiled"] = lambda: runs.run_hf_cache(
                model, prompt_ids, new_tokens, "static", decode_forward=forward
            )
        except runs.CompileUnavailable as exc:
            skipped["static_compiled"] = str(exc)
    else:
        skipped["static_compiled"] = N_("not asked for: compiling takes 10-60 s first (the CLI's --compile)")
    order = [m for m in DEVICE_MODES if m in runners]
    for name in order:
        for _warmup in range(warmup):
            runners[name]()
    timings: dict[str, list[RunTiming]] = {name: [] for name in order}
    for round_index in range(repeats):
        rotated = order[round_index % len(order) :] + order[: round_index % len(order)]
        for name in rotated:
            if progress:
                progress(f"round {round_index + 1}/{repeats}: {MODE_LABELS[name]}")
            timings[name].append(runners[name]())
    return [DeviceMode(n, MODE_LABELS[n], tuple(timings[n])) for n in order], skipped


def sweep_contexts(
    model: torch.nn.Module, row_bytes: int, contexts: tuple[int, ...] = SWEEP_CONTEXTS
) -> tuple[list[int], list[str]]:
    """The contexts the sweep can take here, and a note for each one left out (positions, memory).
    row_bytes: one token's K and V in every layer, in the model's dtype."""
    device = model.device.type
    n_positions = model.config.n_positions
    free = devices.free_memory_bytes(device)
    element = next(model.parameters()).element_size()
    kept, notes = [], []
    longest = n_positions - 1  # the model's last position: the longest context a step can be timed at
    if contexts and max(contexts) > longest and longest not in contexts and longest > min(contexts):
        contexts = tuple(
            sorted({*(c for c in contexts if c < longest), longest, *(c for c in contexts if c > longest)})
        )
    for context in contexts:
        if context + 1 > n_positions:
            notes.append(
                _("{context} tokens: past the model's {n_positions} positions").format(
                    context=context, n_positions=n_positions
                )
            )
            continue
        # the cache, plus the uncached pass's activations (hidden states and one layer's attention scores)
        need = (
            context * row_bytes
            + (context + 1) * (model.config.n_embd * 8 + model.config.n_head * (context + 1)) * element
        )
        if free is not None and need > SWEEP_MEMORY_SHARE * free:
            notes.append(
                _("{context} tokens: needs ~{gib:.1f} GiB, over half of the free memory").format(
                    context=context, gib=need / 2**30
                )
            )
            continue
        kept.append(context)
    return kept, notes


@torch.inference_mode()
def context_sweep(
    model: torch.nn.Module,
    roofs: DeviceRoofs,
    weight_bytes: int,
    row_bytes: int,
    contexts: tuple[int, ...] = SWEEP_CONTEXTS,
    steps: int = 9,
    uncached_repeats: int = 3,
    budget_s: float = SWEEP_BUDGET_S,
    progress: ProgressFn | None = None,
) -> tuple[list[SweepPoint], list[str]]:
    """Per context: `steps` cached decode steps (each on a cache of exactly `context` rows: the step's row is
    cropped off again) interleaved with uncached passes over the same context + 1 tokens. weight_bytes and
    row_bytes: what one cached step reads of the weights, and one token's K and V (the report's own figures)."""
    device = model.device
    kept, notes = sweep_contexts(model, row_bytes, contexts)
    generator = torch.Generator().manual_seed(0)
    spent_s, points = 0.0, []
    clock = devices.Clock(device)
    for context in kept:
        if spent_s > budget_s:
            notes.append(
                _("{context} tokens: the sweep's {budget_s:.0f} s budget is spent").format(
                    context=context, budget_s=budget_s
                )
            )
            continue
        if progress:
            progress(f"context sweep: {context} cached tokens")
        ids = torch.randint(0, model.config.vocab_size, (1, context + 1), generator=generator).to(device)
        cache = DynamicCache(config=model.config)
        with clock:
            model(input_ids=ids[:, :context], past_key_values=cache, use_cache=True, logits_to_keep=1)
        spent_s += clock.ms / 1000.0
        model(input_ids=ids[:, context:], past_key_values=cache, use_cache=True, logits_to_keep=1)  # warm-up
        cache.crop(-1)  # the step's row off again: `context` rows
        model(input_ids=ids, use_cache=False, logits_to_keep=1)  # warm-up
        cached, uncached = [], []
        for k in range(steps):
            with clock:
                model(input_ids=ids[:, context:], past_key_values=cache, use_cache=True, logits_to_keep=1)
            cached.append(clock.ms)
            cache.crop(-1)  # the step's row off again: `context` rows
            if k % max(1, steps // uncached_repeats) == 0 and len(uncached) < uncached_repeats:
                with clock:
                    model(input_ids=ids, use_cache=False, logits_to_keep=1)
                uncached.append(clock.ms)
            spent_s += (cached[-1] + (uncached[-1] if uncached else 0.0)) / 1000.0
        del cache
        points.append(
            SweepPoint(
                context,
                tuple(cached),
                tuple(uncached),
                weight_bytes + context * row_bytes,
                context * row_bytes,
                roofs.read_bytes_per_s,
            )
        )
    return points, notes


def run_device_benchmark(
    loaded: LoadedModel,
    prompt_ids: list[int],
    new_tokens: int,
    device: str,
    dtype: str,
    repeats: int = 3,
    warmup: int = 1,
    compile_step: bool = False,
    sweep: bool = True,
    sweep_contexts_: tuple[int, ...] = SWEEP_CONTEXTS,
    sweep_budget_s: float = SWEEP_BUDGET_S,
    progress: ProgressFn | None = None,
) -> DeviceBenchResult:
    """The whole device report. Raises DeviceUnavailable (no such device here) or ValueError (a dtype that
    makes no sense there; BenchInputError, a ValueError, for a model the GPT-2 byte counts do not describe),
    before any work."""
    devices.require(device)
    problem = devices.dtype_problem(device, dtype)
    if problem:
        raise ValueError(problem)
    check_gpt2(loaded.info)  # weight_bytes_per_decode_token reads GPT2LMHeadModel's embedding tables
    if repeats < 1 or warmup < 0 or new_tokens < 2 or not prompt_ids:
        raise ValueError("at least one round, two new tokens and one prompt token")
    twin = on_device(loaded.model, device, dtype)
    try:
        weight_bytes = roofline.weight_bytes_per_decode_token(twin)
        row_bytes = loaded.info.kv_bytes_per_position(next(twin.parameters()).element_size())
        roofs = measure_roofs(device, dtype)
        modes, skipped = run_modes(twin, prompt_ids, new_tokens, repeats, warmup, compile_step, progress)
        points, notes = (
            context_sweep(
                twin, roofs, weight_bytes, row_bytes, sweep_contexts_, budget_s=sweep_budget_s, progress=progress
            )
            if sweep
            else ([], [_("not asked for")])
        )
        return DeviceBenchResult(
            devices.describe(device, dtype),
            loaded.info.label,
            len(prompt_ids),
            new_tokens,
            repeats,
            tuple(modes),
            skipped,
            roofs,
            weight_bytes,
            row_bytes,
            tuple(points),
            tuple(notes),
        )
    finally:
        del twin
        if device == "cuda":
            torch.cuda.empty_cache()


def format_report(result: DeviceBenchResult) -> str:
    """The CLI's text report (English, as every CLI output)."""
    r = result.roofs
    lines = [
        f"model: {result.model_label}",
        f"device: {result.device.describe()}",
        f"prompt {result.prompt_len} tokens, {result.new_tokens} new tokens, {result.repeats} rounds "
        "(modes interleaved, order rotating; medians, fastest-slowest)",
        f"roofs: read {r.read_bytes_per_s / 1e9:.1f} GB/s (sum over {r.read_buffer_bytes / 2**20:.0f} MiB), "
        f"matmul {r.peak_flops / 1e12:.2f} TFLOP/s ({r.gemm_size}x{r.gemm_size}, {result.device.dtype})",
        "",
        f"{'mode':<42} {'decode tok/s':>13} {'fastest-slowest':>17} {'x no cache':>11} {'read roof':>10} {'tokens':>7}",
    ]
    for mode in result.modes:
        tps = mode.decode_tokens_per_s
        lines.append(
            f"{mode.label:<42} {timing.median(tps):13.1f} {f'{max(tps):.1f}-{min(tps):.1f}':>17} "
            f"{result.speedup(mode.mode):11.2f} {result.roof_fraction(mode.mode):10.0%} "
            f"{'same' if result.tokens_match(mode.mode) else 'DIFFER':>7}"
        )
    for name, reason in result.skipped.items():
        lines.append(f"skipped {MODE_LABELS.get(name, name)}: {reason}")
    if result.sweep:
        lines += [
            "",
            "context sweep: one cached decode step vs one uncached pass over the same tokens (medians)",
            f"{'cached':>8} {'step ms':>9} {'uncached ms':>12} {'ratio':>7} {'cache share':>12} "
            f"{'read roof':>10} {'slowest-fastest':>16}  bound by",
        ]
        for p in result.sweep:
            share = p.kv_bytes_read / p.bytes_read
            slowest, fastest = (min(1.0, x) for x in p.read_share_range)  # shown as the read roof is: at most 100%
            lines.append(
                f"{p.context:8d} {p.cached_ms:9.3f} {p.uncached_median_ms:12.3f} {p.ratio:7.1f} "
                f"{share:12.0%} {p.roof_fraction:10.0%}{'*' if p.beats_roof else ' '}"
                f"{f'{slowest:.0%}-{fastest:.0%}':>16}  {BOUND_NAMES[p.bound]}"
            )
        lines.append(
            "bound by: named only when the whole slowest-fastest range of the read-roof share falls in one "
            "zone (under 15%: time not explained by reading bytes; 15% to a third: neither dominates; a "
            "third or more: reading the weights or the cache)"
        )
        if any(p.beats_roof for p in result.sweep):
            lines.append("* moved more bytes per second than the read probe measured (caches helped): shown as 100%")
    lines += [f"sweep: {note}" for note in result.sweep_notes]
    return "\n".join(lines)
