"""A cache folder's `.npy` files, written a block at a time and hashed as they are written.

`write_array` writes what `np.save` writes (the same header and bytes), but in blocks of `WRITE_BLOCK`,
feeding each block to the XXH3-128 digest the manifest records as it goes (the file is not read back to be
hashed).
An array the build spilled (retrieval/storage/spill.py) is already that file: it is linked (or copied by the
kernel) rather than read back through its map into this process, then hashed a block at a time.
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from retrieval.index.integrity import file_digest
from retrieval.storage.spill import spilled_file

WRITE_BLOCK = 2 * 2**20  # 2 MiB written and hashed at a time


def write_array(path: Path, array: np.ndarray) -> dict[str, Any]:
    """Write `array` as the `.npy` file `path`; its manifest entry (file, dtype, shape, bytes, XXH3-128)."""
    if take_spilled(path, array):
        digest = file_digest(path)
    else:
        digest = _save(path, array if array.flags.c_contiguous else array.copy(order="C"))
    return {"file": path.name, "dtype": array.dtype.str, "shape": list(array.shape), "bytes": path.stat().st_size,
            "xxh3_128": digest}


def _save(path: Path, array: np.ndarray) -> str:
    """`np.save(path, array)` a block at a time; the XXH3-128 of the bytes written."""
    if array.dtype.hasobject or array.dtype.itemsize == 0:  # np.save says why it cannot (no pickles here)
        np.save(path, array, allow_pickle=False)
        return file_digest(path)
    header = io.BytesIO()
    fields = np.lib.format.header_data_from_array_1_0(array)
    try:
        np.lib.format.write_array_header_1_0(header, fields)
    except ValueError:  # a header past 64 KiB: the 2.0 format, as np.save picks it
        header = io.BytesIO()
        np.lib.format.write_array_header_2_0(header, fields)
    digest = xxhash.xxh3_128(header.getvalue())
    data = memoryview(array.reshape(-1).view(np.uint8))
    with path.open("wb") as handle:
        handle.write(header.getvalue())
        for start in range(0, len(data), WRITE_BLOCK):
            block = data[start:start + WRITE_BLOCK]
            digest.update(block)
            handle.write(block)
    return digest.hexdigest()


def take_spilled(path: Path, array: np.ndarray) -> bool:
    """Whether `array`'s spilled file could be made `path` (a hard link, else a kernel-side copy)."""
    source = spilled_file(array)
    if source is None:
        return False
    try:
        os.link(source, path)
    except OSError:
        try:
            shutil.copyfile(source, path)
        except OSError:
            return False
    return True
