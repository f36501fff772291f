"""The machine a benchmark runs on: CPU name, last-level cache, and how many threads to use.

Cores and load are measurement's floor (kvviz.measure.cores, kvviz.measure.load): counted and read there, used
here. Torch-free (versions are read from the installed packages' metadata), so the speed-up page can show the
default thread count without importing torch.
"""

from __future__ import annotations

import platform
from pathlib import Path

from kvviz.i18n import N_, _
from kvviz.inputs.prompt_rules import IntSetting
from kvviz.measure.cores import usable_cores
from kvviz.measure.load import load_avg_1min, load_known

MAX_THREADS = 8  # beyond this, small GEMVs gain nothing and a shared server loses everything
# The speed-up page's box; empty means automatic (default_thread_count), so its default is never shown.
PAGE_THREADS = IntSetting(N_("Torch threads"), 1, MAX_THREADS, default=1)
SYSFS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")


def max_threads() -> int:
    """The most torch threads a benchmark uses here: the usable cores (kvviz.measure.cores), at most MAX_THREADS."""
    return min(usable_cores(), MAX_THREADS)


def free_cores(load_1min: float | None = None) -> int:
    """Thread-usable cores (max_threads) not already busy: those - the 1-minute load average (rounded), at
    least 1. An unknown load (nan) counts no core busy."""
    load = load_avg_1min() if load_1min is None else load_1min
    return max(1, max_threads() - (int(round(load)) if load_known(load) else 0))


def default_thread_count(other_sessions: int = 0, load_1min: float | None = None) -> tuple[int, str]:
    """(threads, why): the free cores; with other app sessions active, one fewer than the cores.

    Hyper-threads only fight over the same FMA units, and a benchmark that takes every core of a shared
    machine measures its neighbours as much as itself.
    """
    cores = max_threads()
    load = load_avg_1min() if load_1min is None else load_1min
    threads = free_cores(load)
    if not load_known(load):  # no load average on this OS: every core counted free, and said unknown
        why = _("machine load unknown")
    elif cores - int(round(load)) >= 1:
        why = _("{threads} of {cores} cores free (1-min load {load:.2f})").format(
            threads=threads, cores=cores, load=load
        )
    else:  # free_cores' floor of 1 is not a free core: say the machine is busy
        why = _(
            "no core free: 1-min load {load:.2f} on {cores} cores, so {threads} thread, the least a run can "
            "use (its times include the waiting)"
        ).format(threads=threads, cores=cores, load=load)
    if other_sessions > 0 and threads >= cores and cores > 1:
        threads = cores - 1
        why = _("{threads} of {cores} cores: {others} other session(s) are using this server").format(
            threads=threads, cores=cores, others=other_sessions
        )
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
