/* The join page on a phone, where Streamlit offers no setting: the room code box types capitals and is never
   autocorrected or autocompleted (a code is six letters and digits, not a word), and each choice button says to a
   screen reader whether it is this phone's vote (aria-pressed), not by colour and icon alone. Streamlit redraws the
   buttons on every run, so an observer marks them again whenever the page changes. */
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
