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

Attention-based scores read the prefill's attention weights (eager attention, which the app loads). With GQA the
query heads that share a KV head are averaged (a sum would rank the rows the same), so the choice is per KV head: the pruned tensors stay
[batch_size, num_kv_heads, seq_len, head_dim] with seq_len = the rows kept, rectangular, because every head keeps
the same number of rows.

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

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kvviz.i18n import N_, _
from kvviz.inputs.prompt_rules import check_int_in_range
from kvviz.internals import quant
from kvviz.internals.records import INTERVAL_Z, EvictionGrid, EvictionPoint, EvictionSweep, LayerKept
from kvviz.measure.timing import intervals_overlap
from kvviz.model.loading import LoadedModel

if TYPE_CHECKING:
    import torch
    from transformers import DynamicCache

__all__ = ["EVICT_KEEP_PERCENTS", "EVICT_POLICIES", "EVICT_POLICY_LABELS", "EVICT_POLICY_RULES", "EVICT_POLICY_SHORT",
           "EVICT_MAX_SINKS", "EVICT_POLICY_SETTINGS", "EVICT_QUANT_SCHEMES", "EvictionError", "EvictSettings", "HELD_OUT_TEXT_PATH", "Prefill", "SweepTexts",
           "cache_nbytes", "check_keep_percent", "check_policy", "check_sink_tokens", "continue_from", "copy_correct", "copy_sequences",
           "eviction_grid", "eviction_takeaways", "held_out_text", "inside_noise", "keep_order", "keep_rows", "kept_rows",
           "loss_passages", "measure_policy", "measure_quantized", "policy_label", "policy_note", "policy_points",
           "policy_short", "prefill", "prune",
           "quant_points", "rows_for_budget", "sweep", "sweep_of", "text_ids"]


class EvictionError(ValueError):
    """A policy, budget or text the eviction lab cannot use; the message says what is allowed."""


# The policies, in the order the page lists them. Names are the CLI's words; labels are shown through _().
EVICT_POLICIES = ("full", "random", "recent", "streaming", "h2o", "h2o_heavy", "tova", "snapkv", "key_norm")
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
}
# Short names, for chart legends and sentences (the papers' names stay as written).
EVICT_POLICY_SHORT = {"full": N_("full cache"), "random": N_("random"), "recent": N_("recent window"),
                      "streaming": "StreamingLLM", "h2o": "H2O", "h2o_heavy": N_("heavy hitters only"),
                      "tova": "TOVA", "snapkv": "SnapKV", "key_norm": N_("key norm"),
                      "fp8-hf": N_("fp8 (transformers)")}
_TRANSLATED_SHORT = ("full cache", "random", "recent window", "heavy hitters only", "key norm", "fp8 (transformers)")
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
}
EVICT_KEEP_PERCENTS = (100, 75, 50, 35, 25, 15, 10, 5)  # the sweep's budgets: % of KV bytes kept
# Compression points on the same axis. fp16/int8/int4/int2: kvviz.internals.quant's arithmetic; fp8: transformers'
# Fp8QuantizedLayer arithmetic on the prefill's rows, under the same protocol (the rows appended afterwards stay
# float32); fp8-hf: transformers' own QuantizedCache(backend="fp8"), which stores the appended rows in fp8 too.
EVICT_QUANT_SCHEMES = ("fp16", "fp8", "fp8-hf", "int8", "int4", "int2")
EVICT_QUANT_LABELS = {"fp8-hf": N_("fp8, transformers' own cache (the new rows in fp8 too)")}
EVICT_MAX_SPANS = 16  # copy-test spans (one batch)
EVICT_MAX_PASSAGES = 8  # loss passages (one batch)
EVICT_MIN_SPAN_TOKENS = 8
EVICT_SNAP_POOL = 5  # SnapKV's smoothing kernel (positions), as in the paper's code and kvpress
EVICT_MAX_SINKS = 64  # StreamingLLM's S: the widget's maximum, a link's and the CLI's (check_sink_tokens)
EVICT_MAX_SNAP_WINDOW = 64
# The settings each policy reads beyond the texts' (the others' points do not change with them: a page keys its
# cached lines on settings_for, so a new S re-measures StreamingLLM alone).
EVICT_POLICY_SETTINGS = {"streaming": ("sink_tokens",), "snapkv": ("snap_window",), "random": ("seed",)}
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
    return check_int_in_range(value, 0, EVICT_MAX_SINKS, N_("sink tokens S"), error=EvictionError, text=text)


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


def policy_note(policy: str, rows: int, settings: EvictSettings) -> str | None:
    """What a policy keeps where its definition runs out of room, or None: SnapKV below its window."""
    if policy == "snapkv" and rows < settings.snap_window:
        return _("SnapKV always keeps its observation window of {window} rows; at {rows} rows the budget is "
                 "smaller than the window, so it keeps the window's newest {rows} rows: exactly the recent "
                 "window.").format(window=settings.snap_window, rows=rows)
    return None


def _pm(p: EvictionPoint, metric: str) -> str:
    """'31% ± 4' (copy accuracy) or '+0.066 ± 0.041' (loss change, nats): the value and its 95% half-width."""
    if metric == "copy":
        return f"{p.copy_accuracy:.0%} ± {100 * INTERVAL_Z * p.copy_se:.0f}"
    return f"{p.loss_change_nats:+.3f} ± {INTERVAL_Z * p.loss_change_se:.3f}"


def _interval(p: EvictionPoint, metric: str) -> tuple[float, float]:
    return p.copy_interval if metric == "copy" else p.loss_change_interval


def inside_noise(a: EvictionPoint, b: EvictionPoint, metric: str) -> bool:
    """kvviz.measure's rule on two points: their 95% intervals overlap, so the data name no better side."""
    return intervals_overlap(_interval(a, metric), _interval(b, metric))


def _names(points) -> str:
    """Policies' short names as a list in the interface language (Chinese lists them with 、)."""
    return _(", ").join(policy_short(p if isinstance(p, str) else p.policy) for p in points)


def eviction_takeaways(sweep: EvictionSweep) -> list[str]:
    """What a class takes away, computed from the sweep (never typed in): which policies hold up at which
    budget, where quantizing beats evicting at equal bytes, and what the sink rows are worth. Every comparison
    goes through kvviz.measure's rule (inside_noise): where two 95% intervals overlap, no side is named."""
    full = sweep.point("full", 100)
    evicting = [p for p in EVICT_POLICIES[1:] if sweep.curve(p)]
    lines = [_("Every figure carries ± its interval at 95%, 1.96 standard errors over the predictions, each counted "
               "as a sample. Where two intervals overlap the difference is inside the noise, and no side is "
               "named.")]
    holds = {}
    for policy in evicting:
        inside = [p.keep_percent for p in sweep.curve(policy) if p.keep_percent < 100 and inside_noise(p, full, "copy")]
        if inside:
            holds[policy] = min(inside)
    if holds:
        best_keep = min(holds.values())
        lines.append(_("Copying stays inside the noise of the full cache's {acc} down to {keep}% of the bytes with "
                       "{policies}.").format(acc=_pm(full, "copy"), keep=best_keep,
                                             policies=_names([p for p, k in holds.items() if k == best_keep])))
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
        tied = [p for p in at if p is not top and inside_noise(p, top, "copy")]
        low = min(at, key=lambda p: p.loss_change_nats)
        high = max(at, key=lambda p: p.loss_change_nats)
        copy_part = _("At {keep}%: best copying {policy} {acc}").format(keep=keep, policy=policy_short(top.policy),
                                                                       acc=_pm(top, "copy"))
        if tied:
            copy_part += _(", with {others} inside its noise").format(others=_names(tied))
        copy_part += (_("; the random control's {rand} is inside the noise of it") if inside_noise(rand, top, "copy")
                      else _("; the random control's {rand} is below it")).format(rand=_pm(rand, "copy"))
        loss_part = (_("loss change from {low} nats ({low_policy}) to {high} ({high_policy}), inside the noise of "
                       "each other") if inside_noise(low, high, "loss") else
                     _("loss change from {low} nats ({low_policy}) to {high} ({high_policy})")).format(
            low=_pm(low, "loss"), low_policy=policy_short(low.policy), high=_pm(high, "loss"),
            high_policy=policy_short(high.policy))
        lines.append(copy_part + "; " + loss_part + ".")
    for q in sweep.quantized:
        # the evicting policies' best copy accuracy at the largest budget that fits in the format's bytes
        fits = [p for p in sweep.points if p.kind == "eviction" and p.policy != "full"
                and p.kv_bytes_kept <= q.kv_bytes_kept]
        if not fits:
            continue
        rival = max(fits, key=lambda p: (p.copy_accuracy, -p.kv_bytes_kept))
        verdict = (_("inside the noise") if inside_noise(q, rival, "copy") else
                   _("quantizing wins") if q.copy_accuracy > rival.copy_accuracy else _("evicting wins"))
        lines.append(_("{format} ({share:.0%} of the bytes) copies {q_acc}; the best eviction in no more "
                       "bytes, {policy} at {keep}%, copies {e_acc}: {verdict}.").format(
            format=policy_short(q.policy), share=q.bytes_fraction, q_acc=_pm(q, "copy"),
            policy=policy_short(rival.policy), keep=rival.keep_percent, e_acc=_pm(rival, "copy"), verdict=verdict))
    s = sweep.settings.sink_tokens
    for keep in (75, 25, 5):  # a large, a middle and the smallest budget
        if keep not in {p.keep_percent for p in sweep.curve("streaming")} & {p.keep_percent for p in
                                                                             sweep.curve("recent")}:
            continue
        without, with_ = sweep.point("recent", keep), sweep.point("streaming", keep)
        verdicts = [_("copying inside the noise") if inside_noise(without, with_, "copy") else
                    _("copying differs beyond the noise"),
                    _("loss inside the noise") if inside_noise(without, with_, "loss") else
                    _("loss differs beyond the noise")]
        lines.append(_("Sinks at {keep}%: the window alone (S = 0) copies {a0:.0%} with loss change {l0:+.3f} "
                       "nats; with the first S = {s} rows kept, {a1:.0%} and {l1:+.3f} nats ({verdicts}).").format(
            keep=keep, a0=without.copy_accuracy, l0=without.loss_change_nats, s=s, a1=with_.copy_accuracy,
            l1=with_.loss_change_nats, verdicts="; ".join(verdicts)))
    lower = [p for p in sweep.points if p.policy != "full" and p.loss_change_interval[1] < 0]
    if lower:
        best = min(lower, key=lambda p: p.loss_change_nats)
        lines.append(_("Some points lower the loss beyond the noise (best: {policy} at {keep}%, {change} nats): "
                       "dropping rows can also drop context that misled the model on this text; on other text the "
                       "same policy may raise it.").format(policy=policy_short(best.policy), keep=best.keep_percent,
                                                           change=_pm(best, "loss")))
    elif any(p.loss_change_nats < 0 for p in sweep.points if p.policy != "full"):
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

    @property
    def seq_len(self) -> int:
        return self.input_ids.shape[1]


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


def cache_nbytes(cache: DynamicCache) -> int:
    """The bytes the cache's K and V tensors occupy (their own nbytes), all layers."""
    return sum(layer.keys.nbytes + layer.values.nbytes for layer in cache.layers)


def continue_from(loaded: LoadedModel, cache: DynamicCache, input_ids: torch.Tensor, original_len: int) -> torch.Tensor:
    """Feed input_ids [batch_size, q_len] after a (possibly pruned) cache of a prefill of `original_len` tokens:
    positions continue at original_len (module docstring: why). Returns the logits [batch_size, q_len, vocab_size]."""
    import torch

    from kvviz.model.loading import MODEL_LOCK

    b, n = input_ids.shape
    position_ids = torch.arange(original_len, original_len + n)[None, :].expand(b, n)
    with MODEL_LOCK, torch.inference_mode():
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
        raise EvictionError(_("The text has {n} tokens; {what} needs at least {need}: paste a longer text or "
                              "lower the setting.").format(n=len(ids), what=what, need=tokens))


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


def _standard_error(samples: torch.Tensor) -> float:
    """The standard error of the mean of samples (one per prediction): sample std / sqrt(n)."""
    n = samples.numel()
    return float(samples.double().std() / n ** 0.5) if n > 1 else float("nan")


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
              token_losses: torch.Tensor) -> EvictionPoint:
        """The record of one measured point: counts, means and their standard errors over the predictions."""
        return EvictionPoint(policy, kind, keep, rows, self.copy.seq_len, kept_bytes, self.full_bytes,
                             int(hits.sum()), hits.numel(), float(token_losses.mean()), self.loss_full,
                             _standard_error(hits.reshape(-1)),
                             _standard_error(token_losses.reshape(-1) - self.token_losses_full.reshape(-1)))


def policy_points(loaded: LoadedModel, texts: SweepTexts, policy: str,
                  keep_percents: tuple[int, ...] = EVICT_KEEP_PERCENTS) -> list[EvictionPoint]:
    """One policy at every budget (the full cache: once, at 100%)."""
    settings = texts.settings
    copy_order = keep_order(policy, texts.copy, settings)
    context_order = keep_order(policy, texts.context, settings)
    points = []
    for keep in ((100,) if policy == "full" else tuple(check_keep_percent(k) for k in keep_percents)):
        rows = rows_for_budget(keep, texts.copy.seq_len)
        cache = prune(texts.copy, kept_rows(policy, copy_order, rows))
        kept_bytes = cache_nbytes(cache) // settings.n_spans  # counted before the repeat appends its rows
        hits = _copy_hits(loaded, cache, texts.sequences)
        context_rows = rows_for_budget(keep, settings.context_tokens)
        losses = _token_losses(loaded, prune(texts.context, kept_rows(policy, context_order, context_rows)),
                               texts.passages, settings.context_tokens)
        points.append(texts.point(policy, "eviction", keep, rows, kept_bytes, hits, losses))
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
    return EvictionSweep(loaded.info.label, texts.settings, tuple(points), loaded.info.head_dim, texts.n_tokens)


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
    return EvictionSweep(loaded.info.label, settings.checked(loaded.info.n_positions), tuple(points),
                         loaded.info.head_dim, len(text_ids(loaded, text)))


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
    kept = kept_rows(policy, keep_order(policy, pre, settings), rows)
    cache = prune(pre, kept)
    layers = []
    for i, (idx, full, small) in enumerate(zip(kept, pre.cache.layers, cache.layers, strict=True)):
        mask = torch.zeros(idx.shape[1], pre.seq_len, dtype=torch.bool)
        mask.scatter_(1, idx[0], True)
        layers.append(LayerKept(i, tuple(tuple(bool(x) for x in row) for row in mask.tolist()), rows,
                                small.keys.nbytes + small.values.nbytes, full.keys.nbytes + full.values.nbytes))
    return EvictionGrid(policy, keep, tuple(token_text(loaded.tokenizer, int(t)) for t in span[0]),
                        settings.sink_tokens, tuple(layers))
