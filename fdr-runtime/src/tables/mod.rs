//! The process's two tables: functions (their static descriptors, the flags each carries for the
//! running recording and the sweeps that set them, their logged arguments) and threads (the
//! registry of those that record).

pub(crate) mod args;
#[cfg(feature = "record")]
pub(crate) mod flags;
pub(crate) mod functions;
#[cfg(feature = "record")]
pub(crate) mod threads;
