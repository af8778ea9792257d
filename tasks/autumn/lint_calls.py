"""The static checker's calls and types: argument counts of built-ins, of a program's
own functions and of constructors, and values of the wrong type for a declaration, a
field or an operand (a mixin of the walk, :mod:`tasks.autumn.lint_walk`)."""

from __future__ import annotations

from tasks.autumn.lint_defs import (
    BASE_TYPES,
    ERROR,
    FUNCTION,
    WARNING,
    Arity,
    ObjectType,
    _article,
    _form,
    _literal_type,
)
from tasks.autumn.reader import LIST, NUM, STR, SYM, Node
from tasks.autumn.runtime import LARGEST_GRID
from tasks.checker import CSS_COLOURS, FRAME_RATES


class Calls:
    """Checks of calls and types; the walk supplies ``defs``, ``arities``, ``report``."""

    def against_declaration(self, name: str, value: Node, bound: frozenset[str] = frozenset()) -> None:
        declared = self.defs.declared.get(name)
        if declared is None:
            return
        kind, element, _ = declared
        self.expect(kind, value, f"'{name}' is declared {kind}", bound)
        if kind == "List" and element and _form(value, "list"):
            for item in value.value[1:]:
                self.expect(element, item, f"'{name}' is declared (List {element})", bound)

    def function_named(self, value: Node, bound: frozenset[str]) -> bool:
        """``value`` is the name of a function: a built-in or one of the program's own,
        not shadowed by a local or a global of the same name."""
        name = value.value
        if value.kind != SYM or name in bound:
            return False
        if name in self.defs.functions:
            return name not in self.defs.assigned
        return name in self.arities and name not in self.defs.plain \
            and name not in self.defs.state and name not in self.defs.assigned

    def expect(self, wanted: str, value: Node, why: str, bound: frozenset[str] = frozenset()) -> None:
        if wanted not in BASE_TYPES and wanted not in self.defs.objects:
            return  # an unknown type: reported where it is declared
        wanted = "Number" if wanted == "Int" else wanted
        got = FUNCTION if self.function_named(value, bound) else _literal_type(value, self.defs.objects)
        if got is not None and got != wanted:
            self.report(ERROR, value, f"{why}, but this is {_article(got)}")

    # -- calls --------------------------------------------------------------------------------

    def call(self, node: Node, name: str, args: list[Node], bound: frozenset[str]) -> None:
        if name in bound:
            return  # a local function: its parameters are not known statically
        if name in self.defs.objects:
            self.construct(node, self.defs.objects[name], args)
        elif name == "Position":
            self.count(node, name, args, Arity(2, 2, False), "x y")
            for a in args:
                self.expect("Number", a, "a Position's coordinates are Numbers")
        elif name == "Cell":
            self.count(node, name, args, Arity(3, 3, False), "dx dy colour")
            if len(args) == 3:
                self.colour(args[2])
        elif name in self.defs.functions and name not in self.defs.assigned:
            params = self.defs.functions[name]
            self.count(node, name, args, Arity(len(params), len(params), True), " ".join(params))
        elif name in self.arities and name not in self.defs.plain:
            self.count(node, name, args, self.arities[name], "")
            if name == "updateObj" and len(args) == 3 and args[1].kind == STR:
                self.update_field(args[1], args[2])

    def colour(self, value: Node) -> None:
        """A colour written as a literal, or as an ``if``'s literal branches, must be a CSS
        colour name: a browser draws any other black, the pygame window magenta."""
        if _form(value, "if"):
            for branch in _branches(value):
                self.colour(branch)
        elif value.kind == STR and value.value.lower() not in CSS_COLOURS:
            self.report(ERROR, value, f"'{value.value}' is not a CSS colour name"
                        + self.suggest(value.value.lower(), CSS_COLOURS)
                        + "; a browser would draw it black")

    def special(self, name: str, value: Node) -> None:
        """A literal value of a global the interpreter reads (GRID_SIZE, FRAME_RATE,
        background) that it cannot mean."""
        if name == "background":
            self.colour(value)
        elif value.kind != NUM:
            return  # a computed value: the rollout and the environment check it
        elif name == "FRAME_RATE" and value.value not in FRAME_RATES:
            self.report(ERROR, value, f"FRAME_RATE is the frames per second people play at, "
                        f"from {FRAME_RATES[0]} to {FRAME_RATES[-1]}; got {value.value}")
        elif name == "GRID_SIZE" and not 1 <= value.value <= LARGEST_GRID:
            self.report(ERROR, value, f"GRID_SIZE must be a Number from 1 to {LARGEST_GRID}, "
                        f"got {value.value}")

    def count(self, node: Node, name: str, args: list[Node], arity: Arity, params: str) -> None:
        got = len(args)
        wanted = (f"{arity.least}" if arity.most == arity.least else
                  f"at least {arity.least}" if arity.most is None else
                  f"{arity.least} to {arity.most}")
        named = f" ({params})" if params else ""
        takes = f"{name} takes {wanted} argument{'' if wanted == '1' else 's'}{named}, got {got}"
        if got < arity.least:
            alone = f"; ({name}) alone is the function itself, not a call" if not got else ""
            self.report(ERROR, node, takes + alone)
        elif arity.most is not None and got > arity.most:
            self.report(WARNING if arity.tolerant else ERROR, node, takes + (
                "; the extra ones are evaluated, then ignored" if arity.tolerant else ""))

    def construct(self, node: Node, obj: ObjectType, args: list[Node]) -> None:
        self.count(node, obj.name, args, Arity(len(obj.fields) + 1, len(obj.fields) + 1, False),
                   " ".join([*obj.fields, "origin"]))
        if len(args) < len(obj.fields) + 1:
            return  # which argument is which is anyone's guess
        for value, fname, ftype in zip(args, obj.fields, obj.types, strict=False):
            self.expect(ftype, value, f"{obj.name}'s field '{fname}' is {ftype}")
            if fname in _colour_fields(obj):
                self.colour(value)
        self.expect("Position", args[len(obj.fields)], f"{obj.name}'s last argument is its origin")

    def update_field(self, name_node: Node, value: Node) -> None:
        name = name_node.value
        owners = [o for o in self.defs.objects.values() if name in o.fields]
        if not owners and name != "origin":
            fields = {f for o in self.defs.objects.values() for f in o.fields}
            self.report(ERROR, name_node, f"no object type has a field '{name}'"
                        + self.suggest(name, fields))
            return
        types = {o.types[o.fields.index(name)] for o in owners} or {"Position"}
        if len(types) == 1:
            wanted = types.pop()
            self.expect(wanted, value, f"the field '{name}' is {wanted}")
        if owners and all(name in _colour_fields(o) for o in owners):
            self.colour(value)


def _branches(node: Node) -> list[Node]:
    """The values an ``(if c then a else b)`` may take: ``a`` and ``b``."""
    parts = node.value
    return [branch for before, branch in zip(parts, parts[1:])
            if before.is_sym("then") or before.is_sym("else")]


def _colour_fields(obj: ObjectType) -> frozenset[str]:
    """The fields of ``obj`` that its cells take their colour from, as they are (a
    ``Cell``'s colour naming the field, or an ``if``'s branch naming it)."""
    found: set[str] = set()
    stack = [obj.node.value[-1]] if obj.node.kind == LIST and obj.node.value else []
    while stack:
        node = stack.pop()
        if node.kind != LIST:
            continue
        if _form(node, "Cell") and len(node.value) == 4:
            colour = node.value[3]
            for value in _branches(colour) if _form(colour, "if") else [colour]:
                if value.kind == SYM and value.value in obj.fields:
                    found.add(value.value)
        stack.extend(node.value)
    return frozenset(found)
