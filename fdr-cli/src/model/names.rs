//! Function and thread names from the log's own tables; [`crate::escape`] says how they are
//! shown.

use std::borrow::Cow;
use std::collections::HashMap;

use fdr_format::events::LogInfo;
use fdr_format::FunctionInfo;

use crate::limits::MAX_LOG_FUNCTIONS;
use crate::CliError;

/// Ids below this are looked up in a vector; larger (rare, 28-bit) ids in a hash map, so a
/// stray id never makes the reader allocate a 2^28-entry table.
const DIRECT: u32 = 1 << 16;

/// The error for a log whose calls use more than [`MAX_LOG_FUNCTIONS`] function ids.
pub(crate) fn too_many_functions() -> CliError {
    CliError::limit(format!(
        "the log's calls use more than {MAX_LOG_FUNCTIONS} distinct function ids, fdr's limit for \
         one log (is the log corrupt?)"
    ))
}

/// Maps function ids to dense slots `0..n`, in order of first use; at most [`MAX_LOG_FUNCTIONS`].
#[derive(Default, Debug)]
pub(crate) struct Slots {
    direct: Vec<u32>,
    far: HashMap<u32, u32>,
    ids: Vec<u32>,
}

impl Slots {
    /// The slot of `id`, assigning the next one on first use; an error past [`MAX_LOG_FUNCTIONS`].
    #[inline]
    pub(crate) fn slot(&mut self, id: u32) -> Result<usize, CliError> {
        if id < DIRECT {
            let i = id as usize;
            if let Some(&s) = self.direct.get(i) {
                if s != u32::MAX {
                    return Ok(s as usize);
                }
            }
            if self.ids.len() >= MAX_LOG_FUNCTIONS {
                return Err(too_many_functions());
            }
            if i >= self.direct.len() {
                self.direct.resize(i + 1, u32::MAX);
            }
            let s = self.ids.len() as u32;
            self.direct[i] = s;
            self.ids.push(id);
            return Ok(s as usize);
        }
        if let Some(&s) = self.far.get(&id) {
            return Ok(s as usize);
        }
        if self.ids.len() >= MAX_LOG_FUNCTIONS {
            return Err(too_many_functions());
        }
        let s = self.ids.len() as u32;
        self.far.insert(id, s);
        self.ids.push(id);
        Ok(s as usize)
    }

    /// The id of each slot.
    pub(crate) fn ids(&self) -> &[u32] {
        &self.ids
    }
}

/// The names of the threads of a log's table, told apart: threads a runtime names alike (tokio's
/// workers are all `tokio-rt-worker`) are numbered in the order of their ids, `tokio-rt-worker#1`,
/// `tokio-rt-worker#2`, so that every output (a timeline's tracks, a JSON field, `--thread`)
/// tells them apart. Threads without a name have none here.
pub(crate) fn thread_names(threads: &[fdr_format::ThreadInfo]) -> HashMap<i32, String> {
    let mut named: HashMap<i32, String> = HashMap::new();
    for t in threads.iter().filter(|t| !t.name.is_empty()) {
        named.insert(t.tid, t.name.clone());
    }
    let mut by_name: HashMap<&str, Vec<i32>> = HashMap::new();
    for (tid, name) in &named {
        by_name.entry(name.as_str()).or_default().push(*tid);
    }
    let mut numbered = Vec::new();
    for (name, mut tids) in by_name {
        if tids.len() > 1 {
            tids.sort_unstable();
            for (k, tid) in tids.into_iter().enumerate() {
                numbered.push((tid, format!("{name}#{}", k + 1)));
            }
        }
    }
    named.extend(numbered);
    named
}

/// Names for function ids and thread indices.
#[derive(Debug, Default)]
pub(crate) struct Names {
    functions: HashMap<u32, FunctionInfo>,
    threads: HashMap<i32, String>,
}

impl Names {
    /// Names from the log's function and thread tables.
    pub(crate) fn new(info: &LogInfo) -> Names {
        let mut n = Names::default();
        for f in &info.functions {
            n.functions.insert(f.id, f.clone());
        }
        n.threads = thread_names(&info.threads);
        n
    }

    /// The table entry of `id`, if the log has one.
    pub(crate) fn info(&self, id: u32) -> Option<&FunctionInfo> {
        self.functions.get(&id)
    }

    /// The function's full name, or `#<id>` when the table does not have it.
    pub(crate) fn function(&self, id: u32) -> Cow<'_, str> {
        match self.functions.get(&id) {
            Some(f) if !f.name.is_empty() => Cow::Borrowed(&f.name),
            _ => Cow::Owned(format!("#{id}")),
        }
    }

    /// Where await site `site` is, `FILE:LINE:COLUMN` (`#SITE` for an id not in the table).
    pub(crate) fn site(&self, site: u32) -> String {
        self.info(site)
            .map_or_else(|| format!("#{site}"), |f| f.location())
    }

    /// The name of argument `i` of function `id`: from the table, else `arg<i>`.
    pub(crate) fn arg(&self, id: u32, i: usize) -> String {
        self.functions
            .get(&id)
            .and_then(|f| f.args.get(i))
            .cloned()
            .unwrap_or_else(|| format!("arg{i}"))
    }

    /// What argument `i` of function `id` holds, as the function table says.
    pub(crate) fn arg_kind(&self, id: u32, i: usize) -> fdr_format::args::ArgKind {
        self.functions
            .get(&id)
            .map_or_else(Default::default, |f| f.arg_kind(i))
    }

    /// Argument `i` of function `id`, its bits `v` shown as its kind says (`-3`, `true`, `1.5`,
    /// `"alice"`; a plain number when the table says nothing).
    pub(crate) fn arg_value(&self, id: u32, i: usize, v: u64) -> String {
        self.arg_kind(id, i).show(v)
    }

    /// The thread's name, or `thread <tid>` when it had none.
    pub(crate) fn thread(&self, tid: i32) -> String {
        self.threads
            .get(&tid)
            .cloned()
            .unwrap_or_else(|| format!("thread {tid}"))
    }

    /// True if the thread has a recorded name.
    pub(crate) fn has_thread_name(&self, tid: i32) -> bool {
        self.threads.contains_key(&tid)
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn thread_names() {
        use crate::model::names::thread_names;
        use fdr_format::ThreadInfo;
        let t = |tid, name: &str| ThreadInfo {
            tid,
            name: name.into(),
            records_dropped: 0,
        };
        let names = thread_names(&[
            t(12, "tokio-rt-worker"),
            t(7, "main"),
            t(11, "tokio-rt-worker"),
        ]);
        assert_eq!(names[&11], "tokio-rt-worker#1");
        assert_eq!(names[&12], "tokio-rt-worker#2");
        assert_eq!(names[&7], "main");
    }

    #[test]
    fn slots() {
        use crate::model::names::Slots;
        let mut s = Slots::default();
        assert_eq!(s.slot(500).unwrap(), 0);
        assert_eq!(s.slot(1 << 27).unwrap(), 1);
        assert_eq!(s.slot(500).unwrap(), 0);
        assert_eq!(s.ids(), &[500, 1 << 27]);
    }

    #[test]
    fn names() {
        use crate::model::names::Names;
        use fdr_format::{events::LogInfo, FunctionInfo};
        let info = LogInfo {
            functions: vec![FunctionInfo {
                id: 2,
                name: "app::run".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let n = Names::new(&info);
        assert_eq!(n.function(2), "app::run");
        assert_eq!(n.function(9), "#9");
    }
}
