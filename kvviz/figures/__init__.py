"""Pure figure builders: plain data in -> plotly go.Figure out. No Streamlit, no torch.

One module per page: step (step-through), ops (count the work), memory (memory budget), bench (speed-up),
internals (cache internals).
"""

# Plotly's own mode bar (client-side, works offline): a camera button saves the figure as a PNG at 3x scale,
# sharp enough for a slide. Pages pass it as st.plotly_chart(fig, config=PLOT_CONFIG).
PLOT_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 3}}
