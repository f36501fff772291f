"""A throwaway PostgreSQL server from Debian's package (`postgresql`), for the poll store's tests.

initdb into a temporary data directory, pg_ctl start on 127.0.0.1 and a free port (no Unix socket outside that
directory), trust authentication for the one local user, fsync off (nothing here must survive a power cut); stopped
and deleted after. PostgreSQL refuses to run as root: as root the server runs as the `postgres` user the package
creates (else `nobody`) through runuser, in a directory it owns. Without the binaries the caller's test skips, with
the reason printed.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.server import free_port

START_TIMEOUT_S = 60
USER = "kvviz"  # the database role initdb makes (trust: no password on 127.0.0.1)


def binaries() -> Path | None:
    """The newest installed PostgreSQL's bin/ folder with initdb and pg_ctl, or None."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0
    )
    return found[-1].parent if found and (found[-1].parent / "pg_ctl").exists() else None


def _run_as() -> tuple[list[str], int | None]:
    """The command prefix and uid the server runs with: as root, another user (the package's `postgres`)."""
    if os.geteuid() != 0:
        return [], None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return ["runuser", "-u", name, "--"], pwd.getpwnam(name).pw_uid
    pytest.skip("PostgreSQL refuses root and there is no 'postgres' or 'nobody' user to run it as")


_running: dict[str, tuple] = {}  # url -> (stop, start) of a throwaway server in its block


@contextlib.contextmanager
def stopped(url: str) -> Iterator[None]:
    """The throwaway server at `url` stopped for the block (pg_ctl stop -m fast: as a server that goes down
    mid-class), then started again on the same port and data."""
    stop, start = _running[url]
    stop()
    try:
        yield
    finally:
        start()


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[str]:
    """A running server for the block; its SQLAlchemy URL (psycopg 3)."""
    bin_dir = binaries()
    if bin_dir is None:
        reason = "PostgreSQL is not installed (/usr/lib/postgresql/*/bin/initdb): apt-get install postgresql"
        print(f"\n{reason}")
        pytest.skip(reason)
    prefix, uid = _run_as()
    top = Path(tempfile.mkdtemp(prefix="kvviz-pg-"))
    data = top / "data"
    if uid is not None:
        os.chown(top, uid, -1)

    def run(*args: str) -> None:
        done = subprocess.run([*prefix, *args], capture_output=True, text=True, timeout=START_TIMEOUT_S)
        if done.returncode:
            log = (top / "log").read_text() if (top / "log").exists() else ""
            raise RuntimeError(f"{' '.join(args[:2])} failed: {done.stdout}{done.stderr}{log}")

    port = free_port()
    try:
        run(str(bin_dir / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync")
        options = (
            f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={top} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off"
        )
        run(
            str(bin_dir / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(top / "log"),
            "-w",
            "-t",
            str(START_TIMEOUT_S),
            "-o",
            options,
            "start",
        )
        url = f"postgresql+psycopg://{USER}@127.0.0.1:{port}/postgres"
        _running[url] = (
            lambda: run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"),
            lambda: run(
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(top / "log"),
                "-w",
                "-t",
                str(START_TIMEOUT_S),
                "-o",
                options,
                "start",
            ),
        )
        try:
            yield url
        finally:
            _running.pop(url, None)
            run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
    finally:
        shutil.rmtree(top, ignore_errors=True)


def empty(url: str) -> None:
    """Every table in the throwaway server's database at `url` dropped (its public schema made anew), so a test starts
    from an empty database, whatever schema version the last one left."""
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("DROP SCHEMA public CASCADE")
            conn.exec_driver_sql("CREATE SCHEMA public")
    finally:
        engine.dispose()
