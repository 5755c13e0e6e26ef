//! An `async fn` turned into the plain `fn` rustc lowers it to, so that the expansion can make
//! the future, and so the task, when the function is called: `async fn f(args) -> T { body }`
//! becomes `fn f(args) -> impl Future<Output = T> { <the future> }`, whose future is an
//! `async move` block that begins by taking every argument in, as rustc's lowering does.
//!
//! What the `async fn` meant is kept:
//!
//! - Lifetimes: the `impl` is written here, in an edition 2024 crate, so it captures every
//!   lifetime in scope, elided ones included, as the `async fn`'s future did (an `impl Trait`
//!   takes the edition of the crate whose tokens wrote it).
//! - Arguments: each is moved into the future at the call, and dropped with the future or at
//!   the end of the body, in the order rustc drops them, even when the body does not use it. A
//!   parameter bound to a name (`x`, `mut x`, `ref x`, `x @ ..`) keeps the name in the signature
//!   and is bound again, by its pattern, at the start of the block; any other pattern (`_`,
//!   `(a, b)`, `S { .. }`) becomes `__fdr_argN` in the signature, invisible to the body
//!   (mixed-site hygiene), and the block binds the pattern from it. `self` cannot be bound
//!   again: the block borrows it once, so that it is captured whole (a field use alone would
//!   capture only the field).
//! - Types: the block's output is fixed to `T` before the body is checked, so that the body's
//!   value and its `return`s are coerced to `T` (`Box::new(closure)` to `Box<dyn Fn()>`), as in
//!   the `async fn`; an `impl Trait` in `T` is left to inference. A `T` of `!` is named through
//!   `fn() -> !`, the only place stable Rust names it.
//! - Temporaries of the body's final expression are dropped before the arguments: the block's
//!   braces are edition 2024 tokens, whose block tail is a scope of its own (rustc's lowering
//!   does the same).

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{FnArg, Ident, Pat, PatIdent, ReturnType, Signature, Type};

use super::private;

/// What the future's `async move` block begins with.
pub struct Lowered {
    /// Fixes the block's output to the `async fn`'s: an unreachable `return` of that type.
    pub output_hint: TokenStream,
    /// The arguments taken in, one `let` (or two) each, in parameter order.
    pub take_args: TokenStream,
    /// Each parameter that is a pattern binding names (`Path(id)`), now `__fdr_argN` in the
    /// signature: `let PATTERN = &__fdr_argN;`, which binds its names by reference at the call,
    /// where the logged arguments are read (before the block takes the argument in).
    pub bind_by_ref: TokenStream,
}

/// Turns the signature of an `async fn` into that of the plain function returning its future,
/// and gives the statements its `async move` block begins with.
pub fn lower(sig: &mut Signature) -> Lowered {
    sig.asyncness = None;
    let output = match &sig.output {
        ReturnType::Default => quote!(()),
        ReturnType::Type(_, ty) => nameable(ty),
    };
    let output_hint = output_hint(&sig.output);
    let arrow = match &sig.output {
        ReturnType::Default => Default::default(),
        ReturnType::Type(arrow, _) => *arrow,
    };
    // Call-site tokens are tokens of this crate's edition: the `impl` captures every lifetime.
    let future: Type = Type::Verbatim(quote!(impl ::core::future::Future<Output = #output>));
    sig.output = ReturnType::Type(arrow, Box::new(future));

    let mut take_args = TokenStream::new();
    let mut bind_by_ref = TokenStream::new();
    for (i, input) in sig.inputs.iter_mut().enumerate() {
        match input {
            FnArg::Receiver(receiver) => {
                // Borrowing `self` captures all of it (a mention of `self` with `let _ = self;`
                // would capture nothing); the borrow ends at once. The parameter's own `self`
                // token, so that it resolves to the parameter even inside a `macro_rules!`.
                let self_ = &receiver.self_token;
                take_args.extend(quote!(let _ = &#self_;));
            }
            FnArg::Typed(param) => {
                let attrs = &param.attrs;
                match &mut *param.pat {
                    // A name: kept, and bound again by the pattern as written.
                    Pat::Ident(named) => {
                        let pattern = named.clone();
                        let ident = named.ident.clone();
                        *named = PatIdent {
                            attrs: Vec::new(),
                            by_ref: None,
                            mutability: None,
                            ident: ident.clone(),
                            subpat: None,
                        };
                        take_args.extend(quote!(#(#attrs)* let #pattern = #ident;));
                    }
                    pat => {
                        let arg = Ident::new(&format!("__fdr_arg{i}"), Span::mixed_site());
                        let pattern = std::mem::replace(
                            pat,
                            Pat::Ident(PatIdent {
                                attrs: Vec::new(),
                                by_ref: None,
                                mutability: None,
                                ident: arg.clone(),
                                subpat: None,
                            }),
                        );
                        // Held until the block ends, as the parameter was.
                        take_args.extend(quote!(#(#attrs)* let #arg = #arg;));
                        if !matches!(pattern, Pat::Wild(_)) {
                            take_args.extend(quote!(#(#attrs)* let #pattern = #arg;));
                            let mut by_ref = pattern.clone();
                            ByReference.visit_pat_mut(&mut by_ref);
                            bind_by_ref.extend(quote!(
                                #[allow(unused_variables)]
                                let #by_ref = &#arg;
                            ));
                        }
                    }
                }
            }
        }
    }
    Lowered {
        output_hint,
        take_args,
        bind_by_ref,
    }
}

/// A pattern matched against a reference: its bindings lose `mut` and `ref`, so that each binds
/// by reference, through default binding modes, whatever its type.
struct ByReference;

impl VisitMut for ByReference {
    fn visit_pat_ident_mut(&mut self, p: &mut PatIdent) {
        p.mutability = None;
        p.by_ref = None;
        syn::visit_mut::visit_pat_ident_mut(self, p);
    }
}

/// `if let Some(r) = None::<T> { return r; }`: never runs, and makes `T` the block's output
/// before the body is checked (without it the output would be inferred from the body, and
/// nothing in the body would be coerced to `T`). Each `impl Trait` in `T` is `_`, as a turbofish
/// takes no `impl`.
fn output_hint(output: &ReturnType) -> TokenStream {
    let (ty, at) = match output {
        ReturnType::Default => (quote!(()), Span::call_site()),
        ReturnType::Type(_, ty) => {
            let at = ty.span();
            let mut ty = (**ty).clone();
            ImplAsInferred.visit_type_mut(&mut ty);
            (nameable(&ty), at)
        }
    };
    let ret = Ident::new("__fdr_ret", Span::mixed_site());
    // At the declared type, where rustc's "return type inferred to be `T` here" then points.
    let ret_at = Ident::new("__fdr_ret", Span::mixed_site().located_at(at));
    let return_ = quote_spanned!(at=> return #ret_at;);
    quote! {
        #[allow(unreachable_code, unreachable_patterns)]
        if let ::core::option::Option::Some(#ret) = ::core::option::Option::None::<#ty> {
            #return_
        }
    }
}

/// The `async fn`'s output type `ty`, written where a type argument goes. Stable Rust names `!`
/// only as a return type, so an `async fn` returning `!` has its future's output named through
/// the return type of `fn() -> !`.
fn nameable(ty: &Type) -> TokenStream {
    match ty {
        Type::Never(never) => {
            let private = private::path();
            quote!(<fn() -> #never as #private::Returns>::Output)
        }
        // `$t` of a `macro_rules!` whose `$t:ty` is `!`.
        Type::Group(group) => nameable(&group.elem),
        Type::Paren(paren) => nameable(&paren.elem),
        other => other.to_token_stream(),
    }
}

/// Replaces each `impl Trait` of a type with `_`.
struct ImplAsInferred;

impl VisitMut for ImplAsInferred {
    fn visit_type_mut(&mut self, ty: &mut Type) {
        if let Type::ImplTrait(_) = ty {
            *ty = Type::Infer(syn::TypeInfer {
                underscore_token: Default::default(),
            });
        } else {
            syn::visit_mut::visit_type_mut(self, ty);
        }
    }
}
