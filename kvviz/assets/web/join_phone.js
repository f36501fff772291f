/* The join page on a phone, where Streamlit offers no setting: the room code box types capitals and is never
   autocorrected or autocompleted (a code is six letters and digits, not a word), and each choice button says to a
   screen reader whether it is this phone's vote (aria-pressed), not by colour and icon alone. Streamlit redraws the
   buttons on every run, so an observer marks them again whenever the page changes.
   A tap is never lost without a word: the page draws, each run, which run of which session it is and how many taps
   its session acted on (.kvviz-join-state data-run, data-taps). A tap remembers both. The next run drawn after it
   either counts the tap (done) or does not: the tap went to a server that is gone (a replica stopped, and the phone
   reconnected to another: a new session). No run drawn within LOST_AFTER_MS says the same. Either way one line at the
   foot of the screen says so (data-lost, in the page's language). */
(() => {
  const mark = () => {
    for (const box of document.querySelectorAll(".st-key-join_form input[type=text], [data-testid=stForm] input[type=text]")) {
      box.setAttribute("autocapitalize", "characters");
      box.setAttribute("autocorrect", "off");
      box.setAttribute("autocomplete", "off");
      box.setAttribute("spellcheck", "false");
    }
    for (const button of document.querySelectorAll("[class*='st-key-join_choice_'] button")) {
      const pressed = button.getAttribute("data-testid") === "stBaseButton-primary" ? "true" : "false";
      if (button.getAttribute("aria-pressed") !== pressed) button.setAttribute("aria-pressed", pressed);
    }
  };
  mark();
  if (!window.__kvvizJoinObserver) {
    window.__kvvizJoinObserver = new MutationObserver(mark);
    window.__kvvizJoinObserver.observe(document.body, {childList: true, subtree: true, attributes: true,
                                                       attributeFilter: ["data-testid"]});
  }
})();
if (!window.__kvvizJoinTaps) {
  window.__kvvizJoinTaps = true;
  let pending = null;  // {run, taps: what the page showed when tapped, at: the tap's time in ms}
  const drawn = () => document.querySelector(".kvviz-join-state");
  const notice = (text) => {
    let line = document.getElementById("kvviz-join-lost");
    if (!line) {
      line = document.createElement("div");
      line.id = "kvviz-join-lost";
      line.setAttribute("role", "alert");
      line.style.cssText = "position:fixed;left:0;right:0;bottom:0;z-index:1000;padding:14px 16px;"
        + "background:#fff4e6;color:#7a2e00;border-top:3px solid #e8590c;font-size:16px";
      document.body.appendChild(line);
    }
    line.textContent = text;
    line.hidden = !text;
  };
  const LOST_AFTER_MS = 10000;
  document.addEventListener("click", (event) => {
    const button = event.target instanceof Element && event.target.closest("[class*='st-key-join_choice_'] button");
    if (!button || button.disabled) return;
    const state = drawn();
    pending = {run: state ? state.dataset.run : "", taps: state ? Number(state.dataset.taps) : 0, at: Date.now()};
    notice("");
  }, {capture: true});
  setInterval(() => {
    const state = drawn();
    if (!pending || !state) return;
    if (state.dataset.run !== pending.run) {
      if (state.dataset.run.split(":")[0] === pending.run.split(":")[0] && Number(state.dataset.taps) > pending.taps) {
        pending = null;  // this session acted on it
        return;
      }
      notice(state.dataset.lost);
      pending = null;
    } else if (Date.now() - pending.at > LOST_AFTER_MS) {
      notice(state.dataset.lost);
      pending = null;
    }
  }, 300);
}
