//! The recording path: what every hook runs, from the thread-local to the 8-byte record. The
//! hot path and its cold paths, the controller (what to write for each event) over the writer
//! (how words go into a buffer and are published), the rewind that erases short calls, the
//! culling of functions whose calls are always erased, async tasks, and a thread's state:
//! joining a recording, its buffer, leaving.

#[cfg(feature = "record")]
pub(crate) mod attach;
#[cfg(feature = "record")]
pub(crate) mod awaits;
#[cfg(feature = "record")]
pub(crate) mod controller;
#[cfg(feature = "record")]
pub(crate) mod cull;
#[cfg(feature = "record")]
pub(crate) mod hook_call;
#[cfg(feature = "record")]
pub(crate) mod hot_path;
#[cfg(feature = "record")]
pub(crate) mod rewind;
#[cfg(feature = "record")]
pub(crate) mod task;
#[cfg(feature = "record")]
pub(crate) mod thread_local;
#[cfg(feature = "record")]
pub(crate) mod thread_state;
#[cfg(feature = "record")]
pub(crate) mod writer;
