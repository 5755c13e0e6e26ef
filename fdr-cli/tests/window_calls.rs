//! `fdr_format::window::calls`, the reconstruction of a window's calls that the runtime uses
//! without this crate, gives exactly the calls `fdr calls --format json` lists (names, thread,
//! start, duration and self time, inferred and open marks, arguments, and the tree under each
//! call), and exactly those `fdr export` turns into spans, in the same order with the same
//! callers and Unix times: for every synthetic log shape (those of `examples/genlog.rs`, the
//! tests' fixtures, random ones) and the recorded logs kept with the tests
//! (`fdr-tests/data/*.fdr`, `tests/fuzz_inputs/*.fdr`; and every `.fdr` of the directory
//! `FDR_WINDOW_CALLS_LOGS` names, if set). A log one refuses, the other refuses with the same
//! error.
//!
//! `fdr calls` lists every call at the top (slowest first, `--top` at most 100,000), each with
//! its tree down to `--depth` levels (at most 1024) and at most `MAX_SHOWN / calls` calls
//! (between 16 and 4,096) per tree; the comparison cuts the reconstruction's trees by the same
//! rules, and compares the lists as multisets of trees. `fdr calls` keys a call by thread,
//! function, start and end (ticks) and rebuilds its end from its duration: a call whose end is
//! before its start (time went backwards on its thread) is left out of the top of the list
//! (it is still in its caller's tree), and two calls with the same key (twins) are listed once,
//! so where the reconstruction has twins the lists are compared as sets. A window with more
//! calls than `--top` lists is compared with `fdr export` only.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::{
    basic_log, basic_log_with_gap, culled_log, midstack_log, midstack_log_led_by, tasks_log,
    temp_dir, triggered_log, write_log,
};
use fdr_cli::testing::synth::LogBuilder;
use fdr_cli::CliError;
use fdr_format::window::{calls, WindowCalls};
use fdr_format::FormatError;
use fdr_format::{
    block_preamble, function_record, meta, meta_bytes, BlockStart, ClockSource, FnKind, Mode,
    Reason, ReasonInfo, RunInfo, TaskKind, BLOCK_PREAMBLE_AFTER_EXTENTS, BLOCK_PREAMBLE_SIZE,
};
use proptest::prelude::*;
use serde_json::{Map, Value};

/// `fdr calls`' limits (`commands::calls`): calls listed, levels shown, calls shown in all.
const TOP: usize = 100_000;
const DEPTH: usize = 1024;
const MAX_SHOWN: usize = 1 << 18;

/// One call as `fdr calls --format json` prints it: function, id, thread, start, duration,
/// self, inferred, open, arguments (name, value).
type Fields = (
    String,
    u64,
    i64,
    u64,
    u64,
    u64,
    bool,
    bool,
    Vec<(String, u64)>,
);

/// A tree in preorder: (depth below its root, the call's fields as an index into a table).
type Tree = Vec<(usize, usize)>;

/// Interns [`Fields`], so trees compare as vectors of small integers.
#[derive(Default)]
struct Table {
    ids: std::collections::HashMap<Fields, usize>,
}

impl Table {
    fn id(&mut self, f: Fields) -> usize {
        let n = self.ids.len();
        *self.ids.entry(f).or_insert(n)
    }
}

/// Parses JSON of any depth (serde_json stops at 128 levels; a call tree can be 1024 deep):
/// an explicit stack of open arrays and objects; strings and numbers are handed to serde_json
/// one token at a time.
fn parse_deep(s: &str) -> Value {
    enum Open {
        Array(Vec<Value>),
        Object(Map<String, Value>, Option<String>),
    }
    let b = s.as_bytes();
    let mut stack: Vec<Open> = Vec::new();
    let mut i = 0;
    loop {
        while i < b.len() && matches!(b[i], b' ' | b'\n' | b'\r' | b'\t' | b',' | b':') {
            i += 1;
        }
        assert!(i < b.len(), "the JSON ends early");
        let value = match b[i] {
            b'[' => {
                stack.push(Open::Array(Vec::new()));
                i += 1;
                continue;
            }
            b'{' => {
                stack.push(Open::Object(Map::new(), None));
                i += 1;
                continue;
            }
            b']' | b'}' => {
                i += 1;
                match stack.pop().expect("balanced JSON") {
                    Open::Array(v) => Value::Array(v),
                    Open::Object(m, _) => Value::Object(m),
                }
            }
            b'"' => {
                let start = i;
                i += 1;
                while b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                let text: String = serde_json::from_str(&s[start..i]).expect("a JSON string");
                if let Some(Open::Object(_, key @ None)) = stack.last_mut() {
                    *key = Some(text);
                    continue;
                }
                Value::String(text)
            }
            _ => {
                let start = i;
                while i < b.len() && !matches!(b[i], b',' | b']' | b'}' | b' ' | b'\n') {
                    i += 1;
                }
                serde_json::from_str(&s[start..i]).expect("a JSON number or literal")
            }
        };
        match stack.last_mut() {
            None => return value,
            Some(Open::Array(v)) => v.push(value),
            Some(Open::Object(m, key)) => {
                m.insert(key.take().expect("a key before its value"), value);
            }
        }
    }
}

/// The fields of a call object of `fdr calls --format json`.
fn json_fields(c: &Value) -> Fields {
    let u = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("{k} in {c}"));
    let b = |k: &str| c[k].as_bool().unwrap_or_else(|| panic!("{k} in {c}"));
    let args = c["args"].as_array().map_or_else(Vec::new, |a| {
        a.iter()
            .map(|x| {
                (
                    x["name"].as_str().unwrap().to_string(),
                    x["value"].as_u64().unwrap(),
                )
            })
            .collect()
    });
    (
        c["function"].as_str().unwrap().to_string(),
        u("id"),
        c["thread"].as_i64().unwrap(),
        u("start_ns"),
        u("duration_ns"),
        u("self_ns"),
        b("inferred_start"),
        b("open_at_end"),
        args,
    )
}

/// A listed call's tree, in preorder, without recursion.
fn json_tree(root: &Value, table: &mut Table) -> Tree {
    let mut out = Vec::new();
    let mut todo = vec![(root, 0usize)];
    while let Some((c, depth)) = todo.pop() {
        out.push((depth, table.id(json_fields(c))));
        if let Some(children) = c["children"].as_array() {
            for child in children.iter().rev() {
                todo.push((child, depth + 1));
            }
        }
    }
    out
}

/// The fields of call `i` of the reconstruction, named as `fdr` names them.
fn our_fields(w: &WindowCalls, i: usize) -> Fields {
    let c = &w.calls[i];
    (
        w.function_name(c.function).into_owned(),
        u64::from(c.function),
        i64::from(c.thread),
        c.start_ns,
        c.duration_ns,
        c.self_ns,
        c.inferred_start,
        c.open_at_end,
        c.args
            .iter()
            .enumerate()
            .map(|(k, &v)| (w.arg_name(c.function, k).into_owned(), v))
            .collect(),
    )
}

/// Call `i`'s tree as `fdr calls` shows it: levels below `DEPTH` left out, then the first
/// `cap` calls in preorder (the order they were entered in).
fn our_tree(w: &WindowCalls, children: &[Vec<usize>], i: usize, cap: usize, t: &mut Table) -> Tree {
    let mut out = Vec::new();
    let mut todo = vec![(i, 0usize)];
    while let Some((c, depth)) = todo.pop() {
        if depth > DEPTH {
            continue;
        }
        if out.len() == cap {
            break;
        }
        out.push((depth, t.id(our_fields(w, c))));
        for &k in children[c].iter().rev() {
            todo.push((k, depth + 1));
        }
    }
    out
}

/// `fdr calls --format json` of the log at `path`, every call listed with its whole tree.
fn calls_json(path: &str) -> Result<String, CliError> {
    let mut out = Vec::new();
    let (top, depth) = (TOP.to_string(), DEPTH.to_string());
    let args = [
        "calls", path, "--format", "json", "--top", &top, "--depth", &depth,
    ];
    fdr_cli::run(&args, &mut out)?;
    Ok(String::from_utf8(out).expect("UTF-8 JSON"))
}

/// `fdr export`'s window of a log, through the command's library.
mod export_window {
    use fdr_cli::commands::export::{window as export, Options};
    use fdr_cli::model::{filter::Filter, input::Log};
    use fdr_cli::progress::Progress;
    use fdr_cli::CliError;

    /// The calls `fdr export` would send: (function, tid, thread name, start and end Unix ns,
    /// parent, open, inferred, arguments).
    pub type Span = (
        String,
        i32,
        String,
        u64,
        u64,
        Option<usize>,
        bool,
        bool,
        Vec<(String, u64)>,
    );

    pub struct Window {
        pub start_unix_ns: u64,
        pub spans: Vec<Span>,
        /// What `fdr export` sends, whole.
        pub sent: fdr_otlp::spans::Window,
    }

    pub fn window(path: &str) -> Result<Window, CliError> {
        let log = Log::open(path.as_ref())?;
        let w = export(
            &log,
            &Filter::none(),
            &Options::default(),
            &Progress::hidden(),
        )?;
        let spans = w
            .calls
            .clone()
            .into_iter()
            .filter(|c| c.task.is_none())
            .map(|c| {
                (
                    c.function,
                    c.tid,
                    c.thread_name,
                    c.start_unix_ns,
                    c.end_unix_ns,
                    c.parent,
                    c.open,
                    c.inferred_start,
                    c.args,
                )
            })
            .collect();
        Ok(Window {
            start_unix_ns: w.start_unix_ns,
            spans,
            sent: w,
        })
    }
}

/// What one comparison saw.
#[derive(Debug, Default, PartialEq, Eq)]
struct Seen {
    calls: usize,
    /// Compared as sets: the reconstruction has calls `fdr calls` takes as one.
    twins: bool,
    /// Both refused the log.
    refused: bool,
    /// Compared with `fdr export` only: more calls than `fdr calls --top` lists.
    export_only: bool,
}

/// Compares the reconstruction of `bytes` with what `fdr export` and `fdr calls` make of it
/// (written to `dir/name`); panics on any difference. A log refused is refused by `fdr
/// export` (the same two passes as `fdr calls`, without its trees: see
/// [`both_refuse_stacks_past_the_limit_inferred_calls_included`]) with the same error.
fn compare(dir: &Path, name: &str, bytes: &[u8]) -> Seen {
    let path = write_log(dir, name, bytes);
    match against_export(&path, name, bytes) {
        Ok(w) => against_calls(&path, name, &w),
        Err(e) => {
            match calls_json(&path) {
                Err(CliError::Input { err, .. }) => {
                    assert_eq!(
                        err, e,
                        "{name}: fdr calls refuses it too, with the same error"
                    )
                }
                other => panic!("{name}: refused with {e}, but fdr calls says {other:?}"),
            }
            Seen {
                refused: true,
                ..Seen::default()
            }
        }
    }
}

/// Compares the reconstruction of `bytes` with `fdr export`'s window of the same log at
/// `path`: the same calls in the same order, with the same callers and Unix times; or the same
/// error (then that error).
fn against_export(path: &str, name: &str, bytes: &[u8]) -> Result<WindowCalls, FormatError> {
    let ours = calls(bytes);
    let theirs = export_window::window(path);
    let (w, window) = match (ours, theirs) {
        (Ok(w), Ok(t)) => (w, t),
        (Err(a), Err(CliError::Input { err, .. })) => {
            assert_eq!(a, err, "{name}: both refuse the log, with the same error");
            return Err(a);
        }
        (Err(a), Err(b)) => panic!("{name}: refused with {a}, fdr export with another error: {b}"),
        (Ok(w), Err(b)) => panic!(
            "{name}: {} calls, but fdr refuses the log: {b}",
            w.calls.len()
        ),
        (Err(a), Ok(_)) => panic!("{name}: refused with {a}, but fdr reads the log"),
    };
    let n = w.calls.len();

    // `fdr export`: the same calls in the same order, with the same callers and Unix times.
    assert_eq!(
        w.origin_unix_ns.unwrap_or(0),
        window.start_unix_ns,
        "{name}: the origin's Unix time"
    );
    assert_eq!(window.spans.len(), n, "{name}: export's span count");
    for (i, (c, s)) in w.calls.iter().zip(&window.spans).enumerate() {
        let f = our_fields(&w, i);
        let start = window.start_unix_ns.saturating_add(c.start_ns);
        let span = (
            f.0,
            c.thread,
            w.thread_name(c.thread).to_string(),
            start,
            start.saturating_add(c.duration_ns),
            c.parent,
            c.open_at_end,
            c.inferred_start,
            f.8,
        );
        assert_eq!(&span, s, "{name}: call {i} against export's span {i}");
    }
    // The runtime's exporter (`fdr_otlp::log`) sends what `fdr export` sends: the calls, then
    // each async task's life under the call that created it.
    let about = fdr_otlp::log::About {
        service_name: window.sent.service_name.clone(),
        ..Default::default()
    };
    let sent = fdr_otlp::log::convert(&w, &about);
    assert_eq!(sent.calls.len(), window.sent.calls.len(), "{name}: spans");
    for (i, (a, b)) in sent.calls.iter().zip(&window.sent.calls).enumerate() {
        assert_eq!(a, b, "{name}: span {i}");
    }
    assert_eq!(sent.reason, window.sent.reason, "{name}: the reason");
    assert_eq!(
        sent.traceparent, window.sent.traceparent,
        "{name}: the trace joined"
    );
    Ok(w)
}

/// Compares the reconstruction `w` with `fdr calls --format json` of the same log at `path`:
/// every call listed, with its tree.
fn against_calls(path: &str, name: &str, w: &WindowCalls) -> Seen {
    let n = w.calls.len();
    if n > TOP {
        // `fdr calls` cannot list them all.
        return Seen {
            calls: n,
            export_only: true,
            ..Seen::default()
        };
    }

    let json = calls_json(path).unwrap_or_else(|e| panic!("{name}: fdr calls: {e}"));
    let listed = match parse_deep(&json) {
        Value::Array(v) => v,
        other => panic!("{name}: not a JSON array: {other}"),
    };
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, c) in w.calls.iter().enumerate() {
        if let Some(p) = c.parent {
            assert!(p < i, "{name}: call {i}'s caller {p} comes after it");
            assert_eq!(
                w.calls[p].thread, c.thread,
                "{name}: a caller on another thread"
            );
            children[p].push(i);
        }
    }
    let mut table = Table::default();
    // `fdr calls` keeps every call (thread, function, start, end) in ticks, ranked by duration,
    // and lists each with the tree the second pass built under the call of that key: a call
    // whose end is before its start (time went backwards) has a duration of 0 that gives it
    // another end, and is not listed; twins (same key) are listed once.
    let listable: Vec<usize> = (0..n)
        .filter(|&i| w.calls[i].end_tsc >= w.calls[i].start_tsc)
        .collect();
    let keys: BTreeSet<(i32, u32, u64, u64)> = listable
        .iter()
        .map(|&i| {
            let c = &w.calls[i];
            (c.thread, c.function, c.start_tsc, c.end_tsc)
        })
        .collect();
    let twins = keys.len() < listable.len();
    let cap = (MAX_SHOWN / n.max(1)).clamp(16, 4096);
    let mut want: Vec<Tree> = listable
        .iter()
        .map(|&i| our_tree(w, &children, i, cap, &mut table))
        .collect();
    let mut got: Vec<Tree> = listed.iter().map(|c| json_tree(c, &mut table)).collect();
    want.sort();
    got.sort();
    if twins {
        // One of each key is listed, as either twin (twins may differ in what the key leaves
        // out: arguments, self time, their trees): the listed trees are among ours, one per
        // key, and each key's listed call is one of its twins.
        let all: BTreeSet<&Tree> = want.iter().collect();
        for t in &got {
            assert!(
                all.contains(t),
                "{name}: a listed tree the reconstruction lacks"
            );
        }
        assert_eq!(got.len(), keys.len(), "{name}: one listed call per key");
        let mut by_key: std::collections::BTreeMap<(i32, u32, u64, u64), BTreeSet<usize>> =
            Default::default();
        for &i in &listable {
            let c = &w.calls[i];
            by_key
                .entry((c.thread, c.function, c.start_tsc, c.end_tsc))
                .or_default()
                .insert(table.id(our_fields(w, i)));
        }
        let listed_roots: Vec<usize> = got.iter().map(|t| t[0].1).collect();
        for (key, twins) in &by_key {
            assert!(
                listed_roots.iter().any(|r| twins.contains(r)),
                "{name}: no listed call for {key:?}"
            );
        }
    } else {
        if got.len() != want.len() {
            let roots = |v: &[Tree]| v.iter().map(|t| t[0].1).collect::<Vec<usize>>();
            let (mut a, b) = (roots(&want), roots(&got));
            for r in &b {
                if let Some(i) = a.iter().position(|x| x == r) {
                    a.remove(i);
                }
            }
            let fields: std::collections::HashMap<usize, &Fields> =
                table.ids.iter().map(|(f, &i)| (i, f)).collect();
            let missing: Vec<&&Fields> = a.iter().map(|i| &fields[i]).collect();
            panic!(
                "{name}: {} calls listed of {}; not listed: {missing:?}",
                got.len(),
                want.len()
            );
        }
        if got != want {
            let first = got.iter().zip(&want).position(|(a, b)| a != b);
            let fields: Vec<&Fields> = {
                let mut v: Vec<(&Fields, &usize)> = table.ids.iter().collect();
                v.sort_by_key(|x| *x.1);
                v.into_iter().map(|x| x.0).collect()
            };
            let show = |t: &Tree| -> Vec<String> {
                t.iter()
                    .map(|&(d, f)| format!("{}{:?}", " ".repeat(d), fields[f]))
                    .collect()
            };
            let i = first.unwrap_or(0);
            panic!(
                "{name}: trees differ; fdr calls:\n{}\nreconstruction:\n{}",
                got.get(i).map(|t| show(t).join("\n")).unwrap_or_default(),
                want.get(i).map(|t| show(t).join("\n")).unwrap_or_default()
            );
        }
    }
    Seen {
        calls: n,
        twins,
        ..Seen::default()
    }
}

// ---- Logs: the shapes of examples/genlog.rs (`fdr_cli::testing::shapes`), and more. ----

fn shape(name: &str, n: u32) -> Vec<u8> {
    fdr_cli::testing::shapes::shape(name, n).expect("a known shape")
}

/// genlog's large log, small: runtime-sized blocks of threads interleaved block by block,
/// nested calls up to 8 deep over 200 functions, logged arguments, tail exits, CPU migrations,
/// calls open at the end; with `ring`, each thread's first blocks are dropped, as a ring
/// recycles them, so its window starts mid-stack.
fn bench_like(records: u64, nthreads: i32, block: usize, ring: bool) -> Vec<u8> {
    let freq = 3_000_000_000u64;
    let mut log = LogBuilder::new(freq);
    log.run(RunInfo {
        ticks_per_second: freq,
        buffer_size: block as u64,
        buffer_count: 1 << 20,
        pid: 1,
        program: "genlog".into(),
        end_tsc: 1 << 40,
        ..RunInfo::default()
    });
    for id in 1..=200u32 {
        let args: &[&str] = if id % 10 == 7 { &["n", "flags"] } else { &[] };
        log.function(id, &format!("bench::module{}::function_{id}", id % 7), args);
    }
    for t in 0..nthreads {
        log.thread(100 + t, &format!("worker-{t}"));
    }
    let mut out = log.finish();
    struct Thread {
        tid: i32,
        tsc: u64,
        stack: Vec<u32>,
        rng: u64,
        cpu: u16,
        blocks: u32,
    }
    let mut threads: Vec<Thread> = (0..nthreads)
        .map(|t| Thread {
            tid: 100 + t,
            tsc: 1_000_000 + t as u64 * 1000,
            stack: Vec::new(),
            rng: 0x9e37_79b9_7f4a_7c15 ^ (t as u64 + 1),
            cpu: t as u16,
            blocks: 0,
        })
        .collect();
    let mut written = 0u64;
    let mut turn = 0usize;
    while written < records {
        let n = threads.len();
        let th = &mut threads[turn % n];
        turn += 1;
        let mut body = Vec::new();
        let start = BlockStart {
            tid: th.tid,
            wall_secs: 0,
            wall_micros: 0,
            pid: 1,
            cpu: th.cpu,
            tsc: th.tsc,
        };
        while BLOCK_PREAMBLE_SIZE + body.len() + 16 * 4 <= block && written < records {
            th.rng ^= th.rng << 13;
            th.rng ^= th.rng >> 7;
            th.rng ^= th.rng << 17;
            let r = th.rng;
            let step = 20 + (r >> 40) % 3000;
            th.tsc += step;
            let depth = th.stack.len();
            if r % 97 == 0 {
                th.cpu = (th.cpu + 1) % 8;
                body.extend_from_slice(&meta_bytes(meta::new_cpu_id(th.cpu, th.tsc)));
                continue;
            }
            let enter = depth == 0 || (depth < 8 && (r >> 8) % 100 < 52 - depth as u64 * 4);
            if enter {
                let choice = ((r >> 16) % 4) as u32;
                let id = match th.stack.last() {
                    None => 1 + choice,
                    Some(&parent) => 1 + (parent * 31 + choice * 7 + depth as u32) % 200,
                };
                th.stack.push(id);
                if id % 10 == 7 {
                    body.extend_from_slice(
                        &function_record(id, FnKind::EnterArgs, step as u32).to_le_bytes(),
                    );
                    body.extend_from_slice(&meta_bytes(meta::call_argument(r >> 32)));
                    body.extend_from_slice(&meta_bytes(meta::call_argument(r & 0xff)));
                    written += 3;
                } else {
                    body.extend_from_slice(
                        &function_record(id, FnKind::Enter, step as u32).to_le_bytes(),
                    );
                    written += 1;
                }
            } else {
                let id = th.stack.pop().unwrap_or(1);
                let kind = if id % 13 == 0 {
                    FnKind::TailExit
                } else {
                    FnKind::Exit
                };
                body.extend_from_slice(&function_record(id, kind, step as u32).to_le_bytes());
                written += 1;
            }
        }
        th.blocks += 1;
        if ring && th.blocks <= 2 {
            continue;
        }
        let extents = (BLOCK_PREAMBLE_AFTER_EXTENTS + body.len()) as u64;
        for w in block_preamble(&start, extents) {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(&body);
    }
    out
}

/// A thread that hangs: its last records are the entries of calls still running when the log
/// was taken (`RunInfo::end_tsc`), and another thread's short call.
fn hung() -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    log.run(RunInfo {
        clock: ClockSource::Injected,
        ticks_per_second: 1_000_000_000,
        mode: Mode::Ring,
        pid: 1,
        program: "hang".into(),
        end_tsc: 2_001_000,
        start_unix_secs: 1_700_000_000,
        start_unix_nanos: 123,
        start_tsc: 500,
        ..RunInfo::default()
    });
    log.reason(ReasonInfo {
        reason: Reason::StillRunning,
        function: 2,
        tid: 11,
        start_tsc: 2000,
        duration_ticks: 1_999_000,
        ..ReasonInfo::default()
    });
    log.function(1, "app::serve", &[]);
    log.function(2, "app::lock", &[]);
    log.function(3, "app::tick", &[]);
    log.thread(11, "main");
    log.thread(12, "worker");
    let mut b = log.block(11, 0, 1000);
    b.enter(1, 1000);
    b.enter_args(2, 2000, &[1, 2, 3]);
    b.finish();
    let mut b = log.block(12, 0, 1500);
    b.enter(3, 1500);
    b.exit(3, 1600);
    b.finish();
    log.finish()
}

/// A recursion `open` deep on one thread, then (with `exit`) the exit of a call entered before
/// the window: `fdr` opens that call under the others, so `open` may not reach 2^20.
fn too_deep(open: u32, exit: bool) -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    log.function(1, "deep::recurse", &[]);
    let mut b = log.block(7, 0, 0);
    for i in 0..u64::from(open) {
        b.enter(1, i + 1);
    }
    if exit {
        b.exit(2, u64::from(open) + 1);
    }
    b.finish();
    log.finish()
}

#[test]
fn every_synthetic_shape_gives_the_calls_fdr_shows() {
    let dir = temp_dir("window-calls-shapes");
    let logs: Vec<(&str, Vec<u8>)> = vec![
        ("deep", shape("deep", 300)),
        ("deep-1100", shape("deep", 1100)),
        ("ring", shape("ring", 300)),
        ("siblings", shape("siblings", 300)),
        ("siblings-past-4096", shape("siblings", 5000)),
        ("functions", shape("functions", 300)),
        ("hostile", shape("hostile", 300)),
        ("backwards", shape("backwards", 300)),
        ("args", shape("args", 300)),
        ("tasks", shape("tasks", 30)),
        ("culled", shape("culled", 300)),
        ("bench", bench_like(6000, 4, 4096, false)),
        ("bench-ring", bench_like(6000, 3, 2048, true)),
        ("basic", basic_log()),
        ("basic-no-wrap", basic_log_with_gap(0)),
        ("midstack", midstack_log()),
        ("midstack-led", midstack_log_led_by(21)),
        ("triggered", triggered_log()),
        ("tasks-fixture", tasks_log()),
        ("culled-fixture", culled_log()),
        ("hung", hung()),
        ("empty", LogBuilder::new(1_000_000_000).finish()),
    ];
    for (name, bytes) in &logs {
        let seen = compare(&dir, &format!("{name}.fdr"), bytes);
        eprintln!("{name}: {seen:?}");
        assert!(!seen.refused, "{name}: refused");
        assert!(seen.calls > 0 || *name == "empty", "{name}: no calls");
        assert!(!seen.twins, "{name}: twins; the comparison was weaker");
        assert!(!seen.export_only, "{name}: too many calls for fdr calls");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Against `fdr export` only, which reads the log by the same two passes: `fdr calls` builds
/// the tree of each of its 100,000 slowest calls while they run, which nested a million deep
/// takes time quadratic in the depth.
#[test]
fn both_refuse_stacks_past_the_limit_inferred_calls_included() {
    let dir = temp_dir("window-calls-deep");
    const MAX: u32 = 1 << 20;
    for (open, exit, refused) in [
        (MAX + 1, false, true),
        (MAX, true, true),
        (MAX - 1, true, false),
    ] {
        let bytes = too_deep(open, exit);
        let path = write_log(&dir, "deep.fdr", &bytes);
        let w = against_export(&path, "deep", &bytes);
        assert_eq!(w.is_err(), refused, "{open} deep, exit {exit}");
        if let Ok(w) = w {
            assert_eq!(w.calls.len(), MAX as usize);
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The logs recorded by real programs that the tests keep, and any in `FDR_WINDOW_CALLS_LOGS`.
fn recorded() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![
        root.join("../fdr-tests/data"),
        root.join("tests/fuzz_inputs"),
    ];
    if let Some(d) = std::env::var_os("FDR_WINDOW_CALLS_LOGS") {
        dirs.push(PathBuf::from(d));
    }
    let mut logs = Vec::new();
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "fdr") {
                logs.push(p);
            }
        }
    }
    logs.sort();
    logs
}

#[test]
fn recorded_logs_give_the_calls_fdr_shows() {
    let dir = temp_dir("window-calls-recorded");
    let logs = recorded();
    assert!(!logs.is_empty(), "the fuzz inputs are in the repository");
    for p in logs {
        let bytes = std::fs::read(&p).unwrap();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let seen = compare(&dir, &name, &bytes);
        eprintln!("{}: {seen:?}", p.display());
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// One thread's records of one block: (what, function, ticks after the previous record).
#[derive(Clone, Debug)]
enum Op {
    Enter(u32, u64),
    EnterArgs(u32, u64, u8),
    Exit(u32, u64),
    TailExit(u32, u64),
    /// A migration: ticks forward, or back.
    Cpu(i64),
    Task(u64),
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1u32..7, 1u64..40).prop_map(|(f, d)| Op::Enter(f, d)),
        2 => (1u32..7, 1u64..40, 0u8..70).prop_map(|(f, d, n)| Op::EnterArgs(f, d, n)),
        6 => (1u32..7, 1u64..40).prop_map(|(f, d)| Op::Exit(f, d)),
        1 => (1u32..7, 1u64..40).prop_map(|(f, d)| Op::TailExit(f, d)),
        1 => (-400i64..400).prop_map(Op::Cpu),
        1 => (1u64..40).prop_map(Op::Task),
    ]
}

/// Blocks of up to three threads, interleaved: random entries and exits, so that windows start
/// mid-stack, calls unwind and stay open; a run record or none, three clock rates.
fn arb_log() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec((0usize..3, prop::collection::vec(arb_op(), 0..14)), 1..9),
        prop::option::of(0u64..6000),
        prop::sample::select(vec![1_000_000_000u64, 3_000_000_000, 2_500_000]),
        0usize..4,
    )
        .prop_map(|(blocks, end, freq, lead)| {
            let mut log = LogBuilder::new(freq);
            if let Some(end) = end {
                log.run(RunInfo {
                    ticks_per_second: freq,
                    end_tsc: end,
                    start_unix_secs: 1_700_000_000,
                    start_tsc: 700,
                    ..RunInfo::default()
                });
            }
            let tids = [11, 12, 13];
            if lead < 3 {
                log.leading_block(tids[lead], 0);
            }
            for (i, f) in ["app::a", "app::b", "", "app::d"].iter().enumerate() {
                log.function(i as u32 + 1, f, &["x"]);
            }
            log.thread(11, "main");
            let mut clock = [100u64, 150, 90];
            for (t, ops) in blocks {
                clock[t] += 5;
                let mut tsc = clock[t];
                let mut b = log.block(tids[t], t as u16, tsc);
                for op in ops {
                    match op {
                        Op::Enter(f, d) => {
                            tsc += d;
                            b.enter(f, tsc);
                        }
                        Op::EnterArgs(f, d, n) => {
                            tsc += d;
                            let args: Vec<u64> = (0..u64::from(n)).map(|a| a * 3).collect();
                            b.enter_args(f, tsc, &args);
                        }
                        Op::Exit(f, d) => {
                            tsc += d;
                            b.exit(f, tsc);
                        }
                        Op::TailExit(f, d) => {
                            tsc += d;
                            b.tail_exit(f, tsc);
                        }
                        Op::Cpu(d) => {
                            tsc = tsc.saturating_add_signed(d);
                            b.cpu(1, tsc);
                        }
                        Op::Task(d) => {
                            tsc += d;
                            b.task(TaskKind::Created, 1, tsc, tsc);
                        }
                    }
                }
                b.finish();
                clock[t] = clock[t].max(tsc);
            }
            log.finish()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn random_windows_give_the_calls_fdr_shows(bytes in arb_log()) {
        let dir = temp_dir("window-calls-prop");
        let seen = compare(&dir, "random.fdr", &bytes);
        prop_assert!(!seen.refused);
        std::fs::remove_dir_all(&dir).ok();
    }
}
