//! Builds profiles (`.fdrprof`) by hand, for tests and fuzzing seeds, with `fdr-format`'s own
//! types: [`TreeBuilder`] adds call paths from their calls' durations, [`known`] is the profile
//! whose figures the tests check.
//!
//! ```
//! use fdr_testkit::profile::TreeBuilder;
//! let mut t = TreeBuilder::new(7, "worker");
//! let main = t.calls(None, 1, &[1000], 600);
//! t.calls(Some(main), 2, &[150, 250], 400);
//! let tree = t.finish();
//! assert_eq!(tree.nodes[1].total, 400);
//! assert_eq!(tree.nodes[1].hist.count(), 2);
//! ```

use fdr_format::profile::{Hist, Node, Profile, Tree, PER_THREAD};

/// One call tree under construction.
#[derive(Clone, Debug, Default)]
pub struct TreeBuilder {
    tree: Tree,
}

impl TreeBuilder {
    /// An empty tree of thread `tid` (0: several threads) named `name`.
    pub fn new(tid: i32, name: &str) -> TreeBuilder {
        TreeBuilder {
            tree: Tree {
                tid,
                name: name.to_string(),
                nodes: Vec::new(),
            },
        }
    }

    /// Adds the calls of `function` under the node `parent` (`None`: a root) that lasted
    /// `durations` ticks, `self_ticks` of which outside their callees; returns the new node's
    /// index. Count, total, min, max and the histogram come from the durations.
    pub fn calls(
        &mut self,
        parent: Option<u32>,
        function: u32,
        durations: &[u64],
        self_ticks: u64,
    ) -> u32 {
        let mut hist = Hist::default();
        for &d in durations {
            hist.add(d, 1);
        }
        self.tree.nodes.push(Node {
            parent,
            function,
            count: durations.len() as u64,
            total: durations.iter().sum(),
            self_ticks,
            min: durations.iter().copied().min().unwrap_or(0),
            max: durations.iter().copied().max().unwrap_or(0),
            hist,
            ..Node::default()
        });
        (self.tree.nodes.len() - 1) as u32
    }

    /// Says that `n` calls along deeper paths were folded into node `node`.
    pub fn folded(&mut self, node: u32, n: u64) {
        self.tree.nodes[node as usize].folded += n;
    }

    /// Says that `n` calls of node `node` were still running, for `ticks` in all.
    pub fn open(&mut self, node: u32, n: u64, ticks: u64) {
        let x = &mut self.tree.nodes[node as usize];
        x.open += n;
        x.open_ticks += ticks;
    }

    /// The tree.
    pub fn finish(self) -> Tree {
        self.tree
    }
}

/// Function ids of [`known`].
pub const MAIN: u32 = 1;
/// See [`MAIN`].
pub const HANDLE: u32 = 2;
/// See [`MAIN`].
pub const PARSE: u32 = 3;
/// See [`MAIN`].
pub const WALK: u32 = 4;
/// See [`MAIN`].
pub const LOG: u32 = 5;
/// See [`MAIN`].
pub const IDLE: u32 = 6;

/// A per-thread profile of program `demo` (pid 4242) at 1 GHz (ticks are nanoseconds), run for
/// 60 µs from Unix time 1.7e18 ns, with three trees:
///
/// ```text
/// thread 11 (main)                     calls  durations            self
///   app::main                              1  10000                1000
///     app::handle                          4  1000 1500 2000 2500  2000
///       app::parse                         4  200 300 400 600      1500
///       app::walk                          2  1000 2500            1500
///         app::walk                        2  700 1300              900
///           app::walk                      1  800                   800
///           app::parse                     1  300                   300
///     app::log (5 calls folded into it)    1  2000                 2000
/// thread 12 (worker)
///   app::handle                            2  3000 5000            6000
///     app::parse                           2  1000 1000            2000
///   app::idle (1 call open for 50 µs)      0                          0
/// exited threads (tid 0)
///   app::handle                            1  1000                 1000
/// ```
///
/// Merged per function: main 1 call, total 10000, self 1000; handle 7 calls, total 16000, self
/// 9000; parse 7 calls, total and self 3800; walk 5 calls, total 3500 (its outermost calls),
/// self 3200; log 1 call, 2000 and 5 folded; idle no call, 1 open for 50000.
pub fn known() -> Profile {
    let mut a = TreeBuilder::new(11, "main");
    let main = a.calls(None, MAIN, &[10_000], 1000);
    let handle = a.calls(Some(main), HANDLE, &[1000, 1500, 2000, 2500], 2000);
    a.calls(Some(handle), PARSE, &[200, 300, 400, 600], 1500);
    let walk = a.calls(Some(handle), WALK, &[1000, 2500], 1500);
    let walk2 = a.calls(Some(walk), WALK, &[700, 1300], 900);
    a.calls(Some(walk2), WALK, &[800], 800);
    a.calls(Some(walk2), PARSE, &[300], 300);
    let log = a.calls(Some(main), LOG, &[2000], 2000);
    a.folded(log, 5);
    let mut b = TreeBuilder::new(12, "worker");
    let handle = b.calls(None, HANDLE, &[3000, 5000], 6000);
    b.calls(Some(handle), PARSE, &[1000, 1000], 2000);
    let idle = b.calls(None, IDLE, &[], 0);
    b.open(idle, 1, 50_000);
    let mut c = TreeBuilder::new(0, "");
    c.calls(None, HANDLE, &[1000], 1000);
    Profile {
        flags: PER_THREAD,
        ticks_per_second: 1_000_000_000,
        start_unix_ns: 1_700_000_000_000_000_000,
        elapsed_ticks: 60_000,
        pid: 4242,
        program: "demo".into(),
        functions: vec![
            (MAIN, "app::main".into()),
            (HANDLE, "app::handle".into()),
            (PARSE, "app::parse".into()),
            (WALK, "app::walk".into()),
            (LOG, "app::log".into()),
            (IDLE, "app::idle".into()),
        ],
        trees: vec![a.finish(), b.finish(), c.finish()],
        ..Profile::default()
    }
}
