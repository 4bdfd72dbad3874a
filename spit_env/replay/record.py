"""Replay records: one game kept as JSON, enough to rebuild every state through the core.

A replay is a view of snapshots, like the text render: it is written from the core's public
``snapshot()`` and events, and read back by rebuilding the game with ``core.init`` / ``core.step``
from the recorded config, seed, game id, deal and actions. Nothing here knows a rule of Spit.

Record format (``schema`` "spit-env-replay", ``schema_version`` 1), one JSON object:

====================  ===========================================================================
key                   value
====================  ===========================================================================
``schema``            "spit-env-replay"
``schema_version``    1 (a reader refuses any other version)
``created_by``        "spit-env <version>"
``config``            ``SpitConfig.to_dict()`` of the game (``core.row_config``: its seats' own
                      latency models, by kind and parameters)
``seed``              int, the seed of the game's random streams (``core.init``)
``game_id``           int, the game id of ``seed`` (its latency draws, tie coins, re-deals)
``deal``              [pack0, pack1]: the card ids of each player's pack, index 0 dealt first (D3)
``players``           two dicts, seat 0 first: ``name`` (a profile, model path or "human"),
                      ``latency`` (the seat's latency label); more keys may follow
``initial``           the snapshot at the game's start (after the first spit, clock 0 or later)
``steps``             one dict per core step, in order: ``actions`` [a0, a1] (egocentric action ids
                      the seats submitted, WAIT for a busy seat), ``events`` (the step's events,
                      docs/RULES.md "Events"), ``snapshot`` (the table after the step); and,
                      only when a seat's latency was given rather than drawn (a human's real
                      reaction), ``latency_ms`` [l0, l1] (``core.step(latency_ms=...)``, -1 drawn)
``outcome``           ``winner`` (seat, -1 none), ``terminated``, ``truncated``, ``rounds``,
                      ``clock_ms``, ``steps``, ``result`` (one line of text)
====================  ===========================================================================

Snapshots are the dicts of ``core.snapshot`` (stocks bottom -> top with face-up flags, spit
cards next first, centre piles bottom -> top, clock, round, phase, scores, moves in flight...).
A key the snapshots gained later (``moved_ms``) is missing from the records made before it:
:func:`check` compares the keys a recorded snapshot holds.
A record is complete when its last snapshot's phase is "over"; a record of a game stopped early
(a human who quit) is allowed and says so in its outcome.

Functions::

    recorder = Recorder(state, players)          # right after core.init (batch of one game)
    state, out = core.step(state, actions, events=True); recorder.add(actions[0], state, out)
    # a step with given latencies:
    #   core.step(..., latency_ms=lat); recorder.add(..., latency_ms=lat[0])
    record = recorder.record()                   # a JSON-serialisable dict
    save(record, path); record = load(path)      # load validates the schema and its version
    for snap in rebuild(record): ...             # the states again, through the core
    check(record)                                # rebuilt states == recorded ones, else ValueError
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path

import numpy as np

from .. import core, rules
from ..config import SpitConfig

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "Recorder",
    "deal_of",
    "outcome_of",
    "save",
    "load",
    "validate",
    "rebuild",
    "check",
]

SCHEMA = "spit-env-replay"
SCHEMA_VERSION = 1

_TOP_KEYS = ("schema", "schema_version", "config", "seed", "game_id", "deal", "players", "initial",
             "steps", "outcome")
_SNAPSHOT_KEYS = ("clock_ms", "round", "phase", "stocks", "spit", "centre", "in_flight", "winner")


def _version() -> str:
    try:
        return metadata.version("spit-env")
    except metadata.PackageNotFoundError:  # a source tree that was not installed
        return "unknown"


def deal_of(snapshot: dict) -> tuple[list[int], list[int]]:
    """The two packs (D3 order) that lay out the table of a game-start snapshot.

    At a game's start no card has left the stocks, and the centre piles hold only spit cards,
    so each pack is the stock cards in D3 order, then the spit cards already turned (centre pile,
    bottom -> top), then those still held (next first).

    Raises:
        ValueError: the snapshot is not one of a game's start (cards missing or repeated).
    """
    packs = []
    for p in range(rules.N_PLAYERS):
        stocks = snapshot["stocks"][p]
        pack = []
        for i in range(rules.STOCK_CARDS):
            place, level = int(rules.DEAL_PLACE[i]), int(rules.DEAL_LEVEL[i])
            if level < len(stocks[place]):
                pack.append(int(stocks[place][level][0]))
        pack += [int(c) for c in snapshot["centre"][p]] + [int(c) for c in snapshot["spit"][p]]
        packs.append(pack)
    rules.check_deal(packs, "deal (read from the start snapshot)")
    return packs[0], packs[1]


def outcome_of(snapshot: dict, steps: int, names: Sequence[str]) -> dict:
    """The ``outcome`` entry of a record whose last snapshot is ``snapshot``."""
    winner = int(snapshot["winner"])
    over = snapshot["phase"] == "over"
    if not over:
        result = f"stopped before the end, in round {snapshot['round'] + 1}"
    elif snapshot["truncated"]:
        result = "truncated at a limit (a draw)"
    elif winner >= 0:
        result = f"{names[winner]} wins"
    else:
        result = "a draw"
    return {
        "winner": winner,
        "terminated": bool(snapshot["terminated"]),
        "truncated": bool(snapshot["truncated"]),
        "finished": over,
        "rounds": int(snapshot["round"]),
        "clock_ms": int(snapshot["clock_ms"]),
        "steps": int(steps),
        "result": result,
    }


class Recorder:
    """Builds a record while a game is played on the core.

    Args:
        state: a CoreState right after ``core.init`` (or ``core.reset`` of ``row``).
        players: the two seats' names (profiles, model paths, "human"), seat 0 first, or two
            dicts with at least a ``name``.
        row: the row of ``state`` that is recorded (default 0).
        deal: the deal the game was started with; None reads it from the start snapshot.

    Raises:
        ValueError: bad players or row, or a start snapshot that no deal lays out.
    """

    def __init__(self, state: core.CoreState, players, *, row: int = 0, deal=None):
        if isinstance(players, (str, bytes)) or len(players) != rules.N_PLAYERS:
            raise ValueError(f"players must be two names or dicts, seat 0 first, got {players!r}")
        self.row = row
        self.initial = core.snapshot(state, row)
        self.config = core.row_config(state, row)  # the game's latencies, if its own
        self.seed = int(state.seed)
        self.game_id = int(state.game_id[row])
        if deal is None:
            deal = deal_of(self.initial)
            again = core.init(self.config, 1, self.seed, first_game=self.game_id, deals=[deal])
            if core.snapshot(again, 0) != self.initial:  # e.g. a round that ended at the start
                raise ValueError("deal: the start snapshot does not show the deal; pass deal=")
        self.deal = rules.check_deal(deal)
        self.players = []
        for seat, player in enumerate(players):
            entry = dict(player) if isinstance(player, dict) else {"name": str(player)}
            if not isinstance(entry.get("name"), str) or not entry["name"]:
                raise ValueError(f"players[{seat}] needs a non-empty 'name', got {player!r}")
            entry.setdefault("latency", self.config.latency[seat].label)
            self.players.append(entry)
        self.steps: list[dict] = []

    @property
    def last(self) -> dict:
        """The latest snapshot recorded."""
        return self.steps[-1]["snapshot"] if self.steps else self.initial

    def add(self, actions, state: core.CoreState, out: core.StepOutput, latency_ms=None) -> dict:
        """Record one ``core.step``; returns the entry.

        ``actions`` (2,) the row's submitted action ids, ``state`` after the step, ``out`` its
        output (stepped with ``events=True``), ``latency_ms`` (2,) the row's given latencies if
        the step had any (-1: drawn).

        Raises:
            ValueError: ``out`` carries no events, or actions are not two action ids.
        """
        if out.events is None:
            raise ValueError(
                "out: step the core with events=True so that the replay has the events"
            )
        acts = [rules.check_action(int(a)) for a in np.asarray(actions).reshape(-1)]
        if len(acts) != rules.N_PLAYERS:
            raise ValueError(f"actions must be the row's two action ids, got {actions!r}")
        entry = {"actions": acts, "events": out.events.for_row(self.row),
                 "snapshot": core.snapshot(state, self.row)}
        if latency_ms is not None and (np.asarray(latency_ms) != -1).any():
            entry["latency_ms"] = [int(v) for v in np.asarray(latency_ms).reshape(-1)]
        self.steps.append(entry)
        return entry

    def record(self) -> dict:
        """The record (a JSON-serialisable dict, format in the module docstring)."""
        names = [p["name"] for p in self.players]
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "created_by": f"spit-env {_version()}",
            "config": self.config.to_dict(),
            "seed": self.seed,
            "game_id": self.game_id,
            "deal": [list(self.deal[0]), list(self.deal[1])],
            "players": [dict(p) for p in self.players],
            "initial": self.initial,
            "steps": list(self.steps),
            "outcome": outcome_of(self.last, len(self.steps), names),
        }


# --- files ---------------------------------------------------------------------------------------
def save(record: dict, path) -> Path:
    """Write ``record`` as compact JSON (validated first). Returns the path.

    Raises:
        ValueError: an invalid record (see :func:`validate`).
    """
    validate(record)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, separators=(",", ":")))
    return path


def load(path) -> dict:
    """Read and validate a record file.

    Raises:
        ValueError: the file cannot be read, is not JSON, is not a spit-env replay, has another
            schema version, or is malformed; the message names the file and the problem.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"replay file {str(path)!r} cannot be read: {err}") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"replay file {str(path)!r} is not JSON: {err}") from None
    try:
        validate(record)
    except ValueError as err:
        raise ValueError(f"replay file {str(path)!r}: {err}") from None
    return record


def _fail(where: str, what: str):
    raise ValueError(f"{where}: {what}")


def validate(record) -> SpitConfig:
    """Check a record's schema, version and shape (not its game: see :func:`check`).

    Returns:
        The record's SpitConfig.

    Raises:
        ValueError: naming the first problem found.
    """
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        got = record.get("schema") if isinstance(record, dict) else type(record).__name__
        raise ValueError(f"not a spit-env replay (expected \"schema\": {SCHEMA!r}, got {got!r})")
    version = record.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ValueError(
            f"schema_version {version!r} is not supported: this spit-env ({_version()}) reads "
            f"replay schema version {SCHEMA_VERSION}; re-record the game with this version, or "
            "install the spit-env version that wrote it")
    missing = [k for k in _TOP_KEYS if k not in record]
    if missing:
        raise ValueError(f"missing key(s) {missing}")
    try:
        config = SpitConfig.from_dict(record["config"])
    except ValueError as err:
        raise ValueError(f"config: {err}") from None
    for key in ("seed", "game_id"):
        if isinstance(record[key], bool) or not isinstance(record[key], int):
            _fail(key, f"must be an integer, got {record[key]!r}")
    rules.check_deal(record["deal"], "deal")
    players = record["players"]
    if not isinstance(players, list) or len(players) != 2 or not all(
            isinstance(p, dict) and isinstance(p.get("name"), str) for p in players):
        _fail("players", f"must be two dicts with a 'name', got {players!r}")
    _check_snapshot(record["initial"], "initial")
    steps = record["steps"]
    if not isinstance(steps, list):
        _fail("steps", f"must be a list, got {type(steps).__name__}")
    for k, step in enumerate(steps):
        where = f"steps[{k}]"
        if not isinstance(step, dict) or not {"actions", "events", "snapshot"} <= step.keys():
            _fail(where, "must be a dict with 'actions', 'events' and 'snapshot'")
        acts = step["actions"]
        if (
            not isinstance(acts, list)
            or len(acts) != 2
            or not all(
                isinstance(a, int) and not isinstance(a, bool) and 0 <= a < rules.N_ACTIONS
                for a in acts
            )
        ):
            _fail(
                f"{where}.actions", f"must be two action ids 0-{rules.N_ACTIONS - 1}, got {acts!r}"
            )
        if not isinstance(step["events"], list) or not all(
                isinstance(e, dict) and e.get("type") in rules.EVENT_NAMES for e in step["events"]):
            _fail(f"{where}.events", "must be a list of event dicts with a known 'type'")
        _check_snapshot(step["snapshot"], f"{where}.snapshot")
        given = step.get("latency_ms", [-1, -1])
        if (
            not isinstance(given, list)
            or len(given) != 2
            or not all(
                isinstance(v, int) and not isinstance(v, bool) and (v == -1 or v >= 1)
                for v in given
            )
        ):
            _fail(f"{where}.latency_ms", f"must be two values, -1 or whole ms >= 1, got {given!r}")
    if not isinstance(record["outcome"], dict):
        _fail("outcome", "must be a dict")
    return config


def _check_snapshot(snap, where: str) -> None:
    if not isinstance(snap, dict):
        _fail(where, f"must be a snapshot dict, got {type(snap).__name__}")
    missing = [k for k in _SNAPSHOT_KEYS if k not in snap]
    if missing:
        _fail(where, f"snapshot is missing {missing}")


# --- rebuilding ----------------------------------------------------------------------------------
def rebuild(record: dict) -> Iterator[dict]:
    """The snapshots of the recorded game rebuilt through the core.

    The start, then one per recorded step (``core.init`` with the record's config, seed, game id
    and deal, then ``core.step`` with each step's actions).

    Raises:
        ValueError: an invalid record, or a recorded action the core rejects.
    """
    config = validate(record)
    state = core.init(
        config, 1, record["seed"], first_game=record["game_id"], deals=[record["deal"]]
    )
    yield core.snapshot(state, 0)
    for k, step in enumerate(record["steps"]):
        try:
            given = step.get("latency_ms")
            state, _ = core.step(
                state,
                np.array([step["actions"]], dtype=np.int64),
                latency_ms=None if given is None else np.array([given], dtype=np.int64),
            )
        except ValueError as err:
            raise ValueError(
                f"steps[{k}].actions: the core rejects {step['actions']}: {err}"
            ) from None
        yield core.snapshot(state, 0)


def check(record: dict) -> int:
    """Rebuild the game through the core and compare every state with the recorded snapshot.

    Returns:
        The number of states compared (steps + 1).

    Raises:
        ValueError: an invalid record, or the first state that differs (step and field named).
    """
    validate(record)
    recorded = [record["initial"]] + [s["snapshot"] for s in record["steps"]]
    n = 0
    for k, snap in enumerate(rebuild(record)):
        want = recorded[k]
        if any(key not in snap for key in want):  # a key it has that snapshots do not
            snap = {**snap, **{key: None for key in want if key not in snap}}
        snap = {key: snap[key] for key in want}  # an older record lacks the newer keys
        if snap != want:
            field = next((key for key in snap if snap[key] != want.get(key)), "?")
            where = "initial" if k == 0 else f"steps[{k - 1}].snapshot"
            raise ValueError(
                f"{where}: the core rebuilds a different state ({field!r}: recorded "
                f"{want.get(field)!r}, rebuilt {snap[field]!r})")
        n += 1
    return n
