/* The keyboard queue's common part, shared by the stage (stage_keys.js) and the lesson (lesson_keys.js); each page
   draws it first, in the same <script> as its own file. Streamlit's own shortcuts are lost when a key is pressed
   while a rerun redraws its button (a busy laptop, a class), so both pages take their keys themselves, in the
   capture phase, and queue them: one press is clicked on its button only after the page has acted on the one
   before, so fast presses are all taken, in order. When a press counts as acted on is each page's own rule (the
   stage: its count of clicks and its records; the lesson: its count of runs); the rest is here, once:

     window.__kvvizKeys.running()          Streamlit's "running" indicator is up (a script run is going)
     .keepsKeys(el)                        the focused element keeps its own keys: a text box, a select, a
                                           combobox, a dialog, a popover
     .plain(e)                             a key event with a key name and no Ctrl, Meta or Alt
     .latest(selector, name)               the largest data-<name> among the elements `selector` finds, or null:
                                           what a page's hidden state element says (the newest run's, while a
                                           redraw briefly shows two)
     .badge(id, text)                      the "busy: N key presses queued" badge, fixed at the top right, white
                                           on #c2410c (5.18:1, WCAG AA for its 15-px text), role=status so a
                                           screen reader says it; text null removes it
     .claim(e)                             the press is the page's: no other handler sees it, focus leaves the
                                           element that had it (a button clicked with the mouse keeps no key)
     .enqueue(queue, item, e, pump)        queue.queue gets item and the page's pump runs; a held key's repeats
                                           stop queueing past 8 waiting

   Installed once per browser tab (window.__kvvizKeys); each page's file installs its own listener once too. */
(() => {
  if (window.__kvvizKeys) return;
  const TEXT_TYPES = ["text", "number", "search", "email", "password", "url", "tel", "date", "time"];
  const running = () => !!document.querySelector('[data-testid="stStatusWidget"]');
  const textBox = (el) => el && (el.isContentEditable || el.tagName === "TEXTAREA" || el.tagName === "SELECT" ||
    (el.tagName === "INPUT" && (TEXT_TYPES.includes(el.type) || el.getAttribute("role") === "combobox")));
  const own = (el) => el && el.closest && el.closest('[role="dialog"], [data-testid="stPopoverBody"], [data-baseweb="popover"]');
  const keepsKeys = (el) => textBox(el) || own(el);
  const plain = (e) => typeof e.key === "string" && !e.ctrlKey && !e.metaKey && !e.altKey;
  const latest = (selector, name) => {
    const all = [...document.querySelectorAll(selector)].map(e => Number(e.dataset[name]));
    return all.length ? Math.max(...all) : null;
  };
  const badge = (id, text) => {
    let b = document.getElementById(id);
    if (text === null) { if (b) b.remove(); return; }
    if (!b) {
      b = document.createElement("div");
      b.id = id;
      b.setAttribute("role", "status");
      b.style.cssText = "position:fixed;top:8px;right:64px;z-index:1000000;padding:4px 10px;border-radius:6px;" +
        "background:#c2410c;color:#fff;font:600 15px sans-serif;box-shadow:0 1px 4px rgba(0,0,0,.3)";
      document.body.appendChild(b);
    }
    b.replaceChildren(document.createTextNode(text));
  };
  const claim = (e) => {
    e.preventDefault();
    e.stopImmediatePropagation();
    const el = document.activeElement;
    if (el && el !== document.body && el.blur) el.blur();
  };
  const enqueue = (queue, item, e, pump) => {
    if (e.repeat && queue.queue.length > 8) return;
    queue.queue.push(item);
    pump();
  };
  window.__kvvizKeys = {running, keepsKeys, plain, latest, badge, claim, enqueue};
})();
