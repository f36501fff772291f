"""Test support: what several test modules share. Test modules import from here, never from each other (nor from
conftest.py, which holds the fixtures: the bundled model; for browser tests a fresh server, a Chromium tab or
browser, a busy core). tests/test_test_harness.py checks it.

  tiers.py          the test tiers (pure, model, app, browser, slow) and the counts conftest's tier check reads
  repo.py           the repository root (REPO), computed once; nothing else imported (a pure test reads files)
  pages.py          the repository root (REPO, from repo.py) and the shared folder beside it (SHARED,
                    TINY_SHAKESPEARE); the one AppTest builder: a page file or a function, by itself or through
                    app.py's router, in a language, with a link's query and a session's state: app_test(...) unrun,
                    open_page(...) run
  server.py         free ports; the one launcher of a streamlit server (`streamlit run app.py`, or a deployment's
                    start command as written, with its environment)
  browser.py        Chromium launched, a tab, a page opened in a language with a query and waited for until drawn
                    (open_tab, goto_drawn), a fresh server, a busy core, what a test reads off a browser page
  axe.py            axe-core scans of a tab and the rule they are judged by (serious, critical, heading-order;
                    the allow-list of Streamlit's own faults)
  greedy.py         greedy generation with and without the cache (the tests' oracle) and the prompts it runs on
  i18n_text.py      English left on a Chinese page: page_texts, english_leftovers, ALLOWED
  markdown_text.py  what a markdown string shows a reader
  models.py         a folder holding the bundled model's files; published config.json texts
  library.py        figures only tests need, computed through the functions the app calls
  fresh_imports.py  what sets of modules load when imported into a fresh interpreter: one interpreter, a fork a set
"""
