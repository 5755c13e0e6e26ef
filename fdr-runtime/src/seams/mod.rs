//! Where tests reach into the runtime without a cost to the recording path: values they inject
//! in place of the machine's (time, CPU, ids), and points where a unit test stops a thread in the
//! middle of an operation.

#[cfg(feature = "record")]
pub(crate) mod injected;
#[cfg(all(test, feature = "record"))]
pub(crate) mod stops;
