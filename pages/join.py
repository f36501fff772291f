"""Join the class poll: a phone opens the projector's QR code (or types its code), sees the question the teacher
has open, and taps a choice. One tap votes; a tap on another choice changes the vote until the teacher locks it.
No account, no name, nothing typed but the code. The page follows the teacher: a fragment reads the room's state
(step, round, phase: one row by its key) every FOLLOW_S seconds and redraws the page when the teacher has moved (Next,
Lock, Reveal, Vote again, Reset), as a presenter's audience app does. The language is the phone's own (its
browser's), whatever the teacher's projector shows: the store keeps one language-free poll per step (its texts are
Messages), drawn here in that language.
"""

from __future__ import annotations

import html
import secrets

import streamlit as st

from kvviz import routes
from kvviz.figures.poll import choice_letter, poll_figure
from kvviz.i18n import _
from kvviz.poll import store as poll_store
from kvviz.ui import a11y, assets, poll, router, url_state

FOLLOW_S = 2.0  # a phone shows the teacher's move within about this, plus one run of the page
FOLLOW_SHARE_S = 0.5  # a replica's phones share one read of the room's state for this long

router.ensure_router()
URL = url_state.of(routes.JOIN)  # ?room=<code>
st.title(_(routes.JOIN.title))
st.html(assets.style("join.css"))
st.html(assets.script("join_phone.js"), unsafe_allow_javascript=True)
code = poll_store.normalize_code(URL.raw("room"))


def _join_form(message: str | None = None) -> None:
    """The code, typed: six letters and digits from the projector."""
    if message:
        st.error(message, icon=":material/error:")
    with st.form("join_form", border=False):
        typed = st.text_input(
            _("Room code"), max_chars=12, placeholder="ABC234", help=_("The six characters on the projector")
        )
        if st.form_submit_button(_("Join"), type="primary", icon=":material/login:", use_container_width=True):
            joined = poll_store.normalize_code(typed)
            if joined is None:
                st.error(_("A room code is six letters and digits, as the projector shows it."))
            else:
                URL.write({"room": joined})
                st.rerun()


if code is None:
    _join_form(
        _("That link's room code cannot be right: type the code the projector shows.") if URL.raw("room") else None
    )
    st.stop()


def _store_away(fault: poll_store.StoreUnavailable) -> None:
    """The store is away: one sentence and a button that tries again (the page reads the store afresh)."""
    st.warning(str(fault), icon=":material/cloud_off:")
    st.button(_("Try again"), key="join_retry", icon=":material/refresh:", use_container_width=True)
    st.stop()


voter = poll.voter_token()
client = poll.client_address()
try:
    room = poll.store().room(code)
    question = poll.stored_poll(code) if room.step else None
    mine = None
    if question is not None:
        poll.store().saw(code, voter, room.step)  # one of the M in the projector's "Voted N of M"
        mine = poll.store().choice_of(code, voter, room.step, room.round)  # the store's: only a vote that counts
except poll_store.StoreUnavailable as fault:
    _store_away(fault)
except poll_store.PollRefused as refused:
    _join_form(str(refused))
    st.stop()


@st.cache_data(ttl=FOLLOW_SHARE_S, show_spinner=False, max_entries=64)
def _followed(room_code: str) -> tuple[int, int, str, int]:
    """The room's (step, round, phase, version), one store read per replica and FOLLOW_SHARE_S for all its phones."""
    now = poll.store().room(room_code)
    return now.step, now.round, now.phase, now.version


@st.fragment(run_every=FOLLOW_S)
def _follow(drawn: tuple[int, int, str, int]) -> None:
    """Redraws the page when the room's step, round, phase or version (every host action bumps it: a Reset too) is
    no longer the one drawn; draws nothing. A fault here is left to the next tap or redraw, which says it in words."""
    try:
        now = _followed(code)
    except poll_store.PollRefused:
        return
    if now != drawn:
        st.rerun(scope="app")


_follow((room.step, room.round, room.phase, room.version))
st.caption(_("Room {code}").format(code=code))
st.button(_("Show the current question"), key="join_refresh", icon=":material/refresh:", use_container_width=True)
if question is None:
    st.info(
        _("The teacher has not opened a question yet: it shows here when they do."), icon=":material/hourglass_top:"
    )
    st.stop()

st.markdown(
    _("**Question {step}{round}.** {text}").format(
        step=room.step, round=_(" (round 2)") if room.round == 2 else "", text=question.text.shown()
    )
)


def _vote(choice: int) -> None:
    """(Tap callback.) Vote, or say why not; the vote shown is the one the store kept."""
    _tapped()
    try:
        poll.store().vote(code, voter, room.step, room.round, choice, client)
    except poll_store.VotingClosed as refused:
        st.session_state["join_refused"] = _moved_on() or str(refused)
        return
    except poll_store.PollRefused as refused:  # refused, held back or not stored: never "Vote received"
        st.session_state["join_refused"] = str(refused)
        return
    st.session_state.pop("join_refused", None)  # the rerun reads the vote back from the store


def _tapped() -> None:
    """(Every choice's callback, first.) This session acted on one more tap: join_phone.js compares the count it saw
    before a tap with the next run's, so a tap lost with a server (a replica gone) is named, never dropped silently."""
    st.session_state["join_taps"] = st.session_state.get("join_taps", 0) + 1


def _moved_on() -> str | None:
    """A tap on a question the teacher has left (before the page followed): what is open now, in one sentence."""
    try:
        now = poll.store().room(code)
    except poll_store.PollRefused:
        return None
    if (now.step, now.round) == (room.step, room.round):
        return None
    return _("The teacher has moved on: question {step} is shown now. Tap your answer to it.").format(step=now.step)


for i, label in enumerate(question.choices):
    st.button(
        f"{choice_letter(i)}. {label.shown()}",
        key=f"join_choice_{room.step}_{room.round}_{i}",
        type="primary" if mine == i else "secondary",
        use_container_width=True,
        disabled=room.phase != "open",
        on_click=_vote,
        args=(i,),
        icon=":material/check_circle:" if mine == i else None,
    )
# What join_phone.js reads after each run: which run of which session drew it, the taps this session acted on, and
# the line it shows when a tap was lost
st.session_state["join_runs"] = st.session_state.get("join_runs", 0) + 1
run_id = f"{st.session_state.setdefault('join_session', secrets.token_hex(6))}:{st.session_state['join_runs']}"
st.html(
    f'<div class="kvviz-join-state" data-run="{run_id}" data-taps="{st.session_state.get("join_taps", 0)}" '
    'data-lost="'
    + html.escape(_("Your tap did not reach the class poll (its server changed). Tap your answer again."))
    + '" style="display:none"></div>'
)
if refused := st.session_state.pop("join_refused", None):
    st.warning(refused, icon=":material/block:")
elif mine is not None and room.phase == "open":
    st.success(
        _("Vote received: {letter}. You can change it until the teacher closes the vote.").format(
            letter=choice_letter(mine)
        ),
        icon=":material/how_to_vote:",
    )
if room.phase == "locked":
    st.info(_("Voting is closed. Wait for the teacher to reveal the answer."), icon=":material/lock:")
elif room.phase == "revealed":
    right = question.right
    if mine is not None:
        (st.success if mine == right else st.error)(
            _("You voted {mine}; the answer is {right}.").format(mine=choice_letter(mine), right=choice_letter(right))
        )
    else:
        st.info(_("The answer is {right}.").format(right=choice_letter(right)))
    if mine is not None and mine != right and mine < len(question.mistakes) and question.mistakes[mine] is not None:
        st.markdown(question.mistakes[mine].shown())
    try:
        tally = poll.store().tally(code, room.step, room.round)
    except poll_store.StoreUnavailable as fault:
        _store_away(fault)
    a11y.chart(
        st,
        poll_figure([c.shown() for c in question.choices], [tally.counts], right),
        config={"displayModeBar": False},
        key=f"join_tally_{room.step}_{room.round}",
    )
