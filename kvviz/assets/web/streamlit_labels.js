/* Streamlit's own screen-reader labels (aria-label) in the page's language. Streamlit writes them in English
   whatever the page says (the number box's Increment and Decrement, Open, Clear value, the sidebar's, the tables'
   toolbar, "Shortcut P" ...; streamlit#1353 asks for a translated interface): a screen reader read English words
   on a Chinese page. KVVIZ.labels maps each English label to the page's words (drawn from the catalog each run;
   empty in English); KVVIZ.shortcut is the page's "Shortcut {key}". Streamlit redraws its widgets every run and
   may write a label back: an observer puts the page's words back. */
(() => {
  const labels = KVVIZ.labels, shortcut = KVVIZ.shortcut;
  const translate = (el) => {
    const now = el.getAttribute("aria-label");
    if (now === null) return;
    let said = labels[now];
    const key = /^Shortcut (.+)$/.exec(now);
    if (said === undefined && key && shortcut) said = shortcut.replace("{key}", key[1]);
    if (said !== undefined && said !== now) el.setAttribute("aria-label", said);
  };
  const all = () => { for (const el of document.querySelectorAll("[aria-label]")) translate(el); };
  if (window.__kvvizLabels) window.__kvvizLabels.disconnect();
  if (!Object.keys(labels).length && !shortcut) return;
  all();
  window.__kvvizLabels = new MutationObserver(all);
  window.__kvvizLabels.observe(document.body, {childList: true, subtree: true, attributes: true,
                                               attributeFilter: ["aria-label"]});
})();
