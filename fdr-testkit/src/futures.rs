//! Polling a future by hand, as tests of async tasks do: one poll with a waker that does
//! nothing, so that the test, not an executor, says when the next poll comes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// A waker that does nothing when woken.
pub struct NoopWake;

impl Wake for NoopWake {
    fn wake(self: Arc<Self>) {}
}

/// A waker of [`NoopWake`].
///
/// ```
/// let waker = fdr_testkit::futures::noop_waker();
/// waker.wake_by_ref();
/// ```
pub fn noop_waker() -> Waker {
    Waker::from(Arc::new(NoopWake))
}

/// Polls `fut` once, with a waker that does nothing.
///
/// ```
/// use std::pin::pin;
/// use std::task::Poll;
/// let mut fut = pin!(async { 7 });
/// assert_eq!(fdr_testkit::futures::poll_once(fut.as_mut()), Poll::Ready(7));
/// ```
pub fn poll_once<F: Future>(fut: Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(&noop_waker()))
}
