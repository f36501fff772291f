"""The test tiers: what a test needs decides its marker, and the marker decides which run picks it.

  pure     (no marker)  numbers, texts, parsers, figures: no torch, no Streamlit script run, no server. A bare
                        `pytest` runs this tier only, in about two minutes on two cores.
  model    loads a bundled model or builds torch / transformers objects (caches, configs' models)
  app      runs a page's script in Streamlit's AppTest
  browser  a `streamlit run` server (and mostly headless Chromium) on 127.0.0.1
  slow     a sweep or training run, fresh interpreters, a load run: minutes, whatever else it needs

`-m <expr>` selects by marker as pytest always does; `--all-tiers` runs every tier (tests/install_and_run.sh, CI).
tests/conftest.py applies the selection and checks each test against its marker: a test with no marker that loads
torch, builds an AppTest or starts a server fails and names the marker it needs. The counters below are how it sees
the last two (support.pages and support.server count what they build).
"""
from __future__ import annotations

TIERS = ("model", "app", "browser", "slow")  # the markers (pyproject.toml describes them); none of them: pure

built = {"apptest": 0, "server": 0}  # how many of each the tests have built so far in this process


def count(kind: str) -> None:
    """One more `kind` built (support.pages: an AppTest; support.server: a streamlit server)."""
    built[kind] += 1
