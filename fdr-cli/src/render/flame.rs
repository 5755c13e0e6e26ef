//! The `fdr flame` SVG, drawn by inferno from the lines of [`crate::commands::flame`].

use std::io::Write;

use inferno::flamegraph::{self, Options};

use crate::commands::flame::Drawing;
use crate::CliError;

/// Draws `d` as SVG on `out` (`dest` names it in errors).
pub(crate) fn write(d: &Drawing, out: &mut dyn Write, dest: &str) -> Result<(), CliError> {
    let mut opts = Options::default();
    opts.title = if d.chart {
        format!("fdr flame chart: {}", d.name)
    } else {
        format!("fdr flame graph: {}", d.name)
    };
    if !d.notes.is_empty() {
        opts.subtitle = Some(d.notes.join("; "));
    }
    opts.count_name = "ns".to_string();
    opts.flame_chart = d.chart;
    opts.hash = true;
    flamegraph::from_lines(&mut opts, d.lines.iter().map(String::as_str), out)
        .map_err(|e| CliError::io(dest, "cannot write the flame graph", e))
}
