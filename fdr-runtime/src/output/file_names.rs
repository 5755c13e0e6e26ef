//! Log file names from the `out` template: `{pid}`, `{n}` (a snapshot's number) and `{time}`
//! (UTC, `20261122T153012Z`).
//!
//! A trigger or signal snapshot whose template names neither `{n}` nor `{time}` gets `-{n}` before
//! the extension, so snapshots never overwrite each other or the final log; in the final log,
//! `{n}` reads `final`. A forked child whose template has no `{pid}` gets `.{pid}` before the
//! extension, so it never writes over its parent's log.

use std::path::{Path, PathBuf};

/// The default template: `PROGRAM-{pid}.fdr`.
pub(crate) fn default_template(profile_only: bool) -> PathBuf {
    let program = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "fdr".into());
    let ext = if profile_only { "fdrprof" } else { "fdr" };
    PathBuf::from(format!("{program}-{{pid}}.{ext}"))
}

/// Inserts `.{pid}` before the extension of a template without `{pid}` (a forked child's).
pub(crate) fn for_child(template: &Path) -> PathBuf {
    if template.to_string_lossy().contains("{pid}") {
        return template.to_path_buf();
    }
    with_suffix(template, ".{pid}")
}

/// The final log's path.
pub(crate) fn final_path(template: &Path, pid: u32, wall: (i64, u32)) -> PathBuf {
    expand(template, pid, "final", wall)
}

/// Snapshot `n`'s path.
pub(crate) fn snapshot_path(template: &Path, pid: u32, n: u32, wall: (i64, u32)) -> PathBuf {
    let text = template.to_string_lossy();
    let template = if text.contains("{n}") || text.contains("{time}") {
        template.to_path_buf()
    } else {
        with_suffix(template, "-{n}")
    };
    expand(&template, pid, &n.to_string(), wall)
}

fn with_suffix(template: &Path, suffix: &str) -> PathBuf {
    let stem = template.file_stem().unwrap_or_default().to_string_lossy();
    let name = match template.extension() {
        Some(ext) => format!("{stem}{suffix}.{}", ext.to_string_lossy()),
        None => format!("{stem}{suffix}"),
    };
    template.with_file_name(name)
}

fn expand(template: &Path, pid: u32, n: &str, wall: (i64, u32)) -> PathBuf {
    let text = template.to_string_lossy();
    if !text.contains('{') {
        return template.to_path_buf();
    }
    PathBuf::from(
        text.replace("{pid}", &pid.to_string())
            .replace("{n}", n)
            .replace("{time}", &utc_stamp(wall.0)),
    )
}

/// `YYYYMMDDTHHMMSSZ` for seconds since the Unix epoch.
fn utc_stamp(secs: i64) -> String {
    let t = fdr_format::civil::utc(secs);
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_template() {
        let p = Path::new;
        let w = (1_795_361_412, 0); // 2026-11-22T15:30:12Z
        assert_eq!(final_path(p("a/app.fdr"), 7, w), p("a/app.fdr"));
        assert_eq!(snapshot_path(p("a/app.fdr"), 7, 3, w), p("a/app-3.fdr"));
        assert_eq!(snapshot_path(p("app"), 7, 3, w), p("app-3"));
        assert_eq!(snapshot_path(p("log-{pid}.fdr"), 9, 1, w), p("log-9-1.fdr"));
        assert_eq!(
            snapshot_path(p("log-{time}.fdr"), 9, 1, w),
            p("log-20261122T153012Z.fdr")
        );
        assert_eq!(snapshot_path(p("{n}-{pid}.fdr"), 9, 2, w), p("2-9.fdr"));
        assert_eq!(final_path(p("{n}-{pid}.fdr"), 9, w), p("final-9.fdr"));
        assert_eq!(for_child(p("a/app.fdr")), p("a/app.{pid}.fdr"));
        assert_eq!(
            final_path(&for_child(p("a/app.fdr")), 42, w),
            p("a/app.42.fdr")
        );
        assert_eq!(for_child(p("x-{pid}.fdr")), p("x-{pid}.fdr"));
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        assert_eq!(utc_stamp(951_782_400), "20000229T000000Z");
    }
}
