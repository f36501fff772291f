"""Step through a GPT-2 generation token by token: the classroom stage.

One screen (1280x720 with the sidebar open) holds the token strip, the controls, the chosen head's K and V
cache with the newest row outlined, and the newest query's attention drawn beside the very rows it weighs.
Keyboard: P = Prefill, Right arrow or Space = Next token, Left arrow = Back. The stage is a fragment, so a
click reruns only the stage; every figure is drawn from one StageSnapshot built from the step records.
"""
from __future__ import annotations

import dataclasses
import urllib.parse

import streamlit as st

from kvviz import memory, query_values, step_view, ui
from kvviz.figures import export_config
from kvviz.figures import step as figs
from kvviz.prompt_rules import MAX_TEXT_CHARS, TEXT_CAP_HELP
from kvviz.step_records import DEFAULT_SAMPLING, ContextFullError, PromptError, Sampling

PRESETS = {
    "ROMEO:": "ROMEO:",
    "First Citizen": "First Citizen:\nBefore we proceed any further, hear me speak.",
    "To be, or not to be": "HAMLET:\nTo be, or not to be, that is the question:",
    "Repeat a pattern": step_view.REPEAT_PROMPT,
}
PLAY_DELAY_S = 0.15  # run_every interval; with the redraw and the round trip a step lands every ~0.4-0.5 s
PLAY_MAX = 64
PLAY_LEFT = "step_play_left"  # steps the running animation still has to take (0 = not playing)
DEFAULT_TEMPERATURE = DEFAULT_SAMPLING.temperature
GREEDY_HELP = ("Off by default: greedy always takes the single likeliest token, and on a model this small that "
               "soon repeats a line forever (both bundled models' greedy samples loop within 80 tokens; their "
               "induction heads, which copy what already stands in the context, make a loop stronger each time "
               "round). The default draws from the 40 likeliest at temperature 0.8 with the seed below: same seed, "
               "same text.")
VIEWS = {"one": "K, V, attention", "race": "Race: cache vs none", "gqa": "Query heads sharing K/V"}

# Fit the stage in 1280x720: less padding above, metric values wrap instead of being cut to "12 to…",
# the hidden second Next-token button exists only for its Space shortcut.
STAGE_CSS = """<style>
[data-testid="stMainBlockContainer"] {padding: 2rem 1.5rem 1rem 1.5rem}
h1 {font-size: 1.6rem !important; padding: 0 0 0.2rem 0 !important}
[data-testid="stMetricValue"] {font-size: 1.35rem}
[data-testid="stMetricValue"] * {white-space: normal !important; overflow: visible !important; text-overflow: clip !important}
[data-testid="stMetricLabel"] * {white-space: normal !important; overflow: visible !important; text-overflow: clip !important}
.st-key-step_btn_next_space {display: none}
</style>"""
PRESENTER_CSS = """<style>
html {font-size: 18px}
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"] {display: none}
</style>"""

ui.ensure_router()  # before anything is drawn: see its docstring
if "step_present" not in st.session_state:  # ?present=1 opens the page in presenter mode
    st.session_state["step_present"] = st.query_params.get("present", "0") in ("1", "true")
title_row = st.columns([4, 1], vertical_alignment="bottom")
title_row[0].title("Step through a generation")
present = title_row[1].toggle("Presenter mode", key="step_present",
                              help="Only the stage, larger type, no sidebar (also ?present=1 in the URL)")
st.html(STAGE_CSS + (PRESENTER_CSS if present else ""))
font_px = 18 if present else 14

loaded = ui.current_model("eager")
engine = ui.step_engine(loaded)
info = loaded.info


def _sampling() -> Sampling:
    s = st.session_state
    if s.get("step_greedy", False):
        return Sampling()
    return Sampling(greedy=False, temperature=float(s.get("step_temperature", DEFAULT_TEMPERATURE)),
                    top_k=int(s.get("step_top_k", DEFAULT_SAMPLING.top_k)),
                    seed=int(s.get("step_seed", DEFAULT_SAMPLING.seed)))


def _apply_link() -> None:
    """A shared link (?prompt=...&steps=N) replays that generation once per session: prefill + N steps."""
    prompt, steps = st.query_params.get("prompt"), st.query_params.get("steps", "0")
    link = (prompt, steps, str(st.query_params.to_dict()))
    if prompt is None or st.session_state.get("step_link_done") == link:
        return
    st.session_state["step_link_done"] = link
    refused = query_values.refused_link_whole(steps, 0, info.n_positions - 1, "steps", "Replaying the prompt only.")
    if refused:  # never int(text) here: kvviz.query_values checks the link's text (issue 23)
        st.warning(refused)
    n_steps = 0 if refused else int(steps)
    try:
        engine.prefill(prompt, _sampling())
        for _ in range(min(n_steps, info.n_positions - engine.cache_len)):
            engine.step()
    except (PromptError, ContextFullError) as exc:
        st.warning(f"The link's prompt could not be replayed: {exc}")


def _link() -> str:
    params = {"prompt": engine.prompt_text, "steps": len(engine.records) - 1,
              "step_layer": st.session_state.get("step_layer", 0), "step_head": st.session_state.get("step_head", 0)}
    base = st.context.url.split("?")[0] if st.context.url else "/step_through"
    return f"{base}?{urllib.parse.urlencode(params)}"


def _controls() -> dict[str, bool]:
    """The control row. Shortcut hints are drawn on the buttons by Streamlit itself."""
    row = st.container(horizontal=True, vertical_alignment="bottom")
    with row.popover("Prompt", icon=":material/edit:"):
        preset = st.selectbox("Classroom presets", list(PRESETS), key="step_preset")
        st.text_area("Prompt", value=PRESETS[preset], height=90, key=f"step_prompt_{preset}",
                     max_chars=MAX_TEXT_CHARS, help=TEXT_CAP_HELP)
        st.toggle("Greedy (always the most likely token)", value=False, key="step_greedy", help=GREEDY_HELP)
        st.slider("Temperature", 0.1, 2.0, DEFAULT_TEMPERATURE, 0.05, key="step_temperature")
        st.number_input("Top-k (0 = off)", 0, 200, DEFAULT_SAMPLING.top_k, key="step_top_k")
        st.number_input("Seed", 0, 1_000_000, DEFAULT_SAMPLING.seed, key="step_seed")
        st.number_input("Play N steps", 1, PLAY_MAX, 8, key="step_play_n")
    clicked = {
        "prefill": row.button("Prefill", key="step_btn_prefill", shortcut="P"),
        "back": row.button("Back", key="step_btn_back", shortcut="Left", icon=":material/arrow_back:"),
        "next": row.button("Next token", key="step_btn_next", shortcut="Right", type="primary",
                           icon=":material/arrow_forward:"),
        "next_space": row.button("Next (Space)", key="step_btn_next_space", shortcut="Space"),  # hidden by CSS
        "play": row.button(f"Play {st.session_state.get('step_play_n', 8)}", key="step_btn_play",
                           icon=":material/play_arrow:", help="Animate N steps (N under Prompt); Stop or any click stops it"),
        "stop": row.button("Stop", key="step_btn_stop", icon=":material/stop:", shortcut="Esc"),
        "reset": row.button("Reset", key="step_btn_reset"),
    }
    if engine.started:
        with row.popover("Link", icon=":material/link:"):
            st.caption("This state as a link (prompt, steps taken, layer, head):")
            st.code(_link(), language=None, wrap_lines=True)
    return clicked


def _act(clicked: dict[str, bool]) -> None:
    """Apply the clicked action to this session's engine. Play only arms the animation (see _play_tick)."""
    prompt = st.session_state.get(f"step_prompt_{st.session_state.get('step_preset', 'ROMEO:')}", "ROMEO:")
    if any(clicked.values()):  # any click stops an animation; Play (re)starts one
        st.session_state.pop("step_history", None)  # after an action the stage shows the newest step
        st.session_state[PLAY_LEFT] = int(st.session_state.get("step_play_n", 8)) if clicked["play"] else 0
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


def _draw(snap: step_view.StageSnapshot, view: str) -> None:
    """Everything that changes per step (no widgets: the Play animation redraws this many times per run)."""
    st.markdown(step_view.strip_html(snap.strip, max_tokens=28, font_rem=1.1 if present else 0.9), unsafe_allow_html=True)
    left, right = st.columns([0.7, 0.3], gap="small")
    c = snap.counters
    if view == "race":
        with left:
            sides = st.columns(2, gap="small")
            for side, cached in zip(sides, (True, False)):
                side.plotly_chart(figs.race_figure(snap, cached, font_px, height_px=300), config=export_config("kv_cache_stage"))
                dots = c.this_dot_products_cached if cached else c.this_dot_products_uncached
                rows = c.this_kv_rows_cached if cached else c.this_kv_rows_uncached
                ms = f"{snap.step_ms:.1f} ms" if cached else _uncached_ms(snap)
                side.markdown(f"**{'With' if cached else 'Without'} the cache**: {dots:,} dot products, "
                              f"{rows:,} K/V rows computed, {ms} measured")
    elif view == "gqa":
        left.plotly_chart(figs.group_figure(snap, font_px, height_px=360), config=export_config("kv_cache_stage"))
        left.caption(_gqa_text(snap))
    else:
        above = (f" · {snap.first_row} older rows above not drawn (they got {snap.attention_above:.0%} "
                 "of the attention)") if snap.first_row else ""
        left.plotly_chart(figs.stage_figure(snap, font_px, height_px=360 if not present else 440),
                          config=export_config("kv_cache_stage"))
        left.caption(f"Rows = cache positions; the newest row is outlined{above}. {step_view.copy_sentence(snap.copy)}")
    with right:
        m = st.columns(2, gap="small")
        m[0].metric("Cache length", f"{snap.cache_len} tokens", help=f"at most {info.n_positions} positions")
        m[1].metric("Cache size", memory.short_bytes(snap.cache_bytes),
                    help=f"summed from the real K/V tensors: {memory.format_bytes(snap.cache_bytes)}")
        m[0].metric("Dots, cached", f"{c.this_dot_products_cached:,}", help="query-key dot products this step")
        m[1].metric("Dots, uncached", f"{c.this_dot_products_uncached:,}",
                    help="the same step if the whole sequence were recomputed")
        st.plotly_chart(figs.next_token_bars([t.text for t in snap.top_k[:6]], [t.prob for t in snap.top_k[:6]],
                                             snap.next_token_text, font_px, height_px=6 * (font_px + 12) + 80), config=export_config("kv_cache_stage"))
    st.caption(f"{snap.kind} step {snap.at} of {snap.latest}: fed {len(snap.new_rows) or snap.cache_len} token(s) "
               f"in {snap.step_ms:.1f} ms. Since the prefill: {c.total_dot_products_cached:,} dot products with the "
               f"cache vs {c.total_dot_products_uncached:,} without.")


def _gqa_text(snap: step_view.StageSnapshot) -> str:
    """Which query heads read which K/V head, and the bytes measured vs the same model with full MHA."""
    groups = "; ".join(f"kv {kv} ← q {', '.join(map(str, qs))}"
                       for kv, qs in step_view.group_mapping(info.n_head, info.n_kv_heads))
    gqa = memory.kv_config_from_info(info)
    mha_bytes = memory.kv_bytes(dataclasses.replace(gqa, n_kv_heads=info.n_head), snap.cache_len)
    return (f"kv_head = q_head // {info.n_head // info.n_kv_heads}: {groups}. Cache measured from the real tensors: "
            f"{snap.cache_bytes:,} B (calculator: {memory.kv_bytes(gqa, snap.cache_len):,} B); with full MHA "
            f"({info.n_head} K/V heads) the same model would hold {mha_bytes:,} B, "
            f"{mha_bytes / max(snap.cache_bytes, 1):.0f}x more.")


def _uncached_ms(snap: step_view.StageSnapshot) -> str:
    if snap.at != snap.latest:
        return "(time measured for the newest step only)"
    return f"{engine.check_without_cache().uncached_ms:.1f} ms"


def _show_head(layer: int, head: int) -> None:
    """(Button callback, before the pickers are drawn.) Point the stage at this layer and query head."""
    st.session_state["step_layer"], st.session_state["step_head"] = layer, head


def _choice(row, label: str, n: int, key: str, prefix: str) -> int:
    """Layer / head picker: buttons for a few options (one click on a projector), a select box for many."""
    row.markdown(f"**{label}**")
    if n <= 8:
        return row.segmented_control(label, range(n), default=0, key=key, format_func=lambda i: f"{prefix}{i}",
                                     bind="query-params", label_visibility="collapsed") or 0
    return row.selectbox(label, range(n), key=key, bind="query-params", label_visibility="collapsed", width=90)


@st.fragment(run_every=PLAY_DELAY_S if st.session_state.get(PLAY_LEFT, 0) > 0 else None)
def stage() -> None:
    playing = st.session_state.get(PLAY_LEFT, 0) > 0
    _apply_link()
    _act(_controls())
    if playing != (st.session_state.get(PLAY_LEFT, 0) > 0):  # started or finished: switch run_every on/off
        st.rerun()
    if not engine.started:
        st.info(f"Press **Prefill** (or the P key) to feed the prompt. Model: {info.label}.")
        return
    pick = st.container(horizontal=True, vertical_alignment="center")
    layer = _choice(pick, "Layer", info.n_layer, "step_layer", "L")
    head = _choice(pick, "Query head", info.n_head, "step_head", "H")
    views = [v for v in VIEWS if v != "gqa" or info.n_kv_heads < info.n_head]  # GQA view for GQA models only
    view = pick.segmented_control("View", views, default="one", key="step_view", format_func=VIEWS.get,
                                  label_visibility="collapsed") or "one"
    latest = len(engine.records) - 1
    at = latest if playing else min(st.session_state.get("step_history", latest), latest)
    snap = step_view.build_snapshot(engine.records, engine.prompt_len, info.n_layer, info.n_head, info.n_kv_heads,
                                    layer, head, at=at, all_layers=view == "race")
    copy = snap.copy
    if copy and copy.best_weight >= step_view.COPYING_WEIGHT and (copy.best_layer, copy.best_head) != (layer, head):
        # in the picker row, beside what it changes: above the fold on a 720-px projector
        pick.button(f"Show the copying head (L{copy.best_layer} H{copy.best_head})", key="step_show_copy",
                    on_click=_show_head, args=(copy.best_layer, copy.best_head), icon=":material/content_copy:",
                    help=f"layer {copy.best_layer}, query head {copy.best_head}: the head that reads the row after "
                         "the newest token's previous occurrence")
    _draw(snap, view)
    if latest and not playing:
        st.slider("History: scrub back through the steps taken (redraws what was recorded; the cache is not "
                  "changed)", 0, latest, value=at, key="step_history", format="step %d")


stage()
if not present:
    with st.expander("What you are seeing", expanded=False):
        st.markdown(
            "At every layer each token gets a **query**, a **key** and a **value** vector. A new token's query is "
            "compared with the keys of *all* earlier tokens, and it averages their values. Those earlier keys and "
            "values never change, so the model stores them: the **KV cache**.\n\n"
            "1. **Prefill** feeds the whole prompt in one pass: every layer's cache gets one row per prompt token.\n"
            "2. Each **Next token** feeds only the newest token: every layer computes *one* new K row and *one* "
            "new V row (outlined), appends them, and the new query attends over all cached rows: the bars on the "
            "right sit beside the rows they weigh.\n"
            "3. The token the model just chose (dashed chip) is not in the cache yet: the next step feeds it.\n"
            "4. **Back** crops the cache by one row, exactly as real engines roll back. The history slider only "
            "redraws an earlier step from what was recorded; it changes nothing.\n\n"
            "5. When the newest token occurred before, the line under the figure names the head that reads the "
            "row *after* that earlier occurrence (an induction head copying; try the *Repeat a pattern* preset).\n\n"
            "Decoding is a seeded draw by default (the same seed and prompt give the same text): greedy decoding, "
            "one toggle away in *Prompt*, always takes the most likely token, and a small model soon loops."
        )
    with st.expander("Without the cache: recompute everything, get the same answer", key="step_exp_uncached",
                     on_change="rerun") as uncached:
        if uncached.open and engine.started:
            check = engine.check_without_cache()
            st.markdown(
                f"An uncached step feeds all **{check.recomputed_rows}** tokens again and recomputes every K and V "
                f"row in all {info.n_layer} layers ({check.uncached_ms:.1f} ms here), just to get the last "
                f"position's logits.\n\n- max |logit difference| cached vs recomputed: "
                f"**{check.max_abs_logit_diff:.1e}**\n- max |K difference| {check.max_abs_key_diff:.1e}, "
                f"max |V difference| {check.max_abs_value_diff:.1e}\n- same next token: "
                f"**{'yes' if check.same_next_token else 'no'}**\n\nThe differences are float32 rounding "
                "(summation order), not a different result: caching changes speed, not answers."
            )
            steps, with_cache, without_cache = step_view.cumulative_series(engine.records, info.n_layer, info.n_head)
            st.plotly_chart(figs.growth_chart(steps, with_cache, without_cache, "query-key dot products"),
                            config=export_config("kv_cache_stage"))
