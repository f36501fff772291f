/* The stage's keys (pages/step_through.py): P = Prefill, Right arrow or Space = Next token, Left arrow = Back,
   Esc = stop Play at the frame on screen. Drawn after keyboard_queue.js, in the same <script>.

   The keys act on the stage whatever has focus (a sidebar click included), except a text box, the history slider
   (its arrows scrub it, nothing else) and popovers / dialogs, whose own keys stay theirs. This listener runs in the
   capture phase, before Streamlit's own shortcuts, which skip a focused <input> and so go dead after a sidebar
   click. Every stage key is queued: a press is clicked on the stage's own button (found by its key,
   .st-key-step_btn_*, never by its label, which is translated) only when the previous one was acted on (the stage
   echoes a count of the clicks it acted on in its hidden .kvviz-stage-state element, with the records on screen,
   whether Play runs, and the badge's words in this run's language), so fast presses on a busy machine are all
   taken in order, never merged or dropped, and a badge says how many wait.

   Esc clears the queue and stops Play at the frame on screen: the server may have drawn a step or two the browser
   has not shown yet, and those are taken back; a frame on screen the server's Stop rolled back is taken again (the
   draw is seeded by seed and prefix: the same token); a Stop click lost in a redraw (two whole frames drawn after
   it, nothing acted on) is sent again. Stop is done when the page shows Play stopped and has acted on every Stop
   sent (or has sat idle a second: a lost one). Each correction is done when the page shows the number of records
   it aims at, not when the count of clicks moves, which a second Stop (sent while the browser was only drawing
   frames behind the server) moves as well: the next correction would be clicked into a run that had not taken the
   previous one, and Streamlit merges the two clicks (one Back lost, a queued Play started a step early). A click on
   a stage button while the queue works (Play clicked while Esc's Stop or its corrections still run) joins the
   queue behind them instead of being undone by them: the corrections go to the front of the queue. A press the
   stage never acts on (a click lost in a redraw: the page idle for 5 s, the count unchanged) is given up, so one
   lost click never holds the queue for long; leaving the stage empties it.

   Streamlit's own Left/Right shortcuts listen on document (bubbling): a press on the focused history slider is
   handled by the slider inside the app's root, and a body listener keeps it from going further. (The stage's state
   in the address bar rewrites its history entry: history_entries.js, on every page.)

   Installed once per browser tab (window.__kvvizStage: its queue, busy flag, presses taken and the last Stop's
   readings, which the browser tests read); inert off the stage. */
(() => {
  if (window.__kvvizStage) return;
  const K = window.__kvvizKeys;
  const S = window.__kvvizStage = {queue: [], busy: false, taken: 0};
  const BUTTONS = {p: "step_btn_prefill", P: "step_btn_prefill", ArrowRight: "step_btn_next", " ": "step_btn_next",
                   ArrowLeft: "step_btn_back"};
  const SLIDER_KEYS = ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"];
  const num = (name) => K.latest(".kvviz-stage-state", name);
  const inSlider = (el) => !!(el && el.closest && el.closest('[data-testid="stSlider"], [role="slider"]'));
  const badge = () => {
    const n = S.queue.length;
    const state = n ? document.querySelector(".kvviz-stage-state") : null;
    if (state) S.words = [state.dataset.busyOne, state.dataset.busyMany];
    K.badge("kvviz-stage-busy", n ? (S.words || ["", ""])[n === 1 ? 0 : 1].replace("{n}", n) : null);
  };
  const pump = () => {
    if (S.busy) return;
    const item = S.queue.shift();
    badge();
    if (!item) return;
    const key = item.key;
    const button = document.querySelector(".st-key-" + key + " button");
    if (!button || button.disabled) { S.queue = []; badge(); return; }
    S.busy = true;
    const before = num("acted");
    const t0 = Date.now();
    let frames = num("records"), idleSince = null, clicks = 1;
    button.click();
    S.taken += 1;
    const wait = () => {
      const now = num("acted");
      if (key === "step_btn_stop" && now === before && num("playing") === 1 && num("records") >= frames + 2) {
        const again = document.querySelector(".st-key-" + key + " button");
        if (again) { again.click(); clicks += 1; }
        frames = num("records");
      }
      const idle = !K.running();
      idleSince = idle ? (idleSince === null ? Date.now() : idleSince) : null;
      const idleFor = idle ? Date.now() - idleSince : 0;
      let done, moved;
      if (item.records !== undefined) {
        moved = num("records") === item.records;
        done = moved && idle;
      } else if (key === "step_btn_stop") {
        moved = now !== null && now !== before;
        done = idle && num("playing") !== 1 && ((moved && now - before >= clicks) || idleFor > 1000);
      } else {
        moved = now !== null && now !== before;
        done = moved && idle;
      }
      if (done || Date.now() - t0 > 60000 || (!moved && idleFor > 5000) ||
          !document.querySelector(".st-key-step_btn_next")) {
        S.busy = false;
        if (item.then) item.then();
        pump();
        return;
      }
      setTimeout(wait, 40);
    };
    setTimeout(wait, 40);
  };
  const stop = () => {
    S.queue = [];
    const playing = num("playing") === 1, shown = num("records");
    S.queue.push({key: "step_btn_stop", then: () => {
      const now = num("records");
      S.lastStop = {playing: playing, shown: shown, now: now};
      if (playing && shown !== null && now !== null) {
        const fix = [];
        for (let i = now; i > Math.max(shown, 1); i--) fix.push({key: "step_btn_back", records: i - 1});
        for (let i = now; i < shown; i++) fix.push({key: "step_btn_next", records: i + 1});
        S.queue.unshift(...fix);
      }
    }});
    pump();
  };
  document.body.addEventListener("keydown", (e) => {
    if (SLIDER_KEYS.includes(e.key) && inSlider(e.target)) e.stopPropagation();
  });
  window.addEventListener("click", (e) => {
    if (!e.isTrusted || (!S.busy && !S.queue.length)) return;
    const holder = e.target.closest && e.target.closest('[class*="st-key-step_btn_"]');
    const key = holder && [...holder.classList].find(c => c.startsWith("st-key-step_btn_"));
    if (!key) return;
    e.preventDefault();
    e.stopImmediatePropagation();
    if (key === "st-key-step_btn_stop") { stop(); return; }
    S.queue.push({key: key.slice(7)});
    pump();
  }, true);
  window.addEventListener("keydown", (e) => {
    if (!K.plain(e)) return;
    const key = BUTTONS[e.key];
    if (!key && e.key !== "Escape") return;
    if (!document.querySelector(".st-key-step_btn_next")) return;
    const el = document.activeElement;
    if (K.keepsKeys(el) || inSlider(el)) return;
    K.claim(e);
    if (e.key === "Escape") { stop(); return; }
    K.enqueue(S, {key: key}, e, pump);
  }, true);
})();
