//! What the attribute was put on: a function, an `impl` block or a trait, and the errors for
//! everything else.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Attribute, Error, ImplItem, Item, Result, TraitItem};

use super::function::{self, FnItem};
use super::name::Context;
use super::options::{LogArgs, Options};

pub fn instrument(attr: TokenStream, item: TokenStream, enabled: bool) -> Result<TokenStream> {
    let options: Options = syn::parse2(attr)?;
    let original = item.clone();
    let item: Item = match syn::parse2(item) {
        Ok(item) => item,
        Err(_) => return Err(not_an_item(original)),
    };
    match item {
        Item::Fn(mut f) => {
            if let Some(skip) = options.skip {
                return Err(Error::new(
                    skip,
                    "`skip` only applies to a method inside an `#[instrument_fdr]` impl block; to leave this function out, remove the attribute",
                ));
            }
            let mut fn_item = FnItem {
                sig: &f.sig,
                block: &mut f.block,
            };
            function::check(&fn_item, &options)?;
            if !enabled {
                return Ok(original);
            }
            function::instrument(&mut fn_item, &options, &Context::Alone);
            Ok(f.into_token_stream())
        }
        Item::Impl(mut imp) => {
            check_block_options(&options, "an impl block")?;
            let self_ty = (*imp.self_ty).clone();
            let trait_ = imp.trait_.as_ref().map(|(_, path, _)| path.clone());
            let context = match &trait_ {
                Some(trait_) => Context::TraitImpl {
                    self_ty: &self_ty,
                    trait_,
                },
                None => Context::Inherent { self_ty: &self_ty },
            };
            for impl_item in &mut imp.items {
                if let ImplItem::Fn(method) = impl_item {
                    let own = take_own_options(&mut method.attrs)?;
                    let mut fn_item = FnItem {
                        sig: &method.sig,
                        block: &mut method.block,
                    };
                    instrument_member(&mut fn_item, &options, own, &context, enabled)?;
                }
            }
            Ok(imp.into_token_stream())
        }
        Item::Trait(mut tr) => {
            check_block_options(&options, "a trait")?;
            let ident = tr.ident.clone();
            let context = Context::Trait { trait_: &ident };
            for trait_item in &mut tr.items {
                if let TraitItem::Fn(method) = trait_item {
                    let own = take_own_options(&mut method.attrs)?;
                    let Some(block) = &mut method.default else {
                        // A method without a default body has nothing to record; its
                        // implementations are annotated where they are written.
                        if let Some((own, _)) = own {
                            if own.skip.is_none() {
                                return Err(Error::new(
                                    method.sig.fn_token.span,
                                    no_body_message(),
                                ));
                            }
                        }
                        continue;
                    };
                    let mut fn_item = FnItem {
                        sig: &method.sig,
                        block,
                    };
                    instrument_member(&mut fn_item, &options, own, &context, enabled)?;
                }
            }
            Ok(tr.into_token_stream())
        }
        Item::Verbatim(tokens) => Err(not_an_item(tokens)),
        other => Err(wrong_item(&other)),
    }
}

/// Instruments one method of an annotated `impl` block or trait, under its own
/// `#[instrument_fdr(...)]` if it has one.
fn instrument_member(
    f: &mut FnItem,
    block_options: &Options,
    own: Option<(Options, Span)>,
    context: &Context,
    enabled: bool,
) -> Result<()> {
    let options = match own {
        Some((own, _)) if own.skip.is_some() => {
            if let Some((span, option)) = own.recording_option() {
                return Err(Error::new(
                    span,
                    format!("`skip` leaves this method uninstrumented, so `{option}` has no effect; remove one of them"),
                ));
            }
            return Ok(());
        }
        Some((mut own, _)) => {
            if own.log_args.is_none() && matches!(block_options.log_args, Some(LogArgs::All)) {
                own.log_args = Some(LogArgs::All);
            }
            own
        }
        None => {
            // A const fn can be evaluated at compile time, where nothing can be recorded: an
            // annotated impl block leaves its const fns as they are.
            if f.sig.constness.is_some() {
                return Ok(());
            }
            Options {
                log_args: match block_options.log_args {
                    Some(LogArgs::All) => Some(LogArgs::All),
                    _ => None,
                },
                ..Options::default()
            }
        }
    };
    function::check(f, &options)?;
    if enabled {
        function::instrument(f, &options, context);
    }
    Ok(())
}

/// Options on an `impl` block or trait apply to every method, so only those that make sense for
/// all of them are accepted.
fn check_block_options(options: &Options, what: &str) -> Result<()> {
    if let Some(skip) = options.skip {
        return Err(Error::new(
            skip,
            format!("`skip` goes on a method inside the block, not on {what}; to leave the whole block out, remove the attribute"),
        ));
    }
    if let Some((span, option)) = options.single_function_option() {
        return Err(Error::new(
            span,
            format!("`{option}` on {what} would apply to every method; put it on the method: `#[instrument_fdr({option})]`"),
        ));
    }
    Ok(())
}

/// Removes a method's own `#[instrument_fdr(...)]` inside an annotated block and parses it. The
/// block's expansion handles the method, so the attribute must not expand a second time.
fn take_own_options(attrs: &mut Vec<Attribute>) -> Result<Option<(Options, Span)>> {
    let Some(index) = attrs.iter().position(is_instrument_fdr) else {
        return Ok(None);
    };
    let attr = attrs.remove(index);
    if let Some(again) = attrs.iter().find(|a| is_instrument_fdr(a)) {
        return Err(Error::new(
            again.span(),
            "`#[instrument_fdr]` is on this method twice; remove one",
        ));
    }
    let options = match &attr.meta {
        syn::Meta::Path(_) => Options::default(),
        syn::Meta::List(list) => syn::parse2(list.tokens.clone())?,
        syn::Meta::NameValue(nv) => {
            return Err(Error::new(
                nv.eq_token.span,
                "write the options in parentheses: `#[instrument_fdr(name = \"...\")]`",
            ))
        }
    };
    Ok(Some((options, attr.span())))
}

fn is_instrument_fdr(attr: &Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "instrument_fdr")
}

fn no_body_message() -> &'static str {
    "`#[instrument_fdr]` needs a function body to record; put it on the method in each impl, or give this method a default body"
}

fn what_to_write() -> &'static str {
    "`#[instrument_fdr]` goes on a function, a method, an `impl` block or a trait"
}

fn wrong_item(item: &Item) -> Error {
    let (span, what) = match item {
        Item::Struct(s) => (s.struct_token.span, "a struct"),
        Item::Enum(e) => (e.enum_token.span, "an enum"),
        Item::Union(u) => (u.union_token.span, "a union"),
        Item::Const(c) => (c.const_token.span, "a const"),
        Item::Static(s) => (s.static_token.span, "a static"),
        Item::Mod(m) => (m.mod_token.span, "a module"),
        Item::Type(t) => (t.type_token.span, "a type alias"),
        Item::Use(u) => (u.use_token.span, "a `use`"),
        Item::ForeignMod(f) => (f.abi.span(), "an `extern` block"),
        Item::Macro(m) => (m.mac.path.span(), "a macro invocation"),
        Item::TraitAlias(t) => (t.trait_token.span, "a trait alias"),
        Item::ExternCrate(e) => (e.extern_token.span, "an `extern crate`"),
        other => (other.span(), "this item"),
    };
    let hint = match item {
        Item::Struct(_) | Item::Enum(_) | Item::Union(_) => {
            "; to record its methods, annotate their `impl` block"
        }
        Item::Mod(_) => "; annotate the functions inside it",
        Item::Const(_) | Item::Static(_) => {
            "; its initializer runs at compile time, where nothing can be recorded"
        }
        _ => "",
    };
    Error::new(span, format!("{}, not on {what}{hint}", what_to_write()))
}

/// The tokens did not parse as an item: most often a function without a body.
fn not_an_item(item: TokenStream) -> Error {
    let fn_token = item.into_iter().find_map(|t| match t {
        proc_macro2::TokenTree::Ident(i) if i == "fn" => Some(i.span()),
        _ => None,
    });
    match fn_token {
        Some(span) => Error::new(span, no_body_message()),
        None => Error::new(Span::call_site(), what_to_write()),
    }
}
