//! Helpers shared by the integration tests: recording with the injected clock, and decoding a
//! log into records that tests can compare whole.

pub mod collector;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fdr_runtime::{CallGuard, Clock, Config, Mode};

use fdr_format::reader::{Reader, Record};
use fdr_format::{Extension, FileHeader, FnKind, FunctionInfo, RunInfo, ThreadInfo};

pub use fdr_runtime::testing;

/// Declares a function descriptor in the link-time table without the attribute macro, so the
/// runtime's tests do not depend on the macros.
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

/// Declares a descriptor with a slow-call trigger of `$ns` nanoseconds.
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

/// One record of a thread's block, in a form that compares whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rec {
    /// Entry: id, delta.
    Enter(u32, u32),
    /// Exit: id, delta.
    Exit(u32, u32),
    /// Tail exit: id, delta.
    Tail(u32, u32),
    /// Entry with arguments: id, delta (the arguments follow as `Arg`).
    EnterArgs(u32, u32),
    /// Call argument.
    Arg(u64),
    /// CPU change: cpu, full timestamp.
    Cpu(u16, u64),
    /// Timestamp jump: full timestamp.
    Wrap(u64),
    /// A task event: kind, function id, task id, delta.
    Task(fdr_format::TaskKind, u32, u64, i32),
    /// A poll event (the poll whose exit came just before served this task): function id,
    /// task id, delta.
    Polled(u32, u64, i32),
    /// A cull event: kind, function id, run, delta.
    Cull(fdr_format::CullKind, u32, u64, i32),
    /// A link event and its delta.
    Link(fdr_format::TaskLink, i32),
    /// Any other record, as the reader printed it.
    Other(String),
}

/// One block of a log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Thread id from the NewBuffer record.
    pub tid: i32,
    /// Pid from the Pid record.
    pub pid: i32,
    /// The records after the preamble (the preamble's NewCPUId is the first).
    pub records: Vec<Rec>,
}

/// A decoded log.
#[derive(Clone, Debug)]
pub struct Log {
    /// The file header.
    pub header: FileHeader,
    /// The run record.
    pub run: RunInfo,
    /// The function table.
    pub functions: Vec<FunctionInfo>,
    /// The threads.
    pub threads: Vec<ThreadInfo>,
    /// Why the log was written.
    pub reason: Option<fdr_format::ReasonInfo>,
    /// The configuration the recording ran with, as `FDR_OPTIONS` words.
    pub options: Option<String>,
    /// The blocks after the leading one, in file order.
    pub blocks: Vec<Block>,
}

impl Log {
    /// Every record of thread `tid`, blocks concatenated in file order.
    pub fn thread_records(&self, tid: i32) -> Vec<Rec> {
        self.blocks
            .iter()
            .filter(|b| b.tid == tid)
            .flat_map(|b| b.records.iter().cloned())
            .collect()
    }

    /// Function records only (no metadata), of thread `tid`, without deltas: (kind, id).
    pub fn calls(&self, tid: i32) -> Vec<(FnKind, u32)> {
        self.thread_records(tid)
            .into_iter()
            .filter_map(|r| match r {
                Rec::Enter(id, _) => Some((FnKind::Enter, id)),
                Rec::Exit(id, _) => Some((FnKind::Exit, id)),
                Rec::Tail(id, _) => Some((FnKind::TailExit, id)),
                Rec::EnterArgs(id, _) => Some((FnKind::EnterArgs, id)),
                _ => None,
            })
            .collect()
    }

    /// Thread ids that have blocks, in order of first appearance.
    pub fn tids(&self) -> Vec<i32> {
        let mut out = Vec::new();
        for b in &self.blocks {
            if !out.contains(&b.tid) {
                out.push(b.tid);
            }
        }
        out
    }

    /// Name of function `id` in the table.
    pub fn name(&self, id: u32) -> Option<&str> {
        self.functions
            .iter()
            .find(|f| f.id == id)
            .map(|f| f.name.as_str())
    }
}

/// Decodes a whole log, checking the block grammar fdr writes.
pub fn decode(bytes: impl Read) -> Result<Log, String> {
    let mut r = Reader::new(bytes).map_err(|e| e.to_string())?;
    let header = *r.header();
    let mut run = None;
    let mut functions = Vec::new();
    let mut threads = Vec::new();
    let mut reason = None;
    let mut options = None;
    let mut blocks: Vec<Block> = Vec::new();
    let mut preamble = 0usize;
    let mut leading = true;
    let mut first = true;
    while let Some((at, rec)) = r.next_record().map_err(|e| e.to_string())? {
        if first && !matches!(rec, Record::BufferExtents { .. }) {
            return Err(format!("at {at}: a log starts with a BufferExtents record"));
        }
        first = false;
        match rec {
            Record::BufferExtents { .. } => {
                preamble = 1;
                continue;
            }
            Record::NewBuffer { tid } if preamble == 1 => {
                // The first block of the file is the leading one, whatever its thread id.
                if at > 48 {
                    leading = false;
                    blocks.push(Block {
                        tid,
                        pid: 0,
                        records: Vec::new(),
                    });
                }
                preamble = 2;
                continue;
            }
            Record::Walltime { .. } if preamble == 2 => {
                preamble = 3;
                continue;
            }
            Record::Pid { pid } if preamble == 3 => {
                if let Some(b) = blocks.last_mut() {
                    b.pid = pid;
                }
                preamble = 4;
                continue;
            }
            _ if (1..4).contains(&preamble) => {
                return Err(format!("at {at}: unexpected {rec:?} in a block preamble"));
            }
            _ => {}
        }
        if preamble == 4 {
            if !matches!(rec, Record::NewCpuId { .. }) {
                return Err(format!("at {at}: a block's preamble ends with NewCPUId"));
            }
            preamble = 0;
            if leading {
                continue;
            }
        }
        if leading {
            match rec {
                Record::CustomEvent { payload, .. } => {
                    match Extension::decode(payload).map_err(|e| format!("at {at}: {e}"))? {
                        Some(Extension::Run(x)) => run = Some(x),
                        Some(Extension::Function(f)) => functions.push(f),
                        Some(Extension::Thread(t)) => threads.push(t),
                        Some(Extension::Reason(r)) => reason = Some(r),
                        Some(Extension::Options(o)) => options = Some(o),
                        _ => return Err(format!("at {at}: unexpected custom event")),
                    }
                }
                other => {
                    return Err(format!(
                        "at {at}: unexpected {other:?} in the leading block"
                    ))
                }
            }
            continue;
        }
        let out = match rec {
            Record::Function { id, kind, delta } => match kind {
                FnKind::Enter => Rec::Enter(id, delta),
                FnKind::Exit => Rec::Exit(id, delta),
                FnKind::TailExit => Rec::Tail(id, delta),
                FnKind::EnterArgs => Rec::EnterArgs(id, delta),
            },
            Record::CallArgument { value } => Rec::Arg(value),
            Record::NewCpuId { cpu, tsc } => Rec::Cpu(cpu, tsc),
            Record::TscWrap { tsc } => Rec::Wrap(tsc),
            Record::CustomEvent { delta, payload } => {
                if let Some((kind, id, task)) = fdr_format::decode_task_event(payload) {
                    Rec::Task(kind, id, task, delta)
                } else if let Some((id, task)) = fdr_format::decode_polled_event(payload) {
                    Rec::Polled(id, task, delta)
                } else if let Some((kind, id, run)) = fdr_format::decode_cull_event(payload) {
                    Rec::Cull(kind, id, run, delta)
                } else if let Some(link) = fdr_format::decode_link_event(payload) {
                    Rec::Link(link, delta)
                } else {
                    Rec::Other(format!("custom event of {} bytes", payload.len()))
                }
            }
            other => Rec::Other(format!("{other:?}")),
        };
        blocks
            .last_mut()
            .ok_or_else(|| format!("at {at}: a record outside any block"))?
            .records
            .push(out);
    }
    if r.block_left().unwrap_or(0) != 0 {
        return Err("the last block is shorter than its extents record says".into());
    }
    Ok(Log {
        header,
        run: run.ok_or("the log has no run record")?,
        functions,
        threads,
        reason,
        options,
        blocks,
    })
}

/// The default configuration with threshold 0: every call is kept, for tests that count records.
///
/// ```
/// assert_eq!(fdr_tests::every_call().get_threshold(), std::time::Duration::ZERO);
/// ```
pub fn every_call() -> Config {
    Config::default().threshold(Duration::ZERO)
}

/// Runs `body` under a fresh recorder driven by the injected clock (1 tick = 1 ns), then
/// finishes it and decodes the log. Serialized with every other recording test of the binary; if
/// `body` panics, the recorder is finished and the real clock restored all the same, so one
/// failure does not cascade into the next test.
pub fn record_log(config: fdr::Config, body: impl FnOnce()) -> Log {
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
    pub fn start(config: fdr::Config) -> MockSession {
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
    pub fn finish(self) -> Log {
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

// The real clock and the real CPU number, checked from several test binaries (the clock source
// is chosen once per process).

desc!(SLEEPY, "hw::sleepy");
desc!(WARM_UP, "hw::warm_up");
desc!(PINNED, "hw::pinned");

/// Pins the calling thread to `cpu`; false if that is not allowed.
pub fn pin(cpu: usize) -> bool {
    // SAFETY: the set is a plain bitmask on the stack, initialised by CPU_ZERO before use, and
    // sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// A thread pinned to CPU 0, then to CPU 1, leaves a NewCPUId record naming CPU 1. Fails where
/// two CPUs cannot be had: its tests are compiled as ignored there (see `build.rs`).
pub fn check_real_migration(clock: Clock) {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    // On a machine with one CPU the tests calling this are compiled as ignored (build.rs); here
    // a missing second CPU is a failure, never a pass that checked nothing.
    assert!(
        cpus >= 2,
        "needs two CPUs that this process may run on (found {cpus}): run the tests on a \
         machine with two, or rebuild them here, which marks this test ignored"
    );
    let _turn = testing::exclusive();
    let rec =
        fdr_runtime::start(every_call().buffer_count(4).mode(Mode::Fill).clock(clock)).unwrap();
    let log = std::thread::spawn(move || {
        assert!(pin(0));
        drop(CallGuard::enter(&PINNED));
        assert!(pin(1));
        drop(CallGuard::enter(&PINNED));
        let mut bytes = Vec::new();
        rec.finish_to(&mut bytes).unwrap();
        decode(&bytes[..]).unwrap()
    })
    .join()
    .unwrap();
    let recs = log.thread_records(log.tids()[0]);
    let cpus: Vec<u16> = recs
        .iter()
        .filter_map(|r| match r {
            Rec::Cpu(c, _) => Some(*c),
            _ => None,
        })
        .collect();
    assert_eq!(cpus, vec![0, 1], "{recs:?}");
    let p = PINNED.id();
    assert!(
        matches!(recs[..], [Rec::Cpu(0, _), Rec::Enter(a, _), Rec::Exit(b, _), Rec::Cpu(1, _), Rec::Enter(c, 0), Rec::Exit(d, _)] if [a, b, c, d] == [p; 4]),
        "{recs:?}"
    );
}

/// A recorded call around a 10 ms sleep decodes to within 2% of the time the monotonic clock
/// measured around it. The call is inside the measured interval, so a decoded time past it (or
/// under the 10 ms slept) is a wrong clock, every time; one short of it by more than 2% can be a
/// thread descheduled between a clock read and the record's (280 us under qemu in a loaded CI
/// run), which a wrong rate would be on every try: up to three tries, and one must agree.
pub fn check_10ms_sleep(clock: Clock) {
    let mut tries = Vec::new();
    for _ in 0..3 {
        let (decoded, reference) = sleep_10ms_decoded(clock);
        assert!(decoded >= 0.0099, "decoded {decoded}s for a 10 ms sleep");
        assert!(
            decoded <= reference * 1.02,
            "decoded {decoded}s, more than the {reference}s measured around the call"
        );
        if (decoded / reference - 1.0).abs() < 0.02 {
            return;
        }
        tries.push((decoded, reference));
    }
    panic!("decoded against monotonic clock measured (s): {tries:?}");
}

/// One try of [`check_10ms_sleep`]: the decoded time of the call and the time measured around
/// it, in seconds.
fn sleep_10ms_decoded(clock: Clock) -> (f64, f64) {
    let _turn = testing::exclusive();
    let rec =
        fdr_runtime::start(every_call().buffer_count(4).mode(Mode::Fill).clock(clock)).unwrap();
    // The thread's first record joins the recording and takes a buffer (page faults): out of
    // the measured time, which would otherwise hold a few hundred µs the call does not (a CI run
    // under load measured 10.35 ms around a call decoded as 10.12 ms).
    drop(CallGuard::enter(&WARM_UP));
    let began = Instant::now();
    {
        let _g = CallGuard::enter(&SLEEPY);
        std::thread::sleep(Duration::from_millis(10));
    }
    let elapsed = began.elapsed();
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).unwrap();
    let log = decode(&bytes[..]).unwrap();
    let recs = log.thread_records(log.tids()[0]);
    // Absolute times: the counter is invariant across CPUs, so a thread that wakes on another
    // CPU (its exit after a NewCPUId) is timed all the same.
    let (mut t, mut entered, mut left) = (0u64, None, None);
    for r in &recs {
        match *r {
            Rec::Cpu(_, tsc) | Rec::Wrap(tsc) => t = tsc,
            Rec::Enter(_, d) => {
                t += u64::from(d);
                entered = Some(t);
            }
            Rec::Exit(_, d) => {
                t += u64::from(d);
                left = Some(t);
            }
            _ => {}
        }
    }
    let (Some(entered), Some(left)) = (entered, left) else {
        panic!("{recs:?}")
    };
    let ticks = left - entered;
    assert_eq!(log.run.ticks_per_second, log.header.cycle_frequency);
    (
        ticks as f64 / log.header.cycle_frequency as f64,
        elapsed.as_secs_f64(),
    )
}

/// A fresh, empty directory for one test's logs: `name` under the system's temporary directory,
/// with this process's id (test binaries run side by side).
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fdr-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The calling test binary run again as a child process, to run only its `#[ignore]`d test
/// `test` (on one thread, its output not captured): the way tests exercise what happens to a
/// whole process (exit, fork, crash, `FDR_OPTIONS`). `FDR_OPTIONS` is removed from its
/// environment and `RUST_BACKTRACE` is 0; set what the case needs on the returned command.
///
/// ```no_run
/// let out = fdr_tests::child_test("child_exits")
///     .env("FDR_OPTIONS", "threshold_us=0")
///     .output()
///     .unwrap();
/// assert!(out.status.success());
/// ```
pub fn child_test(test: &str) -> std::process::Command {
    let mut c = std::process::Command::new(std::env::current_exe().unwrap());
    c.args([
        test,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env_remove("FDR_OPTIONS")
    .env("RUST_BACKTRACE", "0")
    // A directory of its own for the default crash directory: the child neither recovers a box
    // another child left nor starts with the functions it culled (`cull_memory`).
    .env("XDG_RUNTIME_DIR", child_runtime_dir());
    c
}

fn child_runtime_dir() -> PathBuf {
    static CHILDREN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = CHILDREN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    scratch(&format!("child-{n}"))
}

/// Decodes the log at `path`; a panic names the file.
pub fn read_log(path: &Path) -> Log {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    decode(&bytes[..]).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The files in `dir` whose names end with `.fdr`, in the order of their names with numbers
/// compared as numbers: a process's snapshot 10 comes after its snapshot 9 (snapshot numbers
/// count per process, so a test's files may cross a digit).
pub fn logs_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "fdr"))
        .collect();
    // Each run of digits as a number (its length, then itself), the rest as it is.
    let key = |p: &PathBuf| -> Vec<(bool, usize, String)> {
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let mut parts = Vec::new();
        let mut rest = name.as_str();
        while let Some(c) = rest.chars().next() {
            let digits = c.is_ascii_digit();
            let end = rest
                .find(|ch: char| ch.is_ascii_digit() != digits)
                .unwrap_or(rest.len());
            let run = rest[..end].trim_start_matches(if digits { '0' } else { '\0' });
            parts.push((digits, if digits { run.len() } else { 0 }, run.to_string()));
            rest = &rest[end..];
        }
        parts
    };
    v.sort_by_key(key);
    v
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

/// Waits (at most 10 s) until `dir` holds `n` logs, and returns the logs there: a background
/// writer's snapshot appears when it is whole.
pub fn wait_for_logs(dir: &Path, n: usize) -> Vec<PathBuf> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let l = logs_in(dir);
        if l.len() >= n || Instant::now() > deadline {
            return l;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
