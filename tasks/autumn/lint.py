"""Static checks of an Autumn program, before anything runs (``gridstudy envs check``).

:func:`check_source` reads and compiles the program (the syntax checks are the
compiler's own), then walks it once and reports, each at its ``file:line:col`` with the
source quoted:

errors (the program would fail, or cannot mean what it says)
    names that are defined nowhere (functions, variables, object types in declarations),
    fields that no object type has, too few arguments to a built-in, to one of the
    program's functions or to an object constructor, ``(f)`` alone included (too many
    to a native built-in or a constructor), literals or functions of the wrong type for
    a declared variable, a constructor's field, an ``updateObj`` of a field, an
    arithmetic operand or ``!``, a literal colour that is no CSS colour name (a
    ``Cell``'s, an ``if``'s branches in it, ``background``, a value given to a field the
    object's cells take their colour from), a literal ``FRAME_RATE``
    outside 3 to 8 or ``GRID_SIZE`` outside 1 to 512;
warnings (it runs, but probably not as meant)
    definitions and object types never used, variables declared and never defined,
    extra arguments to an Autumn lambda or the built-in module (evaluated, then
    ignored), names that only a caller's local could supply (Autumn's scoping is
    dynamic, so such a program can work, but rarely means to).

The walk is lexical: a name is known where a lambda parameter, an earlier ``=`` in an
enclosing ``let``, an object's own fields (in its cells), a top-level definition, a
global assigned by a handler, or a built-in supplies it.

The stages live in their own modules: reading and compiling here (the syntax),
:mod:`tasks.autumn.lint_defs` (what the interpreter provides and what the program
defines), :mod:`tasks.autumn.lint_walk` (names, fields, start order, unused definitions)
and :mod:`tasks.autumn.lint_calls` (argument counts and types).

>>> print(errors(check_source('(program (= n (lengthz (list 1 2))))', 'demo.sexp'))[0])
demo.sexp:1:15: error: unknown function 'lengthz' (did you mean 'length'?)
    (program (= n (lengthz (list 1 2))))
                  ^
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path

from tasks.autumn.errors import AutumnError
from tasks.autumn.lint_defs import ERROR, WARNING, Finding, builtin_arities
from tasks.autumn.lint_walk import Checker
from tasks.autumn.reader import read

__all__ = ["ERROR", "WARNING", "Finding", "builtin_arities", "check_file", "check_source",
           "errors"]


def errors(findings: Sequence[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == ERROR]


def check_file(path: str | Path) -> tuple[Finding, ...]:
    """:func:`check_source` of a file, its messages naming the path as given."""
    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as error:
        return (Finding(ERROR, f"cannot read the file: {error}", str(path)),)
    return check_source(source, str(path))


@cache
def check_source(source: str, name: str = "<program>") -> tuple[Finding, ...]:
    """Every finding in ``source``, in file order (a syntax error alone, when there is one)."""
    from tasks.autumn.runtime import Runtime
    from tasks.autumn.stdlib import builtins
    try:
        program = read(source, name)
        Runtime(program, source, name, builtins())  # compiling is the syntax check
        findings = Checker(program, source, name).run()
    except AutumnError as error:
        findings = [Finding(ERROR, error.reason, name, error.line, error.column)]
    except RecursionError:
        findings = [Finding(ERROR, "the program is nested too deeply", name)]
    lines = source.splitlines()
    return tuple(replace(f, snippet=lines[f.line - 1].rstrip() if f.line and f.line <= len(lines) else "")
                 for f in sorted(findings, key=lambda f: (f.line or 0, f.column or 0)))
