"""Summarize `python -m kvviz bench --json` outputs: the figures quoted in bench/README.md.

    python bench/summarize.py bench/results/gpt2_run1.json bench/results/gpt2_run2.json [more.json ...]

Prints, per file, each mode's median tokens/s (min-max), its ratio to model.generate(use_cache=True), its
speed-up over no cache and its share of the roofline; then, for every pair of files on the same model and
settings, how far apart their median speed-ups are (the repeatability figure).
"""
from __future__ import annotations

import json
import sys
from itertools import combinations
from pathlib import Path

SPEEDUPS = (("preallocated", "no_cache"), ("dynamic", "no_cache"), ("preallocated", "generate_cache"),
            ("dynamic", "generate_cache"))


def speedup(result: dict, mode: str, over: str) -> float | None:
    modes = result["modes"]
    if mode not in modes or over not in modes:
        return None
    return modes[mode]["median_tokens_per_s"] / modes[over]["median_tokens_per_s"]


def describe(path: Path, result: dict) -> list[str]:
    s, m, roof = result["settings"], result["machine"], result["roofline"]
    lines = [
        f"== {path.name}: {result['model']}  P={s['prompt_len']} N={s['new_tokens']} repeats={s['repeats']}  "
        f"{m['cpu']}, {m['threads']} threads, torch {m['torch_version']}, {m['dtype']}",
        f"   bandwidth {roof['bandwidth_bytes_per_s'] / 1e9:.1f} GB/s, {roof['bytes_per_token'] / 1e6:.1f} MB/token "
        f"-> roofline {roof['roofline_tokens_per_s']:.1f} tok/s; tokens match: {result['tokens_match']}",
        f"   pre-allocated weights: {result.get('preallocated_weight_format', '?')}",
    ]
    for name, e in result["modes"].items():
        extra = f"  x generate(cache) {e['ratio_to_generate_cache']:.3f}" if "ratio_to_generate_cache" in e else ""
        roof_txt = f"  roofline {e['roofline_fraction'] * 100:5.1f}%" if "roofline_fraction" in e else ""
        lines.append(
            f"   {name:<18} {e['median_tokens_per_s']:8.2f} tok/s ({e['min_tokens_per_s']:.2f}-"
            f"{e['max_tokens_per_s']:.2f}, spread {e['spread_pct']:.1f}%)  decode {e['median_decode_tokens_per_s']:8.2f}"
            f"  x no cache {e['speedup_over_no_cache']:6.2f}{extra}{roof_txt}"
        )
    return lines


def main(paths: list[str]) -> int:
    results = [(Path(p), json.loads(Path(p).read_text())) for p in paths]
    for path, result in results:
        print("\n".join(describe(path, result)))
    for (pa, a), (pb, b) in combinations(results, 2):
        same = ("prompt_len", "new_tokens", "repeats", "threads", "prepack_weights")
        if a["model"] != b["model"] or any(a["settings"][k] != b["settings"][k] for k in same):
            continue
        print(f"== repeatability {pa.name} vs {pb.name}")
        for mode, over in SPEEDUPS:
            x, y = speedup(a, mode, over), speedup(b, mode, over)
            if x is not None and y is not None:
                print(f"   {mode}/{over}: {x:.3f} vs {y:.3f}  differ by {abs(x - y) / min(x, y) * 100:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
