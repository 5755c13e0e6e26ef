//! Placeholder: the benchmarks land with issue 5.
