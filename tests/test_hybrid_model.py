"""The bundled hybrid: transformers' own OlmoHybridForCausalLM, 3 Gated DeltaNet linear-attention layers and 1
attention layer, shipped in kvviz/assets/bundled_hybrid. It loads offline from the repo; the stage's greedy tokens are
`generate`'s; each linear layer's state is the cache's own tensors, byte for byte, and the same size at every step,
while the attention layer's K/V grows one row per step; Back puts the states back exactly. Tiny on purpose: the
whole module runs in seconds."""

from __future__ import annotations

import numpy as np
import pytest

from kvviz.model import loading

N_STEPS = 5


@pytest.fixture(scope="module")
def hybrid() -> loading.LoadedModel:
    from kvviz.model import loaders

    return loaders.load_model(loading.BUNDLED_HYBRID)


@pytest.fixture(scope="module")
def stepped(hybrid):
    """The stage's engine after Prefill and N_STEPS Next, greedy."""
    from kvviz.step.engine import StepEngine
    from kvviz.step.records import Sampling

    engine = StepEngine(hybrid, Sampling())
    engine.prefill("ROMEO:\nBut soft")
    for _ in range(N_STEPS):
        engine.step()
    return engine


@pytest.mark.model
def test_hybrid_loads_offline_as_olmo_hybrid_with_three_linear_layers_and_one_attention_layer(hybrid, bundled):
    from transformers import OlmoHybridForCausalLM

    assert isinstance(hybrid.model, OlmoHybridForCausalLM)
    info = hybrid.info
    assert info.layer_types == tuple(hybrid.model.config.layer_types)
    assert (info.linear_layers, info.attention_layers, info.all_attention) == ((0, 1, 2), (3,), False)
    assert (info.n_embd, info.n_head, info.head_dim, info.linear_heads, info.linear_key_dim) == (128, 4, 32, 4, 32)
    assert info.n_params == sum(p.numel() for p in hybrid.model.parameters())
    assert loading.bundled_info(name=loading.BUNDLED_HYBRID) == info  # the torch-free description agrees
    assert "3 Gated DeltaNet layers" in info.label
    text = "ROMEO:\nBut soft! 🙂"
    assert hybrid.tokenizer(text).input_ids == bundled.tokenizer(text).input_ids  # the other models' tokenizer


@pytest.mark.model
def test_stage_tokens_equal_generates_greedy_tokens(hybrid, stepped):
    import torch

    prompt_ids = torch.tensor([stepped.token_ids[: stepped.prompt_len]])
    with torch.inference_mode():
        out = hybrid.model.generate(prompt_ids, max_new_tokens=N_STEPS + 1, do_sample=False, pad_token_id=0)
    assert out[0, stepped.prompt_len :].tolist() == stepped.generated_ids() + [stepped.pending_token_id]


@pytest.mark.model
def test_state_bytes_are_the_caches_tensors_and_the_same_at_every_step(hybrid, stepped):
    from kvviz.memory.layers import from_transformers

    layers = stepped.cache.layers
    calculator = from_transformers(hybrid.model.config, "fp32", "hybrid")
    recurrent_bytes, conv_bytes = hybrid.info.linear_state_bytes()
    for record in stepped.records:
        assert [s.layer for s in record.states] == [0, 1, 2]
        for state in record.states:
            assert state.recurrent.shape == (4, 32, 32) and state.conv.shape == (hybrid.info.conv_channels, 4)
            assert (state.recurrent_bytes, state.conv_bytes) == (recurrent_bytes, conv_bytes)
            assert state.total_bytes == calculator.layers[state.layer].fixed_bytes
    for state in stepped.records[-1].states:  # the newest record holds exactly what the cache holds now
        recurrent, conv = layers[state.layer].recurrent_states[0], layers[state.layer].conv_states[0]
        assert state.recurrent_bytes == recurrent.numel() * recurrent.element_size()
        assert state.conv_bytes == conv.numel() * conv.element_size()
        assert np.array_equal(state.recurrent, recurrent[0].numpy()) and np.array_equal(state.conv, conv[0].numpy())
    assert len({r.state_bytes for r in stepped.records}) == 1
    assert stepped.records[-1].state_bytes == calculator.fixed_bytes  # 3 layers x (16 KiB + 6 KiB)


@pytest.mark.model
def test_the_attention_layer_grows_one_kv_row_per_step(hybrid, stepped):
    from kvviz.memory.layers import from_transformers

    calculator = from_transformers(hybrid.model.config, "fp32", "hybrid")
    prompt_len = stepped.prompt_len
    for k, record in enumerate(stepped.records):
        assert record.cache_len == prompt_len + k
        assert record.new_keys.shape == (1, 4, record.n_fed, 32)  # [attention layers, kv heads, q_len, head_dim]
        assert record.cache_bytes == calculator.growing_bytes_at(record.cache_len)  # layer 3's K and V only
    attention = stepped.cache.layers[3]
    assert attention.keys.shape[-2] == attention.values.shape[-2] == prompt_len + N_STEPS
    assert stepped.records[-1].cache_bytes == 2 * attention.keys.numel() * attention.keys.element_size()


@pytest.mark.model
def test_back_puts_every_state_back_exactly_and_the_next_step_repeats(hybrid):
    from kvviz.step.engine import StepEngine
    from kvviz.step.records import Sampling

    engine = StepEngine(hybrid, Sampling())
    engine.prefill("JULIET:")
    straight = [engine.step() for _ in range(4)]
    engine.back()
    engine.back()
    shown = engine.records[-1]
    for state in shown.states:
        layer = engine.cache.layers[state.layer]
        assert np.array_equal(layer.recurrent_states[0][0].numpy(), state.recurrent)
        assert np.array_equal(layer.conv_states[0][0].numpy(), state.conv)
    assert engine.cache.layers[3].keys.shape[-2] == shown.cache_len
    again = [engine.step() for _ in range(2)]
    for a, b in zip(again, straight[2:], strict=True):
        assert a.next_token_id == b.next_token_id
        np.testing.assert_allclose(a.next_logits, b.next_logits, atol=1e-5)
        for sa, sb in zip(a.states, b.states, strict=True):
            np.testing.assert_allclose(sa.recurrent, sb.recurrent, atol=1e-6)


@pytest.mark.model
def test_without_cache_and_the_race_run_on_the_hybrid_and_leave_the_cache_alone(stepped):
    check = stepped.check_without_cache()
    assert check.same_next_token and check.max_abs_logit_diff < 1e-3 and check.recomputed_rows == stepped.cache_len
    before = [s.recurrent.copy() for s in stepped.records[-1].states]
    timing = stepped.race(budget_s=0.05)
    assert timing.seq_len == stepped.cache_len and timing.repeats >= 1
    for state, kept in zip(stepped.records[-1].states, before, strict=True):
        assert np.array_equal(stepped.cache.layers[state.layer].recurrent_states[0][0].numpy(), kept)


@pytest.mark.model
def test_stage_view_says_grows_and_fixed_and_draws_a_linear_layer_as_its_state(hybrid, stepped):
    from kvviz.figures import step as figs

    attention = stepped.stage_view(3, 0)
    assert attention.snapshot.state is None and attention.snapshot.keys.shape == (stepped.cache_len, 32)
    kv_tile, state_tile = attention.tiles[:2]
    assert kv_tile.value == f"{stepped.cache_len} rows, {stepped.cache_len} KiB (grows)"  # 1 KiB a row: 2x4x32x4 B
    assert state_tile.value == "66 KiB (fixed)"
    linear = stepped.stage_view(0, 0)
    assert linear.snapshot.state.layer == 0 and linear.snapshot.keys.shape[0] == 0
    assert "22 KiB" in linear.readout and "Back crops layer 3" in linear.hybrid_text
    fig = figs.state_figure(linear.snapshot)
    assert len(fig.data) == 8  # per head: its state, then its conv inputs (q, k, v channels)
    assert {t.z.shape for t in fig.data[0::2]} == {(32, 32)} and {t.z.shape for t in fig.data[1::2]} == {(4, 96)}
    race = stepped.stage_view(3, 0, all_layers=True)
    assert race.snapshot.kv_layers == (3,) and len(race.snapshot.layer_keys) == 1


@pytest.mark.model
def test_attention_patterns_are_the_attention_layers_only(hybrid):
    from kvviz.step.patterns import pattern_run

    ids = hybrid.tokenizer("red apple blue river red apple blue").input_ids
    run = pattern_run(hybrid, ids)
    assert [lp.layer for lp in run.layers] == [3]
    assert run.layers[0].attention.shape == (4, len(ids), len(ids))


@pytest.mark.model
def test_one_tokens_cost_per_layer_is_what_flop_counter_mode_counts(hybrid):
    """kvviz.ops' per-token counts against torch's FlopCounterMode (2 FLOPs per op) on a real decode step at position
    20: the attention layer's QK^T + AV exactly; the linear layer's convolution (transformers' reference decode
    convolves the 3 kept columns and the new one into 2 outputs and keeps the last: twice kvviz's count). Its state
    products are elementwise products and sums in transformers' reference kernel, which FlopCounterMode does not
    see: they are counted on the same step written as matrix products, checked equal to transformers' kernel."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import DynamicCache
    from transformers.models.olmo_hybrid import modeling_olmo_hybrid as olmo

    from kvviz import ops

    info, model = hybrid.info, hybrid.model
    position = 20
    with torch.inference_mode():
        cache = DynamicCache(config=model.config)
        model(input_ids=torch.tensor([list(range(5, 5 + position))]), past_key_values=cache, use_cache=True)
        counter = FlopCounterMode(display=False)
        with counter:
            model(input_ids=torch.tensor([[7]]), past_key_values=cache, use_cache=True)
    counts = {
        name.removeprefix("OlmoHybridForCausalLM.model."): {str(op): n for op, n in c.items()}
        for name, c in counter.get_flop_counts().items()
    }
    assert counts["layers.3.self_attn"]["aten.bmm"] == ops.FLOPS_PER_OP * ops.attention_token_ops(4, 32, position)
    linear = counts["layers.0.linear_attn"]
    conv_ops = info.conv_channels * info.conv_kernel
    assert linear["aten.convolution"] == 2 * ops.FLOPS_PER_OP * conv_ops
    assert "aten.bmm" not in linear  # the recurrence: elementwise in the reference kernel, unseen

    # the state products of one step, as matrix products: the same numbers as transformers' recurrent kernel
    gen = torch.Generator().manual_seed(0)
    heads, d_k, d_v = info.linear_heads, info.linear_key_dim, info.linear_value_dim
    state = torch.randn(1, heads, d_k, d_v, generator=gen)
    q, k = (torch.nn.functional.normalize(torch.randn(1, 1, heads, d_k, generator=gen), dim=-1) for _ in range(2))
    v = torch.randn(1, 1, heads, d_v, generator=gen)
    g, beta = -torch.rand(1, 1, heads, generator=gen), torch.rand(1, 1, heads, generator=gen)
    expected, expected_state = olmo.torch_recurrent_gated_delta_rule(
        q, k, v, g=g, beta=beta, initial_state=state, output_final_state=True
    )
    qh, kh, vh = q[0, 0] * d_k**-0.5, k[0, 0], v[0, 0]  # [heads, d]
    counter = FlopCounterMode(display=False)
    with counter:
        s = state[0] * g[0, 0].exp()[:, None, None]  # decay: elementwise, not counted (as a softmax is not)
        predicted = torch.bmm(kh[:, None, :], s)[:, 0]  # k^T S: what the state already says about k
        delta = (vh - predicted) * beta[0, 0][:, None]
        s = s + torch.bmm(kh[:, :, None], delta[:, None, :])  # the delta rule's write: S += k delta^T
        out = torch.bmm(qh[:, None, :], s)[:, 0]  # the read: q^T S
    torch.testing.assert_close(out, expected[0, 0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(s, expected_state[0], atol=1e-5, rtol=1e-5)
    state_ops = ops.linear_attention_token_ops(heads, d_k, d_v, info.conv_channels, info.conv_kernel) - conv_ops
    assert counter.get_total_flops() == ops.FLOPS_PER_OP * state_ops == 2 * 3 * heads * d_k * d_v


@pytest.mark.model
def test_the_race_against_all_attention_times_both_at_every_context_and_leaves_their_caches(hybrid):
    from kvviz.model import loaders
    from kvviz.step.engine import StepEngine, context_race

    twin = loaders.attention_twin()
    assert twin.info.all_attention and twin.info.n_layer == hybrid.info.n_layer == 4
    assert (twin.info.n_embd, twin.info.n_head, twin.info.d_ff) == (
        hybrid.info.n_embd,
        hybrid.info.n_head,
        hybrid.info.d_ff,
    )
    ids = hybrid.tokenizer("ROMEO:\nBut soft, what light through yonder window breaks? It is the east").input_ids
    race = context_race(hybrid, twin, ids, (4, len(ids)), budget_s=0.05, max_repeats=3)
    assert race.contexts == (4, len(ids)) and race.repeats >= 1
    assert all(len(h) == len(t) for h, t in zip(race.hybrid_ms, race.twin_ms, strict=True))
    assert len(race.inside_noise()) == 2
    engine = StepEngine(hybrid)
    with pytest.raises(ValueError):
        StepEngine(twin).versus_attention()  # an all-attention model has no hybrid to race
    assert engine.versus_attention(budget_s=0.05).contexts == (16, 64, 128, 256)
