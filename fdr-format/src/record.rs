//! The two record shapes of an XRay FDR version 5 log and how they are packed.
//!
//! A function record is 8 bytes, a metadata record 16. Both are little-endian. The writer keeps
//! its buffers as arrays of 64-bit words, so every encoder here returns whole words: one word for
//! a function record, two for a metadata record. Byte 0 of a record says which shape it is: bit 0
//! set means metadata.

/// Size in bytes of a function record.
pub const FUNCTION_RECORD_SIZE: usize = 8;
/// Size in bytes of a metadata record.
pub const METADATA_RECORD_SIZE: usize = 16;
/// The largest function id a function record can carry (28 bits).
pub const MAX_FUNCTION_ID: u32 = (1 << 28) - 1;

/// What a function record says happened.
///
/// ```
/// use fdr_format::FnKind;
/// assert_eq!(FnKind::from_bits(2), Some(FnKind::TailExit));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FnKind {
    /// The function was entered.
    Enter = 0,
    /// The function returned (or unwound).
    Exit = 1,
    /// The function left through a tail call: its frame is gone, the callee's exit follows.
    TailExit = 2,
    /// The function was entered and its arguments follow as call-argument records.
    EnterArgs = 3,
}

impl FnKind {
    /// Decodes the 3-bit kind field; kinds 4 to 7 are not defined.
    pub fn from_bits(bits: u8) -> Option<FnKind> {
        match bits {
            0 => Some(FnKind::Enter),
            1 => Some(FnKind::Exit),
            2 => Some(FnKind::TailExit),
            3 => Some(FnKind::EnterArgs),
            _ => None,
        }
    }

    /// True for the kinds that open a call.
    pub fn is_entry(self) -> bool {
        matches!(self, FnKind::Enter | FnKind::EnterArgs)
    }
}

/// The kinds of metadata record, as numbered by XRay.
///
/// ```
/// use fdr_format::MetaKind;
/// assert_eq!(MetaKind::from_byte(0x0f), Some(MetaKind::BufferExtents));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MetaKind {
    /// Starts a thread's buffer: the thread id.
    NewBuffer = 0,
    /// Marks the end of a buffer (version 1 and 2 logs; version 5 uses extents instead).
    EndOfBuffer = 1,
    /// The thread is now on another CPU: CPU number and full timestamp.
    NewCpuId = 2,
    /// The timestamp delta did not fit 32 bits: full timestamp.
    TscWrap = 3,
    /// Wall-clock time when the buffer was started.
    WalltimeMarker = 4,
    /// A payload of arbitrary bytes follows the record.
    CustomEvent = 5,
    /// One argument of the preceding enter-with-arguments record.
    CallArgument = 6,
    /// The number of bytes of the block that follow this record.
    BufferExtents = 7,
    /// A typed payload follows the record.
    TypedEvent = 8,
    /// The process id.
    Pid = 9,
}

impl MetaKind {
    /// Decodes byte 0 of a metadata record (`(kind << 1) | 1`).
    pub fn from_byte(byte: u8) -> Option<MetaKind> {
        if byte & 1 == 0 {
            return None;
        }
        Some(match byte >> 1 {
            0 => MetaKind::NewBuffer,
            1 => MetaKind::EndOfBuffer,
            2 => MetaKind::NewCpuId,
            3 => MetaKind::TscWrap,
            4 => MetaKind::WalltimeMarker,
            5 => MetaKind::CustomEvent,
            6 => MetaKind::CallArgument,
            7 => MetaKind::BufferExtents,
            8 => MetaKind::TypedEvent,
            9 => MetaKind::Pid,
            _ => return None,
        })
    }

    /// Byte 0 of a metadata record of this kind.
    pub const fn byte(self) -> u8 {
        ((self as u8) << 1) | 1
    }
}

/// Packs a function record into the word the writer stores.
///
/// ```
/// use fdr_format::{function_record, FnKind};
/// let w = function_record(5, FnKind::Exit, 100);
/// assert_eq!(w.to_le_bytes(), [0x52, 0, 0, 0, 100, 0, 0, 0]);
/// ```
#[inline(always)]
pub const fn function_record(id: u32, kind: FnKind, delta: u32) -> u64 {
    function_word(id_field(id), kind, delta)
}

/// The low half of a function record: id and kind, without the delta.
#[inline(always)]
pub const fn function_record_head(id: u32, kind: FnKind) -> u32 {
    id_field(id) | kind.bits()
}

/// Splits a function record word into (id, kind, delta). `None` if it is not a function record
/// or its kind is undefined.
///
/// ```
/// use fdr_format::{decode_function_record, function_record, FnKind};
/// let w = function_record(7, FnKind::TailExit, 9);
/// assert_eq!(decode_function_record(w), Some((7, FnKind::TailExit, 9)));
/// ```
#[inline]
pub fn decode_function_record(word: u64) -> Option<(u32, FnKind, u32)> {
    let lo = word as u32;
    if lo & 1 != 0 {
        return None;
    }
    let kind = FnKind::from_bits(((lo >> 1) & 7) as u8)?;
    Some((lo >> ID_SHIFT, kind, delta_of(word)))
}

/// A metadata record as the two words the writer stores.
pub type MetaWords = [u64; 2];

/// Bits of a function record's low word that hold its kind (bit 0, the metadata flag, is clear).
pub const KIND_MASK: u32 = 0b1110;

/// How far the function id is shifted in a function record's low word.
pub const ID_SHIFT: u32 = 4;

impl FnKind {
    /// The kind's bits in a function record's low word: `kind << 1`.
    ///
    /// ```
    /// use fdr_format::FnKind;
    /// assert_eq!(FnKind::TailExit.bits(), 4);
    /// ```
    #[inline(always)]
    pub const fn bits(self) -> u32 {
        (self as u32) << 1
    }
}

/// A function record from the id already in place (`id << 4`, as [`id_field`] gives) and the
/// kind: the form the recording path keeps, so that a record costs one `or`.
///
/// ```
/// use fdr_format::{function_record, function_word, id_field, FnKind};
/// assert_eq!(function_word(id_field(5), FnKind::Exit, 100), function_record(5, FnKind::Exit, 100));
/// ```
#[inline(always)]
pub const fn function_word(id_field: u32, kind: FnKind, delta: u32) -> u64 {
    (id_field | kind.bits()) as u64 | ((delta as u64) << 32)
}

/// A function id moved into place in a record's low word.
#[inline(always)]
pub const fn id_field(id: u32) -> u32 {
    (id & MAX_FUNCTION_ID) << ID_SHIFT
}

/// The kind bits of a function record's low word, to compare with [`FnKind::bits`].
#[inline(always)]
pub const fn kind_bits(word: u64) -> u32 {
    word as u32 & KIND_MASK
}

/// True when `word` is a metadata record's first word (bit 0 set).
#[inline(always)]
pub const fn is_metadata(word: u64) -> bool {
    word & 1 != 0
}

/// The timestamp delta of a function record.
#[inline(always)]
pub const fn delta_of(word: u64) -> u32 {
    (word >> 32) as u32
}

/// The id field (id and type bits, kind cleared) of a function record, to tell two records of
/// the same function apart from others.
#[inline(always)]
pub const fn id_field_of(word: u64) -> u32 {
    word as u32 & !(KIND_MASK | 1)
}

/// Packs a metadata kind and up to 15 data bytes, little-endian, into two words.
#[inline(always)]
const fn meta(kind: MetaKind, data: [u8; 15]) -> MetaWords {
    let mut lo = kind.byte() as u64;
    let mut hi = 0u64;
    let mut i = 0;
    while i < 15 {
        let b = data[i] as u64;
        if i < 7 {
            lo |= b << (8 * (i + 1));
        } else {
            hi |= b << (8 * (i - 7));
        }
        i += 1;
    }
    [lo, hi]
}

/// Data bytes made of `n` little-endian bytes of `a` at 0, then of `b`.
#[inline(always)]
const fn data2(a: u64, na: usize, b: u64, nb: usize) -> [u8; 15] {
    let mut data = [0u8; 15];
    let mut i = 0;
    while i < na {
        data[i] = (a >> (8 * i)) as u8;
        i += 1;
    }
    let mut j = 0;
    while j < nb {
        data[na + j] = (b >> (8 * j)) as u8;
        j += 1;
    }
    data
}

/// Metadata encoders. Each returns the record as two little-endian words; all are `const fn`,
/// so the recording path's records compile to constants and shifts.
///
/// ```
/// use fdr_format::meta;
/// let [lo, _hi] = meta::pid(42);
/// assert_eq!(lo.to_le_bytes()[0], 0x13);
/// ```
pub mod meta {
    use super::*;

    /// `NewBuffer`: the id of the thread that owns the block.
    #[inline(always)]
    pub const fn new_buffer(tid: i32) -> MetaWords {
        meta(MetaKind::NewBuffer, data2(tid as u32 as u64, 4, 0, 0))
    }
    /// `EndOfBuffer`.
    #[inline(always)]
    pub const fn end_of_buffer() -> MetaWords {
        meta(MetaKind::EndOfBuffer, [0; 15])
    }
    /// `NewCPUId`: CPU number and the full timestamp that later deltas build on.
    #[inline(always)]
    pub const fn new_cpu_id(cpu: u16, tsc: u64) -> MetaWords {
        meta(MetaKind::NewCpuId, data2(cpu as u64, 2, tsc, 8))
    }
    /// `TSCWrap`: the full timestamp, for a delta that did not fit 32 bits.
    #[inline(always)]
    pub const fn tsc_wrap(tsc: u64) -> MetaWords {
        meta(MetaKind::TscWrap, data2(tsc, 8, 0, 0))
    }
    /// `WalltimeMarker`: seconds and microseconds of the wall clock.
    #[inline(always)]
    pub const fn walltime(secs: i64, micros: i32) -> MetaWords {
        meta(
            MetaKind::WalltimeMarker,
            data2(secs as u64, 8, micros as u32 as u64, 4),
        )
    }
    /// `CustomEvent` header: `size` payload bytes follow the record; `delta` advances the clock.
    #[inline(always)]
    pub const fn custom_event(size: i32, delta: i32) -> MetaWords {
        meta(
            MetaKind::CustomEvent,
            data2(size as u32 as u64, 4, delta as u32 as u64, 4),
        )
    }
    /// The payload size and the delta of a `CustomEvent` header made by [`custom_event`], or
    /// `None` for another record: what a writer that takes its last custom event back needs to
    /// find the time before it.
    ///
    /// ```
    /// use fdr_format::meta;
    /// assert_eq!(meta::custom_event_fields(meta::custom_event(16, 1234)), Some((16, 1234)));
    /// assert_eq!(meta::custom_event_fields(meta::pid(7)), None);
    /// ```
    #[inline(always)]
    pub const fn custom_event_fields(words: MetaWords) -> Option<(i32, i32)> {
        let [lo, hi] = words;
        if lo as u8 != MetaKind::CustomEvent.byte() {
            return None;
        }
        let size = (lo >> 8) as u32 as i32;
        let delta = ((lo >> 40) as u32 & 0x00ff_ffff | ((hi as u32 & 0xff) << 24)) as i32;
        Some((size, delta))
    }
    /// `CallArgument`: one 64-bit argument.
    #[inline(always)]
    pub const fn call_argument(value: u64) -> MetaWords {
        meta(MetaKind::CallArgument, data2(value, 8, 0, 0))
    }
    /// `BufferExtents`: how many bytes of the block follow this record.
    #[inline(always)]
    pub const fn buffer_extents(size: u64) -> MetaWords {
        meta(MetaKind::BufferExtents, data2(size, 8, 0, 0))
    }
    /// `Pid`: the process id.
    #[inline(always)]
    pub const fn pid(pid: i32) -> MetaWords {
        meta(MetaKind::Pid, data2(pid as u32 as u64, 4, 0, 0))
    }
}

/// Turns a metadata record's two words back into its 16 bytes.
pub fn meta_bytes(words: MetaWords) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&words[0].to_le_bytes());
    out[8..].copy_from_slice(&words[1].to_le_bytes());
    out
}

/// Number of bytes that a block's `BufferExtents` covers besides itself before the first event:
/// `NewBuffer`, `WalltimeMarker`, `Pid`, `NewCPUId`.
pub const BLOCK_PREAMBLE_AFTER_EXTENTS: usize = 4 * METADATA_RECORD_SIZE;

/// Size in bytes of a whole block preamble, extents included.
pub const BLOCK_PREAMBLE_SIZE: usize = 5 * METADATA_RECORD_SIZE;

/// The block preamble in 64-bit words: where a writer's first event goes.
pub const BLOCK_PREAMBLE_WORDS: u32 = (BLOCK_PREAMBLE_SIZE / 8) as u32;

/// What a block preamble says: the owner, when the block started, and where its clock stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockStart {
    /// Thread id for `NewBuffer`.
    pub tid: i32,
    /// Wall-clock seconds since the Unix epoch.
    pub wall_secs: i64,
    /// Microseconds within the second.
    pub wall_micros: i32,
    /// Process id.
    pub pid: i32,
    /// CPU for the opening `NewCPUId`.
    pub cpu: u16,
    /// Full timestamp for the opening `NewCPUId`: the base of the first event's delta.
    pub tsc: u64,
}

/// A block's preamble as words: `BufferExtents` (its size, in bytes after the record, filled in
/// when the block's length is known), `NewBuffer`, `WalltimeMarker`, `Pid`, `NewCPUId`.
///
/// ```
/// use fdr_format::{block_preamble, BlockStart, BLOCK_PREAMBLE_WORDS};
/// let w = block_preamble(&BlockStart { tid: 7, wall_secs: 0, wall_micros: 0, pid: 1, cpu: 0, tsc: 5 }, 64);
/// assert_eq!(w.len(), BLOCK_PREAMBLE_WORDS as usize);
/// ```
pub const fn block_preamble(b: &BlockStart, extents: u64) -> [u64; BLOCK_PREAMBLE_WORDS as usize] {
    let parts = [
        meta::buffer_extents(extents),
        meta::new_buffer(b.tid),
        meta::walltime(b.wall_secs, b.wall_micros),
        meta::pid(b.pid),
        meta::new_cpu_id(b.cpu, b.tsc),
    ];
    let mut out = [0u64; BLOCK_PREAMBLE_WORDS as usize];
    let mut i = 0;
    while i < 5 {
        out[2 * i] = parts[i][0];
        out[2 * i + 1] = parts[i][1];
        i += 1;
    }
    out
}

/// What happened to an async task (an instrumented `async fn`'s future).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum TaskKind {
    /// The future was created: the `async fn` was called.
    Created = 1,
    /// The future completed (`Poll::Ready`).
    Completed = 2,
    /// The future was dropped before completing.
    Cancelled = 3,
}

/// The first two bytes of a task event's payload.
pub const TASK_MAGIC: [u8; 2] = *b"Ft";

/// Bytes of a task event's payload: magic, kind, a zero byte, the function id (`u32`) and the
/// task id (`u64`), little-endian. Cull events have the same size.
pub const TASK_PAYLOAD_SIZE: usize = 16;

/// A task event's 16-byte payload as two words; a thread's block holds it after a
/// `CustomEvent` metadata record (payload size, timestamp delta). XRay's tools skip it as an
/// opaque custom event.
///
/// ```
/// use fdr_format::{decode_task_event, task_payload, TaskKind};
/// let w = task_payload(TaskKind::Created, 7, 42);
/// let payload: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
/// assert_eq!(decode_task_event(&payload), Some((TaskKind::Created, 7, 42)));
/// ```
#[inline(always)]
pub const fn task_payload(kind: TaskKind, function: u32, task: u64) -> [u64; 2] {
    let first = TASK_MAGIC[0] as u64
        | (TASK_MAGIC[1] as u64) << 8
        | (kind as u64) << 16
        | (function as u64) << 32;
    [first, task]
}

/// Reads a custom event's payload as a task event: (kind, function id, task id), or `None` if it
/// is not one.
pub fn decode_task_event(payload: &[u8]) -> Option<(TaskKind, u32, u64)> {
    if payload.len() != TASK_PAYLOAD_SIZE || payload[..2] != TASK_MAGIC || payload[3] != 0 {
        return None;
    }
    let kind = match payload[2] {
        1 => TaskKind::Created,
        2 => TaskKind::Completed,
        3 => TaskKind::Cancelled,
        _ => return None,
    };
    let function = u32::from_le_bytes([payload[4], payload[5], payload[6], payload[7]]);
    let mut task = [0u8; 8];
    task.copy_from_slice(&payload[8..16]);
    Some((kind, function, u64::from_le_bytes(task)))
}

/// The kind byte of a poll event: a task event's layout, kind 4 (not a [`TaskKind`]: it is
/// about one poll, not the task's life). Written right after the exit of a poll that was kept
/// (not erased by the rewind), on the same thread: that poll served the task.
pub const POLLED_KIND: u8 = 4;

/// A poll event's payload: the task event layout ([`task_payload`]) with kind
/// [`POLLED_KIND`].
///
/// ```
/// use fdr_format::{decode_polled_event, decode_task_event, polled_payload};
/// let w = polled_payload(7, 42);
/// let payload: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
/// assert_eq!(decode_polled_event(&payload), Some((7, 42)));
/// assert_eq!(decode_task_event(&payload), None);
/// ```
#[inline(always)]
pub const fn polled_payload(function: u32, task: u64) -> [u64; 2] {
    let first = TASK_MAGIC[0] as u64
        | (TASK_MAGIC[1] as u64) << 8
        | (POLLED_KIND as u64) << 16
        | (function as u64) << 32;
    [first, task]
}

/// Reads a custom event's payload as a poll event: (function id, task id), or `None` if it is
/// not one.
pub fn decode_polled_event(payload: &[u8]) -> Option<(u32, u64)> {
    if payload.len() != TASK_PAYLOAD_SIZE
        || payload[..2] != TASK_MAGIC
        || payload[2] != POLLED_KIND
        || payload[3] != 0
    {
        return None;
    }
    let function = u32::from_le_bytes([payload[4], payload[5], payload[6], payload[7]]);
    let mut task = [0u8; 8];
    task.copy_from_slice(&payload[8..16]);
    Some((function, u64::from_le_bytes(task)))
}

/// How one task is tied to another (see [`link_payload`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum LinkKind {
    /// The other task is the task's parent: it was made inside the other (a `tracing` span's
    /// parent).
    Parent = 1,
    /// The task follows from the other: the other caused it, without containing it (a
    /// `tracing` span's `follows_from`).
    FollowsFrom = 2,
}

/// The first two bytes of a link event's payload.
pub const LINK_MAGIC: [u8; 2] = *b"Fl";

/// Bytes of a link event's payload: magic, kind, a zero byte, the task's function id (`u32`),
/// the task's id (`u64`), the other task's id (`u64`), the other task's function id (`u32`) and
/// four zero bytes, little-endian.
pub const LINK_PAYLOAD_SIZE: usize = 32;

/// A link event: task `task` of function `id` is tied (`kind`) to task `other_task` of function
/// `other_id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaskLink {
    /// Parent or follows-from.
    pub kind: LinkKind,
    /// The task's function id.
    pub id: u32,
    /// The task's id.
    pub task: u64,
    /// The other task's function id.
    pub other_id: u32,
    /// The other task's id.
    pub other_task: u64,
}

/// A link event's 32-byte payload as four words, written in the block of the thread that made
/// the link, after a `CustomEvent` metadata record like a task event's.
///
/// ```
/// use fdr_format::{decode_link_event, link_payload, LinkKind, TaskLink};
/// let link = TaskLink { kind: LinkKind::Parent, id: 7, task: 42, other_id: 3, other_task: 41 };
/// let payload: Vec<u8> = link_payload(link).iter().flat_map(|x| x.to_le_bytes()).collect();
/// assert_eq!(decode_link_event(&payload), Some(link));
/// ```
#[inline(always)]
pub const fn link_payload(link: TaskLink) -> [u64; 4] {
    let first = LINK_MAGIC[0] as u64
        | (LINK_MAGIC[1] as u64) << 8
        | (link.kind as u64) << 16
        | (link.id as u64) << 32;
    [first, link.task, link.other_task, link.other_id as u64]
}

/// Reads a custom event's payload as a link event, or `None` if it is not one.
pub fn decode_link_event(payload: &[u8]) -> Option<TaskLink> {
    if payload.len() != LINK_PAYLOAD_SIZE
        || payload[..2] != LINK_MAGIC
        || payload[3] != 0
        || payload[28..] != [0; 4]
    {
        return None;
    }
    let kind = match payload[2] {
        1 => LinkKind::Parent,
        2 => LinkKind::FollowsFrom,
        _ => return None,
    };
    let u32_at =
        |i: usize| u32::from_le_bytes([payload[i], payload[i + 1], payload[i + 2], payload[i + 3]]);
    let u64_at = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&payload[i..i + 8]);
        u64::from_le_bytes(w)
    };
    Some(TaskLink {
        kind,
        id: u32_at(4),
        task: u64_at(8),
        other_task: u64_at(16),
        other_id: u32_at(24),
    })
}

/// The first two bytes of an await event's payload.
pub const AWAIT_MAGIC: [u8; 2] = *b"Fw";

/// Bytes of an await event's payload: magic, kind (1 passed, 2 dropped while waiting), a zero
/// byte, the await site's id (`u32`), the ticks waited (`u64`), the polls that found it pending
/// (`u32`), the async function's id (`u32`) and eight zero bytes, little-endian.
pub const AWAIT_PAYLOAD_SIZE: usize = 32;

/// A wait at an `.await` of an instrumented `async fn`: the awaited future returned `Pending`,
/// and `waited` ticks later a poll found it ready (or the future was dropped while waiting).
///
/// Written by the thread that ended the wait, at that moment: inside the poll that passed the
/// await (between its entry and exit, so the poll's event ties it to its task), or, for a task
/// dropped while it waited, right after the task's cancellation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AwaitEvent {
    /// The await site's id (a [`crate::FunctionKind::Await`] entry of the function table).
    pub site: u32,
    /// The async function's id.
    pub function: u32,
    /// Ticks from the poll that returned `Pending` to the end of the wait.
    pub waited: u64,
    /// Polls of the await that returned `Pending` (1 when the first wake-up found it ready).
    pub polls: u32,
    /// The future was dropped while it waited (the task cancelled, or a `select!` branch that
    /// lost): the wait ended without passing the await.
    pub dropped: bool,
}

/// An await event's 32-byte payload as four words, after a `CustomEvent` metadata record in
/// the thread's block.
///
/// ```
/// use fdr_format::{await_payload, decode_await_event, AwaitEvent};
/// let a = AwaitEvent { site: 9, function: 3, waited: 30_000, polls: 2, dropped: false };
/// let payload: Vec<u8> = await_payload(a).iter().flat_map(|x| x.to_le_bytes()).collect();
/// assert_eq!(decode_await_event(&payload), Some(a));
/// ```
#[inline(always)]
pub const fn await_payload(a: AwaitEvent) -> [u64; 4] {
    let first = AWAIT_MAGIC[0] as u64
        | (AWAIT_MAGIC[1] as u64) << 8
        | (if a.dropped { 2u64 } else { 1 }) << 16
        | (a.site as u64) << 32;
    [
        first,
        a.waited,
        a.polls as u64 | (a.function as u64) << 32,
        0,
    ]
}

/// Reads a custom event's payload as an await event, or `None` if it is not one.
pub fn decode_await_event(payload: &[u8]) -> Option<AwaitEvent> {
    if payload.len() != AWAIT_PAYLOAD_SIZE
        || payload[..2] != AWAIT_MAGIC
        || payload[3] != 0
        || payload[24..] != [0; 8]
    {
        return None;
    }
    let dropped = match payload[2] {
        1 => false,
        2 => true,
        _ => return None,
    };
    let u32_at =
        |i: usize| u32::from_le_bytes([payload[i], payload[i + 1], payload[i + 2], payload[i + 3]]);
    let mut w = [0u8; 8];
    w.copy_from_slice(&payload[8..16]);
    Some(AwaitEvent {
        site: u32_at(4),
        function: u32_at(20),
        waited: u64::from_le_bytes(w),
        polls: u32_at(16),
        dropped,
    })
}

/// The first two bytes of a wake event's payload.
pub const WAKE_MAGIC: [u8; 2] = *b"Fs";

/// Bytes of a wake event's payload: magic, kind (1), a zero byte, the async function's id
/// (`u32`), the time of the wake-up (`u64`, ticks), the id of the thread that woke the task
/// (`i32`; 0 when unknown), four zero bytes and eight zero bytes, little-endian.
pub const WAKE_PAYLOAD_SIZE: usize = 32;

/// A poll of a task that had been woken: the task's waker was called at `woken_at` (on thread
/// `waker_tid`), and this poll, the first since, began at the event's own time. The difference
/// is the time the task was ready but not polled (scheduled, in tokio-console's words).
///
/// Written inside the poll, right after its entry and at its time: the poll's event ties it
/// to its task, as an await event's does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WakeEvent {
    /// The async function's id.
    pub function: u32,
    /// When the waker was called (ticks, the clock of the log).
    pub woken_at: u64,
    /// The thread that called it (operating system id; 0 when unknown).
    pub waker_tid: i32,
}

/// A wake event's 32-byte payload as four words.
///
/// ```
/// use fdr_format::{decode_wake_event, wake_payload, WakeEvent};
/// let w = WakeEvent { function: 3, woken_at: 123_456, waker_tid: 77 };
/// let payload: Vec<u8> = wake_payload(w).iter().flat_map(|x| x.to_le_bytes()).collect();
/// assert_eq!(decode_wake_event(&payload), Some(w));
/// ```
#[inline(always)]
pub const fn wake_payload(w: WakeEvent) -> [u64; 4] {
    let first =
        WAKE_MAGIC[0] as u64 | (WAKE_MAGIC[1] as u64) << 8 | 1u64 << 16 | (w.function as u64) << 32;
    [first, w.woken_at, w.waker_tid as u32 as u64, 0]
}

/// Reads a custom event's payload as a wake event, or `None` if it is not one.
pub fn decode_wake_event(payload: &[u8]) -> Option<WakeEvent> {
    if payload.len() != WAKE_PAYLOAD_SIZE
        || payload[..2] != WAKE_MAGIC
        || payload[2] != 1
        || payload[3] != 0
        || payload[20..] != [0; 12]
    {
        return None;
    }
    let u32_at =
        |i: usize| u32::from_le_bytes([payload[i], payload[i + 1], payload[i + 2], payload[i + 3]]);
    let mut w = [0u8; 8];
    w.copy_from_slice(&payload[8..16]);
    Some(WakeEvent {
        function: u32_at(4),
        woken_at: u64::from_le_bytes(w),
        waker_tid: u32_at(16) as i32,
    })
}

/// What happened to a function's recording at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CullKind {
    /// Its calls were all erased for a long run: it stops being recorded (but for samples).
    Culled = 1,
    /// A sampled call reached the threshold: it is recorded again.
    Restored = 2,
}

/// The first two bytes of a cull event's payload.
pub const CULL_MAGIC: [u8; 2] = *b"Fc";

/// A cull event's 16-byte payload (magic, kind, a zero byte, the function id, and the number of
/// its calls erased in a row on this thread), for a `CustomEvent` in the thread's block.
///
/// ```
/// use fdr_format::{cull_payload, decode_cull_event, CullKind};
/// let w = cull_payload(CullKind::Culled, 3, 10_000);
/// let payload: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
/// assert_eq!(decode_cull_event(&payload), Some((CullKind::Culled, 3, 10_000)));
/// ```
#[inline(always)]
pub const fn cull_payload(kind: CullKind, function: u32, run: u64) -> [u64; 2] {
    let first = CULL_MAGIC[0] as u64
        | (CULL_MAGIC[1] as u64) << 8
        | (kind as u64) << 16
        | (function as u64) << 32;
    [first, run]
}

/// Reads a custom event's payload as a cull event: (kind, function id, run), or `None`.
pub fn decode_cull_event(payload: &[u8]) -> Option<(CullKind, u32, u64)> {
    if payload.len() != TASK_PAYLOAD_SIZE || payload[..2] != CULL_MAGIC || payload[3] != 0 {
        return None;
    }
    let kind = match payload[2] {
        1 => CullKind::Culled,
        2 => CullKind::Restored,
        _ => return None,
    };
    let function = u32::from_le_bytes([payload[4], payload[5], payload[6], payload[7]]);
    let mut run = [0u8; 8];
    run.copy_from_slice(&payload[8..16]);
    Some((kind, function, u64::from_le_bytes(run)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_record_layout_matches_xray() {
        let w = function_record(0x0abc_def1, FnKind::EnterArgs, 0xdead_beef);
        let b = w.to_le_bytes();
        // Type bit clear, kind 3 in bits 1..3, id in bits 4..31.
        assert_eq!(
            u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            (0x0abc_def1 << 4) | (3 << 1)
        );
        assert_eq!(u32::from_le_bytes([b[4], b[5], b[6], b[7]]), 0xdead_beef);
        assert_eq!(
            decode_function_record(w),
            Some((0x0abc_def1, FnKind::EnterArgs, 0xdead_beef))
        );
    }

    #[test]
    fn ids_are_truncated_to_28_bits() {
        let w = function_record(0xffff_ffff, FnKind::Enter, 0);
        assert_eq!(decode_function_record(w).unwrap().0, MAX_FUNCTION_ID);
    }

    #[test]
    fn metadata_layouts() {
        let b = meta_bytes(meta::new_cpu_id(3, 0x1122_3344_5566_7788));
        assert_eq!(b[0], 0x05);
        assert_eq!(&b[1..3], &3u16.to_le_bytes());
        assert_eq!(&b[3..11], &0x1122_3344_5566_7788u64.to_le_bytes());
        let b = meta_bytes(meta::walltime(-2, 999_999));
        assert_eq!(b[0], 0x09);
        assert_eq!(&b[1..9], &(-2i64).to_le_bytes());
        assert_eq!(&b[9..13], &999_999i32.to_le_bytes());
        let b = meta_bytes(meta::buffer_extents(4096));
        assert_eq!(b[0], 0x0f);
        assert_eq!(&b[1..9], &4096u64.to_le_bytes());
        assert_eq!(meta_bytes(meta::pid(7))[0], 0x13);
        assert_eq!(meta_bytes(meta::custom_event(10, 0))[0], 0x0b);
        assert_eq!(meta_bytes(meta::call_argument(1))[0], 0x0d);
        assert_eq!(meta_bytes(meta::tsc_wrap(1))[0], 0x07);
        assert_eq!(meta_bytes(meta::new_buffer(1))[0], 0x01);
        assert_eq!(meta_bytes(meta::end_of_buffer())[0], 0x03);
        for k in 0..=9u8 {
            let kind = MetaKind::from_byte((k << 1) | 1).unwrap();
            assert_eq!(kind as u8, k);
        }
        assert_eq!(MetaKind::from_byte(0x15), None);
        assert_eq!(MetaKind::from_byte(0x02), None);
    }
}
