"""Arrays as L0, L1 and the index cache hold them: strings as UTF-8 columns, large arrays spilled to disk as they
are made, freed memory handed back to the system. Shared by the packages that build and search an index."""
