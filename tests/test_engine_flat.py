"""kvviz.speedup.flat_engine and kvviz.speedup.weight_format on the real bundled GPT-2, transformers' caches as the oracle.

The flat engine computes the model's own logits and K/V in every fp32 format; int8 stays within a stated
tolerance and its token agreement is reported; the format chooser measures real kernels and keeps the faster,
never holding a copy it does not use; a broken private oneDNN op falls back instead of crashing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from transformers import DynamicCache

    from kvviz.speedup import flat_engine

pytestmark = pytest.mark.model

INT8_LOGIT_ATOL = 0.5  # int8 weights on the bundled model: max |logit difference| seen ~0.1


@pytest.fixture(scope="module")
def loaded():
    from kvviz.model.loaders import load_model

    return load_model("bundled", attn_implementation="sdpa")


def _compare_with_dynamic_cache(loaded, fmt: str, atol: float) -> tuple[flat_engine.FlatCacheGPT2, DynamicCache, int]:
    import torch
    from transformers import DynamicCache

    from kvviz.speedup import flat_engine, harness

    model = loaded.model
    prompt = harness.prompt_token_ids(loaded, 7)
    engine = flat_engine.FlatCacheGPT2(model, max_len=12, weight_format=fmt)
    cache = DynamicCache(config=model.config)
    agree = 0
    with torch.inference_mode():
        ours = engine.forward(torch.tensor([prompt]))
        theirs = model(input_ids=torch.tensor([prompt]), past_key_values=cache, use_cache=True).logits[:, -1]
        for _ in range(4):
            torch.testing.assert_close(ours, theirs, rtol=atol, atol=atol)
            agree += int(ours.argmax()) == int(theirs.argmax())
            token = int(theirs.argmax())  # both follow the model's own greedy path
            ours = engine.forward(torch.tensor([[token]]))
            theirs = model(input_ids=torch.tensor([[token]]), past_key_values=cache, use_cache=True).logits[:, -1]
    return engine, cache, agree


@pytest.mark.parametrize("fmt", ["stored", "onednn"])
def test_fp32_formats_match_model_logits_and_cache(loaded, fmt):
    import torch

    from kvviz.speedup import flat_engine

    try:
        engine, cache, agree = _compare_with_dynamic_cache(loaded, fmt, atol=1e-4)
    except flat_engine.FormatUnavailable as exc:
        pytest.skip(f"this torch build has no {fmt}: {exc}")
    assert agree == 4
    assert engine.length == cache.get_seq_length() == 11
    for layer, cached in enumerate(cache.layers):
        torch.testing.assert_close(engine.keys[layer, :, :, :11], cached.keys, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(engine.values[layer, :, :, :11], cached.values, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        engine.forward(torch.tensor([[1, 2]]))  # only one token at a time once the cache holds rows
    engine.reset()
    assert engine.length == 0


def test_int8_within_stated_tolerance(loaded):
    engine, _, agree = _compare_with_dynamic_cache(loaded, "int8", atol=INT8_LOGIT_ATOL)
    assert agree >= 3  # reported by the benchmark as token agreement; here 4 of 4 on this prompt
    n_matrix_weights = sum(
        p.numel()
        for name, p in loaded.model.named_parameters()
        if name.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight"))
    )
    n_matrix_weights += loaded.model.lm_head.weight.numel()
    assert engine.int8_weight_bytes() == n_matrix_weights + 8 * (4 * loaded.info.n_layer + 1)


def test_batched_forward_equals_one_sequence_at_a_time(loaded):
    import torch

    from kvviz.speedup import flat_engine

    model = loaded.model
    prompts = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 12], [1, 2, 3, 4]])
    batched = flat_engine.FlatCacheGPT2(model, max_len=6, batch=3)
    single = flat_engine.FlatCacheGPT2(model, max_len=6)
    with torch.inference_mode():
        out = batched.forward(prompts)
        nxt = batched.forward(out.argmax(-1, keepdim=True))
        for row in range(3):
            single.reset()
            one = single.forward(prompts[row : row + 1])
            torch.testing.assert_close(out[row : row + 1], one, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(
                nxt[row : row + 1], single.forward(one.argmax(-1, keepdim=True)), rtol=1e-5, atol=1e-5
            )


def test_model_is_left_untouched(loaded):
    import torch

    from kvviz.speedup import flat_engine

    model = loaded.model
    before = {name: p.clone() for name, p in model.named_parameters()}
    for fmt in ("stored", "int8"):
        flat_engine.FlatCacheGPT2(model, max_len=4, weight_format=fmt)
    assert all(torch.equal(before[name], p) for name, p in model.named_parameters())
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())
    assert model.lm_head.weight is model.transformer.wte.weight


# ----- the chooser: real measurements ------------------------------------------------------------------------
def test_pick_fastest_picks_the_faster_of_two_real_kernels():
    import torch

    from kvviz.speedup import weight_format

    x, w = torch.randn(1, 64), torch.randn(64, 64)
    choice = weight_format.pick_fastest(
        {"one_gemv": lambda: torch.mm(x, w), "forty_gemvs": lambda: [torch.mm(x, w) for _ in range(40)]}, rounds=5
    )
    times = dict(choice.ms_by_format)
    assert choice.chosen == "one_gemv" == min(times, key=times.get)
    assert choice.margin == pytest.approx(times["forty_gemvs"] / times["one_gemv"]) and choice.margin > 1
    assert "faster" in choice.describe()


def test_choose_engine_keeps_the_measured_faster_format_only(loaded):
    from kvviz.speedup import weight_format

    engine, choice = weight_format.choose_engine(loaded.model, max_len=8, rounds=3)
    times = dict(choice.ms_by_format)
    if times:  # both formats ran here
        assert set(times) == {"stored", "onednn"} and choice.chosen == min(times, key=times.get)
    assert engine.weight_format == choice.chosen
    if choice.chosen == "stored":  # no copy at all: the engine multiplies the model's own tensors
        assert engine.blocks[0][2].data_ptr() == loaded.model.transformer.h[0].attn.c_attn.weight.data_ptr()
    forced, forced_choice = weight_format.choose_engine(loaded.model, max_len=8, weight_format="stored")
    assert forced.weight_format == "stored" and forced_choice.how == "forced by the settings"


def test_broken_private_onednn_op_falls_back_to_stored(loaded, monkeypatch):
    import torch

    from kvviz.speedup import flat_engine, weight_format

    def changed_signature(x, packed, bias):
        return torch.ops.mkldnn._linear_pointwise(x, packed)  # the private op no longer takes these arguments

    monkeypatch.setattr(flat_engine, "_onednn_linear", changed_signature)
    with pytest.raises(flat_engine.FormatUnavailable):
        flat_engine.FlatCacheGPT2(loaded.model, max_len=4, weight_format="onednn")
    engine, choice = weight_format.choose_engine(loaded.model, max_len=4)
    assert engine.weight_format == choice.chosen == "stored" and "only usable" in choice.how
