/* <html lang> follows the interface language. Streamlit's index.html says lang="en" whatever the page's language
   (streamlit#15726): a screen reader would read a Chinese page with English rules, and WCAG 3.1.1 asks for the
   page's own language. Drawn once per run; it runs again whenever the language changes (its data changes).
   KVVIZ: {lang}. */
document.documentElement.lang = KVVIZ.lang;
