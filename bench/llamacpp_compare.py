"""llama.cpp fp32 beside kvviz's engines on the same GPT-2 124M shape (benchmark only: never an app dependency).

    python bench/llamacpp_compare.py --llama-cpp /path/to/llama.cpp --threads 2 --rounds 5

What it does, in interleaved rounds so both see the same machine:
  1. writes kvviz's `random:gpt2` model (seed 0, the exact weights `python -m kvviz bench --model random:gpt2` times)
     as safetensors, and converts it to GGUF fp32 with llama.cpp's own convert_hf_to_gguf.py (the bundled
     tokenizer stands in for GPT-2's: llama-bench feeds token ids, no text, so the vocabulary only has to load;
     its BPE pre-tokenizer is declared "gpt-2", which it is);
  2. per round: `llama-bench -p 0 -n N -d P -t T -r 1` (tokens/s decoding N tokens after P in the cache; its
     cache is f16, llama-bench offers no f32 one: at P + N = 144 tokens that is 5.3 MB beside 499 MB of weights) and
     `python -m kvviz bench --model random:gpt2 --repeats 1` (every kvviz mode and model.generate);
     and `bench/gemv_ceiling.py --rounds 5` (the tokens/s bound of torch's fastest fp32 kernel: one decode step's
     49 matrices alone, nothing around them), so each round compares llama.cpp's whole step with torch's matrices;
  3. prints the median decode tokens/s of each engine and its ratio to generate(use_cache=True).

llama.cpp is built from the sources inside the llama-cpp-python sdist (pip download llama-cpp-python --no-binary
:all:), e.g. `cmake -B build -DGGML_NATIVE=ON -DLLAMA_CURL=OFF && cmake --build build --target llama-bench -j2`
(about 20 minutes on 2 cores). Results go to --json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_ROUNDS = 9


def write_model(folder: Path) -> None:
    sys.path.insert(0, str(REPO))
    from kvviz.model.loaders import load_model

    loaded = load_model("random:gpt2", attn_implementation="sdpa")
    loaded.model.save_pretrained(folder, safe_serialization=True)
    loaded.tokenizer.save_pretrained(folder)
    config_path = folder / "config.json"  # llama.cpp's converter reads GPT-2's old n_ctx key
    config = json.loads(config_path.read_text())
    config.setdefault("n_ctx", config["n_positions"])
    config_path.write_text(json.dumps(config, indent=2))


def convert(llama_cpp: Path, model_dir: Path, gguf: Path) -> None:
    """llama.cpp's converter, with the pre-tokenizer check answered ("gpt-2": byte-level, GPT-2's regex)."""
    code = (
        "import sys; sys.path[:0] = [{src!r}, {gguf_py!r}]\n"
        "import convert_hf_to_gguf as c\n"
        "from conversion import base\n"
        "for cls in vars(base).values():\n"
        "    if isinstance(cls, type) and hasattr(cls, 'get_vocab_base_pre'):\n"
        "        cls.get_vocab_base_pre = lambda self, tokenizer: 'gpt-2'\n"
        "sys.argv = ['convert', {model!r}, '--outtype', 'f32', '--outfile', {out!r}]\n"
        "c.main()\n"
    ).format(src=str(llama_cpp), gguf_py=str(llama_cpp / "gguf-py"), model=str(model_dir), out=str(gguf))
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)


def llama_bench_round(binary: Path, gguf: Path, prompt_len: int, new_tokens: int, threads: int) -> float:
    """Decode tokens/s of one llama-bench tg run."""
    out = subprocess.run(
        [
            str(binary),
            "-m",
            str(gguf),
            "-p",
            "0",
            "-n",
            str(new_tokens),
            "-d",
            str(prompt_len),
            "-t",
            str(threads),
            "-r",
            "1",
            "-o",
            "json",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows = json.loads(out)
    return float(next(r["avg_ts"] for r in rows if r["n_gen"] == new_tokens))


def torch_ceiling_round(threads: int) -> dict[str, float]:
    """{kernel: tokens/s bound} from bench/gemv_ceiling.py (5 interleaved rounds, best of each)."""
    with tempfile.TemporaryDirectory(prefix="kvviz-ceiling-") as tmp:
        out = Path(tmp) / "ceiling.json"
        subprocess.run(
            [
                sys.executable,
                str(REPO / "bench" / "gemv_ceiling.py"),
                "--threads",
                str(threads),
                "--rounds",
                "5",
                "--json",
                str(out),
            ],
            check=True,
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        data = json.loads(out.read_text())
    return {name: k["tokens_per_s_bound"] for name, k in data["kernels"].items()}


def kvviz_round(prompt_len: int, new_tokens: int, threads: int) -> dict[str, float]:
    """Median decode tokens/s per kvviz mode (one timed round)."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "kvviz",
            "bench",
            "--model",
            "random:gpt2",
            "--prompt-len",
            str(prompt_len),
            "--new-tokens",
            str(new_tokens),
            "--repeats",
            "1",
            "--threads",
            str(threads),
            "--no-generate-uncached",
            "--json",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    ).stdout
    data = json.loads(out)
    return {mode: float(m["median_decode_tokens_per_s"]) for mode, m in data["modes"].items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llama-cpp", type=Path, required=True, help="llama.cpp source folder with build/bin")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--prompt-len", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--json", type=Path, help="write every round's figures here")
    args = parser.parse_args(argv)
    if not 1 <= args.rounds <= MAX_ROUNDS:
        parser.error(f"--rounds must be 1..{MAX_ROUNDS}")
    binary = args.llama_cpp / "build" / "bin" / "llama-bench"
    if not binary.is_file():
        parser.error(f"no llama-bench at {binary}: build it first (see this script's docstring)")
    with tempfile.TemporaryDirectory(prefix="kvviz-llamacpp-") as tmp:
        model_dir, gguf = Path(tmp) / "gpt2", Path(tmp) / "gpt2-f32.gguf"
        write_model(model_dir)
        convert(args.llama_cpp, model_dir, gguf)
        load_before = os.getloadavg()[0]
        llama, kvviz, ceiling = [], [], []
        for r in range(args.rounds):
            llama.append(llama_bench_round(binary, gguf, args.prompt_len, args.new_tokens, args.threads))
            ceiling.append(torch_ceiling_round(args.threads))
            kvviz.append(kvviz_round(args.prompt_len, args.new_tokens, args.threads))
            best = max(ceiling[-1], key=ceiling[-1].get)
            print(
                f"round {r + 1}: llama.cpp {llama[-1]:.1f} tok/s; torch's fastest fp32 kernel ({best}), matrices "
                f"alone: at most {ceiling[-1][best]:.1f}; kvviz "
                + ", ".join(f"{k} {v:.1f}" for k, v in kvviz[-1].items()),
                file=sys.stderr,
                flush=True,
            )
        load_after = os.getloadavg()[0]
    medians = {"llama.cpp fp32": statistics.median(llama)}
    for mode in kvviz[0]:
        medians[mode] = statistics.median(k[mode] for k in kvviz)
    bounds = [max(c.values()) for c in ceiling]
    medians["torch fp32 matrices alone (bound)"] = statistics.median(bounds)
    generate = medians.get("generate_cache")
    print(
        f"GPT-2 124M shape, random weights, fp32, P={args.prompt_len} N={args.new_tokens}, {args.threads} threads, "
        f"{args.rounds} interleaved rounds; load average {load_before:.2f} before, {load_after:.2f} after"
    )
    print(f"{'engine':<34} {'decode tok/s':>12} {'vs generate':>12}")
    for name, tps in sorted(medians.items(), key=lambda kv: -kv[1]):
        ratio = f"{tps / generate:.2f}x" if generate else "-"
        print(f"{name:<34} {tps:12.1f} {ratio:>12}")
    beaten = sum(llama_tps > bound_tps for llama_tps, bound_tps in zip(llama, bounds, strict=True))
    print(
        f"llama.cpp's whole decode step beat torch's fastest fp32 kernel on the matrices alone in {beaten} of "
        f"{args.rounds} rounds"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "llama_cpp": llama,
                    "kvviz": kvviz,
                    "torch_kernel_bounds": ceiling,
                    "medians": medians,
                    "threads": args.threads,
                    "load_before": load_before,
                    "load_after": load_after,
                },
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
