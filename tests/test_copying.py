"""Both bundled models copy in context, recomputed from the shipped weights (a retrain that loses its induction
heads fails here): the figures in each training_report.json are reproduced, and they clear thresholds set below
the measured ones. Also the training mix itself (kvviz.training.copying.repeat_batch) and the "Repeat a pattern" preset."""

from __future__ import annotations

import json

import pytest

from kvviz.model import loading
from kvviz.step import pattern_records, view
from support.pages import TINY_SHAKESPEARE

pytestmark = pytest.mark.model  # every test loads a bundled model or builds torch tensors

CORPUS = TINY_SHAKESPEARE
# Thresholds below the measured figures in the reports (docs/models.md), not copies of them.
MIN_HELD_OUT_REPEAT_TOP1 = 0.90  # top-1 on the repeated half of 50 held-out text spans (the target)
MIN_RANDOM_REPEAT_TOP1 = 0.90  # top-1 on the repeated half of 50 seeded random-token spans
# Validation loss: at most 0.05 over the GPT-2's non-copying predecessor (3.870 + 0.05; the shipped one: 3.880);
# the Llama's 3.916 (its predecessor: 3.795; half its rows copy) is guarded against getting worse; the hybrid's 3.991
# (a 20-minute run: 1,100 steps against the others' 4,500 and 5,300) likewise
MAX_VALIDATION_LOSS = {loading.BUNDLED: 3.92, loading.BUNDLED_GQA: 3.95, loading.BUNDLED_HYBRID: 4.02}
# the hybrid's full recomputation takes ~50 s on 2 shared cores (transformers' reference kernels): the slow tier
MODELS = [loading.BUNDLED, loading.BUNDLED_GQA, pytest.param(loading.BUNDLED_HYBRID, marks=pytest.mark.slow)]


def _report(name: str) -> dict:
    return json.loads((loading.BUNDLED_MODELS[name].folder / "training_report.json").read_text())


@pytest.fixture(scope="module", params=MODELS)
def named(request) -> tuple[str, loading.LoadedModel]:
    from kvviz.model import loaders

    return request.param, loaders.load_model(request.param, attn_implementation="eager")


def test_random_token_copying_is_recomputed_and_clears_the_threshold(named):
    from kvviz.training import copying

    name, loaded = named
    measured = _report(name)["copying_random_tokens"]
    sequences = copying.random_repeats(
        loaded.info.vocab_size, measured["sequences"], measured["half_tokens"], measured["seed"]
    )
    result = copying.copying_accuracy(loaded.model, sequences)
    assert result.first_half_top1 == pytest.approx(measured["first_half_top1"], abs=1e-3)
    assert result.repeated_half_top1 == pytest.approx(measured["repeated_half_top1"], abs=1e-3)
    assert result.first_half_top1 < 0.01  # random tokens: nothing but copying predicts them
    assert result.repeated_half_top1 >= MIN_RANDOM_REPEAT_TOP1


@pytest.mark.skipif(not CORPUS.is_file(), reason="Tiny Shakespeare is not beside the repo (../shared/data)")
def test_held_out_text_copying_and_validation_loss_are_recomputed(named):
    import torch

    from kvviz.training import copying, train

    name, loaded = named
    report = _report(name)
    text = CORPUS.read_text(encoding="utf-8")
    split_at = int(len(text) * (1 - report["recipe"]["validation_fraction"]))
    val_ids = torch.tensor(loaded.tokenizer(text[split_at:]).input_ids)
    measured = report["copying"]
    sequences = copying.held_out_repeats(val_ids, measured["held_out_sequences"], measured["half_tokens"])
    result = copying.copying_accuracy(loaded.model, sequences)
    assert result.first_half_top1 == pytest.approx(measured["first_half_top1"], abs=1e-3)
    assert result.repeated_half_top1 == pytest.approx(measured["repeated_half_top1"], abs=1e-3)
    assert result.repeated_half_top1 >= MIN_HELD_OUT_REPEAT_TOP1 > result.first_half_top1 + 0.4
    loss = train.validation_loss(loaded.model, val_ids, report["recipe"]["n_positions"])
    assert loss == pytest.approx(report["validation_loss"], abs=1e-3)
    assert loss <= MAX_VALIDATION_LOSS[name]


def test_repeat_a_pattern_preset_continues_the_pattern(named):
    """The step page's "Repeat a pattern" preset: greedy continues it, and the head that copies is there to see."""
    from kvviz.step.engine import StepEngine

    name, loaded = named
    if name == loading.BUNDLED_HYBRID:  # its 20-minute run copies long spans (91.7%), not this 6-word one
        pytest.skip("the hybrid does not continue the short preset greedily (docs/models.md)")
    engine = StepEngine(loaded)
    engine.prefill(view.REPEAT_PROMPT)
    for _ in range(8):  # " stone", " red", " apple" (several tokens), " blue", ...
        engine.step()
    assert loaded.tokenizer.decode(engine.generated_ids()).startswith(" stone red apple blue")


def test_the_attention_patterns_page_finds_an_induction_head(named):
    """The probe of the attention-patterns page labels at least one head 'induction' (computed, not typed)."""
    from kvviz.step import patterns

    _, loaded = named
    scores = patterns._probe_scores(loaded)
    assert max(float(s.max()) for s in scores) >= pattern_records.INDUCTION_THRESHOLD


def test_repeat_rows_repeat_their_span_and_mask_the_first_copy_of_random_tokens():
    import torch

    from kvviz.training import copying

    ids = torch.arange(1000, 3000)  # stand-in corpus ids, distinct from the random range below 1000
    gen = torch.Generator().manual_seed(0)
    inputs, labels = copying.repeat_batch(ids, 64, 64, 1000, gen, random_span_share=0.5, max_span=24)
    assert inputs.shape == labels.shape == (64, 64)
    masked_rows = 0
    for row, label in zip(inputs, labels, strict=True):
        masked = (label == copying.IGNORE_INDEX).nonzero().flatten()
        if len(masked):  # a random span: its first copy (and only that) is left out of the loss
            masked_rows += 1
            start, span = int(masked[0]), len(masked)
            assert copying.MIN_SPAN <= span <= 24 and masked.tolist() == list(range(start, start + span))
            assert (row[start : start + span] < 1000).all()
        else:
            assert torch.equal(row, label)
            span = next(n for n in range(copying.MIN_SPAN, 25) if torch.equal(row[-n:], row[-2 * n : -n]))
        assert torch.equal(row[-span:], row[-2 * span : -span])  # the row ends in repeats of its span
    assert 16 <= masked_rows <= 48  # about half the rows hold random spans
