"""Benchmark records: what one run of `kvviz.speedup.harness` measured, as torch-free frozen dataclasses.

Figures, pages and the CLI read these; none of them needs torch. The harness that fills them is kvviz.speedup.harness.

One estimator everywhere (the page's headline, its "why below the op ratio" paragraph, the CLI, the JSON):

    SPEED-UP ESTIMATOR: median over rounds of the time to generate k tokens (the sum of the timed passes
    1..k of a round), the slower mode's divided by the faster mode's. At k = N it is the end-to-end figure.

The roofline fraction of a round is computed from the read-bandwidth probe taken in that same round. A round
whose decode moved more bytes per second than its probe measured (fraction > 100%) is physically
impossible as a steady state: the machine was disturbed between the probe and the runs, and the run is
flagged instead of showing the number.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kvviz.i18n import N_, _, ngettext
from kvviz.measure import timing
from kvviz.ops import ModelShape
from kvviz.speedup import roofline
from kvviz.speedup.settings import BenchSettings

MODES: tuple[str, ...] = ("no_cache", "dynamic", "static", "preallocated", "int8")
REFERENCES: tuple[str, ...] = ("static_compiled", "generate_cache", "generate_no_cache")
MODE_LABELS: dict[str, str] = {
    "no_cache": N_("No cache (recompute everything)"),
    "dynamic": N_("DynamicCache (grows by concatenation)"),
    "static": N_("StaticCache (transformers, pre-allocated)"),
    "static_compiled": N_("StaticCache + torch.compile (reference)"),
    "preallocated": N_("Flat pre-allocated cache (kvviz.speedup.flat_engine)"),
    "int8": N_("Flat cache, int8 weights (dynamic quantization)"),
    "generate_cache": "model.generate(use_cache=True)",
    "generate_no_cache": "model.generate(use_cache=False)",
}
CACHED_MODES: tuple[str, ...] = ("dynamic", "static", "static_compiled", "preallocated", "int8", "generate_cache")
LOSSY_MODES: tuple[str, ...] = ("int8",)  # may pick other tokens: reported as agreement, not as "match"
# Module constants are marked N_() (the language is per session): show them through _() (kvviz.i18n).
ESTIMATOR = N_("median over rounds of the time to generate the tokens (sum of the timed passes), no cache / this mode")


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
        """[new_tokens] latency of the pass that picked each generated token."""
        return np.array((self.prefill_ms, *self.decode_ms))

    @property
    def passes_ms(self) -> float:
        """The estimator's time: the sum of the timed passes (set-up outside the passes excluded)."""
        return float(self.prefill_ms + sum(self.decode_ms))

    @property
    def tokens_per_s(self) -> float:
        return len(self.token_ids) / (self.passes_ms / 1000.0)

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
        return timing.median(self.tokens_per_s)

    @property
    def median_decode_tokens_per_s(self) -> float:
        return timing.median([r.decode_tokens_per_s for r in self.runs])

    @property
    def median_prefill_ms(self) -> float:
        return timing.median([r.prefill_ms for r in self.runs])

    @property
    def spread_pct(self) -> float:
        """(max - min) / median of tokens/s over the repeats, in percent."""
        return timing.spread_pct(self.tokens_per_s)

    @property
    def median_token_ms(self) -> np.ndarray:
        """[new_tokens] per generated token: the median over repeats of the latency of the pass that picked it."""
        return timing.median_per_position([r.token_ms for r in self.runs])

    def median_time_to_k_ms(self) -> np.ndarray:
        """[new_tokens] the estimator's time: median over rounds of the summed pass times up to token k."""
        return timing.median_per_position([np.cumsum(r.token_ms) for r in self.runs])

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
    thread_reason: str  # why this many (free cores from the load average, other sessions, the user)
    last_level_cache_bytes: int | None
    load_before: tuple[float, float, float]  # kvviz.measure.load.load_average(), run start/end (nan: unknown)
    load_after: tuple[float, float, float]
    torch_version: str
    transformers_version: str
    python_version: str
    dtype: str
    attn_implementation: str


# The flat engine's weight formats by a human name (the setting's own value in brackets: the radio offers it).
FORMAT_NAMES = {"stored": N_("MKL on the model's layout"), "onednn": N_("oneDNN-packed copies")}


def format_name(code: str, *, with_code: bool = True) -> str:
    """A weight format as a reader sees it: 'MKL on the model's layout (stored)', in the current language; without
    the setting's code where the name stands alone in a narrow tile (the code is in the tile's help)."""
    if code not in FORMAT_NAMES:
        return code
    return _("{name} ({code})").format(name=_(FORMAT_NAMES[code]), code=code) if with_code else _(FORMAT_NAMES[code])


@dataclass(frozen=True)
class FormatChoice:
    """How the flat engine's fp32 weights were held, and the measurement that decided it."""

    chosen: str  # "stored" (MKL on the model's own layout) or "onednn" (packed copies)
    ms_by_format: tuple[tuple[str, float], ...]  # best-of-rounds ms of one decode step's matrices, per candidate
    how: str  # "measured", "forced by the settings", or why a candidate could not run (shown through _())

    @property
    def margin(self) -> float | None:
        """slowest / chosen median time (>= 1), or None when only one format was timed."""
        times = dict(self.ms_by_format)
        if len(times) < 2 or self.chosen not in times:
            return None
        return max(times.values()) / times[self.chosen]

    def describe(self, plain: bool = False) -> str:
        """The choice and its times; a page names each format (format_name), `plain` keeps the setting values
        (the CLI, whose --weight-format flag takes them)."""
        name = (lambda code: code) if plain else format_name
        times = _(", ").join(f"{name(code)} {ms:.2f} ms" for code, ms in self.ms_by_format)
        margin, how, chosen = self.margin, _(self.how), name(self.chosen)
        if not times:
            return f"{chosen} ({how})"
        if margin is None:
            return _("{chosen} ({how}; one decode step: {times})").format(chosen=chosen, how=how, times=times)
        return _("{chosen} ({how}, {margin:.2f}x faster; one decode step: {times})").format(
            chosen=chosen, how=how, margin=margin, times=times
        )


@dataclass(frozen=True)
class RooflineVerdict:
    """The median over rounds of achieved / read-roofline, or why it is not shown."""

    fractions: tuple[float, ...]  # one per round, each from its own probe
    disturbed: bool  # some round exceeded 100%: a probe and its runs did not see the same machine
    in_cache: bool = False  # the weights fit in the last-level cache: the DRAM roof is not a bound

    @property
    def fraction(self) -> float | None:
        """The median round's fraction; None when disturbed, or above 100% from the cache (never shown)."""
        if self.disturbed or not self.fractions or (self.in_cache and max(self.fractions) > 1.0):
            return None
        return timing.median(self.fractions)

    @property
    def label(self) -> str:
        """Short form for a table cell or a metric."""
        if not self.fractions:
            return _("no decode pass")
        if self.disturbed:
            return _("disturbed")
        return _("in cache") if self.fraction is None else f"{self.fraction:.0%}"

    def describe(self) -> str:
        if not self.fractions:
            return _(
                "no decode pass was timed (1 new token is the prefill alone), so no roofline fraction; "
                "ask for 2 or more new tokens"
            )
        if self.in_cache and self.fraction is None:
            return _(
                "above the DRAM read roof in some round: the weights fit in the last-level cache, so "
                "DRAM bandwidth is not this model's bound (no fraction is reported)"
            )
        if self.disturbed:
            over = sum(f > 1.0 for f in self.fractions)
            return ngettext(
                "disturbed: {over} of {rounds} round moved more bytes/s than the bandwidth probed beside "
                "it (other work on the machine); no roofline fraction is reported",
                "disturbed: {over} of {rounds} rounds moved more bytes/s than the bandwidth probed "
                "beside them (other work on the machine); no roofline fraction is reported",
                len(self.fractions),
            ).format(over=over, rounds=len(self.fractions))
        if self.in_cache:
            return _(
                "{fraction:.0%} of the read roofline (median of {rounds} rounds) (the weights fit in the "
                "last-level cache)"
            ).format(fraction=self.fraction, rounds=len(self.fractions))
        return _("{fraction:.0%} of the read roofline (median of {rounds} rounds)").format(
            fraction=self.fraction, rounds=len(self.fractions)
        )


@dataclass(frozen=True)
class BenchResult:
    model_spec: str
    model_label: str
    settings: BenchSettings
    shape: ModelShape  # for the op and FLOP counts of every pass
    prompt_ids: tuple[int, ...]
    modes: tuple[ModeResult, ...]  # MODES first, then the references that were run
    machine: MachineInfo
    read_bandwidth: tuple[roofline.Bandwidth, ...]  # one read probe per round, beside that round's runs
    copy_bandwidth: roofline.Bandwidth  # the STREAM-copy figure (read + write), a second labelled number
    peak_flops_by_round: tuple[float, ...]  # FLOP/s of a large fp32 matmul, probed beside each round
    weight_bytes_per_token: int  # fp32 weights read by one decode step
    int8_weight_bytes_per_token: int  # the same with the int8 matrices (0 when int8 was not run)
    kv_bytes_per_token: int  # K/V read per decode step, averaged over the decode steps
    kv_row_bytes: int  # K and V of one position in every layer
    weight_choice: FormatChoice
    op_ratio: tuple[tuple[int, float], ...] = field(repr=False)  # (k tokens generated, uncached/cached ops)
    compile_note: str = ""  # how torch.compile went (seconds, or why the compiled mode was skipped); "" = not asked

    def mode(self, name: str) -> ModeResult:
        for result in self.modes:
            if result.mode == name:
                return result
        raise KeyError(f"mode {name!r} was not run")

    def has(self, name: str) -> bool:
        return any(result.mode == name for result in self.modes)

    def token_agreement(self, name: str) -> float:
        """Share of the generated tokens (position by position, every run) equal to the no-cache run's."""
        baseline = self.mode("no_cache").token_ids
        same = [a == b for run in self.mode(name).runs for a, b in zip(run.token_ids, baseline, strict=True)]
        return sum(same) / len(same)

    def tokens_match(self, name: str) -> bool:
        """Every run of `name` generated exactly the no-cache baseline's tokens."""
        return self.token_agreement(name) == 1.0

    @property
    def all_tokens_match(self) -> bool:
        """Every exact mode (int8 is lossy by design and reported as agreement) matched no cache."""
        return all(self.tokens_match(m.mode) for m in self.modes if m.mode not in LOSSY_MODES)

    def speedup_by_length(self, name: str, over: str = "no_cache") -> np.ndarray:
        """[new_tokens] the estimator (see the module docstring) after k = 1..N generated tokens."""
        return self.mode(over).median_time_to_k_ms() / self.mode(name).median_time_to_k_ms()

    def speedup(self, name: str, over: str = "no_cache") -> float:
        """The estimator at k = N: how many times faster `name` generated all N tokens than `over`."""
        return float(self.speedup_by_length(name, over)[-1])

    def bytes_per_token(self, name: str) -> int:
        weights = self.int8_weight_bytes_per_token if name == "int8" else self.weight_bytes_per_token
        return weights + self.kv_bytes_per_token

    @property
    def peak_flops(self) -> float:
        """The compute roof: the best round's matmul (load only ever slows a matmul down)."""
        return max(self.peak_flops_by_round)

    @property
    def weights_fit_in_cache(self) -> bool:
        """The fp32 weights fit in the last-level cache: decode need not stream them from DRAM at all."""
        llc = self.machine.last_level_cache_bytes
        return llc is not None and self.weight_bytes_per_token <= llc

    @property
    def median_read_bytes_per_s(self) -> float:
        return timing.median([b.bytes_per_s for b in self.read_bandwidth])

    def roofline_verdict(self, name: str) -> RooflineVerdict:
        """Round r's decode bytes/s over round r's read probe, for every round."""
        runs = self.mode(name).runs
        fractions = tuple(
            run.decode_tokens_per_s * self.bytes_per_token(name) / probe.bytes_per_s
            for run, probe in zip(runs, self.read_bandwidth, strict=True)
            if run.decode_ms
        )
        over = any(f > 1.0 for f in fractions)
        in_cache = self.weights_fit_in_cache
        return RooflineVerdict(fractions, disturbed=over and not in_cache, in_cache=in_cache)

    def roofline_tokens_per_s(self, name: str = "preallocated") -> float:
        """The decode ceiling: median read bandwidth / bytes read per decode token."""
        return self.median_read_bytes_per_s / self.bytes_per_token(name)
