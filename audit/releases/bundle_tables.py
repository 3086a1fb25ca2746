"""A release's tables written by a second process, beside the build: pure, no Django.

The build (``audit.releases.services.bundle_write``) makes each table row once and hands
it to a :class:`TableSink`, which gathers ``TABLE_BATCH`` rows, turns them into columns
(a ``json`` column as the canonical texts of its values, made here: the build knows
which values the compiled encoder may write) and sends them through a pipe to a process
of its own (:func:`serve`). That process writes each batch as JSON Lines, CSV and Parquet
with the writers of :mod:`audit.releases.formats` — the same bytes as
:class:`audit.releases.formats.TableFiles` (tests/releases/test_table_process.py) — while
the build goes on with the record lines: on two cores, the tables (about a third of a
build's time) no longer wait for the records nor the records for them.

Batches leave by a thread, at most ``TableProcess.IN_FLIGHT`` of them pickled and not yet
taken (a send then waits for the process), so memory stays bounded on both sides. The
process hashes its files once they are closed and answers their SHA-256 with its row
counts; ``records.jsonl`` is hashed as it is written (:class:`HashedFile`), so that the
manifest (:func:`write_manifest`) reads no file back. Where no process can be started,
:func:`open_tables` writes in this process instead, by ``TableFiles``: the same files,
only slower.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
import sys
import time
import traceback
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from json.encoder import encode_basestring
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from audit.processes import ended, module_process, served_pipes
from audit.releases import formats as rf

logger = logging.getLogger("claimgate.releases")


def _scalar_texts(values: Sequence[Any], kind: str) -> list[str]:
    """The canonical JSON text of each value of a column that is not ``json`` (strings,
    integers, booleans, floats or ``None``): the texts the standard encoder gives them."""
    if kind == "string":
        return ["null" if value is None else encode_basestring(value) for value in values]
    if kind == "int":
        return ["null" if value is None else int.__repr__(value) for value in values]
    if kind == "bool":
        return ["null" if value is None else ("true" if value else "false") for value in values]
    # Floats (and anything unexpected) by the standard encoder: it refuses NaN and infinity.
    return [rf._json_text(value) for value in values]


def jsonl_lines(table: rf.Table, columns: Sequence[Sequence[Any]]) -> bytes:
    """The JSON Lines of rows given column by column (a ``json`` column as canonical texts,
    ``None`` for null): each row's canonical JSON object, members in sorted key order."""
    kinds = dict(table.columns)
    by_name = dict(zip(table.names, columns, strict=True))
    parts = []
    for name in sorted(table.names):
        key = encode_basestring(name) + ":"
        values = by_name[name]
        if kinds[name] == "json":
            texts = ["null" if text is None else text for text in values]
        else:
            texts = _scalar_texts(values, kinds[name])
        parts.append([key + text for text in texts])
    if not parts or not parts[0]:
        return b""
    lines = ["{" + ",".join(members) + "}" for members in zip(*parts, strict=True)]
    lines.append("")
    return "\n".join(lines).encode("utf-8")


class _Files:
    """One table's three files in the writing process."""

    def __init__(self, directory: Path, table: rf.Table) -> None:
        self.table = table
        self.rows = 0
        self.streams = [
            rf.bundle_file(directory, f"{table.name}.{ext}").open("xb") for ext in rf.TABLE_FORMATS
        ]
        self.csv = rf.CsvWriter(self.streams[1], table)
        self.parquet = rf.ParquetWriter(self.streams[2], table)

    def write(self, columns: Sequence[list[Any]], count: int) -> None:
        self.streams[0].write(jsonl_lines(self.table, columns))
        self.csv.write_columns(columns)
        self.parquet.write_columns(columns, count)
        self.rows += count

    def close(self) -> None:
        self.csv.close()
        self.parquet.close()
        for stream in self.streams:
            stream.close()


def serve(
    connection: Connection, answers: Connection, directory: str, tables: Sequence[rf.Table]
) -> None:
    """The writing process: opens each table's files in ``directory``, writes every batch
    it receives (``(index, columns, count)``) until ``None``, closes the files and answers
    ``("done", rows per table)``, or ``("error", text)`` at the first failure (after which
    it reads and drops the rest, so that the build never waits on a full pipe)."""
    files: list[_Files] = []
    failure = None
    try:
        files = [_Files(Path(directory), table) for table in tables]
    except Exception:
        failure = traceback.format_exc()
    while True:
        try:
            message = connection.recv()
        except EOFError:  # the build stopped (it failed elsewhere): leave quietly
            message = False
        if message is None or message is False:
            break
        if failure is not None:
            continue
        try:
            index, columns, count = message
            files[index].write(columns, count)
        except Exception:
            failure = traceback.format_exc()
    for table_files in files:
        try:
            table_files.close()
        except Exception:
            failure = failure or traceback.format_exc()
    if message is None:
        if failure is None:
            try:
                # Each file's SHA-256 for the manifest, here beside the build's own work.
                sums = {
                    stream.name: rf.file_sha256(Path(stream.name))
                    for table_files in files
                    for stream in table_files.streams
                }
            except Exception:
                failure = traceback.format_exc()
        answers.send(
            ("error", failure)
            if failure
            else ("done", ([f.rows for f in files], sums, _pyarrow_version(), _own_figures()))
        )


def _pyarrow_version() -> str:
    import pyarrow

    return pyarrow.__version__


def _own_figures() -> dict[str, float]:
    """This process's CPU seconds and peak resident memory (MB, ``VmHWM``: Linux may carry
    the parent's mark into ``ru_maxrss`` across fork and exec), for benchmarks."""
    peak = 0.0
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) / 1024
    except OSError:
        pass
    return {"cpu_seconds": time.process_time(), "peak_mb": peak}


#: The figures of the last table process this process waited for (``bench/export.py``
#: reports them beside the build's own).
last_figures: dict[str, float] = {}


class HashedFile:
    """A bundle file written, and hashed as it is written, by a thread of its own: large
    writes release the interpreter's lock while the bytes are copied and hashed, so the
    build goes on meanwhile. One write is pending at most (its bytes are what the thread
    holds); :meth:`close` waits for the last and gives the file's SHA-256."""

    def __init__(self, path: Path) -> None:
        self.stream = path.open("xb")
        self.name = path.name
        self.digest = hashlib.sha256()
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="release-write")
        self.pending: Future[None] | None = None

    def _write(self, data: bytes) -> None:
        self.stream.write(data)
        self.digest.update(data)

    def write(self, data: bytes) -> None:
        if self.pending is not None:
            self.pending.result()
        self.pending = self.pool.submit(self._write, data)

    def close(self) -> str:
        try:
            if self.pending is not None:
                self.pending.result()
        finally:
            self.pending = None
            self.pool.shutdown()
            self.stream.close()
        return self.digest.hexdigest()


def write_manifest(directory: Path, known: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """:func:`audit.releases.formats.write_manifest` with the SHA-256 of some files known
    already (hashed as they were written): the same ``SHA256SUMS`` and the same answer,
    the other files hashed here."""
    names = sorted(p.name for p in Path(directory).iterdir() if p.name != rf.MANIFEST)
    files = {}
    for name in names:
        path = rf.bundle_file(directory, name)
        digest = known.get(name) or rf.file_sha256(path)
        files[name] = {"sha256": digest, "bytes": path.stat().st_size}
    manifest = rf.bundle_file(directory, rf.MANIFEST)
    manifest.write_bytes(
        rf.manifest_text({name: f["sha256"] for name, f in files.items()}).encode("utf-8")
    )
    files[rf.MANIFEST] = {"sha256": rf.file_sha256(manifest), "bytes": manifest.stat().st_size}
    return files


class TableProcessError(RuntimeError):
    """The process writing the tables failed; its traceback is the message."""


class TableProcess:
    """The writing process (``python -m audit.releases.bundle_tables``: a fresh interpreter
    that imports only the writers, never a copy of the build's process with its database
    connection and reading thread, nor the build's main module) and the build's ends of
    its two pipes."""

    def __init__(self, directory: Path, tables: Sequence[rf.Table]) -> None:
        # Arrow's buffers from the C library's allocator, which hands a freed row group's
        # memory to the next: ~10-17 MB less at the peak than its default pool (mimalloc,
        # whose arenas are reserved as pyarrow loads). An allocator never decides bytes.
        self.process, self.connection, self.answers = module_process(
            "audit.releases.bundle_tables", {"ARROW_DEFAULT_MEMORY_POOL": "system"}
        )
        self.closed = False
        #: Each written file's SHA-256 by file name, once :meth:`finish` returned.
        self.sums: dict[str, str] = {}
        #: The version of pyarrow that wrote the Parquet files, once :meth:`finish` returned.
        self.pyarrow_version = ""
        # Batches go out by a thread (a pipe's write waits while the process is busy with
        # the batch before, and releases the interpreter's lock meanwhile), at most
        # ``IN_FLIGHT`` of them queued: the build never waits for one batch to be written.
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="release-tables")
        self.pending: deque[Future[None]] = deque()
        self._send((str(directory), list(tables)))

    #: Batches pickled and not yet taken by the process, at most (each is ~1 MB).
    IN_FLIGHT = 4

    def _send(self, message: Any) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            while self.pending and (len(self.pending) >= self.IN_FLIGHT or message is None):
                self.pending.popleft().result()
            self.pending.append(self.pool.submit(self.connection.send_bytes, data))
            if message is None:
                self.pending.popleft().result()
        except OSError as exc:  # BrokenPipeError: the process is gone
            self.abort()
            raise TableProcessError(f"the process writing the tables stopped: {exc}") from exc

    def send(self, index: int, columns: list[list[Any]], count: int) -> None:
        self._send((index, columns, count))

    def finish(self) -> list[int]:
        """Tell the process there are no more rows; its row counts once every file is
        written and closed."""
        if self.closed:
            raise TableProcessError("the process writing the tables stopped")
        self._send(None)
        try:
            status, value = self.answers.recv()
        except (EOFError, OSError) as exc:
            self.abort()
            raise TableProcessError(f"the process writing the tables stopped: {exc}") from exc
        self.abort()  # closes the pipes and waits for the process, which has finished
        if status != "done":
            raise TableProcessError(f"writing the tables failed:\n{value}")
        counts, sums, self.pyarrow_version, figures = value
        last_figures.clear()
        last_figures.update(figures)
        self.sums = {Path(path).name: digest for path, digest in sums.items()}
        return counts

    def abort(self) -> None:
        """Close the pipes and wait for the process (a build that failed elsewhere: it
        stops at the end of its input, leaving its files partial)."""
        if not self.closed:
            self.closed = True
            for future in self.pending:
                future.cancel()
            self.pool.shutdown(wait=True)
            self.pending.clear()
            self.connection.close()
            self.answers.close()
        ended(self.process, timeout=10)


class TableSink:
    """One table of a build whose files the :class:`TableProcess` writes: rows come as
    :meth:`audit.releases.formats.TableFiles.write` takes them and leave by batches of
    ``TABLE_BATCH``, as columns."""

    def __init__(self, process: TableProcess, index: int, table: rf.Table) -> None:
        self.process = process
        self.index = index
        self.table = table
        self.rows = 0
        self._pending: list[Mapping[str, Any]] = []
        self._fast: list[bool] = []

    def write(self, row: Mapping[str, Any], fast: bool = False) -> None:
        """Add a row (see :meth:`audit.releases.formats.TableFiles.write`; ``fast``: its
        nested values may be written by the compiled encoder)."""
        self._pending.append(row)
        self._fast.append(fast)
        if len(self._pending) >= rf.TABLE_BATCH:
            self.flush()

    def flush(self) -> None:
        rows, fasts = self._pending, self._fast
        if not rows:
            return
        self._pending, self._fast = [], []
        columns = []
        for name, kind in self.table.columns:
            values = [row[name] for row in rows]
            if kind == "json":
                values = [
                    None if value is None else rf._json_text(value, fast)
                    for value, fast in zip(values, fasts, strict=True)
                ]
            columns.append(values)
        self.process.send(self.index, columns, len(rows))
        self.rows += len(rows)

    def close(self) -> None:
        self.flush()


class Tables:
    """A build's tables by name (``TableFiles`` in this process, or ``TableSink`` of one
    writing process), closed together."""

    def __init__(
        self, members: dict[str, rf.TableFiles | TableSink], process: TableProcess | None
    ) -> None:
        self.members = members
        self.process = process

    def __getitem__(self, name: str) -> rf.TableFiles | TableSink:
        return self.members[name]

    def items(self) -> Any:
        return self.members.items()

    def values(self) -> Any:
        return self.members.values()

    def close(self) -> None:
        """Flush and close every table; with a process, wait until it wrote them all and
        check its row counts against the rows given."""
        try:
            for member in self.members.values():
                member.close()
        except BaseException:
            if self.process is not None:
                self.process.abort()
            raise
        if self.process is not None:
            counts = self.process.finish()
            given = [member.rows for member in self.members.values()]
            if counts != given:
                raise TableProcessError(f"the tables hold {counts} rows, {given} were given")

    def pyarrow_version(self) -> str:
        """The version of pyarrow that wrote the Parquet files (the build's process needs
        not load it: ~40 MB)."""
        if self.process is not None:
            return self.process.pyarrow_version
        return _pyarrow_version()

    def sums(self) -> dict[str, str]:
        """The SHA-256 of each table file the process wrote, by file name (none when the
        tables were written here), once :meth:`close` returned."""
        return dict(self.process.sums) if self.process is not None else {}

    def abort(self) -> None:
        if self.process is not None:
            self.process.abort()
        else:
            for member in self.members.values():
                member.close()


def open_tables(directory: Path, tables: Mapping[str, rf.Table], *, parallel: bool) -> Tables:
    """The files of ``tables`` in ``directory``: written by a process of their own with
    ``parallel`` (when one can be started), else here by ``TableFiles``."""
    if parallel:
        try:
            process = TableProcess(directory, list(tables.values()))
        except (OSError, TableProcessError) as exc:
            logger.warning("release tables written in the build's process: %s", exc)
        else:
            return Tables(
                {
                    name: TableSink(process, index, table)
                    for index, (name, table) in enumerate(tables.items())
                },
                process,
            )
    return Tables({name: rf.TableFiles(directory, table) for name, table in tables.items()}, None)


def main() -> None:
    """The writing process: the directory and tables, then the batches, from standard
    input; the answer on standard output (which nothing else writes to: anything printed
    goes to standard error)."""
    # pyarrow (>= 16: numpy is optional to it) imports numpy where it can, ~20 MB of this
    # process's peak; the writers give it Python values only (tests/releases/
    # test_table_process.py: the same bytes as the build's own writers, numpy loaded).
    sys.modules.setdefault("numpy", None)  # type: ignore[assignment]
    connection, answers = served_pipes()
    directory, tables = connection.recv()
    serve(connection, answers, directory, tables)


if __name__ == "__main__":
    main()
