"""Exact operation counts for a decoder-only transformer, with and without the KV cache.

Pure integer arithmetic (Python ints, exact for any size). Only the matrix multiplications are counted,
because they are the work the cache saves; layer norms, softmax, GELU, biases and embeddings are elementwise,
O(tokens x width), and left out.

Units (say them out loud in class):

    1 op   = 1 multiply-add (a "MAC"): one a*b added into a running sum.
    1 FLOP = half a multiply-add; FLOPs = 2 x ops (the convention of Kaplan et al. 2020, arXiv:2001.08361).
    1 attention dot product = one query . key product over head_dim numbers = head_dim ops.

Per token, per layer (n_q = n_head * head_dim, n_kv = n_kv_heads * head_dim):

    QKV projection   n_embd * (n_q + 2 n_kv)            ops   (GPT-2: one Conv1D, 3 * n_embd outputs)
    QK^T scores      n_head * keys_seen * head_dim      ops   (keys_seen = position + 1, causal)
    AV weighted sum  n_head * keys_seen * head_dim      ops   (a sum of keys_seen value rows of head_dim)
    output proj.     n_q * n_embd                       ops
    MLP              mlp_matrices * n_embd * d_ff        ops   (GPT-2: 2 matrices, d_ff = 4 n_embd; SwiGLU: 3)
    LM head          n_embd * vocab_size, once per position whose logits are computed

Causal convention: a query at position p scores keys 0..p, that is p + 1 dot products; the masked pairs
(keys after p) are *not* counted. A plain matmul, like GPT-2's eager attention, computes the masked entries
too and then overwrites them with -inf: `dense=True` counts that (every query against every key it is shown).

Generation convention (the one `transformers` and kvviz.step.engine use): N new tokens take N forward passes.
Pass 1 is the prefill of the P prompt tokens and picks new token 1. Pass k >= 2 feeds token k-1:
with the cache, that one token against a cache of P + k - 2 rows; without it, all P + k - 1 tokens from
scratch. The N-th new token is picked but never fed, so it costs nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

from kvviz.i18n import N_, _, ngettext
from kvviz.inputs.prompt_rules import IntSetting
from kvviz.inputs.query_values import WholeNumberRefused, bounded_int, shown

COMPONENTS: tuple[str, ...] = ("qkv_proj", "attn_scores", "attn_values", "out_proj", "mlp", "lm_head")
COMPONENT_LABELS: dict[str, str] = {
    "qkv_proj": N_("Q/K/V projections"),
    "attn_scores": N_("Attention scores QK^T"),
    "attn_values": N_("Weighted sum AV"),
    "out_proj": N_("Output projection"),
    "mlp": N_("MLP"),
    "lm_head": N_("LM head (logits)"),
}  # English labels (the CLI prints them); a page shows _(COMPONENT_LABELS[k])
FLOPS_PER_OP = 2  # one multiply-add = 2 floating-point operations
MAX_TOKENS = 10**9  # refuse absurd lengths instead of building billion-entry step lists
# The Count-the-work page's numbers and `kvviz ops`'s options: each one's bounds (and the page's first value) once.
INPUTS: dict[str, IntSetting] = {
    "prompt": IntSetting(N_("prompt tokens P"), 1, 10**6, default=16),
    "new": IntSetting(N_("new tokens N"), 1, 10**6, default=200),
    "layers": IntSetting(N_("layers"), 1, 10_000, default=12),
    "heads": IntSetting(N_("query heads"), 1, 100_000, default=12),
    "kv_heads": IntSetting(N_("KV heads"), 1, 100_000, default=12),
    "head_dim": IntSetting(N_("head dim"), 1, 100_000, default=64),
    "hidden": IntSetting(N_("hidden size"), 1, 10**6, default=768),
    "dff": IntSetting(N_("MLP width"), 1, 10**7, default=3072),
    "vocab": IntSetting(N_("vocabulary"), 1, 10**7, default=50257),
}


class OpsInputError(ValueError):
    """A shape or length that cannot be counted; the message says what to change."""


def _positive_int(name: str, value: Any, upper: int = 10**12) -> int:
    try:
        return bounded_int(value, 1, upper, text=False)  # the one reader of a bounded whole number (kvviz.inputs)
    except WholeNumberRefused as refused:
        if refused.kind != "out_of_range":
            raise OpsInputError(
                _("{name} must be a whole number, got {value}").format(name=name, value=shown(repr(value)))
            ) from None
        if refused.number is None:  # thousands of digits: counted, never str()'d
            raise OpsInputError(
                _("{name} must be from {lo:,} to {hi:,} (got a {digits:,}-digit number).").format(
                    name=name, lo=1, hi=upper, digits=refused.digits
                )
            ) from None
        raise OpsInputError(
            _("{name} must be between 1 and {upper:,}, got {value:,}").format(
                name=name, upper=upper, value=refused.number
            )
        ) from None


@dataclass(frozen=True)
class ModelShape:
    """The numbers that decide how much matmul work a forward pass does, validated (a student types them on the ops
    page). A real model's come from its dimensions: ModelDims.ops_shape() (kvviz.model.dims)."""

    n_layer: int
    n_head: int  # query heads
    n_kv_heads: int  # K/V heads (= n_head for GPT-2's multi-head attention; fewer for GQA/MQA)
    head_dim: int
    n_embd: int  # hidden size (the residual stream width)
    d_ff: int  # MLP inner width (GPT-2: n_inner or 4 * n_embd)
    vocab_size: int
    mlp_matrices: int = 2  # 2 for GPT-2's fc -> GELU -> proj; 3 for gated (SwiGLU/GeGLU) MLPs
    name: str = "custom"

    def __post_init__(self) -> None:
        for field_name in ("n_layer", "n_head", "n_kv_heads", "head_dim", "n_embd", "d_ff", "vocab_size"):
            _positive_int(field_name, getattr(self, field_name))
        if self.mlp_matrices not in (2, 3):
            raise OpsInputError(_("mlp_matrices must be 2 (plain MLP) or 3 (gated MLP such as SwiGLU)"))
        if self.n_head % self.n_kv_heads:
            raise OpsInputError(
                _(
                    "n_kv_heads ({n_kv_heads}) must divide n_head ({n_head}): each K/V head serves "
                    "a whole group of query heads"
                ).format(n_kv_heads=self.n_kv_heads, n_head=self.n_head)
            )

    # ----- ops per token that do not depend on the context length ------------------------------------
    @property
    def qkv_ops_per_token(self) -> int:
        return self.n_layer * self.n_embd * (self.n_head + 2 * self.n_kv_heads) * self.head_dim

    @property
    def out_proj_ops_per_token(self) -> int:
        return self.n_layer * self.n_head * self.head_dim * self.n_embd

    @property
    def mlp_ops_per_token(self) -> int:
        return self.n_layer * self.mlp_matrices * self.n_embd * self.d_ff

    @property
    def lm_head_ops_per_position(self) -> int:
        return self.n_embd * self.vocab_size


def attention_dot_products(n_layer: int, n_head: int, cached_len_before: int, n_new: int, cached: bool) -> int:
    """QK^T dot products (each over head_dim numbers) in one forward pass that adds n_new tokens.

    Causal: the query at position p scores keys 0..p (p + 1 dot products; masked pairs not counted).
    cached=True: only the n_new queries at positions c..c+n_new-1 are computed, against every key up to their
    own position: n_new * c + n_new (n_new + 1) / 2 per head per layer.
    cached=False: all L = c + n_new tokens are recomputed: L (L + 1) / 2 per head per layer.
    """
    _positive_int("n_layer", n_layer)
    _positive_int("n_head", n_head)
    c, n = _lengths(cached_len_before, n_new)
    per_head = n * c + n * (n + 1) // 2 if cached else (c + n) * (c + n + 1) // 2
    return n_layer * n_head * per_head


def attention_dot_products_dense(n_layer: int, n_head: int, cached_len_before: int, n_new: int, cached: bool) -> int:
    """Like attention_dot_products, but counting what a plain matmul computes: every query against every
    key it is given, masked pairs included (cached: n_new x L; uncached: L x L, per head per layer)."""
    _positive_int("n_layer", n_layer)
    _positive_int("n_head", n_head)
    c, n = _lengths(cached_len_before, n_new)
    per_head = n * (c + n) if cached else (c + n) ** 2
    return n_layer * n_head * per_head


def _lengths(cached_len_before: Any, n_new: Any) -> tuple[int, int]:
    if isinstance(cached_len_before, bool) or not isinstance(cached_len_before, int):
        raise OpsInputError(
            _("cached_len_before must be a whole number, got {value}").format(value=repr(cached_len_before))
        )
    if not 0 <= cached_len_before <= MAX_TOKENS:
        raise OpsInputError(_("cached_len_before must be between 0 and {upper:,}").format(upper=MAX_TOKENS))
    _positive_int("n_new", n_new, MAX_TOKENS)
    return cached_len_before, n_new


@dataclass(frozen=True)
class PassCounts:
    """Ops (multiply-adds) of one forward pass, or a sum of passes, per component."""

    tokens_fed: int  # tokens whose Q/K/V/MLP are computed in the pass(es)
    attention_dot_products: int  # QK^T dot products, each over head_dim numbers
    qkv_proj: int
    attn_scores: int
    attn_values: int
    out_proj: int
    mlp: int
    lm_head: int

    @property
    def total_ops(self) -> int:
        return sum(getattr(self, c) for c in COMPONENTS)

    @property
    def total_flops(self) -> int:
        return FLOPS_PER_OP * self.total_ops

    @property
    def attention_ops(self) -> int:
        """The context-dependent part: QK^T + AV."""
        return self.attn_scores + self.attn_values

    @property
    def linear_ops(self) -> int:
        """The per-token part inside the layers: Q/K/V and output projections, MLP (LM head excluded)."""
        return self.qkv_proj + self.out_proj + self.mlp

    def ops(self, component: str) -> int:
        return getattr(self, component)

    def flops(self, component: str) -> int:
        return FLOPS_PER_OP * getattr(self, component)

    def __add__(self, other: PassCounts) -> PassCounts:
        return PassCounts(**{k: v + getattr(other, k) for k, v in asdict(self).items()})

    def as_dict(self) -> dict[str, int]:
        """ops per component, their FLOPs, and totals: plain ints for JSON."""
        out: dict[str, int] = {"tokens_fed": self.tokens_fed, "attention_dot_products": self.attention_dot_products}
        out.update({f"{c}_ops": self.ops(c) for c in COMPONENTS})
        out.update({f"{c}_flops": self.flops(c) for c in COMPONENTS})
        out.update(total_ops=self.total_ops, total_flops=self.total_flops)
        return out


ZERO = PassCounts(0, 0, 0, 0, 0, 0, 0, 0)


def _counts(shape: ModelShape, tokens_fed: int, dots: int, lm_positions: int) -> PassCounts:
    """Every component from three numbers: tokens through the weights, attention dot products, logit rows."""
    return PassCounts(
        tokens_fed=tokens_fed,
        attention_dot_products=dots,
        qkv_proj=tokens_fed * shape.qkv_ops_per_token,
        attn_scores=dots * shape.head_dim,
        attn_values=dots * shape.head_dim,
        out_proj=tokens_fed * shape.out_proj_ops_per_token,
        mlp=tokens_fed * shape.mlp_ops_per_token,
        lm_head=lm_positions * shape.lm_head_ops_per_position,
    )


def forward_pass_counts(
    shape: ModelShape,
    cached_len_before: int,
    n_new: int,
    cached: bool,
    *,
    lm_head_all_positions: bool = True,
    dense: bool = False,
) -> PassCounts:
    """Ops of one forward pass adding n_new tokens to cached_len_before earlier ones.

    cached=False recomputes all cached_len_before + n_new tokens. lm_head_all_positions=True is what a plain
    `model(input_ids)` does (logits for every position fed); False is `logits_to_keep=1` (only the last one,
    all that sampling needs). dense=True counts masked attention entries too (what eager matmuls execute).
    """
    c, n = _lengths(cached_len_before, n_new)
    tokens_fed = n if cached else c + n
    count = attention_dot_products_dense if dense else attention_dot_products
    dots = count(shape.n_layer, shape.n_head, c, n, cached)
    return _counts(shape, tokens_fed, dots, tokens_fed if lm_head_all_positions else 1)


@dataclass(frozen=True)
class GenerationStep:
    """Pass k of a generation, with and without the cache, and the running totals up to it."""

    index: int  # 1 = the prefill pass
    context_len: int  # tokens in the sequence after this pass (= P + k - 1)
    cached: PassCounts
    uncached: PassCounts
    cached_cumulative: PassCounts
    uncached_cumulative: PassCounts


def _check_generation(prompt_len: int, new_tokens: int) -> None:
    _positive_int("prompt length", prompt_len, MAX_TOKENS)
    _positive_int("new tokens", new_tokens, MAX_TOKENS)


def generation_steps(
    shape: ModelShape, prompt_len: int, new_tokens: int, *, lm_head_all_positions: bool = True
) -> Iterator[GenerationStep]:
    """The N passes of a generation (see the module docstring), one record each. Lazy: O(1) memory."""
    _check_generation(prompt_len, new_tokens)
    cached_total = uncached_total = ZERO
    for k in range(1, new_tokens + 1):
        if k == 1:
            cached_pass = forward_pass_counts(shape, 0, prompt_len, True, lm_head_all_positions=lm_head_all_positions)
            uncached_pass = cached_pass
        else:
            before = prompt_len + k - 2
            cached_pass = forward_pass_counts(shape, before, 1, True, lm_head_all_positions=lm_head_all_positions)
            uncached_pass = forward_pass_counts(shape, before, 1, False, lm_head_all_positions=lm_head_all_positions)
        cached_total = cached_total + cached_pass
        uncached_total = uncached_total + uncached_pass
        yield GenerationStep(k, prompt_len + k - 1, cached_pass, uncached_pass, cached_total, uncached_total)


def _sum_k(lo: int, hi: int) -> int:
    """lo + (lo+1) + ... + hi, exactly (0 when hi < lo)."""
    return 0 if hi < lo else (lo + hi) * (hi - lo + 1) // 2


def _sum_triangle(lo: int, hi: int) -> int:
    """sum of L (L + 1) / 2 for L = lo..hi, exactly, via the tetrahedral numbers T(n) = n(n+1)(n+2)/6."""

    def tet(n: int) -> int:
        return n * (n + 1) * (n + 2) // 6 if n > 0 else 0

    return 0 if hi < lo else tet(hi) - tet(lo - 1)


def generation_totals(
    shape: ModelShape, prompt_len: int, new_tokens: int, *, lm_head_all_positions: bool = True
) -> tuple[PassCounts, PassCounts]:
    """(cached, uncached) totals over the whole generation, in closed form (O(1) for any N).

    Equal to the last step of generation_steps(); the tests check that they agree.
    """
    _check_generation(prompt_len, new_tokens)
    p, n = prompt_len, new_tokens
    heads = shape.n_layer * shape.n_head
    prefill_dots = p * (p + 1) // 2
    # cached pass k >= 2: one query at position P + k - 2 sees P + k - 1 keys, k = 2..N -> keys P+1..P+N-1
    cached_dots = heads * (prefill_dots + _sum_k(p + 1, p + n - 1))
    # uncached pass k >= 2 recomputes L = P + k - 1 tokens: L (L + 1) / 2 per head, L = P+1..P+N-1
    uncached_dots = heads * (prefill_dots + _sum_triangle(p + 1, p + n - 1))
    cached_tokens = p + (n - 1)
    uncached_tokens = p + _sum_k(p + 1, p + n - 1)

    def build(tokens: int, dots: int) -> PassCounts:
        return _counts(shape, tokens, dots, tokens if lm_head_all_positions else n)

    return build(cached_tokens, cached_dots), build(uncached_tokens, uncached_dots)


# What the counts mean: the one-sentence summary of what the cache saves, the popular "1000 tokens, ~500x
# fewer computations" claim read four ways, and the cumulative curve the charts draw.


@dataclass(frozen=True)
class AttentionPerHead:
    """QK^T dot products of one head in one layer, generating `new_tokens` after a `prompt_len`-token prompt, with
    and without the cache: the arithmetic behind "~500x". T = positions the last pass sees (P + N - 1).

        whole run      with the cache T(T+1)/2 (one row per pass);  without it the sum of the triangles the passes
                       compute, T(T+1)(T+2)/6 - (P-1)P(P+1)/6 (the prefill computes one triangle, not P of them);
                       ratio about (T+2)/3
        the last step  T with the cache;  T(T+1)/2 without;  ratio (T+1)/2
    """

    prompt_len: int
    positions: int  # T
    run_cached: int
    run_uncached: int
    last_step_cached: int
    last_step_uncached: int

    @property
    def run_ratio(self) -> float:
        return self.run_uncached / self.run_cached

    @property
    def last_step_ratio(self) -> float:
        return self.last_step_uncached / self.last_step_cached

    @property
    def all_triangles(self) -> int:
        """T(T+1)(T+2)/6: the triangles 1..T, every length's uncached pass."""
        t = self.positions
        return t * (t + 1) * (t + 2) // 6

    @property
    def prompt_triangles(self) -> int:
        """(P-1)P(P+1)/6: the triangles 1..P-1, which the prefill never computes on its own."""
        p = self.prompt_len
        return (p - 1) * p * (p + 1) // 6


def _claim_passes(shape: ModelShape, prompt_len: int, new_tokens: int) -> tuple[PassCounts, ...]:
    """(the last step cached, uncached, the whole run cached, uncached), the LM head on the last position only."""
    _check_generation(prompt_len, new_tokens)
    t = prompt_len + new_tokens - 1
    last = forward_pass_counts(shape, t - 1, 1, True, lm_head_all_positions=False)
    last_u = forward_pass_counts(shape, t - 1, 1, False, lm_head_all_positions=False)
    return (last, last_u, *generation_totals(shape, prompt_len, new_tokens, lm_head_all_positions=False))


def attention_per_head(shape: ModelShape, prompt_len: int, new_tokens: int) -> AttentionPerHead:
    """The counts above, per head, for this generation (see AttentionPerHead)."""
    last, last_u, cached, uncached = _claim_passes(shape, prompt_len, new_tokens)
    heads = shape.n_layer * shape.n_head
    return AttentionPerHead(
        prompt_len,
        prompt_len + new_tokens - 1,
        cached.attention_dot_products // heads,
        uncached.attention_dot_products // heads,
        last.attention_dot_products // heads,
        last_u.attention_dot_products // heads,
    )


@dataclass(frozen=True)
class ClaimRow:
    """One reading of "1000 tokens, ~500x fewer computations": which quantity, its exact ratio, verdict."""

    quantity: str
    uncached: int
    cached: int
    ratio: float  # for display only; uncached / cached
    holds: bool  # within 10% of the claimed factor


LINEAR_WHOLE_RUN = N_("Projections + MLP, the whole generation")  # the row the ops page quotes in its sentence


def check_speedup_claim(shape: ModelShape, n_tokens: int = 1000, claimed_factor: float = 500.0) -> list[ClaimRow]:
    """Test the popular claim on four quantities: generate n_tokens from a 1-token prompt.

    Per step at the end (L = n_tokens): attention is L(L+1)/2 vs L dot products (~L/2); projections and MLP
    L tokens vs 1 (L). Whole generation: attention sum L(L+1)/2 vs sum L (~n/3); projections and MLP sum L vs n
    (~n/2). The LM head is counted for the last position only in both runs (it is in "All ops" only).
    """
    _positive_int("n_tokens", n_tokens, MAX_TOKENS)
    last, last_u, cached, uncached = _claim_passes(shape, 1, n_tokens)
    rows = [  # quantity: a stable English key (tests, CLI); a page shows _(row.quantity)
        (N_("Attention (QK^T + AV), the last step alone"), last_u.attention_ops, last.attention_ops),
        (N_("Projections + MLP, the last step alone"), last_u.linear_ops, last.linear_ops),
        (N_("All ops, the last step alone"), last_u.total_ops, last.total_ops),
        (N_("Attention (QK^T + AV), the whole generation"), uncached.attention_ops, cached.attention_ops),
        (LINEAR_WHOLE_RUN, uncached.linear_ops, cached.linear_ops),
        (N_("All ops, the whole generation"), uncached.total_ops, cached.total_ops),
    ]
    out = []
    for quantity, u, c in rows:
        ratio = u / c
        out.append(ClaimRow(quantity, u, c, ratio, abs(ratio - claimed_factor) <= 0.1 * claimed_factor))
    return out


# ----- what the cache saves, in words derived from the counts ------------------------------------------------
# Per group of components: (the clause when the cache saves nothing, the clause with its factor, components).
# Whole clauses, each a message of its own, fill the one sentence's slots (a translator reorders them freely).
SUMMARY_GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        N_("the same work in the Q/K/V and output projections and the MLP"),
        N_("{factor:,.1f}x less work in the Q/K/V and output projections and the MLP"),
        ("qkv_proj", "out_proj", "mlp"),
    ),
    (
        N_("the same work in attention (QK^T and AV)"),
        N_("{factor:,.1f}x less work in attention (QK^T and AV)"),
        ("attn_scores", "attn_values"),
    ),
    (
        N_("the same work in the LM head (only the last position's logits are computed either way)"),
        N_("{factor:,.1f}x less work in the LM head"),
        ("lm_head",),
    ),
)


def savings_sentence(
    shape: ModelShape, prompt_len: int, new_tokens: int, *, lm_head_all_positions: bool = False
) -> str:
    """One sentence of what the cache saves, per group of components, every factor computed from the counts.

    e.g. (bundled model, P=16, N=200) "Generating 200 tokens after a 16-token prompt, the KV cache does 107.4x less
    work in the Q/K/V and output projections and the MLP, 72.3x less work in attention (QK^T and AV), and the same
    work in the LM head (only the last position's logits are computed either way): 81.3x less in total."
    In the current language (kvviz.i18n; English outside a page).
    """
    cached, uncached = generation_totals(shape, prompt_len, new_tokens, lm_head_all_positions=lm_head_all_positions)
    parts = []
    for same, less, components in SUMMARY_GROUPS:
        c, u = sum(cached.ops(k) for k in components), sum(uncached.ops(k) for k in components)
        parts.append(_(same) if c == u else _(less).format(factor=u / c))
    total = uncached.total_ops / cached.total_ops
    return ngettext(
        "Generating {n:,} token after a {p:,}-token prompt, the KV cache does {first}, {second}, and {third}: "
        "{total:,.1f}x less in total.",
        "Generating {n:,} tokens after a {p:,}-token prompt, the KV cache does {first}, {second}, and {third}: "
        "{total:,.1f}x less in total.",
        new_tokens,
    ).format(n=new_tokens, p=prompt_len, first=parts[0], second=parts[1], third=parts[2], total=total)


def curve(
    shape: ModelShape, prompt_len: int, new_tokens: int, *, max_points: int = 400, lm_head_all_positions: bool = True
) -> list[tuple[int, PassCounts, PassCounts]]:
    """(k, cached cumulative, uncached cumulative) at up to max_points evenly spread k (always incl. 1 and N),
    from the closed form, so a chart of a million-token generation costs max_points evaluations."""
    _check_generation(prompt_len, new_tokens)
    if new_tokens <= max_points:
        ks = list(range(1, new_tokens + 1))
    else:
        ks = sorted({1 + (new_tokens - 1) * i // (max_points - 1) for i in range(max_points)})
    out = []
    for k in ks:
        cached, uncached = generation_totals(shape, prompt_len, k, lm_head_all_positions=lm_head_all_positions)
        out.append((k, cached, uncached))
    return out


# ----- a hybrid's decode step: what one token costs to mix in the past, per layer ----------------------------------
# One decode token at position p (0-based), in one layer, not counting the projections and the MLP (their ops per
# token are the same at every position, in both kinds of layer):
#
#     attention layer       QK^T + AV over the p + 1 cached rows: 2 x n_head x (p + 1) x head_dim ops: grows with p
#     Gated DeltaNet layer  per head, three products with its d_k x d_v state: k^T S (what the state predicts for k),
#                           S += k delta^T (the delta rule's write), q^T S (the read): 3 x d_k x d_v ops; and the
#                           short convolution: conv_channels x conv_kernel ops. The same at every p.
#
# (The state's decay, S *= exp(g), is d_k x d_v plain multiplies per head, elementwise like a softmax: not counted.)
def attention_token_ops(n_head: int, head_dim: int, position: int) -> int:
    """Ops one decode token at `position` spends in one attention layer on QK^T and AV (causal: p + 1 keys)."""
    _positive_int("n_head", n_head)
    _positive_int("head_dim", head_dim)
    c, _n = _lengths(position, 1)
    return 2 * n_head * (c + 1) * head_dim


def linear_attention_token_ops(heads: int, d_k: int, d_v: int, conv_channels: int, conv_kernel: int) -> int:
    """Ops one decode token spends in one Gated DeltaNet layer on its state (3 products with each head's d_k x d_v
    matrix) and its short convolution: the same at every position."""
    for name, value in (
        ("heads", heads),
        ("d_k", d_k),
        ("d_v", d_v),
        ("conv_channels", conv_channels),
        ("conv_kernel", conv_kernel),
    ):
        _positive_int(name, value)
    return 3 * heads * d_k * d_v + conv_channels * conv_kernel


def linear_cheaper_from(n_head: int, head_dim: int, linear_ops: int) -> int:
    """The first position at which one attention layer's step costs more than `linear_ops` (exact, integer)."""
    per_row = 2 * n_head * head_dim
    return (
        linear_ops // per_row
    )  # attention_token_ops(p) = per_row x (p + 1) > linear_ops  <=>  p + 1 > linear_ops / per_row


@dataclass(frozen=True)
class HybridTokenCosts:
    """One decode token's ops, per layer, at each position 0..n_positions-1 of a hybrid: what an attention layer
    spends on QK^T + AV (grows one row at a time) beside what a Gated DeltaNet layer spends on its state and its
    short convolution (the same at every position). Projections and MLPs are left out: the same in both, at every p."""

    positions: tuple[int, ...]
    attention_ops: tuple[int, ...]  # per attention layer, at each position
    linear_ops: int  # per linear layer, at any position
    linear_cheaper_from: int  # the first position at which the attention layer's step costs more
    ops_per_row: int  # what one more cached row adds to the attention layer's step: 2 x n_head x head_dim


def hybrid_token_costs(
    n_head: int, head_dim: int, heads: int, d_k: int, d_v: int, conv_channels: int, conv_kernel: int, n_positions: int
) -> HybridTokenCosts:
    """The per-token costs of both kinds of layer over a context of n_positions (attention_token_ops,
    linear_attention_token_ops)."""
    _positive_int("n_positions", n_positions, MAX_TOKENS)
    linear = linear_attention_token_ops(heads, d_k, d_v, conv_channels, conv_kernel)
    positions = tuple(range(n_positions))
    return HybridTokenCosts(
        positions=positions,
        attention_ops=tuple(attention_token_ops(n_head, head_dim, p) for p in positions),
        linear_ops=linear,
        linear_cheaper_from=linear_cheaper_from(n_head, head_dim, linear),
        ops_per_row=2 * n_head * head_dim,
    )
