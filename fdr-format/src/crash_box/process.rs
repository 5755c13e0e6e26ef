//! Telling whether a box's process still runs, per system: the machine's boot id, and a
//! process's start time, which tells it from a later process given the same pid. Each is an
//! opaque number compared only with one read on the same machine.

#[cfg(target_os = "linux")]
mod os {
    /// `/proc/sys/kernel/random/boot_id`, a UUID in hex.
    pub(super) fn boot_id_text() -> Option<String> {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()
    }

    /// Field 22 of the main thread's `stat`: the process's start in clock ticks since boot.
    ///
    /// Read from `/proc/PID/task/PID/stat`, which holds the same field as `/proc/PID/stat`:
    /// qemu-user makes up the latter for the emulated process itself, with the moment qemu set
    /// the program up (tens of ticks late) as its start, so that a box's process read its own
    /// start differently from every other process, which then took it for dead.
    pub(crate) fn process_start(pid: i32) -> Option<u64> {
        Some(stat(pid)?.1)
    }

    /// Whether process `pid` runs (it exists and has not ended: a zombie, waiting for its
    /// parent to collect its status, has), and its start.
    pub(crate) fn running(pid: i32) -> Option<u64> {
        let (state, start) = stat(pid)?;
        (!matches!(state, 'Z' | 'X' | 'x')).then_some(start)
    }

    /// The state letter (field 3) and the start (field 22) of the main thread's `stat`.
    fn stat(pid: i32) -> Option<(char, u64)> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/stat")).ok()?;
        // The command name is in parentheses and may hold spaces: count fields after its end.
        let after = &stat[stat.rfind(')')? + 1..];
        let mut fields = after.split_whitespace();
        let state = fields.next()?.chars().next()?;
        Some((state, fields.nth(18)?.parse().ok()?))
    }

    pub(crate) fn sees_processes() -> bool {
        std::path::Path::new("/proc/self/stat").exists()
    }

    /// The inode of this process's PID namespace (`/proc/self/ns/pid` reads `pid:[N]`).
    pub(crate) fn pid_namespace() -> Option<u64> {
        let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
        let text = link.to_str()?;
        text.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
    }

    /// Whether process `pid` maps the file with device `dev` and inode `ino` (its
    /// `/proc/PID/maps`, whose lines name a mapping's device as `major:minor` in hex and its
    /// inode in decimal); `None` when the list cannot be read.
    pub(crate) fn maps_file(pid: i32, dev: u64, ino: u64) -> Option<bool> {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
        // glibc's encoding of a device number into major and minor.
        let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
        let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
        let want = (major, minor, ino);
        Some(maps.lines().any(|l| {
            let mut f = l.split_whitespace().skip(3);
            let (Some(d), Some(i)) = (f.next(), f.next()) else {
                return false;
            };
            let Some((ma, mi)) = d.split_once(':') else {
                return false;
            };
            let parsed = (
                u64::from_str_radix(ma, 16).ok(),
                u64::from_str_radix(mi, 16).ok(),
                i.parse::<u64>().ok(),
            );
            parsed == (Some(want.0), Some(want.1), Some(want.2))
        }))
    }
}

#[cfg(target_os = "macos")]
#[allow(unsafe_code)] // sysctl and proc_pidinfo are C calls; std asks neither
mod os {
    /// `kern.bootsessionuuid`, a UUID made at each boot.
    pub(super) fn boot_id_text() -> Option<String> {
        let mut buf = [0u8; 64];
        let mut len = buf.len();
        // SAFETY: the name is NUL-terminated; `buf` and `len` describe a writable buffer, which
        // sysctl fills with at most `len` bytes; no new value is set.
        let rc = unsafe {
            libc::sysctlbyname(
                c"kern.bootsessionuuid".as_ptr(),
                buf.as_mut_ptr().cast(),
                &mut len,
                std::ptr::null_mut(),
                0,
            )
        };
        (rc == 0).then(|| String::from_utf8_lossy(&buf[..len.min(buf.len())]).into_owned())
    }

    /// The process's start time in microseconds since the epoch (`proc_pidinfo`).
    pub(crate) fn process_start(pid: i32) -> Option<u64> {
        // SAFETY: a zeroed proc_bsdinfo is a valid value of this plain C struct.
        let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
        // SAFETY: `info` is writable and `size` bytes long, as the flavor asks.
        let n = unsafe {
            libc::proc_pidinfo(
                pid,
                libc::PROC_PIDTBSDINFO,
                0,
                (&mut info as *mut libc::proc_bsdinfo).cast(),
                size,
            )
        };
        (n == size).then(|| info.pbi_start_tvsec * 1_000_000 + info.pbi_start_tvusec)
    }

    pub(crate) fn sees_processes() -> bool {
        process_start(std::process::id() as i32).is_some()
    }

    /// Whether process `pid` runs (a zombie has ended), and its start.
    pub(crate) fn running(pid: i32) -> Option<u64> {
        // SAFETY: as in `process_start`.
        let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
        // SAFETY: `info` is writable and `size` bytes long, as the flavor asks.
        let n = unsafe {
            libc::proc_pidinfo(
                pid,
                libc::PROC_PIDTBSDINFO,
                0,
                (&mut info as *mut libc::proc_bsdinfo).cast(),
                size,
            )
        };
        // SZOMB in sys/proc.h.
        (n == size && info.pbi_status != 5)
            .then(|| info.pbi_start_tvsec * 1_000_000 + info.pbi_start_tvusec)
    }

    /// macOS has no PID namespaces: every process is in the one.
    pub(crate) fn pid_namespace() -> Option<u64> {
        None
    }

    /// Not asked on macOS: a box whose lock is free is its process's no more.
    pub(crate) fn maps_file(_: i32, _: u64, _: u64) -> Option<bool> {
        None
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod os {
    pub(super) fn boot_id_text() -> Option<String> {
        None
    }

    pub(crate) fn process_start(_: i32) -> Option<u64> {
        None
    }

    pub(crate) fn sees_processes() -> bool {
        false
    }

    pub(crate) fn running(_: i32) -> Option<u64> {
        None
    }

    pub(crate) fn pid_namespace() -> Option<u64> {
        None
    }

    pub(crate) fn maps_file(_: i32, _: u64, _: u64) -> Option<bool> {
        None
    }
}

pub(super) use os::{maps_file, pid_namespace, process_start, running, sees_processes};

/// The boot id as 16 bytes (zeros where the system does not say).
pub(super) fn boot_id() -> [u8; 16] {
    let mut id = [0u8; 16];
    if let Some(s) = os::boot_id_text() {
        let hex: Vec<u8> = s
            .bytes()
            .filter(u8::is_ascii_hexdigit)
            .map(|b| (b as char).to_digit(16).unwrap_or(0) as u8)
            .collect();
        for (i, pair) in hex.chunks(2).take(16).enumerate() {
            id[i] = pair[0] << 4 | pair.get(1).copied().unwrap_or(0);
        }
    }
    id
}
