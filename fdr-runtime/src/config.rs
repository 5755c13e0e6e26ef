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

/// Where timestamps come from. See the table in the `clock` module's documentation.
///
/// ```
/// let c = fdr_runtime::Config::default().clock(fdr_runtime::Clock::Monotonic);
/// assert_eq!(c.get_clock(), fdr_runtime::Clock::Monotonic);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Clock {
    /// `rdtsc` where the CPU number can come from the rseq area, else `rdtscp`, else monotonic.
    #[default]
    Auto,
    /// `rdtscp`: the timestamp and the CPU number in one instruction (x86_64).
    Rdtscp,
    /// `rdtsc`, with the CPU number from the thread's rseq area (x86_64, glibc 2.35 or later).
    Rdtsc,
    /// The operating system's monotonic clock, in nanoseconds.
    Monotonic,
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
    clock: Clock,
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
            clock: Clock::Auto,
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

    /// Where timestamps come from. A source the machine cannot give makes `start` fail with an
    /// error that names the sources it can.
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The clock source asked for.
    pub fn get_clock(&self) -> Clock {
        self.clock
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

    /// Reads `FDR_OPTIONS`. `Ok(None)` when it is not set. Warnings (a key given twice) go to
    /// standard error.
    ///
    /// ```
    /// std::env::remove_var("FDR_OPTIONS");
    /// assert!(fdr_runtime::Config::from_env().unwrap().is_none());
    /// ```
    pub fn from_env() -> Result<Option<Config>, Error> {
        match std::env::var("FDR_OPTIONS") {
            Ok(s) => {
                let (config, warnings) = Config::parse_options(&s)?;
                for w in warnings {
                    eprintln!("fdr: warning: {w}");
                }
                Ok(Some(config))
            }
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(Error::Config {
                key: "FDR_OPTIONS".into(),
                message: "the variable is not valid UTF-8".into(),
            }),
        }
    }

    /// Parses space-separated `key=value` options: `buffer_size`, `buffer_count`,
    /// `threshold_us`, `mode=ring|fill`, `out=PATH`, `clock=auto|rdtscp|rdtsc|monotonic`. A
    /// value with spaces goes in quotes: `out="my logs/app.fdr"`. A key given twice keeps its
    /// last value.
    ///
    /// ```
    /// let c = fdr_runtime::Config::from_options("buffer_count=4 mode=fill threshold_us=10").unwrap();
    /// assert_eq!(c.get_mode(), fdr_runtime::Mode::Fill);
    /// assert_eq!(c.get_threshold(), std::time::Duration::from_micros(10));
    /// ```
    pub fn from_options(options: &str) -> Result<Config, Error> {
        Config::parse_options(options).map(|(c, _)| c)
    }

    /// [`Config::from_options`], with the warnings it would print.
    ///
    /// ```
    /// let (_, warnings) = fdr_runtime::Config::parse_options("mode=fill mode=ring").unwrap();
    /// assert_eq!(warnings.len(), 1);
    /// ```
    pub fn parse_options(options: &str) -> Result<(Config, Vec<String>), Error> {
        const KEYS: &str = "buffer_size, buffer_count, threshold_us, mode, out and clock";
        let mut c = Config::default();
        let mut seen: Vec<String> = Vec::new();
        let mut warnings = Vec::new();
        for item in split_options(options)? {
            let Some((key, value)) = item.split_once('=') else {
                return Err(Error::Config {
                    key: item.clone(),
                    message: format!(
                        "expected key=value, found `{item}`; keys are {KEYS} (a value with \
                         spaces goes in quotes: out=\"my logs/app.fdr\")"
                    ),
                });
            };
            if seen.iter().any(|k| k == key) {
                warnings.push(format!(
                    "option `{key}` is given more than once in FDR_OPTIONS; the last value, \
                     `{value}`, is used"
                ));
            } else {
                seen.push(key.to_string());
            }
            let bad = |message: String| Error::Config {
                key: key.into(),
                message,
            };
            let number = |what: &str| -> Result<u64, Error> {
                value
                    .parse::<u64>()
                    .map_err(|_| bad(format!("expected {what}, found `{value}`")))
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
                            return Err(bad(format!("expected `ring` or `fill`, found `{value}`")))
                        }
                    }
                }
                "clock" => {
                    c.clock = match value {
                        "auto" => Clock::Auto,
                        "rdtscp" => Clock::Rdtscp,
                        "rdtsc" => Clock::Rdtsc,
                        "monotonic" => Clock::Monotonic,
                        _ => {
                            return Err(bad(format!(
                                "expected `auto`, `rdtscp`, `rdtsc` or `monotonic`, found `{value}`"
                            )))
                        }
                    }
                }
                "out" => {
                    if value.is_empty() {
                        return Err(bad("expected a file path, found nothing".into()));
                    }
                    c.out = Some(PathBuf::from(value));
                }
                _ => return Err(bad(format!("unknown key; keys are {KEYS}"))),
            }
        }
        c.validate()?;
        Ok((c, warnings))
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

/// Splits options at white space, keeping quoted values (`out="a b.fdr"`) whole.
fn split_options(options: &str) -> Result<Vec<String>, Error> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for ch in options.chars() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => {
                quote = Some(ch);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started {
                    items.push(std::mem::take(&mut current));
                    started = false;
                }
            }
            (None, c) => {
                current.push(c);
                started = true;
            }
        }
    }
    if let Some(q) = quote {
        let key = current.split('=').next().unwrap_or("").to_string();
        return Err(Error::Config {
            key,
            message: format!("a value opened with {q} is never closed; close the quote"),
        });
    }
    if started {
        items.push(current);
    }
    Ok(items)
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
            ("clock=sundial", "clock"),
            ("out=\"open", "out"),
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
            " buffer_size=4096  buffer_count=3 threshold_us=7 mode=fill out=/tmp/x.fdr clock=rdtscp",
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
                .clock(Clock::Rdtscp)
        );
        assert_eq!(Config::from_options("").unwrap(), Config::default());
    }

    #[test]
    fn quoted_values_keep_their_spaces() {
        let c = Config::from_options("out=\"my logs/app.fdr\" mode='fill'").unwrap();
        assert_eq!(c.get_out(), Some(std::path::Path::new("my logs/app.fdr")));
        assert_eq!(c.get_mode(), Mode::Fill);
    }

    #[test]
    fn a_repeated_key_warns_and_keeps_the_last_value() {
        let (c, w) = Config::parse_options("mode=fill buffer_count=3 mode=ring").unwrap();
        assert_eq!(c.get_mode(), Mode::Ring);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("`mode`") && w[0].contains("`ring`"), "{w:?}");
    }

    #[test]
    fn a_space_in_an_unquoted_out_says_to_quote() {
        let e = Config::from_options("out=my logs/app.fdr").unwrap_err();
        assert!(e.to_string().contains("quote"), "{e}");
    }
}
