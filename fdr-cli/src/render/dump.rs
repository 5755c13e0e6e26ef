//! The `fdr dump` lines: one per record, with its offset, the running timestamp and the
//! function's name once the log's table has named it.

use std::collections::HashMap;
use std::io::Write;

use fdr_format::reader::Record;
use fdr_format::verify::Backwards;
use fdr_format::{Extension, FileHeader, FnKind};

use crate::commands::dump::Dumper;
use crate::escape::shown;

/// Writes the lines of a dump, keeping what a line needs from the records before it.
pub(crate) struct Printer<'a> {
    out: std::io::BufWriter<&'a mut dyn Write>,
    /// The running timestamp, as the records set and advance it.
    tsc: u64,
    /// Function names from the table records seen so far.
    names: HashMap<u32, String>,
}

impl<'a> Printer<'a> {
    /// A printer writing to `out`.
    pub(crate) fn new(out: &'a mut dyn Write) -> Printer<'a> {
        Printer {
            out: std::io::BufWriter::new(out),
            tsc: 0,
            names: HashMap::new(),
        }
    }
}

impl Dumper for Printer<'_> {
    /// The file header's line.
    fn header(&mut self, h: &FileHeader) -> std::io::Result<()> {
        writeln!(
            self.out,
            "header: version {} type {} constant_tsc {} nonstop_tsc {} frequency {} buffer_size {}",
            h.version, h.log_type, h.constant_tsc, h.nonstop_tsc, h.cycle_frequency, h.buffer_size
        )
    }

    /// The line of the record at byte offset `at`.
    fn record(&mut self, at: u64, rec: &Record<'_>) -> std::io::Result<()> {
        let line = match rec {
            Record::Function { id, kind, delta } => {
                self.tsc = self.tsc.wrapping_add(u64::from(*delta));
                let k = match kind {
                    FnKind::Enter => "Enter",
                    FnKind::Exit => "Exit",
                    FnKind::TailExit => "TailExit",
                    FnKind::EnterArgs => "EnterArgs",
                };
                let name = match self.names.get(id) {
                    Some(n) => shown(n).into_owned(),
                    None => format!("#{id}"),
                };
                format!("{k:<14} id={id} delta={delta} tsc={}  {name}", self.tsc)
            }
            Record::NewBuffer { tid } => format!("NewBuffer      tid={tid}"),
            Record::EndOfBuffer => "EndOfBuffer".to_string(),
            Record::NewCpuId { cpu, tsc: t } => {
                self.tsc = *t;
                format!("NewCPUId       cpu={cpu} tsc={t}")
            }
            Record::TscWrap { tsc: t } => {
                self.tsc = *t;
                format!("TSCWrap        tsc={t}")
            }
            Record::Walltime { secs, micros } => {
                format!("Walltime       secs={secs} micros={micros}")
            }
            Record::CallArgument { value } => format!("CallArgument   value={value}"),
            Record::BufferExtents { size } => {
                format!("BufferExtents  size={size}")
            }
            Record::Pid { pid } => format!("Pid            pid={pid}"),
            Record::TypedEvent {
                delta,
                event_type,
                payload,
            } => {
                self.tsc = self.tsc.wrapping_add(*delta as i64 as u64);
                format!(
                    "TypedEvent     delta={delta} type={event_type} size={}",
                    payload.len()
                )
            }
            Record::CustomEvent { delta, payload } => {
                self.tsc = self.tsc.wrapping_add(*delta as i64 as u64);
                let what = match Extension::decode(payload) {
                Ok(Some(Extension::Run(r))) => format!(
                    "fdr run: program={:?} pid={} ticks/s={} threshold_ns={} start_tsc={} end_tsc={}",
                    r.program, r.pid, r.ticks_per_second, r.threshold_ns, r.start_tsc, r.end_tsc
                ),
                Ok(Some(Extension::Function(f))) => {
                    let s = format!(
                        "fdr function: id={} name={:?} file={:?} line={} args={:?}",
                        f.id, f.name, f.file, f.line, f.args
                    );
                    self.names.insert(f.id, f.name);
                    s
                }
                Ok(Some(Extension::Thread(t))) => format!(
                    "fdr thread: tid={} name={:?} dropped={}",
                    t.tid, t.name, t.records_dropped
                ),
                Ok(Some(Extension::Reason(r))) => format!(
                    "fdr reason: {} function={} tid={} start_tsc={} duration_ticks={} suppressed={} \
                     limit_ticks={} p99_ticks={} signal={} address={:#x}",
                    r.reason.describe(),
                    r.function,
                    r.tid,
                    r.start_tsc,
                    r.duration_ticks,
                    r.suppressed,
                    r.limit_ticks,
                    r.p99_ticks,
                    r.signal,
                    r.address
                ) + &r
                    .cpu_wait_ns
                    .map_or(String::new(), |w| format!(" cpu_wait_ns={w}"))
                    + &r
                        .off_cpu_ns
                        .map_or(String::new(), |w| format!(" off_cpu_ns={w}"))
                    + &if r.cpu_wait_suppressed > 0 {
                        format!(" cpu_wait_suppressed={}", r.cpu_wait_suppressed)
                    } else {
                        String::new()
                    },
                Ok(Some(Extension::Options(o))) => format!("fdr options: {}", shown(&o)),
                Ok(Some(Extension::Budget(b))) => format!(
                    "fdr budget: budget_ppm={} call_cost_ps={} estimate_ppm={} peak_ppm={} \
                     overall_ppm={} looks={} untimed={} spans_dropped={}",
                    b.budget_ppm,
                    b.call_cost_ps,
                    b.estimate_ppm,
                    b.peak_ppm,
                    b.overall_ppm,
                    b.looks,
                    b.untimed.len(),
                    b.spans_dropped
                ),
                Ok(Some(Extension::Unknown(tag))) => format!("fdr record of unknown tag {tag}"),
                Ok(None) => {
                    let name = |id: u32| match self.names.get(&id) {
                        Some(n) => shown(n).into_owned(),
                        None => format!("#{id}"),
                    };
                    if let Some((kind, id, task)) = fdr_format::decode_task_event(payload) {
                        let k = match kind {
                            fdr_format::TaskKind::Created => "created",
                            fdr_format::TaskKind::Completed => "completed",
                            fdr_format::TaskKind::Cancelled => "cancelled",
                        };
                        format!("fdr task {k}: task={task} id={id}  {}", name(id))
                    } else if let Some((id, task)) = fdr_format::decode_polled_event(payload) {
                        format!("fdr task polled: task={task} id={id}  {}", name(id))
                    } else if let Some((kind, id, run)) = fdr_format::decode_cull_event(payload)
                    {
                        let k = match kind {
                            fdr_format::CullKind::Culled => "culled",
                            fdr_format::CullKind::Restored => "restored",
                        };
                        format!("fdr {k}: id={id} run={run}  {}", name(id))
                    } else if let Some(l) = fdr_format::decode_link_event(payload) {
                        let k = match l.kind {
                            fdr_format::LinkKind::Parent => "made inside",
                            fdr_format::LinkKind::FollowsFrom => "follows from",
                        };
                        format!(
                            "fdr task link: task={} id={} {k} task={} id={}  {} {k} {}",
                            l.task,
                            l.id,
                            l.other_task,
                            l.other_id,
                            name(l.id),
                            name(l.other_id)
                        )
                    } else if let Some(a) = fdr_format::decode_await_event(payload) {
                        format!(
                            "fdr await {}: site={} id={} waited={} polls={}  {}",
                            if a.dropped { "dropped" } else { "passed" },
                            a.site,
                            a.function,
                            a.waited,
                            a.polls,
                            name(a.function)
                        )
                    } else if let Some(w) = fdr_format::decode_wake_event(payload) {
                        format!(
                            "fdr woken poll: id={} woken_at={} by_tid={}  {}",
                            w.function,
                            w.woken_at,
                            w.waker_tid,
                            name(w.function)
                        )
                    } else {
                        "not an fdr record".to_string()
                    }
                }
                Err(e) => format!("malformed fdr record: {e}"),
            };
                format!(
                    "CustomEvent    delta={delta} size={}  {what}",
                    payload.len()
                )
            }
        };
        writeln!(self.out, "{at:>10}  {line}")
    }

    /// The warning after the record at `at`, where a thread's time runs backwards.
    fn backwards(&mut self, at: u64, b: &Backwards) -> std::io::Result<()> {
        writeln!(
            self.out,
            "{at:>10}  warning: time runs backwards on thread {}, from tsc {} to {} ({} ticks)",
            b.tid,
            b.from,
            b.to,
            b.from - b.to
        )
    }

    /// The last line of a verified dump.
    fn verified(&mut self, records: u64, blocks: u64, backwards: u64) -> std::io::Result<()> {
        let note = match backwards {
            0 => String::new(),
            1 => "; time runs backwards 1 time (warning above)".to_string(),
            n => format!("; time runs backwards {n} times (warnings above)"),
        };
        writeln!(
            self.out,
            "verified: {records} records in {blocks} blocks follow the version 5 block \
             grammar{note}"
        )
    }

    /// Writes what is buffered.
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}
