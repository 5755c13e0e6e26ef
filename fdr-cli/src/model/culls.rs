//! Culled functions, from the cull events in the threads' blocks.
//!
//! The recorder culls a function whose calls were all erased for a long run: from then on its
//! calls are skipped, but for the one call a probe lets through now and then, until such a call
//! reaches the threshold and the function is restored. Culling is per function, whichever thread's
//! calls culled or restored it, so the events are put in time order across threads before
//! they are paired. At most [`MAX_CULL_EVENTS`] events are kept for the list (the rest are
//! counted); which functions were culled is always known.

use std::collections::HashSet;

use fdr_format::CullKind;

use crate::limits::MAX_CULL_EVENTS;

/// One cull event: by thread index `thread` at `tsc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CullEvent {
    tsc: u64,
    thread: u32,
    kind: CullKind,
    id: u32,
}

/// One time a function was culled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Period {
    /// The function.
    pub id: u32,
    /// When and by which thread (index) it was culled; `None` if before the window.
    pub culled: Option<(u64, u32)>,
    /// When and by which thread (index) it was restored; `None` if it was still culled when
    /// the log ended.
    pub restored: Option<(u64, u32)>,
}

/// The cull events of a log.
#[derive(Clone, Debug, Default)]
pub(crate) struct Culls {
    events: Vec<CullEvent>,
    /// Events past [`MAX_CULL_EVENTS`], not listed.
    more: u64,
    functions: HashSet<u32>,
}

impl Culls {
    /// A cull event of thread index `thread` at `tsc`.
    pub(crate) fn event(&mut self, thread: u32, tsc: u64, kind: CullKind, id: u32) {
        self.functions.insert(id);
        if self.events.len() < MAX_CULL_EVENTS {
            self.events.push(CullEvent {
                tsc,
                thread,
                kind,
                id,
            });
        } else {
            self.more += 1;
        }
    }

    /// Adds the events of another share of the same log's threads.
    pub(crate) fn merge(&mut self, other: Culls) {
        self.more += other.more;
        self.functions.extend(other.functions);
        for e in other.events {
            if self.events.len() < MAX_CULL_EVENTS {
                self.events.push(e);
            } else {
                self.more += 1;
            }
        }
    }

    /// True if the log has cull events of function `id`: its counts are a sample.
    pub(crate) fn is_culled(&self, id: u32) -> bool {
        self.functions.contains(&id)
    }

    /// How many functions the log's cull events name.
    pub(crate) fn functions(&self) -> usize {
        self.functions.len()
    }

    /// True if the log has no cull events.
    pub(crate) fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }

    /// The culled periods, in time order of their start (a period culled before the window
    /// first).
    pub(crate) fn periods(&self) -> Vec<Period> {
        let mut events = self.events.clone();
        events.sort_by_key(|e| (e.tsc, e.thread));
        let mut out: Vec<Period> = Vec::new();
        // The open period of each function, by index into `out`.
        let mut open: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
        for e in events {
            match e.kind {
                CullKind::Culled => {
                    if let std::collections::hash_map::Entry::Vacant(v) = open.entry(e.id) {
                        v.insert(out.len());
                        out.push(Period {
                            id: e.id,
                            culled: Some((e.tsc, e.thread)),
                            restored: None,
                        });
                    }
                }
                CullKind::Restored => match open.remove(&e.id) {
                    Some(i) => out[i].restored = Some((e.tsc, e.thread)),
                    None => out.push(Period {
                        id: e.id,
                        culled: None,
                        restored: Some((e.tsc, e.thread)),
                    }),
                },
            }
        }
        out.sort_by_key(|p| p.culled.map_or((0, 0), |(t, _)| (1, t)));
        out
    }

    /// Cull events left out of the list.
    pub(crate) fn more(&self) -> u64 {
        self.more
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn culls() {
        use crate::model::culls::Culls;
        use fdr_format::CullKind;

        use crate::limits::MAX_CULL_EVENTS;
        let mut c = Culls::default();
        c.event(1, 500, CullKind::Restored, 7); // thread 1 restores 7 at 500...
        c.event(0, 100, CullKind::Culled, 7); // ...after thread 0 culled it at 100
        c.event(0, 900, CullKind::Culled, 8);
        assert!(c.is_culled(7) && c.is_culled(8) && !c.is_culled(9));
        let p = c.periods();
        assert_eq!(
            (p[0].id, p[0].culled, p[0].restored),
            (7, Some((100, 0)), Some((500, 1)))
        );
        assert_eq!((p[1].id, p[1].restored), (8, None));
    }
}
