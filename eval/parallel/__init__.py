"""Fanning a run out over local worker processes or a Dask cluster, and bringing its lookups back.

- `pool`: which workers (`--workers N|auto`, `--dask ADDRESS`);
- `shards`: a run's questions split in shards, and what one worker does with one;
- `backends`: the local process pool and the Dask client that run the shards;
- `fanout`: a whole run or sweep over them, stored like a serial run (eval.lifecycle);
- `collect`: a Dask run's Parquet trace parts loaded into the trace file;
- `ticks`: the progress of local workers, one byte per finished question.
"""
