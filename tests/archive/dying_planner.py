"""A planning process that reads its start message and ends without a word, as one killed
by the system would (tests/archive/test_import_process.py)."""

from audit.processes import served_pipes

if __name__ == "__main__":
    connection, _ = served_pipes()
    connection.recv()
    raise SystemExit(1)
