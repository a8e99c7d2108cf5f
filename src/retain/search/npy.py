"""An ``.npy`` file's array read from its header without numpy: what the static model's
files hold (``search/static_model.py``), read the first time a model loads, and the
vector codes of a large store (``storage/sqlite_ann.py``), read by its searches."""

from __future__ import annotations

import mmap
import re
import sys
from array import array
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class NpyArray:
    """An ``.npy`` file's array, read from its header without numpy: its values' bytes."""

    descr: str
    fortran: bool
    shape: tuple[int, ...]
    values: memoryview

    HEADER = re.compile(
        r"\{'descr': ('[<>|=]?[a-z]\d+'|\[[^\]]*\]), 'fortran_order': (True|False), "
        r"'shape': \(((?:\d+, ?)*\d*)\), \}[ ]*\n\Z"
    )

    @classmethod
    def read(
        cls, data: mmap.mmap | bytes, kinds: tuple[str, ...], dims: int, width: int = 0
    ) -> NpyArray:
        """The array in ``data``, refused (``ValueError``) unless its type is one of
        ``kinds`` (as its header writes it: ``<f4``, or a record's list of fields) of
        ``dims`` dimensions; ``width``: a record's bytes (a plain type's are in its name)."""
        if bytes(data[:6]) != b"\x93NUMPY" or len(data) < 10:
            raise ValueError("not an .npy file")
        version = (data[6], data[7])
        if version not in ((1, 0), (2, 0)):
            raise ValueError(f"an .npy file of format version {version}")
        size_bytes = 2 if version == (1, 0) else 4
        size = int.from_bytes(data[8 : 8 + size_bytes], "little")
        start = 8 + size_bytes + size
        found = cls.HEADER.match(bytes(data[8 + size_bytes : start]).decode("latin-1"))
        if found is None:
            raise ValueError("an .npy header that is not numpy's")
        descr, fortran = found.group(1).strip("'"), found.group(2) == "True"
        if descr not in kinds:
            raise ValueError(f"an array of {descr}, not {' or '.join(kinds)}")
        shape = tuple(int(n) for n in found.group(3).replace(" ", "").split(",") if n)
        if len(shape) != dims:
            raise ValueError(f"an array of shape {shape}")
        count = 1
        for n in shape:
            count *= n
        width = width or int(descr[2:])
        if len(data) < start + count * width:
            raise ValueError(f"an array of shape {shape} in {len(data) - start} bytes")
        return cls(descr, fortran, shape, memoryview(data)[start : start + count * width])

    def floats(self) -> array[float]:
        values = array("f" if self.descr == "<f4" else "d")
        values.frombytes(self.values)
        if sys.byteorder != "little":
            values.byteswap()
        return values


def mapped(path: Path) -> mmap.mmap | bytes:
    """A file's bytes, mapped read-only (an empty file, which cannot be mapped, read)."""
    with path.open("rb") as handle:
        try:
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):
            return handle.read()
