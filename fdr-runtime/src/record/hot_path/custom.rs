//! Custom events on the recording path (task and link events, longer than a function record),
//! and the refill: taking the next buffer when the current one has no room for a record.

use fdr_format::FnKind;

use crate::record::thread_local::{self, Local};
use crate::record::thread_state::ThreadState;
use crate::record::{attach, controller};
use crate::session;

use super::{cold_event, joined_now};

/// Records a custom event (a task or link event) whose payload `payload` makes with the thread's
/// function ids: the path of [`record_one`](super::record_one) with a longer record.
#[inline(always)]
pub(super) fn record_custom(payload: impl Fn(&ThreadState) -> Custom) {
    record_custom_when(payload, When::Now);
}

/// When an event happens, which says whether recording it reads the clock.
#[derive(Clone, Copy, Debug)]
pub(crate) enum When {
    /// Now: the clock is read.
    Now,
    /// At the thread's last record (no clock read): an event that belongs to the exit just
    /// written, as a kept poll's event does.
    Last,
    /// At a reading (time, CPU) taken just before, for something else.
    At(u64, u32),
}

/// [`record_custom`], at `when`.
#[inline(always)]
pub(super) fn record_custom_when(payload: impl Fn(&ThreadState) -> Custom, when: When) {
    record_customs_when(|t| [payload(t)], when);
}

/// Records custom events one after the other, all at `when`, in one write bracket: the events
/// of one moment (a kept poll's event and the completion it brings) pay for one look at the
/// thread, one bounds check and one reading of the time, not one each.
#[inline(always)]
pub(super) fn record_customs_when<const N: usize>(
    payloads: impl Fn(&ThreadState) -> [Custom; N],
    when: When,
) {
    if !session::may_record() {
        return;
    }
    let l = thread_local::get();
    let t = &l.state;
    let len = t.len.get();
    if len >= t.writer.limit() {
        // Busy, or no buffer yet (or a full one): the cold path joins and takes one.
        for i in 0..N {
            cold_event(l, |t| Event::Custom {
                payload: payloads(t)[i],
            });
        }
        return;
    }
    t.begin_write();
    let (tsc, cpu) = match when {
        When::Now => joined_now(t),
        When::Last => (t.last_tsc.get(), t.cpu.get()),
        When::At(tsc, cpu) => (tsc, cpu),
    };
    let customs = payloads(t);
    let len =
        match controller::record_customs(t, len, customs.each_ref().map(Custom::words), tsc, cpu) {
            Some(len) => len,
            // No room for them all: one by one, each taking the next buffer if it must.
            None => customs_rest(l, len, customs, tsc, cpu),
        };
    t.end_write(len);
}

/// [`record_customs_when`]'s events when the buffer has no room for them all: one by one, each
/// in the next buffer if it must. Returns the length after the last.
#[cold]
#[inline(never)]
pub(super) fn customs_rest<const N: usize>(
    l: &Local,
    len: u32,
    customs: [Custom; N],
    tsc: u64,
    cpu: u32,
) -> u32 {
    let t = &l.state;
    let mut len = len;
    for payload in customs {
        len = match controller::record_custom(t, len, payload.words(), tsc, cpu) {
            Some(len) => len,
            None => next_buffer(l, len, tsc, cpu, Event::Custom { payload }),
        };
    }
    len
}

/// A custom event's payload: its first `len` words.
#[derive(Clone, Copy)]
pub(super) struct Custom {
    words: [u64; 4],
    len: u8,
}

impl Custom {
    #[inline(always)]
    pub(super) fn new(words: [u64; 4], len: u8) -> Custom {
        Custom { words, len }
    }

    #[inline(always)]
    pub(super) fn words(&self) -> &[u64] {
        &self.words[..usize::from(self.len)]
    }
}

/// What a hook records.
#[derive(Clone, Copy)]
pub(super) enum Event<'a> {
    Call {
        id: u32,
        kind: FnKind,
        args: &'a [u64],
    },
    /// A task or link event's payload.
    Custom { payload: Custom },
}

impl Event<'_> {
    #[inline]
    pub(super) fn write(self, l: &Local, len: u32, tsc: u64, cpu: u32) -> Option<u32> {
        let t = &l.state;
        match self {
            Event::Call { id, kind, args } => {
                controller::record_any(t, len, id, kind, tsc, cpu, args)
            }
            Event::Custom { payload } => {
                controller::record_custom(t, len, payload.words(), tsc, cpu)
            }
        }
    }

    /// Records it counts as when dropped.
    pub(super) fn records(self) -> u64 {
        match self {
            Event::Call { args, .. } => 1 + args.len() as u64,
            Event::Custom { .. } => 1,
        }
    }
}

/// The current buffer has no room: take the next and record there. Never loops: a record that
/// does not fit a fresh buffer either (the recording stopped meanwhile, or more arguments than a
/// buffer holds) is dropped and counted.
#[cold]
#[inline(never)]
pub(super) fn next_buffer(l: &Local, len: u32, tsc: u64, cpu: u32, ev: Event<'_>) -> u32 {
    let Some(len) = attach::switch_buffer(l, len, tsc, cpu) else {
        attach::count_dropped(l, ev.records());
        return 0;
    };
    if let Some(len) = ev.write(l, len, tsc, cpu) {
        return len;
    }
    if let Event::Call { id, kind, args } = ev {
        if !args.is_empty() {
            attach::count_args_dropped(l, args.len() as u64);
            let bare = Event::Call {
                id,
                kind,
                args: &[],
            };
            if let Some(len) = bare.write(l, len, tsc, cpu) {
                return len;
            }
        }
    }
    attach::count_dropped(l, 1);
    len
}
