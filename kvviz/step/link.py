"""A link to the step-through stage: what it carries (prompt, steps, sampling, layer, head, view, presenter
mode), written to and read from a page's query parameters. Read defensively: a link is typed, pasted, truncated;
every value is clamped to the limits the widgets and the records use, or defaulted. Torch-free and UI-free."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kvviz import routes
from kvviz.inputs import query_values
from kvviz.step.records import DEFAULT_SAMPLING, SEED, TEMPERATURE, TOP_K, Sampling

# ----- a link to the stage: what it carries, read defensively (a link is typed, pasted, truncated) ---------
_STAGE = routes.STEP_THROUGH  # the page a link to the stage opens: its query keys and their kinds
VIEW_NAMES = _STAGE.kinds["view"].options  # the stage's views, as a link names them (?view=race)


def url_int(text: str | None, default: int, lo: int, hi: int) -> int:
    """A link's integer, clamped to [lo, hi]: '12' -> 12, '-3' -> lo, a 40-digit string -> hi; anything that is
    not a whole number ('1.5', 'nan', '', 'x') -> default. Never raises."""
    return query_values.clamped_int(text, default, lo, hi)  # the one reader of a whole number (kvviz.inputs)


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

    def values(self) -> dict[str, object]:
        """{field: value} as the page's state writes it into its own URL (kvviz.ui.url_state: the route's kinds
        write each value; the pickers' layer and head are the bound widgets' own, left out)."""
        return {
            "prompt": self.prompt,
            "steps": self.steps,
            "greedy": self.greedy,
            "temperature": self.temperature,
            "top_k": self.top_k,
            "seed": self.seed,
            "view": self.view,
            "present": self.present,
        }

    @property
    def replay_key(self) -> tuple:
        """What the replay depends on (not layer, head, view: the reader's own clicks rewrite those in the URL)."""
        return (self.prompt, self.steps, self.greedy, self.temperature, self.top_k, self.seed)


def parse_link(query: Mapping[str, str], n_positions: int, default: Sampling = DEFAULT_SAMPLING) -> StageLink | None:
    """The link in a page's query parameters ({key: text}), or None without ?prompt=. Every value is read by its
    kind in the routes table, clamped to the sampling limits (kvviz.step.records) and the model's context or, when
    it is not a number, taken from `default`."""
    kinds = _STAGE.kinds

    def read(name: str, fallback, **bounds):
        return kinds[name].clamp(query.get(_STAGE.key(name)), fallback, **bounds)

    prompt = query.get(_STAGE.key("prompt"))
    if prompt is None:
        return None

    def picker(name: str, prefix: str) -> int:
        text = query.get(_STAGE.key(name), "")
        return url_int(text[len(prefix) :] if text.startswith(prefix) else text, 0, 0, 10_000)

    return StageLink(
        prompt=kinds["prompt"].parse(prompt, "prompt"),
        steps=read("steps", 0, hi=n_positions),
        greedy=read("greedy", False),
        temperature=read("temperature", default.temperature, lo=TEMPERATURE.lo, hi=TEMPERATURE.hi),
        top_k=read("top_k", default.top_k, lo=TOP_K.lo, hi=TOP_K.hi),  # the page's boxes' own bounds
        seed=read("seed", default.seed, lo=SEED.lo, hi=SEED.hi),
        view=read("view", "one"),
        present=read("present", False),
        layer=picker("layer", "L"),
        head=picker("head", "H"),
    )
