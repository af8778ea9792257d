"""Accidents of the reference interpreter that real Autumn programs depend on.

Everything here is marked ``# compat:``: it reproduces a behaviour of the C++ reference
interpreter (Autumn.cpp driven by the published harness) that a clean design would not
choose, but that programs, and the published study's data, rely on. Keeping the quirks
in one module keeps the rest of the interpreter plain.

>>> order_of(["leftButton", "rightButton", "upButton", "downButton", "blobs", "gravity"])
['gravity', 'blobs', 'downButton', 'rightButton', 'upButton', 'leftButton']
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

_MASK = (1 << 64) - 1
_M = 0xC6A4A7935BD1E995
_SEED = 0xC70F6907

# compat: libstdc++'s bucket counts as an unordered_map grows one key at a time.
BUCKET_COUNTS = (13, 29, 59, 127, 257, 541, 1109, 2357, 5087, 10273, 20753, 42043)


def _shift(value: int) -> int:
    return value ^ (value >> 47)


@lru_cache(maxsize=8192)  # a program's names, hashed again at every start otherwise
def string_hash(text: str) -> int:
    """libstdc++'s ``std::hash<std::string>`` on 64-bit Linux (a MurmurHash64A variant).

    # compat: it decides the order in which INIT and NEXT expressions run.
    """
    data = text.encode()
    length = len(data)
    h = _SEED ^ ((length * _M) & _MASK)
    full = length - length % 8
    for i in range(0, full, 8):
        word = int.from_bytes(data[i:i + 8], "little")
        word = (_shift((word * _M) & _MASK) * _M) & _MASK
        h = ((h ^ word) * _M) & _MASK
    if length % 8:
        h = ((h ^ int.from_bytes(data[full:], "little")) * _M) & _MASK
    return _shift((_shift(h) * _M) & _MASK)


class HashOrder:
    """The iteration order of a libstdc++ ``unordered_map<std::string, ...>``.

    # compat: the reference keeps its state variables and its globals in such maps and
    # iterates them; the order is fully determined by the names' hashes, the order of
    # insertion and the bucket growth. One singly linked list holds every key: a key
    # whose bucket already holds keys goes just before that bucket's first key, any
    # other key goes to the front; on growth the list is re-inserted front to back.
    """

    __slots__ = ("names", "buckets", "_hashes", "_heads")

    def __init__(self, names: Iterable[str] = ()) -> None:
        self.names: list[str] = []
        self.buckets = 0
        self._hashes: dict[str, int] = {}
        self._heads: dict[int, str] = {}
        """Bucket -> its key that comes first in :attr:`names` (where the next key of
        that bucket goes: a scan of every key for its bucket made a program's start
        quadratic in its names, 55 % of loading one)."""
        for name in names:
            self.insert(name)

    def copy(self) -> HashOrder:
        other = HashOrder()
        other.names, other.buckets = list(self.names), self.buckets
        other._hashes, other._heads = self._hashes, dict(self._heads)
        return other

    def _bucket(self, name: str) -> int:
        h = self._hashes.get(name)
        if h is None:
            h = self._hashes[name] = string_hash(name)
        return h % self.buckets

    def _place(self, name: str) -> None:
        bucket = self._bucket(name)
        head = self._heads.get(bucket)
        self.names.insert(0 if head is None else self.names.index(head), name)
        self._heads[bucket] = name

    def insert(self, name: str) -> None:
        """Add ``name`` if absent (like ``map[name] = value``)."""
        if name in self._hashes and name in self.names:
            return
        count = len(self.names) + 1
        if self.buckets == 0 or count > self.buckets:
            self._grow(count)
        self._place(name)

    def _grow(self, count: int) -> None:
        bigger = next((b for b in BUCKET_COUNTS if b >= count and b > self.buckets), None)
        if bigger is None:
            raise OverflowError("too many names for the modelled hash table")
        self.buckets = bigger
        old, self.names, self._heads = self.names, [], {}
        for name in old:
            self._place(name)

    def erase(self, name: str) -> None:
        """Remove ``name`` (buckets never shrink)."""
        if name not in self.names:
            return
        at = self.names.index(name)
        del self.names[at]
        bucket = self._bucket(name)
        if self._heads.get(bucket) == name:  # the bucket's next key, if any, comes first now
            following = next((n for n in self.names[at:] if self._bucket(n) == bucket), None)
            if following is None:
                del self._heads[bucket]
            else:
                self._heads[bucket] = following


def order_of(names: Iterable[str]) -> list[str]:
    """The iteration order of a fresh map filled with ``names`` in order."""
    return list(HashOrder(names).names)


# -- the random generator ---------------------------------------------------------------

LCG_MULTIPLIER = 48271
LCG_MODULUS = 2147483647


def lcg_draw(state: int, n: int) -> tuple[int, int]:
    """One draw in ``[0, n)`` and the new state.

    # compat: the reference generator ``s <- ((48271 * s) mod 2^32) mod (2^31 - 1)``,
    # returning ``s mod n``; a draw from an empty range returns 0 and keeps the state.
    # Seed 0 keeps the state at 0, so every draw is 0.

    >>> lcg_draw(0, 5)
    (0, 0)
    >>> lcg_draw(1, 100)
    (71, 48271)
    """
    if n <= 0:
        return 0, state
    state = ((LCG_MULTIPLIER * state) & 0xFFFFFFFF) % LCG_MODULUS
    return state % n, state


def seed_state(seed: int) -> int:
    """The generator state a seed gives (the reference truncates it to 32 bits)."""
    return int(seed) & 0xFFFFFFFF


# -- names the reference defines before a program runs ----------------------------------

# compat: the reference's globals map receives these names in this order before the
# program (native built-ins, then its built-in module); the order matters only for the
# iteration order of that map (``allObjs``, ``removeObj`` of a global, ``prev`` of a value).
NATIVE_NAMES = (
    "GRID_SIZE", "map", "concat", "filter", "foldl", "length", "head", "at", "tail",
    "renderAll", "defined", "arrayEqual", "sqrt", "prev", "any", "isList", "uniformChoice",
    "adjPositions", "addObj", "isFreePos", "range", "print", "removeObj", "updateObj",
    "randomPositions", "allPositions", "clicked", "left", "right", "up", "down",
    "isWithinBounds", "allObjs", "rotate",
)
MODULE_NAMES = (
    "GRID_SIZE", "FRAME_RATE", "background", "move", "moveRight", "moveLeft", "moveUp",
    "moveDown", "moveNoCollision", "moveCanCollision", "rotateNoCollision", "movePos",
    "moveRightPos", "moveLeftPos", "moveUpPos", "moveDownPos", "abs", "sign", "vcat",
    "deltaPos", "rect", "displacement", "deltaElem", "deltaObj", "adjacentElem",
    "adjacentPoss", "adjacentTwoObjs", "adjacentPossDiag", "adjacentTwoObjsDiag",
    "adjacentObjs", "adjacentObjsDiag", "adj", "objClicked", "sqdist", "unitVector",
    "unitVectorObjPos", "unitVectorSinglePos", "max", "min", "closest", "closestPos",
    "renderValue", "sum", "intersectsElems", "intersectsPosElems", "intersectsPosPoss",
    "intersects", "isFree", "in", "isFreeExcept", "isFreePosExceptObj",
    "isFreeRangeExceptObj", "moveLeftNoCollision", "moveRightNoCollision",
    "moveUpNoCollision", "moveDownNoCollision", "nextSolid", "nextLiquidClosestHole",
    "nextLiquid", "nextLiquidMoveClosestHole",
)
TRIGGER_NAME = "SpecialConditionTriggered"
"""compat: a Bool global the reference defines before the program's statements."""
RENDER_CACHE_NAME = "cacheRendered"
"""compat: the reference stores the last rendered cells in this global after each render."""


# -- truthiness and equality ------------------------------------------------------------

def truthy(value) -> bool:
    """# compat: ``false``, the empty list and "no value" are false; all else is true
    (0, "", instances and functions included)."""
    if value is False or value is None:
        return False
    if type(value) is list:
        return len(value) > 0
    return True


def equal(left, right) -> bool:
    """``(== left right)``: by value, kinds never mixing, except one quirk.

    # compat: a Number on the *left* compared with a Bool compares against 1/0, so
    # ``(== 1 true)`` is true while ``(== true 1)`` is false.
    """
    kind = type(left)
    if kind is int:
        other = type(right)
        return left == right if other is int or other is bool else False
    if kind is not type(right):
        return False
    if kind is list:
        return len(left) == len(right) and all(equal(a, b) for a, b in zip(left, right))
    if kind is Instance:
        return left is right or (
            left.cls is right.cls and left.origin == right.origin
            and len(left.cells) == len(right.cells)
            and all(equal(left.fields[k], right.fields[k]) for k in left.fields)
            and all(cell_equal(a, b) for a, b in zip(left.cells, right.cells))
        )
    if kind is Cell:
        return cell_equal(left, right)
    if kind in (Lambda, Builtin, ObjectClass):
        return left is right
    return left == right


def cell_equal(a: Cell, b: Cell) -> bool:
    """# compat: the reference compares Cell arguments by expression identity; a frozen
    number is a fresh expression each time a cell is built, so two cells built apart are
    equal only if all their arguments are unfrozen expressions of the same source."""
    if a is b:
        return True
    for p, q in ((a.x, b.x), (a.y, b.y), (a.color, b.color)):
        if type(p) is int or type(q) is int or p.node is not q.node:
            return False
    return True


def last_element(values: list):
    """# compat: the reference's ``tail`` returns the last element, not the rest."""
    return values[-1]


# -- lazy Cell arguments ----------------------------------------------------------------

def cell_snapshot(scope, names: tuple[str, ...], globals_: dict) -> dict:
    """The variables a Cell's arguments name, frozen at the time the cell is built.

    # compat: each name takes its innermost binding along the (dynamic) scope chain,
    # skipping the outermost object-constructor scope (the object's own fields and
    # origin), then the globals. A global of the same name as a field therefore wins.
    """
    if not names:
        return {}
    skip = None
    s = scope
    while s is not None:
        if s.instance:
            skip = s
        s = s.parent
    snap = {}
    for name in names:
        s = scope
        while s is not None:
            if s is not skip and name in s.vars:
                snap[name] = s.vars[name]
                break
            s = s.parent
        else:
            if name in globals_:
                snap[name] = globals_[name]
    return snap


def make_cell_arg(node, fn, names, const, scope, rt, scope_class):
    """One Cell argument: a frozen number, or an expression kept for each render.

    # compat: the argument is evaluated in its snapshot; a Number result is frozen;
    # anything else (a String, a Bool, or a failure because it names a field) keeps the
    # expression, re-evaluated at every render in snapshot, then fields, then globals.
    """
    if const is not None:
        return const if type(const) is int else Lazy(node, fn, None, const)
    snap = cell_snapshot(scope, names, rt.globals)
    rt.probing += 1  # a name it does not know (a field, usually) fails cheaply
    try:
        value = fn(scope_class(snap, None, False))
    except StepBudgetExceeded:
        raise
    except Exception:  # noqa: BLE001 - any failure leaves the argument unevaluated
        return Lazy(node, fn, snap)
    finally:
        rt.probing -= 1
    if type(value) is int:
        return value
    return Lazy(node, fn, snap)


from tasks.autumn.errors import StepBudgetExceeded  # noqa: E402
from tasks.autumn.values import (  # noqa: E402  (values imports nothing from here)
    Builtin,
    Cell,
    Instance,
    Lambda,
    Lazy,
    ObjectClass,
)
