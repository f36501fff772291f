#!/usr/bin/env bash
# Install everything the test suite needs on a fresh Debian machine, lint, then run the whole suite.
# This is the README's test command and what CI runs (.ci/run). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ] || [ ! -x /usr/sbin/nginx ] || ! command -v curl >/dev/null \
   || [ ! -d /usr/share/fonts/opentype/noto ]; then
  # The browser test drives Debian's Chromium; never a downloaded browser. fonts-noto-cjk: Chinese pages draw
  # characters, not boxes.
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver nginx curl fonts-noto-cjk fontconfig >/dev/null
fi

python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements-dev.txt

export KVVIZ_REQUIRE_BROWSER=1  # here Chromium is installed: the browser test must run, not skip
export HF_HUB_OFFLINE=1         # tests never touch the network
.venv/bin/ruff check .         # lint first (pyproject.toml: pyflakes, pycodestyle): a lint error fails CI
exec .venv/bin/python -m pytest "$@"
