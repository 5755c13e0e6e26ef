//! One function checked against its options: the body split the way it is recorded, and its
//! descriptor. Runs in both modes, so a wrong annotation fails every build.

use proc_macro2::Span;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{Block, Error, Expr, ExprReturn, FnArg, Ident, Pat, Result, Signature, Stmt};

use super::model::{Body, Descriptor, FnName, TailBody, TailEnd};
use super::name::Name;
use super::options::{Keyed, LogArgs, Options};

/// Checks the function `sig` with body `block` against `options`, and plans its recording.
/// `derived` is its name unless `name = "..."` gives one.
pub fn plan(
    sig: &Signature,
    block: Block,
    options: &Options,
    derived: FnName,
) -> Result<(Body, Descriptor)> {
    if let Some(constness) = &sig.constness {
        return Err(Error::new(
            constness.span,
            "`#[instrument_fdr]` cannot record a `const fn`: it may run at compile time, where nothing can be recorded; remove the attribute or the `const`",
        ));
    }
    let args = match &options.log_args {
        None => Vec::new(),
        Some(Keyed { value, .. }) => logged_args(sig, value)?,
    };
    let body = match (sig.asyncness, options.tail) {
        (Some(_), Some(tail)) => {
            return Err(Error::new(
                tail,
                "`tail` does not apply to an `async fn`: its body runs across polls, each recorded as a call; remove `tail`",
            ))
        }
        (Some(_), None) => Body::Async(block),
        (None, Some(tail)) => Body::Tail(split_tail(block, tail)?),
        (None, None) => Body::Sync(block),
    };
    let name = match &options.name {
        Some(given) => FnName::Known(Name::verbatim(&given.value.value())),
        None => derived,
    };
    let descriptor = Descriptor {
        name,
        args,
        at: sig.ident.span(),
        trigger: options.trigger.as_ref().map(|t| t.value.limit),
    };
    Ok((body, descriptor))
}

/// The names `log_args` records, checked against the signature: each one a parameter binds,
/// by its plain name (`id: u64`) or inside its pattern (`Path(id): Path<u64>`,
/// `Query(q)`, `(a, b)`, `Point { x, y }`), as the body sees it.
fn logged_args(sig: &Signature, log_args: &LogArgs) -> Result<Vec<Ident>> {
    let mut named: Vec<&Ident> = Vec::new();
    for arg in &sig.inputs {
        if let FnArg::Typed(t) = arg {
            bindings(&t.pat, &mut named);
        }
    }
    let listed = match log_args {
        LogArgs::Inherited => return Ok(named.into_iter().cloned().collect()),
        LogArgs::All if named.is_empty() => {
            return Err(Error::new(
                sig.ident.span(),
                format!(
                    "`log_args` finds nothing to log: the parameters of `{}` bind no name; remove \
                     `log_args`, or bind the value to log (`Path(id): Path<u64>` binds `id`)",
                    sig.ident
                ),
            ))
        }
        LogArgs::All => return Ok(named.into_iter().cloned().collect()),
        LogArgs::Listed(listed) => listed,
    };
    listed
        .iter()
        .map(|arg| {
            if arg == "self" {
                return Err(Error::new(
                    arg.span(),
                    "`log_args` cannot log `self`; list parameters only, or pass the value to log as a parameter",
                ));
            }
            let Some(param) = named.iter().find(|n| n.unraw() == arg.unraw()) else {
                let known = if named.is_empty() {
                    format!("the parameters of `{}` bind no name", sig.ident)
                } else {
                    let list: Vec<String> = named.iter().map(|n| format!("`{n}`")).collect();
                    format!("its parameters bind {}", list.join(", "))
                };
                return Err(Error::new(
                    arg.span(),
                    format!("`{arg}` is not a parameter of `{}`; {known}", sig.ident),
                ));
            };
            let mut ident = (*param).clone();
            ident.set_span(arg.span());
            Ok(ident)
        })
        .collect()
}

/// The names `pat` binds, in order: a plain name, and those inside a tuple, tuple struct,
/// struct, slice or reference pattern (the first alternative of an `|`, which binds the same).
fn bindings<'a>(pat: &'a Pat, out: &mut Vec<&'a Ident>) {
    match pat {
        Pat::Ident(p) => {
            out.push(&p.ident);
            if let Some((_, sub)) = &p.subpat {
                bindings(sub, out);
            }
        }
        Pat::Tuple(p) => p.elems.iter().for_each(|e| bindings(e, out)),
        Pat::TupleStruct(p) => p.elems.iter().for_each(|e| bindings(e, out)),
        Pat::Struct(p) => p.fields.iter().for_each(|f| bindings(&f.pat, out)),
        Pat::Slice(p) => p.elems.iter().for_each(|e| bindings(e, out)),
        Pat::Reference(p) => bindings(&p.pat, out),
        Pat::Paren(p) => bindings(&p.pat, out),
        Pat::Type(p) => bindings(&p.pat, out),
        Pat::Or(p) => {
            if let Some(first) = p.cases.first() {
                bindings(first, out);
            }
        }
        _ => {}
    }
}

/// Splits a `tail` body at its final call, `call(..)` as the final expression or
/// `return call(..)`; `tail` is the keyword's span.
fn split_tail(mut block: Block, tail: Span) -> Result<TailBody> {
    let Some(last) = block.stmts.pop() else {
        return Err(no_final_call("nothing", &Ident::new("tail", tail)));
    };
    let (end, call) = take_final_call(last)?;
    Ok(TailBody { block, end, call })
}

fn take_final_call(last: Stmt) -> Result<(TailEnd, Expr)> {
    let Stmt::Expr(expr, semi) = last else {
        return Err(no_final_call("a statement", &last));
    };
    match expr {
        Expr::Call(_) | Expr::MethodCall(_) if semi.is_none() => Ok((TailEnd::Value, expr)),
        Expr::Return(ExprReturn {
            attrs,
            return_token,
            expr: Some(call),
        }) if matches!(*call, Expr::Call(_) | Expr::MethodCall(_)) => Ok((
            TailEnd::Return {
                attrs,
                return_token,
                semi,
            },
            *call,
        )),
        Expr::Group(group) => take_final_call(Stmt::Expr(*group.expr, semi)),
        other if semi.is_some() => Err(no_final_call("a statement", &Stmt::Expr(other, semi))),
        other => Err(no_final_call("an expression that is not a call", &other)),
    }
}

fn no_final_call(what: &str, at: &dyn ToTokens) -> Error {
    Error::new_spanned(
        at,
        format!("`tail` needs the body to end with a call, such as `next(x)` or `self.next(x)`, but it ends with {what}; end the body with the call, or remove `tail`"),
    )
}
