"""The app's pages, each a script `st.navigation` runs (app.py): Lookup, Compare settings, Traces, Export."""
