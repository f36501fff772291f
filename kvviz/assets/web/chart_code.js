/* Loads Streamlit's chart and table code into this tab before the first chart is drawn (kvviz.ui.chart_code says
   why: a fresh projector tab's first Reveal otherwise waits for plotly.js). Each file is imported by the URL
   Streamlit's own bundle imports it by (beside its index script), so the browser keeps one module for both and the
   chart, when it comes, only draws. Once per tab, when the page is idle; a file that fails to load is left to
   Streamlit, which loads it when it needs it, as before.
   KVVIZ: {files: ["PlotlyChart.<hash>.js", ...]} (kvviz.ui.chart_code.chunk_files). */
(() => {
  const main = document.querySelector('script[type="module"][src*="static/js/index."]');
  if (!main || window.kvvizChartCode) return;
  window.kvvizChartCode = true;
  const load = () => {
    for (const file of KVVIZ.files) import(new URL(file, main.src).href).catch(() => {});
  };
  if ("requestIdleCallback" in window) requestIdleCallback(load, { timeout: 1000 });
  else setTimeout(load, 300);
})();
