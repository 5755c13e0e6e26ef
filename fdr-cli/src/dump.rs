//! `fdr dump`: every record, one per line, optionally checking the block grammar.

use std::collections::HashMap;
use std::io::Write;

use fdr_format::reader::{Reader, Record};
use fdr_format::verify::{BlockVerifier, TimeCheck};
use fdr_format::{Extension, FnKind, FormatError};

use crate::input::Log;
use crate::names::shown;
use crate::CliError;

/// Prints the records of the log at `path`; with `verify`, stops at the first record that
/// breaks the block grammar, and adds a warning line after each record where a thread's time
/// runs backwards (a warning only: timestamp counters of different CPUs can disagree a little,
/// so the log is still valid; durations across such a point are shown as 0).
pub fn run(log: &Log, verify: bool, out: &mut dyn Write) -> Result<(), CliError> {
    let name = log.name().to_string();
    let file = log.file()?;
    let input = |err: FormatError| CliError::Input {
        path: name.clone(),
        err,
    };
    let w = |e: std::io::Error| CliError::io("<output>", "writing the dump", e);
    let mut r = Reader::new(std::io::BufReader::with_capacity(1 << 16, file)).map_err(input)?;
    let h = *r.header();
    let mut out = std::io::BufWriter::new(out);
    writeln!(
        out,
        "header: version {} type {} constant_tsc {} nonstop_tsc {} frequency {} buffer_size {}",
        h.version, h.log_type, h.constant_tsc, h.nonstop_tsc, h.cycle_frequency, h.buffer_size
    )
    .map_err(w)?;
    let mut v = BlockVerifier::new();
    let mut time = TimeCheck::default();
    let mut backwards = 0u64;
    let mut names: HashMap<u32, String> = HashMap::new();
    let mut tsc: u64 = 0;
    let (mut records, mut blocks) = (0u64, 0u64);
    loop {
        let (at, rec) = match r.next_record() {
            Ok(Some(x)) => x,
            Ok(None) => break,
            Err(e) => {
                let _ = out.flush();
                return Err(input(e));
            }
        };
        records += 1;
        let line = match &rec {
            Record::Function { id, kind, delta } => {
                tsc = tsc.wrapping_add(u64::from(*delta));
                let k = match kind {
                    FnKind::Enter => "Enter",
                    FnKind::Exit => "Exit",
                    FnKind::TailExit => "TailExit",
                    FnKind::EnterArgs => "EnterArgs",
                };
                let name = match names.get(id) {
                    Some(n) => shown(n).into_owned(),
                    None => format!("#{id}"),
                };
                format!("{k:<14} id={id} delta={delta} tsc={tsc}  {name}")
            }
            Record::NewBuffer { tid } => format!("NewBuffer      tid={tid}"),
            Record::EndOfBuffer => "EndOfBuffer".to_string(),
            Record::NewCpuId { cpu, tsc: t } => {
                tsc = *t;
                format!("NewCPUId       cpu={cpu} tsc={t}")
            }
            Record::TscWrap { tsc: t } => {
                tsc = *t;
                format!("TSCWrap        tsc={t}")
            }
            Record::Walltime { secs, micros } => {
                format!("Walltime       secs={secs} micros={micros}")
            }
            Record::CallArgument { value } => format!("CallArgument   value={value}"),
            Record::BufferExtents { size } => {
                blocks += 1;
                format!("BufferExtents  size={size}")
            }
            Record::Pid { pid } => format!("Pid            pid={pid}"),
            Record::TypedEvent {
                delta,
                event_type,
                payload,
            } => {
                tsc = tsc.wrapping_add(*delta as i64 as u64);
                format!(
                    "TypedEvent     delta={delta} type={event_type} size={}",
                    payload.len()
                )
            }
            Record::CustomEvent { delta, payload } => {
                tsc = tsc.wrapping_add(*delta as i64 as u64);
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
                        names.insert(f.id, f.name);
                        s
                    }
                    Ok(Some(Extension::Thread(t))) => format!(
                        "fdr thread: tid={} name={:?} dropped={}",
                        t.tid, t.name, t.records_dropped
                    ),
                    Ok(Some(Extension::Reason(r))) => format!(
                        "fdr reason: {} function={} tid={} start_tsc={} duration_ticks={} suppressed={}",
                        r.reason.describe(),
                        r.function,
                        r.tid,
                        r.start_tsc,
                        r.duration_ticks,
                        r.suppressed
                    ),
                    Ok(Some(Extension::Unknown(tag))) => format!("fdr record of unknown tag {tag}"),
                    Ok(None) => {
                        let name = |id: u32| match names.get(&id) {
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
                        } else if let Some((kind, id, run)) = fdr_format::decode_cull_event(payload)
                        {
                            let k = match kind {
                                fdr_format::CullKind::Culled => "culled",
                                fdr_format::CullKind::Restored => "restored",
                            };
                            format!("fdr {k}: id={id} run={run}  {}", name(id))
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
        writeln!(out, "{at:>10}  {line}").map_err(w)?;
        if verify {
            if let Err(e) = v.record(at, &rec) {
                let _ = out.flush();
                return Err(input(e));
            }
            if let Some(b) = time.record(&rec) {
                backwards += 1;
                writeln!(
                    out,
                    "{at:>10}  warning: time runs backwards on thread {}, from tsc {} to {} \
                     ({} ticks)",
                    b.tid,
                    b.from,
                    b.to,
                    b.from - b.to
                )
                .map_err(w)?;
            }
        }
    }
    if verify {
        if let Err(e) = v.finish(r.offset(), r.block_left()) {
            let _ = out.flush();
            return Err(input(e));
        }
        let note = match backwards {
            0 => String::new(),
            1 => "; time runs backwards 1 time (warning above)".to_string(),
            n => format!("; time runs backwards {n} times (warnings above)"),
        };
        writeln!(
            out,
            "verified: {records} records in {blocks} blocks follow the version 5 block \
             grammar{note}"
        )
        .map_err(w)?;
    }
    out.flush().map_err(w)
}
