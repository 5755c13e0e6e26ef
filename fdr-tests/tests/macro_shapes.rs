#![deny(warnings)]
//! Every function shape `#[instrument_fdr]` accepts: it compiles, keeps its meaning, gets the
//! name a user reads in a backtrace, and records an exit on every way out.
//!
//! Recording tests share one recorder per process, so each takes `fdr_runtime::testing::exclusive()`.

use std::collections::HashMap;
use std::future::Future;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use fdr::{fdr_scope, instrument_fdr};
use fdr_format::reader::{Reader, Record};
use fdr_format::{Extension, FnKind};
use fdr_testkit::futures::poll_once;

// ---------------------------------------------------------------------------------------------
// The shapes.

#[instrument_fdr]
pub fn plain(x: u32) -> u32 {
    x + 1
}

#[instrument_fdr]
fn early(x: i32) -> i32 {
    if x < 0 {
        return -1;
    }
    inner(x) * 2
}

#[instrument_fdr]
fn inner(x: i32) -> i32 {
    x + 1
}

#[instrument_fdr]
fn parse(s: &str) -> Result<u32, std::num::ParseIntError> {
    let n: u32 = s.parse()?;
    Ok(n * 10)
}

#[instrument_fdr]
fn explode(really: bool) -> u32 {
    if really {
        panic!("boom");
    }
    3
}

#[instrument_fdr]
fn recursive(n: u32) -> u32 {
    if n == 0 {
        0
    } else {
        1 + recursive(n - 1)
    }
}

#[instrument_fdr]
fn never(message: &str) -> ! {
    panic!("{message}")
}

#[instrument_fdr]
fn generic<T: Clone + std::fmt::Debug>(value: &T) -> T {
    value.clone()
}

#[instrument_fdr]
fn const_generic<const N: usize>(values: [u8; N]) -> usize {
    values.len() + N
}

#[instrument_fdr]
fn where_bounded<T>(items: &[T]) -> usize
where
    T: PartialEq + Default,
{
    items.iter().filter(|i| **i == T::default()).count()
}

#[instrument_fdr]
fn impl_trait(items: impl IntoIterator<Item = u32>) -> impl Iterator<Item = u32> {
    items.into_iter().map(|i| i * 2)
}

#[instrument_fdr]
fn lifetimes<'a, 'b: 'a>(a: &'a str, _b: &'b str) -> &'a str {
    a
}

#[instrument_fdr]
unsafe fn unsafe_read(p: *const u32) -> u32 {
    *p
}

#[instrument_fdr]
extern "C" fn c_abi(x: u32) -> u32 {
    x ^ 1
}

#[instrument_fdr(name = "custom::renamed")]
fn renamed() -> u8 {
    7
}

#[instrument_fdr(log_args)]
fn all_args(a: u32, b: i8, flag: bool, (_x, _y): (u8, u8)) -> i64 {
    i64::from(a) + i64::from(b) + i64::from(flag)
}

#[instrument_fdr(log_args(c, a))]
fn some_args(a: u64, _b: &str, c: char) -> u64 {
    a + c as u64
}

#[instrument_fdr(tail)]
fn tail_caller(x: i32) -> i32 {
    let y = x + 1;
    inner(y)
}

#[instrument_fdr(tail)]
fn tail_return(x: i32) -> i32 {
    if x > 100 {
        return 0;
    }
    return inner(x);
}

// The final call comes through a `macro_rules!` fragment, inside invisible delimiters.
macro_rules! tail_through_fragment {
    ($name:ident, $x:ident, $call:expr) => {
        #[instrument_fdr(tail)]
        fn $name($x: i32) -> i32 {
            $call
        }
    };
}

tail_through_fragment!(tail_fragment, x, inner(x + 2));

#[instrument_fdr]
fn with_scope(n: u32) -> u32 {
    let a = {
        fdr_scope!("first");
        n + 1
    };
    fdr_scope!("second");
    a * 2
}

pub mod shapes {
    use std::pin::Pin;
    use std::rc::Rc;

    use fdr::instrument_fdr;

    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct Counter {
        pub n: u32,
    }

    // The receiver shapes under test have bodies that cannot take long: `always` keeps them
    // recorded.
    #[instrument_fdr(always)]
    impl Counter {
        pub fn new() -> Counter {
            Counter { n: 0 }
        }
        pub fn by_ref(&self) -> u32 {
            self.n
        }
        pub fn by_mut(&mut self) -> u32 {
            self.n += 1;
            self.n
        }
        pub fn by_value(self) -> u32 {
            self.n
        }
        pub fn by_mut_value(mut self) -> u32 {
            self.n += 10;
            self.n
        }
        #[allow(clippy::boxed_local)] // the shape under test
        pub fn boxed(self: Box<Self>) -> u32 {
            self.n
        }
        pub fn rc(self: Rc<Self>) -> u32 {
            self.n
        }
        pub fn pinned(self: Pin<&mut Self>) -> u32 {
            self.n
        }
        #[instrument_fdr(skip)]
        pub fn skipped(&self) -> u32 {
            self.n
        }
        #[instrument_fdr(name = "counter::special", log_args)]
        pub fn special(&self, k: u32) -> u32 {
            self.n + k
        }
        pub const fn constant() -> u32 {
            5
        }
    }

    pub trait Shape {
        fn area(&self) -> u32;
        #[instrument_fdr]
        fn described(&self) -> u32 {
            self.area() + 1000
        }
    }

    #[instrument_fdr(always)]
    impl Shape for Counter {
        fn area(&self) -> u32 {
            self.n * 2
        }
    }

    #[instrument_fdr]
    pub trait Named {
        #[instrument_fdr(always)]
        fn name(&self) -> &'static str {
            "unnamed"
        }
        fn id(&self) -> u32;
    }

    impl Named for Counter {
        #[instrument_fdr]
        fn id(&self) -> u32 {
            42
        }
    }

    pub struct Wrapper<T>(pub T);

    #[instrument_fdr]
    impl<T: Clone> Wrapper<T> {
        pub fn get(&self) -> T {
            self.0.clone()
        }
    }

    #[instrument_fdr]
    impl<T> Shape for Wrapper<Vec<T>> {
        fn area(&self) -> u32 {
            self.0.len() as u32
        }
    }

    #[instrument_fdr]
    impl Shape for u8 {
        fn area(&self) -> u32 {
            u32::from(*self)
        }
    }

    impl<T: Clone> Wrapper<T> {
        #[instrument_fdr]
        pub fn lone_generic(&self) -> T {
            self.0.clone()
        }
    }

    impl Named for Vec<u8> {
        #[instrument_fdr]
        fn id(&self) -> u32 {
            self.len() as u32
        }
    }

    pub struct Lone;

    impl Lone {
        #[instrument_fdr]
        pub fn alone(&self) -> u32 {
            9
        }
    }

    #[instrument_fdr]
    pub async fn fetch(x: u32) -> u32 {
        super::Yield::default().await;
        x * 3
    }

    #[instrument_fdr(log_args)]
    pub async fn fetch_logged(x: u32) -> u32 {
        super::Yield::default().await;
        x + 1
    }

    #[instrument_fdr]
    pub async fn fallible(s: &str) -> Result<u32, std::num::ParseIntError> {
        let n: u32 = s.parse()?;
        Ok(n)
    }

    #[instrument_fdr]
    impl Counter {
        pub async fn async_method(&self, k: u32) -> u32 {
            super::Yield::default().await;
            self.n + k
        }
    }
}

// Annotating many functions at once: bodies that cannot take long are left out.
pub mod accessors {
    use fdr::instrument_fdr;

    #[derive(Default)]
    pub struct Interval {
        pub lower: u32,
        pub upper: u32,
    }

    #[instrument_fdr]
    impl Interval {
        // Field access, assignment and comparison: left out.
        pub fn lower(&self) -> u32 {
            self.lower
        }
        pub fn set_lower(&mut self, lower: u32) {
            self.lower = lower;
        }
        pub fn is_empty(&self) -> bool {
            self.upper <= self.lower
        }
        // A call: recorded.
        pub fn len(&self) -> u32 {
            self.upper.saturating_sub(self.lower)
        }
        // A loop: recorded.
        pub fn sum(&self) -> u64 {
            let mut total = 0;
            for i in self.lower..self.upper {
                total += u64::from(i);
            }
            total
        }
        // Cannot take long, kept in.
        #[instrument_fdr(always)]
        pub fn upper(&self) -> u32 {
            self.upper
        }
        // Calls, left out.
        #[instrument_fdr(skip)]
        pub fn width(&self) -> u32 {
            self.len() + 1
        }
        // Its own options make it annotated on its own: recorded whatever its body.
        #[instrument_fdr(log_args)]
        pub fn set_upper(&mut self, upper: u32) {
            self.upper = upper;
        }
    }

    /// Annotated alone, a body that cannot take long is recorded.
    #[instrument_fdr]
    pub fn lone_accessor(i: &Interval) -> u32 {
        i.lower
    }

    /// `always` on a function annotated alone changes nothing.
    #[instrument_fdr(always)]
    pub fn lone_always(i: &Interval) -> u32 {
        i.upper
    }
}

// A whole module: its functions, `impl` blocks, traits and nested modules, by the same rules.
#[instrument_fdr]
pub mod parser {
    use fdr::instrument_fdr;

    pub struct Parser {
        pub pos: usize,
        pub input: Vec<u8>,
    }

    // Cannot take long: left out.
    pub fn is_space(b: u8) -> bool {
        b == b' '
    }

    pub fn count(input: &str) -> usize {
        Parser::new(input).count_digits()
    }

    #[instrument_fdr(trigger = "50ms")]
    pub fn guarded(input: &str) -> usize {
        count(input)
    }

    #[instrument_fdr(always)]
    pub fn zero() -> usize {
        0
    }

    #[instrument_fdr(skip)]
    pub fn skipped(input: &str) -> usize {
        count(input)
    }

    pub const fn limit() -> usize {
        64
    }

    impl Parser {
        pub fn new(input: &str) -> Parser {
            Parser {
                pos: 0,
                input: input.as_bytes().to_vec(),
            }
        }
        // Cannot take long: left out.
        pub fn pos(&self) -> usize {
            self.pos
        }
        pub fn count_digits(&mut self) -> usize {
            let mut n = 0;
            while self.pos < self.input.len() {
                if digits::is_digit(self.input[self.pos]) {
                    n += 1;
                }
                self.pos += 1;
            }
            n
        }
    }

    pub trait Visit {
        fn visit(&self, b: u8) -> bool {
            self.accept(b)
        }
        fn accept(&self, b: u8) -> bool;
    }

    impl Visit for Parser {
        // Cannot take long: left out.
        fn accept(&self, b: u8) -> bool {
            b != 0
        }
    }

    pub mod digits {
        pub fn is_digit(b: u8) -> bool {
            b.is_ascii_digit()
        }
    }

    // Annotated itself: the module leaves it to its own attribute and options.
    #[instrument_fdr(log_args)]
    impl Parser {
        pub fn at(&self, i: usize) -> u8 {
            self.input[i]
        }
    }

    // Left out, calls and all.
    #[instrument_fdr(skip)]
    impl Parser {
        pub fn rest(&self) -> usize {
            self.input.len() - self.pos()
        }
    }
}

// Slow-call limits in the function table.
#[instrument_fdr(trigger = "500us")]
fn limited(x: u32) -> u32 {
    x + 2
}

#[instrument_fdr(trigger = "auto:k=5")]
fn learned_limit(x: u32) -> u32 {
    x + 3
}

#[instrument_fdr(trigger = "2s", log_args)]
async fn limited_task(x: u32) -> u32 {
    x * 2
}

#[instrument_fdr]
impl crate::accessors::Interval {
    #[instrument_fdr(trigger = "1ns")]
    pub fn limited_method(&self) -> u32 {
        self.len()
    }
}

use fdr_testkit::logs::decode;
use fdr_testkit::recording::every_call;
use shapes::{Counter, Named, Shape};

/// A future that is pending once, then ready: it makes a poll boundary.
#[derive(Default)]
pub struct Yield {
    yielded: bool,
}

impl Future for Yield {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            Poll::Ready(())
        } else {
            self.yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Polls `fut` until it is ready.
fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    loop {
        if let Poll::Ready(v) = poll_once(fut.as_mut()) {
            return v;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reading the function table without recording.

fn descriptor(name: &str) -> &'static fdr_runtime::FnDesc {
    let found: Vec<_> = fdr_runtime::FUNCTIONS
        .iter()
        // An async function's await sites carry its name.
        .filter(|d| d.name() == name && d.kind() != fdr_runtime::FnKindTag::Await)
        .collect();
    assert_eq!(found.len(), 1, "descriptors named {name:?}: {found:?}");
    found[0]
}

const M: &str = "macro_shapes";

#[test]
fn the_shapes_keep_their_meaning() {
    // Its calls are recorded by whichever recording test runs meanwhile, whose log then holds
    // them: it waits its turn as they do (seen under qemu, where the tests run slower).
    let _one_recorder = fdr_runtime::testing::exclusive();
    assert_eq!(plain(1), 2);
    assert_eq!(early(-5), -1);
    assert_eq!(early(1), 4);
    assert_eq!(parse("4"), Ok(40));
    assert!(parse("x").is_err());
    assert_eq!(recursive(5), 5);
    assert_eq!(generic(&"a".to_string()), "a");
    assert_eq!(const_generic([1, 2, 3]), 6);
    assert_eq!(where_bounded(&[0, 1, 0]), 2);
    assert_eq!(impl_trait(vec![1, 2]).collect::<Vec<_>>(), vec![2, 4]);
    assert_eq!(lifetimes("a", "b"), "a");
    // SAFETY: the pointer is to a live local.
    assert_eq!(unsafe { unsafe_read(&5) }, 5);
    assert_eq!(c_abi(2), 3);
    assert_eq!(renamed(), 7);
    assert_eq!(all_args(1, -1, true, (0, 0)), 1);
    assert_eq!(some_args(1, "", 'a'), 98);
    assert_eq!(tail_caller(1), 3);
    assert_eq!(tail_return(1), 2);
    assert_eq!(tail_return(101), 0);
    assert_eq!(with_scope(1), 4);
    let mut c = Counter::new();
    assert_eq!(c.by_mut(), 1);
    assert_eq!(c.by_ref(), 1);
    assert_eq!(c.clone().by_value(), 1);
    assert_eq!(c.clone().by_mut_value(), 11);
    assert_eq!(Box::new(c.clone()).boxed(), 1);
    assert_eq!(Rc::new(c.clone()).rc(), 1);
    assert_eq!(pin!(c.clone()).as_mut().pinned(), 1);
    assert_eq!(c.skipped(), 1);
    assert_eq!(c.special(2), 3);
    const FIVE: u32 = Counter::constant();
    assert_eq!(FIVE, 5);
    assert_eq!(c.area(), 2);
    assert_eq!(c.described(), 1002);
    assert_eq!(c.name(), "unnamed");
    assert_eq!(c.id(), 42);
    assert_eq!(shapes::Wrapper(3u8).get(), 3);
    assert_eq!(shapes::Wrapper(vec![1, 2]).area(), 2);
    assert_eq!(4u8.area(), 4);
    assert_eq!(shapes::Lone.alone(), 9);
    assert_eq!(block_on(shapes::fetch(2)), 6);
    assert_eq!(block_on(shapes::fetch_logged(2)), 3);
    assert_eq!(block_on(shapes::fallible("8")), Ok(8));
    assert!(block_on(shapes::fallible("y")).is_err());
    assert_eq!(block_on(c.async_method(1)), 2);
    assert!(std::panic::catch_unwind(|| explode(true)).is_err());
    assert_eq!(explode(false), 3);
    assert!(std::panic::catch_unwind(|| never("down")).is_err());
}

#[test]
fn names_are_what_a_backtrace_shows() {
    for free in [
        "plain",
        "generic",
        "c_abi",
        "unsafe_read",
        "never",
        "impl_trait",
    ] {
        descriptor(&format!("{M}::{free}"));
    }
    descriptor("custom::renamed");
    descriptor("counter::special");
    for method in [
        "new",
        "by_ref",
        "by_mut",
        "by_value",
        "by_mut_value",
        "boxed",
        "rc",
        "pinned",
        "async_method",
    ] {
        descriptor(&format!("{M}::shapes::Counter::{method}"));
    }
    descriptor(&format!(
        "<{M}::shapes::Counter as {M}::shapes::Shape>::area"
    ));
    descriptor(&format!("{M}::shapes::Named::name"));
    descriptor(&format!("{M}::shapes::Wrapper::get"));
    descriptor(&format!(
        "<{M}::shapes::Wrapper as {M}::shapes::Shape>::area"
    ));
    descriptor(&format!("<u8 as {M}::shapes::Shape>::area"));
    descriptor(&format!("{M}::shapes::fetch"));
    // fdr_scope! names are the module path and the scope's name.
    descriptor(&format!("{M}::first"));
    descriptor(&format!("{M}::second"));
    let all: Vec<String> = fdr_runtime::FUNCTIONS
        .iter()
        .map(|d| d.name().to_string())
        .collect();
    for left_out in ["skipped", "constant"] {
        assert!(
            !all.iter().any(|n| n.ends_with(left_out)),
            "{left_out} should not be instrumented: {all:?}"
        );
    }
}

#[test]
fn descriptors_carry_kind_file_line_and_arguments() {
    use fdr_runtime::FnKindTag;
    let d = descriptor(&format!("{M}::plain"));
    assert_eq!(d.kind(), FnKindTag::Function);
    assert_eq!(d.file(), file!());
    assert_eq!(d.line(), 23, "the line of `fn plain`");
    assert_eq!(d.args(), &[] as &[&str]);
    assert_eq!(
        descriptor(&format!("{M}::shapes::fetch")).kind(),
        FnKindTag::Async
    );
    assert_eq!(descriptor(&format!("{M}::first")).kind(), FnKindTag::Scope);
    assert_eq!(
        descriptor(&format!("{M}::all_args")).args(),
        &["a", "b", "flag", "_x", "_y"]
    );
    assert_eq!(descriptor(&format!("{M}::some_args")).args(), &["c", "a"]);
    assert_eq!(
        descriptor(&format!("{M}::shapes::fetch_logged")).args(),
        &["x"]
    );
}

#[test]
fn generic_instantiations_share_one_descriptor() {
    let mut results = None;
    let log = record_log(|| {
        results = Some((
            generic(&1u8),
            generic(&"s"),
            const_generic([0u8; 2]),
            const_generic([0u8; 5]),
        ));
    });
    assert_eq!(results, Some((1, "s", 4, 10)));
    let table = decode(&log[..]).expect("a valid log").functions;
    let events = read(&log);
    for function in ["generic", "const_generic"] {
        let name = format!("{M}::{function}");
        let entries: Vec<u32> = table
            .iter()
            .filter(|f| f.name == name)
            .map(|f| f.id)
            .collect();
        assert_eq!(entries.len(), 1, "table entries named {name}: {entries:?}");
        // Two instantiations were called: each entry and exit carries the one entry's id.
        let ids: Vec<u32> = events
            .iter()
            .filter(|e| e.text.ends_with(&format!(" {function}")))
            .map(|e| e.id)
            .collect();
        assert_eq!(ids, [entries[0]; 4], "records of {name}");
    }
    let ids: Vec<u32> = fdr_runtime::FUNCTIONS.iter().map(|d| d.id()).collect();
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(ids.len(), unique.len(), "ids are unique");
}

// ---------------------------------------------------------------------------------------------
// Recording.

/// One function record as a line: `> name` enter, `> name(1, 2)` enter with arguments,
/// `< name` exit, `<< name` tail exit; with the thread and the function id.
#[derive(Debug)]
struct Event {
    tid: i32,
    id: u32,
    text: String,
}

/// Runs `f` under a recorder on the injected clock (threshold zero: nothing is erased) and
/// returns the function records of the finished log, in file order.
fn record(f: impl FnOnce()) -> Vec<Event> {
    read(&record_log(f))
}

/// Runs `f` as [`record`] does, and returns the finished log.
fn record_log(f: impl FnOnce()) -> Vec<u8> {
    let _one_recorder = fdr_runtime::testing::exclusive();
    fdr_runtime::testing::use_mock_clock(1_000_000_000);
    let rec = fdr::start(every_call()).expect("start");
    f();
    let mut log = Vec::new();
    rec.finish_to(&mut log).expect("finish");
    fdr_runtime::testing::use_real_clock();
    log
}

fn read(log: &[u8]) -> Vec<Event> {
    let mut names = HashMap::new();
    let mut events: Vec<Event> = Vec::new();
    let mut reader = Reader::new(log).expect("header");
    let mut tid = 0;
    let mut args: Vec<u64> = Vec::new();
    let mut pending: Option<(i32, u32)> = None;
    let flush = |events: &mut Vec<Event>, pending: &mut Option<(i32, u32)>, args: &mut Vec<u64>| {
        if let Some((tid, id)) = pending.take() {
            let list: Vec<String> = args.drain(..).map(|a| a.to_string()).collect();
            events.push(Event {
                tid,
                id,
                text: format!("> #{id}({})", list.join(", ")),
            });
        }
    };
    while let Some((_, record)) = reader.next_record().expect("a valid log") {
        if !matches!(record, Record::CallArgument { .. }) {
            flush(&mut events, &mut pending, &mut args);
        }
        match record {
            Record::NewBuffer { tid: t } => tid = t,
            Record::CustomEvent { payload, .. } => {
                if let Ok(Some(Extension::Function(info))) = Extension::decode(payload) {
                    names.insert(info.id, info.name);
                }
            }
            Record::CallArgument { value } => args.push(value),
            Record::Function { id, kind, .. } => {
                let text = match kind {
                    FnKind::Enter => format!("> #{id}"),
                    FnKind::Exit => format!("< #{id}"),
                    FnKind::TailExit => format!("<< #{id}"),
                    FnKind::EnterArgs => {
                        pending = Some((tid, id));
                        continue;
                    }
                };
                events.push(Event { tid, id, text });
            }
            _ => {}
        }
    }
    flush(&mut events, &mut pending, &mut args);
    for e in &mut events {
        let name = names
            .get(&e.id)
            .unwrap_or_else(|| panic!("id {} is not in the table", e.id));
        let short = name.strip_prefix("macro_shapes::").unwrap_or(name);
        e.text = e.text.replace(&format!("#{}", e.id), short);
    }
    events
}

fn lines(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.text.as_str()).collect()
}

#[test]
fn exit_is_recorded_on_every_way_out() {
    let events = record(|| {
        plain(1);
        early(-1);
        early(1);
        parse("x").unwrap_err();
        std::panic::catch_unwind(|| explode(true)).unwrap_err();
        std::panic::catch_unwind(|| never("down")).unwrap_err();
    });
    assert_eq!(
        lines(&events),
        [
            "> plain",
            "< plain",
            "> early",
            "< early",
            "> early",
            "> inner",
            "< inner",
            "< early",
            "> parse",
            "< parse",
            "> explode",
            "< explode",
            "> never",
            "< never",
        ]
    );
}

#[test]
fn recursion_nests() {
    let events = record(|| {
        recursive(2);
    });
    assert_eq!(
        lines(&events),
        [
            "> recursive",
            "> recursive",
            "> recursive",
            "< recursive",
            "< recursive",
            "< recursive"
        ]
    );
}

#[test]
fn tail_records_a_tail_exit_before_the_final_call() {
    let events = record(|| {
        tail_caller(1);
        tail_return(1);
        tail_return(101);
    });
    assert_eq!(
        lines(&events),
        [
            "> tail_caller",
            "<< tail_caller",
            "> inner",
            "< inner",
            "> tail_return",
            "<< tail_return",
            "> inner",
            "< inner",
            "> tail_return",
            "< tail_return",
        ]
    );
}

#[test]
fn tail_finds_a_final_call_written_through_a_macro_fragment() {
    let mut result = None;
    let events = record(|| result = Some(tail_fragment(1)));
    assert_eq!(result, Some(4));
    assert_eq!(
        lines(&events),
        ["> tail_fragment", "<< tail_fragment", "> inner", "< inner"]
    );
}

#[test]
fn logged_arguments_follow_the_entry() {
    let events = record(|| {
        all_args(1, -1, true, (0, 0));
        some_args(1, "", 'a');
        Counter::new().special(4);
    });
    assert_eq!(
        lines(&events),
        [
            // The names the tuple pattern binds are parameters too.
            "> all_args(1, 18446744073709551615, 1, 0, 0)",
            "< all_args",
            "> some_args(97, 1)",
            "< some_args",
            "> shapes::Counter::new",
            "< shapes::Counter::new",
            "> counter::special(4)",
            "< counter::special",
        ]
    );
}

#[test]
fn scopes_record_the_rest_of_their_block() {
    let events = record(|| {
        with_scope(1);
    });
    assert_eq!(
        lines(&events),
        [
            "> with_scope",
            "> first",
            "< first",
            "> second",
            "< second",
            "< with_scope"
        ]
    );
}

#[test]
fn methods_and_trait_methods_are_recorded_under_their_names() {
    let events = record(|| {
        let mut c = Counter::new();
        c.by_mut();
        c.skipped();
        c.area();
        4u8.area();
    });
    assert_eq!(
        lines(&events),
        [
            "> shapes::Counter::new",
            "< shapes::Counter::new",
            "> shapes::Counter::by_mut",
            "< shapes::Counter::by_mut",
            "> <macro_shapes::shapes::Counter as macro_shapes::shapes::Shape>::area",
            "< <macro_shapes::shapes::Counter as macro_shapes::shapes::Shape>::area",
            "> <u8 as macro_shapes::shapes::Shape>::area",
            "< <u8 as macro_shapes::shapes::Shape>::area",
        ]
    );
}

#[test]
fn generic_instantiations_record_one_id() {
    let events = record(|| {
        generic(&1u8);
        generic(&"s");
        const_generic([0u8; 2]);
        const_generic([0u8; 3]);
    });
    assert_eq!(
        lines(&events),
        [
            "> generic",
            "< generic",
            "> generic",
            "< generic",
            "> const_generic",
            "< const_generic",
            "> const_generic",
            "< const_generic",
        ]
    );
    assert_eq!(events[0].id, events[2].id);
    assert_eq!(events[4].id, events[6].id);
}

#[test]
fn each_poll_of_an_async_fn_is_a_call() {
    let events = record(|| {
        assert_eq!(block_on(shapes::fetch(1)), 3);
        assert_eq!(block_on(shapes::fetch_logged(5)), 6);
        assert!(block_on(shapes::fallible("z")).is_err());
    });
    assert_eq!(
        lines(&events),
        [
            "> shapes::fetch",
            "< shapes::fetch",
            "> shapes::fetch",
            "< shapes::fetch",
            "> shapes::fetch_logged(5)",
            "< shapes::fetch_logged",
            "> shapes::fetch_logged",
            "< shapes::fetch_logged",
            "> shapes::fallible",
            "< shapes::fallible",
        ]
    );
    // All polls of all calls of one async fn share its id.
    let fetch_ids: Vec<u32> = events
        .iter()
        .filter(|e| e.text.ends_with("shapes::fetch"))
        .map(|e| e.id)
        .collect();
    assert_eq!(fetch_ids.len(), 4);
    assert!(fetch_ids.iter().all(|id| *id == fetch_ids[0]));
}

#[test]
fn a_future_moved_between_threads_is_recorded_where_it_is_polled() {
    let events = record(|| {
        let mut fut = Box::pin(shapes::fetch(2));
        assert!(poll_once(fut.as_mut()).is_pending());
        let done = std::thread::spawn(move || poll_once(fut.as_mut()))
            .join()
            .unwrap();
        assert_eq!(done, Poll::Ready(6));
    });
    let by_thread: Vec<(i32, &str)> = events.iter().map(|e| (e.tid, e.text.as_str())).collect();
    assert_eq!(
        by_thread,
        [
            (1, "> shapes::fetch"),
            (1, "< shapes::fetch"),
            (2, "> shapes::fetch"),
            (2, "< shapes::fetch"),
        ]
    );
}

#[test]
fn methods_annotated_alone_get_their_type_in_the_name() {
    let events = record(|| {
        let c = Counter::new();
        c.described();
        c.id();
        shapes::Lone.alone();
        shapes::Wrapper(1u8).lone_generic();
        shapes::Wrapper("s").lone_generic();
        vec![1u8].id();
    });
    assert_eq!(
        lines(&events),
        [
            "> shapes::Counter::new",
            "< shapes::Counter::new",
            // A default body is one function for every implementor, named after the trait.
            "> shapes::Shape::described",
            "> <macro_shapes::shapes::Counter as macro_shapes::shapes::Shape>::area",
            "< <macro_shapes::shapes::Counter as macro_shapes::shapes::Shape>::area",
            "< shapes::Shape::described",
            "> <macro_shapes::shapes::Counter as macro_shapes::shapes::Named>::id",
            "< <macro_shapes::shapes::Counter as macro_shapes::shapes::Named>::id",
            "> shapes::Lone::alone",
            "< shapes::Lone::alone",
            "> shapes::Wrapper::lone_generic",
            "< shapes::Wrapper::lone_generic",
            "> shapes::Wrapper::lone_generic",
            "< shapes::Wrapper::lone_generic",
            "> <alloc::vec::Vec as macro_shapes::shapes::Named>::id",
            "< <alloc::vec::Vec as macro_shapes::shapes::Named>::id",
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Annotating many functions at once, and triggers.

/// The table's names, for checking what was left out.
fn table_names() -> Vec<String> {
    fdr_runtime::FUNCTIONS
        .iter()
        .map(|d| d.name().to_string())
        .collect()
}

#[test]
fn an_annotated_impl_block_leaves_out_bodies_that_cannot_take_long() {
    let mut interval = accessors::Interval { lower: 1, upper: 4 };
    let (mut results, mut lone) = (None, 0);
    let events = record(|| {
        interval.set_lower(2);
        results = Some((
            interval.lower(),
            interval.is_empty(),
            interval.len(),
            interval.sum(),
            interval.upper(),
            interval.width(),
        ));
        interval.set_upper(5);
        lone = accessors::lone_accessor(&interval) + accessors::lone_always(&interval);
    });
    assert_eq!(results, Some((2, false, 2, 5, 4, 3)));
    assert_eq!((lone, interval.upper), (7, 5));
    assert_eq!(
        lines(&events),
        [
            "> accessors::Interval::len",
            "< accessors::Interval::len",
            "> accessors::Interval::sum",
            "< accessors::Interval::sum",
            // `always` keeps a body that cannot take long.
            "> accessors::Interval::upper",
            "< accessors::Interval::upper",
            // `width` is skipped; the `len` it calls is recorded.
            "> accessors::Interval::len",
            "< accessors::Interval::len",
            // Options of its own: annotated on its own.
            "> accessors::Interval::set_upper(5)",
            "< accessors::Interval::set_upper",
            // A function annotated alone is recorded whatever its body.
            "> accessors::lone_accessor",
            "< accessors::lone_accessor",
            "> accessors::lone_always",
            "< accessors::lone_always",
        ]
    );
    let all = table_names();
    for left_out in ["lower", "set_lower", "is_empty", "width"] {
        let name = format!("{M}::accessors::Interval::{left_out}");
        assert!(!all.contains(&name), "{name} is in the table");
    }
    for kept in ["len", "sum", "upper", "set_upper"] {
        descriptor(&format!("{M}::accessors::Interval::{kept}"));
    }
}

#[test]
fn an_annotated_module_records_its_functions_and_blocks() {
    use parser::Visit;
    let mut results = None;
    let events = record(|| {
        let p = parser::Parser::new("1a");
        results = Some((
            parser::is_space(b' '),
            p.pos(),
            p.accept(1),
            p.visit(0),
            p.at(1),
            p.rest(),
            parser::zero(),
            parser::count("1a"),
            parser::skipped(""),
            parser::limit(),
        ));
    });
    assert_eq!(results, Some((true, 0, true, false, b'a', 2, 0, 1, 0, 64)));
    assert_eq!(
        lines(&events),
        [
            "> parser::Parser::new",
            "< parser::Parser::new",
            // A trait's default body; the implementation's `accept` cannot take long.
            "> parser::Visit::visit",
            "< parser::Visit::visit",
            // An `impl` block annotated itself, with its own options.
            "> parser::Parser::at(1)",
            "< parser::Parser::at",
            "> parser::zero",
            "< parser::zero",
            "> parser::count",
            "> parser::Parser::new",
            "< parser::Parser::new",
            "> parser::Parser::count_digits",
            // A nested module.
            "> parser::digits::is_digit",
            "< parser::digits::is_digit",
            "> parser::digits::is_digit",
            "< parser::digits::is_digit",
            "< parser::Parser::count_digits",
            "< parser::count",
            // `skipped` is left out; what it calls is not.
            "> parser::count",
            "> parser::Parser::new",
            "< parser::Parser::new",
            "> parser::Parser::count_digits",
            "< parser::Parser::count_digits",
            "< parser::count",
        ]
    );
    let all = table_names();
    for left_out in [
        format!("{M}::parser::is_space"),
        format!("{M}::parser::skipped"),
        format!("{M}::parser::limit"),
        format!("{M}::parser::Parser::pos"),
        format!("{M}::parser::Parser::rest"),
        format!("<{M}::parser::Parser as {M}::parser::Visit>::accept"),
    ] {
        assert!(!all.contains(&left_out), "{left_out} is in the table");
    }
    // Each function once: the impl block with an attribute of its own expanded once.
    descriptor(&format!("{M}::parser::Parser::at"));
    descriptor(&format!("{M}::parser::guarded"));
}

#[test]
fn descriptors_carry_the_trigger_limit() {
    let limit = |name: &str| {
        let d = descriptor(&format!("{M}::{name}"));
        fdr_runtime::function(d.id())
            .expect("the descriptor is in the table")
            .trigger()
    };
    let after = |d: Duration| Some(fdr::Limit::After(d));
    assert_eq!(limit("limited"), after(Duration::from_micros(500)));
    assert_eq!(limit("limited_task"), after(Duration::from_secs(2)));
    assert_eq!(
        limit("accessors::Interval::limited_method"),
        after(Duration::from_nanos(1))
    );
    assert_eq!(limit("parser::guarded"), after(Duration::from_millis(50)));
    assert_eq!(
        limit("learned_limit"),
        Some(fdr::Limit::Auto { k_tenths: 50 })
    );
    assert_eq!(limit("plain"), None);
    assert_eq!(limit("parser::count"), None);
    assert_eq!(
        descriptor(&format!("{M}::limited_task")).kind(),
        fdr_runtime::FnKindTag::Async
    );
    assert_eq!(descriptor(&format!("{M}::limited_task")).args(), &["x"]);
    // And they still run as written.
    assert_eq!(limited(1), 3);
    assert_eq!(learned_limit(1), 4);
    assert_eq!(block_on(limited_task(2)), 4);
    let interval = accessors::Interval { lower: 1, upper: 3 };
    assert_eq!(interval.limited_method(), 2);
    assert_eq!(parser::guarded("12"), 2);
}

// ---------------------------------------------------------------------------------------------
// An annotated `async fn` is a plain `fn` that makes its future when called. What the `async fn`
// meant is kept: the lifetimes its future captures, when its arguments are taken and dropped,
// the types its body is checked against, and the traits it implements.

pub mod tasks {
    use std::cell::RefCell;
    use std::fmt::Display;
    use std::future::Future;

    use fdr::instrument_fdr;

    use super::Yield;

    thread_local! {
        static DROPPED: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
    }

    /// Says when it is dropped.
    pub struct Loud(pub &'static str);

    impl Drop for Loud {
        fn drop(&mut self) {
            DROPPED.with(|d| d.borrow_mut().push(self.0));
        }
    }

    /// What was dropped on this thread since the last call.
    pub fn dropped() -> Vec<&'static str> {
        DROPPED.with(|d| std::mem::take(&mut *d.borrow_mut()))
    }

    /// A struct with a lifetime, which `Ref` as a parameter type hides.
    pub struct Ref<'a>(pub &'a str);

    pub struct Holder {
        pub name: String,
    }

    impl Holder {
        // Every kind of lifetime an `async fn` captures, in an edition 2021 crate: `&self`, two
        // distinct elided references, a hidden one (`Ref`), `Ref<'_>`, an `impl Trait`
        // argument, a generic.
        #[instrument_fdr]
        #[allow(elided_lifetimes_in_paths)]
        pub async fn lifetimes<T: Display>(
            &self,
            a: &str,
            b: &[u8],
            hidden: Ref,
            shown: Ref<'_>,
            it: impl Iterator<Item = u8>,
            t: T,
        ) -> String {
            Yield::default().await;
            format!(
                "{} {a} {} {} {} {} {t}",
                self.name,
                b.len(),
                hidden.0,
                shown.0,
                it.map(u32::from).sum::<u32>()
            )
        }

        // The output borrows from `self`.
        #[instrument_fdr]
        pub async fn name_unless(&self, other: &str) -> &str {
            Yield::default().await;
            if other.is_empty() {
                &self.name
            } else {
                "other"
            }
        }

        #[instrument_fdr]
        pub async fn rename(&mut self, to: &str) {
            Yield::default().await;
            self.name = to.to_owned();
        }
    }

    // A named lifetime in the output, and an elided one beside it.
    #[instrument_fdr]
    pub async fn first<'a>(a: &'a str, b: &str) -> &'a str {
        Yield::default().await;
        if b.is_empty() {
            ""
        } else {
            a
        }
    }

    #[instrument_fdr]
    pub async fn push_all<T>(into: &mut Vec<T>, from: &[T]) -> usize
    where
        T: Clone + std::fmt::Debug,
    {
        Yield::default().await;
        into.extend_from_slice(from);
        into.len()
    }

    // Recursion through a boxed future.
    #[instrument_fdr]
    pub async fn countdown(n: u32) -> u32 {
        if n == 0 {
            Yield::default().await;
            0
        } else {
            Box::pin(countdown(n - 1)).await + 1
        }
    }

    // The body's value and its `return` are coerced to the output type.
    #[instrument_fdr]
    pub async fn adder(n: u8) -> Box<dyn Fn(u8) -> u8> {
        if n == 0 {
            return Box::new(|x| x);
        }
        Yield::default().await;
        Box::new(move |x| x + n)
    }

    // An `impl Trait` output.
    #[instrument_fdr]
    pub async fn evens(v: Vec<u8>) -> impl Iterator<Item = u8> {
        Yield::default().await;
        v.into_iter().filter(|x| x % 2 == 0)
    }

    // An `impl Trait` output captures what it captured in the `async fn`: in edition 2021, the
    // lifetimes it names.
    #[instrument_fdr]
    pub async fn length(s: &str) -> impl Display {
        Yield::default().await;
        s.len()
    }

    #[instrument_fdr]
    pub async fn same(s: &str) -> impl Display + '_ {
        Yield::default().await;
        s
    }

    // The temporary of the final expression borrows an argument: it is dropped first.
    #[instrument_fdr]
    pub async fn locked(m: std::sync::Mutex<u8>) -> u8 {
        Yield::default().await;
        *m.lock().unwrap()
    }

    // Patterns, `mut`, `ref`, `_`, and a `?` whose error converts.
    #[instrument_fdr]
    pub async fn patterns(
        (a, b): (u8, u8),
        mut c: u8,
        ref d: u8,
        _: Loud,
        Ref(s): Ref<'_>,
    ) -> Result<u8, Box<dyn std::error::Error>> {
        Yield::default().await;
        c += a + b + *d;
        let n: u8 = s.parse()?;
        Ok(c + n)
    }

    /// # Safety
    ///
    /// `p` points to a live `u8`.
    #[instrument_fdr]
    pub async unsafe fn read(p: *const u8) -> u8 {
        Yield::default().await;
        // SAFETY: the caller's promise.
        unsafe { *p }
    }

    // Never returns.
    #[instrument_fdr]
    pub async fn forever() -> ! {
        loop {
            Yield::default().await;
        }
    }

    // A trait with an `async fn` default body, and one without.
    #[instrument_fdr]
    pub(crate) trait Fetch {
        async fn fetch(&self, k: u32) -> u32 {
            Yield::default().await;
            k + self.base()
        }
        fn base(&self) -> u32;
        async fn store(&self, k: u32) -> u32;
    }

    pub struct Store(pub u32);

    #[instrument_fdr]
    impl Fetch for Store {
        fn base(&self) -> u32 {
            self.0
        }
        async fn store(&self, k: u32) -> u32 {
            Yield::default().await;
            k * self.base()
        }
    }

    pub struct Other;

    impl Fetch for Other {
        fn base(&self) -> u32 {
            0
        }
        // Overrides the default, annotated alone.
        #[instrument_fdr]
        async fn fetch(&self, k: u32) -> u32 {
            Yield::default().await;
            k + 100
        }
        #[instrument_fdr]
        async fn store(&self, k: u32) -> u32 {
            Yield::default().await;
            k
        }
    }

    // A trait whose futures must be `Send`, implemented with an annotated `async fn`.
    pub trait SendFetch {
        fn get(&self, k: u8) -> impl Future<Output = u8> + Send;
    }

    impl SendFetch for Store {
        #[instrument_fdr]
        async fn get(&self, k: u8) -> u8 {
            Yield::default().await;
            k + 1
        }
    }

    /// The same functions twice, as written and annotated, to compare what they do.
    macro_rules! both {
        ($($item:item)*) => {
            pub mod written {
                use super::*;
                $($item)*
            }
            #[instrument_fdr(always)]
            pub mod annotated {
                use super::*;
                $($item)*
            }
        };
    }

    both! {
        pub struct Owner {
            pub n: u32,
            pub part: Loud,
        }

        impl Owner {
            pub fn one() -> Owner {
                Owner { n: 1, part: Loud("part") }
            }
            // The body uses one field of `self`: the future still owns all of it.
            pub async fn field(self) -> u32 {
                Yield::default().await;
                self.n
            }
            pub async fn unused(self) {
                Yield::default().await;
            }
            pub async fn by_ref(&self) -> u32 {
                Yield::default().await;
                self.n
            }
        }

        #[allow(unused_variables)]
        pub async fn args(
            a: Loud,
            (b, _): (Loud, Loud),
            _: Loud,
            mut c: Loud,
            guard: Loud,
            _ignored: Loud,
        ) -> usize {
            Yield::default().await;
            c.0 = "c changed";
            a.0.len() + b.0.len()
        }

        pub async fn nothing_used(_: Loud, guard: Loud) {
            Yield::default().await;
            let _ = &guard;
        }
    }
}

/// What `make`'s futures drop, and when: made and dropped unpolled, polled once and dropped,
/// run to completion. Each step lists what was dropped during it.
fn drop_story<F: Future>(make: impl Fn() -> F) -> Vec<(&'static str, Vec<&'static str>)> {
    tasks::dropped();
    let mut story = Vec::new();
    let f = make();
    story.push(("made", tasks::dropped()));
    drop(f);
    story.push(("dropped unpolled", tasks::dropped()));
    let mut f = Box::pin(make());
    assert!(poll_once(f.as_mut()).is_pending());
    story.push(("made and polled once", tasks::dropped()));
    drop(f);
    story.push(("dropped after a poll", tasks::dropped()));
    let f = make();
    tasks::dropped();
    let _ = block_on(f);
    story.push(("completed", tasks::dropped()));
    story
}

#[test]
fn an_async_fn_takes_its_arguments_at_the_call_and_drops_them_as_written() {
    let _one_recorder = fdr_runtime::testing::exclusive();
    use tasks::{annotated, written, Loud};
    fn args<F: Future>(
        args: fn(Loud, (Loud, Loud), Loud, Loud, Loud, Loud) -> F,
    ) -> Vec<(&'static str, Vec<&'static str>)> {
        drop_story(move || {
            args(
                Loud("a"),
                (Loud("b"), Loud("b's pair")),
                Loud("_"),
                Loud("c"),
                Loud("guard"),
                Loud("_ignored"),
            )
        })
    }
    let expected = args(written::args);
    let story = args(annotated::args);
    assert_eq!(story, expected);
    // Nothing at the call: every argument, used or not, goes into the future, and is dropped
    // with it.
    assert_eq!(story[0], ("made", vec![]));
    for (step, dropped) in &story[1..] {
        if *step != "made and polled once" {
            for held in ["a", "b", "b's pair", "_", "guard", "_ignored"] {
                assert!(dropped.contains(&held), "{held} in {step}: {dropped:?}");
            }
        }
    }

    fn nothing<F: Future>(f: fn(Loud, Loud) -> F) -> Vec<(&'static str, Vec<&'static str>)> {
        drop_story(move || f(Loud("_"), Loud("guard")))
    }
    let expected = nothing(written::nothing_used);
    let story = nothing(annotated::nothing_used);
    assert_eq!(story, expected);
    assert_eq!(
        story,
        [
            ("made", vec![]),
            // Unpolled, the future holds the arguments as they came; after a poll, as the body
            // binds them (dropped in reverse).
            ("dropped unpolled", vec!["_", "guard"]),
            ("made and polled once", vec![]),
            ("dropped after a poll", vec!["guard", "_"]),
            ("completed", vec!["guard", "_"]),
        ]
    );
}

#[test]
fn an_async_method_owns_all_of_self_even_when_its_body_uses_one_field() {
    let _one_recorder = fdr_runtime::testing::exclusive();
    use tasks::{annotated, written, Loud};
    let whole_self = vec![
        ("made", vec![]),
        ("dropped unpolled", vec!["part"]),
        ("made and polled once", vec![]),
        ("dropped after a poll", vec!["part"]),
        ("completed", vec!["part"]),
    ];
    let written_field = drop_story(|| written::Owner::one().field());
    let field = drop_story(|| annotated::Owner::one().field());
    assert_eq!(written_field, whole_self);
    assert_eq!(field, whole_self);
    let unused = drop_story(|| annotated::Owner::one().unused());
    assert_eq!(unused, whole_self);
    // By reference: the owner outlives the future.
    let owner = annotated::Owner {
        n: 4,
        part: Loud("part"),
    };
    let by_ref = drop_story(|| owner.by_ref());
    assert!(by_ref.iter().all(|(_, dropped)| dropped.is_empty()));
    assert_eq!(block_on(owner.by_ref()), 4);
}

#[test]
fn async_fns_keep_lifetimes_types_and_traits() {
    let _one_recorder = fdr_runtime::testing::exclusive();
    use tasks::{Fetch, Holder, Other, Ref, SendFetch, Store};
    let mut holder = Holder {
        name: "h".to_owned(),
    };
    let text = String::from("hidden");
    let fut = holder.lifetimes(
        "a",
        &[1, 2],
        Ref(&text),
        Ref("shown"),
        [3u8, 4].into_iter(),
        5,
    );
    assert_eq!(block_on(fut), "h a 2 hidden shown 7 5");
    assert_eq!(block_on(holder.name_unless("")), "h");
    assert_eq!(block_on(holder.name_unless("x")), "other");
    block_on(holder.rename("g"));
    assert_eq!(holder.name, "g");
    assert_eq!(block_on(tasks::first("a", "b")), "a");
    let mut into = vec![1];
    assert_eq!(block_on(tasks::push_all(&mut into, &[2, 3])), 3);
    assert_eq!(block_on(tasks::countdown(5)), 5);
    assert_eq!(block_on(tasks::adder(0))(7), 7);
    assert_eq!(block_on(tasks::adder(2))(7), 9);
    assert_eq!(
        block_on(tasks::evens(vec![1, 2, 3, 4])).collect::<Vec<_>>(),
        [2, 4]
    );
    assert_eq!(block_on(tasks::length("abc")).to_string(), "3");
    assert_eq!(block_on(tasks::same("abc")).to_string(), "abc");
    assert_eq!(block_on(tasks::locked(std::sync::Mutex::new(3))), 3);
    let patterns =
        |s: &'static str| block_on(tasks::patterns((1, 2), 3, 4, tasks::Loud("_"), Ref(s)));
    assert_eq!(patterns("5").unwrap(), 15);
    assert!(patterns("x").is_err());
    tasks::dropped();
    let byte = 6u8;
    // SAFETY: a live local.
    assert_eq!(block_on(unsafe { tasks::read(&byte) }), 6);
    let mut forever = Box::pin(tasks::forever());
    for _ in 0..3 {
        assert!(poll_once(forever.as_mut()).is_pending());
    }
    assert_eq!(block_on(Store(2).fetch(1)), 3);
    assert_eq!(block_on(Store(2).store(5)), 10);
    assert_eq!(block_on(Other.fetch(1)), 101);
    assert_eq!(block_on(Other.store(1)), 1);
    fn sent<F: Future + Send + 'static>(f: F) -> F::Output
    where
        F::Output: Send,
    {
        std::thread::spawn(move || block_on(f)).join().unwrap()
    }
    static STORE: Store = Store(0);
    assert_eq!(sent(STORE.get(1)), 2);
    assert_eq!(sent(tasks::countdown(2)), 2);
}

#[test]
fn annotated_async_fns_and_methods_are_tasks() {
    use tasks::{Fetch, Other, SendFetch, Store};
    let events = record(|| {
        block_on(tasks::countdown(1));
        block_on(Store(2).fetch(1));
        block_on(Store(2).store(1));
        block_on(Other.fetch(1));
        block_on(Store(2).get(1));
    });
    let names: Vec<&str> = lines(&events);
    for name in [
        "> tasks::countdown",
        "> tasks::Fetch::fetch",
        "> <macro_shapes::tasks::Store as macro_shapes::tasks::Fetch>::store",
        "> <macro_shapes::tasks::Other as macro_shapes::tasks::Fetch>::fetch",
        "> <macro_shapes::tasks::Store as macro_shapes::tasks::SendFetch>::get",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
}
