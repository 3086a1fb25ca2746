"""Reading an import file line by line in bounded memory (pure: no Django)."""

from __future__ import annotations

import hashlib
import io

from hypothesis import given
from hypothesis import strategies as st

from audit.contract import codes, parse_observation_file
from audit.contract.observations import iter_lines
from audit.contract.streams import HashingReader, LongLine, read_lines, stream_size

lines = st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")), max_size=8)


@given(lines, st.booleans(), st.integers(min_value=1, max_value=7))
def test_read_lines_splits_as_iter_lines_whatever_the_block_size(parts, final, block):
    data = b"\n".join(parts) + (b"\n" if final and parts else b"")

    read = list(read_lines(io.BytesIO(data), max_line_bytes=100, block_bytes=block))

    assert read == list(iter_lines(data))


@given(lines, st.integers(min_value=1, max_value=7), st.integers(min_value=0, max_value=12))
def test_a_line_past_the_limit_comes_as_its_length_only(parts, block, limit):
    data = b"\n".join(parts)

    read = list(read_lines(io.BytesIO(data), max_line_bytes=limit, block_bytes=block))

    expected = [
        (number, raw if len(raw) <= limit else LongLine(len(raw)))
        for number, raw in iter_lines(data)
    ]
    assert read == expected


def test_the_reader_hashes_and_counts_the_whole_file_even_when_drained():
    data = b"line one\nline two\n" * 1000
    reader = HashingReader(io.BytesIO(data))

    next(read_lines(reader, max_line_bytes=100, block_bytes=16))
    reader.drain()

    assert reader.bytes_read == len(data)
    assert reader.hexdigest() == hashlib.sha256(data).hexdigest()
    assert stream_size(io.BytesIO(data)) == len(data)


def test_errors_past_the_cap_are_counted_not_kept():
    header = b'{"claimgate": "observations", "format_version": 1, '
    header += b'"codebook": {"name": "x", "version": "1"}}\n'
    data = header + b"[]\n" * 50

    parsed = parse_observation_file(data, {}, max_errors=10)

    assert parsed.error_count == 51  # the unknown codebook, then 50 bad lines
    assert len(parsed.errors) == 10
    assert not parsed.ok
    assert parsed.errors[1].reason == codes.NOT_AN_OBJECT


def test_an_over_long_first_line_is_reported_without_being_read_whole():
    data = b"x" * 5000 + b"\n{}\n"

    parsed = parse_observation_file(data, {}, max_line_bytes=100)

    assert (parsed.errors[0].line, parsed.errors[0].reason) == (1, codes.LINE_TOO_LONG)
    assert "5,000 bytes" in parsed.errors[0].message
