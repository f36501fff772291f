"""The machine's load average: one reader, and the label printed beside every timing.

One behaviour where the OS has no load average (Windows) or cannot read it: nan, "unknown". Never 0.0, which
would claim an idle machine; a label then says "machine load unknown", and a caller that must decide from the
load (how many threads to use) decides as on an idle machine and says the load is unknown. Torch-free.
"""

from __future__ import annotations

import math
import os

from kvviz.i18n import _, ngettext
from kvviz.measure.cores import usable_cores

__all__ = ["load_average", "load_avg_1min", "load_known", "load_label", "load_number"]

UNKNOWN = (float("nan"),) * 3


def load_average() -> tuple[float, float, float]:
    """The 1-, 5- and 15-minute load averages now (os.getloadavg); nan each where the OS has none."""
    try:
        one, five, fifteen = os.getloadavg()
    except (AttributeError, OSError):
        return UNKNOWN
    return float(one), float(five), float(fifteen)


def load_avg_1min() -> float:
    """The 1-minute load average now (nan where the OS has none): the load every timing reports."""
    return load_average()[0]


def load_known(load_1min: float) -> bool:
    """False for the reader's "unknown" (nan)."""
    return not math.isnan(load_1min)


def load_number(load_1min: float, digits: int = 2) -> str:
    """The load as a sentence prints it ("1.70"), or "unknown": never "nan" on a page."""
    return f"{load_1min:.{digits}f}" if load_known(load_1min) else _("unknown")


def load_label(load_1min: float, cores: int | None = None) -> str:
    """'1-min load 1.70 on 2 cores' (cores: kvviz.measure.cores.usable_cores): what to print beside every timing."""
    cores = usable_cores() if cores is None else cores
    if not load_known(load_1min):
        return _("machine load unknown")
    return ngettext("1-min load {load:.2f} on {cores} core", "1-min load {load:.2f} on {cores} cores", cores).format(
        load=load_1min, cores=cores
    )
