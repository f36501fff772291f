"""The stage's view record (kvviz.step.view.stage_view, race_view): every sentence and number the stage shows,
built from step records alone (synthetic ones here: a small GQA shape, no model), each checked against the
arithmetic it states (kvviz.ops, kvviz.memory)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from kvviz import memory, ops
from kvviz.model.dims import GPT2_FAMILY, ModelDims
from kvviz.model.loading import ModelInfo
from kvviz.step import view
from kvviz.step.records import Equivalence, RaceTiming, StepRecord, TokenProb

DIMS = ModelDims(n_layer=2, n_head=4, n_kv_heads=2, head_dim=2, n_embd=8, d_ff=32, vocab_size=50, n_positions=64)
INFO = ModelInfo(
    **dataclasses.asdict(DIMS),
    spec="test:tiny",
    kind="random",
    label="tiny GQA",
    n_params=1,
    dtype="float32",
    attn_implementation="eager",
    weights_are_random=True,
)
BYTES_PER_ROW = 2 * DIMS.n_layer * DIMS.n_kv_heads * DIMS.head_dim * 4  # K and V, fp32


def _record(index: int, positions: tuple[int, ...], token_ids: tuple[int, ...]) -> StepRecord:
    rng = np.random.default_rng(index)
    n, seq = len(positions), positions[-1] + 1
    attention = rng.random((DIMS.n_layer, DIMS.n_head, seq))
    return StepRecord(
        index=index,
        kind="prefill" if index == 0 else "decode",
        fed_token_ids=token_ids,
        fed_token_texts=tuple(f"t{t}" for t in token_ids),
        fed_positions=positions,
        new_keys=rng.random((DIMS.n_layer, DIMS.n_kv_heads, n, DIMS.head_dim)),
        new_values=rng.random((DIMS.n_layer, DIMS.n_kv_heads, n, DIMS.head_dim)),
        attention=attention / attention.sum(axis=-1, keepdims=True),
        next_logits=np.zeros(DIMS.vocab_size),
        top_k=tuple(TokenProb(i, f"c{i}", 0.1) for i in range(8)),
        next_token_id=9,
        next_token_text="t9",
        cache_len=seq,
        cache_bytes=seq * BYTES_PER_ROW,
        step_ms=1.5,
    )


RECORDS = [_record(0, (0, 1, 2), (5, 6, 7)), _record(1, (3,), (8,)), _record(2, (4,), (9,))]


def _view(at: int | None = None) -> view.StageView:
    return view.stage_view(view.build_snapshot(RECORDS, 3, INFO, layer=1, q_head=3, at=at), INFO)


def test_the_tiles_and_the_step_line_say_the_counters_and_the_dense_count():
    shown = _view()
    snap, c = shown.snapshot, shown.snapshot.counters
    assert [t.label for t in shown.tiles] == [
        "Cache length",
        "Cache size",
        "This step: dots with cache",
        "This step: dots without cache",
    ]
    assert shown.tiles[0].value == "5 tokens" and shown.tiles[0].help == "at most 64 positions"
    assert shown.tiles[2].value == f"{c.this_dot_products_cached:,}"
    assert c.this_dot_products_cached == ops.attention_dot_products(2, 4, 4, 1, cached=True)
    assert shown.tiles[3].value == f"{c.this_dot_products_uncached:,}"
    eager = ops.attention_dot_products_dense(2, 4, 0, 5, cached=False)
    assert shown.step_line.startswith("Decode step 2 of 2: fed 1 token in 1.5 ms (one run). ")
    assert (
        f"{c.total_dot_products_cached:,} dot products with the cache vs {c.total_dot_products_uncached:,}"
        in shown.step_line
    )
    assert f"(2 x 4 x 5² = {eager:,} here)" in shown.step_line
    assert len(shown.top_tokens) == view.NEXT_TOKEN_BARS and snap.cache_len == 5


def test_a_scrubbed_step_says_it_is_history():
    shown = _view(at=1)
    assert shown.tiles[0].label == "Cache length at step 1 (history)" and shown.tiles[0].value == "4 tokens"
    assert shown.step_line.startswith("Decode step 1 of 2, the newest is step 2: fed 1 token")
    assert _view(at=0).step_line.startswith("Prefill: fed the 3 prompt tokens at once in 1.5 ms")


def test_the_gqa_text_says_the_groups_and_the_bytes_against_full_mha():
    shown = _view()
    assert shown.gqa_text.startswith("kv_head = q_head // 2: kv 0 ← q 0, 1; kv 1 ← q 2, 3. ")
    measured = 5 * BYTES_PER_ROW
    assert memory.kv_bytes(INFO.kv_config(), 5) == measured
    mha = memory.kv_bytes(INFO.kv_config().with_mha(), 5)
    assert f"{measured:,} B (calculator: {measured:,} B)" in shown.gqa_text
    assert f"the same model would hold {mha:,} B, 2x more" in shown.gqa_text
    mha_info = dataclasses.replace(INFO, n_kv_heads=4)
    assert view.stage_view(_view().snapshot, mha_info).gqa_text == ""  # each query head its own K/V head


def test_no_copy_candidate_disables_the_button_on_the_head_shown():
    shown = _view()
    assert shown.readout == "" and shown.readout_hint
    assert shown.copy_button == view.CopyButton("Copying head", (1, 3), False)


def test_the_race_sides_and_notes():
    shown = _view()
    c = shown.snapshot.counters
    assert shown.race_sides[0] == (
        f"**With the cache**, this step: {c.this_dot_products_cached:,} dot products; "
        "K and V of 1 token in each of 2 layers"
    )
    assert shown.race_sides[1].endswith("K and V of 5 tokens in each of 2 layers")
    waiting = view.race_view(shown, None, big=False)
    assert waiting.note.startswith("The clock runs when the animation stops") and waiting.verdict == ""
    prefill = view.race_view(_view(at=0), None, big=False)
    assert prefill.note.startswith("The prefill computes every prompt row either way")


FASTER = RaceTiming(
    seq_len=5,
    cached_ms=(2.0, 2.1, 2.2, 2.3),
    uncached_ms=(6.0, 6.4, 6.8, 7.2),
    fixed_ms=(1.5, 1.6, 1.7, 1.8),
    model_label="random:gpt2 (GPT-2 124M shape)",
    load_1min=1.0,
)
NOISE = dataclasses.replace(FASTER, cached_ms=(2.0, 2.2, 2.6, 3.0), uncached_ms=(2.4, 2.8, 3.1, 3.3))


def test_a_race_on_another_model_says_which_model_each_part_shows():
    race = view.race_view(_view(), FASTER, big=True)
    assert race.note == "" and race.timing is FASTER
    assert race.models_caption.startswith(
        "K caches and counts below: tiny GQA, the model generating. The clock under them: random:gpt2"
    )
    assert race.tiles_caption.startswith("The tiles above count tiny GQA;") and race.clock_caption.startswith("Clock:")
    same = view.race_view(_view(), dataclasses.replace(FASTER, model_label="tiny GQA"), big=False)
    assert (same.models_caption, same.tiles_caption, same.clock_caption) == ("", "", "")


@pytest.mark.parametrize("big", [False, True])
def test_the_verdict_follows_the_timing_and_names_the_124m_shapes_work(big):
    gpt2 = GPT2_FAMILY["gpt2"]
    counts = (
        ops.attention_dot_products(gpt2.n_layer, gpt2.n_head, 4, 1, cached=True),
        ops.attention_dot_products(gpt2.n_layer, gpt2.n_head, 4, 1, cached=False),
    )
    said = view.race_verdict(FASTER, big)
    assert said.startswith(f"**{6.6 / 2.15:.1f}x faster with the cache**.")
    assert (f"At this shape: {counts[0]:,} dot products vs {counts[1]:,}." in said) is big
    assert "Both stand on the dashed line" in said and "Medians of 4 repeats a side" in said
    noise = view.race_verdict(NOISE, big)
    assert noise.startswith("**Inside the noise**") and ("Try the GPT-2 124M shape." in noise) is not big


def test_the_without_cache_view_says_the_check_and_the_growth_series():
    check = Equivalence(
        max_abs_logit_diff=1e-6,
        same_next_token=True,
        max_abs_key_diff=2e-7,
        max_abs_value_diff=3e-7,
        recomputed_rows=5,
        uncached_ms=4.0,
    )
    seen = view.without_cache_view(check, RECORDS, DIMS)
    assert "feeds all **5** tokens again and recomputes every K and V row in all 2 layers (4.0 ms here)" in seen.text
    assert "same next token: **yes**" in seen.text
    assert (seen.steps, seen.with_cache, seen.without_cache) == tuple(map(list, view.cumulative_series(RECORDS, DIMS)))
    assert seen.with_cache[-1] < seen.without_cache[-1]
