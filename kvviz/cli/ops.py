"""`python -m kvviz ops`: cumulative op counts of a generation, with and without the KV cache, per component.

    python -m kvviz ops --preset gpt2 --prompt-len 16 --new-tokens 1000 --json
    python -m kvviz ops --layers 4 --heads 4 --head-dim 32 --hidden 128 --d-ff 512 --vocab 2048 --new-tokens 50

Units: 1 op = 1 multiply-add; FLOPs = 2 x ops. Convention: see kvviz.ops (N new tokens = N forward passes,
the first one the prefill). Bad input ends with one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from kvviz import ops
from kvviz.cli import Parser, one_line, say, within
from kvviz.memory import MemoryInputError
from kvviz.memory.presets import get_preset, ops_presets


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="python -m kvviz ops",
        description="Op counts with vs without the KV cache (1 op = 1 multiply-add).",
        refusal=ops.OpsInputError,
    )
    # Whole numbers within the Count-the-work page's own limits (pages/attention_ops.py), read by the app's parser
    p.add_argument("--preset", help=f"one of: {', '.join(ops_presets())}")
    p.add_argument("--layers", type=within(ops.INPUTS["layers"]))
    p.add_argument("--heads", type=within(ops.INPUTS["heads"]))
    p.add_argument("--kv-heads", type=within(ops.INPUTS["kv_heads"]))
    p.add_argument("--head-dim", type=within(ops.INPUTS["head_dim"]))
    p.add_argument("--hidden", type=within(ops.INPUTS["hidden"]))
    p.add_argument("--d-ff", type=within(ops.INPUTS["dff"]), help="MLP inner width (default 4 x hidden)")
    p.add_argument("--vocab", type=within(ops.INPUTS["vocab"]))
    p.add_argument("--gated-mlp", action="store_true", help="3 MLP matrices (SwiGLU) instead of GPT-2's 2")
    p.add_argument("--prompt-len", type=within(ops.INPUTS["prompt"]), default=16, help="P prompt tokens (default 16)")
    p.add_argument("--new-tokens", type=within(ops.INPUTS["new"]), default=100, help="N generated tokens (default 100)")
    p.add_argument(
        "--lm-head",
        choices=("last", "all"),
        default="last",
        help="logits for the last position only (generate(), default) or every position fed (plain model(ids))",
    )
    p.add_argument("--json", action="store_true")
    return p


def shape_from_args(args: argparse.Namespace) -> ops.ModelShape:
    explicit = [args.layers, args.heads, args.head_dim, args.hidden, args.vocab]
    if args.preset is not None:
        if any(v is not None for v in explicit):
            raise ops.OpsInputError("give either --preset or explicit numbers, not both")
        preset = get_preset(args.preset)
        if preset.shape is None:
            raise ops.OpsInputError(
                f"{preset.name} has no op-count shape (MoE or MLA); choose one of {', '.join(ops_presets())}"
            )
        return preset.shape
    if any(v is None for v in explicit):
        raise ops.OpsInputError("give --preset NAME, or all of --layers --heads --head-dim --hidden --vocab")
    return ops.ModelShape(
        n_layer=args.layers,
        n_head=args.heads,
        n_kv_heads=args.heads if args.kv_heads is None else args.kv_heads,
        head_dim=args.head_dim,
        n_embd=args.hidden,
        d_ff=4 * args.hidden if args.d_ff is None else args.d_ff,
        vocab_size=args.vocab,
        mlp_matrices=3 if args.gated_mlp else 2,
    )


def report(shape: ops.ModelShape, prompt_len: int, new_tokens: int, lm_head_all: bool) -> dict:
    cached, uncached = ops.generation_totals(shape, prompt_len, new_tokens, lm_head_all_positions=lm_head_all)
    c, u = cached.as_dict(), uncached.as_dict()
    return {
        "model": shape.name,
        "prompt_len": prompt_len,
        "new_tokens": new_tokens,
        "forward_passes": new_tokens,
        "lm_head_positions": "all" if lm_head_all else "last",
        "units": "ops = multiply-adds; flops = 2 x ops; attention_dot_products = query.key products of head_dim",
        "convention": "causal (query at p scores keys 0..p); pass 1 = prefill of the prompt; pass k feeds token k-1",
        "cached": c,
        "uncached": u,
        "ratio_uncached_over_cached": {k: (u[k] / c[k] if c[k] else None) for k in c if k.endswith("_ops")},
        "summary": ops.savings_sentence(shape, prompt_len, new_tokens, lm_head_all_positions=lm_head_all),
    }


def main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
        shape = shape_from_args(args)
        result = report(shape, args.prompt_len, args.new_tokens, args.lm_head == "all")
    except (ops.OpsInputError, MemoryInputError) as exc:
        say(f"kvviz ops: {one_line(exc, 2000)}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"{result['model']}: prompt {args.prompt_len} tokens, {args.new_tokens} new tokens "
        f"(1 op = 1 multiply-add; FLOPs = 2 x ops)"
    )
    print(f"{'component':<24} {'with cache':>22} {'without cache':>24} {'ratio':>10}")
    for comp in ops.COMPONENTS + ("total",):
        key = f"{comp}_ops"
        ratio = result["ratio_uncached_over_cached"][key]
        label = ops.COMPONENT_LABELS.get(comp, "Total")
        print(f"{label:<24} {result['cached'][key]:>22,} {result['uncached'][key]:>24,} {ratio:>9.1f}x")
    print(result["summary"])
    return 0
