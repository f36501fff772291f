#!/usr/bin/env bash
# Reproduce the figures in bench/README.md: two identical side-by-side runs on the GPT-2 124M shape
# (random weights, fp32, CPU) and one on the bundled model, then a summary with the repeatability check.
#   bench/speedup.sh                 # P=16 N=128 R=5, writes bench/results/*.json
#   P=16 N=64 R=3 bench/speedup.sh   # quicker
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/results}
P=${P:-16}
N=${N:-128}
R=${R:-5}
mkdir -p "$OUT"
# Run 1 also times generate(use_cache=False); run 2 skips that slow reference (same modes otherwise).
python -m kvviz bench --model random:gpt2 --prompt-len "$P" --new-tokens "$N" --repeats "$R" --json \
  > "$OUT/gpt2_run1.json"
python -m kvviz bench --model random:gpt2 --prompt-len "$P" --new-tokens "$N" --repeats "$R" --json \
  --no-generate-uncached > "$OUT/gpt2_run2.json"
# Ablation: the same engine with the weights as stored (the cache design + lean loop alone, no packing).
python -m kvviz bench --model random:gpt2 --prompt-len "$P" --new-tokens "$N" --repeats "$R" --json \
  --no-generate-uncached --no-prepack > "$OUT/gpt2_no_prepack.json"
python -m kvviz bench --model bundled --prompt-len "$P" --new-tokens "$N" --repeats "$R" --json > "$OUT/bundled.json"
python bench/summarize.py "$OUT/gpt2_run1.json" "$OUT/gpt2_run2.json" "$OUT/gpt2_no_prepack.json" "$OUT/bundled.json"
