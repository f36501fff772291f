"""deploy/run_class.sh refuses every bad option before it starts anything: one line naming the option, exit 2.

Pure tier: NGINX points at no file, so a value that passed the checks stops at "nginx not found" (exit 1) and no
replica or nginx is ever started; the script never gets past its checks here. A run that gets as far as the port
check is given free ports (-p), never the default 8500, which anything else on the machine may hold: the default
itself is read from the script, never bound.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from support.repo import REPO
from support.server import free_port_block, port_in_use

SCRIPT = REPO / "deploy" / "run_class.sh"
NO_NGINX = "/nonexistent/nginx"
DEFAULT_PORT = 8500  # where students connect when the teacher gives no -p (the script's comment and docs say it)


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "NGINX": NO_NGINX}
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=30)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        # What the hostile round tried: a listen value that injects nginx configuration, numbers bash reads as octal
        # or as a sum, ports that are the system's or past 65535.
        (["--listen", "127.0.0.1 default_server; location /x { alias /etc/; } #"], "--listen must be an IP address"),
        (["--listen", "0.0.0.0:80"], "--listen must be an IP address"),
        (["--listen", "256.1.1.1"], "--listen must be an IP address"),
        (["--listen", "host\nname"], "--listen must be an IP address"),
        (["--listen", ""], "--listen must be an IP address"),
        (["-p", "8632+1"], "--port must be a whole number from 1024 to 65535"),
        (["-p", "0x2000"], "--port must be a whole number from 1024 to 65535"),
        (["-p", "-1"], "--port must be a whole number from 1024 to 65535"),
        (["-p", "80"], "--port must be from 1024 to 65535 (got 80): the replicas take the ports after it"),
        (["-p", "65536"], "--port must be from 1024 to 65535"),
        (["-p", "65535", "-n", "2"], "needs ports up to 65537; the last port is 65535"),
        (["-n", "0"], "--replicas must be from 1 to 32 (got 0)"),
        (["-n", "33"], "--replicas must be from 1 to 32"),
        (["-n", "9" * 40], "--replicas must be from 1 to 32"),
        (["-n", "2.5"], "--replicas must be a whole number from 1 to 32"),
        (["-n", "٣"], "--replicas must be a whole number from 1 to 32"),
        (["-n"], "-n needs a value"),
        (["--run-dir", "run; } server { listen 80;"], "--run-dir must be a path"),
        (["--bogus"], "unknown option --bogus"),
    ],
)
def test_each_bad_option_is_refused_with_one_line_and_exit_2(args, said):
    done = _run(*args)
    assert done.returncode == 2, (args, done.returncode, done.stderr)
    assert said in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and "line " not in done.stderr  # one line, no bash error
    assert "not found" not in done.stderr  # refused before the nginx check, so before anything could start


def _on_ports_found_free(args: list[str]) -> list[str]:
    """`args` with -p set to a free block of ports for nginx and every replica (the replicas: -n, else a core each)."""
    replicas = int(args[args.index("-n") + 1]) if "-n" in args else os.cpu_count() or 1
    return [*args, "-p", str(free_port_block(replicas + 1))]


@pytest.mark.parametrize(
    "args",
    [
        ["-n", "08"],  # decimal eight, not an octal error
        ["--listen", "127.0.0.1"],
        ["--listen", "::1"],
        ["--listen", "[::]"],
        ["--listen", "class-laptop.local"],
        ["--run-dir", "RUN_DIR"],  # a plain path: the test's own temporary folder
    ],
)
def test_good_options_pass_the_checks(args, tmp_path):
    done = _run(*_on_ports_found_free([str(tmp_path / "run") if a == "RUN_DIR" else a for a in args]))
    assert done.returncode == 1 and f"{NO_NGINX} not found" in done.stderr, done.stderr


def test_the_default_port_is_8500_read_not_bound():
    """Without -p nginx listens on 8500, the port the script's usage names: read from the script, since a run
    without -p would find 8500 in use whenever anything else on this machine holds it."""
    text = SCRIPT.read_text(encoding="utf-8")
    assert f"\nfront_port={DEFAULT_PORT}\n" in text
    assert f"students open http://<this machine>:{DEFAULT_PORT}" in _run("--help").stdout


def test_a_port_in_use_is_found_whatever_zeros_the_replica_count_has():
    base = free_port_block(9)
    with port_in_use(base + 8) as held:
        # -n 08 from base: the eighth replica's port is the held one (bash's octal reading skipped this check).
        done = _run("-n", "08", "-p", str(base))
    assert done.returncode == 1 and f"port {held} is in use" in done.stderr, done.stderr
