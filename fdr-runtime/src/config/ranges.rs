//! The accepted values of every numeric setting, defined once: its check ([`Config::validate`]
//! and the `FDR_OPTIONS` reader), and the words that state the range in its `FDR_OPTIONS`
//! help and errors, all take them from here, so the text cannot say another range than the
//! check allows.
//!
//! [`Config::validate`]: super::Config::validate

use super::settings::{MAX_BUFFER_SIZE, MAX_PROFILE_NODES, MIN_BUFFER_SIZE};

/// A setting's accepted values, `min` to `max` inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Range {
    pub min: u64,
    pub max: u64,
}

impl Range {
    /// Whether `v` is accepted.
    pub(crate) fn contains(&self, v: u64) -> bool {
        (self.min..=self.max).contains(&v)
    }

    /// The range in words: `256 to 1073741824`, or `at least 1` when only a type bounds it.
    pub(crate) fn text(&self) -> String {
        if self.max == u64::MAX {
            format!("at least {}", self.min)
        } else {
            format!("{} to {}", self.min, self.max)
        }
    }
}

/// `buffer_size`, in bytes: a block preamble and a useful number of records, up to a gibibyte.
pub(crate) const BUFFER_SIZE: Range = Range {
    min: MIN_BUFFER_SIZE as u64,
    max: MAX_BUFFER_SIZE as u64,
};

/// `buffer_count`.
pub(crate) const BUFFER_COUNT: Range = Range {
    min: 1,
    max: 1 << 20,
};

/// `profile_nodes`, call-tree nodes per thread.
pub(crate) const PROFILE_NODES: Range = Range {
    min: 1,
    max: MAX_PROFILE_NODES as u64,
};

/// `cull_after`, erased calls in a row.
pub(crate) const CULL_AFTER: Range = Range {
    min: 1,
    max: u32::MAX as u64,
};

/// `otlp_queue`, windows waiting to be sent.
pub(crate) const OTLP_QUEUE: Range = Range { min: 1, max: 1024 };

/// `otlp_max_spans`, spans per request.
pub(crate) const OTLP_MAX_SPANS: Range = Range {
    min: 1,
    max: u32::MAX as u64,
};
