"""The class poll's rooms, questions and votes: a small SQL store, one code path (SQLAlchemy Core) for SQLite and
PostgreSQL (torch-free, UI-free).

The one setting: `KVVIZ_POLL_DB`, an SQLAlchemy URL. Unset, the store is the SQLite file poll.sqlite3 in the user's
data folder ($XDG_DATA_HOME/kvviz, else ~/.local/share/kvviz; made on first use), never inside the package or the
checkout; deploy/run_class.sh sets it to a file in its run directory. SQLite runs in WAL mode with a busy timeout,
set on every connection by a connect event: several server processes on one host (nginx replicas) share it safely, a
writer waiting its turn instead of failing. For PostgreSQL give e.g. `KVVIZ_POLL_DB=postgresql://user@host/kvviz`
(psycopg 3 is the driver: `postgresql://` means `postgresql+psycopg://`).

One writer per room at a time. Every write transaction starts with BEGIN IMMEDIATE on SQLite (it takes the database's
write lock at once, so two processes never deadlock upgrading a read lock, and a vote's phase check and its insert
are one step). On PostgreSQL (READ COMMITTED) every write locks the room's row first (SELECT ... FOR UPDATE): a vote
checks the phase and inserts under that lock, and Lock, Reveal, Reset and the rest take the same lock, so a vote in
flight either commits before the Lock returns or sees the room locked; none counts after. Upserts and the rate-limit
counter are single statements (INSERT ... ON CONFLICT DO UPDATE, the counter `votes + 1`), never read-then-write.

The schema is versioned: kvviz.poll.migrations (Alembic) upgrades a store in place when it opens, one process
at a time, so a store written by an earlier kvviz keeps its rooms and votes.

A room: a join code of CODE_CHARS characters from CODE_ALPHABET (no 0/O, 1/I/L, U/V look-alikes; 29^6, about
5.9 x 10^8 codes: a guess at random hits one of 100 live rooms about once in 6 million tries), typed on a phone in
any case; a host key (secrets.token_urlsafe, 32 bytes), returned once by create_room and stored only as its SHA-256,
so neither the code nor the database gives it away. A room idle for ROOM_IDLE_S (4 hours) is expired: refused like a
forged code, and purged (its questions and votes with it).

A room shows one step at a time: its current step, round (1, or 2 after "vote again", round 1 kept) and phase
(open, locked, revealed). The teacher's side stores the step's one PollQuestion (open_step), language-free (its texts
are Messages, kvviz.poll.question): each phone draws it in its own language; phones vote by index. Each step keeps its
last round and phase when the room moves on, and a revealed round is final:
open_step on a step whose round was revealed (Back, an old tab reloaded) gives that revealed state back and moves
nothing; only the teacher's explicit vote_again / poll_again opens a new round, and go_to_step (the teacher's Next
or Back) moves the room to a revealed step to show its result. Every host action bumps the room's version.

One row per (room, step, round, voter): a voter's latest vote counts. A voter is a browser's token (the UI makes
it); only its SHA-256 is stored and nothing exported names it. A voter casts at most VOTES_PER_MINUTE votes a minute
in a room: a thousand clicks from one browser that keeps its token change the count by at most one, the rest refused
with a message. A script can make a fresh token for every vote, so a room also takes at most `per_address` voters
(VOTERS_PER_ADDRESS, 2, unless the teacher sets another number for a shared-address network) from one client address
(the UI gives it: the connection's, or nginx's X-Real-IP), and, when the teacher sets the class size, the votes past
it on a question are held back: stored apart, never counted, named on the projector. One address opens at most
ROOMS_PER_ADDRESS_HOUR rooms an hour; a room lives at most ROOM_MAX_LIFE_S (a school day) whatever its votes; the
idle and the old rooms are purged every PURGE_EVERY_S, at the next store call.

A store fault (the database stopped, its file unwritable, its lock held past the busy timeout) is StoreUnavailable,
a PollRefused like the others: the lesson goes on without the poll, and the next call tries the database again. A
vote that was not stored raises VoteNotStored, so no phone is told its vote counted. A SQLite file deleted or
replaced under the running server is noticed before each commit (the file at the path is compared with the one the
connection opened): the store says so in one line on stderr, drops its connections and starts afresh in a new file.
check_url refuses a URL that cannot be a poll store (not a URL, another database, SQLite in memory: each connection
would see its own empty database) in one sentence; `python -m kvviz.poll.store` checks KVVIZ_POLL_DB and
connects once (deploy/run_class.sh runs it before starting the replicas).

Every refusal is a PollRefused subclass whose str() is a user-facing sentence in the current language.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import logging
import os
import secrets
import sys
import time
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import event, exc

from kvviz import i18n
from kvviz.i18n import N_, _, ngettext
from kvviz.poll.question import PollQuestion

ENV_URL = "KVVIZ_POLL_DB"
DATA_ENV = "XDG_DATA_HOME"  # the user's data folder (freedesktop.org's base directories): kvviz/poll.sqlite3 in it
ROOM_IDLE_S = 4 * 3600  # a room nobody touched for this long is expired
ROOM_MAX_LIFE_S = 12 * 3600  # a room lives at most a school day, whatever its votes
PURGE_EVERY_S = 600  # the idle and the old rooms are purged this often (at the next store call), not only on create
ROOMS_PER_ADDRESS_HOUR = 5  # rooms one client address may open in an hour: a teacher needs one, a script many
VOTERS_PER_ADDRESS = 2  # voters one client address may bring into a room, unless its teacher sets another number
MAX_PER_ADDRESS = 1000  # the teacher's bounds: a whole school behind one address
MAX_CLASS_SIZE = 1000
CONNECT_TIMEOUT_S = 5  # PostgreSQL: a stopped server is a fault in seconds, not a page that hangs
CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTWXYZ"  # no 0/O, 1/I/L, U/V: read aloud or off a projector, typed on a phone
CODE_CHARS = 6
VOTES_PER_MINUTE = 10  # per voter and room: enough to change one's mind, not to script a flood
BUSY_TIMEOUT_MS = 10_000  # SQLite: how long a writer waits for another process's transaction
ACTIVE_EVERY_S = 60  # a vote refreshes its room's last-active time at most this often (one write a minute, not a vote)
PHASES = ("open", "locked", "revealed")
SCHEMA_LOCK = 0x6B76_7669_7A50  # PostgreSQL: the advisory lock one process holds while it migrates ("kvvizP")
ROUNDS = (1, 2)

metadata = sa.MetaData()
rooms = sa.Table(
    "poll_rooms",
    metadata,
    sa.Column("code", sa.String(16), primary_key=True),
    sa.Column("host_key_sha256", sa.String(64), nullable=False),
    sa.Column("created_s", sa.Float, nullable=False),
    sa.Column("active_s", sa.Float, nullable=False),
    sa.Column("step", sa.Integer, nullable=False),  # 0: no step opened yet
    sa.Column("round", sa.Integer, nullable=False),
    sa.Column("phase", sa.String(16), nullable=False),
    sa.Column("n_choices", sa.Integer, nullable=False),  # the current step's, so a vote reads one row
    sa.Column("version", sa.Integer, nullable=False, server_default="0"),
)  # bumped by every host action
steps = sa.Table(  # each step the room has shown: its last round and phase, kept when the room moves on
    "poll_steps",
    metadata,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("round", sa.Integer, nullable=False),
    sa.Column("phase", sa.String(16), nullable=False),
)
questions = sa.Table(
    "poll_questions",
    metadata,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("poll_json", sa.Text, nullable=False),  # PollQuestion.to_json: one per step, in no language
)
votes = sa.Table(
    "poll_votes",
    metadata,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("round", sa.Integer, primary_key=True),
    sa.Column("voter_sha256", sa.String(64), primary_key=True),
    sa.Column("choice", sa.Integer, nullable=False),
    sa.Column("voted_s", sa.Float, nullable=False),
)
views = sa.Table(  # the phones that drew a step's question: the projector's "Voted N of M" counts them (M)
    "poll_views",
    metadata,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("voter_sha256", sa.String(64), primary_key=True),
    sa.Column("seen_s", sa.Float, nullable=False),
)
voters = sa.Table(  # the rate limit: votes in the current minute, per voter and room
    "poll_voters",
    metadata,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("voter_sha256", sa.String(64), primary_key=True),
    sa.Column("minute", sa.Integer, nullable=False),
    sa.Column("votes", sa.Integer, nullable=False),
)
results = sa.Table(  # the teacher's "the room got it / missed it" per step (class mode without a poll)
    "poll_results",
    metadata,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("right", sa.Boolean, nullable=False),
)
limits = sa.Table(  # the teacher's settings for a room: voters per client address, the class size (None: unset)
    "poll_limits",
    metadata,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("per_address", sa.Integer, nullable=False),
    sa.Column("class_size", sa.Integer, nullable=True),
)
clients = sa.Table(  # which voters each client address brought into a room (hashes only)
    "poll_clients",
    metadata,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("client_sha256", sa.String(64), primary_key=True),
    sa.Column("voter_sha256", sa.String(64), primary_key=True),
)
held = sa.Table(  # votes past the class size: kept apart, never counted, named on the projector
    "poll_held",
    metadata,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("round", sa.Integer, primary_key=True),
    sa.Column("voter_sha256", sa.String(64), primary_key=True),
)
openers = sa.Table(  # who opened which room when: at most ROOMS_PER_ADDRESS_HOUR an hour per client address
    "poll_openers",
    metadata,
    sa.Column("code", sa.String(16), primary_key=True),
    sa.Column("client_sha256", sa.String(64), nullable=False),
    sa.Column("created_s", sa.Float, nullable=False),
)
_ROOM_TABLES = (questions, votes, voters, results, limits, clients, held, steps, views)  # rows that go with their room
log = logging.getLogger("kvviz.poll")


# ----- refusals ----------------------------------------------------------------------------------------------------
class PollRefused(Exception):
    """A refused request; str() is its sentence for the user, in the current language."""

    message = N_("The poll refused this request.")

    def __str__(self) -> str:
        return _(self.message)


class RoomNotFound(PollRefused):
    message = N_(
        "No open room has this code. Check it with your teacher: a room closes after 4 hours without "
        "activity, and 12 hours after it opened."
    )


class NotHost(PollRefused):
    message = N_("Only the teacher who opened this room can do that (the host link is missing or wrong).")


class NoSuchChoice(PollRefused):
    message = N_("That is not one of this question's choices.")


class VotingClosed(PollRefused):
    message = N_("Voting on this question is closed: wait for the teacher to open the next one.")


class NotRevealed(PollRefused):
    message = N_("The votes are shown when the teacher reveals the answer.")


class TooManyVotes(PollRefused):
    message = N_("Too many votes from this browser: wait a minute, then vote again. Your last vote still counts.")


class TooManyVotersHere(PollRefused):
    """A new voter from a client address that has brought the room's limit already."""

    def __init__(self, per_address: int) -> None:
        super().__init__(per_address)
        self.per_address = per_address

    def __str__(self) -> str:
        return ngettext(
            "This room takes {n} voter from each network address, and yours has voted: this vote was "
            "not counted. If your class shares one address, ask your teacher to allow more.",
            "This room takes {n} voters from each network address, and yours has them all: this vote "
            "was not counted. If your class shares one address, ask your teacher to allow more.",
            self.per_address,
        ).format(n=self.per_address)


class HeldBack(PollRefused):
    message = N_(
        "The room has as many votes as the class has students: yours is held back, not counted. Tell your teacher."
    )


class TooManyRooms(PollRefused):
    message = N_(
        "This network address has opened too many rooms in the last hour: keep using the room you have, "
        "or try again in an hour."
    )


class StoreUnavailable(PollRefused):
    """The database failed (stopped, unwritable, locked too long, its file gone): the poll waits, the lesson not."""

    message = N_("The class poll cannot reach its store: the lesson goes on without it.")


class VoteNotStored(StoreUnavailable):
    message = N_(
        "The class poll cannot reach its store, so your vote was not counted: tap your choice again in a moment."
    )


class StoreReplaced(StoreUnavailable):
    message = N_("The class poll's store file was deleted or replaced: the poll starts afresh in a new room.")


class BadStoreURL(ValueError):
    """KVVIZ_POLL_DB cannot be a poll store; str() is the sentence that says why."""


# ----- records -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NewRoom:
    code: str
    host_key: str  # shown once, to the teacher: the store keeps only its hash


@dataclass(frozen=True)
class RoomState:
    code: str
    step: int  # 0 before the first step opens
    round: int
    phase: str  # "open", "locked" or "revealed"
    created_s: float
    active_s: float
    version: int = 0  # the room's: bumped by every host action (a phone redraws when it changes)


@dataclass(frozen=True)
class Tally:
    step: int
    round: int
    counts: tuple[int, ...]  # votes per choice, in the poll's order
    right: int  # the right choice's index

    @property
    def voted(self) -> int:
        return sum(self.counts)

    @property
    def right_votes(self) -> int:
        return self.counts[self.right]

    @property
    def share_right(self) -> float | None:
        """The share of votes on the right choice (None when nobody voted)."""
        return self.right_votes / self.voted if self.voted else None


def default_path() -> Path:
    """The store's file when KVVIZ_POLL_DB is unset: poll.sqlite3 in the user's data folder ($XDG_DATA_HOME/kvviz,
    else ~/.local/share/kvviz), never inside the package (an installed copy would write beside site-packages)."""
    data = os.environ.get(DATA_ENV, "").strip()
    base = Path(data) if data and Path(data).is_absolute() else Path.home() / ".local" / "share"  # the spec: a
    return base / "kvviz" / "poll.sqlite3"  # relative one is void


def database_url() -> str:
    """KVVIZ_POLL_DB, else the SQLite file default_path() (its folder made here)."""
    url = os.environ.get(ENV_URL, "").strip()
    if url:
        return url
    path = default_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def check_url(url: str) -> sa.URL:
    """`url` as the store opens it (postgresql:// means psycopg 3); BadStoreURL, in one sentence, when it cannot be a
    poll store: not a URL, a database other than SQLite or PostgreSQL, or SQLite in memory (every connection, so
    every server thread, would see its own empty database)."""
    shown = url if len(url) <= 80 else url[:80] + "…"
    try:
        url_obj = sa.make_url(url)
    except (exc.ArgumentError, ValueError):
        raise BadStoreURL(
            _(
                "{env} is not a database URL (got {value!r}): give sqlite:////path/to/poll.sqlite3 or "
                "postgresql://user@host/db."
            ).format(env=ENV_URL, value=shown)
        ) from None
    backend = url_obj.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise BadStoreURL(
            _("{env} names {backend}: the class poll keeps its votes in SQLite or PostgreSQL only.").format(
                env=ENV_URL, backend=backend
            )
        )
    if url_obj.drivername == "postgresql":
        url_obj = url_obj.set(drivername="postgresql+psycopg")
    try:
        url_obj.get_dialect().import_dbapi()  # the driver named (postgresql+psycopg2, say) is installed
    except (ImportError, exc.NoSuchModuleError):
        raise BadStoreURL(
            _(
                "{env} names the driver {driver}, which is not installed here: write postgresql:// "
                "(psycopg 3) or sqlite:///."
            ).format(env=ENV_URL, driver=url_obj.drivername)
        ) from None
    if backend == "sqlite" and (url_obj.database in (None, "", ":memory:") or "memory" in str(url_obj.query)):
        raise BadStoreURL(
            _(
                "{env} names an in-memory SQLite database, which every server thread would see empty: "
                "give a file, e.g. sqlite:////path/to/poll.sqlite3."
            ).format(env=ENV_URL)
        )
    return url_obj


def _file_id(path: str) -> tuple[int, int] | None:
    """The file at `path` as the system knows it (device, inode); None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def normalize_code(code: object) -> str | None:
    """A code as typed ("abc 234", "ABC-234", a phone's full-width "ＡＢＣ２３４", "ABC–234" with a look-alike dash)
    -> "ABC234"; None when it cannot be a room code. NFKC first (full-width letters, digits and spaces become ASCII),
    then spaces, underscores and every dash (Unicode's Pd) are dropped."""
    if not isinstance(code, str) or len(code) > 4 * CODE_CHARS:
        return None
    text = "".join(
        ch
        for ch in unicodedata.normalize("NFKC", code).upper()
        if not (ch.isspace() or ch == "_" or unicodedata.category(ch) == "Pd")
    )
    return text if len(text) == CODE_CHARS and all(ch in CODE_ALPHABET for ch in text) else None


class PollStore:
    """The rooms, questions and votes in one SQL database (SQLite or PostgreSQL), shared by every server process.

    `clock` gives the time in seconds (tests inject one to expire a room)."""

    def __init__(self, url: str | None = None, clock: Callable[[], float] = time.time) -> None:
        url_obj = check_url(url or database_url())  # BadStoreURL: a URL that can never work is refused at once
        self.clock = clock
        self.is_sqlite = url_obj.get_backend_name() == "sqlite"
        self.path = url_obj.database if self.is_sqlite else None
        self.engine = sa.create_engine(
            url_obj,
            pool_pre_ping=not self.is_sqlite,
            connect_args={} if self.is_sqlite else {"connect_timeout": CONNECT_TIMEOUT_S},
        )
        self._reader = self.engine.execution_options(kvviz_read=True)
        if self.is_sqlite:
            self._sqlite_settings()
        self._ready = False  # the tables are made at the first call that reaches the database (and after a new file)
        self._purged_s = float("-inf")
        with suppress(exc.DBAPIError, OSError):  # the database is away: the poll waits for it (every call tries
            self._ensure_tables()  # again), the server starts

    # ----- the connection's settings and the one transaction --------------------------------------------------------
    def _sqlite_settings(self) -> None:
        @event.listens_for(self.engine, "connect")
        def _on_connect(dbapi_connection, _record):
            # Python's sqlite3 opens its own transactions at odd moments; SQLAlchemy's begin event does it instead
            # (the SQLAlchemy documentation's recipe for pysqlite), so SAVEPOINT and BEGIN IMMEDIATE work.
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")  # readers never block the writer, across processes
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA synchronous=NORMAL")  # WAL's safe setting: a power cut may lose the last votes
            cursor.close()
            _record.info["kvviz_file"] = _file_id(self.path)  # the file this connection opened

        @event.listens_for(self.engine, "begin")
        def _on_begin(connection):
            # a read stays deferred (a phone polling the count never waits for the write lock)
            read = connection.get_execution_options().get("kvviz_read", False)
            connection.exec_driver_sql("BEGIN" if read else "BEGIN IMMEDIATE")

    @contextmanager
    def _transaction(self, read: bool = False) -> Iterator[sa.Connection]:
        """One transaction; a database fault becomes StoreUnavailable (logged in one line), and a SQLite file
        deleted or replaced under the server is noticed before anything commits (StoreReplaced)."""
        try:
            self._ensure_tables()
            with (self._reader if read else self.engine).begin() as conn:
                self._check_file(conn)
                yield conn
                self._check_file(conn)  # the last moment before the commit: a vote is never kept in a lost file
        except _FileReplaced:
            print(
                f"kvviz poll: the store file {self.path} was deleted or replaced under the running server; "
                "nothing more is written to the old one, the poll starts afresh in a new file",
                file=sys.stderr,
            )
            self.engine.dispose()  # every connection to the old file closed; the next call opens the new one
            self._ready = False
            raise StoreReplaced() from None
        except (exc.DBAPIError, exc.TimeoutError, exc.DisconnectionError, OSError) as fault:
            if isinstance(fault, exc.IntegrityError):
                raise  # a duplicate key: the caller's business (a code drawn twice)
            log.warning("kvviz poll: the store failed, the poll waits for it: %s", str(fault).splitlines()[0])
            raise StoreUnavailable() from fault

    def _check_file(self, conn: sa.Connection) -> None:
        """(SQLite.) StoreReplaced when the file at the store's path is not the one this connection opened: it was
        deleted or replaced. The store then drops its connections and makes its tables again at the next call."""
        if not self.is_sqlite:
            return
        opened = conn.connection.info.get("kvviz_file")
        if opened is None or _file_id(self.path) != opened:
            raise _FileReplaced()

    def _ensure_tables(self) -> None:
        """The schema at its newest version (kvviz.poll.migrations): made in an empty database, upgraded in
        place in an older one. One process migrates at a time (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory
        lock held to the commit); the next finds the store at head and changes nothing."""
        if self._ready:
            return
        from kvviz.poll import migrations as poll_migrations

        with self.engine.begin() as conn:
            if not self.is_sqlite:
                conn.execute(sa.select(sa.func.pg_advisory_xact_lock(SCHEMA_LOCK)))
            poll_migrations.upgrade(conn)
        self._ready = True

    @staticmethod
    def _insert(conn: sa.Connection, table: sa.Table):
        """The dialect's INSERT, which has ON CONFLICT (PostgreSQL's and SQLite's own)."""
        if conn.dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        return insert(table)

    def _upsert(self, conn: sa.Connection, table: sa.Table, key: dict, values: dict) -> None:
        """Insert the row; when its key exists, update it: one atomic statement (INSERT ... ON CONFLICT DO UPDATE)."""
        conn.execute(
            self._insert(conn, table)
            .values(**key, **values)
            .on_conflict_do_update(index_elements=[table.c[k] for k in key], set_=values)
        )

    def _insert_new(self, conn: sa.Connection, table: sa.Table, row: dict) -> None:
        """Insert the row unless its key is there already (INSERT ... ON CONFLICT DO NOTHING)."""
        conn.execute(self._insert(conn, table).values(**row).on_conflict_do_nothing())

    # ----- rooms --------------------------------------------------------------------------------------------------
    def create_room(self, client: str | None = None) -> NewRoom:
        """A new room: its code and its host key (shown once; the store keeps only a hash). `client`: the opener's
        address (None: this computer), which opens at most ROOMS_PER_ADDRESS_HOUR rooms an hour (TooManyRooms)."""
        self.purge_expired()
        now = self.clock()
        opener = _hash(f"client:{client}")
        for _attempt in range(8):
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_CHARS))
            host_key = secrets.token_urlsafe(32)
            try:
                with self._transaction() as conn:
                    if (
                        client is not None
                        and conn.execute(
                            sa.select(sa.func.count())
                            .select_from(openers)
                            .where(openers.c.client_sha256 == opener, openers.c.created_s > now - 3600)
                        ).scalar_one()
                        >= ROOMS_PER_ADDRESS_HOUR
                    ):
                        raise TooManyRooms()
                    conn.execute(
                        rooms.insert().values(
                            code=code,
                            host_key_sha256=_hash(host_key),
                            created_s=now,
                            active_s=now,
                            step=0,
                            round=1,
                            phase="locked",
                            n_choices=0,
                        )
                    )
                    conn.execute(openers.insert().values(code=code, client_sha256=opener, created_s=now))
                return NewRoom(code, host_key)
            except exc.IntegrityError:
                continue  # a live room has this code: draw another
        raise RuntimeError("no free room code after 8 draws")

    def purge_expired(self) -> int:
        """Delete the rooms idle for ROOM_IDLE_S or older than ROOM_MAX_LIFE_S and everything in them (and the
        openers' records older than an hour); how many rooms went."""
        now = self.clock()
        self._purged_s = now
        with self._transaction() as conn:
            conn.execute(openers.delete().where(openers.c.created_s < now - 3600))
            return self._purge(
                conn,
                sa.select(rooms.c.code).where(
                    sa.or_(rooms.c.active_s < now - ROOM_IDLE_S, rooms.c.created_s < now - ROOM_MAX_LIFE_S)
                ),
            )

    def _purge(self, conn: sa.Connection, codes: sa.Select) -> int:
        gone = [row.code for row in conn.execute(codes.with_for_update())]  # (PostgreSQL) no vote in flight in them
        if gone:
            for table in _ROOM_TABLES:
                conn.execute(table.delete().where(table.c.room.in_(gone)))
            conn.execute(rooms.delete().where(rooms.c.code.in_(gone)))
        return len(gone)

    def _room(self, conn: sa.Connection, code: object, host_key: str | None = None, host: bool = False):
        """The live room's row, locked for update in a write transaction (PostgreSQL: SELECT ... FOR UPDATE, held to
        the commit, so the room's phase cannot change under a vote; SQLite's BEGIN IMMEDIATE holds the whole
        database already); RoomNotFound for a forged or expired code (an expired one is purged by the caller: see
        _live), NotHost when `host` and the key is not the room's."""
        normal = normalize_code(code)
        query = sa.select(rooms).where(rooms.c.code == normal)
        if not conn.get_execution_options().get("kvviz_read", False):
            query = query.with_for_update()
        row = None if normal is None else conn.execute(query).one_or_none()
        if row is None:
            raise RoomNotFound()
        now = self.clock()
        if row.active_s < now - ROOM_IDLE_S or row.created_s < now - ROOM_MAX_LIFE_S:
            raise _Expired(row.code)
        if host and not (isinstance(host_key, str) and hmac.compare_digest(_hash(host_key), row.host_key_sha256)):
            raise NotHost()
        return row

    @contextmanager
    def _live(self, read: bool = False) -> Iterator[sa.Connection]:
        """A transaction in which _room may find the room expired: it is then purged and refused as not found. Every
        PURGE_EVERY_S the expired rooms are purged first (a timer that rides on the calls: an idle server purges at
        its next call)."""
        if self.clock() - self._purged_s >= PURGE_EVERY_S:
            self.purge_expired()
        try:
            with self._transaction(read) as conn:
                yield conn
        except _Expired as expired:
            with self._transaction() as conn:
                self._purge(conn, sa.select(rooms.c.code).where(rooms.c.code == expired.code))
            raise RoomNotFound() from None

    def room(self, code: str) -> RoomState:
        """The room's state (what a phone polls): step, round and phase."""
        with self._live(read=True) as conn:
            return _state(self._room(conn, code))

    def check_host(self, code: str, host_key: str) -> RoomState:
        """The room's state when `host_key` is its host key (the teacher's other tab); NotHost otherwise."""
        with self._live(read=True) as conn:
            return _state(self._room(conn, code, host_key, host=True))

    def _change(self, conn: sa.Connection, row, **values) -> RoomState:
        """(Inside a host action, the room's row locked.) The room's row changed, its version bumped, and its
        current step's row (round, phase) kept equal to it."""
        conn.execute(
            rooms.update()
            .where(rooms.c.code == row.code)
            .values(active_s=self.clock(), version=rooms.c.version + 1, **values)
        )
        new = self._room(conn, row.code)
        if new.step:
            self._upsert(conn, steps, {"room": new.code, "step": new.step}, {"round": new.round, "phase": new.phase})
        return _state(new)

    def _host_update(self, code: str, host_key: str, when: tuple[str, ...], **values) -> RoomState:
        """A change of the current step's round or phase, made only from the phases in `when` (a revealed round
        is final: nothing but Reset and a new round moves it); otherwise the state as it is, unchanged."""
        with self._live() as conn:
            row = self._room(conn, code, host_key, host=True)
            if row.step == 0 or row.phase not in when:
                return _state(row)
            return self._change(conn, row, **values)

    # ----- the teacher's actions (the host key) --------------------------------------------------------------------
    @staticmethod
    def _kept(conn: sa.Connection, room: str, step: int):
        """The step's row (its last round and phase), or None when the room never showed it."""
        return conn.execute(sa.select(steps).where(steps.c.room == room, steps.c.step == step)).one_or_none()

    def _show(self, conn: sa.Connection, row, poll: PollQuestion, kept) -> RoomState:
        """(Inside a host action.) The step, not revealed, becomes the room's question, open: its poll stored (its
        votes dropped when the poll changed: other choices, another right one, other words), its last round kept."""
        stored = conn.execute(
            sa.select(questions.c.poll_json).where(questions.c.room == row.code, questions.c.step == poll.step)
        ).scalar_one_or_none()
        new = poll.to_json()
        round_ = kept.round if kept is not None else 1
        if stored is not None and stored != new:
            conn.execute(votes.delete().where(votes.c.room == row.code, votes.c.step == poll.step))
            conn.execute(held.delete().where(held.c.room == row.code, held.c.step == poll.step))
            round_ = 1  # other choices: a new question, its rounds afresh
        self._upsert(conn, questions, {"room": row.code, "step": poll.step}, {"poll_json": new})
        return self._change(conn, row, step=poll.step, round=round_, phase="open", n_choices=len(poll.choices))

    def open_step(self, code: str, host_key: str, poll: PollQuestion) -> RoomState:
        """Show a step: its poll (one, language-free), open for votes, in its last round (1 for a new step). Reopening
        a step keeps its votes when its poll is the same, and drops them when it changed (a measured answer can: they
        counted other choices).

        A step whose round was revealed is final: open_step changes nothing (not the room's current question, not
        the step's votes or choices) and returns that step's revealed state (its step, last round, "revealed"), so
        a reloaded old tab or a Back draws the result and never reopens the vote. The teacher's explicit actions:
        go_to_step (show a revealed step's result to the room), poll_again (a new round of a step), vote_again."""
        step = poll.step
        with self._live() as conn:
            row = self._room(conn, code, host_key, host=True)
            kept = self._kept(conn, row.code, step)
            if kept is not None and kept.phase == "revealed":
                return RoomState(row.code, step, kept.round, "revealed", row.created_s, row.active_s, row.version)
            return self._show(conn, row, poll, kept)

    def go_to_step(self, code: str, host_key: str, poll: PollQuestion) -> RoomState:
        """The teacher's Next or Back: the step becomes the room's current question. A step whose round was
        revealed stays revealed (the phones see its result, a vote there is refused; its votes and choices are
        kept whatever `poll` says); any other opens as open_step opens it."""
        step = poll.step
        with self._live() as conn:
            row = self._room(conn, code, host_key, host=True)
            kept = self._kept(conn, row.code, step)
            if kept is not None and kept.phase == "revealed":
                shown = self._any_poll(conn, row.code, step)
                return self._change(
                    conn,
                    row,
                    step=step,
                    round=kept.round,
                    phase="revealed",
                    n_choices=len(shown.choices) if shown else 0,
                )
            return self._show(conn, row, poll, kept)

    def poll_again(self, code: str, host_key: str, poll: PollQuestion) -> RoomState:
        """The teacher's explicit "poll this step again": the step becomes the room's question with a new round
        open (round 2 after round 1, round 1 kept; a step never shown opens round 1). ValueError when its two
        rounds are used (Reset it to poll it afresh)."""
        step = poll.step
        with self._live() as conn:
            row = self._room(conn, code, host_key, host=True)
            kept = self._kept(conn, row.code, step)
            if kept is None:
                return self._show(conn, row, poll, kept)
            if kept.round >= ROUNDS[-1]:
                raise ValueError(f"step {step} has had its {ROUNDS[-1]} rounds: reset it to poll it afresh")
            shown = self._any_poll(conn, row.code, step)
            return self._change(
                conn,
                row,
                step=step,
                round=kept.round + 1,
                phase="open",
                n_choices=len(shown.choices) if shown else len(poll.choices),
            )

    def step_state(self, code: str, host_key: str, step: int) -> RoomState | None:
        """A step's state as the room left it, read only (a tab draws its step's panel without moving the room):
        its last round and phase ("revealed": its result is final; "open" on a step that is not the room's
        current one means it reopens when the teacher goes back to it), the room's times and version; None when
        the room never showed the step. Compare with room().step to know whether it is the current question."""
        with self._live(read=True) as conn:
            row = self._room(conn, code, host_key, host=True)
            kept = self._kept(conn, row.code, step)
            if kept is None:
                return None
            return RoomState(row.code, step, kept.round, kept.phase, row.created_s, row.active_s, row.version)

    def next_question(self, code: str, host_key: str, poll: PollQuestion) -> RoomState:
        """The teacher's Next: go_to_step for the step after the current one (poll: that step's)."""
        if self.room(code).step + 1 != poll.step:
            raise ValueError("next_question: the poll is not the next step's")
        return self.go_to_step(code, host_key, poll)

    def lock(self, code: str, host_key: str) -> RoomState:
        """Stop the votes (the count stays hidden). A revealed round stays revealed."""
        return self._host_update(code, host_key, ("open",), phase="locked")

    def unlock(self, code: str, host_key: str) -> RoomState:
        """Open a locked round again (never a revealed one)."""
        return self._host_update(code, host_key, ("locked",), phase="open")

    def reveal(self, code: str, host_key: str) -> RoomState:
        """Stop the votes and show the counts and the right answer: the round is final from now on."""
        return self._host_update(code, host_key, ("open", "locked"), phase="revealed")

    def vote_again(self, code: str, host_key: str) -> RoomState:
        """Round 2 of the current step, open (round 1's votes kept, shown beside it); in round 2 already, nothing
        changes (a revealed round 2 stays revealed)."""
        with self._live() as conn:
            row = self._room(conn, code, host_key, host=True)
            if row.step == 0 or row.round >= ROUNDS[-1]:
                return _state(row)
            return self._change(conn, row, round=row.round + 1, phase="open")

    def reset(self, code: str, host_key: str) -> RoomState:
        """Drop the current step's votes (both rounds) and open round 1 again (a revealed step too: the teacher's
        explicit action)."""
        with self._live() as conn:
            row = self._room(conn, code, host_key, host=True)
            conn.execute(votes.delete().where(votes.c.room == row.code, votes.c.step == row.step))
            conn.execute(held.delete().where(held.c.room == row.code, held.c.step == row.step))
            return self._change(conn, row, round=1, phase="open")

    def mark_result(self, code: str, host_key: str, step: int, right: bool) -> None:
        """The teacher's verdict on the room for a step: got it (True) or missed it (False)."""
        with self._live() as conn:
            row = self._room(conn, code, host_key, host=True)
            self._upsert(conn, results, {"room": row.code, "step": int(step)}, {"right": bool(right)})
            conn.execute(rooms.update().where(rooms.c.code == row.code).values(active_s=self.clock()))

    def marked_results(self, code: str) -> dict[int, bool]:
        """step -> the teacher's verdict, for the steps marked."""
        with self._live(read=True) as conn:
            row = self._room(conn, code)
            return {
                r.step: bool(r.right)
                for r in conn.execute(sa.select(results).where(results.c.room == row.code).order_by(results.c.step))
            }

    # ----- the phones ----------------------------------------------------------------------------------------------
    def poll(self, code: str, step: int | None = None) -> PollQuestion | None:
        """A step's poll (the current step's by default; None when none is stored, or the one stored is
        unreadable), language-free: the phone shows it in its own language."""
        with self._live(read=True) as conn:
            row = self._room(conn, code)
            return self._any_poll(conn, row.code, row.step if step is None else step)

    def vote(self, code: str, voter_token: str, step: int, round: int, choice: int, client: str | None = None) -> None:
        """Record `voter_token`'s vote (its latest counts) for the room's open step and round, as the phone showed
        them; refused (VotingClosed) when that question is locked, revealed or no longer the current one. `client`:
        the phone's address (None: this computer, not limited): a new voter past the room's per_address from it is
        refused (TooManyVotersHere). A new vote past the class size is held back (HeldBack, after it is stored
        apart). Returning means the vote is stored and counts; a store fault raises VoteNotStored."""
        if not isinstance(voter_token, str) or not voter_token:
            raise ValueError("a vote needs the voter's token")
        voter, now = _hash(voter_token), self.clock()
        try:
            if self._vote(code, voter, now, step, round, choice, client):
                return
        except StoreUnavailable:
            raise VoteNotStored() from None
        raise HeldBack()

    def _vote(self, code: str, voter: str, now: float, step: int, round: int, choice: int, client: str | None) -> bool:
        """(vote.) True: counted; False: held back (past the class size). The room's row is locked first and held to
        the commit, so the phase checked here is the phase when the vote counts (a Lock waits for this vote, or
        this vote waits for the Lock and is refused)."""
        with self._live() as conn:
            row = self._room(conn, code)
            if (row.step, row.round, row.phase) != (step, round, "open") or row.step == 0:
                raise VotingClosed()
            if type(choice) is not int or not 0 <= choice < row.n_choices:  # (a bool is no index)
                raise NoSuchChoice()
            if self._count_vote(conn, row.code, voter, int(now // 60)) > VOTES_PER_MINUTE:
                raise TooManyVotes()  # (the rollback takes the count back: a refused tap is not counted)
            per_address, class_size = self._limits(conn, row.code)
            if client is not None:
                here = _hash(f"client:{client}")
                brought = {
                    r.voter_sha256
                    for r in conn.execute(
                        sa.select(clients.c.voter_sha256).where(
                            clients.c.room == row.code, clients.c.client_sha256 == here
                        )
                    )
                }
                if voter not in brought:
                    if len(brought) >= per_address:
                        raise TooManyVotersHere(per_address)
                    self._insert_new(conn, clients, {"room": row.code, "client_sha256": here, "voter_sha256": voter})
            this_question = (votes.c.room == row.code, votes.c.step == step, votes.c.round == round)
            if (
                class_size is not None
                and conn.execute(
                    sa.select(votes.c.choice).where(*this_question, votes.c.voter_sha256 == voter)
                ).one_or_none()
                is None
                and conn.execute(sa.select(sa.func.count()).select_from(votes).where(*this_question)).scalar_one()
                >= class_size
            ):
                self._insert_new(conn, held, {"room": row.code, "step": step, "round": round, "voter_sha256": voter})
                return False
            self._upsert(
                conn,
                votes,
                {"room": row.code, "step": step, "round": round, "voter_sha256": voter},
                {"choice": choice, "voted_s": now},
            )
            if now - row.active_s > ACTIVE_EVERY_S:
                conn.execute(rooms.update().where(rooms.c.code == row.code).values(active_s=now))
            return True

    def _count_vote(self, conn: sa.Connection, room: str, voter: str, minute: int) -> int:
        """The voter's votes in this room this minute, this one included: one atomic statement (a new minute starts
        at 1, the same minute adds 1 to the stored count), so two taps at once never both read the old count."""
        same_minute = voters.c.minute == minute
        return conn.execute(
            self._insert(conn, voters)
            .values(room=room, voter_sha256=voter, minute=minute, votes=1)
            .on_conflict_do_update(
                index_elements=[voters.c.room, voters.c.voter_sha256],
                set_={"votes": sa.case((same_minute, voters.c.votes + 1), else_=1), "minute": minute},
            )
            .returning(voters.c.votes)
        ).scalar_one()

    @staticmethod
    def _limits(conn: sa.Connection, room: str) -> tuple[int, int | None]:
        row = conn.execute(
            sa.select(limits.c.per_address, limits.c.class_size).where(limits.c.room == room)
        ).one_or_none()
        return (VOTERS_PER_ADDRESS, None) if row is None else (row.per_address, row.class_size)

    def limits(self, code: str) -> tuple[int, int | None]:
        """The room's voters per client address and its class size (None: not set)."""
        with self._live(read=True) as conn:
            return self._limits(conn, self._room(conn, code).code)

    def set_limits(self, code: str, host_key: str, per_address: int, class_size: int | None) -> None:
        """The teacher's settings: voters per client address (1..MAX_PER_ADDRESS; a class behind one shared address
        sets its size here) and the class size (1..MAX_CLASS_SIZE, None for no limit)."""
        if type(per_address) is not int or not 1 <= per_address <= MAX_PER_ADDRESS:
            raise ValueError(f"per_address must be from 1 to {MAX_PER_ADDRESS}")
        if class_size is not None and (type(class_size) is not int or not 1 <= class_size <= MAX_CLASS_SIZE):
            raise ValueError(f"class_size must be from 1 to {MAX_CLASS_SIZE}, or None")
        with self._live() as conn:
            row = self._room(conn, code, host_key, host=True)
            self._upsert(conn, limits, {"room": row.code}, {"per_address": per_address, "class_size": class_size})

    def live_count(self, code: str, step: int, round: int) -> tuple[int, int, int | None, int]:
        """What the projector shows once a second, in one read: votes counted on (step, round), votes held back
        past the class size, the class size (None: not set), and how many phones drew the step's question (the M
        of "Voted N of M")."""
        with self._live(read=True) as conn:
            row = self._room(conn, code)
            voted = conn.execute(
                sa.select(sa.func.count())
                .select_from(votes)
                .where(votes.c.room == row.code, votes.c.step == step, votes.c.round == round)
            ).scalar_one()
            held_n = conn.execute(
                sa.select(sa.func.count())
                .select_from(held)
                .where(held.c.room == row.code, held.c.step == step, held.c.round == round)
            ).scalar_one()
            opened = conn.execute(
                sa.select(sa.func.count()).select_from(views).where(views.c.room == row.code, views.c.step == step)
            ).scalar_one()
            return voted, held_n, self._limits(conn, row.code)[1], opened

    def saw(self, code: str, voter_token: str, step: int) -> None:
        """A phone (its voter token) drew `step`'s question: one of the M the projector's "Voted N of M" counts.
        Kept once per phone and step (a redraw adds nothing)."""
        if not isinstance(voter_token, str) or not voter_token:
            return
        with self._live() as conn:
            row = self._room(conn, code)
            self._insert_new(
                conn,
                views,
                {"room": row.code, "step": int(step), "voter_sha256": _hash(voter_token), "seen_s": self.clock()},
            )

    def choice_of(self, code: str, voter_token: str, step: int, round: int) -> int | None:
        """The choice this phone's vote on (step, round) counts for now; None when it has no counted vote there (it
        never voted, the round was reset, or its vote was held back past the class size)."""
        with self._live(read=True) as conn:
            row = self._room(conn, code)
            return conn.execute(
                sa.select(votes.c.choice).where(
                    votes.c.room == row.code,
                    votes.c.step == step,
                    votes.c.round == round,
                    votes.c.voter_sha256 == _hash(voter_token),
                )
            ).scalar_one_or_none()

    def held_back(self, code: str, step: int, round: int) -> int:
        """How many votes on (step, round) came past the class size and were not counted."""
        with self._live(read=True) as conn:
            row = self._room(conn, code)
            return conn.execute(
                sa.select(sa.func.count())
                .select_from(held)
                .where(held.c.room == row.code, held.c.step == step, held.c.round == round)
            ).scalar_one()

    def voted_count(self, code: str, step: int, round: int) -> int:
        """How many voted on (step, round): what the room sees before the reveal (one COUNT)."""
        with self._live(read=True) as conn:
            row = self._room(conn, code)
            return conn.execute(
                sa.select(sa.func.count())
                .select_from(votes)
                .where(votes.c.room == row.code, votes.c.step == step, votes.c.round == round)
            ).scalar_one()

    # ----- results ------------------------------------------------------------------------------------------------
    def tally(self, code: str, step: int, round: int, host_key: str | None = None) -> Tally:
        """Votes per choice for (step, round). Without the host key only the current step's revealed round: the
        counts stay hidden from the phones until the teacher reveals them."""
        with self._live(read=True) as conn:
            row = self._room(conn, code, host_key, host=host_key is not None)
            if host_key is None and (row.step, row.phase) != (step, "revealed"):
                raise NotRevealed()
            return self._tally(conn, row.code, step, round)

    def _tally(self, conn: sa.Connection, room: str, step: int, round: int) -> Tally:
        poll = self._any_poll(conn, room, step)
        counts = [0] * (len(poll.choices) if poll else 0)
        for choice, n in conn.execute(
            sa.select(votes.c.choice, sa.func.count())
            .where(votes.c.room == room, votes.c.step == step, votes.c.round == round)
            .group_by(votes.c.choice)
        ):
            if 0 <= choice < len(counts):
                counts[choice] = n
        return Tally(step, round, tuple(counts), poll.right if poll else 0)

    @staticmethod
    def _any_poll(conn: sa.Connection, room: str, step: int) -> PollQuestion | None:
        """The step's stored poll; None when there is none or it cannot be read (not a PollQuestion's JSON)."""
        text = conn.execute(
            sa.select(questions.c.poll_json).where(questions.c.room == room, questions.c.step == step)
        ).scalar_one_or_none()
        try:
            return None if text is None else PollQuestion.from_json(text)
        except ValueError:
            return None

    def results(self, code: str, host_key: str) -> list[Tally]:
        """The tally of every step the room was polled on, round 1 and (where opened or voted) round 2, in step
        order: the lesson's summary. A step counts as polled when it has a vote (counted or held back) or the
        teacher locked, revealed or re-polled it; a step only passed through (opened, nobody voted, no action) is
        left out."""
        with self._live(read=True) as conn:
            return [tally for tally, _poll in self._polled(conn, self._room(conn, code, host_key, host=True).code)]

    def _polled(self, conn: sa.Connection, room: str) -> list[tuple[Tally, PollQuestion | None]]:
        kept = {r.step: r for r in conn.execute(sa.select(steps).where(steps.c.room == room))}
        voted = {
            (r.step, r.round)
            for r in conn.execute(sa.select(votes.c.step, votes.c.round).where(votes.c.room == room).distinct())
        }
        voted |= {
            (r.step, r.round)
            for r in conn.execute(sa.select(held.c.step, held.c.round).where(held.c.room == room).distinct())
        }
        shown = sorted(
            {r.step for r in conn.execute(sa.select(questions.c.step).where(questions.c.room == room).distinct())}
        )
        out = []
        for step in shown:
            state = kept.get(step)
            acted = state is not None and (state.phase != "open" or state.round > 1)
            if not acted and not any(s == step for s, _r in voted):
                continue
            last = max([state.round if state is not None else 1, *(r for s, r in voted if s == step)])
            poll = self._any_poll(conn, room, step)
            out += [(self._tally(conn, room, step, round_), poll) for round_ in ROUNDS if round_ <= last]
        return out

    def export_csv(self, code: str, host_key: str, language: str) -> str:
        """The results as CSV, one row per choice of every polled step and round (as results()): step, round,
        question, letter (A, B, C as the phones and the projector show them), choice, right, mistake, votes; the
        texts in `language` (kvviz.i18n's code: "en", "zh-CN"), as plain text (markdown's code backticks dropped).
        UTF-8 text that starts with a byte-order mark, so Excel reads the Chinese. No names and
        no voter tokens: nothing in it says who voted what."""
        from kvviz.figures.poll import choice_letter, plain_label  # (plotly: only when a teacher exports)

        with self._live(read=True) as conn:
            row = self._room(conn, code, host_key, host=True)
            polled = self._polled(conn, row.code)
        out = io.StringIO()
        out.write("\ufeff")  # the byte-order mark: Excel reads the file as UTF-8 only with it
        writer = csv.writer(out, lineterminator="\r\n")  # RFC 4180's line end, as Excel writes it
        writer.writerow(["step", "round", "question", "letter", "choice", "right", "mistake", "votes"])
        with i18n.language(language):
            for tally, poll in polled:
                if poll is None:
                    continue
                for i, label in enumerate(poll.choices):
                    mistake = poll.mistakes[i] if i < len(poll.mistakes) else None
                    writer.writerow(
                        [
                            tally.step,
                            tally.round,
                            plain_label(poll.text.shown()),
                            choice_letter(i),
                            plain_label(label.shown()),
                            "yes" if i == poll.right else "no",
                            "" if mistake is None else plain_label(mistake.shown()),
                            tally.counts[i] if i < len(tally.counts) else 0,
                        ]
                    )
        return out.getvalue()


class _FileReplaced(Exception):
    """(Inside a transaction.) The SQLite file at the path is not the one the connection opened: roll back."""


class _Expired(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def _state(row) -> RoomState:
    return RoomState(row.code, row.step, row.round, row.phase, row.created_s, row.active_s, row.version)


def main(argv: list[str] | None = None) -> int:
    """`python -m kvviz.poll.store`: check KVVIZ_POLL_DB (or the default file) and reach it once; one line
    either way, exit status 0 when the poll can keep votes, 2 otherwise (deploy/run_class.sh runs it first)."""
    url = database_url()
    log.setLevel(logging.CRITICAL)  # the one line below says it
    try:
        store = PollStore(url)
        with store._transaction(read=True) as conn:
            conn.execute(sa.select(sa.func.count()).select_from(rooms)).scalar_one()
    except BadStoreURL as bad:
        print(f"kvviz poll: {bad}", file=sys.stderr)
        return 2
    except PollRefused as fault:
        cause = str(fault.__cause__).splitlines()[0] if fault.__cause__ else ""
        print(
            _("kvviz poll: {env} cannot be reached ({cause}): fix it, or unset it to keep votes in {default}.").format(
                env=ENV_URL, cause=cause[:200], default=default_path()
            ),
            file=sys.stderr,
        )
        return 2
    print(_("kvviz poll: votes are kept in {url}").format(url=sa.make_url(url).render_as_string(hide_password=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
