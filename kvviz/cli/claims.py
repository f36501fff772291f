"""`python -m kvviz claims`: every published KV-cache figure and popular sentence kvviz checks, with its verdict.

    python -m kvviz claims                      # one block per claim: quote, verdict, finding, arithmetic
    python -m kvviz claims --gpu "NVIDIA T4"    # the prefill claim worked out on another GPU
    python -m kvviz claims --json               # the same as JSON (exact integers)

Bad input ends with one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from kvviz import claims
from kvviz.cli import ArgumentError, Parser, one_line, say


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="python -m kvviz claims",
        description="Published KV-cache figures and sentences, checked.",
        refusal=ArgumentError,
    )
    p.add_argument("--gpu", default=claims.DEFAULT_GPU, help=f"for the prefill claim: {', '.join(claims.GPU_COMPUTE)}")
    p.add_argument("--json", action="store_true", help="print JSON")
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.gpu not in claims.GPU_COMPUTE:
            raise ArgumentError(
                f"unknown GPU {one_line(repr(args.gpu), 40)}; choose one of: {', '.join(claims.GPU_COMPUTE)}"
            )
    except ArgumentError as exc:
        say(f"kvviz claims: {one_line(exc, 2000)}", file=sys.stderr)
        return 2
    found = claims.all_claims(args.gpu)
    if args.json:
        print(json.dumps([c.as_dict() for c in found], indent=2))
        return 0
    print(f"{claims.UNITS_RULE}\n")
    for c in found:
        print(f"[{c.verdict.upper()}] {c.quote}")
        if c.translation:
            print(f"  translation: {c.translation}")
        print(f"  source: {c.source}\n  {c.finding}")
        print("\n".join(f"    {line}" for line in c.arithmetic))
        print(f"  see it live: {c.page.title} ({c.page.file})\n")
    return 0
