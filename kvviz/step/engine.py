"""The stepping engine: prefill a prompt, then decode one token at a time over transformers' own DynamicCache.

The loop a real inference engine runs, slowed down so a student can watch it:

    prefill:  feed the P prompt tokens at once  -> cache holds P rows per layer; logits pick token t_P
    step k:   feed only the newest token          -> cache gains 1 row per layer; logits pick the next token

The token chosen by a forward pass is not in the cache yet: its K/V row is computed (and appended) by the
*next* pass. The engine keeps it as `pending_token_id` and every StepRecord says which token was fed.

Each pass returns a plain, frozen StepRecord (kvviz.step.records: numpy arrays and text, no torch) so pages
can draw without touching the model. Rollback (`back`) crops the cache exactly as prefix caching and speculative decoding do
in real engines: `crop_cache(cache, n)` keeps positions 0..n-1.

A hybrid model (kvviz.model.dims: some layers are Gated DeltaNet linear attention) keeps, in those layers, a fixed-size
state that every token rewrites in place: nothing in it can be cropped (transformers' LinearAttentionLayer refuses
`crop` unless `activate_past_recording()` kept the whole conv history, and even then it cannot undo the recurrent
state). So each record keeps an exact copy of every linear layer's state after its pass (LinearState: a few KiB), and
`back` crops the attention layers' K/V by one row and copies the previous record's states back into the cache.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import numpy as np
import torch
from transformers import DynamicCache
from transformers.cache_utils import LinearAttentionCacheLayerMixin

from kvviz.i18n import _
from kvviz.inputs.prompt_rules import check_prompt
from kvviz.measure.load import load_avg_1min
from kvviz.measure.repeats import interleaved_repeats
from kvviz.model.interrupt import checks_inside_passes
from kvviz.model.loaders import attention_twin
from kvviz.model.loading import ASSETS_DIR, MODEL_LOCK, LoadedModel
from kvviz.model.tokens import token_text
from kvviz.step.records import (
    RACE_BUDGET_S,
    ContextFullError,
    ContextRace,
    Equivalence,
    LinearState,
    ParkedGeneration,
    PromptError,
    RaceTiming,
    Sampling,
    StepRecord,
    TokenProb,
    draw_seed,
)
from kvviz.step.view import CONTEXT_RACE_CONTEXTS, StageSnapshot, StageView, build_snapshot, stage_view

TOP_K_SHOWN = 10  # next-token candidates kept in each record


def is_linear_layer(layer: object) -> bool:
    """A cache layer that keeps a fixed-size state (transformers' linear-attention layers), not K/V rows."""
    return isinstance(layer, LinearAttentionCacheLayerMixin)


def crop_cache(cache: DynamicCache, keep_len: int, states: tuple[LinearState, ...] = ()) -> None:
    """Roll the cache back to its first keep_len positions, in place.

    transformers 5.x: a layer's `crop(-n)` removes the last n tokens (a positive argument, the old "final length"
    form, is refused). This wrapper keeps the readable "keep this many" form. A hybrid's linear-attention layers
    cannot be cropped: `states` (the copies taken after position keep_len - 1, read_states) are put back instead.
    """
    remove = cache.get_seq_length() - keep_len
    if remove < 0 or keep_len < 0:
        raise ValueError(f"cannot crop a cache of {cache.get_seq_length()} tokens to {keep_len}")
    linear = [i for i, layer in enumerate(cache.layers) if is_linear_layer(layer)]
    if remove and linear and sorted(s.layer for s in states) != linear:
        raise ValueError("a linear-attention state cannot be cropped: pass the states to put back")
    if remove:
        for layer in cache.layers:
            if not is_linear_layer(layer):
                layer.crop(-remove)
        restore_states(cache, states)


def read_states(cache: DynamicCache) -> tuple[LinearState, ...]:
    """Exact copies of every linear-attention layer's state (batch 0), with the bytes of the tensors themselves."""
    states = []
    for i, layer in enumerate(cache.layers):
        if not is_linear_layer(layer):
            continue
        recurrent, conv = layer.recurrent_states[0], layer.conv_states[0]  # [B, H, d_k, d_v], [B, C, kernel]
        states.append(
            LinearState(
                layer=i,
                recurrent=recurrent[0].detach().float().numpy().copy(),
                conv=conv[0].detach().float().numpy().copy(),
                recurrent_bytes=recurrent.numel() * recurrent.element_size(),
                conv_bytes=conv.numel() * conv.element_size(),
            )
        )
    return tuple(states)


@torch.inference_mode()  # the cache's tensors are inference tensors (made under inference mode)
def restore_states(cache: DynamicCache, states: tuple[LinearState, ...]) -> None:
    """Copy saved states back into the cache's own tensors (in place: the tensors, their shapes and bytes stay)."""
    for state in states:
        layer = cache.layers[state.layer]
        layer.recurrent_states[0][0].copy_(torch.from_numpy(state.recurrent))
        layer.conv_states[0][0].copy_(torch.from_numpy(state.conv))


def cache_bytes(cache: DynamicCache) -> int:
    """Bytes held by every layer's K and V tensors (numel x element size), read from the tensors themselves."""
    total = 0
    for layer in cache.layers:
        if getattr(layer, "keys", None) is not None and layer.keys.numel():
            total += layer.keys.numel() * layer.keys.element_size()
            total += layer.values.numel() * layer.values.element_size()
    return total


def held_bytes(cache: DynamicCache) -> int:
    """Bytes of every tensor the cache holds: the K and V rows (cache_bytes) and each linear-attention layer's conv
    and recurrent states (what kvviz.memory.layers counts for the whole cache)."""
    total = cache_bytes(cache)
    for layer in cache.layers:
        if is_linear_layer(layer):
            for t in (*layer.conv_states.values(), *layer.recurrent_states.values()):
                total += 0 if t is None else t.numel() * t.element_size()
    return total


RACE_MAX_REPEATS = 15  # a quiet machine does 15 repeats of the bundled model in ~60 ms


@torch.inference_mode()
def race_timing(
    loaded: LoadedModel,
    token_ids: list[int],
    budget_s: float = RACE_BUDGET_S,
    max_repeats: int = RACE_MAX_REPEATS,
    check: Callable[[], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> RaceTiming:
    """Time the step that fed token_ids[-1] both ways, as a fair statistic: repeats of the three passes
    interleaved (kvviz.measure.repeats: the order rotates, so a burst of load hits all three alike), each pass
    run the same way (one forward over a DynamicCache, so no side pays a code path the others skip).

    The click's work is bounded: the first repeat always runs; another starts only while it is expected (from
    the last repeat's cost) to end within budget_s of the start, up to max_repeats. Where one repeat costs more
    than the budget (the GPT-2 124M shape at a long context) the click does exactly one repeat and one long
    pass: the uncached side's first pass, nothing cached, also fills the cached side's cache (its rows, cropped
    by one). Nobody else's cache is touched.

    check() (optional) is called between passes and before every transformer block (the speed-up harness's
    checks_inside_passes, this thread only): whatever it raises (Streamlit's rerun or stop, when a newer run
    or a closed tab ends this one) ends the race within one block; nothing is returned. clock: seconds, for
    the passes and the budget (tests inject one).

    cached: 1 token over len-1 cached rows; uncached: all len tokens, nothing cached; fixed: 1 token, nothing
    cached (what every forward costs here whatever the length: the floor under both sides).
    """
    if not token_ids:
        raise PromptError(_("Prefill a prompt first."))
    model = loaded.model
    vocab = model.config.vocab_size
    ids = [int(t) % vocab for t in token_ids]  # another model of the same tokenizer family: same ids
    feed = {"uncached": torch.tensor([ids]), "cached": torch.tensor([ids[-1:]]), "fixed": torch.tensor([ids[:1]])}
    keep = len(ids) - 1
    cache: DynamicCache | None = None  # the cached side's: filled by the first uncached pass
    kept_states: tuple[LinearState, ...] = ()  # a hybrid's linear states after `keep` tokens (crop puts them back)
    between = check or (lambda: None)

    def timed(kind: str) -> tuple[float, DynamicCache]:  # (seconds, the pass's cache)
        between()
        past = cache if kind == "cached" else DynamicCache(config=model.config)
        with MODEL_LOCK:
            began = clock()
            out = model(input_ids=feed[kind], past_key_values=past, use_cache=True)
            s = clock() - began
        if kind == "cached":
            crop_cache(cache, keep, kept_states)
        return s, out.past_key_values

    def uncached() -> float:  # the first one also fills the cached side's cache
        nonlocal cache, kept_states
        s, filled = timed("uncached")
        if cache is None and any(is_linear_layer(layer) for layer in filled.layers):
            # a fixed state cannot be cropped: the cached side's cache comes from an untimed pass over `keep` tokens
            cache = DynamicCache(config=model.config)
            with MODEL_LOCK:
                model(input_ids=feed["uncached"][:, :keep], past_key_values=cache, use_cache=True)
            kept_states = read_states(cache)
        elif cache is None:
            cache = filled
            crop_cache(cache, keep)  # the cached side's cache: every row but the last, as the engine had it
        return s

    def cached() -> float:  # the first one after an untimed warm-up (outside the first repeat's cost)
        nonlocal cached_warm
        if not cached_warm:
            cached_warm = True
            if keep:
                timed("cached")
        return timed("cached")[0]

    cached_warm = False
    passes = {"uncached": uncached, "cached": cached, "fixed": lambda: timed("fixed")[0]}
    # the order rotates (kvviz.measure.repeats), so no pass always runs right after another; the first repeat
    # starts with the uncached pass, which fills the cached side's cache
    orders = (("uncached", "cached", "fixed"), ("cached", "fixed", "uncached"), ("fixed", "uncached", "cached"))
    inside = checks_inside_passes(model, check) if check is not None else contextlib.nullcontext()
    with inside:
        seconds = interleaved_repeats(
            passes, max(1, max_repeats), orders=orders, budget_s=budget_s, warm_up=lambda: timed("fixed"), clock=clock
        )
    ms = {kind: tuple(1000.0 * s for s in xs) for kind, xs in seconds.items()}
    return RaceTiming(
        seq_len=len(ids),
        cached_ms=ms["cached"],
        uncached_ms=ms["uncached"],
        fixed_ms=ms["fixed"],
        model_label=loaded.info.label,
        load_1min=load_avg_1min(),
    )


CONTEXT_RACE_BUDGET_S = 2.0  # the whole hybrid-vs-attention race, every context (one click)
HELD_OUT_TEXT = ASSETS_DIR / "held_out_shakespeare.txt"  # text none of the bundled models trained on


@torch.inference_mode()
def context_race(
    hybrid: LoadedModel,
    twin: LoadedModel,
    token_ids: list[int],
    contexts: tuple[int, ...],
    budget_s: float = CONTEXT_RACE_BUDGET_S,
    max_repeats: int = RACE_MAX_REPEATS,
    clock: Callable[[], float] = time.perf_counter,
) -> ContextRace:
    """A hybrid's decode step against its all-attention twin's, at each context length: per context, each model's
    cache of the first c - 1 tokens is filled once (untimed), then the step feeding token c - 1 is timed, the two
    models' repeats interleaved (their order alternating), and after each timed step the cache goes back to its c - 1
    tokens (the attention rows cropped, a hybrid's states put back: crop_cache). The budget is shared out evenly over
    the contexts; the first repeat always runs. Changes nothing outside."""
    per_context_s = budget_s / max(1, len(contexts))
    hybrid_ms, twin_ms = [], []
    for c in contexts:
        if not 2 <= c <= len(token_ids):
            raise ValueError(f"context {c} needs 2..{len(token_ids)} tokens")
        seconds = _race_at(hybrid, twin, [int(t) for t in token_ids[:c]], per_context_s, max_repeats, clock)
        hybrid_ms.append(tuple(1000.0 * x for x in seconds["hybrid"]))
        twin_ms.append(tuple(1000.0 * x for x in seconds["twin"]))
    return ContextRace(
        contexts=tuple(contexts),
        hybrid_ms=tuple(hybrid_ms),
        twin_ms=tuple(twin_ms),
        hybrid_label=hybrid.info.label,
        twin_label=twin.info.label,
        load_1min=load_avg_1min(),
    )


def _race_at(
    hybrid: LoadedModel,
    twin: LoadedModel,
    ids: list[int],
    budget_s: float,
    max_repeats: int,
    clock: Callable[[], float],
) -> dict[str, tuple[float, ...]]:
    """context_race at one context: seconds of each side's step feeding ids[-1] over a cache of ids[:-1]."""
    keep = len(ids) - 1
    sides = {}
    for name, loaded in (("hybrid", hybrid), ("twin", twin)):
        cache = DynamicCache(config=loaded.model.config)
        with MODEL_LOCK:
            loaded.model(input_ids=torch.tensor([ids[:-1]]), past_key_values=cache, use_cache=True)
        sides[name] = (loaded.model, cache, read_states(cache))
    last = torch.tensor([ids[-1:]])

    def step(name: str) -> float:
        model, cache, states = sides[name]
        with MODEL_LOCK:
            began = time.perf_counter()
            model(input_ids=last, past_key_values=cache, use_cache=True)
            s = time.perf_counter() - began
        crop_cache(cache, keep, states)  # back to the ids[:-1] tokens: every repeat times the same step
        return s

    return interleaved_repeats(
        {"hybrid": lambda: step("hybrid"), "twin": lambda: step("twin")},
        max(1, max_repeats),
        orders=(("hybrid", "twin"), ("twin", "hybrid")),
        budget_s=budget_s,
        warm_up=lambda: (step("hybrid"), step("twin")),
        clock=clock,
    )


class StepEngine:
    """Per-user stepping state over a shared (never mutated) model. Not thread-safe: one per session."""

    def __init__(self, loaded: LoadedModel, sampling: Sampling | None = None) -> None:
        if loaded.model.config._attn_implementation != "eager":
            raise ValueError("The stepping engine needs eager attention to read attention weights.")
        self.loaded = loaded
        self.sampling = sampling or Sampling()
        self.reset()

    # ----- state -------------------------------------------------------------------------------------
    def reset(self) -> None:
        self.cache: DynamicCache | None = None
        self.token_ids: list[int] = []  # every token fed into the cache, in position order
        self.prompt_len = 0
        self.prompt_text = ""  # the prompt as typed (for a shareable link to this state)
        self.records: list[StepRecord] = []
        self.pending_token_id: int | None = None  # chosen, not yet fed

    @property
    def n_positions(self) -> int:
        return self.loaded.info.n_positions

    @property
    def cache_len(self) -> int:
        return 0 if self.cache is None else self.cache.get_seq_length()

    @property
    def cache_bytes(self) -> int:
        return 0 if self.cache is None else cache_bytes(self.cache)

    @property
    def held_bytes(self) -> int:
        """Every tensor of the cache: K/V rows and a hybrid's fixed states (held_bytes)."""
        return 0 if self.cache is None else held_bytes(self.cache)

    @property
    def started(self) -> bool:
        return bool(self.records)

    @property
    def at_context_limit(self) -> bool:
        return self.cache_len >= self.n_positions

    def layer_keys(self, layer: int) -> np.ndarray:
        """One layer's keys at batch 0: [num_kv_heads, seq_len, head_dim]."""
        return self.cache.layers[layer].keys[0].detach().float().numpy()

    def layer_values(self, layer: int) -> np.ndarray:
        return self.cache.layers[layer].values[0].detach().float().numpy()

    def snapshot(self, layer: int, q_head: int, at: int | None = None, all_layers: bool = False) -> StageSnapshot:
        """What the stage shows after record `at` (default: the newest) for one layer and query head: the page
        asks the engine, which knows its model's shape, instead of passing the dimensions back down."""
        return build_snapshot(
            self.records, self.prompt_len, self.loaded.info, layer, q_head, at=at, all_layers=all_layers
        )

    def stage_view(self, layer: int, q_head: int, at: int | None = None, all_layers: bool = False) -> StageView:
        """The snapshot with every sentence and number the stage shows around it (kvviz.step.view.stage_view)."""
        return stage_view(self.snapshot(layer, q_head, at=at, all_layers=all_layers), self.loaded.info)

    def generated_ids(self) -> list[int]:
        """Generated tokens already fed to the cache (excludes the prompt and the pending token)."""
        return self.token_ids[self.prompt_len :]

    # ----- actions -----------------------------------------------------------------------------------
    def tokenize(self, prompt: str) -> list[int]:
        """Token ids of the prompt, or PromptError when it is empty or longer than the model's positions."""
        return check_prompt(self.loaded.tokenizer, prompt, self.n_positions)

    def prefill(self, prompt: str, sampling: Sampling | None = None) -> StepRecord:
        """Start over with `prompt`: one forward pass over all its tokens fills the cache."""
        ids = self.tokenize(prompt)
        self.sampling = sampling or self.sampling
        self.reset()
        self.cache = DynamicCache(config=self.loaded.model.config)
        record = self._forward(ids, kind="prefill")
        self.prompt_len = len(ids)
        self.prompt_text = prompt
        return record

    def step(self, sampling: Sampling | None = None) -> StepRecord:
        """Feed the pending token: the cache grows by exactly one row per layer.

        `sampling` (optional) changes how the token *after* this one is chosen; earlier tokens stay as they are.
        """
        self.sampling = sampling or self.sampling
        if not self.started:
            raise PromptError(_("Prefill a prompt first: the cache is empty."))
        if self.at_context_limit:
            raise ContextFullError(
                _(
                    "The cache holds {n} tokens, all {positions} positions this model learned. GPT-2 has absolute "
                    "position embeddings, so it cannot go further: step back, or reset with a shorter prompt."
                ).format(n=self.cache_len, positions=self.n_positions)
            )
        return self._forward([self.pending_token_id], kind="decode")

    def back(self) -> StepRecord:
        """Undo the last decode step: crop the cache by one row and re-pend the token it had fed."""
        if not self.started:  # right after Reset nothing is cached, not even the prompt
            raise PromptError(_("Nothing to roll back: the cache is empty. Prefill a prompt first."))
        if len(self.records) <= 1:
            raise PromptError(_("Nothing to roll back: only the prompt is cached. Use Reset to start over."))
        dropped = self.records.pop()
        # a hybrid's linear layers go back to the states copied after the step now shown (crop_cache)
        crop_cache(self.cache, self.cache_len - dropped.n_fed, self.records[-1].states)
        del self.token_ids[-dropped.n_fed :]
        self.pending_token_id = dropped.fed_token_ids[0]
        return self.records[-1]

    # ----- the forward pass ----------------------------------------------------------------------------
    @torch.inference_mode()
    def _forward(self, ids: list[int], kind: str) -> StepRecord:
        start = self.cache_len
        input_ids = torch.tensor([ids], dtype=torch.long)  # (1, N)
        with MODEL_LOCK:
            began = time.perf_counter()
            out = self.loaded.model(
                input_ids=input_ids, past_key_values=self.cache, use_cache=True, output_attentions=True
            )
            step_ms = (time.perf_counter() - began) * 1000.0
        self.cache = out.past_key_values
        logits = out.logits[0, -1].float()  # [vocab_size]
        next_id = self._choose(logits, prefix=self.token_ids + list(ids))
        n_new = len(ids)
        kv_layers = [layer for layer in self.cache.layers if not is_linear_layer(layer)]  # every layer but a hybrid's
        new_keys = np.stack([layer.keys[0, :, start:].float().numpy() for layer in kv_layers])
        new_values = np.stack([layer.values[0, :, start:].float().numpy() for layer in kv_layers])
        # [num_layers, num_heads, seq_len]: the last fed token's query
        attention = np.stack([a[0, :, -1, :].float().numpy() for a in out.attentions])
        probs = torch.softmax(logits, dim=-1)
        top = torch.topk(probs, k=min(TOP_K_SHOWN, probs.numel()))
        tok = self.loaded.tokenizer
        record = StepRecord(
            index=len(self.records),
            kind=kind,
            fed_token_ids=tuple(ids),
            fed_token_texts=tuple(token_text(tok, int(i)) for i in ids),
            fed_positions=tuple(range(start, start + n_new)),
            new_keys=new_keys,
            new_values=new_values,
            attention=attention,
            next_logits=logits.numpy().copy(),
            top_k=tuple(
                TokenProb(int(i), token_text(tok, int(i)), float(p))
                for p, i in zip(top.values, top.indices, strict=True)
            ),
            next_token_id=next_id,
            next_token_text=token_text(tok, next_id),
            cache_len=self.cache_len,
            cache_bytes=cache_bytes(self.cache),
            step_ms=step_ms,
            states=read_states(self.cache),
        )
        self.token_ids.extend(ids)
        self.records.append(record)
        self.pending_token_id = next_id
        return record

    def _choose(self, logits: torch.Tensor, prefix: list[int]) -> int:
        """Pick the next token. prefix = every token fed so far (the chosen one goes at len(prefix))."""
        s = self.sampling
        if s.greedy:
            return int(torch.argmax(logits))
        scaled = logits / s.temperature
        if s.top_k:
            kth = torch.topk(scaled, k=min(s.top_k, scaled.numel())).values[-1]
            scaled = torch.where(scaled < kth, torch.full_like(scaled, float("-inf")), scaled)
        gen = torch.Generator().manual_seed(draw_seed(s.seed, prefix))
        return int(torch.multinomial(torch.softmax(scaled, dim=-1), 1, generator=gen))

    def parked(self) -> ParkedGeneration:
        """This generation as plain values, to put aside while the student uses another model."""
        return ParkedGeneration(
            spec=self.loaded.info.spec,
            model_label=self.loaded.info.label,
            prompt_text=self.prompt_text,
            prompt_len=self.prompt_len,
            token_ids=tuple(self.token_ids),
            sampling=self.sampling,
        )

    def restore(self, parked: ParkedGeneration) -> None:
        """Replay a parked generation: prefill its prompt, then feed exactly the tokens it fed (not a new
        draw), so the records, the cache and the pending token are what the student left."""
        self.prefill(parked.prompt_text, parked.sampling)
        for token_id in parked.token_ids[parked.prompt_len :]:
            if self.at_context_limit:
                break
            self.pending_token_id = int(token_id)
            self.step()

    def race(
        self,
        at: int | None = None,
        budget_s: float = RACE_BUDGET_S,
        on: LoadedModel | None = None,
        check: Callable[[], None] | None = None,
    ) -> RaceTiming:
        """The step of record `at` (default the newest) timed with and without the cache (race_timing: bounded
        to budget_s or one repeat, ended by whatever check() raises), on this engine's model or `on` another of
        the same tokenizer (the race at a larger shape). Changes nothing."""
        if not self.started:
            raise PromptError(_("Prefill a prompt first."))
        record = self.records[-1 if at is None else at]
        return race_timing(on or self.loaded, self.token_ids[: record.cache_len], budget_s=budget_s, check=check)

    def versus_attention(self, budget_s: float = CONTEXT_RACE_BUDGET_S) -> ContextRace:
        """A hybrid's decode step against its all-attention twin's (loaders.attention_twin: the same shape, every
        layer attention), at CONTEXT_RACE_CONTEXTS tokens of held-out Shakespeare (the same text for every
        session, so a class compares like with like): context_race, bounded to budget_s. Changes nothing."""
        if self.loaded.info.all_attention:
            raise PromptError(_("This model's every layer is attention: there is no hybrid to race."))
        twin = attention_twin(self.loaded.info.spec)
        text = HELD_OUT_TEXT.read_text(encoding="utf-8")
        ids = self.loaded.tokenizer(text).input_ids[: max(CONTEXT_RACE_CONTEXTS)]
        return context_race(self.loaded, twin, ids, CONTEXT_RACE_CONTEXTS, budget_s=budget_s)

    # ----- caching changes speed, not results ------------------------------------------------------------
    @torch.inference_mode()
    def check_without_cache(self) -> Equivalence:
        """Recompute the latest step with no cache: one full forward over every token fed so far."""
        if not self.started:
            raise PromptError(_("Prefill a prompt first."))
        with MODEL_LOCK:
            began = time.perf_counter()
            full = self.loaded.model(input_ids=torch.tensor([self.token_ids]), use_cache=True)
            uncached_ms = (time.perf_counter() - began) * 1000.0
        fresh = full.past_key_values  # K/V for every position, recomputed from scratch
        last = self.records[-1]
        logits = full.logits[0, -1].float().numpy()
        pairs = [(a, b) for a, b in zip(fresh.layers, self.cache.layers, strict=True) if not is_linear_layer(a)]
        key_diff = max(float((a.keys - b.keys).abs().max()) for a, b in pairs)
        value_diff = max(float((a.values - b.values).abs().max()) for a, b in pairs)
        return Equivalence(
            max_abs_logit_diff=float(np.abs(logits - last.next_logits).max()),
            same_next_token=int(np.argmax(logits)) == int(np.argmax(last.next_logits)),
            max_abs_key_diff=key_diff,
            max_abs_value_diff=value_diff,
            recomputed_rows=len(self.token_ids),
            uncached_ms=uncached_ms,
        )
