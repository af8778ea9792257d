"""How an episode's event columns are held: little memory, the same Python values.

Ten million events as Python objects are gigabytes; as columns they are tens of bytes
each. A column is one of:

* :class:`Same`: one value repeated (an episode's id, study, problem; a field a person's
  events leave empty);
* :class:`Numbers`: numbers in a numpy array, with a mask of the missing ones;
* :class:`Coded`: small integer codes into the column's distinct values (phases,
  actions, frame hashes, flags), the values interned once per load.

Each reads back as the Python values it was made of (iteration, indexing), so the
metrics need not know which they have; :func:`compact` picks one for a field's values.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from records import schema


def compact(kind: str, values: Sequence[Any], shared: dict[Any, Any] | None = None) -> Sequence[Any]:
    """One event field's values (schema type ``kind``) in little memory, read back as the
    same Python values: one value repeated as :class:`Same`, numbers as :class:`Numbers`
    (a numpy array), anything else as :class:`Coded` (small codes into the distinct
    values, themselves interned in ``shared``).

    >>> column = compact("text", ["up", "up", None, "click 1 2"])
    >>> list(column), column[3], len(column.values)
    (['up', 'up', None, 'click 1 2'], 'click 1 2', 3)
    >>> list(compact("integer", [0, 1, None]))
    [0, 1, None]
    """
    shared = {} if shared is None else shared
    first = values[0] if len(values) else None
    if all(v == first and type(v) is type(first) for v in values):
        return Same(shared.setdefault(first, first) if isinstance(first, str) else first,
                    len(values))
    if kind in (schema.INT, schema.FLOAT):
        return Numbers.of(values, np.int64 if kind == schema.INT else np.float64)
    return Coded.of(values, shared)


class Numbers(Sequence):
    """A column of numbers held as a numpy array (and a mask of the missing ones), read
    back as Python numbers and ``None``."""

    __slots__ = ("array", "missing")

    def __init__(self, array: np.ndarray, missing: np.ndarray | None = None) -> None:
        self.array, self.missing = array, missing

    @classmethod
    def of(cls, values: Sequence[Any], dtype: Any) -> Numbers:
        missing = np.fromiter((v is None for v in values), bool, len(values))
        if not missing.any():
            return cls(np.asarray(values, dtype=dtype))
        filled = [0 if v is None else v for v in values]
        return cls(np.asarray(filled, dtype=dtype), missing)

    def __len__(self) -> int:
        return len(self.array)

    def __iter__(self) -> Iterator[Any]:
        if self.missing is None:
            return iter(self.array.tolist())
        return (None if gone else v for v, gone in zip(self.array.tolist(),
                                                       self.missing.tolist(), strict=True))

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return list(self)[index]
        if self.missing is not None and self.missing[index]:
            return None
        return self.array[index].item()


class Coded(Sequence):
    """A column of texts or flags held as small integer codes into its distinct values
    (an episode's phases, actions, frame hashes ...), read back as the values."""

    __slots__ = ("codes", "values")

    def __init__(self, codes: np.ndarray, values: list[Any]) -> None:
        self.codes, self.values = codes, values

    @classmethod
    def of(cls, values: Sequence[Any], shared: dict[Any, Any]) -> Coded:
        index: dict[Any, int] = {}
        codes = [index.setdefault(v, len(index)) for v in values]
        dtype = np.uint8 if len(index) <= 256 else np.uint16 if len(index) <= 65536 else np.uint32
        return cls(np.asarray(codes, dtype=dtype), [shared.setdefault(v, v) for v in index])

    def __len__(self) -> int:
        return len(self.codes)

    def __iter__(self) -> Iterator[Any]:
        return map(self.values.__getitem__, self.codes.tolist())

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return list(self)[index]
        return self.values[self.codes[index]]


class Same:
    """A column holding one value ``length`` times (an episode's id, study, problem, and
    the fields a person's events leave empty), in the room of one."""

    __slots__ = ("value", "length")

    def __init__(self, value: Any, length: int) -> None:
        self.value, self.length = value, length

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Iterator[Any]:
        return itertools.repeat(self.value, self.length)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self.value] * len(range(*index.indices(self.length)))
        if not -self.length <= index < self.length:
            raise IndexError("column index out of range")
        return self.value
