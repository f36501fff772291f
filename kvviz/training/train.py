"""The training run of `python -m kvviz train` (kvviz.training.command: what it trains, its flags, and the refusals
that come before torch is imported): the tokenizer, the model built from its Recipe with transformers' own classes,
the seeded batches of corpus windows and repeated spans, the optimizer's schedule, and the report and files it
writes (model.safetensors, the tokenizer, training_report.json).
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    GPT2TokenizerFast,
    LlamaConfig,
    LlamaForCausalLM,
    OlmoHybridConfig,
    OlmoHybridForCausalLM,
)

from kvviz.training import command, copying
from kvviz.training.command import OUT_DIRS, TrainInputError, check_out_dir, read_corpus
from kvviz.training.recipes import Recipe, learning_rate_at, weight_decay_at

BUNDLED_DIR = OUT_DIRS["gpt2"]
END_OF_TEXT = "<|endoftext|>"
COPY_SEQUENCES = 50  # held-out sequences whose second half repeats the first
COPY_HALF_TOKENS = 100
COPY_WARMUP_POSITIONS = 64  # row length in the copy warm-up (spans of 8..32 tokens): short rows are cheap, and
# the induction circuit forms in them within ~1,000 steps; the mixed full-length rows afterwards stretch it to
# copies 128 tokens apart in a few hundred steps
COPY_RANDOM_SEED = 2024  # the random-token copy test (kvviz.training.copying.random_repeats); not the training seed


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
    return GPT2TokenizerFast(tokenizer_object=tok, bos_token=END_OF_TEXT, eos_token=END_OF_TEXT, unk_token=END_OF_TEXT)


def build_model(recipe: Recipe, vocab_size: int, eos_id: int) -> torch.nn.Module:
    if recipe.arch == "gpt2":
        config = GPT2Config(
            vocab_size=vocab_size,
            n_positions=recipe.n_positions,
            n_embd=recipe.n_embd,
            n_layer=recipe.n_layer,
            n_head=recipe.n_head,
            resid_pdrop=recipe.dropout,
            embd_pdrop=recipe.dropout,
            attn_pdrop=recipe.dropout,
            bos_token_id=eos_id,
            eos_token_id=eos_id,
        )
        model = GPT2LMHeadModel(config)
        if recipe.position_init == "sinusoid":
            with torch.no_grad():
                model.transformer.wpe.weight.copy_(sinusoid_positions(recipe.n_positions, recipe.n_embd))
        return model
    if recipe.arch == "hybrid":
        return OlmoHybridForCausalLM(hybrid_config(recipe, vocab_size, eos_id))
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=recipe.n_embd,
        intermediate_size=recipe.intermediate_size,
        num_hidden_layers=recipe.n_layer,
        num_attention_heads=recipe.n_head,
        num_key_value_heads=recipe.n_kv_heads,
        head_dim=recipe.n_embd // recipe.n_head,
        max_position_embeddings=recipe.n_positions,
        attention_dropout=recipe.dropout,
        tie_word_embeddings=True,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
    )
    return LlamaForCausalLM(config)


def hybrid_config(recipe: Recipe, vocab_size: int, eos_id: int) -> OlmoHybridConfig:
    """The hybrid's config: recipe.full_attention_layers keep a K/V cache, every other layer is Gated DeltaNet
    linear attention (a [linear_heads, d_k, d_v] recurrent state and a short-convolution state, fixed in size)."""
    layer_types = [
        "full_attention" if i in recipe.full_attention_layers else "linear_attention" for i in range(recipe.n_layer)
    ]
    return OlmoHybridConfig(
        vocab_size=vocab_size,
        hidden_size=recipe.n_embd,
        intermediate_size=recipe.intermediate_size,
        num_hidden_layers=recipe.n_layer,
        num_attention_heads=recipe.n_head,
        num_key_value_heads=recipe.n_kv_heads,
        max_position_embeddings=recipe.n_positions,
        layer_types=layer_types,
        linear_num_key_heads=recipe.linear_heads,
        linear_num_value_heads=recipe.linear_heads,
        linear_key_head_dim=recipe.linear_head_dim,
        linear_value_head_dim=recipe.linear_head_dim,
        linear_conv_kernel_dim=recipe.conv_kernel,
        attention_dropout=recipe.dropout,
        tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        pad_token_id=None,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
    )


SINUSOID_SCALE = 0.05  # the table's rows have norm 0.05 x sqrt(n_embd / 2) = 0.4, beside token embeddings of ~0.2


def sinusoid_positions(n_positions: int, n_embd: int) -> torch.Tensor:
    """The original Transformer's position table (Vaswani et al. 2017), scaled: a starting point for GPT-2's
    learned positions in which "one position back" is a fixed rotation, so a previous-token head, the first half
    of an induction head, is easy to learn. Training still updates it like any other weight."""
    position = torch.arange(n_positions, dtype=torch.float32).unsqueeze(1)
    frequency = torch.exp(torch.arange(0, n_embd, 2, dtype=torch.float32) * (-math.log(10000.0) / n_embd))
    table = torch.zeros(n_positions, n_embd)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)
    return table * SINUSOID_SCALE


def random_batch(
    ids: torch.Tensor, recipe: Recipe, vocab_size: int, gen: torch.Generator, step: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, labels), each [batch_size, seq_len]: plain corpus windows, then round(batch_size x repeat_share)
    rows with a repeated span; during the first copy_warmup_steps, rows of COPY_WARMUP_POSITIONS tokens, all
    repeated random spans. The model shifts labels itself."""
    if step < recipe.copy_warmup_steps:  # short rows of random spans only: cheap, and induction forms first
        return copying.repeat_batch(ids, recipe.copy_warmup_batch_size, COPY_WARMUP_POSITIONS, vocab_size, gen, 1.0)
    n_repeat = round(recipe.batch_size * recipe.repeat_share)
    n_plain = recipe.batch_size - n_repeat
    starts = torch.randint(0, len(ids) - recipe.n_positions, (n_plain,), generator=gen)
    windows = [ids[s : s + recipe.n_positions] for s in starts.tolist()]
    plain = torch.stack(windows) if windows else ids[:0].view(0, recipe.n_positions)
    if n_repeat == 0:
        return plain, plain
    rep_inputs, rep_labels = copying.repeat_batch(
        ids, n_repeat, recipe.n_positions, vocab_size, gen, recipe.random_span_share, recipe.max_span
    )
    return torch.cat([plain, rep_inputs]), torch.cat([plain, rep_labels])


def warmup_positions(batch: torch.Tensor, recipe: Recipe, gen: torch.Generator) -> torch.Tensor | None:
    """Position ids for a warm-up batch: each short row starts at a random offset when recipe.warmup_anywhere.
    Learned positions (GPT-2) are trained only where rows put them: rows always at 0..63 would leave the copy
    circuit working only there, and the full-length rows after the warm-up would break it."""
    if not recipe.warmup_anywhere:
        return None
    rows, length = batch.shape
    offsets = torch.randint(0, recipe.n_positions - length + 1, (rows, 1), generator=gen)
    return offsets + torch.arange(length)


def bundled_tokenizer(train_text: str, vocab_size: int) -> GPT2TokenizerFast:
    """The bundled GPT-2's tokenizer (both bundled models share it); trained from the corpus if absent."""
    if (BUNDLED_DIR / "tokenizer.json").is_file():
        return GPT2TokenizerFast.from_pretrained(BUNDLED_DIR, local_files_only=True)
    return train_tokenizer(train_text, vocab_size)


@torch.no_grad()
def validation_loss(model: torch.nn.Module, val_ids: torch.Tensor, block: int) -> float:
    """Mean next-token loss over the whole held-out split, in non-overlapping windows."""
    model.eval()
    n_windows = (len(val_ids) - 1) // block
    windows = val_ids[: n_windows * block].view(n_windows, block)
    losses = [model(input_ids=w, labels=w).loss.item() for w in windows.split(32)]
    sizes = [len(w) for w in windows.split(32)]
    model.train()
    return sum(loss * size for loss, size in zip(losses, sizes, strict=True)) / sum(sizes)


def bits_per_character(val_loss: float, val_ids: torch.Tensor, block: int, tokenizer: GPT2TokenizerFast) -> float:
    """validation_loss (nats per predicted token, windows of `block` tokens as validation_loss reads them) as bits
    per character of the text those predicted tokens spell: comparable across tokenizers."""
    n_windows = (len(val_ids) - 1) // block
    windows = val_ids[: n_windows * block].view(n_windows, block)
    chars = sum(len(tokenizer.decode(w[1:].tolist())) for w in windows)  # the targets: tokens 1..block-1
    total_nats = val_loss * n_windows * (block - 1)  # equal windows: the mean of their means is the token mean
    return total_nats / chars / math.log(2)


def sample_text(model: torch.nn.Module, tokenizer: GPT2TokenizerFast, prompt: str, n_tokens: int) -> str:
    model.eval()
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    torch.manual_seed(0)
    out = model.generate(ids, max_new_tokens=n_tokens, do_sample=False, pad_token_id=tokenizer.eos_token_id)
    model.train()
    return tokenizer.decode(out[0])


def train(text_path: Path, out_dir: Path, recipe: Recipe, save_every: int = 0) -> dict:
    check_out_dir(out_dir)
    text = read_corpus(text_path)
    torch.manual_seed(recipe.seed)
    torch.set_num_threads(recipe.threads)
    split_at = int(len(text) * (1 - recipe.validation_fraction))
    train_text, val_text = text[:split_at], text[split_at:]

    tokenizer = bundled_tokenizer(train_text, recipe.vocab_size)
    train_ids = torch.tensor(tokenizer(train_text).input_ids, dtype=torch.long)
    val_ids = torch.tensor(tokenizer(val_text).input_ids, dtype=torch.long)
    need = max(recipe.n_positions, COPY_HALF_TOKENS) + 1
    if min(len(train_ids), len(val_ids)) <= need:
        raise TrainInputError(
            f"{text_path.name} gives {len(train_ids):,} training and {len(val_ids):,} held-out "
            f"tokens; each part needs more than {need:,} (one row of the model's positions): "
            "give a longer text."
        )
    copy_set = copying.held_out_repeats(val_ids, COPY_SEQUENCES, COPY_HALF_TOKENS)

    vocab_size = len(tokenizer)
    model = build_model(recipe, vocab_size, tokenizer.eos_token_id)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": recipe.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=recipe.learning_rate,
        betas=(0.9, 0.95),
    )
    data = {
        "val_ids": val_ids,
        "copy_set": copy_set,
        "corpus": text_path.name,
        "corpus_chars": len(text),
        "train_tokens": len(train_ids),
    }
    gen = torch.Generator().manual_seed(recipe.seed)
    started = time.perf_counter()
    model.train()
    for step in range(recipe.steps):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate_at(step, recipe)
        optimizer.param_groups[0]["weight_decay"] = weight_decay_at(step, recipe)  # group 0: the matrices
        batch, labels = random_batch(train_ids, recipe, vocab_size, gen, step)
        positions = warmup_positions(batch, recipe, gen) if step < recipe.copy_warmup_steps else None
        loss = model(input_ids=batch, labels=labels, position_ids=positions).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 50 == 0 or step == recipe.steps - 1:
            elapsed_s = time.perf_counter() - started
            copy = copying.copying_accuracy(model, copy_set[:10])
            print(
                f"step {step:5d}  loss {loss.item():.3f}  lr {group['lr']:.2e}  {elapsed_s:7.0f} s  "
                f"copy first/repeat {copy.first_half_top1:.2f}/{copy.repeated_half_top1:.2f}",
                flush=True,
            )
        if step + 1 == recipe.stop_after_steps:
            break
        if save_every and (step + 1) % save_every == 0 and step + 1 < recipe.steps:
            write_outputs(model, tokenizer, out_dir, recipe, step + 1, time.perf_counter() - started, data)
            print(f"checkpoint after {step + 1} steps written to {out_dir}", flush=True)

    return write_outputs(model, tokenizer, out_dir, recipe, step + 1, time.perf_counter() - started, data)


def write_outputs(
    model: torch.nn.Module,
    tokenizer: GPT2TokenizerFast,
    out_dir: Path,
    recipe: Recipe,
    steps_done: int,
    train_seconds: float,
    data: dict,
) -> dict:
    """Evaluate (held-out loss, copying, a greedy sample) and write model, tokenizer and report into out_dir.
    Leaves the global RNG as it found it, so a checkpoint (--save-every) never changes the rest of the run."""
    rng_state = torch.get_rng_state()
    val_ids, vocab_size = data["val_ids"], len(tokenizer)
    val_loss = validation_loss(model, val_ids, recipe.n_positions)
    copy = copying.copying_accuracy(model, data["copy_set"])
    random_set = copying.random_repeats(vocab_size, COPY_SEQUENCES, COPY_HALF_TOKENS, COPY_RANDOM_SEED)
    copy_random = copying.copying_accuracy(model, random_set)
    sample = sample_text(model, tokenizer, "ROMEO:", 80)
    torch.set_rng_state(rng_state)
    report = {
        # as its JSON reads back (a tuple field, the hybrid's full_attention_layers, is a list there)
        "recipe": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(recipe).items()},
        "steps_done": steps_done,  # < recipe.steps for --stop-after-steps or a --save-every checkpoint
        "corpus": data["corpus"],
        "corpus_chars": data["corpus_chars"],
        "train_tokens": data["train_tokens"],
        "validation_tokens": len(val_ids),
        "validation_loss": round(val_loss, 4),
        "validation_perplexity": round(math.exp(val_loss), 2),
        "validation_bits_per_character": round(bits_per_character(val_loss, val_ids, recipe.n_positions, tokenizer), 4),
        "copying": {
            "held_out_sequences": copy.n_sequences,
            "half_tokens": copy.half_len,
            "first_half_top1": round(copy.first_half_top1, 4),
            "repeated_half_top1": round(copy.repeated_half_top1, 4),
            "method": "validation-split spans at evenly spaced offsets, each followed by itself; top-1 next-token "
            "accuracy on targets 1..L-1 (first half) and L+1..2L-1 (repeated half); kvviz.training.copying",
        },
        "copying_random_tokens": {
            "sequences": copy_random.n_sequences,
            "half_tokens": copy_random.half_len,
            "seed": COPY_RANDOM_SEED,
            "first_half_top1": round(copy_random.first_half_top1, 4),
            "repeated_half_top1": round(copy_random.repeated_half_top1, 4),
        },
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_seconds": round(train_seconds, 1),
        "torch": torch.__version__,
        "sample_prompt": "ROMEO:",
        "sample_greedy": sample,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    model.eval()
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    (out_dir / "training_report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    model.train()
    return report


if __name__ == "__main__":  # `python -m kvviz.training.train`, as the home page names it: the same command
    sys.exit(command.main())
