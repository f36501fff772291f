"""Pure figure builders: plain data in -> plotly go.Figure out. No Streamlit, no torch.

One module per page: step (step-through), ops (count the work), memory (memory budget), bench (speed-up),
internals (cache internals).
"""



def export_config(filename: str = "kvviz") -> dict:
    """plotly config for st.plotly_chart(config=...): the mode bar's camera button saves a 2x PNG for slides,
    drawn in the browser (works offline); no plotly logo."""
    return {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2, "filename": filename}}
