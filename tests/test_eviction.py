"""The eviction lab (kvviz.internals.eviction_lab) on both real bundled models: 100% kept is the full cache exactly,
bytes are the pruned tensors' own, StreamingLLM and H2O keep the rows they promise (H2O against a separate numpy
computation from an uncached pass), the copy test at 100% is the training package's copying accuracy, and decoding
after pruning runs at the continued positions."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np
import pytest

from kvviz.internals import eviction as ev
from kvviz.internals.eviction_takeaways import Claim, eviction_takeaways, inside_noise
from kvviz.memory.dtypes import FP8_SCALE_BYTES_PER_LAYER
from kvviz.model import loading
from support.pages import REPO, TINY_SHAKESPEARE

if TYPE_CHECKING:
    import torch

    from kvviz.internals.eviction_lab.scoring import Prefill

pytestmark = pytest.mark.model  # every test runs a bundled model

CORPUS = TINY_SHAKESPEARE
SETTINGS = ev.EvictSettings()


@pytest.fixture(scope="module", params=[loading.BUNDLED, loading.BUNDLED_GQA])
def loaded(request) -> loading.LoadedModel:
    import torch

    from kvviz.model import loaders

    torch.set_num_threads(1)  # a shared 2-core machine
    return loaders.load_model(request.param, attn_implementation="eager")


@pytest.fixture(scope="module")
def span_prefill(loaded) -> tuple[torch.Tensor, Prefill]:
    from kvviz.internals.eviction_lab.measures import copy_sequences, text_ids
    from kvviz.internals.eviction_lab.scoring import prefill

    ids = text_ids(loaded, None)
    sequences = copy_sequences(ids, SETTINGS)[:3]  # (3, 2L)
    return sequences, prefill(loaded, sequences[:, : SETTINGS.half_tokens])


def _fresh_cache(loaded, prefix: torch.Tensor):
    import torch
    from transformers import DynamicCache

    with torch.inference_mode():
        return loaded.model(
            input_ids=prefix, past_key_values=DynamicCache(config=loaded.model.config), use_cache=True
        ).past_key_values


# duoattention has no keep_order (its heads keep different rows): the evict() test below covers it with the others
@pytest.mark.parametrize("policy", [p for p in ev.EVICT_POLICIES if p not in ev.EVICT_RAGGED])
def test_every_policy_at_100_percent_reproduces_the_full_cache_logits_exactly(loaded, span_prefill, policy):
    import torch

    from kvviz.internals.eviction_lab.cache import continue_from, prune
    from kvviz.internals.eviction_lab.scoring import keep_order, kept_rows

    sequences, pre = span_prefill
    half = SETTINGS.half_tokens
    order = keep_order(policy, pre, SETTINGS)
    rows = ev.rows_for_budget(100, pre.seq_len)
    assert rows == half
    pruned = prune(pre, kept_rows(policy, order, rows))
    got = continue_from(loaded, pruned, sequences[:, half:], half)
    with torch.inference_mode():  # the unpruned cache of a fresh prefill, transformers' own default positions
        want = loaded.model(
            input_ids=sequences[:, half:], past_key_values=_fresh_cache(loaded, sequences[:, :half]), use_cache=True
        ).logits
    assert torch.equal(got, want)


@pytest.mark.parametrize("keep", [75, 35, 5])
def test_bytes_reported_are_the_pruned_tensors_nbytes(loaded, keep):
    from kvviz.internals.eviction_lab.cache import cache_nbytes, prune
    from kvviz.internals.eviction_lab.measures import SweepTexts, policy_points
    from kvviz.internals.eviction_lab.scoring import keep_order, keep_rows

    settings = ev.EvictSettings(n_spans=2)
    texts = SweepTexts(loaded, None, settings)
    point = policy_points(loaded, texts, "h2o", (keep,))[0]
    info = loaded.info
    rows = ev.rows_for_budget(keep, settings.half_tokens)
    pruned = prune(texts.copy, keep_rows(keep_order("h2o", texts.copy, settings), rows))
    for layer in pruned.layers:
        assert tuple(layer.keys.shape) == tuple(layer.values.shape) == (2, info.n_kv_heads, rows, info.head_dim)
    assert point.rows_kept == rows
    assert point.kv_bytes_kept * settings.n_spans == cache_nbytes(pruned)
    # and by hand: 2 (K, V) x layers x KV heads x rows x head_dim x 4 bytes (float32), one sequence
    assert point.kv_bytes_kept == 2 * info.n_layer * info.n_kv_heads * rows * info.head_dim * 4
    assert point.kv_bytes_full == 2 * info.n_layer * info.n_kv_heads * settings.half_tokens * info.head_dim * 4


def test_every_policys_line_shares_one_pair_of_prefills_and_measures_what_prefills_of_its_own_would(loaded):
    """The page measures a sweep one policy's line at a time, each with its own settings (S, SnapKV's window, the
    seed): the lines of one model and text share one pair of prefills, and a line equals the one measured on
    prefills made for it alone."""
    from dataclasses import replace

    from kvviz.internals.eviction_lab import measures, runs

    settings = ev.EvictSettings(n_spans=2, n_passages=2)
    with_s2 = replace(settings, sink_tokens=2)
    first = measures.sweep_texts(loaded, None, settings.for_policy("snapkv"))
    second = measures.sweep_texts(loaded, None, with_s2.for_policy("streaming"))
    assert second.copy is first.copy and second.context is first.context
    assert (first.settings.sink_tokens, second.settings.sink_tokens) == (SETTINGS.sink_tokens, 2)
    assert measures.sweep_texts(loaded, None, replace(settings, n_spans=3)).copy is not first.copy  # other spans
    shared = runs.measure_policy(loaded, "streaming", None, with_s2, (35,))
    own = measures.policy_points(loaded, measures.SweepTexts(loaded, None, with_s2), "streaming", (35,))
    assert shared == tuple(own)


def test_quantized_points_report_quant_round_trip_bytes(loaded):
    from kvviz.internals.eviction_lab.measures import SweepTexts
    from kvviz.internals.eviction_lab.quantized import quant_points
    from kvviz.internals.lab.quant import round_trip

    settings = ev.EvictSettings(n_spans=2)
    texts = SweepTexts(loaded, None, settings)
    for point in quant_points(loaded, texts, ("int8", "int4")):
        want = sum(
            round_trip(x, point.policy, loaded.info.head_dim)[1]
            for layer in texts.copy.cache.layers
            for x in (layer.keys, layer.values)
        )
        assert point.kv_bytes_kept * settings.n_spans == want
        assert point.kv_bytes_kept < point.kv_bytes_full
    fp8 = quant_points(loaded, texts, ("fp8",))[0]  # transformers' QuantizedCache(backend="fp8"), one sequence
    info = loaded.info
    assert fp8.kv_bytes_kept == info.n_layer * (
        2 * info.n_kv_heads * settings.half_tokens * info.head_dim * 1 + FP8_SCALE_BYTES_PER_LAYER
    )


@pytest.mark.parametrize("keep", [50, 25, 10])
def test_streaming_llm_keeps_exactly_the_first_s_and_the_last_w(loaded, span_prefill, keep):
    from kvviz.internals.eviction_lab.scoring import keep_order, keep_rows

    _, pre = span_prefill
    rows = ev.rows_for_budget(keep, pre.seq_len)
    kept = keep_rows(keep_order("streaming", pre, SETTINGS), rows)
    s = SETTINGS.sink_tokens
    want = list(range(s)) + list(range(pre.seq_len - (rows - s), pre.seq_len))
    for idx in kept:
        for row in idx.reshape(-1, rows).tolist():
            assert row == want
    recent = keep_rows(keep_order("recent", pre, SETTINGS), rows)
    assert recent[0][0, 0].tolist() == list(range(pre.seq_len - rows, pre.seq_len))


def test_heavy_hitters_only_keeps_the_highest_accumulated_attention_rows(loaded, span_prefill):
    """The one-shot heavy-hitters variant (h2o_heavy), against a direct computation: an uncached pass's attention
    weights, summed by numpy loops."""
    import torch

    from kvviz.internals.eviction_lab.scoring import keep_order, kept_rows

    sequences, pre = span_prefill
    prefix = sequences[:, : SETTINGS.half_tokens]
    with torch.inference_mode():
        attentions = loaded.model(input_ids=prefix, use_cache=False, output_attentions=True).attentions
    rows = ev.rows_for_budget(25, pre.seq_len)
    kept = kept_rows("h2o_heavy", keep_order("h2o_heavy", pre, SETTINGS), rows)
    info = loaded.info
    group = info.n_head // info.n_kv_heads
    for layer, a in enumerate(attentions):
        a = a.double().numpy()  # (B, Hq, S, S)
        for b in range(a.shape[0]):
            for kv in range(info.n_kv_heads):
                received = np.zeros(pre.seq_len)
                for h in range(kv * group, (kv + 1) * group):
                    for q in range(pre.seq_len):
                        received += a[b, h, q] / group
                top = set(np.argsort(-received, kind="stable")[:rows].tolist())
                got = set(kept[layer][b, kv].tolist())
                if got != top:  # only a tie at the boundary may differ
                    boundary = np.sort(received)[::-1][rows - 1]
                    assert all(abs(received[p] - boundary) < 1e-9 for p in got ^ top)


def test_copy_test_at_100_percent_is_the_copying_accuracy_for_the_same_text(loaded):
    import torch

    from kvviz.internals.eviction_lab.measures import SweepTexts, policy_points, text_ids
    from kvviz.training import copying

    settings = ev.EvictSettings(n_spans=8)
    texts = SweepTexts(loaded, None, settings)
    ids = text_ids(loaded, None)  # the same rows as the training package's held-out copying measurement
    assert torch.equal(texts.sequences, copying.held_out_repeats(ids, settings.n_spans, settings.half_tokens))
    point = policy_points(loaded, texts, "full")[0]
    result = copying.copying_accuracy(loaded.model, texts.sequences)
    assert point.copy_total == settings.n_spans * (settings.half_tokens - 1)
    assert point.copy_correct == round(result.repeated_half_top1 * point.copy_total)
    assert point.copy_accuracy == pytest.approx(result.repeated_half_top1, abs=1e-6)


@pytest.mark.skipif(not CORPUS.is_file(), reason="Tiny Shakespeare is not beside the repo (../shared/data)")
def test_copy_test_at_100_percent_reproduces_the_training_report(loaded):
    """The held-out figure docs/models.md and the attention-patterns page's model card quote (training_report.json)."""
    import torch

    from kvviz.internals.eviction_lab.cache import prune
    from kvviz.internals.eviction_lab.measures import copy_correct
    from kvviz.internals.eviction_lab.scoring import keep_order, keep_rows, prefill
    from kvviz.training import copying

    report = json.loads((loading.BUNDLED_MODELS[loaded.info.spec].folder / "training_report.json").read_text())
    text = CORPUS.read_text(encoding="utf-8")
    val_ids = torch.tensor(
        loaded.tokenizer(text[int(len(text) * (1 - report["recipe"]["validation_fraction"])) :]).input_ids
    )
    measured = report["copying"]
    sequences = copying.held_out_repeats(val_ids, measured["held_out_sequences"], measured["half_tokens"])
    half = measured["half_tokens"]
    pre = prefill(loaded, sequences[:, :half])
    cache = prune(pre, keep_rows(keep_order("full", pre, SETTINGS), half))
    correct, total = copy_correct(loaded, cache, sequences)
    assert correct / total == pytest.approx(measured["repeated_half_top1"], abs=1e-3)


def _position_recorder(loaded, seen: list):
    """A hook on the module that reads the positions: GPT-2's wpe, the Llama's rotary embedding."""
    model = loaded.model
    if hasattr(model, "transformer"):
        return model.transformer.wpe.register_forward_pre_hook(lambda m, args: seen.append(args[0].clone()))
    return model.model.rotary_emb.register_forward_pre_hook(
        lambda m, args, kwargs: seen.append((kwargs.get("position_ids", args[1] if len(args) > 1 else None)).clone()),
        with_kwargs=True,
    )


def test_decoding_after_pruning_runs_at_the_continued_positions(loaded, span_prefill):
    import torch

    from kvviz.internals.eviction_lab.cache import continue_from, prune
    from kvviz.internals.eviction_lab.scoring import keep_order, keep_rows

    sequences, pre = span_prefill
    half = SETTINGS.half_tokens
    rows = ev.rows_for_budget(25, half)
    kept = keep_rows(keep_order("streaming", pre, SETTINGS), rows)
    cache = prune(pre, kept)
    seen: list[torch.Tensor] = []
    hook = _position_recorder(loaded, seen)
    try:
        logits = continue_from(loaded, cache, sequences[:, half : half + 1], half)
        token = logits[:, -1].argmax(-1, keepdim=True)
        for step in range(1, 4):  # greedy decoding goes on, one token at a time
            logits = continue_from(loaded, cache, token, half + step)
            token = logits[:, -1].argmax(-1, keepdim=True)
    finally:
        hook.remove()
    assert [p[0].tolist() for p in seen] == [[half], [half + 1], [half + 2], [half + 3]]
    assert cache.get_seq_length() == rows + 4  # the pruned rows + the four decoded ones
    # the positions matter: restarting at the pruned length (transformers' default) gives other logits
    again = prune(pre, kept)
    continued = continue_from(loaded, again, sequences[:, half : half + 8], half)
    with torch.inference_mode():
        default = loaded.model(
            input_ids=sequences[:, half : half + 8], past_key_values=prune(pre, kept), use_cache=True
        ).logits
    assert not torch.allclose(continued, default, atol=1e-4)


def test_bad_policy_budget_and_text_are_refused_with_a_message(loaded):
    from kvviz.internals.eviction_lab import runs

    with pytest.raises(ev.EvictionError, match="unknown eviction policy"):
        runs.eviction_grid(loaded, "lru", 50)
    with pytest.raises(ev.EvictionError, match="percent"):
        runs.eviction_grid(loaded, "recent", 0)
    with pytest.raises(ev.EvictionError, match="tokens"):
        runs.sweep(loaded, "ROMEO: hi", policies=("recent",), schemes=())
    with pytest.raises(ev.EvictionError, match="span"):
        runs.sweep(loaded, None, ev.EvictSettings(half_tokens=10_000), policies=("recent",), schemes=())


def test_grid_marks_the_kept_rows_per_layer_and_kv_head(loaded):
    from kvviz.internals.eviction_lab import runs

    grid = runs.eviction_grid(loaded, "h2o", 25)
    info = loaded.info
    assert len(grid.tokens) == SETTINGS.half_tokens and len(grid.layers) == info.n_layer
    rows = ev.rows_for_budget(25, SETTINGS.half_tokens)
    for layer in grid.layers:
        assert len(layer.kept) == info.n_kv_heads
        assert all(sum(head) == rows for head in layer.kept)
        assert layer.kv_bytes_kept == 2 * info.n_kv_heads * rows * info.head_dim * 4
    streaming = runs.eviction_grid(loaded, "streaming", 25)
    assert all(
        head[: SETTINGS.sink_tokens] == (True,) * SETTINGS.sink_tokens
        for layer in streaming.layers
        for head in layer.kept
    )


def test_takeaways_are_computed_from_the_sweep(loaded):
    from kvviz.internals.eviction_lab import runs

    sweep = runs.sweep(loaded, None, ev.EvictSettings(n_spans=4, n_passages=4))
    claims: list[Claim] = []
    lines = [line.english for line in eviction_takeaways(sweep, claims)]
    for c in claims:  # every comparison a line makes: apart only where the paired interval over the units excludes 0
        d = np.array(c.a.units(c.metric)) - np.array(c.b.units(c.metric))
        half = 3.182 * d.std(ddof=1) / 2  # t(0.975, 3): 4 units
        assert c.differs == (not d.mean() - half <= 0 <= d.mean() + half), (c.a.policy, c.b.policy, c.metric)
    assert sweep.head_ranking is not None and any("calibration draws" in line for line in lines)
    assert any("S = 0" in line for line in lines)
    assert any("int8" in line for line in lines)
    at25 = [sweep.point(policy, 25) for policy in ev.EVICT_POLICIES[2:]]  # every policy but the control

    def named(p):  # a point below the budget's bytes (DuoAttention: whole heads) is named with its real share
        below = p.bytes_fraction < ev.rows_for_budget(p.keep_percent, p.rows_full) / p.rows_full
        return (
            f"{ev.policy_short(p.policy)} (holding only {p.bytes_fraction:.1%} of the bytes)"
            if below
            else ev.policy_short(p.policy)
        )

    best = max(at25, key=lambda p: p.copy_accuracy)
    assert any(line.startswith(f"At 25%: best copying {named(best)} {best.copy_accuracy:.0%}") for line in lines)
    recent5 = sweep.point("recent", 5)
    assert any(
        f"copies {recent5.copy_accuracy:.0%} with loss change {recent5.loss_change_nats:+.3f}" in line for line in lines
    )
    # every ranking goes through the noise rule: the policies whose 95% interval overlaps the best's are named
    # as inside its noise, and no other
    line25 = next(line for line in lines if line.startswith("At 25%"))
    tied = [p for p in at25 if p is not best and inside_noise(p, best, "copy")]
    if tied:
        assert f"{', '.join(named(p) for p in tied)} inside its noise" in line25
    else:
        assert "inside its noise" not in line25
    assert "random control's" in line25 and ("is inside the noise of it" in line25) == inside_noise(
        sweep.point("random", 25), best, "copy"
    )


def test_intervals_are_over_the_spans_and_the_passages(loaded):
    """copy: each span's accuracy, its 95% t interval over the spans; loss: each passage's mean loss change against
    the full cache's on the same passage, its t interval over the passages; the full cache's change is 0 ± 0."""
    from kvviz.internals.eviction_lab.measures import SweepTexts, policy_points

    settings = ev.EvictSettings(n_spans=4, n_passages=4)
    texts = SweepTexts(loaded, None, settings)
    full = policy_points(loaded, texts, "full")[0]
    assert full.loss_change_nats == 0 and full.loss_change_half_width == 0 and full.n_passages == 4
    point = policy_points(loaded, texts, "recent", (25,))[0]
    per_span = np.array(point.copy_hits_per_span) / (settings.half_tokens - 1)
    assert point.n_spans == 4 and per_span.mean() == pytest.approx(point.copy_accuracy, abs=1e-12)
    assert point.copy_half_width == pytest.approx(3.182 * per_span.std(ddof=1) / 2, rel=1e-9)  # t(0.975, 3)
    changes = np.array(point.loss_change_per_passage)
    assert changes.mean() == pytest.approx(point.loss_change_nats, abs=1e-9)
    lo, hi = point.loss_change_interval
    assert (lo, hi) == pytest.approx(
        (changes.mean() - 3.182 * changes.std(ddof=1) / 2, changes.mean() + 3.182 * changes.std(ddof=1) / 2), abs=1e-9
    )


def test_the_default_passages_and_spans_never_overlap(loaded):
    """16 passages of 160 + 48 tokens and 16 spans of 64 on the held-out text: each a unit of its own."""
    from kvviz.internals.eviction_lab.measures import evenly_spaced_starts, text_ids

    ids = text_ids(loaded, None)
    for starts, length in (
        (evenly_spaced_starts(len(ids), 208, SETTINGS.n_passages), 208),
        (evenly_spaced_starts(len(ids), 64, SETTINGS.n_spans), 64),
    ):
        assert len(starts) == 16 and all(b - a >= length for a, b in zip(starts, starts[1:], strict=False))


def test_cli_prints_the_page_numbers_and_refuses_bad_values_in_one_line(loaded, capsys):
    from kvviz.cli import evict
    from kvviz.internals.eviction_lab import runs

    assert evict.main(["--model", loaded.info.spec, "--policy", "snapkv", "--keep", "0.35", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    page = runs.measure_policy(loaded, "snapkv", None, SETTINGS, (35,))[0]  # what the page's cached line holds
    got = out["points"][1]
    assert (got["policy"], got["keep_percent"], got["kv_bytes_kept"], got["copy_correct"]) == (
        "snapkv",
        35,
        page.kv_bytes_kept,
        page.copy_correct,
    )
    assert got["loss_change_nats"] == pytest.approx(page.loss_change_nats, abs=1e-9)
    assert out["points"][0]["policy"] == "full" and out["points"][0]["kv_bytes_kept"] == page.kv_bytes_full
    for bad in (
        ["--keep", "0"],
        ["--keep", "1.5"],
        ["--keep", "0.355"],
        ["--keep", "x" * 5000],
        ["--policy", "lru"],
        ["--sinks", "-1"],
        ["--model", "gpt2"],
    ):
        assert evict.main(bad) == 2, bad
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("kvviz evict:") and len(err) < 400, err


def test_the_measurements_doc_tables_reproduce_from_the_command_beside_them(loaded):
    """docs/measurements.md "What to forget": each model's policy x budget table is what
    `bench/eviction_sweep.py --table` (and `python -m kvviz evict --sweep`) prints now: the sweep is deterministic."""
    from kvviz.cli.evict import table
    from kvviz.internals.eviction_lab import runs

    doc = (REPO / "docs" / "measurements.md").read_text(encoding="utf-8")
    section = doc[doc.index("## What to forget") :]
    heading = "GPT-2 (`bundled`):" if loaded.info.spec == loading.BUNDLED else "GQA Llama (`bundled-gqa`"
    rows = section[section.index(heading) :].split("\n\n")[1].splitlines()[2:]
    printed = table(list(runs.sweep(loaded).points)).splitlines()[1:]
    documented = [r.strip("| ").split(" | ") for r in rows]
    assert len(documented) == len(printed)
    for doc_row, line in zip(documented, printed, strict=True):
        cells = line.split()
        loss = [_within_last_digit(d, p) for d, p in zip(doc_row[-2:], cells[-2:], strict=True)]
        assert cells[:-2] == doc_row[:-2] and all(loss), (doc_row, line)


def _within_last_digit(documented: str, printed: str) -> bool:
    """The two loss columns (change and its interval, nats) are means of float32 losses: another CPU sums them in
    another order, so a cell may differ by one unit of its last digit (docs/measurements.md names the one here).
    Every other cell is a count, a share of counts or a name: equal."""
    if printed == documented or "." not in documented:
        return printed == documented
    unit = 10.0 ** -len(documented.split(".")[1])
    return abs(float(documented) - float(printed)) <= unit * 1.0001


# ----- each policy as its paper defines it (computed here independently of the lab's scorers) -----------------
def _accumulated_attention(loaded, prefix) -> list[np.ndarray]:
    """Per layer (B, Hkv, S): the attention each row received, summed over every query of an uncached pass and
    averaged over the query heads that share a KV head."""
    import torch

    with torch.inference_mode():
        attentions = loaded.model(input_ids=prefix, use_cache=False, output_attentions=True).attentions
    info = loaded.info
    out = []
    for a in attentions:
        a = a.double().numpy()  # (B, Hq, S, S)
        b, hq, s, _s = a.shape
        out.append(a.reshape(b, info.n_kv_heads, hq // info.n_kv_heads, s, s).mean(2).sum(2))
    return out


@pytest.mark.parametrize("sinks", [4, 16, 64])
def test_streaming_llm_keeps_the_first_s_rows_then_the_newest_at_every_budget(loaded, span_prefill, sinks):
    """Below S rows the budget holds only sinks: positions 0..rows-1, never the last sinks (position 0 is the
    sink StreamingLLM exists to keep)."""
    from kvviz.internals.eviction_lab.scoring import keep_order, kept_rows

    _, pre = span_prefill
    settings = ev.EvictSettings(sink_tokens=sinks)
    order = keep_order("streaming", pre, settings)
    for keep in ev.EVICT_KEEP_PERCENTS:
        rows = ev.rows_for_budget(keep, pre.seq_len)
        want = (
            list(range(rows))
            if rows <= sinks
            else list(range(sinks)) + list(range(pre.seq_len - (rows - sinks), pre.seq_len))
        )
        for idx in kept_rows("streaming", order, rows):
            assert all(row == want for row in idx.reshape(-1, rows).tolist()), (keep, sinks)


def test_h2o_keeps_the_papers_split_half_heavy_hitters_half_recent(loaded, span_prefill):
    """H2O (Zhang et al. 2023): rows // 2 heavy hitters (the most accumulated attention among the rows outside
    the recent window) + the newest rows - rows // 2. The one-shot heavy-hitters-only variant keeps its own name."""
    from kvviz.internals.eviction_lab.scoring import keep_order, kept_rows

    sequences, pre = span_prefill
    received = _accumulated_attention(loaded, sequences[:, : SETTINGS.half_tokens])
    s = pre.seq_len
    for keep in (25, 5):
        rows = ev.rows_for_budget(keep, s)
        heavy, recent = rows // 2, rows - rows // 2
        kept = kept_rows("h2o", keep_order("h2o", pre, SETTINGS), rows)
        for layer, r in enumerate(received):
            for b in range(r.shape[0]):
                for kv in range(r.shape[1]):
                    got = kept[layer][b, kv].tolist()
                    assert got[heavy:] == list(range(s - recent, s))  # the recent half
                    scores = r[b, kv, : s - recent]
                    top = set(np.argsort(-scores, kind="stable")[:heavy].tolist())
                    boundary = np.sort(scores)[::-1][heavy - 1] if heavy else 0.0
                    assert all(abs(scores[p] - boundary) < 1e-9 for p in set(got[:heavy]) ^ top)
        only_heavy = kept_rows("h2o_heavy", keep_order("h2o_heavy", pre, SETTINGS), rows)
        for layer, r in enumerate(received):
            for b in range(r.shape[0]):
                for kv in range(r.shape[1]):
                    all_top = set(np.argsort(-r[b, kv], kind="stable")[:rows].tolist())
                    edge = np.sort(r[b, kv])[::-1][rows - 1]
                    assert all(abs(r[b, kv][p] - edge) < 1e-9 for p in set(only_heavy[layer][b, kv].tolist()) ^ all_top)
    assert ev.policy_short("h2o") == "H2O" and "heavy" in ev.policy_short("h2o_heavy")


def test_snapkv_uses_the_official_pooling_and_keeps_its_newest_rows_below_its_window(loaded, span_prefill):
    """SnapKV's code (github.com/FasterDecoding/SnapKV, snapkv_utils.py): the last `window` queries' attention on
    the prefix only, avg_pool1d(kernel 5, padding 2, padding counted), top rows - window of the prefix + the whole
    window. Below the window it keeps the window's newest rows (the lab says so)."""
    import torch
    import torch.nn.functional as F

    from kvviz.internals.eviction_lab.scoring import keep_order, kept_rows

    sequences, pre = span_prefill
    prefix = sequences[:, : SETTINGS.half_tokens]
    w, s = SETTINGS.snap_window, pre.seq_len
    with torch.inference_mode():
        attentions = loaded.model(input_ids=prefix, use_cache=False, output_attentions=True).attentions
    order = keep_order("snapkv", pre, SETTINGS)
    info = loaded.info
    for keep in (25, 15):
        rows = ev.rows_for_budget(keep, s)
        kept = kept_rows("snapkv", order, rows)
        for layer, a in enumerate(attentions):
            a = a.double()
            b, hq = a.shape[:2]
            grouped = a.reshape(b, info.n_kv_heads, hq // info.n_kv_heads, s, s).mean(2)
            summed = grouped[:, :, -w:, :-w].sum(-2)  # (B, Hkv, S - w)
            pooled = F.avg_pool1d(summed.reshape(-1, 1, s - w), 5, stride=1, padding=2).reshape(b, -1, s - w)
            for bi in range(b):
                for kv in range(info.n_kv_heads):
                    got = kept[layer][bi, kv].tolist()
                    assert got[rows - w :] == list(range(s - w, s))
                    p = pooled[bi, kv].numpy()
                    top = set(np.argsort(-p, kind="stable")[: rows - w].tolist())
                    edge = np.sort(p)[::-1][rows - w - 1]
                    assert all(abs(p[x] - edge) < 1e-9 for x in set(got[: rows - w]) ^ top)
    rows = ev.rows_for_budget(5, s)  # 3 rows < the 8-row window
    assert rows < w
    for idx in kept_rows("snapkv", order, rows):
        assert all(row == list(range(s - rows, s)) for row in idx.reshape(-1, rows).tolist())
    assert ev.policy_note("snapkv", rows, SETTINGS) and ev.policy_note("snapkv", w, SETTINGS) is None


def test_fp8_is_measured_on_the_int_formats_protocol_and_transformers_own_beside_it(loaded):
    """fp8: each sequence's prefill cache stored with Fp8QuantizedLayer's own arithmetic (one scale per tensor)
    and read back; the rows the measure appends stay float32, as for int8/int4. "fp8-hf" is transformers'
    QuantizedCache(backend="fp8"), which stores the appended rows in fp8 too."""
    import torch
    from transformers import DynamicCache, QuantizedCache

    from kvviz.internals.eviction_lab.measures import SweepTexts, copy_correct
    from kvviz.internals.eviction_lab.quantized import quant_points

    settings = ev.EvictSettings(n_spans=2, n_passages=2)
    texts = SweepTexts(loaded, None, settings)
    fp8 = quant_points(loaded, texts, ("fp8",))[0]
    layer_q = QuantizedCache(backend="fp8", config=loaded.model.config).layers[0]
    layer_q.dtype = torch.float32
    cache = DynamicCache(config=loaded.model.config)
    for i, layer in enumerate(texts.copy.cache.layers):
        k = torch.cat([layer_q._dequantize(layer_q._quantize(x[None])) for x in layer.keys])
        v = torch.cat([layer_q._dequantize(layer_q._quantize(x[None])) for x in layer.values])
        cache.update(k, v, i)
    correct, total = copy_correct(loaded, cache, texts.sequences)
    assert (fp8.copy_correct, fp8.copy_total) == (correct, total)
    hf = quant_points(loaded, texts, ("fp8-hf",))[0]
    assert (
        hf.policy == "fp8-hf" and fp8.kv_bytes_kept == hf.kv_bytes_kept and "transformers" in ev.policy_label(hf.policy)
    )


# ----- the newer methods: KeyDiff, DuoAttention-style head split, KVzip-style reconstruction ---------------------
def _stub_prefill(keys):
    """Just what a key-only scorer reads: one layer's cache keys [batch_size, num_kv_heads, seq_len, head_dim]."""
    from types import SimpleNamespace

    return SimpleNamespace(cache=SimpleNamespace(layers=[SimpleNamespace(keys=keys)]))


@pytest.mark.parametrize("policy", ev.EVICT_POLICIES)
def test_every_policy_at_100_percent_through_evict_is_the_full_cache(loaded, span_prefill, policy):
    """evict(), the one entry the sweep and the grid use (DuoAttention's ragged cache included): at 100% the logits
    are the full cache's, bit for bit."""
    import torch

    from kvviz.internals.eviction_lab.cache import continue_from
    from kvviz.internals.eviction_lab.policies import evict

    sequences, pre = span_prefill
    half = SETTINGS.half_tokens
    got = continue_from(
        loaded, evict(policy, pre, SETTINGS, ev.rows_for_budget(100, pre.seq_len)), sequences[:, half:], half
    )
    with torch.inference_mode():
        want = loaded.model(
            input_ids=sequences[:, half:], past_key_values=_fresh_cache(loaded, sequences[:, :half]), use_cache=True
        ).logits
    assert torch.equal(got, want)


@pytest.mark.parametrize("loaded", [loading.BUNDLED], indirect=True)
def test_keydiff_keeps_the_keys_least_like_the_mean_key_by_hand(loaded):
    """Five 2-d keys: three along x, one along y, one against x. At unit length their mean is (0.4, 0.2); the
    cosines are 0.894 (x), 0.447 (y) and -0.894 (-x): KeyDiff keeps -x first, then y."""
    import torch

    from kvviz.internals.eviction_lab.scoring import keep_order, keep_rows

    keys = torch.tensor([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])[None, None]
    order = keep_order("keydiff", _stub_prefill(keys), SETTINGS)
    assert keep_rows(order, 1)[0].flatten().tolist() == [4]
    assert keep_rows(order, 2)[0].flatten().tolist() == [3, 4]


def test_kvzip_keeps_the_rows_a_separate_uncached_reread_attends_to_most(loaded, span_prefill):
    """KVzip's score against an uncached pass over prefix + repeat prompt + prefix (one chunk: it fits): each row's
    most attention from any re-reading query, the most over the KV head's query heads; the same rows kept."""
    import torch

    from kvviz.internals.eviction_lab.scoring import keep_order, keep_rows

    _, pre = span_prefill
    s = pre.seq_len
    prompt = torch.tensor(loaded.tokenizer(ev.KVZIP_REPEAT_PROMPT).input_ids)
    feed = torch.cat([pre.input_ids, prompt.expand(pre.input_ids.shape[0], -1), pre.input_ids], dim=1)
    with torch.inference_mode():
        attentions = loaded.model(input_ids=feed, use_cache=False, output_attentions=True).attentions
    info = loaded.info
    group = info.n_head // info.n_kv_heads
    rows = ev.rows_for_budget(25, s)
    for layer, (a, got) in enumerate(
        zip(attentions, keep_rows(keep_order("kvzip_head", pre, SETTINGS), rows), strict=True)
    ):
        score = a[:, :, s:, :s].amax(dim=2)  # [batch_size, num_heads, s]: re-reading queries only
        score = score.reshape(score.shape[0], info.n_kv_heads, group, s).amax(dim=2)
        want = torch.sort(torch.topk(score, rows, dim=-1).indices, dim=-1).values
        assert torch.equal(got, want), f"layer {layer}"


def test_duo_split_by_hand():
    """16 KV heads, 64 rows, S = 4 (+ 4 newest): a streaming head keeps 8 rows. At 16 rows per head on average
    the budget holds 16 x 16 = 256 rows = 16 x 8 streaming rows + 2 x 56 more (2 retrieval heads; 3 would need
    296); at 9 rows no retrieval head fits; at 64 every head retrieves; at 3 rows the heads keep 3 (the sinks)."""
    s = ev.EvictSettings()
    assert ev.duo_split(16, 64, 16, s) == (2, 8)
    assert ev.duo_split(16, 64, 9, s) == (0, 8)
    assert ev.duo_split(16, 64, 64, s)[0] == 16
    assert ev.duo_split(16, 64, 3, s) == (0, 3)


def test_duo_probe_retrieval_heads_hold_the_induction_head_of_repeat_a_pattern(loaded):
    """The variant: the copy probe ranks the KV heads; at 50% the retrieval heads include the KV head of the head
    *Repeat a pattern* names as copying (kvviz.step.pattern_records.strongest_induction_head on the step page's
    preset), for the probe's ranking and for the ablation's."""
    from kvviz.internals.eviction_lab.policies import head_ranking, retrieval_order
    from kvviz.step import pattern_records, patterns
    from kvviz.step import view as step_view

    info = loaded.info
    run = patterns.pattern_run(loaded, loaded.tokenizer(step_view.REPEAT_PROMPT).input_ids)
    copying = [
        (layer.layer, head)
        for layer in run.layers
        if (head := pattern_records.strongest_induction_head(layer)) is not None
    ]
    assert copying  # the preset has a copying head on both models
    heads = info.n_layer * info.n_kv_heads
    retrieval, _stream = ev.duo_split(
        heads, SETTINGS.half_tokens, ev.rows_for_budget(50, SETTINGS.half_tokens), SETTINGS
    )
    group = info.n_head // info.n_kv_heads
    for chosen in (retrieval_order(loaded)[:retrieval], head_ranking(loaded).order[:retrieval]):
        for layer, head in copying:
            assert (layer, head // group) in chosen


def test_head_ranking_is_each_heads_output_change_when_it_alone_streams(loaded):
    """One draw by hand: the head ranked first, streaming alone over the probe's repeat (its first half prefilled,
    every other head keeping every row), changes the next-token distribution by its recorded KL divergence; a head
    that keeps every row changes nothing. The ranking is by the mean over the draws, and its spread is reported."""
    import torch
    import torch.nn.functional as F

    from kvviz.internals.eviction_lab.cache import HeadSplitCache, continue_from, prune
    from kvviz.internals.eviction_lab.policies import head_ranking
    from kvviz.internals.eviction_lab.scoring import keep_order, keep_rows, kept_rows, prefill
    from kvviz.step.pattern_records import PROBE_HALF_TOKENS, probe_token_ids

    ranking = head_ranking(loaded)
    info, half = loaded.info, PROBE_HALF_TOKENS
    assert len(ranking.effects) == ev.EVICT_DUO_DRAWS and len(ranking.heads) == info.n_layer * info.n_kv_heads
    ids = torch.tensor([probe_token_ids(info.vocab_size, half, 3)])  # draw 3
    pre = prefill(loaded, ids[:, :half])
    top = ranking.order[0]
    streaming = kept_rows(
        "streaming", keep_order("streaming", pre, SETTINGS), SETTINGS.sink_tokens + ev.EVICT_DUO_RECENT
    )
    full_logits = continue_from(
        loaded, prune(pre, keep_rows(keep_order("full", pre, SETTINGS), half)), ids[:, half:], half
    )
    mask = [torch.ones(1, info.n_kv_heads, half, dtype=torch.bool) for _ in range(info.n_layer)]
    mask[top[0]][0, top[1]] = False
    mask[top[0]][0, top[1], streaming[top[0]][0, top[1]]] = True
    kept = [[torch.nonzero(m[0, h]).flatten() for h in range(info.n_kv_heads)] for m in mask]
    got = continue_from(loaded, HeadSplitCache(pre, kept), ids[:, half:], half)
    p, q = F.log_softmax(full_logits.double(), -1), F.log_softmax(got.double(), -1)
    kl = float((p.exp() * (p - q)).sum(-1).mean())
    assert kl == pytest.approx(ranking.effects[3][ranking.heads.index(top)], rel=1e-6, abs=1e-9)
    assert ranking.mean_effects[ranking.heads.index(top)] == max(ranking.mean_effects)
    best, worst = ranking.rank_range(top)
    assert 1 <= best <= worst <= len(ranking.heads)
    assert 0 <= ranking.top_set_agreement(3) <= ev.EVICT_DUO_DRAWS


@pytest.mark.parametrize("keep", [50, 25])
def test_kvzip_ranks_rows_across_all_layers_and_heads_at_the_budgets_bytes(loaded, span_prefill, keep):
    """KVzip as the paper allocates: per sequence, the rows x layers x KV heads best re-reading scores of the whole
    cache stay (by hand from the per-head scores, kvzip_head's), so heads keep different counts and the bytes are
    exactly the budget's."""
    import torch

    from kvviz.internals.eviction_lab.cache import cache_nbytes
    from kvviz.internals.eviction_lab.policies import evict
    from kvviz.internals.eviction_lab.scoring import row_scores

    _sequences, pre = span_prefill
    info = loaded.info
    rows = ev.rows_for_budget(keep, pre.seq_len)
    scores = [row_scores("kvzip_head", pre, i, SETTINGS) for i in range(info.n_layer)]  # [b, kv, s] each
    cache = evict("kvzip", pre, SETTINGS, rows)
    b = pre.input_ids.shape[0]
    for i in range(b):
        flat = torch.cat([sc[i].reshape(-1) for sc in scores])
        threshold = torch.sort(flat, descending=True).values[rows * info.n_layer * info.n_kv_heads - 1]
        kept = cache.per_sequence[i]
        counts = [len(idx) for layer in kept for idx in layer]
        assert sum(counts) == rows * info.n_layer * info.n_kv_heads
        for layer, per_head in enumerate(kept):
            for h, idx in enumerate(per_head):
                assert bool((scores[layer][i, h, idx] >= threshold).all())
    row_bytes = 2 * info.head_dim * 4
    assert cache_nbytes(cache) == b * rows * info.n_layer * info.n_kv_heads * row_bytes
    assert cache_nbytes(cache) == cache_nbytes(evict("kvzip_head", pre, SETTINGS, rows))


@pytest.mark.parametrize("keep", [50, 25, 10])
def test_duoattention_bytes_are_its_head_tensors_and_no_retrieval_head_is_streaming_llm(loaded, span_prefill, keep):
    """The ragged cache's bytes are its per-head tensors' nbytes: retrieval heads' every row + streaming heads'
    kept rows, by hand; never over the budget. With no room for a retrieval head (10%) its logits are
    StreamingLLM's at the same rows, bit for bit (the padded view and its masks change nothing)."""
    import torch

    from kvviz.internals.eviction_lab.cache import cache_nbytes, continue_from
    from kvviz.internals.eviction_lab.measures import SweepTexts, policy_points
    from kvviz.internals.eviction_lab.policies import evict

    sequences, pre = span_prefill
    info, half = loaded.info, SETTINGS.half_tokens
    rows = ev.rows_for_budget(keep, pre.seq_len)
    cache = evict("duoattention", pre, SETTINGS, rows)
    retrieval, stream = ev.duo_split(info.n_layer * info.n_kv_heads, pre.seq_len, rows, SETTINGS)
    row_bytes = 2 * pre.input_ids.shape[0] * info.head_dim * 4  # K and V, float32, every sequence of the batch
    want = (retrieval * pre.seq_len + (info.n_layer * info.n_kv_heads - retrieval) * stream) * row_bytes
    assert (
        cache_nbytes(cache)
        == sum(k.nbytes + v.nbytes for seq in cache.heads for layer in seq for k, v in layer)
        == want
    )
    assert want <= cache_nbytes(evict("streaming", pre, SETTINGS, rows))  # the same bytes as any policy's
    point = policy_points(loaded, SweepTexts(loaded, None, ev.EvictSettings(n_spans=2)), "duoattention", (keep,))[0]
    assert point.kv_bytes_kept == want // pre.input_ids.shape[0]
    # the loss context (160 rows) holds its own whole heads: its share of the bytes, recorded for the loss chart
    heads, context = info.n_layer * info.n_kv_heads, SETTINGS.context_tokens
    c_retrieval, c_stream = ev.duo_split(heads, context, ev.rows_for_budget(keep, context), SETTINGS)
    assert point.loss_bytes_fraction == pytest.approx(
        (c_retrieval * context + (heads - c_retrieval) * c_stream) / (heads * context), abs=1e-12
    )
    assert point.loss_bytes_fraction <= ev.rows_for_budget(keep, context) / context
    if retrieval == 0:
        got = continue_from(loaded, cache, sequences[:, half:], half)
        streaming = continue_from(loaded, evict("streaming", pre, SETTINGS, rows), sequences[:, half:], half)
        assert torch.equal(got, streaming)
