"""The running program: its globals, handlers and state variables, one step at a time.

A :class:`Runtime` is built once per loaded program (statements compiled to closures)
and ``reset(seed)`` re-runs the top-level statements into fresh state. ``step`` follows
docs/autumn.md section 6: snapshot ``prev``, run handlers in program order, then every state
variable's NEXT in the reference's hash order, then render. A step that fails restores
the state it started from, so the environment never stays half-updated.
"""

from __future__ import annotations

from dataclasses import dataclass

from tasks.autumn import compat
from tasks.autumn.calls import STEP_BUDGET, apply
from tasks.autumn.compiler import Compiler, parse_type
from tasks.autumn.errors import AutumnError, AutumnRuntimeError, AutumnSyntaxError
from tasks.autumn.inert import assigned_names, value_names
from tasks.autumn.reader import LIST, SYM, Node, snippet
from tasks.autumn.render import Picture, paint
from tasks.autumn.scope import Scope
from tasks.autumn.values import CALLABLES, Builtin, Instance, ObjectClass, Position, show, type_name

_MISSING = object()
LARGEST_GRID = 512
"""The largest GRID_SIZE a program may have (cells a side)."""


@dataclass
class StateVar:
    name: str
    init: object
    next: object
    node: Node


@dataclass
class Snapshot:
    """Everything that changes while a program runs (cheap: values are immutable)."""

    globals: dict
    order: compat.HashOrder
    defined_order: list
    types: dict
    prev: dict | None
    prev_order: list
    rng: int
    next_id: int
    picture: Picture | None


class Runtime:
    """One program's interpreter state and its compiled statements."""

    def __init__(self, program: Node, source: str, name: str | None, natives: dict,
                 budget: int = STEP_BUDGET) -> None:
        self.source, self.name = source, name
        self.budget = self.left = budget
        """Evaluations one step may do, and how many the running step has left."""
        self.cost = self.peak = 0
        """Evaluations the last step (or reset) did, and the most any did since loading."""
        self.natives = natives
        self.globals: dict = {}
        self.classes: dict[str, ObjectClass] = {}
        self.types: dict[str, str] = {}
        self.order = compat.HashOrder()
        self.defined_order: list[str] = []
        self.updated: set[str] = set()
        self.prev: dict | None = None
        self.prev_order: list[str] = []
        self.rng = 0
        self.next_id = 0
        self.depth = 0
        self.probing = 0
        """Cell arguments being tried now (:func:`compat.make_cell_arg`)."""
        self.click: tuple[int, int] | None = None
        self.arrow: str | None = None
        self.picture: Picture | None = None
        self.prev_builtin = natives["prev"]
        self.printed: list[str] = []
        self.setup: list = []
        self.handlers: list = []
        self.state: dict[str, StateVar] = {}
        self._compile(program)

    # -- errors -------------------------------------------------------------------------

    def syntax(self, node: Node, message: str) -> AutumnSyntaxError:
        return AutumnSyntaxError(message, node.line, node.col, snippet(self.source, node), self.name,
                                 self.source)

    def runtime(self, node: Node, message: str) -> AutumnRuntimeError:
        return AutumnRuntimeError(message, node.line, node.col, snippet(self.source, node),
                                  self.name, self.source)

    def unknown(self, node: Node, name: str) -> Exception:
        """The error for a name bound nowhere: a plain :class:`LookupError` while a Cell
        argument is tried (``probing``; it fails whenever it names the object's own field,
        and the failure only means "keep the expression"), else the located error."""
        if self.probing:
            return LookupError(name)
        return self.runtime(node, f"unknown name '{name}'")

    # -- loading ------------------------------------------------------------------------

    def _compile(self, program: Node) -> None:
        statements = program.value[1:]
        class_names = {s.value[1].value for s in statements if _is_form(s, "object")
                       and len(s.value) > 1 and s.value[1].kind == SYM}
        self.compiler = Compiler(self, class_names, value_names(statements))
        assigned = assigned_names(program)
        self.never_painted = frozenset(name for name, fn in self.natives.items()
                                       if type(fn) is Builtin and name not in assigned)
        """Built-in functions the program never assigns: they hold a function for good,
        so :meth:`render` need not look at them (most of the ~100 globals a step paints)."""
        for statement in statements:
            self._compile_statement(statement)
        self.state_names = list(self.state)
        self.next_order = compat.order_of(self.state_names)

    def _compile_statement(self, node: Node) -> None:
        if _is_form(node, "object"):
            self._object(node)
        elif _is_form(node, "on"):
            if len(node.value) < 3:
                raise self.syntax(node, "malformed handler: expected (on condition body)")
            cond = self.compiler.expr(node.value[1])
            body = [self.compiler.expr(n) for n in node.value[2:]]
            self.handlers.append((node, cond, body))
        elif _is_initnext(node):
            self._state_var(node)
        else:
            self.setup.append(self.compiler.expr(node))

    def _state_var(self, node: Node) -> None:
        name_node, value = node.value[1], node.value[2]
        if name_node.kind != SYM:
            raise self.syntax(node, "a state variable's name must be a name")
        if len(value.value) != 3:
            raise self.syntax(value, "malformed initnext: expected (initnext INIT NEXT)")
        init, nxt = (self.compiler.expr(n) for n in value.value[1:])
        self.state[name_node.value] = StateVar(name_node.value, init, nxt, node)

    def _object(self, node: Node) -> None:
        items = node.value
        if len(items) < 3 or items[1].kind != SYM:
            raise self.syntax(node, "malformed object: expected (object Name (: field Type) ... CELLS)")
        fields, types = [], []
        for f in items[2:-1]:
            if not (_is_form(f, ":") and len(f.value) == 3 and f.value[1].kind == SYM):
                raise self.syntax(f, "malformed field: expected (: name Type)")
            fields.append(f.value[1].value)
            types.append(parse_type(f.value[2], self))
        if _is_form(items[-1], ":"):
            raise self.syntax(node, "object has no CELLS expression after its fields")
        cells = self.compiler.expr(items[-1])
        name = items[1].value
        self.classes[name] = ObjectClass(name, tuple(fields), tuple(types), cells, node)

    # -- reset --------------------------------------------------------------------------

    def reset(self, seed: int) -> None:
        """Fresh state: built-ins, the built-in module, the program's statements, INITs."""
        self.globals.clear()
        self.order = compat.HashOrder()
        self.defined_order, self.updated = [], set()
        self.types.clear()  # compiled declarations hold this very dictionary
        self.prev, self.prev_order = None, []
        self.rng, self.next_id, self.depth = compat.seed_state(seed), 0, 0
        self.click = self.arrow = None
        self.picture = None
        self.left = self.budget
        try:
            self._start()
        finally:
            self._spent()

    def _start(self) -> None:
        for name in compat.NATIVE_NAMES:
            self.define(name, 16 if name == "GRID_SIZE" else self.natives[name])
        defaults = {"GRID_SIZE": 16, "FRAME_RATE": 8, "background": "black"}
        for name in compat.MODULE_NAMES:
            self.define(name, defaults[name] if name in defaults else self.natives[name])
        self.define(compat.TRIGGER_NAME, False)
        for fn in self.setup:
            fn(None)
        for name in self.next_order:
            self.define(name, self.state[name].init(None))
        self.render()
        self.define(compat.RENDER_CACHE_NAME, [])

    # -- globals ------------------------------------------------------------------------

    def define(self, name: str, value) -> None:
        """Create (or overwrite without marking) a global binding."""
        glob = self.globals
        if name not in glob:
            self.order.insert(name)
            if name not in self._defined:
                self.defined_order.append(name)
                self._defined.add(name)
                self._painted = None
        glob[name] = value
        self.updated.discard(name)

    @property
    def defined_order(self) -> list[str]:
        return self._defined_order

    @defined_order.setter
    def defined_order(self, names: list[str]) -> None:
        self._defined_order = names
        self._defined = set(names)
        self._painted: list[str] | None = None
        """What :meth:`render` paints, in order (made again when a global is defined)."""

    def set_global(self, name: str, value, node: Node | None = None) -> None:
        """``(= name value)`` reaching a global: type checks, identity kept, marked updated."""
        declared = self.types.get(name)
        if declared is not None and declared != "List" and type_name(value) != declared:
            raise self._error(node, f"cannot assign {show(value)} ({type_name(value)}) to "
                              f"'{name}', declared {declared}")
        old = self.globals.get(name, _MISSING)
        if old is _MISSING:
            self.define(name, value)
            return
        if type(value) is not list and type_name(old) != type_name(value):
            raise self._error(node, f"cannot assign {show(value)} ({type_name(value)}) to "
                              f"'{name}', which holds a {type_name(old)}")
        if type(value) is Instance and type(old) is Instance and value.id != old.id:
            value = value.replace(old.id)  # a global keeps its identity
        self.globals[name] = value
        self.updated.add(name)

    def _error(self, node: Node | None, message: str) -> AutumnRuntimeError:
        return self.runtime(node, message) if node is not None else AutumnRuntimeError(message)

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def remove_global_holding(self, value) -> None:
        """compat: ``(removeObj obj)`` deletes the first global (hash order) holding obj."""
        if type(value) is not Instance:
            return
        for name in self.order.names:
            held = self.globals.get(name)
            if type(held) is Instance and held.id == value.id:
                del self.globals[name]
                self.order.erase(name)
                return

    def prev_value(self, name: str):
        if self.prev is None:
            raise AutumnRuntimeError("prev is not allowed in INIT expressions")
        try:
            return self.prev[name]
        except KeyError:
            raise AutumnRuntimeError(f"prev: no global '{name}' in the previous state") from None

    def prev_of(self, value):
        """``(prev value)``: the previous value of the global that held ``value``."""
        if type(value) is str:
            return self.prev_value(value)
        if self.prev is None:
            raise AutumnRuntimeError("prev is not allowed in INIT expressions")
        if type(value) is Instance:
            for name in self.prev_order:
                held = self.prev.get(name)
                if type(held) is Instance and held.id == value.id:
                    return held
        raise AutumnRuntimeError(f"prev: no global held {show(value)} in the previous state")

    def draw(self, n: int) -> int:
        value, self.rng = compat.lcg_draw(self.rng, n)
        return value

    def construct(self, cls: ObjectClass, args: list, scope) -> Instance:
        """``(Name v1 ... vk origin)``: check the field types, build the cells."""
        k = len(cls.fields)
        if len(args) < k + 1:
            raise AutumnRuntimeError(f"{cls.name} needs {k} field value(s) and an origin, "
                                     f"got {len(args)} argument(s)")
        fields = {}
        for name, declared, value in zip(cls.fields, cls.types, args):
            if type_name(value) != declared and not (declared == "List" and type(value) is list):
                raise AutumnRuntimeError(f"{cls.name} field '{name}' is declared {declared}, "
                                         f"got {show(value)}")
            fields[name] = value
        origin = args[k]
        if type(origin) is not Position:
            raise AutumnRuntimeError(f"{cls.name}'s origin must be a Position, got {show(origin)}")
        inner = dict(fields)
        inner["origin"] = origin
        cells = cls.cells_fn(Scope(inner, scope, True))
        cells = _flatten_cells(cells, cls)
        return Instance(cls, fields, origin, cells, self.new_id())

    def cell_arg(self, arg):
        from tasks.autumn.render import cell_value
        return cell_value(self, arg, None)

    # -- stepping -----------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        return Snapshot(dict(self.globals), self.order.copy(), list(self.defined_order),
                        dict(self.types), self.prev, list(self.prev_order), self.rng,
                        self.next_id, self.picture)

    def restore(self, snap: Snapshot) -> None:
        self.globals.clear()
        self.globals.update(snap.globals)
        self.order = snap.order.copy()
        self.defined_order = list(snap.defined_order)
        self.types.clear()
        self.types.update(snap.types)
        self.prev, self.prev_order = snap.prev, list(snap.prev_order)
        self.rng, self.next_id, self.picture = snap.rng, snap.next_id, snap.picture
        self.updated, self.click, self.arrow, self.depth = set(), None, None, 0

    def step(self, click: tuple[int, int] | None = None, arrow: str | None = None) -> None:
        """One step with at most one input; on failure the state is restored and re-raised."""
        before = self.snapshot()
        self.left = self.budget
        try:
            self._step(click, arrow)
        except AutumnError:
            self.restore(before)
            raise
        except RecursionError:
            self.restore(before)
            raise AutumnRuntimeError("recursion too deep", name=self.name) from None
        except Exception as error:
            self.restore(before)
            raise AutumnRuntimeError(f"internal failure: {error!r}", name=self.name) from error
        finally:
            self.click = self.arrow = None
            self._spent()

    def _spent(self) -> None:
        self.cost = self.budget - self.left
        if self.cost > self.peak:
            self.peak = self.cost

    def _step(self, click, arrow) -> None:
        glob = self.globals
        self.prev = dict(glob)
        self.prev_order = list(self.order.names)
        self.updated.clear()
        self.click, self.arrow = click, arrow
        for node, cond, body in self.handlers:
            if self._holds(node, cond):
                for fn in body:
                    fn(None)
        updated = self.updated
        for name in self.next_order:
            if name in updated or name not in glob:
                continue
            self.set_global(name, self.state[name].next(None), self.state[name].node)
        self.click = self.arrow = None
        self.render()

    def _holds(self, node: Node, cond) -> bool:
        value = cond(None)
        if type(value) in CALLABLES:
            value = self.compiler.located(node.value[1], apply, self, value, [], None)
        if type(value) is not bool:
            raise self.runtime(node.value[1], f"a handler condition must be a Bool, got {show(value)}")
        return value

    def render(self) -> Picture:
        """Paint state variables (program order), then every other global (definition order)."""
        glob = self.globals
        size = glob.get("GRID_SIZE")
        background = glob.get("background", "black")
        if type(size) is not int or not 1 <= size <= LARGEST_GRID:
            raise AutumnRuntimeError(f"GRID_SIZE must be a Number from 1 to {LARGEST_GRID}, "
                                     f"got {show(size)}")
        if type(background) is not str:
            raise AutumnRuntimeError(f"background must be a String, got {show(background)}")
        if self._painted is None:
            state, skip = self.state, self.never_painted
            self._painted = self.state_names + [n for n in self.defined_order
                                                if n not in state and n not in skip]
        self.picture = paint(self, self._painted, size, background.lower())
        return self.picture

    def is_free(self, x: int, y: int) -> bool:
        return self.picture is None or self.picture.is_free(x, y)


def _flatten_cells(cells, cls: ObjectClass) -> list:
    from tasks.autumn.values import Cell
    if type(cells) is Cell:
        return [cells]
    if type(cells) is list and all(type(c) is Cell for c in cells):
        return cells
    raise AutumnRuntimeError(f"the cells of {cls.name} must be a Cell or a list of Cells, "
                             f"got {show(cells)}")


EVENT_VERBS = {"left": "left", "right": "right", "up": "up", "down": "down", "clicked": "click"}
"""The events a handler can wait for, and the action each stands for."""


def handled_events(program: Node) -> frozenset[str]:
    """The actions the program's handlers react to (``left`` ... ``click``): the events
    named in their conditions, also through the global definitions a condition uses
    (``(= pressed (| left right))`` then ``(on pressed ...)``). What a participant is
    told the keys and clicks do comes from here."""
    definitions = {node.value[1].value: node.value[2] for node in program.value
                   if _is_form(node, "=") and len(node.value) == 3 and node.value[1].kind == SYM}
    found: set[str] = set()
    seen: set[str] = set()

    def walk(node: Node) -> None:
        if node.kind == LIST:
            for child in node.value:
                walk(child)
        elif node.kind == SYM:
            if node.value in EVENT_VERBS:
                found.add(EVENT_VERBS[node.value])
            elif node.value in definitions and node.value not in seen:
                seen.add(node.value)
                walk(definitions[node.value])

    for node in program.value:
        if _is_form(node, "on") and len(node.value) >= 2:
            walk(node.value[1])
    return frozenset(found)


def _is_form(node: Node, word: str) -> bool:
    return node.kind == LIST and bool(node.value) and node.value[0].is_sym(word)


def _is_initnext(node: Node) -> bool:
    return (_is_form(node, "=") and len(node.value) == 3 and node.value[2].kind == LIST
            and bool(node.value[2].value) and node.value[2].value[0].is_sym("initnext"))


__all__ = ["Runtime", "Snapshot", "AutumnError"]
