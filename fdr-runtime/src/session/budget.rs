//! The cost budget (`budget=PERCENT`): the recorder keeps its own cost under a share of the
//! process's CPU time by itself, and says where that made it blind.
//!
//! # What it counts, and where
//!
//! Nothing on the recording path. Ten times a second the background writer takes a look
//! ([`Budget::look`]): the calls erased so far (each buffer counts its rewinds), the words
//! written so far (the buffers retired, and the lengths of those owned), the erased calls each
//! function handed in (culling's counts, `FnDesc::erased`), and the process's CPU time (one
//! system call). What the recorder spent since the last look is its timed calls (an erased call,
//! or a kept one: its two words) and its records (a task event, a poll's event: each two words
//! or more, each at half the cost of a timed call, [`sample`]), at the cost of one timed call
//! [`measure_call_cost`] at start ([`IN_PROGRAM_PERCENT`] of the loop's), and the background
//! writer's own CPU time (its wake-ups, the
//! probes of culled functions, these looks); the program's time is the CPU time the process
//! spent meanwhile, the recorder's included.
//!
//! # What it does over budget
//!
//! It stops timing functions (their descriptor's `SHED` flag: their hooks skip them as a culled
//! function's are skipped) until the estimate, less what they cost, is under four fifths of the
//! budget: the functions whose calls tell the least for what they cost first, that is the most
//! erased calls since the last look (erased calls are the short ones, and leave nothing in the
//! window). Still over, the functions whose kept records cost the most in a sample of the
//! buffers being written ([`sample`]): frequent calls long enough to be kept, such as a
//! connection's wait for its next request under a timed handler, whose time stays in the
//! caller's. Only a function seen inside another timed call, never as its thread's outermost
//! (a task's root: its polls are the worker's time), and never one with a trigger or logged
//! arguments (culling never takes them either), nor one culled or being probed (it costs
//! nothing, or is being checked), nor one called fewer than [`MIN_PER_SECOND`] times a second
//! (it costs nothing worth its window). In that second pass, beside the functions, are the
//! details of an `async fn`'s polls, which it may stop where it may not stop the function: the
//! waits at each of its await sites (the site's own `SHED` flag: `record::awaits` records none
//! there) and its wake-ups (`functions::WAKES_UNNOTED`: its polls give the body the executor's
//! waker, and write no wake event). A task's root, which a budget never untimes, keeps its polls
//! timed without them; a function with a trigger or logged arguments keeps all of it. A function culling is about to take ([`culled_soon`]) is
//! left to it, and its erased calls out of what the budget acts on: they stop by themselves.
//!
//! While it is short (over at a look, or still untiming functions), the writer probes culled
//! functions ten times less often (`cull::BUSY_PROBE_FACTOR`): each probe times 64 calls of each.
//!
//! # And with room again
//!
//! An untimed function costs nothing, so what it would cost now cannot be seen: only timing it
//! again tells. Once the estimate has stayed under half the budget for a second, the function
//! stopped last is timed again, and the second starts over for the next. One stopped again
//! within two of its dwells waits twice as long before its next try (up to 64 s), so a load
//! that stays high costs a try now and then, not one every second. The two bounds (over the
//! budget to stop, under half of it to try) and the dwell are the hysteresis.
//!
//! # What the log says
//!
//! Each function stopped and timed again, with when and what it cost when stopped
//! ([`fdr_format::BudgetSpan`]), the budget, the measured cost of a call, the last and highest
//! estimate and the estimate over the whole recording ([`fdr_format::BudgetInfo`]).

use std::sync::atomic::Ordering::Relaxed;

use fdr_format::{BudgetInfo, BudgetSpan};

use crate::platform::{clock, host};
use crate::tables::flags;
use crate::tables::functions::{self, FnDesc};
use crate::FnKindTag;

/// What a poll of an `async fn` costs, in thousandths of a timed call: its entry and exit, and
/// what goes with them in a program that awaits (the poll's place on its thread's open calls,
/// for the long-poll limit, and its poll event: [`POLL_BASE_MILLI`]; the task's waker, wrapped
/// to see its wake-ups: [`WAKER_MILLI`]; the clock read at each await that waits:
/// [`AWAIT_MILLI`]). Four calls in all, fitted on mini-redis and `kv_service` with their load in
/// a process of its own (`benches/README.md`, "A task's root without its waits and wake-ups");
/// a function whose wake-ups the budget stopped noting, or whose await sites it all stopped (or
/// that has none), pays less.
pub(crate) const POLL_MILLI: u64 = POLL_BASE_MILLI + WAKER_MILLI + AWAIT_MILLI;

/// What a poll costs with none of its details, in thousandths of a timed call: a task's root
/// whose waits and wake-ups the budget stopped (`benches/README.md`, "A task's root without
/// its waits and wake-ups").
const POLL_BASE_MILLI: u64 = 3000;

/// What noting a task's wake-ups adds to each poll, in thousandths of a timed call: the waker
/// wrapped and taken in, the clock read at the wake, the wake event.
const WAKER_MILLI: u64 = 500;

/// What the clock reads at the waits of a poll add to it, in thousandths of a timed call.
const AWAIT_MILLI: u64 = 500;

/// A plain call, in thousandths of a timed call.
const CALL_MILLI: u64 = 1000;

/// The bit of a budget span's function id (and of [`Decision`]'s ids) that says the span is of
/// the function's wake-ups ([`Part::Wakes`]), not of its calls.
pub(crate) const WAKES_BIT: u32 = fdr_format::BUDGET_WAKES_BIT;

/// A process whose CPU time over a look is under `1 / IDLE_SHARE` of the look's time is idle:
/// nothing is untimed for it, and it counts as room.
const IDLE_SHARE: u64 = 100;

/// What a timed call costs in a program, in percent of what it costs in the loop that measures
/// it at start: in a program its code and the buffer's line are not always in the cache, and the
/// instrumented function saves registers around the hook. Fitted to what the estimate claims to
/// be, the recorder's own CPU time: the server's user CPU a request with the recording on, less
/// that of the same build idle, in the same round, over the process's CPU a request. On
/// mini-redis annotated whole (two sittings of 10 rounds, each and bulk, the default and nothing
/// untimed) that was 1.2 to 1.6 times the estimate made with the loop's cost alone
/// (`benches/README.md`, "The estimate against the recorder's own CPU time").
pub(crate) const IN_PROGRAM_PERCENT: u64 = 150;

/// The fewest calls a second (erased ones in the first pass, kept ones in the second) of a
/// function the budget stops timing: its calls are then frequent, and cost something (at 1,000
/// a second, about 0.1 % of a program that keeps a twentieth of a CPU busy). Untiming rarer
/// ones saves nothing and blinds the window where it is least crowded: semver's check of a
/// culled function made slow (a 1 ms call in 50, 484 calls a second) lost 406 of its 500 slow
/// calls to a budget that, over while the program mostly slept, went down its list to them.
const MIN_PER_SECOND: u64 = 1_000;

/// How often the writer looks, in milliseconds.
pub(crate) const LOOK_MS: i32 = 100;

/// The estimate a budget sheds down to, in fifths of the budget.
const TARGET_FIFTHS: u64 = 4;

/// How long the estimate stays under half the budget before a function is timed again, in
/// nanoseconds.
const QUIET_NS: u64 = 1_000_000_000;

/// The longest a function waits for its next try, in nanoseconds.
const MAX_DWELL_NS: u64 = 64 * QUIET_NS;

/// Spans the log keeps, the newest (a budget record's payload must stay within
/// `fdr_format::limits::MAX_EXT_PAYLOAD`).
pub(crate) const MAX_SPANS: usize = 2048;

/// What one look reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reading {
    /// Monotonic time, in nanoseconds.
    pub now_ns: u64,
    /// The time in the recording's ticks (what spans are dated by).
    pub now_tsc: u64,
    /// The process's CPU time, in nanoseconds.
    pub cpu_ns: u64,
    /// The background writer's own CPU time, in nanoseconds: the recorder's, all of it.
    pub writer_ns: u64,
    /// Calls erased so far, on every thread.
    pub erased: u64,
    /// Words written so far, in every buffer.
    pub words: u64,
    /// What a word written costs, in thousandths of a timed call, from the records the buffers
    /// hold now ([`sample`]).
    pub word_milli: u64,
}

/// What the budget stops of an entry of the function table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Part {
    /// A function's calls (it is untimed), or an await site's waits.
    Calls,
    /// An `async fn`'s wake-ups: its polls stay timed (`functions::WAKES_UNNOTED`).
    Wakes,
}

impl Part {
    /// The id a span and a decision give entry `index` stopped as `self`.
    fn id(self, index: usize) -> u32 {
        match self {
            Part::Calls => index as u32 + 1,
            Part::Wakes => (index as u32 + 1) | WAKES_BIT,
        }
    }
}

/// A function the budget stopped timing.
struct Shed {
    index: usize,
    part: Part,
    /// How long the estimate must stay under half the budget before it is tried again.
    dwell_ns: u64,
    /// Its span in `spans`, by number since the first.
    span: u64,
}

/// One recording's budget: its settings, its last reading, and what it did.
pub(crate) struct Budget {
    ppm: u32,
    call_cost_ps: u64,
    first: Option<Reading>,
    last: Option<Reading>,
    /// Each function's erased calls at the last look.
    seen: Vec<u64>,
    /// Each function's run of erased calls (culling's) at the last look.
    runs: Vec<u32>,
    /// Each await site's async function, by index in the table (`None` for a function).
    owners: Vec<Option<usize>>,
    /// Culling's `cull_after`: how long a run gets before culling takes its function.
    cull_after: u32,
    shed: Vec<Shed>,
    /// Functions timed again lately: (index, part, when, the dwell they had).
    tried: Vec<(usize, Part, u64, u64)>,
    quiet_ns: u64,
    /// What the erased polls of async functions cost beyond a call each, so far, in
    /// thousandths of a call.
    extra_milli: u64,
    spans: std::collections::VecDeque<BudgetSpan>,
    spans_dropped: u64,
    estimate_ppm: u32,
    peak_ppm: u32,
    overall_ppm: u32,
    looks: u64,
}

/// What one look decided.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Decision {
    /// The estimate over the look, in millionths of the CPU time.
    pub estimate_ppm: u32,
    /// Function ids stopped ([`WAKES_BIT`] set: their wake-ups).
    pub shed: Vec<u32>,
    /// Function ids timed again ([`WAKES_BIT`] set: their wake-ups).
    pub restored: Vec<u32>,
    /// Whether the budget is short: over at this look, or still untiming functions. The writer
    /// then probes culled functions less often (`cull::BUSY_PROBE_FACTOR`).
    pub short: bool,
}

impl Budget {
    /// A budget of `ppm` millionths of the process's CPU time, a timed call costing
    /// `call_cost_ps` picoseconds, beside culling that culls after `cull_after` erased calls.
    pub(crate) fn new(ppm: u32, call_cost_ps: u64, cull_after: u32) -> Budget {
        Budget {
            ppm,
            call_cost_ps: call_cost_ps.max(1),
            first: None,
            last: None,
            seen: Vec::new(),
            runs: Vec::new(),
            owners: Vec::new(),
            cull_after,
            shed: Vec::new(),
            tried: Vec::new(),
            quiet_ns: 0,
            extra_milli: 0,
            spans: std::collections::VecDeque::new(),
            spans_dropped: 0,
            estimate_ppm: 0,
            peak_ppm: 0,
            overall_ppm: 0,
            looks: 0,
        }
    }

    /// The recorder's cost between readings `a` and `b`, in millionths of the process's CPU
    /// time between them: the timed calls and records at the cost of a timed call, and the
    /// writer's own CPU time.
    fn cost_ppm(&self, a: &Reading, b: &Reading) -> u64 {
        let cpu = b.cpu_ns.saturating_sub(a.cpu_ns).max(1);
        let writer_ps = u128::from(b.writer_ns.saturating_sub(a.writer_ns)) * 1000;
        let writer = (writer_ps * 1000 / u128::from(cpu)).min(u128::from(u32::MAX)) as u64;
        self.calls_ppm(a, b).saturating_add(writer)
    }

    /// The part of [`Budget::cost_ppm`] that the calls make: what untiming functions changes.
    fn calls_ppm(&self, a: &Reading, b: &Reading) -> u64 {
        let events = b.erased.saturating_sub(a.erased)
            + b.words.saturating_sub(a.words) * b.word_milli / 1000;
        self.share_ppm(events, b.cpu_ns.saturating_sub(a.cpu_ns))
    }

    /// The cost of `events` timed calls in millionths of `cpu_ns`.
    fn share_ppm(&self, events: u64, cpu_ns: u64) -> u64 {
        let cost_ps = u128::from(events) * u128::from(self.call_cost_ps);
        // ps * 1e6 / (ns * 1000) = ps * 1000 / ns.
        (cost_ps * 1000 / u128::from(cpu_ns.max(1))).min(u128::from(u32::MAX)) as u64
    }

    /// One look at `r`, over `table` (each function is stopped and timed again through
    /// `set_shed`, which says whether it could: the recording may have stopped).
    pub(crate) fn look(
        &mut self,
        r: Reading,
        kept: &Kept,
        table: &[FnDesc],
        set_shed: &mut dyn FnMut(&FnDesc, Part, bool) -> bool,
    ) -> Decision {
        self.looks += 1;
        if self.seen.len() != table.len() {
            self.seen = table.iter().map(|f| f.erased().load(Relaxed)).collect();
            self.runs = table.iter().map(|f| f.run().load(Relaxed)).collect();
            self.owners = owners(table);
        }
        let Some(last) = self.last.replace(r) else {
            self.first = Some(r);
            return Decision::default();
        };
        let first = self.first.unwrap_or(last);
        let cpu = r.cpu_ns.saturating_sub(last.cpu_ns);
        let elapsed = r.now_ns.saturating_sub(last.now_ns).max(1);
        // Each function's erased calls since the last look; an async function's erased polls
        // cost more than a call's (see `POLL_MILLI`). Those of a function culling has taken
        // or is about to take are culling's to stop, and soon stopped: what they cost is left
        // out of what the budget acts on.
        let mut erased: Vec<(u64, usize)> = Vec::new();
        let mut extra = 0;
        let mut culling = 0;
        let poll_milli = poll_milli(table, &self.owners);
        for (i, f) in table.iter().enumerate() {
            let now = f.erased().load(Relaxed);
            let since = now.saturating_sub(self.seen[i]);
            self.seen[i] = now;
            let run = f.run().load(Relaxed);
            let before = std::mem::replace(&mut self.runs[i], run);
            let per_call = poll_milli[i];
            extra += since * (per_call - CALL_MILLI);
            if since == 0 {
                continue;
            }
            let cost = since * per_call / CALL_MILLI;
            if culled_soon(f, since, before, run, self.cull_after) {
                culling += cost;
            } else if sheddable(table, i, &self.owners) {
                erased.push((cost, i));
            }
        }
        self.extra_milli += extra;
        let mut r = r;
        r.erased += self.extra_milli / CALL_MILLI;
        self.last = Some(r);
        let estimate = self.cost_ppm(&last, &r);
        self.overall_ppm = self.cost_ppm(&first, &r) as u32;
        let mut decision = Decision {
            estimate_ppm: estimate as u32,
            ..Decision::default()
        };
        self.estimate_ppm = estimate as u32;
        self.peak_ppm = self.peak_ppm.max(estimate as u32);
        let ppm = u64::from(self.ppm);
        self.tried
            .retain(|t| r.now_ns.saturating_sub(t.2) < t.3.saturating_mul(2));
        // What the budget acts on: the calls' cost, which untiming functions changes. The
        // writer's own (its wake-ups, the probes, these looks) is in the estimate the log gives,
        // but untiming a function does not lower it; and a process that hardly runs (under a
        // hundredth of a CPU over the look) costs nothing worth untiming anything for, however
        // large a share of its little time the recorder's is.
        let calls = if cpu.saturating_mul(IDLE_SHARE) < elapsed {
            0
        } else {
            self.calls_ppm(&last, &r)
                .saturating_sub(self.share_ppm(culling, cpu))
        };
        if calls > ppm {
            self.quiet_ns = 0;
            erased.sort_unstable_by(|a, b| b.cmp(a));
            let target = ppm * TARGET_FIFTHS / 5;
            let mut left = calls;
            for (calls, i) in erased {
                if left <= target {
                    break;
                }
                let per_second = (u128::from(calls) * 1_000_000_000 / u128::from(elapsed)) as u64;
                // The rest are rarer still (sorted).
                if per_second < MIN_PER_SECOND {
                    break;
                }
                if !self.stop(
                    i,
                    Part::Calls,
                    table,
                    set_shed,
                    &r,
                    per_second,
                    &mut decision,
                ) {
                    break;
                }
                left = left.saturating_sub(self.share_ppm(calls, cpu));
            }
            // Still over: the functions whose records cost the most, in the sample of the
            // buffers being written, though their calls are kept (long enough to tell something,
            // but frequent, like a wait for the next request under a timed handler).
            if left > target {
                let words = r.words.saturating_sub(last.words);
                let n = table.len();
                let calls = (0..n)
                    .filter(|&i| sheddable(table, i, &self.owners))
                    .map(|i| (i, Part::Calls));
                let wakes = (0..n)
                    .filter(|&i| wakes_sheddable(&table[i]))
                    .map(|i| (i, Part::Wakes));
                let mut costly: Vec<(u64, u64, usize, Part)> = calls
                    .chain(wakes)
                    .filter(|&(i, part)| !self.shed.iter().any(|s| (s.index, s.part) == (i, part)))
                    .filter_map(|(i, part)| {
                        let at = if part == Part::Wakes { n + i } else { i };
                        let (cost, calls) = kept.since(at, words, r.word_milli);
                        (cost > 0).then_some((cost, calls, i, part))
                    })
                    .collect();
                costly.sort_unstable_by(|a, b| b.cmp(a));
                for (cost, calls, i, part) in costly {
                    if left <= target {
                        break;
                    }
                    let per_second =
                        (u128::from(calls) * 1_000_000_000 / u128::from(elapsed)) as u64;
                    if per_second < MIN_PER_SECOND {
                        continue;
                    }
                    if !self.stop(i, part, table, set_shed, &r, per_second, &mut decision) {
                        break;
                    }
                    left = left.saturating_sub(self.share_ppm(cost, cpu));
                }
            }
        } else if calls * 2 < ppm {
            self.quiet_ns += elapsed;
            // A function untimed costs nothing and so cannot be seen: whether it fits again is
            // only known by timing it. The last one stopped is tried once the estimate has been
            // under half the budget for its dwell; stopped again soon after, it waits twice as
            // long before its next try.
            let due = self
                .shed
                .last()
                .is_some_and(|s| self.quiet_ns >= s.dwell_ns);
            if due {
                let s = self.shed.pop().expect("looked at just above");
                if set_shed(&table[s.index], s.part, false) {
                    self.close_span(s.span, r.now_tsc);
                    self.tried.push((s.index, s.part, r.now_ns, s.dwell_ns));
                    decision.restored.push(s.part.id(s.index));
                }
                self.quiet_ns = 0;
            }
        } else {
            self.quiet_ns = 0;
        }
        decision.short = calls > ppm || !self.shed.is_empty();
        decision
    }

    /// Stops `part` of function `i` (if `set_shed` could), called `per_second` times a second
    /// when stopped; says whether it was.
    #[allow(clippy::too_many_arguments)]
    fn stop(
        &mut self,
        i: usize,
        part: Part,
        table: &[FnDesc],
        set_shed: &mut dyn FnMut(&FnDesc, Part, bool) -> bool,
        r: &Reading,
        per_second: u64,
        decision: &mut Decision,
    ) -> bool {
        if !set_shed(&table[i], part, true) {
            return false;
        }
        let span = self.open_span(part.id(i), r.now_tsc, per_second);
        // Tried again not long ago, and too costly still: it waits twice as long.
        let dwell_ns = match self.tried.iter().find(|t| (t.0, t.1) == (i, part)) {
            Some(&(_, _, at, dwell)) if r.now_ns.saturating_sub(at) < dwell * 2 => {
                (dwell * 2).min(MAX_DWELL_NS)
            }
            _ => QUIET_NS,
        };
        self.shed.push(Shed {
            index: i,
            part,
            dwell_ns,
            span,
        });
        decision.shed.push(part.id(i));
        true
    }

    /// Notes that function `id` (with [`WAKES_BIT`]: its wake-ups) stopped being timed at `tsc`;
    /// returns the span's number.
    fn open_span(&mut self, id: u32, tsc: u64, per_second: u64) -> u64 {
        if self.spans.len() == MAX_SPANS {
            self.spans.pop_front();
            self.spans_dropped += 1;
        }
        self.spans.push_back(BudgetSpan {
            function: id,
            from_tsc: tsc,
            to_tsc: None,
            calls_per_second: per_second,
        });
        self.spans_dropped + self.spans.len() as u64 - 1
    }

    /// Span number `n` ended at `tsc` (if still kept).
    fn close_span(&mut self, n: u64, tsc: u64) {
        if let Some(i) = n.checked_sub(self.spans_dropped) {
            if let Some(span) = self.spans.get_mut(i as usize) {
                span.to_tsc = Some(tsc);
            }
        }
    }

    /// What the log says of the budget.
    pub(crate) fn info(&self) -> BudgetInfo {
        BudgetInfo {
            budget_ppm: self.ppm,
            call_cost_ps: self.call_cost_ps,
            estimate_ppm: self.estimate_ppm,
            peak_ppm: self.peak_ppm,
            overall_ppm: self.overall_ppm,
            looks: self.looks,
            untimed: self.spans.iter().copied().collect(),
            spans_dropped: self.spans_dropped,
        }
    }
}

/// Whether function `f`'s `since` erased calls since the last look are culling's business: it
/// was culled meanwhile (or is being probed), or its run (`before`, now `run`) grew by at least
/// half of them and, at that rate, reaches `cull_after` within the next [`SOON_LOOKS`] looks.
/// While culling learns a function (its first `cull_after` calls, a short program's most) the
/// budget did its work for it, and worse: an untimed function is not probed, so one untimed at
/// its start that became slow later was blind until the budget tried it again, a second of
/// room later (semver's check of a culled function made slow: 94 of its 500 slow calls).
fn culled_soon(f: &FnDesc, since: u64, before: u32, run: u32, cull_after: u32) -> bool {
    if f.flags() & (flags::CULLED | flags::PROBING) != 0 {
        return true;
    }
    // A run a probe marked (past `cull_after`) comes with the `PROBING` flag, seen above; one
    // read between a probe's end and its flag's is counted as culled for one look.
    if f.flags() & flags::TRIGGER != 0 || !f.args().is_empty() {
        return false;
    }
    let grew = u64::from(run.saturating_sub(before));
    let left = u64::from(cull_after.saturating_sub(run));
    grew * 2 >= since && left <= grew.saturating_mul(SOON_LOOKS)
}

/// How many looks ahead a function's cull counts as soon ([`culled_soon`]): a second's.
const SOON_LOOKS: u64 = 10;

/// Whether the budget may stop timing entry `i` of `table`, not culled, probed or stopped
/// already, nor one with a trigger: a function, scope or `async fn` seen inside another timed
/// call and never as its thread's outermost, without logged arguments; or an await site, whose
/// waits are a detail of its function's polls (`owners`: each site's function), of an `async
/// fn` with neither a trigger nor logged arguments, however it is placed. Stopping a site stops
/// the recording of its waits and leaves its function's polls timed: what is left to stop of a
/// task's root, which is never untimed.
fn sheddable(table: &[FnDesc], i: usize, owners: &[Option<usize>]) -> bool {
    let f = &table[i];
    let untouchable = flags::TRIGGER | flags::CULLED | flags::PROBING | flags::SHED | flags::OFF;
    if f.flags() & untouchable != 0 {
        return false;
    }
    match f.kind() {
        FnKindTag::Function | FnKindTag::Scope | FnKindTag::Async => {
            f.args().is_empty() && f.placement() == functions::INSIDE
        }
        FnKindTag::Await => owners
            .get(i)
            .copied()
            .flatten()
            .and_then(|o| table.get(o))
            .is_some_and(|g| g.flags() & flags::TRIGGER == 0 && g.args().is_empty()),
    }
}

/// Whether the budget may stop noting the wake-ups of entry `f`: an `async fn` timed, not culled
/// or probed, without a trigger or logged arguments, whose wake-ups are noted. Its polls stay
/// timed, wherever they are: what is left to stop of a task's root once its waits are.
fn wakes_sheddable(f: &FnDesc) -> bool {
    let untouchable = flags::TRIGGER | flags::CULLED | flags::PROBING | flags::SHED | flags::OFF;
    f.kind() == FnKindTag::Async
        && f.flags() & untouchable == 0
        && f.args().is_empty()
        && f.details() & functions::WAKES_UNNOTED == 0
}

/// What a call of each entry of `table` costs, in thousandths of a timed call: [`CALL_MILLI`]
/// for a function's, and for an `async fn`'s poll [`POLL_BASE_MILLI`] plus [`WAKER_MILLI`]
/// while its wake-ups are noted plus [`AWAIT_MILLI`] while one of its await sites (`owners`)
/// is timed.
fn poll_milli(table: &[FnDesc], owners: &[Option<usize>]) -> Vec<u64> {
    let mut waits = vec![false; table.len()];
    for (site, owner) in owners.iter().enumerate() {
        if let Some(&o) = owner.as_ref() {
            if table[site].flags() & flags::SHED == 0 {
                waits[o] = true;
            }
        }
    }
    table
        .iter()
        .zip(waits)
        .map(|(f, waits)| {
            if f.kind() != FnKindTag::Async {
                return CALL_MILLI;
            }
            let wakes = f.details() & functions::WAKES_UNNOTED == 0;
            POLL_BASE_MILLI + u64::from(wakes) * WAKER_MILLI + u64::from(waits) * AWAIT_MILLI
        })
        .collect()
}

/// Each await site's `async fn` in `table`, by index: the function of the same name in the
/// same file (the expansion names a site after its function).
fn owners(table: &[FnDesc]) -> Vec<Option<usize>> {
    let mut by_name = std::collections::HashMap::new();
    for (i, f) in table.iter().enumerate() {
        if f.kind() == FnKindTag::Async {
            by_name.entry((f.name(), f.file())).or_insert(i);
        }
    }
    table
        .iter()
        .map(|f| {
            (f.kind() == FnKindTag::Await)
                .then(|| by_name.get(&(f.name(), f.file())).copied())
                .flatten()
        })
        .collect()
}

/// How many buffers [`sample`] reads at most, the ones owned now (a thread's current one).
const SAMPLED_BUFFERS: usize = 16;

/// What a word the buffers hold costs, in thousandths of a timed call, from the records of up to
/// [`SAMPLED_BUFFERS`] buffers being written now: a kept call is two words and costs one timed
/// call (its two clock readings and stores); an event (a task's creation or end, a poll's event,
/// a wait at an await site, a wake-up: two to five words) half of one, as it reads the clock
/// once or not at all; any other metadata record (a CPU change, an argument) a quarter. 500 (a
/// kept call's) when nothing is there to read. With it, which functions those records are of
/// ([`Kept`]). A function it finds entered inside another call is noted as having a timed
/// caller ([`FnDesc::note_placement`]).
pub(crate) fn sample(pool: &crate::buffers::pool::Pool, table: &[FnDesc]) -> (u64, Kept) {
    use crate::buffers::published::OWNED;
    let mut mix = Mix {
        poll_milli: poll_milli(table, &owners(table)),
        ..Mix::default()
    };
    let mut read = Vec::new();
    for (i, slot) in pool.slots().iter().enumerate() {
        if mix.buffers == SAMPLED_BUFFERS {
            break;
        }
        if slot.state.load(std::sync::atomic::Ordering::Acquire) != OWNED {
            continue;
        }
        let stable = slot.stable.load(std::sync::atomic::Ordering::Acquire) as usize;
        let words = pool.buffer(i as u32);
        read.clear();
        read.extend(
            words[..stable.min(words.len())]
                .iter()
                .map(|w| w.load(Relaxed)),
        );
        // A buffer another owner took meanwhile reads as nonsense here and there: the walk
        // stops at a record it cannot make sense of, and the sample is a sample.
        mix.walk(&read, table);
    }
    (mix.word_milli(), mix.kept)
}

/// Which functions a sample's records are of: a function's calls and polls, its tasks'
/// creations and ends, and an await site's waits, by the entry's index in the table; an `async
/// fn`'s wake events at its index plus the table's length.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Kept {
    /// Each function's records, in thousandths of a timed call (as [`Mix::word_milli`] weighs
    /// them).
    milli: Vec<u64>,
    /// Each function's call records (two words a call kept).
    call_words: Vec<u64>,
    /// The whole sample's words, and their cost in thousandths of a call.
    words: u64,
    total_milli: u64,
}

impl Kept {
    fn add(&mut self, index: usize, len: usize, milli: u64, call_words: u64) {
        if index >= len {
            return;
        }
        if self.milli.len() < len {
            self.milli.resize(len, 0);
            self.call_words.resize(len, 0);
        }
        self.milli[index] += milli;
        self.call_words[index] += call_words;
    }

    /// What function `index`'s records cost over an interval in which `words` words were
    /// written at `word_milli` thousandths of a call each, in timed calls, and how many calls
    /// of it they kept: its share of the sample, scaled to the interval.
    fn since(&self, index: usize, words: u64, word_milli: u64) -> (u64, u64) {
        let (Some(&milli), Some(&calls)) = (self.milli.get(index), self.call_words.get(index))
        else {
            return (0, 0);
        };
        if self.total_milli == 0 || self.words == 0 {
            return (0, 0);
        }
        let interval = u128::from(words) * u128::from(word_milli) / 1000;
        let cost = interval * u128::from(milli) / u128::from(self.total_milli);
        let calls = u128::from(calls / 2) * u128::from(words) / u128::from(self.words);
        (cost as u64, calls as u64)
    }
}

/// Records of a sample of buffers, by kind.
#[derive(Default, Debug, PartialEq, Eq)]
struct Mix {
    /// What a call of each entry costs, in thousandths of a call ([`poll_milli`]);
    /// [`POLL_MILLI`] for an `async fn` past its end.
    poll_milli: Vec<u64>,
    buffers: usize,
    function_words: u64,
    /// Of those, the polls' of async functions.
    poll_words: u64,
    events: u64,
    metadata: u64,
    words: u64,
    kept: Kept,
}

/// A kept call's word, an event and a metadata record, in thousandths of a timed call.
const CALL_WORD_MILLI: u64 = 500;
const EVENT_MILLI: u64 = 500;
const METADATA_MILLI: u64 = 250;

impl Mix {
    /// Counts the records of one block's words, from after its preamble.
    fn walk(&mut self, words: &[u64], table: &[FnDesc]) {
        use fdr_format::reader::{meta_head, MetaHead};
        let pre = fdr_format::BLOCK_PREAMBLE_WORDS as usize;
        if words.len() <= pre {
            return;
        }
        self.buffers += 1;
        // Calls open in the block so far: an entry after another's is a call with a timed
        // caller, the only place where a function whose calls are all kept (none erased, none
        // counted by culling) is seen to have one, which makes it one the budget may stop.
        let mut open = 0u32;
        let mut i = pre;
        while i < words.len() {
            let w = words[i];
            if !fdr_format::is_metadata(w) {
                self.function_words += 1;
                let decoded = fdr_format::decode_function_record(w);
                let index = decoded.map_or(0, |(id, _, _)| id as usize).wrapping_sub(1);
                match decoded {
                    Some((_, kind, _)) if kind.is_entry() => {
                        if open > 0 {
                            if let Some(f) = table.get(index) {
                                f.note_placement(false);
                            }
                        }
                        open += 1;
                    }
                    Some(_) => open = open.saturating_sub(1),
                    None => {}
                }
                let poll = table
                    .get(index)
                    .is_some_and(|f| f.kind() == FnKindTag::Async);
                let milli = if poll {
                    self.poll_words += 1;
                    let per = self.poll_milli.get(index).copied().unwrap_or(POLL_MILLI);
                    CALL_WORD_MILLI * per / CALL_MILLI
                } else {
                    CALL_WORD_MILLI
                };
                self.kept.add(index, 2 * table.len(), milli, 1);
                self.kept.total_milli += milli;
                i += 1;
                continue;
            }
            let rec = [w, words.get(i + 1).copied().unwrap_or(0)];
            let step = match meta_head(rec) {
                Some(MetaHead::Event { size, .. }) if (0..=4096).contains(&size) => {
                    self.events += 1;
                    self.kept.total_milli += EVENT_MILLI;
                    // A task's creation or end is its function's; a wait is its await site's,
                    // counted as one call of it (two words), as the budget may stop a site.
                    if size as usize == fdr_format::TASK_PAYLOAD_SIZE && i + 3 < words.len() {
                        let mut payload = [0u8; 16];
                        payload[..8].copy_from_slice(&words[i + 2].to_le_bytes());
                        payload[8..].copy_from_slice(&words[i + 3].to_le_bytes());
                        if let Some((_, id, _)) = fdr_format::decode_task_event(&payload) {
                            let index = (id as usize).wrapping_sub(1);
                            self.kept.add(index, 2 * table.len(), EVENT_MILLI, 0);
                        }
                    } else if size as usize == fdr_format::AWAIT_PAYLOAD_SIZE && i + 5 < words.len()
                    {
                        // A wake event is as long: its function's wake-ups', at the function's
                        // index plus the table's length.
                        let mut payload = [0u8; fdr_format::AWAIT_PAYLOAD_SIZE];
                        for (k, w) in words[i + 2..i + 6].iter().enumerate() {
                            payload[k * 8..k * 8 + 8].copy_from_slice(&w.to_le_bytes());
                        }
                        let n = table.len();
                        if let Some(wait) = fdr_format::decode_await_event(&payload) {
                            let index = (wait.site as usize).wrapping_sub(1);
                            self.kept.add(index, 2 * n, EVENT_MILLI, 2);
                        } else if let Some(wake) = fdr_format::decode_wake_event(&payload) {
                            if let Some(index) = (wake.function as usize).checked_sub(1) {
                                self.kept.add(n + index, 2 * n, EVENT_MILLI, 2);
                            }
                        }
                    }
                    2 + (size as usize).div_ceil(8)
                }
                Some(MetaHead::Record(_)) => {
                    self.metadata += 1;
                    self.kept.total_milli += METADATA_MILLI;
                    2
                }
                _ => break,
            };
            i += step;
        }
        let walked = (i.min(words.len()) - pre) as u64;
        self.words += walked;
        self.kept.words += walked;
    }

    /// The cost of a word of the sample, in thousandths of a timed call: the records' cost as
    /// `walk` weighed them, over their words.
    fn word_milli(&self) -> u64 {
        if self.words == 0 {
            return CALL_WORD_MILLI;
        }
        self.kept.total_milli / self.words
    }
}

/// What one timed call costs on this machine, in picoseconds: two readings of the recording's
/// clock and a record's store, timed over a loop at start (the best of a few rounds, as the
/// cost on a warm path).
pub(crate) fn measure_call_cost(now: impl Fn() -> u64) -> u64 {
    const CALLS: u32 = 4096;
    let mut sink = [0u64; 64];
    let mut best = u64::MAX;
    for _ in 0..5 {
        let start = std::time::Instant::now();
        for i in 0..CALLS {
            let a = now();
            let b = now();
            sink[i as usize % 64] = std::hint::black_box(b.wrapping_sub(a));
        }
        let ps = start.elapsed().as_nanos() as u64 * 1000 / u64::from(CALLS);
        best = best.min(ps);
    }
    std::hint::black_box(&sink);
    best.max(1)
}

impl super::Session {
    /// Whether this recording keeps a cost budget: one was set, and culling runs (the budget
    /// weighs functions by culling's counts).
    pub(crate) fn budget_on(&self) -> bool {
        self.setup().config.budget_ppm.is_some() && self.culling()
    }

    /// One look of the budget (the writer's, ten times a second; a test's by hand): `None` when
    /// the recording keeps none.
    pub(crate) fn budget_look(&self) -> Option<Decision> {
        let ppm = self
            .setup()
            .config
            .budget_ppm
            .filter(|_| self.budget_on())?;
        let mut guard = self.budget.lock().unwrap_or_else(|e| e.into_inner());
        let budget = guard.get_or_insert_with(|| {
            let cost = if crate::seams::injected::on() {
                crate::seams::injected::call_cost_ps()
            } else {
                measure_call_cost(|| clock::now().0) * IN_PROGRAM_PERCENT / 100
            };
            Budget::new(ppm, cost, self.setup().config.get_cull_after())
        });
        let (word_milli, kept) = sample(self.pool(), functions::table());
        let now_tsc = clock::now().0;
        let hz = u128::from(self.setup().calibration.ticks_per_second.max(1));
        let reading = Reading {
            now_ns: (u128::from(now_tsc) * 1_000_000_000 / hz) as u64,
            now_tsc,
            cpu_ns: host::process_cpu_ns(),
            writer_ns: host::thread_cpu_ns(),
            erased: self.pool().erased_total(),
            words: self.pool().words_written(),
            word_milli,
        };
        let epoch = self.setup().epoch;
        Some(budget.look(
            reading,
            &kept,
            functions::table(),
            &mut |f, part, on| match part {
                Part::Calls => flags::shed(epoch, f, on, super::epoch),
                Part::Wakes => flags::unnote_wakes(epoch, f, on, super::epoch),
            },
        ))
    }

    /// What the log says of the budget, if the recording keeps one and it looked once.
    pub(crate) fn budget_info(&self) -> Option<BudgetInfo> {
        let guard = self.budget.lock().unwrap_or_else(|e| e.into_inner());
        guard.as_ref().map(Budget::info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(n: usize) -> Vec<FnDesc> {
        (0..n)
            .map(|_| {
                let f = FnDesc::new("t::f", "t.rs", 1, FnKindTag::Function, &[]);
                f.note_placement(false);
                f
            })
            .collect()
    }

    fn reading(s: u64, cpu_ms: u64, erased: u64) -> Reading {
        Reading {
            now_ns: s * 100_000_000,
            now_tsc: s,
            cpu_ns: cpu_ms * 1_000_000,
            writer_ns: 0,
            erased,
            words: 0,
            word_milli: 500,
        }
    }

    #[test]
    fn a_word_costs_by_the_record_it_belongs_to() {
        use fdr_format::{function_record, meta, FnKind};
        let mut words: Vec<u64> = vec![0; fdr_format::BLOCK_PREAMBLE_WORDS as usize];
        // Two kept calls (four words), a CPU change (two), an event of 16 bytes (four).
        for _ in 0..2 {
            words.push(function_record(1, FnKind::Enter, 1));
            words.push(function_record(1, FnKind::Exit, 1));
        }
        words.extend(meta::new_cpu_id(1, 5));
        words.extend(meta::custom_event(16, 0));
        words.extend([7, 7]);
        let mut mix = Mix::default();
        mix.walk(&words, &[]);
        assert_eq!(
            mix,
            Mix {
                poll_milli: vec![],
                buffers: 1,
                function_words: 4,
                poll_words: 0,
                events: 1,
                metadata: 1,
                words: 10,
                kept: Kept {
                    milli: vec![],
                    call_words: vec![],
                    words: 10,
                    total_milli: 4 * 500 + 500 + 250
                },
            }
        );
        // (4 * 500 + 500 + 250) / 10 words.
        assert_eq!(mix.word_milli(), 275);
        // Function 1 an async one: its two polls cost POLL_MILLI each.
        let table = [FnDesc::new("t::a", "t.rs", 1, FnKindTag::Async, &[])];
        let mut mix = Mix::default();
        mix.walk(&words, &table);
        assert_eq!(mix.poll_words, 4);
        assert_eq!(
            mix.word_milli(),
            (4 * 500 * POLL_MILLI / 1000 + 500 + 250) / 10
        );
        assert_eq!(Mix::default().word_milli(), 500);
    }

    #[test]
    fn a_function_entered_inside_another_in_the_sample_has_a_timed_caller() {
        use fdr_format::{function_record, FnKind};
        let t: Vec<FnDesc> = (0..4)
            .map(|_| FnDesc::new("t::f", "t.rs", 1, FnKindTag::Function, &[]))
            .collect();
        let mut words: Vec<u64> = vec![0; fdr_format::BLOCK_PREAMBLE_WORDS as usize];
        // The block opens inside a call of 4 begun in an earlier one: its exit closes nothing
        // seen here. Then 1 around two kept calls of 2, then 3 alone, its arguments' records
        // between.
        words.push(function_record(4, FnKind::Exit, 9));
        words.push(function_record(1, FnKind::Enter, 1));
        for _ in 0..2 {
            words.push(function_record(2, FnKind::Enter, 1));
            words.push(function_record(2, FnKind::Exit, 1));
        }
        words.push(function_record(1, FnKind::Exit, 1));
        words.push(function_record(3, FnKind::EnterArgs, 1));
        words.extend(fdr_format::meta::call_argument(5));
        words.push(function_record(3, FnKind::Exit, 1));
        Mix::default().walk(&words, &t);
        let placement: Vec<u8> = t.iter().map(FnDesc::placement).collect();
        assert_eq!(placement, vec![0, functions::INSIDE, 0, 0]);
        assert!(sheddable(&t, 1, &owners(&t)));
        assert!(!sheddable(&t, 0, &owners(&t)));
    }

    #[test]
    fn what_culling_is_about_to_take_is_left_to_it() {
        // 1 % of CPU, 10 ns a call, culling after 200,000 erased calls: 100 ms of CPU a look
        // pays for 100,000 calls.
        let mut b = Budget::new(10_000, 10_000, 200_000);
        let t = table(4);
        let mut set = |_: &FnDesc, _: Part, _: bool| true;
        b.look(reading(0, 0, 0), &Kept::default(), &t, &mut set);
        // 300,000 erased calls in 100 ms of CPU, 3 %: 150,000 of function 1, culled meanwhile;
        // 100,000 of function 2, whose run grew by as many (culled within the next look at that
        // rate); 50,000 of function 3, whose kept calls keep its run at 0; and 40 of function 4,
        // whose run grew by as many but is far from the cull at that rate.
        t[0].erased().store(150_000, Relaxed);
        t[0].set_flags(flags::CULLED);
        t[1].erased().store(100_000, Relaxed);
        t[1].run().store(100_000, Relaxed);
        t[2].erased().store(50_000, Relaxed);
        t[3].erased().store(40, Relaxed);
        t[3].run().store(40, Relaxed);
        let d = b.look(reading(1, 100, 300_000), &Kept::default(), &t, &mut set);
        // The log's estimate is all of it; what the budget acts on, 0.5 %, is under 1 %.
        assert_eq!(d.estimate_ppm, 30_000);
        assert!(d.shed.is_empty(), "{:?}", d.shed);
        assert!(!d.short);
        // Then 300,000 calls of functions 3 and 4, whose kept calls keep culling off them: over
        // the budget, both go, the one with more first.
        t[2].erased().store(250_000, Relaxed);
        t[3].erased().store(100_040, Relaxed);
        let d = b.look(reading(2, 200, 600_000), &Kept::default(), &t, &mut set);
        assert_eq!(d.shed, vec![3, 4]);
    }

    #[test]
    fn over_budget_the_most_erased_function_goes_first_and_comes_back_after_a_quiet_second() {
        // 1 % of CPU, 10 ns a call: 100 ms of CPU a look pays for 100,000 calls.
        let mut b = Budget::new(10_000, 10_000, u32::MAX);
        let t = table(3);
        let flagged: Vec<std::cell::Cell<bool>> = (0..3).map(|_| Default::default()).collect();
        let mut set = |f: &FnDesc, _: Part, on: bool| {
            let i = t.iter().position(|g| std::ptr::eq(g, f)).unwrap();
            flagged[i].set(on);
            true
        };
        assert_eq!(
            b.look(reading(0, 0, 0), &Kept::default(), &t, &mut set)
                .estimate_ppm,
            0
        );
        // 300,000 calls in 100 ms of CPU: 3 %. Function 2 made 250,000, 1 made 40,000.
        t[1].erased().store(250_000, Relaxed);
        t[0].erased().store(40_000, Relaxed);
        let d = b.look(reading(1, 100, 300_000), &Kept::default(), &t, &mut set);
        assert_eq!(d.estimate_ppm, 30_000);
        // Stopping function 2 leaves 0.5 %: under 0.8 %, so function 1 stays.
        assert_eq!(d.shed, vec![2]);
        assert!(d.short);
        // Quiet: 0.02 % for nine looks is not yet a second.
        let mut erased = 300_000;
        for s in 2..11 {
            erased += 2_000;
            let d = b.look(reading(s, 100 * s, erased), &Kept::default(), &t, &mut set);
            assert_eq!((d.shed.len(), d.restored.len()), (0, 0), "look {s}");
        }
        // The tenth quiet look: function 2 is tried again.
        erased += 2_000;
        let d = b.look(reading(11, 1100, erased), &Kept::default(), &t, &mut set);
        assert_eq!(d.restored, vec![2]);
        assert!(!flagged[1].get());
        // Still as costly: stopped again at once, and it now waits two seconds.
        erased += 250_000;
        t[1].erased().store(500_000, Relaxed);
        let d = b.look(reading(12, 1200, erased), &Kept::default(), &t, &mut set);
        assert_eq!(d.shed, vec![2]);
        assert!(flagged[1].get());
        for s in 13..32 {
            erased += 1_000;
            let d = b.look(reading(s, 100 * s, erased), &Kept::default(), &t, &mut set);
            assert!(d.restored.is_empty(), "look {s}");
        }
        erased += 1_000;
        let d = b.look(reading(32, 3200, erased), &Kept::default(), &t, &mut set);
        assert_eq!(d.restored, vec![2]);
        // Nothing untimed and under budget: the probes go back to their period.
        assert!(!d.short);
        let info = b.info();
        assert_eq!(info.untimed.len(), 2);
        assert_eq!(info.untimed[0].function, 2);
        assert_eq!(
            (info.untimed[0].from_tsc, info.untimed[0].to_tsc),
            (1, Some(11))
        );
        assert_eq!(info.untimed[0].calls_per_second, 2_500_000);
        assert_eq!(
            (info.untimed[1].from_tsc, info.untimed[1].to_tsc),
            (12, Some(32))
        );
        assert_eq!(info.peak_ppm, 30_000);
    }

    #[test]
    fn still_over_the_function_whose_kept_records_cost_most_goes_next() {
        use fdr_format::{function_record, task_payload, FnKind, TaskKind};
        // 0: erased calls; 1: kept calls; 2: an async function's kept polls and tasks; 3: the
        // outermost (kept too, never stopped).
        let t = [
            FnDesc::new("t::erased", "t.rs", 1, FnKindTag::Function, &[]),
            FnDesc::new("t::kept", "t.rs", 1, FnKindTag::Function, &[]),
            FnDesc::new("t::wait", "t.rs", 1, FnKindTag::Async, &[]),
            FnDesc::new("t::root", "t.rs", 1, FnKindTag::Async, &[]),
        ];
        for f in &t[..3] {
            f.note_placement(false);
        }
        t[3].note_placement(true);
        // A buffer: for each request, one call of 1 (two words), a task of 2 (created, a poll,
        // completed: two words and two events of four) and a poll of 3.
        let mut words: Vec<u64> = vec![0; fdr_format::BLOCK_PREAMBLE_WORDS as usize];
        for _ in 0..10 {
            words.push(function_record(4, FnKind::Enter, 1));
            words.push(function_record(2, FnKind::Enter, 1));
            words.push(function_record(2, FnKind::Exit, 1));
            for kind in [TaskKind::Created, TaskKind::Completed] {
                words.extend(fdr_format::meta::custom_event(16, 0));
                words.extend(task_payload(kind, 3, 9));
                if kind == TaskKind::Created {
                    words.push(function_record(3, FnKind::Enter, 1));
                    words.push(function_record(3, FnKind::Exit, 1));
                }
            }
            words.push(function_record(4, FnKind::Exit, 1));
        }
        let mut mix = Mix::default();
        mix.walk(&words, &t);
        // Per request: root's poll 2 * 2000 (POLL_MILLI, a word half of it), kept's call
        // 2 * 500, wait's poll 2 * 2000 and its two events 2 * 500; 14 words.
        // (The second four: each function's wake events, none here.)
        assert_eq!(mix.kept.milli, vec![0, 10_000, 50_000, 40_000, 0, 0, 0, 0]);
        assert_eq!(mix.kept.call_words, vec![0, 20, 20, 20, 0, 0, 0, 0]);
        assert_eq!((mix.kept.words, mix.kept.total_milli), (140, 100_000));
        let word_milli = mix.word_milli();
        let kept = mix.kept;

        let mut b = Budget::new(10_000, 10_000, u32::MAX);
        let mut set = |_: &FnDesc, _: Part, _: bool| true;
        b.look(reading(0, 0, 0), &kept, &t, &mut set);
        // 100 ms of CPU: 100,000 calls are 1 %. 20,000 erased calls of 0, and 1,400,000 words
        // (100,000 requests) at 714 thousandths of a call each (100,000 / 140, rounded down):
        // 999,600 calls' worth, 10 %.
        t[0].erased().store(20_000, Relaxed);
        let mut r = reading(1, 100, 20_000);
        r.words = 1_400_000;
        r.word_milli = word_milli;
        let d = b.look(r, &kept, &t, &mut set);
        assert_eq!(d.estimate_ppm, 101_960);
        // The erased one first (0.2 %), then the async wait (5 %, leaving 5 %) and the kept
        // call (1 %, leaving 4 %); never the root, however costly.
        assert_eq!(d.shed, vec![1, 3, 2]);
        let info = b.info();
        let per_second: Vec<u64> = info.untimed.iter().map(|s| s.calls_per_second).collect();
        // 100,000 calls of each in a tenth of a second.
        assert_eq!(per_second, vec![200_000, 1_000_000, 1_000_000]);
    }

    #[test]
    fn rare_kept_calls_stay_timed_however_over_the_budget() {
        use fdr_format::{function_record, FnKind};
        let t = table(2);
        // A buffer of kept calls of function 1 and 2, one each a request.
        let mut words: Vec<u64> = vec![0; fdr_format::BLOCK_PREAMBLE_WORDS as usize];
        for _ in 0..10 {
            for id in [1, 2] {
                words.push(function_record(id, FnKind::Enter, 1));
                words.push(function_record(id, FnKind::Exit, 1));
            }
        }
        let mut mix = Mix::default();
        mix.walk(&words, &t);
        let word_milli = mix.word_milli();
        let kept = mix.kept;
        // 1 µs a timed call, a process that ran 2 ms of its 100: 1 % is 20 calls.
        let mut b = Budget::new(10_000, 1_000_000, u32::MAX);
        let mut set = |_: &FnDesc, _: Part, _: bool| true;
        b.look(reading(0, 0, 0), &kept, &t, &mut set);
        // 90 requests (360 words): 90 kept calls of each, 900 a second; 180 calls' worth, 9 %.
        let mut r = reading(1, 2, 0);
        r.words = 360;
        r.word_milli = word_milli;
        let d = b.look(r, &kept, &t, &mut set);
        assert_eq!(d.estimate_ppm, 90_000);
        assert!(d.shed.is_empty() && d.short, "{d:?}");
        // 110 requests a look, 1,100 kept calls a second of each: they go.
        let mut r = reading(2, 4, 0);
        r.words = 800;
        r.word_milli = word_milli;
        let d = b.look(r, &kept, &t, &mut set);
        assert_eq!(d.shed.len(), 2, "{d:?}");
    }

    #[test]
    fn a_roots_waits_and_wake_ups_are_what_is_left_to_stop() {
        use fdr_format::{await_payload, function_record, wake_payload, AwaitEvent, FnKind};
        use fdr_format::{WakeEvent, AWAIT_PAYLOAD_SIZE};
        // 1: a task's root (outermost: its polls are never stopped); 2: its await site; 3: a
        // site of another function of the same name elsewhere, which is not its.
        let t = [
            FnDesc::new("t::root", "t.rs", 1, FnKindTag::Async, &[]),
            FnDesc::new("t::root", "t.rs", 3, FnKindTag::Await, &[]).at_column(9),
            FnDesc::new("t::root", "u.rs", 3, FnKindTag::Await, &[]).at_column(9),
        ];
        t[0].note_placement(true);
        let owners = owners(&t);
        assert_eq!(owners, vec![None, Some(0), None]);
        // Each request: the root's poll, the wake-up that asked for it and the wait it passed.
        let mut words: Vec<u64> = vec![0; fdr_format::BLOCK_PREAMBLE_WORDS as usize];
        for _ in 0..10 {
            words.push(function_record(1, FnKind::Enter, 1));
            let wake = WakeEvent {
                function: 1,
                woken_at: 5,
                waker_tid: 7,
            };
            words.extend(fdr_format::meta::custom_event(AWAIT_PAYLOAD_SIZE as i32, 0));
            words.extend(wake_payload(wake));
            let wait = AwaitEvent {
                site: 2,
                function: 1,
                waited: 300,
                polls: 1,
                dropped: false,
            };
            words.extend(fdr_format::meta::custom_event(AWAIT_PAYLOAD_SIZE as i32, 0));
            words.extend(await_payload(wait));
            words.push(function_record(1, FnKind::Exit, 1));
        }
        let sample = |t: &[FnDesc]| {
            let mut mix = Mix {
                poll_milli: poll_milli(t, &owners),
                ..Mix::default()
            };
            mix.walk(&words, t);
            mix
        };
        let mix = sample(&t);
        // The root's poll (its wake-ups noted, a wait timed): POLL_MILLI; the wait, the
        // site's; the wake-up, at the root's index past the table.
        assert_eq!(mix.kept.milli, vec![40_000, 5_000, 0, 5_000, 0, 0]);
        assert_eq!(mix.kept.call_words, vec![20, 20, 0, 20, 0, 0]);
        let mut b = Budget::new(10_000, 10_000, u32::MAX);
        let set_to = std::cell::RefCell::new(Vec::new());
        let mut set = |f: &FnDesc, part: Part, on: bool| {
            let i = t.iter().position(|g| std::ptr::eq(g, f)).unwrap();
            match part {
                Part::Calls => {
                    if on {
                        f.add_flags(flags::SHED);
                    } else {
                        f.clear_flags(flags::SHED);
                    }
                }
                Part::Wakes => f.set_details(functions::WAKES_UNNOTED, on),
            }
            set_to.borrow_mut().push((i, part, on));
            true
        };
        let word_milli = mix.word_milli();
        b.look(reading(0, 0, 0), &mix.kept, &t, &mut set);
        // 100,000 requests (14 words: a poll, a wake-up and a wait, 5 calls' worth) in 100 ms
        // of CPU: 5 % (4.998: a word's cost is rounded down to 357 thousandths).
        let mut r = reading(1, 100, 0);
        r.words = 1_400_000;
        r.word_milli = word_milli;
        let d = b.look(r, &mix.kept, &t, &mut set);
        assert_eq!(d.estimate_ppm, 49_980);
        // The wait and the wake-ups (the same cost: the higher index first), never the root.
        assert_eq!(d.shed, vec![2, 1 | WAKES_BIT]);
        assert_eq!(
            *set_to.borrow(),
            vec![(1, Part::Calls, true), (0, Part::Wakes, true)]
        );
        // Its polls now cost what a poll without its details does.
        assert_eq!(poll_milli(&t, &owners), vec![POLL_BASE_MILLI, 1000, 1000]);
        let mix = sample(&t);
        assert_eq!(mix.kept.milli[0], 10 * POLL_BASE_MILLI);
        // The wake-ups are restored first after a quiet second, then the wait.
        let mut restored = Vec::new();
        for s in 2..30 {
            let d = b.look(reading(s, 100 * s, 0), &Kept::default(), &t, &mut set);
            restored.extend(d.restored);
        }
        assert_eq!(restored, vec![1 | WAKES_BIT, 2]);
        assert_eq!(t[0].details(), 0);
        assert_eq!(t[1].flags() & flags::SHED, 0);
    }

    #[test]
    fn an_outermost_function_and_one_never_seen_inside_another_stay_timed() {
        let mut b = Budget::new(10_000, 10_000, u32::MAX);
        // 0: seen inside and outermost (a task's root, awaited elsewhere); 1: never seen
        // inside a timed call; 2: inside only.
        let t = [
            FnDesc::new("t::a", "t.rs", 1, FnKindTag::Async, &[]),
            FnDesc::new("t::g", "t.rs", 1, FnKindTag::Function, &[]),
            FnDesc::new("t::c", "t.rs", 1, FnKindTag::Async, &[]),
        ];
        t[0].note_placement(true);
        t[0].note_placement(false);
        t[2].note_placement(false);
        let mut set = |_: &FnDesc, _: Part, _: bool| true;
        b.look(reading(0, 0, 0), &Kept::default(), &t, &mut set);
        for f in &t {
            f.erased().store(100_000, Relaxed);
        }
        let d = b.look(reading(1, 100, 300_000), &Kept::default(), &t, &mut set);
        assert_eq!(d.shed, vec![3]);
    }

    #[test]
    fn a_program_under_budget_is_left_alone() {
        let mut b = Budget::new(10_000, 10_000, u32::MAX);
        let t = table(2);
        let mut set = |_: &FnDesc, _: Part, _: bool| -> bool { panic!("nothing to stop") };
        b.look(reading(0, 0, 0), &Kept::default(), &t, &mut set);
        for s in 1..30 {
            t[0].erased().store(s * 50_000, Relaxed);
            let d = b.look(
                reading(s, 100 * s, s * 50_000),
                &Kept::default(),
                &t,
                &mut set,
            );
            assert_eq!(d.estimate_ppm, 5_000);
        }
        assert!(b.info().untimed.is_empty());
    }

    #[test]
    fn spans_past_the_bound_drop_the_oldest_and_are_counted() {
        let mut b = Budget::new(10_000, 10_000, u32::MAX);
        for i in 0..MAX_SPANS as u64 + 3 {
            let n = b.open_span(1, i, 0);
            b.close_span(n, i + 1);
        }
        let info = b.info();
        assert_eq!(info.untimed.len(), MAX_SPANS);
        assert_eq!(info.spans_dropped, 3);
        assert_eq!(info.untimed[0].from_tsc, 3);
        assert_eq!(
            info.untimed.last().unwrap().to_tsc,
            Some(MAX_SPANS as u64 + 3)
        );
    }
}
