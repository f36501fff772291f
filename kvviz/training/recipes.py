"""The training recipes of the bundled models: every number that decides a run (kvviz.training.train runs them).

A Recipe is complete: the same recipe, seed and thread count give the same weights. `recipe_for(arch)` holds the
shipped recipe of each bundled model; command-line flags override single fields. Torch-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIN_SPAN = 8  # the shortest repeated span of the copying mix (kvviz.training.copying), tokens


@dataclass(frozen=True)
class Recipe:
    arch: str = "gpt2"  # "gpt2" | "llama" | "hybrid"
    vocab_size: int = 2048
    n_layer: int = 4
    n_head: int = 4  # query heads; llama: 8
    n_kv_heads: int = 4  # gpt2: = n_head (MHA); llama: 2 (GQA)
    n_embd: int = 128
    intermediate_size: int = 512  # gpt2: 4 x n_embd; llama: SwiGLU, 3 matrices of this width
    n_positions: int = 256
    full_attention_layers: tuple[int, ...] = ()  # hybrid: the layers that keep a K/V cache; the rest are linear
    linear_heads: int = 4  # hybrid: Gated DeltaNet heads per linear-attention layer (keys and values alike)
    linear_head_dim: int = 32  # hybrid: d_k = d_v of each linear head; its state is d_k x d_v numbers
    conv_kernel: int = 4  # hybrid: the short causal convolution over q, k, v before the delta rule
    dropout: float = 0.1
    repeat_share: float = 0.0  # share of each batch's rows built with a repeated span (kvviz.training.copying)
    random_span_share: float = 0.5  # of those rows, the share whose span is random token ids (else corpus text)
    max_span: int = 128  # longest repeated span (tokens); short spans = copies close together = faster induction
    copy_warmup_steps: int = 0  # the first steps train on repeated spans only (a curriculum for induction heads)
    copy_warmup_batch_size: int = 32  # rows of COPY_WARMUP_POSITIONS tokens per warm-up step
    warmup_anywhere: bool = False  # place each warm-up row at a random offset among all n_positions positions
    position_init: str = "normal"  # gpt2's learned positions: "normal" (GPT-2's N(0, 0.02)) or "sinusoid"
    stop_after_steps: int = 0  # > 0: stop there, the learning-rate schedule still planned for `steps`
    batch_size: int = 16
    steps: int = 3000
    learning_rate: float = 2e-3
    min_learning_rate: float = 2e-4
    warmup_steps: int = 100
    weight_decay: float = 0.1
    warmup_weight_decay: float = -1.0  # during the copy warm-up; < 0: the same as weight_decay
    validation_fraction: float = 0.1
    seed: int = 1337
    threads: int = 1  # the shipped weights were trained with 1 (more threads round differently, same quality)


def weight_decay_at(step: int, recipe: Recipe) -> float:
    """Decay of the matrices at this step: the warm-up may use its own (decay slows the induction circuit's forming)."""
    if step < recipe.copy_warmup_steps and recipe.warmup_weight_decay >= 0:
        return recipe.warmup_weight_decay
    return recipe.weight_decay


def learning_rate_at(step: int, recipe: Recipe) -> float:
    """Linear warm-up, then cosine decay to min_learning_rate (as in nanoGPT)."""
    if step < recipe.warmup_steps:
        return recipe.learning_rate * (step + 1) / recipe.warmup_steps
    progress = (step - recipe.warmup_steps) / max(1, recipe.steps - recipe.warmup_steps)
    cosine = 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
    return recipe.min_learning_rate + cosine * (recipe.learning_rate - recipe.min_learning_rate)


def recipe_for(arch: str, **overrides: object) -> Recipe:
    if arch == "llama":
        # 352 ~ 8/3 x 128, as in Llama. 1,200 warm-up steps of short rows of repeated random spans grow the
        # induction circuit; then half of each batch's rows repeat a span (30% of those random tokens, 70%
        # corpus text: copying text, which the model could also guess, is what the held-out figure measures)
        base = dict(
            n_head=8,
            n_kv_heads=2,
            intermediate_size=352,
            dropout=0.0,
            repeat_share=0.5,
            random_span_share=0.3,
            max_span=128,
            copy_warmup_steps=1200,
            steps=4500,
            weight_decay=0.0,
        )
    elif arch == "gpt2":
        # Learned positions make the previous-token head slow to form: started as a sinusoid table and at lr
        # 3e-3, the induction circuit formed after ~1,100 warm-up steps in trials (not within 1,500 from
        # N(0, 0.02) positions or at 2e-3); warm-up rows sit anywhere in the 256 positions (warmup_positions).
        # Then 6 of 16 rows repeat a span; no dropout (it breaks the circuit). Weight decay 0.1 keeps the text loss
        # within 0.01 of the non-copying model's (3.880 vs 3.870; 3.989 without): it delays the circuit to steps
        # ~2,250-2,750 (after the warm-up) but the circuit still forms and copies 92.9% of held-out repeats
        base = dict(
            dropout=0.0,
            position_init="sinusoid",
            learning_rate=3e-3,
            min_learning_rate=3e-4,
            repeat_share=0.375,
            random_span_share=0.3,
            max_span=128,
            copy_warmup_steps=2000,
            steps=5300,
            weight_decay=0.1,
            warmup_anywhere=True,
        )
    elif arch == "hybrid":
        # transformers' OLMo-hybrid (Gated DeltaNet linear attention + attention, dense SwiGLU MLP): 3 linear layers
        # and 1 attention layer (the last, as in Qwen3-Next's and OLMo-hybrid's 3:1 pattern). The reference PyTorch
        # kernels cost ~1.0 s a full step at 1 thread (0.65 s at 2 on an idle machine, but 2 threads slowed ~7x
        # when another process took a core), so the run is short (under 20 min): a 300-step copy warm-up (in a
        # trial the loss fell from 6.3 to 2.4 between steps 150 and 250: the short convolution hands the attention
        # layer the previous token, so one attention layer can copy), then 800 steps of the Llama's mix at a
        # higher learning rate
        base = dict(
            n_head=4,
            n_kv_heads=4,
            intermediate_size=352,
            dropout=0.0,
            full_attention_layers=(3,),
            learning_rate=3e-3,
            min_learning_rate=3e-4,
            repeat_share=0.5,
            random_span_share=0.3,
            max_span=128,
            copy_warmup_steps=300,
            steps=1100,
            weight_decay=0.0,
            threads=1,
        )
    else:
        raise ValueError(f"unknown arch {arch!r}; choose gpt2, llama or hybrid")
    return Recipe(arch=arch, **{**base, **overrides})
