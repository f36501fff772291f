"""Protocol-level students for the classroom load test: Streamlit's own WebSocket protocol, no browser.

20 Chromium pages (classroom_session.py) make a 2-core laptop measure its load generator; these render nothing:

- an HTTP GET of the page (nginx's `kvviz_replica` cookie, sent on the upgrade), then WebSocket `/_stcore/stream`
  (subprotocol "streamlit"), binary protobufs both ways: every run is requested by a BackMsg `rerun_script`
  (ClientState: page_name from the URL path on the first run, then the page's page_script_hash; widget values
  and one-shot button triggers in WidgetStates; `fragment_id` when the widget sits in an `st.fragment`; the
  hashes of cached messages, answered by `ref_hash` stubs as in the browser; the query string the server last
  put in the address bar (page_info_changed), as a browser sends its URL with every rerun);
- the server answers with ForwardMsgs: new_session (a run starts), deltas that create or replace the element
  at `metadata.delta_path`, script_finished (elements the run did not touch are dropped, as the frontend does).

After every click the student reads its "page" (elements by path) as ARM_JS reads the DOM: the "Cache length"
metric and the `.kvviz-strip` chips, checked by classroom_session's own _classify. Settle time: from sending the
click's BackMsg to the first ForwardMsg after which the page shows them; the run must finish before the next click.
"""

from __future__ import annotations

import asyncio
import functools
import re
import sys
import time
import urllib.request
from html.parser import HTMLParser
from http.cookiejar import CookieJar
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom_session import (  # noqa: E402
    BENCH_BUTTON,
    BUTTONS,
    PROMPT_LABEL,
    SETTLE_TIMEOUT_S,
    SessionReport,
    _classify,
    expected_prompt_strip,
)
from streamlit.proto.Alert_pb2 import Alert  # noqa: E402
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402
from streamlit.proto.WidgetStates_pb2 import WidgetState  # noqa: E402

IDLE_AFTER_RUN_S = 2.0  # a finished run that did not settle the click: wait this long for a follow-up run
STEP_PAGE, BENCH_PAGE = "step_through", "speedup"


class StripParser(HTMLParser):
    """The first `.kvviz-strip`'s direct `span[data-pos]` children as [pos, text without <sub>] pairs."""

    def __init__(self):
        super().__init__()
        self.depth, self.strip_depth, self.chip, self.in_sub, self.done = 0, None, None, 0, False
        self.chips: list[list[str]] = []

    def handle_starttag(self, tag, attrs):
        attrs, self.depth = dict(attrs), self.depth + 1
        if self.strip_depth is None and not self.done and "kvviz-strip" in (attrs.get("class") or "").split():
            self.strip_depth = self.depth
        elif tag == "span" and self.strip_depth == self.depth - 1 and "data-pos" in attrs:
            self.chip = [attrs["data-pos"], ""]
            self.chips.append(self.chip)
        elif tag == "sub" and self.chip is not None:
            self.in_sub += 1

    def handle_endtag(self, tag):
        if tag == "sub" and self.in_sub:
            self.in_sub -= 1
        elif tag == "span" and self.chip is not None and self.depth == (self.strip_depth or 0) + 1:
            self.chip = None
        if self.depth == self.strip_depth:
            self.strip_depth, self.done = None, True
        self.depth -= 1

    def handle_data(self, data):
        if self.chip is not None and not self.in_sub:
            self.chip[1] += data


class Page:
    """What the browser would show: element per delta_path, dropped when a finished run did not touch it."""

    def __init__(self):
        self.elements: dict[tuple, tuple] = {}  # path -> (element type, element proto, fragment_id)
        self.touched: set[tuple] = set()
        self.run_fragments: set[str] = set()
        self.page_hash, self.compile_errors, self.runs, self.max_age = "", 0, 0, 2
        self.query_string = ""  # the address bar's query, as the server last set it (page_info_changed)
        # fragment id -> seconds: the `st.fragment(run_every=...)` timers the server asked for (auto_rerun), as a
        # browser keeps them to send that fragment's rerun every interval; stop_auto_rerun drops them. Recorded
        # only: nothing here sends those reruns (bench/poll_follow.py does).
        self.auto_reruns: dict[str, float] = {}
        self._cached: dict[str, tuple[ForwardMsg, int]] = {}  # hash -> (message, run it was last used in)

    def apply(self, msg: ForwardMsg) -> ForwardMsg:
        if msg.HasField("ref_hash"):  # the server sent only the hash of a message we already hold
            msg = self._cached[msg.ref_hash][0]
        if msg.metadata.cacheable and msg.hash:
            self._cached[msg.hash] = (msg, self.runs)
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.touched, self.run_fragments, self.compile_errors = set(), set(), 0
            self.max_age = msg.new_session.config.max_cached_message_age or self.max_age
        elif kind == "navigation":
            self.page_hash = msg.navigation.page_script_hash
        elif kind == "page_info_changed":
            self.query_string = msg.page_info_changed.query_string
        elif kind == "delta":
            path, delta = tuple(msg.metadata.delta_path), msg.delta
            for i in range(1, len(path) + 1):
                self.touched.add(path[:i])
            if delta.fragment_id:
                self.run_fragments.add(delta.fragment_id)
            which = delta.WhichOneof("type")
            if which == "new_element":
                el = delta.new_element
                self.elements[path] = (el.WhichOneof("type"), getattr(el, el.WhichOneof("type")), delta.fragment_id)
            elif which == "add_block":
                self.elements[path] = ("block", delta.add_block, delta.fragment_id)
        elif kind == "script_finished" and msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            whole = msg.script_finished != ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY
            self.elements = {
                p: e for p, e in self.elements.items() if p in self.touched or not (whole or e[2] in self.run_fragments)
            }
            self.compile_errors += msg.script_finished == ForwardMsg.FINISHED_WITH_COMPILE_ERROR
            self.runs += 1  # the frontend forgets cached messages unused for max_age runs: so do we
            self._cached = {h: c for h, c in self._cached.items() if self.runs - c[1] <= self.max_age}
        elif kind == "session_event" and msg.session_event.HasField("script_compilation_exception"):
            self.compile_errors += 1
        elif kind == "auto_rerun":
            self.auto_reruns[msg.auto_rerun.fragment_id] = msg.auto_rerun.interval
        elif kind == "stop_auto_rerun":
            for fragment_id in msg.stop_auto_rerun.fragment_ids:
                self.auto_reruns.pop(fragment_id, None)
        return msg

    def find(self, kind: str, label: str):
        """(widget id, fragment id) of the first element of this type and label, or None."""
        for _, (k, el, frag) in sorted(self.elements.items()):
            if k == kind and el.label == label:
                return el.id, frag
        return None

    def find_key(self, kind: str, key: str):
        """(widget id, fragment id) of the element of this type made with `key=key`, or None. Streamlit ends a
        keyed widget's id with "-<key>" (elements/lib/utils.py), so a page whose labels change (a poll's choices,
        a translated label) is still driven by the keys its script gives."""
        for _, (k, el, frag) in sorted(self.elements.items()):
            if k == kind and el.id.endswith(f"-{key}"):
                return el.id, frag
        return None

    def state(self) -> dict:
        """The same dict as classroom_session's kvvizState(): cache, strip, lastPos, errors."""
        cache, strip, errors, texts = None, None, self.compile_errors, []
        for _, (kind, el, _) in sorted(self.elements.items()):
            if kind == "metric" and cache is None and el.label.strip().startswith("Cache length"):
                digits = re.match(r"\s*(\d+)", el.body)
                cache = int(digits.group(1)) if digits else None
            elif kind == "markdown" and strip is None and "kvviz-strip" in el.body:
                strip = _strip_chips(el.body)
            if kind == "exception" or (kind == "alert" and el.format == Alert.ERROR):
                errors += 1
                texts.append(f"{el.type}: {el.message}" if kind == "exception" else el.body)
        strip = strip or []
        numbered = [int(pos) for pos, _ in strip if pos != "next"]
        return {
            "cache": cache,
            "strip": strip,
            "lastPos": numbered[-1] if numbered else None,
            "errors": errors,
            "error_texts": texts,
        }


@functools.lru_cache(maxsize=256)
def _strip_chips(body: str) -> list[list[str]]:
    """StripParser's chips of one strip's markup. state() runs after every message and the strip changes once a
    click: parsing it each time made this load generator, not the server, the bottleneck (15 of 29 s of the
    client's CPU for 10 students; 39 students saturated a core, and their settle times measured the client)."""
    parser = StripParser()
    parser.feed(body)
    return parser.chips


class Student:
    """One browser tab's worth of protocol: a WebSocket, the page it shows, and its widget values."""

    def __init__(self, url: str, page_name: str, query: str = "", cookies: dict[str, str] | None = None):
        """`query`: the address bar's query string of the first run ("room=ABC234"); `cookies`: what the browser
        already holds (a voter's token, the replica it was pinned to), sent with the GET and the upgrade."""
        self.url, self.page_name, self.page = url.rstrip("/"), page_name, Page()
        self.page.query_string = query
        self.cookies = dict(cookies or {})
        self.values: dict[str, WidgetState] = {}  # widget id -> last value set (sent with every rerun)
        self.replica_cookies: list[str] = []
        self.ws = None

    async def open(self) -> None:
        jar = CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        page_url = f"{self.url}/{self.page_name}" + (f"?{self.page.query_string}" if self.page.query_string else "")
        request = urllib.request.Request(
            page_url, headers={"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())} if self.cookies else {}
        )
        await asyncio.to_thread(lambda: opener.open(request, timeout=SETTLE_TIMEOUT_S).read())
        self.replica_cookies += [c.value for c in jar if c.name == "kvviz_replica"]
        from websockets.asyncio.client import connect

        host = urlparse(self.url).netloc
        headers = {"Origin": f"http://{host}"}
        self.cookies.update((c.name, c.value) for c in jar)
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        self.ws = await connect(
            f"ws://{host}/_stcore/stream",
            subprotocols=["streamlit"],
            max_size=None,
            additional_headers=headers,
            open_timeout=SETTLE_TIMEOUT_S,
            ping_timeout=None,
        )
        upgrade_cookie = re.search(r"kvviz_replica=(\d+)", " ".join(self.ws.response.headers.get_all("Set-Cookie")))
        if upgrade_cookie:
            self.replica_cookies.append(upgrade_cookie.group(1))
            self.cookies["kvviz_replica"] = upgrade_cookie.group(1)
        await self.rerun()
        if (await self.wait())[0] is None:
            raise RuntimeError(f"/{self.page_name}: the first run did not finish")

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def rerun(self, trigger: str | None = None, fragment_id: str = "", auto: bool = False) -> None:
        """Request a run (of `fragment_id` if given). `auto`: as a browser's `run_every` timer sends it
        (ClientState.is_auto_rerun), which the server coalesces with a pending request and does not log about."""
        back = BackMsg()
        rs = back.rerun_script
        if self.page.page_hash:
            rs.page_script_hash = self.page.page_hash
        else:
            rs.page_name = self.page_name  # first run: the page the URL path names
        rs.widget_states.widgets.extend(self.values.values())
        if trigger:
            rs.widget_states.widgets.add(id=trigger, trigger_value=True)  # one-shot: never stored in self.values
        rs.fragment_id = fragment_id
        rs.is_auto_rerun = auto
        rs.cached_message_hashes.extend(self.page._cached)
        # as a browser does: every rerun carries the address bar's query, which the page keeps on its state
        rs.query_string = self.page.query_string
        rs.context_info.url = f"{self.url}/{self.page_name}" + (
            f"?{self.page.query_string}" if self.page.query_string else ""
        )
        await self.ws.send(back.SerializeToString())

    async def wait(self, settled=None, timeout_s: float = SETTLE_TIMEOUT_S) -> tuple[float | None, float | None]:
        """Read ForwardMsgs until the run this request started has finished (and `settled(state)` held once).

        Returns (ms to the finished run, ms to the first message after which settled(state) held); either is
        None when it did not happen within timeout_s (or IDLE_AFTER_RUN_S after an unsettled finished run)."""
        t0 = time.perf_counter()
        started, finished_ms, settle_ms = False, None, None
        while True:
            now_ms = (time.perf_counter() - t0) * 1000
            if finished_ms is not None and (settle_ms is not None or settled is None):
                return finished_ms, settle_ms
            left_s = timeout_s - now_ms / 1000
            if finished_ms is not None:
                left_s = min(left_s, IDLE_AFTER_RUN_S - (now_ms - finished_ms) / 1000)
            if left_s <= 0:
                return finished_ms, settle_ms
            try:
                data = await asyncio.wait_for(self.ws.recv(), left_s)
            except TimeoutError:
                continue
            msg = ForwardMsg()
            msg.ParseFromString(data)
            msg = self.page.apply(msg)
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                started, finished_ms = True, None
            elif kind == "script_finished" and started and msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                finished_ms = (time.perf_counter() - t0) * 1000
            elif kind == "page_not_found":
                raise RuntimeError(f"page not found: /{self.page_name}")
            if (
                settled is not None
                and settle_ms is None
                and kind in ("delta", "script_finished")
                and settled(self.page.state())
            ):
                settle_ms = (time.perf_counter() - t0) * 1000

    async def set_popover(self, label: str, open_: bool) -> bool:
        """Open or close the popover with this label, as a click on it does when the page draws its contents only
        while it is open (a rerun, of its fragment if it is in one). False when there is no such popover."""
        for _, (kind, block, frag) in sorted(self.page.elements.items()):
            if kind == "block" and block.WhichOneof("type") == "popover" and block.popover.label == label:
                if block.popover.id:
                    self.values[block.popover.id] = WidgetState(id=block.popover.id, bool_value=open_)
                    await self.rerun(fragment_id=frag)
                    await self.wait()
                return True
        return False

    async def set_text(self, label: str, text: str) -> None:
        """Type into the text area with this label and apply it (one rerun, of its fragment if it is in one). A
        text area inside a closed popover of the same label (the step page's Prompt) is reached by opening it, and
        the popover is closed again after, as a teacher does."""
        found = self.page.find("text_area", label)
        opened = found is None and await self.set_popover(label, True)
        found = self.page.find("text_area", label)
        if found is None:
            raise RuntimeError(f"no text area {label!r} on /{self.page_name}")
        self.values[found[0]] = WidgetState(id=found[0], string_value=text)
        await self.rerun(fragment_id=found[1])
        await self.wait()
        if opened:
            await self.set_popover(label, False)

    async def click(self, label: str, settled=None, timeout_s: float = SETTLE_TIMEOUT_S):
        found = self.page.find("button", label)
        if found is None:
            raise RuntimeError(f"no button {label!r} on /{self.page_name}")
        await self.rerun(trigger=found[0], fragment_id=found[1])
        return await self.wait(settled, timeout_s)

    async def click_key(self, key: str, settled=None, timeout_s: float = SETTLE_TIMEOUT_S):
        """click(), for the button made with `key=key`."""
        found = self.page.find_key("button", key)
        if found is None:
            raise RuntimeError(f"no button keyed {key!r} on /{self.page_name}")
        await self.rerun(trigger=found[0], fragment_id=found[1])
        return await self.wait(settled, timeout_s)


async def step_session(url: str, index: int, prompts: list[str], plan, report: SessionReport) -> None:
    """One student, as classroom_session.step_session: prefill prompts[index], then follow `plan`."""
    own = expected_prompt_strip(prompts[index])
    others = [expected_prompt_strip(p) for i, p in enumerate(prompts) if i != index]
    known = dict(enumerate(own))
    student = Student(url, STEP_PAGE)
    try:
        await student.open()
        await student.set_text(PROMPT_LABEL, prompts[index])

        async def click(action: str, expect_cache: int) -> bool:
            def settled(s):
                return s["cache"] == expect_cache and s["lastPos"] == expect_cache - 1

            _, settle_ms = await student.click(BUTTONS[action], settled)
            state = student.page.state()
            problem = _classify(state, expect_cache, known, others)
            if settle_ms is None and (problem is None or (problem == "wrong" and state["cache"] != expect_cache)):
                problem = "timeout"
            report.clicks.append({"action": action, "settle_ms": settle_ms, "problem": problem})
            if problem:
                report.problems.append(
                    f"{action} -> cache {expect_cache}: {problem} (saw cache {state['cache']}, "
                    f"{len(state['strip'])} strip tokens)" + "".join(f"; {t[:200]!r}" for t in state["error_texts"])
                )
            return state["cache"] == expect_cache

        cache = len(own)
        if not await click("prefill", cache):
            return
        async for action in plan:
            if action == "back" and cache <= len(own):
                action = "next"  # nothing to roll back yet
            cache += 1 if action == "next" else -1
            if not await click(action, cache):
                return
    finally:
        report.replica_cookie += student.replica_cookies[:1] + student.replica_cookies[-1:]
        await student.close()


async def benchmark_session(url: str, done: asyncio.Event, runs: list[dict]) -> None:
    """Keeps the speed-up page's benchmark (its defaults) running until the step sessions are done; a run
    lasts from the click until its script run has finished."""
    student = Student(url, BENCH_PAGE)
    try:
        await student.open()
        while not done.is_set():
            finished_ms, _ = await student.click(BENCH_BUTTON, timeout_s=600)
            runs.append(
                {
                    "seconds": None if finished_ms is None else round(finished_ms / 1000, 2),
                    "errors": student.page.state()["errors"],
                }
            )
            if finished_ms is None:
                return
    finally:
        await student.close()


async def run_load(
    url: str,
    prompts: list[str],
    plans: list,
    *,
    benchmark: bool = False,
    ramp_s: float = 0.0,
    sessions: list[int] | None = None,
) -> tuple[list[SessionReport], list[dict]]:
    """classroom_session.run_load's twin: one protocol-level session per plan; returns their reports."""
    sessions = list(range(len(plans))) if sessions is None else sessions  # which of the class this client drives
    reports = {i: SessionReport(i, prompts[i]) for i in sessions}
    bench_runs: list[dict] = []
    done = asyncio.Event()

    async def start_later(i: int):
        await asyncio.sleep(ramp_s * i / max(1, len(plans)))  # the whole class's ramp, whoever drives i
        try:
            await step_session(url, i, prompts, plans[i], reports[i])
        except Exception as exc:  # a crashed session is a finding, not a crash of the whole run
            reports[i].problems.append(f"session failed: {type(exc).__name__}: {(str(exc) or '-').splitlines()[0]}")
            reports[i].clicks.append({"action": "session", "settle_ms": None, "problem": "error"})

    async def all_sessions():
        await asyncio.gather(*(start_later(i) for i in sessions))
        done.set()

    await asyncio.gather(all_sessions(), *([benchmark_session(url, done, bench_runs)] if benchmark else []))
    return list(reports.values()), bench_runs
