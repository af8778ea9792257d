"""gridstudy report end to end: a stored study in, CSV tables and an HTML page out."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner

from analysis import figures
from analysis.cli import report
from records.store import Store
from tests.analysis.report_study import fill

FIGURES = 10
"""Scores by task type, the participant flow, by problem and by environment, action types, resets by
environment, perplexity, score vs cost, progress, AUV by history setting (the task-DAG
episode has no exploitation step, so no error scatter)."""


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The study stored in SQLite and reported by the command line, once per module."""
    root = tmp_path_factory.mktemp("report")
    database = root / "gridstudy.db"
    with Store(f"sqlite:///{database}") as store:
        fill(store)
    result = CliRunner().invoke(report, ["--db", str(database), "--out", str(root / "out"),
                                         "--t-max", "3", "--k", "2"])
    assert result.exit_code == 0, result.output
    return root / "out", result


def read(path):
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_command_says_what_it_wrote(written):
    out, result = written
    assert result.stdout == f"wrote {out / 'report.html'} (17 episodes)\n"
    assert "report: 100%" in result.stderr  # the progress bar
    assert re.search(r"^read 17 attempts, \d+ events in \d+\.\d s$", result.stderr, re.M)


def test_csv_numbers(written):
    out, _ = written
    human = [r for r in read(out / "problem_scores.csv") if r["agent"] == "human"]
    assert [(r["problem"], r["n"], float(r["score"]), r["ci_low"], r["interval"])
            for r in human] == [
        ("test/report-easy", "3", pytest.approx(0.6), "", "n too small (< 5)"),
        ("test/report-hard", "2", pytest.approx(0.8), "", "n too small (< 5)")]
    auv = {r["agent"]: float(r["auv"]) for r in read(out / "auv.csv")
           if r["challenge"] == "planning"}
    assert auv == {"human": pytest.approx(0.2), "llm:m-1": pytest.approx(5 / 12),
                   "llm:m-2": 0.5, "llm:m-2 [history none]": pytest.approx(1 / 12),
                   "random": pytest.approx(5 / 12)}
    memory = [(r["history"], float(r["auv"]), float(r["memory_index"]))
              for r in read(out / "memory_index.csv")]
    assert memory == [("full", 0.5, pytest.approx(5 / 12)),
                      ("none", pytest.approx(1 / 12), pytest.approx(5 / 12))]
    assert read(out / "random_baseline.csv") == [
        {"env": "test/walker", "P(trigger change)": "0.5", "trigger mean steps": "4.0",
         "trigger samples": "2", "P(reach goal)": "0.5", "goal mean steps": "1.0",
         "goal samples": "2"}]
    cost = read(out / "score_cost.csv")[0]
    assert (cost["agent"], float(cost["cost"]), float(cost["grounding_accuracy"])) == (
        "llm:m-1", pytest.approx(0.07), pytest.approx(5 / 6))


def test_sections_without_data_or_refused_say_why(written):
    out, _ = written
    assert not (out / "at_k.csv").exists()
    page = (out / "report.html").read_text()
    assert "Omitted: llm:m-1 has 1 attempt(s) at test/report-easy; @2 needs n &gt;= 2." in page


def test_header_lists_data_and_parameters(written):
    out, _ = written
    page = (out / "report.html").read_text()
    assert "<p>Studies: report.</p>" in page
    assert ('<tr><td class="text">human</td><td>6</td><td>5</td><td>0</td><td>1</td></tr>') in page
    assert ('<td class="text">participant excluded: failed 2 attention checks</td>'
            '<td>1</td>') in page
    assert '<td class="text">auv</td><td class="text">t_max=3</td>' in page
    assert ('<td class="text">percentile_interval</td><td class="text">q=80, resamples=1000, '
            'seed=0, level=0.95, min_n=5</td>') in page


def test_empty_database_reports_no_data(tmp_path):
    database = tmp_path / "empty.db"
    Store(f"sqlite:///{database}").close()
    result = CliRunner().invoke(report, ["--db", str(database), "--out", str(tmp_path / "out"),
                                         "--quiet"])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "out" / "report.html").read_text()
    assert page.count("No data for this section") == 15  # the flow too
    assert list((tmp_path / "out").iterdir()) == [tmp_path / "out" / "report.html"]


def test_missing_database_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(report, ["--db", f"sqlite:///{tmp_path / 'no.db'}",
                                         "--out", str(tmp_path / "out")])
    assert result.exit_code == 1
    assert "no database at" in result.output


def test_every_figure_is_written_for_a_paper_as_png_svg_and_pdf(written):
    out, _ = written
    folder = out / "figures"
    names = sorted({p.stem for p in folder.iterdir()})
    assert len(names) == FIGURES
    for name in names:
        assert (folder / f"{name}.png").read_bytes().startswith(b"\x89PNG")
        assert b"<svg" in (folder / f"{name}.svg").read_bytes()[:1000]
        assert (folder / f"{name}.pdf").read_bytes().startswith(b"%PDF")


def test_page_opens_in_chromium_with_its_figures(written, page):
    out, _ = written
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((out / "report.html").resolve().as_uri())
    widths = page.eval_on_selector_all("img", "images => images.map(i => i.naturalWidth)")
    assert len(widths) == FIGURES and all(w > 0 for w in widths)
    page.screenshot(path=str(out / "report.png"), full_page=True)
    assert errors == []


def test_the_first_screen_answers_the_question_then_warns(written):
    out, _ = written
    page = (out / "report.html").read_text()
    headline = page.index('id="task_type_scores"')
    assert headline < page.index("Warning: small n") < page.index("<h2>Data used</h2>")
    assert "People against each model, per task type" in page[headline:headline + 300]
    assert page.index("<h2>Data used</h2>") < page.index('id="problem_scores"')


SVG = "{http://www.w3.org/2000/svg}"


def legend_colours(svg: Path) -> dict[str, str]:
    """Agent (a legend label up to its first " (") -> the colour of its legend handle, as
    the SVG file itself gives them."""
    root = ElementTree.parse(svg).getroot()
    by_id = {e.get("id"): e for e in root.iter() if e.get("id", "").startswith("legend-")}
    found = {}
    for key, handle in by_id.items():
        if not key.startswith("legend-handle-"):
            continue
        text = " ".join(t.text for t in by_id[key.replace("handle", "label")].iter(f"{SVG}text"))
        styles = [dict(part.split(": ") for part in e.get("style").split("; "))
                  for e in handle.iter() if e.get("style")]
        paint = [s["fill"] if s.get("fill", "none") != "none" else s["stroke"] for s in styles]
        found[text.split(" (")[0]] = paint[0]
    return found


def test_every_figure_gives_each_agent_one_colour_and_keeps_its_text(written):
    out, _ = written
    svgs = sorted((out / "figures").glob("*.svg"))
    assert len(svgs) == FIGURES
    seen: dict[str, set[str]] = {}
    for svg in svgs:
        if svg.stem == "action_types":  # its legend is the action types, in greys
            continue
        for agent, paint in legend_colours(svg).items():
            seen.setdefault(agent, set()).add(paint)
    assert {"human", "llm:m-1", "llm:m-2", "random"} <= set(seen)
    assert all(len(paints) == 1 for paints in seen.values()), seen
    assert seen["human"] == {figures.HUMAN_COLOUR.lower()}
    assert len({next(iter(p)) for p in seen.values()}) == len(seen)  # no two agents alike
    for svg in svgs:
        text = svg.read_text()
        assert "font-family: 'DejaVu Sans'" in text and "<text" in text  # text, fonts named
        assert "per_100_actions" not in text
    scores = (out / "figures" / "task_type_scores.svg").read_text()
    assert "human (80th percentile per" in scores


def test_each_attempt_is_replayed_once_with_its_own_progress_bar(tmp_path, monkeypatch):
    """The sections that read replays (loop ratio, progress, the task-DAG errors) share
    one replay of each attempt: a task-DAG attempt was replayed by four sections, the
    longest part of a large report, under a bar that stood still meanwhile."""
    import analysis.replay

    database = tmp_path / "gridstudy.db"
    with Store(f"sqlite:///{database}") as store:
        fill(store)
    replayed = []
    real = analysis.replay.replay

    def counted(record):
        replayed.append(record.episode_id)
        return real(record)

    monkeypatch.setattr(analysis.replay, "replay", counted)
    result = CliRunner().invoke(report, ["--db", str(database), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "replaying attempts: 100%" in result.stderr
    assert replayed and sorted(replayed) == sorted(set(replayed))
    explore = [r for r in read(tmp_path / "out" / "progress.csv") if r["challenge"] == "explore"]
    assert explore and float(explore[0]["progress_rate"]) > 0
