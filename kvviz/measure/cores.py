"""How many cores a timing ran on: one rule for every label, thread choice and record.

The rule: physical cores (distinct (socket, core) pairs in /proc/cpuinfo) that this process may run on (its
CPU affinity), at least 1. Hyper-threads share one core's arithmetic units, so a compute-bound pass on two of
them is not twice as fast: a load average compared with logical CPUs would call a busy machine half idle.
The logical CPU count is read here too, as a fact a benchmark record keeps beside it, never as "the cores".
Torch-free.
"""

from __future__ import annotations

import os

__all__ = ["logical_cpus", "physical_cores", "usable_cores"]


def logical_cpus() -> int:
    """The operating system's logical CPU count (hyper-threads counted), at least 1."""
    return os.cpu_count() or 1


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
    return logical_cpus()


def usable_cores() -> int:
    """The cores a timing here ran on: physical cores this process may run on (affinity), at least 1."""
    try:
        allowed = len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this OS: every logical CPU
        allowed = logical_cpus()
    return max(1, min(physical_cores(), allowed))
