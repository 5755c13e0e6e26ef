//! The snapshot signal (`signal=USR1`): a handler that only sets a flag and pokes the background
//! writer's pipe, both async-signal-safe; the writer does the rest.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use crate::{wakeup, Error, Signal};

static RAISED: AtomicBool = AtomicBool::new(false);
static PIPE: AtomicI32 = AtomicI32::new(-1);

fn number(s: Signal) -> libc::c_int {
    match s {
        Signal::Usr1 => libc::SIGUSR1,
        Signal::Usr2 => libc::SIGUSR2,
    }
}

extern "C" fn on_signal(_: libc::c_int) {
    RAISED.store(true, Ordering::SeqCst);
    wakeup::poke(PIPE.load(Ordering::SeqCst));
}

/// Fails if the program already handles (or ignores) `signal`: fdr does not override what the
/// program chose.
pub(crate) fn check_free(signal: Signal) -> Result<(), Error> {
    // SAFETY: a zeroed sigaction is a valid out-parameter; a null new action only queries.
    let current = unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(number(signal), std::ptr::null(), &mut old);
        old.sa_sigaction
    };
    if current == libc::SIG_DFL || current == on_signal as extern "C" fn(libc::c_int) as usize {
        return Ok(());
    }
    Err(Error::Config {
        key: "signal".into(),
        message: format!(
            "SIG{} already has a handler in this program; fdr will not replace it. Choose the \
             other (USR1 or USR2) or leave `signal` out",
            signal.name()
        ),
    })
}

/// Installs the handler, which pokes `pipe`.
pub(crate) fn install(signal: Signal, pipe: i32) {
    PIPE.store(pipe, Ordering::SeqCst);
    RAISED.store(false, Ordering::SeqCst);
    // SAFETY: the action is zeroed and then filled in; the handler is async-signal-safe.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(number(signal), &action, std::ptr::null_mut());
    }
}

/// Restores the default action.
pub(crate) fn uninstall(signal: Signal) {
    PIPE.store(-1, Ordering::SeqCst);
    // SAFETY: restores SIG_DFL with an empty mask.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(number(signal), &action, std::ptr::null_mut());
    }
}

/// True once per signal received since the last call.
pub(crate) fn take() -> bool {
    RAISED.swap(false, Ordering::SeqCst)
}
