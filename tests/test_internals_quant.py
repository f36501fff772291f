"""Cache internals, part 2: quantized caches (round-trip bounds, bytes vs the calculator, the agreement of greedy
decoding over quantized rows) and speculative decoding's rollback. transformers' QuantizedCache defaults and plain
greedy decoding are the oracles. Part 1 (layout, prefix reuse, cross-attention, windows, paging): test_internals.py."""

from __future__ import annotations

import numpy as np
import pytest

from kvviz.internals import paging, quant, speculative, window
from support.greedy import generate_greedy

pytestmark = pytest.mark.model  # every test builds torch tensors or runs a bundled model

PROMPT = "ROMEO: But soft, what light through yonder window breaks? It is the east, and Juliet is the sun."


# ----- quantization ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("group", [4, 8, 32])
def test_round_trip_within_stated_bound(bits, group):
    import torch

    from kvviz.internals.lab import quant as quant_lab

    gen = torch.Generator().manual_seed(bits * 100 + group)
    x = torch.randn(2, 3, 7, 32, generator=gen) * 5 + 1
    x[0, 0, 0] = 0.25  # a constant group (scale 0) must round-trip exactly
    qt = quantize_check(x, bits, group)
    err = (quant_lab.dequantize(qt) - x).abs()
    assert (err <= quant_lab.error_bound(qt) * (1 + 1e-3) + 1e-6 * x.abs()).all()
    assert float(err[0, 0, 0].max()) == 0.0


def quantize_check(x, bits, group):
    import torch

    from kvviz.internals.lab import quant as quant_lab

    qt = quant_lab.quantize(x, bits, group)
    assert qt.packed.dtype == torch.uint8 and qt.packed.shape[-1] == (32 if bits == 8 else 16)
    assert qt.scale.dtype == torch.float16 and qt.scale.shape[-1] == 32 // group
    return qt


def test_round_trip_on_real_cache(bundled):
    from kvviz.internals.lab import quant as quant_lab

    cache = quant_lab.prompt_cache(bundled, PROMPT)
    for layer in cache.layers:
        for x in (layer.keys, layer.values):
            for bits in (8, 4):
                qt = quant_lab.quantize(x, bits, 16)
                err = (quant_lab.dequantize(qt) - x).abs()
                assert (err <= quant_lab.error_bound(qt) * (1 + 1e-3) + 1e-6 * x.abs()).all()


@pytest.mark.parametrize("group", [8, 32])
def test_quant_report_bytes_match_calculator(bundled, group):
    from kvviz.internals.lab import quant as quant_lab

    reports = {s: quant_lab.quant_report(bundled, PROMPT, s, group) for s in quant.SCHEMES}
    seq_len = reports["int8"].seq_len
    n_numbers = 2 * bundled.info.n_layer * bundled.info.n_kv_heads * bundled.info.head_dim * seq_len
    for r in reports.values():
        assert r.stored_bytes == r.calculator_bytes
        assert r.fp32_bytes == 4 * n_numbers
    assert reports["fp16"].stored_bytes == reports["bf16"].stored_bytes == 2 * n_numbers
    overhead = (n_numbers // group) * 4
    assert reports["int8"].stored_bytes == n_numbers + overhead == reports["int8"].overhead_bytes + n_numbers
    assert reports["int4"].stored_bytes == n_numbers // 2 + overhead
    worst = {s: max(max(la.key_rel_rms, la.value_rel_rms) for la in r.layers) for s, r in reports.items()}
    assert worst["int4"] > worst["int8"] > 0 and worst["fp16"] < worst["int8"]


def test_greedy_agreement_counts(bundled, monkeypatch):
    import torch

    from kvviz.internals.lab import quant as quant_lab

    prompts = ["ROMEO:", "JULIET: O Romeo"]
    # The full-precision baseline is plain greedy decoding (checked against the stepping engine).
    for p in prompts:
        assert (
            quant_lab._run(bundled, bundled.tokenizer(p).input_ids, 4, None, 32, None)
            == generate_greedy(bundled, p, 4)[0]
        )
    results = quant_lab.greedy_agreement(bundled, prompts, n_new=4, schemes=("int8", "int4"), group_size=32)
    for r in results:
        assert r.steps == 8 and 0 <= r.same_token_steps <= 8 and len(r.first_mismatch) == 2
        assert r.identical_prompts == sum(m is None for m in r.first_mismatch)
        assert all(m is None or 0 <= m < 4 for m in r.first_mismatch)
    # The quantized rows really feed decoding: an exact "format" agrees everywhere, a destructive one does not.
    monkeypatch.setattr(quant_lab, "round_trip", lambda x, scheme, group: (x.float().clone(), 0))
    exact = quant_lab.greedy_agreement(bundled, prompts, n_new=4, schemes=("int8",), group_size=32)[0]
    assert (exact.same_token_steps, exact.identical_prompts, exact.first_mismatch) == (8, 2, (None, None))
    monkeypatch.setattr(quant_lab, "round_trip", lambda x, scheme, group: (torch.zeros_like(x, dtype=torch.float32), 0))
    wiped = quant_lab.greedy_agreement(bundled, prompts, n_new=4, schemes=("int8",), group_size=32)[0]
    assert wiped.same_token_steps < 8


def test_agreement_work_is_capped(bundled):
    from kvviz.internals.lab import quant as quant_lab

    with pytest.raises(quant.QuantError, match="number of prompts"):
        quant_lab.greedy_agreement(bundled, ["ROMEO:"] * (quant.AGREEMENT_MAX_PROMPTS + 1), 1)
    with pytest.raises(quant.QuantError, match="tokens per prompt"):
        quant_lab.greedy_agreement(bundled, ["ROMEO:"], quant.AGREEMENT_MAX_TOKENS + 1)
    with pytest.raises(quant.QuantError, match=f"the cap is {quant.AGREEMENT_MAX_PROMPT_TOKENS}"):
        quant_lab.greedy_agreement(bundled, ["ROMEO:"] * 8, 17)
    assert quant.AGREEMENT_MAX_PROMPTS * quant.AGREEMENT_MAX_TOKENS > quant.AGREEMENT_MAX_PROMPT_TOKENS
    with pytest.raises(quant.QuantError, match="prompt on line 2 is .* tokens.*minus the 4 tokens"):
        quant_lab.greedy_agreement(bundled, ["ROMEO:", "x " * (bundled.info.n_positions - 2)], 4)


def test_long_prompts_are_refused_not_truncated(bundled):
    from kvviz.internals.lab import paging as paging_lab
    from kvviz.internals.lab import quant as quant_lab
    from kvviz.internals.lab import window as window_lab

    too_long = "a " * (bundled.info.n_positions + 10)
    with pytest.raises(window.WindowError, match="positions"):
        window_lab.window_on_model(bundled, too_long, 4)
    with pytest.raises(quant.QuantError, match="positions"):
        quant_lab.quant_report(bundled, too_long, "int8", 32)
    with pytest.raises(paging.PagingError, match="positions"):
        paging_lab.paged_generation(bundled, too_long)


def test_residual_window_bytes_and_transformers_default(bundled):
    import inspect

    from transformers.cache_utils import QuantizedCache, QuantizedLayer

    from kvviz.internals.lab import quant as quant_lab

    assert (
        quant_lab.transformers_residual_length()
        == inspect.signature(QuantizedLayer.__init__).parameters["residual_length"].default
    )
    assert "residual_length" in QuantizedCache.__init__.__code__.co_varnames
    plain = quant_lab.quant_report(bundled, PROMPT, "int4", 32)
    seq_len = plain.seq_len
    kept = quant_lab.quant_report(bundled, PROMPT, "int4", 32, residual_rows=7)
    info = bundled.info
    row = 2 * info.n_layer * info.n_kv_heads * info.head_dim  # numbers per token, K and V, all layers
    assert kept.residual_rows == 7 and kept.residual_bytes == 7 * row * 4  # float32
    assert kept.stored_bytes == (seq_len - 7) * row // 2 + (seq_len - 7) * row // 32 * 4 + 7 * row * 4
    assert kept.stored_bytes == kept.calculator_bytes
    assert all(
        a.key_rel_rms < b.key_rel_rms for a, b in zip(kept.layers, plain.layers, strict=True)
    )  # fewer rows rounded
    everything = quant_lab.quant_report(bundled, PROMPT, "int8", 32, residual_rows=10_000 % (info.n_positions + 1))
    assert everything.residual_rows == min(10_000 % (info.n_positions + 1), seq_len)


def test_new_rows_are_really_quantized(bundled):
    import torch

    from kvviz.internals.lab import quant as quant_lab

    cache = quant_lab.prompt_cache(bundled, "ROMEO: hello there")
    before = cache.layers[1].keys.clone()
    quant_lab._qdq_new_rows(cache, 2, "int4", 32)
    after = cache.layers[1].keys
    assert torch.equal(after[:, :, :2], before[:, :, :2])  # rows before `start` untouched
    assert not torch.equal(after[:, :, 2:], before[:, :, 2:])
    bound = quant_lab.error_bound(quant_lab.quantize(before[:, :, 2:], 4, 32))
    assert ((after[:, :, 2:] - before[:, :, 2:]).abs() <= bound * (1 + 1e-3) + 1e-5).all()


def test_quant_bad_input(bundled):
    import torch

    from kvviz.internals.lab import quant as quant_lab

    with pytest.raises(quant.QuantError, match="bit width"):
        quant_lab.quantize(torch.zeros(2, 32), 3, 8)
    with pytest.raises(quant.QuantError, match="finite"):
        quant_lab.quantize(torch.full((2, 32), 1e6), 8, 8)
    with pytest.raises(quant.QuantError, match="group size"):
        quant_lab.quant_report(bundled, PROMPT, "int8", 5)
    with pytest.raises(quant.QuantError, match="unknown cache format"):
        quant_lab.quant_report(bundled, PROMPT, "int2", 8)
    with pytest.raises(quant.QuantError, match="prompt"):
        quant_lab.greedy_agreement(bundled, ["", "  "], 4)
    with pytest.raises(quant.QuantError, match="tokens per prompt"):
        quant_lab.greedy_agreement(bundled, ["ROMEO:"], 0)


# ----- speculative decoding ----------------------------------------------------------------------------------
@pytest.mark.parametrize("temperature", [0.3, 2.0])
def test_speculative_equals_greedy_and_cache_is_cropped(bundled, temperature):
    from kvviz.internals.lab import speculative as speculative_lab

    prompt = "ROMEO: But soft, what light"
    run = speculative_lab.speculative_decode(bundled, prompt, n_new=12, k=3, draft_temperature=temperature, seed=1)
    tokens, logits = generate_greedy(bundled, prompt, 12)
    for i, (got, want) in enumerate(zip(run.tokens, tokens, strict=True)):
        if got != want:  # only a floating-point near-tie may flip greedy between batched and one-by-one passes
            top2 = np.sort(logits[i])[-2:]
            assert top2[1] - top2[0] < 1e-3, f"token {i} differs from greedy"
            break
    n_prompt = len(bundled.tokenizer(prompt).input_ids)
    assert len(run.tokens) == 12 and run.final_cache_len == n_prompt + 11
    assert run.cache_vs_fresh_max_abs_diff < 1e-4
    for r in run.rounds:
        k_now = len(r.proposed)
        assert r.cache_len_verified == r.cache_len_before + k_now + 1
        assert r.cache_len_after_crop == r.cache_len_before + 1 + r.accepted
        assert len(r.emitted) == r.accepted + 1 and r.emitted[:-1] == r.proposed[: r.accepted]
    assert run.verifier_passes == 1 + len(run.rounds)


def test_speculative_bad_input(bundled):
    from kvviz.internals.lab import speculative as speculative_lab

    with pytest.raises(speculative.SpeculativeError, match="k must be"):
        speculative_lab.speculative_decode(bundled, "ROMEO", k=0)
    with pytest.raises(speculative.SpeculativeError, match="temperature"):
        speculative_lab.speculative_decode(bundled, "ROMEO", draft_temperature=0)
    with pytest.raises(speculative.SpeculativeError, match="empty"):
        speculative_lab.speculative_decode(bundled, " ")
    with pytest.raises(speculative.SpeculativeError, match="positions"):
        speculative_lab.speculative_decode(bundled, "a " * 250, n_new=20)


def test_int2_packs_four_per_byte_within_its_bound_and_stays_off_the_quant_page():
    """int2 (the eviction lab's equal-bytes point) packs four values per byte and round-trips within scale/2;
    the Quantized caches page's formats (quant.SCHEMES) still refuse it."""
    import torch

    from kvviz.internals.lab import quant as quant_lab

    x = torch.randn(2, 3, 7, 32, generator=torch.Generator().manual_seed(0))
    qt = quant_lab.quantize(x, 2, 8)
    assert qt.packed.shape == (2, 3, 7, 8) and qt.stored_bytes == 2 * 3 * 7 * (8 + 4 * 4)
    assert ((quant_lab.dequantize(qt) - x).abs() <= quant_lab.error_bound(qt) + 1e-5).all()
    _, stored = quant_lab.round_trip(x, "int2", 8)
    assert stored == qt.stored_bytes
    assert "int2" not in quant.SCHEMES
