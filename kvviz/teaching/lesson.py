"""The guided lesson: twelve short steps, each asks one question before it tells (torch-free, plotly-free, UI-free).

Every answer is computed live: from the real model through the caller's StepEngine (passed in, so this
module never imports torch), or from kvviz's own arithmetic (ops, memory, capacity, presets). A step's
`ask(engine)` returns a Question with the computed answer, a picture (plain numbers for
kvviz.figures.lesson to draw), hints for a first wrong answer and the worked answer for a second.

The records a step builds (Picture, Question, LessonStep) live here, with the steps that build them:
kvviz.teaching.grading (how an answer is judged and hinted) and kvviz.teaching.score (the score a page keeps and
signs) import them, and this module imports neither, so there is no cycle.

Ask, then help, then tell: a first wrong answer gets a hint that never contains the answer (targeted where
the mistake is predictable, e.g. forgetting that the new token scores its own key); a second wrong answer, or
"Show me", gets the worked answer. Byte answers take a unit (B, KiB/MiB/GiB, KB/MB/GB) and a stated tolerance.

Language: a Question is language-free, computed once and shown in every language. Its texts (the question, the
worked answer, the hints, the captions, each choice) are kvviz.i18n Messages: a msgid marked N_() and the numbers
its fields carry, put into words by `shown()` when a page, the handout or the poll draws them, in the reader's
language. So the model runs once per question whatever the language, and no `_()` runs here while a question is
computed (tests/test_lesson_messages.py checks it). A choice is known by its Message, never by its translation
(grading compares identities). The steps' own texts (title, idea, teach) are msgids marked with N_() and shown with _().
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from kvviz import i18n, memory, ops, routes
from kvviz.i18n import N_, Message, Nn_, _, numbers
from kvviz.measure.load import load_known, load_number
from kvviz.measure.timing import quartiles
from kvviz.memory import capacity, units
from kvviz.memory.presets import get_preset
from kvviz.step import view as step_view

# The model's own input: English on purpose (the bundled models write English), never translated.
LESSON_PROMPT = "First Citizen:\nBefore we proceed any further, hear me speak."
REPEAT_PROMPT = step_view.REPEAT_PROMPT  # the step page's "Repeat a pattern" preset
# A link value (not shown here): its name in the Attention patterns page's sequence picker, whose URL-bound value is
# its label in the link's language (the lesson draws the link with the route's localized(): _(PATTERNS_PRESET)).
PATTERNS_PRESET = "Repeat a pattern"

# Units a byte answer may be given in: decimal (SI) and binary (IEC), 1 GiB = 2^30 bytes, 1 GB = 10^9 bytes.
# The published models some steps compute with (kvviz.memory.presets), by their names as a reader knows them.
PRESET_MODELS = {"gpt2": "GPT-2 small", "llama-3-8b": "Llama-3-8B"}
BYTE_UNITS: dict[str, int] = {unit: units.UNIT_BYTES[unit] for unit in ("B", "KB", "MB", "GB", "KiB", "MiB", "GiB")}
SI_IEC = tuple((decimal, units.BINARY_TWIN[decimal]) for decimal in ("KB", "MB", "GB"))  # the pairs students mix up


@dataclass(frozen=True)
class Picture:
    """One figure for a step, as plain numbers: kvviz.figures.lesson.lesson_figure(kind, data) draws it (figures never
    import the lesson, and the lesson needs no plotly). `after`: shown with the worked answer, because it would give
    the answer away; otherwise shown with the teaching, before the question."""

    kind: str  # which figure: "kv_rows", "tokens", "rows_per_layer", ... (kvviz.figures.lesson draws each)
    data: dict[str, Any]  # its plain numbers and texts (lists, ints, floats, strings; token texts as the model wrote)
    caption: Message  # shown under the figure, in the reader's language
    after: bool = True


@dataclass(frozen=True)
class Question:
    text: Message  # the question, in markdown
    answer: int | float | Message  # the computed answer (a number, or the right choice: one of `choices`)
    arithmetic: Message  # markdown: the worked answer, shown after a second wrong answer or "Show me"
    choices: tuple[Message, ...] = ()  # empty = a number question
    rel_tolerance: float = 0.0  # accepted relative error (stated in the question when not zero)
    states_tolerance: bool = False  # the text itself says "accepted within ..." (else the page adds it)
    unit: str = ""  # "bytes": the answer is in bytes and the student picks a unit (BYTE_UNITS); else a label
    hint: Message | None = None  # the first wrong answer's hint: never contains the answer
    # (a wrong answer it catches: a number, or a choice's Message; its targeted hint): numbers match within
    # rel_tolerance (at least 0.5%)
    traps: tuple[tuple[Any, Message], ...] = ()
    picture: Picture | None = None
    extra_pictures: tuple[Picture, ...] = ()  # e.g. step 5: the tokens before, the head's attention after
    # "See it on the full page" link's URL state, in English: the page draws it with its route's localized()
    page_query: dict[str, str] = field(default_factory=dict)
    model: str = ""  # the published model whose preset the step computes with ("" = the model the lesson runs on)

    @property
    def is_choice(self) -> bool:
        return bool(self.choices)

    @property
    def pictures(self) -> tuple[Picture, ...]:
        return ((self.picture,) if self.picture else ()) + self.extra_pictures

    def answer_text(self) -> str:
        """The answer as the worked answer states it, in the current language: a choice's words, bytes in all three
        forms (the same in every language), a ratio as the language writes one ("72.3x", "72.3 倍":
        kvviz.i18n.numbers.ratio)."""
        if isinstance(self.answer, Message):
            return self.answer.shown()
        if self.unit == "bytes":
            return units.format_bytes(int(self.answer))
        spec = "," if isinstance(self.answer, int) else ",.1f"
        return numbers.ratio(self.answer, spec) if self.unit == "x" else format(self.answer, spec)


@dataclass(frozen=True)
class LessonStep:
    """A step's texts are English msgids marked with N_(): show them with _()."""

    title: str  # never gives the answer away
    idea: str  # the one idea this step teaches, for the ending's summary (shown after the lesson)
    teach: str  # shown before the question: what to look at
    ask: Callable[[Any], Question]  # engine -> Question (the engine is a kvviz.step.engine.StepEngine)
    page: routes.Route  # the full page for this idea (its title: _(page.title))
    terms: tuple[str, ...] = ()  # the glossary's words this step uses (kvviz.teaching.glossary names)
    preset: str = ""  # the published model's preset it computes with (a PRESET_MODELS key); "" = the lesson's model


def _load_text(load_1min: float) -> Message:
    """The machine's load as a question's sentence says it (load_number: "1.7"), or "unknown" in the reader's
    language (load_number's own word, drawn later)."""
    return Message.verbatim(load_number(load_1min, 1)) if load_known(load_1min) else Message.lazy(N_("unknown"))


def _prefilled(engine: Any, prompt: str = LESSON_PROMPT) -> Any:
    engine.prefill(prompt)
    return engine


def _step_link(prompt: str, steps: int) -> dict[str, str]:
    """The step page's shared-link keys (pages/step_through.py replays ?prompt=...&steps=N once; greedy=1 makes it
    pick the lesson's tokens, since the lesson's engine decodes greedily)."""
    return routes.STEP_THROUGH.query(prompt=prompt, steps=steps, greedy=1)


# ----- 1-3: what the cache holds ------------------------------------------------------------------------------
def _k_row(engine: Any) -> Question:
    prompt = "ROMEO:"
    _prefilled(engine, prompt)
    info = engine.loaded.info
    keys, values = engine.layer_keys(0)[0], engine.layer_values(0)[0]  # K/V head 0: [seq_len, head_dim]
    row_len = int(keys.shape[-1])
    texts = list(engine.records[-1].fed_token_texts)
    if row_len * info.n_head == info.n_embd:
        convention = Message.lazy(
            N_(
                "This model, like most, sets head_dim = hidden size / query heads = {n_embd} / {n_head} = "
                "**{row_len}** numbers per head (a convention: some models choose another head_dim)."
            ),
            n_embd=info.n_embd,
            n_head=info.n_head,
            row_len=row_len,
        )
    else:
        convention = Message.lazy(
            N_(
                "This model's config sets head_dim = **{row_len}**, not hidden size / query heads "
                "({n_embd} / {n_head}): that split is only a convention."
            ),
            n_embd=info.n_embd,
            n_head=info.n_head,
            row_len=row_len,
        )
    return Question(
        Message.lazy(
            N_(
                "In this model ({n_layer} layers, {n_head} query heads, {n_kv_heads} K/V heads, hidden size {n_embd}), "
                "how many numbers does **one K row of one head** hold?"
            ),
            n_layer=info.n_layer,
            n_head=info.n_head,
            n_kv_heads=info.n_kv_heads,
            n_embd=info.n_embd,
        ),
        row_len,
        Message.lazy(
            N_(
                "The K projection reads the token's whole hidden vector of {n_embd} numbers; its output is split into "
                "the {n_kv_heads} K/V heads. {convention} So one layer stores {n_kv_heads} x {row_len} = {k_numbers} K "
                "numbers per token. Read from the real cache tensor of shape `{shape}` = [batch, kv_heads, seq_len, "
                "head_dim]. The V row has the same "
                "length."
            ),
            n_embd=info.n_embd,
            n_kv_heads=info.n_kv_heads,
            convention=convention,
            row_len=row_len,
            k_numbers=info.n_kv_heads * row_len,
            shape=tuple(engine.cache.layers[0].keys.shape),
        ),
        hint=Message.lazy(
            N_(
                "Every head's projection reads the whole hidden vector; what is split into heads is the projection's "
                "output, head_dim numbers per head. Most models set head_dim = hidden size / number of query heads."
            )
        ),
        traps=(
            (
                info.n_embd,
                Message.lazy(
                    N_(
                        "That is the whole hidden vector, which every head's projection reads; one head's K "
                        "row is only that head's part of the projection's output."
                    )
                ),
            ),
            (
                2 * row_len,
                Message.lazy(N_("That counts a K row and a V row together; the question asks for one K row.")),
            ),
        ),
        picture=Picture(
            "kv_rows",
            {"keys": keys.tolist(), "values": values.tolist(), "rows": texts},
            Message.lazy(
                N_(
                    "Layer 0, head 0 of the real cache after the prompt {prompt}: one row per token, "
                    "one column per number (colour = the value)."
                ),
                prompt=repr(prompt),
            ),
        ),
        page_query=_step_link(prompt, 0),
    )


def _token_strip(texts: list[str], caption: Message, newest: int | None = None, after: bool = False) -> Picture:
    return Picture("tokens", {"texts": texts, "newest": newest}, caption, after=after)


def _prefill_rows(engine: Any) -> Question:
    ids = engine.tokenize(LESSON_PROMPT)
    record = _prefilled(engine).records[-1]
    rows = engine.cache_len
    texts = list(record.fed_token_texts)
    return Question(
        Message.lazy(
            N_(
                "The prompt shown here is **{n} tokens**, fed in one prefill pass. After the prefill, how many rows "
                "does layer 0's K cache hold?"
            ),
            n=len(ids),
        ),
        rows,
        Message.lazy(
            N_(
                "Prefill runs all {n} prompt tokens through the model in one pass and stores one K row and one V "
                "row per token in every layer: the real cache holds **{rows}** rows, numbered 0 to {last} like the "
                "positions in the strip."
            ),
            n=len(ids),
            rows=rows,
            last=rows - 1,
        ),
        hint=Message.lazy(N_("The prefill stores one K row for every token it feeds. Count the boxes in the strip.")),
        traps=(
            (
                rows - 1,
                Message.lazy(
                    N_(
                        "Positions start at 0, so the last position number is one less than the number of "
                        "tokens. How many boxes are there?"
                    )
                ),
            ),
            (
                2 * rows,
                Message.lazy(N_("K and V are two separate caches; the question asks for the rows of the K cache.")),
            ),
        ),
        picture=_token_strip(
            texts,
            Message.lazy(
                N_(
                    "The prompt as the model sees it: one box per token, its position above it. "
                    "A space belongs to the token after it (shown as ·), a newline as ↵."
                )
            ),
            after=False,
        ),
        page_query=_step_link(LESSON_PROMPT, 0),
    )


def _rows_after_steps(engine: Any, steps: int = 10, layer: int = 2) -> Question:
    _prefilled(engine)
    n_layer = engine.loaded.info.n_layer
    before = [int(engine.layer_keys(i).shape[1]) for i in range(n_layer)]
    for _step in range(steps):
        engine.step()
    after = [int(engine.layer_keys(i).shape[1]) for i in range(n_layer)]
    layer = min(layer, n_layer - 1)
    prompt_rows = before[layer]
    rows = after[layer]
    return Question(
        Message.lazy(
            N_(
                "After the prefill of {prompt_rows} tokens the model takes **{steps} Next-token steps**. "
                "How many rows will layer {layer} hold?"
            ),
            prompt_rows=prompt_rows,
            steps=steps,
            layer=layer,
        ),
        rows,
        Message.lazy(
            N_(
                "Each step feeds one token and appends one K row and one V row in *every* layer: "
                "{prompt_rows} + {steps} = **{rows}** (measured on the real cache, in each of the {n_layer} "
                "layers)."
            ),
            prompt_rows=prompt_rows,
            steps=steps,
            rows=rows,
            n_layer=n_layer,
        ),
        hint=Message.lazy(
            N_("Each Next-token step feeds one token, and every layer stores a row for it. The prompt's rows stay.")
        ),
        traps=(
            (
                prompt_rows,
                Message.lazy(N_("The steps do add rows: each one feeds a token, and that token's K and V are stored.")),
            ),
            (steps, Message.lazy(N_("The prompt's rows are still in the cache: the steps add to them."))),
            (
                prompt_rows + steps * n_layer,
                Message.lazy(N_("Each step adds one row to each layer; the question asks about one layer.")),
            ),
        ),
        picture=Picture(
            "rows_per_layer",
            {"before": before, "after": after, "steps": steps},
            Message.lazy(N_("Rows in every layer's K cache, measured after the prefill and after the steps.")),
        ),
        page_query=_step_link(LESSON_PROMPT, steps),
    )


NO_Q = Message.lazy(N_("Their K and V (not their Q)"))
ALL_QKV, ONLY_Q = Message.lazy(N_("Their Q, K and V")), Message.lazy(N_("Only their Q"))


def _why_no_q(engine: Any) -> Question:
    _prefilled(engine)
    record = engine.step()
    info = engine.loaded.info
    texts = [t for r in engine.records for t in r.fed_token_texts]
    weights = record.attention[info.n_layer - 1].mean(axis=0)  # last layer, averaged over its query heads
    return Question(
        Message.lazy(N_("To produce the next token, which vectors of the *earlier* tokens does a step need?")),
        NO_Q,
        Message.lazy(
            N_(
                "The step fed **{n_fed}** token and computed its Q, K and V. Its one query was compared with all "
                "**{keys}** keys, its own included (attention shape per layer: {n_head} heads x 1 query x {keys} keys), "
                "and the weights averaged the values. Earlier queries are never used again: their work is done, so "
                "there is nothing to cache for Q."
            ),
            n_fed=record.n_fed,
            keys=record.cache_len,
            n_head=info.n_head,
        ),
        choices=(ALL_QKV, NO_Q, ONLY_Q),
        hint=Message.lazy(
            N_("Look at what the new token's query is compared with, and what the weights then average.")
        ),
        traps=(
            (
                ALL_QKV,
                Message.lazy(
                    N_("Once an earlier token's query has produced its output, is it ever used again by a later step?")
                ),
            ),
            (
                ONLY_Q,
                Message.lazy(N_("The new token brings its own query. What does it compare that query with?")),
            ),
        ),
        picture=Picture(
            "attention_row",
            {"weights": weights.tolist(), "texts": texts, "highlight": None},
            Message.lazy(
                N_(
                    "The new token's attention over every cached row (last layer, mean of its {n_head} "
                    "query heads): one weight per earlier key, its own included."
                ),
                n_head=info.n_head,
            ),
        ),
        page_query=_step_link(LESSON_PROMPT, 1),
    )


# ----- 5-6: old rows matter, and the cache changes nothing -------------------------------------------------------
OTHER_ROW = Message.lazy(N_("Another row"))


def shown_token(token: str) -> str:
    """A token in a sentence or a choice as the strip shows it: its whitespace visible (` ·the`), in code type."""
    return f"`{step_view.visible(token)}`"


def row_label(row: int, token: str) -> Message:
    """A copying-question choice: a cached row and its token ("Row 7: `·the`")."""
    return Message.lazy(N_("Row {row}: {token}"), row=row, token=shown_token(token))


def _copying_head(engine: Any) -> Question:
    """Old rows matter: the head that reads furthest back to copy, found and measured on the real model."""
    _prefilled(engine, REPEAT_PROMPT)
    record = engine.records[-1]
    copy = step_view.copy_lookup(engine.records, 0, 0)
    texts = list(record.fed_token_texts)
    newest = copy.query_pos
    rows = {copy.target_pos: "", copy.prev_pos: "", newest - 1: "", 0: ""}
    label = {row: row_label(row, texts[row]) for row in sorted(rows)}  # in row order: no giveaway
    weights = record.attention[copy.best_layer, copy.best_head]  # that head's attention over every cached row
    top_row = int(weights.argmax())
    predicted = record.top_k[0]
    wrong_prev = Message.lazy(
        N_(
            "Row {row} holds the earlier copy of {token} itself. The head uses it to find its place, then "
            "reads one row further on: what came next last time?"
        ),
        row=copy.prev_pos,
        token=shown_token(texts[newest]),
    )
    return Question(
        Message.lazy(
            N_(
                "The newest token is {token} at row {row}. Layer {layer}, head {head} is this model's copying head. "
                "Which cached row gets most of its attention?"
            ),
            token=shown_token(texts[newest]),
            row=newest,
            layer=copy.best_layer,
            head=copy.best_head,
        ),
        label.get(top_row, OTHER_ROW),
        Message.lazy(
            N_(
                "Layer {layer}, head {head} puts **{weight:.0%}** of its attention on row {target} ({target_token}), the "
                "token that followed the previous {token} (row {prev}); its largest weight is on row {top} "
                "({top_weight:.0%}). The model then predicts {predicted} ({prob:.0%}). This is why old rows stay in the "
                "cache: any of them may be the one a later query needs."
            ),
            layer=copy.best_layer,
            head=copy.best_head,
            weight=copy.best_weight,
            target=copy.target_pos,
            target_token=shown_token(texts[copy.target_pos]),
            token=shown_token(texts[newest]),
            prev=copy.prev_pos,
            top=top_row,
            top_weight=weights[top_row],
            predicted=shown_token(predicted.text),
            prob=predicted.prob,
        ),
        choices=tuple(label.values()) + ((OTHER_ROW,) if top_row not in label else ()),
        hint=Message.lazy(
            N_("Find the earlier {token} in the strip. A copying head reads the token that came right *after* it."),
            token=shown_token(texts[newest]),
        ),
        traps=(
            (label.get(copy.prev_pos), wrong_prev),
            (
                label.get(newest - 1),
                Message.lazy(
                    N_(
                        "That is the token just before the newest one: a previous-token head "
                        "reads it. A copying head looks much further back."
                    )
                ),
            ),
            (
                label.get(0),
                Message.lazy(
                    N_("Some heads park on the first token when they have nothing to do; a copying head has work here.")
                ),
            ),
        ),
        picture=_token_strip(
            texts,
            Message.lazy(
                N_(
                    "The prompt's tokens with their positions (= their rows in the cache); the newest token is outlined."
                )
            ),
            newest=newest,
            after=False,
        ),
        extra_pictures=(
            Picture(
                "attention_row",
                {"weights": weights.tolist(), "texts": texts, "highlight": copy.target_pos},
                Message.lazy(
                    N_(
                        "Layer {layer}, head {head}: the newest query's attention over every cached row, "
                        "measured on the real model."
                    ),
                    layer=copy.best_layer,
                    head=copy.best_head,
                ),
            ),
        ),
        page_query=routes.ATTENTION_PATTERNS.query(source=PATTERNS_PRESET, layer=copy.best_layer, head=copy.best_head),
    )


SAME = Message.lazy(N_("The same token (equal up to float rounding)"))
DIFFERENT = Message.lazy(N_("A different token: the cache approximates"))


def _cached_equals_uncached(engine: Any) -> Question:
    _prefilled(engine)
    for _step in range(5):
        engine.step()
    check_ = engine.check_without_cache()
    logits = np.sort(engine.records[-1].next_logits)
    gap = float(logits[-1] - logits[-2])
    return Question(
        Message.lazy(N_("If we recompute the whole sequence without the cache, will the next token be different?")),
        SAME,
        Message.lazy(
            N_(
                "Recomputed from scratch: max |logit difference| = {diff:.1e}, while the top two logits are {gap:.2f} "
                "apart; same next token: **{same}**. The cache is an optimisation, not an approximation: the cached rows "
                "are exactly what a recomputation would produce, because a token only attends to tokens before "
                "it."
            ),
            diff=check_.max_abs_logit_diff,
            gap=gap,
            same=Message.lazy(N_("yes")) if check_.same_next_token else Message.lazy(N_("no")),
        ),
        choices=(DIFFERENT, SAME),
        hint=Message.lazy(
            N_("Does anything that comes later change an earlier token's K and V? A token only attends to the past.")
        ),
        picture=Picture(
            "differences",
            {
                "key": check_.max_abs_key_diff,
                "value": check_.max_abs_value_diff,
                "logit": check_.max_abs_logit_diff,
                "gap": gap,
            },
            Message.lazy(
                N_(
                    "Largest difference between the cached run and a full recomputation, against the gap "
                    "between the top two logits that decides the token (log scale)."
                )
            ),
        ),
        page_query=_step_link(LESSON_PROMPT, 5),
    )


# ----- 7-8: counting the work ------------------------------------------------------------------------------------
def _dots_one_step(engine: Any) -> Question:
    info = engine.loaded.info
    before = _prefilled(engine).cache_len + 3
    shape = info.ops_shape()
    cached = ops.forward_pass_counts(shape, before, 1, cached=True).attention_dot_products
    uncached = ops.forward_pass_counts(shape, before, 1, cached=False).attention_dot_products
    seq = before + 1
    heads = info.n_layer * info.n_head
    return Question(
        Message.lazy(
            N_(
                "The cache holds {before} tokens; the next step adds one more. With the cache, how many query-key dot "
                "products does that step compute over all {n_layer} layers x {n_head} heads?"
            ),
            before=before,
            n_layer=info.n_layer,
            n_head=info.n_head,
        ),
        cached,
        Message.lazy(
            N_(
                "One new query per head scores all {seq} keys, its own included: {n_layer} x {n_head} x {seq} = "
                "**{cached:,}**. Without the cache every one of the {seq} queries is recomputed: {n_layer} x "
                "{n_head} x {seq} x {seq_plus_1} / 2 = {uncached:,}, {ratio:.1f}x more. (kvviz counts the "
                "{pairs:,} causal pairs per head; eager attention computes all {seq} x {seq} = {square:,} and then "
                "masks the future ones.)"
            ),
            seq=seq,
            n_layer=info.n_layer,
            n_head=info.n_head,
            cached=cached,
            seq_plus_1=seq + 1,
            uncached=uncached,
            ratio=uncached / cached,
            pairs=seq * (seq + 1) // 2,
            square=seq * seq,
        ),
        hint=Message.lazy(N_("One row of the triangle per head, in every layer: (keys in that row) x layers x heads.")),
        traps=(
            (
                heads * before,
                Message.lazy(
                    N_(
                        "Does the new token's query score its own key too? Look at the diagonal cell of the outlined row."
                    )
                ),
            ),
            (
                uncached,
                Message.lazy(
                    N_(
                        "That is the whole triangle, what a step without the cache computes. With the cache "
                        "only the newest row is computed."
                    )
                ),
            ),
            (seq, Message.lazy(N_("That is one head of one layer: every head of every layer does the same."))),
            (before, Message.lazy(N_("That is one head of one layer, and it misses the new token's own key."))),
        ),
        picture=Picture(
            "triangle",
            {"seq": seq},
            Message.lazy(
                N_(
                    "Query-key pairs of one head at {seq} tokens: rows are "
                    "queries, columns keys; a query sees only keys at or before its own position. The "
                    "outlined row is the one a cached step computes; the uncached step computes the whole "
                    "triangle."
                ),
                seq=seq,
            ),
            after=False,
        ),
        page_query=routes.ATTENTION_OPS.query(prompt=before, new=1),
    )


def _quadratic(engine: Any, prompt_len: int = 16, new_tokens: int = 200) -> Question:
    shape = engine.loaded.info.ops_shape()
    per_head = ops.attention_per_head(shape, prompt_len, new_tokens)  # the counts and their closed forms
    ratio, last_step = per_head.run_ratio, per_head.last_step_ratio
    heads = shape.n_layer * shape.n_head
    t = per_head.positions  # positions the last pass sees (the last new token is never fed back)
    demo = 20
    return Question(
        Message.lazy(
            N_(
                "Generating **N = {new}** tokens after a **P = {prompt}**-token prompt, so T = P + N - 1 = {t} positions: "
                "**about how many times more** attention dot products does the whole run take without the cache than "
                "with it? (accepted within 25%)"
            ),
            new=new_tokens,
            prompt=prompt_len,
            t=t,
        ),
        round(ratio, 1),
        Message.lazy(
            N_(
                "With the cache: {heads} heads x T(T+1)/2 = {heads} x {t} x {t_plus_1} / 2 = **{cached:,}**. Without it: "
                "{heads} heads x (T(T+1)(T+2)/6 - (P-1)P(P+1)/6) = {heads} x ({all_triangles:,} - {skipped:,}) = "
                "**{uncached:,}** (about {heads} x T^3/6). Ratio **{ratio:.1f}x**, about (T+2)/3. "
                "The last step alone saves (T+1)/2 = {last:.0f}x, but the early steps save much less, so the whole run "
                "saves about a third of T, not half."
            ),
            heads=heads,
            t=t,
            t_plus_1=t + 1,
            cached=heads * per_head.run_cached,
            all_triangles=per_head.all_triangles,
            skipped=per_head.prompt_triangles,
            uncached=heads * per_head.run_uncached,
            ratio=ratio,
            last=last_step,
        ),
        rel_tolerance=0.25,
        states_tolerance=True,
        unit="x",
        hint=Message.lazy(N_("Divide the two sums: T(T+1)(T+2)/6 over T(T+1)/2. Most factors cancel.")),
        traps=(
            (
                last_step,
                Message.lazy(
                    N_(
                        "That is the saving of the last step only. The early steps, at short lengths, save "
                        "much less: divide the two whole-run sums instead."
                    )
                ),
            ),
            (
                new_tokens / 2,
                Message.lazy(
                    N_(
                        "Use T, every position the run reads (prompt included), not only the new "
                        "tokens; and compare the sums, not the last step."
                    )
                ),
            ),
        ),
        picture=Picture(
            "per_step",
            {"t": demo},
            Message.lazy(
                N_(
                    "Dot products of each pass for one head, T = {t} shown: with "
                    "the cache a pass at length t computes t (one row), without it t(t+1)/2 (a triangle). A "
                    "whole run adds up all the bars."
                ),
                t=demo,
            ),
            after=False,
        ),
        page_query=routes.ATTENTION_OPS.query(prompt=prompt_len, new=new_tokens),
    )


# ----- 9-10: memory ------------------------------------------------------------------------------------------------
def _bytes_at_1000(engine: Any) -> Question:
    preset = get_preset("gpt2")
    kv, per_token = preset.kv, preset.kv.bytes_per_token
    total = memory.kv_bytes(kv, 1000)
    points = [0, 250, 500, 750, 1000]
    mixed = Message.lazy(
        N_(
            "The digits are right but the unit is not: MB counts 10^6 bytes, MiB 2^20 bytes, and the "
            "same for KB/KiB and GB/GiB. Pick the unit that matches the way you divided."
        )
    )
    return Question(
        Message.lazy(
            N_(
                "GPT-2 small: {n_layer} layers, {n_kv_heads} heads, head_dim {head_dim}, float32 (4 bytes per number). "
                "How big is its KV cache at 1000 tokens, batch 1? Give a number and pick its unit (accepted within 1%; "
                "1 KB = 1,000 B, 1 KiB = 1,024 B)."
            ),
            n_layer=kv.n_layer,
            n_kv_heads=kv.n_kv_heads,
            head_dim=kv.head_dim,
        ),
        total,
        Message.lazy(
            N_(
                "2 (K and V) x {n_layer} layers x {n_kv_heads} heads x {head_dim} dims x 4 bytes = {per_token:,} bytes "
                "per token; x 1000 tokens = **{total}**."
            ),
            n_layer=kv.n_layer,
            n_kv_heads=kv.n_kv_heads,
            head_dim=kv.head_dim,
            per_token=per_token,
            total=units.format_bytes(total),
        ),
        rel_tolerance=0.01,
        states_tolerance=True,
        unit="bytes",
        hint=Message.lazy(N_("Multiply: 2 (K and V) x layers x heads x head_dim x bytes per number, then x tokens.")),
        traps=(
            (
                total // 2,
                Message.lazy(
                    N_("Off by a factor of two: did you count both K and V, and 4 bytes for each float32 number?")
                ),
            ),
            (total // 1000, Message.lazy(N_("That is one token; the question asks for 1000."))),
            (total // 4, Message.lazy(N_("Each float32 number takes 4 bytes, not 1."))),
            # the MB/MiB slip, both ways (and KB/KiB, GB/GiB): the right digits under the other unit's name
            *((total * BYTE_UNITS[binary] // BYTE_UNITS[decimal], mixed) for decimal, binary in SI_IEC),
            *((total * BYTE_UNITS[decimal] // BYTE_UNITS[binary], mixed) for decimal, binary in SI_IEC),
        ),
        picture=Picture(
            "bytes",
            {"tokens": points, "bytes": [memory.kv_bytes(kv, n) for n in points]},
            Message.lazy(N_("GPT-2 small's KV cache (float32, batch 1): it grows by the same bytes with every token.")),
        ),
        page_query=routes.MEMORY_BUDGET.query(preset="gpt2", context=1000),
        model=PRESET_MODELS["gpt2"],
    )


def _gqa_saving(engine: Any) -> Question:
    preset = get_preset("llama-3-8b")
    gqa = preset.kv
    mha = replace(gqa, n_kv_heads=gqa.n_head)
    context = preset.max_context
    saving = memory.kv_bytes(mha, context) // memory.kv_bytes(gqa, context)
    return Question(
        Message.lazy(
            N_(
                "Llama-3-8B has {n_head} query heads that share **{n_kv_heads} K/V heads** (grouped-query attention). "
                "How many times smaller is its cache than with {n_head} K/V heads (full MHA)?"
            ),
            n_head=gqa.n_head,
            n_kv_heads=gqa.n_kv_heads,
        ),
        saving,
        Message.lazy(
            N_(
                "At its full context of {context:,} tokens: MHA {mha} vs GQA {gqa}: {n_head} / {n_kv_heads} = "
                "**{saving}x**. Each group of query heads reads the same cached K/V rows; MQA (1 K/V head) goes all the "
                "way."
            ),
            context=context,
            mha=units.short_bytes(memory.kv_bytes(mha, context)),
            gqa=units.short_bytes(memory.kv_bytes(gqa, context)),
            n_head=gqa.n_head,
            n_kv_heads=gqa.n_kv_heads,
            saving=saving,
        ),
        hint=Message.lazy(
            N_("The cache stores K and V per K/V head, not per query head: compare the two numbers of K/V heads.")
        ),
        traps=(
            (
                gqa.n_head,
                Message.lazy(N_("That is the number of query heads; the cache's size depends on K/V heads only.")),
            ),
        ),
        picture=Picture(
            "gqa",
            {"n_head": gqa.n_head, "n_kv_heads": gqa.n_kv_heads},
            Message.lazy(
                N_("Llama-3-8B's {n_head} query heads, coloured by the K/V head whose cached rows they read."),
                n_head=gqa.n_head,
            ),
        ),
        page_query=routes.MEMORY_BUDGET.query(preset="llama-3-8b"),
        model=PRESET_MODELS["llama-3-8b"],
    )


# ----- 11-12: time, and serving -----------------------------------------------------------------------------------
BELOW = Message.lazy(N_("Well below the op ratio"))
ABOUT, ABOVE = Message.lazy(N_("About the op ratio")), Message.lazy(N_("Above the op ratio"))


def _measured_speedup(engine: Any, steps: int = 24, budget_s: float = 2.0) -> Question:
    """The newest step timed both ways by the race (kvviz.step.engine.race_timing): repeats of the cached step and
    the uncached pass interleaved, so a burst of load hits both alike; medians with their interquartile ranges,
    and the race's "inside the noise" rule (the two ranges overlap: no winner to read)."""
    _prefilled(engine)
    for _step in range(steps):
        engine.step()
    record = engine.records[-1]
    race = engine.race(budget_s=budget_s)  # the lesson waits longer than a click: more repeats, a real spread
    cached, uncached = sorted(race.cached_ms), sorted(race.uncached_ms)
    cached_ms, uncached_ms = race.cached_median_ms, race.uncached_median_ms
    (c_lo, c_hi), (u_lo, u_hi) = quartiles(race.cached_ms), quartiles(race.uncached_ms)
    load = race.load_1min
    shape = engine.loaded.info.ops_shape()
    before = record.fed_positions[0]
    op_ratio = (
        ops.forward_pass_counts(shape, before, 1, cached=False).total_ops
        / ops.forward_pass_counts(shape, before, 1, cached=True).total_ops
    )
    measured = uncached_ms / max(cached_ms, 1e-6)
    # the ratio's spread from the quartiles: the answer is what this machine measured, judged with its noise
    ratio_lo, ratio_hi = u_lo / max(c_hi, 1e-6), u_hi / max(c_lo, 1e-6)
    answer = BELOW if ratio_hi < 0.5 * op_ratio else (ABOVE if ratio_lo > 1.5 * op_ratio else ABOUT)
    if race.single_repeat:
        noise = Message.lazy(
            N_("One repeat a side (a repeat cost more than the time budget): there is no spread to judge the noise by.")
        )
    elif race.inside_noise:
        noise = Message.lazy(
            N_(
                "The two ranges overlap: the difference between the medians is inside the noise, so this run "
                "cannot say which side is faster, only how far both are from the op ratio."
            )
        )
    else:
        noise = Message.lazy(N_("The two ranges do not overlap: the difference is larger than the noise."))
    return Question(
        Message.lazy(
            N_(
                "At {tokens} tokens, a step without the cache does **{op_ratio:.0f}x** the operations of a cached step. "
                "On this CPU, will the measured time ratio be about that, well below it, or above it?"
            ),
            tokens=record.cache_len,
            op_ratio=op_ratio,
        ),
        answer,
        Message.lazy(
            N_(
                "Just measured on the real model, the two runs interleaved ({repeats}, alternating, so a burst of load "
                "hits both alike; machine load {load}): cached step median {cached_ms:.2f} ms (interquartile "
                "range {cached_lo:.2f} to {cached_hi:.2f}), uncached pass median {uncached_ms:.2f} ms ({uncached_lo:.2f} "
                "to {uncached_hi:.2f}). Ratio of the medians **{measured:.1f}x** (from the quartiles, between "
                "{ratio_lo:.1f}x and {ratio_hi:.1f}x), against an op ratio of {op_ratio:.0f}x. {noise} A cached step is a "
                "handful of tiny matrix-vector products: fixed costs dominate it (Python and PyTorch's per-operator "
                "dispatch, reading every weight from memory once), while the uncached pass batches its extra work into "
                "efficient matrix-matrix products. The *Measured speed-up* page shows this with a roofline."
            ),
            repeats=Message.counted(*Nn_("{n} repeat", "{n} repeats"), n=race.repeats),
            load=_load_text(load),
            cached_ms=cached_ms,
            cached_lo=c_lo,
            cached_hi=c_hi,
            uncached_ms=uncached_ms,
            uncached_lo=u_lo,
            uncached_hi=u_hi,
            measured=measured,
            ratio_lo=ratio_lo,
            ratio_hi=ratio_hi,
            op_ratio=op_ratio,
            noise=noise,
        ),
        choices=(ABOUT, BELOW, ABOVE),
        hint=Message.lazy(
            N_(
                "Arithmetic is not the only cost of a step. What does every forward pass pay, however few tokens it feeds?"
            )
        ),
        picture=Picture(
            "timings",
            {"cached": cached, "uncached": uncached, "op_ratio": op_ratio, "load": load},
            Message.lazy(
                N_(
                    "Measured on this machine (load {load}), the two runs interleaved: each dot is one "
                    "run, the bar the median."
                ),
                load=_load_text(load),
            ),
        ),
        page_query={},
    )


def _paging(engine: Any, tokens: int = 1000, block: int = 16) -> Question:
    view = capacity.paged_view(get_preset("llama-3-8b").kv, tokens, 1, block, 8192)
    blocks = view.blocks_per_sequence
    return Question(
        Message.lazy(
            N_(
                "Real engines (vLLM's PagedAttention) store the cache in blocks of {block} tokens, allocated as the "
                "sequence grows. How many blocks does a {tokens:,}-token sequence need?"
            ),
            block=block,
            tokens=tokens,
        ),
        blocks,
        Message.lazy(
            N_(
                "ceil({tokens:,} / {block}) = **{blocks}** blocks; the last one has {empty} empty slots. For Llama-3-8B a "
                "flat buffer pre-allocated for 8,192 tokens reserves {flat} where {used} are used; paging reserves "
                "{paged}. Other levers: sliding windows keep only the last W tokens, quantized caches store K/V in 8 or "
                "4 bits, and prefix caching shares the rows of a common system prompt."
            ),
            tokens=tokens,
            block=block,
            blocks=blocks,
            empty=view.waste_tokens_last_block,
            flat=units.short_bytes(view.flat_bytes),
            used=units.short_bytes(view.used_bytes),
            paged=units.short_bytes(view.paged_bytes),
        ),
        hint=Message.lazy(N_("Divide the tokens by the block size. A partly filled block still has to be allocated.")),
        traps=(
            (
                tokens // block,
                Message.lazy(N_("The last block is only partly filled, but it still has to be allocated: round up.")),
            ),
        ),
        picture=Picture(
            "blocks",
            {"blocks": blocks, "block": block, "tokens": tokens},
            Message.lazy(
                N_("The sequence's {tokens:,} tokens in blocks of {block}: every block full except the last."),
                tokens=tokens,
                block=block,
            ),
        ),
        page_query=routes.MEMORY_BUDGET.query(preset="llama-3-8b", context=tokens),
        model=PRESET_MODELS["llama-3-8b"],
    )


STEPS: tuple[LessonStep, ...] = (
    LessonStep(
        N_("What K and V are"),
        N_("Every K/V head stores one K row and one V row of head_dim numbers per token."),
        N_(
            "In every layer, each token's whole hidden vector is projected into a query for every query head "
            "and a key and a value for every K/V head (with grouped-query attention several query heads share "
            "one K/V head). Every projection reads the whole hidden vector; its output is split into heads of "
            "head_dim numbers. The cache keeps the keys and values: one **row** per token, in every K/V head of "
            "every layer."
        ),
        _k_row,
        routes.STEP_THROUGH,
        ("Query, key, value (Q, K, V)", "KV cache", "head_dim", "Attention head"),
    ),
    LessonStep(
        N_("What the prefill stores"),
        N_("Prefill fills the cache with one row per prompt token, in one pass."),
        N_(
            "The model reads text as **tokens**: pieces of words, numbered by their **position** from 0. The "
            "**prefill** pass feeds the whole prompt at once and writes the keys and values of every prompt "
            "token into the cache."
        ),
        _prefill_rows,
        routes.STEP_THROUGH,
        ("Token", "Prefill", "KV cache"),
    ),
    LessonStep(
        N_("What one step adds"),
        N_("Each decode step feeds one token and adds one row to every layer."),
        N_(
            "After the prefill, the model writes one token per **decode step**: it feeds only the newest "
            "token, and reads everything else from the cache."
        ),
        _rows_after_steps,
        routes.STEP_THROUGH,
        ("Decode step", "KV cache"),
    ),
    LessonStep(
        N_("What a step needs from the past"),
        N_("A step needs the earlier K and V; old queries are never used again."),
        N_(
            "In each head, attention scores the newest token's **query** against the **keys** of "
            "every token so far, its own included; the softmax of those scores weights an average of the "
            "**values**."
        ),
        _why_no_q,
        routes.STEP_THROUGH,
        ("Query, key, value (Q, K, V)", "Causal mask"),
    ),
    LessonStep(
        N_("Copying from far back"),
        N_("Induction (copying) heads read rows far back: every old row may matter."),
        N_(
            "Some heads **copy**. When the newest token appeared earlier in the text, an **induction head** "
            "finds that earlier occurrence and reads the token that came right *after* it, so the model can "
            "predict it again. Below, the prompt repeats a pattern; each token is shown with its position, "
            "which is also its row in the cache. (A word may be split into several tokens.)"
        ),
        _copying_head,
        routes.ATTENTION_PATTERNS,
        ("Induction head", "Token", "Attention head"),
    ),
    LessonStep(
        N_("Does the cache change the answer?"),
        N_("Cached and uncached runs give the same next token: the cache is exact."),
        N_(
            "A cached step reuses rows computed earlier instead of computing them again. "
            "An earlier token's K and V depend only on that token and the tokens before it (the **causal mask**: "
            "no token looks ahead), so the text that comes later cannot change them."
        ),
        _cached_equals_uncached,
        routes.STEP_THROUGH,
        ("Causal mask", "KV cache"),
    ),
    LessonStep(
        N_("Counting one step"),
        N_("A cached step computes one row of query-key scores per head: its keys, its own included."),
        N_(
            "A query-key **dot product** is one score q · k over head_dim numbers. Count "
            "them in the picture: each cell is one dot product of one head in one layer."
        ),
        _dots_one_step,
        routes.ATTENTION_OPS,
        ("Dot product", "Causal mask", "head_dim"),
    ),
    LessonStep(
        N_("Adding up a whole generation"),
        N_("Over a run, cached attention adds up to ~T²/2, uncached to ~T³/6: a saving of about T/3."),
        N_(
            "Step 7 counted one pass. A whole run adds up every pass. Write **P** for the prompt's tokens, "
            "**N** for the new tokens, and **T = P + N - 1** for the positions the last pass reads (the last "
            "new token is never fed back). The prefill is one pass that computes its whole triangle, "
            "P(P+1)/2 dot products per head. Per head:\n\n"
            "- **with the cache** the prefill's triangle is its rows 1 + 2 + ... + P, and each later pass at "
            "length t computes one row of t dot products, so the run adds 1 + 2 + ... + T = **T(T+1)/2**;\n"
            "- **without it** each later pass at length t recomputes the triangle t(t+1)/2, so the run adds "
            "P(P+1)/2 + (P+1)(P+2)/2 + ... + T(T+1)/2: the sum of all the triangles 1 + 3 + 6 + ... + T(T+1)/2 "
            "= T(T+1)(T+2)/6, less the (P-1)P(P+1)/6 of the triangles below P that the prefill never computes "
            "on their own: **T(T+1)(T+2)/6 - (P-1)P(P+1)/6**."
        ),
        _quadratic,
        routes.ATTENTION_OPS,
        ("Dot product", "Prefill", "Decode step"),
    ),
    LessonStep(
        N_("What the cache costs in memory"),
        N_("The cache costs 2 x layers x K/V heads x head_dim x bytes per number, for every token."),
        N_(
            "The price of the cache: bytes that grow with every token. Every "
            "token stores a K row and a V row in every head of every layer."
        ),
        _bytes_at_1000,
        routes.MEMORY_BUDGET,
        ("KV cache", "head_dim", "Bytes: GB and GiB"),
        "gpt2",
    ),
    LessonStep(
        N_("Sharing K/V heads"),
        N_("GQA and MQA shrink the cache by sharing K/V heads between query heads."),
        N_(
            "Modern models let several query heads share one K/V head: **grouped-query attention** (GQA); "
            "with a single K/V head it is **multi-query attention** (MQA)."
        ),
        _gqa_saving,
        routes.MEMORY_BUDGET,
        ("MHA, GQA, MQA", "Attention head"),
        "llama-3-8b",
    ),
    LessonStep(
        N_("The measured speed-up"),
        N_("Op counts are not time: a cached CPU step is dominated by fixed costs."),
        N_(
            "Operation counts are not time. A cached step multiplies every weight matrix by one "
            "token's vector (a **GEMV**); an uncached pass multiplies it by all the tokens at once (a **GEMM**), "
            "which reuses each weight it reads. Every pass also pays fixed costs, however few tokens it feeds. "
            "Here the model runs both ways on this machine."
        ),
        _measured_speedup,
        routes.SPEEDUP,
        ("Overhead", "GEMV, GEMM", "Roofline"),
    ),
    LessonStep(
        N_("What real engines do"),
        N_("Serving engines store the cache in fixed-size blocks (paged attention)."),
        N_("Serving many users turns the cache into a memory-management problem."),
        _paging,
        routes.MEMORY_BUDGET,
        ("Paged blocks", "Sliding window", "Quantized cache", "Prefix caching"),
        "llama-3-8b",
    ),
)


def preset_steps(steps: tuple[LessonStep, ...] = STEPS) -> list[tuple[int, str]]:
    """(step number, model name) of the steps that compute with a published model's preset, not the lesson's."""
    return [(n, PRESET_MODELS[s.preset]) for n, s in enumerate(steps, start=1) if s.preset]


def preset_steps_text(steps: tuple[LessonStep, ...] = STEPS) -> str:
    """ "step 9: GPT-2 small; step 10: Llama-3-8B; ...", in the current language."""
    return i18n.list_sep().join(_("step {number}: {model}").format(number=n, model=m) for n, m in preset_steps(steps))
