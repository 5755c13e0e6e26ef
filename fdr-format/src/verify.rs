//! The block grammar of a version 5 log, checked one record at a time.
//!
//! Every block is `BufferExtents NewBuffer WalltimeMarker [Pid] NewCPUId` followed by events
//! (function records, call arguments, custom and typed events, `NewCPUId`, `TSCWrap`). A
//! `CallArgument` belongs to the enter-with-arguments record just before it. The file must end
//! exactly where the last block's extents say it does.

use std::collections::HashMap;

use crate::reader::Record;
use crate::{FnKind, FormatError};

/// Where in a block the verifier is: what it expects next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Between blocks: only `BufferExtents` may come.
    Extents,
    /// After `BufferExtents`.
    NewBuffer,
    /// After `NewBuffer`.
    Walltime,
    /// After `WalltimeMarker`: `Pid` or `NewCPUId`.
    PidOrCpu,
    /// After `Pid`.
    Cpu,
    /// Inside the events of a block; the flag says whether call arguments may follow.
    Events { args_open: bool },
}

/// Checks the block grammar of a record stream.
///
/// ```
/// use fdr_format::reader::Record;
/// use fdr_format::verify::BlockVerifier;
/// let mut v = BlockVerifier::new();
/// v.record(32, &Record::BufferExtents { size: 64 }).unwrap();
/// let e = v.record(48, &Record::Pid { pid: 1 }).unwrap_err();
/// assert_eq!(e.to_string(), "at byte offset 48: expected a NewBuffer record after BufferExtents, found Pid");
/// ```
#[derive(Debug)]
pub struct BlockVerifier {
    state: State,
    /// Offset of the current block's extents record.
    block_at: u64,
}

impl Default for BlockVerifier {
    fn default() -> Self {
        Self::new()
    }
}

/// A short name for a record, as used in messages.
pub fn record_name(r: &Record<'_>) -> &'static str {
    match r {
        Record::Function { kind, .. } => match kind {
            FnKind::Enter => "function entry",
            FnKind::Exit => "function exit",
            FnKind::TailExit => "function tail exit",
            FnKind::EnterArgs => "function entry with arguments",
        },
        Record::NewBuffer { .. } => "NewBuffer",
        Record::EndOfBuffer => "EndOfBuffer",
        Record::NewCpuId { .. } => "NewCPUId",
        Record::TscWrap { .. } => "TSCWrap",
        Record::Walltime { .. } => "WalltimeMarker",
        Record::CustomEvent { .. } => "CustomEvent",
        Record::CallArgument { .. } => "CallArgument",
        Record::BufferExtents { .. } => "BufferExtents",
        Record::TypedEvent { .. } => "TypedEvent",
        Record::Pid { .. } => "Pid",
    }
}

impl BlockVerifier {
    /// A verifier expecting the first block.
    pub fn new() -> BlockVerifier {
        BlockVerifier {
            state: State::Extents,
            block_at: 0,
        }
    }

    /// Checks one record read at `offset`.
    pub fn record(&mut self, offset: u64, r: &Record<'_>) -> Result<(), FormatError> {
        let fail = |expected: &str| {
            Err(FormatError::new(
                offset,
                format!("expected {expected}, found {}", record_name(r)),
            ))
        };
        if let Record::BufferExtents { .. } = r {
            return match self.state {
                State::Extents | State::Events { .. } => {
                    self.state = State::NewBuffer;
                    self.block_at = offset;
                    Ok(())
                }
                State::NewBuffer => fail("a NewBuffer record after BufferExtents"),
                State::Walltime => fail("a WalltimeMarker record after NewBuffer"),
                State::PidOrCpu => fail("a Pid or NewCPUId record after WalltimeMarker"),
                State::Cpu => fail("a NewCPUId record after Pid"),
            };
        }
        self.state = match (self.state, r) {
            (State::Extents, _) => {
                return fail("a BufferExtents record opening a block (every version 5 block starts with one)")
            }
            (State::NewBuffer, Record::NewBuffer { .. }) => State::Walltime,
            (State::NewBuffer, _) => return fail("a NewBuffer record after BufferExtents"),
            (State::Walltime, Record::Walltime { .. }) => State::PidOrCpu,
            (State::Walltime, _) => return fail("a WalltimeMarker record after NewBuffer"),
            (State::PidOrCpu, Record::Pid { .. }) => State::Cpu,
            (State::PidOrCpu, Record::NewCpuId { .. }) | (State::Cpu, Record::NewCpuId { .. }) => {
                State::Events { args_open: false }
            }
            (State::PidOrCpu, _) => return fail("a Pid or NewCPUId record after WalltimeMarker"),
            (State::Cpu, _) => return fail("a NewCPUId record after Pid"),
            (State::Events { args_open }, rec) => match rec {
                Record::Function { kind, .. } => State::Events {
                    args_open: *kind == FnKind::EnterArgs,
                },
                Record::CallArgument { .. } if args_open => State::Events { args_open: true },
                Record::CallArgument { .. } => {
                    return fail("an event (a CallArgument must follow a function entry with arguments or another argument)")
                }
                Record::NewCpuId { .. }
                | Record::TscWrap { .. }
                | Record::CustomEvent { .. }
                | Record::TypedEvent { .. } => State::Events { args_open: false },
                Record::EndOfBuffer => {
                    return fail("an event (EndOfBuffer belongs to version 1 and 2 logs, not version 5)")
                }
                _ => return fail("an event or a new block's BufferExtents"),
            },
        };
        Ok(())
    }

    /// True inside a block's events, where function records are always allowed.
    pub fn in_events(&self) -> bool {
        matches!(self.state, State::Events { .. })
    }

    /// Accounts for a run of function records checked by the caller (inside a block's events)
    /// whose last one was an enter-with-arguments record or not.
    pub fn function_run(&mut self, last_enters_with_args: bool) {
        if self.in_events() {
            self.state = State::Events {
                args_open: last_enters_with_args,
            };
        }
    }

    /// The rest of the current block was skipped unread: a new block must come next.
    pub fn block_skipped(&mut self) {
        self.state = State::Extents;
    }

    /// Checks the end of the input at `offset`, given what the reader says is left of the
    /// current block.
    pub fn finish(&self, offset: u64, block_left: Option<u64>) -> Result<(), FormatError> {
        if let Some(left) = block_left {
            if left != 0 {
                return Err(FormatError::new(
                    offset,
                    format!(
                        "the file ends {left} bytes before the end of the block whose extents \
                         record is at byte offset {}; it was cut short",
                        self.block_at
                    ),
                ));
            }
        }
        let missing = match self.state {
            State::Extents | State::Events { .. } => return Ok(()),
            State::NewBuffer => "NewBuffer",
            State::Walltime => "WalltimeMarker",
            State::PidOrCpu | State::Cpu => "NewCPUId",
        };
        Err(FormatError::new(
            offset,
            format!("the file ends inside a block preamble; expected a {missing} record"),
        ))
    }
}

/// A place where a thread's time runs backwards (see [`TimeCheck`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backwards {
    /// The thread, by the id in its block's `NewBuffer`.
    pub tid: i32,
    /// The thread's timestamp before the record.
    pub from: u64,
    /// The timestamp the record sets.
    pub to: u64,
}

/// Follows each thread's timestamp through a log's records, in file order, and says where it
/// runs backwards: a `NewCPUId` or `TSCWrap` older than the record before it, a block that
/// starts before its thread's previous block ended, or an event with a negative delta.
/// Hardware can do this (timestamp counters of different CPUs that are not quite in step), so
/// it is something to report, not a grammar error; durations across such a point come out as 0.
///
/// ```
/// use fdr_format::reader::Record;
/// use fdr_format::verify::{Backwards, TimeCheck};
/// let mut c = TimeCheck::default();
/// for r in [
///     Record::BufferExtents { size: 0 },
///     Record::NewBuffer { tid: 3 },
///     Record::NewCpuId { cpu: 0, tsc: 1000 },
/// ] {
///     assert_eq!(c.record(&r), None);
/// }
/// assert_eq!(
///     c.record(&Record::TscWrap { tsc: 400 }),
///     Some(Backwards { tid: 3, from: 1000, to: 400 })
/// );
/// ```
#[derive(Debug, Default)]
pub struct TimeCheck {
    /// The thread of the current block.
    tid: Option<i32>,
    /// Its running timestamp.
    tsc: u64,
    /// Between `NewBuffer` and the block's first `NewCPUId`.
    preamble: bool,
    /// Each thread's timestamp at the end of its latest block.
    last: HashMap<i32, u64>,
}

impl TimeCheck {
    /// Follows one record; `Some` when it takes its thread's time backwards.
    pub fn record(&mut self, r: &Record<'_>) -> Option<Backwards> {
        let (before, after) = match *r {
            Record::BufferExtents { .. } => {
                if let Some(tid) = self.tid.take() {
                    self.last.insert(tid, self.tsc);
                }
                return None;
            }
            Record::NewBuffer { tid } => {
                if let Some(old) = self.tid.replace(tid) {
                    self.last.insert(old, self.tsc);
                }
                self.preamble = true;
                return None;
            }
            Record::Function { delta, .. } => {
                self.tsc = self.tsc.wrapping_add(u64::from(delta));
                return None;
            }
            Record::NewCpuId { tsc, .. } => {
                let before = if std::mem::take(&mut self.preamble) {
                    self.tid.and_then(|t| self.last.get(&t).copied())
                } else {
                    Some(self.tsc)
                };
                (before, tsc)
            }
            Record::TscWrap { tsc } => (Some(self.tsc), tsc),
            Record::CustomEvent { delta, .. } | Record::TypedEvent { delta, .. } => {
                (Some(self.tsc), self.tsc.wrapping_add(delta as i64 as u64))
            }
            Record::EndOfBuffer
            | Record::Walltime { .. }
            | Record::CallArgument { .. }
            | Record::Pid { .. } => return None,
        };
        self.tsc = after;
        let tid = self.tid?;
        match before {
            Some(from) if after < from => Some(Backwards {
                tid,
                from,
                to: after,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(recs: &[Record<'_>]) -> Result<(), FormatError> {
        let mut v = BlockVerifier::new();
        for (i, r) in recs.iter().enumerate() {
            v.record(i as u64 * 16, r)?;
        }
        v.finish(recs.len() as u64 * 16, Some(0))
    }

    fn preamble() -> Vec<Record<'static>> {
        vec![
            Record::BufferExtents { size: 0 },
            Record::NewBuffer { tid: 1 },
            Record::Walltime { secs: 0, micros: 0 },
            Record::Pid { pid: 1 },
            Record::NewCpuId { cpu: 0, tsc: 0 },
        ]
    }

    #[test]
    fn a_well_formed_block_passes() {
        let mut r = preamble();
        r.push(Record::Function {
            id: 1,
            kind: FnKind::EnterArgs,
            delta: 0,
        });
        r.push(Record::CallArgument { value: 1 });
        r.push(Record::CallArgument { value: 2 });
        r.push(Record::TscWrap { tsc: 5 });
        r.extend(preamble());
        run(&r).unwrap();
    }

    #[test]
    fn pid_is_optional_but_order_is_not() {
        let mut r = preamble();
        r.remove(3);
        run(&r).unwrap();
        let mut r = preamble();
        r.swap(2, 3);
        let e = run(&r).unwrap_err();
        assert_eq!(e.offset, 32);
        assert!(e.message.contains("expected a WalltimeMarker"), "{e}");
    }

    #[test]
    fn stray_arguments_and_missing_extents_are_errors() {
        let mut r = preamble();
        r.push(Record::CallArgument { value: 1 });
        let e = run(&r).unwrap_err();
        assert_eq!(e.offset, 80);
        let e = run(&[Record::NewBuffer { tid: 1 }]).unwrap_err();
        assert!(e.message.contains("BufferExtents"), "{e}");
    }

    #[test]
    fn cut_preambles_and_blocks_are_reported() {
        let r = &preamble()[..2];
        let mut v = BlockVerifier::new();
        for (i, x) in r.iter().enumerate() {
            v.record(i as u64, x).unwrap();
        }
        assert!(v
            .finish(2, Some(0))
            .unwrap_err()
            .message
            .contains("WalltimeMarker"));
        assert!(v
            .finish(2, Some(8))
            .unwrap_err()
            .message
            .contains("8 bytes before"));
    }

    #[test]
    fn time_check_finds_every_way_back_and_nothing_else() {
        let f = |delta| Record::Function {
            id: 1,
            kind: FnKind::Enter,
            delta,
        };
        let mut c = TimeCheck::default();
        let mut back = Vec::new();
        let recs = [
            Record::BufferExtents { size: 0 },
            Record::NewBuffer { tid: 1 },
            Record::Walltime { secs: 0, micros: 0 },
            Record::NewCpuId { cpu: 0, tsc: 100 },
            f(50),
            Record::NewCpuId { cpu: 1, tsc: 120 }, // back from 150
            f(10),
            Record::TscWrap { tsc: 1 << 40 },
            Record::CustomEvent {
                delta: -5,
                payload: &[],
            }, // back by 5
            // Another thread's block, older: not a step back for thread 1.
            Record::BufferExtents { size: 0 },
            Record::NewBuffer { tid: 2 },
            Record::NewCpuId { cpu: 0, tsc: 10 },
            // Thread 1 again, starting before its last block ended.
            Record::BufferExtents { size: 0 },
            Record::NewBuffer { tid: 1 },
            Record::Pid { pid: 1 },
            Record::NewCpuId { cpu: 0, tsc: 200 },
            f(1),
        ];
        for r in &recs {
            back.extend(c.record(r));
        }
        assert_eq!(
            back,
            [
                Backwards {
                    tid: 1,
                    from: 150,
                    to: 120
                },
                Backwards {
                    tid: 1,
                    from: 1 << 40,
                    to: (1 << 40) - 5
                },
                Backwards {
                    tid: 1,
                    from: (1 << 40) - 5,
                    to: 200
                },
            ]
        );
    }
}
