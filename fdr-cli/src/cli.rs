//! The command line: the commands, their arguments and their help, as clap parses them.
//! Nothing here computes; [`crate::runner::run`] runs what was parsed.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::commands::account::SortKey;
use crate::commands::explain::CallAt;
use crate::limits::{
    MAX_CALLS_DEPTH, MAX_CALLS_SHOWN, MAX_CALLS_TOP, MAX_CALLS_UNDER_ONE, MAX_CALL_DEPTH,
    MAX_CALL_PATHS, MAX_CHROME_JSON_BYTES, MAX_EXACT_DURATIONS, MAX_EXPLAIN_CANDIDATES,
    MAX_EXPORT_CALLS, MAX_FLAME_BYTES, MAX_FLAME_FRAMES, MAX_LOG_FUNCTIONS, MAX_OPEN_TASKS,
    MAX_READERS, MAX_SHOWN_FRAMES, MAX_VIEW_BARS, MAX_VIEW_FLAME_FRAMES, MAX_VIEW_FUNCTIONS,
    MAX_VIEW_KEPT, MAX_VIEW_MIGRATIONS, MAX_VIEW_SLICES, MAX_VIEW_TASKS, VIEW_SLOWEST,
    VIEW_WIDTH_PX,
};
use crate::model::filter::parse_duration;
use crate::model::filter::FilterArgs;
use crate::render::{account, calls, diff, explain, profile, stack};

fn after_help() -> String {
    format!(
        "\
Times: ns, µs, ms and s on a terminal; integer nanoseconds in JSON and CSV.
Calls whose entry is before the recorded window (a ring snapshot that starts mid-stack) get an
inferred entry at the window's start; calls still running at the end are closed there. Both are
marked in the outputs.
A log written by a trigger (a slow call, or one still running past its limit) names that call:
`info` prints why the log was written, `account` and `stack` name the call in their first line,
`convert` marks the moment the trigger fired with an instant event on the call's thread, and
`explain` says why it was slow (its excess over its usual, the callee that holds it, where the
time went), which `info` ends with.
Filters, on account, stack, calls, replay, convert, flame, export and view: --thread TID|NAME (repeatable) keeps
those threads; --from TIME and --to TIME (after the window start) cut every thread's window to
that range, as a recording window would (calls running at its start start there, marked
inferred; calls running at its end end there, marked open); --around [MARGIN] is the range of the
call that fired a triggered snapshot, widened by MARGIN; --function PATTERN keeps the calls of
matching functions and the calls they made (a PATTERN matches a full name, `*` any run of
characters; without `*`, also the end of a name after `::`, so `handle` finds `app::Worker::handle`;
a trait method `<app::Worker as app::Handler>::handle` is also found as `Worker::handle`,
`app::Worker::handle`, `Handler::handle` or `app::Handler::handle`); --min DURATION leaves out shorter calls (their time
counts in their caller's self time). Times in outputs count from the earliest window start of the
threads kept. Every command reads standard input for the log `-` (copied to a temporary file).
Names from a log are shown with control characters escaped (\\x1b, \\n, \\u{{202e}}); JSON keeps them
exactly. Outputs (-o) are written to a temporary file renamed into place on success, and never
over the input log.
Limits, whatever a log says (see docs/FORMAT.md): calls nested at most {MAX_CALL_DEPTH} deep on a thread;
at most {MAX_LOG_FUNCTIONS} distinct function ids; call paths shown at most {MAX_SHOWN_FRAMES} frames deep; at most {MAX_CALL_PATHS}
call paths in `stack` and `flame`; at most {MAX_FLAME_FRAMES} frames and {flame_mib} MiB of call paths handed to the
flame graph renderer. Past a limit a command says so, in its output or as an error.",
        flame_mib = MAX_FLAME_BYTES >> 20
    )
}

/// The command line.
#[derive(Parser, Debug)]
#[command(
    name = "fdr",
    version,
    about = "Read fdr flight-recorder logs and profiles: latency tables, call trees, flame graphs, Perfetto timelines, pprof",
    after_help = after_help()
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    /// The command.
    pub command: Command,
}

/// The commands, with their arguments.
#[derive(Subcommand, Debug)]
// One value per run, parsed from the command line: its size does not matter (on Windows, where a
// path takes 32 bytes, `export`'s arguments outweigh the others past clippy's bound).
#[allow(clippy::large_enum_variant)]
pub(crate) enum Command {
    /// Header, calibration, threads, blocks, time span, functions, losses and threshold, the
    /// culled functions and what the cost budget did; of a crash box, what it says of its
    /// process, then the same of the log it recovers to.
    Info(InfoArgs),
    /// Turns the crash boxes of processes that died into logs, says how each died, and removes
    /// the boxes; a running process's box is left alone.
    #[command(after_help = RECOVER_HELP)]
    Recover(RecoverArgs),
    /// Every record, one per line, with its byte offset.
    Dump(DumpArgs),
    /// Per function: count, min, p50, p90, p99, max, total and self time.
    #[command(after_help = account_help())]
    Account(AccountArgs),
    /// The call trie: per call path, count, total and self time, latency histogram.
    #[command(after_help = stack_help())]
    Stack(StackArgs),
    /// Chrome trace-event JSON (chrome://tracing, Perfetto) or Fuchsia trace format (Perfetto).
    #[command(after_help = convert_help())]
    Convert(ConvertArgs),
    /// Sends a log's window to an OpenTelemetry collector as a trace (OTLP/HTTP, one span per
    /// call), or writes the OTLP request to a file.
    #[command(after_help = export_help(),
              group(clap::ArgGroup::new("dest").required(true).args(["otlp", "otlp_file"])))]
    Export(ExportArgs),
    /// A flame graph SVG (self time per call path), from a log or a profile.
    #[command(after_help = flame_help())]
    Flame(FlameArgs),
    /// Individual calls, slowest first, each with the tree of calls it made.
    #[command(after_help = calls_help())]
    Calls(CallsArgs),
    /// The time-ordered call graph, one line per entry and exit (as uftrace's `replay`).
    #[command(after_help = replay_help())]
    Replay(ReplayArgs),
    /// Per function from a profile (.fdrprof): count, total, self, min, p50, p90, p99, max;
    /// `--tree` the call paths; `--function F` its callers and callees; `--pprof` for pprof.
    #[command(after_help = profile_help())]
    Profile(ProfileArgs),
    /// Per function, count, p50, p99, total and self time in two logs, and the change.
    #[command(after_help = DIFF_HELP)]
    Diff(DiffArgs),
    /// Why a call was slow: the call that fired the trigger (or --call, or --function's
    /// slowest), its excess over its function's usual, the callee that accounts for it, and
    /// where the time went; for a log recovered from a crash, the calls open at the death.
    #[command(after_help = explain_help())]
    Explain(ExplainArgs),
    /// One self-contained HTML page to look at in any browser, offline: why the log was
    /// written, a zoomable timeline per thread, the slowest calls and their trees, the
    /// per-function table with histograms, the flame graph.
    #[command(after_help = view_help())]
    View(ViewArgs),
}

// Each command's arguments, which runner.rs hands to the command's function. The structs have
// no doc comments: clap would take them for the commands' descriptions, which are the variants'.
#[derive(Args, Debug)]
pub(crate) struct InfoArgs {
    /// The log (.fdr; `-` for standard input), or a crash box (.box).
    pub log: PathBuf,
}

#[derive(Args, Debug)]
pub(crate) struct RecoverArgs {
    /// Crash boxes, or directories: every `fdr-*.box` file in one [default: the directory
    /// recorders put their boxes in: $XDG_RUNTIME_DIR, else /dev/shm, else the temporary
    /// directory].
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Leave the boxes in place once their logs are written.
    #[arg(long)]
    pub keep: bool,
    /// Write the log here instead (`-` for standard output); for one box only.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub(crate) struct DumpArgs {
    /// The log (.fdr; `-` for standard input).
    pub log: PathBuf,
    /// Check the block grammar (BufferExtents, NewBuffer, WalltimeMarker, [Pid], NewCPUId,
    /// events) and exit non-zero at the first violation. Time running backwards on a thread
    /// gets a warning line, without failing: CPUs' timestamp counters can disagree slightly.
    #[arg(long)]
    pub verify: bool,
}

/// What a row of `fdr account` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum AccountBy {
    /// A function: its calls (an async fn's polls) and tasks.
    Function,
    /// An await site: the waits there (`FILE:LINE:COLUMN`, the async fn, waits, dropped,
    /// min..max and total waited).
    Await,
}

#[derive(Args, Debug)]
pub(crate) struct AccountArgs {
    /// The log (.fdr; `-` for standard input).
    pub log: PathBuf,
    /// Sort by this column (numbers: largest first).
    #[arg(long, value_enum, default_value_t = SortKey::Total)]
    pub sort: SortKey,
    /// Show only the first N functions.
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// What a row is: a function, or an await site of an async fn (its waits).
    #[arg(long, value_enum, default_value_t = AccountBy::Function)]
    pub by: AccountBy,
    /// Output format.
    #[arg(long, value_enum, default_value_t = account::AccountFormat::Text)]
    pub format: account::AccountFormat,
    /// Reader threads, each decoding the blocks of a share of the log's threads
    /// [default: 2 on a log over 32 MiB with two cores, else 1].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=MAX_READERS as i64))]
    pub threads: Option<u16>,
    #[command(flatten)]
    pub filter: FilterOptions,
}

#[derive(Args, Debug)]
pub(crate) struct StackArgs {
    /// The log (.fdr; `-` for standard input).
    pub log: PathBuf,
    /// `text`: an indented tree; `folded`: `a;b;c <self ns>` lines for flame graph tools.
    #[arg(long, value_enum, default_value_t = stack::StackFormat::Text)]
    pub format: stack::StackFormat,
    #[command(flatten)]
    pub filter: FilterOptions,
}

#[derive(Args, Debug)]
pub(crate) struct ConvertArgs {
    /// The log (.fdr; `-` for standard input).
    pub log: PathBuf,
    /// Output format.
    #[arg(long, value_enum)]
    pub format: ConvertFormat,
    /// Output file (`-` for standard output).
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    #[command(flatten)]
    pub filter: FilterOptions,
}

#[derive(Args, Debug)]
pub(crate) struct ExportArgs {
    /// The log (.fdr; `-` for standard input).
    pub log: PathBuf,
    /// Send to the collector's OTLP/HTTP receiver: http[s]://HOST[:PORT][/PATH] (the path
    /// defaults to /v1/traces), or `env` for the endpoint of OTEL_EXPORTER_OTLP_*.
    #[arg(long, value_name = "URL|env")]
    pub otlp: Option<String>,
    /// With --otlp, headers for the collector: NAME=VALUE,NAME=VALUE, values
    /// percent-decoded [default: OTEL_EXPORTER_OTLP_TRACES_HEADERS or
    /// OTEL_EXPORTER_OTLP_HEADERS]. A command line is visible to other users: prefer the
    /// variable for an API key.
    #[arg(long, value_name = "LIST")]
    pub otlp_headers: Option<String>,
    /// With --otlp https://, trust the CA certificates of this PEM file instead of the
    /// system's roots [default: OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE or
    /// OTEL_EXPORTER_OTLP_CERTIFICATE, else the system's, which honour SSL_CERT_FILE].
    #[arg(long, value_name = "PEM")]
    pub otlp_ca: Option<PathBuf>,
    /// With --otlp, gzip or none [default: OTEL_EXPORTER_OTLP_TRACES_COMPRESSION or
    /// OTEL_EXPORTER_OTLP_COMPRESSION, else gzip].
    #[arg(long, value_name = "gzip|none")]
    pub otlp_compression: Option<String>,
    /// Write the protobuf ExportTraceServiceRequest, every span in one request, to OUT
    /// instead (`-` for standard output).
    #[arg(long, value_name = "OUT.pb")]
    pub otlp_file: Option<PathBuf>,
    /// The resource's service.name [default: OTEL_SERVICE_NAME, service.name in
    /// OTEL_RESOURCE_ATTRIBUTES, else the program's name, from the log].
    #[arg(long, value_name = "NAME")]
    pub service_name: Option<String>,
    /// The resource's host.name [default: none; a log does not say which machine wrote it].
    #[arg(long, value_name = "NAME")]
    pub host_name: Option<String>,
    /// Join this W3C trace context (00-<32 hex trace id>-<16 hex span id>-<2 hex flags>):
    /// the spans take its trace id, the calls without a caller its span id as parent.
    #[arg(long, value_name = "TRACEPARENT")]
    pub traceparent: Option<String>,
    /// With --otlp, at most N spans per request; a larger window is sent in several.
    #[arg(long, value_name = "N", default_value_t = 10_000,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_spans: u32,
    /// With --otlp, one attempt's time limit (resolve, connect, handshake, send, answer)
    /// [default: OTEL_EXPORTER_OTLP_TRACES_TIMEOUT or OTEL_EXPORTER_OTLP_TIMEOUT in ms,
    /// else 10s].
    #[arg(long, value_name = "DURATION", value_parser = positive_duration)]
    pub timeout: Option<u64>,
    /// With --otlp, how long to keep retrying a request the collector did not take (no
    /// connection, timeout, 429, 502, 503, 504), waits included; 0: try once.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub retry_for: u64,
    #[command(flatten)]
    pub filter: FilterOptions,
}

#[derive(Args, Debug)]
pub(crate) struct FlameArgs {
    /// The log (.fdr) or profile (.fdrprof); `-` for standard input.
    pub log: PathBuf,
    /// Output file (`-` for standard output).
    #[arg(short, long, value_name = "OUT.svg")]
    pub output: PathBuf,
    /// A flame chart: time runs left to right, one chart per thread.
    #[arg(long)]
    pub chart: bool,
    #[command(flatten)]
    pub filter: FilterOptions,
}

#[derive(Args, Debug)]
pub(crate) struct CallsArgs {
    /// The log (.fdr; `-` for standard input).
    pub log: PathBuf,
    #[arg(long, value_name = "N", default_value_t = 10,
          help = format!("Show the N slowest calls (at most {MAX_CALLS_TOP})"),
          value_parser = clap::value_parser!(u32).range(0..=MAX_CALLS_TOP as i64))]
    pub top: u32,
    /// Show the calls each one made down to N levels below it; deeper ones are counted.
    #[arg(long, value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u16).range(0..=MAX_CALLS_DEPTH as i64))]
    pub depth: u16,
    /// Show the tree of async task ID alone: the task, the tasks made or awaited in it, their
    /// waits and polls (no call).
    #[arg(long, value_name = "ID")]
    pub task: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = calls::CallsFormat::Text)]
    pub format: calls::CallsFormat,
    /// Reader threads, each decoding the blocks of a share of the log's threads
    /// [default: 2 on a log over 32 MiB with two cores, else 1].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=MAX_READERS as i64))]
    pub threads: Option<u16>,
    #[command(flatten)]
    pub filter: FilterOptions,
}

#[derive(Args, Debug)]
pub(crate) struct ReplayArgs {
    /// The log (.fdr; `-` for standard input).
    pub log: PathBuf,
    /// Show only the polls of async task ID and of the tasks made or awaited in it (theirs,
    /// and so on), each with the calls in it, on whichever thread ran it.
    #[arg(long, value_name = "ID")]
    pub task: Option<u64>,
    /// Reader threads for the first pass, each decoding the blocks of a share of the log's
    /// threads [default: 2 on a log over 32 MiB with two cores, else 1].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=MAX_READERS as i64))]
    pub threads: Option<u16>,
    #[command(flatten)]
    pub filter: FilterOptions,
}

#[derive(Args, Debug)]
pub(crate) struct ProfileArgs {
    /// The profile (.fdrprof, written by profile mode; `-` for standard input).
    pub profile: PathBuf,
    /// The call tree: per call path, count, total, self, share of the run and p99.
    #[arg(long, conflicts_with_all = ["function", "sort", "top"])]
    pub tree: bool,
    /// The callers and callees of the functions whose full name matches PATTERN ('*'
    /// matches any run of characters; a pattern without '*' also matches the last
    /// segments of a name: 'Worker::step' matches 'app::Worker::step'), then their rows.
    #[arg(long, value_name = "PATTERN")]
    pub function: Option<String>,
    /// One section per tree of the file (per thread, and the threads that exited) instead
    /// of all merged.
    #[arg(long)]
    pub threads: bool,
    /// Sort functions by this column (numbers: largest first).
    #[arg(long, value_enum, default_value_t = SortKey::SelfTime)]
    pub sort: SortKey,
    /// Show only the first N functions.
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// Leave out functions, call paths, callers and callees whose total is below DURATION
    /// (e.g. 1.5ms; units ns, us, ms, s).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub min: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = profile::ProfileFormat::Text)]
    pub format: profile::ProfileFormat,
    /// Output file (`-` for standard output).
    #[arg(short, long, value_name = "OUT", default_value = "-")]
    pub output: PathBuf,
    /// Write pprof protobuf to OUT instead of the report, gzipped when OUT ends in .gz
    /// (needs the `otlp` feature, on by default).
    #[arg(long, value_name = "OUT.pb.gz",
          conflicts_with_all = ["tree", "function", "sort", "top", "min", "format", "output"])]
    pub pprof: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub(crate) struct DiffArgs {
    /// The log before (.fdr; `-` for standard input).
    pub before: PathBuf,
    /// The log after (.fdr; `-` for standard input).
    pub after: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = diff::DiffFormat::Text)]
    pub format: diff::DiffFormat,
}

#[derive(Args, Debug)]
pub(crate) struct ExplainArgs {
    /// The log (.fdr; `-` for standard input).
    pub log: PathBuf,
    /// Explain this call instead of the trigger's: its thread (id or name) and its start as
    /// `fdr calls` prints it: `11@+1.20ms` (any call starting at a time printed so; the
    /// longest), or `11@1203456` (JSON's start_ns, to the nanosecond).
    #[arg(long, value_name = "TID@START", value_parser = CallAt::parse)]
    pub call: Option<CallAt>,
    /// Explain the slowest calls of the functions whose full name matches PATTERN (the tasks
    /// of an async fn); with --call, the call named must be of one of them.
    #[arg(long, value_name = "PATTERN")]
    pub function: Option<String>,
    #[arg(long, value_name = "N", default_value_t = 1, requires = "function",
          help = format!("With --function, explain its N slowest calls (at most {MAX_CALLS_TOP})"),
          value_parser = clap::value_parser!(u32).range(1..=MAX_CALLS_TOP as i64))]
    pub top: u32,
    /// Take each function's usual from this log's same-named function (its median), or from
    /// this profile's (.fdrprof: its p50), instead of from the function's other calls in the
    /// window.
    #[arg(long, value_name = "LOG|PROFILE")]
    pub baseline: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = explain::ExplainFormat::Text)]
    pub format: explain::ExplainFormat,
    /// Reader threads, each decoding the blocks of a share of the log's threads
    /// [default: 2 on a log over 32 MiB with two cores, else 1].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=MAX_READERS as i64))]
    pub threads: Option<u16>,
}

#[derive(Args, Debug)]
pub(crate) struct ViewArgs {
    /// The log (.fdr; `-` for standard input).
    pub log: PathBuf,
    /// The page (`-` for standard output) [default: the log's path with `.html` added, beside
    /// it; its path is printed].
    #[arg(short, long, value_name = "OUT.html")]
    pub output: Option<PathBuf>,
    /// Reader threads for the per-function table and the slowest calls
    /// [default: 2 on a log over 32 MiB with two cores, else 1].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=MAX_READERS as i64))]
    pub threads: Option<u16>,
    #[command(flatten)]
    pub filter: FilterOptions,
}

/// A duration over zero, in nanoseconds.
fn positive_duration(s: &str) -> Result<u64, String> {
    match parse_duration(s)? {
        0 => Err("must be more than 0".to_string()),
        ns => Ok(ns),
    }
}

fn export_help() -> String {
    format!(
        "\
One span per call of the window, of every thread (behind the filters): the calls `fdr calls
--format json --top {MAX_CALLS_TOP}` lists, each once. Name: the function's full name. Start: the window
start's Unix time (from the log's wall clock) plus the call's start_ns; end: the start plus its
duration_ns. Parent: its caller. Kind internal. Attributes: thread.id, thread.name (when the log
names the thread), fdr.open = true on a call still running when the window was written (it ends
there: its time so far), fdr.inferred_start = true on a call entered before the window (it
starts there), fdr.arg.NAME per logged argument (int). The calls without a caller also carry why
the log was written: fdr.reason (slow call, still running, signal, panic, exit, api),
fdr.trigger.function, fdr.trigger.limit_ns, fdr.trigger.duration_ns. Resource: service.name,
host.name (with --host-name), process.pid, process.executable.name, telemetry.sdk.name = fdr,
telemetry.sdk.language = rust, telemetry.sdk.version. Scope: fdr.
Trace id: one per window, derived from the process id and the window's start and end (the same
log always gives the same ids), or --traceparent's. Polls of async tasks are spans like other
calls; tasks themselves are not exported yet.
--otlp URL: POST application/x-protobuf to URL (http or https), gzipped unless
--otlp-compression none, at most --max-spans spans per request (a span's parent may be in an
earlier request). --otlp env takes the endpoint of the OpenTelemetry variables
(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is, else OTEL_EXPORTER_OTLP_ENDPOINT plus /v1/traces, else
http://localhost:4318/v1/traces). Each setting comes from its flag, else the traces variable,
else the general one (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION, _CERTIFICATE,
OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), else the default. Header values are never printed.
Retries as the OTLP specification says: on no connection, a timeout, 429, 502, 503 or 504, after
the collector's Retry-After or a backoff doubling from 1 s up to 30 s, for at most --retry-for
per request; any other error status (401: a missing or wrong API key) stops at once. Standard
error gets one line: 'sent N spans in M requests to URL', and the spans the collector rejected,
if any; a failure exits non-zero with why, and how much was sent before.
--otlp-file OUT: the request, all spans in one ExportTraceServiceRequest, written to OUT.
At most {MAX_EXPORT_CALLS} calls per export: use a filter for a larger window."
    )
}

const RECOVER_HELP: &str = "\
A crash box (fdr-PROGRAM-PID.box) is a recorder's buffer pool kept in a shared file mapping: a
process that dies without writing its log (SIGKILL, the OOM killer, a segfault, abort) leaves
it, and the window it recorded, behind. For each box: a box whose process is still running (same
pid, same start time, same boot) is left alone, never read further nor changed; a box its process
closed (it wrote its final log) holds nothing and is removed; any other becomes the log the
process would have written, at the path it would have written it (PATH.1, PATH.2, ... when that
name is taken; in the current directory, under the same name, when that directory is gone or not
writable), written to a temporary file renamed into place, with a line 'wrote LOG: process PID
(PROGRAM) how it died'; then the box is removed (not with --keep). The log's reason says the
process died, and how (the crash signal caught, its address and thread, or that no handler ran:
SIGKILL, the OOM killer); calls open at the death are open at the log's end.
A box that cannot be recovered (cut short, corrupt, unreadable) is named with why, and the
others are still recovered; the command then exits non-zero. No box found: it says where it
looked, and exits 0. `fdr info BOX` shows what a box holds without changing it.";

fn profile_help() -> String {
    format!(
        "\
A profile (.fdrprof) is what the runtime's profile mode writes (FDR_OPTIONS mode=profile, or
profile=on beside recording): per thread, a call tree with, per call path, the calls' count,
total, self, min and max time and a latency histogram. The trees are merged by call path unless
--threads is given (then one section per tree: each thread's, and 'exited threads' for the
threads that ended before the profile was written; 'all threads' for a profile merged as it ran).

Columns: count, the calls that returned; total, their time (for a recursive function, only its
outermost calls', which hold the nested ones: f calling f calling f counts 3 calls and the outer
call's time); self, their time outside recorded callees, summed over every call; min and max,
exact; p50, p90, p99, from the call paths' histograms merged: within 1/16 (6.25%) of a duration
in their bucket, and kept within min..max. '(N folded)': N calls along deeper paths counted into
this one when the profile had no node left for them (profile_nodes bounds the nodes per thread)
or they were too deep; their time is in self. '(N open, ≥ T)': calls still running when the
profile was written, T their time so far, not in the other columns. The first line gives the
program, its pid, how long it was profiled, the trees, and how many calls were folded or open.

--tree: per call path, count, total, self, share (the path's total as a share of the run's, the
sum of the roots' totals) and p99, callees under their caller by total; paths at most {MAX_SHOWN_FRAMES} frames
deep (deeper calls are one '[calls deeper than {MAX_SHOWN_FRAMES} frames]' path holding their time).
--function PATTERN: for each matching function, its callers (with the count and time of the calls
each made to it; '(no recorded caller)' for calls from unrecorded code), its callees (count and
time of its calls to each), then its row. --min DURATION leaves out functions, paths (with
everything under them), callers and callees whose total is below DURATION.

JSON: without --threads, one array: per function an object with the keys function, count,
total_ns, self_ns, min_ns, p50_ns, p90_ns, p99_ns, max_ns, folded, open, open_ns; with --tree the
same objects per call path, callees nested under children; with --function each object adds
callers and callees (arrays of {{function, count, total_ns}}, function null for no recorded caller).
With --threads: one object per tree, with tid, thread (its name), label, and that array under
functions (tree with --tree).

--pprof OUT writes the profile as pprof protobuf (google/pprof's profile.proto; `go tool pprof OUT`
reads it), gzipped if OUT ends in .gz: sample types calls/count and time/nanoseconds (the default),
one sample per call path with the path's call count and its SELF time, so that pprof's flat time
of a function is its self time and its cumulative time its total; one function and location per
fdr function; period type time/nanoseconds, duration the time profiled. With --threads the samples
are per tree, labelled thread_id and thread_name. Names are written exactly; text escapes control
characters in them (\\x1b, \\n)."
    )
}

fn account_help() -> String {
    format!(
        "\
Count, min, max, total and self are exact. p50/p90/p99 are read from a log-linear histogram per
function (64 sub-buckets per power of two): within 0.8% of a recorded duration, with memory that
does not grow with the number of calls. Totals of recursive functions count nested activations.
Calls still running when the window was written (a hang, the main loop, the call that fired a
trigger, or a call cut by --to) are counted apart, in an 'open' column: they are not in count or
min..p99 (their duration is only a lower bound), 'max' shows '≥ time so far' when one of them is
the longest, and total and self include their time so far. JSON and CSV add open and open_max_ns.
Memory: about 200 bytes per function, plus at most 32 bytes per histogram bucket in use (at most
~30 KiB per function); a log whose calls use more than {MAX_LOG_FUNCTIONS} distinct function ids is refused.

An async function's calls are its polls. Its tasks (each call of the async fn, from its creation
to its completion or its drop before completing) get a line of their own under it ('└ tasks'):
tasks, min, p50, p90, p99, max and total latency, and how many were cancelled. In JSON an async
function's object adds the keys tasks, cancelled, task_min_ns, task_p50_ns, task_p90_ns,
task_p99_ns, task_max_ns, task_total_ns (count and the other keys stay per poll); CSV has the
same columns when the log has an async function, empty for other functions. A task created before
the window starts at the window start of the thread that ended it (*); one not completed when the
log ends is closed there ('(N open)'). At most {MAX_OPEN_TASKS} tasks may wait for their other end at one
point of the log. A function culled by the recorder (while culled, a call is recorded only when a
probe lets it through) is marked '~', and \"culled\": true in JSON; the text lists when each was
culled. A function the recorder's cost budget stopped timing at some point of the window (its
calls then were skipped: budget=PERCENT) is marked '[untimed by budget]', and
\"untimed_by_budget\": true in JSON; the text lists from when to when (fdr info gives the budget
and its estimates).

--by await: a row per await site of an instrumented async fn instead, from the waits the log
holds (an .await that returned Pending, timed from that poll to the poll that passed it): the
site (FILE:LINE:COLUMN), the async fn, waits, dropped (waits ended by dropping the task) and
min, p50, p90, p99, max and total waited, from the same histograms. JSON: one object per site
with at, function, id, waits, dropped, min_ns, p50_ns, p90_ns, p99_ns, max_ns, total_ns; CSV the
same columns. --sort count sorts by waits, self by total, name by site."
    )
}

fn calls_help() -> String {
    format!(
        "\
Each call is shown with its thread, its start (from the window start), its duration and self
time, then the calls it made as a tree, down to --depth levels (deeper calls are counted on the
line of their ancestor). In text, runs of consecutive calls of the same function under one caller
are one line, 'name × N', with their total and self time and their callees merged the same way.
JSON gives every call as an object with the keys function, id, thread (tid), start_ns,
duration_ns, self_ns, inferred_start, open_at_end, args (only for a call with logged arguments: an
array of {{name, value}}) and children (an array of the same objects).
At most {MAX_CALLS_UNDER_ONE} calls are shown under one call, and {MAX_CALLS_SHOWN} under all the listed calls together
(each listed call gets an equal share, at least 16); past that a line (text) says how many more
there were and their time, and JSON leaves them out. The log is read twice (three times with
--function, --from, --to or --around).

Tasks (listed after the calls when --function chose some, or when there is no call): each with
its waits at await sites, where its time went (ran: its polls; awaited; waited to be polled
after its wake-ups), and under it the tasks made or awaited in it: a task created in one of its
polls, or polled inside one (an instrumented async fn awaited in another), or tied to it by a
parent link (fdr-tracing's). JSON: each task an object with the keys of a call and task,
cancelled, end_thread, links, awaits, polls, running_ns, awaited_ns, wake_ups, scheduled_ns,
parent_task (null at a root) and tasks (the tasks under it, the same objects). --task ID shows
that task's tree alone. At most {MAX_CALLS_UNDER_ONE} tasks are shown under one."
    )
}

fn explain_help() -> String {
    format!(
        "\
Which call: by default the one that fired the trigger of a log a trigger wrote (its reason
record names it: `fdr info`); --call TID@START names another; --function PATTERN its slowest
(--top N of them); for a log recovered from a crash (`fdr recover`), the calls open at the death.
A log written for another reason (a signal, the API, exit) names no call: give --call or
--function. An async fn's call is a task (creation to completion): --function explains its
slowest tasks; --call names a task by the thread and time it was created at, as `fdr calls`
lists tasks; a long-poll trigger's call is the poll.

Its usual: the median duration of its function's other calls in the window (the call itself left
out; calls still running at the end are not counted), exact while a function has at most
{MAX_EXACT_DURATIONS} calls in the window, else from a log-linear histogram (within 0.8%); for a task, the
median latency of its function's other tasks. --baseline LOG takes the median of the same-named
function in another log instead (all its calls); --baseline PROFILE (.fdrprof) its p50 there
(within 1/16; a profile keeps no task latency, so tasks keep the window's usual). A function with
no usual (no other call; not in the baseline) counts as usually 0: its whole time is excess.

The excess (duration less usual) is followed down the calls it made: as long as one callee's
excess (its duration less its own function's usual) is more than half of the excess left, the
culprit moves to it; a task's excess is followed through the tasks made or awaited in it. Where no
callee holds most, the culprit is the call reached, and its excess is mostly its own time (what
no callee's excess holds, at most its self time), or mostly in callees that each took their usual
time (calls it does not usually make, or more of them: the two functions whose calls took longest
are named, `app::query ×50 (50.0 ms in all, usually 1.00 ms each)`), or shared (the two callees
with most excess are named, with their shares). A function whose calls take two paths
(a cache hit, a miss) has the usual of the more frequent one. The first line says it all;
`fdr info` ends with it for a log a trigger wrote.

Where the time went: for the call that fired the trigger, what the runtime measured (Linux): time
on a CPU, waiting for a CPU (runnable, descheduled) and off the CPU (blocked: a syscall, a lock, a
sleep), over the whole call when the thread's context switches were read, else the wait for a CPU
alone from when the watchdog looked (at least that much). Other calls are not measured. For a
task: its polls (running), its waits by await site (FILE:LINE:COLUMN) and its waits to be polled
after a wake-up (scheduled), as `fdr calls` reckons them.

A crash: how the process died (as `fdr info` says it), the calls the thread that died had open at
the window's end with their time so far and their usual, and what every other thread had open,
a line each.

--call: when several calls start at a time printed alike (a call and the calls it made first, to
three digits), the longest is explained, or the one starting at that very nanosecond when the
start is given as digits alone; add --function to name the function. At most {MAX_EXPLAIN_CANDIDATES} calls
starting then are looked at.

JSON: one object, with the keys function, id, task (null for a call), thread, start_ns,
duration_ns, open_at_end, inferred_start, usual_ns, usual_of (how many calls the usual is the
median of; 0: none), usual_from (\"window\", or the baseline's file), excess_ns, trigger, culprit
(its function), culprit_id, culprit_task, culprit_duration_ns, culprit_usual_ns, culprit_excess_ns,
share (the culprit's excess as a part of the call's, 0 to 1), verdict (no_excess, own_time,
usual_calls, shared, unseen_calls, not_followed), own_share (the culprit's own time's part of its
excess), usual_calls_share (the part in callees that took their usual time), shared (the two
callees with most excess, each with its share, when shared), usual_calls (when usual_calls, the
two functions whose calls took longest: function, id, calls, duration_ns in all, usual_ns and
usual_of of one call), path (the calls from the call explained down to the culprit, each with the
step keys and share), measured (whole_call, cpu_wait_at_least,
not_measured, not_the_trigger), running_ns, cpu_wait_ns, off_cpu_ns; for a task running_ns is
its polls' time, and polls, awaited_ns, wake_ups, scheduled_ns and awaits (fdr calls' objects)
are set (null for a call). Unknown values are null. With --function: an array of such objects,
slowest first (empty when none of its calls is in the window). A crash: one object with reason,
death, thread, function (the innermost open call of the thread that died), duration_ns, usual_ns,
excess_ns, stack (its open calls, outermost first) and threads (the others', each with thread and
stack), idle_threads; culprit, share and the times null.

Memory: per function its call durations (at most {MAX_EXACT_DURATIONS} exactly, then a histogram of at most
~30 KiB), the tasks `fdr calls` keeps, and the trees of the calls explained, at most
{MAX_CALLS_UNDER_ONE} calls each (calls past it are counted: when they could hold most of the excess the
report says so). The log is read twice (plus once for --baseline LOG)."
    )
}

fn replay_help() -> String {
    format!(
        "\
uftrace style: a call that made no other call is one line, 'name();', with its duration on the
left; a call that did is 'name() {{' at its entry and '}} /* name */' with its duration at its exit,
and the calls it made are indented between. Each thread's window is shown whole, one thread
after another (earliest window first), the thread id at the left of every line. Marks: '*' an
entry inferred at the window's start, '(open)' a call still running when the window was written
(its duration, '≥ 2.31 s', is its time so far), 'tail' a tail exit, 'unwound' a call closed by its caller's exit. Indentation stops
growing at {MAX_SHOWN_FRAMES} levels; deeper lines say their depth."
    )
}

const DIFF_HELP: &str = "\
Functions are matched by full name (ids differ between builds), sorted by the largest change in
total time, growth or shrinkage, then by name. A function in one log only has '-' (text) or null
(JSON) for the other. JSON: one array of objects with the keys function, before, after (each null
or an object with count, p50_ns, p99_ns, total_ns, self_ns) and change_total_ns (after minus
before).

An async function's calls are its polls; its tasks (creation to completion or drop) get a line of
their own under it, '└ tasks', with the change in their total latency, their total, p50 and p99
latency and their number, and it ranks by the larger of the two changes. In JSON its before and
after objects add tasks, task_p50_ns, task_p99_ns and task_total_ns, and its object adds
change_task_total_ns; other functions have none of these keys.";

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ConvertFormat {
    /// Chrome trace-event JSON.
    Chrome,
    /// Fuchsia trace format.
    Fxt,
}

/// The filter options, as the command line gives them ([`FilterArgs`] for the model).
#[derive(Args, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FilterOptions {
    /// Only the threads with this id or name (repeatable).
    #[arg(long, value_name = "TID|NAME")]
    pub thread: Vec<String>,
    /// Only calls of functions whose full name matches PATTERN ('*' matches any run of
    /// characters; a pattern without '*' also matches the last segments of a name:
    /// 'Worker::step' matches 'app::Worker::step'), and the calls they made.
    #[arg(long, value_name = "PATTERN")]
    pub function: Option<String>,
    /// Only what ran from TIME on, after the window start (e.g. 1.5ms; units ns, us, ms, s).
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    pub from: Option<u64>,
    /// Only what ran up to TIME, after the window start.
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    pub to: Option<u64>,
    /// Only what ran during the call that fired the trigger of a triggered snapshot, widened by
    /// MARGIN on each side (`--around=2ms`; default 0).
    #[arg(long, value_name = "MARGIN", num_args = 0..=1, require_equals = true,
          default_missing_value = "0", value_parser = parse_duration,
          conflicts_with_all = ["from", "to"])]
    pub around: Option<u64>,
    /// Leave out calls shorter than DURATION (their time counts in their caller's self time).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub min: Option<u64>,
}

impl FilterOptions {
    /// The filters asked for, for the model.
    pub(crate) fn args(&self) -> FilterArgs {
        FilterArgs {
            thread: self.thread.clone(),
            function: self.function.clone(),
            from: self.from,
            to: self.to,
            around: self.around,
            min: self.min,
        }
    }
}

fn view_help() -> String {
    format!(
        "\
The page holds its script, its style and its data: it loads nothing from the network and opens
from disk in any current browser (`fdr view app.fdr` writes app.fdr.html and prints its path).
From the top: why the log was written; the timeline, one lane per thread (calls as slices nested
by depth, async tasks above their polls, CPU migrations as ticks under the lane, the trigger's
moment as a red line, open calls and inferred entries marked with a notch) that the mouse wheel
zooms and a drag pans (keys: + and - or w and s zoom, a and d or the arrows pan, 0 shows all),
where hovering shows a call's function, duration and self time and a click its tree; the
{VIEW_SLOWEST} slowest calls, each with its tree; the per-function table (`fdr account`'s, at most
{MAX_VIEW_FUNCTIONS} functions by total time) with a latency histogram per function; the flame graph.
Size: the timeline is laid out for {VIEW_WIDTH_PX} pixels across the window. A call shorter than one
of them is merged, with its neighbours at its depth on its thread, into a bar that counts them,
except the slowest calls and those running around the call that fired a trigger (at most
{MAX_VIEW_KEPT}). At most {MAX_VIEW_SLICES} calls are drawn in detail (past that the threshold doubles until
they fit) and {MAX_VIEW_BARS} bars (past that, bars closer than a growing gap merge); at most
{MAX_VIEW_TASKS} tasks (the longest), {MAX_VIEW_MIGRATIONS} CPU migrations and {MAX_VIEW_FLAME_FRAMES} flame graph frames. A page
stays within about 40 MB plus the names of the functions it draws, whatever the log; the page
says what it merged or left out."
    )
}

fn stack_help() -> String {
    format!(
        "\
Paths are merged across threads. The latency column is one histogram per path, one bucket per
power of two, over the range in its header. Past {MAX_CALL_PATHS} distinct paths, new ones are merged into
a '[more call paths, merged]' node under their caller, which bounds memory. Paths are shown at most
{MAX_SHOWN_FRAMES} frames deep: a call made deeper (a deep recursion) is one '[calls deeper than {MAX_SHOWN_FRAMES} frames]'
node holding its whole time, the calls it made included."
    )
}

fn convert_help() -> String {
    format!(
        "\
Chrome JSON: one complete ('X') event per call whose entry and exit are in the log (written at
the exit; viewers sort events by time), a 'B'/'E' pair for a call whose entry is inferred, 'b'/'e'
async slices for async tasks. A warning on standard error says when the file will be larger than
the {json_gib} GiB that chrome://tracing and Perfetto's JSON importer handle: use --format fxt (Perfetto
reads it) or a filter then.",
        json_gib = MAX_CHROME_JSON_BYTES >> 30
    )
}

fn flame_help() -> String {
    format!(
        "\
Given a profile (.fdrprof, from profile mode) instead of a log, the graph is of its trees merged by
call path, each path's self time; a profile takes no filter and has no time order for --chart.
The graph merges call paths across threads (paths as for `fdr stack`: at most {MAX_CALL_PATHS}, at most
{MAX_SHOWN_FRAMES} frames deep). The chart keeps time order, one root per thread, up to {MAX_SHOWN_FRAMES} frames deep.
The renderer is handed at most {MAX_FLAME_FRAMES} frames and {flame_mib} MiB of call paths. Past that, the graph folds
its narrowest paths into their callers and the chart samples each thread's stack at a regular
interval, doubled until it fits; the SVG's subtitle says which. Paths narrower than the renderer
draws (0.01% of the width) are always folded into their callers, which changes nothing drawn.",
        flame_mib = MAX_FLAME_BYTES >> 20
    )
}
