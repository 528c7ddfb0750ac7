"""The Streamlit app's pages and helpers: UI only; every result comes from `retrieval` and `eval`."""
