"""A link to the step-through stage: what it carries (prompt, steps, sampling, layer, head, view, presenter
mode), written to and read from a page's query parameters. Read defensively: a link is typed, pasted, truncated;
every value is clamped to the limits the widgets and the records use, or defaulted. Torch-free and UI-free."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from kvviz import routes
from kvviz.inputs import query_values
from kvviz.inputs.prompt_rules import MAX_TEXT_CHARS
from kvviz.step.records import DEFAULT_SAMPLING, SEED, TEMPERATURE, TOP_K, Sampling

# ----- a link to the stage: what it carries, read defensively (a link is typed, pasted, truncated) ---------
VIEW_NAMES = ("one", "race", "gqa")  # the stage's views, as a link names them (?view=race)
_STAGE = routes.STEP_THROUGH  # the page a link to the stage opens: its query keys


def url_int(text: str | None, default: int, lo: int, hi: int) -> int:
    """A link's integer, clamped to [lo, hi]: '12' -> 12, '-3' -> lo, a 40-digit string -> hi; anything that is
    not a whole number ('1.5', 'nan', '', 'x') -> default. Never raises."""
    return query_values.clamped_int(text, default, lo, hi)  # the one reader of a whole number (kvviz.inputs)


def url_float(text: str | None, default: float, lo: float, hi: float) -> float:
    """A link's number, clamped to [lo, hi]; not a finite number -> default. Never raises."""
    try:
        value = float((text or "").strip()[:32])
    except ValueError:
        return default
    return max(lo, min(hi, value)) if math.isfinite(value) else default


FLAG_WORDS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


def url_flag(text: str | None) -> bool:
    return FLAG_WORDS.get((text or "").strip().lower(), False)


def is_url_flag(text: str | None) -> bool:
    """The value is one a flag takes (1/0, true/false, yes/no, on/off): anything else is named, not dropped."""
    return (text or "").strip().lower() in FLAG_WORDS


def picker_label(prefix: str, index: int) -> str:
    """How the stage's layer / head pickers show an option, and so how their URL keys carry it (step_layer=L2):
    the pickers are bound to the URL (bind="query-params"), which writes the shown label."""
    return f"{prefix}{index}"


@dataclass(frozen=True)
class StageLink:
    """Everything that defines the stage's view, as a link carries it."""

    prompt: str
    steps: int
    greedy: bool
    temperature: float
    top_k: int
    seed: int
    view: str = "one"
    present: bool = False
    layer: int = 0
    head: int = 0

    def query(self) -> dict[str, str]:
        """The link's query parameters (keys: the step page's route). Layer and head use the pickers' own URL keys
        and labels."""
        return _STAGE.query(
            prompt=self.prompt,
            steps=self.steps,
            greedy=int(self.greedy),
            temperature=f"{self.temperature:g}",
            top_k=self.top_k,
            seed=self.seed,
            view=self.view,
            present=int(self.present),
            layer=picker_label("L", self.layer),
            head=picker_label("H", self.head),
        )

    @property
    def replay_key(self) -> tuple:
        """What the replay depends on (not layer, head, view: the reader's own clicks rewrite those in the URL)."""
        return (self.prompt, self.steps, self.greedy, self.temperature, self.top_k, self.seed)


def parse_link(query: Mapping[str, str], n_positions: int, default: Sampling = DEFAULT_SAMPLING) -> StageLink | None:
    """The link in a page's query parameters, or None without ?prompt=. Every value is clamped to the sampling
    limits (kvviz.step.records) or, when it is not a number, taken from `default`."""

    def get(name: str, default: str | None = None) -> str | None:
        return query.get(_STAGE.key(name), default)

    prompt = get("prompt")
    if prompt is None:
        return None
    view = get("view", "one")

    def picker(name: str, prefix: str) -> int:
        text = get(name, "")
        return url_int(text[len(prefix) :] if text.startswith(prefix) else text, 0, 0, 10_000)

    return StageLink(
        prompt=prompt[:MAX_TEXT_CHARS],
        steps=url_int(get("steps"), 0, 0, n_positions),
        greedy=url_flag(get("greedy")),
        temperature=url_float(get("temperature"), default.temperature, TEMPERATURE.lo, TEMPERATURE.hi),
        top_k=url_int(get("top_k"), default.top_k, TOP_K.lo, TOP_K.hi),  # the page's boxes' own bounds
        seed=url_int(get("seed"), default.seed, SEED.lo, SEED.hi),
        view=view if view in VIEW_NAMES else "one",
        present=url_flag(get("present")),
        layer=picker("layer", "L"),
        head=picker("head", "H"),
    )
