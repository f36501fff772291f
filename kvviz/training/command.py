"""Train a bundled model on Tiny Shakespeare: a small GPT-2, a small Llama with grouped-query attention, or a
small hybrid of linear attention and attention.

    python -m kvviz train --arch gpt2   --text ../shared/data/tinyshakespeare.txt  # -> kvviz/assets/bundled/
    python -m kvviz train --arch llama  --text ../shared/data/tinyshakespeare.txt  # -> kvviz/assets/bundled_gqa/
    python -m kvviz train --arch hybrid --text ../shared/data/tinyshakespeare.txt  # -> kvviz/assets/bundled_hybrid/

--arch gpt2: transformers' own GPT2LMHeadModel, 4 layers x 4 heads, head_dim 32, 256 learned positions.
--arch llama: transformers' own LlamaForCausalLM (RoPE, RMSNorm, SwiGLU MLP), 4 layers, hidden 128,
8 query heads of head_dim 16 sharing 2 K/V heads (GQA: kv_head = q_head // 4), 256 positions.
--arch hybrid: transformers' own OlmoHybridForCausalLM, hidden 128: layers 0-2 Gated DeltaNet linear attention
(4 heads, d_k = d_v = 32, a fixed-size state each), layer 3 attention (4 heads of head_dim 32, RoPE), SwiGLU MLPs;
transformers' reference PyTorch kernels (no flash-linear-attention, no causal-conv1d).
All three use tied input/output embeddings and the same byte-level BPE tokenizer (the bundled GPT-2's, 2048 ids;
trained from the corpus only if that folder has none).

Training mix: a share `--repeat-share` of each batch's rows holds a repeated span (kvviz.training.copying), so
induction heads form and the model copies in context; the rest are plain corpus windows.

Reproducible by construction: a fixed seed, a fixed number of optimizer steps (not a time budget), and
batches drawn from a seeded generator. Writes into --out:

    model.safetensors, config.json, generation_config.json   the model (fp32, safetensors only)
    tokenizer.json, tokenizer_config.json                    the tokenizer
    training_report.json                                     recipe, held-out validation loss, copying, a sample
"""

# The command (its --help is the text above): its flags and the refusals that come before any training, torch-free,
# so a refused run answers at once; kvviz.training.train (torch, transformers) is imported only to train.
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kvviz.cli import Parser, one_line, output_problem, say
from kvviz.inputs import query_values
from kvviz.training.recipes import MIN_SPAN, recipe_for

ASSETS_DIR = Path(__file__).resolve().parents[1] / "assets"
OUT_DIRS = {
    "gpt2": ASSETS_DIR / "bundled",
    "llama": ASSETS_DIR / "bundled_gqa",
    "hybrid": ASSETS_DIR / "bundled_hybrid",
}


class TrainInputError(ValueError):
    """The corpus or the output folder cannot be used; the message is one sentence saying what to change."""


MIN_TEXT_CHARS = 10_000  # below this no tokenizer and no held-out split are worth training (Tiny Shakespeare: 1.1 M)


def read_corpus(text_path: Path) -> str:
    """The training text, or TrainInputError for a file that is not UTF-8 text or is too short."""
    try:
        text = text_path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TrainInputError(
            f"{text_path.name} is not UTF-8 text; give a plain text file such as tinyshakespeare.txt."
        ) from None
    except OSError as exc:
        raise TrainInputError(f"Cannot read {text_path.name}: {exc.strerror or exc.__class__.__name__}.") from None
    if len(text.strip()) < MIN_TEXT_CHARS:
        raise TrainInputError(
            f"{text_path.name} holds {len(text.strip()):,} characters; training needs at least "
            f"{MIN_TEXT_CHARS:,} (Tiny Shakespeare has 1.1 million)."
        )
    return text


def check_out_dir(out_dir: Path) -> None:
    """Refuse, before any training, an output path that is a file, whose parent folder does not exist, or where
    nothing can be written (/sys/kernel, a read-only disk: tried with a probe file, kvviz.cli.output_problem)."""
    if problem := output_problem(out_dir, folder=True):
        raise TrainInputError(problem)


def main(argv: list[str] | None = None) -> int:
    whole, number = query_values.cli_whole, query_values.cli_number
    parser = Parser(
        prog="python -m kvviz train", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--text", type=Path, required=True, help="training corpus (UTF-8 text file)")
    parser.add_argument("--arch", choices=sorted(OUT_DIRS), default="gpt2", help="architecture (default gpt2)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: the arch's bundled folder)")
    parser.add_argument("--steps", type=whole(1, 10**7), help="optimizer steps (default: the arch's shipped recipe)")
    parser.add_argument("--batch-size", type=whole(1, 4096), help="rows of n_positions tokens per step")
    parser.add_argument(
        "--repeat-share", type=number(0.0, 1.0), help="share of each batch's rows with a repeated span, 0..1"
    )
    parser.add_argument(
        "--random-span-share", type=number(0.0, 1.0), help="of the repeated rows, the share of random tokens, 0..1"
    )
    parser.add_argument("--max-span", type=whole(MIN_SPAN, 10**6), help="longest repeated span, tokens")
    parser.add_argument("--copy-warmup-steps", type=whole(0, 10**7), help="first steps on repeated spans only")
    parser.add_argument("--position-init", choices=("normal", "sinusoid"), help="gpt2: start of the learned positions")
    parser.add_argument("--weight-decay", type=number(0.0, 10.0))
    parser.add_argument(
        "--warmup-weight-decay",
        type=number(-1.0, 10.0),
        help="weight decay during the copy warm-up (default, or < 0: the same)",
    )
    parser.add_argument(
        "--stop-after-steps", type=whole(0, 10**7), help="stop after this many steps (schedule planned for --steps)"
    )
    parser.add_argument("--seed", type=whole(0, 2**63 - 1))
    parser.add_argument(
        "--save-every",
        type=whole(0, 10**7),
        default=0,
        help="also write model + report every N steps (a checkpoint; its report says steps_done)",
    )
    parser.add_argument("--threads", type=whole(1, 256))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed its one-line message (or --help)
        return int(exc.code or 0)
    if args.text.is_dir():
        say(f"kvviz train: {one_line(args.text)} is a folder, not a text file: give one .txt file", file=sys.stderr)
        return 2
    if not args.text.is_file():
        say(f"kvviz train: no such text file: {one_line(args.text)}", file=sys.stderr)
        return 2
    given = {
        "steps": args.steps,
        "batch_size": args.batch_size,
        "repeat_share": args.repeat_share,
        "seed": args.seed,
        "threads": args.threads,
        "random_span_share": args.random_span_share,
        "max_span": args.max_span,
        "copy_warmup_steps": args.copy_warmup_steps,
        "stop_after_steps": args.stop_after_steps,
        "position_init": args.position_init,
        "weight_decay": args.weight_decay,
        "warmup_weight_decay": args.warmup_weight_decay,
    }
    recipe = recipe_for(args.arch, **{k: v for k, v in given.items() if v is not None})
    out_dir = args.out or OUT_DIRS[args.arch]
    try:
        check_out_dir(out_dir)  # refused here, before torch is imported: at once (train() checks again, for its
        read_corpus(args.text)  # other callers)
        from kvviz.training.train import train  # torch and transformers: imported only to train

        report = train(args.text, out_dir, recipe, save_every=args.save_every)
    except TrainInputError as exc:
        say(f"kvviz train: {one_line(exc, 2000)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kvviz train: interrupted; the last checkpoint (if any) is what was written.", file=sys.stderr)
        return 130
    print(json.dumps({k: report[k] for k in ("validation_loss", "copying", "parameters", "train_seconds")}))
    print(report["sample_greedy"])
    return 0
