//! Waking the background writer: a non-blocking pipe, whose write end any thread may poke, in a
//! signal handler too (`write` is async-signal-safe), and whose read end the writer polls.

use std::sync::atomic::{AtomicI32, Ordering};

use crate::platform;

pub(crate) struct Wakeup {
    read: AtomicI32,
    write: AtomicI32,
}

impl Wakeup {
    /// A pipe, or none (the writer then polls on its timer alone).
    pub(crate) fn new() -> Wakeup {
        let (read, write) = platform::pipe().unwrap_or((-1, -1));
        Wakeup {
            read: AtomicI32::new(read),
            write: AtomicI32::new(write),
        }
    }

    /// The write end, for a signal handler.
    pub(crate) fn write_fd(&self) -> i32 {
        self.write.load(Ordering::Relaxed)
    }

    /// Wakes the writer. Never blocks: a full pipe already holds a wake-up.
    pub(crate) fn wake(&self) {
        poke(self.write_fd());
    }

    /// Waits up to `timeout_ms` (negative: forever) for a wake-up, and drains the pipe.
    pub(crate) fn wait(&self, timeout_ms: i32) {
        let fd = self.read.load(Ordering::Relaxed);
        if fd < 0 {
            std::thread::sleep(std::time::Duration::from_millis(
                timeout_ms.clamp(1, 100) as u64
            ));
            return;
        }
        platform::wait_and_drain(fd, timeout_ms);
    }
}

/// Writes one byte to `fd`, keeping `errno` as it was (for a signal handler).
pub(crate) fn poke(fd: i32) {
    if fd < 0 {
        return;
    }
    platform::poke(fd);
}

impl Drop for Wakeup {
    fn drop(&mut self) {
        for fd in [
            self.read.load(Ordering::Relaxed),
            self.write.load(Ordering::Relaxed),
        ] {
            if fd >= 0 {
                // The descriptors are this pipe's, closed once, here.
                platform::close(fd);
            }
        }
    }
}
