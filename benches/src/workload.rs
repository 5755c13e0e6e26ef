//! The call shape under each of fdr's configurations: a tiny leaf called in a loop.
//!
//! Each `run_*` function is `#[inline(never)]` so that the loop, and the direct call to its leaf,
//! compile the same way wherever they are timed from; each returns a checksum so the calls
//! cannot be optimized away.

/// The work inside every leaf: an opaque multiply-add, as in the XRay anchor's `leaf`.
#[inline(always)]
pub fn body(x: u64) -> u64 {
    let mut x = x;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the template is empty: it only tells the compiler that `x` may have changed, so
    // the multiply below cannot be folded across calls. No memory, stack or flags are touched.
    unsafe {
        core::arch::asm!("/* {0} */", inout(reg) x, options(nomem, nostack, preserves_flags));
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        x = core::hint::black_box(x);
    }
    x.wrapping_mul(2_654_435_761).wrapping_add(1)
}

/// The leaf without instrumentation.
#[inline(never)]
pub fn leaf_plain(x: u64) -> u64 {
    body(x)
}

/// The leaf instrumented with `#[instrument_fdr]`.
#[fdr::instrument_fdr]
#[inline(never)]
pub fn leaf_fdr(x: u64) -> u64 {
    body(x)
}

/// The leaf whose body is recorded by `fdr_scope!`.
#[inline(never)]
pub fn leaf_scope(x: u64) -> u64 {
    fdr::fdr_scope!("leaf_scope");
    body(x)
}

/// The leaf with two arguments, both logged.
#[fdr::instrument_fdr(log_args)]
#[inline(never)]
pub fn leaf_args(a: u64, b: u64) -> u64 {
    body(a ^ b)
}

/// Calls `leaf` with `0..n` and sums the results.
#[inline(always)]
pub fn drive(n: u64, leaf: impl Fn(u64) -> u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        acc = acc.wrapping_add(leaf(i));
    }
    acc
}

/// `n` calls of [`leaf_plain`].
///
/// ```
/// assert_eq!(fdr_benches::workload::run_plain(2), 2_654_435_761 + 2);
/// ```
#[inline(never)]
pub fn run_plain(n: u64) -> u64 {
    drive(n, leaf_plain)
}

/// `n` calls of [`leaf_fdr`].
///
/// ```
/// assert_eq!(fdr_benches::workload::run_fdr(2), 2_654_435_761 + 2);
/// ```
#[inline(never)]
pub fn run_fdr(n: u64) -> u64 {
    drive(n, leaf_fdr)
}

/// `n` calls of [`leaf_scope`].
///
/// ```
/// assert_eq!(fdr_benches::workload::run_scope(2), 2_654_435_761 + 2);
/// ```
#[inline(never)]
pub fn run_scope(n: u64) -> u64 {
    drive(n, leaf_scope)
}

/// `n` calls of [`leaf_args`] with the arguments `(i, i >> 1)`.
///
/// ```
/// assert_eq!(fdr_benches::workload::run_args(2), 2_654_435_761 + 2);
/// ```
#[inline(never)]
pub fn run_args(n: u64) -> u64 {
    drive(n, |i| leaf_args(i, i >> 1))
}

/// An instrumented async function whose future is ready at its first poll.
#[fdr::instrument_fdr]
pub async fn task_fdr(x: u64) -> u64 {
    body(x)
}

/// A waker that does nothing, for polling by hand.
fn noop_waker() -> std::task::Waker {
    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: std::sync::Arc<Self>) {}
    }
    std::task::Waker::from(std::sync::Arc::new(Noop))
}

/// `n` tasks of [`task_fdr`], each created, polled once (ready) and completed: a task's two
/// events and one poll's entry and exit.
#[inline(never)]
pub fn run_task(n: u64) -> u64 {
    use std::future::Future;
    let waker = noop_waker();
    drive(n, |i| {
        let mut cx = std::task::Context::from_waker(&waker);
        let mut fut = std::pin::pin!(task_fdr(i));
        match fut.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => 0,
        }
    })
}

/// An instrumented async function that waits for ever.
#[fdr::instrument_fdr]
pub async fn task_pending() {
    std::future::pending::<()>().await
}

/// `n` tasks of [`task_pending`] polled once and dropped: a task's creation (recorded at the
/// call, which makes the future), one poll, and its cancellation.
#[inline(never)]
pub fn run_task_dropped(n: u64) -> u64 {
    use std::future::Future;
    let waker = noop_waker();
    drive(n, |i| {
        let mut cx = std::task::Context::from_waker(&waker);
        let mut fut = std::pin::pin!(task_pending());
        let _ = fut.as_mut().poll(&mut cx);
        i
    })
}
