"""The training script end to end on a tiny budget (the real loop, model classes and outputs), and the two pieces
of the copy curriculum: warm-up rows placed anywhere in the context, and the sinusoid start of GPT-2's positions."""

from __future__ import annotations

import json
import math

import pytest

from kvviz.training.recipes import learning_rate_at, recipe_for, weight_decay_at
from support.pages import REPO


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_a_tiny_run_writes_a_model_that_loads_and_an_honest_report(tmp_path, arch):
    from transformers import AutoModelForCausalLM

    from kvviz.training import train

    corpus = tmp_path / "corpus.txt"
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]  # any text will do: the README and docs/
    corpus.write_text("\n".join(p.read_text(encoding="utf-8") for p in docs), encoding="utf-8")
    recipe = recipe_for(arch, steps=4, copy_warmup_steps=2, copy_warmup_batch_size=4, batch_size=4)
    report = train.train(corpus, tmp_path / "out", recipe)
    assert report["steps_done"] == 4 and report["recipe"]["arch"] == arch
    assert report["recipe"]["copy_warmup_steps"] == 2
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "out")
    assert model.config.model_type == arch and sum(p.numel() for p in model.parameters()) == report["parameters"]
    assert json.loads((tmp_path / "out" / "training_report.json").read_text()) == report
    assert 0.0 <= report["copying"]["repeated_half_top1"] <= 1.0
    assert report["validation_loss"] > 0 and report["sample_greedy"].startswith("ROMEO:")


@pytest.mark.model
def test_warmup_rows_are_consecutive_positions_anywhere_in_the_context():
    import torch

    from kvviz.training import train

    recipe = recipe_for("gpt2")
    batch = torch.zeros(200, train.COPY_WARMUP_POSITIONS, dtype=torch.long)
    positions = train.warmup_positions(batch, recipe, torch.Generator().manual_seed(0))
    assert positions.shape == batch.shape
    assert (positions[:, 1:] - positions[:, :-1] == 1).all()
    assert positions.min() >= 0 and positions.max() <= recipe.n_positions - 1
    assert positions[:, 0].max() > recipe.n_positions - 2 * train.COPY_WARMUP_POSITIONS  # not only at the start
    assert train.warmup_positions(batch, recipe_for("llama"), torch.Generator()) is None  # RoPE: relative anyway


@pytest.mark.model
def test_gpt2_positions_start_as_a_scaled_sinusoid_table():
    import torch

    from kvviz.training import train

    table = train.sinusoid_positions(256, 128)
    assert table.shape == (256, 128)
    assert torch.allclose(table[0, 0::2], torch.zeros(64)) and torch.allclose(table[0, 1::2], torch.full((64,), 0.05))
    assert torch.allclose(table.norm(dim=1), torch.full((256,), 0.05 * math.sqrt(64)), atol=1e-5)
    model = train.build_model(recipe_for("gpt2"), 2048, 0)
    assert torch.equal(model.transformer.wpe.weight.detach(), table)


def test_learning_rate_warms_up_then_decays_to_the_floor():
    recipe = recipe_for("gpt2")
    assert learning_rate_at(0, recipe) == pytest.approx(recipe.learning_rate / recipe.warmup_steps)
    assert learning_rate_at(recipe.warmup_steps, recipe) == pytest.approx(recipe.learning_rate)
    assert learning_rate_at(recipe.steps, recipe) == pytest.approx(recipe.min_learning_rate)


def test_the_warm_up_may_have_its_own_weight_decay():
    same = recipe_for("gpt2", weight_decay=0.1)
    assert [weight_decay_at(s, same) for s in (0, same.copy_warmup_steps)] == [0.1, 0.1]
    split = recipe_for("gpt2", weight_decay=0.1, warmup_weight_decay=0.0)
    last_warmup = split.copy_warmup_steps - 1
    assert [weight_decay_at(s, split) for s in (0, last_warmup, last_warmup + 1)] == [0.0, 0.0, 0.1]
