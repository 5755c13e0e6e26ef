//! What the attribute was put on: a function, an `impl` block or a trait, checked into an
//! [`Annotated`], and the errors for everything else.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{
    Attribute, Block, Error, ImplItem, ImplItemFn, Item, Result, Signature, TraitItem, TraitItemFn,
};

use super::function;
use super::model::{Annotated, Body, Descriptor, FnName, Member, Recorded};
use super::name::{Context, Name};
use super::options::{Keyed, LogArgs, Options};

/// Checks `#[instrument_fdr(attr)] item` and plans its recording.
pub fn annotated(attr: TokenStream, item: TokenStream) -> Result<Annotated> {
    let options: Options = syn::parse2(attr)?;
    let item: Item = match syn::parse2(item.clone()) {
        Ok(item) => item,
        Err(_) => return Err(not_an_item(item)),
    };
    match item {
        Item::Fn(mut f) => {
            if let Some(skip) = options.skip {
                return Err(Error::new(
                    skip,
                    "`skip` only applies to a method inside an `#[instrument_fdr]` impl block; to leave this function out, remove the attribute",
                ));
            }
            let derived = FnName::FromPath(Name::of_function(&Context::Alone, &f.sig.ident));
            let block = take_body(&mut f.block);
            let (body, descriptor) = function::plan(&f.sig, block, &options, derived)?;
            Ok(Annotated::Fn(Recorded {
                item: f,
                body,
                descriptor,
            }))
        }
        Item::Impl(mut block) => {
            check_block_options(&options, "an impl block")?;
            let trait_ = block.trait_.as_ref().map(|(_, path, _)| path);
            let context = match trait_ {
                Some(trait_) => Context::TraitImpl {
                    self_ty: &block.self_ty,
                    trait_,
                },
                None => Context::Inherent {
                    self_ty: &block.self_ty,
                },
            };
            let mut errors = Errors::default();
            let members = std::mem::take(&mut block.items)
                .into_iter()
                .filter_map(|member| match member {
                    ImplItem::Fn(method) => errors.keep(impl_method(method, &options, &context)),
                    other => Some(Member::AsWritten(other)),
                })
                .collect();
            errors.into_result()?;
            Ok(Annotated::Impl { block, members })
        }
        Item::Trait(mut block) => {
            check_block_options(&options, "a trait")?;
            let context = Context::Trait {
                trait_: &block.ident,
            };
            let mut errors = Errors::default();
            let members = std::mem::take(&mut block.items)
                .into_iter()
                .filter_map(|member| match member {
                    TraitItem::Fn(method) => errors.keep(trait_method(method, &options, &context)),
                    other => Some(Member::AsWritten(other)),
                })
                .collect();
            errors.into_result()?;
            Ok(Annotated::Trait { block, members })
        }
        Item::Verbatim(tokens) => Err(not_an_item(tokens)),
        other => Err(wrong_item(&other)),
    }
}

/// The item as written, which is what a build without the `enable` feature compiles, and what
/// a wrong annotation leaves beside its error so that the item's users do not fail too. Inside
/// an `impl` block or trait, the methods' own `#[instrument_fdr(...)]` are removed: the block's
/// attribute handles them, and they must not expand a second time.
pub fn as_written(item: TokenStream) -> TokenStream {
    match syn::parse2::<Item>(item.clone()) {
        Ok(Item::Impl(mut block)) => {
            for member in &mut block.items {
                if let ImplItem::Fn(method) = member {
                    method.attrs.retain(|a| !is_instrument_fdr(a));
                }
            }
            block.into_token_stream()
        }
        Ok(Item::Trait(mut block)) => {
            for member in &mut block.items {
                if let TraitItem::Fn(method) = member {
                    method.attrs.retain(|a| !is_instrument_fdr(a));
                }
            }
            block.into_token_stream()
        }
        _ => item,
    }
}

/// The errors of an `impl` block's or trait's methods: each method is checked, so that one
/// build reports them all.
#[derive(Default)]
struct Errors(Option<Error>);

impl Errors {
    /// The value of `result`, or `None` with its error kept for [`Errors::into_result`].
    fn keep<T>(&mut self, result: Result<T>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(error) => {
                match &mut self.0 {
                    Some(errors) => errors.combine(error),
                    None => self.0 = Some(error),
                }
                None
            }
        }
    }

    fn into_result(self) -> Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

/// Moves a function's body out, leaving its braces: expansion puts the instrumented body back.
fn take_body(block: &mut Block) -> Block {
    Block {
        brace_token: block.brace_token,
        stmts: std::mem::take(&mut block.stmts),
    }
}

/// Plans one method of an annotated `impl` block.
fn impl_method(
    mut method: ImplItemFn,
    block_options: &Options,
    context: &Context,
) -> Result<Member<ImplItem, ImplItemFn>> {
    let own = take_own_options(&mut method.attrs)?;
    let Some(options) = member_options(block_options, own, &method.sig)? else {
        return Ok(Member::AsWritten(ImplItem::Fn(method)));
    };
    let body = take_body(&mut method.block);
    let (body, descriptor) = plan_member(&method.sig, body, &options, context)?;
    Ok(Member::Recorded(Recorded {
        item: method,
        body,
        descriptor,
    }))
}

/// Plans one method of an annotated trait.
fn trait_method(
    mut method: TraitItemFn,
    block_options: &Options,
    context: &Context,
) -> Result<Member<TraitItem, TraitItemFn>> {
    let own = take_own_options(&mut method.attrs)?;
    let Some(body) = method.default.take() else {
        // A method without a default body has nothing to record; its implementations are
        // annotated where they are written.
        return match own {
            Some(own) if own.skip.is_none() => {
                Err(Error::new(method.sig.fn_token.span, no_body_message()))
            }
            _ => Ok(Member::AsWritten(TraitItem::Fn(method))),
        };
    };
    let Some(options) = member_options(block_options, own, &method.sig)? else {
        method.default = Some(body);
        return Ok(Member::AsWritten(TraitItem::Fn(method)));
    };
    let (body, descriptor) = plan_member(&method.sig, body, &options, context)?;
    Ok(Member::Recorded(Recorded {
        item: method,
        body,
        descriptor,
    }))
}

/// Names and plans one method of an annotated `impl` block or trait.
fn plan_member(
    sig: &Signature,
    body: Block,
    options: &Options,
    context: &Context,
) -> Result<(Body, Descriptor)> {
    let derived = FnName::Known(Name::of_function(context, &sig.ident));
    function::plan(sig, body, options, derived)
}

/// The options a method of an annotated `impl` block or trait is recorded with: the block's,
/// or its own `#[instrument_fdr(...)]` if it has one. `None` when it is left as written.
fn member_options(
    block_options: &Options,
    own: Option<Options>,
    sig: &Signature,
) -> Result<Option<Options>> {
    match own {
        Some(own) if own.skip.is_some() => {
            if let Some((span, option)) = own.recording_option() {
                return Err(Error::new(
                    span,
                    format!("`skip` leaves this method uninstrumented, so `{option}` has no effect; remove one of them"),
                ));
            }
            Ok(None)
        }
        Some(mut own) => {
            if own.log_args.is_none() {
                own.log_args = every_arg(block_options);
            }
            Ok(Some(own))
        }
        // A const fn can be evaluated at compile time, where nothing can be recorded: an
        // annotated block leaves its const fns as they are.
        None if sig.constness.is_some() => Ok(None),
        None => Ok(Some(Options {
            log_args: every_arg(block_options),
            ..Options::default()
        })),
    }
}

/// A block's bare `log_args`, which every method inherits.
fn every_arg(block_options: &Options) -> Option<Keyed<LogArgs>> {
    block_options
        .log_args
        .as_ref()
        .filter(|l| matches!(l.value, LogArgs::All))
        .cloned()
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
fn take_own_options(attrs: &mut Vec<Attribute>) -> Result<Option<Options>> {
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
    Ok(Some(options))
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
