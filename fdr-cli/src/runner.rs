//! Runs a parsed command: opens the log, resolves the filters and sets up the progress bar
//! once ([`Job`]), asks the command for what it shows and hands that to its renderer.

use std::io::Write;
use std::path::Path;

use crate::cli::{Command, ConvertFormat, FilterOptions};
use crate::commands;
use crate::error::shown_path;
use crate::model::filter::Filter;
use crate::model::input::Log;
use crate::progress::Progress;
use crate::render;
use crate::CliError;

/// What every analysing command starts from: the log, its filter, and a progress bar over the
/// passes the command makes.
struct Job {
    log: Log,
    filter: Filter,
    progress: Progress,
}

impl Job {
    /// Opens `path` and resolves `args`; `passes` says how many times the command reads the log
    /// under that filter (a filter that needs a plan may add one).
    fn open(
        path: &Path,
        args: &FilterOptions,
        passes: impl Fn(&Filter) -> u64,
    ) -> Result<Job, CliError> {
        Job::of(Log::open(path)?, args, passes)
    }

    /// [`Job::open`] of a log already open.
    fn of(
        log: Log,
        args: &FilterOptions,
        passes: impl Fn(&Filter) -> u64,
    ) -> Result<Job, CliError> {
        let filter = Filter::resolve(&args.args(), &log)?;
        let progress = Progress::new(log.len(), passes(&filter));
        Ok(Job {
            log,
            filter,
            progress,
        })
    }

    /// Reader threads: as asked, or by the log's size.
    fn readers(&self, asked: Option<u16>) -> usize {
        asked.map_or_else(|| readers_for(self.log.len()), usize::from)
    }

    /// Runs `f` and then clears the progress bar, whatever `f` returned.
    fn run<T>(&self, f: impl FnOnce(&Job) -> Result<T, CliError>) -> Result<T, CliError> {
        let r = f(self);
        self.progress.finish();
        r
    }
}

/// Runs `command`; reports go to `out`.
pub fn run(command: Command, out: &mut dyn Write) -> Result<(), CliError> {
    let w = |e| CliError::io("<output>", "writing the report", e);
    match command {
        Command::Info { log } => {
            let file = Log::open_any(&log)?;
            if file.is_box()? {
                let bytes = file.read_box()?;
                let progress = Progress::new(bytes.len() as u64, 1);
                let s = commands::info::box_summary(file.name(), &bytes, &progress);
                progress.finish();
                return render::info::write_box(&s?, out).map_err(w);
            }
            let log = file.only_log()?;
            let progress = Progress::new(log.len(), 1);
            let s = commands::info::summary(&log, &progress);
            progress.finish();
            render::info::write(&s?, out).map_err(w)
        }
        Command::Recover {
            paths,
            keep,
            output,
        } => {
            let opts = commands::recover::Options {
                paths,
                keep,
                output,
            };
            commands::recover::recover(&opts, out, &mut |o, to| render::recover::line(o, to))
        }
        Command::Dump { log, verify } => {
            let mut printer = render::dump::Printer::new(out);
            commands::dump::run(&Log::open(&log)?, verify, &mut printer)
        }
        Command::Account {
            log,
            sort,
            top,
            format,
            threads,
            filter,
        } => {
            let job = Job::open(&log, &filter, |f| 1 + u64::from(f.needs_plan()))?;
            let readers = job.readers(threads);
            let t = job.run(|j| {
                commands::account::table(&j.log, &j.filter, readers, sort, top, &j.progress)
            })?;
            render::account::report(&t, format, out).map_err(w)
        }
        Command::Stack {
            log,
            format,
            filter,
        } => {
            let job = Job::open(&log, &filter, |_| 2)?;
            let (t, p) = job.run(|j| commands::stack::trie(&j.log, &j.filter, &j.progress))?;
            render::stack::write(&t, &p, format, out).map_err(w)
        }
        Command::Convert {
            log,
            format,
            output,
            filter,
        } => {
            let job = Job::open(&log, &filter, |_| 2)?;
            let dest = shown_path(&output);
            job.run(|j| {
                let p = commands::convert::timeline_plan(&j.log, &j.filter, &j.progress)?;
                let name = j.log.name();
                crate::output::write(&output, j.log.path(), out, |o| match format {
                    ConvertFormat::Chrome => render::chrome::write(&p, name, o, &dest, &mut |s| {
                        commands::convert::timeline(&j.log, &j.filter, &p, s, &j.progress)
                    }),
                    ConvertFormat::Fxt => render::fxt::write(&p, name, o, &dest, &mut |s| {
                        commands::convert::timeline(&j.log, &j.filter, &p, s, &j.progress)
                    }),
                })
            })
        }
        Command::Export {
            log,
            otlp,
            otlp_headers,
            otlp_ca,
            otlp_compression,
            otlp_file,
            service_name,
            host_name,
            traceparent,
            max_spans,
            timeout,
            retry_for,
            filter,
        } => {
            let dest = match (otlp, otlp_file) {
                (Some(url), _) => Export::Send(Box::new(Send {
                    url,
                    headers: otlp_headers,
                    ca: otlp_ca,
                    compression: otlp_compression,
                    max_spans: max_spans as usize,
                    timeout: timeout.map(std::time::Duration::from_nanos),
                    retry_for: std::time::Duration::from_nanos(retry_for),
                })),
                (None, Some(path)) => Export::File(path),
                (None, None) => unreachable!("clap requires --otlp or --otlp-file"),
            };
            let names = ExportNames {
                service_name,
                host_name,
                traceparent,
            };
            export(&log, dest, names, &filter, out)
        }
        Command::Flame {
            log,
            output,
            chart,
            filter,
        } => {
            let file = Log::open_any(&log)?;
            let dest = shown_path(&output);
            if file.is_profile()? {
                return flame_of_profile(&file, &output, chart, &filter, out);
            }
            let job = Job::of(file.only_log()?, &filter, |_| 2)?;
            job.run(|j| {
                crate::output::write(&output, j.log.path(), out, |o| {
                    let d = commands::flame::drawing(&j.log, &j.filter, chart, &j.progress)?;
                    render::flame::write(&d, o, &dest)
                })
            })
        }
        Command::Calls {
            log,
            top,
            depth,
            format,
            threads,
            filter,
        } => {
            let job = Job::open(&log, &filter, |f| 2 + u64::from(f.needs_plan()))?;
            let opts = commands::calls::Options {
                top: top as usize,
                depth: usize::from(depth),
                merge: format == render::calls::Format::Text,
                readers: job.readers(threads),
            };
            let s = job.run(|j| commands::calls::slowest(&j.log, &j.filter, &opts, &j.progress))?;
            render::calls::write(&s, format, opts.depth, out).map_err(w)
        }
        Command::Replay {
            log,
            threads,
            filter,
        } => {
            let job = Job::open(&log, &filter, |_| 2)?;
            let readers = job.readers(threads);
            job.run(|j| {
                let p = commands::replay::plan(&j.log, &j.filter, readers, &j.progress)?;
                let order = commands::replay::order(&p);
                render::replay::write(&p, &order, out, &mut |t, lines| {
                    commands::replay::thread(&j.log, &j.filter, &p, t, lines, &j.progress)
                })
            })
        }
        Command::Profile {
            profile,
            tree,
            function,
            threads,
            sort,
            top,
            min,
            format,
            output,
            pprof,
        } => {
            let file = Log::open_any(&profile)?;
            let p = crate::model::profile::read(&file)?;
            if let Some(dest) = pprof {
                return write_pprof(&p, &file, &dest, threads, out);
            }
            let view = match (tree, function) {
                (true, _) => commands::profile::View::Tree,
                (false, Some(f)) => commands::profile::View::Function(f),
                (false, None) => commands::profile::View::Functions,
            };
            let opts = commands::profile::Options {
                view,
                threads,
                sort,
                top,
                min_ns: min,
            };
            let r = commands::profile::report(&p, file.name(), &opts)?;
            let dest = shown_path(&output);
            crate::output::write(&output, file.path(), out, |o| {
                render::profile::write(&r, format, o)
                    .map_err(|e| CliError::io(&dest, "cannot write the report", e))
            })
        }
        Command::Diff {
            before,
            after,
            format,
        } => {
            if before.as_os_str() == "-" && after.as_os_str() == "-" {
                return Err(CliError::Usage(
                    "fdr: diff: only one of the two logs can be standard input (-)".into(),
                ));
            }
            let before = Log::open(&before)?;
            let after = Log::open(&after)?;
            let progress = Progress::new(before.len() + after.len(), 1);
            let changes = commands::diff::changes(&before, &after, &progress);
            progress.finish();
            render::diff::write(&changes?, format, out).map_err(w)
        }
    }
}
/// `fdr flame` of a profile: its trees merged by call path; no chart, no filter.
fn flame_of_profile(
    file: &Log,
    output: &Path,
    chart: bool,
    filter: &FilterOptions,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    if !filter.args().is_empty() {
        return Err(CliError::Usage(format!(
            "fdr: flame: {} is a profile: the filters (--thread, --function, --from, --to, \
             --around, --min) apply to logs only",
            file.name()
        )));
    }
    let p = crate::model::profile::read(file)?;
    if chart {
        return Err(CliError::Empty {
            path: file.name().to_string(),
            what: "a profile keeps no time order, so it has no flame chart: draw its flame graph \
                   (without --chart), or record a log for a chart"
                .into(),
        });
    }
    let dest = shown_path(output);
    crate::output::write(output, file.path(), out, |o| {
        let d = commands::flame::profile_drawing(file.name(), &p)?;
        render::flame::write(&d, o, &dest)
    })
}

/// `fdr profile --pprof`: the profile as pprof protobuf in `dest`, gzipped if its name ends in
/// `.gz`.
#[cfg(feature = "otlp")]
fn write_pprof(
    p: &fdr_format::profile::Profile,
    file: &Log,
    dest: &Path,
    threads: bool,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let gzip = dest.to_string_lossy().ends_with(".gz");
    let shown = shown_path(dest);
    crate::output::write(dest, file.path(), out, |o| {
        render::pprof::write(p, threads, gzip, o, &shown)
    })
}

/// Without the `otlp` feature there is no protobuf writer.
#[cfg(not(feature = "otlp"))]
fn write_pprof(
    _: &fdr_format::profile::Profile,
    _: &Log,
    _: &Path,
    _: bool,
    _: &mut dyn Write,
) -> Result<(), CliError> {
    Err(CliError::Usage(
        "fdr: profile: --pprof needs fdr built with the cargo feature `otlp` (on by default; \
         this fdr was built without it)"
            .into(),
    ))
}

/// Where `fdr export` puts the window.
#[cfg_attr(not(feature = "otlp"), allow(dead_code))]
enum Export {
    /// Sent to a collector.
    Send(Box<Send>),
    /// Written to a file.
    File(std::path::PathBuf),
}

/// How `fdr export --otlp` sends: the flags as given (`None`: not given, the variables'
/// or the default then).
#[cfg_attr(not(feature = "otlp"), allow(dead_code))]
struct Send {
    url: String,
    headers: Option<String>,
    ca: Option<std::path::PathBuf>,
    compression: Option<String>,
    max_spans: usize,
    timeout: Option<std::time::Duration>,
    retry_for: std::time::Duration,
}

/// What `fdr export` names besides the log.
#[cfg_attr(not(feature = "otlp"), allow(dead_code))]
struct ExportNames {
    service_name: Option<String>,
    host_name: Option<String>,
    traceparent: Option<String>,
}

/// `fdr export`: the window of `log` behind `filter`, sent to a collector or written to a file;
/// one line on standard error says what was done.
#[cfg(feature = "otlp")]
fn export(
    log: &Path,
    dest: Export,
    names: ExportNames,
    filter: &FilterOptions,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    use fdr_otlp::settings::{Given, Otel, Settings};
    // What can be checked without the log, first: the flags, the variables, the CA file.
    let usage =
        |flag: &str, e: &dyn std::fmt::Display| CliError::Usage(format!("fdr: export: {flag} {e}"));
    let given = match &dest {
        Export::Send(s) => Given {
            endpoint: s.url.clone(),
            headers: s
                .headers
                .as_deref()
                .map(fdr_otlp::headers::Headers::parse)
                .transpose()
                .map_err(|e| usage("--otlp-headers", &e))?,
            compression: s
                .compression
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(|e: String| usage("--otlp-compression", &e))?,
            ca_file: s.ca.clone(),
            timeout: s.timeout,
            service_name: names.service_name.clone(),
        },
        // A file is not sent: the variables give only what goes in it.
        Export::File(_) => Given {
            endpoint: fdr_otlp::settings::DEFAULT_ENDPOINT.into(),
            service_name: names.service_name.clone(),
            ..Given::default()
        },
    };
    let settings = Settings::resolve(&given, &Otel::from_env()).map_err(|e| match e.variable {
        Some(_) => CliError::Usage(format!("fdr: export: {e}")),
        None => usage("--otlp", &e),
    })?;
    let client = match &dest {
        Export::Send(_) => Some(fdr_otlp::client::Client::new(&settings.transport).map_err(
            |e| {
                let flag = match (&given.ca_file, settings.ca_variable) {
                    (None, Some(v)) => v,
                    _ => "--otlp-ca",
                };
                match e {
                    fdr_otlp::Error::Settings(m) => usage(flag, &m),
                    other => usage("--otlp", &other),
                }
            },
        )?),
        Export::File(_) => None,
    };
    if let Some(tp) = &names.traceparent {
        if fdr_otlp::TraceParent::parse(tp).is_none() {
            return Err(CliError::Usage(format!(
                "fdr: export: --traceparent {}: not a W3C traceparent \
                 (00-<32 hex digits>-<16 hex digits>-<2 hex digits>, lowercase, ids not all zero)",
                crate::escape::shown(tp)
            )));
        }
    }
    let job = Job::open(log, filter, commands::export::passes)?;
    let opts = commands::export::Options {
        service_name: settings.service_name.clone(),
        host_name: names.host_name,
        traceparent: names.traceparent,
        resource: settings.resource.clone(),
    };
    let w = job.run(|j| commands::export::window(&j.log, &j.filter, &opts, &j.progress))?;
    let spans = w.calls.len();
    match dest {
        Export::File(path) => {
            let shown = shown_path(&path);
            crate::output::write(&path, job.log.path(), out, |o| {
                o.write_all(&commands::export::request_bytes(&w))
                    .map_err(|e| CliError::io(&shown, "cannot write the output", e))
            })?;
            eprintln!(
                "wrote {spans} span{} in 1 request to {shown}",
                if spans == 1 { "" } else { "s" }
            );
        }
        Export::Send(send) => {
            let policy = fdr_otlp::retry::RetryPolicy {
                timeout: settings.timeout,
                max_elapsed: send.retry_for,
                ..fdr_otlp::retry::RetryPolicy::default()
            };
            let client = client.expect("made for --otlp");
            let url = client.endpoint().to_string();
            let r = commands::export::send(&w, &client, send.max_spans, &policy)?;
            eprintln!(
                "sent {} span{} in {} request{} to {}",
                r.spans,
                if r.spans == 1 { "" } else { "s" },
                r.requests,
                if r.requests == 1 { "" } else { "s" },
                crate::escape::shown(&url)
            );
            if r.rejected_spans > 0 || !r.messages.is_empty() {
                eprintln!(
                    "the collector rejected {} of them{}{}",
                    r.rejected_spans,
                    if r.messages.is_empty() { "" } else { ": " },
                    crate::escape::shown(&r.messages.join("; "))
                );
            }
        }
    }
    Ok(())
}

/// Without the `otlp` feature there is no OTLP exporter.
#[cfg(not(feature = "otlp"))]
fn export(
    _: &Path,
    _: Export,
    _: ExportNames,
    _: &FilterOptions,
    _: &mut dyn Write,
) -> Result<(), CliError> {
    Err(CliError::Usage(
        "fdr: export needs fdr built with the cargo feature `otlp` (on by default; this fdr \
         was built without it)"
            .into(),
    ))
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
