"""The tier check (tests/conftest.py, support/tiers.py) fails when it should: a test without a tier marker that
imports torch, runs a page in AppTest or starts a server fails naming the marker it needs, whatever ran before it.

The slow test runs a deliberate offender: a temporary test file whose first test (marked model) loads torch and
whose later, unmarked tests reach torch, an AppTest and a server anyway, checked by this repository's conftest in a
fresh pytest. A check that only asks whether torch is in sys.modules passes every one of them (torch is there
already); this one must fail each, and pass the tests that are pure.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from support import tiers
from support.repo import REPO

OFFENDER = """
import pytest

from support import tiers
from support.pages import app_test


@pytest.fixture(scope="module")
def zeros():
    import torch

    return torch.zeros(2)


@pytest.fixture(scope="module")
def page():
    return app_test("app.py")  # built, not run: what support.pages counts


@pytest.fixture(scope="module")
def server():
    tiers.count("server")  # what support.server.streamlit_server counts when it starts one (a start takes seconds)
    return "http://127.0.0.1:1"


@pytest.mark.model
def test_a_model_test_loads_torch_first(zeros):
    import torch

    from kvviz.step import engine  # noqa: F401  (its top imports torch)

    assert torch.equal(zeros, torch.zeros(2))


@pytest.mark.app
def test_an_app_test_builds_the_modules_page(page):
    assert page is not None


@pytest.mark.browser
def test_a_browser_test_starts_the_modules_server(server):
    assert server


def test_pure_but_imports_torch():
    import torch  # already in sys.modules: no finder is asked

    assert torch.zeros(1).shape == (1,)


def test_pure_but_imports_a_module_whose_top_imports_torch():
    from kvviz.step import engine

    assert engine


def test_pure_but_imports_it_by_name():
    import importlib

    assert importlib.import_module("kvviz.step.engine")


def test_pure_but_reuses_the_modules_tensor(zeros):
    assert len(zeros) == 2


def test_pure_but_reuses_the_modules_page(page):
    assert page is not None


def test_pure_but_reuses_the_modules_server(server):
    assert server


def test_pure_but_builds_a_page():
    assert app_test("app.py") is not None


def test_pure_and_pure():
    from kvviz import ops

    assert ops
"""

CAUGHT = {
    "test_pure_but_imports_torch": "this test imported torch: mark it @pytest.mark.model",
    "test_pure_but_imports_a_module_whose_top_imports_torch": "this test imported torch (kvviz.step.engine -> torch): mark it @pytest.mark.model",
    "test_pure_but_imports_it_by_name": "(kvviz.step.engine -> torch): mark it @pytest.mark.model",
    "test_pure_but_reuses_the_modules_tensor": "uses the fixture zeros, which imported torch when it was set up: mark it @pytest.mark.model",
    "test_pure_but_reuses_the_modules_page": "uses the fixture page, which ran a page in AppTest when it was set up: mark it @pytest.mark.app",
    "test_pure_but_reuses_the_modules_server": "uses the fixture server, which started a streamlit server when it was set up: mark it @pytest.mark.browser",
    "test_pure_but_builds_a_page": "this test ran a page in AppTest: mark it @pytest.mark.app",
}
PASSED = (
    "test_a_model_test_loads_torch_first",
    "test_an_app_test_builds_the_modules_page",
    "test_a_browser_test_starts_the_modules_server",
    "test_pure_and_pure",
)


def run_offender(tmp_path, conftest_dir=REPO / "tests") -> dict[str, str | None]:
    """Run OFFENDER in a fresh pytest, in file order, with `conftest_dir`'s conftest.py as a plugin and the
    repository's pytest settings: test name -> its failure message, or None when it passed."""
    (tmp_path / "test_offender.py").write_text(OFFENDER, encoding="utf-8")
    report = tmp_path / "report.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(conftest_dir), str(REPO / "tests"), str(REPO)])
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(REPO / "pyproject.toml"),
            "--rootdir",
            str(tmp_path),
            "-p",
            "conftest",
            "-p",
            "no:cacheprovider",
            "--all-tiers",
            "-q",
            f"--junitxml={report}",
            str(tmp_path / "test_offender.py"),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    outcomes = {}
    for case in ET.parse(report).iter("testcase"):
        failure = case.find("failure")
        outcomes[case.get("name")] = None if failure is None else failure.get("message", "") + (failure.text or "")
    return outcomes


@pytest.mark.slow
def test_each_offender_fails_naming_its_marker_whatever_ran_before_it(tmp_path):
    outcomes = run_offender(tmp_path)
    assert set(outcomes) == set(CAUGHT) | set(PASSED), outcomes
    for name in PASSED:
        assert outcomes[name] is None, (name, outcomes[name])
    for name, said in CAUGHT.items():
        assert outcomes[name] is not None, f"{name} passed: the tier check missed it"
        assert said in outcomes[name], (name, outcomes[name])


def test_a_module_reaches_torch_through_its_top_only():
    """Read from the modules' syntax trees: the stage engine's top imports torch; kvviz.ops and kvviz.step's own
    package import it only inside functions, if at all."""
    assert tiers.route_to_torch("kvviz.step.engine") == ("kvviz.step.engine", "torch")
    assert tiers.route_to_torch("transformers.cache_utils") == ("transformers.cache_utils",)
    assert tiers.route_to_torch("kvviz.ops") is None
    assert tiers.route_to_torch("numpy") is None
