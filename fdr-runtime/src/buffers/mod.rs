//! The buffers threads record into: the pool (in the process's memory or in the crash box), the
//! free and retired queues, what an owner publishes for snapshots, and copying buffers while
//! their owners write. The crash box is the pool's file mapped shared, which outlives the
//! process.

#[cfg(feature = "record")]
pub(crate) mod copy;
#[cfg(feature = "record")]
pub(crate) mod crash_box;
#[cfg(feature = "record")]
pub(crate) mod pool;
#[cfg(feature = "record")]
pub(crate) mod published;
#[cfg(feature = "record")]
pub(crate) mod queue;
