"""Which device a benchmark runs on (cpu, cuda, mps), how to wait for it, and what to call it in a report.

A GPU runs kernels asynchronously: `model(...)` returns as soon as the work is queued, so a wall-clock timer
must wait for the device (torch.cuda.synchronize, torch.mps.synchronize) before it reads the time, or it
measures the launch, not the work. `Clock` does that around every timed region.

Without the device, one line says why (e.g. "No CUDA device here: torch.cuda.is_available() is False") and
`require` raises DeviceUnavailable with it; the CLI prints it and exits non-zero; the page does not offer it.
"""

from __future__ import annotations

import dataclasses
import platform
import shutil
import subprocess
import time
from typing import Any

import torch

from kvviz.i18n import _
from kvviz.speedup.machine import cpu_name
from kvviz.speedup.settings import DEVICE_DTYPES, DEVICES

DTYPES = {name: getattr(torch, name) for name in DEVICE_DTYPES}


class DeviceUnavailable(RuntimeError):
    """The device asked for is not here; the message is the one line a user sees."""


def unavailable_reason(device: str) -> str | None:
    """None when `device` can run here, else the one-line reason it cannot."""
    if device == "cpu":
        return None
    if device == "cuda":
        if torch.cuda.is_available():
            return None
        if torch.version.cuda:
            return _("No CUDA device here: torch.cuda.is_available() is False.")
        return _(
            "No CUDA device here: torch.cuda.is_available() is False (this torch, {version}, is built without CUDA)."
        ).format(version=torch.__version__)
    if device == "mps":
        if torch.backends.mps.is_available():
            return None
        return _("No Apple GPU here: torch.backends.mps.is_available() is False.")
    return _("Unknown device {device!r}: choose one of {devices}.").format(
        device=device[:40], devices=", ".join(DEVICES)
    )


def available() -> list[str]:
    """The devices that can run here, cpu first (the page offers these, and only these)."""
    return [d for d in DEVICES if unavailable_reason(d) is None]


def require(device: str) -> torch.device:
    reason = unavailable_reason(device)
    if reason is not None:
        raise DeviceUnavailable(reason)
    return torch.device(device)


def dtype_problem(device: str, dtype: str) -> str | None:
    """None when `dtype` weights and cache make sense on `device`, else why not (one line)."""
    if dtype not in DTYPES:
        return _("Unknown dtype {dtype!r}: choose one of {dtypes}.").format(dtype=dtype[:40], dtypes=", ".join(DTYPES))
    if device == "cpu" and dtype != "float32":
        return _(
            "{dtype} on the CPU: its matmuls run through slow conversion paths here, so the timing would "
            "teach the wrong lesson; use float32 on the CPU."
        ).format(dtype=dtype)
    if device == "cuda" and dtype == "bfloat16" and not torch.cuda.is_bf16_supported():
        return _("bfloat16 is not supported by this CUDA device (torch.cuda.is_bf16_supported() is False).")
    return None


def synchronize(device: torch.device | str) -> None:
    """Wait until every kernel queued on `device` has finished (a no-op on the CPU)."""
    kind = torch.device(device).type
    if kind == "cuda":
        torch.cuda.synchronize()
    elif kind == "mps":
        torch.mps.synchronize()


class Clock:
    """Wall time of a region of device work: synchronise, read the clock, run, synchronise, read the clock.

    clock = Clock(device)
    with clock:
        model(...)
    clock.ms
    """

    def __init__(self, device: torch.device | str) -> None:
        self.device = torch.device(device)
        self.ms = float("nan")
        self._began = 0.0

    def __enter__(self) -> Clock:
        synchronize(self.device)
        self._began = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        synchronize(self.device)
        self.ms = (time.perf_counter() - self._began) * 1000.0


@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    """What a report says about where it ran."""

    kind: str  # "cpu", "cuda", "mps"
    name: str  # e.g. "NVIDIA H100 80GB HBM3", the CPU's model name, "Apple M2"
    dtype: str  # the weights' and the cache's dtype
    torch_version: str
    runtime: str  # "CUDA 12.8", "MPS (macOS 15.1)", "CPU"
    driver: str  # the NVIDIA driver's version, or "" where there is none to name
    memory_bytes: int | None  # the device's total memory (None for the CPU: the machine's RAM is shared)

    def describe(self) -> str:
        memory = f", {self.memory_bytes / 2**30:.1f} GiB" if self.memory_bytes else ""
        driver = f", driver {self.driver}" if self.driver else ""
        return f"{self.kind}: {self.name}{memory} ({self.runtime}{driver}; torch {self.torch_version}; {self.dtype})"


def _nvidia_driver() -> str:
    """The driver version nvidia-smi reports ('' when there is no nvidia-smi to ask)."""
    if shutil.which("nvidia-smi") is None:
        return ""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return (out.stdout.strip().splitlines() or [""])[0]


def describe(device: str, dtype: str) -> DeviceInfo:
    """Name the device a run used (call only for an available device)."""
    if device == "cuda":
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        return DeviceInfo(
            "cuda",
            props.name,
            dtype,
            torch.__version__,
            f"CUDA {torch.version.cuda}",
            _nvidia_driver(),
            int(props.total_memory),
        )
    if device == "mps":
        return DeviceInfo(
            "mps",
            platform.processor() or "Apple GPU",
            dtype,
            torch.__version__,
            f"MPS (macOS {platform.mac_ver()[0] or '?'})",
            "",
            None,
        )

    return DeviceInfo(
        "cpu", cpu_name(), dtype, torch.__version__, f"CPU, {torch.get_num_threads()} torch threads", "", None
    )


def free_memory_bytes(device: str) -> int | None:
    """Free device memory now (None on the CPU and MPS, where the machine's RAM is shared)."""
    if device == "cuda":
        free, _total = torch.cuda.mem_get_info()
        return int(free)
    return None
