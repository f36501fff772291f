"""The repository's root, for tests that read its files and need nothing else (no Streamlit, no torch): the one
place the root is computed. support.pages re-exports it beside the AppTest builder."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
