"""The exceptions an Autumn program can raise, each carrying its source position.

Every failure of a program, at load or during a step, is an :class:`AutumnError`
(a ``ValueError``) whose message names the program, the line and column, and quotes
the offending source, so that an author can find the fault without a debugger.
"""

from __future__ import annotations

from tasks.limits import StepLimitExceeded


class AutumnError(ValueError):
    """Base class: a problem in an Autumn program, located when the position is known."""

    kind = "error"

    def __init__(self, message: str, line: int | None = None, column: int | None = None,
                 snippet: str = "", name: str | None = None, source: str | None = None) -> None:
        self.reason = message
        self.line = line
        self.column = column
        self.snippet = snippet
        self.name = name
        self.source_line = _line_of(source, line)
        super().__init__(self._compose())

    def _compose(self) -> str:
        where = self.name or "<program>"
        if self.line is not None:
            where += f":{self.line}:{self.column}"
        text = f"{where}: {self.kind}: {self.reason}"
        if self.source_line is not None:
            return f"{text}\n{quote(self.source_line, self.column or 1)}"
        if self.snippet:
            text += f"\n    {self.snippet}"
        return text

    def locate(self, line: int | None, column: int | None, snippet: str = "",
               name: str | None = None, source: str | None = None) -> AutumnError:
        """Fill in the position if it is still unknown (the innermost position wins)."""
        if self.line is None and line is not None:
            self.line, self.column, self.snippet = line, column, snippet
            self.source_line = _line_of(source, line)
        if self.name is None and name is not None:
            self.name = name
        self.args = (self._compose(),)
        return self

    def __str__(self) -> str:
        return self._compose()


def _line_of(source: str | None, line: int | None) -> str | None:
    """Line ``line`` (1-based) of ``source``, without reading the lines after it."""
    if source is None or line is None or line < 1:
        return None
    start = 0
    for _ in range(line - 1):
        start = source.find("\n", start) + 1
        if start == 0:
            return None
    end = source.find("\n", start)
    return source[start:end if end >= 0 else len(source)].rstrip()


def quote(line: str, column: int, width: int = 88) -> str:
    """A source line (the part of a long one around ``column``) and a caret under its
    ``column`` (1-based), each on its own line, indented: how every message quotes."""
    shown, caret = window(line, column - 1, width)
    return f"    {shown}\n    {' ' * caret}^"


def window(line: str, column: int, width: int = 88) -> tuple[str, int]:
    """The part of a long source line around ``column`` (0-based), and the column within it."""
    if len(line) <= width:
        return line, column
    start = max(0, min(column - width // 2, len(line) - width))
    shown = line[start:start + width]
    if start:
        shown = "..." + shown[3:]
    if start + width < len(line):
        shown = shown[:-3] + "..."
    return shown, column - start


class AutumnSyntaxError(AutumnError):
    """The text is not a well-formed Autumn program (parentheses, arity, declarations)."""

    kind = "syntax error"


class AutumnRuntimeError(AutumnError):
    """Evaluation failed: unknown name, type mismatch, bad argument, division by zero..."""

    kind = "runtime error"


class StepBudgetExceeded(AutumnRuntimeError, StepLimitExceeded):
    """One step (or the program's start) did more evaluations than its budget allows.

    The budget counts work, not time (every function call is one evaluation, and a
    built-in that makes or walks a list charges one per element before it does so), so
    a replay of the same actions always stops at the same place. Callers that must keep
    other work going (the real-time tick, the model turn) catch it by type and end the
    attempt as an environment error.
    """

    kind = "runtime error"
    limit_name = "step budget"

    def __init__(self, budget: int, line: int | None = None, column: int | None = None,
                 snippet: str = "", name: str | None = None) -> None:
        self.budget = budget
        super().__init__(
            f"step budget exceeded: the step needed more than {budget:,} evaluations "
            "(an endless or far too costly computation; if the program really needs "
            "more, raise \"step_budget\" in its env.json)", line, column, snippet, name)
