//! The serializer: serde_json parses generated documents into `Value`s and writes them back, as
//! a service does with every request and response.

#[path = "common.rs"]
mod common;

/// When the slow call injected for `--check-slow` first slept.
#[cfg(feature = "slow")]
fn first_slow() -> Option<std::time::Instant> {
    serde_json::__fdr_bench::first_slow()
}

#[cfg(not(feature = "slow"))]
fn first_slow() -> Option<std::time::Instant> {
    None
}

/// A document of `n` records with nested objects, arrays, strings with escapes and numbers.
fn document(n: usize) -> String {
    let mut s = String::from("[");
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!(
            r#"{{"id":{i},"name":"item \"{i}\"\n","price":{}.{:02},"tags":["a","b{}","c"],"dims":{{"w":{},"h":{},"ok":{}}},"note":null}}"#,
            i * 7 % 1000,
            i % 100,
            i % 13,
            i % 50,
            i % 30,
            i % 2 == 0
        ));
    }
    s.push(']');
    s
}

fn main() {
    let docs: Vec<String> = [50, 200, 10, 400, 100].iter().map(|&n| document(n)).collect();
    common::main(&docs, |d| {
        let v: serde_json::Value = serde_json::from_str(d).expect("valid JSON");
        let back = serde_json::to_string(&v).expect("serializable");
        back.len() as u64 ^ v.as_array().map_or(0, |a| a.len() as u64)
    }, first_slow);
}
