//! `FDR_OPTIONS`: the settings of a recording written as space-separated `key=value` words, for
//! turning recording on without touching code, read into a `Config` (whose type, defaults and
//! checks are `config`'s).
//!
//! The words are read one by one, each by the reader of its group: what is recorded and where
//! ([`read_recording`]), when a window is written by itself ([`read_trigger`]), profile mode
//! ([`read_profile`]), and the OpenTelemetry collector ([`read_otlp`]).

use std::path::PathBuf;
use std::time::Duration;

use crate::config::ranges::{self, Range};
use crate::config::{Clock, Config, Limit, Mode, Signal, Trigger};
use crate::Error;

impl Config {
    /// Reads `FDR_OPTIONS`. `Ok(None)` when it is not set. Warnings (a key given twice) go to
    /// standard error. A program that starts its own recorder with `start` records with the
    /// configuration it gives, and `FDR_OPTIONS` is ignored (with a line on stderr) unless that
    /// configuration comes from here.
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
        let mut c = Config::default();
        let mut seen: Vec<String> = Vec::new();
        let mut warnings = Vec::new();
        for word in split_options(options)? {
            // A header value with a space, unquoted, splits into words that must not be
            // quoted back in a message: they may be part of an API key.
            let after_headers = seen.iter().any(|k| k == "otlp_headers");
            let item = Item::split(&word, after_headers)?;
            warnings.extend(repeated(&mut seen, &item));
            let read = read_recording(&mut c, &item)?
                || read_trigger(&mut c, &item)?
                || read_profile(&mut c, &item)?
                || read_otlp(&mut c, &item)?;
            if !read {
                return Err(if after_headers {
                    unknown_after_headers()
                } else {
                    item.bad(format!("unknown key; keys are {}", keys()))
                });
            }
        }
        warnings.extend(profile_off_unheeded(&c, &seen));
        c.validate()?;
        Ok((c, warnings))
    }
}

/// One `key=value` word of `FDR_OPTIONS`. Its errors name the key and end with the key's form
/// and default ([`option_error`](crate::config::option_error)).
struct Item<'a> {
    key: &'a str,
    value: &'a str,
}

impl<'a> Item<'a> {
    /// `word` split at its first `=`; `after_headers`: an `otlp_headers` came before, so a word
    /// without `=` may be part of a secret and is not shown.
    fn split(word: &'a str, after_headers: bool) -> Result<Item<'a>, Error> {
        match word.split_once('=') {
            Some((key, value)) => Ok(Item { key, value }),
            None if after_headers => Err(unknown_after_headers()),
            None => Err(Error::Config {
                key: word.to_string(),
                message: format!(
                    "expected key=value, found `{word}`; keys are {} (a value with spaces goes \
                     in quotes: out=\"my logs/app.fdr\")",
                    keys()
                ),
            }),
        }
    }

    fn bad(&self, message: String) -> Error {
        crate::config::option_error(self.key, message)
    }

    fn number(&self, what: &str) -> Result<u64, Error> {
        self.value
            .parse::<u64>()
            .map_err(|_| self.bad(format!("expected {what}, found `{}`", self.value)))
    }

    /// A number in `range`, else an error that it is out of range (which the key's words, from
    /// the same range, follow).
    fn in_range(&self, what: &str, range: Range) -> Result<u64, Error> {
        let n = self.number(what)?;
        if range.contains(n) {
            Ok(n)
        } else {
            Err(self.bad(format!("{n} is out of range")))
        }
    }

    /// A share of CPU time in percent (`0.5`, `2`, `1%`), 0.0001 to 100, or `off`: in
    /// millionths.
    fn budget(&self) -> Result<Option<u32>, Error> {
        if self.value == "off" {
            return Ok(None);
        }
        let text = self.value.strip_suffix('%').unwrap_or(self.value);
        let percent: f64 = text.parse().map_err(|_| {
            self.bad(format!(
                "expected a percentage of CPU time such as 1 or 0.5, or off, found `{}`",
                self.value
            ))
        })?;
        if !(percent.is_finite() && (0.0001..=100.0).contains(&percent)) {
            return Err(self.bad(format!(
                "{} is out of range: a budget is a percentage of CPU time above 0 (at least \
                 0.0001) and at most 100, or off",
                self.value
            )));
        }
        Ok(Some((percent * 10_000.0).round() as u32))
    }

    fn on_off(&self) -> Result<bool, Error> {
        match self.value {
            "on" => Ok(true),
            "off" => Ok(false),
            v => Err(self.bad(format!("expected `on` or `off`, found `{v}`"))),
        }
    }

    /// The value, which must not be empty (`what` it should have been).
    fn given(&self, what: &str) -> Result<&'a str, Error> {
        if self.value.is_empty() {
            return Err(self.bad(format!("expected {what}, found nothing")));
        }
        Ok(self.value)
    }
}

/// The keys `FDR_OPTIONS` knows, for messages about a word that is none of them.
fn keys() -> String {
    crate::config::OPTIONS
        .iter()
        .map(|o| o.key)
        .collect::<Vec<_>>()
        .join(", ")
}

fn unknown_after_headers() -> Error {
    crate::config::option_error(
        "otlp_headers",
        "a word after otlp_headers= is not an option: a header value with spaces goes in quotes \
         (otlp_headers=\"NAME=VALUE\") or writes each space as %20"
            .into(),
    )
}

/// The warning for a key given before (`trigger` adds up instead, so never), else notes the key
/// in `seen`.
fn repeated(seen: &mut Vec<String>, item: &Item) -> Option<String> {
    let key = item.key;
    if key == "trigger" || !seen.iter().any(|k| k == key) {
        seen.push(key.to_string());
        return None;
    }
    let shown = if key == "otlp_headers" {
        " (not shown: headers may hold secrets)".to_string()
    } else {
        format!(", `{}`,", item.value)
    };
    Some(format!(
        "option `{key}` is given more than once in FDR_OPTIONS; the last value{shown} is used"
    ))
}

/// `profile=off` beside `mode=profile`, which keeps a profile anyway.
fn profile_off_unheeded(c: &Config, seen: &[String]) -> Option<String> {
    (c.mode == Mode::Profile && !c.profile && seen.iter().any(|k| k == "profile")).then(|| {
        "`mode=profile` keeps a profile and no window, so `profile=off` has no effect; for a \
         window without a profile, use mode=ring (the default)"
            .to_string()
    })
}

/// What is recorded and where it is kept: buffers, threshold, mode, clock, culling, the log's
/// path and the crash box. False for a key of another group.
fn read_recording(c: &mut Config, item: &Item) -> Result<bool, Error> {
    let value = item.value;
    match item.key {
        "buffer_size" => c.buffer_size = item.number("a number of bytes")? as usize,
        "buffer_count" => c.buffer_count = item.number("a number of buffers")? as usize,
        "threshold_us" => {
            c.threshold = Duration::from_micros(item.number("a whole number of microseconds")?)
        }
        "mode" => {
            c.mode = match value {
                "ring" => Mode::Ring,
                "fill" => Mode::Fill,
                "profile" => Mode::Profile,
                "record+profile" => {
                    c.profile = true;
                    Mode::Ring
                }
                _ => {
                    return Err(item.bad(format!(
                        "expected `ring`, `fill`, `profile` or `record+profile`, found `{value}`"
                    )))
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
                    return Err(item.bad(format!(
                        "expected `auto`, `rdtscp`, `rdtsc` or `monotonic`, found `{value}`"
                    )))
                }
            }
        }
        "cull" => c.cull = item.on_off()?,
        "budget" => c.budget_ppm = item.budget()?,
        "cull_memory" => c.cull_memory = item.on_off()?,
        "cull_after" => {
            c.cull_after = item.in_range("a number of calls", ranges::CULL_AFTER)? as u32
        }
        "out" => c.out = Some(PathBuf::from(item.given("a file path")?)),
        "crash_dir" => {
            c.crash_dir = match value {
                "" => return Err(item.bad("expected a directory or off, found nothing".into())),
                "off" => crate::config::CrashDir::Off,
                dir => crate::config::CrashDir::Dir(PathBuf::from(dir)),
            };
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// When a window is written by itself: triggers, their cooldown and cap, the signal, and the
/// age a log keeps. False for a key of another group.
fn read_trigger(c: &mut Config, item: &Item) -> Result<bool, Error> {
    let value = item.value;
    match item.key {
        "trigger" => c.triggers.push(trigger(item)?),
        "long_poll" => {
            c.long_poll = match value {
                "off" | "0" => None,
                _ => Some(
                    parse_duration(value)
                        .map_err(|m| item.bad(format!("{m}; or `off` for no long-poll trigger")))?,
                ),
            }
        }
        "trigger_cooldown_ms" => {
            c.trigger_cooldown =
                Duration::from_millis(item.number("a whole number of milliseconds")?)
        }
        "max_snapshots" => {
            c.max_snapshots = u32::try_from(item.number("a number of snapshot files")?)
                .map_err(|_| item.bad(format!("{value} is too many; use at most {}", u32::MAX)))?
        }
        "signal" => {
            c.signal = Some(match value.trim_start_matches("SIG") {
                "USR1" | "usr1" => Signal::Usr1,
                "USR2" | "usr2" => Signal::Usr2,
                _ => return Err(item.bad(format!("expected `USR1` or `USR2`, found `{value}`"))),
            })
        }
        "max_age_ms" => {
            let ms = item.number("a whole number of milliseconds")?;
            if ms == 0 {
                return Err(
                    item.bad("an age of 0 keeps nothing; give a number of milliseconds".into())
                );
            }
            c.max_age = Some(Duration::from_millis(ms));
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// A `trigger=` value: `PATTERN:LIMIT`, or a learned limit ([`auto_trigger`]).
fn trigger(item: &Item) -> Result<Trigger, Error> {
    let value = item.value;
    if let Some((pattern, limit)) = auto_trigger(value).map_err(|m| item.bad(m))? {
        return Ok(Trigger { pattern, limit });
    }
    // The limit follows the last `:` that is not half of a path's `::`.
    let colon = value
        .char_indices()
        .rev()
        .find(|&(i, c)| c == ':' && !value[..i].ends_with(':') && !value[i + 1..].starts_with(':'))
        .map(|(i, _)| i);
    let Some((pattern, limit)) = colon.map(|i| (&value[..i], &value[i + 1..])) else {
        return Err(item.bad(format!(
            "`{value}` has no limit: a trigger is PATTERN:LIMIT, the limit after a single `:` \
             (`{value}:50ms`)"
        )));
    };
    if pattern.is_empty() {
        return Err(item.bad(format!(
            "the pattern before `:` is empty in `{value}`; name a function, `*` matching any run \
             of characters"
        )));
    }
    let limit = parse_duration(limit).map_err(|m| item.bad(format!("{m} in `{value}`")))?;
    Ok(Trigger {
        pattern: pattern.to_string(),
        limit: Limit::After(limit),
    })
}

/// Profile mode's settings beside `mode`: a profile with a window, its size, per thread or
/// merged. False for a key of another group.
fn read_profile(c: &mut Config, item: &Item) -> Result<bool, Error> {
    match item.key {
        "profile" => c.profile = item.on_off()?,
        "profile_threads" => c.profile_threads = item.on_off()?,
        "profile_nodes" => {
            c.profile_nodes = item.in_range("a number of nodes", ranges::PROFILE_NODES)? as u32
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Sending windows to an OpenTelemetry collector. False for a key of another group.
fn read_otlp(c: &mut Config, item: &Item) -> Result<bool, Error> {
    let (o, value) = (&mut c.otlp, item.value);
    match item.key {
        "otlp_endpoint" => o.endpoint = Some(item.given("a URL")?.to_string()),
        "service_name" => o.service_name = Some(item.given("a name")?.to_string()),
        "otlp_only" => o.only = item.on_off()?,
        "otlp_queue" => o.queue = item.in_range("a number of windows", ranges::OTLP_QUEUE)? as u32,
        "otlp_max_spans" => {
            o.max_spans = item.in_range("a number of spans", ranges::OTLP_MAX_SPANS)? as u32
        }
        "otlp_timeout" => o.timeout = Some(parse_duration(value).map_err(|m| item.bad(m))?),
        "otlp_headers" => {
            let list = fdr_format::key_values::parse(value).map_err(|e| item.bad(e.to_string()))?;
            o.headers = Some(crate::config::Secrets(list));
        }
        "otlp_ca" => o.ca = Some(PathBuf::from(item.given("a file path")?)),
        "otlp_compression" => {
            o.gzip = match value {
                "gzip" => Some(true),
                "none" => Some(false),
                _ => return Err(item.bad(format!("expected `gzip` or `none`, found `{value}`"))),
            }
        }
        "otlp_retry_for" => {
            o.retry_for = fdr_format::duration::parse(value)
                .map(Duration::from_nanos)
                .map_err(|e| item.bad(e.to_string()))?
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Reads a slow-call limit: a duration in the grammar of `fdr_format::duration`, shared with
/// the attribute and the `fdr` command (`50ms`, `1.5ms`, `250us`, `2s`, `1m`), above zero.
///
/// ```
/// # use std::time::Duration;
/// assert_eq!(fdr_runtime::parse_duration("50ms"), Ok(Duration::from_millis(50)));
/// assert_eq!(fdr_runtime::parse_duration("1.5ms"), Ok(Duration::from_micros(1500)));
/// assert!(fdr_runtime::parse_duration("-3ms").is_err());
/// assert!(fdr_runtime::parse_duration("0ms").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    match fdr_format::duration::parse(text) {
        Ok(0) => Err(format!(
            "a limit of 0 (`{text}`) is passed by every call; write the duration a call must exceed, {}",
            fdr_format::duration::FORM
        )),
        Ok(nanos) => Ok(Duration::from_nanos(nanos)),
        Err(e) => Err(e.to_string()),
    }
}

/// Reads a trigger whose limit is learned, `PATTERN:auto` or `PATTERN:auto:k=K`: the pattern
/// and the limit, `None` if `value` is not one, or what is wrong with it.
fn auto_trigger(value: &str) -> Result<Option<(String, Limit)>, String> {
    // The separator is a single `:`, not half of a path's `::` (`app::auto:5ms` is a function
    // named `auto` with a written limit).
    let Some(at) = value
        .rfind(":auto")
        .filter(|&at| !value[..at].ends_with(':'))
    else {
        return Ok(None);
    };
    let (pattern, limit) = (&value[..at], &value[at + 1..]);
    let Some(k) = fdr_format::duration::parse_auto(limit) else {
        return Ok(None);
    };
    let k_tenths = k.map_err(|m| format!("{m} (in `{value}`)"))?;
    if pattern.is_empty() || pattern.ends_with(':') {
        return Err(format!(
            "the pattern before `:auto` is empty in `{value}`; name a function, `*` matching \
             any run of characters"
        ));
    }
    Ok(Some((pattern.to_string(), Limit::Auto { k_tenths })))
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
            ("trigger=foo", "trigger"),
            ("trigger=x:-3ms", "trigger"),
            ("trigger=x:3", "trigger"),
            ("trigger=:3ms", "trigger"),
            ("max_snapshots=lots", "max_snapshots"),
            ("long_poll=soon", "long_poll"),
            ("long_poll=-5ms", "long_poll"),
            ("trigger_cooldown_ms=1s", "trigger_cooldown_ms"),
            ("signal=HUP", "signal"),
            ("max_age_ms=0", "max_age_ms"),
            ("cull=maybe", "cull"),
            ("cull_after=0", "cull_after"),
            ("budget=lots", "budget"),
            ("budget=0", "budget"),
            ("budget=150", "budget"),
            ("out=\"open", "out"),
        ] {
            match Config::from_options(opts) {
                Err(Error::Config { key: k, .. }) => assert_eq!(k, key, "{opts}"),
                other => panic!("{opts}: {other:?}"),
            }
        }
    }

    #[test]
    fn profile_off_beside_mode_profile_says_which_wins() {
        for opts in ["mode=profile profile=off", "profile=off mode=profile"] {
            let (c, warnings) = Config::parse_options(opts).unwrap();
            assert_eq!(c.get_mode(), Mode::Profile, "{opts}");
            assert_eq!(warnings.len(), 1, "{opts}: {warnings:?}");
            assert!(
                warnings[0].contains("`profile=off` has no effect"),
                "{warnings:?}"
            );
        }
        for opts in [
            "mode=profile",
            "mode=ring profile=off",
            "mode=profile profile=on",
        ] {
            assert_eq!(
                Config::parse_options(opts).unwrap().1,
                Vec::<String>::new(),
                "{opts}"
            );
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

    #[test]
    fn long_poll_is_a_duration_or_off_and_on_by_default() {
        assert_eq!(
            Config::default().get_long_poll(),
            Some(Duration::from_millis(100))
        );
        let c = Config::from_options("long_poll=20ms").unwrap();
        assert_eq!(c.get_long_poll(), Some(Duration::from_millis(20)));
        assert!(
            c.to_options().contains("long_poll=20ms"),
            "{}",
            c.to_options()
        );
        let off = Config::from_options("long_poll=off").unwrap();
        assert_eq!(off.get_long_poll(), None);
        assert!(off.to_options().contains("long_poll=off"));
        // What a log records reads back as the same configuration.
        assert_eq!(Config::from_options(&c.to_options()).unwrap(), c);
        let e = Config::from_options("long_poll=soon")
            .unwrap_err()
            .to_string();
        assert!(e.contains("long_poll") && e.contains("off"), "{e}");
    }

    #[test]
    fn trigger_keys_are_read() {
        let (c, warnings) = Config::parse_options(
            "trigger=app::handle:50ms trigger=app::*:2s trigger_cooldown_ms=5 max_snapshots=3 \
             signal=USR2 max_age_ms=500 cull=off cull_after=7",
        )
        .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            c.get_triggers(),
            &[
                Trigger {
                    pattern: "app::handle".into(),
                    limit: Limit::After(Duration::from_millis(50))
                },
                Trigger {
                    pattern: "app::*".into(),
                    limit: Limit::After(Duration::from_secs(2))
                }
            ]
        );
        assert_eq!(c.get_trigger_cooldown(), Duration::from_millis(5));
        assert_eq!(c.get_max_snapshots(), 3);
        assert_eq!(c.get_signal(), Some(Signal::Usr2));
        assert_eq!(c.get_max_age(), Some(Duration::from_millis(500)));
        assert!(!c.get_cull());
        assert_eq!(c.get_cull_after(), 7);
    }
}

#[cfg(test)]
mod option_errors {
    use crate::{Config, Limit};

    fn error(options: &str) -> String {
        Config::parse_options(options).unwrap_err().to_string()
    }

    #[test]
    fn every_option_error_names_the_option_the_value_the_form_and_the_default() {
        assert_eq!(
            error("trigger=app::handle*"),
            "fdr: bad option `trigger`: `app::handle*` has no limit: a trigger is PATTERN:LIMIT, \
             the limit after a single `:` (`app::handle*:50ms`); write trigger=VALUE with VALUE \
             PATTERN:LIMIT, such as app::handle*:50ms, or PATTERN:auto, PATTERN:auto:k=5 for a \
             limit learned from the calls (repeatable) (default none)"
        );
        assert_eq!(
            error("buffer_size=12"),
            "fdr: bad option `buffer_size`: 12 bytes is out of range; write buffer_size=VALUE \
             with VALUE a number of bytes, 256 to 1073741824 (default 16384)"
        );
        assert_eq!(
            error("buffer_count=lots"),
            "fdr: bad option `buffer_count`: expected a number of buffers, found `lots`; write \
             buffer_count=VALUE with VALUE a number of buffers, 1 to 1048576 (default 512)"
        );
        assert_eq!(
            error("mode=circular"),
            "fdr: bad option `mode`: expected `ring`, `fill`, `profile` or `record+profile`, \
             found `circular`; write mode=VALUE with VALUE ring, fill, profile (call trees, no \
             window) or record+profile (ring and a profile) (default ring)"
        );
        assert_eq!(
            error("cull_after=0"),
            "fdr: bad option `cull_after`: 0 is out of range; write cull_after=VALUE with VALUE \
             a number of calls, 1 to 4294967295 (default 2000)"
        );
    }

    /// The words of every key that states a range are built from the range its check takes:
    /// both bounds are accepted, one past either is refused, and the refusal states that same
    /// range. (`buffer_size`'s words once said 64 MiB while the check took 1 GiB.) A range
    /// written into a key's words by hand is refused here too.
    #[test]
    fn every_stated_range_is_the_range_the_check_takes() {
        use crate::config::keys::Form;
        use crate::config::OPTIONS;
        let mut ranges = 0;
        for o in OPTIONS {
            let range = match &o.form {
                Form::Count(_, range) => *range,
                Form::Text(t) => {
                    let digits_to = t
                        .split(" to ")
                        .skip(1)
                        .any(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
                    assert!(!digits_to, "`{}` states a range by hand: {t}", o.key);
                    continue;
                }
            };
            ranges += 1;
            let words = o.form.text();
            for v in [range.min, range.max] {
                let opts = format!("{}={v}", o.key);
                if let Err(e) = Config::parse_options(&opts) {
                    panic!("{opts} is in the stated range ({words}) but refused: {e}");
                }
            }
            for v in [range.min.checked_sub(1), range.max.checked_add(1)]
                .into_iter()
                .flatten()
            {
                let e = error(&format!("{}={v}", o.key));
                assert!(e.contains("is out of range"), "{e}");
                assert!(e.contains(&words), "{e}");
            }
        }
        assert_eq!(ranges, 6, "the keys whose words state a range");
    }

    #[test]
    fn a_trigger_pattern_with_paths_keeps_them_and_reads_the_limit_after_the_last_colon() {
        let (c, _) =
            Config::parse_options("trigger=\"<app::Cache as app::Store>::get:1.5ms\"").unwrap();
        let t = &c.get_triggers()[0];
        assert_eq!(t.pattern, "<app::Cache as app::Store>::get");
        assert_eq!(
            t.limit,
            Limit::After(std::time::Duration::from_micros(1500))
        );
    }

    #[test]
    fn learned_triggers_are_read_with_their_k() {
        let (c, _) = Config::parse_options(
            "trigger=app::handle:auto trigger=\"<app::A as app::B>::get:auto:k=5\" \
             trigger=app::x:auto:k=2.5 trigger=app::auto:5ms trigger=app::autosave:auto",
        )
        .unwrap();
        let got: Vec<(String, String)> = c
            .get_triggers()
            .iter()
            .map(|t| (t.pattern.clone(), t.limit.to_string()))
            .collect();
        assert_eq!(
            got,
            [
                ("app::handle".to_string(), "auto:k=3".to_string()),
                (
                    "<app::A as app::B>::get".to_string(),
                    "auto:k=5".to_string()
                ),
                ("app::x".to_string(), "auto:k=2.5".to_string()),
                ("app::auto".to_string(), "5ms".to_string()),
                ("app::autosave".to_string(), "auto:k=3".to_string()),
            ]
        );
        for (bad, says) in [
            ("trigger=:auto", "the pattern before `:auto` is empty"),
            (
                "trigger=app::x:auto:k=0.5",
                "is not a number from 1 to 1000",
            ),
            (
                "trigger=app::x:auto:k=three",
                "is not a number from 1 to 1000",
            ),
            ("trigger=app::x:auto:5", "is not a learned limit"),
        ] {
            let e = Config::parse_options(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_readme_lists_every_option_with_the_defaults_of_the_code() {
        let readme = include_str!("../../../README.md");
        for o in crate::config::OPTIONS {
            assert!(
                readme.contains(&format!("`{}", o.key)),
                "README misses `{}`",
                o.key
            );
        }
        // The defaults the README states are Config::default()'s.
        let d = Config::default();
        assert_eq!(d.get_buffer_size(), 16 * 1024);
        assert!(readme.contains("512 buffers of 16 KiB"));
        assert_eq!(d.get_buffer_count(), 512);
    }
}
