"""The stepping engine on the real bundled model: cache shapes, equivalence with recomputation, rollback."""

from __future__ import annotations

import numpy as np
import pytest

from kvviz.step.records import ContextFullError, PromptError, Sampling
from support.greedy import PROMPTS, generate_greedy, generate_greedy_uncached

pytestmark = pytest.mark.model


def test_prefill_fills_one_row_per_prompt_token_in_every_layer(bundled):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    ids = bundled.tokenizer("JULIET:\nO Romeo, Romeo!").input_ids
    record = engine.prefill("JULIET:\nO Romeo, Romeo!")
    info = bundled.info
    assert record.kind == "prefill" and record.cache_len == len(ids) == engine.cache_len
    assert len(engine.cache.layers) == info.n_layer
    for layer in engine.cache.layers:
        assert tuple(layer.keys.shape) == (1, info.n_kv_heads, len(ids), info.head_dim)
        assert tuple(layer.values.shape) == (1, info.n_kv_heads, len(ids), info.head_dim)
    assert record.new_keys.shape == (info.n_layer, info.n_kv_heads, len(ids), info.head_dim)
    assert record.attention.shape == (info.n_layer, info.n_head, len(ids))


def test_cache_length_is_prompt_plus_steps_and_bytes_match_tensors(bundled):
    from kvviz.step.engine import StepEngine, cache_bytes

    engine = StepEngine(bundled)
    prompt_len = engine.prefill("ROMEO:").cache_len
    info = bundled.info
    for k in range(1, 8):
        record = engine.step()
        assert engine.cache_len == record.cache_len == prompt_len + k
        assert record.new_keys.shape == (info.n_layer, info.n_kv_heads, 1, info.head_dim)
        # The appended row is the cache's last row, in every layer.
        for i, layer in enumerate(engine.cache.layers):
            np.testing.assert_array_equal(layer.keys[0, :, -1].numpy(), record.new_keys[i, :, 0])
            np.testing.assert_array_equal(layer.values[0, :, -1].numpy(), record.new_values[i, :, 0])
        expected_bytes = 2 * info.n_layer * info.n_kv_heads * (prompt_len + k) * info.head_dim * 4
        assert record.cache_bytes == expected_bytes == cache_bytes(engine.cache)


def test_attention_rows_are_probability_distributions_over_the_cache(bundled):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    engine.prefill("HAMLET:\nTo be, or not to be")
    record = engine.step()
    assert record.attention.shape[-1] == engine.cache_len
    np.testing.assert_allclose(record.attention.sum(axis=-1), 1.0, atol=1e-5)
    assert (record.attention >= 0).all()


def test_fed_token_is_the_one_chosen_by_the_previous_pass(bundled):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    previous = engine.prefill("ROMEO:")
    for _ in range(4):
        record = engine.step()
        assert record.fed_token_ids == (previous.next_token_id,)
        assert record.fed_positions == (previous.cache_len,)
        previous = record
    assert engine.generated_ids() == [r.fed_token_ids[0] for r in engine.records[1:]]


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_with_cache_equals_recomputation_without_cache(bundled, prompt):
    cached_tokens, cached_logits = generate_greedy(bundled, prompt, 12)
    uncached_tokens, uncached_logits = generate_greedy_uncached(bundled, prompt, 12)
    assert cached_tokens == uncached_tokens
    for a, b in zip(cached_logits, uncached_logits, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4, rtol=1e-4)


def test_greedy_matches_transformers_generate(bundled):
    import torch

    ids = bundled.tokenizer("First Citizen:").input_ids
    with torch.inference_mode():
        out = bundled.model.generate(
            torch.tensor([ids]), max_new_tokens=10, do_sample=False, pad_token_id=bundled.tokenizer.eos_token_id
        )
    tokens, _ = generate_greedy(bundled, "First Citizen:", 10)
    assert out[0, len(ids) :].tolist() == tokens


def test_check_without_cache_reports_near_zero_differences(bundled):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    engine.prefill("MENENIUS:\nThere was a time")
    for _ in range(5):
        engine.step()
    check = engine.check_without_cache()
    assert check.same_next_token
    assert check.max_abs_logit_diff < 1e-3
    assert check.max_abs_key_diff < 1e-4 and check.max_abs_value_diff < 1e-4
    assert check.recomputed_rows == engine.cache_len


def test_rollback_then_restep_gives_the_same_token_and_cache(bundled):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    engine.prefill("KING RICHARD III:\nNow is the winter")
    for _ in range(5):
        engine.step()
    last = engine.records[-1]
    keys_before = engine.layer_keys(2).copy()
    engine.back()
    assert engine.cache_len == last.cache_len - 1
    assert engine.pending_token_id == last.fed_token_ids[0]
    again = engine.step()
    assert again.next_token_id == last.next_token_id
    np.testing.assert_allclose(engine.layer_keys(2), keys_before, atol=1e-6)


def test_seeded_sampling_is_reproducible_across_rollback(bundled):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled, Sampling(greedy=False, temperature=1.2, top_k=50, seed=7))
    engine.prefill("ROMEO:")
    first = [engine.step().next_token_id for _ in range(6)]
    for _ in range(4):
        engine.back()
    assert engine.cache_len == engine.prompt_len + 2
    second = [engine.step().next_token_id for _ in range(4)]
    assert first[2:] == second


def test_seeded_sampling_depends_on_the_prompt_not_only_the_position(bundled):
    """The draw mixes in every token fed, not only (seed, position): two prompts of the same length continue
    differently, and each is still reproducible."""
    from kvviz.step.engine import StepEngine

    sampling = Sampling(greedy=False, temperature=1.0, top_k=0, seed=3)

    def continuation(prompt: str) -> list[int]:
        engine = StepEngine(bundled, sampling)
        engine.prefill(prompt)
        return [engine.step().fed_token_ids[0] for _ in range(15)]

    romeo, juliet = continuation("ROMEO:"), continuation("JULIET:")
    assert len(StepEngine(bundled).tokenize("ROMEO:")) == len(StepEngine(bundled).tokenize("JULIET:"))
    assert romeo != juliet
    assert continuation("ROMEO:") == romeo


def test_back_at_the_prompt_is_refused_clearly(bundled):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    with pytest.raises(PromptError, match="Prefill"):
        engine.step()
    engine.prefill("ROMEO:")
    with pytest.raises(PromptError, match="Nothing to roll back"):
        engine.back()


def test_overflow_guard_stops_at_the_context_limit(bundled):
    from kvviz.step.engine import StepEngine

    limit = bundled.info.n_positions
    engine = StepEngine(bundled)
    engine.prefill(" the" * (limit - 3))  # " the" is one pre-token, so one BPE token: limit - 3 tokens
    while engine.cache_len < limit:
        engine.step()
    assert engine.at_context_limit and engine.cache_len == limit
    with pytest.raises(ContextFullError, match=str(limit)):
        engine.step()
    engine.back()  # still usable after the guard fired
    assert engine.cache_len == limit - 1


@pytest.mark.parametrize("prompt", ["", "   ", "\n\t "])
def test_empty_or_blank_prompt_is_rejected_with_a_message(bundled, prompt):
    from kvviz.step.engine import StepEngine

    with pytest.raises(PromptError, match="empty"):
        StepEngine(bundled).prefill(prompt)


def test_over_long_prompt_is_rejected_with_the_numbers(bundled):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    with pytest.raises(PromptError, match=f"only {bundled.info.n_positions} positions"):
        engine.prefill("To be, or not to be. " * 200)
    assert not engine.started  # nothing half-done left behind


@pytest.mark.parametrize("prompt", ["emoji 🙂🎭", "Привет, мир", "こんにちは世界", "مرحبا"])
def test_non_latin_and_emoji_prompts_round_trip_and_show_bytes(bundled, prompt):
    from kvviz.step.engine import StepEngine, token_text

    engine = StepEngine(bundled)
    record = engine.prefill(prompt)
    assert bundled.tokenizer.decode(list(record.fed_token_ids)) == prompt  # byte-level BPE loses nothing
    texts = [token_text(bundled.tokenizer, i) for i in record.fed_token_ids]
    assert all("\ufffd" not in t for t in texts)  # partial UTF-8 pieces are shown as <XX> bytes
    engine.step()


def test_crop_cache_keeps_a_prefix(bundled):
    from kvviz.step.engine import StepEngine, crop_cache

    engine = StepEngine(bundled)
    engine.prefill("To be, or not to be")
    full = engine.layer_keys(0).copy()
    crop_cache(engine.cache, 3)
    assert engine.cache.get_seq_length() == 3
    np.testing.assert_array_equal(engine.layer_keys(0), full[:, :3])
    with pytest.raises(ValueError):
        crop_cache(engine.cache, 5)
