"""Colour: the categories a figure tells apart by colour stay apart for a reader with a colour-vision
deficiency. Each palette is simulated for protanopia, deuteranopia and tritanopia (Machado, Oliveira and Fernandes
2009, severity 1, applied in linear RGB) and every pair of its colours must stay at least MIN_DELTA_E apart in CIELAB
(CIE76). With tab10's green and red, "reused" and "rejected", "cached" and "uncached" fall to ΔE 7 under
deuteranopia. The palettes of seven and eight colours (all the benchmark's modes, the eviction policies, the lesson's
query heads) are not held to it: each of their lines is named in the legend and on hover (docs/teaching.md); the benchmark's
four headline modes, which its charts draw by default, are."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kvviz.figures import bench, device, eviction, internals, memory, ops, step

MIN_DELTA_E = 15.0  # a difference a reader sees at a glance between two lines or bars; tab10's green/red gave 7
MACHADO = {
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]],
}
PALETTES = {  # the colours one figure shows side by side, each meaning something
    "ops: cached, uncached": (ops.CACHED_COLOR, ops.UNCACHED_COLOR),
    "device: cached, uncached": (device.CACHED_COLOR, device.UNCACHED_COLOR),
    "bench: pass kinds": tuple(bench.KIND_COLORS.values()),
    "bench: the headline modes (drawn by default)": tuple(bench.COLORS[m] for m in bench.HEADLINE_MODES),
    "internals: reused, computed, waste, rejected": (
        internals.REUSED_COLOR,
        internals.COMPUTED_COLOR,
        internals.WASTE_COLOR,
        internals.REJECTED_COLOR,
    ),
    "internals: global, local": (internals.GLOBAL_COLOR, internals.LOCAL_COLOR),
    "internals: cache formats": tuple(internals.SCHEME_COLORS.values()),
    "memory: compared models": memory.LINE_COLORS,
    "eviction: kept, evicted, sink": (eviction.KEPT_COLOR, eviction.EVICTED_COLOR, eviction.SINK_COLOR),
    "stage: new row, attention": (step.NEW_ROW_COLOR, step.ATTENTION_COLOR),
}


def _linear(hex_colour: str) -> np.ndarray:
    srgb = np.array([int(hex_colour.lstrip("#")[i : i + 2], 16) for i in (0, 2, 4)]) / 255
    return np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)


def _lab(linear_rgb: np.ndarray) -> np.ndarray:
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear_rgb
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])  # D65 white
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _seen(hex_colour: str, vision: str | None) -> np.ndarray:
    rgb = _linear(hex_colour)
    return _lab(np.clip(np.array(MACHADO[vision]) @ rgb, 0, 1) if vision else rgb)


def _closest_pair(colours, vision: str | None) -> tuple[float, str, str]:
    return min(
        (float(np.linalg.norm(_seen(a, vision) - _seen(b, vision))), a, b)
        for a, b in itertools.combinations(colours, 2)
    )


def test_the_simulation_is_the_published_one():
    """Sanity of the oracle: white stays white, and the classic confusion shows (pure red and green nearly merge
    under deuteranopia, not under tritanopia)."""
    assert np.allclose(_seen("#ffffff", "deuteranopia"), _seen("#ffffff", None), atol=1.5)
    assert _closest_pair(("#d62728", "#2ca02c"), "deuteranopia")[0] < 10
    assert _closest_pair(("#d62728", "#2ca02c"), "tritanopia")[0] > 50


@pytest.mark.parametrize("vision", [None, *MACHADO])
@pytest.mark.parametrize("name", list(PALETTES))
def test_every_palette_stays_apart_under_colour_vision_deficiency(name, vision):
    distance, a, b = _closest_pair(PALETTES[name], vision)
    assert distance >= MIN_DELTA_E, f"{name}: {a} and {b} are ΔE {distance:.1f} apart for {vision or 'normal vision'}"
