#!/usr/bin/env bash
# Reproduce the speed-up figures in bench/README.md and docs/measurements.md: the GPT-2 124M shape (random weights, fp32,
# CPU) at 1 and 2 torch threads, and the bundled model, then a summary. Each run prints the machine's load
# average before and after (in its JSON: machine.load_before / load_after); compare runs only at equal load.
#   bench/speedup.sh                   # P=16 N=64 R=3: about 1-3 min per run on 2 cores
#   P=16 N=128 R=5 bench/speedup.sh    # the longer figures (about 2.5x longer)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/results}
P=${P:-16}
N=${N:-64}
R=${R:-3}
mkdir -p "$OUT"
for T in 1 2; do
  python -m kvviz bench --model random:gpt2 --prompt-len "$P" --new-tokens "$N" --repeats "$R" --threads "$T" \
    --no-generate-uncached --json > "$OUT/gpt2_t$T.json"
done
python -m kvviz bench --model bundled --prompt-len "$P" --new-tokens "$N" --repeats "$R" --threads 1 --json \
  > "$OUT/bundled_t1.json"
python bench/summarize.py "$OUT/gpt2_t1.json" "$OUT/gpt2_t2.json" "$OUT/bundled_t1.json"
