//! `fdr profile --pprof`: a profile as pprof's protobuf (`profile.proto` of google/pprof, which
//! `go tool pprof` and most profilers' viewers read), gzipped when the output's name ends in
//! `.gz`.
//!
//! Sample types `calls/count` and `time/nanoseconds` (the default); one sample per call path
//! (as [`Paths`] shows them, at most [`MAX_SHOWN_FRAMES`] frames deep), its locations leaf first,
//! its values the path's calls and its **self** time: summed over samples, as pprof does, a
//! function's flat time is then its self time and its cumulative time its total. One function
//! and one location per fdr function, in one mapping named after the program (symbolized:
//! pprof looks for no binary). With `--threads`, the paths are per tree, each sample
//! labelled `thread_id` and `thread_name`.
//!
//! The messages are written here with `prost`, field numbers as in `profile.proto`; the gzip
//! member is deflated by `flate2`.

use std::collections::HashMap;
use std::io::{self, Write};

use fdr_format::profile::{Profile, Tree};

use crate::limits::{MAX_PPROF_LOCATIONS, MAX_SHOWN_FRAMES};
use crate::model::profile_file::{tree_label, Functions, Paths};
use crate::units::TickRate;
use crate::CliError;

/// The messages of `profile.proto` (package `perftools.profiles`) that fdr writes, with its
/// field numbers.
pub(crate) mod proto {
    /// The whole profile.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct PprofProfile {
        /// What each value of a sample is.
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        /// The samples.
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        /// The program's binaries: fdr writes one, the program, with no addresses.
        #[prost(message, repeated, tag = "3")]
        pub mapping: Vec<Mapping>,
        /// The locations the samples name.
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        /// The functions the locations name.
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        /// Every string, `""` first; other fields hold indices into it.
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        /// Frames to drop (a regular expression's index; 0: none).
        #[prost(int64, tag = "7")]
        pub drop_frames: i64,
        /// Frames to keep (a regular expression's index; 0: none).
        #[prost(int64, tag = "8")]
        pub keep_frames: i64,
        /// When profiling started, Unix nanoseconds.
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        /// How long it ran, nanoseconds.
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        /// What the period counts.
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        /// Events between samples (1: every call is counted).
        #[prost(int64, tag = "12")]
        pub period: i64,
        /// Comments shown as they are (string indices).
        #[prost(int64, repeated, tag = "13")]
        pub comment: Vec<i64>,
        /// The sample type shown by default (the index of its type's string).
        #[prost(int64, tag = "14")]
        pub default_sample_type: i64,
    }

    /// A value's type and unit (string indices).
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct ValueType {
        /// E.g. `time`.
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        /// E.g. `nanoseconds`.
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    /// Values at one call path.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Sample {
        /// The path's locations, leaf first.
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        /// One value per sample type.
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
        /// Labels (the thread, with `--threads`).
        #[prost(message, repeated, tag = "3")]
        pub label: Vec<Label>,
    }

    /// A sample's label: a string or a number.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Label {
        /// Its key (string index).
        #[prost(int64, tag = "1")]
        pub key: i64,
        /// A string value (string index).
        #[prost(int64, tag = "2")]
        pub str: i64,
        /// A number value.
        #[prost(int64, tag = "3")]
        pub num: i64,
        /// The number's unit (string index).
        #[prost(int64, tag = "4")]
        pub num_unit: i64,
    }

    /// A binary mapped into the program's memory.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Mapping {
        /// Nonzero id.
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// Its first address.
        #[prost(uint64, tag = "2")]
        pub memory_start: u64,
        /// Past its last address.
        #[prost(uint64, tag = "3")]
        pub memory_limit: u64,
        /// The file offset of its first address.
        #[prost(uint64, tag = "4")]
        pub file_offset: u64,
        /// Its file (string index).
        #[prost(int64, tag = "5")]
        pub filename: i64,
        /// Its build id (string index).
        #[prost(int64, tag = "6")]
        pub build_id: i64,
        /// Its locations have functions (no symbolization needed).
        #[prost(bool, tag = "7")]
        pub has_functions: bool,
        /// Its locations have file names.
        #[prost(bool, tag = "8")]
        pub has_filenames: bool,
        /// Its locations have line numbers.
        #[prost(bool, tag = "9")]
        pub has_line_numbers: bool,
        /// Its locations have inlined frames.
        #[prost(bool, tag = "10")]
        pub has_inline_frames: bool,
    }

    /// A place in the program: here, one function.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Location {
        /// Nonzero id.
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// Its mapping (0: none).
        #[prost(uint64, tag = "2")]
        pub mapping_id: u64,
        /// Its address (0: none).
        #[prost(uint64, tag = "3")]
        pub address: u64,
        /// Its function (several for inlined frames; fdr has one).
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
        /// Several symbols share the address.
        #[prost(bool, tag = "5")]
        pub is_folded: bool,
    }

    /// A function at a line.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Line {
        /// The function's id.
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        /// Source line (0: unknown).
        #[prost(int64, tag = "2")]
        pub line: i64,
        /// Source column (0: unknown).
        #[prost(int64, tag = "3")]
        pub column: i64,
    }

    /// A function.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Function {
        /// Nonzero id.
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// Its name (string index).
        #[prost(int64, tag = "2")]
        pub name: i64,
        /// Its name as the system knows it (string index).
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        /// Its source file (string index; 0: unknown).
        #[prost(int64, tag = "4")]
        pub filename: i64,
        /// Its first line (0: unknown).
        #[prost(int64, tag = "5")]
        pub start_line: i64,
    }
}

/// The string table being built: `""` first, each string once.
#[derive(Default)]
struct Strings {
    list: Vec<String>,
    at: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings::default();
        s.get("");
        s
    }

    fn get(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.at.get(s) {
            return i;
        }
        let i = self.list.len() as i64;
        self.list.push(s.to_string());
        self.at.insert(s.to_string(), i);
        i
    }
}

fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The pprof message of `p`: its trees merged by call path, or (`threads`) each tree's paths
/// labelled with its thread. An error past [`MAX_PPROF_LOCATIONS`].
pub(crate) fn message(p: &Profile, threads: bool) -> Result<proto::PprofProfile, CliError> {
    let clock = TickRate::new(p.ticks_per_second);
    let functions = Functions::new(p);
    let mut strings = Strings::new();
    let calls = strings.get("calls");
    let count = strings.get("count");
    let time = strings.get("time");
    let ns = strings.get("nanoseconds");
    let comment = strings.get(&format!("fdr profile of {} (pid {})", p.program, p.pid));
    let mut out = proto::PprofProfile {
        sample_type: vec![
            proto::ValueType {
                r#type: calls,
                unit: count,
            },
            proto::ValueType {
                r#type: time,
                unit: ns,
            },
        ],
        time_nanos: signed(p.start_unix_ns),
        duration_nanos: signed(clock.ns(p.elapsed_ticks)),
        period_type: Some(proto::ValueType {
            r#type: time,
            unit: ns,
        }),
        period: 1,
        // The program, already symbolized: its locations are functions, not addresses.
        mapping: vec![proto::Mapping {
            id: 1,
            filename: strings.get(&p.program),
            has_functions: true,
            ..proto::Mapping::default()
        }],
        comment: vec![comment],
        default_sample_type: time,
        ..proto::PprofProfile::default()
    };
    // The location (and function) id of each fdr function, and of the merged deeper calls.
    let mut location: HashMap<Option<u32>, u64> = HashMap::new();
    let mut frames = 0usize;
    let merged;
    let trees: Vec<(&Tree, Option<(i32, String)>)> = if threads {
        p.trees
            .iter()
            .map(|t| (t, Some((t.tid, tree_label(p, t)))))
            .collect()
    } else {
        merged = p.merged();
        vec![(&merged, None)]
    };
    let (thread_id, thread_name) = if threads {
        (strings.get("thread_id"), strings.get("thread_name"))
    } else {
        (0, 0)
    };
    for (t, thread) in trees {
        let paths = Paths::new(t, MAX_SHOWN_FRAMES);
        let label = thread.map(|(tid, name)| {
            vec![
                proto::Label {
                    key: thread_id,
                    num: i64::from(tid),
                    ..proto::Label::default()
                },
                proto::Label {
                    key: thread_name,
                    str: strings.get(&name),
                    ..proto::Label::default()
                },
            ]
        });
        for (i, path) in paths.paths.iter().enumerate() {
            let c = &path.calls;
            if c.count == 0 && c.self_ticks == 0 {
                continue;
            }
            frames += path.depth + 1;
            if frames > MAX_PPROF_LOCATIONS {
                return Err(CliError::limit(format!(
                    "the profile's call paths have more than {MAX_PPROF_LOCATIONS} frames in all, more \
                     than fdr writes to pprof (is the profile corrupt?)"
                )));
            }
            let mut ids = Vec::with_capacity(path.depth + 1);
            let mut at = Some(i);
            while let Some(k) = at {
                let q = &paths.paths[k];
                let key = (!q.deeper).then_some(q.calls.function);
                let next = location.len() as u64 + 1;
                let id = *location.entry(key).or_insert_with(|| {
                    let name = strings.get(&paths.label(k, &functions));
                    out.function.push(proto::Function {
                        id: next,
                        name,
                        system_name: name,
                        ..proto::Function::default()
                    });
                    out.location.push(proto::Location {
                        id: next,
                        mapping_id: 1,
                        line: vec![proto::Line {
                            function_id: next,
                            ..proto::Line::default()
                        }],
                        ..proto::Location::default()
                    });
                    next
                });
                ids.push(id);
                at = q.calls.parent.map(|p| p as usize);
            }
            out.sample.push(proto::Sample {
                location_id: ids,
                value: vec![signed(c.count), signed(clock.ns(c.self_ticks))],
                label: label.clone().unwrap_or_default(),
            });
        }
    }
    out.string_table = strings.list;
    Ok(out)
}

/// Writes `p` as pprof protobuf on `out` (named `dest` in errors), gzipped if `gzip`.
pub(crate) fn write(
    p: &Profile,
    threads: bool,
    gzip: bool,
    out: &mut dyn Write,
    dest: &str,
) -> Result<(), CliError> {
    use prost::Message as _;
    let bytes = message(p, threads)?.encode_to_vec();
    let r = if gzip {
        self::gzip(&bytes, out)
    } else {
        out.write_all(&bytes)
    };
    r.map_err(|e| CliError::io(dest, "cannot write the pprof profile", e))
}

/// Writes `data` as one gzip member (RFC 1952), deflated at the default level.
pub(crate) fn gzip(data: &[u8], out: &mut dyn Write) -> io::Result<()> {
    let mut e = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    e.write_all(data)?;
    e.finish().map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;

    #[test]
    fn the_message_round_trips_and_sums_to_the_profile() {
        let p = fdr_testkit::profile::known();
        let m = message(&p, false).unwrap();
        let back = proto::PprofProfile::decode(&m.encode_to_vec()[..]).unwrap();
        assert_eq!(back, m);
        assert_eq!(m.string_table[0], "");
        let self_sum: i64 = m.sample.iter().map(|s| s.value[1]).sum();
        assert_eq!(self_sum, 1000 + 9000 + 3800 + 3200 + 2000);
        let calls: i64 = m.sample.iter().map(|s| s.value[0]).sum();
        assert_eq!(calls, 1 + 7 + 7 + 5 + 1);
        assert_eq!(m.function.len(), 5, "app::idle has no sample");
        let threads = message(&p, true).unwrap();
        assert_eq!(
            threads.sample.iter().map(|s| s.value[1]).sum::<i64>(),
            self_sum
        );
        assert!(threads.sample.iter().all(|s| s.label.len() == 2));
    }

    #[test]
    fn gzip_deflates_and_round_trips() {
        use std::io::Read;
        let p = fdr_testkit::profile::known();
        let bytes = message(&p, false).unwrap().encode_to_vec();
        let mut gz = Vec::new();
        gzip(&bytes, &mut gz).unwrap();
        assert!(gz.len() < bytes.len(), "{} of {}", gz.len(), bytes.len());
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, bytes);
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn gzip() {
        let mut gz = Vec::new();
        crate::render::pprof::gzip(&[7u8; 4096], &mut gz).unwrap();
        assert_eq!(&gz[..3], &[0x1f, 0x8b, 8]);
        assert!(gz.len() < 100);
    }
}
