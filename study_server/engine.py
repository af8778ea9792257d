"""The engine a participant's browser runs: the ``tasks`` package, as one archive.

Browser play runs the same files as the server (the interpreter, the tick rule, every
challenge), never a second implementation. The archive holds the package's Python
files and the built-in library's programs and problems, in a fixed order with fixed
timestamps, so that the same source always gives the same bytes (and the same digest,
which names it for the browser's cache). numpy is not in the engine's path
(``tasks.core`` and the renderer import it only where it is used).
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from functools import cache
from pathlib import Path

from flask import Blueprint, abort, current_app, send_file

import tasks
from tasks.worldtest.checked import RECORD as CHECK_RECORD

PACKAGE = Path(tasks.__file__).parent
KINDS = (".py", ".sexp", ".json")
"""The files of the package the engine needs: code, programs, problems and metadata."""
_STAMP = (2020, 1, 1, 0, 0, 0)


USER_LIBRARY = "userlib"
"""Where the archive keeps the researcher's library (``$GRIDSTUDY_LIBRARY``): the page
points ``GRIDSTUDY_LIBRARY`` there before the engine loads, so that their environments
and problems play in the browser as they do on the server."""


def engine_files() -> list[Path]:
    """The package's files the archive holds, sorted (no caches)."""
    return _files(PACKAGE)


def user_files() -> list[Path]:
    """The researcher's library's programs and problems (none without a library)."""
    from tasks.library import library_root

    root = library_root()
    return _files(root) if root.is_dir() else []


def _files(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*")
                  if path.is_file() and path.suffix in KINDS and "__pycache__" not in path.parts
                  and path.name != CHECK_RECORD)  # the server's alone, and rewritten by checks


@cache
def engine_archive() -> bytes:
    """The engine as a zip archive: ``tasks/...`` paths, unpacked beside ``sys.path``, and
    the researcher's library under ``userlib/``."""
    from tasks.library import library_root

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for folder, root, files in (("tasks", PACKAGE, engine_files()),
                                    (USER_LIBRARY, library_root(), user_files())):
            for path in files:
                entry = zipfile.ZipInfo(f"{folder}/{path.relative_to(root).as_posix()}", _STAMP)
                entry.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(entry, path.read_bytes())
    return buffer.getvalue()


def engine_digest() -> str:
    """A short hash of :func:`engine_archive` (names the archive for caches)."""
    return hashlib.blake2b(engine_archive(), digest_size=8).hexdigest()


def in_engine(problem_id: str) -> bool:
    """Whether the archive can play ``problem_id``: its environment is the package's own
    (a program under ``tasks/``, or Python code of ``tasks``) or a program of the
    researcher's library, not one registered from elsewhere (a test, a benchmark). Such
    a problem is played by the server even in a study that plays in the browser."""
    from tasks import registry
    from tasks.library import library_root

    spec = registry.env_spec(registry.get_problem(problem_id).env_id)
    if spec.program:
        program = Path(spec.program).resolve()
        return program.is_relative_to(PACKAGE.resolve()) or \
            program.is_relative_to(library_root().resolve())
    entry = spec.entry_point
    module = entry.partition(":")[0] if isinstance(entry, str) else getattr(entry, "__module__", "")
    return module == "tasks" or module.startswith("tasks.")


# -- serving it ---------------------------------------------------------------------------

bp = Blueprint("engine", __name__)
bp.add_app_template_global(engine_digest)

PYODIDE_FILES = frozenset({
    "pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip",
    "pyodide-lock.json",
})
"""What a page needs of the npm package ``pyodide`` (installed by ``make setup``): the
core only, with no package of its own (the engine needs none)."""
_TYPES = {".mjs": "text/javascript", ".wasm": "application/wasm", ".zip": "application/zip",
          ".json": "application/json"}
YEAR = 365 * 24 * 3600


@bp.get("/vendor/pyodide/<name>")
def pyodide_file(name: str):
    """One file of Pyodide, from our own server (no CDN); its version is in the package,
    so a browser may keep it."""
    if name not in PYODIDE_FILES:
        abort(404)
    path = Path(current_app.config["PYODIDE_DIR"]) / name
    if not path.is_file():
        abort(404, f"{name} is missing: run `npm install` (make setup installs it)")
    return send_file(path, mimetype=_TYPES[path.suffix], max_age=YEAR)


@bp.get("/engine/<digest>.zip")
def engine_file(digest: str):
    """The engine archive under its digest: a browser keeps it until the code changes
    (a new digest, a new address)."""
    if digest != engine_digest():
        abort(404, "this engine is not the server's: reload the page")
    response = send_file(io.BytesIO(engine_archive()), mimetype="application/zip",
                         max_age=YEAR, download_name=f"{digest}.zip")
    response.headers["Cache-Control"] += ", immutable"
    return response
