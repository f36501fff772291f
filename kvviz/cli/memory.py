"""`python -m kvviz memory`: KV-cache bytes for a preset, explicit numbers or a config.json.

    python -m kvviz memory --preset llama-3-8b --context 4096 --json
    python -m kvviz memory --layers 12 --heads 12 --kv-heads 12 --head-dim 64 --dtype fp32 --context 1024
    python -m kvviz memory --config path/to/config.json --context 32768 --batch 8
    python -m kvviz memory --preset qwen3-next-80b-a3b --context 131072 --json     # a hybrid, layer by layer
    python -m kvviz memory --layers 48 --heads 16 --kv-heads 2 --head-dim 256 --dtype bf16 \
        --pattern "3 linear : 1 full" --linear-heads 32 --linear-head-dim 128 --conv-kernel 4   # a model not yet out
    python -m kvviz memory --list-presets

Every answer lists the layers (kind, bytes per token, fixed bytes): `--json` carries them under "layers".

Bad input ends with one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields, replace
from pathlib import Path
from types import SimpleNamespace

from kvviz import memory
from kvviz.cli import Parser, ReadRefused, one_line, printable, read_regular_file, say, whole, within
from kvviz.i18n import shown
from kvviz.memory import config_import, config_json, dtypes, layers, serving, units
from kvviz.memory.presets import LAYERED_PRESETS, PRESETS, get_preset, past_trained_positions

DEFAULT_CONTEXT = 4096
DEFAULT_DTYPE = next(f.default for f in fields(memory.KVConfig) if f.name == "dtype")  # what explicit numbers use
INPUTS = memory.INPUTS  # the memory page's settings: the same numbers are refused here and there


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="python -m kvviz memory",
        description="KV-cache bytes, exact (1 GiB = 2^30 B, 1 GB = 10^9 B).",
        refusal=memory.MemoryInputError,
    )
    src = p.add_argument_group("the model (one of: --preset, --config, or explicit numbers)")
    src.add_argument("--preset", help="a preset name (see --list-presets)")
    src.add_argument("--config", type=Path, help="a Hugging Face config.json")
    src.add_argument("--layers", type=within(INPUTS["n_layer"]))
    src.add_argument("--heads", type=within(INPUTS["n_head"]), help="query heads")
    src.add_argument("--kv-heads", type=within(INPUTS["n_kv_heads"]), help="K/V heads (default: = heads, i.e. MHA)")
    src.add_argument("--head-dim", type=within(INPUTS["head_dim"]))
    src.add_argument(
        "--hidden",
        type=whole(1, INPUTS["hidden_size"].hi),
        help="hidden size; head dim = hidden / heads when --head-dim is absent",
    )
    att = p.add_argument_group("attention kind")
    att.add_argument(
        "--mla-rank", type=within(INPUTS["mla_latent_rank"]), help="MLA latent rank (kv_lora_rank), e.g. 512"
    )
    att.add_argument(
        "--mla-rope-dim",
        type=within(INPUTS["mla_rope_dim"]),
        help="MLA decoupled RoPE key dim (qk_rope_head_dim), e.g. 64",
    )
    att.add_argument("--window", type=within(INPUTS["window"]), help="sliding window (tokens) of local layers")
    att.add_argument(
        "--local-per-global",
        type=within(INPUTS["local_per_global"]),
        help="hybrid: N local layers per global layer (e.g. 5)",
    )
    lin = p.add_argument_group(
        "a layer pattern by hand (explicit numbers only): linear-attention layers among attention "
        "layers, each keeping a Gated DeltaNet state"
    )
    lin.add_argument(
        "--pattern",
        help='a repeating layer pattern, e.g. "3 linear : 1 full" (words: ' + ", ".join(layers.PATTERN_WORDS) + ")",
    )
    lin.add_argument("--linear-heads", type=within(INPUTS["n_head"]), help="linear-attention heads (key = value heads)")
    lin.add_argument("--linear-head-dim", type=within(INPUTS["head_dim"]), help="their head dim (key = value)")
    lin.add_argument("--conv-kernel", type=whole(1, 64), default=4, help="their causal conv's kernel (default 4)")
    p.add_argument(
        "--context", type=within(INPUTS["context_len"]), help=f"tokens per sequence (default: {DEFAULT_CONTEXT})"
    )
    p.add_argument("--batch", type=within(INPUTS["batch"]), default=1, help="sequences (default 1)")
    p.add_argument(
        "--encoder-len",
        type=within(INPUTS["encoder_len"]),
        help="encoder-decoder --config (T5, BART): encoder tokens, for the cross-attention cache",
    )
    p.add_argument(
        "--dtype", help=f"cache dtype: {', '.join(dtypes.DTYPES)} (default: the model's, else {DEFAULT_DTYPE})"
    )
    p.add_argument(
        "--quant-group",
        type=within(INPUTS["quant_group_size"]),
        default=dtypes.DEFAULT_QUANT_GROUP,
        help="int8/int4 group size",
    )
    p.add_argument(
        "--quant-residual",
        type=within(INPUTS["quant_residual_tokens"]),
        default=0,
        help="int8/int4: transformers' QuantizedCache full-precision window, residual_length (default 0 = "
        f"off; transformers' own default: {dtypes.transformers_quantized_defaults().get('residual_length')})",
    )
    p.add_argument(
        "--memory-gib",
        type=within(INPUTS["gpu_gib"]),
        help="with a layered model or --pattern: how many "
        "sequences of --context tokens fit in this many GiB, as transformers holds them and as vLLM pages them",
    )
    p.add_argument("--list-presets", action="store_true", help="list presets with their sources and exit")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


def read_config_file(path: Path) -> str:
    """The file's text, read no further than MAX_CONFIG_CHARS (+1 to know it is longer): /dev/zero or a stray
    multi-gigabyte file is refused after 5 MB, not after filling the memory."""
    limit = config_json.MAX_CONFIG_CHARS
    try:  # a regular file only (a FIFO with no writer would wait forever), with a time bound
        data = read_regular_file(path, limit)
    except ReadRefused as exc:
        raise memory.MemoryInputError(str(exc)) from None
    if len(data) > limit:
        raise memory.MemoryInputError(f"{path} is longer than {limit:,} bytes; a config.json is a few thousand")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise memory.MemoryInputError(f"{path} is not UTF-8 text; give the model's config.json") from None


def config_from_args(args: argparse.Namespace) -> tuple[memory.KVConfig, list[str], memory.KVConfig | None]:
    """The KVConfig the arguments describe, notes about where it came from, and the cross-attention cache's
    layout (encoder-decoder --config only, else None)."""
    notes: list[str] = []
    cross = None
    explicit = any(v is not None for v in (args.layers, args.heads, args.kv_heads, args.head_dim, args.hidden))
    if sum([args.preset is not None, args.config is not None, explicit]) != 1:
        raise memory.MemoryInputError(
            "give exactly one model: --preset NAME, --config PATH, or --layers/--heads/--head-dim (see --help)"
        )
    if args.preset is not None and args.preset.strip().lower() in LAYERED_PRESETS:  # one uniform layout (GPT-OSS)
        layered = LAYERED_PRESETS[args.preset.strip().lower()]
        imported = layered.imported()
        cfg = imported.config
        notes += [
            f"{layered.title}: {layered.source} (read from: {layered.retrieved_from})",
            *map(shown, imported.notes),
        ]
    elif args.preset is not None:
        preset = get_preset(args.preset)
        cfg = preset.kv
        notes.append(f"{preset.name}: {preset.source} ({preset.paper})")
    elif args.config is not None:
        imported = config_import.parse_hf_config(read_config_file(args.config))
        cfg, cross = imported.config, imported.cross_attention
        notes.append("used from config.json: " + ", ".join(f"{k}={shown(v)}" for k, v in imported.used.items()))
        notes += [f"missing: {shown(m)}" for m in imported.missing] + [shown(n) for n in imported.notes]
    else:
        if args.layers is None or args.heads is None:
            raise memory.MemoryInputError(
                "explicit numbers need at least --layers and --heads (and --head-dim or --hidden)"
            )
        head_dim = args.head_dim
        if head_dim is None:
            if args.hidden is None:
                raise memory.MemoryInputError("give --head-dim, or --hidden to derive it as hidden / heads")
            head_dim = memory.head_dim_from_hidden(args.hidden, args.heads)
        elif args.hidden is not None and args.hidden != head_dim * args.heads:
            raise memory.MemoryInputError(
                f"--head-dim {head_dim} x --heads {args.heads} = {head_dim * args.heads}, not --hidden {args.hidden}; "
                "drop one of them (some models do use head_dim x heads != hidden: then omit --hidden)"
            )
        cfg = memory.KVConfig(args.layers, args.heads, args.heads if args.kv_heads is None else args.kv_heads, head_dim)
    if args.encoder_len is not None and cross is None:
        raise memory.MemoryInputError("--encoder-len needs an encoder-decoder --config (T5, BART)")
    changes = {}
    if args.dtype is not None:
        changes["dtype"] = args.dtype
    if args.mla_rank is not None or args.mla_rope_dim is not None:
        changes.update(mla_latent_rank=args.mla_rank or 0, mla_rope_dim=args.mla_rope_dim or 0)
    if args.window is not None:
        changes["window"] = args.window
    if args.local_per_global is not None:
        changes["local_per_global"] = args.local_per_global
    changes["quant_group_size"] = args.quant_group
    changes["quant_residual_tokens"] = args.quant_residual
    cfg = replace(cfg, **changes)
    return cfg, notes, None if cross is None else cfg.cross_attention_layout()


def render_table(
    b: memory.KVBudget | memory.EncoderDecoderBudget, notes: list[str], warnings: list[str] | None = None
) -> str:
    """The budget as aligned lines; `warnings` (e.g. a context past the preset's trained positions) go first
    among the warning lines."""
    s = b.self_attention if isinstance(b, memory.EncoderDecoderBudget) else b
    c = s.config
    lines = [
        f"model        {printable(c.name, keep_newlines=False)}  ({c.attention_kind}, {c.n_layer} layers, {c.n_head} query heads, "
        f"{c.n_kv_heads} KV heads, head_dim {c.head_dim}, {c.dtype})",
        f"per token    {units.format_bytes(s.bytes_per_token)}  (all layers)",
        f"per layer    {s.bytes_per_token_per_layer:,} B per token",
        f"context      {s.context_len:,} tokens x batch {s.batch}",
    ]
    if isinstance(b, memory.EncoderDecoderBudget):
        lines.append(
            f"self-attn    {units.format_bytes(s.total_bytes)}  (decoder: {s.context_len:,} tokens x batch {s.batch})"
        )
        if b.complete:
            lines.append(
                f"cross-attn   {units.format_bytes(b.cross_bytes)}  ({b.encoder_len:,} encoder tokens x "
                f"batch {s.batch}, {b.cross_bytes_per_encoder_token:,} B each)"
            )
            lines.append(f"total        {units.format_bytes(b.total_bytes)}  (self-attention + cross-attention)")
        else:
            lines.append(
                f"cross-attn   not counted: give --encoder-len ({b.cross_bytes_per_encoder_token:,} B per "
                f"encoder token x batch {s.batch})"
            )
            lines.append(f"total        {units.format_bytes(b.total_bytes)}  (decoder self-attention only)")
    else:
        lines.append(f"total        {units.format_bytes(b.total_bytes)}")
    lines += [f"note         {n}" for n in notes]
    lines += [f"warning      {w}" for w in [*(warnings or []), *s.warnings]]
    return "\n".join(lines)


def list_presets() -> str:
    rows = [f"{'name':<24} {'attention':<34} {'B/token':>10}  source"]
    for p in PRESETS.values():
        rows.append(f"{p.name:<24} {p.kv.attention_kind:<34} {p.kv.bytes_per_token:>10,}  {p.source}")
    for lp in LAYERED_PRESETS.values():
        rows.append(f"{lp.name:<24} {'layer by layer (its config.json)':<34} {'':>10}  {lp.source}")
    return "\n".join(rows)


def layers_from_args(args: argparse.Namespace, cfg: memory.KVConfig | None) -> tuple[layers.CacheLayers, list[str]]:
    """The layer list the arguments describe (a layered preset, a config of mixed layers, a hand-written pattern, or
    the uniform layout `cfg`), and its notes."""
    if args.preset is not None and args.preset.strip().lower() in LAYERED_PRESETS:
        preset = LAYERED_PRESETS[args.preset.strip().lower()]
        imported = preset.imported(args.dtype)
        return imported.layers, [
            f"{preset.title}: {preset.source} (read from: {preset.retrieved_from})",
            *map(shown, imported.missing),
            *map(shown, imported.notes),
        ]
    if args.pattern is not None:
        if cfg is None or args.preset is not None or args.config is not None:
            raise memory.MemoryInputError("--pattern goes with explicit numbers (--layers, --heads, --head-dim)")
        if args.linear_heads is None or args.linear_head_dim is None:
            raise memory.MemoryInputError("--pattern needs --linear-heads and --linear-head-dim: the state's shape")

        shape = SimpleNamespace(
            linear_num_key_heads=args.linear_heads,
            linear_num_value_heads=args.linear_heads,
            linear_key_head_dim=args.linear_head_dim,
            linear_value_head_dim=args.linear_head_dim,
            linear_conv_kernel_dim=args.conv_kernel,
        )
        model_dtype = cfg.dtype if not dtypes.DTYPES[cfg.dtype].quantized and cfg.dtype != "fp8" else "bf16"
        mixer, state = layers.STATE_FORMULAS["qwen3_next"](shape, model_dtype)
        stack = layers.from_pattern(cfg, layers.parse_pattern(args.pattern, cfg.n_layer), state, mixer)
        return stack, [
            f"pattern {args.pattern!r}: linear layers hold a Gated DeltaNet state (conv in {model_dtype}, "
            "recurrent in fp32, as transformers keeps them)"
        ]
    if any(v is not None for v in (args.linear_heads, args.linear_head_dim)):
        raise memory.MemoryInputError("--linear-heads and --linear-head-dim go with --pattern")
    return layers.from_kv_config(cfg), []


def render_layers(
    stack: layers.CacheLayers,
    context: int,
    batch: int,
    notes: list[str],
    warnings: list[str] | None = None,
    memory_gib: int | None = None,
) -> str:
    """A model of mixed layers: the two parts (K/V that grows, state that does not), then the layers, runs of
    identical layers on one line."""
    kinds = ", ".join(f"{kind} x {stack.count(kind)}" for kind in stack.kinds)
    total, peak = stack.bytes_at(context, batch), stack.peak_bytes_at(context, batch)
    lines = [
        f"model        {printable(stack.name, keep_newlines=False)}  ({stack.n_layer} layers: {kinds}; K/V {stack.dtype})",
        f"per token    {units.format_bytes(stack.bytes_per_token)}  (K/V of the layers that grow)",
        f"state        {units.format_bytes(stack.fixed_bytes)}  per sequence, fixed",
        f"context      {context:,} tokens x batch {batch}",
        f"K/V          {units.format_bytes(stack.growing_bytes_at(context, batch))}",
        f"state        {units.format_bytes(batch * stack.fixed_bytes if context else 0)}",
        f"total        {units.format_bytes(total)}  (what the cache stores between steps, as transformers)",
    ]
    if peak != total:
        lines.append(f"peak         {units.format_bytes(peak)}  (during a step: the newest row of each windowed layer)")
    until = stack.state_dominates_until()
    if until is not None:
        lines.append(f"crossover    the state outweighs the K/V until {until:,} tokens")
    every = stack.as_all_attention()
    if every is not None and not stack.uniform:
        every_total = every.bytes_at(context, batch)
        lines.append(
            f"as if all full attention  {units.format_bytes(every_total)}  (this model holds "
            f"{total / every_total:.1%} of it)"
            if every_total
            else ""
        )
    lines += fits_lines(stack, context, memory_gib)
    lines.append(f"{'layers':<12} {'kind':<8} {'type':<18} {'mixer':<28} {'B/token':>10} {'fixed B':>12} {'bytes':>16}")
    start = 0
    per_layer = stack.layer_bytes(context, batch)
    for i in range(1, stack.n_layer + 1):
        if i < stack.n_layer and (
            stack.layers[i].kind,
            stack.layers[i].parts,
            stack.layers[i].window,
            per_layer[i],
        ) == (stack.layers[start].kind, stack.layers[start].parts, stack.layers[start].window, per_layer[start]):
            continue
        x = stack.layers[start]
        span = f"{start}" if i - 1 == start else f"{start}-{i - 1}"
        lines.append(
            f"{span:<12} {x.kind:<8} {x.layer_type[:18]:<18} {x.mixer[:28]:<28} {x.bytes_per_token:>10,} "
            f"{x.fixed_bytes:>12,} {per_layer[start]:>16,}"
        )
        start = i
    lines += [f"note         {n}" for n in notes]
    lines += [f"warning      {w}" for w in warnings or []]
    return "\n".join(line for line in lines if line)


def fits_lines(stack: layers.CacheLayers, context: int, memory_gib: int | None) -> list[str]:
    if memory_gib is None:
        return []
    f = serving.fits(stack, memory_gib * units.GIB, context)
    return [
        f"fits         {f.transformers_sequences:,} sequences of {context:,} tokens in {memory_gib:,} GiB as "
        f"transformers holds them ({f.transformers_bytes_per_sequence:,} B each); vLLM's pages: "
        f"{f.vllm_sequences:,} ({f.vllm_bytes_per_sequence:,} B each, blocks of {f.block_tokens:,} tokens)"
    ]


def layers_json(stack: layers.CacheLayers, context: int, batch: int, notes: list[str], memory_gib: int | None) -> dict:
    found = stack.as_dict(context, batch)
    every = stack.as_all_attention()
    found["all_full_attention_bytes"] = None if every is None else every.bytes_at(context, batch)
    if memory_gib is not None:
        f = serving.fits(stack, memory_gib * units.GIB, context)
        found["fits"] = {
            "memory_bytes": f.memory_bytes,
            "tokens": context,
            "transformers_bytes_per_sequence": f.transformers_bytes_per_sequence,
            "transformers_sequences": f.transformers_sequences,
            "vllm_bytes_per_sequence": f.vllm_bytes_per_sequence,
            "vllm_sequences": f.vllm_sequences,
            "vllm_block_tokens": f.block_tokens,
        }
    found["notes"] = notes
    return found


def main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.list_presets:
            say(list_presets())
            return 0
        context = memory.check_int("context_len", DEFAULT_CONTEXT if args.context is None else args.context, lo=1)
        layered = layered_source(args)
        if layered is not None:  # a model of mixed layers: the layer list is the answer
            stack, notes = layered
            too_long = past_trained_positions(args.preset, context) if args.preset is not None else None
            if args.json:
                say(
                    json.dumps(
                        {
                            **layers_json(stack, context, args.batch, notes, args.memory_gib),
                            **({"warnings": [too_long]} if too_long else {}),
                        },
                        indent=2,
                    )
                )
            else:
                say(render_layers(stack, context, args.batch, notes, [too_long] if too_long else [], args.memory_gib))
            return 0
        cfg, notes, cross = config_from_args(args)
        stack, pattern_notes = layers_from_args(args, cfg)
        if args.memory_gib is not None and args.pattern is None:
            raise memory.MemoryInputError(
                "--memory-gib goes with a layered preset, a config of mixed layers or "
                "--pattern (the memory page's What fits tab covers the rest)"
            )
        if args.pattern is not None:
            if args.json:
                say(
                    json.dumps(
                        layers_json(stack, context, args.batch, [*notes, *pattern_notes], args.memory_gib), indent=2
                    )
                )
            else:
                say(render_layers(stack, context, args.batch, [*notes, *pattern_notes], memory_gib=args.memory_gib))
            return 0
        result: memory.KVBudget | memory.EncoderDecoderBudget = (
            memory.budget(cfg, context, args.batch)
            if cross is None
            else memory.encoder_decoder_budget(cfg, cross, context, args.batch, args.encoder_len)
        )
    except memory.MemoryInputError as exc:
        say(f"kvviz memory: {one_line(exc, 2000)}", file=sys.stderr)
        return 2
    too_long = past_trained_positions(args.preset, context) if args.preset is not None else None
    if args.json:
        found = result.as_dict()
        found["layers"] = stack.as_dict(context, args.batch)["layers"]
        found["stored_total_bytes"] = stack.bytes_at(context, args.batch) + (
            found["total_bytes"] - result.self_attention.total_bytes if cross is not None else 0
        )
        say(
            json.dumps(
                {**found, "notes": notes, **({"warnings": [too_long, *found.get("warnings", [])]} if too_long else {})},
                indent=2,
            )
        )
    else:
        say(render_table(result, notes, [too_long] if too_long else []))
    return 0


def layered_source(args: argparse.Namespace) -> tuple[layers.CacheLayers, list[str]] | None:
    """A layered preset, or a --config whose layers are not one uniform attention layout: (its layers, notes)."""
    if (
        args.preset is not None
        and args.preset.strip().lower() in LAYERED_PRESETS
        and LAYERED_PRESETS[args.preset.strip().lower()].mixed
    ):
        if any(
            v is not None
            for v in (args.layers, args.heads, args.kv_heads, args.head_dim, args.hidden, args.config, args.pattern)
        ):
            raise memory.MemoryInputError("give exactly one model: --preset NAME, --config PATH, or explicit numbers")
        return layers_from_args(args, None)
    if args.config is None or args.pattern is not None:
        return None
    imported = config_import.parse_hf_config(read_config_file(args.config), dtype=args.dtype)
    if imported.layers is None or config_import.plain_attention(imported.layers):
        return None
    return imported.layers, [
        "used from config.json: " + ", ".join(f"{k}={shown(v)}" for k, v in imported.used.items()),
        *[f"missing: {shown(m)}" for m in imported.missing],
        *map(shown, imported.notes),
    ]
