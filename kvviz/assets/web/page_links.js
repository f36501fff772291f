/* Links to the app's own pages open in a new tab as a browser's links do. Streamlit writes each page link relative
   to the current page ("lesson?lang=en"), and the default page's as its query alone ("?lang=en"), which a new tab
   resolves to the page it was opened from (For teachers' "Start here" row opened For teachers again): that one is
   written "./?lang=en", the app's root from any page, under any path prefix. Streamlit also handles a click on a
   page link itself, ignoring Ctrl, Cmd and Shift, so a teacher's Ctrl+click replaced the plan's tab: a click with
   one of them is left to the browser (which opens the new tab or window), before Streamlit's handler sees it.
   Installed once per browser tab; an observer rewrites the links each run draws. */
if (!window.__kvvizPageLinks) {
  window.__kvvizPageLinks = true;
  const LINKS = '[data-testid="stPageLink"] a, [data-testid="stSidebarNav"] a, .st-key-kvviz_nav a';
  const root = () => {
    for (const a of document.querySelectorAll(LINKS)) {
      const href = a.getAttribute("href");
      if (href !== null && (href === "" || href.startsWith("?"))) a.setAttribute("href", "./" + href);
    }
  };
  root();
  new MutationObserver(root).observe(document.body, {childList: true, subtree: true, attributes: true,
                                                     attributeFilter: ["href"]});
  window.addEventListener("click", (event) => {
    if (!(event.ctrlKey || event.metaKey || event.shiftKey) || event.button !== 0) return;
    if (event.target instanceof Element && event.target.closest(LINKS)) event.stopPropagation();
  }, {capture: true});
}
