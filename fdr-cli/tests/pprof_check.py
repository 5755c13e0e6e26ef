#!/usr/bin/env python3
"""Decodes a pprof file written by `fdr profile --pprof` with pprof's own schema, independently
of fdr's encoder, and prints what it holds as JSON.

    python3 pprof_check.py OUT.pb.gz

The schema (proto/profile.proto, vendored from google/pprof) is compiled with
`python3 -m grpc_tools.protoc` into a temporary directory. A gzipped file (by its magic bytes)
is gunzipped first, which checks its CRC and length. The file is checked as pprof readers expect
(string 0 empty, every mapping, location and function id known and nonzero, one value per
sample type),
then summed per function: over the samples whose leaf is that function, the sum of each value.

Output: {"sample_types": [[type, unit], ...], "period_type": [type, unit], "period": n,
"default_sample_type": type, "time_nanos": n, "duration_nanos": n, "samples": n,
"gzipped": bool, "functions": {name: [sum of value 0, sum of value 1, ...]}}.

Exit status 3 when grpc_tools (PyPI package grpcio-tools) or protobuf is missing; 1 when the file
is not a valid profile.
"""

import gzip
import importlib
import json
import os
import subprocess
import sys
import tempfile


def fail(msg, code=1):
    print(f"pprof_check: {msg}", file=sys.stderr)
    sys.exit(code)


def compile_schema(out_dir):
    here = os.path.dirname(os.path.abspath(__file__))
    proto_dir = os.path.join(here, "proto")
    try:
        import grpc_tools  # noqa: F401
        import google.protobuf  # noqa: F401
    except ImportError as e:
        fail(
            f"{e}: install them with `python3 -m pip install grpcio-tools protobuf` "
            "(scripts/test does)",
            3,
        )
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"--proto_path={proto_dir}",
            f"--python_out={out_dir}",
            os.path.join(proto_dir, "profile.proto"),
        ],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        fail(f"protoc failed on profile.proto: {r.stderr.strip()}", 3)
    sys.path.insert(0, out_dir)
    return importlib.import_module("profile_pb2")


def main():
    if len(sys.argv) != 2:
        fail("usage: pprof_check.py FILE", 2)
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    gzipped = data[:2] == b"\x1f\x8b"
    if gzipped:
        data = gzip.decompress(data)
    with tempfile.TemporaryDirectory() as tmp:
        pb = compile_schema(tmp)
        p = pb.Profile()
        p.ParseFromString(data)
    strings = list(p.string_table)
    if not strings or strings[0] != "":
        fail("string_table[0] is not the empty string")

    def s(i):
        if not 0 <= i < len(strings):
            fail(f"string index {i} outside the table of {len(strings)}")
        return strings[i]

    functions = {}
    for fn in p.function:
        if fn.id == 0 or fn.id in functions:
            fail(f"function id {fn.id} is zero or repeated")
        functions[fn.id] = s(fn.name)
    mappings = set()
    for m in p.mapping:
        if m.id == 0 or m.id in mappings:
            fail(f"mapping id {m.id} is zero or repeated")
        mappings.add(m.id)
        s(m.filename)
    locations = {}
    for loc in p.location:
        if loc.mapping_id != 0 and loc.mapping_id not in mappings:
            fail(f"location {loc.id} names unknown mapping {loc.mapping_id}")
        if loc.id == 0 or loc.id in locations:
            fail(f"location id {loc.id} is zero or repeated")
        if not loc.line:
            fail(f"location {loc.id} has no line")
        for line in loc.line:
            if line.function_id not in functions:
                fail(f"location {loc.id} names unknown function {line.function_id}")
        # line[0] is the innermost frame (the later ones are the callers it was inlined into).
        locations[loc.id] = functions[loc.line[0].function_id]
    types = [[s(t.type), s(t.unit)] for t in p.sample_type]
    sums = {}
    for smp in p.sample:
        if len(smp.value) != len(types):
            fail(f"a sample has {len(smp.value)} values for {len(types)} sample types")
        if not smp.location_id:
            fail("a sample has no location")
        for lid in smp.location_id:
            if lid not in locations:
                fail(f"a sample names unknown location {lid}")
        leaf = locations[smp.location_id[0]]
        acc = sums.setdefault(leaf, [0] * len(types))
        for i, v in enumerate(smp.value):
            acc[i] += v
        for lab in smp.label:
            s(lab.key)
            s(lab.str)
    print(
        json.dumps(
            {
                "sample_types": types,
                "period_type": [s(p.period_type.type), s(p.period_type.unit)],
                "period": p.period,
                "default_sample_type": s(p.default_sample_type),
                "time_nanos": p.time_nanos,
                "duration_nanos": p.duration_nanos,
                "samples": len(p.sample),
                "gzipped": gzipped,
                "functions": sums,
            },
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    main()
