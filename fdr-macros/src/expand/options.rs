//! The attribute's arguments, parsed into a typed model before anything is expanded.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Error, Ident, LitStr, Result, Token};

const EXPECTED: &str =
    "expected one of: `name = \"...\"`, `log_args`, `log_args(a, b)`, `tail`, `skip`";

/// Everything `#[instrument_fdr(...)]` accepts, each option with the span it was written at.
#[derive(Default)]
pub struct Options {
    /// `name = "..."`: the name written to the function table instead of the derived one.
    pub name: Option<Keyed<LitStr>>,
    /// `log_args` or `log_args(a, b)`.
    pub log_args: Option<Keyed<LogArgs>>,
    /// `tail`: the span of the keyword.
    pub tail: Option<Span>,
    /// `skip`: the span of the keyword.
    pub skip: Option<Span>,
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
    /// Bare `log_args`: every parameter bound to a plain name.
    All,
    /// `log_args(a, b)`: these parameters, in this order, each at the span of its mention.
    Listed(Vec<Ident>),
}

impl Options {
    /// The first option that only makes sense on a single function: its span and how it is
    /// written.
    pub fn single_function_option(&self) -> Option<(Span, &'static str)> {
        if let Some(name) = &self.name {
            return Some((name.key, "name = \"...\""));
        }
        if let Some(Keyed {
            key,
            value: LogArgs::Listed(_),
        }) = &self.log_args
        {
            return Some((*key, "log_args(...)"));
        }
        self.tail.map(|span| (span, "tail"))
    }

    /// The first option that has no effect next to `skip`.
    pub fn recording_option(&self) -> Option<(Span, &'static str)> {
        self.single_function_option()
            .or(self.log_args.as_ref().map(|l| (l.key, "log_args")))
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
                "tail" | "skip" => {
                    let slot = if key == "tail" {
                        &mut options.tail
                    } else {
                        &mut options.skip
                    };
                    if slot.is_some() {
                        return Err(duplicate());
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
    ["name", "log_args", "tail", "skip"]
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
