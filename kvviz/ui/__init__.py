"""The one Streamlit adapter in kvviz: everything else in kvviz is UI-free. One concern per module, imported by name
(`from kvviz.ui import a11y, models`): a page's imports say which concerns it uses.

- models.py    the cached model and the shared-server policy, the session's model, which sessions are active
- warm.py      the server's warm-up: the bundled model loaded into models' cache before the class needs it
- engines.py   the session's stepping engines: a generation parked per model, replayed when it comes back
- router.py    ensure_router: app.py routes from a fresh server's first run; every private Streamlit read, each
               with its reason
- language.py  each run's language, the sidebar's language switch, <html lang>, Streamlit's own labels translated
- a11y.py      readable text (readable.css, MUTED), charts and text for a screen reader, tables
- links.py     what every link carries (the language, the model); link numbers no widget could take
- sidebar.py   the sidebar: the page links, the model picker, a link's ?model= applied before it
- assets.py    the JavaScript and CSS files under kvviz/assets/web/, drawn by the pages and the modules here
- poll.py      the class poll: the room a teacher hosts, the projector's panel, a phone's vote, cookies
"""
