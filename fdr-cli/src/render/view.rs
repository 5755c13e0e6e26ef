//! `fdr view`'s page: one HTML file with its style, its script and its data inside, that loads
//! nothing from the network.
//!
//! The page itself is in `view/page.html`, `view/page.css` and `view/page.js` (hand-written
//! JavaScript, no framework). The data is one JSON object in a `<script type="application/json">`
//! element, every string written by [`script_json_string`] (so a name holding `</script>` cannot
//! end the element), and the script shows names with `textContent` or draws them on a canvas,
//! never as HTML. Times are integer nanoseconds from time zero (the earliest window start of the
//! threads shown); the page formats them as the other outputs do (`3.60 µs`).
//!
//! The data's keys: `log`, `program`, `pid`, `reason` (why the log was written, or null),
//! `explain` (null: `fdr explain`'s answer, once there is one), `trigger` (the call that fired:
//! `lane`, `function`, `start`, `end`, or null), `span` (the window's length), `functions` (every
//! function's name; elsewhere a function is its index here), `threads` (per lane: `tid`,
//! `label`; `slices` flat, six numbers a call: start, duration, self time, depth, function,
//! flags (1 inferred start, 2 open at the end, 4 closed by its caller's exit, 8 kept in detail
//! whatever its length); `polls`: [slice index, task id] of the slices that were polls; `bars`
//! flat, six numbers a bar: start, duration, depth, calls, function of the longest, 1 if it
//! holds several functions; `tasks` flat, four numbers a task: start, duration, function, flags
//! (1 inferred, 2 open, 16 cancelled); `awaits` flat, six numbers a wait at an await site: the
//! task's index in `tasks`, start, duration, site (an index in `sites`), polls, flags (1 dropped
//! with its task); `wakes` flat, four numbers a wake-up: the task's index, when it was woken,
//! the time until the poll it asked for, the waking thread's id (0 unknown); `migrations` flat:
//! time, CPU), `sites` (every await site's `FILE:LINE:COLUMN`), `slowest` (each a call tree:
//! `lane`, `tree`, nodes `{f, n, start, dur, self, fl, deeper, more, more_ns, c}`, and the root's
//! `dur_text`, `self_text`), `table` (`fdr account`'s rows with `hist`: [lowest ns, highest ns,
//! calls] per power of two), `flame` ([call path, self ns]), `flame_notes`, `left_out` (what the
//! page leaves out, in sentences).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;

use crate::commands::calls::{CallNode, NONE};
use crate::commands::view::{LeftOut, View};
use crate::escape::script_json_string as js;
use crate::model::names::Names;
use crate::model::trigger::fired;
use crate::render::labels::thread_label;
use crate::render::reason::sentence;
use crate::units::{human, lasted, TickRate};

const PAGE: &str = include_str!("view/page.html");
const STYLE: &str = include_str!("view/page.css");
const SCRIPT: &str = include_str!("view/page.js");

/// Writes the page of `v` to `out`.
pub(crate) fn write(v: &View, out: &mut dyn Write) -> std::io::Result<()> {
    let data = data(v);
    let (head, rest) = PAGE.split_once("/*STYLE*/").unwrap_or((PAGE, ""));
    let (mid, rest) = rest.split_once("/*DATA*/").unwrap_or((rest, ""));
    let (mid2, tail) = rest.split_once("/*SCRIPT*/").unwrap_or((rest, ""));
    out.write_all(head.as_bytes())?;
    out.write_all(STYLE.as_bytes())?;
    out.write_all(mid.as_bytes())?;
    out.write_all(data.as_bytes())?;
    out.write_all(mid2.as_bytes())?;
    out.write_all(SCRIPT.as_bytes())?;
    out.write_all(tail.as_bytes())
}

/// Function ids as indexes into the page's `functions` list, each name once; await sites as
/// indexes into its `sites` list.
struct Functions<'a> {
    names: &'a Names,
    index: HashMap<u32, usize>,
    list: Vec<u32>,
    site_index: HashMap<u32, usize>,
    sites: Vec<u32>,
}

impl Functions<'_> {
    fn of(&mut self, id: u32) -> usize {
        *self.index.entry(id).or_insert_with(|| {
            self.list.push(id);
            self.list.len() - 1
        })
    }

    fn site(&mut self, id: u32) -> usize {
        *self.site_index.entry(id).or_insert_with(|| {
            self.sites.push(id);
            self.sites.len() - 1
        })
    }
}

/// Ticks and times from time zero, as nanoseconds.
struct Clock {
    rate: TickRate,
    origin: u64,
}

impl Clock {
    fn at(&self, tsc: u64) -> u64 {
        self.rate.ns(tsc.saturating_sub(self.origin))
    }
    fn len(&self, start: u64, end: u64) -> u64 {
        self.at(end).saturating_sub(self.at(start))
    }
}

/// The page's JSON object.
fn data(v: &View) -> String {
    let p = &v.slowest.plan;
    let names = Names::new(&p.info);
    let rate = TickRate::new(p.info.header.cycle_frequency);
    let c = Clock {
        rate,
        origin: p.origin,
    };
    let mut f = Functions {
        names: &names,
        index: HashMap::new(),
        list: Vec::new(),
        site_index: HashMap::new(),
        sites: Vec::new(),
    };
    let mut o = String::with_capacity(1 << 20);
    o.push('{');
    let _ = write!(o, "\"log\":{}", js(&v.name));
    match &p.info.run {
        Some(r) => {
            let _ = write!(o, ",\"program\":{},\"pid\":{}", js(&r.program), r.pid);
        }
        None => o.push_str(",\"program\":null,\"pid\":null"),
    }
    match sentence(&p.info, &names, &rate, p.origin) {
        Some(s) => {
            let _ = write!(o, ",\"reason\":{}", js(&s));
        }
        None => o.push_str(",\"reason\":null"),
    }
    o.push_str(",\"explain\":null");
    // Lanes: the threads with calls that pass the filters, or with tasks.
    let lanes: Vec<usize> = (0..p.threads.len())
        .filter(|&t| p.shows(t) || v.lanes.get(t).is_some_and(|l| !l.tasks.is_empty()))
        .collect();
    let lane_of = |t: u32| lanes.iter().position(|&x| x == t as usize);
    match fired(&p.info) {
        Some(r) => {
            let lane = p
                .threads
                .iter()
                .position(|t| t.tid == r.tid)
                .and_then(|t| lane_of(t as u32));
            let _ = write!(
                o,
                ",\"trigger\":{{\"lane\":{},\"function\":{},\"start\":{},\"end\":{},\"what\":{}}}",
                lane.map_or("null".to_string(), |l| l.to_string()),
                f.of(r.function),
                c.at(r.start_tsc),
                c.at(r.start_tsc.saturating_add(r.duration_ticks)),
                js(r.reason.describe())
            );
        }
        None => o.push_str(",\"trigger\":null"),
    }
    let _ = write!(o, ",\"span\":{}", c.len(p.origin, v.end));
    o.push_str(",\"threads\":[");
    for (k, &t) in lanes.iter().enumerate() {
        if k > 0 {
            o.push(',');
        }
        lane(&mut o, v, t, &c, &mut f);
    }
    o.push_str("],\"slowest\":[");
    for (k, (key, nodes)) in v.slowest.calls.iter().enumerate() {
        if k > 0 {
            o.push(',');
        }
        let root = &nodes[0];
        let dur = c.len(root.start, root.end);
        let _ = write!(
            o,
            "{{\"lane\":{},\"dur_text\":{},\"self_text\":{},\"tree\":",
            lane_of(key.thread).map_or("null".to_string(), |l| l.to_string()),
            js(&lasted(dur, root.open)),
            js(&human(rate.ns(root.self_)))
        );
        tree(&mut o, nodes, &c, &mut f);
        o.push('}');
    }
    o.push_str("],\"table\":[");
    for (k, r) in v.functions.iter().enumerate() {
        if k > 0 {
            o.push(',');
        }
        let row = &r.row;
        let _ = write!(
            o,
            "{{\"f\":{},\"count\":{},\"min\":{},\"p50\":{},\"p90\":{},\"p99\":{},\"max\":{},\
             \"total\":{},\"self\":{},\"open\":{},\"open_max\":{},\"culled\":{}",
            f.of(row.id),
            row.count,
            row.min_ns,
            row.p50_ns,
            row.p90_ns,
            row.p99_ns,
            row.max_ns,
            row.total_ns,
            row.self_ns,
            row.open,
            row.open_max_ns,
            row.culled
        );
        if let Some(t) = &row.task {
            let _ = write!(
                o,
                ",\"tasks\":{{\"count\":{},\"cancelled\":{},\"p50\":{},\"p99\":{},\"max\":{}}}",
                t.tasks, t.cancelled, t.p50_ns, t.p99_ns, t.max_ns
            );
        }
        o.push_str(",\"hist\":[");
        for (i, (lo, hi, n)) in r.histogram.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            let _ = write!(o, "[{lo},{hi},{n}]");
        }
        o.push_str("]}");
    }
    o.push_str("],\"flame\":[");
    for (k, (path, ns)) in v.flame.iter().enumerate() {
        if k > 0 {
            o.push(',');
        }
        let _ = write!(o, "[{},{ns}]", js(path));
    }
    o.push_str("],\"flame_notes\":[");
    strings(&mut o, &v.flame_notes);
    o.push_str("],\"left_out\":[");
    strings(&mut o, &left_out(&v.left, &rate));
    o.push_str("],\"functions\":[");
    for (k, &id) in f.list.iter().enumerate() {
        if k > 0 {
            o.push(',');
        }
        o.push_str(&js(&f.names.function(id)));
    }
    o.push_str("],\"sites\":[");
    for (k, &id) in f.sites.iter().enumerate() {
        if k > 0 {
            o.push(',');
        }
        o.push_str(&js(&f.names.site(id)));
    }
    o.push_str("]}");
    o
}

fn strings(o: &mut String, list: &[String]) {
    for (k, s) in list.iter().enumerate() {
        if k > 0 {
            o.push(',');
        }
        o.push_str(&js(s));
    }
}

/// One thread's lane.
fn lane(o: &mut String, v: &View, t: usize, c: &Clock, f: &mut Functions<'_>) {
    let th = &v.slowest.plan.threads[t];
    let _ = write!(
        o,
        "{{\"tid\":{},\"label\":{},\"slices\":[",
        th.tid,
        js(&thread_label(f.names, th.tid))
    );
    let Some(l) = v.lanes.get(t) else {
        o.push_str(
            "],\"polls\":[],\"bars\":[],\"tasks\":[],\"awaits\":[],\"wakes\":[],\"migrations\":[]}",
        );
        return;
    };
    let mut polls = String::new();
    for (k, s) in l.slices.iter().enumerate() {
        if k > 0 {
            o.push(',');
        }
        let flags = u8::from(s.inferred)
            | u8::from(s.open) << 1
            | u8::from(s.unwound) << 2
            | u8::from(s.kept) << 3;
        let _ = write!(
            o,
            "{},{},{},{},{},{flags}",
            c.at(s.start),
            c.len(s.start, s.end),
            c.rate.ns(s.self_ticks),
            s.depth,
            f.of(s.id)
        );
        if let Some(task) = s.task {
            if !polls.is_empty() {
                polls.push(',');
            }
            let _ = write!(polls, "[{k},\"{task:#x}\"]");
        }
    }
    let _ = write!(o, "],\"polls\":[{polls}],\"bars\":[");
    for (k, b) in l.bars.iter().enumerate() {
        if k > 0 {
            o.push(',');
        }
        let _ = write!(
            o,
            "{},{},{},{},{},{}",
            c.at(b.start),
            c.len(b.start, b.end),
            b.depth,
            b.count,
            f.of(b.id),
            u8::from(b.mixed)
        );
    }
    o.push_str("],\"tasks\":[");
    for (k, s) in l.tasks.iter().enumerate() {
        if k > 0 {
            o.push(',');
        }
        let flags = u8::from(s.inferred) | u8::from(s.open) << 1 | u8::from(s.cancelled) << 4;
        let _ = write!(
            o,
            "{},{},{},{flags}",
            c.at(s.start),
            c.len(s.start, s.end),
            f.of(s.function)
        );
    }
    o.push_str("],\"awaits\":[");
    for (k, (task, a)) in l.awaits.iter().enumerate() {
        if k > 0 {
            o.push(',');
        }
        let _ = write!(
            o,
            "{task},{},{},{},{},{}",
            c.at(a.start()),
            c.len(a.start(), a.end),
            f.site(a.event.site),
            a.event.polls,
            u8::from(a.event.dropped)
        );
    }
    o.push_str("],\"wakes\":[");
    for (k, (task, w)) in l.wakes.iter().enumerate() {
        if k > 0 {
            o.push(',');
        }
        let _ = write!(
            o,
            "{task},{},{},{}",
            c.at(w.event.woken_at.min(w.end)),
            c.len(w.event.woken_at.min(w.end), w.end),
            w.event.waker_tid
        );
    }
    o.push_str("],\"migrations\":[");
    for (k, (tsc, cpu)) in l.migrations.iter().enumerate() {
        if k > 0 {
            o.push(',');
        }
        let _ = write!(o, "{},{cpu}", c.at(*tsc));
    }
    o.push_str("]}");
}

/// A slowest call's tree, as nested objects; the nodes are walked with an explicit stack, so
/// nothing here recurses on what a log holds.
fn tree(o: &mut String, nodes: &[CallNode], c: &Clock, f: &mut Functions<'_>) {
    let mut head = |o: &mut String, node: &CallNode| {
        let flags = u8::from(node.inferred) | u8::from(node.open) << 1;
        let _ = write!(
            o,
            "{{\"f\":{},\"n\":{},\"start\":{},\"dur\":{},\"self\":{},\"fl\":{flags},\
             \"deeper\":{},\"more\":{},\"more_ns\":{},\"c\":[",
            f.of(node.id),
            node.count,
            c.at(node.start),
            c.rate.ns(node.total),
            c.rate.ns(node.self_),
            node.deeper,
            node.more,
            c.rate.ns(node.more_ticks)
        );
    };
    let Some(root) = nodes.first() else {
        o.push_str("null");
        return;
    };
    head(o, root);
    // (the next child to write, whether one was written) for each open node.
    let mut stack: Vec<(u32, bool)> = vec![(root.first, false)];
    while let Some(top) = stack.last_mut() {
        let Some(child) = nodes.get(top.0 as usize).filter(|_| top.0 != NONE) else {
            o.push_str("]}");
            stack.pop();
            continue;
        };
        top.0 = child.next;
        if std::mem::replace(&mut top.1, true) {
            o.push(',');
        }
        head(o, child);
        stack.push((child.first, false));
    }
}

/// What the page leaves out or merges, in sentences.
fn left_out(l: &LeftOut, rate: &TickRate) -> Vec<String> {
    let mut s = Vec::new();
    if l.merged_calls > 0 {
        s.push(format!(
            "{} calls shorter than {} (one pixel at the full view{}) are merged, per thread and \
             depth, into bars that count them; the slowest calls and the calls around the \
             trigger's call are kept in detail",
            l.merged_calls,
            human(rate.ns(l.detail_ticks)),
            if l.raised {
                ", raised to keep the page within its size"
            } else {
                ""
            }
        ));
    }
    if l.kept_past_limit > 0 {
        s.push(format!(
            "{} calls around the trigger's call were not kept in detail (past {} kept calls)",
            l.kept_past_limit,
            crate::limits::MAX_VIEW_KEPT
        ));
    }
    if l.gap_ticks > l.detail_ticks {
        s.push(format!(
            "bars closer than {} are merged into one",
            human(rate.ns(l.gap_ticks))
        ));
    }
    if l.bars_dropped > 0 {
        s.push(format!("{} bars are not drawn", l.bars_dropped));
    }
    if l.tasks_dropped > 0 {
        s.push(format!(
            "{} shorter tasks are not drawn (the {} longest are)",
            l.tasks_dropped,
            crate::limits::MAX_VIEW_TASKS
        ));
    }
    if l.waits_dropped > 0 {
        s.push(format!(
            "{} waits at await sites and wake-ups are not drawn (at most {} of each, of the \
             tasks drawn)",
            l.waits_dropped,
            crate::limits::MAX_VIEW_TASKS
        ));
    }
    if l.migrations_dropped > 0 {
        s.push(format!(
            "{} later CPU migrations are not marked",
            l.migrations_dropped
        ));
    }
    if l.functions_dropped > 0 {
        s.push(format!(
            "{} functions with the least total time are not in the table",
            l.functions_dropped
        ));
    }
    s
}
