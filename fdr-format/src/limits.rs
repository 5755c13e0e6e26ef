//! The limits a reader of fdr's files enforces, whatever a file says: each bounds what a length
//! or count field can make a reader allocate, or how deep it goes, so that a corrupt or crafted
//! file is refused with an error naming the limit instead of exhausting memory. Each has one
//! name and one value, used by its check and by every message that states it; `docs/FORMAT.md`
//! lists them ("Limits a reader enforces"), and a test of the `fdr` command checks that table
//! against these values.

/// The largest custom or typed event payload a reader accepts. XRay's own runtime caps events
/// far below this; a larger length field is taken as corruption rather than allocated.
///
/// ```
/// assert_eq!(fdr_format::limits::MAX_EVENT_PAYLOAD, 1 << 20);
/// ```
pub const MAX_EVENT_PAYLOAD: usize = 1 << 20;

/// The largest payload fdr writes in one custom event of its own (an extension record). Readers
/// refuse larger ones in fdr's leading block, which bounds what one length field can make them
/// allocate.
///
/// ```
/// assert_eq!(fdr_format::limits::MAX_EXT_PAYLOAD, 64 * 1024);
/// ```
pub const MAX_EXT_PAYLOAD: usize = 64 * 1024;

/// Calls nested deeper than this on one thread (inferred calls entered at a window's start
/// included) make the log an error: such a stack is taken as a corrupt log rather than grown
/// without end.
///
/// ```
/// assert_eq!(fdr_format::limits::MAX_CALL_DEPTH, 1_048_576);
/// ```
pub const MAX_CALL_DEPTH: usize = 1 << 20;

/// Arguments kept per call; more are ignored.
///
/// ```
/// assert_eq!(fdr_format::limits::MAX_CALL_ARGS, 64);
/// ```
pub const MAX_CALL_ARGS: usize = 64;

/// The most async tasks whose other end (creation or completion) has not been read yet, by
/// default ([`crate::tasks::Tasks::default`]). Each takes about 40 bytes; past the limit
/// [`crate::tasks::Tasks::event`] returns [`crate::tasks::TooManyWaiting`] rather than grow
/// without end.
///
/// ```
/// assert_eq!(fdr_format::limits::MAX_OPEN_TASKS, 1_048_576);
/// ```
pub const MAX_OPEN_TASKS: usize = 1 << 20;

/// Waits at await sites one thread holds, in a reader, for the end of the poll they happened
/// in (it says which task they belong to; see [`crate::awaits`]): a poll that passes more
/// awaits than this has the rest counted, not kept. A poll passes a handful.
pub const MAX_AWAITS_IN_POLL: usize = 1 << 12;

/// The most calls a window's calls hold by default
/// ([`crate::window::WindowLimits::calls`]).
///
/// ```
/// assert_eq!(fdr_format::limits::MAX_WINDOW_CALLS, 4_194_304);
/// ```
pub const MAX_WINDOW_CALLS: usize = 1 << 22;

/// The most argument values, all calls together, a window's calls hold by default
/// ([`crate::window::WindowLimits::arg_values`]): 128 MiB.
///
/// ```
/// assert_eq!(fdr_format::limits::MAX_WINDOW_ARG_VALUES, 16_777_216);
/// ```
pub const MAX_WINDOW_ARG_VALUES: usize = 1 << 24;

/// The most functions a profile file may name.
pub const MAX_PROFILE_FUNCTIONS: usize = 1 << 20;
/// The most trees (threads) in a profile file.
pub const MAX_PROFILE_TREES: usize = 1 << 16;
/// The most nodes in a profile file, all trees together (the runtime's own bound is per
/// thread, and smaller).
pub const MAX_PROFILE_FILE_NODES: usize = 1 << 22;
/// The longest string (a name) in a profile file, bytes.
pub const MAX_PROFILE_STRING: usize = 4096;

/// The longest final-log path a crash box keeps, bytes: the size of its field in the header.
pub const MAX_OUT_PATH: usize = 2048;
/// The largest crash box recovery reads: a pool bigger than this was not made by fdr.
pub const MAX_BOX_BYTES: u64 = 1 << 36;
/// The most buffers a crash box recovery reads has: the recorder's own bound on
/// `buffer_count`.
pub const MAX_BOX_BUFFERS: u64 = 1 << 20;
