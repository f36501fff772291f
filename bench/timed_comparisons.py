"""The cache-internals pages' timed comparison and the speculative page's default, measured.

1. Prefix reuse vs a fresh prefill of B, the page's default prompts, `--tries` times in a row: each try is
   what one press of the page's button measures (kvviz.internals.lab.prefix.prefix_reuse: interleaved repeats,
   medians, the kvviz.measure.timing rule). Prints per try the medians, the spread and the verdict, then how many
   tries named reuse faster, how many were inside the noise and how many (wrongly) named a fresh prefill faster.
2. Speculative decoding: acceptance and verifier passes for candidate draft/verifier pairings on the page's
   default prompt and two others (deterministic: no timing).

    python bench/timed_comparisons.py --tries 8 --threads 1

Run with the app's interactive thread count (1) to see what a class sees. Prints the load average with each line.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    import torch

    from kvviz.internals.lab.prefix import prefix_reuse
    from kvviz.internals.lab.speculative import speculative_decode
    from kvviz.internals.prefix import DEFAULT_A, DEFAULT_B, TIMING_REPEATS
    from kvviz.internals.speculative import DEFAULT_PROMPT
    from kvviz.measure.load import load_label
    from kvviz.model import loaders, loading

    torch.set_num_threads(args.threads)
    gpt2, llama = loaders.load_bundled(), loaders.load_bundled(name=loading.BUNDLED_GQA)

    print(f"Prefix reuse, page defaults, bundled GPT-2, {args.threads} thread(s), {TIMING_REPEATS} repeats")
    verdicts = []
    for i in range(args.tries):
        r = prefix_reuse(gpt2, DEFAULT_A, DEFAULT_B)
        verdicts.append(r.timing.faster_name)
        print(
            f"  try {i + 1}: reuse {r.reuse.label()} | fresh {r.fresh.label()} | "
            f"{r.timing.faster_name or 'inside the noise'} | {load_label(r.timing.load_1min)}"
        )
    reuse = sum(v == "reusing A's prefix" for v in verdicts)
    noise = sum(v is None for v in verdicts)
    print(
        f"  reuse named faster in {reuse} of {args.tries} tries, inside the noise in {noise}, "
        f"fresh named faster in {args.tries - reuse - noise}"
    )

    print("\nSpeculative decoding, greedy verifier, k = 4, 24 tokens (acceptance, verifier passes)")
    prompts = {
        "page default": DEFAULT_PROMPT,
        "old default": "ROMEO: But soft, what light",
        "repeat a pattern": "red apple blue river green stone red apple blue river green",
    }
    pairings = [
        ("GPT-2 <- Llama GQA, greedy", gpt2, llama, None),
        ("Llama GQA <- GPT-2, greedy", llama, gpt2, None),
        ("GPT-2 <- itself at 0.7", gpt2, None, 0.7),
        ("GPT-2 <- itself at 0.3", gpt2, None, 0.3),
    ]
    for name, text in prompts.items():
        cells = []
        for label, verifier, draft, temperature in pairings:
            run = speculative_decode(verifier, text, 24, 4, temperature, draft=draft)
            cells.append(f"{label}: {run.acceptance_rate:.0%}, {run.verifier_passes} passes")
        print(f"  {name}: " + " | ".join(cells))


if __name__ == "__main__":
    main()
