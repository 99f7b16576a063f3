"""The persistent response store every cacheable backend call goes through.

One SQLite file (`responses.sqlite` in the store folder) in WAL mode. A request's key is the
sha256 of the canonical JSON of its four component hashes: the backend's `identity()` (model,
revision, weights hash, sampling), the request's generation `params`, its `messages` and its
`tools` (never the case, turn or step). Each answered request is one row, committed as soon as
its answer arrives, so a run killed at any moment keeps every answer it received; failures
(InfrastructureError) are never stored. The components themselves are kept once each in a
content-addressed `blobs` table, so every stored answer can be traced back to the exact
request, and `explain` can say why a key missed.
"""

from __future__ import annotations

import inspect
import json
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import msgspec

from toolcalib.backends.base import Answer, Backend, InfrastructureError, Request
from toolcalib.jsonio import InputError, builtins, decoder, dumps, sha256_bytes
from toolcalib.records import Emission, Message

FORMAT = "1"
FILE = "responses.sqlite"
COMPONENTS = ("identity", "params", "tools", "messages")
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blobs (sha256 TEXT PRIMARY KEY, json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    identity TEXT NOT NULL, params TEXT NOT NULL, tools TEXT NOT NULL, messages TEXT NOT NULL,
    message_list TEXT NOT NULL,
    emission TEXT NOT NULL
);
"""
NEAREST = 3
CANDIDATES = 200


def _sha(obj: Any) -> str:
    return sha256_bytes(dumps(obj).encode("utf-8"))


@dataclass(frozen=True)
class RequestKey:
    """A request's store key, its component hashes and the components themselves."""

    key: str
    hashes: dict[str, str]
    identity: dict[str, Any]
    params: dict[str, Any]
    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]]

    @cached_property
    def message_hashes(self) -> list[str]:
        return [_sha(message) for message in self.messages]


def request_key(identity: dict[str, Any], messages: list[Message], tools: list[dict[str, Any]],
                params: dict[str, Any]) -> RequestKey:
    """Messages are hashed without default-valued fields, so a new optional field on `Message`
    does not invalidate the store."""
    dumped = [builtins(m, omit_defaults=True) for m in messages]
    parts = {"identity": identity, "params": params, "tools": tools, "messages": dumped}
    hashes = {name: _sha(parts[name]) for name in COMPONENTS}
    return RequestKey(key=_sha(hashes), hashes=hashes, identity=identity, params=params,
                      tools=tools, messages=dumped)


class ResponseStore:
    """Answers by request key in a folder's SQLite file; safe for several processes at once."""

    def __init__(self, folder: str | Path):
        Path(folder).mkdir(parents=True, exist_ok=True)
        self.path = Path(folder) / FILE
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None,
                                   check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(SCHEMA)
        self._db.execute("INSERT OR IGNORE INTO meta VALUES ('format', ?)", (FORMAT,))
        found = self._db.execute("SELECT value FROM meta WHERE name='format'").fetchone()[0]
        if found != FORMAT:
            raise InputError(f"{self.path}: response store format {found}, expected {FORMAT}")

    def __len__(self) -> int:
        count: int = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        return count

    def get(self, key: str) -> Emission | None:
        """The stored answer, or None (also for a row this code's Emission no longer reads)."""
        with self._lock:
            row = self._db.execute("SELECT emission FROM responses WHERE key=?",
                                   (key,)).fetchone()
        if row is None:
            return None
        try:
            return decoder(Emission).decode(row[0])
        except msgspec.MsgspecError:
            return None

    def put(self, request: RequestKey, emission: Emission) -> None:
        """Store one answer and its request's components in one committed transaction."""
        blobs = [(request.hashes[name], dumps(getattr(request, name)))
                 for name in ("identity", "params", "tools")]
        blobs += [(sha, dumps(m)) for sha, m in zip(request.message_hashes, request.messages,
                                                       strict=True)]
        row = (request.key, *(request.hashes[name] for name in COMPONENTS),
               json.dumps(request.message_hashes), dumps(emission))
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR IGNORE INTO blobs VALUES (?, ?)", blobs)
                self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                                 row)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _blob(self, sha: str) -> Any:
        row = self._db.execute("SELECT json FROM blobs WHERE sha256=?", (sha,)).fetchone()
        return None if row is None else json.loads(row[0])

    def explain(self, request: RequestKey) -> str:
        """Why `request` is (not) in the store: the components that differ from the nearest
        stored entries, down to identity/params fields, tool names and message positions."""
        if self.get(request.key) is not None:
            return f"hit: {request.key[:12]} is stored"
        score = " + ".join(f"({name} = ?)" for name in COMPONENTS)
        with self._lock:
            rows = self._db.execute(
                f"SELECT key, {', '.join(COMPONENTS)}, message_list, {score} AS score "
                f"FROM responses WHERE score > 0 ORDER BY score DESC LIMIT {CANDIDATES}",
                [request.hashes[name] for name in COMPONENTS]).fetchall()
            if not rows:
                return (f"miss: no stored entry shares any component (identity, params, tools, "
                        f"messages) with this request; the store holds {len(self)} entries")
            mine = request.message_hashes
            rows.sort(key=lambda r: (-r[-1], -_common_prefix(mine, json.loads(r[5]))))
            lines = [f"miss: {request.key[:12]} is not stored; nearest entries:"]
            lines += [self._describe(request, row) for row in rows[:NEAREST]]
        return "\n".join(lines)

    def _describe(self, request: RequestKey, row: tuple[Any, ...]) -> str:
        stored = dict(zip(COMPONENTS, row[1:5], strict=True))
        same = [name for name in COMPONENTS if stored[name] == request.hashes[name]]
        diffs = []
        for name, label in (("identity", "identity differs"), ("params", "params differ")):
            if name not in same:
                fields = _field_diff(self._blob(stored[name]) or {}, getattr(request, name))
                diffs.append(f"{label} ({'; '.join(fields)})")
        if "tools" not in same:
            tools = _tools_diff(self._blob(stored["tools"]) or [], request.tools)
            diffs.append(f"tools differ ({tools})")
        if "messages" not in same:
            theirs, mine = json.loads(row[5]), request.message_hashes
            common = _common_prefix(mine, theirs)
            where = (f"message {common} ({request.messages[common].get('role')}) differs"
                     if common < min(len(mine), len(theirs)) else "one extends the other")
            diffs.append(f"messages differ (stored {len(theirs)}, now {len(mine)}; first "
                         f"{common} equal; {where})")
        return (f"  - {row[0][:12]}: same {', '.join(same) or 'nothing'}; "
                f"{'; '.join(diffs)}")

    def close(self) -> None:
        self._db.close()


def _common_prefix(a: list[str], b: list[str]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(obj, dict) and (obj or not prefix):
        out: dict[str, Any] = {}
        for name, value in obj.items():
            out.update(_flatten(value, f"{prefix}{name}."))
        return out
    return {prefix.rstrip("."): obj}


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def _field_diff(stored: dict[str, Any], now: dict[str, Any]) -> list[str]:
    a, b = _flatten(stored), _flatten(now)
    missing = object()
    return [f"{field}: stored {_short(a[field]) if field in a else 'absent'}, "
            f"now {_short(b[field]) if field in b else 'absent'}"
            for field in sorted(a.keys() | b.keys())
            if a.get(field, missing) != b.get(field, missing)]


def _tools_diff(stored: list[dict[str, Any]], now: list[dict[str, Any]]) -> str:
    a = {str(t.get("name")): _sha(t) for t in stored}
    b = {str(t.get("name")): _sha(t) for t in now}
    parts = [f"{label} {sorted(names)}" for label, names in (
        ("added", b.keys() - a.keys()), ("removed", a.keys() - b.keys()),
        ("changed", {n for n in a.keys() & b.keys() if a[n] != b[n]})) if names]
    return ", ".join(parts) or "same docs in another order"


class StoredBackend:
    """Wraps a backend: hits come from the store, misses go to it in one batch and each
    successful answer is committed as soon as the inner backend reports it (via an optional
    `on_answer(index, answer)` argument of its `generate_batch`, else when the batch returns).
    """

    def __init__(self, inner: Backend, store: ResponseStore, explain_misses: int = 0):
        self.inner = inner
        self.explain_misses = explain_misses
        self.explanations: list[str] = []
        """Why the first `explain_misses` misses missed, when the store had other answers."""
        self.store = store
        self.name = inner.name
        self.cacheable = inner.cacheable
        self._identity = inner.identity()
        self._streams = "on_answer" in inspect.signature(inner.generate_batch).parameters
        self.hits = self.misses = self.errors = 0

    def identity(self) -> dict[str, Any]:
        return self._identity

    def key(self, request: Request) -> RequestKey:
        return request_key(self._identity, request.messages, request.tools, request.params)

    def explain(self, request: Request) -> str:
        return self.store.explain(self.key(request))

    def generate_batch(self, requests: list[Request]) -> list[Answer]:
        keys = [self.key(request) for request in requests]
        answers: dict[int, Answer] = {}
        missing: list[int] = []
        for i, k in enumerate(keys):
            if (stored := self.store.get(k.key)) is None:
                missing.append(i)
            else:
                answers[i] = stored
        self.hits += len(requests) - len(missing)
        self.misses += len(missing)
        if not missing:
            return [answers[i] for i in range(len(requests))]
        for i in missing[: max(self.explain_misses - len(self.explanations), 0)]:
            if len(self.store):
                self.explanations.append(self.store.explain(keys[i]))

        def commit(index: int, answer: Answer) -> None:
            if isinstance(answer, Emission):
                self.store.put(keys[missing[index]], answer)

        batch = [requests[i] for i in missing]
        if self._streams:  # its `generate_batch` takes `on_answer` (checked in `__init__`)
            streaming: Callable[..., list[Answer]] = self.inner.generate_batch
            fresh = streaming(batch, on_answer=commit)
        else:
            fresh = self.inner.generate_batch(batch)
            for index, answer in enumerate(fresh):
                commit(index, answer)
        for i, answer in zip(missing, fresh, strict=True):
            answers[i] = answer
            self.errors += isinstance(answer, InfrastructureError)
        return [answers[i] for i in range(len(requests))]
