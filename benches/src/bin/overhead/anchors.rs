//! The C/C++ anchors beside the repository (`../shared/anchors/run.sh`): LLVM XRay FDR mode and
//! funtrace (`-pg`) on the same leaf as the table's, with their own floor and plain call.
//!
//! `run.sh` builds its programs next to itself, and the anchors directory is read-only, so the
//! whole directory is copied to a temporary one, removed when [`Bins`] is dropped. After
//! `run.sh` has run (and built them), the same programs run once more in every round of the
//! table, interleaved with the Rust rows, so that both see the same state of a shared machine.

use std::path::{Path, PathBuf};
use std::process::Command;

/// ns per call from runs of `run.sh` or of its programs (each list holds one figure per run).
#[derive(Default)]
pub struct Anchors {
    /// One `rdtsc` read (run.sh's `limit/tsc`): the floor for a C recorder is two of these.
    pub rdtsc: Vec<f64>,
    /// One `rdtscp` read.
    pub rdtscp: Vec<f64>,
    pub c_plain: Vec<f64>,
    pub xray_unpatched: Vec<f64>,
    pub xray_fdr0: Vec<f64>,
    pub xray_fdr5: Vec<f64>,
    pub gxx_plain: Vec<f64>,
    pub funtrace: Vec<f64>,
    /// funtrace with a buffer of 8 MiB a thread, the size of fdr's default ring (its own default
    /// is 1 MiB): the same call writing through as much memory. Not in run.sh's output.
    pub funtrace_8m: Vec<f64>,
    /// run.sh's output of each run, as printed.
    pub outputs: Vec<String>,
}

/// The median of `v` (NaN when empty).
pub fn median(v: &[f64]) -> f64 {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The least of `v` (NaN when empty).
pub fn best(v: &[f64]) -> f64 {
    v.iter()
        .copied()
        .filter(|x| !x.is_nan())
        .reduce(f64::min)
        .unwrap_or(f64::NAN)
}

/// The first tool of `tools` that is not on `PATH`.
fn missing_tool(tools: &[&str]) -> Option<String> {
    tools
        .iter()
        .find(|t| {
            !Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .map(|t| t.to_string())
}

/// Copies `from` (a directory) into a new temporary directory, writable.
fn copy_writable(from: &Path) -> Result<PathBuf, String> {
    let to = std::env::temp_dir().join(format!("fdr-benches-anchors-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&to);
    let ok = Command::new("cp")
        .arg("-r")
        .arg(from)
        .arg(&to)
        .status()
        .is_ok_and(|s| s.success())
        && Command::new("chmod")
            .args(["-R", "u+w"])
            .arg(&to)
            .status()
            .is_ok_and(|s| s.success());
    if ok {
        Ok(to)
    } else {
        let _ = std::fs::remove_dir_all(&to);
        Err(format!(
            "cannot copy {} to {}",
            from.display(),
            to.display()
        ))
    }
}

/// A writable copy of the anchors directory whose programs `run.sh` has built.
pub struct Bins {
    copy: PathBuf,
    /// Where the recorders write their logs, emptied after every run.
    scratch: PathBuf,
}

impl Drop for Bins {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.copy);
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// Copies `dir`, runs `run.sh N` there `runs` times (the first run builds the programs), and
/// keeps the copy for [`Bins::sample`]. `Err` says why not (tools missing, no run.sh, the
/// script failed), for a `skipped:` line.
pub fn run(dir: &Path, calls: u64, runs: usize) -> Result<(Bins, Anchors), String> {
    if !dir.join("run.sh").exists() {
        return Err(format!(
            "{} has no run.sh; pass --anchors DIR",
            dir.display()
        ));
    }
    if let Some(tool) = missing_tool(&["clang++-19", "g++", "gcc"]) {
        return Err(format!(
            "{tool} is not installed (apt-get install clang-19 libclang-rt-19-dev llvm-19 g++)"
        ));
    }
    let copy = copy_writable(dir)?;
    let scratch = copy.with_extension("logs");
    let bins = Bins { copy, scratch };
    std::fs::create_dir_all(&bins.scratch)
        .map_err(|e| format!("cannot create {}: {e}", bins.scratch.display()))?;
    let mut a = Anchors::default();
    for _ in 0..runs {
        let out = Command::new(bins.copy.join("run.sh"))
            .arg(calls.to_string())
            .output()
            .map_err(|e| format!("cannot run run.sh: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "run.sh failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        parse_into(&text, &mut a)?;
        a.outputs.push(text);
    }
    Ok((bins, a))
}

impl Bins {
    /// Runs one program of the copy as run.sh does, in the scratch directory; its stdout.
    fn program(&self, path: &str, args: &[&str], env: &[(&str, String)]) -> Result<String, String> {
        let out = Command::new(self.copy.join(path))
            .args(args)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .current_dir(&self.scratch)
            .output()
            .map_err(|e| format!("cannot run {path}: {e}"))?;
        // The recorders' logs can be large; only the timings are wanted.
        if let Ok(entries) = std::fs::read_dir(&self.scratch) {
            for e in entries.flatten() {
                let _ = std::fs::remove_file(e.path());
            }
        }
        if !out.status.success() {
            return Err(format!(
                "{path} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// One run of every program with `calls` calls, each figure pushed onto `a`.
    pub fn sample(&self, calls: u64, a: &mut Anchors) -> Result<(), String> {
        let n = calls.to_string();
        let leaf = |text: &str| -> Result<f64, String> {
            field(text, "leaf ns/call", ":")
                .ok_or_else(|| format!("no `leaf ns/call` in the output: {text}"))
        };
        let floor = self.program("limit/tsc", &[&n], &[])?;
        a.rdtsc
            .push(field(&floor, "rdtsc ns", ":").ok_or("no rdtsc figure from limit/tsc")?);
        a.rdtscp
            .push(field(&floor, "rdtscp ns", ":").ok_or("no rdtscp figure from limit/tsc")?);
        a.c_plain
            .push(leaf(&self.program("xray/plain", &[&n], &[])?)?);
        a.xray_unpatched
            .push(leaf(&self.program("xray/xray", &[&n], &[])?)?);
        let base = self.scratch.display().to_string();
        for (threshold, into) in [(0, &mut a.xray_fdr0), (5, &mut a.xray_fdr5)] {
            let env = [
                ("XR_ON", "1".to_string()),
                (
                    "XRAY_OPTIONS",
                    format!("xray_mode=xray-fdr xray_logfile_base={base}/x-"),
                ),
            ];
            let opts = format!(
                "buffer_size=1048576 buffer_max=1024 func_duration_threshold_us={threshold}"
            );
            into.push(leaf(&self.program("xray/xray", &[&n, &opts], &env)?)?);
        }
        a.gxx_plain
            .push(leaf(&self.program("funtrace/plain", &[&n], &[])?)?);
        let env = [("FUNTRACE_FTRACE_EVENTS_IN_BUF", "0".to_string())];
        a.funtrace
            .push(leaf(&self.program("funtrace/pg", &[&n], &env)?)?);
        let env = [
            ("FUNTRACE_FTRACE_EVENTS_IN_BUF", "0".to_string()),
            ("FUNTRACE_LOG_BUF_SIZE", "23".to_string()),
        ];
        a.funtrace_8m
            .push(leaf(&self.program("funtrace/pg", &[&n], &env)?)?);
        Ok(())
    }
}

/// The number after `key` on the line that starts with `line`.
fn field(text: &str, line: &str, key: &str) -> Option<f64> {
    let rest = text.lines().find_map(|l| l.strip_prefix(line))?;
    let after = rest.split(key).nth(1)?;
    after.split_whitespace().next()?.parse().ok()
}

fn parse_into(text: &str, a: &mut Anchors) -> Result<(), String> {
    let need = |line: &str, key: &str| {
        field(text, line, key).ok_or_else(|| {
            format!("run.sh printed no `{line}{key}` figure; its output was:\n{text}")
        })
    };
    a.rdtsc.push(need("floor:", "rdtsc ns:")?);
    a.rdtscp.push(need("floor:", "rdtscp ns:")?);
    a.c_plain.push(need("c plain", ":")?);
    a.xray_unpatched.push(need("xray sleds unpatched", ":")?);
    a.xray_fdr0.push(need("xray fdr threshold 0", ":")?);
    a.xray_fdr5.push(need("xray fdr threshold 5us", ":")?);
    a.gxx_plain.push(need("g++ plain", ":")?);
    a.funtrace.push(need("funtrace -pg", "):")?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_run_sh_output() {
        let out = "floor: rdtsc ns: 9.63 rdtscp ns: 18.07 clock_gettime ns: 22.58 lfence+rdtsc ns: 18.44 \n\
                   c plain: 1.37\n\
                   xray sleds unpatched: 1.37\n\
                   xray fdr threshold 0: 95.84\n\
                   xray fdr threshold 5us: 80.03\n\
                   g++ plain: 1.40\n\
                   funtrace -pg (no rewind, no cpu id): 24.30\n";
        let mut a = Anchors::default();
        parse_into(out, &mut a).unwrap();
        assert_eq!(a.rdtsc, [9.63]);
        assert_eq!(a.rdtscp, [18.07]);
        assert_eq!(a.xray_fdr0, [95.84]);
        assert_eq!(a.xray_fdr5, [80.03]);
        assert_eq!(a.funtrace, [24.30]);
        assert_eq!(a.gxx_plain, [1.40]);
        assert!(parse_into("nothing", &mut a).is_err());
    }

    #[test]
    fn median_and_best() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(best(&[3.0, 1.0, 2.0]), 1.0);
    }
}
