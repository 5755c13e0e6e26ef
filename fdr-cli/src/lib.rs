//! The `fdr` command: latency tables, call trees, flame graphs and Perfetto timelines from the
//! logs fdr records.
//!
//! [`run`] is the whole command behind a function, so that programs (and tests) can call it:
//!
//! ```no_run
//! let mut out = Vec::new();
//! fdr_cli::run(&["account".to_string(), "app.fdr".to_string()], &mut out).unwrap();
//! print!("{}", String::from_utf8_lossy(&out));
//! ```
//!
//! Every command reads the log as a stream: memory grows with the number of functions, threads
//! and stack depth, never with the size of the file.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod account;
pub mod calls;
pub mod chrome;
pub mod dump;
mod error;
pub mod flame;
pub mod fxt;
pub mod hist;
pub mod info;
pub mod names;
pub mod progress;
pub mod stack;
pub mod synth;
pub mod units;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

pub use error::CliError;

use progress::Progress;

const AFTER_HELP: &str = "\
Times: ns, µs, ms and s on a terminal; integer nanoseconds in JSON and CSV.
Calls whose entry is before the recorded window (a ring snapshot that starts mid-stack) get an
inferred entry at the window's start; calls still running at the end are closed there. Both are
marked in the outputs.";

#[derive(Parser, Debug)]
#[command(
    name = "fdr",
    version,
    about = "Read fdr flight-recorder logs: latency tables, call trees, flame graphs, Perfetto timelines",
    after_help = AFTER_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Header, calibration, threads, blocks, time span, functions, losses and threshold.
    Info {
        /// The log (.fdr).
        log: PathBuf,
    },
    /// Every record, one per line, with its byte offset.
    Dump {
        /// The log (.fdr).
        log: PathBuf,
        /// Check the block grammar (BufferExtents, NewBuffer, WalltimeMarker, [Pid], NewCPUId,
        /// events) and exit non-zero at the first violation.
        #[arg(long)]
        verify: bool,
    },
    /// Per function: count, min, p50, p90, p99, max, total and self time.
    #[command(after_help = "\
Count, min, max, total and self are exact. p50/p90/p99 are read from a log-linear histogram per
function (64 sub-buckets per power of two): within 0.8% of a recorded duration, with memory that
does not grow with the number of calls. Totals of recursive functions count nested activations.")]
    Account {
        /// The log (.fdr).
        log: PathBuf,
        /// Sort by this column (numbers: largest first).
        #[arg(long, value_enum, default_value_t = account::SortKey::Total)]
        sort: account::SortKey,
        /// Show only the first N functions.
        #[arg(long, value_name = "N")]
        top: Option<usize>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = account::Format::Text)]
        format: account::Format,
        /// Reader threads, each decoding the blocks of a share of the log's threads
        /// [default: 2 on a log over 32 MiB with two cores, else 1].
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
        threads: Option<u16>,
    },
    /// The call trie: per call path, count, total and self time, latency histogram.
    #[command(after_help = "\
Paths are merged across threads. The latency column is one histogram per path, one bucket per
power of two, over the range in its header. Past 262144 distinct paths, new ones are merged into
a '[more call paths, merged]' node under their caller, which bounds memory.")]
    Stack {
        /// The log (.fdr).
        log: PathBuf,
        /// `text`: an indented tree; `folded`: `a;b;c <self ns>` lines for flame graph tools.
        #[arg(long, value_enum, default_value_t = stack::Format::Text)]
        format: stack::Format,
    },
    /// Chrome trace-event JSON (chrome://tracing, Perfetto) or Fuchsia trace format (Perfetto).
    Convert {
        /// The log (.fdr).
        log: PathBuf,
        /// Output format.
        #[arg(long, value_enum)]
        format: ConvertFormat,
        /// Output file (`-` for standard output).
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
    },
    /// A flame graph SVG (self time per call path).
    #[command(after_help = "\
The graph merges call paths across threads (memory as for `fdr stack`). The chart keeps time
order, one root per thread: its size, in memory and on disk, grows with the number of times the
stack changes.")]
    Flame {
        /// The log (.fdr).
        log: PathBuf,
        /// Output file (`-` for standard output).
        #[arg(short, long, value_name = "OUT.svg")]
        output: PathBuf,
        /// A flame chart: time runs left to right, one chart per thread.
        #[arg(long)]
        chart: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ConvertFormat {
    /// Chrome trace-event JSON.
    Chrome,
    /// Fuchsia trace format.
    Fxt,
}

/// Runs one `fdr` command. `args` are the arguments without the program name, e.g.
/// `["account", "app.fdr"]`. Reports go to `out`; `--help` and `--version` too.
pub fn run(args: &[String], out: &mut dyn Write) -> Result<(), CliError> {
    let cli =
        match Cli::try_parse_from(std::iter::once("fdr".to_string()).chain(args.iter().cloned())) {
            Ok(c) => c,
            Err(e) => {
                use clap::error::ErrorKind;
                return match e.kind() {
                    ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                        write!(out, "{}", e.render())
                            .map_err(|err| CliError::io("<output>", "writing help", err))
                    }
                    ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                        Err(CliError::Usage(e.render().to_string()))
                    }
                    _ => Err(CliError::Usage(e.render().to_string())),
                };
            }
        };
    let path_of = |p: &PathBuf| p.to_string_lossy().into_owned();
    let size = |p: &str| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    match cli.command {
        Command::Info { log } => {
            let path = path_of(&log);
            let progress = Progress::new(size(&path), 1);
            let r = info::run(&path, out, &progress);
            progress.finish();
            r
        }
        Command::Dump { log, verify } => dump::run(&path_of(&log), verify, out),
        Command::Account {
            log,
            sort,
            top,
            format,
            threads,
        } => {
            let path = path_of(&log);
            let len = size(&path);
            let progress = Progress::new(len, 1);
            let readers = threads.map_or_else(|| readers_for(len), usize::from);
            let r = account::Account::of_log(&path, readers, &progress);
            progress.finish();
            let (mut acc, d) = r?;
            let names = names::Names::new(&d.info);
            let clock = units::Clock::new(d.info.header.cycle_frequency);
            let rows = acc.rows(&names, &clock, sort, top);
            account::write(&rows, format, out)
                .map_err(|e| CliError::io("<output>", "writing the report", e))
        }
        Command::Stack { log, format } => {
            let path = path_of(&log);
            let progress = Progress::new(size(&path), 2);
            let r = stack::run(&path, format, out, &progress);
            progress.finish();
            r
        }
        Command::Convert {
            log,
            format,
            output,
        } => {
            let path = path_of(&log);
            let progress = Progress::new(size(&path), 2);
            let dest = path_of(&output);
            let r = with_output(&dest, out, |w| match format {
                ConvertFormat::Chrome => chrome::run(&path, w, &dest, &progress),
                ConvertFormat::Fxt => fxt::run(&path, w, &dest, &progress),
            });
            progress.finish();
            r
        }
        Command::Flame { log, output, chart } => {
            let path = path_of(&log);
            let progress = Progress::new(size(&path), 2);
            let dest = path_of(&output);
            let r = with_output(&dest, out, |w| {
                flame::run(&path, w, &dest, chart, &progress)
            });
            progress.finish();
            r
        }
    }
}

/// Logs at least this large are accounted by two reader threads when the machine has two
/// cores: each decodes the blocks of half of the log's threads.
const PARALLEL_BYTES: u64 = 32 << 20;

fn readers_for(len: u64) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if len >= PARALLEL_BYTES {
        cores.min(2)
    } else {
        1
    }
}

/// Runs `f` on a buffered writer to `dest` (`-`: `out`), flushing it at the end.
fn with_output(
    dest: &str,
    out: &mut dyn Write,
    f: impl FnOnce(&mut dyn Write) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let werr = |e| CliError::io(dest, "cannot write the output", e);
    if dest == "-" {
        let mut w = BufWriter::with_capacity(1 << 20, out);
        f(&mut w)?;
        return w.flush().map_err(werr);
    }
    let file = File::create(dest).map_err(|e| CliError::io(dest, "cannot create the output", e))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    f(&mut w)?;
    w.flush().map_err(werr)
}
