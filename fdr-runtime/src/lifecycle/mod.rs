//! A recording's life as the program sees it: [`start`](recorder::start), the recorder's
//! snapshots and finish, the start from `FDR_OPTIONS` and the logs at exit and on panic, the
//! background writer that takes trigger and signal snapshots, and the snapshot protocol (a
//! window written as a log, with the profile beside it and the exporter told).

#[cfg(feature = "record")]
pub(crate) mod autostart;
#[cfg(feature = "record")]
pub(crate) mod background;
#[cfg(feature = "record")]
pub(crate) mod recorder;
#[cfg(feature = "record")]
pub(crate) mod snapshot;
pub(crate) mod stats;
