"""kvviz.ops: hand-checkable counts, closed form == step sums, and the cross-check against the real model.

The cross-check runs the real bundled GPT-2 (eager attention) under a TorchDispatchMode that records every
aten matmul it executes, classifies each one (Q/K/V projection, QK^T, AV, output projection, MLP, LM head)
and adds up its multiply-adds from the operand shapes. Those brute-force totals must equal kvviz.ops exactly.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz import ops
from kvviz.memory.presets import PRESETS

GPT2 = PRESETS["gpt2"].shape
LLAMA3 = PRESETS["llama-3-8b"].shape


# ----- hand-checkable values ---------------------------------------------------------------------------------
def test_attention_dot_products_by_hand():
    # uncached, 4 tokens: 1 + 2 + 3 + 4 = 10 per head; 2 layers x 3 heads -> 60
    assert ops.attention_dot_products(2, 3, 0, 4, cached=False) == 60
    assert ops.attention_dot_products(2, 3, 3, 1, cached=False) == 60  # same 4 tokens, recomputed
    # cached: the 4th token's query alone sees 4 keys
    assert ops.attention_dot_products(2, 3, 3, 1, cached=True) == 2 * 3 * 4
    # cached, 2 new tokens after 3: positions 3 and 4 see 4 and 5 keys
    assert ops.attention_dot_products(1, 1, 3, 2, cached=True) == 9
    # dense (what a plain matmul computes): every query x every key it is given
    assert ops.attention_dot_products_dense(1, 1, 0, 4, cached=False) == 16
    assert ops.attention_dot_products_dense(1, 1, 3, 2, cached=True) == 10


def test_gpt2_per_token_ops_by_hand():
    # GPT-2 small: 12 layers, d = 768. QKV 768 x 2304, out 768 x 768, MLP 768 x 3072 x 2, per layer per token.
    assert GPT2.qkv_ops_per_token == 12 * 768 * 2304
    assert GPT2.out_proj_ops_per_token == 12 * 768 * 768
    assert GPT2.mlp_ops_per_token == 12 * 2 * 768 * 3072
    assert GPT2.lm_head_ops_per_position == 768 * 50257
    # GQA (Llama-3-8B): K and V project to 8 heads x 128 only: 4096 x (4096 + 2 x 1024)
    assert LLAMA3.qkv_ops_per_token == 32 * 4096 * 6144
    assert LLAMA3.mlp_ops_per_token == 32 * 3 * 4096 * 14336


def test_flops_are_two_per_op():
    counts = ops.forward_pass_counts(GPT2, 10, 1, cached=True)
    assert counts.total_flops == 2 * counts.total_ops
    assert all(counts.flops(c) == 2 * counts.ops(c) for c in ops.COMPONENTS)
    assert counts.attn_scores == counts.attention_dot_products * 64


@pytest.mark.model
def test_a_loaded_models_ops_shape_is_its_real_width(bundled):
    shape = bundled.info.ops_shape()
    assert (shape.n_layer, shape.n_head, shape.head_dim) == (
        bundled.info.n_layer,
        bundled.info.n_head,
        bundled.info.head_dim,
    )
    assert shape.d_ff == bundled.model.config.n_inner or shape.d_ff == 4 * bundled.info.n_embd
    assert shape.d_ff == bundled.model.transformer.h[0].mlp.c_fc.weight.shape[1]  # the real MLP width


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(n_layer=0), "n_layer"),
        (dict(n_kv_heads=5), "divide"),
        (dict(head_dim=1.5), "whole number"),
        (dict(mlp_matrices=4), "mlp_matrices"),
    ],
)
def test_bad_shapes_are_refused(kwargs, message):
    base = dict(n_layer=2, n_head=4, n_kv_heads=2, head_dim=8, n_embd=32, d_ff=64, vocab_size=10)
    with pytest.raises(ops.OpsInputError, match=message):
        ops.ModelShape(**{**base, **kwargs})


@pytest.mark.parametrize("bad", [0, -1, 2.0, float("nan"), True, ops.MAX_TOKENS + 1])
def test_bad_lengths_are_refused(bad):
    with pytest.raises(ops.OpsInputError):
        ops.generation_totals(GPT2, 1, bad)


# ----- closed form, properties -------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(p=st.integers(1, 40), n=st.integers(1, 40), all_pos=st.booleans())
def test_closed_form_equals_step_sum(p, n, all_pos):
    steps = list(ops.generation_steps(GPT2, p, n, lm_head_all_positions=all_pos))
    assert len(steps) == n and steps[-1].context_len == p + n - 1
    cached, uncached = ops.generation_totals(GPT2, p, n, lm_head_all_positions=all_pos)
    assert steps[-1].cached_cumulative == cached
    assert steps[-1].uncached_cumulative == uncached
    assert all(s.cached.total_ops <= s.uncached.total_ops for s in steps)


@settings(max_examples=60, deadline=None)
@given(c=st.integers(0, 300), n=st.integers(1, 300), cached=st.booleans())
def test_dot_products_equal_a_position_by_position_count(c, n, cached):
    queries = range(c, c + n) if cached else range(0, c + n)
    brute = sum(p + 1 for p in queries)  # causal: the query at p sees keys 0..p
    assert ops.attention_dot_products(1, 1, c, n, cached) == brute
    assert ops.attention_dot_products(3, 5, c, n, cached) == 15 * brute


def test_cache_saves_quadratic_attention_and_linear_rest():
    cached, uncached = ops.generation_totals(GPT2, 1, 1000, lm_head_all_positions=False)
    # projections/MLP: sum_{L=1}^{1000} L = 500,500 tokens vs 1000
    assert uncached.tokens_fed == 500_500 and cached.tokens_fed == 1000
    assert uncached.mlp * 1000 == cached.mlp * 500_500
    # attention: sum L(L+1)/2 = 1000*1001*1002/6 vs sum L = 500,500 -> exactly (1000 + 2) / 3 = 334
    assert uncached.attention_dot_products * 3 == cached.attention_dot_products * 1002
    assert uncached.lm_head == cached.lm_head  # logits of the last position only: the cache saves nothing here


def test_speedup_claim_holds_only_for_some_readings():
    rows = {r.quantity: r for r in ops.check_speedup_claim(GPT2, 1000)}
    assert rows["Attention (QK^T + AV), the last step alone"].ratio == pytest.approx(500.5)
    assert rows["Attention (QK^T + AV), the last step alone"].holds
    assert rows["Projections + MLP, the whole generation"].ratio == pytest.approx(500.5)
    assert not rows["Attention (QK^T + AV), the whole generation"].holds  # 334x
    assert not rows["Projections + MLP, the last step alone"].holds  # 1000x


def test_curve_is_sampled_from_closed_form():
    pts = ops.curve(GPT2, 8, 100_000, max_points=50)
    assert len(pts) <= 50 and pts[0][0] == 1 and pts[-1][0] == 100_000
    assert pts[-1][1:] == ops.generation_totals(GPT2, 8, 100_000)


# ----- the cross-check against the real model ----------------------------------------------------------------
def _matmul_counter(model):
    """A MatmulCounter for `model` (a TorchDispatchMode: the class is built here, so collecting this module never
    imports torch)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class MatmulCounter(TorchDispatchMode):
        """Records every aten matmul the model executes and attributes its multiply-adds to a component."""

        def __init__(self, model) -> None:
            super().__init__()
            self.ops: Counter[str] = Counter()
            self.unknown: list[str] = []
            self._bmm_calls = 0
            self.weights: dict[int, str] = {model.lm_head.weight.data_ptr(): "lm_head"}
            for block in model.transformer.h:
                self.weights[block.attn.c_attn.weight.data_ptr()] = "qkv_proj"
                self.weights[block.attn.c_proj.weight.data_ptr()] = "out_proj"
                self.weights[block.mlp.c_fc.weight.data_ptr()] = "mlp"
                self.weights[block.mlp.c_proj.weight.data_ptr()] = "mlp"

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__
            if name in ("addmm", "mm"):
                a, b = (args[1], args[2]) if name == "addmm" else (args[0], args[1])
                m, k = a.shape
                n = b.shape[1]
                component = self.weights.get(b.data_ptr())  # Conv1D: addmm(bias, x, weight); lm_head: mm(x, W^T)
                self._add(component, m * k * n, f"{name}{tuple(a.shape)}x{tuple(b.shape)}")
            elif name in ("bmm", "baddbmm"):
                a, b = (args[0], args[1]) if name == "bmm" else (args[1], args[2])
                batch, m, k = a.shape
                n = b.shape[2]
                # eager attention runs exactly two per layer, in order: QK^T then (softmax) AV
                component = "attn_scores" if self._bmm_calls % 2 == 0 else "attn_values"
                self._bmm_calls += 1
                self._add(component, batch * m * k * n, name)
            elif name in ("matmul", "linear", "dot", "mv", "addmv", "addbmm"):
                self.unknown.append(name)
            return func(*args, **(kwargs or {}))

        def _add(self, component, macs, what):
            if component is None:
                self.unknown.append(what)
            else:
                self.ops[component] += macs

    return MatmulCounter(model)


def _brute_force(model, passes):
    """Run the forward passes (a list of callables) under the counter; return (ops per component, causal dots)."""
    import torch

    counter = _matmul_counter(model)
    causal_dots = 0
    with torch.no_grad():  # not inference_mode: there, composite aten.matmul/linear reach the mode undecomposed
        for run in passes:
            with counter:
                out = run()
            # the softmax turns every masked score into an exact 0: the nonzero weights are the causal pairs
            causal_dots += sum(int((a != 0).sum()) for a in out.attentions)
    assert not counter.unknown, f"unclassified matmuls: {counter.unknown}"
    return counter.ops, causal_dots


def _expected(shape, passes, dense, lm_all):
    total = ops.ZERO
    for before, n_new, cached in passes:
        total = total + ops.forward_pass_counts(shape, before, n_new, cached, dense=dense, lm_head_all_positions=lm_all)
    return total


@pytest.mark.model
@pytest.mark.parametrize("logits_to_keep", [0, 1])
def test_counts_equal_the_matmuls_the_real_model_executes(bundled, logits_to_keep):
    import torch

    model = bundled.model
    shape = bundled.info.ops_shape()
    prompt, n_new_tokens = [5, 17, 99, 3, 42], 6
    lm_all = logits_to_keep == 0
    ids = torch.tensor([prompt + [7, 11, 13, 19, 23]])  # fixed follow-up tokens: the counts do not depend on them

    # with the cache: prefill, then one token per pass over transformers' DynamicCache
    state = {}

    def prefill():
        out = model(ids[:, :5], use_cache=True, output_attentions=True, logits_to_keep=logits_to_keep)
        state["cache"] = out.past_key_values
        return out

    def decode(pos):
        def run():
            out = model(
                ids[:, pos : pos + 1],
                past_key_values=state["cache"],
                use_cache=True,
                output_attentions=True,
                logits_to_keep=logits_to_keep,
            )
            state["cache"] = out.past_key_values
            return out

        return run

    cached_runs = [prefill] + [decode(5 + k) for k in range(n_new_tokens - 1)]
    uncached_runs = [
        (lambda L=L: model(ids[:, :L], use_cache=False, output_attentions=True, logits_to_keep=logits_to_keep))
        for L in range(5, 5 + n_new_tokens)
    ]
    cached_plan = [(0, 5, True)] + [(5 + k, 1, True) for k in range(n_new_tokens - 1)]
    uncached_plan = [(0, L, False) for L in range(5, 5 + n_new_tokens)]

    for runs, plan, cached in ((cached_runs, cached_plan, True), (uncached_runs, uncached_plan, False)):
        measured, causal_dots = _brute_force(model, runs)
        dense = _expected(shape, plan, dense=True, lm_all=lm_all)
        assert {c: measured[c] for c in ops.COMPONENTS} == {c: dense.ops(c) for c in ops.COMPONENTS}, cached
        causal = _expected(shape, plan, dense=False, lm_all=lm_all)
        assert causal_dots == causal.attention_dot_products, cached
    # and the whole-generation closed form is the same plan
    totals = ops.generation_totals(shape, 5, n_new_tokens, lm_head_all_positions=lm_all)
    assert totals == (_expected(shape, cached_plan, False, lm_all), _expected(shape, uncached_plan, False, lm_all))


# ----- the summary sentence is derived from the counts ------------------------------------------------------------
@pytest.mark.model
def test_savings_sentence_at_the_page_defaults(bundled):
    shape = bundled.info.ops_shape()
    cached, uncached = ops.generation_totals(shape, 16, 200, lm_head_all_positions=False)
    text = ops.savings_sentence(shape, 16, 200)
    mlp = uncached.mlp / cached.mlp
    assert f"{mlp:,.1f}x less work in the Q/K/V and output projections and the MLP" in text
    assert f"{mlp:.1f}" == "107.4"  # work the cache saves in the projections and the MLP too
    assert uncached.qkv_proj / cached.qkv_proj == uncached.out_proj / cached.out_proj == mlp
    assert f"{uncached.attention_ops / cached.attention_ops:,.1f}x less work in attention" in text
    assert "the same work in the LM head" in text and cached.lm_head == uncached.lm_head
    assert text.endswith(f"{uncached.total_ops / cached.total_ops:,.1f}x less in total.")
    every = ops.savings_sentence(shape, 16, 200, lm_head_all_positions=True)
    assert "same work" not in every and f"{mlp:,.1f}x less work in the LM head" in every


def test_whole_run_attention_laws():
    """1-token prompt, N passes, per head: N(N+1)/2 with the cache, N(N+1)(N+2)/6 without; the last step N vs
    N(N+1)/2. At N = 1000 the ratios are 334 and 500.5."""
    n, heads = 1000, GPT2.n_layer * GPT2.n_head
    cached, uncached = ops.generation_totals(GPT2, 1, n, lm_head_all_positions=False)
    assert cached.attention_dot_products == heads * n * (n + 1) // 2
    assert uncached.attention_dot_products == heads * n * (n + 1) * (n + 2) // 6
    assert uncached.attention_dot_products / cached.attention_dot_products == (n + 2) / 3 == 334
    last_c = ops.forward_pass_counts(GPT2, n - 1, 1, True).attention_dot_products
    last_u = ops.forward_pass_counts(GPT2, n - 1, 1, False).attention_dot_products
    assert last_u / last_c == 500.5


@pytest.mark.parametrize("p, n", [(1, 1000), (16, 200), (5, 1), (1, 1)])
def test_attention_per_head_is_the_counts_and_their_closed_forms(p, n):
    """The one home of the "~500x" arithmetic: the ops page, the claims and the lesson all quote it."""
    per_head, t = ops.attention_per_head(GPT2, p, n), p + n - 1
    cached, uncached = ops.generation_totals(GPT2, p, n)
    heads = GPT2.n_layer * GPT2.n_head
    assert (heads * per_head.run_cached, heads * per_head.run_uncached) == (
        cached.attention_dot_products,
        uncached.attention_dot_products,
    )
    assert per_head.positions == t and per_head.run_cached == t * (t + 1) // 2
    assert per_head.run_uncached == per_head.all_triangles - per_head.prompt_triangles
    assert (per_head.last_step_cached, per_head.last_step_uncached) == (t, t * (t + 1) // 2)
    assert per_head.last_step_ratio == (t + 1) / 2


def test_ops_figures_never_print_600B():
    from kvviz.figures import ops as figs
    from kvviz.i18n import numbers

    points = ops.curve(LLAMA3, 16, 1000, max_points=50)
    cached, uncached = ops.generation_totals(LLAMA3, 16, 1000)
    for fig in (figs.cumulative_figure(points), figs.breakdown_figure(cached, uncached, log_y=False)):
        # plotly's default "B" reads as bytes or billions, "0.2x10^10" needs a superscript nobody reads at the back:
        # the values are scaled by a named power of 1,000 and printed in full, the exact integer on hover
        assert fig.layout.yaxis.exponentformat == "none"
        word = fig.layout.yaxis.title.text.rsplit(", ", 1)[-1]
        factor = {s.unit: s.divisor for s in numbers.scales("en")}[word]
        trace = fig.data[0]
        assert [round(v * factor) for v in trace.y] == list(trace.customdata)


def test_a_hybrids_token_cost_grows_in_attention_and_stays_in_a_linear_layer():
    costs = ops.hybrid_token_costs(4, 32, 4, 32, 32, 384, 4, 256)  # the bundled hybrid's shape
    assert costs.linear_ops == 3 * 4 * 32 * 32 + 384 * 4 == 13_824
    assert costs.attention_ops[0] == 2 * 4 * 32 and costs.ops_per_row == 256
    assert all(b - a == 256 for a, b in zip(costs.attention_ops[:-1], costs.attention_ops[1:], strict=True))
    p = costs.linear_cheaper_from
    assert costs.attention_ops[p] > costs.linear_ops >= costs.attention_ops[p - 1] and p == 54
    with pytest.raises(ops.OpsInputError):
        ops.linear_attention_token_ops(0, 32, 32, 384, 4)
