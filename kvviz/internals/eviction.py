"""KV-cache eviction: what to forget, measured on the real cache of a real prefill.

This module holds the policies, their settings, limits, checks, names and rules; it imports no torch. Each policy
scores the rows of transformers' own `DynamicCache` after a prefill and keeps the best `rows` of every layer and KV
head (kvviz.internals.eviction_lab.scoring); `prune` gathers them into a new DynamicCache, and decoding goes on from
it (eviction_lab.cache). The scorers are a few lines each, written on the cache tensors (NVIDIA's kvpress is the
reference implementation of these "presses"; kvpress 0.5.5 pins transformers < 5.3 and does not take GPT-2;
transformers 5 removed SinkCache):

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

Budget: a whole percent of the KV bytes; rows per head = floor(S x percent / 100) (rows_for_budget), and the
bytes reported are the pruned tensors' own `nbytes`, never the percent asked for. Masking rows or zeroing channels
would keep the bytes and save nothing, so nothing here masks: the rows are gone from the tensors.

Where each part lives (this module and eviction_takeaways import no torch, so a page imports them at its top for its
limits and texts; the lab's modules run the model and import torch at their top, so a page imports them inside the
functions that run a model):

    kvviz.internals.eviction            the policies, their settings, limits, checks, names and rules (here)
    kvviz.internals.eviction_takeaways  what a class takes away from a sweep, every comparison through the paired rule
    kvviz.internals.eviction_lab        the measured runs: scoring, cache (pruning, decoding on), policies (the head
                                        split and KVzip's global ranking), measures (copy test, loss), quantized,
                                        runs (the sweep, a policy's line, a grid)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from kvviz import i18n
from kvviz.i18n import N_, _
from kvviz.inputs.prompt_rules import IntSetting, check_int_in_range

__all__ = [
    "EVICT_AT_SCALE",
    "EVICT_DUO_DRAWS",
    "EVICT_DUO_RECENT",
    "EVICT_KEEP_PERCENTS",
    "EVICT_MAX_SINKS",
    "EVICT_POLICIES",
    "EVICT_POLICY_LABELS",
    "EVICT_POLICY_RULES",
    "EVICT_POLICY_SETTINGS",
    "EVICT_POLICY_SHORT",
    "EVICT_QUANT_SCHEMES",
    "EVICT_RAGGED",
    "EVICT_VARIANTS",
    "HELD_OUT_TEXT_PATH",
    "KVZIP_REPEAT_PROMPT",
    "SINK_TOKENS",
    "EvictSettings",
    "EvictionError",
    "check_keep_percent",
    "check_policy",
    "check_sink_tokens",
    "duo_split",
    "held_out_text",
    "policy_label",
    "policy_note",
    "policy_short",
    "policy_short_text",
    "rows_for_budget",
]


class EvictionError(ValueError):
    """A policy, budget or text the eviction lab cannot use; the message says what is allowed."""


# The policies, in the order the page lists them. Names are the CLI's words; labels are shown through _().
EVICT_POLICIES = (
    "full",
    "random",
    "recent",
    "streaming",
    "h2o",
    "h2o_heavy",
    "tova",
    "snapkv",
    "key_norm",
    "keydiff",
    "duoattention",
    "duo_probe",
    "kvzip",
    "kvzip_head",
)
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
EVICT_POLICY_SHORT = {
    "full": N_("full cache"),
    "random": N_("random"),
    "recent": N_("recent window"),
    "streaming": "StreamingLLM",
    "h2o": "H2O",
    "h2o_heavy": N_("heavy hitters only"),
    "tova": "TOVA",
    "snapkv": "SnapKV",
    "key_norm": N_("key norm"),
    "keydiff": "KeyDiff",
    "duoattention": "DuoAttention",
    "duo_probe": N_("DuoAttention (probe)"),
    "kvzip": "KVzip",
    "kvzip_head": N_("KVzip (per head)"),
    "fp8-hf": N_("fp8 (transformers)"),
}
_TRANSLATED_SHORT = (
    "full cache",
    "random",
    "recent window",
    "heavy hitters only",
    "key norm",
    "fp8 (transformers)",
    "DuoAttention (probe)",
    "KVzip (per head)",
)
# What each policy keeps, and where its choice differs (per layer, per KV head): shown beside the grid.
EVICT_POLICY_RULES = {
    "full": N_("Keeps every row: the reference every other line is measured against."),
    "random": N_(
        "Keeps a seeded random set of rows, drawn anew for every layer and KV head: the control a "
        "policy must beat to show it knows anything."
    ),
    "recent": N_("Keeps the last W rows; the same rows in every layer and head (StreamingLLM with S = 0)."),
    "streaming": N_(
        "Keeps the first S rows (the attention sinks) and the last W - S; the same rows in every layer "
        "and head. A budget of S rows or fewer keeps only the first rows."
    ),
    "h2o": N_(
        "The H2O paper's split: half the budget holds the heavy hitters (the rows that received the most "
        "attention, summed over every query of the prefill and averaged over the query heads that share a "
        "KV head), the other half the newest rows: chosen once after the prefill, per layer and per KV "
        "head."
    ),
    "h2o_heavy": N_(
        "A variant, not the paper's H2O: the whole budget holds heavy hitters (the most attention "
        "received, summed over every query of the prefill and averaged over the query heads that share "
        "a KV head), chosen once after the prefill, with no recent window: at small budgets even the "
        "newest row can go."
    ),
    "tova": N_(
        "Keeps the rows the newest query attends to most, averaged over all heads of a layer: one choice "
        "per layer, shared by its KV heads (as the TOVA paper does)."
    ),
    "snapkv": N_(
        "Keeps the last {window} rows (the observation window) and, from the rows before it, those its "
        "queries attend to most, summed over the window and smoothed over 5 neighbouring positions as "
        "SnapKV's code does: chosen per layer and per KV head. A budget under {window} rows keeps only "
        "the window's newest rows, which is the recent window."
    ),
    "key_norm": N_(
        "Keeps the keys with the smallest L2 norm (low-norm keys tend to draw high attention, Devoto et "
        "al. 2024, arXiv:2406.11430): chosen per layer and per KV head, without reading any attention."
    ),
    "keydiff": N_(
        "Keeps the keys least similar (cosine) to the mean key of their layer and KV head: distinctive "
        "keys are the ones no other row stands in for (KeyDiff, 2025, arXiv:2504.15364). Chosen per "
        "layer and per KV head, without any query or attention."
    ),
    "duoattention": N_(
        "Splits the heads (DuoAttention, Xiao et al. 2024, arXiv:2410.10819): retrieval heads keep "
        "every row, streaming heads keep the first S rows and the newest {recent}. The retrieval "
        "heads are the KV heads whose streaming changes the output most: each head in turn keeps "
        "only those rows while the model reads random tokens repeated, and the change in its "
        "next-token predictions ranks it. The budget decides how many ({retrieval} of {heads} "
        "here). The heads keep different numbers of rows, so the cache is stored head by head and "
        "the bytes are those rows."
    ),
    "duo_probe": N_(
        "A variant of DuoAttention's split: the retrieval heads are the KV heads that copy most on the "
        "induction probe of the attention-patterns page ({retrieval} of {heads} here). The probe scores "
        "most heads near zero, so which of those retrieve is decided by noise."
    ),
    "kvzip": N_(
        "Lets the model re-read the context (a repeat prompt, then the context again) on top of its "
        "cache, and keeps the rows that get the most attention from any re-reading query (KVzip, Kim et "
        "al. 2025, arXiv:2505.23416): about twice the prefill's work, once. The rows compete across all "
        "layers and KV heads, as the paper allocates, so heads keep different numbers of rows at the "
        "budget's bytes."
    ),
    "kvzip_head": N_(
        "A variant of KVzip: the same re-reading scores, but every layer and KV head keeps the same "
        "number of rows, its own best."
    ),
}
# What each newer method needs on a large model that it does not need here (shown on the page, under its sources).
EVICT_AT_SCALE = {
    "keydiff": N_(
        "KeyDiff on a long prompt scores while it reads, block by block, so the cache never exceeds its "
        "budget, and it works with FlashAttention because it reads no attention weights. Here the span "
        "fits at once, so it scores once after the prefill."
    ),
    "duoattention": N_(
        "DuoAttention on a large model finds its retrieval heads by an offline optimisation: one "
        "gate per KV head, trained on synthetic passkey-retrieval data (a number hidden in long "
        "filler text) to keep the full model's outputs while pushing gates towards streaming; and "
        "it needs kernels that run full attention on some heads and sink + recent attention on "
        "others. Here each head's effect when it alone streams, measured on a few calibration draws, "
        "stands in for the learned gates, and a padded copy with a per-head mask stands in for the "
        "kernels."
    ),
    "kvzip": N_(
        "KVzip on a long context re-reads it in chunks (a few thousand tokens each) and ranks the rows "
        "across all heads and layers, so heads keep different numbers of rows; it needs an attention "
        "kernel that returns each key's largest weight without writing the whole matrix, and it pays the "
        "re-read once per context, which pays off when many questions reuse the compressed cache. Here the "
        "re-read fits in one or two chunks and the eager attention's weights are read directly."
    ),
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
EVICT_POLICY_SETTINGS = {
    "streaming": ("sink_tokens",),
    "duoattention": ("sink_tokens",),
    "duo_probe": ("sink_tokens",),
    "snapkv": ("snap_window",),
    "random": ("seed",),
}
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
        raise EvictionError(
            _("unknown eviction policy {policy!r}; choose one of {names}").format(
                policy=str(policy)[:40], names=", ".join(EVICT_POLICIES)
            )
        )
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
        half = check_int_in_range(
            self.half_tokens, EVICT_MIN_SPAN_TOKENS, n_positions // 2, N_("copy-test span (tokens)"), error=e
        )
        spans = check_int_in_range(self.n_spans, 1, EVICT_MAX_SPANS, N_("copy-test spans"), error=e)
        context = check_int_in_range(
            self.context_tokens, EVICT_MIN_SPAN_TOKENS, n_positions - 2, N_("loss context (tokens)"), error=e
        )
        cont = check_int_in_range(
            self.continuation_tokens, 2, n_positions - context, N_("loss continuation (tokens)"), error=e
        )
        passages = check_int_in_range(self.n_passages, 1, EVICT_MAX_PASSAGES, N_("loss passages"), error=e)
        sinks = check_sink_tokens(self.sink_tokens)
        window = check_int_in_range(
            self.snap_window, 1, EVICT_MAX_SNAP_WINDOW, N_("SnapKV observation window"), error=e
        )
        seed = check_int_in_range(self.seed, 0, 2**31 - 1, N_("random seed"), error=e)
        return EvictSettings(half, spans, context, cont, passages, sinks, window, seed)

    def for_policy(self, policy: str) -> EvictSettings:
        """These settings with the fields `policy` does not read set to their defaults (EVICT_POLICY_SETTINGS;
        "quantized": the formats read none): the key of its cached points, so that a new S re-measures only the
        policies that read S. The points are the same: the fields reset are never read for it."""
        default = EvictSettings()
        read = EVICT_POLICY_SETTINGS.get(policy, ())
        return replace(
            self,
            **{
                name: getattr(default, name)
                for names in EVICT_POLICY_SETTINGS.values()
                for name in names
                if name not in read
            },
        )


def policy_label(policy: str) -> str:
    """A policy's (or a quantized format's) name in the interface language, with what it scores."""
    labels = {**EVICT_POLICY_LABELS, **EVICT_QUANT_LABELS}
    return _(labels[policy]) if policy in labels else policy


def policy_short(policy: str) -> str:
    """A policy's (or a quantized format's) short name, for legends and sentences, in the current language."""
    return policy_short_text(policy).shown()


def policy_short_text(policy: str) -> i18n.Message:
    """A policy's short name as a record keeps it (a takeaway): drawn in the reader's language where it is shown."""
    name = EVICT_POLICY_SHORT.get(policy, policy)
    return i18n.Message.lazy(name) if name in _TRANSLATED_SHORT else i18n.Message.verbatim(name)


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
        return _(
            "At {rows} rows per head on average the budget holds no retrieval head: every head streams, "
            "keeping the rows StreamingLLM keeps with the same S."
        ).format(rows=rows)
    if policy == "snapkv" and rows < settings.snap_window:
        return _(
            "SnapKV always keeps its observation window of {window} rows; at {rows} rows the budget is "
            "smaller than the window, so it keeps the window's newest {rows} rows: exactly the recent "
            "window."
        ).format(window=settings.snap_window, rows=rows)
    return None
