"""Read an import file line by line in memory bounded by the line limit, not the file.

An import file arrives as a file object (an upload spooled to disk, a file opened by the
import command). :func:`read_lines` reads it in blocks and yields one line at a time; a line
longer than the limit is never held: it is skipped to its end and reported as a
:class:`LongLine` with its length. :class:`HashingReader` counts and hashes the bytes as they
pass, so the file's SHA-256 and size come out of the same single read.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

#: Bytes read at a time.
BLOCK_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class LongLine:
    """A line past the limit, which was not kept: only its length in bytes is known."""

    size: int


class HashingReader:
    """A read-only view of ``stream`` that hashes (SHA-256) and counts what is read."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._hash = hashlib.sha256()
        self.bytes_read = 0

    def read(self, size: int = -1) -> bytes:
        block = self._stream.read(size)
        self._hash.update(block)
        self.bytes_read += len(block)
        return block

    def drain(self) -> None:
        """Read (and hash) the rest, keeping nothing: the digest covers the whole file even
        when the parser stopped early."""
        while self.read(BLOCK_BYTES):
            pass

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def as_stream(data: bytes | BinaryIO) -> BinaryIO:
    """A file object over ``data`` (bytes are wrapped, a file object is returned as is)."""
    if isinstance(data, bytes | bytearray | memoryview):
        return io.BytesIO(data)
    return data


def stream_size(stream: BinaryIO) -> int | None:
    """Bytes from the current position to the end, without reading them (None when the
    stream cannot seek). The position is left where it was."""
    try:
        here = stream.tell()
        end = stream.seek(0, io.SEEK_END)
        stream.seek(here)
    except (AttributeError, OSError, ValueError):
        return None
    return end - here


def read_lines(
    stream: BinaryIO | HashingReader, *, max_line_bytes: int, block_bytes: int = BLOCK_BYTES
) -> Iterator[tuple[int, bytes | LongLine]]:
    """``(line number, raw line without its \\n)`` for each line; a line longer than
    ``max_line_bytes`` comes as a :class:`LongLine`. A final newline ends the last line and
    does not start another (as :func:`audit.contract.observations.iter_lines`).

    Memory: one block plus at most ``max_line_bytes`` of the line being assembled."""
    number = 0
    pending = bytearray()  # the start of the current line, from earlier blocks
    skipped = 0  # > 0: the current line is past the limit; its length so far
    while True:
        block = stream.read(block_bytes)
        if not block:
            break
        start = 0
        size = len(block)
        while start < size:
            end = block.find(b"\n", start)
            if end < 0:
                rest = size - start
                if skipped:
                    skipped += rest
                elif len(pending) + rest > max_line_bytes:
                    skipped = len(pending) + rest
                    pending.clear()
                else:
                    pending += block[start:]
                break
            number += 1
            length = end - start
            if skipped:
                yield number, LongLine(skipped + length)
                skipped = 0
            elif len(pending) + length > max_line_bytes:
                yield number, LongLine(len(pending) + length)
                pending.clear()
            elif pending:
                pending += block[start:end]
                yield number, bytes(pending)
                pending.clear()
            else:
                yield number, block[start:end]
            start = end + 1
    if skipped:
        yield number + 1, LongLine(skipped)
    elif pending:
        yield number + 1, bytes(pending)
