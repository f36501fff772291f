/* A page's own state written into the address bar rewrites the browser-history entry instead of adding one.
   Streamlit pushes a history entry for every change of the query a script makes. The stage writes its state at
   every step (a reload replays it) and the lesson its room score at every Y/N mark: as entries of their own, Back
   replayed the stage one step earlier, or stayed on the marked step. So a push that stays on the same page and
   changes only the page's in-place keys (the routes table's Route.in_place: KVVIZ.inPlace, {page: [keys]})
   replaces the current entry; Back then leaves the page, or goes to the step before. Any other push (another page,
   a lesson step, the language) stays an entry of its own. Installed once per browser tab, on every page. */
if (!window.__kvvizHistoryEntries) {
  window.__kvvizHistoryEntries = true;
  const IN_PLACE = KVVIZ.inPlace;
  const page = (url) => url.pathname.replace(/\/+$/, "").split("/").pop();
  const changedKeys = (before, after) => {
    const keys = new Set([...before.searchParams.keys(), ...after.searchParams.keys()]);
    return [...keys].filter(k => before.searchParams.getAll(k).join("\u0000") !== after.searchParams.getAll(k).join("\u0000"));
  };
  const push = history.pushState.bind(history);
  history.pushState = (state, title, url) => {
    let inPlace = false;
    try {
      const before = new URL(location.href), after = new URL(url, location.href);
      const keys = IN_PLACE[page(after)] || [];
      inPlace = before.pathname === after.pathname && changedKeys(before, after).every(k => keys.includes(k));
    } catch (err) { inPlace = false; }
    return inPlace ? history.replaceState(state, title, url) : push(state, title, url);
  };
}
