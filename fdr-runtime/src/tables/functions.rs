//! The function table: one static descriptor per instrumented function, gathered by the linker.
//!
//! `#[instrument_fdr]` places a [`FnDesc`] in the [`FUNCTIONS`] link section. The linker lays the
//! descriptors of every crate side by side, so a function's id is its position in the section:
//! nothing registers at run time, and the writer reads the whole table when it writes a log.
//! A descriptor is a static item, so all instantiations of a generic function and all polls of
//! an async function share one.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};

use fdr_format::args::ArgKind;
use std::time::Duration;

use crate::Limit;

/// Every instrumented function of the program, in link order.
#[cfg(feature = "record")]
#[linkme::distributed_slice]
pub static FUNCTIONS: [FnDesc];

/// What kind of code a descriptor stands for: the log format's own [`FunctionKind`], under
/// the name the macros' expansions use.
///
/// [`FunctionKind`]: fdr_format::FunctionKind
pub use fdr_format::FunctionKind as FnKindTag;

/// A function's run of erased calls, as culling counts it.
pub(crate) type Run = AtomicU32;

/// In `FnDesc::trigger_ns`: the limit is learned, and the rest is its `k` in tenths.
const AUTO_TRIGGER: u64 = 1 << 63;

/// The static description of one instrumented function.
///
/// Descriptors are 128 bytes and 128-byte aligned so that the distance from the start of the
/// table turns into an id with one shift. Besides what the macros write, a descriptor holds a
/// byte of run-time flags, which say whether anything records (the gate's copy, see the
/// runtime's `tables::flags` module) and which functions the recording treats specially (a
/// slow-call trigger, a culled function); a hook reads it with one load.
///
/// ```
/// use fdr_runtime::{FnDesc, FnKindTag};
/// static D: FnDesc = FnDesc::new("app::work", "src/main.rs", 12, FnKindTag::Function, &[]);
/// assert_eq!(D.name(), "app::work");
/// ```
///
/// The two cache lines of a descriptor have different writers: the first holds what every hook
/// reads (the flags) and what the log's writer reads, written only when the recording changes
/// how the function is treated; the second holds the function's run of erased calls, which
/// threads write while they learn whether to cull it (see the runtime's `cull` module). So a
/// thread counting a run never takes the flags' line away from the threads reading them.
#[repr(C, align(128))]
#[derive(Debug)]
pub struct FnDesc {
    /// What the running recording does with this function besides recording it (`special`).
    flags: AtomicU8,
    kind: FnKindTag,
    line: u32,
    /// A slow-call limit written in the attribute, in nanoseconds (0: none), or with
    /// [`AUTO_TRIGGER`] a learned limit's `k` in tenths.
    trigger_ns: u64,
    name: &'static str,
    file: &'static str,
    args: &'static [&'static str],
    // The second cache line.
    /// Where the name comes from when it is not `name`.
    source: Source,
    /// What each logged argument's bits hold ([`ArgKind`] codes plus one; 0 not noted yet),
    /// set by the function's first call (its arguments' `LogArg::KIND`): empty for a function
    /// that logs none.
    arg_kinds: &'static [AtomicU8],
    /// The function's erased calls in a row, on all threads together (see `cull`).
    run: Run,
    /// The function's erased calls so far, as threads handed their counts in (see `cull`): what
    /// the cost budget (`lifecycle::budget`) weighs the function by. Never reset.
    erased: AtomicU64,
    /// Where its calls were seen ([`INSIDE`], [`OUTERMOST`]): what the cost budget may stop.
    placement: AtomicU8,
    /// The details of its polls the cost budget stopped recording ([`WAKES_UNNOTED`]), where it
    /// may not stop timing the function (a task's root).
    details: AtomicU8,
    /// Column of an await site ([`FnKindTag::Await`]), from 1; 0 for a function.
    column: u32,
}

/// A call of the function was seen inside another recorded call ([`FnDesc::placement`]).
pub(crate) const INSIDE: u8 = 1;
/// A call of the function was seen as its thread's outermost timed call.
pub(crate) const OUTERMOST: u8 = 2;

/// The cost budget stopped noting when the function's tasks are woken ([`FnDesc::details`]):
/// its polls are timed, but their waker is not wrapped and no wake event is written.
pub(crate) const WAKES_UNNOTED: u8 = 1;

/// Where a descriptor's name comes from.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// The `name` field.
    Static,
    /// For a function annotated alone: a function nested in it, whose type name spells the full
    /// path the name is taken from (see [`FnDesc::nested`]).
    Nested(fn() -> &'static str),
    /// Known at run time (see [`FnDesc::named`]): name, file, line and argument names.
    Named(fn() -> &'static Named),
}

/// What a descriptor named at run time ([`FnDesc::named`]) is called, where it is, and the
/// names of the arguments its entries carry.
///
/// ```
/// use fdr_runtime::Named;
/// static SPAN: Named = Named { name: "app::span", file: "src/app.rs", line: 4, args: &["id"] };
/// assert!(Named::UNNAMED.name.is_empty());
/// # let _ = &SPAN;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Named {
    /// Full name; empty leaves the descriptor out of the log's table.
    pub name: &'static str,
    /// Source file.
    pub file: &'static str,
    /// Line in the source file.
    pub line: u32,
    /// Names of the arguments its entries carry.
    pub args: &'static [&'static str],
}

impl Named {
    /// A descriptor not named yet.
    pub const UNNAMED: Named = Named {
        name: "",
        file: "",
        line: 0,
        args: &[],
    };
}

const _: () = assert!(std::mem::size_of::<FnDesc>() == 128);
const _: () = assert!(std::mem::offset_of!(FnDesc, args) + 16 <= 64);
const _: () = assert!(std::mem::offset_of!(FnDesc, run) >= 64);

impl FnDesc {
    /// A descriptor; the macros build these in `static` items.
    pub const fn new(
        name: &'static str,
        file: &'static str,
        line: u32,
        kind: FnKindTag,
        args: &'static [&'static str],
    ) -> FnDesc {
        FnDesc {
            name,
            file,
            args,
            source: Source::Static,
            arg_kinds: &[],
            trigger_ns: 0,
            line,
            kind,
            flags: AtomicU8::new(0),
            run: Run::new(0),
            erased: AtomicU64::new(0),
            placement: AtomicU8::new(0),
            details: AtomicU8::new(0),
            column: 0,
        }
    }

    /// The same descriptor at column `column` of its line: an await site's, where several
    /// `.await`s can share a line.
    ///
    /// ```
    /// use fdr_runtime::{FnDesc, FnKindTag};
    /// static SITE: FnDesc =
    ///     FnDesc::new("app::handle", "src/db.rs", 42, FnKindTag::Await, &[]).at_column(17);
    /// assert_eq!((SITE.line(), SITE.column()), (42, 17));
    /// ```
    pub const fn at_column(self, column: u32) -> FnDesc {
        FnDesc { column, ..self }
    }

    /// Column in the source line, from 1; 0 when not known (a function's descriptor).
    pub fn column(&self) -> u32 {
        self.column
    }

    /// The same descriptor with a slow-call trigger: a call that lasts longer than `limit_ns`
    /// nanoseconds writes a snapshot (`#[instrument_fdr(trigger = "50ms")]`).
    ///
    /// ```
    /// use fdr_runtime::{FnDesc, FnKindTag, Limit};
    /// static D: FnDesc =
    ///     FnDesc::new("app::handle", "src/main.rs", 3, FnKindTag::Function, &[]).with_trigger(50_000_000);
    /// assert_eq!(D.trigger(), Some(Limit::After(std::time::Duration::from_millis(50))));
    /// ```
    pub const fn with_trigger(self, limit_ns: u64) -> FnDesc {
        FnDesc {
            trigger_ns: limit_ns & !AUTO_TRIGGER,
            ..self
        }
    }

    /// The same descriptor with a learned trigger: a call that lasts longer than `k_tenths / 10`
    /// times the running p99 of the function's calls writes a snapshot
    /// (`#[instrument_fdr(trigger = "auto")]`; see [`Limit::Auto`]).
    ///
    /// ```
    /// use fdr_runtime::{FnDesc, FnKindTag, Limit};
    /// static D: FnDesc =
    ///     FnDesc::new("app::handle", "src/main.rs", 3, FnKindTag::Function, &[]).with_auto_trigger(30);
    /// assert_eq!(D.trigger(), Some(Limit::Auto { k_tenths: 30 }));
    /// ```
    pub const fn with_auto_trigger(self, k_tenths: u32) -> FnDesc {
        FnDesc {
            trigger_ns: AUTO_TRIGGER | k_tenths as u64,
            ..self
        }
    }

    /// The slow-call limit written in the attribute, if any.
    pub fn trigger(&self) -> Option<Limit> {
        match self.trigger_ns {
            0 => None,
            t if t & AUTO_TRIGGER != 0 => Some(Limit::Auto {
                k_tenths: (t & !AUTO_TRIGGER) as u32,
            }),
            t => Some(Limit::After(Duration::from_nanos(t))),
        }
    }

    /// The run-time flags: `flags::OFF`, `flags::TRIGGER`, `flags::CULLED`, `flags::PROBING`,
    /// `flags::PROFILED`, `flags::UNLOGGED`.
    #[inline(always)]
    pub(crate) fn flags(&self) -> u8 {
        self.flags.load(Ordering::Relaxed)
    }

    pub(crate) fn set_flags(&self, flags: u8) {
        self.flags.store(flags, Ordering::Relaxed);
    }

    /// Sets `bits`; returns the flags before.
    pub(crate) fn add_flags(&self, bits: u8) -> u8 {
        self.flags.fetch_or(bits, Ordering::Relaxed)
    }

    /// Clears `bits`; returns the flags before. Release: what was stored before (a probe's mark
    /// in the run) is seen by a thread that sees the bits cleared.
    pub(crate) fn clear_flags(&self, bits: u8) -> u8 {
        self.flags.fetch_and(!bits, Ordering::Release)
    }

    /// Clears `clear` and sets `set` in one step; returns the flags before. Release, as
    /// [`FnDesc::clear_flags`].
    pub(crate) fn swap_flags(&self, clear: u8, set: u8) -> u8 {
        match self
            .flags
            .fetch_update(Ordering::Release, Ordering::Relaxed, |f| {
                Some(f & !clear | set)
            }) {
            Ok(f) | Err(f) => f,
        }
    }

    /// The function's run of erased calls, on every thread together (see `cull`).
    #[inline(always)]
    pub(crate) fn run(&self) -> &Run {
        &self.run
    }

    /// The function's erased calls handed in so far, on every thread together (see `cull`).
    #[inline(always)]
    pub(crate) fn erased(&self) -> &AtomicU64 {
        &self.erased
    }

    /// Whether the descriptor is named at run time ([`FnDesc::named`]): it may have no name yet.
    pub(crate) fn named_at_run_time(&self) -> bool {
        matches!(self.source, Source::Named(_))
    }

    /// Notes that a call of the function was seen as its thread's outermost timed call
    /// (`outermost`), or inside another: one store the first time each is seen, a load after.
    #[inline(always)]
    pub(crate) fn note_placement(&self, outermost: bool) {
        let bit = if outermost { OUTERMOST } else { INSIDE };
        if self.placement.load(Ordering::Relaxed) & bit == 0 {
            self.placement.fetch_or(bit, Ordering::Relaxed);
        }
    }

    /// Where the function's calls were seen so far: [`INSIDE`] and [`OUTERMOST`] bits.
    pub(crate) fn placement(&self) -> u8 {
        self.placement.load(Ordering::Relaxed)
    }

    /// The details of its polls the cost budget stopped recording: [`WAKES_UNNOTED`].
    #[inline(always)]
    pub(crate) fn details(&self) -> u8 {
        self.details.load(Ordering::Relaxed)
    }

    /// Sets (`on`) or clears `bits` of [`FnDesc::details`].
    pub(crate) fn set_details(&self, bits: u8, on: bool) {
        if on {
            self.details.fetch_or(bits, Ordering::Relaxed);
        } else {
            self.details.fetch_and(!bits, Ordering::Relaxed);
        }
    }

    /// A descriptor named after the function that `path` is nested in, as a backtrace shows it
    /// (`crate::module::Type::method`, `<crate::Type as crate::Trait>::method`): the macros use it
    /// where they cannot see the enclosing `impl`. `path` returns its own type name
    /// (`std::any::type_name`), read when the table is written; `name` is only a fallback.
    ///
    /// ```
    /// use fdr_runtime::{FnDesc, FnKindTag};
    /// fn outer() -> &'static FnDesc {
    ///     fn path() -> &'static str {
    ///         fn name_of<T>(_: T) -> &'static str { std::any::type_name::<T>() }
    ///         name_of(path)
    ///     }
    ///     static D: FnDesc = FnDesc::nested("outer", path, file!(), line!(), FnKindTag::Function, &[]);
    ///     &D
    /// }
    /// assert!(outer().name().ends_with("::outer"));
    /// ```
    pub const fn nested(
        name: &'static str,
        path: fn() -> &'static str,
        file: &'static str,
        line: u32,
        kind: FnKindTag,
        args: &'static [&'static str],
    ) -> FnDesc {
        FnDesc {
            source: Source::Nested(path),
            ..FnDesc::new(name, file, line, kind, args)
        }
    }

    /// A descriptor whose name, place and argument names are only known at run time: `info`
    /// returns them, read when the table is written (the `tracing` layer names a span callsite's
    /// descriptor at the callsite's first span). A descriptor whose name is empty is left out of
    /// the log's table.
    ///
    /// ```
    /// use fdr_runtime::{FnDesc, FnKindTag, Named};
    /// fn info() -> &'static Named {
    ///     static N: Named = Named { name: "app::span", file: "src/app.rs", line: 9, args: &["id"] };
    ///     &N
    /// }
    /// static D: FnDesc = FnDesc::named(info, FnKindTag::Scope);
    /// assert_eq!(D.name(), "app::span");
    /// assert_eq!((D.file(), D.line(), D.args()), ("src/app.rs", 9, &["id"][..]));
    /// ```
    pub const fn named(info: fn() -> &'static Named, kind: FnKindTag) -> FnDesc {
        FnDesc {
            source: Source::Named(info),
            ..FnDesc::new("", "", 0, kind, &[])
        }
    }

    /// The same descriptor with a slot for the kind of each logged argument, which the
    /// function's first call fills (`#[instrument_fdr(log_args)]` gives one per argument).
    ///
    /// ```
    /// use std::sync::atomic::AtomicU8;
    /// use fdr_runtime::{ArgKind, FnDesc, FnKindTag};
    /// static KINDS: [AtomicU8; 2] = [AtomicU8::new(0), AtomicU8::new(0)];
    /// static D: FnDesc = FnDesc::new("app::get", "src/main.rs", 3, FnKindTag::Function, &["key", "n"])
    ///     .with_arg_kinds(&KINDS);
    /// assert!(D.arg_kinds_unnoted());
    /// D.note_arg_kinds(&[ArgKind::Text, ArgKind::Signed]);
    /// assert!(!D.arg_kinds_unnoted());
    /// assert_eq!(D.arg_kinds(), [ArgKind::Text, ArgKind::Signed]);
    /// ```
    pub const fn with_arg_kinds(self, kinds: &'static [AtomicU8]) -> FnDesc {
        FnDesc {
            arg_kinds: kinds,
            ..self
        }
    }

    /// Whether the kinds of the logged arguments are still to be noted: one read a call, of a
    /// line no thread writes after the first call.
    #[inline(always)]
    pub fn arg_kinds_unnoted(&self) -> bool {
        self.arg_kinds
            .first()
            .is_some_and(|k| k.load(Ordering::Relaxed) == 0)
    }

    /// Notes what each logged argument holds (the function's first call does, and any that
    /// races it: they write the same).
    #[cold]
    pub fn note_arg_kinds(&self, kinds: &[ArgKind]) {
        // The first slot last: it is the one `arg_kinds_unnoted` reads.
        for (slot, kind) in self.arg_kinds.iter().zip(kinds).rev() {
            slot.store(kind.code() + 1, Ordering::Relaxed);
        }
    }

    /// What each logged argument's bits hold, as far as its calls said.
    pub fn arg_kinds(&self) -> Vec<ArgKind> {
        self.arg_kinds
            .iter()
            .map(|k| ArgKind::from_code(k.load(Ordering::Relaxed).saturating_sub(1)))
            .collect()
    }

    /// Full name as a user reads it (`crate::module::function`).
    pub fn name(&self) -> Cow<'static, str> {
        match self.source {
            Source::Named(info) => Cow::Borrowed(info().name),
            Source::Nested(path) => match nested_cached(self, path) {
                Some(name) => Cow::Borrowed(name),
                None => Cow::Owned(nested_name(path())),
            },
            Source::Static => Cow::Borrowed(self.name),
        }
    }

    /// Source file.
    pub fn file(&self) -> &'static str {
        match self.source {
            Source::Named(info) => info().file,
            _ => self.file,
        }
    }

    /// Line of the function in its source file.
    pub fn line(&self) -> u32 {
        match self.source {
            Source::Named(info) => info().line,
            _ => self.line,
        }
    }

    /// Function, scope or async function.
    pub fn kind(&self) -> FnKindTag {
        self.kind
    }

    /// Names of the logged arguments.
    pub fn args(&self) -> &'static [&'static str] {
        match self.source {
            Source::Named(info) => info().args,
            _ => self.args,
        }
    }

    /// The id of this function in records: its 1-based position in `FUNCTIONS`.
    ///
    /// Only meaningful for descriptors that live in the table (every one the macros make).
    #[cfg(feature = "record")]
    #[inline(always)]
    pub fn id(&'static self) -> u32 {
        id_of(self)
    }
}

#[cfg(feature = "record")]
#[inline(always)]
fn id_of(d: &'static FnDesc) -> u32 {
    id_field_from(d, table_base()) >> fdr_format::ID_SHIFT
}

/// `f`'s id in place in a record's low word (`id << 4`, see [`fdr_format::id_field`]), from the
/// table's address. The one place that turns a descriptor into an id: descriptors are 128
/// bytes, so the 1-based id is `offset / 128 + 1`, and `offset / 128 << 4` is `offset >> 3`.
#[cfg(feature = "record")]
#[inline(always)]
pub(crate) fn id_field_from(f: &'static FnDesc, table: usize) -> u32 {
    const SHIFT: u32 = std::mem::size_of::<FnDesc>().trailing_zeros() - fdr_format::ID_SHIFT;
    let offset = (f as *const FnDesc as usize).wrapping_sub(table);
    ((offset >> SHIFT) as u32).wrapping_add(1 << fdr_format::ID_SHIFT)
}

/// Where the table starts. Miri cannot resolve the linker's section bounds, so there the base
/// is 0: ids stay consistent between records and [`FnDesc::id`], and logs carry no names.
#[cfg(feature = "record")]
#[inline(always)]
pub(crate) fn table_base() -> usize {
    #[cfg(miri)]
    {
        0
    }
    #[cfg(not(miri))]
    {
        FUNCTIONS.as_ptr() as usize
    }
}

/// The whole table (empty under Miri, see [`table_base`]).
#[cfg(feature = "record")]
pub(crate) fn table() -> &'static [FnDesc] {
    #[cfg(miri)]
    {
        &[]
    }
    #[cfg(not(miri))]
    {
        &FUNCTIONS
    }
}

/// Looks a function up by id.
///
/// ```
/// assert!(fdr_runtime::function(0).is_none());
/// ```
#[cfg(feature = "record")]
pub fn function(id: u32) -> Option<&'static FnDesc> {
    table().get((id as usize).checked_sub(1)?)
}

/// The name of a nested descriptor that lives in the table, worked out once per process: a
/// start, the crash box's table, culling's memory and the final log each ask for every name, and
/// working one out from its type name costs about half a microsecond (a crate annotated whole
/// has hundreds of them). `None` for a descriptor outside the table (or without the table).
#[cfg(feature = "record")]
fn nested_cached(d: &FnDesc, path: fn() -> &'static str) -> Option<&'static str> {
    static NAMES: std::sync::OnceLock<Box<[std::sync::OnceLock<Box<str>>]>> =
        std::sync::OnceLock::new();
    let t = table();
    let offset = (d as *const FnDesc as usize).wrapping_sub(t.as_ptr() as usize);
    let i = offset / std::mem::size_of::<FnDesc>();
    if offset % std::mem::size_of::<FnDesc>() != 0 || i >= t.len() {
        return None;
    }
    let names = NAMES.get_or_init(|| (0..t.len()).map(|_| std::sync::OnceLock::new()).collect());
    Some(names[i].get_or_init(|| nested_name(path()).into_boxed_str()))
}

#[cfg(not(feature = "record"))]
fn nested_cached(_: &FnDesc, _: fn() -> &'static str) -> Option<&'static str> {
    None
}

/// The name of the function that the function spelled `path` is nested in: the last segment
/// dropped, generic arguments removed (`app::Conn<_>::read::path` gives `app::Conn::read`).
fn nested_name(path: &str) -> String {
    let mut parent = path.rsplit_once("::").map_or(path, |(parent, _)| parent);
    // The body of an `async fn` is a closure in the path.
    while let Some(outer) = parent.strip_suffix("::{{closure}}") {
        parent = outer;
    }
    // By bytes: `<` and `>` are ASCII, so every run kept between them is whole characters.
    let bytes = parent.as_bytes();
    let mut out = String::with_capacity(parent.len());
    let (mut depth, mut kept_from) = (0usize, 0usize);
    for (i, &c) in bytes.iter().enumerate() {
        match c {
            b'<' if depth == 0 => {
                out.push_str(&parent[kept_from..i]);
                kept_from = i + 1;
                // A `<` after an identifier opens generic arguments, dropped; elsewhere it
                // opens a qualified path (`<T as Trait>`), kept.
                if out.is_empty() || out.ends_with([':', '<', ' ', '&', '[', '(']) {
                    out.push('<');
                } else {
                    depth = 1;
                }
            }
            b'<' if depth > 0 => depth += 1,
            b'>' if depth > 0 => {
                depth -= 1;
                kept_from = i + 1;
            }
            _ => {}
        }
    }
    if depth == 0 {
        out.push_str(&parent[kept_from..]);
    }
    out
}

/// Whether the program called the library's own marker function (`join_trace`'s,
/// [`fdr_format::trace_context::MARKER`]): until it did, the marker is none of the program's
/// functions, and no log's function table lists it.
static MARKER_RAN: AtomicBool = AtomicBool::new(false);

/// The marker function ran (`join_trace`). After the first call, a read and no store: the flag's
/// line stays shared between the threads that join traces.
#[inline]
pub(crate) fn marker_ran() {
    if !MARKER_RAN.load(Ordering::Relaxed) {
        MARKER_RAN.store(true, Ordering::Relaxed);
    }
}

const MARKER: &str = fdr_format::trace_context::MARKER;

/// The function table as extension records: every descriptor with a name (the marker once it
/// ran).
#[cfg(feature = "record")]
pub(crate) fn records() -> impl Iterator<Item = fdr_format::Extension> {
    table().iter().enumerate().filter_map(|(i, f)| {
        let name = f.name();
        // A descriptor kept for a name given at run time, and given none: not a function. The
        // library's own marker (`join_trace`'s) is one only once the program called it.
        if name.is_empty() || (name == MARKER && !MARKER_RAN.load(Ordering::Relaxed)) {
            return None;
        }
        Some(fdr_format::Extension::Function(fdr_format::FunctionInfo {
            id: i as u32 + 1,
            name: name.into_owned(),
            file: f.file().to_string(),
            line: f.line(),
            kind: f.kind(),
            args: f.args().iter().map(|a| a.to_string()).collect(),
            arg_kinds: f.arg_kinds(),
            column: f.column(),
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::nested_name;

    #[test]
    fn a_nested_name_drops_generic_arguments_and_keeps_qualified_paths() {
        for (path, name) in [
            ("app::outer::path", "app::outer"),
            ("app::Foo<T>::method::path", "app::Foo::method"),
            (
                "<app::Foo as app::Tr>::method::path",
                "<app::Foo as app::Tr>::method",
            ),
            (
                "<app::Foo<u8> as app::Tr<Vec<u8>>>::method::path",
                "<app::Foo as app::Tr>::method",
            ),
            ("app::run::{{closure}}::{{closure}}::path", "app::run"),
            (
                "<&mut app::W as core::fmt::Write>::write_str::path",
                "<&mut app::W as core::fmt::Write>::write_str",
            ),
            ("app::Outer<(u8, <T as X>::Y)>::m::path", "app::Outer::m"),
            ("<[u8] as app::Tr>::m::path", "<[u8] as app::Tr>::m"),
            ("app::Größe<ü8>::mß::path", "app::Größe::mß"),
            // Unbalanced: what follows the open `<` is dropped.
            ("app::Foo<T::m::path", "app::Foo"),
            ("path", "path"),
        ] {
            assert_eq!(nested_name(path), name, "{path}");
        }
    }
}
