"""The machine a benchmark runs on: CPU name, cores, last-level cache, load, and how many threads to use.

Torch-free (versions are read from the installed packages' metadata), so the speed-up page can show the
default thread count without importing torch.
"""
from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path

from kvviz.i18n import _

MAX_THREADS = 8  # beyond this, small GEMVs gain nothing and a shared server loses everything
SYSFS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")


def physical_cores() -> int:
    """Distinct (socket, core) pairs in /proc/cpuinfo, else the logical CPU count."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            pairs, socket = set(), "0"
            for line in fh:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "physical id":
                    socket = value.strip()
                elif key == "core id":
                    pairs.add((socket, value.strip()))
        if pairs:
            return len(pairs)
    except OSError:
        pass
    return os.cpu_count() or 1


def usable_cores() -> int:
    """Physical cores this process may run on (affinity), capped at MAX_THREADS."""
    try:
        allowed = len(os.sched_getaffinity(0))
    except AttributeError:
        allowed = os.cpu_count() or 1
    return max(1, min(physical_cores(), allowed, MAX_THREADS))


def load_average() -> tuple[float, float, float]:
    try:
        return os.getloadavg()
    except OSError:
        return (0.0, 0.0, 0.0)


def free_cores(load_1min: float | None = None) -> int:
    """Usable cores not already busy: cores - the 1-minute load average (rounded), at least 1."""
    load = load_average()[0] if load_1min is None else load_1min
    return max(1, usable_cores() - int(round(load)))


def default_thread_count(other_sessions: int = 0, load_1min: float | None = None) -> tuple[int, str]:
    """(threads, why): the free cores; with other app sessions active, one fewer than the cores.

    Hyper-threads only fight over the same FMA units, and a benchmark that takes every core of a shared
    machine measures its neighbours as much as itself.
    """
    cores = usable_cores()
    threads = free_cores(load_1min)
    load = load_average()[0] if load_1min is None else load_1min
    if cores - int(round(load)) >= 1:
        why = _("{threads} of {cores} cores free (1-min load {load:.2f})").format(threads=threads, cores=cores,
                                                                                 load=load)
    else:  # free_cores' floor of 1 is not a free core: say the machine is busy
        why = _("no core free: 1-min load {load:.2f} on {cores} cores, so {threads} thread, the least a run can "
                "use (its times include the waiting)").format(threads=threads, cores=cores, load=load)
    if other_sessions > 0 and threads >= cores and cores > 1:
        threads = cores - 1
        why = _("{threads} of {cores} cores: {others} other session(s) are using this server").format(
            threads=threads, cores=cores, others=other_sessions)
    return threads, why


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _parse_size(text: str) -> int | None:
    """'32768K' -> 33554432 (sysfs sizes are in KiB with a K suffix)."""
    text = text.strip().upper()
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    try:
        return int(text[:-1]) * units[text[-1]] if text and text[-1] in units else int(text)
    except ValueError:
        return None


def last_level_cache_bytes() -> int | None:
    """Size of the highest-level data/unified cache of cpu0, from sysfs; None where it cannot be read."""
    best: tuple[int, int] | None = None
    try:
        for index in SYSFS_CACHE.glob("index*"):
            if (index / "type").read_text().strip() == "Instruction":
                continue
            level = int((index / "level").read_text())
            size = _parse_size((index / "size").read_text())
            if size is not None and (best is None or level > best[0]):
                best = (level, size)
    except (OSError, ValueError):
        return None
    return None if best is None else best[1]


def package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"
