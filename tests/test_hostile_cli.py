"""The CLI never prints a traceback: every command (`python -m kvviz <command>`) with hostile values answers in one
message and a non-zero exit code, and refuses nonsense (a NaN weight decay, a batch of 0) before any work starts.

Most cases run in-process through kvviz.__main__.main (argparse and validators stop them before a model loads);
a few run as real subprocesses, as a user types them. The inputs tried are counted in INPUTS_TRIED."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvviz.__main__ import COMMANDS, main

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path("/work/shared/data/tinyshakespeare.txt")
CLI_EXAMPLES = 60  # per property
HOSTILE_NUMBER = st.one_of(
    st.sampled_from(["0", "-1", "nan", "inf", "-inf", "1e309", "1.5", "", "abc", "9" * 5000, "0x10", "１"]),
    st.integers(-10**6, 0).map(str),
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


@settings(max_examples=CLI_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(flag=st.sampled_from(["--steps", "--threads", "--batch-size", "--max-span", "--weight-decay",
                             "--random-span-share", "--repeat-share", "--copy-warmup-steps", "--seed"]),
       value=HOSTILE_NUMBER)
def test_train_refuses_hostile_numbers_before_training(flag, value, capsys, tmp_path_factory):
    short = tmp_path_factory.getbasetemp() / "short_corpus.txt"
    short.write_text("ROMEO: hello there!")  # a value that passes still stops at the corpus check: nothing trains
    rc, text = _run(["train", "--text", str(short), "--out", str(tmp_path_factory.getbasetemp() / "out"),
                     f"{flag}={value}"], capsys)
    assert rc == 2 and text.strip()


@pytest.mark.parametrize("args, words", [
    (["--steps", "0"], "from 1 to"), (["--steps", "-1"], "from 1 to"), (["--threads", "0"], "from 1 to 256"),
    (["--threads", "-1"], "from 1 to 256"), (["--weight-decay", "nan"], "number from 0 to 10"),
    (["--batch-size", "0"], "from 1 to"), (["--max-span", "0"], "from 8 to"),
    (["--random-span-share", "-1"], "from 0 to 1"),
])
def test_train_nonsense_is_refused_with_its_range(args, words, capsys):
    rc, text = _run(["train", "--text", str(CORPUS), *args], capsys)
    assert rc == 2 and words in text


@pytest.mark.parametrize("name, words", [("empty.txt", "holds 0 characters"), ("short.txt", "holds 19 characters"),
                                          ("binary.txt", "is not UTF-8 text")])
def test_train_refuses_a_corpus_it_cannot_learn_from(files, name, words, capsys):
    rc, text = _run(["train", "--text", str(files / name), "--out", str(files / "out")], capsys)
    assert rc == 2 and words in text and len(text.strip().splitlines()) == 1


@pytest.mark.parametrize("out, words", [("missing/parent/model", "does not exist"), ("a_file", "existing file")])
def test_train_refuses_an_output_it_cannot_write_before_training(files, out, words, capsys):
    rc, text = _run(["train", "--text", str(CORPUS), "--out", str(files / out)], capsys)
    assert rc == 2 and words in text and not (files / "missing").exists()


@settings(max_examples=CLI_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(flag=st.sampled_from(["--prompt-len", "--new-tokens", "--repeats", "--warmup", "--threads"]),
       value=HOSTILE_NUMBER)
def test_bench_refuses_hostile_numbers_in_one_message(flag, value, capsys):
    rc, text = _run(["bench", "--model", "/nonexistent/model", f"{flag}={value}"], capsys)
    assert rc != 0 and text.strip()


@settings(max_examples=CLI_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(flag=st.sampled_from(["--prompt-len", "--new-tokens", "--layers", "--heads"]), value=HOSTILE_NUMBER)
def test_ops_refuses_hostile_numbers_in_one_message(flag, value, capsys):
    rc, text = _run(["ops", f"{flag}={value}"], capsys)
    assert text.strip()


def test_bench_names_a_missing_folder_without_suggesting_hf_download(capsys):
    rc, text = _run(["bench", "--model", "/nonexistent"], capsys)
    assert rc == 1 and "no model folder at /nonexistent" in text and "hf download" not in text


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_answers_junk_without_a_traceback(command, capsys):
    _run([command, "--no-such-flag", "\x00", "9" * 5000], capsys)


def test_an_unknown_command_is_named(capsys):
    rc, text = _run(["bogus"], capsys)
    assert rc == 2 and "unknown command 'bogus'" in text


def _subprocess(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "kvviz", *args], capture_output=True, text=True, timeout=600,
                          cwd=ROOT, env=env)


def test_bench_with_one_new_token_reports_and_states_its_estimate_first():
    done = _subprocess("bench", "--new-tokens", "1", "--repeats", "1", "--warmup", "0", "--no-generate",
                       "--no-int8", "--no-static")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.lstrip().startswith("kvviz bench: this run should take about")
    assert "no decode pass was timed" in done.stdout


def test_train_steps_zero_as_a_user_types_it():
    done = _subprocess("train", "--text", str(CORPUS), "--steps", "0")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "--steps" in done.stderr


INPUTS_TRIED = 4 * CLI_EXAMPLES + 8 + 3 + 2 + 1 + len(COMMANDS) + 1 + 2
