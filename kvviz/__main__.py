"""`python -m kvviz <command> ...`: memory, ops, bench, train. Each command lives in its own module."""
from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "memory": ("kvviz.cli_memory", "KV-cache bytes for a model config (presets, config.json, --json)"),
    "claims": ("kvviz.cli_claims", "published KV-cache figures and popular sentences, checked (--json)"),
    "ops": ("kvviz.cli_ops", "attention/projection/MLP op counts with vs without cache (--json)"),
    "bench": ("kvviz.cli_bench", "measured speed-up: no cache vs transformers caches vs flat cache, int8 (--json)"),
    "train": ("kvviz.train", "re-train the bundled Tiny-Shakespeare GPT-2"),
}


def usage() -> str:
    lines = ["usage: python -m kvviz <command> [options]", "", "commands:"]
    lines += [f"  {name:<8} {help_text}" for name, (_, help_text) in COMMANDS.items()]
    lines += ["", "`python -m kvviz <command> --help` for a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in {"-h", "--help"}:
        print(usage())
        return 0
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"kvviz: unknown command {command!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[command][0])
    try:
        return module.main(rest) or 0
    except BrokenPipeError:  # output piped into `head` and closed early: not an error worth a traceback
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
