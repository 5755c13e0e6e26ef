//! Recorder settings: a builder, and `FDR_OPTIONS` for turning recording on without code.

use std::path::PathBuf;
use std::time::Duration;

use crate::Error;

/// What to do when every buffer is in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// Recycle the oldest retired buffer: the recorder always holds the newest window.
    #[default]
    Ring,
    /// Stop recording once the pool is full, and count what could not be written.
    Fill,
}

/// Recorder settings.
///
/// ```
/// use std::time::Duration;
/// let c = fdr_runtime::Config::default()
///     .buffer_size(64 * 1024)
///     .buffer_count(128)
///     .threshold(Duration::from_micros(5))
///     .mode(fdr_runtime::Mode::Ring);
/// assert_eq!(c.get_buffer_count(), 128);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    buffer_size: usize,
    buffer_count: usize,
    threshold: Duration,
    mode: Mode,
    out: Option<PathBuf>,
}

/// Smallest buffer that holds a block preamble and a useful number of records.
pub const MIN_BUFFER_SIZE: usize = 256;
/// Largest buffer: offsets within a buffer are 32-bit.
pub const MAX_BUFFER_SIZE: usize = 1 << 30;

impl Default for Config {
    fn default() -> Self {
        Config {
            buffer_size: 64 * 1024,
            buffer_count: 128,
            threshold: Duration::ZERO,
            mode: Mode::Ring,
            out: None,
        }
    }
}

impl Config {
    /// Bytes per buffer, rounded down to a multiple of 8 when the recorder starts.
    pub fn buffer_size(mut self, bytes: usize) -> Self {
        self.buffer_size = bytes;
        self
    }

    /// Buffers in the pool.
    pub fn buffer_count(mut self, count: usize) -> Self {
        self.buffer_count = count;
        self
    }

    /// Calls that return sooner than this after their entry, with nothing recorded inside, are
    /// erased from the buffer rather than kept.
    pub fn threshold(mut self, threshold: Duration) -> Self {
        self.threshold = threshold;
        self
    }

    /// Ring (keep the newest window) or Fill (stop when full).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Where a recording started from `FDR_OPTIONS` writes its log at exit.
    pub fn out(mut self, path: impl Into<PathBuf>) -> Self {
        self.out = Some(path.into());
        self
    }

    /// Bytes per buffer.
    pub fn get_buffer_size(&self) -> usize {
        self.buffer_size
    }

    /// Buffers in the pool.
    pub fn get_buffer_count(&self) -> usize {
        self.buffer_count
    }

    /// The rewind threshold.
    pub fn get_threshold(&self) -> Duration {
        self.threshold
    }

    /// The mode.
    pub fn get_mode(&self) -> Mode {
        self.mode
    }

    /// The output path, if set.
    pub fn get_out(&self) -> Option<&std::path::Path> {
        self.out.as_deref()
    }

    /// Reads `FDR_OPTIONS`. `Ok(None)` when it is not set.
    ///
    /// ```
    /// std::env::remove_var("FDR_OPTIONS");
    /// assert!(fdr_runtime::Config::from_env().unwrap().is_none());
    /// ```
    pub fn from_env() -> Result<Option<Config>, Error> {
        match std::env::var("FDR_OPTIONS") {
            Ok(s) => Config::from_options(&s).map(Some),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(Error::Config {
                key: "FDR_OPTIONS".into(),
                message: "the variable is not valid UTF-8".into(),
            }),
        }
    }

    /// Parses space-separated `key=value` options: `buffer_size`, `buffer_count`,
    /// `threshold_us`, `mode=ring|fill`, `out=PATH`.
    ///
    /// ```
    /// let c = fdr_runtime::Config::from_options("buffer_count=4 mode=fill threshold_us=10").unwrap();
    /// assert_eq!(c.get_mode(), fdr_runtime::Mode::Fill);
    /// assert_eq!(c.get_threshold(), std::time::Duration::from_micros(10));
    /// ```
    pub fn from_options(options: &str) -> Result<Config, Error> {
        let mut c = Config::default();
        for item in options.split_whitespace() {
            let Some((key, value)) = item.split_once('=') else {
                return Err(Error::Config {
                    key: item.into(),
                    message: format!(
                        "expected key=value, found `{item}`; keys are buffer_size, buffer_count, \
                         threshold_us, mode and out"
                    ),
                });
            };
            let number = |what: &str| -> Result<u64, Error> {
                value.parse::<u64>().map_err(|_| Error::Config {
                    key: key.into(),
                    message: format!("expected {what}, found `{value}`"),
                })
            };
            match key {
                "buffer_size" => c.buffer_size = number("a number of bytes")? as usize,
                "buffer_count" => c.buffer_count = number("a number of buffers")? as usize,
                "threshold_us" => {
                    c.threshold = Duration::from_micros(number("a whole number of microseconds")?)
                }
                "mode" => {
                    c.mode = match value {
                        "ring" => Mode::Ring,
                        "fill" => Mode::Fill,
                        _ => {
                            return Err(Error::Config {
                                key: key.into(),
                                message: format!("expected `ring` or `fill`, found `{value}`"),
                            })
                        }
                    }
                }
                "out" => {
                    if value.is_empty() {
                        return Err(Error::Config {
                            key: key.into(),
                            message: "expected a file path, found nothing".into(),
                        });
                    }
                    c.out = Some(PathBuf::from(value));
                }
                _ => {
                    return Err(Error::Config {
                        key: key.into(),
                        message: "unknown key; keys are buffer_size, buffer_count, threshold_us, \
                                  mode and out"
                            .into(),
                    })
                }
            }
        }
        c.validate()?;
        Ok(c)
    }

    /// Checks the values against the recorder's limits.
    pub fn validate(&self) -> Result<(), Error> {
        if self.buffer_size < MIN_BUFFER_SIZE || self.buffer_size > MAX_BUFFER_SIZE {
            return Err(Error::Config {
                key: "buffer_size".into(),
                message: format!(
                    "{} bytes is out of range; use {MIN_BUFFER_SIZE} to {MAX_BUFFER_SIZE} \
                     (64 KiB is a good default)",
                    self.buffer_size
                ),
            });
        }
        if self.buffer_count == 0 || self.buffer_count > 1 << 20 {
            return Err(Error::Config {
                key: "buffer_count".into(),
                message: format!(
                    "{} buffers is out of range; use 1 to {} (at least one more than the number \
                     of recording threads)",
                    self.buffer_count,
                    1 << 20
                ),
            });
        }
        if self.buffer_size.checked_mul(self.buffer_count).is_none() {
            return Err(Error::Config {
                key: "buffer_count".into(),
                message: "buffer_size * buffer_count overflows".into(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_values_name_their_key() {
        for (opts, key) in [
            ("buffer_size=12x", "buffer_size"),
            ("buffer_count=-1", "buffer_count"),
            ("threshold_us=1.5", "threshold_us"),
            ("mode=circle", "mode"),
            ("colour=red", "colour"),
            ("out=", "out"),
            ("lonely", "lonely"),
            ("buffer_size=8", "buffer_size"),
            ("buffer_count=0", "buffer_count"),
        ] {
            match Config::from_options(opts) {
                Err(Error::Config { key: k, .. }) => assert_eq!(k, key, "{opts}"),
                other => panic!("{opts}: {other:?}"),
            }
        }
    }

    #[test]
    fn every_key_is_read() {
        let c = Config::from_options(
            " buffer_size=4096  buffer_count=3 threshold_us=7 mode=fill out=/tmp/x.fdr ",
        )
        .unwrap();
        assert_eq!(
            c,
            Config::default()
                .buffer_size(4096)
                .buffer_count(3)
                .threshold(Duration::from_micros(7))
                .mode(Mode::Fill)
                .out("/tmp/x.fdr")
        );
        assert_eq!(Config::from_options("").unwrap(), Config::default());
    }
}
