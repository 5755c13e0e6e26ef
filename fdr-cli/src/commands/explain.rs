//! `fdr explain`: why a call was slow. The call is the one that fired the trigger of the log
//! (its reason record names it), one named by its thread and start (`--call`), or the slowest
//! of a function (`--function`); for a log recovered from a crash, the calls open at the death.
//!
//! - Its **usual** is its function's median duration in the window, the call itself left out
//!   (for an async fn's task, the median latency of its other tasks), or with a baseline the
//!   median of the same-named function in another log, or its p50 in a profile. A function with
//!   no other call has no usual: 0, so its whole duration is its excess.
//! - Its **excess** (duration less usual) is followed down the tree of calls it made, as long as
//!   one callee holds more than half of the excess left (each callee's excess reckoned against
//!   its own function's usual), to the deepest call that does: the **culprit**. There the
//!   excess is either the culprit's own time or shared among its callees. A task's excess is
//!   followed through the tasks made or awaited in it.
//! - **Where the time went**: for the call that fired the trigger, what the reason record
//!   measured (running, waiting for a CPU, off the CPU); for a task, its polls, its waits at
//!   await sites and its waits to be polled (as `fdr calls` reckons them).
//!
//! Two passes: the first (the plan, [`crate::model::pass::plan_shared`]) tallies every
//! function's call durations ([`Durations`]), keeps what `fdr calls` keeps of the tasks
//! ([`Top::tasks_only`]), the slowest calls of the functions asked for ([`TopKeys`]) and the
//! calls open at each thread's end; the second builds the trees of the calls explained
//! ([`Capture`], as `fdr calls` does). Memory is bounded as theirs is: per function its
//! durations (at most [`crate::limits::MAX_EXACT_DURATIONS`] kept exactly, then a histogram),
//! the tasks `fdr calls` keeps, and trees of at most [`MAX_CALLS_UNDER_ONE`] calls.
//! [`trigger_call`] does it in one pass for `fdr info`. [`crate::render::explain`] prints it.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::ops::ControlFlow;

use fdr_format::events::{LogInfo, ThreadStats};
use fdr_format::replay::log_end;
use fdr_format::sink::{Both, Close, Exit, Sink, GO_ON};
use fdr_format::{FunctionKind, Reason, ReasonInfo};

use crate::commands::calls::{
    kept_tasks, tree_cap, CallNode, Capture, Key, Starting, Top, TopKeys, NONE,
};
use crate::commands::profile::function_rows;
use crate::limits::{
    MAX_CALLS_DEPTH, MAX_CALLS_TOP, MAX_CALLS_UNDER_ONE, MAX_EXPLAIN_CANDIDATES, MAX_SHOWN_FRAMES,
};
use crate::model::engine::{Plan, Report};
use crate::model::filter::Pattern;
use crate::model::filter::{no_function_matches, parse_duration, tables, thread_chosen, Filter};
use crate::model::hist::Durations;
use crate::model::input::Log;
use crate::model::names::{Names, Slots};
use crate::model::pass::{plan_shared, replay, replay_shared};
use crate::model::profile_file::Functions;
use crate::model::tasks::{Awaits, TaskSpan, TaskTree};
use crate::model::trigger::fired;
use crate::units::{human, TickRate};
use crate::CliError;

/// A call named as `fdr calls` shows it: `TID@START`, its thread and its start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CallAt {
    /// Its thread: an id, or a name as `--thread` takes one.
    pub thread: String,
    /// Its start, in nanoseconds after time zero of the outputs.
    pub start_ns: u64,
    /// The start was given to the nanosecond (as JSON's `start_ns`), not as text shows it.
    pub exact: bool,
}

impl CallAt {
    /// Reads `TID@START`: START as `fdr calls` prints it in text (`+1.20ms`, `+1.20 ms`: any
    /// start that prints so) or in JSON (`start_ns`, digits alone: that nanosecond).
    pub(crate) fn parse(s: &str) -> Result<CallAt, String> {
        let form = "TID@START, a thread (id or name) and a start as `fdr calls` prints it: \
                    11@+1.20ms, or 11@1203456 for JSON's start_ns";
        let Some((thread, start)) = s.rsplit_once('@') else {
            return Err(format!("expected {form}"));
        };
        if thread.trim().is_empty() {
            return Err(format!("no thread before the @; expected {form}"));
        }
        let start: String = start.chars().filter(|c| !c.is_whitespace()).collect();
        let start = start.strip_prefix('+').unwrap_or(&start);
        let (start_ns, exact) = if !start.is_empty() && start.bytes().all(|b| b.is_ascii_digit()) {
            let ns = start
                .parse()
                .map_err(|_| format!("the start {start} is too large"))?;
            (ns, true)
        } else {
            (
                parse_duration(start).map_err(|e| format!("{e}; expected {form}"))?,
                false,
            )
        };
        Ok(CallAt {
            thread: thread.trim().to_string(),
            start_ns,
            exact,
        })
    }

    /// True if a call that started `ns` after time zero is one it names: that nanosecond, or
    /// a start printed the same.
    pub(crate) fn names(&self, ns: u64) -> bool {
        ns == self.start_ns || (!self.exact && human(ns) == human(self.start_ns))
    }

    /// Nanoseconds that hold every start it names (and a few more).
    fn range_ns(&self) -> (u64, u64) {
        if self.exact {
            return (self.start_ns, self.start_ns);
        }
        // Three significant digits: within half a percent.
        let margin = self.start_ns / 100 + 1;
        (
            self.start_ns.saturating_sub(margin),
            self.start_ns.saturating_add(margin),
        )
    }
}

/// What `fdr explain` was asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ExplainOptions {
    /// The call named (else the trigger's).
    pub call: Option<CallAt>,
    /// The functions whose slowest calls are explained (with `call`: the function of the call
    /// named).
    pub function: Option<String>,
    /// How many of their slowest calls.
    pub top: usize,
    /// Reader threads.
    pub readers: usize,
}

/// Where the usual durations come from when not from the window.
#[derive(Debug)]
pub(crate) enum Baseline {
    /// Another log: the durations of its functions' calls and tasks, by name.
    Log {
        /// Calls, by function name.
        calls: HashMap<String, Durations>,
        /// Tasks of async functions, by function name.
        tasks: HashMap<String, Durations>,
        /// Its clock.
        clock: TickRate,
    },
    /// A profile: its functions' p50 and call count, by name (it keeps no task latency).
    Profile(HashMap<String, (u64, u64)>),
}

/// A baseline and the file it was read from.
#[derive(Debug)]
pub(crate) struct BaselineOf {
    /// The file, as given.
    pub name: String,
    /// What it holds.
    pub usual: Baseline,
}

/// Where a usual duration came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UsualFrom {
    /// The function's other calls (tasks) in the window.
    Window,
    /// The baseline's same-named function.
    Baseline,
}

/// A function's usual duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Usual {
    /// Nanoseconds; 0 when `of` is 0.
    pub ns: u64,
    /// How many calls (tasks) it is the median of; 0: none to compare with.
    pub of: u64,
    /// Where it comes from.
    pub from: UsualFrom,
}

/// A call (or a task) on the way from the call explained to its culprit.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Step {
    /// Its function.
    pub function: u32,
    /// For a task, its id.
    pub task: Option<u64>,
    /// Its thread index (of a task, the thread that created it).
    pub thread: u32,
    /// When it started (a task: its creation), ticks.
    pub start: u64,
    /// How long it lasted (so far, when `open`), ns.
    pub duration_ns: u64,
    /// Still running when the window ended.
    pub open: bool,
    /// Entered (created) before the window: `start` is the window's start.
    pub inferred: bool,
    /// Its function's usual.
    pub usual: Usual,
    /// Its duration less its usual (0 when shorter), ns.
    pub excess_ns: u64,
}

/// How the culprit's excess is made up.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Verdict {
    /// The call is not slower than its usual.
    NoExcess,
    /// Mostly the culprit's own time: this share of its excess (at least half) is in its self
    /// time and not in its callees' excesses (for a task: not in the tasks made or awaited in
    /// it).
    Own(f64),
    /// Mostly in callees that each took their usual time (calls it does not usually make, or
    /// more of them): this share of its excess (at least half), and the two functions whose
    /// calls took longest in all.
    UsualCalls {
        /// The share.
        share: f64,
        /// At most two functions, longest first.
        top: Vec<CallsOf>,
    },
    /// Neither a callee, nor its own time, nor calls at their usual time hold half of it: the
    /// two callees whose excesses are largest, with their shares of the culprit's excess, and
    /// the shares of its own time and of calls at their usual time.
    Shared {
        /// The own time's share.
        own: f64,
        /// The share in callees that took their usual time.
        usual_calls: f64,
        /// At most two callees, most excess first, with their shares.
        top: Vec<(Step, f64)>,
    },
    /// The calls it made past [`MAX_CALLS_UNDER_ONE`] under the call explained (not kept) may
    /// hold more than half of it: how many, and their time, ns.
    Unseen {
        /// Calls not kept.
        calls: u64,
        /// Their time.
        ns: u64,
    },
    /// The call's entry is not in the window, so neither are the calls it made: nothing to
    /// follow.
    NoTree,
    /// The trigger's task (an async fn's latency) was created before the window: its polls,
    /// waits and the tasks made in it are not all in the log.
    TaskBeforeWindow,
}

/// The calls of one function a call made.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CallsOf {
    /// The function.
    pub function: u32,
    /// How many calls.
    pub calls: u64,
    /// Their time in all, ns.
    pub duration_ns: u64,
    /// The function's usual (of one call).
    pub usual: Usual,
}

/// Where the time of the call went, as the reason record measured it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Where {
    /// Over the whole call: on a CPU, waiting for one, off the CPU (blocked), ns.
    Whole {
        /// Running: the rest.
        running_ns: u64,
        /// Runnable, waiting for a CPU.
        cpu_wait_ns: u64,
        /// Blocked: a syscall, a lock, a sleep.
        off_cpu_ns: u64,
    },
    /// Only the wait for a CPU, from when the watchdog saw the call running long to its end:
    /// at least this much, ns.
    CpuWaitAtLeast(u64),
    /// The call that fired the trigger, with nothing measured.
    NotMeasured,
    /// Not the call that fired the trigger: fdr measures that one only.
    NotTheTrigger,
    /// The trigger was on a task's latency, which moves between threads: fdr measures a call's
    /// or a poll's time on and off the CPU, not a task's.
    TaskNotMeasured,
}

/// One call (or task) explained.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Explanation {
    /// From the call explained (first) down to its culprit (last).
    pub path: Vec<Step>,
    /// The culprit's part of the call's excess, 0 to 1 (0 without excess).
    pub share: f64,
    /// How the culprit's excess is made up.
    pub verdict: Verdict,
    /// Where the time went.
    pub time: Where,
    /// It is the call (task) that fired the trigger.
    pub trigger: bool,
}

impl Explanation {
    /// The call explained.
    pub(crate) fn call(&self) -> &Step {
        &self.path[0]
    }

    /// Its culprit (the call itself when no callee holds most of its excess).
    pub(crate) fn culprit(&self) -> &Step {
        self.path.last().expect("a path has its call")
    }
}

/// What a thread had open when a crashed process's window ended.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct OpenStack {
    /// The thread's index.
    pub thread: u32,
    /// Its open calls, outermost first, each with its time so far and its usual.
    pub calls: Vec<Step>,
}

/// The calls open at a crash.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Crash {
    /// The reason record: how the process died.
    pub reason: ReasonInfo,
    /// The thread that died, if the log names one with calls: its stack.
    pub died: Option<OpenStack>,
    /// The other threads with calls open, by thread index.
    pub others: Vec<OpenStack>,
    /// Threads with calls in the window and none open at the end.
    pub idle: usize,
}

/// What `fdr explain` shows.
#[derive(Debug)]
pub(crate) struct Explained {
    /// The calls explained: one, or with `--function` its slowest.
    pub items: Vec<Explanation>,
    /// For a log recovered from a crash (and no call asked for), the calls open at the death.
    pub crash: Option<Crash>,
    /// `--function` asked for a list (its pattern).
    pub listed: Option<String>,
    /// The baseline's file, and whether it is a profile.
    pub baseline: Option<(String, bool)>,
    /// What `fdr calls` keeps of the tasks: their waits, polls and wake-ups.
    pub awaits: Awaits,
    /// The first pass: tables, threads, time zero.
    pub plan: Plan,
}

/// Per function, the durations of its calls that ended (not those still open at the end); the
/// slowest calls of the functions chosen; each thread's calls open at its end.
#[derive(Debug, Default)]
struct Tally {
    slots: Slots,
    calls: Vec<Durations>,
    /// Sorted ids of the functions whose slowest calls are kept.
    chosen: Vec<u32>,
    slowest: TopKeys,
    /// Per thread index, its calls open at its window's end (innermost first), at most
    /// [`MAX_SHOWN_FRAMES`].
    open: Vec<Vec<(usize, CallNode)>>,
}

impl Tally {
    fn new(chosen: Vec<u32>, top: usize) -> Tally {
        Tally {
            chosen,
            slowest: TopKeys::new(top),
            ..Tally::default()
        }
    }

    fn durations(&mut self, id: u32) -> Result<&mut Durations, CliError> {
        let s = self.slots.slot(id)?;
        if s >= self.calls.len() {
            self.calls.resize_with(s + 1, Durations::default);
        }
        Ok(&mut self.calls[s])
    }

    /// Takes in another share's (of other threads).
    fn merge(&mut self, other: Tally) -> Result<(), CliError> {
        for (s, &id) in other.slots.ids().iter().enumerate() {
            if let Some(d) = other.calls.get(s) {
                self.durations(id)?.merge(d);
            }
        }
        self.slowest.merge(other.slowest);
        if other.open.len() > self.open.len() {
            self.open.resize_with(other.open.len(), Vec::new);
        }
        for (t, calls) in other.open.into_iter().enumerate() {
            if !calls.is_empty() {
                self.open[t] = calls;
            }
        }
        Ok(())
    }

    /// The durations by function id.
    fn by_id(&mut self) -> HashMap<u32, Durations> {
        let calls = std::mem::take(&mut self.calls);
        self.slots.ids().iter().copied().zip(calls).collect()
    }
}

impl Sink for Tally {
    type Error = CliError;

    #[inline]
    fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, CliError> {
        let f = e.frame;
        if e.how == Close::WindowEnd {
            let t = e.thread as usize;
            if t >= self.open.len() {
                self.open.resize_with(t + 1, Vec::new);
            }
            if self.open[t].len() < MAX_SHOWN_FRAMES {
                let mut n = CallNode::new(f.id, f.start);
                n.count(f, e.end, e.how);
                self.open[t].push((e.depth, n));
            }
        } else {
            let d = e.end.saturating_sub(f.start);
            self.durations(f.id)?.record(d);
        }
        if !self.chosen.is_empty() && self.chosen.binary_search(&f.id).is_ok() {
            self.slowest.add(&Key {
                thread: e.thread,
                id: f.id,
                start: f.start,
                end: e.end,
            });
        }
        Ok(GO_ON)
    }
}

/// The first pass's sink: what `fdr calls` keeps of the tasks, and the tallies.
type Gather = Both<Top, Tally>;

/// What the first pass learned, its shares merged.
struct Gathered {
    /// Call durations by function id.
    calls: HashMap<u32, Durations>,
    /// Task latencies (of tasks that ended) by function id.
    tasks: HashMap<u32, Durations>,
    awaits: Awaits,
    tree: TaskTree,
    slowest: TopKeys,
    open: Vec<Vec<(usize, CallNode)>>,
}

impl Gathered {
    fn of(shares: Vec<Gather>, end: u64) -> Result<Gathered, CliError> {
        let (tops, tallies): (Vec<Top>, Vec<Tally>) =
            shares.into_iter().map(|b| (b.0, b.1)).unzip();
        let (awaits, tree) = kept_tasks(tops, end)?;
        let mut tally = Tally::default();
        for t in tallies {
            tally.merge(t)?;
        }
        let mut tasks: HashMap<u32, Durations> = HashMap::new();
        for s in awaits.by_task.values().filter_map(|w| w.span) {
            if !s.open {
                tasks
                    .entry(s.function)
                    .or_default()
                    .record(s.end.saturating_sub(s.start));
            }
        }
        Ok(Gathered {
            calls: tally.by_id(),
            tasks,
            awaits,
            tree,
            slowest: tally.slowest,
            open: tally.open,
        })
    }
}

/// What an explanation is worked out from.
struct Ctx<'a> {
    names: &'a Names,
    clock: TickRate,
    g: &'a Gathered,
    baseline: Option<&'a Baseline>,
    /// The reason record, when a trigger wrote the log.
    fired: Option<&'a ReasonInfo>,
    threads: &'a [ThreadStats],
}

/// A function's usual from `d`, `left_out` (the call compared) not counted.
fn usual_of(
    d: Option<&Durations>,
    left_out: Option<u64>,
    clock: TickRate,
    from: UsualFrom,
) -> Usual {
    match d.and_then(|d| d.median_without(left_out)) {
        Some((ticks, of)) => Usual {
            ns: clock.ns(ticks),
            of,
            from,
        },
        None => Usual { ns: 0, of: 0, from },
    }
}

impl Ctx<'_> {
    fn tid(&self, thread: u32) -> i32 {
        self.threads.get(thread as usize).map_or(0, |t| t.tid)
    }

    /// The usual of a call of `id` that lasted `ticks` (counted among the window's durations
    /// unless it was still `open`).
    fn usual_call(&self, id: u32, ticks: u64, open: bool) -> Usual {
        match self.baseline {
            Some(Baseline::Log { calls, clock, .. }) => usual_of(
                calls.get(self.names.function(id).as_ref()),
                None,
                *clock,
                UsualFrom::Baseline,
            ),
            Some(Baseline::Profile(p50)) => {
                let (ns, of) = p50
                    .get(self.names.function(id).as_ref())
                    .copied()
                    .unwrap_or((0, 0));
                Usual {
                    ns: if of == 0 { 0 } else { ns },
                    of,
                    from: UsualFrom::Baseline,
                }
            }
            None => usual_of(
                self.g.calls.get(&id),
                (!open).then_some(ticks),
                self.clock,
                UsualFrom::Window,
            ),
        }
    }

    /// The usual of a task of `function` that lasted `ticks`. A profile keeps no task latency:
    /// the window's then.
    fn usual_task(&self, function: u32, ticks: u64, open: bool) -> Usual {
        match self.baseline {
            Some(Baseline::Log { tasks, clock, .. }) => usual_of(
                tasks.get(self.names.function(function).as_ref()),
                None,
                *clock,
                UsualFrom::Baseline,
            ),
            _ => usual_of(
                self.g.tasks.get(&function),
                (!open).then_some(ticks),
                self.clock,
                UsualFrom::Window,
            ),
        }
    }

    fn call_step(&self, thread: u32, n: &CallNode) -> Step {
        let usual = self.usual_call(n.id, n.total, n.open);
        let duration_ns = self.clock.ns(n.total);
        Step {
            function: n.id,
            task: None,
            thread,
            start: n.start,
            duration_ns,
            open: n.open,
            inferred: n.inferred,
            usual,
            excess_ns: duration_ns.saturating_sub(usual.ns),
        }
    }

    fn task_step(&self, s: &TaskSpan) -> Step {
        let ticks = s.end.saturating_sub(s.start);
        let usual = self.usual_task(s.function, ticks, s.open);
        let duration_ns = self.clock.ns(ticks);
        Step {
            function: s.function,
            task: Some(s.task),
            thread: s.start_thread,
            start: s.start,
            duration_ns,
            open: s.open,
            inferred: s.inferred,
            usual,
            excess_ns: duration_ns.saturating_sub(usual.ns),
        }
    }

    /// True if a call (task) of `function` on thread index `thread` that started at `start`
    /// is the one that fired the trigger.
    fn is_trigger(&self, function: u32, thread: u32, start: u64) -> bool {
        self.fired.is_some_and(|r| {
            r.function == function && r.start_tsc == start && r.tid == self.tid(thread)
        })
    }

    /// Where the time went, for the trigger's call.
    fn time(&self, trigger: bool) -> Where {
        let Some(r) = self.fired.filter(|_| trigger) else {
            return Where::NotTheTrigger;
        };
        if is_task_trigger(r, self.names) && r.off_cpu_ns.is_none() && r.cpu_wait_ns.is_none() {
            return Where::TaskNotMeasured;
        }
        match (r.off_cpu_ns, r.cpu_wait_ns) {
            (Some(off), wait) => {
                let wait = wait.unwrap_or(0);
                Where::Whole {
                    running_ns: self
                        .clock
                        .ns(r.duration_ticks)
                        .saturating_sub(off)
                        .saturating_sub(wait),
                    cpu_wait_ns: wait,
                    off_cpu_ns: off,
                }
            }
            (None, Some(wait)) => Where::CpuWaitAtLeast(wait),
            (None, None) => Where::NotMeasured,
        }
    }

    /// The call `key` explained from its tree.
    fn explain_call(&self, key: &Key, nodes: &[CallNode]) -> Explanation {
        let mut path = vec![self.call_step(key.thread, &nodes[0])];
        let mut at = 0;
        let verdict = loop {
            let excess = path.last().expect("a step").excess_ns;
            if excess == 0 {
                break Verdict::NoExcess;
            }
            let mut kids = Vec::new();
            let mut c = nodes[at].first;
            while c != NONE {
                kids.push((c as usize, self.call_step(key.thread, &nodes[c as usize])));
                c = nodes[c as usize].next;
            }
            if let Some(i) = holder(kids.iter().map(|k| &k.1), excess) {
                at = kids[i].0;
                path.push(kids.swap_remove(i).1);
                continue;
            }
            let unseen = self.clock.ns(nodes[at].more_ticks);
            if unseen.saturating_mul(2) > excess {
                break Verdict::Unseen {
                    calls: nodes[at].more,
                    ns: unseen,
                };
            }
            let kids = kids.into_iter().map(|k| k.1).collect();
            let self_ns = self.clock.ns(nodes[at].self_);
            break made_up(excess, kids, unseen, Some(self_ns));
        };
        let trigger = self.is_trigger(key.id, key.thread, key.start);
        finish(path, verdict, self.time(trigger), trigger)
    }

    /// The task `span` explained through the tasks made or awaited in it.
    fn explain_task(&self, span: &TaskSpan) -> Explanation {
        let mut path = vec![self.task_step(span)];
        let verdict = loop {
            let step = path.last().expect("a step");
            let excess = step.excess_ns;
            if excess == 0 {
                break Verdict::NoExcess;
            }
            let task = step.task.unwrap_or(0);
            let mut kids: Vec<Step> = self
                .g
                .tree
                .children
                .get(&task)
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .filter_map(|t| self.g.awaits.by_task.get(t).and_then(|w| w.span))
                // A hostile log may tie tasks in a cycle: never follow one already on the way.
                .filter(|s| !path.iter().any(|p| p.task == Some(s.task)))
                .map(|s| self.task_step(&s))
                .collect();
            if let Some(i) = holder(kids.iter(), excess) {
                path.push(kids.swap_remove(i));
                continue;
            }
            break made_up(excess, kids, 0, None);
        };
        let trigger = self.fired.is_some_and(|r| {
            !is_poll_reason(r.reason) && task_nearness(r, span, self.clock.freq()).is_some()
        });
        finish(path, verdict, self.time(trigger), trigger)
    }

    /// The trigger's call when its entry is not in the window: what the reason record says.
    fn explain_unseen(&self, r: &ReasonInfo, thread: u32) -> Explanation {
        let duration_ns = self.clock.ns(r.duration_ticks);
        let open = matches!(r.reason, Reason::StillRunning | Reason::LongPollRunning);
        // A task's latency against its function's other tasks, not against its polls.
        let task = is_task_trigger(r, self.names);
        let usual = if task {
            self.usual_task(r.function, r.duration_ticks, true)
        } else {
            self.usual_call(r.function, r.duration_ticks, true)
        };
        let step = Step {
            function: r.function,
            task: None,
            thread,
            start: r.start_tsc,
            duration_ns,
            open,
            inferred: false,
            usual,
            excess_ns: duration_ns.saturating_sub(usual.ns),
        };
        let verdict = if step.excess_ns == 0 {
            Verdict::NoExcess
        } else if task {
            Verdict::TaskBeforeWindow
        } else {
            Verdict::NoTree
        };
        finish(vec![step], verdict, self.time(true), true)
    }

    /// The calls open at each thread's end, for a crash.
    fn crash(&self, r: &ReasonInfo) -> Crash {
        let mut stacks: Vec<OpenStack> = Vec::new();
        for (t, open) in self.g.open.iter().enumerate() {
            if open.is_empty() {
                continue;
            }
            let mut open = open.clone();
            open.sort_by_key(|(depth, _)| *depth);
            stacks.push(OpenStack {
                thread: t as u32,
                calls: open
                    .iter()
                    .map(|(_, n)| self.call_step(t as u32, n))
                    .collect(),
            });
        }
        let died = (r.tid != 0)
            .then(|| stacks.iter().position(|s| self.tid(s.thread) == r.tid))
            .flatten()
            .map(|i| stacks.remove(i));
        let with_calls = self
            .threads
            .iter()
            .filter(|t| t.function_records > 0)
            .count();
        let idle = with_calls.saturating_sub(stacks.len() + usize::from(died.is_some()));
        Crash {
            reason: r.clone(),
            died,
            others: stacks,
            idle,
        }
    }
}

/// The poll reasons: a trigger on one poll of an async fn, not on its task.
fn is_poll_reason(r: Reason) -> bool {
    matches!(r, Reason::LongPoll | Reason::LongPollRunning)
}

/// The one of `kids` holding more than half of `excess` (the first such, largest excess).
fn holder<'a>(kids: impl Iterator<Item = &'a Step>, excess: u64) -> Option<usize> {
    let mut best: Option<(usize, u64)> = None;
    for (i, k) in kids.enumerate() {
        if best.map_or(true, |(_, b)| k.excess_ns > b) {
            best = Some((i, k.excess_ns));
        }
    }
    best.filter(|&(_, e)| e.saturating_mul(2) > excess)
        .map(|(i, _)| i)
}

/// How an `excess` no callee holds most of is made up: the callees' excesses (and `unseen`, the
/// time of calls not kept), then the call's own time, at most its self time `self_ns` (a task
/// has none: the rest is its own), then the callees that took their usual time (the rest: a
/// call made calls it does not usually make, or more of them).
fn made_up(excess: u64, mut kids: Vec<Step>, unseen: u64, self_ns: Option<u64>) -> Verdict {
    let in_kids = kids
        .iter()
        .fold(unseen, |sum, k| sum.saturating_add(k.excess_ns));
    let rest = excess.saturating_sub(in_kids);
    let own = self_ns.map_or(rest, |s| s.min(rest));
    let usual = rest - own;
    if own.saturating_mul(2) >= excess {
        return Verdict::Own(part(own, excess));
    }
    if usual.saturating_mul(2) >= excess {
        // By function, in the order first called; the longest in all first (a stable sort).
        let mut top: Vec<CallsOf> = Vec::new();
        for k in &kids {
            match top.iter_mut().find(|c| c.function == k.function) {
                Some(c) => {
                    c.calls += 1;
                    c.duration_ns = c.duration_ns.saturating_add(k.duration_ns);
                }
                None => top.push(CallsOf {
                    function: k.function,
                    calls: 1,
                    duration_ns: k.duration_ns,
                    usual: k.usual,
                }),
            }
        }
        top.sort_by_key(|c| Reverse(c.duration_ns));
        top.truncate(2);
        return Verdict::UsualCalls {
            share: part(usual, excess),
            top,
        };
    }
    // Most excess first; the earlier of two alike (a stable sort).
    kids.sort_by_key(|k| Reverse(k.excess_ns));
    let top = kids
        .into_iter()
        .filter(|k| k.excess_ns > 0)
        .take(2)
        .map(|k| {
            let share = part(k.excess_ns, excess);
            (k, share)
        })
        .collect();
    Verdict::Shared {
        own: part(own, excess),
        usual_calls: part(usual, excess),
        top,
    }
}

/// `a / b`, within 0..1 (0 when `b` is 0).
fn part(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        (a as f64 / b as f64).clamp(0.0, 1.0)
    }
}

fn finish(path: Vec<Step>, verdict: Verdict, time: Where, trigger: bool) -> Explanation {
    let share = part(path.last().expect("a step").excess_ns, path[0].excess_ns);
    Explanation {
        path,
        share,
        verdict,
        time,
        trigger,
    }
}

/// The ids of the functions of `info`'s table that `pattern` matches, sorted; an error naming
/// the closest names when none does.
fn matching(info: &LogInfo, pattern: &str, log: &str) -> Result<Vec<u32>, CliError> {
    let p = Pattern::new(pattern);
    let functions = info
        .functions
        .iter()
        .filter(|f| f.kind != FunctionKind::Await);
    let mut ids: Vec<u32> = functions
        .clone()
        .filter(|f| p.matches(&f.name))
        .map(|f| f.id)
        .collect();
    if ids.is_empty() {
        let names: Vec<&str> = functions.map(|f| f.name.as_str()).collect();
        return Err(CliError::Empty {
            path: log.to_string(),
            what: no_function_matches(pattern, &names, "log"),
        });
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

/// True if `id` is an async fn, whose calls are tasks.
fn is_async(names: &Names, id: u32) -> bool {
    names
        .info(id)
        .is_some_and(|f| f.kind == FunctionKind::Async)
}

/// The error for a log that names no call to explain.
fn nothing_named(log: &str, info: &LogInfo) -> CliError {
    let why = info.reason.as_ref().map_or_else(
        || "it does not say why it was written".to_string(),
        |r| format!("it was written for: {}", r.reason.describe()),
    );
    CliError::Empty {
        path: log.to_string(),
        what: format!(
            "no call to explain: the log was not written by a trigger ({why}); name one with \
             --call TID@START (a thread and a start as `fdr calls` prints them), or explain a \
             function's slowest calls with --function NAME"
        ),
    }
}

/// The trigger's call as a target: its task (a slow task of an async fn), else where its call
/// starts.
fn trigger_target(
    r: &ReasonInfo,
    names: &Names,
    threads: &[ThreadStats],
    g: &Gathered,
    rate: u64,
) -> Target {
    if is_task_trigger(r, names) {
        let task = g
            .awaits
            .by_task
            .values()
            .filter_map(|w| w.span)
            .filter_map(|s| task_nearness(r, &s, rate).map(|off| (off, s)))
            .min_by_key(|(off, s)| (*off, s.task))
            .map(|(_, s)| s);
        if let Some(s) = task {
            return Target::Task(s);
        }
    }
    Target::Starting(trigger_start(r, threads))
}

/// How far task `s` is from the task whose latency fired trigger `r` (ticks off in its creation
/// and its length), if it may be that task, at `rate` ticks a second. The runtime times a task's
/// trigger by clock readings of its own, a little after the records of its creation and
/// completion, and names the thread it ended on, which need not be the one it was made on: the
/// task is the one of the function whose creation and length are nearest the reason's, within
/// a microsecond and a thousandth of its length.
fn task_nearness(r: &ReasonInfo, s: &TaskSpan, rate: u64) -> Option<u64> {
    if s.function != r.function {
        return None;
    }
    let slack = rate / 1_000_000 + r.duration_ticks / 1_000;
    let off =
        s.start.abs_diff(r.start_tsc) + s.end.saturating_sub(s.start).abs_diff(r.duration_ticks);
    (off <= slack).then_some(off)
}

/// The trigger was on the task of an async fn (its latency), not on a poll.
fn is_task_trigger(r: &ReasonInfo, names: &Names) -> bool {
    is_async(names, r.function) && !is_poll_reason(r.reason)
}

/// Where the trigger's call starts: its function, on its thread, at its start.
fn trigger_start(r: &ReasonInfo, threads: &[ThreadStats]) -> Starting {
    Starting {
        threads: threads
            .iter()
            .enumerate()
            .filter(|(_, t)| t.tid == r.tid)
            .map(|(i, _)| i as u32)
            .collect(),
        from: r.start_tsc,
        to: r.start_tsc,
        functions: vec![r.function],
        max: MAX_EXPLAIN_CANDIDATES,
    }
}

/// What is explained, before the second pass.
enum Target {
    /// A task.
    Task(TaskSpan),
    /// The trigger's call, found by where it starts.
    Starting(Starting),
}

/// The calls the second pass finds, and the tree of each.
fn trees_of(
    log: &Log,
    plan: &Plan,
    mut capture: Vec<Capture>,
    progress: &dyn Report,
) -> Result<Vec<(Key, Vec<CallNode>)>, CliError> {
    replay_shared(log, &mut capture, Some(plan), &Filter::none(), progress, 1)?;
    Ok(capture.into_iter().flat_map(Capture::into_trees).collect())
}

/// The longest of `trees` (then the earliest, then by thread and function).
fn longest(trees: Vec<(Key, Vec<CallNode>)>) -> Option<(Key, Vec<CallNode>)> {
    trees.into_iter().max_by_key(|(k, t)| {
        (
            t[0].total,
            Reverse(k.start),
            Reverse(k.thread),
            Reverse(k.id),
        )
    })
}

/// Explains what `opts` asks for in `log`, the usual durations from the window or from
/// `baseline`.
pub(crate) fn explain(
    log: &Log,
    opts: &ExplainOptions,
    baseline: Option<&BaselineOf>,
    progress: &dyn Report,
) -> Result<Explained, CliError> {
    // What to explain, from the tables alone: a wrong name or a log that names no call is
    // said before the log is read.
    let info = tables(log)?;
    let names = Names::new(&info);
    let chosen = match &opts.function {
        Some(p) => Some(matching(&info, p, log.name())?),
        None => None,
    };
    if opts.call.is_none()
        && chosen.is_none()
        && fired(&info).is_none()
        && info.reason.as_ref().map(|r| r.reason) != Some(Reason::Crash)
    {
        return Err(nothing_named(log.name(), &info));
    }
    let listing = opts.call.is_none() && chosen.is_some();
    let top = opts.top.clamp(1, MAX_CALLS_TOP);
    // The slowest calls are kept of the functions asked for that are not async fns (whose
    // tasks are their calls).
    let sync: Vec<u32> = match (&chosen, listing) {
        (Some(ids), true) => ids
            .iter()
            .copied()
            .filter(|&id| !is_async(&names, id))
            .collect(),
        _ => Vec::new(),
    };
    let readers = opts.readers.max(1);
    let mut shares: Vec<Gather> = (0..readers)
        .map(|_| Both(Top::tasks_only(), Tally::new(sync.clone(), top)))
        .collect();
    let plan = plan_shared(log, &Filter::none(), progress, &mut shares)?;
    let mut g = Gathered::of(shares, log_end(&plan.info, &plan.threads))?;
    let keys = std::mem::take(&mut g.slowest).keys();
    let names = Names::new(&plan.info);
    let ctx = Ctx {
        names: &names,
        clock: TickRate::new(plan.info.header.cycle_frequency),
        g: &g,
        baseline: baseline.map(|b| &b.usual),
        fired: fired(&plan.info),
        threads: &plan.threads,
    };
    let mut items = Vec::new();
    let mut crash = None;
    if let Some(call) = &opts.call {
        items.push(named_call(
            log,
            &ctx,
            &plan,
            call,
            chosen.as_deref(),
            readers,
            progress,
        )?);
    } else if let Some(ids) = &chosen {
        items = slowest(log, &ctx, &plan, ids, keys, top, readers, progress)?;
    } else if let Some(r) = ctx.fired {
        let rate = plan.info.header.cycle_frequency;
        items.push(match trigger_target(r, &names, &plan.threads, &g, rate) {
            Target::Task(s) => ctx.explain_task(&s),
            Target::Starting(s) => {
                let thread = s.threads.first().copied().unwrap_or(0);
                let caps = (0..readers)
                    .map(|_| Capture::starting(s.clone(), MAX_CALLS_DEPTH, MAX_CALLS_UNDER_ONE))
                    .collect();
                match longest(trees_of(log, &plan, caps, progress)?) {
                    Some((k, t)) => ctx.explain_call(&k, &t),
                    None => ctx.explain_unseen(r, thread),
                }
            }
        });
    } else if let Some(r) = plan.info.reason.as_ref() {
        crash = Some(ctx.crash(r));
    }
    Ok(Explained {
        items,
        crash,
        listed: opts.function.clone().filter(|_| listing),
        baseline: baseline.map(|b| (b.name.clone(), matches!(b.usual, Baseline::Profile(_)))),
        awaits: g.awaits,
        plan,
    })
}

/// The call `call` names (of the functions `chosen`, if given), explained.
fn named_call(
    log: &Log,
    ctx: &Ctx<'_>,
    plan: &Plan,
    call: &CallAt,
    chosen: Option<&[u32]>,
    readers: usize,
    progress: &dyn Report,
) -> Result<Explanation, CliError> {
    let threads: Vec<u32> = plan
        .threads
        .iter()
        .enumerate()
        .filter(|(_, t)| thread_chosen(std::slice::from_ref(&call.thread), t.tid, &plan.info))
        .map(|(i, _)| i as u32)
        .collect();
    let shown = crate::escape::shown(&call.thread).into_owned();
    if threads.is_empty() {
        return Err(CliError::Empty {
            path: log.name().to_string(),
            what: format!("--call: no thread {shown} in the log (`fdr info` lists its threads)"),
        });
    }
    let origin = plan.origin;
    let clock = ctx.clock;
    let rel = |tick: u64| (tick >= origin).then(|| clock.ns(tick - origin));
    let named = |tick: u64| rel(tick).is_some_and(|ns| call.names(ns));
    let of = |id: u32| chosen.map_or(true, |ids| ids.binary_search(&id).is_ok());
    let (lo, hi) = call.range_ns();
    let ticks = |ns: u64| fdr_format::units::ns_to_ticks(ns, clock.freq());
    let starting = Starting {
        threads: threads.clone(),
        from: origin.saturating_add(ticks(lo)).saturating_sub(1),
        to: origin
            .saturating_add(ticks(hi.saturating_add(1)))
            .saturating_add(1),
        functions: chosen.map(<[u32]>::to_vec).unwrap_or_default(),
        max: MAX_EXPLAIN_CANDIDATES,
    };
    let caps = (0..readers)
        .map(|_| Capture::starting(starting.clone(), MAX_CALLS_DEPTH, MAX_CALLS_UNDER_ONE))
        .collect();
    // Calls and tasks alike: the one starting at the very nanosecond given first, then the
    // longest, then the earliest.
    let mut found: Vec<Candidate> = trees_of(log, plan, caps, progress)?
        .into_iter()
        .filter(|(k, _)| named(k.start))
        .map(|(k, t)| Candidate {
            exact: rel(k.start) == Some(call.start_ns),
            ticks: t[0].total,
            start: k.start,
            what: Found::Call(k, t),
        })
        .collect();
    for s in ctx.g.awaits.by_task.values().filter_map(|w| w.span) {
        if threads.contains(&s.start_thread) && named(s.start) && of(s.function) {
            found.push(Candidate {
                exact: rel(s.start) == Some(call.start_ns),
                ticks: s.end.saturating_sub(s.start),
                start: s.start,
                what: Found::Task(s),
            });
        }
    }
    found.sort_by_key(|c| {
        let (task, call) = match &c.what {
            Found::Task(s) => (s.task, (0, 0)),
            Found::Call(k, _) => (0, (k.thread, k.id)),
        };
        (Reverse(c.exact), Reverse(c.ticks), c.start, task, call)
    });
    match found.into_iter().next().map(|c| c.what) {
        Some(Found::Task(s)) => Ok(ctx.explain_task(&s)),
        Some(Found::Call(k, t)) => Ok(ctx.explain_call(&k, &t)),
        None => {
            let at = if call.exact {
                format!("{} ns", call.start_ns)
            } else {
                format!("+{}", human(call.start_ns))
            };
            Err(CliError::Empty {
                path: log.name().to_string(),
                what: format!(
                    "--call: no call{} on thread {shown} started at {at} (`fdr calls` lists calls \
                     with their thread and start; JSON's start_ns names one to the nanosecond)",
                    if chosen.is_some() {
                        " of the functions --function matches"
                    } else {
                        ""
                    },
                ),
            })
        }
    }
}

/// A call or a task `--call` may name.
struct Candidate {
    /// It starts at the very nanosecond given.
    exact: bool,
    /// Its duration.
    ticks: u64,
    start: u64,
    what: Found,
}

/// A call with its tree, or a task.
enum Found {
    Call(Key, Vec<CallNode>),
    Task(TaskSpan),
}

/// The `top` slowest calls of the functions `ids` (their tasks, for async fns), explained: `keys`
/// are the slowest calls of those that are not async fns.
#[allow(clippy::too_many_arguments)]
fn slowest(
    log: &Log,
    ctx: &Ctx<'_>,
    plan: &Plan,
    ids: &[u32],
    keys: Vec<Key>,
    top: usize,
    readers: usize,
    progress: &dyn Report,
) -> Result<Vec<Explanation>, CliError> {
    let g = ctx.g;
    let mut tasks: Vec<TaskSpan> = g
        .awaits
        .by_task
        .values()
        .filter_map(|w| w.span)
        .filter(|s| ids.binary_search(&s.function).is_ok() && is_async(ctx.names, s.function))
        .collect();
    let slow = |d: u64, start: u64| (Reverse(d), start);
    tasks.sort_by_key(|s| (slow(s.end.saturating_sub(s.start), s.start), s.task));
    tasks.truncate(top);
    // Calls and tasks by duration (then start), the `top` slowest.
    let mut order: Vec<(u64, u64, Pick)> = keys
        .iter()
        .map(|k| (k.end.saturating_sub(k.start), k.start, Pick::Call(*k)))
        .chain(
            tasks
                .iter()
                .map(|s| (s.end.saturating_sub(s.start), s.start, Pick::Task(*s))),
        )
        .collect();
    order.sort_by_key(|o| slow(o.0, o.1));
    order.truncate(top);
    let keys: Vec<Key> = order
        .iter()
        .filter_map(|o| match o.2 {
            Pick::Call(k) => Some(k),
            Pick::Task(_) => None,
        })
        .collect();
    let mut trees: HashMap<Key, Vec<CallNode>> = HashMap::new();
    if !keys.is_empty() {
        let cap = tree_cap(keys.len());
        let caps = (0..readers)
            .map(|_| Capture::of_keys(&keys, false, MAX_CALLS_DEPTH, cap))
            .collect();
        trees = trees_of(log, plan, caps, progress)?.into_iter().collect();
    }
    Ok(order
        .iter()
        .filter_map(|o| match &o.2 {
            Pick::Call(k) => trees.get(k).map(|t| ctx.explain_call(k, t)),
            Pick::Task(s) => Some(ctx.explain_task(s)),
        })
        .collect())
}

/// One of the slowest: a call, or a task.
enum Pick {
    Call(Key),
    Task(TaskSpan),
}

/// The usual durations of `log` (a log, or a profile when `profile`) for `--baseline`: one pass
/// over a log; a profile is read whole.
pub(crate) fn baseline(
    log: &Log,
    readers: usize,
    progress: &dyn Report,
) -> Result<BaselineOf, CliError> {
    let name = log.name().to_string();
    if log.is_profile()? {
        let p = crate::model::profile_file::read(log)?;
        let clock = TickRate::new(p.ticks_per_second);
        let rows = function_rows(&p.merged(), &Functions::new(&p), &clock);
        let mut p50 = HashMap::new();
        for r in rows {
            p50.entry(r.function).or_insert((r.p50_ns, r.count));
        }
        return Ok(BaselineOf {
            name,
            usual: Baseline::Profile(p50),
        });
    }
    let mut shares: Vec<Gather> = (0..readers.max(1))
        .map(|_| Both(Top::tasks_only(), Tally::new(Vec::new(), 0)))
        .collect();
    let d = replay_shared(log, &mut shares, None, &Filter::none(), progress, 0)?;
    let g = Gathered::of(shares, log_end(&d.info, &d.threads))?;
    let names = Names::new(&d.info);
    let by_name = |m: HashMap<u32, Durations>| {
        let mut out: HashMap<String, Durations> = HashMap::new();
        for (id, d) in m {
            out.entry(names.function(id).into_owned())
                .or_default()
                .merge(&d);
        }
        out
    };
    Ok(BaselineOf {
        name,
        usual: Baseline::Log {
            calls: by_name(g.calls),
            tasks: by_name(g.tasks),
            clock: TickRate::new(d.info.header.cycle_frequency),
        },
    })
}

/// For `fdr info` of a log written by a trigger: its call explained, the usuals from the window,
/// in one pass over `log` (whose tables and threads `info` and `threads` are, as a pass over it
/// read them); `None` for a log no trigger wrote.
pub(crate) fn trigger_call(
    log: &Log,
    info: &LogInfo,
    threads: &[ThreadStats],
    progress: &dyn Report,
    pass: u64,
) -> Result<Option<Explanation>, CliError> {
    let Some(r) = fired(info) else {
        return Ok(None);
    };
    let names = Names::new(info);
    // A slow task is found among the tasks; a call by where it starts, its tree built in the
    // same pass (its entry is in the window, so no plan is needed to see it).
    let starting = if is_task_trigger(r, &names) {
        Starting::default()
    } else {
        trigger_start(r, threads)
    };
    let thread = starting.threads.first().copied().unwrap_or(0);
    let capture = Capture::starting(starting, MAX_CALLS_DEPTH, MAX_CALLS_UNDER_ONE);
    let mut sink = Both(Both(Top::tasks_only(), Tally::new(Vec::new(), 0)), capture);
    let d = replay(log, &mut sink, None, &Filter::none(), progress, pass)?;
    let Both(gather, capture) = sink;
    let g = Gathered::of(vec![gather], log_end(&d.info, &d.threads))?;
    let ctx = Ctx {
        names: &names,
        clock: TickRate::new(info.header.cycle_frequency),
        g: &g,
        baseline: None,
        fired: Some(r),
        threads,
    };
    Ok(Some(
        match trigger_target(r, &names, threads, &g, info.header.cycle_frequency) {
            Target::Task(s) => ctx.explain_task(&s),
            Target::Starting(_) => match longest(capture.into_trees()) {
                Some((k, t)) => ctx.explain_call(&k, &t),
                None => ctx.explain_unseen(r, thread),
            },
        },
    ))
}
