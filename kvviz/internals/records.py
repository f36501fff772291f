"""The torch-free contract of kvviz.internals: result records, input caps and error types.

The modules that run the model (prefix, crossattn, window, paging, quant, speculative) import torch; pages and
figures import only this module (and the numpy-only `layout`), so drawing a result never loads torch.
Records are frozen dataclasses of plain Python numbers, strings and tuples. Caps are the bounds every page
states next to its inputs and every function enforces (kvviz.inputs.prompt_rules words the messages).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kvviz.i18n import N_, _
from kvviz.measure.timing import Comparison, Timing
from kvviz.inputs.prompt_rules import check_int_in_range


# ----- errors (ValueError subclasses: the message says what to change) ------------------------------------------
class PrefixError(ValueError):
    """The prompt pair cannot be compared; the message says what to change."""


class CrossAttnError(ValueError):
    """Bad demo settings; the message gives the allowed range."""


class WindowError(ValueError):
    """A window or layer pattern outside sensible bounds; the message says the allowed range."""


class PagingError(ValueError):
    """Block sizes or lengths outside sensible bounds; the message says what is allowed."""


class QuantError(ValueError):
    """A bit width, group size or prompt set the quantizer cannot use; the message says what is allowed."""


class SpeculativeError(ValueError):
    """Settings outside sensible bounds; the message says what is allowed."""


# ----- caps (bounded work: every page states them beside its inputs) -----------------------------------------
PREFIX_TIMING_REPEATS = 9  # median of this many runs for each measured prefill (interleaved, 1 warm-up)
CROSS_MAX_SOURCE_LEN = 64
CROSS_MAX_STEPS = 48
PAGING_MAX_BLOCK_SIZE = 256
PAGING_MAX_NEW_TOKENS = 128
QUANT_SCHEMES = ("fp16", "bf16", "int8", "int4")
QUANT_MIN_GROUP = 4
# Greedy agreement runs 1 + len(QUANT_SCHEMES) generations per prompt: 300 prompts x 64 tokens once ran > 600 s.
AGREEMENT_MAX_PROMPTS = 8
AGREEMENT_MAX_TOKENS = 32  # per prompt
AGREEMENT_MAX_PROMPT_TOKENS = 128  # prompts x tokens per prompt: ~640 one-token passes, a few seconds on 2 cores
# Default prompts (the pages' and bench/timed_comparisons.py's).
# A long shared opening (like a system prompt every request starts with) and two different endings: the case
# prefix caching is for. Shakespeare's Romeo and Juliet, the Prologue (public domain), as the bundled model knows it.
PREFIX_SHARED_OPENING = ("Two households, both alike in dignity,\nIn fair Verona, where we lay our scene,\nFrom "
                         "ancient grudge break to new mutiny,\nWhere civil blood makes civil hands unclean.\nFrom "
                         "forth the fatal loins of these two foes\nA pair of star-cross'd lovers take their life;\n\n")
PREFIX_DEFAULT_A = PREFIX_SHARED_OPENING + "ROMEO:\nBut soft, what light through yonder window breaks?"
PREFIX_DEFAULT_B = PREFIX_SHARED_OPENING + "JULIET:\nO Romeo, Romeo! wherefore art thou Romeo?"
# The default pairing and prompt were measured (greedy, k = 4, 24 tokens): with the bundled GPT-2 verifying and
# the bundled GQA Llama drafting, this prompt accepts 64% of the drafts and needs 8 verifier passes for 24
# tokens: the repeated line is accepted in runs of four, the invented line after it is where the two disagree
# and rows are cropped. The same model sampled at 0.7 accepted 9% on "ROMEO: But soft, what light".
SPEC_DEFAULT_PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?\n\nJULIET:\nBut soft,"
SPEC_MAX_K = 8
SPEC_MAX_NEW = 64
SPEC_MIN_TEMPERATURE, SPEC_MAX_TEMPERATURE = 0.05, 5.0
# Names in records stay English (code compares them); marked for the catalog, translated where shown.
PREFIX_REUSE_NAME = N_("reusing A's prefix")
PREFIX_FRESH_NAME = N_("a fresh prefill of B")
SPEC_SELF_DRAFT = N_("the verifier itself")


def check_agreement_work(n_prompts: int, n_new: int) -> None:
    """Refuse a greedy-agreement run past its caps (prompts, tokens per prompt, and their product)."""
    n_prompts = check_int_in_range(n_prompts, 1, AGREEMENT_MAX_PROMPTS, _("number of prompts (one per line)"),
                                   error=QuantError)
    n_new = check_int_in_range(n_new, 1, AGREEMENT_MAX_TOKENS, _("tokens per prompt"), error=QuantError)
    if n_prompts * n_new > AGREEMENT_MAX_PROMPT_TOKENS:
        raise QuantError(_("{prompts} prompts x {tokens} tokens = {total} generated tokens; the cap is {cap} (prompts "
                           "x tokens). Use fewer prompts or fewer tokens.").format(
            prompts=n_prompts, tokens=n_new, total=n_prompts * n_new, cap=AGREEMENT_MAX_PROMPT_TOKENS))


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
class EvictionError(ValueError):
    """A policy, budget or text the eviction lab cannot use; the message says what is allowed."""


# The policies, in the order the page lists them. Names are the CLI's words; labels are shown through _().
EVICT_POLICIES = ("full", "random", "recent", "streaming", "h2o", "tova", "snapkv", "key_norm")
EVICT_POLICY_LABELS = {
    "full": N_("full cache"),
    "random": N_("random (control)"),
    "recent": N_("recent window"),
    "streaming": N_("StreamingLLM (sinks + window)"),
    "h2o": N_("H2O (accumulated attention)"),
    "tova": N_("TOVA (newest query's attention)"),
    "snapkv": N_("SnapKV (observation window)"),
    "key_norm": N_("key norm (smallest kept)"),
}
# Short names, for chart legends and sentences (the papers' names stay as written).
EVICT_POLICY_SHORT = {"full": N_("full cache"), "random": N_("random"), "recent": N_("recent window"),
                      "streaming": "StreamingLLM", "h2o": "H2O", "tova": "TOVA", "snapkv": "SnapKV",
                      "key_norm": N_("key norm")}
# What each policy keeps, and where its choice differs (per layer, per KV head): shown beside the grid.
EVICT_POLICY_RULES = {
    "full": N_("Keeps every row: the reference every other line is measured against."),
    "random": N_("Keeps a seeded random set of rows, drawn anew for every layer and KV head: the control a "
                 "policy must beat to show it knows anything."),
    "recent": N_("Keeps the last W rows; the same rows in every layer and head (StreamingLLM with S = 0)."),
    "streaming": N_("Keeps the first S rows (the attention sinks) and the last W - S; the same rows in every layer "
                    "and head."),
    "h2o": N_("Keeps the rows that received the most attention, summed over every query of the prefill and over "
              "the query heads that share a KV head: chosen per layer and per KV head. (The H2O paper also keeps a "
              "recent window; this line is its heavy-hitter half alone.)"),
    "tova": N_("Keeps the rows the newest query attends to most, averaged over all heads of a layer: one choice "
               "per layer, shared by its KV heads (as the TOVA paper does)."),
    "snapkv": N_("Scores rows by the attention of the last {window} queries (the observation window), smoothed "
                 "over 5 neighbouring positions; the window itself is always kept: chosen per layer and per KV "
                 "head."),
    "key_norm": N_("Keeps the keys with the smallest L2 norm (low-norm keys tend to draw high attention, Devoto et "
                   "al. 2024, arXiv:2406.11430): chosen per layer and per KV head, without reading any attention."),
}
EVICT_KEEP_PERCENTS = (100, 75, 50, 35, 25, 15, 10, 5)  # the sweep's budgets: % of KV bytes kept
EVICT_QUANT_SCHEMES = ("fp16", "fp8", "int8", "int4", "int2")  # compression points on the same axis (kvviz.internals.quant;
# fp8: transformers' own QuantizedCache(backend="fp8"))
EVICT_MAX_SPANS = 16  # copy-test spans (one batch)
EVICT_MAX_PASSAGES = 8  # loss passages (one batch)
EVICT_MIN_SPAN_TOKENS = 8
EVICT_SNAP_POOL = 5  # SnapKV's smoothing kernel (positions), as in the paper's code and kvpress
HELD_OUT_TEXT_PATH = Path(__file__).resolve().parents[1] / "assets" / "held_out_shakespeare.txt"


def held_out_text() -> str:
    """A passage of Tiny Shakespeare's validation split (the last 10%, which neither bundled model trained on):
    the copy test's and the loss's default text. The Taming of the Shrew, public domain."""
    return HELD_OUT_TEXT_PATH.read_text(encoding="utf-8")


def check_keep_percent(value) -> int:
    """A budget: a whole percent of the KV bytes to keep, 1..100."""
    return check_int_in_range(value, 1, 100, N_("percent of KV bytes kept"), error=EvictionError)


def check_policy(policy: str) -> str:
    if policy not in EVICT_POLICIES:
        raise EvictionError(_("unknown eviction policy {policy!r}; choose one of {names}").format(
            policy=str(policy)[:40], names=", ".join(EVICT_POLICIES)))
    return policy


def rows_for_budget(keep_percent: int, seq_len: int) -> int:
    """Rows kept per layer and KV head: floor(seq_len x percent / 100), at least 1 (integer-exact, never over the
    budget). Every head keeps the same count, so the pruned tensors stay rectangular:
    [batch_size, num_kv_heads, rows, head_dim]."""
    return max(1, seq_len * keep_percent // 100)


@dataclass(frozen=True)
class EvictSettings:
    """What one sweep measures. Spans and passages are cut from the text at evenly spaced offsets (nothing drawn
    at random), like kvviz.training.copying.held_out_repeats."""

    half_tokens: int = 64  # copy test: a span of this many tokens, prefilled, pruned, then fed again
    n_spans: int = 8
    context_tokens: int = 160  # loss: this much context is prefilled and pruned ...
    continuation_tokens: int = 48  # ... then the next tokens are fed and their next-token loss measured
    n_passages: int = 4
    sink_tokens: int = 4  # StreamingLLM's S
    snap_window: int = 8  # SnapKV's observation window (last queries of the prefill)
    seed: int = 0  # the random control's generator

    def checked(self, n_positions: int) -> EvictSettings:
        """Every field in its range for a model with n_positions positions (one message naming the field)."""
        e = EvictionError
        half = check_int_in_range(self.half_tokens, EVICT_MIN_SPAN_TOKENS, n_positions // 2,
                                  N_("copy-test span (tokens)"), error=e)
        spans = check_int_in_range(self.n_spans, 1, EVICT_MAX_SPANS, N_("copy-test spans"), error=e)
        context = check_int_in_range(self.context_tokens, EVICT_MIN_SPAN_TOKENS, n_positions - 2,
                                     N_("loss context (tokens)"), error=e)
        cont = check_int_in_range(self.continuation_tokens, 2, n_positions - context,
                                  N_("loss continuation (tokens)"), error=e)
        passages = check_int_in_range(self.n_passages, 1, EVICT_MAX_PASSAGES, N_("loss passages"), error=e)
        sinks = check_int_in_range(self.sink_tokens, 0, 64, N_("sink tokens S"), error=e)
        window = check_int_in_range(self.snap_window, 1, 64, N_("SnapKV observation window"), error=e)
        seed = check_int_in_range(self.seed, 0, 2**31 - 1, N_("random seed"), error=e)
        return EvictSettings(half, spans, context, cont, passages, sinks, window, seed)


@dataclass(frozen=True)
class EvictionPoint:
    """One policy (or quantized format) at one budget: its real bytes and both quality measures."""

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

    @property
    def bytes_fraction(self) -> float:
        return self.kv_bytes_kept / self.kv_bytes_full

    @property
    def copy_accuracy(self) -> float:
        return self.copy_correct / self.copy_total if self.copy_total else float("nan")

    @property
    def loss_change_nats(self) -> float:
        return self.loss_nats - self.loss_full_nats


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

    def curve(self, policy: str) -> tuple[EvictionPoint, ...]:
        return tuple(p for p in self.points if p.policy == policy and p.kind == "eviction")

    def point(self, policy: str, keep_percent: int) -> EvictionPoint:
        return next(p for p in self.points if p.policy == policy and p.keep_percent == keep_percent)

    @property
    def quantized(self) -> tuple[EvictionPoint, ...]:
        return tuple(p for p in self.points if p.kind == "quantized")


def policy_label(policy: str) -> str:
    """A policy's (or a quantized format's) name in the interface language, with what it scores."""
    return _(EVICT_POLICY_LABELS[policy]) if policy in EVICT_POLICY_LABELS else policy


def policy_short(policy: str) -> str:
    """A policy's (or a quantized format's) short name, for legends and sentences."""
    name = EVICT_POLICY_SHORT.get(policy, policy)
    return _(name) if name in ("full cache", "random", "recent window", "key norm") else name


def eviction_takeaways(sweep: EvictionSweep, hold_within: float = 0.05) -> list[str]:
    """What a class takes away, computed from the sweep (never typed in): which policies hold up at which
    budget, where quantizing beats evicting at equal bytes, and what the sink rows are worth.

    hold_within: a policy "holds up" at a budget while its copy accuracy is within this of the full cache's."""
    full = sweep.point("full", 100)
    evicting = EVICT_POLICIES[1:]
    lines = []
    holds = [(min((p.keep_percent for p in sweep.curve(policy)
                   if p.keep_percent < 100 and p.copy_accuracy >= full.copy_accuracy - hold_within), default=101),
              policy) for policy in evicting]
    best_keep, best = min(holds)
    if best_keep <= 100:
        lines.append(_("Copying holds (within {pp:.0f} points of the full cache's {acc:.0%}) down to {keep}% of the "
                       "bytes with {policy}.").format(pp=100 * hold_within, acc=full.copy_accuracy, keep=best_keep,
                                                      policy=policy_short(best)))
    else:
        lines.append(_("No policy keeps copying within {pp:.0f} points of the full cache's {acc:.0%} once rows are "
                       "evicted: the repeat needs the rows of the whole first copy, and every policy throws some "
                       "of them away.").format(pp=100 * hold_within, acc=full.copy_accuracy))
    random_line = {p.keep_percent: p for p in sweep.curve("random")}
    for keep in (50, 25, 10):
        if keep not in random_line:
            continue
        at = [sweep.point(policy, keep) for policy in evicting if policy != "random"]
        top = max(at, key=lambda p: p.copy_accuracy)
        lowest_loss = min(at, key=lambda p: p.loss_change_nats)
        worst_loss = max(at, key=lambda p: p.loss_change_nats)
        lines.append(_("At {keep}%: best copying {policy} {acc:.0%} (the random control {rand:.0%}); loss change from "
                       "{low:+.3f} nats ({low_policy}) to {high:+.3f} ({high_policy}).").format(
            keep=keep, policy=policy_short(top.policy), acc=top.copy_accuracy,
            rand=random_line[keep].copy_accuracy, low=lowest_loss.loss_change_nats,
            low_policy=policy_short(lowest_loss.policy), high=worst_loss.loss_change_nats,
            high_policy=policy_short(worst_loss.policy)))
    for q in sweep.quantized:
        # the evicting policies' best copy accuracy at the largest budget that fits in the format's bytes
        fits = [p for p in sweep.points if p.kind == "eviction" and p.policy != "full"
                and p.kv_bytes_kept <= q.kv_bytes_kept]
        if not fits:
            continue
        rival = max(fits, key=lambda p: (p.copy_accuracy, -p.kv_bytes_kept))
        verdict = (_("quantizing wins") if q.copy_accuracy > rival.copy_accuracy + 1e-12 else
                   _("a tie") if abs(q.copy_accuracy - rival.copy_accuracy) <= 1e-12 else _("evicting wins"))
        lines.append(_("{format} ({share:.0%} of the bytes) copies {q_acc:.0%}; the best eviction in no more "
                       "bytes, {policy} at {keep}%, copies {e_acc:.0%}: {verdict}.").format(
            format=q.policy, share=q.bytes_fraction, q_acc=q.copy_accuracy, policy=policy_short(rival.policy),
            keep=rival.keep_percent, e_acc=rival.copy_accuracy, verdict=verdict))
    s = sweep.settings.sink_tokens
    for keep in (75, 25, 5):  # a large, a middle and the smallest budget
        without, with_ = sweep.point("recent", keep), sweep.point("streaming", keep)
        lines.append(_("Sinks at {keep}%: the window alone (S = 0) copies {a0:.0%} with loss change {l0:+.3f} "
                       "nats; with the first S = {s} rows kept, {a1:.0%} and {l1:+.3f} nats.").format(
            keep=keep, a0=without.copy_accuracy, l0=without.loss_change_nats, s=s, a1=with_.copy_accuracy,
            l1=with_.loss_change_nats))
    return lines
