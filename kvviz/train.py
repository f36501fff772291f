"""Train the bundled model: a small GPT-2 (transformers' own GPT2LMHeadModel) on Tiny Shakespeare.

    python -m kvviz.train --text ../shared/data/tinyshakespeare.txt

Reproducible by construction: a fixed seed, a fixed number of optimizer steps (not a time budget), and
batches drawn from a seeded generator. Writes into kvviz/assets/bundled/:

    model.safetensors, config.json, generation_config.json   the model (fp32, safetensors only)
    tokenizer.json, tokenizer_config.json                    a GPT-2-style byte-level BPE tokenizer
    training_report.json                                     recipe, held-out validation loss, a sample

The shape (4 layers x 4 heads, head_dim 32, 256 positions) is chosen so the cache pictures stay legible
and a 2-core CPU trains it to readable verse in about 20 minutes.
"""
from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

BUNDLED_DIR = Path(__file__).resolve().parent / "assets" / "bundled"
END_OF_TEXT = "<|endoftext|>"


@dataclass(frozen=True)
class Recipe:
    vocab_size: int = 2048
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    n_positions: int = 256
    dropout: float = 0.1
    batch_size: int = 16
    steps: int = 3000
    learning_rate: float = 2e-3
    min_learning_rate: float = 2e-4
    warmup_steps: int = 100
    weight_decay: float = 0.1
    validation_fraction: float = 0.1
    seed: int = 1337
    threads: int = 2


def train_tokenizer(text: str, vocab_size: int) -> GPT2TokenizerFast:
    """A byte-level BPE exactly like GPT-2's (same pre-tokenizer and decoder), but with a small vocabulary
    learned from this corpus, so common words are single tokens."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[END_OF_TEXT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # every byte encodable: no unknown tokens
        show_progress=False,
    )
    tok.train_from_iterator([text], trainer=trainer)
    return GPT2TokenizerFast(
        tokenizer_object=tok, bos_token=END_OF_TEXT, eos_token=END_OF_TEXT, unk_token=END_OF_TEXT
    )


def learning_rate_at(step: int, recipe: Recipe) -> float:
    """Linear warm-up, then cosine decay to min_learning_rate (as in nanoGPT)."""
    if step < recipe.warmup_steps:
        return recipe.learning_rate * (step + 1) / recipe.warmup_steps
    progress = (step - recipe.warmup_steps) / max(1, recipe.steps - recipe.warmup_steps)
    cosine = 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
    return recipe.min_learning_rate + cosine * (recipe.learning_rate - recipe.min_learning_rate)


def random_batch(ids: torch.Tensor, recipe: Recipe, gen: torch.Generator) -> torch.Tensor:
    """batch_size windows of n_positions tokens: (B, T). The model shifts labels itself."""
    starts = torch.randint(0, len(ids) - recipe.n_positions, (recipe.batch_size,), generator=gen)
    return torch.stack([ids[s : s + recipe.n_positions] for s in starts.tolist()])


@torch.no_grad()
def validation_loss(model: GPT2LMHeadModel, val_ids: torch.Tensor, block: int) -> float:
    """Mean next-token loss over the whole held-out split, in non-overlapping windows."""
    model.eval()
    n_windows = (len(val_ids) - 1) // block
    windows = val_ids[: n_windows * block].view(n_windows, block)
    losses = [model(input_ids=w, labels=w).loss.item() for w in windows.split(32)]
    sizes = [len(w) for w in windows.split(32)]
    model.train()
    return sum(l * s for l, s in zip(losses, sizes)) / sum(sizes)


def sample_text(model: GPT2LMHeadModel, tokenizer: GPT2TokenizerFast, prompt: str, n_tokens: int) -> str:
    model.eval()
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    torch.manual_seed(0)
    out = model.generate(ids, max_new_tokens=n_tokens, do_sample=False, pad_token_id=tokenizer.eos_token_id)
    model.train()
    return tokenizer.decode(out[0])


def train(text_path: Path, out_dir: Path, recipe: Recipe) -> dict:
    torch.manual_seed(recipe.seed)
    torch.set_num_threads(recipe.threads)
    text = text_path.read_text(encoding="utf-8")
    split_at = int(len(text) * (1 - recipe.validation_fraction))
    train_text, val_text = text[:split_at], text[split_at:]

    tokenizer = train_tokenizer(train_text, recipe.vocab_size)
    train_ids = torch.tensor(tokenizer(train_text).input_ids, dtype=torch.long)
    val_ids = torch.tensor(tokenizer(val_text).input_ids, dtype=torch.long)

    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=recipe.n_positions,
        n_embd=recipe.n_embd,
        n_layer=recipe.n_layer,
        n_head=recipe.n_head,
        resid_pdrop=recipe.dropout,
        embd_pdrop=recipe.dropout,
        attn_pdrop=recipe.dropout,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    model = GPT2LMHeadModel(config)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": recipe.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=recipe.learning_rate,
        betas=(0.9, 0.95),
    )
    gen = torch.Generator().manual_seed(recipe.seed)
    started = time.perf_counter()
    model.train()
    for step in range(recipe.steps):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate_at(step, recipe)
        batch = random_batch(train_ids, recipe, gen)
        loss = model(input_ids=batch, labels=batch).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 100 == 0 or step == recipe.steps - 1:
            elapsed_s = time.perf_counter() - started
            print(f"step {step:5d}  loss {loss.item():.3f}  lr {group['lr']:.2e}  {elapsed_s:7.0f} s", flush=True)

    val_loss = validation_loss(model, val_ids, recipe.n_positions)
    sample = sample_text(model, tokenizer, "ROMEO:", 80)
    report = {
        "recipe": asdict(recipe),
        "corpus": text_path.name,
        "corpus_chars": len(text),
        "train_tokens": len(train_ids),
        "validation_tokens": len(val_ids),
        "validation_loss": round(val_loss, 4),
        "validation_perplexity": round(math.exp(val_loss), 2),
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_seconds": round(time.perf_counter() - started, 1),
        "torch": torch.__version__,
        "sample_prompt": "ROMEO:",
        "sample_greedy": sample,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    (out_dir / "training_report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--text", type=Path, required=True, help="training corpus (UTF-8 text file)")
    parser.add_argument("--out", type=Path, default=BUNDLED_DIR, help="output folder")
    parser.add_argument("--steps", type=int, default=Recipe.steps)
    parser.add_argument("--threads", type=int, default=Recipe.threads)
    args = parser.parse_args(argv)
    if not args.text.is_file():
        parser.error(f"no such text file: {args.text}")
    recipe = Recipe(steps=args.steps, threads=args.threads)
    report = train(args.text, args.out, recipe)
    print(json.dumps({k: report[k] for k in ("validation_loss", "parameters", "train_seconds")}))
    print(report["sample_greedy"])


if __name__ == "__main__":
    main()
