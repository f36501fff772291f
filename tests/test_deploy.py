"""Deployment beyond one laptop: the recipes in deploy/ hold together, and the container's start command
serves the app here.

What this machine can check: the Spaces front matter parses and names the Docker SDK and the port the image
serves; the image's start command (the Dockerfile's CMD, with its ENV) starts kvviz and answers /_stcore/health
here; the hosted requirements take torch's CPU wheel and the project's own pins; make_space.sh makes a Space folder
with the front matter and the Dockerfile at its root; the Kubernetes manifest's Deployment, Service and Ingress
agree (ports, health path, cookie affinity, the start command). What it cannot: build the image (no container
daemon), push a Space, or apply the manifest (kubectl's client-side dry run asks an API server for its kinds; there
is none here). docs/deploying.md says so.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.request
from pathlib import Path

import pytest
import yaml

from support.pages import REPO
from support.server import free_port, streamlit_server

DEPLOY = REPO / "deploy"
DOCKERFILE = DEPLOY / "huggingface" / "Dockerfile"
SPACE_README = DEPLOY / "huggingface" / "README.md"
MANIFEST = DEPLOY / "kubernetes" / "kvviz.yaml"


def _front_matter(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert match, f"{path} has no front matter"
    return yaml.safe_load(match.group(1))


def _cmd() -> list[str]:
    line = next(line for line in DOCKERFILE.read_text().splitlines() if line.startswith("CMD "))
    return json.loads(line.removeprefix("CMD "))


def _env() -> dict[str, str]:
    env = {}
    for line in DOCKERFILE.read_text().splitlines():
        if line.startswith("ENV "):
            env.update(pair.split("=", 1) for pair in line.removeprefix("ENV ").split())
    return env


def _flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def _manifest() -> dict[tuple[str, str], dict]:
    """(kind, name) -> the manifest's document."""
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in yaml.safe_load_all(MANIFEST.read_text()) if doc}


def test_the_space_front_matter_names_docker_and_the_port_the_image_serves():
    meta = _front_matter(SPACE_README)
    assert meta["sdk"] == "docker" and meta["title"]
    port = int(_flag(_cmd(), "--server.port"))
    assert meta["app_port"] == port
    assert f"EXPOSE {port}" in DOCKERFILE.read_text()
    assert _flag(_cmd(), "--server.address") == "0.0.0.0"  # inside a container: the mapped port is the way in


@pytest.mark.browser
def test_the_images_start_command_serves_the_app_here():
    """The Dockerfile's CMD and ENV, run in the repository (the image's working directory holds the same files), on
    127.0.0.1 and a free port instead of 0.0.0.0:8501: /_stcore/health answers ok, and the page is served."""
    args = _cmd()
    assert args[:3] == ["streamlit", "run", "app.py"]
    args[args.index("--server.address") + 1], args[args.index("--server.port") + 1] = "127.0.0.1", str(free_port())
    image_env = _env()
    env = {**os.environ, **image_env}
    assert env["KVVIZ_SHARED"] == "1" and env["HF_HUB_OFFLINE"] == "1"
    with streamlit_server(args=args, env=image_env) as url:  # yields once /_stcore/health answers ok, else fails
        page = urllib.request.urlopen(f"{url}/", timeout=10)
        assert page.status == 200 and b"<html" in page.read().lower()


def test_the_hosted_requirements_take_torchs_cpu_wheel_and_the_projects_pins():
    hosted = (DEPLOY / "requirements-hosted.txt").read_text().splitlines()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in hosted
    assert "-r ../requirements.txt" in hosted  # pip reads it relative to this file: the project's own pins
    own = (REPO / "requirements.txt").read_text()
    assert "index-url" not in own and "torch==2.13.0" in own.splitlines()
    assert "deploy/requirements-hosted.txt" in DOCKERFILE.read_text()


def test_make_space_puts_the_front_matter_and_the_dockerfile_at_the_spaces_root(tmp_path):
    space = tmp_path / "space"
    subprocess.run(
        ["bash", str(DEPLOY / "huggingface" / "make_space.sh"), str(space)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert _front_matter(space / "README.md")["sdk"] == "docker"
    assert (space / "Dockerfile").read_text() == DOCKERFILE.read_text()
    assert (space / "README-kvviz.md").exists() and (space / "app.py").exists() and (space / "pages").is_dir()
    assert ".venv" in (space / ".dockerignore").read_text().split()


def test_the_kubernetes_manifest_agrees_with_itself_and_the_image():
    docs = _manifest()
    assert set(docs) == {
        ("Deployment", "kvviz"),
        ("Service", "kvviz"),
        ("Ingress", "kvviz"),
        ("Deployment", "kvviz-poll-db"),
        ("Service", "kvviz-poll-db"),
    }
    deployment, service, ingress = docs["Deployment", "kvviz"], docs["Service", "kvviz"], docs["Ingress", "kvviz"]
    spec = deployment["spec"]
    assert spec["replicas"] >= 2 and spec["selector"]["matchLabels"] == spec["template"]["metadata"]["labels"]
    assert service["spec"]["selector"] == spec["template"]["metadata"]["labels"]
    (container,) = spec["template"]["spec"]["containers"]
    port = {p["name"]: p["containerPort"] for p in container["ports"]}["http"]
    assert container["args"][:3] == _cmd()[:3] and int(_flag(container["args"], "--server.port")) == port
    assert "--server.enableXsrfProtection" not in container["args"]  # no iframe here: the protection stays on
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/_stcore/health", "port": "http"}
    env = {e["name"]: e for e in container["env"]}
    assert env["KVVIZ_SHARED"]["value"] == "1" and "secretKeyRef" in env["STREAMLIT_SERVER_COOKIE_SECRET"]["valueFrom"]
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    notes = ingress["metadata"]["annotations"]
    assert notes["nginx.ingress.kubernetes.io/affinity"] == "cookie"  # a session lives in one pod
    assert int(notes["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600  # the WebSocket stays open
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": service["metadata"]["name"], "port": {"name": "http"}}


def test_the_replicas_share_the_class_polls_postgresql():
    """Phones on different pods vote into one store: every kvviz pod reads KVVIZ_POLL_DB from the secret, and it
    names the PostgreSQL Service the manifest runs (its port, its selector matching the database's pod)."""
    docs = _manifest()
    (container,) = docs["Deployment", "kvviz"]["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["KVVIZ_POLL_DB"]["valueFrom"]["secretKeyRef"] == {"name": "kvviz", "key": "poll-db-url"}
    database, service = docs["Deployment", "kvviz-poll-db"], docs["Service", "kvviz-poll-db"]
    assert service["spec"]["selector"] == database["spec"]["template"]["metadata"]["labels"]
    (postgres,) = database["spec"]["template"]["spec"]["containers"]
    assert {p["name"]: p["containerPort"] for p in postgres["ports"]}["postgres"] == 5432
    assert service["spec"]["ports"][0] == {"name": "postgres", "port": 5432, "targetPort": "postgres"}
    assert "@kvviz-poll-db/" in MANIFEST.read_text()  # the URL the comment tells to store names that Service
