"""The guided lesson: twelve short steps, each asks one question before it tells (torch-free, UI-free).

Every answer is computed live: from the real model through the caller's StepEngine (passed in, so this
module never imports torch), or from kvviz's own arithmetic (ops, memory, capacity, presets). A step's
`ask(engine)` returns a Question with the computed answer and the arithmetic to show once the student has
answered; `check(question, given)` judges the answer.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kvviz import capacity, memory, ops, ops_summary, step_view
from kvviz.presets import get_preset

LESSON_PROMPT = "First Citizen:\nBefore we proceed any further, hear me speak."
REPEAT_PROMPT = step_view.REPEAT_PROMPT  # the step page's "Repeat a pattern" preset


@dataclass(frozen=True)
class Question:
    text: str  # the question, in markdown
    answer: int | str  # the computed answer (a number, or the right choice)
    arithmetic: str  # markdown shown after the student answers: why, with the numbers
    choices: tuple[str, ...] = ()  # empty = a number question
    rel_tolerance: float = 0.0  # for "about how many" questions: accepted relative error
    unit: str = ""

    @property
    def is_choice(self) -> bool:
        return bool(self.choices)


@dataclass(frozen=True)
class LessonStep:
    title: str
    teach: str  # shown before the question: what to look at
    ask: Callable[[Any], Question]  # engine -> Question (the engine is a kvviz.stepping.StepEngine)
    page: str  # the full page for this idea
    page_label: str


def check(question: Question, given: int | float | str | None) -> bool:
    """True when `given` is the computed answer (within rel_tolerance for "about" questions)."""
    if given is None:
        return False
    if question.is_choice:
        return given == question.answer
    target = float(question.answer)
    return abs(float(given) - target) <= question.rel_tolerance * abs(target) + 1e-9


def _prefilled(engine: Any, prompt: str = LESSON_PROMPT) -> Any:
    engine.prefill(prompt)
    return engine


def _k_row(engine: Any) -> Question:
    _prefilled(engine, "ROMEO:")
    info = engine.loaded.info
    row_len = int(engine.layer_keys(0).shape[-1])  # (kv_heads, seq_len, head_dim): read from the real cache
    return Question(
        f"In this model ({info.n_layer} layers, {info.n_head} query heads, {info.n_kv_heads} K/V heads, "
        f"hidden size {info.n_embd}), "
        "how many numbers does **one K row of one head** hold?",
        row_len,
        f"Each head works on vectors of `head_dim` = **{row_len}** numbers (here {info.n_head} heads x {row_len} = "
        f"{info.n_head * row_len}), read from the real cache tensor of shape "
        f"`{tuple(engine.cache.layers[0].keys.shape)}` = [batch, kv_heads, seq_len, head_dim]. The V row has "
        "the same length.")


def _prefill_rows(engine: Any) -> Question:
    tokens = len(engine.tokenize(LESSON_PROMPT))
    rows = _prefilled(engine).cache_len
    return Question(
        f"The prompt `{LESSON_PROMPT!r}` is **{tokens} tokens**. After the prefill, how many rows does layer 0's "
        "K cache hold?", rows,
        f"Prefill runs all {tokens} prompt tokens through the model in one pass and stores one K row and one V "
        f"row per token in every layer: the real cache holds **{rows}** rows.")


def _rows_after_steps(engine: Any, steps: int = 10, layer: int = 2) -> Question:
    prompt_rows = _prefilled(engine).cache_len
    for _ in range(steps):
        engine.step()
    layer = min(layer, engine.loaded.info.n_layer - 1)
    rows = int(engine.layer_keys(layer).shape[1])
    return Question(
        f"After the prefill of {prompt_rows} tokens the model takes **{steps} Next-token steps**. "
        f"How many rows will layer {layer} hold?", rows,
        f"Each step feeds one token and appends one K row and one V row in *every* layer: "
        f"{prompt_rows} + {steps} = **{rows}** (measured on the real cache).")


NO_Q = "Their K and V (not their Q)"


def _why_no_q(engine: Any) -> Question:
    _prefilled(engine)
    record = engine.step()
    info = engine.loaded.info
    return Question(
        "To produce the next token, which vectors of the *earlier* tokens does a step need?",
        NO_Q,
        f"The step fed **{record.n_fed}** token and computed its Q, K and V. Its one query was compared with all "
        f"**{record.cache_len}** cached keys (attention shape per layer: {info.n_head} heads x 1 query x "
        f"{record.cache_len} keys) and averaged their values. Earlier queries are never used again: their work "
        "is done, so there is nothing to cache for Q.",
        choices=("Their Q, K and V", NO_Q, "Only their Q"))


OTHER_ROW = "Another row"


def _copying_head(engine: Any) -> Question:
    """Old rows matter: the head that reads furthest back to copy, found and measured on the real model."""
    _prefilled(engine, REPEAT_PROMPT)
    record = engine.records[-1]
    copy = step_view.copy_lookup(engine.records, 0, 0)
    texts = record.fed_token_texts
    rows = {copy.target_pos: f"the token after the previous {texts[copy.query_pos]!r}",
            copy.prev_pos: f"the previous {texts[copy.query_pos]!r} itself",
            copy.query_pos - 1: "the token just before the newest", 0: "the first token"}
    label = {row: f"Row {row}: {texts[row]!r} ({why})" for row, why in sorted(rows.items())}  # in row order
    weights = record.attention[copy.best_layer, copy.best_head]  # that head's attention over every cached row
    top_row = int(weights.argmax())
    predicted = record.top_k[0]
    return Question(
        f"The prompt is `{REPEAT_PROMPT!r}`; the newest token is {texts[-1]!r} (row {copy.query_pos}). One head "
        "of this model looks far back into the cache to continue the pattern. Which cached row gets most of "
        "its attention?", label.get(top_row, OTHER_ROW),
        f"Layer {copy.best_layer}, head {copy.best_head} puts **{copy.best_weight:.0%}** of its attention on row "
        f"{copy.target_pos} ({texts[copy.target_pos]!r}), the token that followed the previous "
        f"{texts[copy.query_pos]!r}; its largest weight is on row {top_row} ({weights[top_row]:.0%}). The model "
        f"then predicts {predicted.text!r} ({predicted.prob:.0%}). An *induction head* copies this way, and it "
        "is why old rows stay in the cache: any of them may be the one a later query needs.",
        choices=tuple(label.values()) + ((OTHER_ROW,) if top_row not in label else ()))


SAME = "The same token (equal up to float rounding)"


def _cached_equals_uncached(engine: Any) -> Question:
    _prefilled(engine)
    for _ in range(5):
        engine.step()
    check_ = engine.check_without_cache()
    return Question(
        "If we recompute the whole sequence without the cache, will the next token be different?", SAME,
        f"Recomputed from scratch: max |logit difference| = {check_.max_abs_logit_diff:.1e}, same next token: "
        f"**{'yes' if check_.same_next_token else 'no'}**. The cache is an optimisation, not an approximation.",
        choices=("A different token: the cache approximates", SAME))


def _dots_one_step(engine: Any) -> Question:
    info = engine.loaded.info
    before = _prefilled(engine).cache_len + 3
    cached = ops.attention_dot_products(info.n_layer, info.n_head, before, 1, cached=True)
    uncached = ops.attention_dot_products(info.n_layer, info.n_head, before, 1, cached=False)
    seq = before + 1
    return Question(
        f"The cache holds {before} tokens; the next step adds token {seq}. With the cache, how many query-key "
        f"dot products does that step compute over all {info.n_layer} layers x {info.n_head} heads?", cached,
        f"One new query per head scores all {seq} keys: {info.n_layer} x {info.n_head} x {seq} = **{cached:,}**. "
        f"Without the cache every one of the {seq} queries is recomputed (causal): {info.n_layer} x {info.n_head} "
        f"x {seq} x {seq + 1} / 2 = {uncached:,}, {uncached / cached:.1f}x more.")


def _quadratic(engine: Any, prompt_len: int = 16, new_tokens: int = 200) -> Question:
    shape = ops.ModelShape.from_info(engine.loaded.info)
    cached, uncached = ops.generation_totals(shape, prompt_len, new_tokens)
    ratio = uncached.attention_dot_products / cached.attention_dot_products
    return Question(
        f"Generating {new_tokens} tokens after a {prompt_len}-token prompt: **about how many times more** attention "
        "dot products does it take without the cache than with it? (within 25%)", round(ratio, 1),
        f"With the cache, step k does about one row of dot products: the total grows like N^2/2 "
        f"({cached.attention_dot_products:,}). Without it, step k recomputes a whole triangle: the total grows "
        f"like N^3/6 ({uncached.attention_dot_products:,}). Ratio **{ratio:.1f}x**, about (P+N)/3. "
        + ops_summary.savings_sentence(shape, prompt_len, new_tokens), rel_tolerance=0.25, unit="x")


def _bytes_at_1000(engine: Any) -> Question:
    preset = get_preset("gpt2")
    kv, per_token = preset.kv, preset.kv.bytes_per_token
    total = memory.kv_bytes(kv, 1000)
    return Question(
        f"GPT-2 small: {kv.n_layer} layers, {kv.n_kv_heads} heads, head_dim {kv.head_dim}, float32 (4 bytes). "
        "How many **bytes** does its KV cache take at 1000 tokens, batch 1? (within 1%)", total,
        f"2 (K and V) x {kv.n_layer} layers x {kv.n_kv_heads} heads x {kv.head_dim} dims x 4 bytes = "
        f"{per_token:,} bytes per token; x 1000 tokens = **{memory.format_bytes(total)}**.",
        rel_tolerance=0.01, unit="bytes")


def _gqa_saving(engine: Any) -> Question:
    preset = get_preset("llama-3-8b")
    gqa = preset.kv
    mha = replace(gqa, n_kv_heads=gqa.n_head)
    context = preset.max_context
    saving = memory.kv_bytes(mha, context) // memory.kv_bytes(gqa, context)
    return Question(
        f"Llama-3-8B has {gqa.n_head} query heads that share **{gqa.n_kv_heads} K/V heads** (grouped-query "
        f"attention). How many times smaller is its cache than with {gqa.n_head} K/V heads (full MHA)?", saving,
        f"At its full context of {context:,} tokens: MHA {memory.short_bytes(memory.kv_bytes(mha, context))} vs "
        f"GQA {memory.short_bytes(memory.kv_bytes(gqa, context))}: {gqa.n_head} / {gqa.n_kv_heads} = **{saving}x**. "
        "Each group of query heads reads the same cached K/V rows; MQA (1 K/V head) goes all the way.")


BELOW = "Well below the op ratio"


ABOUT, ABOVE = "About the op ratio", "Above the op ratio"


def _measured_speedup(engine: Any, steps: int = 24, repeats: int = 3) -> Question:
    _prefilled(engine)
    for _ in range(steps):
        engine.step()
    record = engine.records[-1]
    cached_ms = sorted(r.step_ms for r in engine.records[-9:])[4]  # median of the last 9 decode steps
    uncached_ms = sorted(engine.check_without_cache().uncached_ms for _ in range(repeats))[repeats // 2]
    shape = ops.ModelShape.from_info(engine.loaded.info)
    before = record.fed_positions[0]
    op_ratio = (ops.forward_pass_counts(shape, before, 1, cached=False).total_ops
                / ops.forward_pass_counts(shape, before, 1, cached=True).total_ops)
    measured = uncached_ms / max(cached_ms, 1e-6)
    # the right answer is what this machine measured, not what the lesson expects
    answer = BELOW if measured < 0.5 * op_ratio else (ABOVE if measured > 1.5 * op_ratio else ABOUT)
    return Question(
        f"At {record.cache_len} tokens, a step without the cache does **{op_ratio:.0f}x** the operations of a "
        "cached step. On this CPU, will the measured time ratio be about that, well below it, or above it?",
        answer,
        f"Just measured on the real model (medians): cached step {cached_ms:.2f} ms, uncached {uncached_ms:.2f} ms: "
        f"**{measured:.1f}x**, against an op ratio of {op_ratio:.0f}x. A cached step is a handful of tiny "
        "matrix-vector products: fixed overheads (Python, kernel launches, reading every weight once) dominate, "
        "while the uncached pass batches its extra work into efficient matrix-matrix products. The *Measured "
        "speed-up* page shows this with a roofline.",
        choices=(ABOUT, BELOW, ABOVE))


def _paging(engine: Any, tokens: int = 1000, block: int = 16) -> Question:
    view = capacity.paged_view(get_preset("llama-3-8b").kv, tokens, 1, block, 8192)
    return Question(
        f"Real engines (vLLM's PagedAttention) store the cache in blocks of {block} tokens, allocated as the "
        f"sequence grows. How many blocks does a {tokens:,}-token sequence need?", view.blocks_per_sequence,
        f"ceil({tokens:,} / {block}) = **{view.blocks_per_sequence}** blocks; the last one has "
        f"{view.waste_tokens_last_block} empty slots. For Llama-3-8B a flat buffer pre-allocated for 8,192 tokens "
        f"reserves {memory.short_bytes(view.flat_bytes)} where {memory.short_bytes(view.used_bytes)} are used; "
        f"paging reserves {memory.short_bytes(view.paged_bytes)}. Other levers: sliding windows keep only the last "
        "W tokens, quantized caches store K/V in 8 or 4 bits, and prefix caching shares the rows of a common "
        "system prompt.")


STEPS: tuple[LessonStep, ...] = (
    LessonStep("What K and V are", "Every token gets a query, a key and a value vector in every head of every "
               "layer. The cache keeps the keys and values.", _k_row, "pages/step_through.py", "Step through"),
    LessonStep("Prefill fills one row per prompt token", "The prompt goes through the model in one pass.",
               _prefill_rows, "pages/step_through.py", "Step through"),
    LessonStep("Each step adds one row per layer", "After the prefill, every Next token feeds only the newest "
               "token.", _rows_after_steps, "pages/step_through.py", "Step through"),
    LessonStep("Why there is no Q cache", "Attention compares the newest query with every key, then averages "
               "the values.", _why_no_q, "pages/step_through.py", "Step through"),
    LessonStep("Old rows matter: copying", "A query can reach any cached row, however old.", _copying_head,
               "pages/attention_patterns.py", "Attention patterns"),
    LessonStep("Cached equals uncached", "Caching skips recomputing rows that would come out the same.",
               _cached_equals_uncached, "pages/step_through.py", "Step through"),
    LessonStep("Counting one step", "A query-key dot product is one score q . k over head_dim numbers.",
               _dots_one_step, "pages/attention_ops.py", "Count the work"),
    LessonStep("Linear vs quadratic", "Add up every step of a generation.", _quadratic,
               "pages/attention_ops.py", "Count the work"),
    LessonStep("What the cache costs in memory", "The price of the cache: bytes that grow with every token.",
               _bytes_at_1000, "pages/memory_budget.py", "Memory budget"),
    LessonStep("GQA and MQA shrink it", "Modern models share K/V heads between query heads.", _gqa_saving,
               "pages/memory_budget.py", "Memory budget"),
    LessonStep("The measured speed-up", "Operation counts are not time.", _measured_speedup, "pages/speedup.py",
               "Measured speed-up"),
    LessonStep("What real engines do", "Serving many users turns the cache into a memory-management problem.",
               _paging, "pages/memory_budget.py", "Memory budget"),
)
