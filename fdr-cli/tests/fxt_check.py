"""Reads an FXT file with a reader fdr did not write (the PyPI package `fxt`) and prints every
event as one JSON line, in file order, for fdr-cli's tests to compare with their own reader:

    {"type": 5, "pid": 1, "tid": 11, "category": "fdr", "name": "...", "ts": 45,
     "args": [["polls", 1]], "extra": 7}

`type` is the FXT event type (0 instant .. 10 flow end), `ts` nanoseconds as the package
converts them, `extra` the correlation id of async and flow events, the duration in nanoseconds
of a complete event, the counter id of a counter (null otherwise). Also prints the kernel
objects (`{"object": ...}`). Exits 2 when the package is missing, 1 when it cannot read the file.

Usage: python3 fxt_check.py FILE.fxt
"""

import json
import sys

try:
    from fxt import models
    from fxt.reader import FxtParseError, parse_records
except ImportError as e:
    print(f"the PyPI package fxt is needed: python3 -m pip install fxt ({e})", file=sys.stderr)
    sys.exit(2)

# FXT's event types, by the package's record classes.
TYPES = {
    models.InstantEventRecord: (0, None),
    models.CounterEventRecord: (1, "counter_id"),
    models.DurationBeginEventRecord: (2, None),
    models.DurationEndEventRecord: (3, None),
    models.DurationCompleteEventRecord: (4, "duration_ns"),
    models.AsyncBeginEventRecord: (5, "correlation_id"),
    models.AsyncInstantEventRecord: (6, "correlation_id"),
    models.AsyncEndEventRecord: (7, "correlation_id"),
    models.FlowBeginEventRecord: (8, "correlation_id"),
    models.FlowStepEventRecord: (9, "correlation_id"),
    models.FlowEndEventRecord: (10, "correlation_id"),
}


def main():
    with open(sys.argv[1], "rb") as f:
        try:
            result = parse_records(f)
        except FxtParseError as e:
            print(f"fxt could not read {sys.argv[1]}: {e}", file=sys.stderr)
            sys.exit(1)
    if result.had_unexpected_eof:
        print(f"fxt: unexpected end of {sys.argv[1]}: {result.eof_error}", file=sys.stderr)
        sys.exit(1)
    for provider in result.records_by_provider.values():
        for r in provider.records:
            kind = TYPES.get(type(r))
            if kind is not None:
                event_type, extra = kind
                print(json.dumps({
                    "type": event_type,
                    "pid": r.thread.process_id,
                    "tid": r.thread.thread_id,
                    "category": r.category,
                    "name": r.name,
                    "ts": r.timestamp_ns,
                    "args": [[k, v] for k, v in r.args.items()],
                    "extra": getattr(r, extra) if extra else None,
                }))
            elif isinstance(r, models.KernelObjectRecord):
                print(json.dumps({"object": r.id, "kind": r.type, "name": r.name}))


if __name__ == "__main__":
    main()
