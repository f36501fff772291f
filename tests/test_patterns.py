"""Attention patterns: the scores on matrices built by hand, the full matrices of a real uncached pass (whose
last row is exactly the row a cached step computes), the figures, and the page on both bundled models."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from kvviz.figures import patterns as figs
from kvviz.model import loading
from kvviz.step import pattern_records as pr
from support.pages import PAGES_DIR, open_page

PAGE = str(PAGES_DIR / "attention_patterns.py")


def _shift_matrix(seq_len: int) -> np.ndarray:
    """Query i puts all its weight on i-1 (query 0 on itself)."""
    a = np.zeros((seq_len, seq_len), dtype=np.float32)
    a[0, 0] = 1.0
    a[np.arange(1, seq_len), np.arange(seq_len - 1)] = 1.0
    return a


def test_scores_name_hand_built_heads():
    t = 6
    sink = np.zeros((t, t), dtype=np.float32)
    sink[:, 0] = 1.0
    uniform = np.tril(np.ones((t, t), dtype=np.float32)) / np.arange(1, t + 1)[:, None]
    attention = np.stack([_shift_matrix(t), sink, uniform])  # (3 heads, T, T)
    np.testing.assert_allclose(pr.previous_token_score(attention), [1.0, 0.2, np.mean(1 / np.arange(2, t + 1))])
    np.testing.assert_allclose(pr.first_token_score(attention), [0.2, 1.0, np.mean(1 / np.arange(2, t + 1))])


def test_induction_reads_the_token_after_the_previous_occurrence():
    ids = [5, 6, 7, 5, 6, 7]  # a b c a b c
    assert pr.induction_targets(ids) == [(3, 1), (4, 2), (5, 3)]
    assert pr.induction_targets([1, 1, 2]) == []  # a token right after itself has no "next" to copy
    induction = np.zeros((6, 6), dtype=np.float32)
    induction[np.arange(6), np.arange(6)] = 1.0
    for i, j in pr.induction_targets(ids):
        induction[i] = 0.0
        induction[i, j] = 1.0
    scores = pr.induction_score(np.stack([induction, _shift_matrix(6)]), ids)
    np.testing.assert_allclose(scores, [1.0, 0.0])
    assert np.isnan(pr.induction_score(np.stack([induction]), [1, 2, 3])).all()  # nothing repeats
    probe = pr.probe_token_ids(2048)
    assert probe[: pr.PROBE_HALF_TOKENS] == probe[pr.PROBE_HALF_TOKENS :] and len(set(probe)) == pr.PROBE_HALF_TOKENS


@pytest.mark.model
def test_uncached_triangle_last_row_is_the_cached_steps_row(bundled):
    """The page's claim, checked: the last row of each head's full matrix (one uncached pass) equals the
    attention the engine's cached decode step computed for its one new query."""
    from kvviz.step import patterns
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    engine.prefill("one two three one two three")
    for _ in range(4):
        record = engine.step()
    run = patterns.pattern_run(bundled, engine.token_ids)
    t = len(engine.token_ids)
    assert run.seq_len == t and len(run.layers) == bundled.info.n_layer
    for layer in run.layers:
        a = layer.attention
        assert a.shape == (bundled.info.n_head, t, t)
        np.testing.assert_allclose(a.sum(axis=-1), 1.0, atol=1e-5)  # each row a softmax
        assert np.all(a[:, np.triu_indices(t, k=1)[0], np.triu_indices(t, k=1)[1]] == 0.0)  # causal
        np.testing.assert_allclose(a[:, -1, :], record.attention[layer.layer], atol=1e-5)


@pytest.mark.model
@pytest.mark.parametrize("spec", list(loading.BUNDLED_MODELS))
def test_both_bundled_models_give_one_matrix_per_query_head(spec):
    from kvviz.model import loaders
    from kvviz.step import patterns

    loaded = loaders.load_model(spec)
    ids = loaded.tokenizer("ROMEO:\nBut soft, what light").input_ids
    run = patterns.pattern_run(loaded, ids)
    assert run.n_head == loaded.info.n_head and run.n_kv_heads == loaded.info.n_kv_heads
    for layer in run.layers:
        assert layer.attention.shape == (loaded.info.n_head, len(ids), len(ids))
        assert layer.probe_induction_score.shape == (loaded.info.n_head,)
        fig = figs.gallery_figure(layer, run.n_kv_heads)
        assert len(fig.data) == loaded.info.n_head and len(fig.layout.shapes) == loaded.info.n_head  # one outline each
    big = figs.head_figure(run.layers[0], loaded.info.n_head - 1, run.tokens, run.n_kv_heads)
    assert big.layout.shapes[0].y0 == len(ids) - 1.5  # the last row outlined
    if loaded.info.n_kv_heads != loaded.info.n_head:
        assert "kv 1" in figs.head_title(run.layers[0], loaded.info.n_head - 1, run.n_kv_heads)


@pytest.mark.model
def test_too_long_or_too_short_sequences_are_refused(bundled):
    from kvviz.step import patterns

    with pytest.raises(ValueError, match="2 to 96 tokens"):
        patterns.pattern_run(bundled, [1] * (pr.MAX_PATTERN_TOKENS + 1))
    with pytest.raises(ValueError, match="2 to 96 tokens"):
        patterns.pattern_run(bundled, [1])


def _page(spec: str) -> AppTest:
    import streamlit as st

    st.cache_data.clear()
    return open_page(PAGE, session_state={"model_spec": spec}, check=False)


@pytest.mark.app
@pytest.mark.parametrize("spec", list(loading.BUNDLED_MODELS))
def test_page_renders_every_attention_layer_of_each_bundled_model(spec):
    info = loading.bundled_info(name=spec)
    at = _page(spec)
    assert not at.exception and not at.error, at.exception
    assert at.title[0].value == "Attention patterns"
    for layer in info.attention_layers:  # every layer, but the hybrid's attention layer only
        at.selectbox(key="pat_layer").set_value(layer).run()
        assert not at.exception and not at.error, (layer, at.exception)
        assert len(at.get("plotly_chart")) == 2  # the gallery and the large head
        table = at.table[0].value
        assert list(table["head"]) == list(range(info.n_head))
        assert list(table["kv head"]) == [h // (info.n_head // info.n_kv_heads) for h in range(info.n_head)]
    text = " ".join(m.value for m in at.markdown)
    assert f"{info.n_kv_heads} K/V heads" in text or info.n_kv_heads == info.n_head


@pytest.mark.app
def test_page_refuses_an_empty_prompt_with_one_line():
    at = _page(loading.BUNDLED)
    at.selectbox(key="pat_source").set_value("Type a prompt").run()
    at.text_area(key="pat_prompt").set_value("   ").run()
    assert not at.exception
    assert len(at.error) == 1 and "empty" in at.error[0].value
