#!/usr/bin/env bash
# Install everything the test suite needs on a fresh Debian machine, lint, then run the whole suite: every tier.
# This is the README's test command and what CI runs (.ci/run). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
phase() { echo "== $1: $(( SECONDS - phase_start )) s"; phase_start=$SECONDS; }  # each phase's time, in the log
phase_start=$SECONDS

if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ] || [ ! -x /usr/sbin/nginx ] || ! command -v curl >/dev/null \
   || [ ! -d /usr/share/fonts/opentype/noto ] || ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  # The browser test drives Debian's Chromium; never a downloaded browser. fonts-noto-cjk: Chinese pages draw
  # characters, not boxes. postgresql: the poll store's tests start a throwaway server (tests/support/postgres.py).
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver nginx curl fonts-noto-cjk fontconfig postgresql >/dev/null
fi

python3 -m venv .venv
# --no-compile: Python compiles a module to bytecode when it is first imported, so only what the tests import; pip's
# default compiles every file of every package at install (torch's and transformers' thousands): 65 s here, not 183.
.venv/bin/python -m pip install -q --no-compile --disable-pip-version-check -r requirements-dev.txt
# ... and keeps it (__pycache__), unless PYTHONDONTWRITEBYTECODE is set, as it is on this project's machines. The
# suite starts many interpreters (workers, servers, `python -m kvviz` commands); each compiled torch's,
# transformers', Streamlit's and plotly's modules again: importing them took 10 s of CPU without bytecode and 4 s
# with it (`time python -c "import torch, transformers, streamlit, plotly.graph_objects, kvviz.model.loaders"`).
unset PYTHONDONTWRITEBYTECODE
phase "install"

export KVVIZ_REQUIRE_BROWSER=1  # here Chromium is installed: the browser test must run, not skip
export HF_HUB_OFFLINE=1         # tests never touch the network
.venv/bin/ruff check .         # lint first (pyproject.toml: E, F, W, I, B, UP, SIM): a lint error fails CI
.venv/bin/ruff format --check .  # and the layout is ruff format's (pyproject.toml: 120 columns): a file it would change fails CI
phase "lint"
# Every tier (tests/support/tiers.py), each test once, in pytest-xdist workers, with each phase's time printed and
# each run's slowest tests (--durations). The pure tier first, alone (the tests with no tier marker, what a bare
# `pytest` runs): it is quick, and no other tier has run in its workers. Then two runs side by side, because they use
# the machine differently: the model, app and slow tiers' worker computes, while a browser worker mostly waits
# (on its server's run, on Chromium drawing in turn), so the browser tier run alone left the cores idle at times (one
# worker on the axe module: 48% idle). Side by side the cores are busy, so a third browser worker only adds contention
# (measured: 23:16 against 23:00, and the eviction page's first run on a fresh server then outlasted its 90 s). The
# model, app and slow tiers take one worker: with two they ended minutes before the browser run, whose last minutes
# alone left 4-24% of the cores idle; with one the lanes ended together (clean clones: 15:41 and 16:59, against 16:25
# with two), and once their AppTests cost less, 1.5-2 minutes early, which the class deployment's module below now
# fills (docs/architecture.md). The browser run takes a whole module per worker (--dist loadfile: a module's
# tab stays with its tests); the other run keeps no pytest cache, so the cache's last-failed list is the browser
# run's. Under the other run's load the busy-core browser tests keep their own spinner too: a harder load than one
# busy core.
status=0
.venv/bin/python -m pytest -m "not (model or app or browser or slow)" -n 2 "$@" || status=$?  # the pure tier
phase "pure tier"
rm -f .pytest_cache/v/cache/lastfailed  # from here on it records the browser run alone
model_log=$(mktemp)
# The browser-tier modules that bring their own servers and clients, not the worker's shared server and Chromium
# (protocol-level clients, a container's start command, the class deployment with its own browser sessions), run
# in that lane once it is done (in two workers, a module each), not in the browser run: that lane ended 1.5-2
# minutes before the browser run (docs/architecture.md, ci10-ci13), and the class deployment's module (asyncio)
# stopped its browser worker's Chromium (conftest.no_chromium_beside_asyncio).
own_clients=(tests/test_classroom_ws.py tests/test_hostile_ws_bounds.py tests/test_deploy.py
  tests/test_browser_classroom.py)
# The browser run's workers collect only the other Chromium modules: collecting every module took each 5.3 CPU-s,
# these 1.3 (`pytest --collect-only`). tests/test_test_harness.py holds every browser test to one of the two runs.
browser_modules=()
for module in tests/test_browser*.py; do
  [[ " ${own_clients[*]} " == *" $module "* ]] || browser_modules+=("$module")
done
(
  lane_status=0
  .venv/bin/python -m pytest --all-tiers -m "(model or app or slow) and not browser" -n 1 -p no:cacheprovider \
    --durations=15 "$@" || lane_status=$?
  .venv/bin/python -m pytest --all-tiers -m browser -n 2 --dist loadfile -p no:cacheprovider --durations=5 "$@" \
    "${own_clients[@]}" || lane_status=$?
  exit "$lane_status"
) >"$model_log" 2>&1 &
model_run=$!
browser_status=0
# --no-loadscope-reorder: the modules go out in collection order, the longest first (support.tiers).
.venv/bin/python -m pytest --all-tiers -m browser -n 2 --dist loadfile --no-loadscope-reorder --durations=15 "$@" \
  "${browser_modules[@]}" || browser_status=$?
phase "browser tier"
wait "$model_run" || status=$?
phase "the model, app and slow tiers (and the browser modules with their own clients), after the browser tier"
echo "== the model, app and slow tiers' run, then the browser modules with their own clients':"
cat "$model_log"
rm -f "$model_log"
# A browser test drives a real server and Chromium on a shared 2-core machine; a race it finds under load is a real
# fault to fix, but one intermittent miss should not hold back everything else.
# So: when the only failures are at most 3 browser tests, they run once more, and the log names them either way.
# Any other failure, or a browser test that fails again, fails the run.
if [ "$browser_status" -eq 1 ] && [ -f .pytest_cache/v/cache/lastfailed ]; then
  # the failed tests' ids when they are at most 3, else nothing (one read of pytest's record of the browser run)
  failed=$(.venv/bin/python -c 'import json; ids = list(json.load(open(".pytest_cache/v/cache/lastfailed")))
print("; ".join(ids) if 0 < len(ids) <= 3 else "")')
  if [ -n "$failed" ]; then
    echo "== INTERMITTENT? browser test(s) failed; running them once more: $failed"
    browser_status=0
    .venv/bin/python -m pytest --all-tiers -m browser "$@" --lf || browser_status=$?  # one at a time
    [ "$browser_status" -eq 0 ] && echo "== passed on the second run (still a race to find): $failed"
  fi
fi
[ "$status" -ne 0 ] && exit "$status"
exit "$browser_status"
