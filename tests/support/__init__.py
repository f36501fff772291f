"""Test support: what several test modules share. Test modules import from here, never from each other (nor from
conftest.py, which holds the fixtures: the bundled model, a fresh server and a Chromium tab for browser tests).

  pages.py          the repository root; open a page (AppTest) by itself or through app.py's router, in a
                    language, with a link's query: app_test(...) unrun, open_page(...) run
  server.py         free ports; the one `streamlit run app.py` launcher
  browser.py        Chromium and its arguments, a fresh server, a busy core, what a test reads off a browser page
  greedy.py         greedy generation with and without the cache (the tests' oracle) and the prompts it runs on
  i18n_text.py      English left on a Chinese page: page_texts, english_leftovers, ALLOWED
  markdown_text.py  what a markdown string shows a reader
  models.py         a folder holding the bundled model's files; published config.json texts
  library.py        figures only tests need, computed through the functions the app calls
"""
