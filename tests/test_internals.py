"""Cache internals: address arithmetic vs numpy, prefix reuse vs fresh prefill, cross-attention cache, windows
vs the memory calculator, block tables by hand. transformers' own caches are the oracle where they exist
(DynamicCache growth, StaticCache in place). Quantized caches and speculative rollback: test_internals_quant.py."""

from __future__ import annotations

import numpy as np
import pytest

from kvviz import memory
from kvviz.internals import crossattn, layout, paging, prefix, window
from kvviz.memory import capacity

PROMPT = "ROMEO: But soft, what light through yonder window breaks? It is the east, and Juliet is the sun."


# ----- layout -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(layout.LAYOUTS))
@pytest.mark.parametrize("heads,max_len,head_dim,elem", [(4, 256, 32, 4), (3, 7, 5, 2), (1, 1, 1, 1)])
def test_strides_and_offsets_match_numpy(name, heads, max_len, head_dim, elem):
    shape = layout.BufferShape(heads, max_len, head_dim, elem)
    dtype = {4: np.float32, 2: np.float16, 1: np.int8}[elem]
    buf = np.empty(layout.dims(name, shape), dtype=dtype)
    assert layout.strides_bytes(name, shape) == buf.strides
    # Put each element's flat index in the buffer, then read it back through the layout's own indexing.
    flat = np.arange(shape.layer_elems).reshape(buf.shape)
    rng = np.random.default_rng(0)
    for _ in range(20):
        h, p, d = int(rng.integers(heads)), int(rng.integers(max_len)), int(rng.integers(head_dim))
        index = {
            "head_major": (h, p, d),
            "dynamic": (h, p, d),
            "position_major": (p, h, d),
            "transposed": (h * head_dim + d, p),
        }[name]
        assert layout.element_offset_bytes(name, shape, h, p, d) == int(flat[index]) * elem
        address = layout.element_address_bytes(name, shape, 3, 2, h, p, d)
        assert address == 2 * shape.layer_bytes + int(flat[index]) * elem


def test_head_read_runs_by_hand():
    shape = layout.BufferShape(kv_heads=4, max_len=256, head_dim=32, elem_bytes=4)
    hm = layout.head_read_runs("head_major", shape, head=1, seq_len=10)
    assert (hm.runs, hm.run_bytes, hm.gap_bytes, hm.bytes_read) == (1, 10 * 32 * 4, 0, 1280)
    pm = layout.head_read_runs("position_major", shape, head=1, seq_len=10)
    assert (pm.runs, pm.run_bytes, pm.gap_bytes) == (10, 32 * 4, 3 * 32 * 4)
    # ncnn's transposed cache is exactly seq_len wide: head 1's 32 rows of 10 positions are one contiguous slice.
    tr = layout.head_read_runs("transposed", shape, head=1, seq_len=10)
    assert (tr.runs, tr.run_bytes, tr.gap_bytes, tr.span_bytes) == (1, 32 * 10 * 4, 0, 32 * 10 * 4)
    assert layout.head_read_mask("transposed", shape, 1, 10).size == 4 * 32 * 10  # the buffer holds 10 positions
    assert np.flatnonzero(layout.head_read_mask("transposed", shape, 1, 10))[0] == 1 * 32 * 10
    assert layout.head_read_mask("transposed", shape, 2, 256).sum() == 256 * 32
    dy = layout.head_read_runs("dynamic", shape, head=3, seq_len=10)
    assert (dy.runs, dy.run_bytes, dy.span_bytes) == (1, 1280, 1280)


def test_append_cost_by_hand():
    shape = layout.BufferShape(kv_heads=4, max_len=256, head_dim=32, elem_bytes=4)
    row = 4 * 32 * 4
    for name in ("head_major", "position_major"):
        c = layout.append_cost(name, shape, 100)
        assert (c.written_bytes, c.copied_bytes, c.reallocates) == (row, 0, False)
        assert layout.generation_copy_bytes(name, shape, 5, 50) == 0
    for name in ("dynamic", "transposed"):
        c = layout.append_cost(name, shape, 100)
        assert (c.written_bytes, c.copied_bytes, c.reallocates) == (row, 100 * row, True)
        brute = sum(layout.append_cost(name, shape, n).copied_bytes for n in range(5, 55))
        assert layout.generation_copy_bytes(name, shape, 5, 50) == brute == row * (5 + 54) * 50 // 2
    with pytest.raises(layout.LayoutError, match="seq_len"):
        layout.append_cost("dynamic", shape, 256)


@pytest.mark.model
def test_append_cost_matches_transformers_caches(bundled):
    """DynamicCache re-allocates and copies every past row per step (torch.cat); StaticCache writes in place."""
    import torch
    from transformers import StaticCache

    info, model = bundled.info, bundled.model
    shape = layout.BufferShape(info.n_kv_heads, info.n_positions, info.head_dim, 4)
    ids = torch.tensor([bundled.tokenizer(PROMPT).input_ids])  # (1, P)
    n_prompt = ids.shape[1]
    with torch.inference_mode():
        dynamic = model(input_ids=ids, use_cache=True).past_key_values
        static = StaticCache(config=model.config, max_cache_len=n_prompt + 4)
        model(input_ids=ids, past_key_values=static, use_cache=True)
        for step in range(3):
            seq_len = n_prompt + step
            before_d = dynamic.layers[0].keys
            before_ptr_d, before_ptr_s = before_d.data_ptr(), static.layers[0].keys.data_ptr()
            token = torch.tensor([[step + 5]])
            model(input_ids=token, past_key_values=dynamic, use_cache=True)
            model(input_ids=token, past_key_values=static, use_cache=True, cache_position=torch.tensor([seq_len]))
            after_d = dynamic.layers[0].keys  # (1, kv_heads, seq_len + 1, head_dim)
            assert after_d.data_ptr() != before_ptr_d and torch.equal(after_d[:, :, :seq_len], before_d)
            copied = before_d.numel() * before_d.element_size()
            assert layout.append_cost("dynamic", shape, seq_len).copied_bytes == copied
            assert static.layers[0].keys.data_ptr() == before_ptr_s  # pre-allocated: written in place
            assert static.layers[0].keys.shape[2] == n_prompt + 4
            assert layout.append_cost("head_major", shape, seq_len).copied_bytes == 0


def test_layout_bad_input():
    shape = layout.BufferShape(4, 16, 8)
    with pytest.raises(layout.LayoutError, match="position"):
        layout.element_offset_bytes("head_major", shape, 0, 16, 0)
    with pytest.raises(layout.LayoutError, match="unknown layout"):
        layout.head_read_mask("diagonal", shape, 0, 4)
    with pytest.raises(layout.LayoutError, match="seq_len"):
        layout.head_read_runs("head_major", shape, 0, 0)
    with pytest.raises(layout.LayoutError):
        layout.BufferShape(0, 16, 8)
    with pytest.raises(layout.LayoutError, match="out of range"):
        layout.bench_head_read(kv_heads=0)


def test_bench_reads_the_same_head_two_ways():
    contiguous, strided = layout.head_read_views(kv_heads=4, seq_len=64, head_dim=8)
    assert np.array_equal(contiguous, strided)  # the same head's keys...
    assert contiguous.flags.c_contiguous and not strided.flags.c_contiguous  # ...read contiguously vs strided
    shape = layout.BufferShape(4, 64, 8)
    assert strided.strides == layout.strides_bytes("position_major", shape)[::2]  # (row of all heads, 4 B)
    assert contiguous.strides == layout.strides_bytes("head_major", shape)[1:]
    bench = layout.bench_head_read(kv_heads=4, seq_len=64, head_dim=8, repeats=3)
    assert (bench.kv_heads, bench.seq_len, bench.head_dim, bench.repeats) == (4, 64, 8, 3)
    assert bench.bytes_read == contiguous.nbytes == 64 * 8 * 4
    assert bench.contiguous_us > 0 and bench.strided_us > 0
    assert len(bench.contiguous.samples_ms) == len(bench.strided.samples_ms) == 3
    assert bench.contiguous_us == pytest.approx(1000 * float(np.median(bench.contiguous.samples_ms)))
    if bench.inside_noise:  # the one noise rule: no ratio is crowned inside the noise
        assert bench.slowdown is None and "inside the noise" in bench.sentence()
    else:
        assert bench.slowdown == pytest.approx(bench.strided_us / bench.contiguous_us)


def test_bench_interleaves_the_two_reads_and_applies_the_noise_rule():
    """A fake clock: the reads are timed in turn (one warm-up each), medians and spread come from the repeats,
    and overlapping middle halves give "inside the noise" with no faster side named."""
    ticks = iter([0, 1, 0, 2, 0, 10, 0, 20, 0, 12, 0, 21, 0, 14, 0, 25])  # (start, stop) per run, seconds*1e-5

    def clock():
        return next(ticks) * 1e-5

    bench = layout.bench_head_read(kv_heads=2, seq_len=8, head_dim=4, repeats=3, clock=clock)
    assert bench.contiguous.samples_ms == pytest.approx((0.10, 0.12, 0.14))  # warm-ups (1, 2) dropped
    assert bench.strided.samples_ms == pytest.approx((0.20, 0.21, 0.25))
    assert (bench.contiguous_us, bench.strided_us) == pytest.approx((120.0, 210.0))
    assert not bench.inside_noise and bench.slowdown == pytest.approx(1.75)
    assert bench.sentence().startswith("The contiguous read took 120.0 µs, the strided read 210.0 µs: 1.75x faster")
    assert layout.us_label(bench.strided) == "210.0 µs (median of 3, 200.0-250.0 µs)"
    ticks = iter([0, 1, 0, 1, 0, 10, 0, 11, 0, 12, 0, 10, 0, 14, 0, 13])
    noisy = layout.bench_head_read(kv_heads=2, seq_len=8, head_dim=4, repeats=3, clock=clock)
    assert noisy.inside_noise and noisy.slowdown is None
    assert "inside the noise" in noisy.sentence() and "faster" not in noisy.sentence()


# ----- prefix reuse ------------------------------------------------------------------------------------------
def test_shared_prefix_len():  # torch-free: the pure tier

    assert prefix.shared_prefix_len([1, 2, 3], [1, 2, 4, 5]) == 2
    assert prefix.shared_prefix_len([], [1]) == 0
    assert prefix.shared_prefix_len([7, 8], [7, 8]) == 2


@pytest.mark.model
def test_prefix_reuse_equals_fresh_prefill(bundled):
    from kvviz.internals.lab import prefix as prefix_lab

    b = PROMPT.replace("It is the east", "Arise, fair sun")
    r = prefix_lab.prefix_reuse(bundled, PROMPT, b, repeats=1)
    ids_a, ids_b = bundled.tokenizer(PROMPT).input_ids, bundled.tokenizer(b).input_ids
    assert r.shared_len == prefix.shared_prefix_len(ids_a, ids_b) > 0
    assert r.reused_len == r.tokens_saved == r.shared_len
    assert r.new_tokens_computed + r.tokens_saved == len(ids_b)
    assert r.reused_cache_bytes == memory.predicted_cache_bytes(bundled.info, r.reused_len)
    assert r.max_abs_logit_diff < 1e-4 and r.max_abs_kv_diff < 1e-4 and r.same_next_token


@pytest.mark.model
def test_prefix_reuse_identical_prompts_feeds_the_last_token(bundled):
    from kvviz.internals.lab import prefix as prefix_lab

    r = prefix_lab.prefix_reuse(bundled, "ROMEO: hello", "ROMEO: hello", repeats=1)
    assert r.shared_len == len(r.tokens_b) and r.reused_len == r.shared_len - 1 and r.new_tokens_computed == 1
    assert r.max_abs_logit_diff < 1e-4


@pytest.mark.model
def test_prefix_bad_input(bundled):
    from kvviz.internals.lab import prefix as prefix_lab

    with pytest.raises(prefix.PrefixError, match="empty"):
        prefix_lab.prefix_reuse(bundled, "", "ROMEO")
    with pytest.raises(prefix.PrefixError, match="positions"):
        prefix_lab.prefix_reuse(bundled, "ROMEO", "a " * 400)


# ----- cross-attention ---------------------------------------------------------------------------------------
@pytest.mark.model
def test_cross_attention_cache_fixed_while_self_grows():
    from kvviz.internals.lab import crossattn as crossattn_lab

    run = crossattn_lab.run_cross_attention(source_len=9, n_steps=6)
    per_row = run.n_layer * 2 * run.n_heads * run.head_dim * 4  # K+V, float32, every decoder layer
    for s in run.steps:
        assert s.self_rows == s.step + 1 and s.self_bytes == s.self_rows * per_row
        assert s.cross_rows == 9 and s.cross_bytes == 9 * per_row
        assert s.cross_equal_to_first and s.cross_same_storage and s.self_prefix_equal
    assert len({s.cross_bytes for s in run.steps}) == 1
    assert run.encoder_passes == 1


@pytest.mark.model
def test_cross_attention_bad_input():
    from kvviz.internals.lab import crossattn as crossattn_lab

    with pytest.raises(crossattn.CrossAttnError, match="source length"):
        crossattn_lab.run_cross_attention(source_len=0)
    with pytest.raises(crossattn.CrossAttnError, match="decode steps"):
        crossattn_lab.run_cross_attention(n_steps=crossattn.MAX_STEPS + 1)


# ----- sliding windows ---------------------------------------------------------------------------------------
def test_window_state_and_visibility_by_hand():  # torch-free: the pure tier

    s = window.window_state(seq_len=10, window=4)
    assert (s.kept_start, s.rows_kept, s.rows_evicted) == (6, 4, 6)
    assert window.window_state(3, 4).rows_evicted == 0
    vis = window.visibility(6, 3)
    assert vis.sum(axis=1).tolist() == [1, 2, 3, 3, 3, 3]
    assert vis[5].tolist() == [False, False, False, True, True, True]
    assert window.visibility(4, None).sum() == 10
    with pytest.raises(window.WindowError):
        window.window_state(5, 0)


@pytest.mark.model
@pytest.mark.parametrize("w,pattern", [(8, None), (8, 1), (5, 3)])
def test_window_on_model_matches_calculator(bundled, w, pattern):
    from kvviz.internals.lab import window as window_lab

    run = window_lab.window_on_model(bundled, PROMPT, w, pattern)
    seq_len = run.state.seq_len
    assert seq_len == len(bundled.tokenizer(PROMPT).input_ids) > w
    config = window.layer_config(bundled, w, pattern)
    for la in run.layers:
        assert la.bytes_kept == la.calculator_bytes
        assert la.rows_kept == (seq_len if config.layer_window(la.layer) is None else w)
        assert la.bytes_full == memory.predicted_cache_bytes(bundled.info, seq_len) // bundled.info.n_layer
        assert 0.0 <= la.attention_lost <= 1.0 + 1e-6
        if la.kind == "global":
            assert la.attention_lost == 0.0
    assert run.bytes_kept == memory.kv_bytes(config, seq_len)
    assert len(run.evicted_tokens) == seq_len - w


@pytest.mark.model
def test_window_wider_than_prompt_loses_nothing(bundled):
    from kvviz.internals.lab import window as window_lab

    run = window_lab.window_on_model(bundled, "ROMEO: hi", 200)
    assert all(la.attention_lost == 0.0 and la.rows_kept == la.rows_full for la in run.layers)


def test_gemma3_preset_layers():  # torch-free: the pure tier

    p = window.preset_layers("gemma-3-4b", 32768)
    per_token_layer = 2 * 4 * 256 * 2  # K+V, 4 KV heads, head_dim 256, bf16
    assert p.layer_kinds.count("global") == 5 and len(p.layer_kinds) == 34
    assert [i for i, k in enumerate(p.layer_kinds) if k == "global"] == [5, 11, 17, 23, 29]
    assert p.total_bytes == 29 * 1024 * per_token_layer + 5 * 32768 * per_token_layer
    assert p.all_global_bytes == 34 * 32768 * per_token_layer


@pytest.mark.model
def test_window_bad_input(bundled):
    from kvviz.internals.lab import window as window_lab

    with pytest.raises(window.WindowError, match="window"):
        window_lab.window_on_model(bundled, PROMPT, 0)
    with pytest.raises(window.WindowError, match="window"):
        window_lab.window_on_model(bundled, PROMPT, bundled.info.n_positions + 1)
    with pytest.raises(window.WindowError, match="empty"):
        window_lab.window_on_model(bundled, "   ", 4)


# ----- paging ------------------------------------------------------------------------------------------------
def test_block_table_by_hand():  # torch-free: the pure tier

    assert paging.block_table(17, 16) == paging.BlockTable(17, 16, 2, 1, 15)
    assert paging.block_table(32, 16) == paging.BlockTable(32, 16, 2, 16, 0)
    assert paging.block_table(0, 16).n_blocks == 0
    assert paging.block_table(5, 1).waste_slots == 0


def test_two_sequences_by_hand():  # torch-free: the pure tier

    p = paging.plan_two_sequences(40, 37, 35, block_size=16, max_len=64, bytes_per_token=10)
    assert p.shared_blocks == 2  # 35 shared tokens = 2 full blocks + 3 tokens in a block that is not shared
    assert p.tables == ((0, 1, 2), (0, 1, 3))
    assert p.refcounts == (2, 2, 1, 1) and p.physical_blocks == 4
    assert p.paged_bytes == 4 * 16 * 10 and p.unshared_paged_bytes == 6 * 16 * 10
    assert p.preallocated_bytes == 2 * 64 * 10
    assert p.used_bytes == (40 + 37 - 32) * 10 and p.waste_bytes == 640 - 450
    none = paging.plan_two_sequences(20, 20, 15, 16, 32, 1)
    assert none.shared_blocks == 0 and none.refcounts == (1, 1, 1, 1)


@pytest.mark.model
def test_single_sequence_agrees_with_memory_calculator(bundled):

    config = bundled.info.kv_config()
    view = capacity.paged_view(config, context_len=37, batch=1, block_tokens=16, max_len=256)
    bt = paging.block_table(37, 16)
    assert (bt.n_blocks, bt.waste_slots) == (view.blocks_per_sequence, view.waste_tokens_last_block)


@pytest.mark.model
def test_paging_bad_input(bundled):
    from kvviz.internals.lab import paging as paging_lab

    with pytest.raises(paging.PagingError, match="block size"):
        paging.block_table(10, 0)
    with pytest.raises(paging.PagingError, match="shared prefix"):
        paging.plan_two_sequences(10, 10, 11, 4, 16, 1)
    with pytest.raises(paging.PagingError, match="max length"):
        paging.plan_two_sequences(10, 20, 5, 4, 16, 1)
    with pytest.raises(paging.PagingError, match="block size"):
        paging_lab.paged_generation(bundled, PROMPT, block_size=10_000)


@pytest.mark.model
def test_paged_generation_reads_back_the_real_cache(bundled):
    from kvviz.internals.lab import paging as paging_lab

    run = paging_lab.paged_generation(bundled, PROMPT, n_new_a=6, n_new_b=3, block_size=8)
    p = run.plan
    n_prompt = len(bundled.tokenizer(PROMPT).input_ids)
    assert run.prompt_tokens == n_prompt and p.seq_lens == (n_prompt + 6, n_prompt + 3)
    assert p.shared_prefix_len >= n_prompt and p.shared_blocks == p.shared_prefix_len // 8
    assert p.bytes_per_token == bundled.info.kv_config().bytes_per_token
    assert run.gather_max_abs_diff == 0.0 and run.shared_rows_max_abs_diff < 1e-5


# ----- figures -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(layout.LAYOUTS))
def test_layout_picture_keeps_every_read_byte(name):
    from kvviz.figures.internals import layout_read_map

    small, big = layout.BufferShape(4, 256, 32), layout.BufferShape(12, 1024, 64)  # big is binned
    for shape in (small, big):
        mask = layout.head_read_mask(name, shape, head=2, seq_len=100)
        row = layout.picture_row_elems(name, shape, 100)
        offset = layout.element_offset_bytes(name, layout.buffer_shape(name, shape, 100), 2, 7, 5)
        fig = layout_read_map(mask, row, 4, "t", mark_offset_bytes=offset)
        z = np.array(fig.data[0].z)
        assert z.size <= 40_000
        bin_elems = mask.size // z.size
        assert z.sum() * bin_elems == pytest.approx(mask.sum())  # every read element is drawn, none invented
        cell_x, cell_y = fig.data[1].x[0], fig.data[1].y[0]
        assert z[cell_y, cell_x] > 0  # the marked element is one the head reads
