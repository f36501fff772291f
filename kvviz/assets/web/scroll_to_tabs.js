/* A link that names a tab of Memory budget (For teachers' plan opens "What fits" for its question) lands on that
   tab: the model's inputs fill a 1280x720 screen, so the tab and its answer (the context where the cache outweighs
   the weights) would sit below the fold. pages/memory_budget.py draws this only on the page's first run after it
   is opened (a click on a tab is not a link). It tries again every 200 ms until the tab bar is at the top (while
   the tab's content is still being drawn, the page is too short to scroll that far), for 15 s at most, and never
   after the reader's own wheel, key, touch or click (scrolling under an open picker closes its list). */
(() => {
  const t0 = Date.now();
  let theirs = false;
  for (const kind of ["wheel", "keydown", "pointerdown", "touchstart"]) {
    window.addEventListener(kind, () => { theirs = true; }, {capture: true, once: true, passive: true});
  }
  const go = () => {
    if (theirs) return;
    const tabs = document.querySelector(".st-key-mem_tab");
    if (tabs) {
      tabs.scrollIntoView({block: "start"});
      if (Math.abs(tabs.getBoundingClientRect().top) < 8) return;
    }
    if (Date.now() - t0 < 15000) setTimeout(go, 200);
  };
  setTimeout(go, 150);
})();
