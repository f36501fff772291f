"""Byte units and the project's one byte formatter: exact bytes first, then binary and decimal units.

1 KiB = 1024 bytes, 1 MiB = 2**20, 1 GiB = 2**30; 1 KB = 1000 bytes, 1 GB = 10**9. Numbers read naturally:
4 significant digits, never scientific notation ('73.73 KB', never '7.373e-05 GB').
"""

from __future__ import annotations

import math

KIB, MIB, GIB, TIB = 2**10, 2**20, 2**30, 2**40
GB = 10**9

# Every byte unit kvviz reads or writes, in bytes. The formatter writes "KB", as the lesson's unit picker, the glossary
# and the units rule name it (kvviz.claims.UNITS_RULE: GB, MB, KB decimal), one spelling on every page; SI's "kB", as
# some sources print it, is read the same: 10^3.
UNIT_BYTES: dict[str, int] = {
    "B": 1,
    "kB": 10**3,
    "KB": 10**3,
    "MB": 10**6,
    "GB": GB,
    "TB": 10**12,
    "PB": 10**15,
    "KiB": KIB,
    "MiB": MIB,
    "GiB": GIB,
    "TiB": TIB,
    "PiB": 2**50,
    "EiB": 2**60,
}
# A decimal unit's binary twin: the pairs a reader mixes up (a "GB" that means GiB).
BINARY_TWIN: dict[str, str] = {"kB": "KiB", "KB": "KiB", "MB": "MiB", "GB": "GiB", "TB": "TiB", "PB": "PiB"}
# A binary unit's decimal twin, as the lesson writes it ("KB", not "kB").
DECIMAL_TWIN: dict[str, str] = {binary: decimal for decimal, binary in BINARY_TWIN.items() if decimal != "kB"}

_BINARY = tuple((unit, UNIT_BYTES[unit]) for unit in ("EiB", "PiB", "TiB", "GiB", "MiB", "KiB"))
_DECIMAL = tuple((unit, UNIT_BYTES[unit]) for unit in ("PB", "TB", "GB", "MB", "KB"))


def binary_and_decimal(unit: str) -> tuple[int, int]:
    """(bytes read as binary, bytes read as decimal) of one printed unit: 'GB' -> (2^30, 10^9); a binary unit reads
    the same both ways ('GiB' -> (2^30, 2^30)). KeyError for a unit not in UNIT_BYTES."""
    return UNIT_BYTES[BINARY_TWIN.get(unit, unit)], UNIT_BYTES[unit]


def significant(value: float) -> str:
    """4 significant digits, never scientific notation: 0.5369, 12.5, 1,024, 4,612."""
    if value >= 1000:
        return f"{value:,.0f}"
    text = f"{value:.{max(0, 3 - math.floor(math.log10(value)))}f}" if value > 0 else "0"
    return text.rstrip("0").rstrip(".") if "." in text else text


def binary_unit(n_bytes: int) -> tuple[str, int]:
    """The largest binary unit not above n_bytes: ('MiB', 2**20) for 5 MiB; ('B', 1) below 1 KiB."""
    return next(((unit, size) for unit, size in _BINARY if n_bytes >= size), ("B", 1))


def short_bytes(n_bytes: int) -> str:
    """Compact binary form for metric tiles: '512 MiB', '72 KiB', '640 B'."""
    unit, size = binary_unit(n_bytes)
    return f"{n_bytes:,} B" if size == 1 else f"{significant(n_bytes / size)} {unit}"


def decimal_bytes(n_bytes: int) -> str:
    """Decimal form, GB down to 0.01 GB, then MB or KB: '0.5369 GB', '73.73 KB' (never '7.373e-05 GB')."""
    for unit, size in _DECIMAL:
        if n_bytes >= (size // 100 if unit == "GB" else size):
            return f"{significant(n_bytes / size)} {unit}"
    return f"{n_bytes:,} B"


def format_bytes(n_bytes: int) -> str:
    """The project's one byte formatter: '536,870,912 B = 512 MiB = 0.5369 GB' (exact, binary, decimal)."""
    if n_bytes < KIB:
        return f"{n_bytes:,} B"
    return f"{n_bytes:,} B = {short_bytes(n_bytes)} = {decimal_bytes(n_bytes)}"
