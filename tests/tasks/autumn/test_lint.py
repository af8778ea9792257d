"""The static checker (``gridstudy envs check``): each kind of mistake an author makes,
found before anything runs, with its message at its line and column; and a program with
errors never becomes a problem a participant plays."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from game_client.debugger import read_actions
from study_server.commands.catalog import envs as envs_command
from study_server.commands.catalog import problems as problems_command
from tasks import registry
from tasks.autumn import STEP_BUDGET, AutumnError, load, load_file
from tasks.autumn.lint import ERROR, WARNING, check_file, check_source, errors
from tasks.library import LibraryEnv, library_envs
from tasks.library.build import derive_library
from tasks.worldtest.check import check_problem
from tasks.worldtest.problem import Problem

PROGRAMS = Path(__file__).parent / "programs"
FIXTURES = Path(__file__).parent.parent / "fixtures"

BASE = """(program
  (= GRID_SIZE 8)
  (object Dot (: hot Bool) (Cell 0 0 (if hot then "red" else "blue")))
  (: dots (List Dot))
  (= dots (initnext (list (Dot true (Position 1 1))) (prev dots)))
  (= step (--> (d dx) (move d (Position dx 0))))
  (on left (= dots (updateObj dots (--> d (step d -1)))))
{extra}
)"""
"""A correct program; each case adds lines from line 8 on."""

BROKEN = [
    # (case, the lines added, severity, line, column, the message)
    ("unbalanced", "  (on clicked (= dots (list))",
     ERROR, 8, 3, "unbalanced '(': this list is never closed"),
    ("unclosed-definition", "  (= speed 3\n  (on clicked (= dots (list speed)))",
     ERROR, 8, 3, "unbalanced '(': this list is never closed"),
    ("unclosed-inner-list", "  (on clicked\n    (= dots (list (Dot true (Position 2 2)))\n  )",
     ERROR, 9, 5, "unbalanced '(': this list is never closed"),
    # one ')' too many closes the program early: said where it closed, not at the last line
    ("closed-early", "  (on clicked (= dots (list))))\n  (on right (= dots (list)))",
     ERROR, 8, 31, "unbalanced ')': this one closes the list opened at line 1, and the "
     "indented lines after it were meant to be inside it"),
    ("closed-early-inner", "  (on clicked\n    (= dots (list))))\n  (on right (= dots (list)))",
     ERROR, 9, 21, "unbalanced ')': this one closes the list opened at line 1, and the "
     "indented lines after it were meant to be inside it"),
    ("unknown-function", "  (on clicked (= dots (filter (--> d (> (lengthz dots) 2)) dots)))",
     ERROR, 8, 41, "unknown function 'lengthz' (did you mean 'length'?)"),
    ("unknown-variable", "  (on (> count 3) (= dots (list)))",
     ERROR, 8, 10, "unknown name 'count'"),
    ("unknown-type", "  (: blobs (List Blob))\n  (= blobs (initnext (list) (prev blobs)))",
     ERROR, 8, 18, "unknown type 'Blob'"),
    ("unknown-field-type", '  (object Box (: size Numbr) (Cell 0 0 "red"))\n  (= box (initnext (Box 1 (Position 0 0)) (prev box)))',
     ERROR, 8, 23, "unknown type 'Numbr' (did you mean 'Number'?)"),
    ("unknown-field", "  (on clicked (= dots (filter (--> d (.. d hott)) dots)))",
     ERROR, 8, 44, "no object type has a field 'hott' (did you mean 'hot'?)"),
    ("unknown-update-field", '  (on up (= dots (updateObj dots (--> d (updateObj d "hott" true)))))',
     ERROR, 8, 54, "no object type has a field 'hott' (did you mean 'hot'?)"),
    ("builtin-too-few", "  (on clicked (= dots (list (at dots))))",
     ERROR, 8, 29, "at takes 2 arguments, got 1"),
    ("native-too-many", "  (on (> (length dots dots) 2) (= dots (list)))",
     ERROR, 8, 10, "length takes 1 argument, got 2"),
    ("module-too-many", "  (on (> (abs 2 3) 1) (= dots (list)))",
     WARNING, 8, 10, "abs takes 1 argument, got 2; the extra ones are evaluated, then ignored"),
    ("own-function-too-few", "  (on right (= dots (updateObj dots (--> d (step d)))))",
     ERROR, 8, 44, "step takes 2 arguments (d dx), got 1"),
    ("own-function-too-many", "  (on right (= dots (updateObj dots (--> d (step d 1 2)))))",
     WARNING, 8, 44, "step takes 2 arguments (d dx), got 3; the extra ones are evaluated, then ignored"),
    ("zero-argument-call", "  (: dot Dot)\n  (= dot (initnext (Dot true (Position 2 2)) (prev dot)))\n"
     "  (on up (= dot (moveLeft)))",
     ERROR, 10, 17, "moveLeft takes 1 argument, got 0; (moveLeft) alone is the function itself, "
     "not a call"),
    ("zero-argument-own-function", "  (on up (= dots (updateObj dots (--> d (step)))))",
     ERROR, 8, 41, "step takes 2 arguments (d dx), got 0; (step) alone is the function itself, "
     "not a call"),
    ("function-into-typed-variable", "  (: paused Bool)\n  (= paused (initnext false (prev paused)))\n"
     "  (on up (= paused moveLeft))",
     ERROR, 10, 20, "'paused' is declared Bool, but this is a function"),
    ("own-function-into-typed-list", "  (on up (= dots step))",
     ERROR, 8, 18, "'dots' is declared List, but this is a function"),
    ("extra-argument-evaluated", "  (on clicked (= dots (addObj dots (Dot true (Position 2 2) (head (list))))))",
     ERROR, 8, 36, "Dot takes 2 arguments (hot origin), got 3"),
    ("constructor-too-few", "  (on clicked (= dots (addObj dots (Dot (Position 2 2)))))",
     ERROR, 8, 36, "Dot takes 2 arguments (hot origin), got 1"),
    ("constructor-field-literal", "  (on clicked (= dots (addObj dots (Dot 3 (Position 2 2)))))",
     ERROR, 8, 41, "Dot's field 'hot' is Bool, but this is a Number"),
    ("constructor-origin-literal", "  (on clicked (= dots (addObj dots (Dot true 5))))",
     ERROR, 8, 46, "Dot's last argument is its origin, but this is a Number"),
    ("declared-number-string", '  (: score Number)\n  (= score (initnext "zero" (+ (prev score) 1)))',
     ERROR, 9, 22, "'score' is declared Number, but this is a String"),
    ("declared-list-number", "  (: trail (List Position))\n  (= trail (initnext 0 (prev trail)))",
     ERROR, 9, 22, "'trail' is declared List, but this is a Number"),
    ("list-element-type", '  (: marks (List Position))\n  (= marks (initnext (list (Position 1 1) "two") (prev marks)))',
     ERROR, 9, 43, "'marks' is declared (List Position), but this is a String"),
    ("assign-declared-bool", "  (: paused Bool)\n  (= paused (initnext false (prev paused)))\n  (on up (= paused 1))",
     ERROR, 10, 20, "'paused' is declared Bool, but this is a Number"),
    ("arithmetic-string", '  (on (> (+ 1 "a") 1) (= dots (list)))',
     ERROR, 8, 15, "'+' needs a Number, but this is a String"),
    ("not-number", "  (on (! 1) (= dots (list)))",
     ERROR, 8, 10, "'!' needs a Bool, but this is a Number"),
    ("position-coordinate", '  (on clicked (= dots (addObj dots (Dot true (Position "a" 1)))))',
     ERROR, 8, 56, "a Position's coordinates are Numbers, but this is a String"),
    ("update-field-literal", '  (on down (= dots (updateObj dots (--> d (updateObj d "hot" 3)))))',
     ERROR, 8, 62, "the field 'hot' is Bool, but this is a Number"),
    ("prev-not-global", "  (on clicked (= dots (prev dotz)))",
     ERROR, 8, 29, "prev reads a global, and 'dotz' is none (did you mean 'dots'?)"),
    ("operand-count", "  (on (> (+ 1 2 3) 1) (= dots (list)))",
     ERROR, 8, 10, "'+' takes exactly 2 operands, got 3"),
    ("malformed-if", "  (on clicked (= dots (if (> 1 2) then (list))))",
     ERROR, 8, 23, "malformed if: expected (if cond then a else b)"),
    ("cell-arguments", '  (object Box (Cell 0 "red"))',
     ERROR, 8, 15, "Cell takes 3 arguments (dx dy colour), got 2"),
    ("init-reads-a-later-state-variable", "  (= wires (initnext (length dots) (prev wires)))",
     ERROR, 8, 30, "'dots' has not started yet when 'wires' starts (state variables start in "
     "this order: wires, dots)"),
    ("plain-reads-a-state-variable", "  (= total (length dots))\n  (on (> total 1) (= dots (list)))",
     ERROR, 8, 20, "'dots' has no value yet when 'total' is defined: plain definitions run "
     "before state variables start"),
    ("plain-defined-later", "  (= twice (* half 2))\n  (= half 3)\n  (on (> twice half) (= dots (list)))",
     ERROR, 8, 15, "'half' is defined later in the program than 'twice', which uses it"),
    ("colour-not-css", '  (object Wall (Cell 0 0 "grey50"))\n  (: wall Wall)\n'
     "  (= wall (initnext (Wall (Position 0 0)) (prev wall)))",
     ERROR, 8, 26, "'grey50' is not a CSS colour name (did you mean 'grey'?); a browser would "
     "draw it black"),
    ("colour-in-a-branch", '  (object Lamp (: lit Bool) (Cell 0 0 (if lit then "yelow" else "Black")))\n'
     "  (: lamp Lamp)\n  (= lamp (initnext (Lamp false (Position 2 2)) (prev lamp)))",
     ERROR, 8, 52, "'yelow' is not a CSS colour name (did you mean 'yellow'?); a browser would "
     "draw it black"),
    ("colour-of-a-field", '  (object Lamp (: shade String) (Cell 0 0 shade))\n  (: lamp Lamp)\n'
     '  (= lamp (initnext (Lamp "gold" (Position 2 2)) (prev lamp)))\n'
     '  (on (clicked lamp) (= lamp (updateObj lamp "shade" "goldish")))',
     ERROR, 11, 54, "'goldish' is not a CSS colour name; a browser would draw it black"),
    ("colour-given-to-a-constructor", '  (object Lamp (: lit Bool) (: shade String) '
     '(Cell 0 0 (if lit then shade else "black")))\n  (: lamp Lamp)\n'
     '  (= lamp (initnext (Lamp false "Gold" (Position 2 2)) (prev lamp)))\n'
     '  (on (clicked lamp) (= lamp (Lamp true "golden" (Position 2 2))))',
     ERROR, 11, 41, "'golden' is not a CSS colour name (did you mean 'goldenrod'?); a browser "
     "would draw it black"),
    ("background-not-css", '  (= background "blak")',
     ERROR, 8, 17, "'blak' is not a CSS colour name (did you mean 'black'?); a browser would "
     "draw it black"),
    ("frame-rate-out-of-range", "  (= FRAME_RATE 12)",
     ERROR, 8, 17, "FRAME_RATE is the frames per second people play at, from 3 to 8; got 12"),
    ("frame-rate-zero", "  (= FRAME_RATE 0)",
     ERROR, 8, 17, "FRAME_RATE is the frames per second people play at, from 3 to 8; got 0"),
    ("unused-definition", "  (= speed 3)",
     WARNING, 8, 3, "the definition 'speed' is never used"),
    ("unused-object", '  (object Wall (Cell 0 0 "gray"))',
     WARNING, 8, 3, "the object type 'Wall' is never used"),
    ("declared-never-defined", "  (: lives Number)",
     WARNING, 8, 3, "'lives' is declared but never defined"),
    ("dynamic-scope-only",
     "  (= helper (--> p (+ p bonus)))\n  (= user (--> bonus (helper 1)))\n  (on (> ((user 2)) 1) (= dots (list)))",
     WARNING, 8, 25, "'bonus' is not defined here; only a caller's local of that name "
     "(dynamic scope) could supply it"),
]


LOAD_FAILURES = {"init-reads-a-later-state-variable", "plain-reads-a-state-variable",
                 "plain-defined-later", "operand-count", "malformed-if", "cell-arguments",
                 "unbalanced", "unclosed-definition", "unclosed-inner-list"}
"""Cases whose program fails as soon as it loads: the interpreter agrees on the place. (The
others load, and fail on the step that reaches them, or never, like a declared type the
interpreter does not check at the start.)"""


def test_the_base_program_is_clean_and_runs() -> None:
    source = BASE.format(extra="")
    assert check_source(source, "env.sexp") == ()
    assert load(source).step("left").frame[1][0] == "red"


@pytest.mark.parametrize(("lines", "severity", "line", "column", "message"),
                         [case[1:] for case in BROKEN], ids=[case[0] for case in BROKEN])
def test_a_broken_program_is_reported_at_its_line_and_column(
        lines: str, severity: str, line: int, column: int, message: str) -> None:
    findings = check_source(BASE.format(extra=lines), "env.sexp")
    assert [(f.severity, f.line, f.column, f.message) for f in findings] == [
        (severity, line, column, message)]
    text = str(findings[0]).splitlines()
    assert text[0] == f"env.sexp:{line}:{column}: {severity}: {message}"
    source_line = BASE.format(extra=lines).splitlines()[line - 1]
    assert text[1] == "    " + source_line
    assert text[2] == "    " + " " * (column - 1) + "^"  # the caret under the column


@pytest.mark.parametrize("case", [c for c in BROKEN if c[2] == ERROR and c[0] in LOAD_FAILURES],
                         ids=lambda c: c[0])
def test_the_errors_about_loading_are_where_loading_fails(case) -> None:
    _, lines, _, line, column, _ = case
    with pytest.raises(AutumnError) as failure:
        load(BASE.format(extra=lines))
    assert (failure.value.line, failure.value.column) == (line, column)


def test_an_unclosed_bracket_is_found_where_the_indentation_says_and_at_the_end_otherwise() -> None:
    source = "(program\n  (= GRID_SIZE 10\n  (object Dot (Cell 0 0 \"red\"))\n  (= d (Dot (Position 1 1))))\n"
    (finding,) = check_source(source, "env.sexp")
    assert (finding.line, finding.column) == (2, 3)
    assert str(finding).splitlines()[1:] == ["      (= GRID_SIZE 10", "      ^"]
    (finding,) = check_source("(program (= GRID_SIZE 10) (= d 1", "env.sexp")
    assert (finding.line, finding.column) == (1, 27)  # one line: the innermost open list


def test_an_empty_file_is_one_clear_error() -> None:
    (finding,) = check_source("", "env.sexp")
    assert str(finding).startswith("env.sexp:1:1: error: a program must be exactly one list")


def test_a_long_line_is_shown_around_the_column() -> None:
    padding = " ".join(f"(= pad{i} {i})" for i in range(30))
    source = f"(program {padding} (= n (lengthz (list 1))) )"
    finding = errors(check_source(source, "long.sexp"))[0]
    shown, caret = str(finding).splitlines()[1:]
    assert len(shown) <= 4 + 88 and "lengthz" in shown
    assert shown[len(caret) - 1:].startswith("(lengthz")


@pytest.mark.parametrize("path", sorted(PROGRAMS.glob("*.sexp"))
                         + sorted(FIXTURES.rglob("*.sexp"))
                         + [Path(e.folder) / f"{v}.sexp" for e in library_envs()
                            for v in ("program", "changed")],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_working_programs_have_no_errors(path: Path) -> None:
    assert errors(check_file(path)) == []
    load_file(path)  # and they do load


def test_envs_check_prints_every_finding_and_fails_on_errors(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.sexp", tmp_path / "sub" / "bad.sexp"
    bad.parent.mkdir()
    good.write_text(BASE.format(extra=""))
    bad.write_text(BASE.format(extra=next(c[1] for c in BROKEN if c[0] == "unknown-function") + "\n  (= speed 3)"))
    result = CliRunner().invoke(envs_command, ["check", str(tmp_path)])
    assert result.exit_code == 1
    assert f"{bad}:8:41: error: unknown function 'lengthz'" in result.output
    assert f"{bad}:9:3: warning: the definition 'speed' is never used" in result.output
    assert "2 programs checked: 1 error, 1 warning" in result.output
    quiet = CliRunner().invoke(envs_command, ["check", "-q", str(bad)])
    assert ": error: " in quiet.output and ": warning: " not in quiet.output
    assert CliRunner().invoke(envs_command, ["check", str(good)]).exit_code == 0
    warned = tmp_path / "warned.sexp"
    warned.write_text(BASE.format(extra="  (= speed 3)"))
    assert CliRunner().invoke(envs_command, ["check", str(warned)]).exit_code == 0
    assert CliRunner().invoke(envs_command, ["check", "--strict", str(warned)]).exit_code == 1


def test_envs_check_without_paths_checks_every_registered_program() -> None:
    result = CliRunner().invoke(envs_command, ["check", "-q"])
    assert result.exit_code == 0, result.output
    programs = {s.program for s in registry.list_envs() if s.program}
    assert f"{len(programs)} programs checked: 0 errors" in result.output


def _broken_copy(tmp_path: Path, name: str = "lamp_grid") -> LibraryEnv:
    original = next(e for e in library_envs() if e.name == name)
    folder = tmp_path / name
    shutil.copytree(original.folder, folder)
    program = folder / "changed.sexp"
    program.write_text(program.read_text().replace("(prev", "(prevv", 1))
    return LibraryEnv(name, folder, json.loads((folder / "env.json").read_text()))


def test_a_problem_whose_program_has_errors_is_invalid_before_anything_runs(tmp_path: Path) -> None:
    env = _broken_copy(tmp_path)
    registry.register_env("test/broken-changed", load_file, program=str(env.folder / "changed.sexp"),
                          path=str(env.folder / "changed.sexp"), replace=True)
    data = json.loads(env.problem_path("cd").read_text())
    data["id"], data["params"]["changed_env_id"] = "test/broken-cd", "test/broken-changed"
    report = check_problem(Problem.from_dict(data))
    assert not report.valid
    assert report.reasons[0].startswith(f"static check: {env.folder / 'changed.sexp'}:")
    assert "unknown function 'prevv' (did you mean 'prev'?)" in report.reasons[0]


def test_derive_refuses_an_environment_whose_programs_have_errors(tmp_path: Path) -> None:
    env = _broken_copy(tmp_path)
    before = {p.name: p.read_text() for p in (env.folder / "problems").iterdir()}
    failures = derive_library(envs=[env], samples=2)
    assert len(failures) == 1
    assert failures[0].startswith("lamp_grid: the programs have errors, nothing derived:")
    assert "unknown function 'prevv'" in failures[0]
    assert {p.name: p.read_text() for p in (env.folder / "problems").iterdir()} == before


ROLLOUT = [
    # (case, the lines added, line, column, the message, the tick it fails at, play):
    # statically clean programs whose rollout stage fails
    ("crash-at-tick-50", "  (= t (initnext 0 (+ (prev t) 1)))\n  (on (== t 50) (= dots (list (head (list)))))",
     9, 31, "head of an empty list", 51, "no-op"),
    ("division-by-zero-at-tick-50", "  (= t (initnext 0 (+ (prev t) 1)))\n  (on (== t 50) (= t (/ 1 0)))",
     9, 22, "division by zero", 51, "no-op"),
    ("range-over-the-budget", "  (= n (initnext 0 (prev n)))\n  (on right (= n (length (range 0 200000000))))",
     9, 26, f"step budget exceeded: the step needed more than {STEP_BUDGET:,} evaluations",
     None, "random"),
    ("all-positions-over-the-budget", "  (= n (initnext 0 (prev n)))\n  (on up (= n (length (allPositions 50000))))",
     9, 23, "step budget exceeded", None, "random"),
    ("recursion-over-the-budget", "  (= n (initnext 0 (prev n)))\n  (= f (--> k (if (< k 1) then 1 else (+ (f (- k 1)) (f (- k 1))))))\n"
     "  (on down (= n (f 30)))", 9, 42, "step budget exceeded", None, "random"),
]


@pytest.mark.parametrize(("lines", "line", "column", "message", "tick", "play"),
                         [c[1:] for c in ROLLOUT], ids=[c[0] for c in ROLLOUT])
def test_envs_check_rolls_the_program_out_and_reports_where_it_fails(
        tmp_path: Path, lines: str, line: int, column: int, message: str, tick: int | None,
        play: str) -> None:
    from game_client.debugger import DebugSession

    program = tmp_path / "failing.sexp"
    program.write_text(BASE.format(extra=lines))
    assert errors(check_source(program.read_text(), str(program))) == []  # statically clean
    result = CliRunner().invoke(envs_command, ["check", str(program)])
    assert result.exit_code == 1, result.output
    first = next(x for x in result.output.splitlines() if x.startswith("rollout check: "))
    assert first.startswith(f"rollout check: {program}:{line}:{column}: runtime error: {message}")
    found = re.search(r"\(at tick (\d+), seed (\d+), ([a-z-]+) play; replay: gridstudy play "
                      r"(\S+) --debug --seed \d+ --actions (\S+)\)$", first)
    assert found and found[3] == play and found[4] == str(program), first
    assert tick is None or int(found[1]) == tick
    # The debugger, given the actions written, stops at the same tick with the same error.
    session = DebugSession(program, seed=int(found[2]), actions=read_actions(found[5]))
    assert session.fault is not None and session.fault.tick == int(found[1])
    assert session.fault.message.startswith(f"{program}:{line}:{column}: runtime error: {message}")
    static = CliRunner().invoke(envs_command, ["check", "--steps", "0", str(program)])
    assert static.exit_code == 0 and "rollout" not in static.output


def test_envs_check_rolls_out_a_colour_no_browser_can_draw_that_the_program_computes(
        tmp_path: Path) -> None:
    """A colour that reaches a cell only as the program runs (a field a click sets from a
    definition) is out of the static check's sight: the rollout sees it in the frame,
    and the actions it writes paint it again."""
    program = tmp_path / "lamp.sexp"
    program.write_text(BASE.format(extra=(
        '  (object Lamp (: shade String) (Cell 0 0 shade))\n  (: lamp Lamp)\n'
        '  (= lamp (initnext (Lamp "gold" (Position 4 4)) (prev lamp)))\n  (= dim "goldish")\n'
        '  (on (clicked lamp) (= lamp (updateObj lamp "shade" dim)))')))
    assert check_source(program.read_text(), str(program)) == ()
    result = CliRunner().invoke(envs_command, ["check", str(program)])
    assert result.exit_code == 1, result.output
    first = next(x for x in result.output.splitlines() if x.startswith("rollout check: "))
    assert first.startswith(f"rollout check: {program}: the frame holds 'goldish', not a CSS "
                            "colour name: a browser draws such a cell black, the pygame window "
                            "magenta (at tick "), first
    found = re.search(r"at tick (\d+), seed (\d+), random play; replay: .* --actions (\S+)\)$",
                      first)
    actions = read_actions(found[3])
    assert len(actions) == int(found[1]) and actions[-1] == "click 4 4"
    env = load_file(program)
    env.reset(int(found[2]))
    frames = [env.step(action).frame[4][4] for action in actions]
    assert frames[-1] == "goldish" and "goldish" not in frames[:-1]


def test_envs_check_reports_the_heaviest_step_against_the_budget_env_json_sets(
        tmp_path: Path) -> None:
    program = tmp_path / "program.sexp"
    program.write_text(BASE.format(extra="  (= n (initnext 0 (prev n)))\n"
                                         "  (on right (= n (length (map (--> x x) (range 0 80000)))))"))
    over = CliRunner().invoke(envs_command, ["check", str(program)])
    assert over.exit_code == 1 and "step budget exceeded" in over.output
    (tmp_path / "env.json").write_text(json.dumps({"step_budget": 300_000}))
    raised = CliRunner().invoke(envs_command, ["check", str(program)])
    assert raised.exit_code == 0, raised.output
    assert f"{program}: heaviest step 240,0" in raised.output
    assert "evaluations of a budget of 300,000 (80.0%)" in raised.output
    (tmp_path / "env.json").write_text(json.dumps({"step_budget": "lots"}))
    wrong = CliRunner().invoke(envs_command, ["check", str(program)])
    assert wrong.exit_code == 1
    assert f"{program}: error: step_budget must be a whole number of evaluations" in wrong.output


def test_derive_says_what_each_problem_costs_and_stops_a_step_over_its_budget(
        tmp_path: Path) -> None:
    original = next(e for e in library_envs() if e.name == "lamp_grid")
    folder = tmp_path / "costly_lamps"
    shutil.copytree(original.folder, folder)
    changed = folder / "changed.sexp"
    text = changed.read_text().rstrip()
    assert text.endswith(")")
    changed.write_text(text[:-1] + "\n  (= costly (initnext 0 (prev costly)))\n"
                       "  (on clicked (= costly (length (range 0 200000000))))\n)\n")
    env = LibraryEnv("costly_lamps", folder, json.loads((folder / "env.json").read_text()))
    for env_id, variant in ((env.env_id, "program"), (env.changed_env_id, "changed")):
        registry.register_env(env_id, load_file, path=str(folder / f"{variant}.sexp"),
                              program=str(folder / f"{variant}.sexp"), replace=True)
    lines: list[str] = []
    try:
        failures = derive_library(envs=[env], samples=2, progress=lines.append)
    finally:
        for env_id in (env.env_id, env.changed_env_id):
            registry.unregister(env_id=env_id)
    assert [line for line in lines if line.startswith("deriving")] == [
        f"deriving costly_lamps/{c}" for c in env.challenges]
    costs = [line for line in lines if "heaviest step" in line]
    assert [c.split(":")[0] for c in costs] == ["  costly_lamps/mfp", "  costly_lamps/planning"]
    for cost in costs:
        heaviest = int(cost.split()[3].replace(",", ""))
        assert cost.endswith(f"evaluations of a budget of {STEP_BUDGET:,} "
                             f"({heaviest / STEP_BUDGET:.1%})"), cost
    assert len(failures) == 1 and failures[0].startswith("costly_lamps/cd: no valid problem")
    assert "step budget exceeded" in failures[0] and "changed.sexp:" in failures[0]


def test_problems_check_reports_each_problems_heaviest_step() -> None:
    result = CliRunner().invoke(problems_command, ["check", "--samples", "2", "--seeds", "0",
                                                   "life_board/mfp", "lamp_grid/planning"])
    assert result.exit_code == 0, result.output
    reported = [line.strip() for line in result.output.splitlines() if "heaviest step" in line]
    assert len(reported) == 2
    heaviest = [int(r.split()[2].replace(",", "")) for r in reported]
    assert [r.split(" evaluations ")[1] for r in reported] == [
        f"of a budget of {STEP_BUDGET:,} ({h / STEP_BUDGET:.1%})" for h in heaviest]
    assert heaviest[0] > 1000 > heaviest[1] > 0  # the board of life steps many cells


STUDY_REFUSES = [(c[0], c[1], f"static check: {{program}}:{c[3]}:{c[4]}: error: {c[5]}")
                 for c in BROKEN if c[2] == ERROR] + [
                (c[0], c[1], f"rollout check: {{program}}:{c[2]}:{c[3]}: runtime error: {c[4]}")
                for c in ROLLOUT if c[5] is not None]


@pytest.mark.parametrize(("lines", "reason"), [c[1:] for c in STUDY_REFUSES],
                         ids=[c[0] for c in STUDY_REFUSES])
def test_study_create_refuses_a_study_of_each_broken_program(
        tmp_path: Path, lines: str, reason: str) -> None:
    """Every error of the tables, the static stage's and the rollout's, keeps the study
    that would show it to a participant out of the database."""
    from tests.consent.helpers import study_refusal

    program = tmp_path / "broken.sexp"
    program.write_text(BASE.format(extra=lines))
    registry.register_env("test/broken", load_file, path=str(program), program=str(program),
                          replace=True)
    registry.add_problem(Problem("test/broken/planning", "test/broken", "planning", 0,
                                 {"goal_cells": [[6, 6]], "goal_colours": ["red"], "horizon": 60}),
                         replace=True)
    try:
        refused = study_refusal(tmp_path, "test/broken/planning")
    finally:
        registry.unregister(env_id="test/broken", problem_id="test/broken/planning")
    assert "test/broken/planning: its program has errors" in refused
    assert reason.format(program=program) in refused, refused


def test_envs_check_rolls_out_a_frame_rate_the_program_computes(tmp_path: Path) -> None:
    """A FRAME_RATE the program computes is out of the static check's sight (it sees a
    number written, not a sum): the rollout reads what the program set, and refuses one
    outside 3 to 8 that the server would have played (20 frames a second here, or 8 in
    place of a 0 or a -5 it could not play)."""
    for expression, shown in (("(+ 10 10)", "20"), ("(- 4 4)", "0"), ("(- 0 5)", "-5")):
        program = tmp_path / "fast.sexp"
        program.write_text(BASE.format(extra=f"  (= FRAME_RATE {expression})"))
        assert check_source(program.read_text(), str(program)) == ()
        result = CliRunner().invoke(envs_command, ["check", str(program)])
        assert result.exit_code == 1, result.output
        assert (f"rollout check: {program}: FRAME_RATE is {shown} once the program has "
                "started; it is the frames per second people play at, from 3 to 8 (at tick 0"
                in result.output), result.output
    program.write_text(BASE.format(extra="  (= FRAME_RATE (+ 2 2))"))
    assert CliRunner().invoke(envs_command, ["check", str(program)]).exit_code == 0


def test_envs_check_warns_of_an_object_that_starts_outside_the_grid(tmp_path: Path) -> None:
    """An object placed off the 8x8 grid by a slip (20 for 2) is never drawn, and the
    program ran without a word; the rollout stage now says which, where and from which
    seeds, as a warning (a program may mean an object to wait off the grid). An object
    with one cell on the grid, and one off the grid at the start of one seed only, are
    told apart."""
    program = tmp_path / "slip.sexp"
    program.write_text(BASE.format(extra=(
        '  (object Bar (list (Cell 0 0 "gold") (Cell 1 0 "gold")))\n  (: lamp Dot)\n'
        '  (= lamp (initnext (Dot false (Position 20 3)) (prev lamp)))\n  (: edge Bar)\n'
        '  (= edge (initnext (Bar (Position -1 5)) (prev edge)))\n  (: late Dot)\n'
        '  (= late (initnext (Dot false (Position (uniformChoice (list 2 9)) 0)) (prev late)))\n'
        '  (object Mark (list))\n  (: mark Mark)\n  (= mark (initnext (Mark (Position 30 30)) (prev mark)))')))
    assert check_source(program.read_text(), str(program)) == ()
    result = CliRunner().invoke(envs_command, ["check", str(program)])
    assert result.exit_code == 0, result.output
    warned = [line for line in result.output.splitlines() if ": warning: " in line]
    assert warned[0] == (f"{program}: warning: lamp (a Dot at (20, 3)) starts outside the 8x8 "
                         "grid (from seeds 1 and 2): none of its cells is drawn until it moves in; if "
                         "it is meant to wait off the grid, ignore this"), result.output
    assert not any("edge" in line for line in warned)  # one of its two cells is on the grid
    assert not any("mark" in line for line in warned)  # no cell: drawn nowhere, on or off
    env = load_file(program)
    off = [seed for seed in (1, 2)
           if env.reset(seed) and any(held == "late" for held, _, _ in env.objects_off_grid())]
    assert [line for line in warned if "late" in line] == [
        f"{program}: warning: late (a Dot at (9, 0)) starts outside the 8x8 grid (from "
        f"seed{'s' if len(off) > 1 else ''} {' and '.join(map(str, off))}): none of its cells is drawn until it moves in; if it "
        "is meant to wait off the grid, ignore this"] if off else []
    assert "1 program checked: 0 errors, " in result.output
    strict = CliRunner().invoke(envs_command, ["check", "--strict", str(program)])
    assert strict.exit_code == 1
    quiet = CliRunner().invoke(envs_command, ["check", "-q", str(program)])
    assert quiet.exit_code == 0 and ": warning: " not in quiet.output
