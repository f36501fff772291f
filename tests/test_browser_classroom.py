"""A class at once, in a real browser: concurrent sessions stay apart, and nginx keeps each on its replica.

Both tests drive headless Debian Chromium through bench/classroom_session.py (the load test's own session
driver): every session prefills its own prompt, clicks, and after every click checks that the "Cache length"
metric and the token strip are its own (its prompt's tokens, the same tokens as before at that length, never
empty). The deployment is the real one: deploy/run_class.sh with 2 replicas behind Debian's nginx, stopped
with Ctrl-C (SIGINT) at the end. No timing is asserted: timing lives in bench/classroom_load.py.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.browser import CHROMIUM, require
from support.pages import REPO
from support.server import free_port_block, port_free

NGINX = "/usr/sbin/nginx"
_spec = importlib.util.spec_from_file_location("classroom_session", REPO / "bench/classroom_session.py")
driver = sys.modules.setdefault("classroom_session", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(driver)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    """deploy/run_class.sh -n 2 on free ports; yields the front URL, the replica ports and the runtime dir."""
    require(CHROMIUM, "chromium")
    require(NGINX, "nginx")
    base, run_dir = free_port_block(3), tmp_path_factory.mktemp("class")
    log = (run_dir.parent / "launcher.log").open("w")  # a file, not a pipe nobody reads (its 64 KiB can fill)
    # Started with Ctrl-C's default action: a test run started in the background of a script (`cmd &`, as a CI
    # runner may) inherits SIGINT ignored, bash cannot trap a signal ignored on entry, and the launcher would then
    # outlive the SIGINT below (the teardown timing out, its replicas and nginx still running). Python's exec keeps
    # the disposition it sets; a preexec_fn would not be safe with threads.
    run_with_default_sigint = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
        "os.execvp('bash', ['bash', *sys.argv[1:]])"
    )
    launcher = subprocess.Popen(
        [
            sys.executable,
            "-c",
            run_with_default_sigint,
            "deploy/run_class.sh",
            "-n",
            "2",
            "-p",
            str(base),
            "--listen",
            "127.0.0.1",
            "--run-dir",
            str(run_dir),
        ],
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 150
    while not (run_dir / "ready").exists():
        if launcher.poll() is not None or time.monotonic() > deadline:
            launcher.kill()
            pytest.fail("deploy/run_class.sh did not start:\n" + Path(log.name).read_text(errors="replace"))
        time.sleep(0.5)
    yield {"front": f"http://127.0.0.1:{base}", "replica_ports": [base + 1, base + 2], "run_dir": run_dir}
    launcher.send_signal(signal.SIGINT)  # what Ctrl-C sends: nginx and both replicas must go
    assert launcher.wait(timeout=30) == 130
    log.close()
    assert all(port_free(base + i) for i in range(3)), "a replica or nginx outlived Ctrl-C"


@pytest.fixture(scope="module")
def one_process_url(request):
    """One streamlit process: the deployment's first replica when it runs anyway (one server start saved)."""
    if Path(NGINX).exists():
        deployment = request.getfixturevalue("deployment")
        return f"http://127.0.0.1:{deployment['replica_ports'][0]}"
    return request.getfixturevalue("app_url")


def _run(url: str, prompts: list[str], actions: list[str], ramp_s: float = 0.0):
    plans = [driver.fixed_plan(actions) for _ in prompts]
    reports, _ = asyncio.run(driver.run_load(url, prompts, plans, ramp_s=ramp_s))
    for r in reports:
        assert r.problems == [], f"session {r.index} ({r.prompt!r}): {r.problems}"
        assert [c["action"] for c in r.clicks] == ["prefill", *actions], f"session {r.index} stopped early"
        assert all(c["settle_ms"] is not None for c in r.clicks)  # every click settled on the right state
    return reports


def test_five_concurrent_sessions_each_see_only_their_own_cache(one_process_url):
    prompts = [driver.session_prompt(i) for i in range(5)]  # different lengths and tokens
    assert len({len(driver.expected_prompt_strip(p)) for p in prompts}) > 1
    _run(one_process_url, prompts, ["next", "next", "back", "next"])


def test_nginx_keeps_each_session_on_its_replica(deployment):
    prompts = [driver.session_prompt(i) for i in (5, 6, 7)]
    reports = _run(deployment["front"], prompts, ["next"] * 6 + ["back"] + ["next"] * 3, ramp_s=1.5)  # 10 clicks

    ports = {str(p) for p in deployment["replica_ports"]}
    for r in reports:  # the cookie nginx set on the first page load is unchanged after the 10 clicks
        assert (
            len(r.replica_cookie) == 2 and r.replica_cookie[0] == r.replica_cookie[1] and r.replica_cookie[0] in ports
        )
    assert {r.replica_cookie[0] for r in reports} == ports  # first visits go round robin: both replicas serve

    log = deployment["run_dir"] / "access.log"
    line = re.compile(r"cookie=(\S+) upstream=(\S+) status=(\d+) \"(\S+) (\S+)")
    deadline = time.monotonic() + 10
    while True:  # nginx logs a WebSocket when it closes, just after the browser contexts did
        entries = [m.groups() for m in map(line.search, log.read_text().splitlines()) if m]
        streams = [e for e in entries if e[4] == "/_stcore/stream"]
        if len(streams) >= len(reports) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    # One WebSocket per session (no reconnect elsewhere), and every request that carried a replica cookie
    # (page assets, the WebSocket) reached that replica.
    assert sorted(e[0] for e in streams) == sorted(r.replica_cookie[0] for r in reports)
    assert all(e[2] == "101" for e in streams)
    pinned = [e for e in entries if e[0] != "-"]
    assert pinned and all(e[1] == f"127.0.0.1:{e[0]}" for e in pinned), pinned
