"""The result records of kvviz.internals: frozen dataclasses of plain Python numbers, strings and tuples.

Each idea's module (prefix, crossattn, window, paging, quant, speculative, eviction) holds its own limits, default
prompts, texts, checks and errors, torch-free; its lab (kvviz.internals.lab, eviction_lab) runs the model with torch
at its top. The records they return live here, so a figure draws a result from this module alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvviz.i18n import N_, _
from kvviz.measure.timing import Comparison, Timing, mean_interval

if TYPE_CHECKING:
    from kvviz.internals.eviction import EvictSettings

# Names in records stay English (code compares them); marked for the catalog, translated where shown.
PREFIX_REUSE_NAME = N_("reusing A's prefix")
PREFIX_FRESH_NAME = N_("a fresh prefill of B")
SPEC_SELF_DRAFT = N_("the verifier itself")


# ----- prefix reuse ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PrefixReuse:
    """Prompt B served from prompt A's cache vs a fresh prefill of B (real model, real tensors)."""

    tokens_a: tuple[str, ...]  # token texts, for the picture
    tokens_b: tuple[str, ...]
    shared_len: int  # leading token ids A and B have in common
    reused_len: int  # rows actually kept (at most len(B) - 1: the last token of B must be fed to get logits)
    new_tokens_computed: int  # len(B) - reused_len
    tokens_saved: int  # = reused_len
    reused_cache_bytes: int  # bytes of the kept rows, from the real tensors
    fresh: Timing  # prefill all of B (repeats interleaved with `reuse`, see kvviz.measure.repeats)
    reuse: Timing  # prefill only B's new tokens onto a copy of the cropped cache (the copy is not timed)
    max_abs_logit_diff: float  # next-token logits, reuse vs fresh
    max_abs_kv_diff: float  # every K/V element of the final caches, reuse vs fresh
    same_next_token: bool

    @property
    def fresh_ms(self) -> float:
        return self.fresh.median_ms

    @property
    def reuse_ms(self) -> float:
        return self.reuse.median_ms

    @property
    def timing_repeats(self) -> int:
        return self.fresh.repeats

    @property
    def load_avg_1min(self) -> float:
        return self.timing.load_1min

    @property
    def time_saved_ms(self) -> float:
        return self.fresh_ms - self.reuse_ms

    @property
    def timing(self) -> Comparison:
        return Comparison(PREFIX_REUSE_NAME, self.reuse, PREFIX_FRESH_NAME, self.fresh)

    def timing_sentence(self) -> str:
        """The noise rule's sentence (kvviz.measure.timing) about the two prefills, in the current language."""
        return Comparison(_(PREFIX_REUSE_NAME), self.reuse, _(PREFIX_FRESH_NAME), self.fresh).sentence()

    @property
    def timing_contradicts_lesson(self) -> bool:
        """Reuse measured slower than a fresh prefill, beyond the noise, although it computed fewer tokens."""
        return self.tokens_saved > 0 and self.timing.faster_name == PREFIX_FRESH_NAME


# ----- cross-attention ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CrossStep:
    """Both caches after one decoder pass (batch 1; rows = positions per layer)."""

    step: int  # 0 = first decoder token
    fed_token_id: int
    self_rows: int  # self-attention cache rows per layer (grows by 1 per step)
    self_bytes: int
    cross_rows: int  # cross-attention cache rows per layer (= source_len, fixed)
    cross_bytes: int
    cross_equal_to_first: bool  # torch.equal with the cross K/V snapshot taken after step 0, every layer
    cross_same_storage: bool  # same data pointers as after step 0: the tensors were not even re-allocated
    self_prefix_equal: bool  # the self-attention rows from earlier steps are unchanged too (only appended to)


@dataclass(frozen=True)
class CrossAttnRun:
    source_len: int
    n_layer: int
    n_heads: int
    head_dim: int
    encoder_passes: int  # how many times the encoder ran, counted (1: its output is reused by every step)
    steps: tuple[CrossStep, ...]


# ----- sliding windows ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WindowState:
    """One local layer after seq_len tokens with a window of `window` tokens."""

    seq_len: int
    window: int
    kept_start: int  # first position still cached
    rows_kept: int  # = min(seq_len, window): the memory cap
    rows_evicted: int  # positions 0..kept_start-1


@dataclass(frozen=True)
class LayerWindow:
    layer: int
    kind: str  # "local" | "global"
    rows_full: int  # rows the real (full-attention) cache holds
    rows_kept: int  # rows this layer keeps under the pattern
    bytes_full: int  # K+V bytes of the real layer tensors
    bytes_kept: int  # K+V bytes of the rows kept, measured on the real tensors' slice
    calculator_bytes: int  # kvviz.memory.budget's bytes for this layer: must equal bytes_kept
    attention_lost: float  # share of the last token's attention (mean over heads) on evicted rows


@dataclass(frozen=True)
class WindowRun:
    tokens: tuple[str, ...]
    window: int
    local_per_global: int | None  # None: every layer local
    state: WindowState
    layers: tuple[LayerWindow, ...]
    evicted_tokens: tuple[str, ...]  # what a local layer can no longer attend to

    @property
    def bytes_full(self) -> int:
        return sum(la.bytes_full for la in self.layers)

    @property
    def bytes_kept(self) -> int:
        return sum(la.bytes_kept for la in self.layers)


@dataclass(frozen=True)
class PresetLayers:
    """Per-layer cache sizes of a published hybrid model, straight from the memory calculator."""

    name: str
    context_len: int
    layer_kinds: tuple[str, ...]
    layer_bytes: tuple[int, ...]
    total_bytes: int
    all_global_bytes: int  # the same model with every layer global


# ----- paging ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BlockTable:
    """One sequence's blocks."""

    seq_len: int
    block_size: int
    n_blocks: int  # ceil(seq_len / block_size)
    last_block_fill: int  # rows used in the last block (block_size when it is full; 0 for an empty sequence)
    waste_slots: int  # n_blocks * block_size - seq_len


@dataclass(frozen=True)
class PagingPlan:
    """Two sequences in one block pool, sharing the full blocks of their common prefix. Token counts are rows
    per layer; bytes = rows x bytes_per_token (all layers, K and V)."""

    block_size: int
    max_len: int
    bytes_per_token: int
    seq_lens: tuple[int, int]
    shared_prefix_len: int  # tokens the two sequences have in common
    shared_blocks: int  # full blocks of that prefix, stored once
    tables: tuple[tuple[int, ...], tuple[int, ...]]  # physical block ids, per sequence
    refcounts: tuple[int, ...]  # per physical block id
    physical_blocks: int
    paged_bytes: int  # physical_blocks * block_size rows
    unshared_paged_bytes: int  # the same blocks without sharing
    preallocated_bytes: int  # 2 sequences x max_len rows
    used_bytes: int  # rows really holding data: both sequences, the shared blocks counted once

    @property
    def waste_bytes(self) -> int:
        return self.paged_bytes - self.used_bytes


@dataclass(frozen=True)
class PagedRun:
    """Two real generations from one prompt (A greedy, B sampled), laid out in blocks."""

    prompt_tokens: int
    texts: tuple[str, str]  # the generated continuations
    plan: PagingPlan
    gather_max_abs_diff: float  # K/V read back through the block tables vs the real caches (0.0 = exact)
    shared_rows_max_abs_diff: float  # B's own rows in the shared blocks vs A's rows stored there


# ----- quantization ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LayerError:
    layer: int
    key_rel_rms: float  # ||K - K_hat|| / ||K|| (Frobenius, the whole layer)
    value_rel_rms: float
    key_max_abs: float
    value_max_abs: float


@dataclass(frozen=True)
class QuantReport:
    """One format applied to the real cache of one prompt (the newest `residual_rows` kept in full precision)."""

    scheme: str
    group_size: int
    seq_len: int
    fp32_bytes: int  # the real cache as it is (float32)
    stored_bytes: int  # measured from the stored tensors (packed ints + scales + zeros, or the cast, + residual)
    calculator_bytes: int  # kvviz.memory.kv_bytes for the quantized rows + the residual rows at fp32
    overhead_bytes: int  # scales + zero points (0 for fp16/bf16)
    layers: tuple[LayerError, ...]
    residual_rows: int = 0  # newest rows per layer left in full precision (transformers' residual window)
    residual_bytes: int = 0  # their bytes (already inside stored_bytes)


@dataclass(frozen=True)
class SchemeAgreement:
    """Greedy next-token agreement of a quantized cache with the full-precision cache, over a prompt set."""

    scheme: str
    steps: int  # decode steps compared, all prompts
    same_token_steps: int
    identical_prompts: int  # prompts where every step matched
    first_mismatch: tuple[int | None, ...]  # per prompt: first differing step (None = none)

    @property
    def agreement(self) -> float:
        return self.same_token_steps / self.steps if self.steps else float("nan")


# ----- speculative decoding ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SpecRound:
    index: int
    proposed: tuple[int, ...]  # d_1..d_k
    proposed_text: tuple[str, ...]
    verifier_choice: tuple[int, ...]  # v_0..v_k
    accepted: int  # a
    cache_len_before: int  # L
    cache_len_verified: int  # L + k + 1: every proposal's row was computed
    cache_len_after_crop: int  # L + 1 + a
    emitted: tuple[int, ...]  # d_1..d_a, v_a

    @property
    def rejected(self) -> int:
        return len(self.proposed) - self.accepted


@dataclass(frozen=True)
class SpecRun:
    prompt_tokens: int
    k: int
    draft_temperature: float | None  # None: the draft picked its greedy (most likely) token
    rounds: tuple[SpecRound, ...]
    tokens: tuple[int, ...]  # generated tokens (the first comes from the prefill)
    text: str
    verifier_passes: int  # forward passes of the verifier, prefill included
    final_cache_len: int
    cache_vs_fresh_max_abs_diff: float  # the cropped cache vs a fresh prefill of the same tokens
    draft_label: str = SPEC_SELF_DRAFT  # the model that proposed (English: translate where shown)

    @property
    def draft_passes(self) -> int:
        return sum(len(r.proposed) for r in self.rounds)

    @property
    def rows_cropped(self) -> int:
        return sum(r.cache_len_verified - r.cache_len_after_crop for r in self.rounds)

    @property
    def acceptance_rate(self) -> float:
        proposed = sum(len(r.proposed) for r in self.rounds)
        return sum(r.accepted for r in self.rounds) / proposed if proposed else float("nan")


# ----- eviction: what to forget -------------------------------------------------------------------------------
@dataclass(frozen=True)
class EvictionPoint:
    """One policy (or quantized format) at one budget: its real bytes and both quality measures, with the
    measure of every unit sampled (a copy-test span, a loss passage), so that any two points of one sweep can be
    compared unit by unit (kvviz.measure.timing.paired_interval)."""

    policy: str  # an EVICT_POLICIES name, or a quantized format ("int8", ...)
    kind: str  # "eviction" | "quantized"
    keep_percent: int  # the budget asked for (100 for a quantized format: it keeps every row)
    rows_kept: int  # per layer and KV head, after the prefill of a copy-test span
    rows_full: int
    kv_bytes_kept: int  # nbytes of the pruned (or quantized) tensors of ONE sequence's cache, all layers, K and V
    kv_bytes_full: int  # ... of the full float32 cache
    copy_correct: int  # next-token predictions right on the repeated span (all spans)
    copy_total: int
    loss_nats: float  # mean next-token loss on the continuations (nats/token)
    loss_full_nats: float  # ... with the full cache
    # The units sampled: the copy hits of each span (each span has copy_total / n_spans predictions), and each
    # passage's mean loss change against the full cache (this cache's loss - the full cache's, on that passage).
    copy_hits_per_span: tuple[int, ...] = ()
    loss_change_per_passage: tuple[float, ...] = ()
    # The loss context's cache kept, as a share of its full cache's bytes (the loss is measured on a longer prefill
    # than the copy test, so its share differs; whole heads for the ragged policies). NaN: not recorded.
    loss_bytes_fraction: float = float("nan")

    @property
    def bytes_fraction(self) -> float:
        return self.kv_bytes_kept / self.kv_bytes_full

    @property
    def copy_accuracy(self) -> float:
        return self.copy_correct / self.copy_total if self.copy_total else float("nan")

    @property
    def loss_change_nats(self) -> float:
        return self.loss_nats - self.loss_full_nats

    @property
    def n_spans(self) -> int:
        return len(self.copy_hits_per_span)

    @property
    def n_passages(self) -> int:
        return len(self.loss_change_per_passage)

    @property
    def copy_per_span(self) -> tuple[float, ...]:
        """Each span's copy accuracy (a fraction): the unit the copy interval is over."""
        per_span = self.copy_total // self.n_spans if self.n_spans else 0
        return tuple(h / per_span for h in self.copy_hits_per_span) if per_span else ()

    @property
    def copy_half_width(self) -> float:
        """The 95% half-width of the copy accuracy (a fraction) over the spans: t(0.975, spans - 1) x SD / sqrt(n)."""
        return mean_interval(self.copy_per_span)[1]

    @property
    def loss_change_half_width(self) -> float:
        """The 95% half-width of the loss change (nats) over the passages, each paired with the full cache's."""
        return mean_interval(self.loss_change_per_passage)[1]

    @property
    def copy_interval(self) -> tuple[float, float]:
        """The 95% interval of the copy accuracy, over the spans."""
        return self.copy_accuracy - self.copy_half_width, self.copy_accuracy + self.copy_half_width

    @property
    def loss_change_interval(self) -> tuple[float, float]:
        """The 95% interval of the loss change, over the passages (paired with the full cache, passage by passage)."""
        return self.loss_change_nats - self.loss_change_half_width, self.loss_change_nats + self.loss_change_half_width

    def units(self, metric: str) -> tuple[float, ...]:
        """The sampled units of a measure: "copy" each span's accuracy, "loss" each passage's loss change."""
        return self.copy_per_span if metric == "copy" else self.loss_change_per_passage


@dataclass(frozen=True)
class HeadRanking:
    """DuoAttention's KV heads ranked by what they do: each head's measured effect when it alone streams (keeps
    only the sinks and the newest rows), on calibration draws; the ranking is by the mean over the draws."""

    effects: tuple[tuple[float, ...], ...]  # [draw][head] the output change, heads in (layer, KV head) order
    heads: tuple[tuple[int, int], ...]  # (layer, KV head) of each column of effects
    calibration: str  # what the draws are (English, stable: translated where shown)

    @property
    def mean_effects(self) -> tuple[float, ...]:
        return tuple(sum(col) / len(col) for col in zip(*self.effects, strict=True))

    @property
    def order(self) -> tuple[tuple[int, int], ...]:
        """(layer, KV head), the largest mean effect first; ties by layer and head."""
        mean = self.mean_effects
        return tuple(self.heads[i] for i in sorted(range(len(self.heads)), key=lambda i: (-mean[i], self.heads[i])))

    def draw_order(self, draw: int) -> tuple[tuple[int, int], ...]:
        row = self.effects[draw]
        return tuple(self.heads[i] for i in sorted(range(len(self.heads)), key=lambda i: (-row[i], self.heads[i])))

    def rank_range(self, head: tuple[int, int]) -> tuple[int, int]:
        """(best, worst) rank of `head` over the draws, 1 = the most important."""
        ranks = [self.draw_order(d).index(head) + 1 for d in range(len(self.effects))]
        return min(ranks), max(ranks)

    def top_set_agreement(self, k: int) -> int:
        """In how many draws the k most important heads are the same set as the mean ranking's."""
        want = set(self.order[:k])
        return sum(set(self.draw_order(d)[:k]) == want for d in range(len(self.effects)))


@dataclass(frozen=True)
class LayerKept:
    """Which positions one layer keeps, per KV head, for the first copy-test span."""

    layer: int
    kept: tuple[tuple[bool, ...], ...]  # [Hkv][S]: True = the row is kept
    rows_kept: int  # per KV head
    kv_bytes_kept: int  # this layer's pruned K and V nbytes (one sequence)
    kv_bytes_full: int


@dataclass(frozen=True)
class EvictionGrid:
    """The token grid: one policy at one budget on the first copy-test span."""

    policy: str
    keep_percent: int
    tokens: tuple[str, ...]  # the span, one entry per position
    sink_tokens: int  # StreamingLLM's S (marked on the grid for the streaming policy)
    layers: tuple[LayerKept, ...]


@dataclass(frozen=True)
class EvictionSweep:
    model_label: str
    settings: EvictSettings
    points: tuple[EvictionPoint, ...]  # every policy x every budget, then the quantized formats
    group_size: int  # the quantized formats' group (= head_dim: one group per token's head vector)
    text_tokens: int
    head_ranking: HeadRanking | None = None  # DuoAttention's heads ranked by their ablation effect (None: not drawn)

    def curve(self, policy: str) -> tuple[EvictionPoint, ...]:
        return tuple(p for p in self.points if p.policy == policy and p.kind == "eviction")

    def point(self, policy: str, keep_percent: int) -> EvictionPoint:
        return next(p for p in self.points if p.policy == policy and p.keep_percent == keep_percent)

    @property
    def quantized(self) -> tuple[EvictionPoint, ...]:
        return tuple(p for p in self.points if p.kind == "quantized")
