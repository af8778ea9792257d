"""The records every analysis reads: events, episodes, and the dataset that holds them.

Their fields are the record's own (:mod:`records.schema`): an :class:`EventRecord` has
every event field, an :class:`EpisodeRecord` every field of the episode as a reader sees
it (``EPISODE_VIEW``: the attempt, who made it, whether it counts). A field added to the
schema appears here, in the database and in the export at once. A person's attempt and
a model's differ only in ``agent_kind``.

Grid frames are not loaded with the events: ``episode.frame(event)`` or
``dataset.frame(hash)`` fetch one when asked, and remember it. The same data as typed
pandas DataFrames are the dataset's ``episodes``, ``events``, ``turns`` and
``participants`` (:mod:`analysis.dataframes`). Excluded attempts stay in the dataset with their
reasons (:attr:`EpisodeRecord.exclusion_reasons`) so that a report can say what it left
out.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from analysis.columns import Same, compact
from records import schema
from records.flow import LEFT_OUT, standing
from records.rebuild import replays

Frame = list[list[str]]
FINISHED = ("done", "abandoned")
"""A model's attempt that ended one of these ways counts (abandoned: scored 0)."""
EVENT_FIELDS = schema.EVENT.without("id")
_BOOLEANS = tuple(f.name for f in EVENT_FIELDS if f.type == schema.BOOL)


def _dataclass_field(declared: schema.Field) -> tuple[str, Any, Any]:
    if declared.type == schema.JSON:
        return declared.name, dict, field(default_factory=dict)
    if declared.default is not None and declared.default != schema.NOW:
        return declared.name, Any, field(default=declared.default)
    return declared.name, Any, field()


def _record_class(name: str, fields: list, doc: str, **options: Any) -> type:
    made = dataclasses.make_dataclass(name, fields, kw_only=True, **options)
    made.__module__, made.__doc__ = __name__, doc
    return made


EventRecord = _record_class(
    "EventRecord", [(f.name, Any) for f in EVENT_FIELDS],
    "One event: an applied action, or a refused model turn, humans and models alike "
    "(every field of records.schema.EVENT but the row id).", frozen=True)
_EpisodeFields = _record_class(
    "_EpisodeFields", [_dataclass_field(f) for f in schema.EPISODE_VIEW.fields],
    "The fields of records.schema.EPISODE_VIEW.")


def memo(episode: EpisodeRecord, key: Any, compute: Callable[[], Any]) -> Any:
    """``compute()``, kept with the episode's events (:meth:`Events.memo`) so that it is
    computed once per episode; computed each time for events held as a plain list."""
    keep = getattr(episode.events, "memo", None)
    return keep(key, compute) if keep is not None else compute()


def event_record(row: dict[str, Any]) -> EventRecord:
    """An EventRecord from a mapping with every event field (a database or file row)."""
    values = {f.name: row[f.name] for f in EVENT_FIELDS}
    for name in _BOOLEANS:
        if values[name] is not None:
            values[name] = schema.EVENT.field(name).parse(values[name])
    return EventRecord(**values)


def event_values(episode: EpisodeRecord, name: str) -> Sequence[Any]:
    """One field of every event of ``episode``, in order (by column when it has them)."""
    events = episode.events
    column = getattr(events, "column", None)
    return column(name) if column is not None else [getattr(e, name) for e in events]


def event_sum(episode: EpisodeRecord, name: str, empty: Any = 0) -> Any:
    """The sum of one numeric field over the episode's events, nulls left out; ``empty``
    when every value is null (a column of one value is multiplied, not added up)."""
    values = event_values(episode, name)
    if isinstance(values, Same):
        return empty if values.value is None or not values.length else values.value * values.length
    present = [v for v in values if v is not None]
    return sum(present) if present else empty


def events_by_episode(names: Sequence[str], rows: Iterable[Sequence[Any]],
                      shared: dict[Any, Any] | None = None) -> dict[Any, Events]:
    """Rows of event fields named ``names`` (a query's or a file's, ordered by episode and
    seq) as :class:`Events` per episode id, each column held compactly
    (:func:`compact`; texts interned in ``shared``, one dictionary per load, so a frame
    hash seen in many episodes is held once); booleans parsed as :func:`event_record`
    does."""
    at = list(names).index("episode_id")
    shared = {} if shared is None else shared
    found: dict[Any, Events] = {}
    for episode_id, chunk in itertools.groupby(rows, key=lambda row: row[at]):
        if episode_id in found:
            raise ValueError(f"events of episode {episode_id} are not together: order the "
                             "rows by episode and seq")
        found[episode_id] = _columns(names, list(chunk), shared)  # one episode at a time
    return found


def _columns(names: Sequence[str], rows: list[Sequence[Any]], shared: dict[Any, Any]) -> Events:
    columns: dict[str, Sequence[Any]] = {}
    for name, values in zip(names, zip(*rows, strict=True), strict=True):
        if name in _BOOLEANS:
            parse = schema.EVENT.field(name).parse
            values = [None if v is None else parse(v) for v in values]
        columns[name] = compact(schema.EVENT.field(name).type, values, shared)
    return Events(columns)


def episode_record(row: dict[str, Any], grid_frames: FrameSource) -> EpisodeRecord:
    """An EpisodeRecord from a mapping with every episode field (CSV text or a DB row)."""
    values = {f.name: f.parse(row.get(f.name)) for f in schema.EPISODE_VIEW.fields}
    values["agent_kind"] = values["agent_kind"] or schema.UNKNOWN
    # a database row, or an export made before the column existed: named here
    values["agent"] = values["agent"] or schema.agent_name(values["agent_kind"], values["model"],
                                                           values["agent_config"])
    values["n_events"] = values["n_events"] or 0
    return EpisodeRecord(**values, grid_frames=grid_frames)


class Events(Sequence):
    """One episode's events, in order, held as columns (event field -> values); an
    :class:`EventRecord` is made only when one is asked for.

    A study of millions of events is millions of small objects as records, and most of
    an analysis reads three or four fields of each: the columns are read directly by the
    metrics that know them (:meth:`column`), and what is derived from an episode's
    events once (its interaction actions, its symbols) is kept (:meth:`memo`).
    Iterating, indexing and comparing behave as for a list of records.
    """

    __slots__ = ("columns", "_memo")

    def __init__(self, columns: dict[str, Sequence[Any]]) -> None:
        lengths = {len(values) for values in columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"event columns of different lengths: {sorted(lengths)}")
        missing = [f.name for f in EVENT_FIELDS if f.name not in columns]
        if missing:
            raise ValueError(f"event columns missing: {', '.join(missing)}")
        self.columns = {f.name: columns[f.name] for f in EVENT_FIELDS}
        self._memo: dict[Any, Any] = {}

    @classmethod
    def of(cls, records: Sequence[EventRecord]) -> Events:
        """The columns of ``records`` (records in seq order)."""
        return cls({f.name: [getattr(r, f.name) for r in records] for f in EVENT_FIELDS})

    def __len__(self) -> int:
        return len(self.columns["seq"])

    def __iter__(self) -> Iterator[EventRecord]:
        names = list(self.columns)
        for values in zip(*self.columns.values(), strict=True):
            yield EventRecord(**dict(zip(names, values, strict=True)))

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return EventRecord(**{name: values[index] for name, values in self.columns.items()})

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # mutable memo, compared by value

    def __repr__(self) -> str:
        return f"Events({len(self)} events)"

    def column(self, name: str) -> Sequence[Any]:
        """The values of one field, in event order."""
        return self.columns[name]

    def memo(self, key: Any, compute: Any) -> Any:
        """``compute()``, computed once per key for these events."""
        try:
            return self._memo[key]
        except KeyError:
            value = self._memo[key] = compute()
            return value

    def known(self, key: Any, default: Any = None) -> Any:
        """What :meth:`memo` kept under ``key``, or ``default`` (nothing is computed)."""
        return self._memo.get(key, default)

    def interaction_texts(self) -> list[str]:
        """The applied interaction-phase action texts (the metrics' common input)."""
        def compute() -> list[str]:
            c = self.columns
            return [action for phase, action, applied in zip(c["phase"], c["action"], c["applied"])
                    if phase == "interaction" and action is not None and applied is not False]
        return self.memo("interaction", compute)


class FrameSource:
    """Frames by hash, fetched on first use and then remembered. ``fetch_many`` (keys ->
    {key: frame}), where the source has it, fetches many at once (:meth:`many`): one
    query per few hundred frames instead of one each."""

    def __init__(self, fetch: Any, fetch_many: Any = None) -> None:
        self._fetch = fetch
        self._fetch_many = fetch_many
        self._cache: dict[str, Frame] = {}

    def __call__(self, key: str) -> Frame:
        frame = self._cache.get(key)
        if frame is None:
            frame = self._cache[key] = self._fetch(key)
        return frame

    def many(self, keys: Sequence[str]) -> list[Frame]:
        """The frames of ``keys``, in order, those not yet remembered fetched together."""
        missing = list(dict.fromkeys(k for k in keys if k not in self._cache))
        if missing and self._fetch_many is not None:
            self._cache.update(self._fetch_many(missing))
        return [self(key) for key in keys]


@dataclass(kw_only=True)
class EpisodeRecord(_EpisodeFields):
    """One attempt at one problem, with its events in order."""

    events: Sequence[EventRecord] = field(default_factory=list)
    """A list of records, or :class:`Events` (columns) as the loaders give."""
    grid_frames: FrameSource | None = field(default=None, compare=False, repr=False)

    @property
    def is_human(self) -> bool:
        return self.agent_kind == schema.HUMAN

    @property
    def is_incomplete(self) -> bool:
        """A model's attempt that has not finished: interrupted, cut short by its provider
        or an environment error, or still running. It is not scored until it is resumed,
        and the report warns about it; a model's attempt that ended by the model's doing
        (abandoned: invalid replies, turn or budget limit) is finished and scores 0."""
        return not self.is_human and self.status not in FINISHED

    @property
    def exclusion_reasons(self) -> tuple[str, ...]:
        """Why the attempt is left out of aggregation; empty when it counts. A person's
        attempt counts when it is done; a model's when it finished (done or abandoned)."""
        reasons = []
        if self.is_incomplete:
            reasons.append(f"incomplete ({self.status})")
        elif self.is_human and self.status != "done":
            reasons.append(f"episode {self.status}")
        if not self.included:
            reasons.append(self.exclusion_reason or "excluded")
        status = standing(self.participant_status, self.participant_exclusion_reason)
        if status in LEFT_OUT:  # a person's standing (records.flow.standing)
            why = self.participant_exclusion_reason
            reasons.append(f"participant {status}" + (f": {why}" if why else ""))
        return tuple(reasons)

    @property
    def is_included(self) -> bool:
        return not self.exclusion_reasons

    @property
    def actions(self) -> list[str]:
        """The applied action texts, in order (enough to replay the episode)."""
        return [e.action for e in self.events if replays(e)]

    def frames(self, keys: Sequence[str]) -> list[Frame]:
        """The frames with hashes ``keys``, in order (fetched together: :meth:`FrameSource.many`)."""
        if self.grid_frames is None:
            raise LookupError("this record was built without a frame source; use load()")
        return self.grid_frames.many(keys)

    def frame(self, event: EventRecord | str) -> Frame | None:
        """The frame after ``event`` (or with hash ``event``); None if none was stored."""
        key = event if isinstance(event, str) else event.frame_hash
        if key is None:
            return None
        if self.grid_frames is None:
            raise LookupError("this record was built without a frame source; use load()")
        return self.grid_frames(key)


class Dataset:
    """What one :func:`analysis.load.load` selected, as tables and as records.

    ``episodes``, ``events``, ``turns`` and ``participants`` are pandas DataFrames typed
    from the schema (:mod:`analysis.dataframes`; the first three are built on first use
    and kept). ``records`` are the :class:`EpisodeRecord` objects the metrics read, each
    with its events; iterating the dataset gives them. ``grid_frames`` fetches the stored
    grid frames by hash (``dataset.frame(hash)``).
    """

    def __init__(self, source: str, records: list[EpisodeRecord], grid_frames: FrameSource,
                 participants: Any = None, scope: tuple[str, ...] = ()) -> None:
        self.source, self.records, self.grid_frames = source, records, grid_frames
        self.scope = scope
        """What the report covers, in sentences (``analysis.scope``): shown first."""
        self._participants = participants
        self._tables: Any = None

    def __repr__(self) -> str:
        return f"Dataset({self.source!r}, {len(self.records)} episodes)"

    def __iter__(self) -> Iterator[EpisodeRecord]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def _dataframes(self) -> Any:
        if self._tables is None:
            from analysis.dataframes import dataframes

            self._tables = dataframes(self)
        return self._tables

    @property
    def episodes(self) -> Any:
        """One row per attempt (episodes.csv's columns, ``agent`` and ``counted``)."""
        return self._dataframes().episodes

    @property
    def events(self) -> Any:
        """One row per event (events.jsonl's columns and ``agent``)."""
        return self._dataframes().events

    @property
    def turns(self) -> Any:
        """The model turns: events whose ``source`` is ``agent``."""
        return self._dataframes().turns

    @property
    def participants(self) -> Any:
        """The selected studies' participants (participants.jsonl's columns); none when
        the dataset was not loaded from a source."""
        if self._participants is None:
            from analysis.dataframes import typed

            self._participants = typed([], schema.PARTICIPANT.fields)
        return self._participants

    def frame(self, key: str) -> Frame:
        """The grid frame stored under hash ``key``."""
        return self.grid_frames(key)

    def included(self) -> list[EpisodeRecord]:
        return [e for e in self.records if e.is_included]

    def excluded(self) -> dict[int, tuple[str, ...]]:
        """Episode id -> reasons, for every episode left out of aggregation."""
        return {e.episode_id: e.exclusion_reasons for e in self.records if not e.is_included}

    def by_problem(self) -> dict[str, list[EpisodeRecord]]:
        out: dict[str, list[EpisodeRecord]] = {}
        for episode in self.records:
            out.setdefault(episode.problem_id, []).append(episode)
        return out
