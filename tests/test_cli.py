"""`python -m kvviz memory` and `python -m kvviz ops`: JSON contracts, golden values, and one-line errors.

Most tests call the dispatcher in-process (fast); one runs the real `python -m kvviz` subprocess end to end.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kvviz import ops
from kvviz.__main__ import main as kvviz_main
from kvviz.memory.presets import PRESETS
from support.pages import REPO


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = kvviz_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_memory_json_golden_values(capsys):
    code, out, _ = run(capsys, "memory", "--preset", "llama-3-8b", "--context", "4096", "--json")
    data = json.loads(out)
    assert code == 0
    assert data["bytes_per_token"] == 131_072 and isinstance(data["bytes_per_token"], int)
    assert data["total_bytes"] == 131_072 * 4096 and isinstance(data["total_bytes"], int)
    code, out, _ = run(
        capsys,
        "memory",
        "--layers",
        "12",
        "--heads",
        "12",
        "--head-dim",
        "64",
        "--dtype",
        "fp32",
        "--context",
        "1024",
        "--batch",
        "3",
        "--json",
    )
    data = json.loads(out)
    assert data["bytes_per_token"] == 73_728 and data["total_bytes"] == 73_728 * 1024 * 3


def test_memory_options_change_the_answer(capsys):
    base = json.loads(run(capsys, "memory", "--preset", "llama-3-8b", "--json")[1])["total_bytes"]
    int4 = json.loads(run(capsys, "memory", "--preset", "llama-3-8b", "--dtype", "int4", "--json")[1])["total_bytes"]
    window = json.loads(run(capsys, "memory", "--preset", "llama-3-8b", "--window", "1024", "--json")[1])["total_bytes"]
    mla = json.loads(
        run(capsys, "memory", "--preset", "llama-3-8b", "--mla-rank", "512", "--mla-rope-dim", "64", "--json")[1]
    )["bytes_per_token"]
    assert int4 == 4096 * 32 * 2 * 8 * (64 + 2 * 4)  # 128 nibbles = 64 B + two groups of 4 B, per vector
    assert window == base // 4 and mla == 32 * 576 * 2
    hidden = json.loads(run(capsys, "memory", "--layers", "2", "--heads", "4", "--hidden", "256", "--json")[1])
    assert hidden["head_dim"] == 64


def test_memory_config_file_and_list(capsys, tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(
        json.dumps(
            {
                "num_hidden_layers": 32,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "hidden_size": 4096,
                "torch_dtype": "bfloat16",
            }
        )
    )
    code, out, _ = run(capsys, "memory", "--config", str(cfg), "--json")
    data = json.loads(out)
    assert code == 0 and data["bytes_per_token"] == 131_072
    assert any("num_key_value_heads=8" in n for n in data["notes"]) and any("missing" in n for n in data["notes"])
    code, out, _ = run(capsys, "memory", "--list-presets")
    assert code == 0 and all(name in out for name in PRESETS) and "huggingface.co" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--preset", "llama-9"], "unknown preset"),
        (["--layers", "0", "--heads", "4", "--head-dim", "8"], "--layers: the value must be from 1 to 10,000 (got 0)"),
        (["--layers", "-2", "--heads", "4", "--head-dim", "8"], "--layers"),
        (["--layers", "nan", "--heads", "4", "--head-dim", "8"], "must be a whole number"),
        (["--layers", "2.5", "--heads", "4", "--head-dim", "8"], "must be a whole number"),
        (["--layers", "99999999999", "--heads", "4", "--head-dim", "8"], "from 1 to 10,000"),
        (["--layers", "2", "--heads", "12", "--kv-heads", "5", "--head-dim", "8"], "must divide"),
        (["--layers", "2", "--heads", "12", "--head-dim", "64", "--hidden", "700"], "not --hidden"),
        (["--layers", "2", "--heads", "12", "--hidden", "700"], "not a multiple"),
        (["--preset", "gpt2", "--context", "0"], "--context: the value must be from 1"),
        (["--preset", "gpt2", "--context", str(2**60)], "--context"),
        (["--preset", "gpt2", "--dtype", "fp12"], "unknown cache dtype"),
        (["--preset", "gpt2", "--layers", "3"], "exactly one model"),
        ([], "exactly one model"),
        (["--config", "/nonexistent/config.json"], "cannot read"),
    ],
)
def test_memory_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run(capsys, "memory", *argv)
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "content, message", [("{oops", "not valid JSON"), ("[]", "JSON object"), ('{"eggs": 2}', "does not look like")]
)
def test_memory_bad_config_files(capsys, tmp_path, content, message):
    bad = tmp_path / "config.json"
    bad.write_text(content)
    code, _, err = run(capsys, "memory", "--config", str(bad))
    assert code == 2 and message in err


def test_memory_window_larger_than_context_warns(capsys):
    data = json.loads(run(capsys, "memory", "--preset", "mistral-7b", "--context", "100", "--json")[1])
    assert data["warnings"] and "window" in data["warnings"][0]


def test_ops_json_matches_the_library(capsys):
    code, out, _ = run(capsys, "ops", "--preset", "gpt2", "--prompt-len", "16", "--new-tokens", "100", "--json")
    data = json.loads(out)
    cached, uncached = ops.generation_totals(PRESETS["gpt2"].shape, 16, 100, lm_head_all_positions=False)
    assert code == 0 and data["cached"] == cached.as_dict() and data["uncached"] == uncached.as_dict()
    for comp in ops.COMPONENTS:
        assert data["cached"][f"{comp}_flops"] == 2 * data["cached"][f"{comp}_ops"]
    assert data["ratio_uncached_over_cached"]["lm_head_ops"] == 1.0
    all_pos = json.loads(run(capsys, "ops", "--preset", "gpt2", "--lm-head", "all", "--json")[1])
    assert all_pos["uncached"]["lm_head_ops"] > all_pos["cached"]["lm_head_ops"]


def test_ops_explicit_shape_and_table(capsys):
    code, out, _ = run(
        capsys,
        "ops",
        "--layers",
        "4",
        "--heads",
        "4",
        "--head-dim",
        "32",
        "--hidden",
        "128",
        "--vocab",
        "2048",
        "--new-tokens",
        "10",
    )
    assert code == 0 and "Attention scores QK^T" in out and "Total" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--preset", "deepseek-v3"], "no op-count shape"),
        (["--preset", "nope"], "unknown preset"),
        (["--preset", "gpt2", "--new-tokens", "0"], "--new-tokens: the value must be from 1"),
        (["--preset", "gpt2", "--prompt-len", "-5"], "--prompt-len: the value must be from 1"),
        (["--layers", "4"], "give --preset"),
        (
            ["--layers", "4", "--heads", "6", "--kv-heads", "4", "--head-dim", "8", "--hidden", "48", "--vocab", "9"],
            "divide",
        ),
    ],
)
def test_ops_bad_input(capsys, argv, message):
    code, out, err = run(capsys, "ops", *argv)
    assert code == 2 and out == "" and message in err and "Traceback" not in err


@pytest.mark.slow
def test_python_dash_m_end_to_end():
    proc = subprocess.run(
        [sys.executable, "-m", "kvviz", "memory", "--preset", "gpt2", "--context", "1", "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["total_bytes"] == 73_728
    bad = subprocess.run(
        [sys.executable, "-m", "kvviz", "ops", "--preset", "nope"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
