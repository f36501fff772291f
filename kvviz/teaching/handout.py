"""The lesson's printable handout: one HTML file, one printed page per step (its question, its figure, the worked
answer), every number computed for the model the lesson ran on. Self-contained (plotly.js inlined once, so it
opens offline) and printable (print CSS: a page break after each step, no screen chrome). No Streamlit, no torch.
Written in the current language (kvviz.i18n: the caller wraps it in `i18n.language(code)` when it runs off the
session's thread), the questions too: they are language-free (their texts are Messages), drawn here.
"""

from __future__ import annotations

import hashlib
import html
import pickle
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from kvviz import i18n
from kvviz.i18n import _
from kvviz.teaching.lesson import STEPS, LessonStep, Question

# A handout costs 1.5-2.6 s of CPU to draw (about 5 MB of HTML) and is the same for one model, language and set of
# questions, so a student who clicks Download again and again, or a class that downloads it together, draws it
# once: kept per (model, language, worksheet, questions) for the most recent HANDOUT_CACHE_ENTRIES, and drawn one
# at a time on this server (a hit never waits for a drawing).
HANDOUT_CACHE_ENTRIES = 8
_drawn: OrderedDict[Hashable, str] = OrderedDict()
_drawn_lock = threading.Lock()  # guards _drawn; held only to look up or store
_drawing_lock = threading.Lock()  # one handout drawn at a time

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans CJK SC", "PingFang SC", "Microsoft YaHei",
       sans-serif; color: #111; background: #fff;
       max-width: 820px; margin: 0 auto; padding: 16px; line-height: 1.45; }
h1 { font-size: 26px; margin: 0 0 4px 0; } h2 { font-size: 21px; margin: 0 0 6px 0; }
.step { padding: 12px 0 20px 0; border-bottom: 1px solid #ccc; } .intro { border-bottom: 2px solid #111; }
.question { border: 2px solid #1c7ed6; border-radius: 8px; padding: 8px 12px; margin: 8px 0; }
.choices { margin: 4px 0 0 0; } .answer { border-left: 4px solid #2b8a3e; padding: 4px 12px; margin-top: 8px; }
.caption { color: #555; font-size: 13px; } .work { min-height: 120px; border: 1px dashed #aaa; margin-top: 8px; } .hint { color: #444; font-style: italic; }
/* A CJK face has no italic: a browser slants the upright glyphs (faux italic), and Chinese marks emphasis with
   dots under the characters (着重号), so a Chinese handout keeps its hint upright and dots its emphasis. */
:lang(zh) .hint, :lang(zh) i { font-style: normal; text-emphasis: filled dot; text-emphasis-position: under right; }
:lang(zh) .hint { text-emphasis: none; border-left: 3px solid #aaa; padding-left: 8px; }
.figure { page-break-inside: avoid; break-inside: avoid; }
code { background: #f1f3f5; padding: 0 3px; border-radius: 3px; }
@media print {
  body { max-width: none; padding: 0; font-size: 13px; line-height: 1.35; }
  h2 { font-size: 18px; } .step { padding: 0; } p { margin: 6px 0; }
  .step { page-break-after: always; break-after: page; border: none; }
  .no-print { display: none; }
}
"""


def markdown_html(text: str) -> str:
    """The lesson's small markdown subset as HTML: **bold**, *italic*, `code`, '- ' lists, paragraphs."""
    out, items = [], []
    for block in text.split("\n\n"):
        lines = block.split("\n")
        if all(line.startswith("- ") for line in lines if line.strip()):
            items = "".join(f"<li>{_inline(line[2:])}</li>" for line in lines if line.strip())
            out.append(f"<ul>{items}</ul>")
        else:
            out.append(f"<p>{_inline(' '.join(lines))}</p>")
    return "".join(out)


def _inline(text: str) -> str:
    parts = re.split(r"(`[^`]*`)", text)
    done = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            done.append(f"<code>{html.escape(part[1:-1])}</code>")
            continue
        part = html.escape(part, quote=False)
        part = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", part)
        # Not `\w` around the stars: it matches CJK, so "在*每一*层" printed its asterisks. Only a Latin letter or
        # digit beside a star (a*b*c, 2*3) keeps it literal.
        part = re.sub(r"(?<![A-Za-z0-9_*])\*(?!\s)(.+?)(?<!\s)\*(?![A-Za-z0-9_*])", r"<i>\1</i>", part)
        done.append(part)
    return "".join(done)


def handout_html(
    steps: Sequence[LessonStep], questions: Sequence[Question], model_label: str, worksheet: bool = False
) -> str:
    """One page per step, in order: title, what to look at, the question (and its choices), the figure(s), the
    hint and the worked answer. The worksheet is the same pages without the hint, the answer and the figures that
    would give the answer away (those shown only after the answer in the lesson)."""
    # plotly only once a handout is drawn: the lesson's content never needs it (tests/test_layering.py)
    from kvviz.figures.lesson import lesson_figure

    pages, plotly_js = [], "inline"
    for number, (step, q) in enumerate(zip(steps, questions, strict=True), start=1):
        figures = []
        pictures = [pic for pic in q.pictures if not (worksheet and pic.after)]
        for pic in pictures:
            fig = lesson_figure(pic.kind, pic.data, font_px=13)
            cap = 320 if len(pictures) == 1 else 250  # one printed page per step
            fig.update_layout(template="plotly_white", width=760, height=min(fig.layout.height or cap, cap))
            div = fig.to_html(
                full_html=False,
                include_plotlyjs=plotly_js == "inline",
                config={"staticPlot": True, "displayModeBar": False},
            )
            plotly_js = "done"
            caption = html.escape(pic.caption.shown())
            figures.append(f'<div class="figure">{div}<div class="caption">{caption}</div></div>')
        choices = (
            ("<ol class='choices' type='A'>" + "".join(f"<li>{_inline(c.shown())}</li>" for c in q.choices) + "</ol>")
            if q.is_choice
            else ""
        )
        tolerance = (
            _(" (accepted within {tolerance:.0%})").format(tolerance=q.rel_tolerance)
            if q.rel_tolerance and not q.states_tolerance
            else ""
        )
        heading = _("Step {number}. {title}").format(number=number, title=_(step.title))
        question = _("<b>Question.</b> {question}").format(question=_inline(q.text.shown()) + tolerance)
        answer = _("<b>Answer: {answer}.</b> {arithmetic}").format(
            answer=_inline(q.answer_text()), arithmetic=markdown_html(q.arithmetic.shown())
        )
        hint = _("Hint: {hint}").format(hint=_inline(q.hint.shown() if q.hint else ""))
        on_screen = _("On screen: kvviz, page “{page}”.").format(page=_(step.page.title))
        used = (
            _("Computed for {model} (a published model's preset), not the lesson's model.").format(model=q.model)
            if q.model
            else _("Computed for {model}, the model the lesson ran on.").format(model=model_label)
        )
        pages.append(
            f'<section class="step" id="step-{number}"><h2>{html.escape(heading)}</h2>'
            f"{markdown_html(_(step.teach))}"
            f'<div class="question">{question}{choices}</div>'
            f"{''.join(figures)}"
            + (
                "<div class='work'></div>"
                if worksheet  # room to write the answer
                else f'<p class="hint">{hint}</p><div class="answer">{answer}</div>'
            )
            + f"<p class='caption'>{html.escape(i18n.join_sentences((used, on_screen)))}</p></section>"
        )
    title = _("The KV cache in {n} questions").format(n=len(steps))
    preset_steps = [(n, q.model) for n, q in enumerate(questions, start=1) if q.model]
    others = i18n.list_sep().join(_("step {number}: {model}").format(number=n, model=m) for n, m in preset_steps)
    model = html.escape(model_label)
    if preset_steps:
        computed = _(
            "The numbers were computed for <b>{model}</b>, the model the lesson ran on, except where a step "
            "uses a published model's preset ({others}); each page names its model."
        ).format(model=model, others=html.escape(others))
    else:
        computed = _("Every number was computed for <b>{model}</b>, the model the lesson ran on.").format(model=model)
    if worksheet:
        title = _("The KV cache in {n} questions: worksheet").format(n=len(steps))
        intro = _(
            "Worksheet from kvviz's lesson: the handout's pages without hints or answers, for students to "
            "write on. {computed} The handout with the worked answers downloads from the same "
            "button."
        ).format(computed=computed)
    else:
        intro = _(
            "Handout from kvviz's lesson. {computed} The measured step, 11, is this machine's timing when the "
            "lesson ran. One page per step: question, figure, hint, worked answer. For students, download the "
            "worksheet from the same button: the same pages without hints or answers."
        ).format(computed=computed)
    doc_title = _("kvviz lesson handout: {title}").format(title=title)
    print_note = _("Print with your browser (Ctrl+P / Cmd+P): one page per step.")
    return (
        f"<!DOCTYPE html><html lang='{i18n.current()}'><head><meta charset='utf-8'>"
        f"<title>{html.escape(doc_title)}</title><style>{_CSS}</style>"
        f"</head><body><header class='intro'><h1>{html.escape(title)}</h1><p>{intro}</p>"
        f"<p class='no-print'>{html.escape(print_note)}</p>"
        "</header>" + "".join(pages) + "</body></html>"
    )


def questions_digest(computed: Mapping[int, Question]) -> str:
    """A fingerprint of the questions a session has computed (equal questions, equal digest): part of the cache key,
    so a session whose step timed its own machine gets a handout with its own numbers."""
    try:
        return hashlib.sha256(pickle.dumps(sorted(computed.items()))).hexdigest()
    except (pickle.PicklingError, TypeError, AttributeError):  # not plain data: never shared
        return f"unshared-{id(computed)}"


def cached_handout(key: Hashable, draw: Callable[[], str]) -> str:
    """draw()'s handout, drawn once per key (HANDOUT_CACHE_ENTRIES most recent kept) and one drawing at a time."""
    with _drawn_lock:
        if key in _drawn:
            _drawn.move_to_end(key)
            return _drawn[key]
    with _drawing_lock:
        with _drawn_lock:  # drawn by the caller this one waited for
            if key in _drawn:
                return _drawn[key]
        text = draw()
        with _drawn_lock:
            _drawn[key] = text
            while len(_drawn) > HANDOUT_CACHE_ENTRIES:
                _drawn.popitem(last=False)
    return text


def handout_maker(
    loaded: Any,
    computed: Mapping[int, Question],
    model_label: str,
    *,
    worksheet: bool = False,
    steps: Sequence[LessonStep] = STEPS,
    new_engine: Callable[[], Any] | None = None,
) -> Callable[[], str]:
    """A callable for a download button: the handout of `steps` for `loaded` (a kvviz.model.loading.LoadedModel)
    in the current language, with the questions this session has computed and the others asked of a fresh engine
    of the same model (`new_engine()`, made only if a question is missing: the page hands it over, so the lesson's
    content never imports the model's engine), through cached_handout. The callable may run on another thread:
    the language is read now."""
    lang = i18n.current()
    key = (
        loaded.info.spec,
        loaded.info.attn_implementation,
        lang,
        worksheet,
        model_label,
        len(steps),
        questions_digest(computed),
    )

    def draw() -> str:
        with i18n.language(lang):
            engine = None
            questions = []
            for n, step in enumerate(steps, start=1):
                if computed.get(n) is None and engine is None:
                    if new_engine is None:
                        raise ValueError(f"step {n} is not computed and no new_engine was given to ask it")
                    engine = new_engine()
                questions.append(computed.get(n) or step.ask(engine))
            return handout_html(steps, questions, model_label, worksheet=worksheet)

    return lambda: cached_handout(key, draw)
