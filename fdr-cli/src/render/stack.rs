//! The `fdr stack` report: the call tree with latency histograms, or folded stacks.

use std::io::Write;

use clap::ValueEnum;

use crate::model::engine::Plan;
use crate::model::hist::Log2;
use crate::model::names::Names;
use crate::model::thin_window;
use crate::model::trie::{NodeKind, Trie};
use crate::render::reason;
use crate::units::{human, TickRate};

/// Output format of `fdr stack`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum StackFormat {
    /// An indented tree with counts, times and histograms.
    Text,
    /// One `a;b;c <self ns>` line per call path, as flame graph tools read.
    Folded,
}

/// Writes the call trie `t` that the pass `p` built, in `format`.
pub(crate) fn write(
    t: &Trie,
    p: &Plan,
    format: StackFormat,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let names = Names::new(&p.info);
    let clock = TickRate::new(p.info.header.cycle_frequency);
    match format {
        StackFormat::Text => {
            if let Some(h) = reason::header(&p.info, &names, &clock, p.origin) {
                writeln!(out, "{h}")?;
            }
            write_text(t, &names, &clock, out)?;
            if let Some(n) = thin_window::note(&p.info, &p.threads) {
                writeln!(out, "{n}")?;
            }
            Ok(())
        }
        StackFormat::Folded => {
            let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
            t.fold_each(&names, &clock, |p, ns| writeln!(out, "{p} {ns}"))?;
            out.flush()
        }
    }
}

const SPARK: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

fn write_text(
    t: &Trie,
    names: &Names,
    clock: &TickRate,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    // One histogram column range for all rows, so rows compare at a glance.
    let (mut lo, mut hi) = (usize::MAX, 0usize);
    for n in &t.nodes[1..] {
        for (i, &c) in n.hist.buckets().iter().enumerate() {
            if c > 0 {
                lo = lo.min(i);
                hi = hi.max(i);
            }
        }
    }
    if lo > hi {
        writeln!(out, "no calls recorded")?;
        return Ok(());
    }
    let width = hi - lo + 1;
    let range = format!(
        "{}..{}",
        human(clock.ns(Log2::lower_bound(lo))),
        human(clock.ns(Log2::upper_bound(hi)))
    );
    let hw = width.max(range.chars().count());
    writeln!(
        out,
        "{:>8} {:>10} {:>10}  {:<hw$}  call path",
        "calls", "total", "self", range
    )?;
    let (mut any_inferred, mut any_open, mut any_deeper) = (false, false, false);
    t.each_node(names, |c, depth| {
        let n = &t.nodes[c];
        let b = n.hist.buckets();
        let max = b[lo..=hi].iter().copied().max().unwrap_or(0).max(1);
        let spark: String = b[lo..=hi]
            .iter()
            .map(|&x| {
                if x == 0 {
                    ' '
                } else {
                    SPARK[1 + (u64::from(x) * 7 / u64::from(max)) as usize]
                }
            })
            .collect();
        let mut mark = String::new();
        if n.inferred > 0 {
            mark.push_str(" *");
            any_inferred = true;
        }
        if n.open > 0 {
            mark.push_str(&format!(" ({} open)", n.open));
            any_open = true;
        }
        any_deeper |= n.kind == NodeKind::Deeper;
        writeln!(
            out,
            "{:>8} {:>10} {:>10}  {:<hw$}  {:indent$}{}{}",
            n.count,
            human(clock.ns(n.total)),
            human(clock.ns(n.self_)),
            spark,
            "",
            t.label(n, names),
            mark,
            indent = depth * 2
        )
    })?;
    if any_inferred {
        writeln!(
            out,
            "* entered before the recorded window: entry inferred at the window's start"
        )?;
    }
    if any_open {
        writeln!(
            out,
            "(N open): N of the calls were still running when the window was written; their \
             time so far is in total and self"
        )?;
    }
    if any_deeper {
        writeln!(
            out,
            "[calls deeper than {} frames] holds each call made at that depth, with everything \
             it called (fdr shows call paths at most {0} frames deep)",
            t.max_depth()
        )?;
    }
    Ok(())
}
