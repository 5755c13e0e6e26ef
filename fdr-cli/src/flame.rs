//! `fdr flame`: a flame graph (self time per call path, merged across threads) or, with
//! `--chart`, a flame chart (time left to right, one root per thread), drawn by inferno.

use std::io::Write;

use inferno::flamegraph::{self, Options};

use crate::calls::{plan, replay, Close, Frame, Sink};
use crate::names::Names;
use crate::progress::Progress;
use crate::stack::Trie;
use crate::units::Clock;
use crate::CliError;

/// Time-ordered folded lines per thread: each slice of time goes to the stack that was on top.
struct Chart<'a> {
    names: &'a Names,
    clock: Clock,
    /// Per thread: the current path, the lengths to cut it back to, the last event time and
    /// the lines so far.
    threads: Vec<ChartThread>,
}

#[derive(Default)]
struct ChartThread {
    path: String,
    cuts: Vec<usize>,
    last: u64,
    lines: Vec<(String, u64)>,
}

impl Chart<'_> {
    fn slice(&mut self, thread: u32, now: u64) -> &mut ChartThread {
        let t = thread as usize;
        if t >= self.threads.len() {
            self.threads.resize_with(t + 1, ChartThread::default);
        }
        let th = &mut self.threads[t];
        let ns = self.clock.ns(now.saturating_sub(th.last));
        if !th.cuts.is_empty() && ns > 0 {
            match th.lines.last_mut() {
                Some((p, n)) if *p == th.path => *n += ns,
                _ => th.lines.push((th.path.clone(), ns)),
            }
        }
        th.last = now.max(th.last);
        th
    }
}

impl Sink for Chart<'_> {
    fn enter(&mut self, thread: u32, _: usize, f: &Frame, _: &[u64]) -> Result<(), CliError> {
        let name = self.names.function(f.id).replace(';', ":");
        let th = self.slice(thread, f.start);
        th.cuts.push(th.path.len());
        th.path.push(';');
        th.path.push_str(&name);
        Ok(())
    }

    fn exit(
        &mut self,
        thread: u32,
        _: usize,
        _: &Frame,
        end: u64,
        _: Close,
        _: &[u64],
    ) -> Result<(), CliError> {
        let th = self.slice(thread, end);
        if let Some(c) = th.cuts.pop() {
            th.path.truncate(c);
        }
        Ok(())
    }
}

/// Draws the flame graph (or chart) of the log at `path` as SVG on `out`.
pub fn run(
    path: &str,
    out: &mut dyn Write,
    dest: &str,
    chart: bool,
    progress: &Progress,
) -> Result<(), CliError> {
    let lines: Vec<String> = if chart {
        let p = plan(path, progress)?;
        let names = Names::new(&p.info);
        let mut c = Chart {
            names: &names,
            clock: Clock::new(p.info.header.cycle_frequency),
            threads: Vec::new(),
        };
        replay(path, &mut c, Some(&p), progress, 1)?;
        let mut lines = Vec::new();
        for (t, th) in c.threads.iter().enumerate() {
            let tname = p
                .threads
                .get(t)
                .map(|s| names.thread(s.tid))
                .unwrap_or_default()
                .replace(';', ":");
            for (path, ns) in &th.lines {
                lines.push(format!("{tname}{path} {ns}"));
            }
        }
        lines
    } else {
        let (t, p) = Trie::build(path, progress)?;
        let names = Names::new(&p.info);
        t.folded(&names, &Clock::new(p.info.header.cycle_frequency))
    };
    let mut opts = Options::default();
    opts.title = if chart {
        format!("fdr flame chart: {path}")
    } else {
        format!("fdr flame graph: {path}")
    };
    opts.count_name = "ns".to_string();
    opts.flame_chart = chart;
    opts.hash = true;
    if lines.is_empty() {
        return Err(CliError::Empty {
            path: path.to_string(),
            what: "the log has no calls to draw".to_string(),
        });
    }
    flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), out)
        .map_err(|e| CliError::io(dest, "cannot write the flame graph", e))
}
