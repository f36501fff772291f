"""The teacher's guide: a 30-minute and a 45-minute plan (which pages, in which order, what to ask, what to show,
where students usually go wrong) and how to run kvviz for a class. One source for pages/teachers.py and the
teacher's guide, docs/teaching.md (tests/test_glossary_teachers.py checks the guide agrees). No Streamlit, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from kvviz import routes
from kvviz.i18n import N_, _, numbers
from kvviz.memory import units


@dataclass(frozen=True)
class Block:
    minutes: int
    page: routes.Route  # the page to open
    query: dict[str, str]  # its state for this block (page.query(...): English labels, page.localized shows them)
    show: str  # what to show
    ask: str  # what to ask the room
    pitfall: str  # where students usually go wrong

    @property
    def link(self) -> str:
        """The URL tail a teacher types, as the plans print it: "/lesson?step=7&lesson_class=true"."""
        return self.page.url(self.query)


_LESSON, _PATTERNS, _MEMORY = routes.LESSON, routes.ATTENTION_PATTERNS, routes.MEMORY_BUDGET


PLAN_30: tuple[Block, ...] = (
    Block(
        3,
        routes.HOME,
        {},
        N_("The one-paragraph story: one token per pass, keys and values kept."),
        N_("What would a model recompute, without the cache, to write the next word?"),
        N_(
            "Thinking the cache stores text or whole sentences: it stores vectors, one K and one V row per token "
            "per head per layer."
        ),
    ),
    Block(
        12,
        _LESSON,
        _LESSON.query(step=1, class_mode="true"),
        N_(
            "Lesson steps 1-6 in class mode: the question large, the room answers aloud, one click (or V) reveals "
            "it with its figure, then Y or N marks the room right or wrong (the summary counts the room's score)."
        ),
        N_("Step 2: how many rows after the prefill? Step 5: which row does the copying head read?"),
        N_(
            "Step 2: counting positions from 1 (the last position is one less than the number of tokens). Step 4: "
            "thinking Q is cached too. Step 5: choosing the earlier copy of the token instead of the token after it."
        ),
    ),
    Block(
        8,
        routes.STEP_THROUGH,
        routes.STEP_THROUGH.query(present=1, fresh=1),
        N_(
            "Presenter mode, the cache still empty: Prefill (P) the ROMEO: prompt, then Next token (Right arrow) a "
            "few times: one new row per layer, the new query's attention beside the rows it reads."
        ),
        N_("Before each click: how many rows will layer 0 hold now?"),
        N_(
            "Expecting the timing of one cached step to beat the uncached one every time: at this model's size "
            "one step is mostly fixed overhead. Show it: the view picker's Race times both side by side (lesson step "
            "11 asks it)."
        ),
    ),
    Block(
        7,
        _LESSON,
        _LESSON.query(step=7, class_mode="true"),
        N_(
            "Lesson steps 7-9 in class mode: one step's dot products, the whole-run sum, the bytes at 1000 tokens; "
            "reveal (V), then mark the room (Y or N)."
        ),
        N_("Step 7: how many dot products does one cached step compute?"),
        N_(
            "Step 7: forgetting that the new token scores its own key (the diagonal cell). Step 8: using the last "
            "step's ratio for the whole run. Step 9: mixing MB and MiB, or forgetting the 2 for K and V."
        ),
    ),
)

PLAN_45: tuple[Block, ...] = PLAN_30[:3] + (
    Block(
        5,
        _PATTERNS,
        _PATTERNS.query(source="Repeat a pattern", layer=3, head=1),
        N_(
            "Repeat a pattern, layer 3, head 1 (the lesson's copying head, the strongest induction head on this "
            "sequence): its stripe one column right of the diagonal of repeats."
        ),
        N_("Which head copies? Which old row does it read?"),
        N_("Reading the diagonal as 'the head looks at itself': the stripe is offset by one, the token after."),
    ),
    Block(
        10,
        _LESSON,
        _LESSON.query(step=7, class_mode="true"),
        N_("Lesson steps 7-12: counting, the whole-run sum, bytes, GQA, measured time, paged blocks."),
        N_("Step 10: how much smaller is Llama-3-8B's cache with 8 K/V heads instead of 32?"),
        N_("Step 8: the last step's saving is not the run's. Step 11: expecting time to follow op counts."),
    ),
    Block(
        5,
        _MEMORY,
        _MEMORY.query(preset="llama-3-8b", context=8192, tab="What fits"),
        N_(
            "Llama-3-8B at its full context (8,192 tokens), on What fits: GB vs GiB, what fits on a GPU, and the "
            "context at which the cache outweighs the weights."
        ),
        N_("At what context does the cache outweigh the model's own weights?"),
        N_(
            "Reading a GB figure as GiB (7% apart at this size); expecting the cache to pass the weights within "
            "the model's own context window (at batch 1 it takes far longer: the page computes where)."
        ),
    ),
    Block(
        2,
        _LESSON,
        _LESSON.query(step="End"),
        N_("The summary: the twelve ideas and the room's score."),
        N_("Which idea surprised you?"),
        N_("—"),
    ),
)

# The one command that serves a class (docs/deploying.md and docs/teaching.md print it too): runnable as printed, its
# address an example the guide explains (this computer's address on the room's network, the one students type;
# Streamlit prints its link with it and never looks up an external address).
EXAMPLE_ADDRESS = "192.168.1.20"
STREAMLIT_PORT = 8501  # Streamlit's default
SERVE_A_CLASS = (
    f"KVVIZ_SHARED=1 .venv/bin/streamlit run app.py --server.address 0.0.0.0 --browser.serverAddress {EXAMPLE_ADDRESS}"
)

RUN_FOR_A_CLASS = N_(
    "**One laptop and a projector.** Run `.venv/bin/streamlit run app.py`, open the Lesson, turn on **Class mode** "
    "(or open `{class_link}`): no sidebar, large type, no typing, **Reveal the answer** (or V) "
    "shows the answer and its figure, then **The room got it** (Y) or **The room missed it** (N) scores the room: "
    "the summary shows the room's score. Right/Left arrows move between steps. On the step page, Presenter mode "
    "(`?{presenter_query}`) hides the sidebar.\n\n"
    "**Students on their own devices, one link.** Start one server for the room in shared mode: `{command}` (or "
    "`deploy/run_class.sh` for one process per core behind nginx), where {address} stands for this computer's "
    "address on the room's network (`hostname -I` prints it on Linux, `ipconfig getifaddr en0` on a Mac). Give "
    "students one link, `{student_link}`: it starts them at step 1. Each student's lesson, answers and cache are "
    "their own session. Shared mode offers only the models you list, so no browser can make the server load "
    "anything else.\n\n"
    "**The handout.** From the lesson's **Handout** button: one printable page per step with the question, the "
    "figure and the worked answer, computed for the model the lesson ran on, and beside it the worksheet: the "
    "same pages without hints or answers. Print them from the browser."
)


def run_for_a_class() -> str:
    """RUN_FOR_A_CLASS in the current language, its links built from the routes table."""
    return _(RUN_FOR_A_CLASS).format(
        class_link=_LESSON.url(_LESSON.query(step=1, class_mode="true")),
        presenter_query=urlencode(routes.STEP_THROUGH.query(present=1, fresh=1)),
        command=SERVE_A_CLASS,
        address=EXAMPLE_ADDRESS,
        student_link=f"http://{EXAMPLE_ADDRESS}:{STREAMLIT_PORT}{_LESSON.url(_LESSON.query(step=1))}",
    )


def plan_tables() -> str:
    """Both plans as docs/teaching.md's markdown tables (tests/test_glossary_teachers.py checks the guide holds
    exactly this text)."""
    out = []
    for plan in (PLAN_30, PLAN_45):
        out += [
            f"**{total_minutes(plan)} minutes**",
            "",
            "| min | open | show | ask | where students go wrong |",
            "|---|---|---|---|---|",
        ]
        out += [
            f"| {r['minutes']} | `{r['open']}` | {r['show']} | {r['ask']} | {r['where students go wrong']} |"
            for r in plan_rows(plan)
        ]
        out.append("")
    return "\n".join(out)


def plan_rows(plan: tuple[Block, ...]) -> list[dict[str, str]]:
    """The plan as table rows, with the running clock."""
    rows, clock = [], 0
    for b in plan:
        rows.append(
            {
                "minutes": numbers.span(clock, clock + b.minutes),
                "open": b.link,
                "show": b.show,
                "ask": b.ask,
                "where students go wrong": b.pitfall,
            }
        )
        clock += b.minutes
    return rows


def total_minutes(plan: tuple[Block, ...]) -> int:
    return sum(b.minutes for b in plan)


# ----- an optional question the plans do not time: a hybrid model (the teacher offers it where it fits) ----------
HYBRID_PROMPT = "ROMEO:"  # 2 tokens (tests/test_page_hybrid.py): Prefill and 38 Next make the question's 40
HYBRID_PROMPT_TOKENS = 2
HYBRID_TOKENS = 40
HYBRID_WHEN = N_(
    "**An optional question: a hybrid model.** Offer it after the step page, once the room has seen one K and V row "
    "per layer for every token, and before the memory budget. Many of today's models (Qwen3-Next, Qwen3.5, Jamba, "
    "Granite-4.0-H) keep a K/V cache in only some of their layers; the bundled hybrid keeps one in 1 of its 4. The "
    "link opens the step page on it at {tokens} tokens, on its attention layer; layers 0 to 2 show their states."
)
HYBRID_ASK = N_(
    "After {tokens} tokens, how many rows do the linear-attention layers hold, and how many does the "
    "attention layer hold?"
)
HYBRID_ANSWER = N_(
    "The linear-attention layers (layers {linear}) hold no rows at all: each keeps a fixed state of {state} (one "
    "{d_k} x {d_v} matrix per head and the last inputs of its short convolution), the same after 1 token or "
    "{positions}. The attention layer (layer {attention}) holds {tokens} rows, {kv} of K and V, and gains one row "
    "({row}) with every token: from {cross} tokens on, its K/V is as big as all the states together."
)
HYBRID_PITFALL = N_(
    "Expecting every layer to grow by a row, as in the first steps of the lesson; or picturing the "
    "state as a few kept rows: it is one matrix per head that every token rewrites."
)


@dataclass(frozen=True)
class HybridQuestion:
    """The optional question's numbers, computed from the bundled hybrid's config.json (no model run): per layer,
    the K/V rows and bytes after `tokens` tokens and the fixed state's bytes (float32, as the model runs here)."""

    tokens: int
    layers: tuple[int, ...]
    kv_rows: tuple[int, ...]
    kv_bytes: tuple[int, ...]
    state_bytes: tuple[int, ...]
    row_bytes: int  # one more token's K and V in the attention layers
    linear: tuple[int, ...]
    attention: tuple[int, ...]
    d_k: int
    d_v: int
    n_positions: int

    @property
    def link_query(self) -> dict[str, str]:
        """The step page at the question's state: the hybrid, the prompt and its steps, greedy, the attention
        layer (the model key is the app's own, kvviz.ui.links, not the page's)."""
        return {
            **routes.STEP_THROUGH.query(
                prompt=HYBRID_PROMPT, steps=self.tokens - HYBRID_PROMPT_TOKENS, greedy=1, layer=f"L{self.attention[0]}"
            ),
            "model": "bundled-hybrid",
        }

    @property
    def crossover_tokens(self) -> int:
        """The first context at which the attention layers' K/V is at least every state together."""
        return -(-sum(self.state_bytes) // self.row_bytes)

    def answer(self) -> str:
        return _(HYBRID_ANSWER).format(
            linear=_(", ").join(map(str, self.linear)),
            state=units.short_bytes(max(self.state_bytes)),
            d_k=self.d_k,
            d_v=self.d_v,
            positions=self.n_positions,
            attention=_(", ").join(map(str, self.attention)),
            tokens=self.tokens,
            kv=units.short_bytes(sum(self.kv_bytes)),
            row=units.short_bytes(self.row_bytes),
            cross=self.crossover_tokens,
        )


def hybrid_question(tokens: int = HYBRID_TOKENS) -> HybridQuestion:
    from kvviz.model import loading  # config.json and the safetensors header only: no torch

    info = loading.bundled_info(name=loading.BUNDLED_HYBRID)
    state = sum(info.linear_state_bytes())  # in the dtype the model runs in (float32), as transformers keeps it
    row = info.kv_bytes_per_position(4)  # every attention layer's K and V of one token, float32
    per_layer_row = row // len(info.attention_layers)
    attention = set(info.attention_layers)
    return HybridQuestion(
        tokens=tokens,
        layers=tuple(range(info.n_layer)),
        kv_rows=tuple(tokens if i in attention else 0 for i in range(info.n_layer)),
        kv_bytes=tuple(tokens * per_layer_row if i in attention else 0 for i in range(info.n_layer)),
        state_bytes=tuple(0 if i in attention else state for i in range(info.n_layer)),
        row_bytes=row,
        linear=info.linear_layers,
        attention=info.attention_layers,
        d_k=info.linear_key_dim,
        d_v=info.linear_value_dim,
        n_positions=info.n_positions,
    )
