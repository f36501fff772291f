"""The class poll in Streamlit: the room a teacher hosts, the projector's panel, a phone's vote.

The room lives in kvviz.poll.store (one store per server process, shared by every session and, through
its database, by every replica). A Streamlit session is one browser tab, so what must outlive a tab is kept in the
browser as a cookie (set_cookie.js): the teacher's room and host key (a new tab from the plan, a reload or Back keeps
running the same room and reads the same score), and a phone's voter token (a second tab votes as the same voter).
The host key never appears in a link: a student who opens the teacher's URL has no cookie, so no host power.

The projector shows the join code, a QR code of the join link (drawn here by segno, no web service) and how many
have voted, refreshed once a second by a fragment; never the distribution before Reveal. While a poll runs the
projector letters the poll's own choices (room_choices), so the projector, the phones and the vote chart name a
choice alike. A phone follows the room (pages/join.py reads its step, round, phase and version every 2 s).

Every store call here is guarded: a store fault (poll_store.StoreUnavailable) costs the poll, never the lesson. The
teacher's panel and the phones say so in one sentence, the lesson and its marks in the session go on, and the next
run tries the store again. A phone's vote carries its network address (client_address) so that one script with a
fresh token per vote moves the count by at most the room's voters per address.
"""

from __future__ import annotations

import html
import ipaddress
import logging
import math
import os
import re
import secrets
import time
from urllib.parse import urlsplit

import streamlit as st

from kvviz import i18n, routes
from kvviz.i18n import _, ngettext
from kvviz.poll import store as poll_store
from kvviz.poll.question import PollQuestion
from kvviz.ui import assets, chart_code

VOTER_COOKIE = "kvviz_voter"  # a phone's token: its latest vote per question and round counts
HOST_COOKIE = "kvviz_poll_host"  # "<code>.<host key>": the room this browser hosts
ROOM_KEY = "poll_room"  # session: the NewRoom this tab hosts
VOTER_KEY = "poll_voter"  # session: this tab's voter token, until the browser returns it as a cookie
_COOKIE_VALUE = re.compile(r"[A-Za-z0-9_\-.]{8,120}")  # a cookie comes from the browser: anything else is ignored
VOTER_COOKIE_MAX_AGE_S = 24 * 3600
LIVE_REFRESH_S = 1.0
QR_SCALE = 7  # pixels per module: a join link's code (33 modules and a 3-module border) about 270 px wide


FAULT_KEY = "poll_fault"  # session: a store fault met outside the panel (a callback, the host cookie), shown by it
REAL_IP_HEADER = (
    "X-Real-IP"  # set by deploy/nginx.conf.template to the address nginx saw (the client's own is replaced)
)
FORWARDED_HEADER = "X-Forwarded-For"  # a proxy appends the address it saw: its last entry, never a client's own
TRUSTED_PROXIES_ENV = "KVVIZ_TRUSTED_PROXIES"  # networks whose connections are a proxy's (the Kubernetes ingress)


@st.cache_resource(show_spinner=False)
def trusted_proxies() -> tuple:
    """The networks in KVVIZ_TRUSTED_PROXIES (comma-separated, e.g. 10.0.0.0/8), whose connections come from a
    proxy that forwards the client's address; this computer's own (None from st.context) always is. A value that
    is not a network is logged in one line and left out."""
    networks = []
    for item in os.environ.get(TRUSTED_PROXIES_ENV, "").split(","):
        if item.strip():
            try:
                networks.append(ipaddress.ip_network(item.strip(), strict=False))
            except ValueError:
                logging.getLogger("kvviz.poll").error(
                    "kvviz poll: %s: %r is not a network (e.g. 10.0.0.0/8); left out",
                    TRUSTED_PROXIES_ENV,
                    item.strip()[:80],
                )
    return tuple(networks)


@st.cache_resource(show_spinner=False)
def store() -> poll_store.PollStore:
    """One store (one connection pool) per server process; its database is shared by the replicas. A KVVIZ_POLL_DB
    that cannot be a store is logged in one line and is StoreUnavailable here (not cached: the next call checks
    again)."""
    try:
        return poll_store.PollStore()
    except poll_store.BadStoreURL as bad:
        logging.getLogger("kvviz.poll").error("kvviz poll: %s", bad)
        raise poll_store.StoreUnavailable() from bad


def client_address() -> str | None:
    """The browser's network address: the connection's (st.context.ip_address), or, when the connection comes from
    this computer (nginx of deploy/run_class.sh) or a trusted proxy's network (KVVIZ_TRUSTED_PROXIES), the address
    the proxy forwards: X-Real-IP (nginx sets it itself), else the last X-Forwarded-For entry (the one the proxy
    appended; the ones before it a client may have written). None for a browser on this computer without a proxy:
    not limited."""

    def _address(text) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
        try:
            return ipaddress.ip_address(str(text or "").strip())
        except ValueError:
            return None

    try:
        peer = _address(st.context.ip_address)
        if peer is not None and not any(peer in network for network in trusted_proxies()):
            return str(peer)
        headers = st.context.headers
        forwarded = _address(headers.get(REAL_IP_HEADER)) or _address(
            (headers.get(FORWARDED_HEADER) or "").split(",")[-1]
        )
    except Exception:  # noqa: BLE001 - no browser context (a bare run)
        return None
    return str(forwarded) if forwarded is not None else (None if peer is None else str(peer))


def _fault(refused: poll_store.PollRefused) -> None:
    """A store fault or refusal met where nothing is drawn (a callback, the host cookie): the panel says it."""
    st.session_state[FAULT_KEY] = str(refused)


def fault_notice(where=st) -> bool:
    """Draw the sentence of a fault met earlier in this run (once); whether there was one."""
    message = st.session_state.pop(FAULT_KEY, None)
    if message:
        where.warning(message, icon=":material/cloud_off:")
    return bool(message)


def _cookie(name: str) -> str | None:
    try:
        value = st.context.cookies.get(name)
    except Exception:  # noqa: BLE001 - no browser (AppTest, a bare run): no cookie
        return None
    return value if isinstance(value, str) and _COOKIE_VALUE.fullmatch(value) else None


def _set_cookie(name: str, value: str, max_age_s: int) -> None:
    """Keep `value` in this browser (a container hidden_helpers.css hides: its script runs when the value changes)."""
    st.container(key=f"kvviz_hidden_cookie_{name}").html(
        assets.script("set_cookie.js", data={"name": name, "value": value, "max_age_s": int(max_age_s)}),
        unsafe_allow_javascript=True,
    )


# ----- a phone ------------------------------------------------------------------------------------------------------
def voter_token() -> str:
    """This browser's voter token: its cookie, else one made now and given to the browser to keep."""
    token = _cookie(VOTER_COOKIE)
    if token is None:
        token = st.session_state.setdefault(VOTER_KEY, secrets.token_urlsafe(24))
        _set_cookie(VOTER_COOKIE, token, VOTER_COOKIE_MAX_AGE_S)
    return token


# ----- the teacher --------------------------------------------------------------------------------------------------
def hosted_room() -> poll_store.NewRoom | None:
    """The room this browser hosts: this tab's, else the cookie's (a new tab, a reload) when the store knows it and
    the key is its host key; None otherwise. (A room found expired later is refused where it is used.)"""
    room = st.session_state.get(ROOM_KEY)
    if room is not None:
        return room
    raw = _cookie(HOST_COOKIE)
    if not raw or "." not in raw:
        return None
    room = poll_store.NewRoom(*raw.split(".", 1))
    try:
        store().check_host(room.code, room.host_key)
    except poll_store.StoreUnavailable as fault:  # the lesson goes on; the panel says why the poll is away
        _fault(fault)
        return None
    except poll_store.PollRefused:
        return None
    st.session_state[ROOM_KEY] = room
    return room


def start_room() -> poll_store.NewRoom:
    """A new room, hosted by this browser (kept in the session and, for its other tabs, in a cookie)."""
    room = store().create_room(client_address())
    st.session_state[ROOM_KEY] = room
    return room


def keep_room_in_browser(room: poll_store.NewRoom) -> None:
    """(Every run of the teacher's page.) The cookie that lets the browser's other tabs host the same room."""
    _set_cookie(HOST_COOKIE, f"{room.code}.{room.host_key}", poll_store.ROOM_IDLE_S)


def join_url(code: str) -> str:
    """The join link for phones: this server's address as the browser sees it, /join?room=CODE (no language: a
    phone's follows its own browser)."""
    try:
        here = urlsplit(st.context.url or "")
    except Exception:  # noqa: BLE001 - no browser context
        here = urlsplit("")
    base = f"{here.scheme or 'http'}://{here.netloc or 'localhost:8501'}"
    prefix = here.path.rsplit("/", 1)[0] if here.path.count("/") > 1 else ""  # served under a path (a proxy)
    return f"{base}{prefix}{routes.JOIN.url(routes.JOIN.query(room=code))}"


def only_this_computer(url: str) -> bool:
    """A join link that names this computer (localhost, 127.0.0.1, ::1): phones cannot reach it (the one loopback
    rule: kvviz.model.shared_mode)."""
    from kvviz.model.shared_mode import listens_beyond_loopback

    host = urlsplit(url).hostname or ""
    return bool(host) and not listens_beyond_loopback(host)


def qr_image(url: str, alt: str, scale: int = 5) -> str:
    """An <img> of the QR code of `url`, an SVG data URI drawn here (segno): black on white, since a QR code needs
    its light margin on a dark theme too."""
    import segno

    code = segno.make(url, error="m")
    uri = code.svg_data_uri(scale=scale, dark="#000000", light="#ffffff", border=3)
    width_px = code.symbol_size(scale=scale, border=3)[0]
    return f'<img class="kvviz-poll-qr" src="{uri}" alt="{html.escape(alt)}" width="{width_px}">'


COUNTDOWN_KEY = "poll_countdown"  # session: (step, round, the time the vote closes at), while a countdown runs
COUNTDOWN_OPTIONS_S = (15, 30, 60)


@st.fragment(run_every=LIVE_REFRESH_S)
def live_count(room: poll_store.NewRoom, step: int, round_: int) -> None:
    """How many have voted, once a second: the count only, never the distribution before Reveal. While the teacher's
    countdown runs on this round, the seconds left; at zero it locks the vote (this tab's timer: it needs the tab)."""
    try:
        voted, held, class_size, opened = store().live_count(room.code, step, round_)  # one read a second
    except poll_store.PollRefused as refused:
        st.warning(str(refused), icon=":material/cloud_off:")
        return
    countdown = st.session_state.get(COUNTDOWN_KEY)
    if countdown is not None and countdown[:2] == (step, round_):
        left_s = countdown[2] - time.time()
        if left_s <= 0:
            st.session_state.pop(COUNTDOWN_KEY, None)
            _host_call("lock", room)
            st.rerun(scope="app")  # the panel's buttons and the phones' state follow the lock
        st.metric(_("Closes in"), _("{seconds} s").format(seconds=math.ceil(left_s)))
    st.metric(
        _("Voted"),
        _("{voted:,} of {opened:,}").format(voted=voted, opened=max(opened, voted)),
        help=_(
            "Votes so far on this question and round, of the phones that opened it; the choices are shown "
            "when you reveal the answer."
        ),
    )
    if held:
        st.warning(
            ngettext(
                "{total} votes for a class of {size}: {held} held back, not counted.",
                "{total} votes for a class of {size}: {held} held back, not counted.",
                held,
            ).format(total=voted + held, size=class_size if class_size is not None else voted, held=held),
            icon=":material/front_hand:",
        )


def poll_for(step: int, code: str, ask) -> PollQuestion:
    """The step's poll for room `code`: its lesson Question (`ask()`, computed once per step and model by the page,
    whatever the language) as a language-free PollQuestion, which every phone shows in its own language."""
    from kvviz.teaching.poll_choices import choices_for

    return choices_for(ask(), step, code)


def stored_poll(code: str, step: int | None = None) -> PollQuestion | None:
    """The current (or given) step's poll as the store keeps it (language-free: draw its texts with shown())."""
    return store().poll(code, step)


def room_choices(step: int, question) -> tuple[str, ...] | None:
    """The choices the room votes on at `step`, in the poll's order (the phones' and the vote chart's letters), in
    this session's language, while this browser runs a class poll; None without one. Number steps have them too. The
    step's stored poll, else the one the panel is about to open: choices_for is seeded by the room and the step only,
    so it draws what the store will hold. `question`: the step's lesson Question."""
    room = hosted_room()
    try:
        if room is None or not store().room(room.code).step:
            return None
        stored = stored_poll(room.code, step)
    except poll_store.PollRefused:  # the panel says why; the projector keeps the lesson's own choices
        return None
    if stored is None or stored.step != step:
        from kvviz.teaching.poll_choices import choices_for

        stored = choices_for(question, step, room.code)
    return tuple(choice.shown() for choice in stored.choices)


# ----- the projector ------------------------------------------------------------------------------------------------
REVEAL_KEY, LOCK_KEY, AGAIN_KEY = "V", "L", "G"  # as class mode's keys: V reveals, Y / N mark the room, H hints


HELD_KEY = "poll_held_version"  # session: the room's version after this tab's last action on it (it holds the room)


def _acted(state: poll_store.RoomState) -> poll_store.RoomState:
    """This tab acted on the room: it holds the room until another tab acts (the room's version moves past it)."""
    st.session_state[HELD_KEY] = state.version
    return state


def holds_room(state: poll_store.RoomState) -> bool:
    """This tab made the room's last move: its own Back and Forward move the room with it. A tab that did not (an
    old tab reloaded, a plan link's new tab) shows its step's state and moves the room only when asked."""
    return st.session_state.get(HELD_KEY) == state.version


def _host_call(action: str, room: poll_store.NewRoom) -> None:
    """(Button callback.) One of the teacher's actions on the room; a refusal is shown, nothing changes."""
    try:
        _acted(getattr(store(), action)(room.code, room.host_key))
    except poll_store.PollRefused as refused:
        st.session_state["poll_refused"] = str(refused)


def reveal(room: poll_store.NewRoom | None, step: int) -> None:
    """(From the lesson's Reveal at `step`.) The room's votes are shown with the answer, when `step` is the room's
    question (a tab on another step reveals its own lesson only)."""
    try:
        if room is not None and store().room(room.code).step == step:
            _host_call("reveal", room)
    except poll_store.PollRefused as refused:  # the lesson's own reveal goes on without the room's
        _fault(refused)


def mark(room: poll_store.NewRoom | None, step: int, right: bool) -> None:
    """(From the lesson's Y / N.) The teacher's verdict, kept with the room so every tab's ending reads it; the room
    is made on the first mark when no poll runs (a teacher who marks Y / N without one keeps the score too)."""
    try:
        room = room or start_room()
        store().mark_result(room.code, room.host_key, step, right)
    except poll_store.PollRefused as refused:  # the mark stays in the session; the room's copy waits for the store
        _fault(refused)


def marks(room: poll_store.NewRoom | None) -> dict[int, bool]:
    """step -> the room's verdict, as the teacher marked it in any tab of this browser."""
    try:
        if room is None:
            return {}
        found = store().marked_results(room.code)
        st.session_state.pop(FAULT_KEY, None)  # the store answered: an earlier fault is over, not to be shown
        return found
    except poll_store.StoreUnavailable as fault:
        _fault(fault)
        return {}
    except poll_store.PollRefused:
        return {}


def projector_panel(
    step: int, ask, font_px: int, answer_shown: bool = False, on_next=None, moved_here: bool = False
) -> None:
    """Class mode's poll: a button that starts it, or the running poll of this step (join code, QR code, the live
    count, Lock / Vote again / Reset, and after Reveal the room's votes with each wrong choice's mistake).
    `ask()` gives the step's lesson Question (computed once: the poll is stored once, language-free);
    `answer_shown`: the lesson shows the answer already (its own Reveal is gone: the panel's shows round 2's votes);
    `on_next`: the lesson's own Next (a button callback), drawn in the panel as Next question; `moved_here`: this
    run's step comes from this tab's own control (Next, Back, the step picker), so the room follows it. A store fault
    draws one sentence in its place (and a button that tries again); the lesson around it goes on."""
    shown = fault_notice()
    if not answer_shown:  # the Reveal's chart and table then draw at once, even in a fresh tab (chart_code says why)
        chart_code.preload()
    try:
        _panel(step, ask, font_px, answer_shown, on_next, moved_here)
    except poll_store.StoreUnavailable as fault:
        if not shown:
            st.warning(str(fault), icon=":material/cloud_off:")
        st.button(_("Try the class poll again"), key="poll_retry", icon=":material/refresh:")


def _panel(step: int, ask, font_px: int, answer_shown: bool, on_next, moved_here: bool) -> None:
    room = hosted_room()
    try:
        state = store().room(room.code) if room else None
    except poll_store.StoreUnavailable:
        raise
    except poll_store.PollRefused:  # expired while this tab held it: start afresh
        st.session_state.pop(ROOM_KEY, None)
        room = state = None
    if room is not None:
        keep_room_in_browser(room)
    if state is None or state.step == 0:

        def _start() -> None:
            try:
                new = room or start_room()
                _acted(store().go_to_step(new.code, new.host_key, poll_for(step, new.code, ask)))
            except poll_store.PollRefused as refused:  # too many rooms from this address, or the store away
                _fault(refused)

        st.button(
            _("Start a class poll"),
            key="poll_start",
            icon=":material/how_to_vote:",
            on_click=_start,
            help=_(
                "The room answers on its own phones: a join code and a QR code, one tap per student, "
                "the votes hidden until you reveal the answer"
            ),
        )
        return
    if state.step != step:
        if not (moved_here or holds_room(state)):  # an old tab reloaded, a new tab: the room stays where it is
            _elsewhere(room, state, step, ask, font_px)
            return
        # the teacher moved (Next, Back, the step picker; this tab's browser Back): the room's question follows; a
        # revealed step shows its result, never reopens
        state = _acted(store().go_to_step(room.code, room.host_key, poll_for(step, room.code, ask)))
    url = join_url(room.code)
    with st.container(border=True, key="poll_panel"):
        if state.phase == "revealed":  # what the room answered first, the join code under it for late phones
            votes(room, state.step, state.round, font_px)
        # stacked, the QR code on top: the lesson draws the panel beside the question (pages/lesson.py, class_box),
        # a column where the code beside the QR code squeezed it under 200 px
        st.html(qr_image(url, _("QR code of the join link: {url}").format(url=url), scale=QR_SCALE))
        st.markdown(_("### Join: {code}").format(code=room.code) + f"  \n{url}")
        if st.button(
            _("Full screen"),
            key="poll_full_screen",
            icon=":material/fullscreen:",
            help=_("The join code and its QR code on the whole screen, for the back of the hall"),
        ):
            join_full_screen(room.code, url)
        if only_this_computer(url):
            st.warning(
                _(
                    "This address is this computer's own: phones cannot reach it. Serve the class on the "
                    "network (docs/deploying.md), then start the poll from that address."
                ),
                icon=":material/wifi_off:",
            )
        row = st.container(horizontal=True, vertical_alignment="center")
        with row:
            live_count(room, state.step, state.round)
        phase = {"open": _("voting open"), "locked": _("voting closed"), "revealed": _("answer revealed")}
        row.caption(_("Round {round}, {phase}").format(round=state.round, phase=phase[state.phase]))
        if state.phase == "open":
            row.button(
                _("Lock"),
                key="poll_lock",
                icon=":material/lock:",
                shortcut=LOCK_KEY,
                on_click=_host_call,
                args=("lock", room),
            )
            _countdown_menu(row, state)
        elif state.phase == "locked":
            row.button(
                _("Unlock"), key="poll_unlock", icon=":material/lock_open:", on_click=_host_call, args=("unlock", room)
            )
        if answer_shown and state.phase != "revealed":  # round 2 after the answer: V shows its votes
            row.button(
                _("Show the votes"),
                key="poll_show",
                icon=":material/bar_chart:",
                shortcut=REVEAL_KEY,
                type="primary",
                on_click=_host_call,
                args=("reveal", room),
            )
        if state.round == 1 and state.phase != "open":
            row.button(
                _("Vote again"),
                key="poll_again",
                icon=":material/replay:",
                shortcut=AGAIN_KEY,
                on_click=_host_call,
                args=("vote_again", room),
                help=_("A second round after the room discusses: round 1 is kept and shown beside it"),
            )
        row.button(
            _("Reset"),
            key="poll_reset",
            icon=":material/restart_alt:",
            on_click=_host_call,
            args=("reset", room),
            help=_("Forget this question's votes (both rounds) and open it again"),
        )
        _limits_popover(row, room)
        if on_next is not None:  # the lesson's Next: it opens the next step's question in the room
            row.button(_("Next question"), key="poll_next", icon=":material/arrow_forward:", on_click=on_next)
        if refused := st.session_state.pop("poll_refused", None):
            st.warning(refused)


def _countdown_menu(where, state: poll_store.RoomState) -> None:
    """An optional countdown that closes the vote: 15, 30 or 60 seconds from the click, shown beside the count."""

    def _start(seconds: int) -> None:
        st.session_state[COUNTDOWN_KEY] = (state.step, state.round, time.time() + seconds)

    with where.popover(_("Countdown"), icon=":material/timer:", key="poll_countdown_menu"):
        for seconds in COUNTDOWN_OPTIONS_S:
            st.button(
                _("Close the vote in {seconds} s").format(seconds=seconds),
                key=f"poll_countdown_{seconds}",
                on_click=_start,
                args=(seconds,),
                use_container_width=True,
            )


def _elsewhere(room: poll_store.NewRoom, state: poll_store.RoomState, step: int, ask, font_px: int) -> None:
    """This tab's step is not the room's question, and this tab did not move the room (it was reloaded, or opened
    from a link): its step's result if it was revealed, where the room is, and a button that brings the room here."""
    kept = store().step_state(room.code, room.host_key, step)
    with st.container(border=True, key="poll_panel"):
        if kept is not None and kept.phase == "revealed":
            votes(room, step, kept.round, font_px)
        st.info(
            _("The room's phones are on question {current}. This tab shows question {step}.").format(
                current=state.step, step=step
            ),
            icon=":material/devices:",
        )

        def _here() -> None:
            try:
                _acted(store().go_to_step(room.code, room.host_key, poll_for(step, room.code, ask)))
            except poll_store.PollRefused as refused:
                st.session_state["poll_refused"] = str(refused)

        st.button(
            _("Show this question on the phones"),
            key="poll_here",
            icon=":material/how_to_vote:",
            on_click=_here,
            help=_("The room moves to this question; a revealed one shows its result"),
        )


def join_full_screen(code: str, url: str) -> None:
    """The join code and its QR code as large as the screen allows, for a hall; Esc or the close button returns.
    (The dialog is made per call: its title is drawn in the reader's language.)"""

    @st.dialog(_(routes.JOIN.title), width="large")
    def _full() -> None:
        st.html(
            f'<div class="kvviz-join-full"><p class="kvviz-join-code">{html.escape(code)}</p>'
            + qr_image(url, _("QR code of the join link: {url}").format(url=url), scale=QR_SCALE * 2)
            + f"<p>{html.escape(url)}</p></div>"
        )

    _full()


def _limits_popover(where, room: poll_store.NewRoom) -> None:
    """The teacher's two limits: voters per network address (2; a class behind one shared address sets its size)
    and the class size (votes past it are held back and named)."""
    per_address, class_size = store().limits(room.code)

    def _save() -> None:
        size = st.session_state.get("poll_class_size")
        try:
            store().set_limits(
                room.code, room.host_key, int(st.session_state["poll_per_address"]), int(size) if size else None
            )
        except poll_store.PollRefused as refused:
            st.session_state["poll_refused"] = str(refused)

    with where.popover(_("Limits"), icon=":material/group:"):
        st.number_input(
            _("Voters per network address"),
            min_value=1,
            max_value=poll_store.MAX_PER_ADDRESS,
            value=per_address,
            step=1,
            key="poll_per_address",
            on_change=_save,
            help=_(
                "Phones that share one address (a school network behind one router) count as this "
                "many voters at most. Where the whole class shares one address, set the class size."
            ),
        )
        st.number_input(
            _("Class size (0: no limit)"),
            min_value=0,
            max_value=poll_store.MAX_CLASS_SIZE,
            value=class_size or 0,
            step=1,
            key="poll_class_size",
            on_change=_save,
            help=_("Votes past this many on a question are held back, not counted, and named here."),
        )


def votes(room: poll_store.NewRoom, step: int, last_round: int, font_px: int) -> None:
    """After Reveal: the room's votes per choice (round 1 beside round 2), the right one marked, each wrong choice
    with the mistake it stands for."""
    question = stored_poll(room.code, step)
    if question is None:
        return
    tallies = [store().tally(room.code, step, r, room.host_key) for r in range(1, last_round + 1)]
    from kvviz.figures.poll import choice_letter, plain_label, poll_figure
    from kvviz.ui.a11y import chart

    chart(
        st,
        poll_figure([c.shown() for c in question.choices], [t.counts for t in tallies], question.right, font_px),
        config={"displayModeBar": False},
        key=f"poll_votes_{step}_{last_round}",
    )
    shares = [t.share_right for t in tallies]
    if len(tallies) == 2 and None not in shares:
        st.markdown(
            _("Right: **{before:.0%}** in round 1, **{after:.0%}** in round 2.").format(
                before=shares[0], after=shares[1]
            )
        )
    st.table(
        [
            {
                _("choice"): f"{choice_letter(i)}. {plain_label(label.shown())}",
                _("votes"): tallies[-1].counts[i],
                _("the mistake it stands for"): _("the right answer")
                if i == question.right or question.mistakes[i] is None
                else plain_label(question.mistakes[i].shown()),
            }
            for i, label in enumerate(question.choices)
        ],
        hide_index=True,
    )  # static: long mistakes wrap


def room_results(room: poll_store.NewRoom | None) -> None:
    """The ending: the room's share right per step and round, and the CSV export (no names)."""
    if fault_notice() or room is None:
        return
    try:
        tallies = store().results(room.code, room.host_key)
    except poll_store.StoreUnavailable as fault:
        st.warning(str(fault), icon=":material/cloud_off:")
        return
    except poll_store.PollRefused:
        return
    if not tallies:
        return
    st.subheader(_("The room's votes"))
    st.table(
        [
            {
                _("step"): t.step,
                _("round"): t.round,
                _("voted"): t.voted,
                _("share right"): "—" if t.share_right is None else f"{t.share_right:.0%}",
            }
            for t in tallies
        ],
        hide_index=True,
    )
    try:
        data = store().export_csv(room.code, room.host_key, i18n.current())
    except poll_store.PollRefused as refused:
        st.warning(str(refused), icon=":material/cloud_off:")
        return
    st.download_button(
        _("Export the room's results (CSV)"),
        key="poll_export",
        icon=":material/download:",
        data=data,
        file_name=f"kvviz-poll-{room.code}.csv",
        mime="text/csv",
        on_click="ignore",
    )
