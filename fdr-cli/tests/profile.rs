//! `fdr profile` and `fdr flame` on profile files (`.fdrprof`): exact per-function figures of a
//! known profile (recursion, folded and open calls), the call tree, callers and callees, per
//! thread sections, the pprof export decoded by pprof's own schema (with Python's protobuf, not
//! fdr's encoder), golden outputs, and bad input: cut or corrupted profiles, a log given to
//! `profile`, a profile given to the commands for logs.

mod common;

use std::path::Path;
use std::process::Command;

use common::{basic_log, fdr, golden, temp_dir, write_log};
use fdr_format::profile::Profile;
use fdr_testkit::profile::{known, TreeBuilder};
use serde_json::Value;

fn write_profile(dir: &Path, name: &str, p: &Profile) -> String {
    write_log(dir, name, &p.encode())
}

fn json(args: &[&str]) -> Value {
    let out = fdr(args).unwrap_or_else(|e| panic!("fdr {args:?}: {e}"));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("fdr {args:?}: {e}\n{out}"))
}

fn by_function<'a>(rows: &'a Value, name: &str) -> &'a Value {
    rows.as_array()
        .unwrap()
        .iter()
        .find(|r| r["function"] == name)
        .unwrap_or_else(|| panic!("no {name} in {rows}"))
}

/// A function's figures: count, total, self, min, max, folded, open, open_ns.
type Figures = (u64, u64, u64, u64, u64, u64, u64, u64);

/// The figures of each function of [`known`], merged.
const KNOWN: [(&str, Figures); 6] = [
    ("app::main", (1, 10_000, 1000, 10_000, 10_000, 0, 0, 0)),
    ("app::handle", (7, 16_000, 9000, 1000, 5000, 0, 0, 0)),
    ("app::parse", (7, 3800, 3800, 200, 1000, 0, 0, 0)),
    ("app::walk", (5, 3500, 3200, 700, 2500, 0, 0, 0)),
    ("app::log", (1, 2000, 2000, 2000, 2000, 5, 0, 0)),
    ("app::idle", (0, 0, 0, 0, 0, 0, 1, 50_000)),
];

#[test]
fn per_function_rows_are_exact_with_recursion_folded_and_open_calls() {
    let dir = temp_dir("profile-rows");
    let p = write_profile(&dir, "known.fdrprof", &known());
    let rows = json(&["profile", &p, "--format", "json"]);
    let names: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["function"].as_str().unwrap())
        .collect();
    // By self time, most first.
    assert_eq!(
        names,
        [
            "app::handle",
            "app::parse",
            "app::walk",
            "app::log",
            "app::main",
            "app::idle"
        ]
    );
    for (f, (count, total, self_, min, max, folded, open, open_ns)) in KNOWN {
        let r = by_function(&rows, f);
        let got: Vec<u64> = [
            "count", "total_ns", "self_ns", "min_ns", "max_ns", "folded", "open", "open_ns",
        ]
        .iter()
        .map(|k| r[k].as_u64().unwrap_or_else(|| panic!("{f}: no {k}")))
        .collect();
        assert_eq!(
            got,
            [count, total, self_, min, max, folded, open, open_ns],
            "{f}"
        );
    }
    // Quantiles from the merged histograms: within 1/16 of the nearest-rank duration, within
    // min..max.
    let durations: [(&str, &[u64]); 4] = [
        ("app::handle", &[1000, 1000, 1500, 2000, 2500, 3000, 5000]),
        ("app::parse", &[200, 300, 300, 400, 600, 1000, 1000]),
        ("app::walk", &[700, 800, 1000, 1300, 2500]),
        ("app::main", &[10_000]),
    ];
    for (f, d) in durations {
        let r = by_function(&rows, f);
        for (k, q) in [("p50_ns", 0.5), ("p90_ns", 0.9), ("p99_ns", 0.99)] {
            let rank = ((q * d.len() as f64).ceil() as usize).max(1);
            let want = d[rank - 1] as f64;
            let got = r[k].as_u64().unwrap();
            assert!(
                (got as f64 - want).abs() <= want / 16.0,
                "{f} {k}: {got} vs {want}"
            );
            assert!(got >= r["min_ns"].as_u64().unwrap() && got <= r["max_ns"].as_u64().unwrap());
        }
    }
    // A recursion f > f > f alone: three calls, the outer one's time.
    let mut t = TreeBuilder::new(0, "");
    let a = t.calls(None, 1, &[900], 300);
    let b = t.calls(Some(a), 1, &[600], 300);
    t.calls(Some(b), 1, &[300], 300);
    let rec = Profile {
        ticks_per_second: 1_000_000_000,
        functions: vec![(1, "app::f".into())],
        trees: vec![t.finish()],
        ..Profile::default()
    };
    let rec = write_profile(&dir, "rec.fdrprof", &rec);
    let rows = json(&["profile", &rec, "--format", "json"]);
    let f = by_function(&rows, "app::f");
    assert_eq!(
        (
            f["count"].as_u64(),
            f["total_ns"].as_u64(),
            f["self_ns"].as_u64()
        ),
        (Some(3), Some(900), Some(900))
    );
}

#[test]
fn durations_are_converted_from_ticks() {
    let dir = temp_dir("profile-ticks");
    let mut p = known();
    // 3 ticks per ns.
    p.ticks_per_second = 3_000_000_000;
    let path = write_profile(&dir, "3ghz.fdrprof", &p);
    let rows = json(&["profile", &path, "--format", "json"]);
    let handle = by_function(&rows, "app::handle");
    assert_eq!(handle["total_ns"].as_u64(), Some(16_000 / 3));
    assert_eq!(handle["self_ns"].as_u64(), Some(9000 / 3));
    assert_eq!(handle["max_ns"].as_u64(), Some(5000 / 3));
}

#[test]
fn golden_outputs_of_the_known_profile() {
    let dir = temp_dir("profile-golden");
    let p = write_profile(&dir, "known.fdrprof", &known());
    let p = p.as_str();
    let out = |args: &[&str]| fdr(args).unwrap_or_else(|e| panic!("fdr {args:?}: {e}"));
    golden("profile.txt", &out(&["profile", p]));
    golden("profile.json", &out(&["profile", p, "--format", "json"]));
    golden("profile_tree.txt", &out(&["profile", p, "--tree"]));
    golden(
        "profile_tree.json",
        &out(&["profile", p, "--tree", "--format", "json"]),
    );
    golden(
        "profile_function.txt",
        &out(&["profile", p, "--function", "handle"]),
    );
    golden(
        "profile_threads.txt",
        &out(&["profile", p, "--threads", "--sort", "name"]),
    );
    golden(
        "profile_threads_tree.json",
        &out(&["profile", p, "--threads", "--tree", "--format", "json"]),
    );
}

/// Every tree node: its children's totals and its self time add up to its total.
fn check_nesting(nodes: &Value, depth: usize, seen: &mut usize) {
    for n in nodes.as_array().unwrap() {
        *seen += 1;
        let kids = &n["children"];
        let below: u64 = kids
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["total_ns"].as_u64().unwrap())
            .sum();
        assert_eq!(
            n["self_ns"].as_u64().unwrap() + below,
            n["total_ns"].as_u64().unwrap(),
            "depth {depth}: {n}"
        );
        check_nesting(kids, depth + 1, seen);
    }
}

#[test]
fn the_tree_nests_call_paths_under_their_callers() {
    let dir = temp_dir("profile-tree");
    let p = write_profile(&dir, "known.fdrprof", &known());
    let roots = json(&["profile", &p, "--tree", "--format", "json"]);
    let names = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|n| n["function"].as_str().unwrap().to_string())
            .collect()
    };
    // Roots by total: main (thread 11), handle (threads 12 and the exited, merged), idle.
    assert_eq!(names(&roots), ["app::main", "app::handle", "app::idle"]);
    let main = &roots[0];
    assert_eq!(names(&main["children"]), ["app::handle", "app::log"]);
    let handle = &main["children"][0];
    assert_eq!(names(&handle["children"]), ["app::walk", "app::parse"]);
    let walk = &handle["children"][0];
    assert_eq!(walk["count"].as_u64(), Some(2));
    assert_eq!(walk["total_ns"].as_u64(), Some(3500));
    let walk2 = &walk["children"][0];
    assert_eq!(walk2["function"], "app::walk");
    assert_eq!(names(&walk2["children"]), ["app::walk", "app::parse"]);
    assert_eq!(walk2["children"][0]["children"], Value::Array(vec![]));
    // The merged root handle: 2 calls on thread 12 and 1 of an exited thread.
    let root_handle = &roots[1];
    assert_eq!(root_handle["count"].as_u64(), Some(3));
    assert_eq!(root_handle["total_ns"].as_u64(), Some(9000));
    let p99 = root_handle["p99_ns"].as_u64().unwrap();
    assert!(p99.abs_diff(5000) <= 5000 / 16, "{p99}");
    assert_eq!(roots[2]["open"].as_u64(), Some(1));
    let mut seen = 0;
    check_nesting(&roots, 0, &mut seen);
    assert_eq!(seen, 11);
    // --min leaves out paths (and what is under them) whose total is below it.
    let roots = json(&["profile", &p, "--tree", "--format", "json", "--min", "2us"]);
    assert_eq!(names(&roots), ["app::main", "app::handle"]);
    assert_eq!(names(&roots[0]["children"][0]["children"]), ["app::walk"]);
    assert_eq!(
        roots[0]["children"][0]["children"][0]["children"][0]["children"],
        Value::Array(vec![])
    );
}

#[test]
fn a_function_shows_its_callers_and_callees() {
    let dir = temp_dir("profile-function");
    let p = write_profile(&dir, "known.fdrprof", &known());
    let edges = |v: &Value| -> Vec<(Option<String>, u64, u64)> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["function"].as_str().map(String::from),
                    e["count"].as_u64().unwrap(),
                    e["total_ns"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let s = |x: &str| Some(x.to_string());
    let walk = json(&["profile", &p, "--function", "walk", "--format", "json"]);
    assert_eq!(walk.as_array().unwrap().len(), 1);
    let w = &walk[0];
    assert_eq!(w["function"], "app::walk");
    assert_eq!(
        (
            w["count"].as_u64(),
            w["total_ns"].as_u64(),
            w["self_ns"].as_u64()
        ),
        (Some(5), Some(3500), Some(3200))
    );
    // Called twice by handle (3.5 µs), three times by itself (2 µs and 0.8 µs).
    assert_eq!(
        edges(&w["callers"]),
        [(s("app::handle"), 2, 3500), (s("app::walk"), 3, 2800)]
    );
    assert_eq!(
        edges(&w["callees"]),
        [(s("app::walk"), 3, 2800), (s("app::parse"), 1, 300)]
    );
    let handle = json(&[
        "profile",
        &p,
        "--function",
        "app::handle",
        "--format",
        "json",
    ]);
    let h = &handle[0];
    // Roots on thread 12 (2 calls) and of an exited thread (1) have no recorded caller.
    assert_eq!(
        edges(&h["callers"]),
        [(None, 3, 9000), (s("app::main"), 4, 7000)]
    );
    assert_eq!(
        edges(&h["callees"]),
        [(s("app::parse"), 6, 3500), (s("app::walk"), 2, 3500)]
    );
    // A pattern for several functions: each, sorted as rows are; --min hides short edges.
    let both = json(&[
        "profile",
        &p,
        "--function",
        "app::*a*",
        "--format",
        "json",
        "--min",
        "3us",
    ]);
    let names: Vec<&str> = both
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["function"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["app::handle", "app::parse", "app::walk", "app::main"]
    );
    assert_eq!(
        edges(&both[0]["callers"]),
        [(None, 3, 9000), (s("app::main"), 4, 7000)]
    );
    assert_eq!(edges(&both[1]["callers"]), [(s("app::handle"), 6, 3500)]);
    assert_eq!(edges(&both[1]["callees"]), []);
    // No match: the closest names.
    let e = fdr(&["profile", &p, "--function", "hnadle"]).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("no function in the profile matches --function hnadle")
            && msg.contains("app::handle"),
        "{msg}"
    );
    assert_eq!(e.exit_code(), 1);
}

#[test]
fn threads_give_one_section_per_tree() {
    let dir = temp_dir("profile-threads");
    let p = write_profile(&dir, "known.fdrprof", &known());
    let trees = json(&["profile", &p, "--threads", "--format", "json"]);
    let labels: Vec<(u64, &str, &str)> = trees
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["tid"].as_u64().unwrap(),
                t["thread"].as_str().unwrap(),
                t["label"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        labels,
        [
            (11, "main", "thread 11 (main)"),
            (12, "worker", "thread 12 (worker)"),
            (0, "", "exited threads")
        ]
    );
    let worker = &trees[1]["functions"];
    let handle = by_function(worker, "app::handle");
    assert_eq!(handle["count"].as_u64(), Some(2));
    assert_eq!(handle["total_ns"].as_u64(), Some(8000));
    let exited = &trees[2]["functions"];
    assert_eq!(exited.as_array().unwrap().len(), 1);
    // A profile merged as it ran has one tree, of all threads.
    let mut merged = known();
    merged.flags = 0;
    merged.trees = vec![merged.merged()];
    let m = write_profile(&dir, "merged.fdrprof", &merged);
    let trees = json(&["profile", &m, "--threads", "--format", "json"]);
    assert_eq!(trees.as_array().unwrap().len(), 1);
    assert_eq!(trees[0]["label"], "all threads");
    // The same figures as the per-thread profile merged.
    assert_eq!(
        json(&["profile", &m, "--format", "json"]),
        json(&["profile", &p, "--format", "json"])
    );
    let text = fdr(&["profile", &m]).unwrap();
    assert!(
        text.starts_with(
            "profile of demo (pid 4242), 60.0 µs: 1 call tree merged over every thread; 5 calls \
             folded into their callers"
        ),
        "{text}"
    );
}

#[test]
fn sort_top_min_and_output_file() {
    let dir = temp_dir("profile-sort");
    let p = write_profile(&dir, "known.fdrprof", &known());
    let rows = json(&[
        "profile", &p, "--format", "json", "--sort", "count", "--top", "3",
    ]);
    let got: Vec<(&str, u64)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["function"].as_str().unwrap(),
                r["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [("app::handle", 7), ("app::parse", 7), ("app::walk", 5)]
    );
    let rows = json(&["profile", &p, "--format", "json", "--min", "3.5us"]);
    assert_eq!(rows.as_array().unwrap().len(), 4);
    let out = dir.join("report.txt");
    let o = out.to_str().unwrap();
    assert_eq!(fdr(&["profile", &p, "-o", o]).unwrap(), "");
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        fdr(&["profile", &p]).unwrap()
    );
    // Never over the input.
    let e = fdr(&["profile", &p, "-o", &p]).unwrap_err();
    assert!(e.to_string().contains("the output is the input"), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), known().encode());
    // --tree takes neither --sort nor --top.
    assert_eq!(
        fdr(&["profile", &p, "--tree", "--top", "2"])
            .unwrap_err()
            .exit_code(),
        2
    );
}

#[test]
fn names_are_escaped_in_text_and_exact_in_json() {
    let dir = temp_dir("profile-escape");
    let mut p = known();
    p.functions[0].1 = "app::\u{1b}]0;pwned\u{7}\nmain".into();
    let path = write_profile(&dir, "evil.fdrprof", &p);
    for args in [
        vec!["profile", &path],
        vec!["profile", &path, "--tree"],
        vec!["profile", &path, "--function", "*handle", "--threads"],
    ] {
        let text = fdr(&args).unwrap();
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{args:?}"
        );
        assert!(
            text.contains("app::\\x1b]0;pwned\\x07\\nmain"),
            "{args:?}: {text}"
        );
    }
    let rows = json(&["profile", &path, "--format", "json"]);
    by_function(&rows, "app::\u{1b}]0;pwned\u{7}\nmain");
}

/// Runs `tests/pprof_check.py` on `file`: pprof's schema compiled by grpc_tools, the file
/// decoded by Python's protobuf. Fails (does not skip) without python3 or grpc_tools.
fn pprof_check(file: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pprof_check.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(file)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "python3 is needed to decode the pprof output with pprof's own schema ({e}): \
                 install python3, then `python3 -m pip install grpcio-tools protobuf` \
                 (scripts/test does)"
            )
        });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() != Some(3),
        "the pprof check needs the Python packages grpcio-tools and protobuf: run \
         `python3 -m pip install grpcio-tools protobuf` (scripts/test does): {stderr}"
    );
    assert!(
        out.status.success(),
        "pprof_check.py rejected {} (exit {:?}): {stderr}",
        file.display(),
        out.status.code()
    );
    serde_json::from_slice(&out.stdout).expect("pprof_check.py prints JSON")
}

#[test]
fn pprof_read_with_the_official_schema_matches_the_report() {
    let dir = temp_dir("profile-pprof");
    let p = write_profile(&dir, "known.fdrprof", &known());
    let rows = json(&["profile", &p, "--format", "json"]);
    for (name, threads) in [("out.pb.gz", false), ("out.pb", false), ("t.pb.gz", true)] {
        let out = dir.join(name);
        let mut args = vec!["profile", &p, "--pprof", out.to_str().unwrap()];
        if threads {
            args.push("--threads");
        }
        assert_eq!(fdr(&args).unwrap(), "", "nothing on standard output");
        let bytes = std::fs::read(&out).unwrap();
        assert_eq!(
            name.ends_with(".gz"),
            bytes.starts_with(&[0x1f, 0x8b]),
            "{name}"
        );
        let v = pprof_check(&out);
        assert_eq!(v["gzipped"], name.ends_with(".gz"));
        assert_eq!(
            v["sample_types"],
            serde_json::json!([["calls", "count"], ["time", "nanoseconds"]])
        );
        assert_eq!(v["period_type"], serde_json::json!(["time", "nanoseconds"]));
        assert_eq!(v["default_sample_type"], "time");
        assert_eq!(v["duration_nanos"].as_u64(), Some(60_000));
        assert_eq!(v["time_nanos"].as_u64(), Some(1_700_000_000_000_000_000));
        // Per function, the samples whose leaf it is: its calls and its self time.
        let funcs = v["functions"].as_object().unwrap();
        for r in rows.as_array().unwrap() {
            let f = r["function"].as_str().unwrap();
            let (count, self_ns) = (r["count"].as_i64().unwrap(), r["self_ns"].as_i64().unwrap());
            match funcs.get(f) {
                Some(sums) => assert_eq!(
                    (sums[0].as_i64().unwrap(), sums[1].as_i64().unwrap()),
                    (count, self_ns),
                    "{name}: {f}"
                ),
                None => assert_eq!((count, self_ns), (0, 0), "{name}: {f} has no sample"),
            }
        }
        assert_eq!(funcs.len(), 5, "{name}: {v}");
    }
}

#[test]
fn a_cut_or_corrupted_profile_is_an_error_with_its_offset() {
    let dir = temp_dir("profile-bad");
    let bytes = known().encode();
    let path = dir.join("bad.fdrprof");
    let p = path.to_str().unwrap();
    for n in 0..bytes.len() {
        std::fs::write(&path, &bytes[..n]).unwrap();
        for args in [vec!["profile", p], vec!["flame", p, "-o", "-"]] {
            let e = fdr(&args).unwrap_err();
            let msg = e.to_string();
            assert_eq!(e.exit_code(), 1, "cut at {n}: {msg}");
            if n >= 8 {
                assert!(msg.contains("at byte offset "), "cut at {n}: {msg}");
            }
        }
    }
    // A node whose parent comes after it.
    let mut bad = known();
    bad.trees[0].nodes[1].parent = Some(5);
    std::fs::write(&path, bad.encode()).unwrap();
    let msg = fdr(&["profile", p]).unwrap_err().to_string();
    assert!(
        msg.contains("at byte offset ") && msg.contains("parent"),
        "{msg}"
    );
    // Bytes flipped anywhere: an error or a report, never a panic.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..300 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut b = bytes.clone();
        let at = (x % b.len() as u64) as usize;
        b[at] ^= 1 << (x >> 60 & 7);
        std::fs::write(&path, &b).unwrap();
        for args in [
            vec!["profile", p, "--format", "json"],
            vec!["profile", p, "--tree"],
            vec!["profile", p, "--function", "*", "--threads"],
        ] {
            if let Err(e) = fdr(&args) {
                assert_eq!(e.exit_code(), 1, "{e}");
            }
        }
    }
    // The command itself exits non-zero with the message on standard error.
    std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
    let run = common::child::run_fdr(&["profile", p], &dir);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("at byte offset ") && run.stderr.contains("cut short"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_log_given_to_profile_is_named_a_log() {
    let dir = temp_dir("profile-log");
    let log = write_log(&dir, "basic.fdr", &basic_log());
    let e = fdr(&["profile", &log]).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("this is a log (.fdr), not a profile") && msg.contains("`account`"),
        "{msg}"
    );
    assert_eq!(e.exit_code(), 1);
    // Neither a log nor a profile.
    let other = write_log(&dir, "other.bin", b"hello, world");
    let msg = fdr(&["profile", &other]).unwrap_err().to_string();
    assert!(msg.contains("not an fdr profile"), "{msg}");
}

#[test]
fn a_profile_given_to_the_commands_for_logs_says_which_read_it() {
    let dir = temp_dir("profile-to-log-commands");
    let p = write_profile(&dir, "known.fdrprof", &known());
    let p = p.as_str();
    for args in [
        vec!["info", p],
        vec!["dump", p],
        vec!["account", p],
        vec!["stack", p],
        vec!["calls", p],
        vec!["replay", p],
        vec!["convert", p, "--format", "chrome", "-o", "-"],
        vec!["diff", p, p],
    ] {
        let e = fdr(&args).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("this is a profile") && msg.contains("use `fdr profile` or `fdr flame`"),
            "{args:?}: {msg}"
        );
        assert_eq!(e.exit_code(), 1, "{args:?}");
    }
}

#[test]
fn flame_draws_a_profile() {
    let dir = temp_dir("profile-flame");
    let p = write_profile(&dir, "known.fdrprof", &known());
    let svg = fdr(&["flame", &p, "-o", "-"]).unwrap();
    assert!(svg.starts_with("<?xml"), "{}", &svg[..100.min(svg.len())]);
    for f in [
        "app::main",
        "app::handle",
        "app::parse",
        "app::walk",
        "app::log",
    ] {
        assert!(svg.contains(f), "{f} missing");
    }
    let out = dir.join("p.svg");
    fdr(&["flame", &p, "-o", out.to_str().unwrap()]).unwrap();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), svg);
    let e = fdr(&["flame", "--chart", &p, "-o", "-"]).unwrap_err();
    assert!(e.to_string().contains("no flame chart"), "{e}");
    assert_eq!(e.exit_code(), 1);
    let e = fdr(&["flame", "--thread", "1", &p, "-o", "-"]).unwrap_err();
    assert!(e.to_string().contains("apply to logs only"), "{e}");
    // A profile with no returned call has nothing to draw.
    let mut t = TreeBuilder::new(0, "");
    let idle = t.calls(None, 1, &[], 0);
    t.open(idle, 1, 100);
    let empty = Profile {
        ticks_per_second: 1_000_000_000,
        trees: vec![t.finish()],
        ..Profile::default()
    };
    let empty = write_profile(&dir, "empty.fdrprof", &empty);
    let msg = fdr(&["flame", &empty, "-o", "-"]).unwrap_err().to_string();
    assert!(msg.contains("no calls to draw"), "{msg}");
}

#[test]
fn a_deep_recursion_is_shown_at_most_1024_frames_deep() {
    let dir = temp_dir("profile-deep");
    let mut t = TreeBuilder::new(0, "");
    let mut parent = None;
    let depth = 5000u64;
    for i in 0..depth {
        parent = Some(t.calls(parent, 1, &[(depth - i) * 10], 10));
    }
    let p = Profile {
        ticks_per_second: 1_000_000_000,
        functions: vec![(1, "app::deep".into())],
        trees: vec![t.finish()],
        ..Profile::default()
    };
    let path = write_profile(&dir, "deep.fdrprof", &p);
    let rows = json(&["profile", &path, "--format", "json"]);
    let f = by_function(&rows, "app::deep");
    assert_eq!(
        (
            f["count"].as_u64(),
            f["total_ns"].as_u64(),
            f["self_ns"].as_u64()
        ),
        (Some(depth), Some(depth * 10), Some(depth * 10))
    );
    let tree = fdr(&["profile", &path, "--tree"]).unwrap();
    assert_eq!(tree.lines().count(), 2 + 1024 + 1);
    let last = tree.lines().last().unwrap();
    assert!(
        last.ends_with(&format!("{:2048}[calls deeper than 1024 frames]", "")),
        "{last}"
    );
    let svg = fdr(&["flame", &path, "-o", "-"]).unwrap();
    assert!(svg.contains("[calls deeper than 1024 frames]"));
    let out = dir.join("deep.pb");
    fdr(&["profile", &path, "--pprof", out.to_str().unwrap()]).unwrap();
    let v = pprof_check(&out);
    assert_eq!(v["samples"].as_u64(), Some(1025));
    let deeper = &v["functions"]["[calls deeper than 1024 frames]"];
    assert_eq!(deeper[1].as_u64(), Some((depth - 1024) * 10));
}
