/* The lesson's keys (pages/lesson.py): V = reveal, H = hint, Y / N = the room was right / wrong (class mode),
   Left / Right = the step before / after. Drawn after keyboard_queue.js, in the same <script>.

   They are queued in the browser like the stage's: Streamlit's own shortcut is lost when it is pressed while a
   rerun redraws its button (a busy laptop: V's rerun is still drawing when the teacher presses Y). This listener
   (capture phase, before Streamlit's shortcuts) queues every lesson key and clicks the key's button only when no
   run is going, once the button is on the page, and the next press only after the page has run again for this one
   (.kvviz-lesson-state counts the runs; the page writes it at the run's end, after the score's URL, and it is
   missing while a run is drawing), so presses are taken in order; a badge says how many wait. A key with no
   button while the page is idle does nothing, queued or not: a queued key whose button is still missing once the
   page has been idle for 2.5 s (a second V after the answer is shown) is dropped, so the keys behind it are not
   held for 20 s (Streamlit shows its running indicator only some way into a run, so a shorter wait would drop a Y
   pressed just after V while V's rerun is still drawing the Y button); one whose button does not come within 20 s
   while the page keeps running is dropped and the badge says so. Text boxes and popovers keep their own keys.

   Installed once per browser tab (window.__kvvizLesson: its queue, busy flag, presses taken and dropped, which the
   browser tests read); inert off the lesson. */
(() => {
  if (window.__kvvizLesson) return;
  const K = window.__kvvizKeys;
  const L = window.__kvvizLesson = {queue: [], busy: false, taken: 0, dropped: 0};
  const BUTTONS = {v: "lesson_reveal_btn_", h: "lesson_hint_btn_", y: "lesson_room_right_", n: "lesson_room_wrong_",
                   ArrowLeft: "lesson_back", ArrowRight: "lesson_next"};
  const runs = () => K.latest(".kvviz-lesson-state", "runs");
  const find = (prefix) => document.querySelector('[class*="st-key-' + prefix + '"] button');
  const badge = (text) => K.badge("kvviz-lesson-busy", text || null);
  const words = () => {
    const state = document.querySelector(".kvviz-lesson-state");
    if (state) L.words = {one: state.dataset.busyOne, many: state.dataset.busyMany, dropped: state.dataset.dropped};
    return L.words || {one: "", many: "", dropped: ""};
  };
  const show = () => {
    const n = L.queue.length;
    badge(n ? words()[n === 1 ? "one" : "many"].replace("{n}", n) : "");
  };
  const pump = () => {
    if (L.busy || !L.queue.length) { if (!L.busy) show(); return; }
    L.busy = true;
    show();
    const item = L.queue[0], t0 = Date.now();
    let idleSince = null;
    const ready = () => {
      const button = find(BUTTONS[item.key]);
      const idle = !K.running();
      idleSince = idle ? (idleSince === null ? Date.now() : idleSince) : null;
      if (idle && (!button || button.disabled) && Date.now() - idleSince > 2500) {
        L.queue.shift();
        L.busy = false;
        pump();
      } else if (idle && button && !button.disabled) {
        L.queue.shift();
        const before = runs();
        button.click();
        L.taken += 1;
        const t1 = Date.now();
        const done = () => {
          const now = runs();
          if ((now !== null && now !== before && !K.running()) || Date.now() - t1 > 60000) { L.busy = false; pump(); return; }
          setTimeout(done, 40);
        };
        setTimeout(done, 40);
      } else if (Date.now() - t0 > 20000) {
        L.queue.shift();
        L.dropped += 1;
        L.busy = false;
        badge(words().dropped);
        setTimeout(pump, 3000);
      } else {
        setTimeout(ready, 60);
      }
    };
    ready();
  };
  window.addEventListener("keydown", (e) => {
    if (!K.plain(e)) return;
    const key = BUTTONS[e.key] ? e.key : BUTTONS[e.key.toLowerCase()] && e.key.length === 1 ? e.key.toLowerCase() : null;
    if (!key) return;
    if (!document.querySelector(".st-key-lesson_next")) return;
    const el = document.activeElement;
    if (K.keepsKeys(el)) return;
    const button = find(BUTTONS[key]);
    if (!K.running() && !L.busy && !L.queue.length && (!button || button.disabled)) return;
    K.claim(e);
    K.enqueue(L, {key: key}, e, pump);
  }, true);
})();
