//! What culling learned, kept for the next run of the same program.
//!
//! A function is culled only after [`Config::cull_after`](crate::Config::cull_after) erased
//! calls in a row (2,000), and until then each of its calls costs a recorded and rewound call.
//! A long-running program pays that once; a program that runs for a few milliseconds (a command,
//! a test, a batch job) pays it on most of its calls, every run: semver annotated whole ran
//! 4-5x slower over a short run against 1.35x in its steady state. So when a recording ends, what
//! culling learned is written to a small file in the crash directory: the functions culled at
//! that moment, and for the others their run of erased calls so far. The next recording of the
//! same program starts with the first culled and the others' runs where they were, so a function
//! called a few thousand times per run is culled in a later run as it would be in one long run
//! (a run counts erased calls in a row; a kept call, in any run, starts it over). Nothing is lost
//! by it: a remembered function is probed like any culled one, so one that became slow is
//! restored within a probe period of its first slow call, with its event in the log; a function
//! the previous run restored is not remembered culled. Erased calls a thread still counts on its
//! own when the recording ends (at most `cull::LOOK_EVERY` per function) are not kept.
//!
//! The file is `fdr-PROGRAM.culls` in the crash directory (one per program name, replaced at
//! each end, removed when there is nothing to keep): a text file that names the build, the
//! settings the culls were learned under and each function by id and name, `culled` or with its
//! run. It is used only when all of these hold, else the recording
//! starts from nothing, as without it:
//!
//! - the same build: the program's GNU build id on Linux (`readelf -n`), else the program file's
//!   size and modification time;
//! - each listed id names the same function in this program's table;
//! - the culls were learned under a threshold no higher than this recording's and a
//!   `cull_after` no lower (a call erased under a lower threshold is erased under this one; a
//!   cull decided on fewer calls than asked for is not taken);
//! - this recording culls (culling on, a threshold above 0, no profile), keeps a crash
//!   directory, and `cull_memory` is on.
//!
//! A file that cannot be read as one is ignored with one line on stderr, and replaced at the end.
//! Reading is bounded: the file is read only up to a size set by the function table.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::tables::functions::{self, FnDesc};
use crate::{platform, Config};

/// Set by [`crate::testing::exclusive`]: the process's recorders neither use nor leave a memory
/// (tests in one binary, and runs of it, would otherwise start from what another test learned).
static FORGETFUL: AtomicBool = AtomicBool::new(false);

/// Makes every later recording of this process start from nothing learned and leave nothing.
#[cfg(any(feature = "testing", all(test, feature = "record")))]
pub(crate) fn forget() {
    FORGETFUL.store(true, Ordering::Relaxed);
}

/// The first line of a memory file.
const HEADER: &str = "fdr culls 1";

/// What culling learned of one function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Learnt {
    /// Culled.
    Culled,
    /// Not culled (yet): this many erased calls in a row.
    Erased(u32),
}

/// The culls a recording starts with, and where it keeps those it ends with.
#[derive(Debug, Default)]
pub(crate) struct LearnedCulls {
    /// The file, `None` when the recording keeps no memory.
    path: Option<PathBuf>,
    /// The build the file must name.
    build: String,
    /// What the recording starts with, by function id (from 1), sorted.
    functions: Vec<(u32, Learnt)>,
    /// What the last run learned of descriptors named at run time (`tracing` callsites) that
    /// have no name yet at this start: by id, with the name the id must get for it to apply
    /// ([`LearnedCulls::when_named`]).
    pending: Vec<(u32, Learnt, String)>,
}

impl LearnedCulls {
    /// The memory of `program`'s recording with `config` that culls (`culling`): what the last
    /// recording of this build left, if it applies. Says on stderr why a file there was not
    /// used, when it could not be read.
    pub(crate) fn load(program: &str, config: &Config, culling: bool) -> LearnedCulls {
        if !culling || !config.get_cull_memory() || FORGETFUL.load(Ordering::Relaxed) {
            return LearnedCulls::default();
        }
        let Some(dir) = config.get_crash_dir() else {
            return LearnedCulls::default();
        };
        let path = dir.join(file_name(program));
        let build = build_key();
        let functions = match std::fs::File::open(&path) {
            Ok(f) => {
                use std::io::Read;
                let mut text = String::new();
                let limit = max_file_len(functions::table().len());
                match f.take(limit + 1).read_to_string(&mut text) {
                    Ok(n) if n as u64 > limit => {
                        warn(&path, &format!("larger than {limit} bytes"));
                        Default::default()
                    }
                    Ok(_) => match parse(&text, functions::table()) {
                        Ok(learned) if learned.applies(&build, config) => {
                            (learned.functions, learned.pending)
                        }
                        Ok(_) => Default::default(),
                        Err(e) => {
                            warn(&path, &e);
                            Default::default()
                        }
                    },
                    Err(e) => {
                        warn(&path, &e.to_string());
                        Default::default()
                    }
                }
            }
            Err(_) => Default::default(),
        };
        let (functions, pending) = functions;
        LearnedCulls {
            path: Some(path),
            build,
            functions,
            pending,
        }
    }

    /// How many functions the recording starts with culled.
    pub(crate) fn culled_at_start(&self) -> u64 {
        self.functions
            .iter()
            .filter(|(_, l)| *l == Learnt::Culled)
            .count() as u64
    }

    /// What the function with id `id` starts with, if the last run learned anything of it (for
    /// `tables::flags::open`).
    pub(crate) fn at_start(&self, id: u32) -> Option<Learnt> {
        let i = self.functions.binary_search_by_key(&id, |f| f.0).ok()?;
        Some(self.functions[i].1)
    }

    /// What the function with id `id`, just named `name` while the recording runs, starts
    /// with: what the last run learned of the function of that id, if it had that name.
    pub(crate) fn when_named(&self, id: u32, name: &str) -> Option<Learnt> {
        self.pending
            .iter()
            .find(|(i, _, n)| *i == id && n == name)
            .map(|(_, learnt, _)| *learnt)
    }

    /// Whether the recording keeps a memory: its culls at the end are to be [`LearnedCulls::save`]d.
    pub(crate) fn kept(&self) -> bool {
        self.path.is_some()
    }

    /// Writes `functions` as what a recording with `config` learned (through a temporary file
    /// renamed into place: a reader finds the old file or the new one), or removes the file when
    /// it learned nothing. A failure is said on stderr; the recording's logs do not depend on it.
    pub(crate) fn save(&self, config: &Config, functions: &[(u32, Learnt)]) {
        let Some(path) = &self.path else {
            return;
        };
        if functions.is_empty() {
            let _ = std::fs::remove_file(path);
            return;
        }
        let text = render(&self.build, config, functions, functions::table());
        let tmp = path.with_extension(format!("culls.{}.tmp", std::process::id()));
        let result = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = result {
            let _ = std::fs::remove_file(&tmp);
            eprintln!(
                "fdr: could not keep the culled functions for the next run in {}: {e}",
                path.display()
            );
        }
    }
}

/// What a memory file says.
#[derive(Debug, PartialEq)]
struct CullsFile {
    build: String,
    threshold_ns: u64,
    cull_after: u32,
    functions: Vec<(u32, Learnt)>,
    /// Descriptors named at run time, not named yet: by id, with their name.
    pending: Vec<(u32, Learnt, String)>,
}

impl CullsFile {
    fn applies(&self, build: &str, config: &Config) -> bool {
        self.build == build
            && self.threshold_ns <= threshold_ns(config)
            && self.cull_after >= config.get_cull_after()
    }
}

fn threshold_ns(config: &Config) -> u64 {
    u64::try_from(config.get_threshold().as_nanos()).unwrap_or(u64::MAX)
}

/// The memory file's name for `program`.
fn file_name(program: &str) -> String {
    format!("fdr-{}.culls", fdr_format::crash_box::file_safe(program))
}

/// The build the culls belong to: `id:` and the GNU build id in hex, or `file:` and the program
/// file's size and modification time in nanoseconds.
fn build_key() -> String {
    if let Some(id) = platform::build_id() {
        return format!("id:{}", hex(&id));
    }
    let meta = std::env::current_exe().and_then(std::fs::metadata);
    match meta {
        Ok(m) => {
            let mtime = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("file:{}:{mtime}", m.len())
        }
        Err(_) => "unknown".into(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The longest file [`parse`] reads for a table of `functions`: a line per function, each at
/// most an id and a name as long as any, plus the header.
fn max_file_len(functions: usize) -> u64 {
    4096 + functions as u64 * 1024
}

/// The file for `functions` of `table`, learned by a recording with `config` of the build
/// `build`.
fn render(build: &str, config: &Config, functions: &[(u32, Learnt)], table: &[FnDesc]) -> String {
    let mut s = format!(
        "{HEADER}\nbuild {build}\nthreshold_ns {}\ncull_after {}\n",
        threshold_ns(config),
        config.get_cull_after()
    );
    for &(id, learnt) in functions {
        if let Some(f) = table.get(id as usize - 1) {
            match learnt {
                Learnt::Culled => s.push_str(&format!("{id} culled {}\n", f.name())),
                Learnt::Erased(n) => s.push_str(&format!("{id} {n} {}\n", f.name())),
            }
        }
    }
    s
}

/// Reads a memory file against `table`. `Err` says what is wrong with it.
fn parse(text: &str, table: &[FnDesc]) -> Result<CullsFile, String> {
    let mut lines = text.lines().enumerate();
    let mut next = |what: &str| {
        lines
            .next()
            .ok_or_else(|| format!("it ends before its {what}"))
    };
    let (_, first) = next("header")?;
    if first != HEADER {
        return Err(format!("its first line is not `{HEADER}`"));
    }
    let mut field = |key: &str| -> Result<String, String> {
        let (n, line) = next(key)?;
        line.strip_prefix(key)
            .and_then(|v| v.strip_prefix(' '))
            .map(str::to_owned)
            .ok_or_else(|| format!("line {}: expected `{key} VALUE`", n + 1))
    };
    let build = field("build")?;
    let number = |key: &str, v: String| {
        v.parse::<u64>()
            .map_err(|_| format!("its {key} `{v}` is not a number"))
    };
    let threshold_ns = number("threshold_ns", field("threshold_ns")?)?;
    let cull_after = number("cull_after", field("cull_after")?)?;
    let mut functions = Vec::new();
    let mut pending = Vec::new();
    for (n, line) in lines {
        let mut words = line.splitn(3, ' ');
        let (Some(id), Some(learnt), Some(name)) = (words.next(), words.next(), words.next())
        else {
            return Err(format!(
                "line {}: expected `ID culled NAME` or `ID RUN NAME`",
                n + 1
            ));
        };
        let id: u32 = id
            .parse()
            .ok()
            .filter(|&id| id >= 1)
            .ok_or_else(|| format!("line {}: `{id}` is not a function id", n + 1))?;
        let learnt = match learnt {
            "culled" => Learnt::Culled,
            run => Learnt::Erased(run.parse().map_err(|_| {
                format!(
                    "line {}: `{run}` is neither `culled` nor a run of calls",
                    n + 1
                )
            })?),
        };
        // Another build's table (a file key that matched by chance): nothing of it is used.
        // A descriptor named at run time (a `tracing` callsite) has no name yet when the
        // recording starts: what was learned of it waits for its name.
        match table.get(id as usize - 1) {
            Some(f) if f.name() == name => functions.push((id, learnt)),
            Some(f) if f.name().is_empty() && f.named_at_run_time() => {
                pending.push((id, learnt, name.to_string()))
            }
            _ => return Ok(CullsFile::default_for(build)),
        }
    }
    functions.sort_unstable_by_key(|f| f.0);
    functions.dedup_by_key(|f| f.0);
    Ok(CullsFile {
        build,
        threshold_ns,
        cull_after: u32::try_from(cull_after).unwrap_or(u32::MAX),
        functions,
        pending,
    })
}

impl CullsFile {
    /// A file whose functions are not this program's: applies to no recording.
    fn default_for(build: String) -> CullsFile {
        CullsFile {
            build: format!("{build} (another table)"),
            threshold_ns: u64::MAX,
            cull_after: 0,
            functions: Vec::new(),
            pending: Vec::new(),
        }
    }
}

fn warn(path: &Path, what: &str) {
    eprintln!(
        "fdr: ignored {} (the functions the last run culled, kept for this one): {what}; it is \
         replaced when this recording ends",
        path.display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FnKindTag;

    static TABLE: [FnDesc; 3] = [
        FnDesc::new("app::a", "src/a.rs", 1, FnKindTag::Function, &[]),
        FnDesc::new("app::b", "src/a.rs", 2, FnKindTag::Function, &[]),
        FnDesc::new("app::c", "src/a.rs", 3, FnKindTag::Function, &[]),
    ];

    fn config() -> Config {
        Config::default()
    }

    #[test]
    fn a_file_reads_back_as_written() {
        let learnt = [(1, Learnt::Culled), (3, Learnt::Erased(42))];
        let text = render("id:ab12", &config(), &learnt, &TABLE);
        assert_eq!(
            text,
            "fdr culls 1\nbuild id:ab12\nthreshold_ns 5000\ncull_after 2000\n1 culled app::a\n\
             3 42 app::c\n"
        );
        let l = parse(&text, &TABLE).unwrap();
        assert_eq!(l.functions, learnt);
        assert!(l.applies("id:ab12", &config()));
    }

    #[test]
    fn culls_apply_only_to_the_same_build_a_threshold_as_high_and_as_many_calls() {
        let l = parse(
            &render("id:ab12", &config(), &[(2, Learnt::Culled)], &TABLE),
            &TABLE,
        )
        .unwrap();
        use std::time::Duration;
        assert!(!l.applies("id:ab13", &config()));
        assert!(!l.applies("id:ab12", &config().threshold(Duration::from_micros(4))));
        assert!(l.applies("id:ab12", &config().threshold(Duration::from_micros(50))));
        assert!(!l.applies("id:ab12", &config().cull_after(20_000)));
        assert!(l.applies("id:ab12", &config().cull_after(100)));
    }

    #[test]
    fn a_function_of_another_table_makes_the_whole_file_apply_to_nothing() {
        let text = "fdr culls 1\nbuild id:1\nthreshold_ns 5000\ncull_after 2000\n1 culled app::a\n\
                    2 7 app::z\n";
        let l = parse(text, &TABLE).unwrap();
        assert!(l.functions.is_empty() && !l.applies("id:1", &config()));
        let past = "fdr culls 1\nbuild id:1\nthreshold_ns 5000\ncull_after 2000\n9 culled app::a\n";
        assert!(!parse(past, &TABLE).unwrap().applies("id:1", &config()));
    }

    #[test]
    fn a_damaged_file_says_what_is_wrong() {
        let cases = [
            ("", "it ends before its header"),
            ("fdr culls 2\n", "its first line is not `fdr culls 1`"),
            ("fdr culls 1\nbuild x\n", "it ends before its threshold_ns"),
            (
                "fdr culls 1\nbuild x\nthreshold 5\n",
                "line 3: expected `threshold_ns VALUE`",
            ),
            (
                "fdr culls 1\nbuild x\nthreshold_ns five\ncull_after 1\n",
                "its threshold_ns `five` is not a number",
            ),
            (
                "fdr culls 1\nbuild x\nthreshold_ns 5\ncull_after 1\n0 culled app::a\n",
                "line 5: `0` is not a function id",
            ),
            (
                "fdr culls 1\nbuild x\nthreshold_ns 5\ncull_after 1\n1 app::a\n",
                "line 5: expected `ID culled NAME` or `ID RUN NAME`",
            ),
            (
                "fdr culls 1\nbuild x\nthreshold_ns 5\ncull_after 1\n1 many app::a\n",
                "line 5: `many` is neither `culled` nor a run of calls",
            ),
        ];
        for (text, error) in cases {
            assert_eq!(parse(text, &TABLE).unwrap_err(), error, "{text:?}");
        }
    }

    #[test]
    fn a_program_name_stands_in_a_file_name() {
        assert_eq!(file_name("app"), "fdr-app.culls");
        assert_eq!(file_name("a/b\n"), "fdr-a_b_.culls");
    }
}
