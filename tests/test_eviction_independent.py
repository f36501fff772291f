"""The eviction lab against an independent check (tests/support/independent_eviction.py: the papers' kept rows, and
one ordinary forward pass with a mask per layer and head in place of the pruned cache), on both bundled models:
one point per policy (25%; StreamingLLM and SnapKV also below S and below the window, 5%; DuoAttention also at 50%,
where the budget holds retrieval heads). Kept positions and the
copy count equal exactly; the loss change within LOSS_TOLERANCE_NATS; the bytes are the kept rows' own.

A policy of EVICT_POLICIES with no independent scorer fails here: add its function to the support module's KEPT."""

from __future__ import annotations

import pytest

from kvviz.internals import eviction as ev
from kvviz.model import loading

pytestmark = pytest.mark.model  # runs both bundled models

SETTINGS = ev.EvictSettings()  # the sweep's own settings: these are points of the page's sweep
KEEP_PERCENTS = {
    "full": (100,),
    "streaming": (25, 5),
    "snapkv": (25, 5),
    "duoattention": (25, 50),
    "duo_probe": (50,),
    "kvzip": (50, 25),
}  # 5%: 3 rows, below S = 4 and the window
DEFAULT_KEEP_PERCENTS = (25,)
# The masked pass computes the continuation's attention over every prefill row with the evicted ones at -inf (an
# exact 0 after softmax), the lab over the pruned rows alone, and the prefill over 128 or 208 tokens at once, not
# 64 or 160: the same float32 sums in another order. Measured: at most 6.4e-7 nats apart on the mean loss change
# (both models, every point here); 1e-5 keeps a 15x margin and is far below any difference the page reports (3 decimals).
LOSS_TOLERANCE_NATS = 1e-5
FLOAT32_BYTES = 4


@pytest.fixture(scope="module")
def indep():
    from support import independent_eviction

    return independent_eviction


@pytest.fixture(scope="module", params=[loading.BUNDLED, loading.BUNDLED_GQA])
def both(request, indep):
    """The lab's model and its sweep texts, and the independent model (loaded again from the folder) with its own
    observation of the two prefills and its full-cache loss."""
    import torch

    from kvviz.internals.eviction_lab.measures import SweepTexts, copy_sequences, loss_passages, text_ids
    from kvviz.internals.eviction_lab.policies import head_ranking, retrieval_order
    from kvviz.model import loaders

    torch.set_num_threads(1)  # a shared 2-core machine
    lab = loaders.load_model(request.param, attn_implementation="eager")
    texts = SweepTexts(lab, None, SETTINGS)
    model = indep.load(loading.BUNDLED_MODELS[request.param].folder)
    ids = text_ids(lab, None)
    sequences, passages = copy_sequences(ids, SETTINGS), loss_passages(ids, SETTINGS)
    assert torch.equal(sequences, texts.sequences) and torch.equal(passages, texts.passages)
    context = SETTINGS.context_tokens
    observed = {
        "copy": indep.observe(model, sequences[:, : SETTINGS.half_tokens]),
        "context": indep.observe(model, passages[:, :context]),
    }
    for obs in observed.values():  # what the lab decides and the check takes: which heads retrieve, the prompt's ids
        obs.retrieval_order = retrieval_order(lab)
        obs.head_order = head_ranking(lab).order
        obs.repeat_prompt_ids = lab.tokenizer(indep.KVZIP_REPEAT_PROMPT).input_ids
    return {
        "lab": lab,
        "texts": texts,
        "model": model,
        "sequences": sequences,
        "passages": passages,
        **observed,
        "loss_full": indep.mean_loss(model, passages, context, None),
    }


def test_the_lab_rereads_with_kvzips_repeat_prompt(indep):
    assert indep.KVZIP_REPEAT_PROMPT == ev.KVZIP_REPEAT_PROMPT


def _assert_kept(got, want, what: str) -> None:
    for layer, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.tolist() == w.tolist(), f"{what}: layer {layer} keeps other positions than the papers' rule"


def _lab_kept(policy: str, pre, rows: int, want_ragged: bool):
    """The lab's kept positions: per layer [batch_size, num_kv_heads, rows], or for a ragged policy per layer
    [batch_size, num_kv_heads, P] bool (its heads keep different counts; the same for every sequence)."""
    import torch

    from kvviz.internals.eviction_lab.policies import evict
    from kvviz.internals.eviction_lab.scoring import keep_order, kept_rows

    if not want_ragged:
        return kept_rows(policy, keep_order(policy, pre, SETTINGS), rows)
    cache = evict(policy, pre, SETTINGS, rows)  # a HeadSplitCache: [sequence][layer][kv head] positions
    b, n_layers = len(cache.per_sequence), len(cache.per_sequence[0])
    out = [torch.zeros(b, len(cache.per_sequence[0][0]), pre.seq_len, dtype=torch.bool) for _ in range(n_layers)]
    for i, seq in enumerate(cache.per_sequence):
        for layer, per_head in enumerate(seq):
            for h, idx in enumerate(per_head):
                out[layer][i, h, idx] = True
    return out


def _kept_rows_total(kept, ragged: bool) -> int:
    """Rows kept over every layer and KV head (one sequence on average: the ragged policies' sequences may keep
    different sets, never more than the budget)."""
    if ragged:
        return sum(int(k.sum()) for k in kept) // kept[0].shape[0]
    return sum(k[0].numel() for k in kept)


def _assert_a_kept_set(kept, rows: int, seq_len: int) -> None:
    """What a kept set must be whatever drew it: `rows` distinct positions in 0..seq_len-1, in order."""
    for k in kept:
        assert k.shape[-1] == rows and int(k.min()) >= 0 and int(k.max()) < seq_len
        assert bool((k[..., 1:] > k[..., :-1]).all())


@pytest.mark.parametrize("policy", ev.EVICT_POLICIES)
def test_each_policy_matches_an_independent_masked_forward_pass(both, indep, policy):
    from kvviz.internals.eviction_lab.measures import policy_points

    if policy not in indep.KEPT and policy not in indep.FORWARD_ONLY:
        pytest.fail(f"{policy!r} has no independent scorer: add one to tests/support/independent_eviction.py KEPT")
    lab, texts, model = both["lab"], both["texts"], both["model"]
    half, context = SETTINGS.half_tokens, SETTINGS.context_tokens
    for keep in KEEP_PERCENTS.get(policy, DEFAULT_KEEP_PERCENTS):
        where = f"{lab.info.spec} {policy} at {keep}%"
        rows, context_rows = half * keep // 100, context * keep // 100
        assert (ev.rows_for_budget(keep, half), ev.rows_for_budget(keep, context)) == (rows, context_rows)
        point = policy_points(lab, texts, policy, (keep,))[0]
        ragged = policy in indep.RAGGED
        lab_copy = _lab_kept(policy, texts.copy, rows, ragged)
        lab_context = _lab_kept(policy, texts.context, context_rows, ragged)
        if policy in indep.FORWARD_ONLY:  # no independent draw: the lab's set, the forward path checked
            _assert_a_kept_set(lab_copy, rows, half)
            _assert_a_kept_set(lab_context, context_rows, context)
            kept_copy, kept_context = lab_copy, lab_context
        else:
            kept_copy = indep.KEPT[policy](both["copy"], rows, SETTINGS)
            kept_context = indep.KEPT[policy](both["context"], context_rows, SETTINGS)
            _assert_kept(lab_copy, kept_copy, f"{where}, copy test")
            _assert_kept(lab_context, kept_context, f"{where}, loss context")
        n_layers, (_b, kv_heads, _s, head_dim) = len(both["copy"].keys), both["copy"].keys[0].shape
        kept_total = _kept_rows_total(kept_copy, ragged)  # every head `rows`, or (ragged) each head its own
        assert kept_total <= n_layers * kv_heads * rows, f"{where}: over the budget"
        assert point.kv_bytes_kept == 2 * kept_total * head_dim * FLOAT32_BYTES, where  # K and V
        assert point.copy_total == SETTINGS.n_spans * (half - 1)
        assert point.copy_correct == indep.copy_count(model, both["sequences"], kept_copy), where
        change = indep.mean_loss(model, both["passages"], context, kept_context) - both["loss_full"]
        assert point.loss_change_nats == pytest.approx(change, abs=LOSS_TOLERANCE_NATS), where
