"""`python -m kvviz <command> ...`: memory, claims, ops, bench, evict, train. Each command lives in its own module."""

from __future__ import annotations

import importlib
import os
import sys

from kvviz.cli import one_line, say

COMMANDS = {
    "memory": ("kvviz.cli.memory", "KV-cache bytes for a model config (presets, config.json, --json)"),
    "claims": ("kvviz.cli.claims", "published KV-cache figures and popular sentences, checked (--json)"),
    "ops": ("kvviz.cli.ops", "attention/projection/MLP op counts with vs without cache (--json)"),
    "bench": ("kvviz.cli.bench", "measured speed-up: no cache vs transformers caches vs flat cache, int8 (--json)"),
    "evict": ("kvviz.cli.evict", "KV-cache eviction policies on a bundled model: bytes, copy test, loss (--json)"),
    "train": ("kvviz.training.command", "re-train a bundled Tiny-Shakespeare model (--arch gpt2, llama or hybrid)"),
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
        say(f"kvviz: unknown command {one_line(repr(command), 60)}\n\n{usage()}", file=sys.stderr)
        return 2
    try:
        module = importlib.import_module(COMMANDS[command][0])
        return module.main(rest) or 0
    except BrokenPipeError:  # output piped into `head` and closed early: not an error worth a traceback
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        say(f"kvviz {command}: interrupted.", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the last line of defence: a user never sees a traceback
        if os.environ.get("KVVIZ_DEBUG"):
            raise
        say(
            f"kvviz {command}: failed ({type(exc).__name__}: {one_line(exc, 160)}). This is a kvviz bug: please "
            "report the command; KVVIZ_DEBUG=1 shows the traceback.",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
