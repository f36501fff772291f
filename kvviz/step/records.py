"""Torch-free records of the stepping engine: what one forward pass produced, as plain numpy and text.

kvviz.step.engine (which runs the model) creates them; pages, figures and kvviz.step.view read them without
importing torch. Shapes use L = n_layer, H = key/value heads, Hq = query heads, D = head_dim,
N = tokens fed in the pass, S = cache length after it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from kvviz.i18n import N_
from kvviz.inputs.prompt_rules import FloatSetting, IntSetting, PromptError, check_int_in_range
from kvviz.measure.timing import median, middle_halves_overlap

__all__ = [
    "ContextFullError",
    "ContextRace",
    "Equivalence",
    "LinearState",
    "ParkedGeneration",
    "PromptError",
    "RACE_BUDGET_S",
    "RaceTiming",
    "PLAY_STEPS",
    "SEED",
    "SEED_MAX",
    "TEMPERATURE",
    "TOP_K",
    "Sampling",
    "StepRecord",
    "TEMPERATURE_MAX",
    "TEMPERATURE_MIN",
    "TOP_K_MAX",
    "TokenProb",
    "draw_seed",
]


class ContextFullError(ValueError):
    """The model has no learned position left for another token."""


# The sampling limits, in one place: the Prompt popover's widgets, a link's values and the record all use them.
TEMPERATURE_MIN, TEMPERATURE_MAX = 0.1, 2.0  # below 0.1 the draw is greedy in all but name; above 2 it is noise
TOP_K_MAX = 200  # 0 = off; the bars show the top 6, and 200 already keeps every token a small model rates
SEED_MAX = 1_000_000


@dataclass(frozen=True)
class Sampling:
    """Greedy (argmax) by default. With greedy=False: temperature, then top-k, then a seeded draw.

    The draw for the token at position p is seeded by `draw_seed(seed, tokens before p)`: it depends on the
    seed AND on every token fed so far, so "ROMEO:" and "JULIET:" continue differently with the same seed,
    while stepping back and stepping again replays the same token (rollback stays exact).
    """

    greedy: bool = True
    temperature: float = 1.0
    top_k: int = 0  # 0 = no top-k filter
    seed: int = 0

    def __post_init__(self) -> None:
        if not (TEMPERATURE_MIN <= self.temperature <= TEMPERATURE_MAX):
            raise ValueError(f"temperature must be between {TEMPERATURE_MIN} and {TEMPERATURE_MAX}")
        check_int_in_range(
            self.top_k, 0, TOP_K_MAX, "top_k"
        )  # 0 = off; the one reader of a whole number (kvviz.inputs)
        check_int_in_range(self.seed, 0, SEED_MAX, "seed")


# The step page's default decoding. Greedy is one toggle away, but it is not the default: a model this small
# puts its highest probability on continuing a phrase it has just produced, so greedy decoding, which can never
# pick anything else, locks into a loop (both bundled models' greedy samples in their training_report.json loop
# within 80 tokens); induction heads, which copy what already stands in the context, make that loop stronger.
# A seeded draw at temperature 0.8 from the 40 likeliest tokens leaves the loop and stays reproducible.
DEFAULT_SAMPLING = Sampling(greedy=False, temperature=0.8, top_k=40, seed=0)
# The step-through page's boxes and its link's values: each setting's one home.
TEMPERATURE = FloatSetting(
    N_("temperature"), TEMPERATURE_MIN, TEMPERATURE_MAX, default=DEFAULT_SAMPLING.temperature, step=0.05
)
TOP_K = IntSetting(N_("top-k"), 0, TOP_K_MAX, default=DEFAULT_SAMPLING.top_k)
SEED = IntSetting(N_("seed"), 0, SEED_MAX, default=DEFAULT_SAMPLING.seed)
PLAY_STEPS = IntSetting(N_("steps to play"), 1, 64, default=8)


def draw_seed(seed: int, token_ids: list[int] | tuple[int, ...]) -> int:
    """A 63-bit generator seed from the user's seed and the exact token prefix (stable across processes)."""
    digest = hashlib.blake2b(repr((int(seed), tuple(int(t) for t in token_ids))).encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "little") >> 1


@dataclass(frozen=True)
class TokenProb:
    token_id: int
    text: str
    prob: float


@dataclass(frozen=True)
class LinearState:
    """One linear-attention layer's whole cache after a pass (transformers' LinearAttentionLayer, batch 0): a
    fixed-size state instead of K/V rows. Exact float copies of the cache's tensors; the bytes are the tensors'
    own (numel x element size), the same after every pass."""

    layer: int  # the decoder layer it belongs to
    # [num_heads, d_k, d_v]: Gated DeltaNet's recurrent state, one d_k x d_v matrix per head, rewritten every token
    recurrent: np.ndarray = field(repr=False)
    # [conv_channels, conv_kernel]: the inputs of the short causal convolution over q, k, v (the newest columns)
    conv: np.ndarray = field(repr=False)
    recurrent_bytes: int = 0
    conv_bytes: int = 0

    @property
    def total_bytes(self) -> int:
        return self.recurrent_bytes + self.conv_bytes


@dataclass(frozen=True)
class StepRecord:
    """One forward pass, everything a page draws: the K/V rows it appended and the newest query's attention.

    The cache after pass k is exactly the concatenation of new_keys/new_values of records 0..k, so a page can
    redraw any earlier step (the history slider) from the records alone, without recomputing anything.
    """

    index: int  # 0 = prefill, k = k-th decode step
    kind: str  # "prefill" | "decode"
    fed_token_ids: tuple[int, ...]  # the q_len tokens fed in this pass
    fed_token_texts: tuple[str, ...]  # their readable text (token_text)
    fed_positions: tuple[int, ...]  # their positions (their rows in the cache)
    # [num_layers, num_kv_heads, q_len, head_dim] (kvviz.model.dims's axis legend): the rows this pass appended.
    # num_layers counts the layers that keep K/V (ModelDims.attention_layers: every layer but a hybrid's linear ones)
    new_keys: np.ndarray = field(repr=False)
    new_values: np.ndarray = field(repr=False)  # [num_layers, num_kv_heads, q_len, head_dim]
    # [num_layers, num_heads, seq_len]: the last fed token's query (every query head) over all cached rows
    attention: np.ndarray = field(repr=False)
    next_logits: np.ndarray = field(repr=False)  # [vocab_size]: logits for the token after the last fed one
    top_k: tuple[TokenProb, ...]  # most likely next tokens, softmax at temperature 1
    next_token_id: int  # the token chosen from next_logits (fed by the next pass)
    next_token_text: str
    cache_len: int  # rows per layer after this pass (the cache's seq_len)
    cache_bytes: int  # bytes of all K and V tensors after this pass, summed from the real tensors
    step_ms: float  # wall time of the forward pass
    states: tuple[LinearState, ...] = ()  # a hybrid's linear-attention layers after this pass (fixed size)

    @property
    def state_bytes(self) -> int:
        """Bytes of every linear-attention state (0 for a model whose layers are all attention)."""
        return sum(s.total_bytes for s in self.states)

    @property
    def n_fed(self) -> int:
        return len(self.fed_token_ids)


@dataclass(frozen=True)
class Equivalence:
    """The same step recomputed without a cache: a full forward over every token fed so far."""

    max_abs_logit_diff: float
    same_next_token: bool
    max_abs_key_diff: float  # between the incremental cache and K recomputed from scratch
    max_abs_value_diff: float
    recomputed_rows: int  # K/V rows per layer the uncached pass had to compute (all of them)
    uncached_ms: float  # wall time of that full forward (the "without cache" side of the race)


# The race view's measuring time per click (kvviz.step.engine.race_timing), or one repeat of each side where one
# repeat costs more (the GPT-2 124M shape at a long context: one long pass). Here, torch-free, so a page can say it.
RACE_BUDGET_S = 0.15


@dataclass(frozen=True)
class RaceTiming:
    """One step timed both ways, each side a set of repeats (interleaved, so a burst of load hits both alike;
    one repeat where a repeat costs more than the click's budget).

    cached_ms: the step as the engine runs it (the newest token fed over the rows already cached);
    uncached_ms: the same logits with no cache (a full forward over every token fed so far);
    fixed_ms: a forward of one token with nothing cached, the fixed cost every forward pays on this machine
    (Python, the layer loop, the weight reads of the LM head), whatever the sequence length.
    """

    seq_len: int  # tokens the uncached side feeds (= rows in the cache after the step)
    cached_ms: tuple[float, ...]
    uncached_ms: tuple[float, ...]
    fixed_ms: tuple[float, ...]
    model_label: str = ""
    load_1min: float = float("nan")  # the machine's 1-minute load average when measured (kvviz.measure.load)

    @property
    def cached_median_ms(self) -> float:
        return median(self.cached_ms)

    @property
    def uncached_median_ms(self) -> float:
        return median(self.uncached_ms)

    @property
    def fixed_median_ms(self) -> float:
        return median(self.fixed_ms)

    @property
    def repeats(self) -> int:
        return min(len(self.cached_ms), len(self.uncached_ms))

    @property
    def inside_noise(self) -> bool:
        """The two sides' interquartile ranges overlap (kvviz.measure.timing's one rule): half the repeats of
        each side lie where the other's lie, so the difference of the medians is not to be read as a winner.
        (One repeat a side has no range: see single_repeat.)"""
        return middle_halves_overlap(self.cached_ms, self.uncached_ms)

    @property
    def single_repeat(self) -> bool:
        """One repeat a side (one repeat cost more than the click's budget): no spread to judge the noise by."""
        return self.repeats < 2

    @property
    def below_floor(self) -> tuple[str, ...]:
        """The sides ("cached", "uncached") whose median came in under the 1-token forward's median. Each side
        does that forward's work and more, so such a gap is noise; a caption must never say that side stands on
        the floor (the chart would contradict it)."""
        floor = self.fixed_median_ms
        return tuple(
            side
            for side, median in (("cached", self.cached_median_ms), ("uncached", self.uncached_median_ms))
            if median < floor
        )

    @property
    def paired_saving_ms(self) -> float:
        """Median over repeats of (uncached - cached), each pair measured back to back: a burst of load that
        slows one repeat slows its partner too, so this is steadier than the difference of the two medians."""
        return median(np.subtract(self.uncached_ms[: self.repeats], self.cached_ms[: self.repeats]))

    @property
    def cached_faster(self) -> bool:
        """The verdict the race shows: the cached step won the paired comparison."""
        return self.paired_saving_ms > 0


@dataclass(frozen=True)
class ContextRace:
    """One decode step of a hybrid and of its all-attention twin (the same shape, every layer attention), timed at
    several context lengths, each side's repeats interleaved with the other's at every length (kvviz.measure.repeats),
    so a burst of load hits both alike. hybrid_ms[i] / twin_ms[i]: the step that feeds token contexts[i] - 1 over a
    cache of contexts[i] - 1 tokens."""

    contexts: tuple[int, ...]
    hybrid_ms: tuple[tuple[float, ...], ...]
    twin_ms: tuple[tuple[float, ...], ...]
    hybrid_label: str = ""
    twin_label: str = ""
    load_1min: float = float("nan")

    def medians(self) -> tuple[tuple[float, float], ...]:
        """(hybrid, twin) median per context."""
        return tuple((median(h), median(t)) for h, t in zip(self.hybrid_ms, self.twin_ms, strict=True))

    def inside_noise(self) -> tuple[bool, ...]:
        """Per context: the two sides' middle halves overlap (kvviz.measure.timing's one rule): no winner to read."""
        return tuple(middle_halves_overlap(h, t) for h, t in zip(self.hybrid_ms, self.twin_ms, strict=True))

    @property
    def repeats(self) -> int:
        return min((len(x) for x in self.hybrid_ms + self.twin_ms), default=0)


@dataclass(frozen=True)
class ParkedGeneration:
    """A generation put aside when its student switched to another model: enough to replay it exactly
    (the same tokens fed in the same order) when they switch back. Plain values only: no model is held."""

    spec: str  # the model it ran on
    model_label: str
    prompt_text: str
    prompt_len: int
    token_ids: tuple[int, ...]  # every token fed, prompt first
    sampling: Sampling

    @property
    def steps(self) -> int:
        return len(self.token_ids) - self.prompt_len
