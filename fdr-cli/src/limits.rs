//! The limits of the `fdr` command, whatever a log says: the reader's own
//! ([`fdr_format::limits`], re-exported here so that the command reads its limits from one
//! module) and those of the analyses and outputs. Each has one name and one value, used by its
//! check and by every message (and help text) that states it; `docs/FORMAT.md` lists them
//! ("Limits a reader enforces"), and the test below checks that table against these values.

pub(crate) use fdr_format::limits::*;

/// The most distinct function ids one log's calls may use. Per-function state is small (see
/// `fdr account --help`), but a corrupt or crafted log could name a new id in every record;
/// past this many, commands stop with an error instead of growing without end.
pub(crate) const MAX_LOG_FUNCTIONS: usize = 1 << 20;

/// Cull events kept to list culled periods; more are counted, not listed.
pub(crate) const MAX_CULL_EVENTS: usize = 4096;

/// Distinct call paths kept before new ones are merged: a trie grows with the number of paths,
/// which a program with deep, varied recursion can make very large.
pub(crate) const MAX_CALL_PATHS: usize = 1 << 18;

/// Frames of a call path that `stack` and `flame` show. A call made deeper than this (a deep
/// recursion) is shown as one `[calls deeper than 1024 frames]` frame that holds its whole
/// time, its callees included.
pub(crate) const MAX_SHOWN_FRAMES: usize = 1024;

/// The most frames, over all the lines of a graph or chart, handed to the flame graph
/// renderer.
pub(crate) const MAX_FLAME_FRAMES: usize = 1 << 20;
/// The most bytes of lines handed to the flame graph renderer.
pub(crate) const MAX_FLAME_BYTES: usize = 64 << 20;

/// Calls `fdr calls` shows under one call; past this, the calls a shown call makes are
/// counted.
pub(crate) const MAX_CALLS_UNDER_ONE: usize = 1 << 12;
/// Calls `fdr calls` shows under all the listed calls together: with many calls listed, each
/// gets a share.
pub(crate) const MAX_CALLS_SHOWN: usize = 1 << 18;
/// The most calls `fdr calls --top` lists.
pub(crate) const MAX_CALLS_TOP: usize = 100_000;
/// The most levels `fdr calls --depth` shows under a call.
pub(crate) const MAX_CALLS_DEPTH: usize = 1024;
/// The most tasks whose links `fdr calls` keeps, and whose parents it finds; later ones are not
/// shown.
pub(crate) const MAX_LINKED_TASKS: usize = 1 << 20;
/// The most polls whose task `fdr replay --task` looks at to find the polls of a tree; later
/// ones are counted and not shown.
pub(crate) const MAX_REPLAY_POLLS: usize = 1 << 22;
/// Links of a task past this many are not shown.
pub(crate) const MAX_LINKS_PER_TASK: usize = 16;
/// The most tasks whose waits at await sites, polls and wake-ups `fdr calls` keeps; later ones
/// are not shown.
pub(crate) const MAX_AWAITING_TASKS: usize = 1 << 20;
/// Waits of a task past this many are counted, not listed one by one.
pub(crate) const MAX_AWAITS_PER_TASK: usize = 64;

/// Durations of one function's calls `fdr explain` keeps exactly, for the function's usual (their
/// median, the call explained left out): past this many, they are counted in a log-linear
/// histogram and the usual is within 0.8 % (see [`crate::model::hist::Durations`]).
pub(crate) const MAX_EXACT_DURATIONS: usize = 64;
/// Calls `fdr explain --call` considers when several start at the time it is given (as
/// `fdr calls` prints it, to three digits): the first this many entered, each with its tree.
pub(crate) const MAX_EXPLAIN_CANDIDATES: usize = 64;

/// The most calls one `fdr export` holds (each becomes a span): past it, the command stops
/// with an error that suggests a filter (`--thread`, `--from`/`--to`, `--function`, `--min`).
/// Memory is about 200 bytes per call, and a request being encoded.
pub(crate) const MAX_EXPORT_CALLS: usize = 1 << 21;

/// The largest JSON file chrome://tracing and Perfetto's JSON importer handle: `fdr convert`
/// warns past it.
pub(crate) const MAX_CHROME_JSON_BYTES: u64 = 1 << 30;

/// The largest profile file read (a valid one is far smaller: see `docs/FORMAT.md`).
pub(crate) const MAX_PROFILE_BYTES: u64 = 4 << 30;

/// The most location ids, over all samples, `fdr profile --pprof` writes: the paths' frames. A
/// profile within the runtime's bounds has far fewer; past it the export is refused rather than
/// made huge.
// Without the `otlp` feature there is no pprof export, but the table still states the limit.
#[cfg_attr(not(feature = "otlp"), allow(dead_code))]
pub(crate) const MAX_PPROF_LOCATIONS: usize = 1 << 24;

/// `fdr view`: the width, in pixels, its timeline's full view is laid out for. A call shorter
/// than the window over this many (one pixel at the full view) is merged with its neighbours at
/// its depth into an aggregate bar, unless it is one of the slowest calls or runs near the call
/// that fired a trigger.
pub(crate) const VIEW_WIDTH_PX: u64 = 4096;
/// `fdr view`: the most calls drawn in detail on the timeline. Past it, the shortest are merged
/// into bars as well (the detail threshold doubles until they fit), and the page says so.
pub(crate) const MAX_VIEW_SLICES: usize = 200_000;
/// `fdr view`: of those, the most kept in detail whatever their length (the slowest calls and
/// the calls around the one that fired a trigger).
pub(crate) const MAX_VIEW_KEPT: usize = 50_000;
/// `fdr view`: the most aggregate bars. Past it, bars closer than a growing gap are merged.
pub(crate) const MAX_VIEW_BARS: usize = 200_000;
/// `fdr view`: the most async tasks drawn (the longest); the others are counted.
pub(crate) const MAX_VIEW_TASKS: usize = 20_000;
/// `fdr view`: the most CPU migrations marked; the others are counted.
pub(crate) const MAX_VIEW_MIGRATIONS: usize = 50_000;
/// `fdr view`: the slowest calls listed, each with its tree.
pub(crate) const VIEW_SLOWEST: usize = 20;
/// `fdr view`: levels of each slowest call's tree.
pub(crate) const VIEW_TREE_DEPTH: usize = 12;
/// `fdr view`: the most functions in the per-function table (by total time).
pub(crate) const MAX_VIEW_FUNCTIONS: usize = 2_000;
/// `fdr view`: the most frames, over all its call paths, in the page's flame graph.
pub(crate) const MAX_VIEW_FLAME_FRAMES: usize = 50_000;
/// `fdr view`: the most bytes of call paths in the page's flame graph.
pub(crate) const MAX_VIEW_FLAME_BYTES: usize = 4 << 20;

/// The most reader threads a command's `--threads` asks for.
pub(crate) const MAX_READERS: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    const FORMAT_MD: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/FORMAT.md"));

    /// Each row of `docs/FORMAT.md`'s table, by its first cell, and the limits its value cell
    /// states, in order.
    fn rows() -> Vec<(&'static str, Vec<u64>)> {
        let n = |v: usize| v as u64;
        vec![
            ("custom or typed event payload", vec![n(MAX_EVENT_PAYLOAD)]),
            ("records and payloads", vec![]),
            ("calls nested on one thread", vec![n(MAX_CALL_DEPTH)]),
            ("distinct function ids in one log's calls (await sites for `account --by await`)", vec![n(MAX_LOG_FUNCTIONS)]),
            (
                "async tasks whose other end (creation or completion) has not been read yet",
                vec![n(MAX_OPEN_TASKS)],
            ),
            (
                "tasks whose links `calls` keeps (16 links each at most), and whose parent `calls` and `convert` find",
                vec![n(MAX_LINKED_TASKS)],
            ),
            (
                "polls whose task `replay --task` looks at (about 40 bytes each)",
                vec![n(MAX_REPLAY_POLLS)],
            ),
            (
                "waits held for the end of their poll, per thread",
                vec![n(fdr_format::limits::MAX_AWAITS_IN_POLL)],
            ),
            (
                "tasks made or polled in the calls open on a thread, held for the end of the poll \
                 they belong to",
                vec![n(fdr_format::tasks::MAX_CHILDREN_HELD)],
            ),
            (
                "tasks whose life, waits, polls and wake-ups `calls` and `explain` keep (64 waits each at most, about 200 bytes a task besides its waits)",
                vec![n(MAX_AWAITING_TASKS)],
            ),
            (
                "calls shown under one call by `fdr calls`, and followed under one call by `explain`",
                vec![n(MAX_CALLS_UNDER_ONE), n(MAX_CALLS_SHOWN), n(MAX_CALLS_TOP)],
            ),
            (
                "durations of one function's calls `explain` keeps exactly (its usual is their median)",
                vec![n(MAX_EXACT_DURATIONS)],
            ),
            (
                "calls `explain --call` looks at when several start at the time given (to three digits, as text prints it)",
                vec![n(MAX_EXPLAIN_CANDIDATES)],
            ),
            ("cull events listed by `info` and `account`", vec![n(MAX_CULL_EVENTS)]),
            ("call paths in `stack` and `flame`", vec![n(MAX_CALL_PATHS)]),
            ("frames of a call path shown by `stack` and `flame`", vec![n(MAX_SHOWN_FRAMES)]),
            (
                "lines handed to the flame graph renderer",
                vec![n(MAX_FLAME_FRAMES), n(MAX_FLAME_BYTES)],
            ),
            ("widths handed to the flame graph renderer", vec![u64::MAX]),
            (
                "fdr's own extension records (custom events of the leading block)",
                vec![n(MAX_EXT_PAYLOAD)],
            ),
            ("logged arguments kept per call", vec![n(MAX_CALL_ARGS)]),
            (
                "calls of a window read whole (`fdr_format::window::calls`, the runtime's OTLP export)",
                vec![n(MAX_WINDOW_CALLS)],
            ),
            (
                "argument values of a window read whole, all calls together",
                vec![n(MAX_WINDOW_ARG_VALUES)],
            ),
            (
                "waits at await sites a window read whole keeps (span events of `export`)",
                vec![n(MAX_WINDOW_CALLS)],
            ),
            ("calls one `fdr export` sends", vec![n(MAX_EXPORT_CALLS)]),
            ("levels `fdr calls --depth` shows under a call", vec![n(MAX_CALLS_DEPTH)]),
            ("reader threads (`--threads`)", vec![n(MAX_READERS)]),
            ("Chrome JSON written by `convert`", vec![MAX_CHROME_JSON_BYTES]),
            ("profile file read by `profile` and `flame`", vec![MAX_PROFILE_BYTES]),
            (
                "functions, trees, nodes (all trees together) and string bytes in a profile file",
                vec![
                    n(MAX_PROFILE_FUNCTIONS),
                    n(MAX_PROFILE_TREES),
                    n(MAX_PROFILE_FILE_NODES),
                    n(MAX_PROFILE_STRING),
                ],
            ),
            (
                "locations (call paths' frames, all samples together) in a pprof export",
                vec![n(MAX_PPROF_LOCATIONS)],
            ),
            ("crash box read by `recover` and `info`", vec![MAX_BOX_BYTES, MAX_BOX_BUFFERS]),
            ("final log path kept in a crash box", vec![n(MAX_OUT_PATH)]),
            (
                "what `fdr view` draws",
                vec![
                    VIEW_WIDTH_PX,
                    n(MAX_VIEW_SLICES),
                    n(MAX_VIEW_KEPT),
                    n(MAX_VIEW_BARS),
                    n(MAX_VIEW_TASKS),
                    n(MAX_VIEW_MIGRATIONS),
                    n(VIEW_SLOWEST),
                    n(VIEW_TREE_DEPTH),
                    n(MAX_VIEW_FUNCTIONS),
                    n(MAX_VIEW_FLAME_FRAMES),
                    n(MAX_VIEW_FLAME_BYTES),
                ],
            ),
        ]
    }

    /// The rows of the table under `heading`: (first cell, second cell).
    fn table(heading: &str) -> Vec<(String, String)> {
        let at = FORMAT_MD
            .find(heading)
            .expect("the heading is in FORMAT.md");
        FORMAT_MD[at..]
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2) // the header and its rule
            .map(|l| {
                let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
                (cells[0].to_string(), cells[1].to_string())
            })
            .collect()
    }

    /// The numbers a value cell states, in order: `2^N` (and `2^N - 1`), with the decimal in
    /// parentheses after it checked and skipped; `N KiB`, `N MiB`, `N GiB`; `1,048,576`.
    fn stated(cell: &str) -> Vec<u64> {
        let b = cell.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        let number = |i: &mut usize| -> u64 {
            let start = *i;
            while *i < b.len()
                && (b[*i].is_ascii_digit()
                    || (b[*i] == b',' && *i + 1 < b.len() && b[*i + 1].is_ascii_digit()))
            {
                *i += 1;
            }
            cell[start..*i].replace(',', "").parse().expect("a number")
        };
        while i < b.len() {
            if !b[i].is_ascii_digit() {
                i += 1;
                continue;
            }
            let mut v = number(&mut i);
            let rest = &cell[i..];
            if v == 2 && rest.starts_with('^') {
                i += 1;
                let e = number(&mut i);
                v = if e == 64 { u64::MAX } else { 1 << e };
                if cell[i..].starts_with(" - 1") {
                    assert_eq!(e, 64, "only 2^64 - 1 is written so");
                    i += 4;
                } else if e == 64 {
                    panic!("2^64 does not fit: {cell}");
                }
                if cell[i..].starts_with(" (")
                    && cell.as_bytes().get(i + 2).is_some_and(u8::is_ascii_digit)
                {
                    i += 2;
                    assert_eq!(number(&mut i), v, "the decimal after 2^{e} in {cell:?}");
                }
            } else {
                for (unit, shift) in [(" KiB", 10), (" MiB", 20), (" GiB", 30)] {
                    if rest.starts_with(unit) {
                        v <<= shift;
                        i += unit.len();
                    }
                }
            }
            out.push(v);
        }
        out
    }

    #[test]
    fn format_md_states_every_limit_with_its_value() {
        let doc = table("## Limits a reader enforces");
        let expected = rows();
        let names: Vec<&str> = doc.iter().map(|(l, _)| l.as_str()).collect();
        let mapped: Vec<&str> = expected.iter().map(|(l, _)| *l).collect();
        assert_eq!(
            names, mapped,
            "the table's rows, each mapped to its limits here"
        );
        for ((limit, cell), (_, values)) in doc.iter().zip(&expected) {
            assert_eq!(&stated(cell), values, "{limit}: {cell}");
        }
    }

    #[test]
    fn stated_values_are_read_as_written() {
        assert_eq!(stated("2^20 (1,048,576)"), [1 << 20]);
        assert_eq!(stated("1 MiB"), [1 << 20]);
        assert_eq!(stated("2^20 frames and 64 MiB in all"), [1 << 20, 64 << 20]);
        assert_eq!(stated("their sum within 2^64 - 1 (ns)"), [u64::MAX]);
        assert_eq!(stated("inside their block's extents"), Vec::<u64>::new());
        assert_eq!(stated("4,096 and 100,000"), [4096, 100_000]);
    }
}
