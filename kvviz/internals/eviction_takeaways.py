"""What a class takes away from an eviction sweep, computed from its points (never typed in): which policies hold up
at which budget, where quantizing beats evicting at equal bytes, what DuoAttention's head ranking and the sink rows
are worth. Every comparison goes through kvviz.measure's paired rule (inside_noise): where the paired interval of a
difference, unit by unit (the copy test's spans, the loss's passages), holds 0, no side is named. Torch-free: the
points are plain records (kvviz.internals.records).

The takeaways are language-free: each is a kvviz.i18n Message (its msgid and the numbers it carries; a list of
names a Joined, drawn with the reader's separators), put into words by `shown()` where the page draws it. No `_()`
runs while they are computed: one computation serves every language.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvviz.i18n import N_, Joined, Message, Nn_
from kvviz.internals.eviction import (
    EVICT_POLICIES,
    EVICT_VARIANTS,
    EvictSettings,
    duo_split,
    policy_short_text,
    rows_for_budget,
)
from kvviz.internals.records import EvictionPoint, EvictionSweep
from kvviz.measure.timing import paired_inside_noise, paired_interval

__all__ = ["Claim", "eviction_takeaways", "inside_noise", "paired_difference"]


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


def _names(points, metric: str = "copy", settings: EvictSettings | None = None) -> Joined:
    """Policies' short names as a list, drawn in the reader's language (Chinese lists them with 、); a point that
    holds fewer bytes than its budget gives the others (DuoAttention: whole heads only) says so (_named)."""
    return Joined(
        tuple(
            Message.verbatim(p)
            if isinstance(p, str) and settings is None
            else policy_short_text(p)
            if isinstance(p, str)
            else _named(p, metric, settings)
            for p in points
        ),
        "items",
    )


def _named(p: EvictionPoint, metric: str, settings: EvictSettings | None) -> Message:
    """A point's short name, with its real share of the bytes where that is below what every other policy holds
    at the same budget (where the measure was taken: the copy span's cache, or the loss context's), so that no
    sentence compares it at a budget it does not fill."""
    name = policy_short_text(p.policy)
    if p.kind != "eviction" or settings is None:
        return name
    if metric == "copy":
        share, rows = p.bytes_fraction, p.rows_full
    else:
        share, rows = p.loss_bytes_fraction, settings.context_tokens
    if share == share and share < rows_for_budget(p.keep_percent, rows) / rows - 1e-9:  # NaN: not recorded
        return Message.lazy(N_("{policy} (holding only {share:.1%} of the bytes)"), policy=name, share=share)
    return name


def _family(policy: str) -> str:
    """A policy and its named variants are one family (kvzip and kvzip_head; duoattention and duo_probe)."""
    return EVICT_VARIANTS.get(policy, policy)


def _best_in_bytes(sweep: EvictionSweep, q: EvictionPoint, leave_out: str | None = None) -> EvictionPoint | None:
    """The evicting point with the best copy accuracy that fits in q's bytes (the fewest bytes among equals),
    leaving out one policy family."""
    fits = [
        p
        for p in sweep.points
        if p.kind == "eviction"
        and p.policy != "full"
        and p.kv_bytes_kept <= q.kv_bytes_kept
        and (leave_out is None or _family(p.policy) != leave_out)
    ]
    return max(fits, key=lambda p: (p.copy_accuracy, -p.kv_bytes_kept)) if fits else None


INSIDE_THE_NOISE = Message.lazy(N_("inside the noise"))
QUANTIZING_WINS, EVICTING_WINS = Message.lazy(N_("quantizing wins")), Message.lazy(N_("evicting wins"))


def _quant_verdict(judge: _Judge, q: EvictionPoint, rival: EvictionPoint) -> Message:
    if judge.inside(q, rival, "copy"):
        return INSIDE_THE_NOISE
    return QUANTIZING_WINS if q.copy_accuracy > rival.copy_accuracy else EVICTING_WINS


def eviction_takeaways(sweep: EvictionSweep, claims: list[Claim] | None = None) -> list[Message | Joined]:
    """What a class takes away, computed from the sweep (never typed in): which policies hold up at which
    budget, where quantizing beats evicting at equal bytes, and what the sink rows are worth. Every comparison
    goes through kvviz.measure's paired rule (inside_noise): where the paired interval of a difference holds 0, no
    side is named. `claims`, when given, receives every comparison made (Claim). Each takeaway is a Message: show it
    with shown() (markdown) in the reader's language."""
    judge = _Judge(claims)
    full = sweep.point("full", 100)
    settings = sweep.settings
    evicting = [p for p in EVICT_POLICIES[1:] if sweep.curve(p)]
    lines = [
        Message.lazy(
            N_(
                "Every ± is an interval at 95%: the copy accuracy's over the {spans} spans, the loss change's over "
                "the {passages} passages (each against the full cache on the same passage). A side is "
                "named only where the paired interval of the difference, unit by unit, excludes 0; otherwise the "
                "difference is inside the noise."
            ),
            spans=full.n_spans,
            passages=full.n_passages,
        )
    ]
    holds = {}
    for policy in evicting:
        inside = [p for p in sweep.curve(policy) if p.keep_percent < 100 and judge.inside(p, full, "copy")]
        if inside:
            holds[policy] = min(inside, key=lambda p: p.keep_percent)
    if holds:
        best_keep = min(p.keep_percent for p in holds.values())
        lines.append(
            Message.lazy(
                N_(
                    "Copying stays inside the noise of the full cache's {acc} down to {keep}% of the bytes with {policies}."
                ),
                acc=_pm(full, "copy"),
                keep=best_keep,
                policies=_names([p for p in holds.values() if p.keep_percent == best_keep], "copy", settings),
            )
        )
        if len({_family(p) for p in holds}) == 1:  # the conclusion rests on one policy: name what it rests on
            lines.append(
                Message.lazy(
                    N_(
                        "Only {policies} keep copying inside that noise once rows are evicted; every other "
                        "policy falls below it."
                    ),
                    policies=_names(list(holds)),
                )
            )
    else:
        lines.append(
            Message.lazy(
                N_(
                    "No policy keeps copying inside the noise of the full cache's {acc} once rows are evicted: "
                    "the repeat needs the rows of the whole first copy, and every policy throws some of them "
                    "away."
                ),
                acc=_pm(full, "copy"),
            )
        )
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
        copy_part = [
            Message.lazy(
                N_("At {keep}%: best copying {policy} {acc}"),
                keep=keep,
                policy=_named(top, "copy", settings),
                acc=_pm(top, "copy"),
            )
        ]
        if tied:
            copy_part.append(
                Message.lazy(N_(", with {others} inside its noise"), others=_names(tied, "copy", settings))
            )
        copy_part.append(
            Message.lazy(
                N_("; the random control's {rand} is inside the noise of it")
                if judge.inside(rand, top, "copy")
                else N_("; the random control's {rand} is below it"),
                rand=_pm(rand, "copy"),
            )
        )
        loss_part = Message.lazy(
            N_("loss change from {low} nats ({low_policy}) to {high} ({high_policy}), inside the noise of each other")
            if judge.inside(low, high, "loss")
            else N_("loss change from {low} nats ({low_policy}) to {high} ({high_policy}), apart beyond the noise"),
            low=_pm(low, "loss"),
            low_policy=_named(low, "loss", settings),
            high=_pm(high, "loss"),
            high_policy=_named(high, "loss", settings),
        )
        lines.append(Message.lazy(N_("{clauses}."), clauses=Joined((Joined(tuple(copy_part), ""), loss_part), "list")))
    wins = []
    for q in sweep.quantized:
        # the evicting policies' best copy accuracy at the largest budget that fits in the format's bytes
        rival = _best_in_bytes(sweep, q)
        if rival is None:
            continue
        verdict = _quant_verdict(judge, q, rival)
        wins.append((q, verdict == QUANTIZING_WINS, rival))
        line = Message.lazy(
            N_(
                "{format} ({share:.0%} of the bytes) copies {q_acc}; the best eviction in no more bytes, {policy} "
                "at {keep}%, copies {e_acc}: {verdict}."
            ),
            format=policy_short_text(q.policy),
            share=q.bytes_fraction,
            q_acc=_pm(q, "copy"),
            policy=_named(rival, "copy", settings),
            keep=rival.keep_percent,
            e_acc=_pm(rival, "copy"),
            verdict=verdict,
        )
        other = _best_in_bytes(sweep, q, leave_out=_family(rival.policy))
        if other is not None and (other_verdict := _quant_verdict(judge, q, other)) != verdict:
            line = Joined(
                (
                    line,
                    Message.lazy(
                        N_("This rests on {policy}: without it, the best is {other} at {keep}% with {acc}: {verdict}."),
                        policy=policy_short_text(rival.policy),
                        other=_named(other, "copy", settings),
                        keep=other.keep_percent,
                        acc=_pm(other, "copy"),
                        verdict=other_verdict,
                    ),
                ),
                "sentences",
            )
        lines.append(line)
    if wins:
        won = sum(w for _q, w, _r in wins)
        summary = Message.counted(
            *Nn_(
                "Quantizing beats evicting at equal bytes, beyond the noise, for {won} format of {n}.",
                "Quantizing beats evicting at equal bytes, beyond the noise, for {won} formats of {n}.",
            ),
            by="won",
            won=won,
            n=len(wins),
        )
        # the policy most often the rival: without its family, how many would it be?
        rivals = [_family(r.policy) for _q, _w, r in wins]
        key = max(set(rivals), key=rivals.count)
        won_without = 0
        for q, _w, _r in wins:
            other = _best_in_bytes(sweep, q, leave_out=key)
            won_without += other is None or _quant_verdict(judge, q, other) == QUANTIZING_WINS
        if won_without != won:
            summary = Joined(
                (
                    summary,
                    Message.counted(
                        *Nn_(
                            "This count rests on {policy}: without it, {won} format of {n}.",
                            "This count rests on {policy}: without it, {won} formats of {n}.",
                        ),
                        by="won",
                        policy=policy_short_text(key),
                        won=won_without,
                        n=len(wins),
                    ),
                ),
                "sentences",
            )
        lines.append(summary)
    ranking = sweep.head_ranking
    if ranking is not None and ranking.effects:
        draws = len(ranking.effects)
        k = duo_split(len(ranking.heads), settings.half_tokens, rows_for_budget(50, settings.half_tokens), settings)[0]
        top = ranking.order[: max(k, 1)]
        lines.append(
            Message.counted(
                *Nn_(
                    "DuoAttention's heads, ranked by what each does when it alone streams (the change in the model's "
                    "next-token predictions over {draws} calibration draw): {heads}. The {k} that retrieve at 50% are the "
                    "same heads in {agree} of {draws} draws; the last of them, {last}, ranks between {best} and {worst}.",
                    "DuoAttention's heads, ranked by what each does when it alone streams (the change in the model's "
                    "next-token predictions over {draws} calibration draws): {heads}. The {k} that retrieve at 50% are the "
                    "same heads in {agree} of {draws} draws; the last of them, {last}, ranks between {best} and {worst}.",
                ),
                by="draws",
                draws=draws,
                heads=Joined(tuple(f"{layer}.{head}" for layer, head in top), "items"),
                k=len(top),
                last="{}.{}".format(*top[-1]),
                agree=ranking.top_set_agreement(len(top)),
                best=ranking.rank_range(top[-1])[0],
                worst=ranking.rank_range(top[-1])[1],
            )
        )
    s = sweep.settings.sink_tokens
    for keep in (75, 25, 5):  # a large, a middle and the smallest budget
        if keep not in {p.keep_percent for p in sweep.curve("streaming")} & {
            p.keep_percent for p in sweep.curve("recent")
        }:
            continue
        without, with_ = sweep.point("recent", keep), sweep.point("streaming", keep)
        verdicts = [
            Message.lazy(N_("copying inside the noise"))
            if judge.inside(without, with_, "copy")
            else Message.lazy(N_("copying differs beyond the noise")),
            Message.lazy(N_("loss inside the noise"))
            if judge.inside(without, with_, "loss")
            else Message.lazy(N_("loss differs beyond the noise")),
        ]
        lines.append(
            Message.lazy(
                N_(
                    "Sinks at {keep}%: the window alone (S = 0) copies {a0:.0%} with loss change {l0:+.3f} "
                    "nats; with the first S = {s} rows kept, {a1:.0%} and {l1:+.3f} nats ({verdicts})."
                ),
                keep=keep,
                a0=without.copy_accuracy,
                l0=without.loss_change_nats,
                s=s,
                a1=with_.copy_accuracy,
                l1=with_.loss_change_nats,
                verdicts=Joined(tuple(verdicts), "list"),
            )
        )
    negative = [p for p in sweep.points if p.policy != "full" and p.loss_change_nats < 0]
    lower = [p for p in negative if not judge.inside(p, full, "loss")]
    if lower:
        best = min(lower, key=lambda p: p.loss_change_nats)
        lines.append(
            Message.lazy(
                N_(
                    "Some points lower the loss beyond the noise (best: {policy} at {keep}%, {change} nats): "
                    "dropping rows can also drop context that misled the model on this text; on other text the "
                    "same policy may raise it."
                ),
                policy=_named(best, "loss", settings),
                keep=best.keep_percent,
                change=_pm(best, "loss"),
            )
        )
    elif negative:
        lines.append(
            Message.lazy(
                N_(
                    "The negative loss changes are inside the noise of zero: these passages are too few to say "
                    "that evicting rows helps this model."
                )
            )
        )
    return lines
