"""Browser sessions for the classroom load test and tests/test_browser_classroom.py: one student per Playwright context.

A session opens the step page, prefills its own prompt ("Student 7 asks: ..."), then follows a plan of clicks
(Next token, Back). After every click it waits until the click has *settled* (the "Cache length" metric shows
the expected length and the token strip's last position matches) and checks the strip is its own: the
prompt's tokens (from the bundled tokenizer), and at every position the same token it saw there before
(greedy decoding is deterministic; Back re-pends the token it removed). Settle time is measured in the page,
from the click event to the first DOM state that shows the settled click.

All knowledge of the step page's markup (button labels, the prompt box, the strip, the metric) is in the
"Page selectors" block below: update it there when the page changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOKENIZER_JSON = REPO / "kvviz/assets/bundled/tokenizer.json"  # the app's default model
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"]
MAX_CLICKS = 200  # per session: the bundled model has 256 positions
SETTLE_TIMEOUT_S = 90.0
LINES = [
    "what is a cache?",
    "why keep the keys?",
    "O Romeo, Romeo!",
    "to be, or not to be",
    "hear me speak.",
    "one two three one two",
    "the values never change",
    "a query meets every key",
]

# --- Page selectors: the ONE place that knows the step page's markup. -------------------------------------
BUTTONS = {"prefill": "Prefill", "next": "Next token", "back": "Back"}  # buttons also show an icon and a key hint
PROMPT_LABEL = "Prompt"  # the text area; it may sit in a popover whose button says "Prompt"
# kvvizState(): what a session sees now. The strip is `.kvviz-strip > span[data-pos]` (data-pos = position or
# "next"); older markup (kvviz/step/strip.py) puts "<pos>: ..." in each span's title. <sub> holds labels.
STATE_JS = r"""
window.kvvizState = () => {
  const metric = [...document.querySelectorAll('[data-testid="stMetric"]')]
    .find(m => (m.querySelector('[data-testid="stMetricLabel"]')?.innerText || '').trim().startsWith('Cache length'));
  const value = metric?.querySelector('[data-testid="stMetricValue"]')?.innerText;
  let spans = [...document.querySelectorAll('.kvviz-strip > span[data-pos]')];
  if (!spans.length) spans = [...document.querySelectorAll('span[title]')].filter(s => /^(\d+|next): /.test(s.title));
  spans = spans.filter(s => s.parentElement === spans[0].parentElement);  // the first strip only
  const strip = spans.map(s => {
    const copy = s.cloneNode(true); copy.querySelectorAll('sub').forEach(x => x.remove());
    return [s.dataset.pos ?? s.title.split(':')[0], copy.textContent];
  });
  const numbered = strip.filter(t => t[0] !== 'next');
  return {cache: value ? parseInt(value) : null, strip,
          lastPos: numbered.length ? parseInt(numbered[numbered.length - 1][0]) : null,
          errors: document.querySelectorAll('[data-testid="stException"], [data-testid="stAlertContentError"]').length};
};
"""
# Arm before a click: time from the click event to the first DOM state where the click has settled.
ARM_JS = r"""(expectCache) => {
  window.kvvizT0 = null;
  document.addEventListener('click', () => { if (window.kvvizT0 === null) window.kvvizT0 = performance.now(); },
                            {capture: true, once: true});
  window.kvvizSettled = new Promise(resolve => {
    const check = () => {
      if (window.kvvizT0 === null) return;
      const s = window.kvvizState();
      if (s.cache === expectCache && s.lastPos === expectCache - 1) { obs.disconnect(); resolve(performance.now() - window.kvvizT0); }
    };
    const obs = new MutationObserver(check);
    obs.observe(document.body, {subtree: true, childList: true, characterData: true});
  });
}"""


BENCH_BUTTON = "Run benchmark"  # on the speed-up page
ERROR_SELECTOR = '[data-testid="stException"], [data-testid="stAlertContentError"]'
BENCH_ARM_JS = r"""() => {
  window.kvvizT0 = null;
  document.addEventListener('click', () => { if (window.kvvizT0 === null) window.kvvizT0 = performance.now(); },
                            {capture: true, once: true});
  window.kvvizBenchDone = new Promise(resolve => {
    let seen = false;
    const obs = new MutationObserver(() => {
      if (document.querySelector('[data-testid="stProgress"]')) seen = true;
      else if (seen && window.kvvizT0 !== null) { obs.disconnect(); resolve(performance.now() - window.kvvizT0); }
    });
    obs.observe(document.body, {subtree: true, childList: true});
  });
}"""


def visible(token: str) -> str:
    """The strip's rendering of a token (kvviz.figures.step.visible, copied to keep this script plotly-free)."""
    return token.replace("\n", "↵").replace(" ", "·") or "∅"


def session_prompt(index: int) -> str:
    return f"Student {index} asks:\n{LINES[index % len(LINES)]}"


def expected_prompt_strip(prompt: str) -> list[str]:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(TOKENIZER_JSON))
    return [visible(tok.decode([i])) for i in tok.encode(prompt).ids]


@dataclass
class SessionReport:
    index: int
    prompt: str
    clicks: list[dict] = field(default_factory=list)  # {"action", "settle_ms" or None, "problem" or None}
    problems: list[str] = field(default_factory=list)
    replica_cookie: list[str] = field(default_factory=list)  # kvviz_replica cookie at start and end (nginx)


def button(page, action: str):
    """The visible button of an action (its text may also hold an icon name and a key hint: "Next token →")."""
    return page.locator("button:visible", has_text=re.compile(re.escape(BUTTONS[action]))).first  # case-sensitive


async def set_prompt(page, text: str) -> None:
    """Type the prompt and apply it (Ctrl+Enter), opening the "Prompt" popover first when the box is hidden."""
    box = page.locator(f'textarea[aria-label="{PROMPT_LABEL}"]')
    if not await box.is_visible():
        await page.locator('[data-testid="stPopoverButton"]', has_text=PROMPT_LABEL).first.click()
    await box.fill(text)
    await box.press("Control+Enter")
    await page.keyboard.press("Escape")  # close the popover so it covers no button


def _classify(state: dict, expect_cache: int, known: dict[int, str], others: list[list[str]]) -> str | None:
    """None when the settled state is this session's own and right, else the kind of problem.

    known: position -> token text this session must see there (its prompt's tokens, then every token it saw:
    greedy decoding is deterministic, and Back re-pends the token it removed). The pending token ("next")
    sits at position cache length. The strip may show only its last tokens; every shown one is checked.
    """
    if state["errors"]:
        return "error"
    shown = {expect_cache if pos == "next" else int(pos): text for pos, text in state["strip"]}
    if state["lastPos"] is None:
        return "empty"
    if any(known.get(pos, text) != text for pos, text in shown.items()):
        for other in others:
            overlap = [pos for pos in shown if pos < len(other)]
            if overlap and all(shown[pos] == other[pos] for pos in overlap):
                return "foreign"
        return "wrong"
    if state["cache"] != expect_cache or state["lastPos"] != expect_cache - 1:
        return "wrong"
    known.update(shown)
    return None


async def _click(page, action: str, expect_cache: int, known, others, report: SessionReport) -> bool:
    await page.evaluate(ARM_JS, expect_cache)
    await button(page, action).click()
    settle_ms = None
    with contextlib.suppress(TimeoutError):
        settle_ms = await asyncio.wait_for(page.evaluate("() => window.kvvizSettled"), SETTLE_TIMEOUT_S)
    state = await page.evaluate("() => window.kvvizState()")
    problem = _classify(state, expect_cache, known, others)
    if settle_ms is None and (problem is None or (problem == "wrong" and state["cache"] != expect_cache)):
        problem = "timeout"  # its own tokens, but the click did not show within SETTLE_TIMEOUT_S
    report.clicks.append({"action": action, "settle_ms": settle_ms, "problem": problem})
    if problem:
        report.problems.append(
            f"{action} -> cache {expect_cache}: {problem} (saw cache {state['cache']}, "
            f"{len(state['strip'])} strip tokens)"
        )
    return state["cache"] == expect_cache  # go on while the server's cache is where this session expects it


async def step_session(browser, url: str, index: int, prompts: list[str], plan, report: SessionReport) -> None:
    """One student: open the step page, prefill prompts[index], then follow `plan` (an iterator of actions)."""
    own = expected_prompt_strip(prompts[index])
    others = [expected_prompt_strip(p) for i, p in enumerate(prompts) if i != index]
    known = dict(enumerate(own))
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        await context.add_init_script(STATE_JS)
        page = await context.new_page()
        page.set_default_timeout(SETTLE_TIMEOUT_S * 1000)
        await page.goto(f"{url}/step_through")
        report.replica_cookie += [c["value"] for c in await context.cookies() if c["name"] == "kvviz_replica"]
        await set_prompt(page, prompts[index])
        cache = len(own)
        if not await _click(page, "prefill", cache, known, others, report):
            return
        async for action in plan:
            if action == "back" and cache <= len(own):
                action = "next"  # nothing to roll back yet
            cache += 1 if action == "next" else -1
            if not await _click(page, action, cache, known, others, report):
                return
        report.replica_cookie += [c["value"] for c in await context.cookies() if c["name"] == "kvviz_replica"]
    finally:
        await context.close()


async def fixed_plan(actions, pause_s: float = 0.0):
    for action in actions:
        await asyncio.sleep(pause_s)
        yield action


async def timed_plan(duration_s: float, interval_s: float, back_every: int, rng: random.Random):
    """A click every ~interval_s (+-25 %; at once when the last one settled later), every `back_every`-th
    one Back, the rest Next token, for duration_s from the first request (after the session's prefill)."""
    n, due = 0, time.monotonic()
    deadline = due + duration_s
    while n < MAX_CLICKS:
        due = max(due + interval_s * rng.uniform(0.75, 1.25), time.monotonic())
        if due >= deadline:
            return
        await asyncio.sleep(due - time.monotonic())
        n += 1
        yield "back" if back_every and n % back_every == 0 else "next"


async def benchmark_session(browser, url: str, done: asyncio.Event, runs: list[dict]) -> None:
    """Keeps the speed-up page's benchmark (its defaults) running, back to back, until the step sessions are done.

    A run lasts from the click until its progress bar (shown while it waits and runs) is gone again."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = await context.new_page()
        await page.goto(f"{url}/speedup")
        await page.wait_for_selector("h1", timeout=SETTLE_TIMEOUT_S * 1000)
        while not done.is_set():
            await page.evaluate(BENCH_ARM_JS)
            await page.locator("button:visible", has_text=BENCH_BUTTON).first.click()
            seconds = None
            with contextlib.suppress(TimeoutError):
                seconds = round(await asyncio.wait_for(page.evaluate("() => window.kvvizBenchDone"), 600) / 1000, 2)
            errors = await page.locator(ERROR_SELECTOR).count()
            runs.append({"seconds": seconds, "errors": errors})
            if seconds is None:
                return
    finally:
        await context.close()


async def run_load(
    url: str,
    prompts: list[str],
    plans: list,
    *,
    benchmark: bool = False,
    ramp_s: float = 0.0,
    sessions: list[int] | None = None,
) -> tuple[list[SessionReport], list[dict]]:
    """Drive one session per plan (prompts[i] for session i) in one headless Chromium; returns their reports."""
    from playwright.async_api import async_playwright

    sessions = list(range(len(plans))) if sessions is None else sessions  # which of the class this client drives
    reports = {i: SessionReport(i, prompts[i]) for i in sessions}
    bench_runs: list[dict] = []

    async def start_later(i: int):
        await asyncio.sleep(ramp_s * i / max(1, len(plans)))  # the whole class's ramp, whoever drives i
        try:
            await step_session(browser, url, i, prompts, plans[i], reports[i])
        except Exception as exc:  # a crashed session is a finding, not a crash of the whole run
            reports[i].problems.append(f"session failed: {type(exc).__name__}: {str(exc).splitlines()[0]}")
            reports[i].clicks.append({"action": "session", "settle_ms": None, "problem": "error"})

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        done = asyncio.Event()

        async def all_sessions():
            await asyncio.gather(*(start_later(i) for i in sessions))
            done.set()

        await asyncio.gather(
            all_sessions(), *([benchmark_session(browser, url, done, bench_runs)] if benchmark else [])
        )
        await browser.close()
    return list(reports.values()), bench_runs
