//! Annotated `async fn`s of every shape add no warning to a crate that denies them all: what the
//! expansion adds is as quiet as what rustc adds to lower an `async fn`.

#![deny(warnings)]

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use fdr::instrument_fdr;

struct Guard;

pub struct S {
    n: u32,
    guard: Guard,
}

/// Unused arguments, bound to `_` or to a name starting with `_`, patterns, `mut`, `ref`.
#[instrument_fdr]
async fn unused(_: Guard, _g: Guard, (a, _): (u8, u8), mut b: u8, ref c: u8) -> u8 {
    b += a;
    b + c
}

/// A parameter left out by `cfg`, and a lint allowed on a parameter.
#[instrument_fdr]
async fn configured(#[cfg(any())] gone: u32, #[allow(unused_variables)] quiet: u32) {}

#[instrument_fdr]
async fn nothing() {}

#[instrument_fdr]
async fn early(x: u32) {
    if x == 0 {
        return;
    }
    nothing().await;
}

#[instrument_fdr(log_args)]
async fn logged(x: u32, _y: u64) -> u32 {
    x
}

#[instrument_fdr]
#[must_use]
#[inline]
async fn attributed(x: u32) -> u32 {
    x
}

#[instrument_fdr]
async fn unfinished() -> u32 {
    unimplemented!()
}

#[instrument_fdr]
async fn diverges() -> ! {
    loop {
        std::future::pending::<()>().await;
    }
}

#[instrument_fdr]
async fn generic<T: Clone, I: Iterator<Item = T>>(items: I, extra: impl Into<T>) -> Vec<T>
where
    T: Default,
{
    let mut out: Vec<T> = items.collect();
    out.push(extra.into());
    out
}

#[instrument_fdr]
async fn shown(x: u32) -> impl std::fmt::Display {
    x
}

#[instrument_fdr]
async fn recursive(n: u32) -> u32 {
    if n == 0 {
        0
    } else {
        Box::pin(recursive(n - 1)).await + 1
    }
}

/// # Safety
///
/// `p` is valid.
#[instrument_fdr]
async unsafe fn read(p: *const u8) -> u8 {
    // SAFETY: the caller's promise.
    unsafe { *p }
}

#[instrument_fdr]
impl S {
    async fn by_value(self) -> u32 {
        self.n + nothing_much()
    }
    async fn by_mut_value(mut self) -> u32 {
        self.n += nothing_much();
        self.n
    }
    async fn by_ref(&self) -> u32 {
        self.n + nothing_much()
    }
    async fn by_mut(&mut self) -> u32 {
        self.n += nothing_much();
        self.n
    }
    async fn boxed(self: Box<Self>) -> u32 {
        self.n + nothing_much()
    }
    async fn pinned(self: Pin<&mut Self>) -> u32 {
        self.n + nothing_much()
    }
    async fn unused_self(self) {
        nothing().await;
    }
}

fn nothing_much() -> u32 {
    0
}

#[instrument_fdr]
trait Fetch {
    async fn fetch(&self, k: u32) -> u32 {
        k + self.base()
    }
    fn base(&self) -> u32;
}

#[instrument_fdr]
impl Fetch for S {
    fn base(&self) -> u32 {
        self.n
    }
    async fn fetch(&self, k: u32) -> u32 {
        k * self.base()
    }
}

macro_rules! in_a_macro {
    ($name:ident, $t:ty) => {
        #[instrument_fdr]
        async fn $name(x: $t) -> $t {
            x
        }
    };
}

in_a_macro!(from_a_macro, u8);

struct NoopWake;
impl Wake for NoopWake {
    fn wake(self: Arc<Self>) {}
}

fn block_on<F: Future>(fut: F) -> F::Output {
    let waker = Waker::from(Arc::new(NoopWake));
    let mut fut = pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut Context::from_waker(&waker)) {
            return v;
        }
    }
}

fn main() {
    assert_eq!(block_on(unused(Guard, Guard, (1, 2), 3, 4)), 8);
    block_on(configured(1));
    block_on(early(0));
    block_on(early(1));
    assert_eq!(block_on(logged(1, 2)), 1);
    assert_eq!(block_on(attributed(1)), 1);
    drop(unfinished());
    drop(diverges());
    assert_eq!(block_on(generic([1u64].into_iter(), 2u8)), [1, 2]);
    assert_eq!(block_on(shown(3)).to_string(), "3");
    assert_eq!(block_on(recursive(3)), 3);
    // SAFETY: a live local.
    assert_eq!(block_on(unsafe { read(&7) }), 7);
    let s = || S { n: 2, guard: Guard };
    assert_eq!(block_on(s().by_value()), 2);
    assert_eq!(block_on(s().by_mut_value()), 2);
    assert_eq!(block_on(s().by_ref()), 2);
    assert_eq!(block_on(s().by_mut()), 2);
    assert_eq!(block_on(Box::new(s()).boxed()), 2);
    assert_eq!(block_on(pin!(s()).pinned()), 2);
    block_on(s().unused_self());
    assert_eq!(block_on(s().fetch(3)), 6);
    assert_eq!(block_on(from_a_macro(4)), 4);
    let S { n: _, guard: _ } = s();
}
