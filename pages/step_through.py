"""Step through a GPT-2 generation token by token: the classroom stage.

One screen (1280x720 with the sidebar open) holds the token strip, the controls, the chosen head's K and V
cache with the newest row outlined, and the newest query's attention drawn beside the very rows it weighs.
Keyboard: P = Prefill, Right arrow or Space = Next token, Left arrow = Back, Esc = stop Play at the frame on
screen, whatever has focus outside a text box and the history slider; presses are queued in the browser and
taken one at a time, none dropped (KEYS_JS). The stage is a fragment, so a click reruns only the stage; every
figure is drawn from one StageSnapshot built from the step records. A link carries prompt, steps, sampling,
layer, head, view and presenter mode (stage_link.StageLink); it is replayed once, so the reader's own clicks keep
their work, and the address bar always holds it (_sync_url), so a reload replays to the same step.
"""

from __future__ import annotations

import dataclasses
import html
import time
import urllib.parse

import streamlit as st

from kvviz import i18n, routes
from kvviz.figures import step as figs
from kvviz.i18n import N_, _, ngettext
from kvviz.inputs.prompt_rules import MAX_TEXT_CHARS, TEXT_CAP_HELP
from kvviz.model import loading
from kvviz.step import link as stage_link
from kvviz.step import strip
from kvviz.step import view as step_view
from kvviz.step.records import (
    DEFAULT_SAMPLING,
    PLAY_STEPS,
    SEED,
    TEMPERATURE,
    TOP_K,
    ContextFullError,
    PromptError,
    RaceTiming,
    Sampling,
)
from kvviz.ui import a11y, assets, bounded, engines, links, models, router, url_state

PRESETS = {  # name (a stable key, shown through _()) -> prompt
    "ROMEO:": "ROMEO:",
    N_("First Citizen"): "First Citizen:\nBefore we proceed any further, hear me speak.",
    N_("To be, or not to be"): "HAMLET:\nTo be, or not to be, that is the question:",
    N_("Repeat a pattern"): step_view.REPEAT_PROMPT,
}
PLAY_SPEEDS = {"slow": 1.0, "normal": 0.15, "fast": 0.05}
PLAY_SPEED_LABELS = {
    "slow": N_("slow"),
    "normal": N_("normal"),
    "fast": N_("fast"),
}  # run_every interval (s); a frame adds ~0.3 s of redraw
PLAY_DELAY_S = PLAY_SPEEDS["normal"]  # "normal": with the redraw and the round trip a step lands every ~0.4-0.5 s
PLAY_LEFT = "step_play_left"  # steps the running animation still has to take (0 = not playing)
DEFAULT_TEMPERATURE = DEFAULT_SAMPLING.temperature
GREEDY_HELP = N_(
    "Off by default: greedy always takes the single likeliest token, and on a model this small that "
    "soon repeats a line forever (both bundled models' greedy samples loop within 80 tokens; their "
    "induction heads, which copy what already stands in the context, make a loop stronger each time "
    "round). The default draws from the 40 likeliest at temperature 0.8 with the seed below: same seed, "
    "same text."
)
VIEWS = {"one": N_("K, V, attention"), "race": N_("Race"), "gqa": N_("GQA sharing")}
# Said beside the token strip when the interface is not English: the bundled models only ever write English.
ENGLISH_MODELS = N_(
    "The bundled models were trained on English text (Shakespeare): they write English, whatever "
    "the interface language."
)
HYBRID_SEEING = N_(
    "**This model is a hybrid.** Only its attention layer keeps a K/V cache that grows by one row per token. Its "
    "linear-attention layers (Gated DeltaNet) keep a fixed-size state instead: per head a d_k x d_v matrix that "
    "every token updates, plus the last few inputs of a short convolution. Choose such a layer above to see it: "
    "its shape and bytes stay the same at every step, while the attention layer's rows keep growing."
)
VERSUS_TEXT = N_(
    "Each click times one decode step of this model and of an all-attention model of the same shape (every layer "
    "attention, random weights: only the clock matters) at 16, 64, 128 and 256 tokens of held-out text, the two "
    "interleaved at every length so a burst of load hits both alike (about 2 s in all)."
)
RACE_SHAPE = loading.RANDOM_PREFIX + "gpt2"  # the race at a size where the gap shows: GPT-2 124M, random weights
RACE_SCALES = {"model": N_("this model"), "gpt2": N_("GPT-2 124M shape")}
RACE_CHECK_EVERY_S = 0.2  # while the race measures, its status line is rewritten (a point to end it) this often
RACE_STATUS_AFTER_S = (
    0.4  # ... and says "Timing..." once the race has taken this long (the 124M shape, not a quick one)
)
CHART = figs.stage_config()
DEFAULTS = {  # widgets are created without value=, so a link can set them before they are drawn
    "step_greedy": False,
    "step_temperature": DEFAULT_TEMPERATURE,
    "step_top_k": DEFAULT_SAMPLING.top_k,
    "step_seed": DEFAULT_SAMPLING.seed,
    "step_play_n": 8,
    "step_play_speed": "normal",
    "step_view": "one",
    "step_race_scale": "model",
}
# The stage's keys (queued in the browser, none dropped) and its fit on one screen: JavaScript and CSS in
# kvviz/assets/web/, each file saying what it does and why.
KEYS_JS = assets.script("keyboard_queue.js", "stage_keys.js")  # P, Right/Space, Left, Esc; installed once per tab
STAGE_CSS = assets.style("stage.css")  # 1280x720 and 150% zoom on it
PRESENTER_CSS = assets.style("presenter.css", "hide_sidebar.css")  # larger type, no sidebar

router.ensure_router()  # before anything is drawn: see its docstring
URL = url_state.of(routes.STEP_THROUGH)  # the stage's keys in its link, their kinds and bounds (kvviz.routes)
loaded = models.current_model("eager")
engine = engines.step_engine(loaded)
info = loaded.info
for _key, _value in DEFAULTS.items():
    st.session_state.setdefault(_key, _value)
if st.session_state.get("step_engine_shown") is not engine:  # another model's generation: show its newest step
    st.session_state["step_engine_shown"] = engine
    st.session_state.pop("step_history", None)


def _sampling() -> Sampling:
    s = st.session_state
    if s.get("step_greedy", False):
        return Sampling()
    return Sampling(
        greedy=False,
        temperature=float(s.get("step_temperature", DEFAULT_TEMPERATURE)),
        top_k=int(s.get("step_top_k", DEFAULT_SAMPLING.top_k)),
        seed=int(s.get("step_seed", DEFAULT_SAMPLING.seed)),
    )


def _views() -> list[str]:
    return [v for v in VIEWS if v != "gqa" or info.n_kv_heads < info.n_head]  # GQA view for GQA models only


# The fields the stage writes into its address bar (StageLink.values): the pickers write layer and head themselves.
LINK_FIELDS = ("prompt", "steps", "greedy", "temperature", "top_k", "seed", "view", "present")
# The links this session replayed or wrote into its own address bar (their replay keys, the newest OWN_LINKS_KEPT):
# never replayed (again). A full rerun can arrive with the address bar a step behind (Play's last frame asks for a
# full rerun before the browser has applied the frame's URL): that URL is this session's own past state, never a
# link to replay (it cropped Play 8 to 7 steps).
OWN_LINKS, OWN_LINKS_KEPT = "step_own_links", 256
FRESH_TAKEN = "step_fresh_taken"  # this session has opened the stage fresh for the ?fresh=1 now in its URL


def _apply_link() -> None:
    """A shared link replays its generation once per session: its sampling goes into the Prompt widgets, then
    prefill + N steps; view and presenter mode are set, layer and head come from the pickers' own URL keys.
    Keyed on what the generation depends on only, so the reader's clicks (Next, a layer: the bound pickers
    rewrite the URL) never replay it again and throw their work away."""
    link = stage_link.parse_link(URL.texts(), info.n_positions)
    s = st.session_state
    if link is None or link.replay_key in s.get(OWN_LINKS, ()):
        return
    _own_link(link.replay_key)
    # never int(text) here: the route's kind for steps says what a bad steps= was and what is done instead
    if refused := URL.refusal("steps", _("Replaying the prompt only."), hi=info.n_positions - 1):
        st.warning(refused)
        link = dataclasses.replace(link, steps=0)
    s["step_greedy"], s["step_temperature"], s["step_top_k"], s["step_seed"] = (
        link.greedy,
        link.temperature,
        link.top_k,
        link.seed,
    )
    s["step_present"] = link.present or s.get("step_present", False)
    s["step_view"] = link.view if link.view in _views() else "one"
    preset = next((name for name, text in PRESETS.items() if text == link.prompt), s.get("step_preset", "ROMEO:"))
    s["step_preset"], s[f"step_prompt_{preset}"] = preset, link.prompt
    try:
        engine.prefill(link.prompt, _sampling())
        for _step in range(min(link.steps, info.n_positions - engine.cache_len)):
            engine.step()
    except (PromptError, ContextFullError) as exc:
        s["step_link_warning"] = _("The link's prompt could not be replayed: {error}").format(error=exc)


def _stage_link() -> stage_link.StageLink:
    """The state on the stage as a link (the Link popover and the address bar)."""
    s, sampling = st.session_state, engine.sampling
    return stage_link.StageLink(
        prompt=engine.prompt_text,
        steps=len(engine.records) - 1,
        greedy=sampling.greedy,
        temperature=sampling.temperature,
        top_k=sampling.top_k,
        seed=sampling.seed,
        view=s.get("step_view") or "one",
        present=bool(s.get("step_present")),
        layer=int(s.get("step_layer") or 0),
        head=int(s.get("step_head") or 0),
    )


def _link() -> str:
    link = _stage_link()
    base = st.context.url.split("?")[0] if st.context.url else routes.STEP_THROUGH.url()
    # the link opens in the language and on the model it was made with, as every link the app builds does
    return f"{base}?{urllib.parse.urlencode({**link.query(), **links.link_params()})}"


def _own_link(key: tuple) -> None:
    own = st.session_state.setdefault(OWN_LINKS, [])
    if key not in own:
        own.append(key)
        del own[:-OWN_LINKS_KEPT]


def _sync_url() -> None:
    """Keep the address bar on the stage's state: the same fields a Link carries (defaults left out), so a reload
    (a new session) replays to the same step. Written as this session's own (OWN_LINKS), so this session's own URL
    never replays it again. Every field is in place (Route.in_place): Back leaves the stage, it never replays a
    step. The pickers write step_layer / step_head themselves (bound); the router keeps ?lang= (and the model,
    ui's link helper) in the same query."""
    s = st.session_state
    state: dict[str, object] = dict.fromkeys(LINK_FIELDS)  # a field not written is taken out
    if engine.started:
        link = _stage_link()
        _own_link(stage_link.parse_link(link.query(), info.n_positions).replay_key)  # as the URL reads back
        state.update(link.values())
        if URL.holds("fresh"):  # a plan's ?fresh=1 leaves with Prefill (_open_fresh), in the same message
            state["fresh"] = None
            s.pop(FRESH_TAKEN, None)  # the stage runs as a fragment: the next plan link opens it fresh again
    else:
        state["present"] = bool(s.get("step_present"))
    URL.write(state)


def _open_fresh() -> None:
    """A plan's link (?fresh=1) opens the stage as its row describes it, whatever this session did here before: the
    cache empty (the generation is dropped) and presenter mode as the link says. Once per arrival: the flag stays in
    the URL until the stage's first state is written there (Prefill: _sync_url takes it out, in place), so a reload
    after that keeps what the class did. Taken out on arrival, it made Streamlit add a history entry that still held
    it: Back after Prefill and a few steps went to that entry and emptied the stage."""
    s = st.session_state
    if not URL.holds("fresh"):
        s.pop(FRESH_TAKEN, None)
    elif refused := URL.refusal("fresh", _("Showing the stage as this session left it.")):  # ?fresh=2: named
        s["step_link_warning"] = refused
        URL.drop("fresh")
    elif URL.read("fresh") and not s.get(FRESH_TAKEN):
        s[FRESH_TAKEN] = True
        engine.reset()
        s["step_present"] = bool(URL.read("present"))


_open_fresh()
_apply_link()
if "step_present" not in st.session_state:  # ?present=1 opens the page in presenter mode
    st.session_state["step_present"] = bool(URL.read("present"))
title_row = st.columns(
    [2, 1], vertical_alignment="bottom"
)  # 1/5 cut the toggle to "Presente…" at 1024 px with the sidebar
title_row[0].title(_(routes.STEP_THROUGH.title))
present = title_row[1].toggle(
    _("Presenter mode"),
    key="step_present",
    help=_("Only the stage, larger type, no sidebar (also ?present=1 in the URL)"),
)
st.html(STAGE_CSS + (PRESENTER_CSS if present else ""))
st.html(KEYS_JS, unsafe_allow_javascript=True)
font_px = 18 if present else 14
# A model switch's line (generation kept / restored) is a toast: a banner above the fragment stayed until the
# next full rerun and pushed the newest row off a 720-px screen. A link's refusal stays a banner (it must be read).
if _notice := engines.engine_notice():
    st.toast(_notice, icon=":material/info:")
if _notice := st.session_state.pop("step_link_warning", None):
    st.info(_notice, icon=":material/info:")


POPOVER_KEYS = (
    "step_preset",
    "step_play_n",
    "step_play_speed",
    "step_greedy",
    "step_temperature",
    "step_top_k",
    "step_seed",
)


def _keep_popover_state() -> None:
    """Hand the Prompt popover's widgets the values in force on every run.

    A closed popover's widgets are not mounted in the browser, so the browser holds no value for them; a widget
    made without value= is sent with its own default (the minimum, an empty text) plus the session's value only
    on a run where that value was written through st.session_state. Writing each value back before its widget is
    drawn makes every run send the value in force, not the minimums."""
    s = st.session_state
    for key in (*POPOVER_KEYS, f"step_prompt_{s.get('step_preset', 'ROMEO:')}"):
        if key in s:
            s[key] = s[key]


def _controls() -> tuple[dict[str, bool], st.delta_generator.DeltaGenerator | None]:
    """The control row (the clicks, and the Link popover to fill once the pickers have run). Shortcut hints are
    drawn on the buttons by Streamlit itself."""
    row = st.container(horizontal=True, vertical_alignment="bottom", key="step_controls")  # one row on a phone
    # Buttons are found by their keys (.st-key-step_btn_*: KEYS_JS, tests), never by their labels, which are
    # translated.
    _keep_popover_state()
    # Drawn only while open: a click on the stage would rerun these eight widgets, 14 of a click's 57 messages
    # and ~6 ms of its ~40 ms of server CPU (bench/click_cpu.py), for a box only the teacher opens. Opening it reruns
    # the stage (on_change) with the values in force (_keep_popover_state: they live in session state meanwhile).
    prompt_box = row.popover(_("Prompt"), icon=":material/edit:", key="step_popover_prompt", on_change="rerun")
    if prompt_box.open:
        with prompt_box:  # two columns: it fits a 720-px-high projector
            text, sampling = st.columns([3, 2], gap="medium")
            preset = text.selectbox(_("Classroom presets"), list(PRESETS), key="step_preset", format_func=_)
            st.session_state.setdefault(f"step_prompt_{preset}", PRESETS[preset])
            text.text_area(
                _("Prompt"),
                height=110,
                key=f"step_prompt_{preset}",
                max_chars=MAX_TEXT_CHARS,
                help=_("A new line is a token of its own: the strip shows it as ↵. {cap}").format(cap=_(TEXT_CAP_HELP)),
            )
            if i18n.current() != i18n.ENGLISH:  # the interface is translated, the model's text is not
                text.caption(
                    _(
                        "{models} A prompt may mix in other characters: the tokenizer is byte-level, so a "
                        "character it never saw whole is split into byte tokens (shown in hex, e.g. `<E4>`)."
                    ).format(models=_(ENGLISH_MODELS))
                )
            play = text.columns(2)
            bounded.number(play[0], PLAY_STEPS, _("Play N steps"), key="step_play_n")
            play[1].segmented_control(
                _("Play speed"),
                list(PLAY_SPEEDS),
                key="step_play_speed",
                format_func=lambda v: _(PLAY_SPEED_LABELS[v]),
                help=_("slow ~1.3 s, normal ~0.45 s, fast ~0.35 s a step (plus the redraw)"),
            )
            sampling.toggle(
                _("Greedy decoding"),
                key="step_greedy",
                help=_("Always the most likely token. {why}").format(why=_(GREEDY_HELP)),
            )
            bounded.guard(sampling, TEMPERATURE, "step_temperature")  # a slider: a value past it is named
            sampling.slider(
                _("Temperature"), TEMPERATURE.lo, TEMPERATURE.hi, step=TEMPERATURE.step, key="step_temperature"
            )
            bounded.number(sampling, TOP_K, _("Top-k (0 = off)"), key="step_top_k")
            bounded.number(sampling, SEED, _("Seed"), key="step_seed")
    clicked = {
        "prefill": row.button(_("Prefill"), key="step_btn_prefill", shortcut="P"),
        "back": row.button(_("Back"), key="step_btn_back", shortcut="Left", icon=":material/arrow_back:"),
        "next": row.button(
            _("Next token"), key="step_btn_next", shortcut="Right", type="primary", icon=":material/arrow_forward:"
        ),
        "next_space": row.button(_("Next (Space)"), key="step_btn_next_space", shortcut="Space"),  # hidden by CSS
        "play": row.button(
            _("Play {n}").format(n=st.session_state.get("step_play_n", 8)),
            key="step_btn_play",
            icon=":material/play_arrow:",
            help=_("Animate N steps (N under Prompt); Stop or any click stops it"),
        ),
        "stop": row.button(_("Stop"), key="step_btn_stop", icon=":material/stop:", shortcut="Esc"),
        "reset": row.button(_("Reset"), key="step_btn_reset"),
    }
    # Filled in after the pickers have run (stage()), so the link names the layer and head on screen.
    return clicked, row.popover(_("Link"), icon=":material/link:") if engine.started else None


def _act(clicked: dict[str, bool]) -> None:
    """Apply the clicked action to this session's engine. Play only arms the animation (see _play_tick)."""
    prompt = st.session_state.get(f"step_prompt_{st.session_state.get('step_preset', 'ROMEO:')}", "ROMEO:")
    was_playing = st.session_state.get(PLAY_LEFT, 0) > 0
    if any(clicked.values()):  # any click stops an animation; Play (re)starts one
        st.session_state["step_acted"] = st.session_state.get("step_acted", 0) + 1  # KEYS_JS's queue waits on it
        st.session_state.pop("step_history", None)  # after an action the stage shows the newest step
        st.session_state[PLAY_LEFT] = int(st.session_state.get("step_play_n", 8)) if clicked["play"] else 0
    if clicked["stop"] and was_playing:
        # Stop lands on the last frame sent (its strip out, _draw): a step whose frame the click cut short (Streamlit interrupts the
        # running frame for the click) was never seen, so it is rolled back, exactly as Back does.
        shown = st.session_state.get("step_play_shown", len(engine.records))
        while len(engine.records) > max(shown, 1):
            engine.back()
        return
    try:
        if clicked["prefill"]:
            engine.prefill(prompt, _sampling())
        elif clicked["next"] or clicked["next_space"]:
            engine.step(_sampling())
        elif clicked["back"]:
            engine.back()
        elif clicked["reset"]:
            engine.reset()
        elif not any(clicked.values()):
            _play_tick()
    except (PromptError, ContextFullError) as exc:
        st.session_state[PLAY_LEFT] = 0
        st.warning(str(exc))


def _play_tick() -> None:
    """While playing, every run of the stage takes one step: the fragment reruns itself every PLAY_DELAY_S
    (run_every), so each step is drawn as it happens and a click in between (Stop, or any button) stops it."""
    left = st.session_state.get(PLAY_LEFT, 0)
    if left > 0 and engine.started:
        st.session_state[PLAY_LEFT] = left - 1
        engine.step(_sampling())


def _state_html(playing: bool) -> str:
    """A hidden element KEYS_JS reads: how many clicks the stage has acted on (its queue sends the next press
    once this moves), the records on screen, whether Play runs (Esc stops at the frame shown), and the busy badge's
    words in this run's language (the script is installed once per tab: a language switch changes only these)."""
    one, many = (
        html.escape(ngettext("Stage busy: {n} key press queued", "Stage busy: {n} key presses queued", n))
        for n in (1, 2)
    )
    return (
        f'<div class="kvviz-stage-state" data-acted="{st.session_state.get("step_acted", 0)}" '
        f'data-records="{len(engine.records)}" data-playing="{int(playing)}" data-busy-one="{one}" '
        f'data-busy-many="{many}" style="display:none"></div>'
    )


def _draw(
    shown: step_view.StageView, view: str, race: step_view.RaceView | None, playing: bool = False
) -> st.delta_generator.DeltaGenerator:
    """Everything that changes per step (no widgets: the Play animation redraws this many times per run), drawn
    from the stage's view record. Returns the slot above the tiles where stage() puts the history slider."""
    snap = shown.snapshot
    # presenter mode: one line of chips and no colour key (the teacher names them), so the newest row stays in view
    note = _(ENGLISH_MODELS) if i18n.current() != i18n.ENGLISH else ""
    if playing:  # this frame's strip goes out next (Streamlit interrupts a run for a click only inside its calls,
        # after sending: set first, so the browser never shows a frame Stop would roll back): Stop may land here
        st.session_state["step_play_shown"] = len(engine.records)
    st.markdown(
        strip.strip_html(
            snap.strip,
            max_tokens=16 if present else 28,
            font_rem=1.1 if present else 0.9,
            legend=not present,
            note=note,
        )
        + _state_html(playing),
        unsafe_allow_html=True,
    )
    left, right = st.columns([0.7, 0.3], gap="small")
    top = shown.top_tokens  # the next-token bars beside the one-head and GQA views
    bars_text = figs.next_token_bars_text([t.text for t in top], [t.prob for t in top], snap.next_token_text)
    if race is not None:
        with left:
            _race(snap, race)
    elif view == "gqa":
        a11y.chart(
            left,
            figs.group_figure(snap, font_px, height_px=360),
            text=f"{figs.group_figure_text(snap)} {bars_text}",
            config=CHART,
        )  # the text says the bars beside it too
        left.caption(shown.gqa_text)
    else:
        # the readout first: large, above the fold, and its room kept when there is nothing to say (no jump)
        readout = html.escape(shown.readout) or (f'<span class="{a11y.MUTED}">{html.escape(shown.readout_hint)}</span>')
        # the stage's chart and the bars beside it, for a screen reader: in the readout, so no element is added
        figure_text = figs.state_figure_text(snap) if snap.state is not None else figs.stage_figure_text(snap)
        chart_text = a11y.screen_reader_span(f"{figure_text} {bars_text}")
        left.html(
            f'<div class="kvviz-readout" style="font-size:{1.1 if present else 1.0}rem">{readout}{chart_text}</div>'
        )
        if snap.state is not None:  # a hybrid's linear-attention layer: its fixed state, per head
            a11y.plot(left, figs.state_figure(snap, font_px, height_px=370), config=CHART)
        else:
            a11y.plot(left, figs.stage_figure(snap, font_px, height_px=370), config=CHART)
            left.caption(shown.rows_caption)
        if shown.hybrid_text:
            left.caption(shown.hybrid_text)
    with right:
        history = st.container()
        # two rows of two: length and size, then this step's dot products; a row at a time, so a phone, which
        # stacks columns, reads them in the same order
        for pair in (shown.tiles[:2], shown.tiles[2:]):
            for column, tile in zip(st.columns(2, gap="small"), pair, strict=True):
                column.metric(tile.label, tile.value, help=tile.help)
        if race is not None:
            _race_side(race)
        else:
            a11y.plot(
                st,
                figs.next_token_bars(
                    [t.text for t in top],
                    [t.prob for t in top],
                    snap.next_token_text,
                    font_px,
                    height_px=6 * (font_px + 12) + 90,
                ),
                config=CHART,
            )
    st.caption(shown.step_line)
    return history


def _race_shape() -> loading.LoadedModel | None:
    """The race's model at the chosen scale: this one, or the GPT-2 124M shape (random weights: only the
    timing matters) where the server offers it. None = this model."""
    if st.session_state.get("step_race_scale") != "gpt2":
        return None
    try:
        with st.spinner(_("Loading the GPT-2 124M shape (random weights) for the race...")):
            return models.cached_model(RACE_SHAPE, "eager")
    except loading.ModelLoadError as exc:
        st.session_state["step_race_scale"] = "model"
        st.warning(_("The GPT-2 124M shape is not available here ({error}); racing on this model.").format(error=exc))
        return None


def _race_timing(snap: step_view.StageSnapshot, playing: bool) -> RaceTiming | None:
    """Time the shown step both ways (engine.race: repeats inside the click's budget, or one where one costs
    more), once per step and scale: a layer or head click redraws without measuring again. None for the prefill,
    and while Play runs. While it measures, its status line is rewritten (empty, then "Timing..." after
    RACE_STATUS_AFTER_S): that write is where Streamlit ends the race when a full rerun or a closed tab asks it
    to (checked before every transformer block, as the speed-up page's runs are). A click on the stage's own
    buttons is a fragment rerun, which Streamlit queues behind this one: it waits for the bounded race."""
    if snap.kind == "prefill" or playing:
        return None
    status = st.empty()  # drawn on every race run, so the layout never jumps between measuring and redrawing
    shape = _race_shape()
    key = (shape.info.spec if shape else info.spec, tuple(engine.token_ids[: snap.cache_len]))
    cached = st.session_state.get("step_race_timing")
    if cached is not None and cached[0] == key:
        return cached[1]
    model = (shape or loaded).info.shown_label()
    began, said = time.monotonic(), {"at": 0.0}

    def check() -> None:  # an empty write is a point to stop too: a short race never flashes a line
        now = time.monotonic()
        if now - said["at"] >= RACE_CHECK_EVERY_S:
            said["at"] = now
            if now - began < RACE_STATUS_AFTER_S:
                status.empty()
            else:
                status.caption(_("Timing this step with and without the cache on {model}...").format(model=model))

    try:
        timing = engine.race(at=snap.at, on=shape, check=check)
    finally:
        status.empty()
    st.session_state["step_race_timing"] = (key, timing)
    return timing


def _race(snap: step_view.StageSnapshot, race: step_view.RaceView) -> None:
    """Cached step vs full recomputation: what each computes (every layer's K rows), the exact counts, and the
    clock as a fair statistic, drawn with the floor every forward stands on."""
    if race.models_caption:
        st.caption(race.models_caption)
    sides = st.columns(2, gap="small")
    for side, cached, sentence in zip(sides, (True, False), race.sides, strict=True):
        a11y.chart(
            side,
            figs.race_figure(snap, cached, font_px, height_px=190 if not present else 200),
            text=figs.race_figure_text(snap, cached),
            config=CHART,
        )
        side.markdown(sentence)
    if race.note:  # the prefill, or no clock while the animation runs
        st.caption(race.note)
    else:
        timing = race.timing
        a11y.chart(
            st,
            figs.race_timing_figure(
                timing.cached_ms, timing.uncached_ms, timing.fixed_ms, font_px, height_px=120 if not present else 140
            ),
            text=figs.race_timing_figure_text(timing),
            config=CHART,
        )
        if race.clock_caption:
            st.caption(race.clock_caption)


def _race_side(race: step_view.RaceView) -> None:
    """Beside the race: which model the clock runs on, and the verdict in a few lines."""
    if models.model_offered(RACE_SHAPE) and info.spec != RACE_SHAPE:
        st.segmented_control(
            _("Race on"),
            list(RACE_SCALES),
            key="step_race_scale",
            format_func=lambda v: _(RACE_SCALES[v]),
            help=_(
                "The GPT-2 124M shape (random weights: only the clock matters) shows the gap "
                "this small model hides: a few seconds a step on 2 cores, 0.5 GB loaded once "
                "per server"
            ),
        )
    else:
        st.session_state["step_race_scale"] = "model"
    if race.tiles_caption:
        st.caption(race.tiles_caption)
    if race.verdict:
        st.markdown(race.verdict)


def _show_head(layer: int, head: int) -> None:
    """(Button callback, before the pickers are drawn.) Point the stage at this layer and query head."""
    st.session_state["step_layer"], st.session_state["step_head"] = layer, head


def _choice(row, label: str, n: int, key: str, prefix: str, max_buttons: int = 8) -> int:
    """Layer / head picker: buttons for a few options (one click on a projector), a select box for many. Bound to
    the URL under its key, which writes the shown label (step_layer=L2): StageLink writes links the same way."""
    row.markdown(f"**{label}**")
    label_of = lambda i: stage_link.picker_label(prefix, i)  # noqa: E731
    if n <= max_buttons:
        return (
            row.segmented_control(
                label,
                range(n),
                default=0,
                key=key,
                format_func=label_of,
                bind="query-params",
                label_visibility="collapsed",
            )
            or 0
        )
    return row.selectbox(
        label, range(n), key=key, format_func=label_of, bind="query-params", label_visibility="collapsed", width=90
    )


def _play_interval() -> float | None:
    if st.session_state.get(PLAY_LEFT, 0) <= 0:
        return None
    return PLAY_SPEEDS.get(st.session_state.get("step_play_speed") or "normal", PLAY_DELAY_S)


@st.fragment(run_every=_play_interval())
def stage() -> None:
    playing = st.session_state.get(PLAY_LEFT, 0) > 0
    clicked, link_box = _controls()
    _act(clicked)
    if playing != (st.session_state.get(PLAY_LEFT, 0) > 0):  # started or finished: switch run_every on/off
        st.rerun()
    if not engine.started:
        st.html(_state_html(playing=False))
        st.info(
            _("Press **Prefill** (or the P key) to feed the prompt. Model: {model}.").format(model=info.shown_label())
        )
        _sync_url()
        return
    pick = st.container(horizontal=True, vertical_alignment="center", key="step_pickers")
    layer = _choice(pick, _("Layer"), info.n_layer, "step_layer", "L")
    # more than 4 heads as buttons (the GQA model's 8) wrapped the row at 1280x720 and pushed the newest row down
    head = _choice(pick, _("Query head"), info.n_head, "step_head", "H", max_buttons=4)
    view = (
        pick.segmented_control(
            _("View"), _views(), key="step_view", format_func=lambda v: _(VIEWS[v]), label_visibility="collapsed"
        )
        or "one"
    )
    latest = len(engine.records) - 1
    at = latest if playing else min(st.session_state.get("step_history", latest), latest)
    shown = engine.stage_view(layer, head, at=at, all_layers=view == "race")
    if view != "race":
        button = shown.copy_button
        # always drawn (disabled when there is no copying head to show), so the row never jumps
        pick.button(
            button.label,
            key="step_show_copy",
            disabled=not button.enabled,
            on_click=_show_head,
            args=button.target,
            icon=":material/content_copy:",
            help=_(
                "Show the head that reads the row after the newest token's previous occurrence (there "
                "is one when the newest token occurred before: try the Repeat a pattern preset)"
            ),
        )
    if link_box is not None:
        with link_box:
            st.caption(
                _(
                    "This state as a link: prompt, steps taken, sampling (seed, temperature, top-k), layer, "
                    "head, view, presenter mode and language. Opened elsewhere it replays the same generation."
                )
            )
            st.code(_link(), language=None, wrap_lines=True)
    race = None
    if view == "race":  # timed here, after the pickers: a layer or head click redraws without timing again
        race = step_view.race_view(
            shown, _race_timing(shown.snapshot, playing), big=st.session_state.get("step_race_scale") == "gpt2"
        )
    history = _draw(shown, view, race, playing)
    if latest and not playing:  # beside the tiles, so it is above the fold at 1280x720
        history.slider(
            _("History (the cache is not changed)"),
            0,
            latest,
            value=at,
            key="step_history",
            format=_("step %d"),
            help=_("History: scrub back through the steps taken (redraws what was recorded; the cache is not changed)"),
        )
    _sync_url()


stage()
if not present:
    with st.expander(_("What you are seeing"), expanded=False):
        st.markdown(
            _(
                "At every layer each token gets a **query**, a **key** and a **value** vector. A new token's query is "
                "compared with the keys of *all* earlier tokens and its own, and it averages their values. Those earlier keys and "
                "values never change, so the model stores them: the **KV cache**.\n\n"
                "1. **Prefill** feeds the whole prompt in one pass: every layer's cache gets one row per prompt token.\n"
                "2. Each **Next token** feeds only the newest token: every layer computes *one* new K row and *one* "
                "new V row (outlined), appends them, and the new query attends over all cached rows: the bars on the "
                "right sit beside the rows they weigh.\n"
                "3. The token the model just chose (dashed chip) is not in the cache yet: the next step feeds it.\n"
                "4. **Back** crops the cache by one row, exactly as real engines roll back. The history slider only "
                "redraws an earlier step from what was recorded; it changes nothing.\n\n"
                "5. When the newest token occurred before, the line above the figure names the head that reads the "
                "row *after* that earlier occurrence (an induction head copying; try the *Repeat a pattern* preset).\n\n"
                "Decoding is a seeded draw by default (the same seed and prompt give the same text): greedy decoding, "
                "one toggle away in *Prompt*, always takes the most likely token, and a small model soon loops."
            )
        )
        if not info.all_attention:
            st.markdown(_(HYBRID_SEEING))
    with st.expander(
        _("Without the cache: recompute everything, get the same answer"), key="step_exp_uncached", on_change="rerun"
    ) as uncached:
        if uncached.open and engine.started:
            check = step_view.without_cache_view(engine.check_without_cache(), engine.records, info)
            st.markdown(check.text)
            a11y.chart(
                st,
                figs.growth_chart(check.steps, check.with_cache, check.without_cache, check.axis_title),
                config=CHART,
            )
    if not info.all_attention:  # a hybrid: its step against an all-attention model's of the same shape
        with st.expander(
            _("Against all attention: one step's time as the context grows"), key="step_exp_versus", on_change="rerun"
        ) as versus:
            if versus.open:
                st.markdown(_(VERSUS_TEXT))
                if st.button(_("Time both"), key="step_btn_versus"):
                    with st.spinner(
                        _("Timing both models at {n} context lengths...").format(n=len(step_view.CONTEXT_RACE_CONTEXTS))
                    ):
                        st.session_state["step_versus"] = (info.spec, engine.versus_attention())
                kept = st.session_state.get("step_versus")
                if kept is not None and kept[0] == info.spec:
                    a11y.chart(st, figs.context_race_figure(kept[1]), config=CHART)
                    st.markdown(step_view.context_race_verdict(kept[1]))
