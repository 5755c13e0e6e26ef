//! Waking the background writer: a non-blocking pipe, whose write end any thread may poke, in a
//! signal handler too (`write` is async-signal-safe), and whose read end the writer polls.

use std::sync::atomic::{AtomicI32, Ordering};

pub(crate) struct Wakeup {
    read: AtomicI32,
    write: AtomicI32,
}

impl Wakeup {
    /// A pipe, or none (the writer then polls on its timer alone).
    pub(crate) fn new() -> Wakeup {
        let mut fds = [-1; 2];
        // SAFETY: `fds` is a valid array of two descriptors for pipe2 to fill.
        let ok = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } == 0;
        if !ok {
            fds = [-1, -1];
        }
        Wakeup {
            read: AtomicI32::new(fds[0]),
            write: AtomicI32::new(fds[1]),
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
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut p, 1, timeout_ms) };
        let mut buf = [0u8; 64];
        // SAFETY: reads into a local buffer of the given length; the fd is non-blocking.
        while unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
    }
}

/// Writes one byte to `fd`, keeping `errno` as it was (for a signal handler).
pub(crate) fn poke(fd: i32) {
    if fd < 0 {
        return;
    }
    // SAFETY: errno is this thread's; the write is of one byte from a local.
    unsafe {
        let errno = *libc::__errno_location();
        let byte = 1u8;
        libc::write(fd, (&byte as *const u8).cast(), 1);
        *libc::__errno_location() = errno;
    }
}

impl Drop for Wakeup {
    fn drop(&mut self) {
        for fd in [
            self.read.load(Ordering::Relaxed),
            self.write.load(Ordering::Relaxed),
        ] {
            if fd >= 0 {
                // SAFETY: the descriptors are this pipe's and closed once.
                unsafe { libc::close(fd) };
            }
        }
    }
}
