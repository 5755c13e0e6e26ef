//! tokio's runtime hooks, recorded: what the runtime itself knows of its tasks and workers, for
//! the tasks nobody annotated.
//!
//! [`hooks`] installs, on a runtime builder:
//!
//! - in every build, the worker threads' park and unpark hooks: while a worker is parked (idle,
//!   waiting for work) it is in a call of `tokio::worker::parked`, so a timeline shows each
//!   worker busy or idle (a park shorter than the threshold is erased like a short call);
//! - with `--cfg tokio_unstable` (tokio's task hooks are unstable), every task's spawn, polls and
//!   termination: the task is a task of a function named after its spawn location
//!   (`tokio::spawn at src/main.rs:42:5`), so `fdr account` and `fdr calls` list the tasks by
//!   where they were spawned, with their latency and their polls, and a poll longer than the
//!   long-poll limit fires. Task ids are tokio's, with the top bit set (`fdr calls` shows
//!   them), so they never collide with those of instrumented `async fn`s. A task spawned from
//!   an instrumented `async fn`'s poll shows under it; an instrumented `async fn` spawned as a
//!   task is both: tokio's task, and inside its polls the function's.
//!
//! The hooks replace any park, unpark or task hooks set on the builder before (tokio keeps one
//! of each): set yours after, and they replace these.
//!
//! Without the `enable` feature, [`hooks`] leaves the builder as it is.

/// Installs fdr's hooks on `builder` (see the module's documentation) and returns it.
///
/// ```
/// let mut builder = tokio::runtime::Builder::new_current_thread();
/// fdr::tokio::hooks(&mut builder);
/// let rt = builder.build().unwrap();
/// rt.block_on(async { tokio::spawn(async { 1 }).await.unwrap() });
/// ```
pub fn hooks(builder: &mut tokio::runtime::Builder) -> &mut tokio::runtime::Builder {
    #[cfg(feature = "enable")]
    recorded::install(builder);
    builder
}

#[cfg(feature = "enable")]
mod recorded {
    use fdr_runtime::hooks;
    use fdr_runtime::{FnDesc, FnKindTag};

    /// A worker parked: the time between its park and its unpark.
    #[fdr_runtime::linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
    #[linkme(crate = fdr_runtime::linkme)]
    static PARKED: FnDesc = FnDesc::new(
        "tokio::worker::parked",
        file!(),
        line!(),
        FnKindTag::Scope,
        &[],
    );

    pub(super) fn install(builder: &mut tokio::runtime::Builder) {
        builder
            .on_thread_park(|| hooks::enter(&PARKED))
            .on_thread_unpark(|| hooks::exit(&PARKED));
        #[cfg(tokio_unstable)]
        tasks::install(builder);
    }

    /// Tasks by spawn location (tokio's task hooks, unstable).
    #[cfg(tokio_unstable)]
    mod tasks {
        use std::cell::RefCell;
        use std::hash::{Hash, Hasher};
        use std::panic::Location;
        use std::sync::atomic::{AtomicU16, AtomicU64, AtomicUsize, Ordering};
        use std::sync::{Mutex, OnceLock};

        use fdr_runtime::hooks;
        use fdr_runtime::{FnDesc, FnKindTag, Named};

        /// Spawn locations a program can have recorded; tasks spawned at locations past it are
        /// recorded under [`OTHERS`].
        pub(super) const SITES: usize = 256;

        /// What each claimed descriptor is called.
        static NAMES: [OnceLock<Named>; SITES] = [const { OnceLock::new() }; SITES];

        /// The name of spare `K`: unnamed while unclaimed, which leaves it out of the log's table.
        fn info<const K: usize>() -> &'static Named {
            NAMES[K].get().unwrap_or(&Named::UNNAMED)
        }

        include!(concat!(env!("OUT_DIR"), "/spawn_sites.rs"));

        /// The tasks of spawn locations past [`SITES`].
        #[fdr_runtime::linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
        #[linkme(crate = fdr_runtime::linkme)]
        static OTHERS: FnDesc = FnDesc::new(
            "tokio::spawn at a location past fdr's table of spawn locations",
            file!(),
            line!(),
            FnKindTag::Async,
            &[],
        );

        /// Open addressing, two places per spare so that probes stay short: a location's address
        /// and its slot (plus one) side by side.
        const CAP: usize = 2 * SITES;
        static KEYS: [AtomicUsize; CAP] = [const { AtomicUsize::new(0) }; CAP];
        static SLOTS_OF: [AtomicU16; CAP] = [const { AtomicU16::new(0) }; CAP];
        static CLAIMED: AtomicUsize = AtomicUsize::new(0);
        /// Spawn locations past [`SITES`].
        static DROPPED: AtomicU64 = AtomicU64::new(0);
        /// Claiming is rare and may race: one at a time.
        static CLAIMING: Mutex<()> = Mutex::new(());

        fn home(key: usize) -> usize {
            ((key >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % CAP
        }

        /// The descriptor of the tasks spawned at `at`, claiming one the first time.
        pub(super) fn site(at: &'static Location<'static>) -> &'static FnDesc {
            let key = at as *const Location<'static> as usize;
            if let Some(d) = find(key) {
                return d;
            }
            let _one = CLAIMING.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(d) = find(key) {
                return d;
            }
            let slot = CLAIMED.load(Ordering::Relaxed);
            if slot >= SITES {
                DROPPED.fetch_add(1, Ordering::Relaxed);
                return &OTHERS;
            }
            let name: &'static str = Box::leak(
                format!(
                    "tokio::spawn at {}:{}:{}",
                    at.file(),
                    at.line(),
                    at.column()
                )
                .into_boxed_str(),
            );
            let _ = NAMES[slot].set(Named {
                name,
                file: at.file(),
                line: at.line(),
                args: &[],
            });
            let mut i = home(key);
            while KEYS[i].load(Ordering::Relaxed) != 0 {
                i = (i + 1) % CAP;
            }
            SLOTS_OF[i].store(slot as u16 + 1, Ordering::Relaxed);
            KEYS[i].store(key, Ordering::Release);
            CLAIMED.store(slot + 1, Ordering::Relaxed);
            let d = SLOTS[slot];
            // A recording already running arms the name's trigger pattern, if any.
            hooks::named(d);
            d
        }

        fn find(key: usize) -> Option<&'static FnDesc> {
            let mut i = home(key);
            for _ in 0..CAP {
                match KEYS[i].load(Ordering::Acquire) {
                    0 => return None,
                    k if k == key => {
                        let slot = SLOTS_OF[i].load(Ordering::Relaxed);
                        return slot.checked_sub(1).map(|s| SLOTS[usize::from(s)]);
                    }
                    _ => i = (i + 1) % CAP,
                }
            }
            None
        }

        /// Tasks spawned at locations past fdr's table, recorded under one descriptor.
        #[allow(dead_code)]
        pub(super) fn dropped_sites() -> u64 {
            DROPPED.load(Ordering::Relaxed)
        }

        thread_local! {
            /// The polls this thread has begun and not ended: a poll may run another runtime's
            /// (`block_on` inside it), so they nest.
            static POLLS: RefCell<Vec<hooks::TaskPoll>> = const { RefCell::new(Vec::new()) };
        }

        /// tokio's task id as a number: `Id` hashes as its one `u64`, which this hasher keeps.
        #[derive(Default)]
        struct Number(u64);

        impl Hasher for Number {
            fn finish(&self) -> u64 {
                self.0
            }
            fn write(&mut self, bytes: &[u8]) {
                for b in bytes {
                    self.0 = self.0 << 8 | u64::from(*b);
                }
            }
            fn write_u64(&mut self, n: u64) {
                self.0 = n;
            }
        }

        /// The log's id of a tokio task: tokio's, with the top bit set.
        fn task_id(meta: &tokio::runtime::TaskMeta<'_>) -> u64 {
            let mut n = Number::default();
            meta.id().hash(&mut n);
            1 << 63 | n.0
        }

        pub(super) fn install(builder: &mut tokio::runtime::Builder) {
            builder
                .on_task_spawn(|meta| {
                    hooks::task_created_as(site(meta.spawned_at()), task_id(meta));
                })
                .on_before_task_poll(|meta| {
                    let poll = hooks::TaskPoll::begin(site(meta.spawned_at()));
                    POLLS.with(|p| p.borrow_mut().push(poll));
                })
                .on_after_task_poll(|meta| {
                    if let Some(poll) = POLLS.with(|p| p.borrow_mut().pop()) {
                        poll.end(task_id(meta));
                    }
                })
                .on_task_terminate(|meta| {
                    // Completed or aborted: tokio's hook does not say which.
                    hooks::task_ended(site(meta.spawned_at()), task_id(meta), true);
                });
        }
    }
}
