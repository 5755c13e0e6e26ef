//! A reader of the Fuchsia trace format written from the format's specification (records of
//! 64-bit little-endian words, a header word with the type in bits 0-3 and the size in words in
//! bits 4-15), independent of fdr's writer. It checks what it reads and turns duration events
//! into spans.

use std::collections::HashMap;

/// An argument value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(String),
    Koid(u64),
    Bool(bool),
    Other(u64),
}

/// One event record.
#[derive(Clone, Debug)]
pub struct Event {
    pub event_type: u64,
    pub pid: u64,
    pub tid: u64,
    pub category: String,
    pub name: String,
    pub ts: u64,
    pub args: Vec<(String, Value)>,
    /// The word after the arguments: a complete event's end time, an async event's
    /// correlation id, a flow event's id.
    pub extra: Option<u64>,
}

/// Everything a trace said.
#[derive(Debug, Default)]
pub struct Trace {
    pub ticks_per_second: u64,
    pub processes: HashMap<u64, String>,
    /// Thread koid to (process koid, name).
    pub threads: HashMap<u64, (u64, String)>,
    pub events: Vec<Event>,
}

impl Trace {
    /// Ticks to nanoseconds at the trace's tick rate, rounding down.
    pub fn ns(&self, ticks: u64) -> u64 {
        (u128::from(ticks) * 1_000_000_000 / u128::from(self.ticks_per_second.max(1))) as u64
    }
}

/// A completed duration: begin and end events matched per thread; times in nanoseconds.
#[derive(Clone, Debug)]
pub struct Span {
    pub pid: u64,
    pub tid: u64,
    pub name: String,
    pub start: u64,
    pub end: u64,
    pub begin_args: Vec<(String, Value)>,
    pub end_args: Vec<(String, Value)>,
}

struct Cursor<'a> {
    w: &'a [u64],
    at: usize,
    end: usize,
}

impl Cursor<'_> {
    fn word(&mut self) -> Result<u64, String> {
        if self.at >= self.end {
            return Err(format!("record ends early at word {}", self.at));
        }
        self.at += 1;
        Ok(self.w[self.at - 1])
    }
    fn bytes(&mut self, len: usize) -> Result<String, String> {
        let words = len.div_ceil(8);
        if self.at + words > self.end {
            return Err("inline string runs past its record".into());
        }
        let mut b = Vec::new();
        for i in 0..words {
            b.extend_from_slice(&self.w[self.at + i].to_le_bytes());
        }
        self.at += words;
        b.truncate(len);
        String::from_utf8(b).map_err(|e| e.to_string())
    }
}

fn string_ref(
    r: u64,
    strings: &HashMap<u64, String>,
    c: &mut Cursor<'_>,
) -> Result<String, String> {
    if r == 0 {
        Ok(String::new())
    } else if r & 0x8000 != 0 {
        c.bytes((r & 0x7fff) as usize)
    } else {
        strings
            .get(&r)
            .cloned()
            .ok_or_else(|| format!("string ref {r} used before its string record"))
    }
}

fn read_args(
    n: u64,
    strings: &HashMap<u64, String>,
    c: &mut Cursor<'_>,
) -> Result<Vec<(String, Value)>, String> {
    let mut out = Vec::new();
    for _ in 0..n {
        let start = c.at;
        let h = c.word()?;
        let ty = h & 0xf;
        let size = ((h >> 4) & 0xfff) as usize;
        if size == 0 || start + size > c.end {
            return Err(format!("argument of {size} words does not fit its record"));
        }
        let name = string_ref((h >> 16) & 0xffff, strings, c)?;
        let v = match ty {
            1 => Value::I32((h >> 32) as u32 as i32),
            2 => Value::U32((h >> 32) as u32),
            3 => Value::I64(c.word()? as i64),
            4 => Value::U64(c.word()?),
            5 => Value::F64(f64::from_bits(c.word()?)),
            6 => Value::Str(string_ref((h >> 32) & 0xffff, strings, c)?),
            8 => Value::Koid(c.word()?),
            9 => Value::Bool((h >> 32) & 1 == 1),
            other => Value::Other(other),
        };
        if c.at != start + size {
            return Err(format!(
                "argument {name:?} of type {ty} declares {size} words but holds {}",
                c.at - start
            ));
        }
        out.push((name, v));
    }
    Ok(out)
}

/// Parses a whole trace.
pub fn parse(bytes: &[u8]) -> Result<Trace, String> {
    if bytes.len() % 8 != 0 {
        return Err(format!(
            "{} bytes is not a whole number of words",
            bytes.len()
        ));
    }
    let w: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    if w.first() != Some(&0x0016_5478_4604_0010) {
        return Err("the trace does not start with the magic number record".into());
    }
    let mut t = Trace::default();
    let mut strings: HashMap<u64, String> = HashMap::new();
    let mut threads: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut i = 0;
    while i < w.len() {
        let h = w[i];
        let ty = h & 0xf;
        let size = ((h >> 4) & 0xfff) as usize;
        if size == 0 || i + size > w.len() {
            return Err(format!("record at word {i} has size {size}"));
        }
        let mut c = Cursor {
            w: &w,
            at: i + 1,
            end: i + size,
        };
        match ty {
            0 => {
                let mtype = (h >> 16) & 0xf;
                if mtype == 4 && (h >> 20) & 0xf == 0 && (h >> 24) & 0xffff_ffff != 0x1654_7846 {
                    return Err("bad magic".into());
                }
                c.at = c.end;
            }
            1 => t.ticks_per_second = c.word()?,
            2 => {
                let idx = (h >> 16) & 0x7fff;
                let len = ((h >> 32) & 0x7fff) as usize;
                if idx == 0 {
                    return Err("string record with index 0".into());
                }
                let s = c.bytes(len)?;
                strings.insert(idx, s);
            }
            3 => {
                let idx = (h >> 16) & 0xff;
                let pid = c.word()?;
                let tid = c.word()?;
                threads.insert(idx, (pid, tid));
            }
            4 => {
                let event_type = (h >> 16) & 0xf;
                let nargs = (h >> 20) & 0xf;
                let tref = (h >> 24) & 0xff;
                let ts = c.word()?;
                let (pid, tid) = if tref == 0 {
                    (c.word()?, c.word()?)
                } else {
                    *threads
                        .get(&tref)
                        .ok_or_else(|| format!("thread ref {tref} used before its thread record"))?
                };
                let category = string_ref((h >> 32) & 0xffff, &strings, &mut c)?;
                let name = string_ref((h >> 48) & 0xffff, &strings, &mut c)?;
                let args = read_args(nargs, &strings, &mut c)?;
                let extra = if (4..=10).contains(&event_type) {
                    Some(c.word()?)
                } else {
                    None
                };
                t.events.push(Event {
                    event_type,
                    pid,
                    tid,
                    category,
                    name,
                    ts,
                    args,
                    extra,
                });
            }
            7 => {
                let obj = (h >> 16) & 0xff;
                let nref = (h >> 24) & 0xffff;
                let nargs = (h >> 40) & 0xf;
                let koid = c.word()?;
                let name = string_ref(nref, &strings, &mut c)?;
                let args = read_args(nargs, &strings, &mut c)?;
                match obj {
                    1 => {
                        t.processes.insert(koid, name);
                    }
                    2 => {
                        let pid = args
                            .iter()
                            .find_map(|(n, v)| match (n.as_str(), v) {
                                ("process", Value::Koid(p)) => Some(*p),
                                _ => None,
                            })
                            .ok_or("thread object without a process koid argument")?;
                        t.threads.insert(koid, (pid, name));
                    }
                    _ => {}
                }
            }
            _ => c.at = c.end,
        }
        if c.at != c.end {
            return Err(format!(
                "record of type {ty} at word {i} declares {size} words but holds {}",
                c.at - i
            ));
        }
        i += size;
    }
    Ok(t)
}

/// Matches begin (2) and end (3) events per thread; complete events (4) are not used by fdr.
/// Instant events (0) and async events (5 to 7) are left to [`instants`] and [`async_spans`].
pub fn spans(t: &Trace) -> Result<Vec<Span>, String> {
    let mut open: HashMap<(u64, u64), Vec<(usize, &Event)>> = HashMap::new();
    let mut out: Vec<Option<Span>> = Vec::new();
    for e in &t.events {
        let stack = open.entry((e.pid, e.tid)).or_default();
        match e.event_type {
            0 | 5..=7 => {}
            2 => {
                out.push(None);
                stack.push((out.len() - 1, e));
            }
            3 => {
                let (slot, b) = stack
                    .pop()
                    .ok_or_else(|| format!("end of {} on {} with nothing open", e.name, e.tid))?;
                if b.name != e.name {
                    return Err(format!("end of {} closes {}", e.name, b.name));
                }
                if e.ts < b.ts {
                    return Err(format!("{} ends before it begins", e.name));
                }
                out[slot] = Some(Span {
                    pid: e.pid,
                    tid: e.tid,
                    name: e.name.clone(),
                    start: t.ns(b.ts),
                    end: t.ns(e.ts),
                    begin_args: b.args.clone(),
                    end_args: e.args.clone(),
                });
            }
            other => return Err(format!("unexpected event type {other}")),
        }
    }
    if let Some(((_, tid), s)) = open.iter().find(|(_, s)| !s.is_empty()) {
        return Err(format!("{} spans left open on thread {tid}", s.len()));
    }
    Ok(out
        .into_iter()
        .map(|s| s.expect("every begin ended"))
        .collect())
}

/// The instant events (type 0).
pub fn instants(t: &Trace) -> Vec<&Event> {
    t.events.iter().filter(|e| e.event_type == 0).collect()
}

/// An async slice: an async begin (5) and end (7) event with the same category, name and
/// correlation id; times in nanoseconds.
#[derive(Clone, Debug)]
pub struct AsyncSpan {
    pub id: u64,
    pub name: String,
    pub category: String,
    pub begin_tid: u64,
    pub end_tid: u64,
    pub start: u64,
    pub end: u64,
    pub begin_args: Vec<(String, Value)>,
    pub end_args: Vec<(String, Value)>,
}

/// Matches async begin and end events, in any order in the file: the begins and the ends of
/// each (category, name, id) are paired in time order (a task's waits at one await site share
/// them), each must have its other end, and an end may not come before its begin.
pub fn async_spans(t: &Trace) -> Result<Vec<AsyncSpan>, String> {
    type Key = (String, String, u64);
    let mut begins: HashMap<Key, Vec<&Event>> = HashMap::new();
    let mut ends: HashMap<Key, Vec<&Event>> = HashMap::new();
    for e in &t.events {
        let map = match e.event_type {
            5 => &mut begins,
            7 => &mut ends,
            _ => continue,
        };
        let key = (
            e.category.clone(),
            e.name.clone(),
            e.extra.ok_or("no async id")?,
        );
        map.entry(key).or_default().push(e);
    }
    let mut out = Vec::new();
    for (key, mut b) in begins {
        let mut e = ends
            .remove(&key)
            .ok_or_else(|| format!("async begin of {} {} has no end", key.1, key.2))?;
        if e.len() != b.len() {
            return Err(format!(
                "{} async begins and {} ends of {} {}",
                b.len(),
                e.len(),
                key.1,
                key.2
            ));
        }
        b.sort_by_key(|x| x.ts);
        e.sort_by_key(|x| x.ts);
        for (b, e) in b.iter().zip(&e) {
            if e.ts < b.ts {
                return Err(format!(
                    "async slice {} {} ends before it begins",
                    key.1, key.2
                ));
            }
            out.push(AsyncSpan {
                id: key.2,
                name: key.1.clone(),
                category: key.0.clone(),
                begin_tid: b.tid,
                end_tid: e.tid,
                start: t.ns(b.ts),
                end: t.ns(e.ts),
                begin_args: b.args.clone(),
                end_args: e.args.clone(),
            });
        }
    }
    if let Some(k) = ends.keys().next() {
        return Err(format!("async end of {} {} has no begin", k.1, k.2));
    }
    out.sort_by(|a, b| (a.id, a.start, &a.name).cmp(&(b.id, b.start, &b.name)));
    Ok(out)
}

/// An async instant: correlation id, name, time in ns, arguments.
pub type AsyncInstant = (u64, String, u64, Vec<(String, Value)>);

/// The async instants (event type 6), in file order.
pub fn async_instants(t: &Trace) -> Vec<AsyncInstant> {
    t.events
        .iter()
        .filter(|e| e.event_type == 6)
        .map(|e| {
            (
                e.extra.unwrap_or(0),
                e.name.clone(),
                t.ns(e.ts),
                e.args.clone(),
            )
        })
        .collect()
}

/// A flow: a flow begin and a flow end event of one id (times in nanoseconds).
#[derive(Clone, Debug)]
pub struct Flow {
    pub id: u64,
    pub category: String,
    pub name: String,
    pub from_tid: u64,
    pub to_tid: u64,
    pub start: u64,
    pub end: u64,
    pub end_args: Vec<(String, Value)>,
}

/// Matches flow begin (8) and flow end (10) events by id: each id must have one of each, and
/// no flow step (9) is expected. In the order of their ids.
pub fn flows(t: &Trace) -> Result<Vec<Flow>, String> {
    let mut begins: HashMap<u64, &Event> = HashMap::new();
    let mut out = Vec::new();
    for e in &t.events {
        let id = || e.extra.ok_or_else(|| "no flow id".to_string());
        match e.event_type {
            8 if begins.insert(id()?, e).is_some() => {
                return Err(format!("two flow begins of id {:?}", e.extra));
            }
            9 => return Err("unexpected flow step".into()),
            10 => {
                let b = begins
                    .remove(&id()?)
                    .ok_or_else(|| format!("flow end of id {:?} has no begin", e.extra))?;
                out.push(Flow {
                    id: id()?,
                    category: e.category.clone(),
                    name: e.name.clone(),
                    from_tid: b.tid,
                    to_tid: e.tid,
                    start: t.ns(b.ts),
                    end: t.ns(e.ts),
                    end_args: e.args.clone(),
                });
            }
            _ => {}
        }
    }
    if let Some(id) = begins.keys().next() {
        return Err(format!("flow begin of id {id} has no end"));
    }
    out.sort_by_key(|f| f.id);
    Ok(out)
}

/// Reads the FXT file at `path` with a reader fdr did not write (the PyPI package `fxt`, through
/// `tests/fxt_check.py`) and asserts that it finds every event `trace` (this module's reading of
/// the same file) holds, in the same order, with the same thread, category, name, time (in
/// nanoseconds, both rounding down), arguments (compared as numbers or text) and trailing word
/// (a correlation id; for a complete event, the word as a time). Fails, not skips, without
/// python3 or the package: `scripts/test` installs it.
pub fn assert_read_alike_by_fxt_package(path: &std::path::Path, trace: &Trace) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fxt_check.py");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("python3 is needed to read FXT with the fxt package ({e})"));
    assert!(
        out.status.success(),
        "the fxt package could not read {}: {}\n(install it with `python3 -m pip install fxt`)",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v.get("type").is_some())
        .collect();
    let value = |v: &Value| match v {
        Value::I32(x) => serde_json::json!(x),
        Value::U32(x) => serde_json::json!(x),
        Value::I64(x) => serde_json::json!(x),
        Value::U64(x) | Value::Koid(x) | Value::Other(x) => serde_json::json!(x),
        Value::F64(x) => serde_json::json!(x),
        Value::Str(s) => serde_json::json!(s),
        Value::Bool(b) => serde_json::json!(b),
    };
    let ours: Vec<serde_json::Value> = trace
        .events
        .iter()
        .map(|e| {
            let extra = match (e.event_type, e.extra) {
                (4, Some(x)) => Some(trace.ns(x)),
                (_, x) => x,
            };
            serde_json::json!({
                "type": e.event_type,
                "pid": e.pid,
                "tid": e.tid,
                "category": e.category,
                "name": e.name,
                "ts": trace.ns(e.ts),
                "args": e.args.iter().map(|(k, v)| serde_json::json!([k, value(v)])).collect::<Vec<_>>(),
                "extra": extra,
            })
        })
        .collect();
    assert_eq!(
        theirs.len(),
        ours.len(),
        "events read by the fxt package and by ours"
    );
    for (i, (a, b)) in theirs.iter().zip(&ours).enumerate() {
        assert_eq!(a, b, "event {i} of {}", path.display());
    }
}
