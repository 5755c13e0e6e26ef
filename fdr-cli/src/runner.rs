//! Runs a parsed command: opens the log, resolves the filters and sets up the progress bar
//! once ([`Job`]), asks the command for what it shows and hands that to its renderer.

use std::io::Write;
use std::path::Path;

use crate::cli::{
    AccountArgs, AccountBy, CallsArgs, Command, ConvertArgs, ConvertFormat, DiffArgs, DumpArgs,
    ExplainArgs, ExportArgs, FilterOptions, FlameArgs, InfoArgs, ProfileArgs, RecoverArgs,
    ReplayArgs, StackArgs, ViewArgs,
};
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
pub(crate) fn run(command: Command, out: &mut dyn Write) -> Result<(), CliError> {
    match command {
        Command::Info(a) => info(a, out),
        Command::Recover(a) => recover(a, out),
        Command::Dump(a) => dump(a, out),
        Command::Account(a) => account(a, out),
        Command::Stack(a) => stack(a, out),
        Command::Convert(a) => convert(a, out),
        Command::Export(a) => export(a, out),
        Command::Flame(a) => flame(a, out),
        Command::Calls(a) => calls(a, out),
        Command::Replay(a) => replay(a, out),
        Command::Profile(a) => profile(a, out),
        Command::Diff(a) => diff(a, out),
        Command::View(a) => view(a, out),
        Command::Explain(a) => explain(a, out),
    }
}

/// A report that could not be written to `out`.
fn written(e: std::io::Error) -> CliError {
    CliError::io("<output>", "writing the report", e)
}

/// `fdr info`: what a log says of itself; of a crash box, what it says of its process, then
/// the same of the log it recovers to.
fn info(a: InfoArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let file = Log::open_any(&a.log)?;
    if file.is_box()? {
        let source = file.box_source()?;
        let progress = Progress::new(file.len(), 1);
        let s = commands::info::box_summary(file.name(), &source, Some(source.file()), &progress);
        progress.finish();
        return render::info::write_box(&s?, out).map_err(written);
    }
    let log = file.only_log()?;
    let progress = Progress::new(log.len(), 1);
    let s = commands::info::summary(&log, &progress);
    progress.finish();
    let s = s?;
    // A log a trigger wrote ends with why its call was slow: one more pass.
    let line = if crate::model::trigger::fired(&s.info).is_some() {
        let progress = Progress::new(log.len(), 1);
        let e = commands::explain::trigger_call(&log, &s.info, &s.threads, &progress, 0);
        progress.finish();
        match e {
            Ok(Some(e)) => {
                let names = crate::model::names::Names::new(&s.info);
                Some(render::explain::summary(&e, &names, false))
            }
            Ok(None) => None,
            Err(e) => Some(format!("not worked out: {e}")),
        }
    } else {
        None
    };
    render::info::write(&s, line.as_deref(), out).map_err(written)
}

/// `fdr recover`: crash boxes turned into logs, a line for each.
fn recover(a: RecoverArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let opts = commands::recover::RecoverOptions {
        paths: a.paths,
        keep: a.keep,
        output: a.output,
    };
    commands::recover::recover(&opts, out, &mut |o, to| render::recover::line(o, to))
}

/// `fdr dump`: every record, checked with `--verify`.
fn dump(a: DumpArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let mut printer = render::dump::Printer::new(out);
    commands::dump::run(&Log::open(&a.log)?, a.verify, &mut printer)
}

/// `fdr account`: the per-function table.
fn account(a: AccountArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let job = Job::open(&a.log, &a.filter, |f| 1 + u64::from(f.needs_plan()))?;
    let readers = job.readers(a.threads);
    if a.by == AccountBy::Await {
        let t = job.run(|j| {
            commands::await_sites::table(&j.log, &j.filter, readers, a.sort, a.top, &j.progress)
        })?;
        return render::await_sites::report(&t, a.format, out).map_err(written);
    }
    let t = job.run(|j| {
        commands::account::table(&j.log, &j.filter, readers, a.sort, a.top, &j.progress)
    })?;
    render::account::report(&t, a.format, out).map_err(written)
}

/// `fdr stack`: the call trie.
fn stack(a: StackArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let job = Job::open(&a.log, &a.filter, |_| 2)?;
    let (t, p) = job.run(|j| commands::stack::trie(&j.log, &j.filter, &j.progress))?;
    render::stack::write(&t, &p, a.format, out).map_err(written)
}

/// `fdr convert`: a timeline, Chrome JSON or FXT, written to `--output`.
fn convert(a: ConvertArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let job = Job::open(&a.log, &a.filter, |_| 2)?;
    let dest = shown_path(&a.output);
    job.run(|j| {
        let p = commands::convert::timeline_plan(&j.log, &j.filter, &j.progress)?;
        let name = j.log.name();
        crate::output::write(&a.output, j.log.path(), out, |o| match a.format {
            ConvertFormat::Chrome => render::chrome::write(&p, name, o, &dest, &mut |s| {
                commands::convert::timeline(&j.log, &j.filter, &p, s, &j.progress)
            }),
            ConvertFormat::Fxt => render::fxt::write(&p, name, o, &dest, &mut |s| {
                commands::convert::timeline(&j.log, &j.filter, &p, s, &j.progress)
            }),
        })
    })
}

/// `fdr flame`: the flame graph (or chart) of a log, or the flame graph of a profile.
fn flame(a: FlameArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let file = Log::open_any(&a.log)?;
    let dest = shown_path(&a.output);
    if file.is_profile()? {
        return flame_of_profile(&file, &a.output, a.chart, &a.filter, out);
    }
    let job = Job::of(file.only_log()?, &a.filter, |_| 2)?;
    job.run(|j| {
        crate::output::write(&a.output, j.log.path(), out, |o| {
            let d = commands::flame::drawing(&j.log, &j.filter, a.chart, &j.progress)?;
            render::flame::write(&d, o, &dest)
        })
    })
}

/// `fdr calls`: the slowest calls, each with the calls it made.
fn calls(a: CallsArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let job = Job::open(&a.log, &a.filter, |f| 2 + u64::from(f.needs_plan()))?;
    let opts = commands::calls::CallsOptions {
        top: a.top as usize,
        depth: usize::from(a.depth),
        merge: a.format == render::calls::CallsFormat::Text,
        readers: job.readers(a.threads),
        task: a.task,
    };
    let s = job.run(|j| commands::calls::slowest(&j.log, &j.filter, &opts, &j.progress))?;
    render::calls::write(&s, a.format, opts.depth, out).map_err(written)
}

/// `fdr replay`: each thread's entries and exits in time order.
fn replay(a: ReplayArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let job = Job::open(&a.log, &a.filter, |_| 2)?;
    let readers = job.readers(a.threads);
    job.run(|j| {
        let p = commands::replay::plan(&j.log, &j.filter, readers, &j.progress)?;
        let order = commands::replay::order(&p);
        let tree = match a.task {
            Some(root) => Some((
                root,
                commands::replay::tree_polls(&j.log, &j.filter, &p, root, &j.progress)?,
            )),
            None => None,
        };
        let only = tree.as_ref().map(|(root, t)| (*root, t));
        render::replay::write(&p, &order, only, out, &mut |t, lines| {
            commands::replay::thread(&j.log, &j.filter, &p, t, lines, &j.progress)
        })
    })
}

/// `fdr profile`: a profile file's report, or its pprof export with `--pprof`.
fn profile(a: ProfileArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let file = Log::open_any(&a.profile)?;
    let p = crate::model::profile_file::read(&file)?;
    if let Some(dest) = a.pprof {
        return write_pprof(&p, &file, &dest, a.threads, out);
    }
    let view = match (a.tree, a.function) {
        (true, _) => commands::profile::View::Tree,
        (false, Some(f)) => commands::profile::View::Function(f),
        (false, None) => commands::profile::View::Functions,
    };
    let opts = commands::profile::ProfileOptions {
        view,
        threads: a.threads,
        sort: a.sort,
        top: a.top,
        min_ns: a.min,
    };
    let r = commands::profile::report(&p, file.name(), &opts)?;
    let dest = shown_path(&a.output);
    crate::output::write(&a.output, file.path(), out, |o| {
        render::profile::write(&r, a.format, o)
            .map_err(|e| CliError::io(&dest, "cannot write the report", e))
    })
}

/// `fdr diff`: two logs accounted and compared.
fn diff(a: DiffArgs, out: &mut dyn Write) -> Result<(), CliError> {
    if a.before.as_os_str() == "-" && a.after.as_os_str() == "-" {
        return Err(CliError::Usage(
            "fdr: diff: only one of the two logs can be standard input (-)".into(),
        ));
    }
    let before = Log::open(&a.before)?;
    let after = Log::open(&a.after)?;
    let progress = Progress::new(before.len() + after.len(), 1);
    let changes = commands::diff::changes(&before, &after, &progress);
    progress.finish();
    render::diff::write(&changes?, a.format, out).map_err(written)
}

/// `fdr view`: the page, written to `--output`, else beside the log (its path printed).
fn view(a: ViewArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let dest = match &a.output {
        Some(o) => o.clone(),
        None if a.log.as_os_str() == "-" => {
            return Err(CliError::Usage(
                "fdr: view: the log is standard input, so there is no path to write the page \
                 beside: give one with -o OUT.html"
                    .into(),
            ))
        }
        None => {
            let mut p = a.log.clone().into_os_string();
            p.push(".html");
            p.into()
        }
    };
    let job = Job::open(&a.log, &a.filter, |f| 5 + u64::from(f.needs_plan()))?;
    let readers = job.readers(a.threads);
    let shown = shown_path(&dest);
    job.run(|j| {
        let v = commands::view::view(
            &j.log,
            &j.filter,
            readers,
            commands::view::ViewLimits::default(),
            &j.progress,
        )?;
        crate::output::write(&dest, j.log.path(), out, |o| {
            render::view::write(&v, o).map_err(|e| CliError::io(&shown, "cannot write the page", e))
        })
    })?;
    if a.output.is_none() {
        writeln!(out, "{shown}").map_err(written)?;
    }
    Ok(())
}

/// `fdr explain`: why the trigger's call (or the call or function asked for) was slow.
fn explain(a: ExplainArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let baseline = match &a.baseline {
        Some(_) if a.log.as_os_str() == "-" && a.baseline.as_deref() == Some(Path::new("-")) => {
            return Err(CliError::Usage(
                "fdr: explain: only one of the log and the baseline can be standard input (-)"
                    .into(),
            ))
        }
        Some(b) => {
            let file = Log::open_any(b)?;
            let readers = a
                .threads
                .map_or_else(|| readers_for(file.len()), usize::from);
            let progress = Progress::new(file.len(), 1);
            let b = commands::explain::baseline(&file, readers, &progress);
            progress.finish();
            Some(b?)
        }
        None => None,
    };
    let job = Job::open(&a.log, &FilterOptions::default(), |_| 2)?;
    let opts = commands::explain::ExplainOptions {
        call: a.call,
        function: a.function,
        top: a.top as usize,
        readers: job.readers(a.threads),
    };
    let e =
        job.run(|j| commands::explain::explain(&j.log, &opts, baseline.as_ref(), &j.progress))?;
    render::explain::write(&e, a.format, out).map_err(written)
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
    let p = crate::model::profile_file::read(file)?;
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

/// `fdr export`: the window of the log behind the filter, sent to a collector (`--otlp`) or
/// written to a file (`--otlp-file`); one line on standard error says what was done.
#[cfg(feature = "otlp")]
fn export(a: ExportArgs, out: &mut dyn Write) -> Result<(), CliError> {
    // What can be checked without the log, first: the flags, the variables, the CA file.
    let (settings, client) = export_settings(&a)?;
    if let Some(tp) = &a.traceparent {
        if fdr_otlp::TraceParent::parse(tp).is_none() {
            return Err(CliError::Usage(format!(
                "fdr: export: --traceparent {}: not a W3C traceparent \
                 (00-<32 hex digits>-<16 hex digits>-<2 hex digits>, lowercase, ids not all zero)",
                crate::escape::shown(tp)
            )));
        }
    }
    let job = Job::open(&a.log, &a.filter, commands::export::passes)?;
    let opts = commands::export::ExportOptions {
        service_name: settings.service_name.clone(),
        host_name: a.host_name,
        traceparent: a.traceparent,
        resource: settings.resource.clone(),
    };
    let w = job.run(|j| commands::export::window(&j.log, &j.filter, &opts, &j.progress))?;
    match (client, a.otlp_file) {
        (Some(client), _) => {
            let policy = fdr_otlp::retry::RetryPolicy {
                timeout: settings.timeout,
                max_elapsed: std::time::Duration::from_nanos(a.retry_for),
                ..fdr_otlp::retry::RetryPolicy::default()
            };
            send_window(&w, &client, a.max_spans as usize, &policy)
        }
        (None, Some(path)) => write_request(&w, &path, job.log.path(), out),
        (None, None) => unreachable!("clap requires --otlp or --otlp-file"),
    }
}

/// What `fdr export`'s flags and the OpenTelemetry variables say, resolved, and for `--otlp`
/// the client that sends (its CA file read): usage errors before the log is read.
#[cfg(feature = "otlp")]
fn export_settings(
    a: &ExportArgs,
) -> Result<
    (
        fdr_otlp::settings::Settings,
        Option<fdr_otlp::client::Client>,
    ),
    CliError,
> {
    use fdr_otlp::settings::{Given, Otel, Settings};
    let usage =
        |flag: &str, e: &dyn std::fmt::Display| CliError::Usage(format!("fdr: export: {flag} {e}"));
    let given = match &a.otlp {
        Some(url) => Given {
            endpoint: url.clone(),
            headers: a
                .otlp_headers
                .as_deref()
                .map(fdr_otlp::headers::Headers::parse)
                .transpose()
                .map_err(|e| usage("--otlp-headers", &e))?,
            compression: a
                .otlp_compression
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(|e: String| usage("--otlp-compression", &e))?,
            ca_file: a.otlp_ca.clone(),
            timeout: a.timeout.map(std::time::Duration::from_nanos),
            service_name: a.service_name.clone(),
        },
        // A file is not sent: the variables give only what goes in it.
        None => Given {
            endpoint: fdr_otlp::settings::DEFAULT_ENDPOINT.into(),
            service_name: a.service_name.clone(),
            ..Given::default()
        },
    };
    let settings = Settings::resolve(&given, &Otel::from_env()).map_err(|e| match e.variable {
        Some(_) => CliError::Usage(format!("fdr: export: {e}")),
        None => usage("--otlp", &e),
    })?;
    let client = match &a.otlp {
        Some(_) => Some(
            fdr_otlp::client::Client::new(&settings.transport).map_err(|e| {
                let flag = match (&given.ca_file, settings.ca_variable) {
                    (None, Some(v)) => v,
                    _ => "--otlp-ca",
                };
                match e {
                    fdr_otlp::Error::Settings(m) => usage(flag, &m),
                    other => usage("--otlp", &other),
                }
            })?,
        ),
        None => None,
    };
    Ok((settings, client))
}

/// `fdr export --otlp-file`: the window as one request, written to `path`.
#[cfg(feature = "otlp")]
fn write_request(
    w: &fdr_otlp::Window,
    path: &Path,
    log: &Path,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let spans = w.calls.len();
    let shown = shown_path(path);
    crate::output::write(path, log, out, |o| {
        o.write_all(&commands::export::request_bytes(w))
            .map_err(|e| CliError::io(&shown, "cannot write the output", e))
    })?;
    eprintln!(
        "wrote {spans} span{} in 1 request to {shown}",
        if spans == 1 { "" } else { "s" }
    );
    Ok(())
}

/// `fdr export --otlp`: the window sent, in requests of at most `max_spans` spans; what the
/// collector rejected said too.
#[cfg(feature = "otlp")]
fn send_window(
    w: &fdr_otlp::Window,
    client: &fdr_otlp::client::Client,
    max_spans: usize,
    policy: &fdr_otlp::retry::RetryPolicy,
) -> Result<(), CliError> {
    let url = client.endpoint().to_string();
    let r = commands::export::send(w, client, max_spans, policy)?;
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
    Ok(())
}

/// Without the `otlp` feature there is no OTLP exporter.
#[cfg(not(feature = "otlp"))]
fn export(_: ExportArgs, _: &mut dyn Write) -> Result<(), CliError> {
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
