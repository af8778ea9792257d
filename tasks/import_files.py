"""Reading the files of an AutumnBench task folder (:mod:`tasks.importer`): each error
names the file and what was expected."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tasks.autumn import AutumnError, load

NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_-]*)_([a-z]+)\.json$")
"""A prompt file: ``<env>_<challenge>.json``, the challenge one with a harness reader."""


def harness_challenges() -> tuple[str, ...]:
    """The challenges a harness folder can hold (those that read its files), in order."""
    from tasks.worldtest.challenge import challenges

    return tuple(name for name, c in challenges().items() if c.harness)


def _expected(joiner: str) -> str:
    return joiner.join(f"<env>_{name}.json" for name in harness_challenges())


class FolderError(ValueError):
    """A malformed AutumnBench folder: the message names the file and what was expected."""


def parse_colour_dict(text: str, source: str = "color_dict.yaml") -> dict[int, str]:
    """The harness's colour table: one ``<integer>: <name>`` per line (a YAML subset).

    >>> parse_colour_dict("0: transparent\\n1: black  # background\\n")
    {0: 'transparent', 1: 'black'}
    """
    colours: dict[int, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        key, colon, value = line.partition(":")
        value = value.strip().strip("'\"").strip()
        if not colon or not key.strip().isdecimal() or not value:
            raise FolderError(f"{source} line {number}: expected '<integer>: <colour name>', "
                              f"got {line!r}")
        colours[int(key)] = value
    if not colours:
        raise FolderError(f"{source}: no colours; expected lines '<integer>: <colour name>'")
    return colours


def prompt_files(folder: Path) -> dict[str, set[str]]:
    if not (folder / "prompts").is_dir():
        raise FolderError(f"{folder / 'prompts'}: missing; expected prompts/ with "
                          + _expected(", ") + " files")
    known = harness_challenges()
    found: dict[str, set[str]] = {}
    for path in (folder / "prompts").iterdir():
        match = NAME.match(path.name)
        if match and match[2] in known:
            found.setdefault(match[1], set()).add(match[2])
    if not found:
        raise FolderError(f"{folder / 'prompts'}: no " + _expected(", ") + " files")
    return found


def program_source(path: Path) -> str:
    source = read_text(path)
    try:
        load(source, name=path.name)
    except AutumnError as error:
        raise FolderError(f"{path}: not a program our interpreter runs: {error}") from None
    return source


def changed_program(folder: Path, name: str) -> str:
    prompt = read_json(folder / "prompts" / f"{name}_cd.json")
    candidates = [folder / "programs" / f"{name}_change_detection_wrong_program.sexp"]
    if isinstance(prompt.get("wrong_program"), str):
        candidates.append(folder / "programs" / f"{prompt['wrong_program']}.sexp")
    for path in candidates:
        if path.is_file():
            return program_source(path)
    raise FolderError(f"{folder / 'prompts' / f'{name}_cd.json'}: the changed program is "
                      f"missing; expected one of {', '.join(str(p) for p in candidates)}")


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FolderError(f"{path}: missing") from None
    except (OSError, UnicodeDecodeError) as error:
        raise FolderError(f"{path}: cannot be read ({error})") from None


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as error:
        raise FolderError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(data, dict):
        raise FolderError(f"{path}: expected a JSON object")
    return data


def json_field(data: dict[str, Any], key: str, kind: type, path: Path) -> Any:
    value = data.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        kind_name = {int: "an integer", list: "a list"}.get(kind, kind.__name__)
        raise FolderError(f"{path}: expected {key!r} to be {kind_name}, got {value!r:.80}")
    return value
