#!/usr/bin/env python3
"""Decodes OTLP trace export requests (what `fdr export --otlp-file` writes, or the bodies a
test collector received from `fdr export --otlp`) with the official OpenTelemetry protobuf
classes of the PyPI package opentelemetry-proto, independently of fdr's encoder, and prints
what they hold as JSON.

    python3 otlp_check.py REQUEST.pb [REQUEST.pb ...]

Each file is one ExportTraceServiceRequest
(opentelemetry.proto.collector.trace.v1.trace_service_pb2). They are checked as a receiver
expects: no field unknown to the schema; every span with a 16-byte trace id and an 8-byte span
id, neither all zero; span ids unique over all the files; one trace id; a parent span id empty
or 8 bytes; start <= end; attribute keys unique per span and per resource; every request with
the same resource and scope.

Output: {"requests": n, "spans_per_request": [n, ...], "resource": {key: value},
"scope": {"name": s, "version": s}, "trace_id": hex, "spans": [{"name", "start", "end",
"kind", "flags", "span_id", "parent", "attributes"}, and "events": [{"name", "time",
"attributes"}] when the span has events]}, the spans in file order. "parent" is
null for a span without one, {"name", "start", "thread"} of the parent when it is among the
spans (in any of the files), else {"remote": hex}. Values: strings, ints, bools and doubles as
JSON values; bytes as {"bytes": hex}; arrays as lists; key-value lists as {"kvlist": {...}}.

Exit status 3 when the package opentelemetry-proto is missing; 1 when a file is not a valid
request.
"""

import json
import sys


def fail(msg, code=1):
    print(f"otlp_check: {msg}", file=sys.stderr)
    sys.exit(code)


try:
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    from opentelemetry.proto.trace.v1 import trace_pb2
except ImportError as e:
    fail(
        f"{e}: install the official OpenTelemetry protobuf classes with "
        "`python3 -m pip install opentelemetry-proto` (scripts/test does)",
        3,
    )


def repeated(field):
    if hasattr(field, "is_repeated"):
        return field.is_repeated
    return field.label == field.LABEL_REPEATED


def unknown_fields(msg, path):
    """Fields the schema does not know, anywhere in msg."""
    found = []
    try:
        from google.protobuf import unknown_fields as uf

        if len(uf.UnknownFieldSet(msg)) > 0:
            found.append(path)
    except ImportError:
        if msg.UnknownFields():
            found.append(path)
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        name = f"{path}.{field.name}"
        if repeated(field):
            for i, v in enumerate(value):
                found.extend(unknown_fields(v, f"{name}[{i}]"))
        else:
            found.extend(unknown_fields(value, name))
    return found


def value(v):
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "string_value":
        return v.string_value
    if kind == "bool_value":
        return v.bool_value
    if kind == "int_value":
        return v.int_value
    if kind == "double_value":
        return v.double_value
    if kind == "bytes_value":
        return {"bytes": v.bytes_value.hex()}
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {"kvlist": attributes(v.kvlist_value.values, "kvlist")}
    fail(f"a value of unexpected kind {kind}")


def attributes(kvs, where):
    out = {}
    for kv in kvs:
        if kv.key in out:
            fail(f"{where}: attribute {kv.key!r} twice")
        out[kv.key] = value(kv.value)
    return out


def main(paths):
    if not paths:
        fail("usage: otlp_check.py REQUEST.pb [REQUEST.pb ...]")
    spans = []
    resource = scope = None
    per_request = []
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        req = trace_service_pb2.ExportTraceServiceRequest()
        try:
            req.ParseFromString(data)
        except Exception as e:  # noqa: BLE001 - any decoding error is a failure
            fail(f"{path}: not an ExportTraceServiceRequest: {e}")
        unknown = unknown_fields(req, "request")
        if unknown:
            fail(f"{path}: fields unknown to the schema at {unknown}")
        n = 0
        for rs in req.resource_spans:
            res = attributes(rs.resource.attributes, f"{path}: resource")
            if resource is None:
                resource = res
            elif res != resource:
                fail(f"{path}: a resource unlike the first request's: {res} != {resource}")
            for ss in rs.scope_spans:
                sc = {"name": ss.scope.name, "version": ss.scope.version}
                if scope is None:
                    scope = sc
                elif sc != scope:
                    fail(f"{path}: a scope unlike the first request's: {sc} != {scope}")
                for s in ss.spans:
                    spans.append(s)
                    n += 1
        per_request.append(n)
    trace_ids = {s.trace_id for s in spans}
    if len(trace_ids) > 1:
        fail(f"{len(trace_ids)} trace ids in one window")
    by_id = {}
    for s in spans:
        if len(s.trace_id) != 16 or s.trace_id == bytes(16):
            fail(f"span {s.name!r}: bad trace id {s.trace_id.hex()!r}")
        if len(s.span_id) != 8 or s.span_id == bytes(8):
            fail(f"span {s.name!r}: bad span id {s.span_id.hex()!r}")
        if s.span_id in by_id:
            fail(f"span id {s.span_id.hex()} twice")
        if len(s.parent_span_id) not in (0, 8):
            fail(f"span {s.name!r}: bad parent span id {s.parent_span_id.hex()!r}")
        if s.start_time_unix_nano > s.end_time_unix_nano:
            fail(f"span {s.name!r}: ends before it starts")
        by_id[s.span_id] = s
    out_spans = []
    for s in spans:
        attrs = attributes(s.attributes, f"span {s.name!r}")
        if not s.parent_span_id:
            parent = None
        elif s.parent_span_id in by_id:
            p = by_id[s.parent_span_id]
            parent = {
                "name": p.name,
                "start": p.start_time_unix_nano,
                "thread": attributes(p.attributes, "parent").get("thread.id"),
            }
        else:
            parent = {"remote": s.parent_span_id.hex()}
        out = {
            "name": s.name,
            "start": s.start_time_unix_nano,
            "end": s.end_time_unix_nano,
            "kind": trace_pb2.Span.SpanKind.Name(s.kind),
            "flags": s.flags,
            "span_id": s.span_id.hex(),
            "parent": parent,
            "attributes": attrs,
        }
        if s.events:
            out["events"] = [
                {
                    "name": e.name,
                    "time": e.time_unix_nano,
                    "attributes": attributes(e.attributes, f"span {s.name!r} event {e.name!r}"),
                }
                for e in s.events
            ]
        out_spans.append(out)
    json.dump(
        {
            "requests": len(paths),
            "spans_per_request": per_request,
            "resource": resource,
            "scope": scope,
            "trace_id": next(iter(trace_ids)).hex() if trace_ids else None,
            "spans": out_spans,
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
