"""`python -m kvviz evict`: KV-cache eviction on a bundled model, measured as the eviction page measures it.

    python -m kvviz evict --model bundled --policy streaming --keep 0.5        # one policy at one budget
    python -m kvviz evict --model bundled-gqa --sweep                          # every policy x every budget
    python -m kvviz evict --policy h2o --keep 0.25 --sinks 0 --json            # JSON (exact integer bytes)

The numbers are the page's (kvviz.internals.eviction_lab.runs, the same default held-out text and settings): rows kept
per layer and KV head, KV bytes kept (the pruned tensors' nbytes, one sequence), copy-test accuracy on the
repeated span, and the change in next-token loss against the full cache. Bad input ends with one line on
stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys

from kvviz.cli import ArgumentError, Parser, one_line, say, whole
from kvviz.internals.eviction import (
    EVICT_KEEP_PERCENTS,
    EVICT_MAX_SINKS,
    EVICT_POLICIES,
    EvictionError,
    EvictSettings,
)
from kvviz.internals.records import EvictionPoint, HeadRanking
from kvviz.model.loading import BUNDLED, BUNDLED_GQA


def keep_fraction(text: str) -> int:
    """--keep: a fraction of the KV bytes in (0, 1], a whole percent (0.35, not 0.355) -> the percent."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--keep must be a fraction such as 0.5 (got {one_line(repr(text), 40)})"
        ) from None
    percent = round(value * 100) if math.isfinite(value) else 0
    if not math.isfinite(value) or abs(value * 100 - percent) > 1e-9 or not 1 <= percent <= 100:
        raise argparse.ArgumentTypeError(
            f"--keep must be a fraction of the KV bytes from 0.01 to 1 in steps of "
            f"0.01 (got {one_line(repr(text), 40)})"
        )
    return percent


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="python -m kvviz evict",
        description="KV-cache eviction on a bundled model, measured.",
        refusal=ArgumentError,
    )
    p.add_argument("--model", choices=(BUNDLED, BUNDLED_GQA), default=BUNDLED)
    p.add_argument("--policy", choices=EVICT_POLICIES, default="streaming")
    p.add_argument("--keep", type=keep_fraction, default=50, help="fraction of the KV bytes kept (default 0.5)")
    p.add_argument(
        "--sinks",
        type=whole(0, EVICT_MAX_SINKS),
        default=EvictSettings().sink_tokens,
        help="StreamingLLM's sink tokens S (default 4)",
    )
    p.add_argument("--sweep", action="store_true", help="every policy at every budget, and the quantized formats")
    p.add_argument("--json", action="store_true", help="print JSON")
    return p


def as_dict(p: EvictionPoint) -> dict:
    """A point with its intervals: the copy accuracy's over the spans (copy_interval_95, n_spans), the loss
    change's over the passages, each paired with the full cache's (loss_change_interval_95, n_passages)."""
    return {
        **dataclasses.asdict(p),
        "bytes_fraction": p.bytes_fraction,
        "copy_accuracy": p.copy_accuracy,
        "loss_change_nats": p.loss_change_nats,
        "n_spans": p.n_spans,
        "n_passages": p.n_passages,
        "copy_interval_95": p.copy_interval,
        "copy_interval_unit": "span",
        "loss_change_interval_95": p.loss_change_interval,
        "loss_change_interval_unit": "passage",
    }


def ranking_dict(r: HeadRanking) -> dict:
    """DuoAttention's head ranking: the heads by mean effect, each with its effect per draw and its rank range."""
    return {
        "calibration": r.calibration,
        "draws": len(r.effects),
        "effect": "mean KL divergence (nats) of the "
        "next-token distributions from the full cache's, the head alone streaming",
        "heads": [
            {
                "layer": layer,
                "kv_head": head,
                "mean_effect_nats": r.mean_effects[r.heads.index((layer, head))],
                "effect_per_draw_nats": [row[r.heads.index((layer, head))] for row in r.effects],
                "rank_range": list(r.rank_range((layer, head))),
            }
            for layer, head in r.order
        ],
    }


def table(points: list[EvictionPoint]) -> str:
    """One line per point; '±95%': the half-width of its 95% interval (copy: over the spans; loss: over the
    passages, paired with the full cache's; Student's t)."""
    lines = [
        f"{'policy':<12} {'budget':>6} {'rows':>9} {'KV bytes kept':>14} {'of full':>8} {'copy acc':>9} "
        f"{'±95%':>6} {'loss change':>12} {'±95%':>7}"
    ]
    for p in points:
        budget = f"{p.keep_percent}%" if p.kind == "eviction" else "-"
        lines.append(
            f"{p.policy:<12} {budget:>6} {p.rows_kept:>4}/{p.rows_full:<4} {p.kv_bytes_kept:>14,} "
            f"{p.bytes_fraction:>8.1%} {p.copy_accuracy:>9.1%} {100 * p.copy_half_width:>6.1f} "
            f"{p.loss_change_nats:>+12.4f} {p.loss_change_half_width:>7.4f}"
        )
    return "\n".join(lines)


def markdown_table(points: list[EvictionPoint]) -> str:
    """table()'s numbers as docs/measurements.md's markdown table (the same cells, in the same order)."""
    head = (
        "| policy | budget | rows per head | KV bytes kept (one span) | of full | copy accuracy | ±95% (points) "
        "| loss change (nats) | ±95% (nats) |"
    )
    rows = [head, "|---|---|---|---|---|---|---|---|---|"]
    rows += ["| " + " | ".join(line.split()) + " |" for line in table(points).splitlines()[1:]]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except ArgumentError as exc:
        say(f"kvviz evict: {one_line(exc)}", file=sys.stderr)
        return 2
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch  # only now: --help and bad values answer without loading torch

    from kvviz.internals.eviction_lab import runs
    from kvviz.model.loaders import load_model
    from kvviz.speedup.machine import free_cores

    torch.set_num_threads(free_cores())  # the measure floor's rule: usable cores not already busy (load), >= 1
    loaded = load_model(args.model, attn_implementation="eager")
    settings = EvictSettings(sink_tokens=args.sinks)
    ranking = None
    try:
        if args.sweep:
            sweep = runs.sweep(loaded, None, settings)
            points, ranking = list(sweep.points), sweep.head_ranking
        else:
            points = list(runs.measure_policy(loaded, "full", None, settings))
            if args.policy != "full":
                points += runs.measure_policy(loaded, args.policy, None, settings, (args.keep,))
    except EvictionError as exc:
        say(f"kvviz evict: {one_line(exc)}", file=sys.stderr)
        return 2
    if args.json:
        print(
            json.dumps(
                {
                    "model": loaded.info.label,
                    "settings": dataclasses.asdict(settings.checked(loaded.info.n_positions)),
                    "points": [as_dict(p) for p in points],
                    **({"head_ranking": ranking_dict(ranking)} if ranking is not None else {}),
                },
                indent=2,
            )
        )
        return 0
    s = settings.checked(loaded.info.n_positions)
    say(
        f"{loaded.info.label}: copy test on {s.n_spans} held-out spans of {s.half_tokens} tokens (prefill, prune, "
        f"feed again); loss on {s.n_passages} passages of {s.context_tokens} + {s.continuation_tokens} tokens; "
        f"StreamingLLM S = {s.sink_tokens}. KV bytes: one sequence's pruned tensors (float32). ±95%: over the "
        f"{s.n_spans} spans (copy) and the {s.n_passages} passages (loss, paired with the full cache), Student's t; "
        f"two points differ only where the paired interval of their difference excludes 0."
    )
    say(table(points))
    if not args.sweep and args.keep not in EVICT_KEEP_PERCENTS:
        say(f"({args.keep}% is not one of the page's budgets {', '.join(map(str, EVICT_KEEP_PERCENTS))}.)")
    return 0
