"""Quantized KV cache, its settings: the formats, the group size and residual rows a page offers, the greedy-agreement
caps, and the checks and errors in the reader's words. Torch-free: a page imports it at its top.

The formats: fp16 / bf16 (plain casts) and int8 / int4 (asymmetric round-to-nearest, per token and per group of
`group_size` consecutive channels of one head's K or V vector, each group with an fp16 scale and zero point: 4 bytes
per group, as `kvviz.memory` counts them). int2 (BITS) is not one of SCHEMES (the Quantized caches page's formats):
the eviction lab puts it on its equal-bytes axis. The arithmetic, the real cache stored that way and the agreement
run live in kvviz.internals.lab.quant (torch at its top).
"""

from __future__ import annotations

from kvviz.i18n import N_, _
from kvviz.inputs.prompt_rules import IntSetting, check_int_in_range
from kvviz.internals.records import LayerError, QuantReport, SchemeAgreement

__all__ = [
    "AGREEMENT_TOKENS",
    "GROUP_SIZE",
    "RESIDUAL_ROWS",
    "AGREEMENT_MAX_PROMPTS",
    "AGREEMENT_MAX_PROMPT_TOKENS",
    "AGREEMENT_MAX_TOKENS",
    "BITS",
    "MIN_GROUP",
    "SCHEMES",
    "LayerError",
    "QuantError",
    "QuantReport",
    "SchemeAgreement",
    "check_agreement_work",
    "check_scheme",
]

SCHEMES = ("fp16", "bf16", "int8", "int4")  # the Quantized caches page's formats
MIN_GROUP = 4
# Greedy agreement runs 1 + len(SCHEMES) generations per prompt, one model pass per token: its work is capped in
# prompts, in tokens per prompt and in their product, so a run stays within seconds.
AGREEMENT_MAX_PROMPTS = 8
AGREEMENT_MAX_TOKENS = 32  # per prompt
AGREEMENT_MAX_PROMPT_TOKENS = 128  # prompts x tokens per prompt: ~640 one-token passes, a few seconds on 2 cores


# The page's inputs. Group size and residual rows are bounded by the model (GROUP_SIZE.up_to(head_dim): its
# default is then head_dim, one group per head vector; RESIDUAL_ROWS.up_to(the residual window - 1)).
GROUP_SIZE = IntSetting(N_("group size"), MIN_GROUP, 2**31 - 1, default=2**31 - 1)
RESIDUAL_ROWS = IntSetting(N_("full-precision residual rows"), 0, 2**31 - 1, default=0)
AGREEMENT_TOKENS = IntSetting(N_("tokens per prompt"), 1, AGREEMENT_MAX_TOKENS, default=16)


class QuantError(ValueError):
    """A bit width, group size or prompt set the quantizer cannot use; the message says what is allowed."""


def check_agreement_work(n_prompts: int, n_new: int) -> None:
    """Refuse a greedy-agreement run past its caps (prompts, tokens per prompt, and their product)."""
    n_prompts = check_int_in_range(
        n_prompts, 1, AGREEMENT_MAX_PROMPTS, _("number of prompts (one per line)"), error=QuantError
    )
    n_new = AGREEMENT_TOKENS.check(n_new, error=QuantError)
    if n_prompts * n_new > AGREEMENT_MAX_PROMPT_TOKENS:
        raise QuantError(
            _(
                "{prompts} prompts x {tokens} tokens = {total} generated tokens; the cap is {cap} (prompts "
                "x tokens). Use fewer prompts or fewer tokens."
            ).format(prompts=n_prompts, tokens=n_new, total=n_prompts * n_new, cap=AGREEMENT_MAX_PROMPT_TOKENS)
        )


BITS = {"int8": 8, "int4": 4, "int2": 2}  # the integer formats: bits per stored value


def check_scheme(scheme: str, head_dim: int, group_size: int, schemes: tuple[str, ...] = SCHEMES) -> None:
    """The format and the group size, checked for every format (the page passes one G to all of them): a G that
    no format can use is refused here, once, in these words, not later by the calculator (kvviz.memory)."""
    if scheme not in schemes:
        raise QuantError(f"unknown cache format {scheme!r}; choose one of {', '.join(schemes)}")
    if (
        isinstance(group_size, bool)
        or not isinstance(group_size, int)
        or group_size < MIN_GROUP
        or head_dim % group_size
    ):
        allowed = [g for g in range(MIN_GROUP, head_dim + 1) if head_dim % g == 0]
        raise QuantError(
            _(
                "group size must divide head_dim={head_dim} and be at least {min_group}: one of {allowed} (got {got})"
            ).format(head_dim=head_dim, min_group=MIN_GROUP, allowed=allowed, got=group_size)
        )
