"""The ceiling torch's own fp32 kernels put on decode speed: every matrix of one GPT-2 decode step, nothing else.

    python bench/gemv_ceiling.py --model random:gpt2 --threads 2 --rounds 15 [--json out.json]

A decode step of GPT-2 124M multiplies one activation vector by 49 matrices (4 per block, then the tied LM head):
~497 MB of fp32 weights streamed from memory. Whatever an engine does around them (layer norms, attention over
the cache, Python), it cannot be faster than these 49 GEMVs. So this script times exactly them, with each fp32
kernel torch offers on CPU, in interleaved rounds beside the read-bandwidth probe the benchmark uses:

    stored        torch.addmm(b, x, W) on Conv1D's [in, out] weight, as stored (MKL GEMV; the flat engine's "stored")
    linear        F.linear(x, W^T, b) on an [out, in] copy (MKL GEMV, rows contiguous: nn.Linear's layout)
    onednn        oneDNN's packed linear on a blocked copy (the flat engine's "onednn"; what torch.compile emits)
    mkl_packed    MKL's packed sgemm (torch.ops.mkl._mkl_linear: what TorchScript's freezing emitted)

and prints, per kernel, its best and median round, the bytes/s it streamed and the tokens/s bound it implies
(1000 / ms per step): no engine built on that kernel can decode faster here, at this thread count.
Compare the best bound with llama.cpp's measured tokens/s (bench/llamacpp_compare.py): if llama.cpp's whole
decode step beats torch's matrices alone, no Python-side work can close the gap.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_ROUNDS = 50


def kernels(model) -> tuple[dict[str, list[Callable[[], object]]], int]:
    """{kernel name: one call per decode matrix}, and the fp32 bytes of those matrices."""
    import torch
    import torch.nn.functional as F

    from kvviz.speedup.flat_engine import KERNELS, FormatUnavailable, onednn_pack

    mats = []
    for block in model.transformer.h:
        for conv in (block.attn.c_attn, block.attn.c_proj, block.mlp.c_fc, block.mlp.c_proj):
            mats.append((conv.weight.detach(), conv.bias.detach()))  # [in, out]
    mats.append((model.lm_head.weight.detach().t(), None))  # the tied head, read as wte^T (a view)
    weight_bytes = sum(w.numel() * w.element_size() for w, _ in mats)
    xs = [torch.randn(1, w.shape[0]) for w, _ in mats]
    out_in = [(w.t().contiguous(), b) for w, b in mats]
    stored, onednn = KERNELS["stored"], KERNELS["onednn"]  # the flat engine's own two fp32 kernels
    calls: dict[str, list[Callable[[], object]]] = {
        "stored": [lambda x=x, w=w, b=b: stored(x, w, b) for x, (w, b) in zip(xs, mats, strict=True)],
        "linear": [lambda x=x, w=w, b=b: F.linear(x, w, b) for x, (w, b) in zip(xs, out_in, strict=True)],
    }
    try:
        packed = [(onednn_pack(w, b), b) for w, b in mats]  # probed against MKL, as the engine packs
        calls["onednn"] = [lambda x=x, w=w, b=b: onednn(x, w, b) for x, (w, b) in zip(xs, packed, strict=True)]
    except FormatUnavailable as exc:
        print(f"onednn packed linear unavailable: {exc}", file=sys.stderr)
    try:
        mkl = [(torch.ops.mkl._mkl_reorder_linear_weight(w, 1), w, b) for w, b in out_in]
        calls["mkl_packed"] = [
            lambda x=x, p=p, w=w, b=b: torch.ops.mkl._mkl_linear(x, p, w, b, 1)
            for x, (p, w, b) in zip(xs, mkl, strict=True)
        ]
    except (AttributeError, RuntimeError) as exc:
        print(f"MKL packed linear unavailable: {exc}", file=sys.stderr)
    with torch.inference_mode():  # every kernel computes the same products (else its time means nothing)
        want = [f() for f in calls["stored"]]
        for name, fs in calls.items():
            worst = max(float((f() - w).abs().max()) for f, w in zip(fs, want, strict=True))
            if worst > 1e-3:
                raise SystemExit(f"{name} disagrees with MKL on the stored layout by {worst:.2e}")
    return calls, weight_bytes


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python bench/gemv_ceiling.py", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="random:gpt2", help="a GPT-2 kvviz can load (default random:gpt2)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=15, help=f"interleaved rounds, 1..{MAX_ROUNDS}")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    if not 1 <= args.rounds <= MAX_ROUNDS or args.threads < 1:
        parser.error(f"--rounds must be 1..{MAX_ROUNDS} and --threads >= 1")
    sys.path.insert(0, str(REPO))
    import torch

    from kvviz.measure.load import load_average
    from kvviz.model.loaders import load_model
    from kvviz.speedup import machine, probes

    torch.set_num_threads(args.threads)
    model = load_model(args.model, attn_implementation="sdpa").model
    calls, weight_bytes = kernels(model)
    probe = probes.ReadProbe()
    load_before = load_average()[0]
    ms: dict[str, list[float]] = {name: [] for name in calls}
    read_gbs: list[float] = []
    with torch.inference_mode():
        for fs in calls.values():  # warm-up: first calls allocate and pick code paths
            for f in fs:
                f()
        for _ in range(args.rounds):
            read_gbs.append(probe.measure(3).bytes_per_s / 1e9)
            for name, fs in calls.items():
                began = time.perf_counter()
                for f in fs:
                    f()
                ms[name].append((time.perf_counter() - began) * 1000.0)
    read = statistics.median(read_gbs)
    report = {
        "model": args.model,
        "cpu": machine.cpu_name(),
        "threads": args.threads,
        "rounds": args.rounds,
        "torch": torch.__version__,
        "weight_bytes_per_step": weight_bytes,
        "load_before": load_before,
        "load_after": load_average()[0],
        "read_probe_gb_s_median": read,
        "read_probe_gb_s_by_round": read_gbs,
        "read_roofline_tokens_per_s": read * 1e9 / weight_bytes,
        "kernels": {
            name: {
                "best_ms": min(v),
                "median_ms": statistics.median(v),
                "gb_s_at_best": weight_bytes / min(v) / 1e6,
                "tokens_per_s_bound": 1000.0 / min(v),
            }
            for name, v in ms.items()
        },
    }
    print(
        f"{report['cpu']}, {args.threads} threads, torch {report['torch']}, load {load_before:.2f} -> "
        f"{report['load_after']:.2f}; {weight_bytes / 1e6:.1f} MB of fp32 matrices per decode step"
    )
    print(
        f"read probe (median of {args.rounds} rounds): {read:.1f} GB/s -> read roofline "
        f"{report['read_roofline_tokens_per_s']:.1f} tokens/s"
    )
    print(f"{'kernel':<12} {'best ms':>8} {'median ms':>10} {'GB/s':>6} {'bound tok/s':>12} {'of roofline':>12}")
    for name, k in sorted(report["kernels"].items(), key=lambda item: item[1]["best_ms"]):
        print(
            f"{name:<12} {k['best_ms']:8.2f} {k['median_ms']:10.2f} {k['gb_s_at_best']:6.1f} "
            f"{k['tokens_per_s_bound']:12.1f} {k['tokens_per_s_bound'] / report['read_roofline_tokens_per_s']:12.0%}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
