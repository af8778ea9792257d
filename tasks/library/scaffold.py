"""A new library environment, ready to edit (``gridstudy envs new NAME --category C``).

The folder it writes is complete on its own, so adding an environment touches that folder
only: a small working program (a walker that lights up when clicked, plus a wandering
spark for a stochastic one), its changed variant with one rule different, documentation
for researchers in ``env.json``, and recipes that derive three valid problems from the
skeleton as it stands. The author then replaces the program and the recipes, and runs the
commands :func:`next_steps` lists.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tasks.library import CATEGORIES, LIBRARY, OWN, library_root
from tasks.worldtest.challenge import challenges

NAME = re.compile(r"[a-z][a-z0-9_]{1,39}")

_PROGRAM = """\
; {name}: {summary}
; Replace this skeleton with the environment; `gridstudy envs check` checks it,
; `gridstudy play autumn/{name} --debug` shows its state while you play it.
(program
  (= GRID_SIZE 10)
  (= FRAME_RATE 4)

  (object Walker (: lit Bool) (Cell 0 0 (if lit then "gold" else "royalblue")))
  (object Wall (Cell 0 0 "gray"))
{spark_object}
  (: walker Walker)
  (= walker (initnext (Walker false (Position 4 4)) (prev walker)))

  (: walls (List Wall))
  (= walls (initnext (map (--> x (Wall (Position x 2))) (range 2 8)) (prev walls)))
{spark_state}
  (on left (= walker (moveLeftNoCollision walker)))
  (on right (= walker (moveRightNoCollision walker)))
  (on up (= walker (moveUpNoCollision walker)))
  (on down (= walker (moveDownNoCollision walker)))
  (on (clicked walker) (= walker (updateObj walker "lit" (! (.. walker lit)))))
)
"""

_SPARK_OBJECT = '  (object Spark (Cell 0 0 "orangered"))\n'
_SPARK_STATE = """
  (= drifts (list (Position -1 0) (Position 1 0) (Position 0 0)))
  (: spark Spark)
  (= spark (initnext (Spark (Position 5 8))
                     (let (= moved (move (prev spark) (uniformChoice drifts)))
                          (if (isWithinBounds moved) then moved else (prev spark)))))
"""

_CHANGED_RULE = ("(on up (= walker (moveUpNoCollision walker)))",
                 "(on up (= walker (moveDownNoCollision walker)))")
"""The skeleton's one changed rule: in the changed program the up arrow moves down."""


def _meta(name: str, category: str, stochastic: bool) -> dict:
    title = name.replace("_", " ").capitalize()
    description = ("The arrows walk a blue walker; grey walls block it, and so does the grid's "
                   "edge. Clicking the walker lights it up (gold) or dims it again.")
    discoveries = ["the arrows move the walker", "walls and the edge block it",
                   "clicking the walker switches its light"]
    if stochastic:
        description += " An orange spark drifts left, right or stays, at random, each step."
        discoveries.append("the spark drifts at random, along its row")
    return {
        "title": title,
        "category": category,
        "stochastic": stochastic,
        "description": description,
        "discoveries": discoveries,
        "changed": "The up arrow moves the walker down.",
        "recipes": {
            "mfp": {"seed": 3, "actions": ["left", "left", "down", "click 2 5", "right", "noop"]},
            "planning": {"seed": 3, "plan": ["down", "right", "click 5 5"]},
            "cd": {"seed": 3, "witness": ["left", "down", "up", "noop"]},
        },
    }


def create(name: str, category: str, *, stochastic: bool = False,
           library: Path | None = None) -> Path:
    """Write the folder ``library/name`` (default: the user's library's ``autumn``
    folder); ``ValueError`` says what is wrong with the request."""
    library = library_root() / OWN if library is None else library
    if not NAME.fullmatch(name):
        raise ValueError(f"{name!r}: a name is 2-40 lower-case letters, digits and underscores, "
                         "starting with a letter (it becomes the id autumn/NAME)")
    if category not in CATEGORIES:
        raise ValueError(f"{category!r}: the category is one of " + ", ".join(sorted(CATEGORIES)))
    folder = library / name
    if folder.exists():
        raise ValueError(f"{folder} exists already; choose another name")
    if library.resolve() != LIBRARY.resolve() and (LIBRARY / name).is_dir():
        raise ValueError(f"gridstudy's library has an environment '{name}' already "
                         "(autumn/NAME names one environment); choose another name")
    summary = "a walker, walls and a light" + (", and a drifting spark" if stochastic else "")
    program = _PROGRAM.format(name=name, summary=summary,
                              spark_object=_SPARK_OBJECT if stochastic else "",
                              spark_state=_SPARK_STATE if stochastic else "")
    changed = program.replace(*_CHANGED_RULE).replace(
        f"; {name}: {summary}", f"; {name}, changed: the up arrow moves the walker down.")
    folder.mkdir(parents=True)
    (folder / "problems").mkdir()
    (folder / "program.sexp").write_text(program)
    (folder / "changed.sexp").write_text(changed)
    (folder / "env.json").write_text(json.dumps(_meta(name, category, stochastic), indent=1) + "\n")
    return folder


def next_steps(folder: Path) -> list[str]:
    """What the author does next, as commands."""
    name = folder.name
    return [
        f"edit {folder / 'program.sexp'} (and changed.sexp: the same program, one rule changed)",
        f"gridstudy envs check {folder}",
        f"gridstudy play autumn/{name} --debug",
        f"edit {folder / 'env.json'}: the description, discoveries and the three recipes",
        f"gridstudy problems derive {name}",
        "gridstudy problems check " + " ".join(f"{name}/{challenge}" for challenge, c in
                                               challenges().items() if c.from_recipe),
    ]
