//! Recording in a test: a recorder driven by the runtime's injected clock
//! (`fdr_runtime::testing`) that cleans up after itself ([`MockSession`], [`record_log`]), the
//! configuration that keeps every call ([`every_call`]), one scenario driven both through the
//! hooks and through the controller alone ([`both_ways`]), and function descriptors declared
//! without the attribute macro ([`desc!`](crate::desc), [`desc_with_trigger!`](crate::desc_with_trigger)).
//!
//! ```
//! use fdr_testkit::logs::Rec;
//! use fdr_testkit::recording::{every_call, record_log};
//!
//! fdr_testkit::desc!(MAIN, "app::main");
//! let log = record_log(every_call(), || {
//!     fdr_runtime::hooks::enter(&MAIN);
//!     fdr_runtime::testing::advance(50);
//!     fdr_runtime::hooks::exit(&MAIN);
//! });
//! let records = log.thread_records(log.tids()[0]);
//! assert_eq!(records[1..], [Rec::Enter(MAIN.id(), 0), Rec::Exit(MAIN.id(), 50)]);
//! ```

use std::time::{Duration, Instant};

use fdr_format::FnKind;
use fdr_runtime::{testing, Config};

use crate::logs::{decode, DecodedLog, Rec};

/// Declares a function descriptor in the link-time table without the attribute macro, so that
/// a test of the runtime does not depend on the macros. Its expansion names `::fdr_runtime`: the
/// crate that uses it depends on `fdr-runtime` itself.
///
/// ```
/// fdr_testkit::desc!(PARSE, "app::parse");
/// assert_eq!(PARSE.name(), "app::parse");
/// assert_eq!(PARSE.trigger(), None);
/// ```
#[macro_export]
macro_rules! desc {
    ($name:ident, $text:expr) => {
        #[::fdr_runtime::linkme::distributed_slice(::fdr_runtime::FUNCTIONS)]
        #[linkme(crate = ::fdr_runtime::linkme)]
        static $name: ::fdr_runtime::FnDesc = ::fdr_runtime::FnDesc::new(
            $text,
            file!(),
            line!(),
            ::fdr_runtime::FnKindTag::Function,
            &[],
        );
    };
}

/// Declares a descriptor, as [`desc!`](crate::desc) does, with a slow-call trigger of `$ns`
/// nanoseconds.
///
/// ```
/// fdr_testkit::desc_with_trigger!(SLOW, "app::slow", 1_000_000);
/// assert!(SLOW.trigger().is_some());
/// ```
#[macro_export]
macro_rules! desc_with_trigger {
    ($name:ident, $text:expr, $ns:expr) => {
        #[::fdr_runtime::linkme::distributed_slice(::fdr_runtime::FUNCTIONS)]
        #[linkme(crate = ::fdr_runtime::linkme)]
        static $name: ::fdr_runtime::FnDesc = ::fdr_runtime::FnDesc::new(
            $text,
            file!(),
            line!(),
            ::fdr_runtime::FnKindTag::Function,
            &[],
        )
        .with_trigger($ns);
    };
}

/// The default configuration with threshold 0: every call is kept, for tests that count records.
///
/// ```
/// assert_eq!(fdr_testkit::recording::every_call().get_threshold(), std::time::Duration::ZERO);
/// ```
pub fn every_call() -> Config {
    Config::default().threshold(Duration::ZERO)
}

/// Runs `body` under a fresh recorder driven by the injected clock (1 tick = 1 ns), then
/// finishes it and decodes the log. Serialized with every other recording test of the binary; if
/// `body` panics, the recorder is finished and the real clock restored all the same, so one
/// failure does not cascade into the next test.
pub fn record_log(config: Config, body: impl FnOnce()) -> DecodedLog {
    let session = MockSession::start(config);
    body();
    session.finish()
}

/// A recorder on the injected clock that cleans up after itself, even when a test panics.
pub struct MockSession {
    rec: Option<fdr_runtime::Recorder>,
    _turn: std::sync::MutexGuard<'static, ()>,
}

impl MockSession {
    /// Takes this binary's recording turn, switches to the injected clock (time 1000 on CPU 0 for
    /// this thread) and starts a recorder.
    pub fn start(config: Config) -> MockSession {
        let turn = testing::exclusive();
        testing::use_mock_clock(1_000_000_000);
        testing::set_time(1_000);
        testing::set_cpu(0);
        let rec = fdr_runtime::start(config).expect("start");
        MockSession {
            rec: Some(rec),
            _turn: turn,
        }
    }

    /// Finishes the recorder and decodes its log.
    pub fn finish(self) -> DecodedLog {
        decode(&self.finish_bytes()[..]).expect("decode")
    }

    /// Finishes the recorder and returns its log as written, for a test that reads it with the
    /// `fdr` commands too.
    pub fn finish_bytes(mut self) -> Vec<u8> {
        let rec = self.rec.take().expect("finished once");
        let mut bytes = Vec::new();
        rec.finish_to(&mut bytes).expect("finish");
        bytes
    }
}

impl Drop for MockSession {
    fn drop(&mut self) {
        if let Some(rec) = self.rec.take() {
            let _ = rec.finish_to(&mut std::io::sink());
        }
        testing::use_real_clock();
    }
}

/// The operations a record-sequence scenario performs, so one scenario can run through the
/// hooks (under a recorder on the injected clock) and through the controller alone.
pub trait Drive {
    /// Entry of `f`.
    fn enter(&mut self, f: &'static fdr_runtime::FnDesc);
    /// Exit of `f`.
    fn exit(&mut self, f: &'static fdr_runtime::FnDesc);
    /// Tail exit of `f`.
    fn tail(&mut self, f: &'static fdr_runtime::FnDesc);
    /// Entry of `f` with arguments.
    fn enter_args(&mut self, f: &'static fdr_runtime::FnDesc, args: &[u64]);
    /// Time moves on.
    fn advance(&mut self, ticks: u64);
    /// The thread moves to `cpu`.
    fn set_cpu(&mut self, cpu: u16);
}

/// Drives the hooks, as instrumented code does.
pub struct Hooks;

impl Drive for Hooks {
    fn enter(&mut self, f: &'static fdr_runtime::FnDesc) {
        fdr_runtime::hooks::enter(f);
    }
    fn exit(&mut self, f: &'static fdr_runtime::FnDesc) {
        fdr_runtime::hooks::exit(f);
    }
    fn tail(&mut self, f: &'static fdr_runtime::FnDesc) {
        fdr_runtime::hooks::tail_exit(f);
    }
    fn enter_args(&mut self, f: &'static fdr_runtime::FnDesc, args: &[u64]) {
        fdr_runtime::hooks::enter_args(f, args);
    }
    fn advance(&mut self, ticks: u64) {
        testing::advance(ticks);
    }
    fn set_cpu(&mut self, cpu: u16) {
        testing::set_cpu(cpu);
    }
}

impl Drive for testing::Controller {
    fn enter(&mut self, f: &'static fdr_runtime::FnDesc) {
        self.event(f.id(), FnKind::Enter);
    }
    fn exit(&mut self, f: &'static fdr_runtime::FnDesc) {
        self.event(f.id(), FnKind::Exit);
    }
    fn tail(&mut self, f: &'static fdr_runtime::FnDesc) {
        self.event(f.id(), FnKind::TailExit);
    }
    fn enter_args(&mut self, f: &'static fdr_runtime::FnDesc, args: &[u64]) {
        testing::Controller::enter_args(self, f.id(), args);
    }
    fn advance(&mut self, ticks: u64) {
        testing::Controller::advance(self, ticks);
    }
    fn set_cpu(&mut self, cpu: u16) {
        testing::Controller::set_cpu(self, cpu);
    }
}

/// Runs `scenario` twice, from time 1000 on CPU 0 with 1 tick = 1 ns: through the hooks under a
/// recorder made from `config`, and through the controller alone on plain buffers of the same
/// size and threshold. The two must write the same records; returns them.
pub fn both_ways(config: Config, scenario: impl Fn(&mut dyn Drive)) -> Vec<Rec> {
    let threshold = config.get_threshold().as_nanos() as u64;
    let size = config.get_buffer_size();
    let log = record_log(config, || scenario(&mut Hooks));
    let via_hooks = log.thread_records(log.tids()[0]);
    let mut c = testing::Controller::new(size, threshold, 1000, 0);
    scenario(&mut c);
    let plain = decode(&c.log(&[])[..]).expect("the controller's log decodes");
    let via_controller = plain.thread_records(1);
    assert_eq!(
        via_hooks, via_controller,
        "the hooks and the controller alone wrote different records"
    );
    via_hooks
}

/// Waits (at most 10 s, then panics) until the watchdog has marked an open call for measuring
/// its thread's wait for a CPU, one more than `before` (`testing::cpu_wait_marks()` read before
/// the call began): a test's call stays open until then, as a slow call would.
pub fn wait_for_cpu_wait_mark(before: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while testing::cpu_wait_marks() <= before {
        assert!(
            Instant::now() < deadline,
            "the watchdog did not mark the open call within 10 s"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}
