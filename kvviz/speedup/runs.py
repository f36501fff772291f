"""One timed greedy generation of N tokens per mode: the runners the harness (kvviz.speedup.harness) interleaves.

Every runner computes logits for the last position only (as `generate` does), times each forward pass
with time.perf_counter, and returns a RunTiming. Pass 1 is the prefill of the P prompt tokens. The runners work
on whatever device the model sits on (its tensors are made there) and synchronise it around every timed pass
(kvviz.speedup.device): on a GPU a forward returns when its kernels are queued, not done.

    run_no_cache     every pass re-feeds the whole sequence: the true baseline
    run_hf_cache     model(...) with transformers' DynamicCache or StaticCache, one token per pass (optionally
                     through compile_forward: the decode passes of a StaticCache run through torch.compile)
    run_flat         kvviz.speedup.flat_engine.FlatCacheGPT2 (any weight format)
    run_generate     model.generate(use_cache=True/False), timed per token through a streamer
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from transformers import DynamicCache, GenerationConfig, StaticCache
from transformers.generation.streamers import BaseStreamer

from kvviz.speedup.device import synchronize
from kvviz.speedup.flat_engine import FlatCacheGPT2
from kvviz.speedup.records import RunTiming


def hf_cache_bytes(cache) -> int:
    """Bytes of the K/V tensors a transformers cache holds (allocated, written or not)."""
    return sum(
        t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values) if t is not None
    )


@torch.inference_mode()
def run_no_cache(model: torch.nn.Module, prompt_ids: list[int], new_tokens: int) -> RunTiming:
    device = model.device
    synchronize(device)
    began = time.perf_counter()
    p = len(prompt_ids)
    ids = torch.zeros((1, p + new_tokens), dtype=torch.long, device=device)  # (1, P+N): filled as tokens are picked
    ids[0, :p] = torch.tensor(prompt_ids, device=device)
    pass_ms, tokens = [], []
    for k in range(new_tokens):
        synchronize(device)
        t0 = time.perf_counter()
        out = model(input_ids=ids[:, : p + k], use_cache=False, logits_to_keep=1)
        token = int(out.logits[0, -1].argmax())  # reading the token waits for the pass on any device
        pass_ms.append((time.perf_counter() - t0) * 1000.0)
        tokens.append(token)
        ids[0, p + k] = token
    total_ms = (time.perf_counter() - began) * 1000.0
    return RunTiming(pass_ms[0], tuple(pass_ms[1:]), total_ms, tuple(tokens), 0)


class CompileUnavailable(RuntimeError):
    """torch.compile cannot build the decode step here (no C++ compiler, an unsupported op): the message says why."""


def compile_forward(
    model: torch.nn.Module, prompt_ids: list[int], cache_len: int, mode: str | None = None
) -> tuple[Callable[..., Any], float]:
    """model.forward through torch.compile (inductor, static shapes), compiled now by one short StaticCache run.

    With a StaticCache of one size (cache_len) every decode pass has the same shapes, so one graph serves them
    all (no recompiles); the prefill keeps the eager forward (a second graph for the prompt's shape would only
    add compile time). mode: torch.compile's mode ("reduce-overhead" on CUDA replays the step as a CUDA graph,
    one launch instead of hundreds). Returns (forward, seconds spent compiling); raises CompileUnavailable.
    """
    began = time.perf_counter()
    forward = torch.compile(model.forward, dynamic=False, mode=mode)
    try:
        run_hf_cache(model, prompt_ids, 3, "static", decode_forward=forward, cache_len=cache_len)
    except Exception as exc:  # inductor reports a missing compiler or op as many exception types
        first_line = (str(exc).splitlines() or [""])[0]
        raise CompileUnavailable(f"torch.compile failed here: {type(exc).__name__}: {first_line}") from exc
    return forward, time.perf_counter() - began


@torch.inference_mode()
def run_hf_cache(
    model: torch.nn.Module,
    prompt_ids: list[int],
    new_tokens: int,
    kind: str,
    decode_forward: Callable[..., Any] | None = None,
    cache_len: int | None = None,
) -> RunTiming:
    """kind "dynamic": DynamicCache (grows by concatenation); "static": StaticCache sized to cache_len (P + N).

    decode_forward: what runs the decode passes (default: the model itself; compile_forward's compiled one).
    """
    began = time.perf_counter()
    if kind == "static":
        cache = StaticCache(config=model.config, max_cache_len=cache_len or len(prompt_ids) + new_tokens)
    else:
        cache = DynamicCache(config=model.config)
    device = model.device
    feed = torch.tensor([prompt_ids], device=device)  # (1, P), then (1, 1)
    pass_ms, tokens = [], []
    forward = model
    for _ in range(new_tokens):
        synchronize(device)
        t0 = time.perf_counter()
        out = forward(input_ids=feed, past_key_values=cache, use_cache=True, logits_to_keep=1)
        forward = decode_forward or model
        feed = out.logits[:, -1].argmax(dim=-1, keepdim=True)  # (1, 1): the next token to feed
        token = int(feed)
        pass_ms.append((time.perf_counter() - t0) * 1000.0)
        tokens.append(token)
    total_ms = (time.perf_counter() - began) * 1000.0
    return RunTiming(pass_ms[0], tuple(pass_ms[1:]), total_ms, tuple(tokens), hf_cache_bytes(cache))


@torch.inference_mode()
def run_flat(
    engine: FlatCacheGPT2, prompt_ids: list[int], new_tokens: int, between_passes: Callable[[], None] | None = None
) -> RunTiming:
    """between_passes(): called before each pass, untimed (the harness checks there whether to stop)."""
    began = time.perf_counter()
    engine.reset()
    feed = torch.tensor([prompt_ids])  # (1, P), then (1, 1)
    pass_ms, tokens = [], []
    for _ in range(new_tokens):
        if between_passes is not None:
            between_passes()
        t0 = time.perf_counter()
        logits = engine.forward(feed)  # (1, vocab)
        feed = logits.argmax(dim=-1, keepdim=True)  # (1, 1)
        token = int(feed)
        pass_ms.append((time.perf_counter() - t0) * 1000.0)
        tokens.append(token)
    total_ms = (time.perf_counter() - began) * 1000.0
    return RunTiming(pass_ms[0], tuple(pass_ms[1:]), total_ms, tuple(tokens), engine.cache_bytes)


class _TimingStreamer(BaseStreamer):
    """generate() calls put() with the prompt, then once per new token: a timestamp each time."""

    def __init__(self) -> None:
        self.stamps: list[float] = []

    def put(self, value: torch.Tensor) -> None:
        synchronize(value.device)  # the token is known only when the pass that picked it has finished
        self.stamps.append(time.perf_counter())

    def end(self) -> None:
        pass


@torch.inference_mode()
def run_generate(model: torch.nn.Module, prompt_ids: list[int], new_tokens: int, use_cache: bool) -> RunTiming:
    """Plain greedy model.generate; no EOS stop, so it always produces exactly new_tokens tokens."""
    config = GenerationConfig(
        max_new_tokens=new_tokens,
        do_sample=False,
        use_cache=use_cache,
        eos_token_id=None,
        pad_token_id=model.config.eos_token_id if model.config.eos_token_id is not None else 0,
    )
    input_ids = torch.tensor([prompt_ids], device=model.device)
    streamer = _TimingStreamer()
    synchronize(model.device)
    began = time.perf_counter()
    out = model.generate(
        input_ids, attention_mask=torch.ones_like(input_ids), generation_config=config, streamer=streamer
    )
    total_ms = (time.perf_counter() - began) * 1000.0
    stamps_ms = np.diff(np.array(streamer.stamps)) * 1000.0  # [new_tokens]: pass k ends at stamp k
    tokens = tuple(int(t) for t in out[0, len(prompt_ids) :])
    # generate's cache is internal and gone by now (a DynamicCache, the size of the dynamic mode's)
    return RunTiming(float(stamps_ms[0]), tuple(float(x) for x in stamps_ms[1:]), total_ms, tokens, None)
