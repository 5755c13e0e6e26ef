//! Writing copied buffers out as one self-describing log.
//!
//! The file is an XRay FDR version 5 log: the 32-byte header, then a leading block (thread 0)
//! whose custom events carry fdr's run record, the function table and the thread list, then one
//! block per copied buffer, each thread's in time order. `docs/FORMAT.md` has the details.

use std::io::{self, Write};

use fdr_format::{
    meta, meta_bytes, ClockSource, Extension, FileHeader, FunctionInfo, FunctionKind, MetaWords,
    RecordMode, RunInfo, ThreadInfo, MAX_EXT_PAYLOAD,
};

use crate::desc::{self, FnKindTag};
use crate::recorder::Session;
use crate::snapshot::Copied;
use crate::Mode;

/// Everything about the run that goes into the leading block besides the table.
pub(crate) struct RunFacts {
    pub snapshot: bool,
    pub end_tsc: u64,
}

/// Writes the whole log.
pub(crate) fn write_log<W: Write + ?Sized>(
    out: &mut W,
    session: &Session,
    copied: &Copied,
    facts: RunFacts,
) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(1 << 16, out);
    let cal = &session.calibration;
    let header = FileHeader {
        constant_tsc: true,
        nonstop_tsc: cal.source != ClockSource::Monotonic,
        cycle_frequency: cal.ticks_per_second,
        buffer_size: session.config.get_buffer_size() as u64,
        ..FileHeader::default()
    };
    out.write_all(&header.encode())?;

    let threads = session
        .pool
        .threads
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let records_dropped = threads
        .iter()
        .map(|t| t.dropped.load(std::sync::atomic::Ordering::Relaxed))
        .sum();
    let run = RunInfo {
        clock: cal.source,
        ticks_per_second: cal.ticks_per_second,
        calibration_ns: cal.window.as_nanos() as u64,
        mode: match session.config.get_mode() {
            Mode::Ring => RecordMode::Ring,
            Mode::Fill => RecordMode::Fill,
        },
        threshold_ns: session.config.get_threshold().as_nanos() as u64,
        threshold_ticks: session.threshold_ticks,
        buffer_size: session.config.get_buffer_size() as u64,
        buffer_count: session.config.get_buffer_count() as u64,
        pid: session.pid,
        start_unix_secs: session.start_wall.0,
        start_unix_nanos: session.start_wall.1,
        start_tsc: session.start_tsc,
        end_tsc: facts.end_tsc,
        snapshot: facts.snapshot,
        records_dropped,
        buffers_recycled: session
            .pool
            .recycled
            .load(std::sync::atomic::Ordering::Relaxed),
        buffers_missed: copied.missed,
        program: session.program.clone(),
    };

    // The leading block belongs to the first recorded thread and is dated one microsecond
    // before the start: llvm-xray groups blocks by thread, orders each thread's blocks by wall
    // time, and its `account` rejects any record older than the first it processed. So placed,
    // the leading block is read right before that thread's first block and never out of order.
    let lead_tid = copied.blocks.first().map_or(0, |b| b.tid);
    let (secs, nanos) = session.start_wall;
    let micros = i64::from(nanos / 1000) - 1;
    let (secs, micros) = if micros < 0 {
        (secs - 1, 999_999)
    } else {
        (secs, micros)
    };
    let mut lead: Vec<u8> = Vec::new();
    let push = |lead: &mut Vec<u8>, m: MetaWords| lead.extend_from_slice(&meta_bytes(m));
    push(&mut lead, meta::new_buffer(lead_tid));
    push(&mut lead, meta::walltime(secs, micros as i32));
    push(&mut lead, meta::pid(session.pid));
    push(&mut lead, meta::new_cpu_id(0, session.start_tsc));
    let event = |lead: &mut Vec<u8>, e: Extension| {
        let payload = e.encode();
        debug_assert!(payload.len() <= MAX_EXT_PAYLOAD);
        push(lead, meta::custom_event(payload.len() as i32, 0));
        lead.extend_from_slice(&payload);
    };
    event(&mut lead, Extension::Run(run));
    for (i, f) in desc::table().iter().enumerate() {
        event(
            &mut lead,
            Extension::Function(FunctionInfo {
                id: i as u32 + 1,
                name: f.name().to_string(),
                file: f.file().to_string(),
                line: f.line(),
                kind: match f.kind() {
                    FnKindTag::Function => FunctionKind::Function,
                    FnKindTag::Scope => FunctionKind::Scope,
                    FnKindTag::Async => FunctionKind::Async,
                },
                args: f.args().iter().map(|a| a.to_string()).collect(),
            }),
        );
    }
    for t in &threads {
        event(
            &mut lead,
            Extension::Thread(ThreadInfo {
                tid: t.tid,
                name: t.name.clone(),
                records_dropped: t.dropped.load(std::sync::atomic::Ordering::Relaxed),
            }),
        );
    }
    out.write_all(&meta_bytes(meta::buffer_extents(lead.len() as u64)))?;
    out.write_all(&lead)?;

    for block in &copied.blocks {
        for w in &block.words {
            out.write_all(&w.to_le_bytes())?;
        }
    }
    out.flush()
}
