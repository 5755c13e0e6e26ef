//! One function: its checks, its descriptor and the guard around its body.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::ext::IdentExt;
use syn::{Block, Error, Expr, FnArg, Ident, Pat, Result, Signature, Stmt};

use super::name::{Context, Name};
use super::options::{LogArgs, Options};

/// The parts of a free function, a method or a trait method that instrumenting touches.
pub struct FnItem<'a> {
    pub sig: &'a Signature,
    pub block: &'a mut Block,
}

/// Checks `options` against the function, in both modes: a wrong annotation fails every build.
pub fn check(f: &FnItem, options: &Options) -> Result<()> {
    if let Some(constness) = &f.sig.constness {
        return Err(Error::new(
            constness.span,
            "`#[instrument_fdr]` cannot record a `const fn`: it may run at compile time, where nothing can be recorded; remove the attribute or the `const`",
        ));
    }
    logged_args(f.sig, options)?;
    if let Some(tail) = options.tail {
        if f.sig.asyncness.is_some() {
            return Err(Error::new(
                tail,
                "`tail` does not apply to an `async fn`: its body runs across polls, each recorded as a call; remove `tail`",
            ));
        }
        tail_call(f.block, tail)?;
    }
    Ok(())
}

/// Replaces the body of `f` with the instrumented one.
pub fn instrument(f: &mut FnItem, options: &Options, context: &Context) {
    let sig = f.sig;
    let name = match &options.name {
        Some(lit) => Name::verbatim(&lit.value()),
        None => Name::of_function(context, &sig.ident),
    };
    let args = logged_args(sig, options).expect("checked before expanding");
    let arg_names = args.iter().map(|a| a.unraw().to_string());
    let kind = if sig.asyncness.is_some() {
        Ident::new("Async", Span::call_site())
    } else {
        Ident::new("Function", Span::call_site())
    };
    let at_fn = sig.ident.span();
    let file = quote_spanned!(at_fn=> ::core::file!());
    let line = quote_spanned!(at_fn=> ::core::line!());
    let desc = Ident::new("__FDR_FN", Span::call_site());
    let kind = quote!(::fdr::__private::FnKindTag::#kind);
    let descriptor = if options.name.is_none() && matches!(context, Context::Alone) {
        // Alone, the attribute cannot see whether this is a method, nor its type or trait. The
        // path of a function nested in it spells them (`std::any::type_name`), the way a
        // backtrace does; the name is taken from it when the table is written.
        let path = Ident::new("__fdr_path", Span::call_site());
        quote! {
            fn #path() -> &'static str {
                ::fdr::__private::type_name_of(#path)
            }
            #[::fdr::__private::linkme::distributed_slice(::fdr::__private::FUNCTIONS)]
            #[linkme(crate = ::fdr::__private::linkme)]
            static #desc: ::fdr::__private::FnDesc = ::fdr::__private::nested_desc(
                #name,
                #path,
                #file,
                #line,
                #kind,
                &[#(#arg_names),*],
            );
        }
    } else {
        quote! {
            #[::fdr::__private::linkme::distributed_slice(::fdr::__private::FUNCTIONS)]
            #[linkme(crate = ::fdr::__private::linkme)]
            static #desc: ::fdr::__private::FnDesc = ::fdr::__private::FnDesc::new(
                #name,
                #file,
                #line,
                #kind,
                &[#(#arg_names),*],
            );
        }
    };
    let arg_values = arg_values(&args);
    // Mixed-site hygiene: the body cannot see or shadow the guard.
    let guard = Ident::new("__fdr_guard", Span::mixed_site());
    let body = &mut *f.block;
    let new_body = if sig.asyncness.is_some() {
        let future = match arg_values {
            None => quote!(::fdr::__private::Instrumented::new(&#desc, async move #body)),
            Some(values) => quote!(
                ::fdr::__private::InstrumentedArgs::new(&#desc, #values, async move #body)
            ),
        };
        quote!({
            #descriptor
            #future.await
        })
    } else {
        if options.tail.is_some() {
            insert_tail_exit(body, &guard);
        }
        let enter = match arg_values {
            None => quote!(::fdr::__private::CallGuard::enter(&#desc)),
            Some(values) => quote!(::fdr::__private::CallGuard::enter_args(&#desc, &#values)),
        };
        quote!({
            #descriptor
            let #guard = #enter;
            #body
        })
    };
    *f.block = syn::parse2(new_body).expect("the instrumented body is a block");
}

/// The parameters `log_args` records, checked against the signature.
fn logged_args(sig: &Signature, options: &Options) -> Result<Vec<Ident>> {
    let named: Vec<&Ident> = sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(t) => match &*t.pat {
                Pat::Ident(p) => Some(&p.ident),
                _ => None,
            },
            FnArg::Receiver(_) => None,
        })
        .collect();
    match &options.log_args {
        None => Ok(Vec::new()),
        Some(LogArgs::All) => Ok(named.into_iter().cloned().collect()),
        Some(LogArgs::Listed(listed)) => {
            for arg in listed {
                if arg == "self" {
                    return Err(Error::new(
                        arg.span(),
                        "`log_args` cannot log `self`; list parameters only, or pass the value to log as a parameter",
                    ));
                }
                if !named.iter().any(|n| n.unraw() == arg.unraw()) {
                    let known = if named.is_empty() {
                        format!("`{}` has no parameter bound to a plain name", sig.ident)
                    } else {
                        let list: Vec<String> = named.iter().map(|n| format!("`{n}`")).collect();
                        format!("its parameters are {}", list.join(", "))
                    };
                    return Err(Error::new(
                        arg.span(),
                        format!("`{arg}` is not a parameter of `{}`; {known}", sig.ident),
                    ));
                }
            }
            // The parameter's own identifier (raw if it was written `r#type`), at the span of
            // its mention in `log_args`, where errors about it belong.
            Ok(listed
                .iter()
                .map(|arg| {
                    let param = named.iter().find(|n| n.unraw() == arg.unraw()).unwrap();
                    let mut ident = (*param).clone();
                    ident.set_span(arg.span());
                    ident
                })
                .collect())
        }
    }
}

/// `[u64; N]` of the logged arguments, converted through `LogArg`.
///
/// Each argument gets a marker type named after it, so a type that cannot be logged is reported
/// as "argument `x` cannot be logged" (see `fdr::__private::Unloggable`), at the argument's span.
fn arg_values(args: &[Ident]) -> Option<TokenStream> {
    if args.is_empty() {
        return None;
    }
    let markers = args
        .iter()
        .map(|a| quote_spanned!(a.span()=> #[allow(non_camel_case_types, dead_code)] enum #a {}));
    let values = args.iter().map(
        |a| quote_spanned!(a.span()=> (&::fdr::__private::ArgProbe::<_, #a>::new(&#a)).fdr_arg()),
    );
    Some(quote!({
        #[allow(unused_imports)]
        use ::fdr::__private::{ViaFallback as _, ViaLogArg as _};
        #(#markers)*
        [#(#values),*]
    }))
}

/// The body's final call, which `tail` records a tail exit before.
fn tail_call(block: &Block, tail: Span) -> Result<()> {
    let ends_with = |what: &str, at: &dyn quote::ToTokens| {
        Error::new_spanned(
            at,
            format!("`tail` needs the body to end with a call, such as `next(x)` or `self.next(x)`, but it ends with {what}; end the body with the call, or remove `tail`"),
        )
    };
    match block.stmts.last() {
        None => Err(ends_with("nothing", &Ident::new("tail", tail))),
        Some(Stmt::Expr(expr, semi)) => match final_call(expr, semi.is_some()) {
            Some(_) => Ok(()),
            None if semi.is_some() => Err(ends_with("a statement", block.stmts.last().unwrap())),
            None => Err(ends_with("an expression that is not a call", expr)),
        },
        Some(other) => Err(ends_with("a statement", other)),
    }
}

/// The call in `expr` that ends the body: `call(..)` as the final expression, or `return call(..)`.
fn final_call(expr: &Expr, with_semi: bool) -> Option<&Expr> {
    match expr {
        Expr::Call(_) | Expr::MethodCall(_) if !with_semi => Some(expr),
        Expr::Return(ret) => match ret.expr.as_deref() {
            Some(call @ (Expr::Call(_) | Expr::MethodCall(_))) => Some(call),
            _ => None,
        },
        Expr::Group(g) => final_call(&g.expr, with_semi),
        _ => None,
    }
}

fn insert_tail_exit(block: &mut Block, guard: &Ident) {
    let Some(Stmt::Expr(expr, semi)) = block.stmts.last_mut() else {
        unreachable!("checked before expanding")
    };
    let call = final_call_mut(expr, semi.is_some()).expect("checked before expanding");
    let original = std::mem::replace(call, Expr::Verbatim(TokenStream::new()));
    *call = syn::parse2(quote!({ #guard.tail(); #original })).expect("a block expression");
}

fn final_call_mut(expr: &mut Expr, with_semi: bool) -> Option<&mut Expr> {
    match expr {
        Expr::Call(_) | Expr::MethodCall(_) if !with_semi => Some(expr),
        Expr::Return(ret) => match ret.expr.as_deref_mut() {
            Some(call @ (Expr::Call(_) | Expr::MethodCall(_))) => Some(call),
            _ => None,
        },
        Expr::Group(g) => final_call_mut(&mut g.expr, with_semi),
        _ => None,
    }
}
