"""Claims checked: every published figure and popular sentence about the KV cache that kvviz tests, in one place.

Each claim carries its source (title, URL, date: a claim without a checkable public source is not shown), the
arithmetic (computed here by kvviz's own functions: memory.kv_bytes,
ops.generation_totals, ops.check_speedup_claim, ...; never typed in), a verdict and the page where a student
sees it live. Verdicts: "holds", "wrong" (by how much), "partly true" (true only for the quantity named), or
"cannot be judged" (the figures kvviz can cite leave it open; never settled by an assumed efficiency).
`python -m kvviz claims [--json]` prints them; pages/claims.py shows them; tests/test_claims.py pins the numbers.
Pure Python: no torch, no Streamlit.

Language: a claim's text (quote, finding, arithmetic, source) is written in the current language (kvviz.i18n) when
the claim is built, so a page in Chinese gets Chinese claims and the CLI (no language set) English. Verdicts stay
stable English keys ("holds", "wrong", "partly true"; a FigureCheck's "correct" ...): show VERDICT_LABELS[v] /
FigureCheck.verdict_text. Constants defined at import are marked N_() and translated where shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from kvviz import i18n, ops, routes
from kvviz.i18n import N_, _, ngettext, numbers
from kvviz.memory import KVConfig, kv_bytes, units
from kvviz.memory.presets import get_preset
from kvviz.memory.units import GB, GIB, MIB, format_bytes

PAGE_MEMORY, PAGE_OPS, PAGE_STEP = routes.MEMORY_BUDGET, routes.ATTENTION_OPS, routes.STEP_THROUGH  # where claims live
VERDICT_LABELS = {
    "holds": N_("holds"),
    "wrong": N_("wrong"),
    "partly true": N_("partly true"),
    "cannot be judged": N_("cannot be judged"),
}  # show _(label)


@dataclass(frozen=True)
class Claim:
    key: str
    quote: str  # the sentence or figure as published
    source: str
    verdict: str  # "holds" | "wrong" | "partly true" | "cannot be judged"
    finding: str  # one line: wrong by how much, or true only for which quantity
    arithmetic: tuple[str, ...]  # the computation, line by line
    numbers: dict[str, Any] = field(default_factory=dict)  # the exact figures (tests pin them)
    page: routes.Route = PAGE_MEMORY  # where it is live (its title: _(page.title))
    page_query: dict[str, str] = field(default_factory=dict)  # page.query(...): its URL state showing this claim
    translation: str = ""  # a quote in another language than the reader's: its translation, shown beside it

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "quote": self.quote,
            "translation": self.translation,
            "source": self.source,
            "verdict": self.verdict,
            "finding": self.finding,
            "arithmetic": list(self.arithmetic),
            "numbers": self.numbers,
            "page": self.page.file,
            "page_query": self.page_query,
        }


# ----- published KV-cache sizes (moved here from kvviz.memory / kvviz.memory.presets) --------------------------------
@dataclass(frozen=True)
class PublishedFigure:
    """A KV-cache size as printed somewhere, and the config it is about."""

    model: str  # a preset name (kvviz.memory.presets)
    context_len: int
    batch: int
    dtype: str
    claimed: float
    claimed_unit: str  # "GB" | "GiB" | "KB" | "MB" (as printed)
    where: str  # the source, with URL
    quote: str  # as printed (English), marked N_(): show _(quote)
    source_units: str = ""  # "binary" / "decimal" when the source defines its unit, else "" (UNITS_RULE)


@dataclass(frozen=True)
class FigureCheck:
    figure: PublishedFigure
    actual_bytes: int
    verdict: str  # "correct" | "correct if GB means binary units" | "wrong" (stable English: tests, CLI)
    explanation: str  # the arithmetic (in the language current when it was checked)

    @property
    def verdict_text(self) -> str:
        """The verdict in the current language, for a page."""
        if self.verdict == "correct":
            return _("correct")
        if self.verdict == "wrong":
            return _("wrong")
        if self.verdict.endswith("means decimal units"):
            return _("correct if {unit} means decimal units").format(unit=self.figure.claimed_unit)
        return _("correct if {unit} means binary units").format(unit=self.figure.claimed_unit)


# The one units rule every claim below applies (and pages/claims.py and `python -m kvviz claims` state):
UNITS_RULE = N_(
    "Units: a printed GB, MB or KB is read as decimal (10^9, 10^6, 10^3 bytes), GiB, MiB and KiB as binary (2^30, "
    "2^20, 2^10), unless the source defines its own unit (e.g. '8,388,608 bytes = 8 MB' makes its MB binary). "
    "Where a figure matches better with its GB read as GiB, the verdict says so ('correct if GB means binary "
    "units'); a 'wrong' figure's factor is given for the reading the rule picks, with the other in brackets."
)


def printed_bytes(claimed: float, unit: str, source_units: str = "") -> tuple[float, float]:
    """(the rule's reading, the other reading) of a printed size, in bytes. source_units: "binary" or "decimal"
    when the source defines its units, "" when it does not (then decimal first)."""
    binary, decimal = units.binary_and_decimal(unit)
    if source_units == "binary":
        return claimed * binary, claimed * decimal
    return claimed * decimal, claimed * binary


def check_figure(fig: PublishedFigure, config: KVConfig, tolerance: float = 0.05) -> FigureCheck:
    """Compare a printed figure with the exact bytes under UNITS_RULE, allowing for rounding."""
    cfg = replace(config, dtype=fig.dtype)
    actual = kv_bytes(cfg, fig.context_len, fig.batch)
    arithmetic = ngettext(
        "{layers} layers x {per_token:,} B/token/layer ({kind}, {kv_heads} KV heads x head_dim {head_dim}, {dtype}) "
        "x {tokens:,} token x batch {batch} = {total}",
        "{layers} layers x {per_token:,} B/token/layer ({kind}, {kv_heads} KV heads x head_dim {head_dim}, {dtype}) "
        "x {tokens:,} tokens x batch {batch} = {total}",
        fig.context_len,
    ).format(
        layers=cfg.n_layer,
        per_token=cfg.bytes_per_token_per_layer,
        kind=cfg.attention_kind,
        kv_heads=cfg.n_kv_heads,
        head_dim=cfg.head_dim,
        dtype=cfg.dtype,
        tokens=fig.context_len,
        batch=fig.batch,
        total=format_bytes(actual),
    )
    rule, other = printed_bytes(fig.claimed, fig.claimed_unit, fig.source_units)
    rule_error, other_error = abs(rule - actual) / actual, abs(other - actual) / actual
    if rule_error <= tolerance and rule_error <= other_error:
        return FigureCheck(fig, actual, "correct", arithmetic)
    if other_error <= tolerance:
        meaning = "binary" if fig.source_units != "binary" else "decimal"
        return FigureCheck(fig, actual, f"correct if {fig.claimed_unit} means {meaning} units", arithmetic)
    return FigureCheck(
        fig,
        actual,
        "wrong",
        _(
            "{arithmetic}; the printed figure is {factor:.3g}x that ({other:.3g}x with the other reading of {unit})"
        ).format(arithmetic=arithmetic, factor=rule / actual, other=other / actual, unit=fig.claimed_unit),
    )


_DEVTO = "https://dev.to/jagmarques/kv-cache-memory-calculator-how-much-does-your-llm-actually-use-85n"
_DENNEMAN = "https://frankdenneman.nl/2026/01/12/the-dynamic-world-of-llm-runtime-memory"
_TOOLJOLT = "https://tooljolt.com/tools/llama-3-1-405b-kv-cache-calculator"
# Each figure source's title (as published: names, not translated) and date. The dev.to post's title is the one its
# address spells; Denneman's date is the one in its address; neither dev.to nor ToolJolt shows a date kvviz recorded.
PUBLISHED_SOURCE_TITLES = {
    _DEVTO: "KV Cache Memory Calculator: How Much Does Your LLM Actually Use",
    _DENNEMAN: "The Dynamic World of LLM Runtime Memory",
    _TOOLJOLT: "Llama 3.1 405B KV-Cache Calculator",
}


def link(url: str) -> str:
    """A source's address as markdown's autolink, <url>: the link ends at the ">", so the punctuation a sentence
    puts after it (a Chinese "（" or "；" written without a space) never becomes part of the address."""
    return f"<{url}>"


def _published_sources() -> str:
    """The published-figures card's three sources, each with its author or site, title, address and date."""
    return i18n.list_sep().join(
        [
            _("{who}, '{title}', {url} (date not recorded, read November 2026)").format(
                who="jagmarques (dev.to)", title=PUBLISHED_SOURCE_TITLES[_DEVTO], url=link(_DEVTO)
            ),
            _("{who}, '{title}', {url} ({date})").format(
                who="Frank Denneman",
                title=PUBLISHED_SOURCE_TITLES[_DENNEMAN],
                url=link(_DENNEMAN),
                date=_("12 January 2026"),
            ),
            _("{who}, '{title}', {url} (date not recorded, read November 2026)").format(
                who="ToolJolt", title=PUBLISHED_SOURCE_TITLES[_TOOLJOLT], url=link(_TOOLJOLT)
            ),
        ]
    )


PUBLISHED_FIGURES: tuple[PublishedFigure, ...] = (
    PublishedFigure("llama-3-8b", 4096, 1, "fp16", 0.5, "GB", _DEVTO, N_("Llama-3-8B ... 4K tokens 0.5 GB")),
    PublishedFigure("llama-3-8b", 131072, 1, "fp16", 16, "GB", _DEVTO, N_("Llama-3-8B ... 128K tokens 16 GB")),
    PublishedFigure(
        "llama-3-70b", 4096, 1, "fp16", 5, "GB", _DEVTO, N_("Llama-3-70B (L=80, H=8 KV heads, d=128) 4K tokens 5 GB")
    ),
    PublishedFigure("llama-3-70b", 32768, 1, "fp16", 40, "GB", _DEVTO, N_("Llama-3-70B ... 32K tokens 40 GB")),
    PublishedFigure("llama-3-70b", 131072, 1, "fp16", 160, "GB", _DEVTO, N_("Llama-3-70B ... 128K tokens 160 GB")),
    PublishedFigure(
        "llama-3.1-70b",
        131072,
        1,
        "fp16",
        42.95,
        "GB",
        _DENNEMAN,
        N_("327,680 = 0.33MB / token x 131072 = 42.95GB (decimal GB)"),
        "decimal",
    ),
    PublishedFigure("llama-3.1-405b", 1, 1, "fp16", 504.0, "KB", _TOOLJOLT, N_("~504.0 KB per token at FP16")),
)


def published_figure_checks() -> list[FigureCheck]:
    return [check_figure(f, get_preset(f.model).kv) for f in PUBLISHED_FIGURES]


def _figures_claim() -> Claim:
    checks = published_figure_checks()
    wrong = [c for c in checks if c.verdict == "wrong"]
    factors = sorted(
        {
            round(printed_bytes(c.figure.claimed, c.figure.claimed_unit, c.figure.source_units)[0] / c.actual_bytes, 3)
            for c in wrong
        }
    )
    binary = sorted(
        {
            round(c.figure.claimed * units.binary_and_decimal(c.figure.claimed_unit)[0] / c.actual_bytes, 3)
            for c in wrong
        }
    )
    return Claim(
        "published-kv-sizes",
        _("KV-cache sizes printed in calculators and blog posts (Llama-3-8B/70B, 3.1-70B/405B)"),
        _published_sources(),
        "wrong" if wrong else "holds",
        _(
            "{wrong} of {total} figures are wrong (all Llama-3-70B rows of the dev.to calculator, {factors} too large; "
            "{binary} if GB means GiB); the others hold (some only with GB read as GiB)."
        ).format(
            wrong=len(wrong),
            total=len(checks),
            factors=" / ".join(numbers.ratio(f, ".3g") for f in factors),
            binary=" / ".join(numbers.ratio(f, "g") for f in binary),
        ),
        tuple(
            _("{quote}: {verdict}. {explanation}").format(
                quote=_(c.figure.quote), verdict=c.verdict_text, explanation=c.explanation
            )
            for c in checks
        ),
        {f"{c.figure.model}@{c.figure.context_len}": c.actual_bytes for c in checks},
        PAGE_MEMORY,
        PAGE_MEMORY.query(tab="Textbook figures"),
    )


GEMMA3_ROW = N_("Gemma 3-4B | 34 layers | 4 KV heads | head_dim 256 | 4096 | 896 MB")  # the chapter's table row
TOTAL_ON_QUOTE = N_("KV cache: reduces time complexity from O(n²) to O(n) for generating n tokens")
PREFILL_QUOTE = N_("For a 2048-token system prompt, that can save 50-100ms of prefill time on each request")


# ----- memory claims ------------------------------------------------------------------------------------------
# Each card's source: title, URL, date (or "undated" and when kvviz read it), and the words as printed.
_AKUNU_URL = "https://akunu.prabod.rathnayaka.me/part8/ch45-kv-cache.html"
# Titles of English sources stay as published (names); the words around them are translated.
SOURCE_TITLES = ("KV Cache Design and Management", "Fast Generation with KV-Cache")


def _undated(source: str, url: str) -> str:
    """A source line: who and what, its address, and when kvviz read it (the page gives no date)."""
    return _("{source}, {url} (undated; read November 2026)").format(source=source, url=link(url))


def _akunu() -> str:
    return _undated(_("Akunu book, ch. 45 '{title}'").format(title=SOURCE_TITLES[0]), _AKUNU_URL)


def _gemma3_claims() -> list[Claim]:
    """The Akunu chapter's KV-size table. The chapter defines its MB as binary ('8,388,608 bytes = 8 MB'), so under
    UNITS_RULE its MB and GB are read as MiB and GiB."""
    gemma = get_preset("gemma-3-4b").kv
    all_global = gemma.all_global()
    flat, hybrid = kv_bytes(all_global, 4096), kv_bytes(gemma, 4096)
    wrong = Claim(
        "gemma3-896mb",
        GEMMA3_ROW,
        _akunu(),
        "wrong",
        _(
            "the chapter's MB is binary (it writes 8,388,608 bytes = 8 MB), so 896 MB = 896 MiB: {vs_flat:.3g}x "
            "the {flat_mib:g} MiB even an all-global cache takes, {vs_hybrid:.3g}x the {hybrid_mib:g} MiB "
            "with Gemma 3's real 5 local (window {window}) : 1 global layers."
        ).format(
            vs_flat=896 * MIB / flat,
            flat_mib=flat / MIB,
            vs_hybrid=896 * MIB / hybrid,
            hybrid_mib=hybrid / MIB,
            window=gemma.window,
        ),
        (
            _("per token per layer: 2 x 4 x 256 x 2 B = {per_token:,} B").format(
                per_token=gemma.bytes_per_token_per_layer
            ),
            _("all 34 layers global: 34 x 4,096 x {per_token:,} = {total}").format(
                per_token=gemma.bytes_per_token_per_layer, total=format_bytes(flat)
            ),
            _(
                "{global_layers} global layers x 4,096 tokens + {local_layers} local layers x {window:,} tokens = "
                "{total}"
            ).format(
                global_layers=gemma.n_global_layers,
                local_layers=gemma.n_layer - gemma.n_global_layers,
                window=gemma.window,
                total=format_bytes(hybrid),
            ),
        ),
        {"all_global_bytes": flat, "hybrid_bytes": hybrid},
        PAGE_MEMORY,
        PAGE_MEMORY.query(preset="gemma-3-4b", context=4096, tab="Per layer"),
        translation=translation_beside(GEMMA3_ROW),
    )
    llama70 = get_preset("llama-3-70b").kv
    # (the row as the chapter prints it, kvviz's config for it, tokens, printed MiB)
    rows = [
        ("LLaMA 3-8B | 32 | 8 | 128 | 4096 | 512 MB", get_preset("llama-3-8b").kv, 4096, 512 * MIB, "512 MB"),
        ("LLaMA 3-8B | 32 | 8 | 128 | 8192 | 1 GB", get_preset("llama-3-8b").kv, 8192, GIB, "1 GB"),
        ("Qwen 2.5-7B | 28 | 4 | 128 | 4096 | 224 MB", get_preset("qwen2.5-7b").kv, 4096, 224 * MIB, "224 MB"),
        ("LLaMA 3-70B | 80 | 8 | 128 | 4096 | 1.25 GB", llama70, 4096, 5 * GIB // 4, "1.25 GB"),
        ("LLaMA 3-70B | 80 | 8 | 128 | 8192 | 2.5 GB", llama70, 8192, 5 * GIB // 2, "2.5 GB"),
        (N_("70B without GQA (64 KV heads), 8192: 20 GB"), replace(llama70, n_kv_heads=64), 8192, 20 * GIB, "20 GB"),
    ]
    computed = {label: kv_bytes(replace(cfg, dtype="fp16"), n) for label, cfg, n, _printed, _shown in rows}
    holds = all(computed[label] == printed for label, _cfg, _n, printed, _shown in rows)
    others = Claim(
        "gemma3-table-other-rows",
        _(
            "the same chapter's other sizes: 512 MB, 1 GB, 224 MB, 1.25 GB, 2.5 GB (table) "
            "and 20 GB (its 70B-without-GQA example)"
        ),
        _akunu(),
        "holds" if holds else "wrong",
        (
            _(
                "every other size is exact, checked at the layers, KV heads, head_dim and context length each row prints "
                "(fp16, the chapter's storage), with its MB and GB read as MiB and GiB as the chapter defines them."
            )
            if holds
            else _("a row differs")
        ),
        tuple(
            _("{row}: {layers} x 2 x {kv_heads} x {head_dim} x 2 B x {tokens:,} = {total} (printed {shown})").format(
                row=_(label),
                layers=cfg.n_layer,
                kv_heads=cfg.n_kv_heads,
                head_dim=cfg.head_dim,
                tokens=n,
                total=format_bytes(computed[label]),
                shown=shown,
            )
            for label, cfg, n, _bytes, shown in rows
        ),
        {label: computed[label] for label, *_rest in rows},
        PAGE_MEMORY,
        PAGE_MEMORY.query(preset="llama-3-70b", context=8192, dtype="fp16"),
    )
    return [wrong, others]


# ----- the seeds' own figures ----------------------------------------------------------------------------------
# kvviz grew from four texts (../shared/sources/); two of them print a KV-cache size. Their words are quoted as
# written (Chinese), with a translation beside them outside Chinese; the sizes are computed by memory.kv_bytes.
_ZHIHU_URL = "https://www.zhihu.com/question/596900067/answer/3040011798"
GPT3_PAPER = "Brown et al. 2020, Language Models are Few-Shot Learners, arXiv:2005.14165, Table 2.1"
ZHIHU_QUOTE = (
    "以GPT3-175B为例，假设以 float16 来保存 KV cache，senquence长度为100，batchsize=1，则 KV cache占用显存为 "
    "2×100×12288×96×2 Byte= 472MB。"
)
ZHIHU_TRANSLATION = (
    "Take GPT3-175B as an example: storing the KV cache in float16, with a sequence length of 100 and "
    "batchsize=1, the KV cache takes 2×100×12288×96×2 Byte = 472MB of GPU memory."
)
VISUALISER_TITLE = "KV Cache 原理"  # the interactive page's title, as published
VISUALISER_QUOTE = "例:32层 × 4096长度 × 4096维 × 2 × 2B ≈ 4GB/样本"
VISUALISER_TRANSLATION = "e.g. 32 layers × 4096 length × 4096 dims × 2 × 2B ≈ 4GB per sample"


def translation_beside(english: str) -> str:
    """An English source's words stay the card's quote as published; a reader of Chinese gets the catalog's
    translation beside them (译文), never a translation inside the quotation marks. `english` is marked N_()."""
    return _(english) if i18n.current() == i18n.CHINESE else ""


def translated(translation: str) -> str:
    """The translation shown beside a Chinese source's words: none for a reader of Chinese."""
    return "" if i18n.current() == i18n.CHINESE else translation


def _seed_claims() -> list[Claim]:
    """The Zhihu answer's GPT-3 figure (right) and the interactive page's 4 GB (wrong), checked under UNITS_RULE."""
    gpt3 = KVConfig(96, 96, 96, 128, "fp16", name="GPT-3 175B")  # d_model 12,288 = 96 heads x 128
    gpt3_bytes = kv_bytes(gpt3, 100)
    zhihu_rule, zhihu_other = printed_bytes(472, "MB")
    zhihu_holds = abs(zhihu_rule - gpt3_bytes) / gpt3_bytes <= 0.05
    zhihu = Claim(
        "seed-zhihu-gpt3-472mb",
        ZHIHU_QUOTE,
        _(
            "Zhihu answer on the KV cache (title and date not recorded in kvviz's copy), {url}; GPT-3's shape: {paper}"
        ).format(url=link(_ZHIHU_URL), paper=GPT3_PAPER),
        "holds" if zhihu_holds else "wrong",
        _(
            "right: 2 x 100 x 12,288 x 96 x 2 B = {exact:,} B, which is 472 MB in decimal megabytes ({mib:.0f} MiB); "
            "12,288 is GPT-3's hidden size, 96 heads x head_dim 128, so the formula counts every head's K and "
            "V."
        ).format(exact=gpt3_bytes, mib=gpt3_bytes / MIB),
        (
            _(
                "GPT-3 175B: {layers} layers, {heads} KV heads x head_dim {head_dim} = hidden size {hidden:,} ({paper})"
            ).format(
                layers=gpt3.n_layer,
                heads=gpt3.n_kv_heads,
                head_dim=gpt3.head_dim,
                hidden=gpt3.n_kv_heads * gpt3.head_dim,
                paper=GPT3_PAPER,
            ),
            _("{layers} layers x {per_token:,} B/token/layer (fp16) x 100 tokens x batch 1 = {total}").format(
                layers=gpt3.n_layer, per_token=gpt3.bytes_per_token_per_layer, total=format_bytes(gpt3_bytes)
            ),
            _(
                "printed 472 MB = {rule:,.0f} B (decimal, UNITS_RULE): {factor:.4f} of the exact size ({other:.4f} "
                "with MB read as MiB)"
            ).format(rule=zhihu_rule, factor=zhihu_rule / gpt3_bytes, other=zhihu_other / gpt3_bytes),
        ),
        {"exact_bytes": gpt3_bytes, "printed_MB": 472},
        PAGE_MEMORY,
        translation=translated(ZHIHU_TRANSLATION),
    )
    example = KVConfig(32, 32, 32, 128, "fp16", name="32 x 4096")  # 4,096 dims = 32 heads x 128, MHA
    example_bytes = kv_bytes(example, 4096)
    rule, other = printed_bytes(4, "GB")
    visualiser = Claim(
        "seed-visualiser-4gb",
        VISUALISER_QUOTE,
        _("the interactive page '{title}' (address not recorded; undated; read November 2026)").format(
            title=VISUALISER_TITLE
        ),
        "wrong" if min(abs(rule - example_bytes), abs(other - example_bytes)) / example_bytes > 0.05 else "holds",
        _(
            "wrong: 32 x 4,096 x 4,096 x 2 x 2 B = {exact:,} B = {gib:g} GiB ({gb:.3g} GB); the printed 4 GB is "
            "{factor:.3g}x that (exactly {other:g}x if GB means GiB): the page's own product is 2 GiB, not 4."
        ).format(
            exact=example_bytes,
            gib=example_bytes / GIB,
            gb=example_bytes / GB,
            factor=rule / example_bytes,
            other=other / example_bytes,
        ),
        (
            _(
                "{layers} layers x 4,096 tokens x 4,096 dims (32 heads x 128) x 2 (K and V) x 2 B (float16) = {total}"
            ).format(layers=example.n_layer, total=format_bytes(example_bytes)),
            _("the same layout as Llama-2-7B (32 layers, 32 heads x 128, fp16) at its 4,096 positions: {total}").format(
                total=format_bytes(kv_bytes(replace(get_preset("llama-2-7b").kv, dtype="fp16"), 4096))
            ),
        ),
        {"exact_bytes": example_bytes, "printed_GB": 4},
        PAGE_MEMORY,
        PAGE_MEMORY.query(preset="llama-2-7b", context=4096, dtype="fp16"),
        translation=translated(VISUALISER_TRANSLATION),
    )
    return [zhihu, visualiser]


# ----- work claims ----------------------------------------------------------------------------------------------
def _gpt2_shape() -> ops.ModelShape:
    shape = get_preset("gpt2").shape
    assert shape is not None
    return shape


def _only_q_claim() -> Claim:
    s = _gpt2_shape()
    step = ops.forward_pass_counts(s, 100, 1, True, lm_head_all_positions=False)
    q_only = s.n_layer * s.n_embd * s.n_head * s.head_dim
    original = "Decode 阶段每个新 token 只算 Q,K/V 从 Cache 读"  # the source's own words (Chinese)
    return Claim(
        # The source's words as written (Chinese); outside Chinese, a translation beside them.
        "only-own-q",
        original,
        _undated(
            _("Jimmy Song, AI handbook, 'KV 缓存' (KV cache): '{quote}'").format(quote=original),
            "https://jimmysong.io/book/ai-handbook/fundamentals/kv-cache",
        ),
        "wrong",
        _(
            "the new token computes its own Q, K and V (K and V are appended to the cache): "
            "{factor:g}x the projection work of Q alone on GPT-2 124M."
        ).format(factor=step.qkv_proj / q_only),
        (
            _("Q/K/V projections of one cached GPT-2 step: 12 layers x 768 x (768 + 2 x 768) = {ops:,} ops").format(
                ops=step.qkv_proj
            ),
            _("Q alone: 12 x 768 x 768 = {ops:,} ops").format(ops=q_only),
        ),
        {"qkv_ops": step.qkv_proj, "q_only_ops": q_only},
        PAGE_STEP,
        translation=translated(_("Decode: each new token computes only Q; K/V are read from the cache")),
    )


def _total_on_claim(n: int = 1000) -> Claim:
    per_head = ops.attention_per_head(_gpt2_shape(), 1, n)
    return Claim(
        "total-work-o-n",
        TOTAL_ON_QUOTE,
        _undated(
            _("Zack Hubert, '{title}'").format(title=SOURCE_TITLES[1]), "https://zhubert.com/transformer/kv-cache/"
        ),
        "partly true",
        _(
            "true only for the projections and MLP (one token per step, n in total); attention is O(n) per step and "
            "O(n^2) over a generation with the cache (O(n^3) without), so the total is not O(n)."
        ),
        (
            _("QK^T dot products per head, {n:,} tokens from a 1-token prompt: with cache N(N+1)/2 = {dots:,}").format(
                n=n, dots=per_head.run_cached
            ),
            _("without cache N(N+1)(N+2)/6 = {dots:,}; ratio (N+2)/3 = {ratio:.4g}").format(
                dots=per_head.run_uncached, ratio=per_head.run_ratio
            ),
        ),
        {"cached_dots_per_head": per_head.run_cached, "uncached_dots_per_head": per_head.run_uncached},
        PAGE_OPS,
        PAGE_OPS.query(model="gpt2", prompt=1, new=1000, tab="Per component"),
        translation=translation_beside(TOTAL_ON_QUOTE),
    )


@dataclass(frozen=True)
class GPUCompute:
    name: str
    peak_flops: float  # dense 16-bit peak (no sparsity): NVIDIA/AMD tensor cores from the datasheet; Apple F16 ALUs
    source: str  # English, marked N_(): show _(source)
    precision: str = "BF16"  # the 16-bit format the peak is for (T4 has no BF16; Apple GPUs: F16)
    bandwidth_bytes_per_s: float | None = None  # unified-memory bandwidth where a cited source gives it
    bandwidth_source: str = ""  # English, marked N_(): title, address, date

    @property
    def is_apple(self) -> bool:
        """The hardware the prefill claim's source (the Akunu book) is about: Apple Silicon."""
        return self.name.startswith("Apple ")


# Apple's GPUs: F16 peak from Philip Turner's measured table (Apple publishes FP32 teraflops only, e.g. 2.6 for M1,
# which matches the table's F32 column; the table gives F16 = F32 on these chips); memory bandwidth from Apple's own
# press releases. Only chips with a measured (not "leaked", "≥") figure in that table are listed.
_METAL_BENCHMARKS = N_(
    "Philip Turner, 'Metal Benchmarks', <https://github.com/philipturner/metal-benchmarks>, table "
    "'Overview of Apple-designed GPUs', GFLOPS F16 column (undated; read November 2026)"
)
_APPLE_M1_PRO_MAX = N_(
    "Apple Newsroom, 'Introducing M1 Pro and M1 Max: the most powerful chips Apple has ever built', "
    "<https://www.apple.com/newsroom/2021/10/introducing-m1-pro-and-m1-max-the-most-powerful-chips-"
    "apple-has-ever-built/> (18 October 2021): M1 Pro 200GB/s, M1 Max 400GB/s"
)
_APPLE_M1_ULTRA = N_(
    "Apple Newsroom, 'Apple unveils M1 Ultra, the world's most powerful chip for a personal computer', "
    "<https://www.apple.com/newsroom/2022/03/apple-unveils-m1-ultra-the-worlds-most-powerful-chip-for-a-"
    "personal-computer/> (8 March 2022): 800GB/s"
)
GPU_COMPUTE: dict[str, GPUCompute] = {
    g.name: g
    for g in [
        GPUCompute("Apple M1 (8-core GPU)", 2617e9, _METAL_BENCHMARKS, "F16"),  # Apple publishes no M1 bandwidth
        GPUCompute("Apple M1 Pro (16-core GPU)", 5308e9, _METAL_BENCHMARKS, "F16", 200e9, _APPLE_M1_PRO_MAX),
        GPUCompute("Apple M1 Max (32-core GPU)", 10620e9, _METAL_BENCHMARKS, "F16", 400e9, _APPLE_M1_PRO_MAX),
        GPUCompute("Apple M1 Ultra (64-core GPU)", 21230e9, _METAL_BENCHMARKS, "F16", 800e9, _APPLE_M1_ULTRA),
        GPUCompute("NVIDIA T4", 65e12, N_("T4 datasheet: 65 TFLOPS mixed-precision FP16 (T4 has no BF16)"), "FP16"),
        GPUCompute("NVIDIA L4", 121e12, N_("L4 datasheet: 242 TFLOPS BF16 with sparsity, 121 dense")),
        GPUCompute("NVIDIA A100", 312e12, N_("A100 datasheet: 312 TFLOPS BF16 dense")),
        GPUCompute("NVIDIA H100 SXM", 989e12, N_("H100 datasheet: 1,979 TFLOPS BF16 with sparsity, 989 dense")),
        GPUCompute("AMD MI300X", 1307e12, N_("MI300X datasheet: 1,307.4 TFLOPS BF16 dense")),
    ]
}
# The claim is judged on the hardware its source is about; of the Apple GPUs listed, the fastest (if the saving is
# larger than claimed there, it is on every one).
DEFAULT_GPU = "Apple M1 Ultra (64-core GPU)"
GPU_LABEL = N_(
    "GPU for this claim (its source is about Apple Silicon; the others are for comparison). Peak: "
    "dense 16-bit, F16 on Apple GPUs, BF16 from the datasheet elsewhere, FP16 on the T4"
)
CLAIM_LOW_MS, CLAIM_HIGH_MS = 50.0, 100.0  # "50-100 ms"


def prefill_verdict(ms_at_peak: float, low_ms: float = CLAIM_LOW_MS, high_ms: float = CLAIM_HIGH_MS) -> str:
    """The verdict on "saves low-high ms" from the one bound that needs no assumed efficiency: no prefill runs
    faster than at 100% of the peak. wrong: even at peak it takes longer than high_ms (the saving is larger than
    claimed at any utilization); cannot be judged: the claim holds at some utilization (between ms_at_peak/high_ms
    and ms_at_peak/low_ms of peak), and kvviz has no source for the utilization a real prefill reaches."""
    return "wrong" if ms_at_peak > high_ms else "cannot be judged"


def prefill_claim(gpu: str = DEFAULT_GPU, prompt: int = 2048) -> Claim:
    """The 2048-token system-prompt claim, worked out on `gpu` (a GPU_COMPUTE key): its verdict depends on it."""
    g = GPU_COMPUTE[gpu]
    preset = get_preset("llama-3-8b")
    assert preset.shape is not None
    rule = 2 * preset.n_params * prompt
    exact = ops.forward_pass_counts(preset.shape, 0, prompt, True, lm_head_all_positions=False).total_flops
    ms = exact / g.peak_flops * 1000
    verdict = prefill_verdict(ms)
    if verdict == "wrong":
        how = _(
            "the saving is larger than claimed at any utilization, at least {factor:.3g}x the claim's top "
            "of {high:.0f} ms."
        ).format(factor=ms / CLAIM_HIGH_MS, high=CLAIM_HIGH_MS)
    else:
        how = _(
            "the claim holds only if a real prefill runs at {low:.0%}-{high:.0%} of peak, and kvviz has no "
            "source for the utilization a real prefill reaches here, so it cannot judge it."
        ).format(low=ms / CLAIM_HIGH_MS, high=min(1.0, ms / CLAIM_LOW_MS))
    hardware = (
        "" if g.is_apple else " " + _("(The source is about Apple Silicon: this GPU is not the hardware it describes.)")
    )
    apple = [a for a in GPU_COMPUTE.values() if a.is_apple]
    fastest_apple = max(apple, key=lambda a: a.peak_flops)
    largest_model = g.peak_flops * CLAIM_HIGH_MS / 1000 / (2 * prompt)
    arithmetic = [
        _("rule of thumb 2 x params x tokens = 2 x {params:,} x {tokens:,} = {flops:.3e} FLOP").format(
            params=preset.n_params, tokens=prompt, flops=rule
        ),
        _("kvviz's exact matmul count (Llama-3-8B shape, attention included) = {flops:.4e} FLOP").format(flops=exact),
        _("/ {peak:.4g} FLOP/s ({source}) = {ms:,.1f} ms at 100% of peak, the fastest any prefill can run").format(
            peak=g.peak_flops, source=_(g.source), ms=ms
        ),
    ]
    if g.bandwidth_bytes_per_s:
        read_ms = 2 * preset.n_params / g.bandwidth_bytes_per_s * 1000
        arithmetic.append(
            _(
                "reading 16-bit weights once ({weights:,} B) at {gb_s:g} GB/s ({source}) takes {read_ms:,.1f} ms, less than "
                "the compute: the compute roof sets the floor"
            ).format(
                weights=2 * preset.n_params,
                gb_s=g.bandwidth_bytes_per_s / 1e9,
                source=_(g.bandwidth_source),
                read_ms=read_ms,
            )
        )
    arithmetic += [
        _(
            "at 100% of this peak, a {tokens:,}-token prefill fits in {high:.0f} ms only for a model of at most "
            "{params:,.0f} parameters (2 x params x tokens)"
        ).format(tokens=prompt, high=CLAIM_HIGH_MS, params=largest_model),
        _("the fastest Apple GPU listed, {name}: {ms:,.0f} ms at 100% of its peak").format(
            name=fastest_apple.name, ms=exact / fastest_apple.peak_flops * 1000
        ),
    ]
    return Claim(
        "system-prompt-prefill",
        PREFILL_QUOTE,
        _akunu(),
        verdict,
        _(
            "for an 8B model (the chapter's running example, LLaMA 3-8B) on the {gpu} the prefill takes at least "
            "{ms:,.0f} ms (100% of its {precision} peak): {how}"
        ).format(gpu=g.name, ms=ms, precision=g.precision, how=how)
        + hardware,
        tuple(arithmetic),
        {
            "rule_flops": rule,
            "exact_flops": exact,
            "ms_at_peak": round(ms, 3),
            "gpu": g.name,
            "peak_flops": g.peak_flops,
            "bandwidth_bytes_per_s": g.bandwidth_bytes_per_s,
        },
        PAGE_OPS,
        PAGE_OPS.query(model="llama-3-8b", prompt=prompt, new=1, tab="Per component"),
        translation=translation_beside(PREFILL_QUOTE),
    )


def fixed_claims() -> list[Claim]:
    """Every claim whose verdict does not depend on a choice."""
    return [*_seed_claims(), *_gemma3_claims(), _figures_claim(), _only_q_claim(), _total_on_claim()]


def all_claims(gpu: str = DEFAULT_GPU) -> list[Claim]:
    """Every claim kvviz checks, the prefill claim worked out for `gpu` (a GPU_COMPUTE key) last."""
    return [*fixed_claims(), prefill_claim(gpu)]
