//! The `fdr` command: latency tables, call trees, flame graphs and Perfetto timelines from the
//! logs fdr records, and reports and pprof exports of the profiles its profile mode writes;
//! `fdr export` sends a log's window to an OpenTelemetry collector (OTLP/HTTP); `fdr recover`
//! turns the crash boxes of processes that died into logs; `fdr view` writes one self-contained
//! HTML page to look at a log in a browser, offline; `fdr explain` says why a call was slow.
//!
//! [`run`] is the whole command behind a function, so that programs (and tests) can call it:
//!
//! ```
//! # // A log of one call of function 8, 60 ns long, where a recorder would have written one.
//! # let dir = std::env::temp_dir().join(format!("fdr-cli-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).unwrap();
//! # let mut log = fdr_testkit::synth::LogBuilder::new(1_000_000_000);
//! # let mut b = log.block(1, 0, 100);
//! # b.enter(8, 200);
//! # b.exit(8, 260);
//! # b.finish();
//! # std::fs::write(dir.join("app.fdr"), log.finish()).unwrap();
//! # std::env::set_current_dir(&dir).unwrap();
//! let mut out = Vec::new();
//! fdr_cli::run(&["account", "app.fdr"], &mut out).unwrap();
//! let report = String::from_utf8_lossy(&out);
//! print!("{report}");
//! assert!(report.lines().any(|l| l.contains("60 ns") && l.ends_with("#8")));
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```
//!
//! Every command reads the log as a stream: memory grows with the number of functions, threads
//! and stack depth, never with the size of the file. A profile (`fdr profile`, `fdr flame`) is
//! read whole: its size grows with its call paths, which the runtime bounds, not with the run.
//!
//! Its one interface is [`run`] (and [`CliError`]); the rest is the crate's own. Inside, it is
//! in layers: a core that turns records into calls (`model`, over the replay engine of
//! [`fdr_format::replay`]), one module per command that computes what it shows (`commands`), one
//! per output that prints it (`render`), and a runner that opens the log, resolves the filters and sets up the progress
//! bar once. In the table, a module uses only modules in rows below its own
//! (`tests/modules.rs` checks it, so there is no cycle):
//!
//! | modules | hold |
//! |---|---|
//! | `fuzz` | the fuzz targets' entry points (feature `fuzzing`): every layer on arbitrary bytes |
//! | `runner` | runs a parsed command: open, filter, progress once; the command; its renderer |
//! | `cli` | the commands' arguments and help, as clap parses them |
//! | `progress` | the progress bar: how far a pass got (the model's `Report`), drawn |
//! | `render::await_sites` | `account --by await`'s table, in `account`'s formats |
//! | `render::explain` | `explain`'s report: each call's verdict line (which `info` ends with), its culprit, its usual, the way down, where the time went; a crash's open stacks |
//! | `render::account`, `render::calls`, `render::diff`, `render::dump`, `render::flame`, `render::fxt`, `render::info`, `render::pprof`, `render::profile`, `render::recover`, `render::replay`, `render::stack`, `render::view` | each command's output: text, CSV, JSON, SVG, FXT, pprof protobuf, the `view` page (HTML); what `recover` did |
//! | `render::chrome`, `render::culls`, `render::budget` | Chrome JSON (and the process ids FXT shares); the culled functions' list; what the cost budget did, and the functions it untimed |
//! | `render::reason` | why the log was written (the call that fired a trigger, how a crashed process died) |
//! | `render::labels`, `render::dates` | thread labels and times relative to the window's start, which every renderer uses; dates as a person reads them, in UTC and the local time zone |
//! | `commands::explain` | why a call was slow: its usual (the window's other calls, or a baseline log's or profile's), its excess followed down to the callee that holds it, where its time went; a crash's open calls |
//! | `commands::diff`, `commands::profile`, `commands::view`, `commands::await_sites` | two logs accounted and compared; a profile file per function, per call path, around a function; what the `view` page shows (the table, the slowest calls, the flame graph's paths and a timeline bounded in size); the waits at each await site (`account --by await`, tallied as `account` tallies tasks) |
//! | `commands::account`, `commands::calls`, `commands::convert`, `commands::dump`, `commands::export`, `commands::flame`, `commands::info`, `commands::recover`, `commands::replay`, `commands::stack` | what each command shows, from the model (`export`: the window as OTLP spans, sent; `recover`: crash boxes turned into logs, written) |
//! | `model::trie` | the call trie (`stack`, flame graphs) |
//! | `model::task_polls` | the polls of one async task's tree (`replay --task`) |
//! | `model::pass` | a pass over a log behind the filter, in shares; the plan |
//! | `model::filter` | `--thread`, `--function`, `--from`/`--to`/`--around`, `--min` |
//! | `model::engine`, `model::tasks`, `model::culls`, `model::budget`, `model::thin_window`, `model::trigger`, `model::profile_file` | the replay engine as the commands run it (errors, progress, the plan); async tasks; culled functions; the functions the cost budget untimed; what to say of a window empty or thinned by the threshold; the call that fired a trigger; a profile file and its call paths |
//! | `model::names`, `model::input`, `model::hist` | names from the log's tables; opening a log; histograms |
//! | `output` | output files written atomically |
//! | `units`, `error`, `limits` | durations as shown and ticks to nanoseconds; errors; the limits of the command and of its reader, each once |
//! | `escape` | names from a log made safe to show |

#![warn(missing_docs)]
#![warn(unreachable_pub)]
#![forbid(unsafe_code)]

mod cli;
pub(crate) mod commands;
mod error;
pub(crate) mod escape;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz;
pub(crate) mod limits;
pub(crate) mod model;
pub(crate) mod output;
pub(crate) mod progress;
pub(crate) mod render;
mod runner;
pub(crate) mod units;

use std::ffi::{OsStr, OsString};
use std::io::Write;

use clap::Parser;

pub use error::CliError;

use cli::Cli;

/// Runs one `fdr` command. `args` are the arguments without the program name, e.g.
/// `["account", "app.fdr"]`; they need not be UTF-8 (paths are opened as given). Reports go to
/// `out`; `--help` and `--version` too.
///
/// ```
/// let mut out = Vec::new();
/// fdr_cli::run(&["--version"], &mut out)?;
/// assert!(String::from_utf8(out).unwrap().starts_with("fdr "));
/// let e = fdr_cli::run(&["account", "/nonexistent.fdr"], &mut Vec::new()).unwrap_err();
/// assert_eq!(e.exit_code(), 1);
/// # Ok::<(), fdr_cli::CliError>(())
/// ```
pub fn run<A: AsRef<OsStr>>(args: &[A], out: &mut dyn Write) -> Result<(), CliError> {
    let argv = std::iter::once(OsString::from("fdr"))
        .chain(args.iter().map(|a| a.as_ref().to_os_string()));
    let cli = match Cli::try_parse_from(argv) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => write!(out, "{}", e.render())
                    .map_err(|err| CliError::io("<output>", "writing help", err)),
                _ => Err(CliError::Usage(e.render().to_string())),
            };
        }
    };
    runner::run(cli.command, out)
}
