//! The `fdr calls` report: each slow call and the indented tree of the calls it made (text),
//! or nested call objects (JSON), then the slowest tasks.

use std::fmt::Write as _;
use std::io::Write;

use clap::ValueEnum;
use fdr_format::awaits::TaskAwait;
use fdr_format::LinkKind;

use crate::commands::calls::{CallNode, Key, Slowest, NONE};
use crate::escape::{json_string, shown};
use crate::model::engine::Plan;
use crate::model::names::Names;
use crate::model::tasks::{TaskSpan, TaskWaits};
use crate::model::thin_window;
use crate::render::labels::{relative, thread_label};
use crate::units::{human, lasted, open_human, TickRate};

/// Output format of `fdr calls`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum CallsFormat {
    /// Each call and the indented tree of the calls it made.
    Text,
    /// One JSON array of nested call objects.
    Json,
}

/// Writes `s` in `format`; `depth` is the levels of callees the trees hold.
pub(crate) fn write(
    s: &Slowest,
    format: CallsFormat,
    depth: usize,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let p = &s.plan;
    let names = Names::new(&p.info);
    let clock = TickRate::new(p.info.header.cycle_frequency);
    let mut o = std::io::BufWriter::with_capacity(1 << 16, out);
    match format {
        CallsFormat::Text => {
            if !s.one_task {
                write_text(&s.calls, p, &names, &clock, depth, &mut o)?;
            }
            if s.show_tasks {
                write_tasks(s, &names, &clock, &mut o)?;
            }
            if let Some(n) = thin_window::note(&p.info, &p.threads) {
                writeln!(o, "{n}")?;
            }
        }
        CallsFormat::Json => {
            let tasks: &[TaskSpan] = if s.show_tasks { &s.tasks } else { &[] };
            write_json(s, tasks, &names, &clock, &mut o)?
        }
    }
    o.flush()
}

/// The slowest tasks, after the calls, each with the tasks made or awaited in it under it.
fn write_tasks(
    s: &Slowest,
    names: &Names,
    clock: &TickRate,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if s.tasks.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    let nested = s
        .tasks
        .iter()
        .any(|t| s.tree.children.contains_key(&t.task));
    writeln!(
        out,
        "tasks, slowest first: each call of an async fn, from its creation to its completion or \
         drop (its calls above are its polls; fdr account has their table){}",
        if nested {
            ", with the tasks made or awaited in it under it (\u{2514})"
        } else {
            ""
        }
    )?;
    for (i, root) in s.tasks.iter().enumerate() {
        for (span, kept, depth) in s.task_tree(root) {
            let head = if depth == 0 {
                format!("{}. ", i + 1)
            } else {
                format!("{:w$}\u{2514} ", "", w = 3 + 4 * (depth - 1))
            };
            let indent = 3 + 4 * depth;
            let t = TaskText {
                s,
                names,
                clock,
                indent,
            };
            t.write(&span, &head, kept, depth > 0, out)?;
            if depth == 0 {
                t.write_parent(&span, out)?;
            }
        }
    }
    Ok(())
}

/// What a task's lines are written with.
struct TaskText<'a> {
    s: &'a Slowest,
    names: &'a Names,
    clock: &'a TickRate,
    /// Spaces before its detail lines.
    indent: usize,
}

impl TaskText<'_> {
    /// The task's line (after `head`), its links (but its parent's when it is shown `under`
    /// it), its waits and where its time went.
    fn write(
        &self,
        t: &TaskSpan,
        head: &str,
        kept: Option<&TaskWaits>,
        under: bool,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let (p, names, clock) = (&self.s.plan, self.names, self.clock);
        let tid = |t: u32| p.threads.get(t as usize).map_or(0, |t| t.tid);
        let args = kept.map_or(&[][..], |w| w.args.as_slice());
        let dur = clock.ns(t.end.saturating_sub(t.start));
        let mut line = format!(
            "{head}{} task {} on {}, created at {}{}, ",
            call_name(names, t.function, args),
            t.task,
            thread_label(names, tid(t.start_thread)),
            relative(t.start, p.origin, clock),
            if t.inferred {
                " (before the window: its start)"
            } else {
                ""
            },
        );
        if t.open {
            let _ = write!(
                line,
                "ran {}, open: not completed when the log was taken",
                open_human(dur)
            );
        } else {
            let _ = write!(
                line,
                "{} after {}",
                if t.cancelled { "dropped" } else { "completed" },
                human(dur)
            );
            if t.end_thread != t.start_thread {
                let _ = write!(line, " on {}", thread_label(names, tid(t.end_thread)));
            }
        }
        writeln!(out, "{line}")?;
        let pad = " ".repeat(self.indent);
        let parent = self.s.tree.parents.get(&t.task);
        for l in self.s.links.get(&t.task).map_or(&[][..], Vec::as_slice) {
            if under && l.kind == LinkKind::Parent && Some(&l.other_task) == parent {
                continue;
            }
            let how = match l.kind {
                LinkKind::Parent => "made inside",
                LinkKind::FollowsFrom => "follows from",
            };
            writeln!(
                out,
                "{pad}{how} {} task {}",
                shown(&names.function(l.other_id)),
                l.other_task
            )?;
        }
        let Some(w) = kept else {
            return Ok(());
        };
        for a in &w.listed {
            let polls = match a.event.polls {
                1 => String::new(),
                n => format!(", woken {n} times"),
            };
            writeln!(
                out,
                "{pad}awaited {} for {}{polls}{}",
                shown(&names.site(a.event.site)),
                human(clock.ns(a.event.waited)),
                if a.event.dropped {
                    ", dropped while waiting"
                } else {
                    ""
                }
            )?;
        }
        if w.more > 0 {
            writeln!(
                out,
                "{pad}and {} more waits, {} in all",
                w.more,
                human(clock.ns(w.more_ticks))
            )?;
        }
        if let Some(line) = split_line(w, clock) {
            writeln!(out, "{pad}{line}")?;
        }
        Ok(())
    }

    /// `inside app::get_quote task 7`: the parent of a task at the top, unless a link said it.
    fn write_parent(&self, t: &TaskSpan, out: &mut dyn Write) -> std::io::Result<()> {
        let Some(&parent) = self.s.tree.parents.get(&t.task) else {
            return Ok(());
        };
        let linked = self.s.links.get(&t.task).is_some_and(|l| {
            l.iter()
                .any(|l| l.kind == LinkKind::Parent && l.other_task == parent)
        });
        if linked {
            return Ok(());
        }
        let function = self
            .s
            .awaits
            .by_task
            .get(&parent)
            .and_then(|w| w.span)
            .map(|p| format!("{} ", shown(&self.names.function(p.function))))
            .unwrap_or_default();
        writeln!(
            out,
            "{:w$}inside {function}task {parent} (made or awaited in it)",
            "",
            w = self.indent
        )
    }
}

/// A call's name with its logged arguments: `app::get(key=7, ttl=30)`.
fn call_name(names: &Names, id: u32, args: &[u64]) -> String {
    let mut name = shown(&names.function(id)).into_owned();
    if !args.is_empty() {
        let args: Vec<String> = args
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                format!(
                    "{}={}",
                    shown(&names.arg(id, i)),
                    shown(&names.arg_value(id, i, v))
                )
            })
            .collect();
        let _ = write!(name, "({})", args.join(", "));
    }
    name
}

/// Where a task's time went: `ran 1.20 ms in 3 polls, awaited 50.9 ms, waited 55.1 ms to be
/// polled after 2 wake-ups` (`None` when no poll, wait or wake-up of it was tied).
pub(crate) fn split_line(w: &TaskWaits, clock: &TickRate) -> Option<String> {
    let mut parts = Vec::new();
    if w.polls > 0 {
        parts.push(format!(
            "ran {} in {}",
            human(clock.ns(w.running)),
            plural(w.polls, "poll")
        ));
    }
    if !w.listed.is_empty() {
        parts.push(format!("awaited {}", human(clock.ns(awaited(w)))));
    }
    if w.wakes > 0 {
        parts.push(format!(
            "waited {} to be polled after {}",
            human(clock.ns(w.scheduled)),
            plural(w.wakes, "wake-up")
        ));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// A task's JSON object, open: its keys, then `"tasks": [` for the tasks under it.
fn task_object(
    s: &Slowest,
    t: &TaskSpan,
    kept: Option<&TaskWaits>,
    names: &Names,
    clock: &TickRate,
) -> String {
    let p = &s.plan;
    let tid = |t: u32| p.threads.get(t as usize).map_or(0, |t| t.tid);
    let links: Vec<String> = s
        .links
        .get(&t.task)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .map(|l| {
            format!(
                "{{\"kind\": \"{}\", \"function\": {}, \"task\": {}}}",
                match l.kind {
                    LinkKind::Parent => "made_inside",
                    LinkKind::FollowsFrom => "follows_from",
                },
                json_string(&names.function(l.other_id)),
                l.other_task
            )
        })
        .collect();
    let waits: Vec<String> = kept
        .map_or(&[][..], |w| w.listed.as_slice())
        .iter()
        .map(|a| await_json(a, names, clock, p.origin))
        .collect();
    let dur = clock.ns(t.end.saturating_sub(t.start));
    let parent = s
        .tree
        .parents
        .get(&t.task)
        .map_or_else(|| "null".to_string(), u64::to_string);
    format!(
        "{{\"function\": {}, \"id\": {}, \"thread\": {}, \"start_ns\": {}, \
         \"duration_ns\": {dur}, \"self_ns\": {dur}, \"inferred_start\": {}, \
         \"open_at_end\": {}, {}\"children\": [], \"task\": {}, \"cancelled\": {}, \
         \"end_thread\": {}, \"links\": [{}], \"awaits\": [{}], \"polls\": {}, \
         \"running_ns\": {}, \"awaited_ns\": {}, \"wake_ups\": {}, \"scheduled_ns\": {}, \
         \"parent_task\": {parent}, \"tasks\": [",
        json_string(&names.function(t.function)),
        t.function,
        tid(t.start_thread),
        clock.ns(t.start.saturating_sub(p.origin)),
        t.inferred,
        t.open,
        args_json(
            names,
            t.function,
            kept.map_or(&[][..], |w| w.args.as_slice())
        ),
        t.task,
        t.cancelled,
        tid(t.end_thread),
        links.join(", "),
        waits.join(", "),
        kept.map_or(0, |w| w.polls),
        clock.ns(kept.map_or(0, |w| w.running)),
        clock.ns(kept.map_or(0, awaited)),
        kept.map_or(0, |w| w.wakes),
        clock.ns(kept.map_or(0, |w| w.scheduled)),
    )
}

/// A wait at an await site as JSON: `{"at": "FILE:LINE:COLUMN", "waited_ns", "polls",
/// "start_ns", "dropped"}`, its start counted from `origin`.
pub(crate) fn await_json(a: &TaskAwait, names: &Names, clock: &TickRate, origin: u64) -> String {
    format!(
        "{{\"at\": {}, \"waited_ns\": {}, \"polls\": {}, \"start_ns\": {}, \"dropped\": {}}}",
        json_string(&names.site(a.event.site)),
        clock.ns(a.event.waited),
        a.event.polls,
        clock.ns(a.start().saturating_sub(origin)),
        a.event.dropped
    )
}

/// `"args": [...], ` for a call with logged arguments (each its name, its bits as a number,
/// and as its kind reads when that is not a number); empty without.
fn args_json(names: &Names, id: u32, args: &[u64]) -> String {
    if args.is_empty() {
        return String::new();
    }
    let args: Vec<String> = args
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let shown = match names.arg_kind(id, i) {
                fdr_format::args::ArgKind::Unsigned => String::new(),
                kind => format!(", \"shown\": {}", json_string(&kind.show(v))),
            };
            format!(
                "{{\"name\": {}, \"value\": {v}{shown}}}",
                json_string(&names.arg(id, i))
            )
        })
        .collect();
    format!("\"args\": [{}], ", args.join(", "))
}

/// Ticks a task waited at await sites, in all.
pub(crate) fn awaited(w: &TaskWaits) -> u64 {
    w.listed
        .iter()
        .fold(w.more_ticks, |t, a| t.saturating_add(a.event.waited))
}

/// `1 poll`, `2 polls`.
fn plural(n: u64, what: &str) -> String {
    format!("{} {what}{}", thousands(n), if n == 1 { "" } else { "s" })
}

/// `4,096`.
pub(crate) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn write_text(
    trees: &[(Key, Vec<CallNode>)],
    p: &Plan,
    names: &Names,
    clock: &TickRate,
    depth: usize,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if let Some(h) = crate::render::reason::header(&p.info, names, clock, p.origin) {
        writeln!(out, "{h}")?;
        writeln!(out)?;
    }
    if trees.is_empty() {
        return writeln!(out, "no calls");
    }
    let text = Text { p, names, clock };
    let mut marks = Marks::default();
    for (rank, (key, nodes)) in trees.iter().enumerate() {
        if rank > 0 {
            writeln!(out)?;
        }
        text.write_title(rank, key, &nodes[0], out)?;
        writeln!(out, "  {:>10} {:>10}  calls", "time", "self")?;
        text.write_tree(nodes, &mut marks, out)?;
    }
    write_legend(&marks, depth, out)
}

/// What the text report names calls and times with.
struct Text<'a> {
    p: &'a Plan,
    names: &'a Names,
    clock: &'a TickRate,
}

/// The marks the trees used, each explained once below them.
#[derive(Default)]
struct Marks {
    inferred: bool,
    open: bool,
    deeper: bool,
}

impl Text<'_> {
    /// `1. app::handle on thread 11 (main), started at +1.20 ms, lasted ...`: a slow call.
    fn write_title(
        &self,
        rank: usize,
        key: &Key,
        root: &CallNode,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let (names, clock) = (self.names, self.clock);
        let tid = self.p.threads.get(key.thread as usize).map_or(0, |t| t.tid);
        let mut marks = String::new();
        if root.inferred {
            marks.push_str(" *");
        }
        if root.open {
            marks.push_str(", open: still running when the window was written");
        }
        writeln!(
            out,
            "{}. {} on {}, started at {}, lasted {} (self {}){marks}",
            rank + 1,
            shown(&names.function(root.id)),
            thread_label(names, tid),
            relative(key.start, self.p.origin, clock),
            lasted(clock.ns(root.total), root.open),
            human(clock.ns(root.self_)),
        )
    }

    /// The tree of a slow call, a line per node, indented by depth.
    fn write_tree(
        &self,
        nodes: &[CallNode],
        marks: &mut Marks,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        // Depth first, callees in order, without recursion: a node's next sibling waits
        // under its callees.
        let mut todo: Vec<(u32, usize)> = vec![(0, 0)];
        while let Some((n, depth)) = todo.pop() {
            let node = &nodes[n as usize];
            writeln!(out, "{}", self.node_line(node, depth, marks))?;
            if node.more > 0 {
                writeln!(
                    out,
                    "  {:>10} {:>10}  {:indent$}[{} more calls not shown]",
                    human(self.clock.ns(node.more_ticks)),
                    "",
                    "",
                    thousands(node.more),
                    indent = (depth + 1) * 2
                )?;
            }
            if node.next != NONE && depth > 0 {
                todo.push((node.next, depth));
            }
            if node.first != NONE {
                todo.push((node.first, depth + 1));
            }
        }
        Ok(())
    }

    /// A node's line: its time, self time and name with its arguments, and its marks.
    fn node_line(&self, node: &CallNode, depth: usize, marks: &mut Marks) -> String {
        let (names, clock) = (self.names, self.clock);
        let mut line = String::new();
        let name = call_name(names, node.id, &node.args);
        let _ = write!(
            line,
            "  {:>10} {:>10}  {:indent$}{name}",
            lasted(clock.ns(node.total), node.open),
            human(clock.ns(node.self_)),
            "",
            indent = depth * 2
        );
        if node.count > 1 {
            let _ = write!(line, " \u{d7} {}", thousands(node.count));
        }
        if node.inferred {
            line.push_str(" *");
            marks.inferred = true;
        }
        if node.open {
            line.push_str(" (open)");
            marks.open = true;
        }
        if node.deeper > 0 {
            let _ = write!(line, " [{} calls deeper]", thousands(node.deeper));
            marks.deeper = true;
        }
        line
    }
}

/// What the marks the trees used mean; `depth` is `--depth`.
fn write_legend(marks: &Marks, depth: usize, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "\u{d7} N: N calls of the function in a row under one caller, with their total and self \
         time"
    )?;
    if marks.inferred {
        writeln!(
            out,
            "* entered before the recorded window: entry inferred at the window's start"
        )?;
    }
    if marks.open {
        writeln!(
            out,
            "(open): still running when the window was written; \u{2265} its time so far"
        )?;
    }
    if marks.deeper {
        writeln!(
            out,
            "[calls deeper]: calls made more than {} below the listed call (--depth)",
            if depth == 1 {
                "1 level".to_string()
            } else {
                format!("{} levels", depth)
            }
        )?;
    }
    Ok(())
}

/// The calls, then (as the text's list after them) the slowest tasks, each a call of an async fn
/// from its creation to its completion or drop: the keys of a call (its polls are the calls
/// above, so it has no children here and its self time is its duration) and `task`,
/// `cancelled`, `end_thread`, `links` (`{"kind": "made_inside" | "follows_from",
/// "function", "task"}`) and `awaits` (`{"at": "FILE:LINE:COLUMN", "waited_ns", "polls",
/// "start_ns", "dropped"}`, in the order the waits ended), and where its time went: `polls`
/// and `running_ns` (its polls kept in the log and their time), `awaited_ns` (the sum of its
/// waits, those past the listed ones too), `wake_ups` and `scheduled_ns` (from each wake-up
/// to the poll it asked for).
#[allow(clippy::too_many_arguments)]
fn write_json(
    s: &Slowest,
    tasks: &[TaskSpan],
    names: &Names,
    clock: &TickRate,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let (trees, p) = (&s.calls, &s.plan);
    write!(out, "[")?;
    for (i, (key, nodes)) in trees.iter().enumerate() {
        let tid = p.threads.get(key.thread as usize).map_or(0, |t| t.tid);
        write!(out, "{}\n  ", if i == 0 { "" } else { "," })?;
        // (node, its next callee to write, whether it is the first), without recursion.
        let mut todo: Vec<(u32, u32, bool)> = vec![(0, nodes[0].first, true)];
        let object = |n: &CallNode, out: &mut dyn Write| -> std::io::Result<()> {
            write!(
                out,
                "{{\"function\": {}, \"id\": {}, \"thread\": {tid}, \"start_ns\": {}, \
                 \"duration_ns\": {}, \"self_ns\": {}, \"inferred_start\": {}, \
                 \"open_at_end\": {}, ",
                json_string(&names.function(n.id)),
                n.id,
                clock.ns(n.start.saturating_sub(p.origin)),
                clock.ns(n.total),
                clock.ns(n.self_),
                n.inferred,
                n.open
            )?;
            write!(out, "{}\"children\": [", args_json(names, n.id, &n.args))
        };
        object(&nodes[0], out)?;
        while let Some((n, c, first)) = todo.pop() {
            if c == NONE {
                write!(out, "]}}")?;
                continue;
            }
            let callee = &nodes[c as usize];
            todo.push((n, callee.next, false));
            if !first {
                write!(out, ", ")?;
            }
            object(callee, out)?;
            todo.push((c, callee.first, true));
        }
    }
    for (i, root) in tasks.iter().enumerate() {
        write!(
            out,
            "{}\n  ",
            if i == 0 && trees.is_empty() { "" } else { "," }
        )?;
        // Depth first; each task's object is open while the tasks under it are written.
        let mut open = 0;
        let mut last = 0;
        for (span, kept, depth) in s.task_tree(root) {
            while open > depth {
                write!(out, "]}}")?;
                open -= 1;
            }
            if depth > 0 && last >= depth {
                write!(out, ", ")?;
            }
            write!(out, "{}", task_object(s, &span, kept, names, clock))?;
            open += 1;
            last = depth;
        }
        for _ in 0..open {
            write!(out, "]}}")?;
        }
    }
    let any = !trees.is_empty() || !tasks.is_empty();
    writeln!(out, "{}]", if any { "\n" } else { "" })
}
