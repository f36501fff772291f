"""Tables from a BenchResult: the JSON of `python -m kvviz bench --json`, the page's table, the CSV of every
timed pass, and the roofline points of the measured passes. Torch-free.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import asdict

from kvviz.i18n import _, ngettext
from kvviz.speedup import roofline
from kvviz.speedup.records import CACHED_MODES, ESTIMATOR, LOSSY_MODES, BenchResult


def roofline_row(result: BenchResult, name: str) -> dict[str, object]:
    verdict = result.roofline_verdict(name)
    return {
        "roofline_fraction": verdict.fraction,  # None when the run was disturbed
        "roofline_fraction_by_round": list(verdict.fractions),
        "roofline_disturbed": verdict.disturbed,
        "roofline_verdict": verdict.describe(),
        "bytes_per_token": result.bytes_per_token(name),
    }


def json_safe(value: object) -> object:
    """nan / inf (an unknown load, an empty spread) as null: JSON has no NaN, and a strict reader refuses it."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def to_dict(result: BenchResult) -> dict:
    """Plain JSON-ready numbers (the CLI's --json output); a number that is not finite is null."""
    return json_safe(_to_dict(result))


def _to_dict(result: BenchResult) -> dict:
    modes = {}
    for m in result.modes:
        entry: dict[str, object] = {
            "label": m.label,
            "median_tokens_per_s": m.median_tokens_per_s,
            "min_tokens_per_s": float(m.tokens_per_s.min()),
            "max_tokens_per_s": float(m.tokens_per_s.max()),
            "spread_pct": m.spread_pct,
            "median_decode_tokens_per_s": m.median_decode_tokens_per_s,
            "median_prefill_ms": m.median_prefill_ms,
            "median_token_ms": [round(float(x), 4) for x in m.median_token_ms],
            "speedup_over_no_cache": result.speedup(m.mode),
            "token_agreement_with_no_cache": result.token_agreement(m.mode),
            "tokens_match_no_cache": result.tokens_match(m.mode),
            "peak_cache_bytes": m.peak_cache_bytes,
        }
        if result.has("generate_cache") and m.mode != "generate_cache":
            entry["ratio_to_generate_cache"] = result.speedup(m.mode, over="generate_cache")
        if m.mode in CACHED_MODES:
            entry.update(roofline_row(result, m.mode))
        modes[m.mode] = entry
    read = roofline.combine(list(result.read_bandwidth))
    return {
        "model": result.model_spec,
        "model_label": result.model_label,
        "settings": asdict(result.settings),
        "machine": asdict(result.machine),
        "estimator": ESTIMATOR,
        "tokens_match": result.all_tokens_match,
        "weight_format": {
            "chosen": result.weight_choice.chosen,
            "how": result.weight_choice.how,
            "ms_by_format": dict(result.weight_choice.ms_by_format),
            "margin": result.weight_choice.margin,
        },
        "compile_note": result.compile_note,
        "roofline": {
            "read_bytes_per_s_by_round": [b.bytes_per_s for b in result.read_bandwidth],
            "read_bytes_per_s": read.bytes_per_s,
            "read_method": read.method,
            "read_buffer_bytes": read.buffer_bytes,
            "copy_bytes_per_s": result.copy_bandwidth.bytes_per_s,
            "copy_method": result.copy_bandwidth.method,
            "peak_flops": result.peak_flops,
            "peak_flops_by_round": list(result.peak_flops_by_round),
            "weights_fit_in_last_level_cache": result.weights_fit_in_cache,
            "weight_bytes_per_token": result.weight_bytes_per_token,
            "int8_weight_bytes_per_token": result.int8_weight_bytes_per_token,
            "kv_bytes_per_token": result.kv_bytes_per_token,
            "roofline_tokens_per_s": result.roofline_tokens_per_s(),
        },
        "op_ratio_at_end": result.op_ratio[-1][1],
        "modes": modes,
    }


def summary_rows(result: BenchResult) -> list[dict[str, object]]:
    """One row per mode: the numbers behind the charts, rounded for display (headers in the current language;
    the first column is the mode)."""
    rows = []
    for m in result.modes:
        verdict = result.roofline_verdict(m.mode) if m.mode in CACHED_MODES else None
        row: dict[str, object] = {
            _("mode"): _(m.label),
            _("tokens/s (median)"): round(m.median_tokens_per_s, 2),
            _("tokens/s min"): round(float(m.tokens_per_s.min()), 2),
            _("tokens/s max"): round(float(m.tokens_per_s.max()), 2),
            _("decode tokens/s"): round(m.median_decode_tokens_per_s, 2),
            _("prefill ms"): round(m.median_prefill_ms, 2),
            _("speed-up vs no cache"): round(result.speedup(m.mode), 2),
            _("tokens match no cache"): f"{result.token_agreement(m.mode):.0%}"
            if m.mode in LOSSY_MODES
            else _("yes")
            if result.tokens_match(m.mode)
            else _("NO"),
            _("MB read / decode token"): round(result.bytes_per_token(m.mode) / 1e6, 1) if verdict else None,
            _("read roofline"): verdict.label if verdict and verdict.fractions else None,
            _("peak cache KiB"): None if m.peak_cache_bytes is None else round(m.peak_cache_bytes / 2**10, 1),
        }
        if result.has("generate_cache"):
            row[_("x generate(cache)")] = round(result.speedup(m.mode, over="generate_cache"), 3)
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


def pass_points(result: BenchResult) -> list[roofline.PassPoint]:
    """The measured passes on the roofline: the prefill, uncached passes and cached decode steps at the
    start, middle and end of the generation (median ms over rounds)."""
    p, n, shape = result.settings.prompt_len, result.settings.new_tokens, result.shape
    row = result.kv_row_bytes
    weights = result.weight_bytes_per_token
    flat = result.mode("preallocated").median_token_ms
    # Labels (hover text) in the current language; kinds stay English keys (kvviz.figures.bench names them).
    points = [
        roofline.pass_point(
            ngettext("prefill ({tokens} token)", "prefill ({tokens} tokens)", p).format(tokens=p),
            "prefill",
            shape,
            0,
            p,
            True,
            weights,
            row,
            flat[0],
        )
    ]
    ks = sorted({k for k in (2, (n + 1) // 2, n) if 2 <= k <= n})
    uncached = result.mode("no_cache").median_token_ms
    for k in ks:
        points.append(
            roofline.pass_point(
                _("uncached pass {k} ({tokens} tokens)").format(k=k, tokens=p + k - 1),
                "uncached",
                shape,
                p + k - 2,
                1,
                False,
                weights,
                row,
                uncached[k - 1],
            )
        )
    steps = {
        "preallocated": ("cached decode", _("cached decode, step {k}")),
        "int8": ("cached decode, int8 weights", _("cached decode, int8 weights, step {k}")),
    }
    for name, (kind, label) in steps.items():
        if result.has(name):
            ms = result.mode(name).median_token_ms
            w = result.int8_weight_bytes_per_token if name == "int8" else weights
            points += [
                roofline.pass_point(label.format(k=k), kind, shape, p + k - 2, 1, True, w, row, ms[k - 1]) for k in ks
            ]
    return points
