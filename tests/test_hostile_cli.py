"""The CLI never prints a traceback: every command (`python -m kvviz <command>`) with hostile values answers in one
message and a non-zero exit code, and refuses nonsense (a NaN weight decay, a batch of 0) before any work starts.

Most cases run in-process through kvviz.__main__.main (argparse and validators stop them before a model loads);
a few run as real subprocesses, as a user types them. The inputs tried are counted in INPUTS_TRIED."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvviz.__main__ import COMMANDS, main
from support.pages import REPO

# Any readable text gets train past its --text check to the checks these tests are about (they refuse before
# training): the held-out Shakespeare the app ships, so the tests need no ../shared beside the clone.
CORPUS = REPO / "kvviz" / "assets" / "held_out_shakespeare.txt"
CLI_EXAMPLES = 60  # per property
HOSTILE_NUMBER = st.one_of(
    st.sampled_from(["0", "-1", "nan", "inf", "-inf", "1e309", "1.5", "", "abc", "9" * 5000, "0x10", "１"]),
    st.integers(-(10**6), 0).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.from_regex(r"[0-9]{20,5000}", fullmatch=True),
)


def _run(argv: list[str], capsys) -> tuple[int, str]:
    rc = main(argv)
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text, text[-2000:]
    return rc, text


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    (d / "empty.txt").write_text("")
    (d / "short.txt").write_text("ROMEO: hello there!")  # 19 characters
    (d / "binary.txt").write_bytes(bytes(range(256)) * 100)
    (d / "a_file").write_text("not a folder")
    return d


@pytest.mark.model
@settings(max_examples=CLI_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    flag=st.sampled_from(
        [
            "--steps",
            "--threads",
            "--batch-size",
            "--max-span",
            "--weight-decay",
            "--random-span-share",
            "--repeat-share",
            "--copy-warmup-steps",
            "--seed",
        ]
    ),
    value=HOSTILE_NUMBER,
)
def test_train_refuses_hostile_numbers_before_training(flag, value, capsys, tmp_path_factory):
    short = tmp_path_factory.getbasetemp() / "short_corpus.txt"
    short.write_text("ROMEO: hello there!")  # a value that passes still stops at the corpus check: nothing trains
    rc, text = _run(
        ["train", "--text", str(short), "--out", str(tmp_path_factory.getbasetemp() / "out"), f"{flag}={value}"], capsys
    )
    assert rc == 2 and text.strip()


@pytest.mark.model
@pytest.mark.parametrize(
    "args, words",
    [
        (["--steps", "0"], "from 1 to"),
        (["--steps", "-1"], "from 1 to"),
        (["--threads", "0"], "from 1 to 256"),
        (["--threads", "-1"], "from 1 to 256"),
        (["--weight-decay", "nan"], "number from 0 to 10"),
        (["--batch-size", "0"], "from 1 to"),
        (["--max-span", "0"], "from 8 to"),
        (["--random-span-share", "-1"], "from 0 to 1"),
    ],
)
def test_train_nonsense_is_refused_with_its_range(args, words, capsys):
    rc, text = _run(["train", "--text", str(CORPUS), *args], capsys)
    assert rc == 2 and words in text


@pytest.mark.model
@pytest.mark.parametrize(
    "name, words",
    [("empty.txt", "holds 0 characters"), ("short.txt", "holds 19 characters"), ("binary.txt", "is not UTF-8 text")],
)
def test_train_refuses_a_corpus_it_cannot_learn_from(files, name, words, capsys):
    rc, text = _run(["train", "--text", str(files / name), "--out", str(files / "out")], capsys)
    assert rc == 2 and words in text and len(text.strip().splitlines()) == 1


@pytest.mark.model
@pytest.mark.parametrize("out, words", [("missing/parent/model", "does not exist"), ("a_file", "existing file")])
def test_train_refuses_an_output_it_cannot_write_before_training(files, out, words, capsys):
    rc, text = _run(["train", "--text", str(CORPUS), "--out", str(files / out)], capsys)
    assert rc == 2 and words in text and not (files / "missing").exists()


@pytest.mark.model
@settings(max_examples=CLI_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    flag=st.sampled_from(["--prompt-len", "--new-tokens", "--repeats", "--warmup", "--threads"]), value=HOSTILE_NUMBER
)
def test_bench_refuses_hostile_numbers_in_one_message(flag, value, capsys):
    rc, text = _run(["bench", "--model", "/nonexistent/model", f"{flag}={value}"], capsys)
    assert rc != 0 and text.strip()


@settings(max_examples=CLI_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(flag=st.sampled_from(["--prompt-len", "--new-tokens", "--layers", "--heads"]), value=HOSTILE_NUMBER)
def test_ops_refuses_hostile_numbers_in_one_message(flag, value, capsys):
    rc, text = _run(["ops", f"{flag}={value}"], capsys)
    assert text.strip()


@pytest.mark.model
def test_bench_names_a_missing_folder_without_suggesting_hf_download(capsys):
    rc, text = _run(["bench", "--model", "/nonexistent"], capsys)
    assert rc == 1 and "no model folder at `/nonexistent`" in text and "hf download" not in text


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_answers_junk_without_a_traceback(command, capsys):  # refused before torch: a pure test
    _run([command, "--no-such-flag", "\x00", "9" * 5000], capsys)


def test_an_unknown_command_is_named(capsys):
    rc, text = _run(["bogus"], capsys)
    assert rc == 2 and "unknown command 'bogus'" in text


def _subprocess(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "kvviz", *args], capture_output=True, text=True, timeout=600, cwd=REPO, env=env
    )


@pytest.mark.slow
def test_bench_with_one_new_token_reports_and_states_its_estimate_first():
    done = _subprocess(
        "bench", "--new-tokens", "1", "--repeats", "1", "--warmup", "0", "--no-generate", "--no-int8", "--no-static"
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.lstrip().startswith("kvviz bench: this run should take about")
    assert "no decode pass was timed" in done.stdout


@pytest.mark.slow
def test_train_steps_zero_as_a_user_types_it():
    done = _subprocess("train", "--text", str(CORPUS), "--steps", "0")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "--steps" in done.stderr


# ----- the real CLI in a subprocess, as a user types it ----------------------------------------------------------
ESCAPES = "\u001b]0;PWNED\u0007\u001b[2J"
PADDED = "0" * 5000 + "1"


def _cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "kvviz", *args], capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env
    )


@pytest.mark.slow
def test_memory_shows_a_configs_terminal_escapes_as_text(tmp_path):
    """A config.json whose fields hold ESC ] 0 ; ... BEL set the terminal's title and ESC [2J cleared the screen."""
    path = tmp_path / "config.json"
    path.write_text(
        json.dumps(
            {
                "model_type": "llama",
                "_name_or_path": ESCAPES,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "hidden_size": 64,
                "architectures": [ESCAPES],
            }
        )
    )
    shown = ""
    for extra in ([], ["--dtype", ESCAPES], ["--preset", ESCAPES], ["--json"]):
        done = _cli("memory", "--config", str(path), *extra) if "--preset" not in extra else _cli("memory", *extra)
        text = done.stdout + done.stderr
        assert "\x1b" not in text and "\x07" not in text, (extra, text[-500:])
        assert done.returncode in (0, 2) and "Traceback" not in text
        if not extra:  # the plain `memory --config`, read below (one command fewer: each imports torch, ~4 s)
            shown = done.stdout
    assert "\\x1b]0;PWNED\\x07\\x1b[2J" in shown  # visible, so the reader sees what the file holds


@pytest.mark.slow
def test_an_undecodable_argument_is_shown_not_crashed_on():
    done = subprocess.run(
        [sys.executable, "-m", "kvviz", "memory", "--preset", b"\xff\x1b[2J".decode("utf-8", "surrogateescape")],
        capture_output=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 2 and b"\x1b" not in done.stderr and b"Traceback" not in done.stderr, done.stderr[-500:]


@pytest.mark.slow
@pytest.mark.parametrize(
    "csv, words",
    [
        ("folder", "is a folder"),
        ("missing/passes.csv", "does not exist"),
        ("/sys/kernel/kvviz.csv", "cannot write there"),
        ("fifo", "cannot write there"),
    ],
)  # a FIFO nobody reads: refused, not waited on
def test_bench_refuses_an_unwritable_csv_before_the_run(tmp_path, csv, words):
    """bench --csv <folder> ran the whole benchmark, then failed and printed nothing. The model named here does not
    exist: the refusal comes before any model load."""
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo")
    target = csv if csv.startswith("/") else str(tmp_path / csv)
    done = _cli("bench", "--model", "/nonexistent/model", "--csv", target, timeout=120)
    assert done.returncode == 2 and words in done.stderr and "no model folder" not in done.stderr, done.stderr[-500:]
    assert not (tmp_path / "missing").exists()


@pytest.mark.slow
def test_bench_csv_on_a_full_disk_still_prints_the_report():
    """/dev/full takes the open and refuses the write: the report is printed first, the CSV failure after it."""
    done = _cli(
        "bench",
        "--csv",
        "/dev/full",
        "--new-tokens",
        "1",
        "--repeats",
        "1",
        "--warmup",
        "0",
        "--no-generate",
        "--no-int8",
        "--no-static",
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "speed-up estimator" in done.stdout and "theoretical op ratio" in done.stdout
    assert "the CSV was not written" in done.stderr and "/dev/full" in done.stderr


@pytest.mark.slow
def test_train_refuses_an_unwritable_out_before_training(tmp_path):
    """train --out /sys/kernel trained to the end, then "PermissionError ... This is a kvviz bug"."""
    done = _cli("train", "--text", str(CORPUS), "--out", "/sys/kernel/kvviz-model", "--steps", "1", timeout=300)
    assert done.returncode == 2 and "cannot write there" in done.stderr and "kvviz bug" not in done.stderr, done.stderr[
        -500:
    ]
    assert "step" not in done.stdout  # nothing trained
    probe_dir = tmp_path / "out"
    assert cli_output_problem(probe_dir) is None and not probe_dir.exists()  # a probe leaves nothing behind


def cli_output_problem(path: Path) -> str | None:
    from kvviz.cli import output_problem

    return output_problem(path, folder=True)


@pytest.mark.slow
def test_memory_config_from_a_fifo_is_refused_not_waited_on(tmp_path):
    """memory --config <a FIFO with no writer> blocked forever in open()."""
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    done = _cli("memory", "--config", str(fifo), timeout=60)
    assert done.returncode == 2 and "not a regular file" in done.stderr and done.stderr.count("\n") == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv, flag",
    [
        (["memory", "--layers", "2", "--heads", "32", "--head-dim", "8", "--kv-heads", "0"], "--kv-heads"),
        (
            ["ops", "--layers", "2", "--heads", "2", "--head-dim", "4", "--hidden", "8", "--vocab", "9", "--d-ff", "0"],
            "--d-ff",
        ),
        (["memory", "--layers", "٣", "--heads", "4", "--head-dim", "8"], "--layers"),
        (["memory", "--preset", "gpt2", "--context", "３２"], "--context"),
        (["ops", "--preset", "gpt2", "--new-tokens", "1_6"], "--new-tokens"),
        (["bench", "--model", "/nonexistent/model", "--repeats", "٣"], "--repeats"),
        (["train", "--text", str(CORPUS), "--steps", "1_6"], "--steps"),
    ],
)
def test_the_cli_refuses_what_the_app_refuses(argv, flag):
    """memory --kv-heads 0 silently meant 32 K/V heads, ops --d-ff 0 became 4 x hidden, and int() took '٣', '３２',
    '1_6': the CLI reads numbers with the app's parser and the page's limits."""
    done = _cli(*argv, timeout=120)
    assert done.returncode == 2 and flag in done.stderr and "must be" in done.stderr, done.stderr[-500:]
    assert "Traceback" not in done.stderr and not done.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    "command, argv",
    [
        ("memory", ["--layers", "9" * 5000]),
        ("ops", ["--layers", "9" * 5000]),
        ("bench", ["--repeats", "9" * 5000]),
        ("train", ["--text", str(CORPUS), "--steps", "9" * 5000]),
        ("claims", ["--gpu", "9" * 5000]),
        ("memory", ["--bogus", "9" * 5000]),
        ("bench", ["9" * 5000]),
        ("train", ["--text", str(CORPUS), "9" * 5000]),
        ("train", ["--text", str(CORPUS), "--steps", PADDED]),
        ("ops", ["--prompt-len", PADDED]),
    ],
)
def test_a_5000_digit_argument_is_cut_and_the_message_kept(command, argv):
    """A 5,000-digit argument is cut, never echoed whole after the usage text, and the message is kvviz's own, not
    argparse's "invalid parse value"."""
    done = _cli(command, *argv, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "9" * 300 not in done.stderr and "0" * 300 not in done.stderr
    assert max(len(line) for line in done.stderr.splitlines()) <= 260, done.stderr[-600:]
    assert "invalid parse value" not in done.stderr and "invalid int value" not in done.stderr


@pytest.mark.slow
def test_memory_help_names_the_dtype_it_uses():
    done = _cli("memory", "--help", timeout=60)
    used = _cli("memory", "--layers", "2", "--heads", "2", "--head-dim", "4", timeout=60).stdout.splitlines()[0]
    assert used.rstrip().endswith("fp16)") and "else fp16" in " ".join(done.stdout.split())


INPUTS_TRIED = 4 * CLI_EXAMPLES + 8 + 3 + 2 + 1 + len(COMMANDS) + 1 + 2 + 4 + 1 + 3 + 1 + 1 + 1 + 7 + 10 + 1
