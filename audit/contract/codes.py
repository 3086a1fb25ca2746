"""Reason codes: machine-readable names of every way a line or record can be refused.

Tests assert on the code; people read the sentence that comes with it. Codes are stable:
renaming one is a breaking change of the record contract.
"""

from __future__ import annotations

# --- reading a line (check command and import) ------------------------------------------
INVALID_UTF8 = "invalid_utf8"
MALFORMED_JSON = "malformed_json"
LINE_TOO_LONG = "line_too_long"
NOT_AN_OBJECT = "not_an_object"
EMPTY_FILE = "empty_file"
MISSING_HEADER = "missing_header"
UNKNOWN_FORMAT = "unknown_format"
UNKNOWN_CODEBOOK = "unknown_codebook"
CODEBOOK_MISMATCH = "codebook_mismatch"
DUPLICATE_TUPLE = "duplicate_tuple"
DUPLICATE_OBSERVATION = "duplicate_observation"
TOO_MANY_LINES = "too_many_lines"
STUDY_FROZEN = "study_frozen"
INVALID_TEXT = "invalid_text"  # a NUL or an unpaired surrogate in a string or key
TOO_DEEP = "too_deep"  # arrays or objects nested deeper than audit.contract.texts.MAX_DEPTH
FILE_TOO_LARGE = "file_too_large"  # (line 0) the file is larger than one import allows

# --- stage 1: required fields and digests --------------------------------------------
MISSING_FIELD = "missing_field"
UNKNOWN_FIELD = "unknown_field"
INVALID_FIELD = "invalid_field"
ANSWER_DIGEST_MISMATCH = "answer_digest_mismatch"
SOURCE_DIGEST_MISMATCH = "source_digest_mismatch"
TUPLE_DIGEST_MISMATCH = "tuple_digest_mismatch"
UNIT_DIGEST_MISMATCH = "unit_digest_mismatch"
RECORD_DIGEST_MISMATCH = "record_digest_mismatch"

# --- stage 2: predicate types and evidence spans --------------------------------------
PREDICATE_MISSING = "predicate_missing"
PREDICATE_STRING = "predicate_string"
PREDICATE_BOOLEAN = "predicate_boolean"
PREDICATE_FLOAT = "predicate_float"
PREDICATE_OUT_OF_RANGE = "predicate_out_of_range"
PREDICATE_TYPE = "predicate_type"
SPAN_MALFORMED = "span_malformed"
SPAN_OUT_OF_RANGE = "span_out_of_range"
SPAN_QUOTE_MISMATCH = "span_quote_mismatch"
SPAN_MISSING = "span_missing"
SUMMARY_MISMATCH = "summary_mismatch"

# --- stage 3: evidence dimensions and weights -----------------------------------------
DIMENSIONS_MISMATCH = "dimensions_mismatch"
DIMENSION_VALUE_OUT_OF_RANGE = "dimension_value_out_of_range"
WEIGHTS_UNNORMALIZED = "weights_unnormalized"
WEIGHTS_MISMATCH = "weights_mismatch"
