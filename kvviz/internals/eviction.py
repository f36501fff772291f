"""KV-cache eviction: what to forget, measured on the real cache of a real prefill.

Each policy scores the rows of transformers' own `DynamicCache` after a prefill and keeps the best `rows` of every
layer and KV head (`keep_rows`); `prune` gathers them into a new DynamicCache, and decoding goes on from it. The
scorers are a few lines each, written here on the cache tensors (NVIDIA's kvpress is the reference implementation
of these "presses"; kvpress 0.5.5 pins transformers < 5.3 and does not take GPT-2; transformers 5 removed SinkCache):

    full       every row (the reference)
    random     a seeded random set, per layer and KV head (the control)
    recent     the last W rows (StreamingLLM with S = 0)
    streaming  the first S rows (attention sinks) + the last W - S  (StreamingLLM, Xiao et al. 2023, arXiv:2309.17453);
               a budget of at most S rows keeps positions 0..rows-1
    h2o        the paper's split: rows // 2 heavy hitters (the most accumulated attention, summed over every prefill
               query, among the rows outside the recent window) + the newest rows - rows // 2 (H2O, Zhang et al.
               2023, arXiv:2306.14048), chosen once after the prefill
    h2o_heavy  the heavy hitters alone, chosen once after the prefill: a variant, named as one
    tova       the newest query's attention, averaged over all heads of the layer (TOVA, Oren et al. 2024,
               arXiv:2401.06104): one choice per layer
    snapkv     SnapKV's code (Li et al. 2024, arXiv:2404.14469; github.com/FasterDecoding/SnapKV): the last
               `snap_window` queries' attention on the prefix (the rows before the window), summed, avg_pool1d over
               5 positions with the padding counted; the top rows - window of the prefix + the whole window. Below
               the window it keeps the window's newest rows: the recent window (policy_note says so)
    key_norm   the keys with the smallest L2 norm (Devoto et al. 2024, arXiv:2406.11430), no attention read
    keydiff    the keys least similar (cosine) to the mean key of their layer and KV head, the keys taken at unit
               length (KeyDiff, 2025, arXiv:2504.15364; kvpress's KeyDiffPress), no query or attention read
    duoattention  DuoAttention's head split (Xiao et al. 2024, arXiv:2410.10819): retrieval heads keep every row,
               streaming heads keep the first S rows + the EVICT_DUO_RECENT newest. The retrieval heads are the
               KV heads whose streaming changes the output most (head_ranking: each head alone streams on
               calibration draws of seeded random tokens repeated, and the next-token distributions' KL divergence
               from the full cache's is its effect; the paper learns a gate per head to the same end), the most
               important first; how many follows from the budget (duo_split). The KV heads keep different numbers
               of rows, so this cache is ragged (HeadSplitCache)
    duo_probe  a variant: the same split with the heads ranked by kvviz.step's induction probe (the copy probe of
               the attention-patterns page), which ranks near-zero heads by noise
    kvzip      KVzip's reconstruction score (Kim et al. 2025, arXiv:2505.23416): the model re-reads the context
               (a repeat prompt, then the context again) on top of the prefill's cache, and each cached row scores
               the most attention any re-reading query (of the KV head's query heads) gives it; about twice the
               prefill's work, once per prefill. The rows are ranked across all layers and KV heads at once, as the
               paper allocates: the budget's rows x layers x KV heads best scores of the whole cache, so heads keep
               different numbers of rows (ragged, per sequence)
    kvzip_head a variant: the same scores, the top rows per KV head (every head keeps the same number)

Attention-based scores read the prefill's attention weights (eager attention, which the app loads). With GQA the
query heads that share a KV head are averaged (a sum would rank the rows the same), so the choice is per KV head: the pruned tensors stay
[batch_size, num_kv_heads, seq_len, head_dim] with seq_len = the rows kept, rectangular, because every head keeps
the same number of rows. DuoAttention's heads do not: each layer's KV heads are stored as separate tensors
(HeadSplitCache, whose bytes are theirs), and attention reads them through a padded view in which the padding is
masked per query head (a forward pre-hook on each attention module adds the mask to the eager attention mask).

Budget: a whole percent of the KV bytes; rows per head = floor(S x percent / 100) (rows_for_budget), and the
bytes reported are the pruned tensors' own `nbytes`, never the percent asked for. Masking rows or zeroing channels
would keep the bytes and save nothing, so nothing here masks: the rows are gone from the tensors.

Positions after eviction continue from the ORIGINAL length. After a prefill of S tokens pruned to k rows the cache
holds k rows, and transformers would place the next token at position k (it reads `get_seq_length()`). But the kept
rows still carry their original positions: GPT-2's keys and values were computed from learned position embeddings
0..S-1, the Llama's keys are stored already rotated (RoPE) by their original positions. The next token is token S of
the text: at position k it would reuse a position a kept row already holds and see every kept row nearer than it
is (with RoPE, the relative distance q - k in each score would be wrong). So every pass after pruning gets explicit
`position_ids = S, S+1, ...`. The causal mask stays right without help: transformers 5 sizes it from the cache's
physical length (`get_mask_sizes`), not from the positions, so the new tokens see every kept row and each other
causally. (transformers 5 takes no `cache_position` argument; position_ids is the one to set.)

Quality: the copy test (held-out spans: prefill the span, prune, feed the span again, top-1 next-token accuracy on
the repeat, the targets kvviz.training.copying.copying_accuracy scores) and the next-token loss of a continuation
after a pruned context. The quantized formats of kvviz.internals.quant are measured the same way at their bytes.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kvviz.i18n import N_, _, ngettext
from kvviz.inputs.prompt_rules import IntSetting, check_int_in_range
from kvviz.internals import quant
from kvviz.internals.records import EvictionGrid, EvictionPoint, EvictionSweep, HeadRanking, LayerKept
from kvviz.measure.timing import paired_inside_noise, paired_interval
from kvviz.model.loading import LoadedModel

if TYPE_CHECKING:
    import torch
    from transformers import DynamicCache

__all__ = ["EVICT_AT_SCALE", "EVICT_DUO_DRAWS", "EVICT_DUO_RECENT", "EVICT_RAGGED", "EVICT_VARIANTS", "Claim",
           "head_ranking", "kvzip_kept", "EVICT_KEEP_PERCENTS", "KVZIP_REPEAT_PROMPT", "HeadSplitCache",
           "duo_kept", "duo_split", "evict", "retrieval_order", "EVICT_POLICIES", "EVICT_POLICY_LABELS", "EVICT_POLICY_RULES", "EVICT_POLICY_SHORT",
           "EVICT_MAX_SINKS", "EVICT_POLICY_SETTINGS", "EVICT_QUANT_SCHEMES", "EvictionError", "EvictSettings", "HELD_OUT_TEXT_PATH", "Prefill", "SweepTexts",
           "cache_nbytes", "check_keep_percent", "check_policy", "check_sink_tokens", "continue_from", "copy_correct", "copy_sequences",
           "eviction_grid", "eviction_takeaways", "held_out_text", "inside_noise", "keep_order", "keep_rows", "kept_rows",
           "loss_passages", "measure_policy", "measure_quantized", "policy_label", "policy_note", "policy_points",
           "policy_short", "prefill", "prune",
           "quant_points", "rows_for_budget", "sweep", "sweep_of", "text_ids"]


class EvictionError(ValueError):
    """A policy, budget or text the eviction lab cannot use; the message says what is allowed."""


# The policies, in the order the page lists them. Names are the CLI's words; labels are shown through _().
EVICT_POLICIES = ("full", "random", "recent", "streaming", "h2o", "h2o_heavy", "tova", "snapkv", "key_norm",
                  "keydiff", "duoattention", "duo_probe", "kvzip", "kvzip_head")
EVICT_RAGGED = frozenset({"duoattention", "duo_probe", "kvzip"})  # their heads keep different numbers of rows
# a named variant -> the policy it varies (a conclusion that rests on one names it)
EVICT_VARIANTS = {"h2o_heavy": "h2o", "duo_probe": "duoattention", "kvzip_head": "kvzip"}
EVICT_POLICY_LABELS = {
    "full": N_("full cache"),
    "random": N_("random (control)"),
    "recent": N_("recent window"),
    "streaming": N_("StreamingLLM (sinks + window)"),
    "h2o": N_("H2O (heavy hitters + recent)"),
    "h2o_heavy": N_("heavy hitters only (H2O's one-shot half)"),
    "tova": N_("TOVA (newest query's attention)"),
    "snapkv": N_("SnapKV (observation window)"),
    "key_norm": N_("key norm (smallest kept)"),
    "keydiff": N_("KeyDiff (keys least like the mean key)"),
    "duoattention": N_("DuoAttention-style (retrieval heads + streaming heads, ranked by what each head does)"),
    "duo_probe": N_("DuoAttention-style, heads ranked by the induction probe (a variant)"),
    "kvzip": N_("KVzip-style (attention while re-reading the context, ranked across all heads)"),
    "kvzip_head": N_("KVzip-style, the same rows in every head (a variant)"),
}
# Short names, for chart legends and sentences (the papers' names stay as written).
EVICT_POLICY_SHORT = {"full": N_("full cache"), "random": N_("random"), "recent": N_("recent window"),
                      "streaming": "StreamingLLM", "h2o": "H2O", "h2o_heavy": N_("heavy hitters only"),
                      "tova": "TOVA", "snapkv": "SnapKV", "key_norm": N_("key norm"),
                      "keydiff": "KeyDiff", "duoattention": "DuoAttention", "duo_probe": N_("DuoAttention (probe)"),
                      "kvzip": "KVzip", "kvzip_head": N_("KVzip (per head)"), "fp8-hf": N_("fp8 (transformers)")}
_TRANSLATED_SHORT = ("full cache", "random", "recent window", "heavy hitters only", "key norm", "fp8 (transformers)",
                     "DuoAttention (probe)", "KVzip (per head)")
# What each policy keeps, and where its choice differs (per layer, per KV head): shown beside the grid.
EVICT_POLICY_RULES = {
    "full": N_("Keeps every row: the reference every other line is measured against."),
    "random": N_("Keeps a seeded random set of rows, drawn anew for every layer and KV head: the control a "
                 "policy must beat to show it knows anything."),
    "recent": N_("Keeps the last W rows; the same rows in every layer and head (StreamingLLM with S = 0)."),
    "streaming": N_("Keeps the first S rows (the attention sinks) and the last W - S; the same rows in every layer "
                    "and head. A budget of S rows or fewer keeps only the first rows."),
    "h2o": N_("The H2O paper's split: half the budget holds the heavy hitters (the rows that received the most "
              "attention, summed over every query of the prefill and averaged over the query heads that share a "
              "KV head), the other half the newest rows: chosen once after the prefill, per layer and per KV "
              "head."),
    "h2o_heavy": N_("A variant, not the paper's H2O: the whole budget holds heavy hitters (the most attention "
                    "received, summed over every query of the prefill and averaged over the query heads that share "
                    "a KV head), chosen once after the prefill, with no recent window: at small budgets even the "
                    "newest row can go."),
    "tova": N_("Keeps the rows the newest query attends to most, averaged over all heads of a layer: one choice "
               "per layer, shared by its KV heads (as the TOVA paper does)."),
    "snapkv": N_("Keeps the last {window} rows (the observation window) and, from the rows before it, those its "
                 "queries attend to most, summed over the window and smoothed over 5 neighbouring positions as "
                 "SnapKV's code does: chosen per layer and per KV head. A budget under {window} rows keeps only "
                 "the window's newest rows, which is the recent window."),
    "key_norm": N_("Keeps the keys with the smallest L2 norm (low-norm keys tend to draw high attention, Devoto et "
                   "al. 2024, arXiv:2406.11430): chosen per layer and per KV head, without reading any attention."),
    "keydiff": N_("Keeps the keys least similar (cosine) to the mean key of their layer and KV head: distinctive "
                  "keys are the ones no other row stands in for (KeyDiff, 2025, arXiv:2504.15364). Chosen per "
                  "layer and per KV head, without any query or attention."),
    "duoattention": N_("Splits the heads (DuoAttention, Xiao et al. 2024, arXiv:2410.10819): retrieval heads keep "
                       "every row, streaming heads keep the first S rows and the newest {recent}. The retrieval "
                       "heads are the KV heads whose streaming changes the output most: each head in turn keeps "
                       "only those rows while the model reads random tokens repeated, and the change in its "
                       "next-token predictions ranks it. The budget decides how many ({retrieval} of {heads} "
                       "here). The heads keep different numbers of rows, so the cache is stored head by head and "
                       "the bytes are those rows."),
    "duo_probe": N_("A variant of DuoAttention's split: the retrieval heads are the KV heads that copy most on the "
                    "induction probe of the attention-patterns page ({retrieval} of {heads} here). The probe scores "
                    "most heads near zero, so which of those retrieve is decided by noise."),
    "kvzip": N_("Lets the model re-read the context (a repeat prompt, then the context again) on top of its "
                "cache, and keeps the rows that get the most attention from any re-reading query (KVzip, Kim et "
                "al. 2025, arXiv:2505.23416): about twice the prefill's work, once. The rows compete across all "
                "layers and KV heads, as the paper allocates, so heads keep different numbers of rows at the "
                "budget's bytes."),
    "kvzip_head": N_("A variant of KVzip: the same re-reading scores, but every layer and KV head keeps the same "
                     "number of rows, its own best."),
}
# What each newer method needs on a large model that it does not need here (shown on the page, under its sources).
EVICT_AT_SCALE = {
    "keydiff": N_("KeyDiff on a long prompt scores while it reads, block by block, so the cache never exceeds its "
                  "budget, and it works with FlashAttention because it reads no attention weights. Here the span "
                  "fits at once, so it scores once after the prefill."),
    "duoattention": N_("DuoAttention on a large model finds its retrieval heads by an offline optimisation: one "
                       "gate per KV head, trained on synthetic passkey-retrieval data (a number hidden in long "
                       "filler text) to keep the full model's outputs while pushing gates towards streaming; and "
                       "it needs kernels that run full attention on some heads and sink + recent attention on "
                       "others. Here each head's effect when it alone streams, measured on a few calibration draws, "
                       "stands in for the learned gates, and a padded copy with a per-head mask stands in for the "
                       "kernels."),
    "kvzip": N_("KVzip on a long context re-reads it in chunks (a few thousand tokens each) and ranks the rows "
                "across all heads and layers, so heads keep different numbers of rows; it needs an attention "
                "kernel that returns each key's largest weight without writing the whole matrix, and it pays the "
                "re-read once per context, which pays off when many questions reuse the compressed cache. Here the "
                "re-read fits in one or two chunks and the eager attention's weights are read directly."),
}
EVICT_KEEP_PERCENTS = (100, 75, 50, 35, 25, 15, 10, 5)  # the sweep's budgets: % of KV bytes kept
# Compression points on the same axis. fp16/int8/int4/int2: kvviz.internals.quant's arithmetic; fp8: transformers'
# Fp8QuantizedLayer arithmetic on the prefill's rows, under the same protocol (the rows appended afterwards stay
# float32); fp8-hf: transformers' own QuantizedCache(backend="fp8"), which stores the appended rows in fp8 too.
EVICT_QUANT_SCHEMES = ("fp16", "fp8", "fp8-hf", "int8", "int4", "int2")
EVICT_QUANT_LABELS = {"fp8-hf": N_("fp8, transformers' own cache (the new rows in fp8 too)")}
EVICT_MAX_SPANS = 16  # copy-test spans (one batch)
EVICT_MAX_PASSAGES = 32  # loss passages (one batch)
EVICT_MIN_SPAN_TOKENS = 8
EVICT_SNAP_POOL = 5  # SnapKV's smoothing kernel (positions), as in the paper's code and kvpress
EVICT_MAX_SINKS = 64  # StreamingLLM's S: the widget's maximum, a link's and the CLI's (check_sink_tokens)
SINK_TOKENS = IntSetting(N_("sink tokens S"), 0, EVICT_MAX_SINKS, default=4)  # EvictSettings.sink_tokens's default
EVICT_MAX_SNAP_WINDOW = 64
# The settings each policy reads beyond the texts' (the others' points do not change with them: a page keys its
# cached lines on settings_for, so a new S re-measures StreamingLLM alone).
EVICT_POLICY_SETTINGS = {"streaming": ("sink_tokens",), "duoattention": ("sink_tokens",),
                         "duo_probe": ("sink_tokens",), "snapkv": ("snap_window",), "random": ("seed",)}
EVICT_DUO_RECENT = 4  # DuoAttention's streaming heads: S sinks + this many newest rows (the paper: 64 + 256 on 32k)
EVICT_DUO_DRAWS = 8  # head_ranking's calibration draws (the induction probe's seeded random tokens, seeds 0..7)
# KVzip's re-read starts with a repeat request (the paper's prompt); a base model reads it as plain text
KVZIP_REPEAT_PROMPT = "\n\nRepeat the previous context exactly.\n"
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


def check_sink_tokens(value, *, text: bool = False) -> int:
    """StreamingLLM's S, 0..EVICT_MAX_SINKS: the one rule the widget, a link (text=True: its query value), the
    browser's value and the CLI go through; the message names the setting."""
    return SINK_TOKENS.check(value, error=EvictionError, text=text)


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
    n_spans: int = 16
    context_tokens: int = 160  # loss: this much context is prefilled and pruned ...
    continuation_tokens: int = 48  # ... then the next tokens are fed and their next-token loss measured
    n_passages: int = 16  # the unit of the loss's interval: passages apart on the default text, never overlapping
    sink_tokens: int = SINK_TOKENS.default  # StreamingLLM's S
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
        sinks = check_sink_tokens(self.sink_tokens)
        window = check_int_in_range(self.snap_window, 1, EVICT_MAX_SNAP_WINDOW, N_("SnapKV observation window"),
                                    error=e)
        seed = check_int_in_range(self.seed, 0, 2**31 - 1, N_("random seed"), error=e)
        return EvictSettings(half, spans, context, cont, passages, sinks, window, seed)

    def for_policy(self, policy: str) -> EvictSettings:
        """These settings with the fields `policy` does not read set to their defaults (EVICT_POLICY_SETTINGS;
        "quantized": the formats read none): the key of its cached points, so that a new S re-measures only the
        policies that read S. The points are the same: the fields reset are never read for it."""
        default = EvictSettings()
        read = EVICT_POLICY_SETTINGS.get(policy, ())
        return replace(self, **{name: getattr(default, name) for names in EVICT_POLICY_SETTINGS.values()
                                for name in names if name not in read})


def policy_label(policy: str) -> str:
    """A policy's (or a quantized format's) name in the interface language, with what it scores."""
    labels = {**EVICT_POLICY_LABELS, **EVICT_QUANT_LABELS}
    return _(labels[policy]) if policy in labels else policy


def policy_short(policy: str) -> str:
    """A policy's (or a quantized format's) short name, for legends and sentences."""
    name = EVICT_POLICY_SHORT.get(policy, policy)
    return _(name) if name in _TRANSLATED_SHORT else name


def duo_split(n_heads: int, seq_len: int, rows: int, settings: EvictSettings) -> tuple[int, int]:
    """DuoAttention at a budget of `rows` rows per KV head on average (the other policies' rows), over n_heads KV
    heads (all layers): (retrieval heads, rows each streaming head keeps). A streaming head keeps S + EVICT_DUO_RECENT
    rows (fewer when the budget is smaller: then every head streams, the StreamingLLM rule); the retrieval heads are
    as many as the rest of the budget holds whole: the bytes never exceed the budget's."""
    stream = min(rows, settings.sink_tokens + EVICT_DUO_RECENT, seq_len)
    if stream >= seq_len:
        return n_heads, seq_len
    return n_heads * (rows - stream) // (seq_len - stream), stream


def policy_note(policy: str, rows: int, settings: EvictSettings, retrieval_heads: int | None = None) -> str | None:
    """What a policy keeps where its definition runs out of room, or None: SnapKV below its window, DuoAttention
    with no room for a retrieval head (retrieval_heads: how many the grid holds)."""
    if policy in ("duoattention", "duo_probe") and retrieval_heads == 0:
        return _("At {rows} rows per head on average the budget holds no retrieval head: every head streams, "
                 "keeping the rows StreamingLLM keeps with the same S.").format(rows=rows)
    if policy == "snapkv" and rows < settings.snap_window:
        return _("SnapKV always keeps its observation window of {window} rows; at {rows} rows the budget is "
                 "smaller than the window, so it keeps the window's newest {rows} rows: exactly the recent "
                 "window.").format(window=settings.snap_window, rows=rows)
    return None


def _pm(p: EvictionPoint, metric: str) -> str:
    """'31% ± 4' (copy accuracy, over the spans) or '+0.066 ± 0.041' (loss change, nats, over the passages): the
    value and its 95% half-width."""
    if metric == "copy":
        return f"{p.copy_accuracy:.0%} ± {100 * p.copy_half_width:.0f}"
    return f"{p.loss_change_nats:+.3f} ± {p.loss_change_half_width:.3f}"


def paired_difference(a: EvictionPoint, b: EvictionPoint, metric: str) -> tuple[float, float]:
    """The 95% interval of a - b over the units both were measured on (copy: each span's accuracy; loss: each
    passage's loss change), kvviz.measure's paired_interval."""
    return paired_interval(a.units(metric), b.units(metric))


def inside_noise(a: EvictionPoint, b: EvictionPoint, metric: str) -> bool:
    """kvviz.measure's rule on two points of one sweep: the paired interval of their difference, unit by unit,
    holds 0, so the data name no better side."""
    return paired_inside_noise(a.units(metric), b.units(metric))


@dataclass(frozen=True)
class Claim:
    """One comparison a takeaway makes: points a and b on a measure, and whether it calls them different (the
    test holds every claim against its paired interval)."""

    a: EvictionPoint
    b: EvictionPoint
    metric: str  # "copy" | "loss"
    differs: bool


class _Judge:
    """The one rule (inside_noise), with every verdict it gives recorded as a Claim."""

    def __init__(self, claims: list[Claim] | None):
        self.claims = claims

    def inside(self, a: EvictionPoint, b: EvictionPoint, metric: str) -> bool:
        verdict = inside_noise(a, b, metric)
        if self.claims is not None:
            self.claims.append(Claim(a, b, metric, not verdict))
        return verdict


def _names(points, metric: str = "copy", settings: EvictSettings | None = None) -> str:
    """Policies' short names as a list in the interface language (Chinese lists them with 、); a point that holds
    fewer bytes than its budget gives the others (DuoAttention: whole heads only) says so (_named)."""
    return _(", ").join(p if isinstance(p, str) and settings is None else
                        policy_short(p) if isinstance(p, str) else _named(p, metric, settings) for p in points)


def _named(p: EvictionPoint, metric: str, settings: EvictSettings | None) -> str:
    """A point's short name, with its real share of the bytes where that is below what every other policy holds
    at the same budget (where the measure was taken: the copy span's cache, or the loss context's), so that no
    sentence compares it at a budget it does not fill."""
    name = policy_short(p.policy)
    if p.kind != "eviction" or settings is None:
        return name
    if metric == "copy":
        share, rows = p.bytes_fraction, p.rows_full
    else:
        share, rows = p.loss_bytes_fraction, settings.context_tokens
    if share == share and share < rows_for_budget(p.keep_percent, rows) / rows - 1e-9:  # NaN: not recorded
        return _("{policy} (holding only {share:.1%} of the bytes)").format(policy=name, share=share)
    return name


def _family(policy: str) -> str:
    """A policy and its named variants are one family (kvzip and kvzip_head; duoattention and duo_probe)."""
    return EVICT_VARIANTS.get(policy, policy)


def _best_in_bytes(sweep: EvictionSweep, q: EvictionPoint, leave_out: str | None = None) -> EvictionPoint | None:
    """The evicting point with the best copy accuracy that fits in q's bytes (the fewest bytes among equals),
    leaving out one policy family."""
    fits = [p for p in sweep.points if p.kind == "eviction" and p.policy != "full" and p.kv_bytes_kept <= q.kv_bytes_kept
            and (leave_out is None or _family(p.policy) != leave_out)]
    return max(fits, key=lambda p: (p.copy_accuracy, -p.kv_bytes_kept)) if fits else None


def _quant_verdict(judge: _Judge, q: EvictionPoint, rival: EvictionPoint) -> str:
    if judge.inside(q, rival, "copy"):
        return _("inside the noise")
    return _("quantizing wins") if q.copy_accuracy > rival.copy_accuracy else _("evicting wins")


def eviction_takeaways(sweep: EvictionSweep, claims: list[Claim] | None = None) -> list[str]:
    """What a class takes away, computed from the sweep (never typed in): which policies hold up at which
    budget, where quantizing beats evicting at equal bytes, and what the sink rows are worth. Every comparison
    goes through kvviz.measure's paired rule (inside_noise): where the paired interval of a difference holds 0, no
    side is named. `claims`, when given, receives every comparison made (Claim)."""
    judge = _Judge(claims)
    full = sweep.point("full", 100)
    settings = sweep.settings
    evicting = [p for p in EVICT_POLICIES[1:] if sweep.curve(p)]
    lines = [_("Every ± is an interval at 95%: the copy accuracy's over the {spans} spans, the loss change's over "
               "the {passages} passages (each against the full cache on the same passage). A side is "
               "named only where the paired interval of the difference, unit by unit, excludes 0; otherwise the "
               "difference is inside the noise.").format(spans=full.n_spans, passages=full.n_passages)]
    holds = {}
    for policy in evicting:
        inside = [p for p in sweep.curve(policy) if p.keep_percent < 100 and judge.inside(p, full, "copy")]
        if inside:
            holds[policy] = min(inside, key=lambda p: p.keep_percent)
    if holds:
        best_keep = min(p.keep_percent for p in holds.values())
        lines.append(_("Copying stays inside the noise of the full cache's {acc} down to {keep}% of the bytes with "
                       "{policies}.").format(acc=_pm(full, "copy"), keep=best_keep, policies=_names(
                           [p for p in holds.values() if p.keep_percent == best_keep], "copy", settings)))
        if len({_family(p) for p in holds}) == 1:  # the conclusion rests on one policy: name what it rests on
            lines.append(_("Only {policies} keep copying inside that noise once rows are evicted; every other "
                           "policy falls below it.").format(policies=_names(list(holds))))
    else:
        lines.append(_("No policy keeps copying inside the noise of the full cache's {acc} once rows are evicted: "
                       "the repeat needs the rows of the whole first copy, and every policy throws some of them "
                       "away.").format(acc=_pm(full, "copy")))
    budgets = {p.keep_percent for p in sweep.curve("random")}
    for keep in (50, 25, 10, 5):
        if keep not in budgets:
            continue
        rand = sweep.point("random", keep)
        at = [sweep.point(policy, keep) for policy in evicting if policy != "random"]
        top = max(at, key=lambda p: p.copy_accuracy)
        tied = [p for p in at if p is not top and judge.inside(p, top, "copy")]
        low = min(at, key=lambda p: p.loss_change_nats)
        high = max(at, key=lambda p: p.loss_change_nats)
        copy_part = _("At {keep}%: best copying {policy} {acc}").format(
            keep=keep, policy=_named(top, "copy", settings), acc=_pm(top, "copy"))
        if tied:
            copy_part += _(", with {others} inside its noise").format(others=_names(tied, "copy", settings))
        copy_part += (_("; the random control's {rand} is inside the noise of it") if judge.inside(rand, top, "copy")
                      else _("; the random control's {rand} is below it")).format(rand=_pm(rand, "copy"))
        loss_part = (_("loss change from {low} nats ({low_policy}) to {high} ({high_policy}), inside the noise of "
                       "each other") if judge.inside(low, high, "loss") else
                     _("loss change from {low} nats ({low_policy}) to {high} ({high_policy}), apart beyond the "
                       "noise")).format(
            low=_pm(low, "loss"), low_policy=_named(low, "loss", settings), high=_pm(high, "loss"),
            high_policy=_named(high, "loss", settings))
        lines.append(copy_part + _("; ") + loss_part + ".")
    wins = []
    for q in sweep.quantized:
        # the evicting policies' best copy accuracy at the largest budget that fits in the format's bytes
        rival = _best_in_bytes(sweep, q)
        if rival is None:
            continue
        verdict = _quant_verdict(judge, q, rival)
        wins.append((q, verdict == _("quantizing wins"), rival))
        line = _("{format} ({share:.0%} of the bytes) copies {q_acc}; the best eviction in no more bytes, {policy} "
                 "at {keep}%, copies {e_acc}: {verdict}.").format(
            format=policy_short(q.policy), share=q.bytes_fraction, q_acc=_pm(q, "copy"),
            policy=_named(rival, "copy", settings), keep=rival.keep_percent, e_acc=_pm(rival, "copy"),
            verdict=verdict)
        other = _best_in_bytes(sweep, q, leave_out=_family(rival.policy))
        if other is not None and (other_verdict := _quant_verdict(judge, q, other)) != verdict:
            line += " " + _("This rests on {policy}: without it, the best is {other} at {keep}% with {acc}: "
                            "{verdict}.").format(policy=policy_short(rival.policy),
                                                 other=_named(other, "copy", settings), keep=other.keep_percent,
                                                 acc=_pm(other, "copy"), verdict=other_verdict)
        lines.append(line)
    if wins:
        won = sum(w for _q, w, _r in wins)
        summary = ngettext("Quantizing beats evicting at equal bytes, beyond the noise, for {won} format of {n}.",
                           "Quantizing beats evicting at equal bytes, beyond the noise, for {won} formats of {n}.",
                           won).format(won=won, n=len(wins))
        # the policy most often the rival: without its family, how many would it be?
        rivals = [_family(r.policy) for _q, _w, r in wins]
        key = max(set(rivals), key=rivals.count)
        won_without = 0
        for q, _w, _r in wins:
            other = _best_in_bytes(sweep, q, leave_out=key)
            won_without += other is None or _quant_verdict(judge, q, other) == _("quantizing wins")
        if won_without != won:
            summary += " " + ngettext("This count rests on {policy}: without it, {won} format of {n}.",
                                      "This count rests on {policy}: without it, {won} formats of {n}.",
                                      won_without).format(policy=policy_short(key), won=won_without, n=len(wins))
        lines.append(summary)
    ranking = sweep.head_ranking
    if ranking is not None and ranking.effects:
        draws = len(ranking.effects)
        k = duo_split(len(ranking.heads), settings.half_tokens, rows_for_budget(50, settings.half_tokens),
                      settings)[0]
        top = ranking.order[: max(k, 1)]
        lines.append(ngettext(
            "DuoAttention's heads, ranked by what each does when it alone streams (the change in the model's "
            "next-token predictions over {draws} calibration draw): {heads}. The {k} that retrieve at 50% are the "
            "same heads in {agree} of {draws} draws; the last of them, {last}, ranks between {best} and {worst}.",
            "DuoAttention's heads, ranked by what each does when it alone streams (the change in the model's "
            "next-token predictions over {draws} calibration draws): {heads}. The {k} that retrieve at 50% are the "
            "same heads in {agree} of {draws} draws; the last of them, {last}, ranks between {best} and {worst}.",
            draws).format(draws=draws, heads=_(", ").join(f"{layer}.{head}" for layer, head in top), k=len(top),
                          last="{}.{}".format(*top[-1]), agree=ranking.top_set_agreement(len(top)), best=ranking.rank_range(top[-1])[0],
                          worst=ranking.rank_range(top[-1])[1]))
    s = sweep.settings.sink_tokens
    for keep in (75, 25, 5):  # a large, a middle and the smallest budget
        if keep not in {p.keep_percent for p in sweep.curve("streaming")} & {p.keep_percent for p in
                                                                             sweep.curve("recent")}:
            continue
        without, with_ = sweep.point("recent", keep), sweep.point("streaming", keep)
        verdicts = [_("copying inside the noise") if judge.inside(without, with_, "copy") else
                    _("copying differs beyond the noise"),
                    _("loss inside the noise") if judge.inside(without, with_, "loss") else
                    _("loss differs beyond the noise")]
        lines.append(_("Sinks at {keep}%: the window alone (S = 0) copies {a0:.0%} with loss change {l0:+.3f} "
                       "nats; with the first S = {s} rows kept, {a1:.0%} and {l1:+.3f} nats ({verdicts}).").format(
            keep=keep, a0=without.copy_accuracy, l0=without.loss_change_nats, s=s, a1=with_.copy_accuracy,
            l1=with_.loss_change_nats, verdicts=_("; ").join(verdicts)))
    negative = [p for p in sweep.points if p.policy != "full" and p.loss_change_nats < 0]
    lower = [p for p in negative if not judge.inside(p, full, "loss")]
    if lower:
        best = min(lower, key=lambda p: p.loss_change_nats)
        lines.append(_("Some points lower the loss beyond the noise (best: {policy} at {keep}%, {change} nats): "
                       "dropping rows can also drop context that misled the model on this text; on other text the "
                       "same policy may raise it.").format(policy=_named(best, "loss", settings), keep=best.keep_percent,
                                                           change=_pm(best, "loss")))
    elif negative:
        lines.append(_("The negative loss changes are inside the noise of zero: these passages are too few to say "
                       "that evicting rows helps this model."))
    return lines


Progress = Callable[[float, str], None]


class Prefill:
    """A real prefill of a batch: its cache (float32, [batch_size, num_kv_heads, seq_len, head_dim] per layer) and
    attention weights ([batch_size, num_heads, seq_len, seq_len] per layer), kept read-only: every policy prunes a
    copy."""

    def __init__(self, loaded: LoadedModel, input_ids: torch.Tensor):
        import torch
        from transformers import DynamicCache

        from kvviz.model.loading import MODEL_LOCK

        if loaded.model.config._attn_implementation != "eager":
            raise EvictionError("eviction needs a model loaded with eager attention (it reads attention weights)")
        self.loaded = loaded
        self.input_ids = input_ids  # [batch_size, seq_len]
        with MODEL_LOCK, torch.inference_mode():
            out = loaded.model(input_ids=input_ids, past_key_values=DynamicCache(config=loaded.model.config),
                               use_cache=True, output_attentions=True)
        self.cache: DynamicCache = out.past_key_values
        self.attentions = [a.float() for a in out.attentions]  # per layer [batch_size, num_heads, seq_len, seq_len]

        self._reread: list[torch.Tensor] | None = None

    @property
    def seq_len(self) -> int:
        return self.input_ids.shape[1]

    def reread_attentions(self) -> list[torch.Tensor]:
        """KVzip's reconstruction pass, once: the repeat prompt and the input again, fed on top of a copy of this
        cache at the continued positions, in chunks that fit the model's positions (KVzip re-reads long contexts
        chunk by chunk too). Per layer [batch_size, num_heads, seq_len]: the most attention any re-reading query
        gave each of the prefill's rows (the rows the pass appends are left out).
        Where a second chunk is needed (the 160-token loss context: 77 + 77 + 6 tokens) this differs from KVzip's
        code (kvpress's port): there every chunk, the first included, is scored by a softmax over the first 4 rows,
        that chunk's own rows of the context and the re-read alone, not over the whole cache; every chunk after the
        first is prompted "Repeat the part of the previous context exactly, starting with" + the previous chunk's
        last 8 tokens; kvpress also pins the first 4 rows' score at 1. Here every chunk gets the first prompt and
        the whole cache's softmax. A one-chunk span (the 64-token copy test: its own rows are the whole cache) is
        scored as the code scores it."""
        if self._reread is None:
            import torch
            from transformers import DynamicCache

            from kvviz.model.loading import MODEL_LOCK

            loaded, b, s = self.loaded, self.input_ids.shape[0], self.seq_len
            prompt = torch.tensor(loaded.tokenizer(KVZIP_REPEAT_PROMPT).input_ids, dtype=torch.long).expand(b, -1)
            chunk = min(s, loaded.info.n_positions - s - prompt.shape[1])
            if chunk < 1:
                raise EvictionError(_("KVzip re-reads the context after it: {need} positions, where the model has "
                                      "{have}; lower the loss context.").format(need=2 * s + prompt.shape[1],
                                                                               have=loaded.info.n_positions))
            best = None
            for start in range(0, s, chunk):
                feed = torch.cat([prompt, self.input_ids[:, start:start + chunk]], dim=1)
                cache = DynamicCache(config=loaded.model.config)
                for i, layer in enumerate(self.cache.layers):  # the next update concatenates: this cache stays intact
                    cache.update(layer.keys, layer.values, i)
                position_ids = torch.arange(s, s + feed.shape[1])[None, :].expand(b, -1)
                with MODEL_LOCK, torch.inference_mode():
                    out = loaded.model(input_ids=feed, past_key_values=cache, position_ids=position_ids,
                                       use_cache=True, output_attentions=True)
                got = [a[..., :s].float().amax(dim=-2) for a in out.attentions]  # [batch_size, num_heads, seq_len]
                best = got if best is None else [torch.maximum(x, y) for x, y in zip(best, got, strict=True)]
            self._reread = best
        return self._reread


def prefill(loaded: LoadedModel, input_ids: torch.Tensor) -> Prefill:
    return Prefill(loaded, input_ids)


# ----- scores: higher = keep ----------------------------------------------------------------------------------
def _per_kv_head(attn: torch.Tensor, n_kv_heads: int) -> torch.Tensor:
    """[batch_size, num_heads, seq_len, seq_len] -> [batch_size, num_kv_heads, seq_len, seq_len]: the query heads
    sharing a KV head, averaged (GQA; MHA: unchanged)."""
    b, hq, s, _s = attn.shape
    return attn.reshape(b, n_kv_heads, hq // n_kv_heads, s, s).mean(2)


def _scores(policy: str, pre: Prefill, layer: int, settings: EvictSettings) -> torch.Tensor:
    """[batch_size, num_kv_heads, seq_len] float64 scores of one layer's rows. Positional policies score by position,
    so that the same top-k selection serves every policy; ties never decide a pick (scores are distinct or broken by
    position)."""
    import torch
    import torch.nn.functional as F

    keys = pre.cache.layers[layer].keys  # [batch_size, num_kv_heads, seq_len, head_dim]
    b, hkv, s, _d = keys.shape
    position = torch.arange(s, dtype=torch.float64).expand(b, hkv, s)
    if policy in ("full", "recent"):
        return position.clone()  # newest first
    if policy == "streaming":  # the sinks outrank every window row, the earliest first: a budget of at most S
        # rows keeps positions 0..rows-1 (position 0 is the sink StreamingLLM exists to keep)
        return torch.where(position < settings.sink_tokens, 2.0 * s - position, position)
    if policy == "random":
        gen = torch.Generator().manual_seed(settings.seed * 1009 + layer)  # a different draw per layer
        return torch.rand((b, hkv, s), generator=gen, dtype=torch.float64)
    if policy == "key_norm":
        return -keys.double().norm(dim=-1)  # smallest norm kept
    if policy == "keydiff":  # the least like the anchor kept: the mean of the cached keys at unit length (kvpress's
        k = keys.double()  # KeyDiffPress computes the paper's anchor so)
        return -F.cosine_similarity(k, F.normalize(k, dim=-1).mean(dim=2, keepdim=True), dim=-1)
    if policy in ("kvzip", "kvzip_head"):  # the most attention any re-reading query of the KV head's query heads
        reread = pre.reread_attentions()[layer].double()  # gives the row; [batch_size, num_heads, seq_len]
        return reread.reshape(b, hkv, -1, s).amax(dim=2)
    attn = pre.attentions[layer].double()  # [batch_size, num_heads, seq_len, seq_len]
    if policy in ("h2o", "h2o_heavy"):  # kept_rows splits the budget for h2o
        return _per_kv_head(attn, hkv).sum(dim=-2)  # attention each row received, summed over all queries
    if policy == "tova":
        last = attn[:, :, -1, :].mean(dim=1)  # [batch_size, seq_len]: the newest query, averaged over the layer's heads
        return last[:, None, :].expand(b, hkv, s).clone()
    if policy == "snapkv":
        window = min(settings.snap_window, s)
        prefix = s - window
        # the window outranks the prefix, its newest rows first (a budget under the window keeps those)
        scores = position + 2.0 * s
        if prefix:  # as SnapKV's code: the window's queries on the prefix only, padding counted in the average
            observed = _per_kv_head(attn, hkv)[:, :, prefix:, :prefix].sum(dim=-2)  # [batch_size, num_kv_heads, prefix]
            pooled = F.avg_pool1d(observed.reshape(b * hkv, 1, prefix), EVICT_SNAP_POOL, stride=1,
                                  padding=EVICT_SNAP_POOL // 2).reshape(b, hkv, prefix)
            scores[..., :prefix] = pooled  # at most `window` (a sum of window attention rows), below 2 s
        return scores
    raise EvictionError(f"no scorer for {policy!r}")


def keep_order(policy: str, pre: Prefill, settings: EvictSettings) -> list[torch.Tensor]:
    """Per layer [batch_size, num_kv_heads, seq_len] long: positions from most to least worth keeping. Any budget
    keeps a prefix of it."""
    import torch

    check_policy(policy)
    if policy in EVICT_RAGGED:
        raise EvictionError(f"{policy} keeps different rows per head: use evict()")
    return [torch.argsort(_scores(policy, pre, i, settings), dim=-1, descending=True, stable=True)
            for i in range(len(pre.cache.layers))]


def keep_rows(order: list[torch.Tensor], rows: int) -> list[torch.Tensor]:
    """Per layer [batch_size, num_kv_heads, rows] long: the first `rows` of the order, sorted back into position
    order."""
    import torch

    return [torch.sort(o[..., :rows], dim=-1).values for o in order]


def kept_rows(policy: str, order: list[torch.Tensor], rows: int) -> list[torch.Tensor]:
    """Per layer [batch_size, num_kv_heads, rows] long, in position order: what `policy` keeps at `rows` given its
    keep_order. Every policy keeps a prefix of its order but H2O, whose recent half grows with the budget: the
    newest rows - rows // 2, plus the rows // 2 best of the order among the rows before them."""
    import torch

    if policy != "h2o":
        return keep_rows(order, rows)
    heavy = rows // 2
    out = []
    for o in order:
        b, h, s = o.shape
        recent = rows - heavy
        older = o[o < s - recent].reshape(b, h, s - recent)  # the order, the recent rows left out
        newest = torch.arange(s - recent, s).expand(b, h, recent)
        out.append(torch.sort(torch.cat([older[..., :heavy], newest], dim=-1), dim=-1).values)
    return out


def prune(pre: Prefill, kept: list[torch.Tensor]) -> DynamicCache:
    """A new DynamicCache holding only the kept rows of every layer and KV head (the prefill's stays untouched)."""
    import torch
    from transformers import DynamicCache

    pruned = DynamicCache(config=pre.loaded.model.config)
    for i, (layer, idx) in enumerate(zip(pre.cache.layers, kept, strict=True)):
        index = idx[..., None].expand(-1, -1, -1, layer.keys.shape[-1])  # [batch_size, num_kv_heads, rows, head_dim]
        pruned.update(torch.gather(layer.keys, 2, index).contiguous(),
                      torch.gather(layer.values, 2, index).contiguous(), i)
    return pruned


class HeadSplitCache:
    """A cache whose KV heads keep different rows (DuoAttention, KVzip ranked across heads): every sequence's
    layers' KV heads stored as separate K and V tensors [rows of that head, head_dim], so its bytes are those rows'
    and no more. Attention reads it through `view()`: a DynamicCache padded to the longest head, plus which of its
    rows are real.

    kept: [layer][kv head] positions kept, ascending, the same for every sequence of the batch (DuoAttention: the
    heads are the model's); or per_sequence: [sequence][layer][kv head], each sequence its own (KVzip's global
    ranking scores each sequence's rows)."""

    def __init__(self, pre: Prefill, kept: list[list[torch.Tensor]] | None = None,
                 per_sequence: list[list[list[torch.Tensor]]] | None = None):
        self.config = pre.loaded.model.config
        b = pre.input_ids.shape[0]
        self.per_sequence = per_sequence if per_sequence is not None else [kept] * b
        self.kept = self.per_sequence[0]  # [layer][kv head] positions kept by the first sequence (all, if shared)
        self.heads = [[[(layer.keys[i, h, idx].contiguous(), layer.values[i, h, idx].contiguous())
                        for h, idx in enumerate(per_head)]
                       for layer, per_head in zip(pre.cache.layers, seq, strict=True)]
                      for i, seq in enumerate(self.per_sequence)]  # [sequence][layer][kv head] (K, V)

    @property
    def nbytes(self) -> int:
        return sum(k.nbytes + v.nbytes for seq in self.heads for layer in seq for k, v in layer)

    def layer_nbytes(self, sequence: int = 0) -> list[int]:
        """Each layer's bytes, one sequence."""
        return [sum(k.nbytes + v.nbytes for k, v in layer) for layer in self.heads[sequence]]

    def rows_per_head(self) -> int:
        """Rows kept per KV head on average, over every layer and sequence (floor): what the bytes hold."""
        counts = [k.shape[0] for seq in self.heads for layer in seq for k, _v in layer]
        return sum(counts) // len(counts)

    def view(self) -> tuple[DynamicCache, list[torch.Tensor]]:
        """(the padded cache, per layer [batch_size, num_kv_heads, rows] bool: True = a stored row, False =
        padding). The view is compute's working copy, made per pass and dropped; the bytes held are the heads'
        (nbytes)."""
        import torch
        from transformers import DynamicCache

        cache = DynamicCache(config=self.config)
        real = []
        # one padded length for every layer: transformers sizes one attention mask from the first layer's cache
        rows = max(k.shape[0] for seq in self.heads for layer in seq for k, _v in layer)
        b, n_layers = len(self.heads), len(self.heads[0])
        for i in range(n_layers):
            first = self.heads[0][i][0][0]
            hkv, d = len(self.heads[0][i]), first.shape[-1]
            keys, values = (torch.zeros(b, hkv, rows, d, dtype=first.dtype) for _ in range(2))
            ok = torch.zeros(b, hkv, rows, dtype=torch.bool)
            for n, seq in enumerate(self.heads):
                for h, (k, v) in enumerate(seq[i]):
                    keys[n, h, :k.shape[0]], values[n, h, :k.shape[0]], ok[n, h, :k.shape[0]] = k, v, True
            cache.update(keys, values, i)
            real.append(ok)
        return cache, real


def cache_nbytes(cache: DynamicCache | HeadSplitCache) -> int:
    """The bytes the cache's K and V tensors occupy (their own nbytes), all layers."""
    if isinstance(cache, HeadSplitCache):
        return cache.nbytes
    return sum(layer.keys.nbytes + layer.values.nbytes for layer in cache.layers)


def retrieval_order(loaded: LoadedModel) -> list[tuple[int, int]]:
    """(layer, KV head), the most retrieving first: each KV head scores the best induction score of its query heads
    on kvviz.step's induction probe (seeded random tokens, then the same again: the copy probe of the attention-
    patterns page), computed once per model; ties by layer and head. DuoAttention learns a gate per head on
    synthetic passkey data instead; on these small models the probe names the heads that read far back."""
    from kvviz.step.patterns import probe_induction_scores

    info = loaded.info
    group = info.n_head // info.n_kv_heads
    scores = {(layer, h): float(s[h * group:(h + 1) * group].max())
              for layer, s in enumerate(probe_induction_scores(loaded)) for h in range(info.n_kv_heads)}
    return sorted(scores, key=lambda lh: (-scores[lh], lh))


# Per shared model object, weakly (as kvviz.step.patterns keeps its probe's): the ranking goes with the model.
_HEAD_RANKINGS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def head_ranking(loaded: LoadedModel, sink_tokens: int = SINK_TOKENS.default,
                 draws: int = EVICT_DUO_DRAWS) -> HeadRanking:
    """DuoAttention's KV heads ranked by what they do, the closest offline stand-in for the paper's learned gates
    (which are trained to keep the full model's outputs while pushing heads to stream): each KV head in turn
    streams alone (keeps the first S rows + the EVICT_DUO_RECENT newest, every other head keeps every row) and its
    effect is the change in the model's output, the mean KL divergence (nats) of the next-token distributions
    from the full cache's. The calibration is the paper's kind of data, synthetic retrieval: each draw is the
    induction probe's seeded random tokens (seed = the draw) prefilled, then fed again after the pruned cache, as
    the copy test feeds its repeat. Computed once per model and S."""
    import torch
    import torch.nn.functional as F

    from kvviz.step.pattern_records import PROBE_HALF_TOKENS, probe_token_ids

    key = (sink_tokens, draws)
    known = _HEAD_RANKINGS.setdefault(loaded.model, {})
    if key in known:
        return known[key]
    info = loaded.info
    ids = torch.tensor([probe_token_ids(info.vocab_size, PROBE_HALF_TOKENS, seed) for seed in range(draws)],
                       dtype=torch.long)  # [draws, 2 x half]
    half = PROBE_HALF_TOKENS
    pre = prefill(loaded, ids[:, :half])
    n_layers, hkv = len(pre.cache.layers), pre.cache.layers[0].keys.shape[1]
    settings = EvictSettings(sink_tokens=sink_tokens)
    stream = min(sink_tokens + EVICT_DUO_RECENT, half)
    streaming = torch.sort(keep_order("streaming", pre, settings)[0][0, 0, :stream]).values
    everything = torch.arange(half)
    full = F.log_softmax(continue_from(loaded, HeadSplitCache(pre, [[everything] * hkv] * n_layers), ids[:, half:],
                                       half).double(), dim=-1)  # [draws, half, vocab]
    heads = [(layer, h) for layer in range(n_layers) for h in range(hkv)]
    columns = []
    for layer, h in heads:
        kept = [[streaming if (i, j) == (layer, h) else everything for j in range(hkv)] for i in range(n_layers)]
        got = F.log_softmax(continue_from(loaded, HeadSplitCache(pre, kept), ids[:, half:], half).double(), dim=-1)
        kl = (full.exp() * (full - got)).sum(-1).mean(-1)  # [draws]: KL(full || streaming head), mean over tokens
        columns.append(kl.tolist())
    effects = tuple(tuple(float(columns[c][d]) for c in range(len(heads))) for d in range(draws))
    known[key] = ranking = HeadRanking(effects, tuple(heads), N_("the induction probe's random tokens, repeated"))
    return ranking


def duo_kept(pre: Prefill, rows: int, settings: EvictSettings,
             order: list[tuple[int, int]] | None = None) -> list[list[torch.Tensor]]:
    """[layer][kv head] positions DuoAttention keeps at `rows` per head on average (duo_split): all of them for the
    retrieval heads, StreamingLLM's first S + newest rows for the streaming heads. The same for every sequence of
    the batch (the heads are the model's, the positions are positions). `order`: the heads, most retrieving first
    (default: head_ranking's, by what each head does)."""
    import torch

    n_layers, hkv = len(pre.cache.layers), pre.cache.layers[0].keys.shape[1]
    retrieval, stream = duo_split(n_layers * hkv, pre.seq_len, rows, settings)
    if order is None:
        order = list(head_ranking(pre.loaded, settings.sink_tokens).order)
    heads = set(order[:retrieval])
    streaming = torch.sort(keep_order("streaming", pre, settings)[0][0, 0, :stream]).values
    everything = torch.arange(pre.seq_len)
    return [[everything if (i, h) in heads else streaming for h in range(hkv)] for i in range(n_layers)]


def kvzip_kept(pre: Prefill, rows: int, settings: EvictSettings) -> list[list[list[torch.Tensor]]]:
    """[sequence][layer][kv head] positions KVzip keeps at the bytes of `rows` rows per layer and KV head, ranked
    as the paper allocates: every row of every layer and KV head competes on its re-reading score, and the best
    rows x layers x KV heads of the sequence's cache stay (ties to the earlier layer, head and position)."""
    import torch

    scores = torch.stack([_scores("kvzip", pre, i, settings) for i in range(len(pre.cache.layers))], dim=1)
    b, n_layers, hkv, s = scores.shape  # [batch_size, layers, num_kv_heads, seq_len]
    budget = rows * n_layers * hkv
    order = torch.argsort(scores.reshape(b, -1), dim=-1, descending=True, stable=True)[:, :budget]
    out = []
    for i in range(b):
        mask = torch.zeros(n_layers * hkv * s, dtype=torch.bool)
        mask[order[i]] = True
        mask = mask.reshape(n_layers, hkv, s)
        out.append([[torch.nonzero(mask[layer, h]).flatten() for h in range(hkv)] for layer in range(n_layers)])
    return out


def evict(policy: str, pre: Prefill, settings: EvictSettings, rows: int,
          order: list[torch.Tensor] | None = None) -> DynamicCache | HeadSplitCache:
    """The cache `policy` leaves at `rows` rows per layer and KV head (DuoAttention: on average), to continue from.
    `order`: the policy's keep_order, when already computed (a sweep computes it once for every budget). A ragged
    policy (EVICT_RAGGED) gives a HeadSplitCache."""
    if policy == "duoattention":
        return HeadSplitCache(pre, duo_kept(pre, rows, settings))
    if policy == "duo_probe":
        return HeadSplitCache(pre, duo_kept(pre, rows, settings, retrieval_order(pre.loaded)))
    if policy == "kvzip":
        return HeadSplitCache(pre, per_sequence=kvzip_kept(pre, rows, settings))
    return prune(pre, kept_rows(policy, keep_order(policy, pre, settings) if order is None else order, rows))


def _head_masks(model, real: list[torch.Tensor]):
    """While active, each attention layer i masks the padding of a HeadSplitCache view: a forward pre-hook takes
    the eager attention mask [batch_size, 1, q_len, rows + q_len] and sets -inf-like (the dtype's minimum, as
    transformers' masks do) on the columns of padded rows, per sequence and query head (each KV head's mask
    repeated over the query heads that share it). The new tokens' own columns keep their causal mask."""
    import contextlib

    import torch

    @contextlib.contextmanager
    def active():
        handles = []
        for module in model.modules():
            if getattr(module, "layer_idx", None) is None or not type(module).__name__.endswith("Attention"):
                continue

            def hook(mod, args, kwargs):
                mask, ok = kwargs["attention_mask"], real[mod.layer_idx]  # [b, 1, q, k], [b, num_kv_heads, rows]
                b, hkv, rows = ok.shape
                group = model.config.num_attention_heads // hkv
                new = torch.ones(b, hkv, mask.shape[-1] - rows, dtype=torch.bool)
                ok_all = torch.cat([ok, new], dim=2).repeat_interleave(group, dim=1)  # [b, num_heads, k]
                kwargs["attention_mask"] = mask.masked_fill(~ok_all[:, :, None, :], torch.finfo(mask.dtype).min)
                return args, kwargs

            handles.append(module.register_forward_pre_hook(hook, with_kwargs=True))
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

    return active()


def continue_from(loaded: LoadedModel, cache: DynamicCache | HeadSplitCache, input_ids: torch.Tensor,
                  original_len: int) -> torch.Tensor:
    """Feed input_ids [batch_size, q_len] after a (possibly pruned) cache of a prefill of `original_len` tokens:
    positions continue at original_len (module docstring: why). Returns the logits [batch_size, q_len, vocab_size]."""
    import contextlib

    import torch

    from kvviz.model.loading import MODEL_LOCK

    b, n = input_ids.shape
    position_ids = torch.arange(original_len, original_len + n)[None, :].expand(b, n)
    masks = contextlib.nullcontext()
    if isinstance(cache, HeadSplitCache):
        cache, real = cache.view()
        masks = _head_masks(loaded.model, real)
    with MODEL_LOCK, torch.inference_mode(), masks:
        return loaded.model(input_ids=input_ids, past_key_values=cache, position_ids=position_ids,
                            use_cache=True).logits


# ----- the texts the measures run on -------------------------------------------------------------------------
def text_ids(loaded: LoadedModel, text: str | None) -> torch.Tensor:
    import torch

    text = held_out_text() if text is None else text
    if not isinstance(text, str) or not text.strip():
        raise EvictionError(_("The text is empty: paste a few paragraphs (the default is held-out Shakespeare)."))
    return torch.tensor(loaded.tokenizer(text).input_ids, dtype=torch.long)


def _need(ids: torch.Tensor, tokens: int, what: str) -> None:
    if len(ids) < tokens:
        # The measures' lengths are fixed (the page offers no setting for them): only the text can change.
        raise EvictionError(ngettext("The text has {n} token; {what} needs at least {need}: paste a longer text.",
                                     "The text has {n} tokens; {what} needs at least {need}: paste a longer text.",
                                     len(ids)).format(n=len(ids), what=what, need=tokens))


def _evenly_spaced_starts(n_tokens: int, length: int, n: int) -> list[int]:
    """n start offsets of `length`-token windows, evenly spaced over n_tokens (first at 0, last at the end)."""
    last = n_tokens - length
    return [round(i * last / max(1, n - 1)) for i in range(n)]


def copy_sequences(ids: torch.Tensor, settings: EvictSettings) -> torch.Tensor:
    """(n_spans, 2L): held-out spans at evenly spaced offsets, each followed by itself: the rows
    kvviz.training.copying.held_out_repeats cuts for copying_accuracy (tests/test_eviction.py checks they are
    equal; not imported from there, because kvviz.training sits above the CLI and kvviz.cli imports this module)."""
    import torch

    _need(ids, settings.half_tokens, _("the copy test"))
    half = settings.half_tokens
    spans = torch.stack([ids[s:s + half] for s in _evenly_spaced_starts(len(ids), half, settings.n_spans)])
    return torch.cat([spans, spans], dim=1)


def loss_passages(ids: torch.Tensor, settings: EvictSettings) -> torch.Tensor:
    """(n_passages, context + continuation) at evenly spaced offsets of the text."""
    import torch

    length = settings.context_tokens + settings.continuation_tokens
    _need(ids, length, _("the loss measure"))
    return torch.stack([ids[s:s + length] for s in _evenly_spaced_starts(len(ids), length, settings.n_passages)])


# ----- the measures -------------------------------------------------------------------------------------------
def _empty_cache(loaded: LoadedModel) -> DynamicCache:
    from transformers import DynamicCache

    return DynamicCache(config=loaded.model.config)


def _copy_hits(loaded: LoadedModel, cache: DynamicCache, sequences: torch.Tensor) -> torch.Tensor:
    """[n_spans, L - 1] bool: the top-1 hits on targets L+1..2L-1 when the span is fed again after the (pruned)
    cache of its first copy."""
    half = sequences.shape[1] // 2
    logits = continue_from(loaded, cache, sequences[:, half:], half)  # [batch_size, q_len = half, vocab_size]
    return logits[:, :-1].argmax(-1) == sequences[:, half + 1:]  # logits[:, t] guesses token half + t + 1


def copy_correct(loaded: LoadedModel, cache: DynamicCache, sequences: torch.Tensor) -> tuple[int, int]:
    """Feed the span again after the (pruned) cache of its first copy; count top-1 hits on targets L+1..2L-1."""
    right = _copy_hits(loaded, cache, sequences)
    return int(right.sum()), right.numel()


def _token_losses(loaded: LoadedModel, cache: DynamicCache, passages: torch.Tensor, context: int) -> torch.Tensor:
    """[n_passages x (continuation - 1)] float64: the next-token loss (nats) of every prediction of the
    continuation after the (pruned) cache of the context (the continuation's first token is fed, not predicted)."""
    import torch.nn.functional as F

    logits = continue_from(loaded, cache, passages[:, context:], context)  # [batch_size, q_len, vocab_size]
    targets = passages[:, context + 1:]
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(), targets.reshape(-1),
                           reduction="none").double()


class SweepTexts:
    """The two prefills every point of a sweep starts from (computed once per model, text and settings)."""

    def __init__(self, loaded: LoadedModel, text: str | None, settings: EvictSettings):
        self.settings = settings = settings.checked(loaded.info.n_positions)
        ids = text_ids(loaded, text)
        self.n_tokens = len(ids)
        self.sequences = copy_sequences(ids, settings)
        self.passages = loss_passages(ids, settings)
        half = settings.half_tokens
        self.copy = prefill(loaded, self.sequences[:, :half])
        self.context = prefill(loaded, self.passages[:, :settings.context_tokens])
        self.full_bytes = cache_nbytes(self.copy.cache) // settings.n_spans  # one sequence
        self.token_losses_full = _token_losses(
            loaded, prune(self.context, keep_rows(keep_order("full", self.context, settings), settings.context_tokens)),
            self.passages, settings.context_tokens)
        self.loss_full = float(self.token_losses_full.mean())

    def point(self, policy: str, kind: str, keep: int, rows: int, kept_bytes: int, hits: torch.Tensor,
              token_losses: torch.Tensor, loss_bytes_fraction: float = float("nan")) -> EvictionPoint:
        """The record of one measured point: counts and means, and the units they come from (each span's hits,
        each passage's loss change against the full cache's)."""
        n = self.passages.shape[0]
        change = (token_losses.reshape(n, -1) - self.token_losses_full.reshape(n, -1)).mean(dim=1)  # [n_passages]
        return EvictionPoint(policy, kind, keep, rows, self.copy.seq_len, kept_bytes, self.full_bytes,
                             int(hits.sum()), hits.numel(), float(token_losses.mean()), self.loss_full,
                             tuple(int(x) for x in hits.reshape(self.sequences.shape[0], -1).sum(dim=1)),
                             tuple(float(x) for x in change), loss_bytes_fraction)


def policy_points(loaded: LoadedModel, texts: SweepTexts, policy: str,
                  keep_percents: tuple[int, ...] = EVICT_KEEP_PERCENTS) -> list[EvictionPoint]:
    """One policy at every budget (the full cache: once, at 100%)."""
    settings = texts.settings
    ragged = policy in EVICT_RAGGED  # no order: its heads keep different rows (duo_kept, kvzip_kept)
    copy_order = None if ragged else keep_order(policy, texts.copy, settings)
    context_order = None if ragged else keep_order(policy, texts.context, settings)
    points = []
    for keep in ((100,) if policy == "full" else tuple(check_keep_percent(k) for k in keep_percents)):
        rows = rows_for_budget(keep, texts.copy.seq_len)
        cache = evict(policy, texts.copy, settings, rows, copy_order)
        kept_bytes = cache_nbytes(cache) // settings.n_spans  # counted before the repeat appends its rows
        if ragged:  # the rows per KV head on average, which is what the bytes hold
            rows = cache.rows_per_head()
        hits = _copy_hits(loaded, cache, texts.sequences)
        context_rows = rows_for_budget(keep, settings.context_tokens)
        context_cache = evict(policy, texts.context, settings, context_rows, context_order)
        loss_share = cache_nbytes(context_cache) / cache_nbytes(texts.context.cache)
        losses = _token_losses(loaded, context_cache, texts.passages, settings.context_tokens)
        points.append(texts.point(policy, "eviction", keep, rows, kept_bytes, hits, losses, loss_share))
    return points


def _quantized_cache(pre: Prefill, scheme: str, group_size: int) -> tuple[DynamicCache, int]:
    """The prefill's cache stored in `scheme` and read back (kvviz.internals.quant.round_trip: its arithmetic,
    its bytes; fp8: _fp8_round_trip); the rows the measure appends afterwards stay full precision, as in
    QuantizedCache's residual window for its int backends (residual_length 128 > any span here)."""
    cache = _empty_cache(pre.loaded)
    stored = 0
    for i, layer in enumerate(pre.cache.layers):
        trip = _fp8_round_trip if scheme == "fp8" else lambda x: quant.round_trip(x, scheme, group_size)
        k_hat, k_bytes = trip(layer.keys)
        v_hat, v_bytes = trip(layer.values)
        cache.update(k_hat.to(layer.keys.dtype), v_hat.to(layer.values.dtype), i)
        stored += k_bytes + v_bytes
    return cache, stored


def _fp8_round_trip(x: torch.Tensor) -> tuple[torch.Tensor, int]:
    """x [batch_size, num_kv_heads, seq_len, head_dim] stored as transformers' Fp8QuantizedLayer stores a
    prefill (float8_e4m3fn, one float32 scale per tensor = amax / 448), each sequence with its own scale as one
    sequence per cache would have, and read back. Returns (x read back, bytes: 1 per number + 4 per scale)."""
    import torch

    fp8 = torch.float8_e4m3fn
    amax = x.abs().float().amax(dim=(1, 2, 3), keepdim=True)  # [batch_size, 1, 1, 1]
    scale = (amax / torch.finfo(fp8).max).clamp(min=torch.finfo(torch.float32).tiny)
    back = (x.float() / scale).to(fp8).float() * scale
    return back, x.numel() + 4 * x.shape[0]


def _fp8_run(loaded: LoadedModel, prefix: torch.Tensor, feed: torch.Tensor) -> tuple[torch.Tensor, int]:
    """transformers' own QuantizedCache(backend="fp8") (Fp8QuantizedLayer, no extra package): prefill `prefix`
    [1, seq_len] into it, then feed `feed` [1, q_len]: the fed rows are stored in fp8 too, at the prefill's scale.
    Returns the feed's logits [1, q_len, vocab_size] and the bytes the cache held after the prefill: 1 byte per
    number + one float32 scale for K and one for V per layer, read from its tensors.
    One sequence per cache: the scale is per tensor, so a batch would share one scale between sequences."""
    import torch
    from transformers import QuantizedCache

    from kvviz.model.loading import MODEL_LOCK

    cache = QuantizedCache(backend="fp8", config=loaded.model.config)
    with MODEL_LOCK, torch.inference_mode():
        loaded.model(input_ids=prefix, past_key_values=cache, use_cache=True)
        stored = sum(t.nbytes for layer in cache.layers
                     for t in (*layer._quantized_keys, *layer._quantized_values))  # (fp8 tensor, fp32 scale) x 2
        logits = loaded.model(input_ids=feed, past_key_values=cache, use_cache=True).logits
    return logits, stored


def _fp8_hf_point(loaded: LoadedModel, texts: SweepTexts) -> EvictionPoint:
    """transformers' own fp8 cache, measured sequence by sequence (another protocol: the appended rows in fp8)."""
    import torch
    import torch.nn.functional as F

    half, context = texts.settings.half_tokens, texts.settings.context_tokens
    hits, losses = [], []
    stored = 0
    for row in texts.sequences:
        logits, stored = _fp8_run(loaded, row[None, :half], row[None, half:])
        hits.append(logits[0, :-1].argmax(-1) == row[half + 1:])
    for row in texts.passages:
        logits, _bytes = _fp8_run(loaded, row[None, :context], row[None, context:])
        losses.append(F.cross_entropy(logits[0, :-1].float(), row[context + 1:], reduction="none").double())
    return texts.point("fp8-hf", "quantized", 100, half, stored, torch.stack(hits), torch.cat(losses))


def quant_points(loaded: LoadedModel, texts: SweepTexts, schemes: tuple[str, ...] = EVICT_QUANT_SCHEMES,
                 group_size: int | None = None) -> list[EvictionPoint]:
    """The quantized formats on the same axis: every row kept, at the bytes they store (fp16/int8/int4/int2:
    quant.round_trip's; fp8: Fp8QuantizedLayer's arithmetic; fp8-hf: transformers' QuantizedCache itself)."""
    group = loaded.info.head_dim if group_size is None else group_size
    points = []
    for scheme in schemes:
        if scheme == "fp8-hf":
            points.append(_fp8_hf_point(loaded, texts))
            continue
        if scheme != "fp8":
            quant.check_scheme(scheme, loaded.info.head_dim, group, schemes=(*quant.SCHEMES, "int2"))
        cache, stored = _quantized_cache(texts.copy, scheme, group)
        hits = _copy_hits(loaded, cache, texts.sequences)
        context_cache, _stored = _quantized_cache(texts.context, scheme, group)
        losses = _token_losses(loaded, context_cache, texts.passages, texts.settings.context_tokens)
        points.append(texts.point(scheme, "quantized", 100, texts.copy.seq_len, stored // texts.settings.n_spans,
                                  hits, losses))
    return points


def sweep(loaded: LoadedModel, text: str | None = None, settings: EvictSettings = EvictSettings(),
          policies: tuple[str, ...] = EVICT_POLICIES, keep_percents: tuple[int, ...] = EVICT_KEEP_PERCENTS,
          schemes: tuple[str, ...] = EVICT_QUANT_SCHEMES, progress: Progress | None = None) -> EvictionSweep:
    """Every policy x every budget x both measures, then the quantized formats. `progress(fraction, what)` is
    called before each policy (a page's progress bar; a Streamlit rerun stops the run there)."""
    for policy in policies:
        check_policy(policy)
    texts = SweepTexts(loaded, text, settings)
    points: list[EvictionPoint] = []
    steps = len(policies) + (1 if schemes else 0)
    for n, policy in enumerate(policies):
        if progress:
            progress(n / steps, policy)
        points += policy_points(loaded, texts, policy, keep_percents)
    if schemes:
        if progress:
            progress(len(policies) / steps, ", ".join(schemes))
        points += quant_points(loaded, texts, schemes)
    if progress:
        progress(1.0, "")
    return EvictionSweep(loaded.info.label, texts.settings, tuple(points), loaded.info.head_dim, texts.n_tokens,
                         _ranking_of(loaded, points, texts.settings))


def _ranking_of(loaded: LoadedModel, points, settings: EvictSettings) -> HeadRanking | None:
    """The head ranking DuoAttention's points used (cached per model and S), or None when none was measured."""
    if not any(p.policy == "duoattention" for p in points):
        return None
    return head_ranking(loaded, settings.sink_tokens)


def measure_policy(loaded: LoadedModel, policy: str, text: str | None = None,
                   settings: EvictSettings = EvictSettings(),
                   keep_percents: tuple[int, ...] = EVICT_KEEP_PERCENTS) -> tuple[EvictionPoint, ...]:
    """One policy's line of the sweep (a page caches and shows progress per line)."""
    check_policy(policy)
    return tuple(policy_points(loaded, SweepTexts(loaded, text, settings), policy, keep_percents))


def measure_quantized(loaded: LoadedModel, text: str | None = None,
                      settings: EvictSettings = EvictSettings()) -> tuple[EvictionPoint, ...]:
    """The quantized formats' points of the sweep."""
    return tuple(quant_points(loaded, SweepTexts(loaded, text, settings)))


def sweep_of(loaded: LoadedModel, points: tuple[EvictionPoint, ...], text: str | None = None,
             settings: EvictSettings = EvictSettings()) -> EvictionSweep:
    """The sweep record of points measured line by line (measure_policy, measure_quantized)."""
    settings = settings.checked(loaded.info.n_positions)
    return EvictionSweep(loaded.info.label, settings, tuple(points),
                         loaded.info.head_dim, len(text_ids(loaded, text)), _ranking_of(loaded, points, settings))


def eviction_grid(loaded: LoadedModel, policy: str, keep_percent: int, text: str | None = None,
                  settings: EvictSettings = EvictSettings()) -> EvictionGrid:
    """Which rows `policy` keeps at `keep_percent`, per layer and KV head, on the first copy-test span."""
    import torch

    from kvviz.model.tokens import token_text

    check_policy(policy)
    keep = 100 if policy == "full" else check_keep_percent(keep_percent)
    settings = settings.checked(loaded.info.n_positions)
    ids = text_ids(loaded, text)
    span = copy_sequences(ids, settings)[:1, :settings.half_tokens]  # (1, L)
    pre = prefill(loaded, span)
    rows = rows_for_budget(keep, pre.seq_len)
    if policy in EVICT_RAGGED:
        cache = evict(policy, pre, settings, rows)
        kept = cache.kept  # [layer][kv head] positions
        layer_bytes = cache.layer_nbytes()  # its own tensors
    else:
        order = kept_rows(policy, keep_order(policy, pre, settings), rows)
        kept = [list(idx[0]) for idx in order]
        layer_bytes = [layer.keys.nbytes + layer.values.nbytes for layer in prune(pre, order).layers]
    layers = []
    for i, (full, per_head, kept_bytes) in enumerate(zip(pre.cache.layers, kept, layer_bytes, strict=True)):
        mask = torch.zeros(full.keys.shape[1], pre.seq_len, dtype=torch.bool)
        for h, idx in enumerate(per_head):
            mask[h, idx] = True
        layers.append(LayerKept(i, tuple(tuple(bool(x) for x in row) for row in mask.tolist()),
                                int(mask.sum()) // mask.shape[0], kept_bytes, full.keys.nbytes + full.values.nbytes))
    return EvictionGrid(policy, keep, tuple(token_text(loaded.tokenizer, int(t)) for t in span[0]),
                        settings.sink_tokens, tuple(layers))
