//! The wrapper the expansion of an instrumented `async fn` puts around each awaited future.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::record::awaits;
use crate::tables::functions::FnDesc;

/// A future awaited at an await site of an instrumented `async fn`: the expansion writes
/// `Awaited::new(&SITE, &FN, IntoFuture::into_future(expr)).await` for `expr.await`. It passes
/// every poll to the future it wraps; when that future returns `Pending` it times the wait, from
/// that poll to the one that finds it ready (or to its drop), and records the wait then (see the
/// runtime's `record::awaits`). A future ready at once costs a branch and records nothing.
///
/// `site` is the await site's descriptor ([`crate::FnKindTag::Await`], named after the async
/// function, at the awaited expression's line and column), `f` the async function's.
///
/// ```
/// use fdr_runtime::hooks::Awaited;
/// use fdr_runtime::{FnDesc, FnKindTag, Instrumented};
/// #[linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
/// static FN: FnDesc = FnDesc::new("doc::handle", file!(), line!(), FnKindTag::Async, &[]);
/// #[linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
/// static SITE: FnDesc =
///     FnDesc::new("doc::handle", file!(), line!(), FnKindTag::Await, &[]).at_column(9);
/// let task = Instrumented::new(&FN, async {
///     Awaited::new(&SITE, &FN, std::future::ready(7)).await
/// });
/// # let _ = task;
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct Awaited<F> {
    site: &'static FnDesc,
    f: &'static FnDesc,
    /// When the wait began (clock ticks; 0: not waiting, or not recorded).
    since: u64,
    /// Polls that found the future pending since it began.
    polls: u32,
    inner: F,
}

impl<F> Awaited<F> {
    /// Wraps `inner`, awaited at `site` of the async function `f`.
    #[inline(always)]
    pub fn new(site: &'static FnDesc, f: &'static FnDesc, inner: F) -> Awaited<F> {
        Awaited {
            site,
            f,
            since: 0,
            polls: 0,
            inner,
        }
    }
}

impl<F: Future> Future for Awaited<F> {
    type Output = F::Output;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is structurally pinned: it is never moved out of `self` (the `Drop`
        // impl reads only the plain fields), and `Awaited` is `Unpin` only when `F` is (the auto
        // impl), so projecting the pin from the wrapper to the field upholds `F`'s contract.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above.
        let inner = unsafe { Pin::new_unchecked(&mut this.inner) };
        let polled = inner.poll(cx);
        match polled {
            Poll::Ready(_) => {
                if this.since != 0 {
                    awaits::ended(this.site, this.f, this.since, this.polls, false);
                    this.since = 0;
                }
            }
            Poll::Pending => {
                if this.since != 0 {
                    this.polls = this.polls.saturating_add(1);
                } else {
                    // Nothing to write while nothing records: an idle service's waits cost the
                    // test of the flags.
                    let since = awaits::begin(this.site, this.f);
                    if since != 0 {
                        this.since = since;
                        this.polls = 1;
                    }
                }
            }
        }
        polled
    }
}

impl<F> Drop for Awaited<F> {
    #[inline]
    fn drop(&mut self) {
        if self.since != 0 {
            awaits::ended(self.site, self.f, self.since, self.polls, true);
        }
    }
}
