"""Pure figure builders: plain data in -> plotly go.Figure out. No Streamlit, no torch.

One module per page: step (step-through), ops (count the work), memory (memory budget), bench (speed-up),
internals (cache internals).
"""
