"""Server time of one widget change on the "Count the work" and "Memory budget" pages (AppTest).

    python bench/bench_pages_ops_memory.py [--repeats 5]
    python bench/bench_pages_ops_memory.py --cold [--repo OTHER_CHECKOUT] [--repeats 3]

--cold: a fresh interpreter per run, timing the import of Streamlit's AppTest and then the page's first render
(its own imports included), and whether torch / transformers got imported; --repo times another checkout
(e.g. `git archive <commit> | tar -x -C DIR`) for a before/after comparison.

AppTest re-runs the whole page script for every change, so these times are an upper bound: in the browser
the pages' bodies are st.fragment's, and a widget inside a fragment re-runs the fragment alone (no app.py,
no sidebar). The first run (model load) is reported separately and excluded. Target: <= 200 ms per change.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from streamlit.testing.v1 import AppTest  # noqa: E402

CHANGES = {
    "attention_ops": [
        ("number_input", "ops_new", [300, 1000, 50]),
        ("number_input", "ops_prompt", [64, 8]),
        ("selectbox", "ops_model", ["llama-3-8b", "gpt2", "loaded model (sidebar)"]),
        ("toggle", "ops_flops", [True, False]),
        ("toggle", "ops_log", [True, False]),
    ],
    "memory_budget": [
        ("number_input", "mem_context", [8192, 131072, 4096]),
        ("number_input", "mem_batch", [8, 1]),
        ("selectbox", "mem_dtype", ["int4", "fp8", "bf16"]),
        ("selectbox", "mem_preset", ["gemma-3-4b", "deepseek-v3", "llama-3-8b"]),
        ("multiselect", "mem_compare", [["llama-2-7b"], ["llama-2-7b", "mistral-7b", "qwen2.5-7b"]]),
    ],
}


def bench_page(name: str, repeats: int) -> tuple[float, list[tuple[float, str]]]:
    at = AppTest.from_file(str(REPO / "pages" / f"{name}.py"), default_timeout=300)
    began = time.perf_counter()
    at.run()
    first_ms = (time.perf_counter() - began) * 1000
    times = []
    for _ in range(repeats):
        for kind, key, values in CHANGES[name]:
            for value in values:
                widget = getattr(at, kind)(key=key)
                began = time.perf_counter()
                widget.set_value(value).run()
                times.append(((time.perf_counter() - began) * 1000, f"{key}={value}"))
                if at.exception:
                    raise SystemExit(f"{name}: exception after {key}={value}: {at.exception[0].value}")
    return first_ms, times


COLD_RUN = """import json, sys, time
began = time.perf_counter()
sys.path.insert(0, {repo!r})
from streamlit.testing.v1 import AppTest
imported = time.perf_counter()
at = AppTest.from_file({page!r}, default_timeout=300)
at.run()
assert not at.exception, at.exception
print(json.dumps({{"import_s": imported - began, "render_s": time.perf_counter() - imported,
                  "torch": "torch" in sys.modules, "transformers": "transformers" in sys.modules}}))
"""


def bench_cold(repo: Path, repeats: int) -> None:
    for name in CHANGES:
        runs = []
        for _ in range(repeats):
            code = COLD_RUN.format(repo=str(repo), page=str(repo / "pages" / f"{name}.py"))
            out = subprocess.run(
                [sys.executable, "-c", code],
                cwd=repo,
                capture_output=True,
                text=True,
                timeout=600,
                env={**os.environ, "HF_HUB_OFFLINE": "1"},
            )
            if out.returncode:
                raise SystemExit(f"{name}: {out.stderr[-1500:]}")
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        imp = statistics.median(r["import_s"] for r in runs)
        first = statistics.median(r["render_s"] for r in runs)
        print(
            f"{name:<15} {repo}: AppTest import {imp:5.2f} s, first render {first:5.2f} s (median of {repeats}); "
            f"torch imported: {runs[0]['torch']}, transformers: {runs[0]['transformers']}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cold", action="store_true", help="fresh interpreters: import + first render")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout to time with --cold")
    args = parser.parse_args()
    if args.cold:
        bench_cold(args.repo.resolve(), args.repeats)
        return 0
    for name in CHANGES:
        first_ms, times = bench_page(name, args.repeats)
        times.sort()
        ms = [t for t, _ in times]
        p90 = ms[int(0.9 * (len(ms) - 1))]
        print(
            f"{name:<15} first run {first_ms:7.0f} ms | per widget change over {len(ms)} changes: "
            f"median {statistics.median(ms):6.1f} ms, p90 {p90:6.1f} ms, max {ms[-1]:6.1f} ms ({times[-1][1]})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
