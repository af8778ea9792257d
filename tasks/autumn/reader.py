"""Reader: Autumn source text to s-expression nodes that remember where they came from.

The reader is iterative (an explicit stack), so arbitrarily deep nesting cannot
exhaust Python's recursion limit while reading.

>>> node = read("(program (= x 1))")
>>> node.value[1].value[0].value, node.value[1].line, node.value[1].col
('=', 1, 10)
"""

from __future__ import annotations

import re

from tasks.autumn.errors import AutumnSyntaxError

SYM, NUM, STR, LIST = "sym", "num", "str", "list"

_NUMBER = re.compile(r"[+-]?\d+(\.\d*)?")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}
_DELIMITERS = frozenset("()\";") | frozenset(" \t\r\n\f\v")


class Node:
    """One s-expression: an atom (symbol, number, string) or a list of nodes."""

    __slots__ = ("kind", "value", "line", "col", "start", "end")

    def __init__(self, kind: str, value, line: int, col: int, start: int, end: int = -1):
        self.kind = kind
        self.value = value
        self.line = line
        self.col = col
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        if self.kind == LIST:
            return "(" + " ".join(map(repr, self.value)) + ")"
        return repr(self.value) if self.kind == STR else str(self.value)

    def is_sym(self, name: str | None = None) -> bool:
        return self.kind == SYM and (name is None or self.value == name)


def snippet(source: str, node: Node, limit: int = 70) -> str:
    """The node's source text on one line, shortened to ``limit`` characters."""
    end = node.end if node.end > node.start else node.start + 1
    text = " ".join(source[node.start:end].split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _position(source: str, offset: int) -> tuple[int, int]:
    line = source.count("\n", 0, offset) + 1
    return line, offset - (source.rfind("\n", 0, offset) + 1) + 1


def _error(source: str, offset: int, message: str, name: str | None) -> AutumnSyntaxError:
    line, col = _position(source, offset)
    text = source[offset:offset + 40].split("\n")[0]
    return AutumnSyntaxError(message, line, col, text, name, source)


def read_all(source: str, name: str | None = None) -> list[Node]:
    """Every top-level s-expression of ``source``, in order."""
    if not isinstance(source, str):
        raise AutumnSyntaxError(f"a program must be text, not {type(source).__name__}", name=name)
    tops: list[Node] = []
    stack: list[Node] = []
    unclosed: Node | None = None  # the first list the indentation says was left open
    closed: Node | None = None  # the last top-level list, and where its ')' stands
    early: Node | None = None  # the first one the indentation says was closed too soon
    i, n = 0, len(source)
    line, line_start, first = 1, 0, True
    while i < n:
        ch = source[i]
        if ch == "\n":
            line, line_start, first = line + 1, i + 1, True
            i += 1
            continue
        if ch.isspace():
            i += 1
            continue
        if ch == ";":
            end = source.find("\n", i)
            i = n if end < 0 else end
            continue
        col = i - line_start + 1
        if first and unclosed is None:
            unclosed = _left_open(stack, line, col, ch == ")")
        if first and early is None and not stack and closed is not None and col > closed.col:
            early = closed  # an indented line after the top-level list closed
        first = False
        if ch == "(":
            stack.append(Node(LIST, [], line, col, i))
            i += 1
            continue
        if ch == ")":
            if not stack and early is not None:
                raise _error(source, early.end - 1,
                             f"unbalanced ')': this one closes the list opened at line "
                             f"{early.line}, and the indented lines after it were meant to "
                             "be inside it", name)
            if not stack:
                raise _error(source, i, "unbalanced ')': no list is open here", name)
            node = stack.pop()
            node.end = i + 1
            if not stack:
                closed = node
            i += 1
        elif ch == '"':
            node, i = _read_string(source, i, line, col, name)
        else:
            j = i
            while j < n and source[j] not in _DELIMITERS:
                j += 1
            node = _atom(source[i:j], line, col, i, j)
            i = j
        (stack[-1].value if stack else tops).append(node)
    if stack:
        at = unclosed or stack[-1]  # a bracket meant for an outer list may have closed it
        raise _error(source, at.start, "unbalanced '(': this list is never closed", name)
    return tops


def _left_open(stack: list[Node], line: int, col: int, closing: bool) -> Node | None:
    """The outermost list still open from an earlier line that a line starting at ``col``
    says should have been closed: one opened at or right of ``col`` (right of it when the
    line starts with its closing bracket). Only asked when the brackets do not balance."""
    for node in stack:
        if node.line < line and (node.col > col if closing else node.col >= col):
            return node
    return None


def _read_string(source: str, i: int, line: int, col: int, name: str | None):
    chars: list[str] = []
    j = i + 1
    while j < len(source):
        ch = source[j]
        if ch == '"':
            return Node(STR, "".join(chars), line, col, i, j + 1), j + 1
        if ch == "\\" and j + 1 < len(source):
            chars.append(_ESCAPES.get(source[j + 1], source[j + 1]))
            j += 2
            continue
        chars.append(ch)
        j += 1
    raise _error(source, i, "unterminated string: expected a closing '\"'", name)


def _atom(text: str, line: int, col: int, start: int, end: int) -> Node:
    if _NUMBER.fullmatch(text):
        # Numbers are integers: a literal 1.7 reads as 1 (truncated toward zero).
        return Node(NUM, int(float(text)) if "." in text else int(text), line, col, start, end)
    return Node(SYM, text, line, col, start, end)


def read(source: str, name: str | None = None) -> Node:
    """The one s-expression a program file holds, ``(program stmt ...)``."""
    tops = read_all(source, name)
    if len(tops) != 1 or tops[0].kind != LIST or not tops[0].value:
        raise AutumnSyntaxError(
            "a program must be exactly one list, (program stmt ...)", 1, 1,
            source.strip()[:40], name,
        )
    return tops[0]
