"""The lesson's score: how each step went (Outcome), the score a page counts, and the code that keeps it in a URL,
signed so that only a score this server wrote is counted (torch-free, UI-free).

A step's Outcome is a stable result ("first try", "after a hint", "shown", or "" for not answered; RESULTS names each
for the reader). `encode_outcomes` writes the outcomes as one letter per step for the URL and `decode_outcomes` reads
them back; `sign_score` appends an HMAC-SHA256 under `score_key` (derived from the server's secret), and
`read_signed_score` tells a score this server signed (recorded) from one it did not (shown, never counted).

An Outcome shows its answer through the step's lesson Question: this module imports kvviz.teaching.lesson for that
record, and the lesson never imports the score, so there is no cycle.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from kvviz.i18n import N_, _
from kvviz.teaching.lesson import Question


@dataclass(frozen=True)
class Outcome:
    """How one step went: 'first try', 'after a hint', 'shown' (worked answer given), or '' (not attempted)."""

    result: str  # a stable value (one of RESULTS' keys); show it with result_label()
    given: str  # the student's last answer, as they wrote it ("" when none)
    choice: int | None = (
        None  # a multiple-choice answer's index: shown in the reader's language, not the one answered in
    )
    room: bool = False  # marked by the teacher for the room (class mode)

    @property
    def right(self) -> bool:
        """Counts as right: at the first try or after a hint (a shown answer does not)."""
        return self.result in ("first try", "after a hint")

    def shown(self, question: Question | None) -> str:
        """The answer as the summary shows it, in the current language where the question is known."""
        if self.room:
            return (
                _("the room: {answer}").format(answer=question.answer_text())
                if self.right and question
                else _("the room")
            )
        if self.choice is not None and question is not None and self.choice < len(question.choices):
            return question.choices[self.choice].shown()
        return self.given or "—"


RESULTS = {
    "first try": N_("first try"),
    "after a hint": N_("after a hint"),
    "shown": N_("shown"),
    "": N_("not answered"),
}


_CODES = {"first try": "f", "after a hint": "h", "shown": "s"}  # one letter per step in the URL; "-" = not answered


def encode_outcomes(outcomes: dict[int, Outcome], n_steps: int) -> str:
    """The outcomes as one letter per step ("fh-s..."): what a reload needs to keep the score (the answers as
    written are not kept: the summary then shows the result without them)."""
    return "".join(_CODES.get(outcomes[n].result, "-") if n in outcomes else "-" for n in range(1, n_steps + 1))


def decode_outcomes(code: str | None, n_steps: int) -> dict[int, Outcome]:
    """encode_outcomes' inverse; anything else in a link (a letter it never writes, too long) counts as not answered."""
    results = {v: k for k, v in _CODES.items()}
    return {n: Outcome(results[c], "") for n, c in enumerate((code or "")[:n_steps], start=1) if c in results}


SCORE_SIGNATURE_CHARS = 16  # hex digits of the score's HMAC-SHA256 after a '.': 64 bits, beyond guessing by hand


def score_key(server_secret: str) -> bytes:
    """The key that signs the scores a page writes, derived from a secret only the server holds (Streamlit's
    cookie secret, shared by every replica of a class's server), so that the secret itself never signs a URL."""
    return hmac.new(server_secret.encode(), b"kvviz lesson score", hashlib.sha256).digest()


def sign_score(code: str, key: bytes) -> str:
    """encode_outcomes' code as the URL carries it: "fh-s...." + its signature ("" stays "")."""
    if not code:
        return ""
    return f"{code}.{hmac.new(key, code.encode(), hashlib.sha256).hexdigest()[:SCORE_SIGNATURE_CHARS]}"


def read_signed_score(text: str | None, key: bytes, n_steps: int) -> tuple[dict[int, Outcome], dict[int, Outcome]]:
    """(recorded, unrecorded) from a URL's score: the outcomes of a score this server signed, and those of one it did
    not (a score typed into a link, signed elsewhere, or from before the server's secret changed), which a page
    shows as such and never counts. Anything that is no score at all is neither."""
    code, _dot, signature = (text or "").partition(".")
    outcomes = decode_outcomes(code[:n_steps], n_steps)
    expected = sign_score(code, key).partition(".")[2]
    if code and signature and hmac.compare_digest(signature.encode(), expected.encode()):
        return outcomes, {}
    return {}, outcomes


def result_label(result: str) -> str:
    """An Outcome's result as the summary shows it, in the current language."""
    return _(RESULTS.get(result, result))


def score(outcomes: dict[int, Outcome]) -> tuple[int, int]:
    """(right, right at the first try) over the steps answered: a step counts once."""
    right = sum(o.right for o in outcomes.values())
    first = sum(o.result == "first try" for o in outcomes.values())
    return right, first
