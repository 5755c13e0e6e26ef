//! The attribute's arguments, parsed into a typed model before anything is expanded.

use proc_macro2::Span;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Error, Ident, LitStr, Result, Token};

const EXPECTED: &str = "expected one of: `name = \"...\"`, `log_args`, `log_args(a, b)`, `tail`, `trigger = \"50ms\"`, `trigger = \"auto\"`, `always`, `skip`";

/// What a trigger limit looks like, in every error about one.
const DURATION: &str = fdr_format::duration::FORM;

/// Everything `#[instrument_fdr(...)]` accepts, each option with the span it was written at.
#[derive(Default)]
pub struct Options {
    /// `name = "..."`: the name written to the function table instead of the derived one.
    pub name: Option<Keyed<LitStr>>,
    /// `log_args` or `log_args(a, b)`.
    pub log_args: Option<Keyed<LogArgs>>,
    /// `tail`: the span of the keyword.
    pub tail: Option<Span>,
    /// `trigger = "50ms"`: a call that lasts longer than this writes a snapshot.
    pub trigger: Option<Keyed<Trigger>>,
    /// `always`: record the function even when its body cannot take long (see `trivial.rs`).
    /// On a function annotated alone it changes nothing. The span of the keyword.
    pub always: Option<Span>,
    /// `skip`: the span of the keyword. Never set together with `always`.
    pub skip: Option<Span>,
}

/// A slow-call limit, `trigger = "50ms"` or `trigger = "auto"`.
#[derive(Clone)]
pub struct Trigger {
    pub limit: Limit,
    /// The string as written, which errors about the option quote.
    pub lit: LitStr,
}

/// How long a call may last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// In nanoseconds: never zero.
    Nanos(u64),
    /// Learned: `k` (in tenths) times the function's running p99.
    Auto { k_tenths: u32 },
}

/// An option's value and where its keyword was written: errors about the option as a whole
/// point at the keyword, errors about its value at the value's own span.
#[derive(Clone)]
pub struct Keyed<T> {
    pub key: Span,
    pub value: T,
}

/// Which arguments `log_args` records.
#[derive(Clone)]
pub enum LogArgs {
    /// Bare `log_args` on a function: every name its parameters bind, plain (`id: u64`) or in a
    /// pattern (`Path(id): Path<u64>`); a function that binds none is an error.
    All,
    /// A block's bare `log_args`, passed down to each of its methods: every name a method's
    /// parameters bind (a method that binds none logs nothing).
    Inherited,
    /// `log_args(a, b)`: these parameters, in this order, each at the span of its mention.
    Listed(Vec<Ident>),
}

impl Options {
    /// The first option that only makes sense on a single function: its span and how it is
    /// written.
    pub fn single_function_option(&self) -> Option<(Span, String)> {
        if let Some(name) = &self.name {
            return Some((name.key, "name = \"...\"".to_owned()));
        }
        if let Some(Keyed {
            key,
            value: LogArgs::Listed(_),
        }) = &self.log_args
        {
            return Some((*key, "log_args(...)".to_owned()));
        }
        if let Some(tail) = self.tail {
            return Some((tail, "tail".to_owned()));
        }
        self.trigger.as_ref().map(|t| {
            (
                t.key,
                format!("trigger = {}", t.value.lit.to_token_stream()),
            )
        })
    }

    /// The first option that has no effect next to `skip`.
    pub fn recording_option(&self) -> Option<(Span, String)> {
        self.single_function_option().or(self
            .log_args
            .as_ref()
            .map(|l| (l.key, "log_args".to_owned())))
    }
}

impl Parse for Options {
    fn parse(input: ParseStream) -> Result<Self> {
        let mut options = Options::default();
        while !input.is_empty() {
            let key = input
                .call(Ident::parse_any)
                .map_err(|e| Error::new(e.span(), format!("unexpected token; {EXPECTED}")))?;
            let duplicate = || {
                Error::new(
                    key.span(),
                    format!("duplicate option `{key}`; remove this one"),
                )
            };
            match key.to_string().as_str() {
                "name" => {
                    if options.name.is_some() {
                        return Err(duplicate());
                    }
                    options.name = Some(Keyed {
                        key: key.span(),
                        value: parse_name(&key, input)?,
                    });
                }
                "log_args" => {
                    if options.log_args.is_some() {
                        return Err(duplicate());
                    }
                    options.log_args = Some(Keyed {
                        key: key.span(),
                        value: parse_log_args(&key, input)?,
                    });
                }
                "trigger" => {
                    if options.trigger.is_some() {
                        return Err(duplicate());
                    }
                    options.trigger = Some(Keyed {
                        key: key.span(),
                        value: parse_trigger(&key, input)?,
                    });
                }
                flag @ ("tail" | "always" | "skip") => {
                    let (slot, contrary) = match flag {
                        "tail" => (&mut options.tail, None),
                        "always" => (&mut options.always, options.skip),
                        _ => (&mut options.skip, options.always),
                    };
                    if slot.is_some() {
                        return Err(duplicate());
                    }
                    if contrary.is_some() {
                        return Err(Error::new(
                            key.span(),
                            "`always` and `skip` contradict each other: `always` keeps the function recorded, `skip` leaves it out; remove one",
                        ));
                    }
                    if input.peek(Token![=]) || input.peek(syn::token::Paren) {
                        return Err(Error::new(
                            input.span(),
                            format!("`{key}` takes no value; write just `{key}`"),
                        ));
                    }
                    *slot = Some(key.span());
                }
                unknown => {
                    let hint = match closest(unknown) {
                        Some(known) => format!("did you mean `{known}`? "),
                        None => String::new(),
                    };
                    return Err(Error::new(
                        key.span(),
                        format!("unknown option `{key}`; {hint}{EXPECTED}"),
                    ));
                }
            }
            if input.is_empty() {
                break;
            }
            input
                .parse::<Token![,]>()
                .map_err(|e| Error::new(e.span(), "expected `,` between options"))?;
        }
        Ok(options)
    }
}

fn parse_name(key: &Ident, input: ParseStream) -> Result<LitStr> {
    if !input.peek(Token![=]) {
        return Err(Error::new(
            key.span(),
            "`name` needs a value: `name = \"my_crate::my_function\"`",
        ));
    }
    input.parse::<Token![=]>()?;
    if input.is_empty() || input.peek(Token![,]) {
        return Err(Error::new(
            input.span(),
            "`name` needs a string literal: `name = \"my_crate::my_function\"`",
        ));
    }
    let value: syn::Expr = input.parse()?;
    match value {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(lit),
            ..
        }) => {
            if lit.value().is_empty() {
                return Err(Error::new(
                    lit.span(),
                    "`name` cannot be empty; write the name the function should have in logs",
                ));
            }
            Ok(lit)
        }
        other => Err(Error::new_spanned(
            other,
            "`name` takes a string literal: `name = \"my_crate::my_function\"`",
        )),
    }
}

fn parse_trigger(key: &Ident, input: ParseStream) -> Result<Trigger> {
    if !input.peek(Token![=]) {
        return Err(Error::new(
            key.span(),
            "`trigger` needs a limit: `trigger = \"50ms\"`",
        ));
    }
    input.parse::<Token![=]>()?;
    if input.is_empty() || input.peek(Token![,]) {
        return Err(Error::new(
            input.span(),
            "`trigger` needs a limit in a string literal: `trigger = \"50ms\"`",
        ));
    }
    let value: syn::Expr = input.parse()?;
    let lit = match value {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(lit),
            ..
        }) => lit,
        // `trigger = 50ms` (a literal with a suffix) or `trigger = 50`.
        syn::Expr::Lit(syn::ExprLit {
            lit: number @ (syn::Lit::Int(_) | syn::Lit::Float(_)),
            ..
        }) => {
            let written = number.to_token_stream().to_string();
            let suffix = match &number {
                syn::Lit::Int(int) => int.suffix(),
                syn::Lit::Float(float) => float.suffix(),
                _ => "",
            };
            let message = if suffix.is_empty() {
                format!(
                    "`trigger` needs a unit, in a string: `trigger = \"{written}ms\"`; a limit is {DURATION}"
                )
            } else {
                format!("write the limit as a string: `trigger = \"{written}\"`")
            };
            return Err(Error::new_spanned(number, message));
        }
        other => {
            return Err(Error::new_spanned(
                other,
                format!("`trigger` takes its limit as a string: `trigger = \"50ms\"`; a limit is {DURATION}"),
            ))
        }
    };
    let limit = match fdr_format::duration::parse_auto(&lit.value()) {
        Some(k) => k.map(|k_tenths| Limit::Auto { k_tenths }),
        None => duration_nanos(&lit.value()).map(Limit::Nanos),
    };
    match limit {
        Ok(limit) => Ok(Trigger { limit, lit }),
        Err(message) => Err(Error::new(lit.span(), message)),
    }
}

/// The nanoseconds of a trigger limit such as `50ms` (the grammar of `fdr_format::duration`,
/// shared with `FDR_OPTIONS` and the command line), or what is wrong with it.
fn duration_nanos(text: &str) -> std::result::Result<u64, String> {
    match fdr_format::duration::parse(text) {
        Ok(0) => Err(format!(
            "a trigger limit of zero would fire on every call; write the duration a call must exceed, {DURATION}"
        )),
        Ok(nanos) => Ok(nanos),
        Err(e) => Err(e.to_string()),
    }
}

fn parse_log_args(key: &Ident, input: ParseStream) -> Result<LogArgs> {
    if input.peek(Token![=]) {
        return Err(Error::new(
            input.span(),
            "`log_args` takes a list, not a value: `log_args` logs every argument, `log_args(a, b)` logs those",
        ));
    }
    if !input.peek(syn::token::Paren) {
        return Ok(LogArgs::All);
    }
    let content;
    let parens = syn::parenthesized!(content in input);
    let names: Punctuated<Ident, Token![,]> = content
        .parse_terminated(Ident::parse_any, Token![,])
        .map_err(|e| {
            Error::new(
                e.span(),
                "`log_args(...)` lists parameter names: `log_args(a, b)`",
            )
        })?;
    if names.is_empty() {
        return Err(Error::new(
            parens.span.join(),
            format!("`{key}()` lists no arguments; write `log_args(a, b)`, or `log_args` to log every argument"),
        ));
    }
    let names: Vec<Ident> = names.into_iter().collect();
    for (i, name) in names.iter().enumerate() {
        if names[..i].iter().any(|seen| seen == name) {
            return Err(Error::new(
                name.span(),
                format!("`{name}` is listed twice in `log_args`; remove this one"),
            ));
        }
    }
    Ok(LogArgs::Listed(names))
}

/// The option `unknown` is most likely a misspelling of, if any.
fn closest(unknown: &str) -> Option<&'static str> {
    ["name", "log_args", "tail", "trigger", "always", "skip"]
        .into_iter()
        .find(|known| edit_distance(unknown, known) <= 2)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::duration_nanos;

    #[test]
    fn trigger_limits_are_durations_above_zero() {
        assert_eq!(duration_nanos("50ms"), Ok(50_000_000));
        assert_eq!(duration_nanos("500us"), Ok(500_000));
        assert_eq!(duration_nanos("1.5ms"), Ok(1_500_000));
        assert_eq!(duration_nanos("2s"), Ok(2_000_000_000));
        assert_eq!(duration_nanos("1m"), Ok(60_000_000_000));
        assert_eq!(duration_nanos("7ns"), Ok(7));
        assert_eq!(duration_nanos("18446744073709551615ns"), Ok(u64::MAX));
        for (bad, says) in [
            ("", "no duration given"),
            ("ms", "is not a duration"),
            ("50", "has no unit"),
            ("50 ms", "has a space in it; write `50ms`"),
            ("0 ms", "has a space in it"),
            ("50sec", "unknown unit `sec`"),
            ("0.5ns", "not a whole number of nanoseconds"),
            ("1.ms", "is not a duration"),
            ("-3ms", "is negative"),
            ("+3ms", "is not a duration"),
            ("0s", "zero would fire on every call"),
            ("000ns", "zero would fire on every call"),
            ("18446744074s", "too long"),
            ("99999999999999999999999ms", "too long"),
        ] {
            let error = duration_nanos(bad).expect_err(bad);
            assert!(error.contains(says), "{bad:?} gave {error:?}");
        }
    }
}
