//! The snapshot signal (`signal=USR1`): a handler that only sets a flag and pokes the background
//! writer's pipe, both async-signal-safe; the writer does the rest.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use crate::{platform, platform::wakeup, Error, Signal};

static RAISED: AtomicBool = AtomicBool::new(false);
static PIPE: AtomicI32 = AtomicI32::new(-1);

fn number(s: Signal) -> i32 {
    match s {
        Signal::Usr1 => platform::SIGUSR1,
        Signal::Usr2 => platform::SIGUSR2,
    }
}

extern "C" fn on_signal(_: i32) {
    RAISED.store(true, Ordering::SeqCst);
    wakeup::poke(PIPE.load(Ordering::SeqCst));
}

/// Fails if the program already handles (or ignores) `signal`: fdr does not override what the
/// program chose.
pub(crate) fn check_free(signal: Signal) -> Result<(), Error> {
    if platform::handler_is_default_or(number(signal), on_signal) {
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
    // The handler only stores an atomic and writes to a pipe: async-signal-safe.
    platform::set_handler(number(signal), on_signal);
}

/// Restores the default action.
pub(crate) fn uninstall(signal: Signal) {
    PIPE.store(-1, Ordering::SeqCst);
    platform::reset_handler(number(signal));
}

/// True once per signal received since the last call.
pub(crate) fn take() -> bool {
    RAISED.swap(false, Ordering::SeqCst)
}
