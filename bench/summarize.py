"""Summarize `python -m kvviz bench --json` outputs: the figures quoted in bench/README.md and docs/measurements.md.

    python bench/summarize.py bench/results/gpt2_t1.json bench/results/gpt2_t2.json [more.json ...]

Prints, per file, the machine (CPU, threads and why, load average before and after), the weight format the
flat engine measured fastest and by how much, the read/copy bandwidth and peak FLOP/s, and per mode the median
tokens/s (min-max), the speed-up over no cache and over generate(use_cache=True) (one estimator, printed),
the token agreement, and the share of the read roofline or "disturbed".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def describe(path: Path, result: dict) -> list[str]:
    s, m, roof, fmt = result["settings"], result["machine"], result["roofline"], result["weight_format"]
    reads = ", ".join(f"{x / 1e9:.1f}" for x in roof["read_bytes_per_s_by_round"])
    margin = f", {fmt['margin']:.2f}x" if fmt.get("margin") else ""
    lines = [
        f"== {path.name}: {result['model']}  P={s['prompt_len']} N={s['new_tokens']} rounds={s['repeats']}",
        f"   {m['cpu']}, {m['threads']} threads ({m['thread_reason']}); load {m['load_before'][0]:.2f} before, "
        f"{m['load_after'][0]:.2f} after; torch {m['torch_version']}, {m['dtype']}",
        f"   weights: {fmt['chosen']} ({fmt['how']}{margin}; one decode step's matrices: "
        + ", ".join(f"{k} {v:.2f} ms" for k, v in fmt["ms_by_format"].items())
        + ")",
        f"   read GB/s by round: {reads}; copy {roof['copy_bytes_per_s'] / 1e9:.1f} GB/s (read+write); "
        f"peak matmul {roof['peak_flops'] / 1e9:.0f} GFLOP/s; fp32 {roof['weight_bytes_per_token'] / 1e6:.1f} MB "
        f"+ K/V {roof['kv_bytes_per_token'] / 1e6:.2f} MB per decode token -> {roof['roofline_tokens_per_s']:.1f} tok/s",
        f"   estimator: {result['estimator']}; exact modes match no cache: {result['tokens_match']}",
    ]
    for name, e in result["modes"].items():
        gen = f"  x generate {e['ratio_to_generate_cache']:.2f}" if "ratio_to_generate_cache" in e else ""
        if "roofline_verdict" in e:
            roof_txt = "  DISTURBED" if e["roofline_disturbed"] else f"  read roofline {e['roofline_fraction']:.0%}"
        else:
            roof_txt = ""
        agree = f"  tokens {e['token_agreement_with_no_cache']:.0%}"
        lines.append(
            f"   {name:<18} {e['median_tokens_per_s']:8.2f} tok/s ({e['min_tokens_per_s']:.2f}-"
            f"{e['max_tokens_per_s']:.2f})  decode {e['median_decode_tokens_per_s']:7.2f}"
            f"  x no cache {e['speedup_over_no_cache']:5.2f}{gen}{agree}{roof_txt}"
        )
    return lines


def main(paths: list[str]) -> int:
    for p in paths:
        print("\n".join(describe(Path(p), json.loads(Path(p).read_text()))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
