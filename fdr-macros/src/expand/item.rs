//! What the attribute was put on: a function, an `impl` block, a trait or an inline module,
//! checked into an [`Annotated`], and the errors for everything else.
//!
//! A block or module annotated as a whole leaves out the functions whose body cannot take long
//! (`trivial.rs`) unless it or the function says `always`; a function with its own
//! `#[instrument_fdr(...)]` inside one is annotated on its own, and recorded whatever its body,
//! unless it says `skip`. A function annotated alone is always recorded.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{
    Attribute, Block, Error, ImplItem, ImplItemFn, Item, ItemFn, ItemImpl, ItemMod, ItemTrait,
    Result, Signature, TraitItem, TraitItemFn,
};

use super::function;
use super::model::{Annotated, Body, Descriptor, FnName, Member, ModMember, Recorded};
use super::name::{Context, Name};
use super::options::{Keyed, LogArgs, Options};
use super::trivial;

/// Checks `#[instrument_fdr(attr)] item` and plans its recording.
pub fn annotated(attr: TokenStream, item: TokenStream) -> Result<Annotated> {
    let options: Options = syn::parse2(attr)?;
    let item: Item = match syn::parse2(item.clone()) {
        Ok(item) => item,
        Err(_) => return Err(not_an_item(item)),
    };
    match item {
        Item::Fn(f) => {
            if let Some(skip) = options.skip {
                return Err(Error::new(
                    skip,
                    "`skip` only applies inside an `#[instrument_fdr]` impl block, trait or module; to leave this function out, remove the attribute",
                ));
            }
            // `always` changes nothing here: a function annotated alone is always recorded.
            let derived = FnName::FromPath(Name::of_function(&Context::Alone, &f.sig.ident));
            Ok(Annotated::Fn(recorded_fn(f, &options, derived)?))
        }
        Item::Impl(block) => {
            check_group_options(&options, Group::Impl)?;
            impl_block(block, &Inherited::from(&options))
        }
        Item::Trait(block) => {
            check_group_options(&options, Group::Trait)?;
            trait_block(block, &Inherited::from(&options))
        }
        Item::Mod(module) => {
            if module.content.is_none() {
                return Err(not_inline(&module));
            }
            check_group_options(&options, Group::Mod)?;
            inline_module(module, &Inherited::from(&options))
        }
        Item::Verbatim(tokens) => Err(not_an_item(tokens)),
        other => Err(wrong_item(&other)),
    }
}

/// What the functions of an annotated block or module take from its attribute.
struct Inherited {
    /// A block's bare `log_args`: every parameter of every recorded method.
    log_args: Option<Keyed<LogArgs>>,
    /// `always`: functions whose body cannot take long are recorded too.
    always: bool,
}

impl Inherited {
    fn from(options: &Options) -> Inherited {
        Inherited {
            log_args: options
                .log_args
                .as_ref()
                .filter(|l| matches!(l.value, LogArgs::All))
                .map(|l| Keyed {
                    key: l.key,
                    value: LogArgs::Inherited,
                }),
            always: options.always.is_some(),
        }
    }
}

/// A free function to record, named `derived` unless `name = "..."` names it.
fn recorded_fn(mut f: ItemFn, options: &Options, derived: FnName) -> Result<Recorded<ItemFn>> {
    let block = take_body(&mut f.block);
    let (body, descriptor) = function::plan(&f.sig, block, options, derived)?;
    Ok(Recorded {
        item: f,
        body,
        descriptor,
    })
}

/// Plans the methods of an `impl` block annotated as a whole, or by its module.
fn impl_block(mut block: ItemImpl, inherited: &Inherited) -> Result<Annotated> {
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
            ImplItem::Fn(method) => errors.keep(impl_method(method, inherited, &context)),
            other => Some(Member::AsWritten(other)),
        })
        .collect();
    errors.into_result()?;
    Ok(Annotated::Impl { block, members })
}

/// Plans the default methods of a trait annotated as a whole, or by its module.
fn trait_block(mut block: ItemTrait, inherited: &Inherited) -> Result<Annotated> {
    let context = Context::Trait {
        trait_: &block.ident,
    };
    let mut errors = Errors::default();
    let members = std::mem::take(&mut block.items)
        .into_iter()
        .filter_map(|member| match member {
            TraitItem::Fn(method) => errors.keep(trait_method(method, inherited, &context)),
            other => Some(Member::AsWritten(other)),
        })
        .collect();
    errors.into_result()?;
    Ok(Annotated::Trait { block, members })
}

/// Plans the items of an inline module annotated as a whole, or by its enclosing module.
fn inline_module(mut module: ItemMod, inherited: &Inherited) -> Result<Annotated> {
    let items = match &mut module.content {
        Some((_, items)) => std::mem::take(items),
        None => Vec::new(),
    };
    let mut errors = Errors::default();
    let members = items
        .into_iter()
        .filter_map(|item| errors.keep(module_member(item, inherited)))
        .collect();
    errors.into_result()?;
    Ok(Annotated::Mod { module, members })
}

/// Plans one item of an annotated module: its free functions as a block's methods, its `impl`
/// blocks, traits and inline modules as if annotated with the module's options, unless they
/// have an `#[instrument_fdr(...)]` of their own.
fn module_member(item: Item, inherited: &Inherited) -> Result<ModMember> {
    Ok(match item {
        Item::Fn(mut f) => {
            let own = take_own_options(&mut f.attrs, "function")?;
            match member_options(inherited, own, &f.sig, &f.block, "function")? {
                None => ModMember::AsWritten(Item::Fn(f)),
                Some(options) => {
                    // A function of a module is a free function: its name is known here.
                    let derived = FnName::Known(Name::of_function(&Context::Alone, &f.sig.ident));
                    ModMember::Annotated(Annotated::Fn(recorded_fn(f, &options, derived)?))
                }
            }
        }
        Item::Impl(mut block) => match nested_annotation(&mut block.attrs, "impl block")? {
            Nested::Unannotated => ModMember::Annotated(impl_block(block, inherited)?),
            Nested::Skipped | Nested::Own => ModMember::AsWritten(Item::Impl(block)),
        },
        Item::Trait(mut block) => match nested_annotation(&mut block.attrs, "trait")? {
            Nested::Unannotated => ModMember::Annotated(trait_block(block, inherited)?),
            Nested::Skipped | Nested::Own => ModMember::AsWritten(Item::Trait(block)),
        },
        // A module in a file of its own (`mod name;`) is not visible here.
        Item::Mod(mut module) if module.content.is_some() => {
            match nested_annotation(&mut module.attrs, "module")? {
                Nested::Unannotated => ModMember::Annotated(inline_module(module, inherited)?),
                Nested::Skipped | Nested::Own => ModMember::AsWritten(Item::Mod(module)),
            }
        }
        other => ModMember::AsWritten(other),
    })
}

/// How an `impl` block, trait or module inside an annotated module is annotated itself.
enum Nested {
    /// It is not: the module annotates it.
    Unannotated,
    /// `#[instrument_fdr(skip)]`, now removed: it is left as written.
    Skipped,
    /// Any other `#[instrument_fdr(...)]`, left in place: it expands the item itself, with its
    /// own options, and reports its own errors.
    Own,
}

/// Reads, and removes if it is a `skip`, the annotation of an `impl` block, trait or module
/// inside an annotated module. `what` names the item in errors.
fn nested_annotation(attrs: &mut Vec<Attribute>, what: &str) -> Result<Nested> {
    let Some(index) = attrs.iter().position(is_instrument_fdr) else {
        return Ok(Nested::Unannotated);
    };
    let options = match parse_attribute(&attrs[index]) {
        Ok(options) if options.skip.is_some() => options,
        _ => return Ok(Nested::Own),
    };
    attrs.remove(index);
    check_skip(&options, what)?;
    Ok(Nested::Skipped)
}

/// The item as written, which is what a build without the `enable` feature compiles, and what
/// a wrong annotation leaves beside its error so that the item's users do not fail too. The
/// `#[instrument_fdr(...)]` that the attribute read inside its item are removed (a block's
/// methods', a module's functions', a `skip` on an item of a module): they must not expand a
/// second time. Those it left to expand their own item stay.
pub fn as_written(item: TokenStream) -> TokenStream {
    match syn::parse2::<Item>(item.clone()) {
        Ok(Item::Impl(mut block)) => {
            strip_impl(&mut block);
            block.into_token_stream()
        }
        Ok(Item::Trait(mut block)) => {
            strip_trait(&mut block);
            block.into_token_stream()
        }
        Ok(Item::Mod(mut module)) => {
            strip_module(&mut module);
            module.into_token_stream()
        }
        _ => item,
    }
}

fn strip_impl(block: &mut ItemImpl) {
    for member in &mut block.items {
        if let ImplItem::Fn(method) = member {
            method.attrs.retain(|a| !is_instrument_fdr(a));
        }
    }
}

fn strip_trait(block: &mut ItemTrait) {
    for member in &mut block.items {
        if let TraitItem::Fn(method) = member {
            method.attrs.retain(|a| !is_instrument_fdr(a));
        }
    }
}

/// Removes what [`module_member`] reads, item by item; its errors are [`annotated`]'s to
/// report.
fn strip_module(module: &mut ItemMod) {
    let Some((_, items)) = &mut module.content else {
        return;
    };
    for item in items {
        match item {
            Item::Fn(f) => f.attrs.retain(|a| !is_instrument_fdr(a)),
            Item::Impl(block) => {
                if let Ok(Nested::Unannotated) = nested_annotation(&mut block.attrs, "") {
                    strip_impl(block);
                }
            }
            Item::Trait(block) => {
                if let Ok(Nested::Unannotated) = nested_annotation(&mut block.attrs, "") {
                    strip_trait(block);
                }
            }
            Item::Mod(nested) if nested.content.is_some() => {
                if let Ok(Nested::Unannotated) = nested_annotation(&mut nested.attrs, "") {
                    strip_module(nested);
                }
            }
            _ => {}
        }
    }
}

/// The errors of the functions of an `impl` block, trait or module: each is checked, so that
/// one build reports them all.
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
    inherited: &Inherited,
    context: &Context,
) -> Result<Member<ImplItem, ImplItemFn>> {
    let own = take_own_options(&mut method.attrs, "method")?;
    let Some(options) = member_options(inherited, own, &method.sig, &method.block, "method")?
    else {
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
    inherited: &Inherited,
    context: &Context,
) -> Result<Member<TraitItem, TraitItemFn>> {
    let own = take_own_options(&mut method.attrs, "method")?;
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
    let Some(options) = member_options(inherited, own, &method.sig, &body, "method")? else {
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

/// The options a function of an annotated block or module is recorded with: its own
/// `#[instrument_fdr(...)]` if it has one (then it is annotated on its own, and recorded
/// whatever its body), else the block's. `None` when it is left as written: marked `skip`, a
/// `const fn`, or a body that cannot take long in a block not marked `always`. `what` names the
/// function in errors.
fn member_options(
    inherited: &Inherited,
    own: Option<Options>,
    sig: &Signature,
    body: &Block,
    what: &str,
) -> Result<Option<Options>> {
    match own {
        Some(own) if own.skip.is_some() => {
            check_skip(&own, what)?;
            Ok(None)
        }
        Some(mut own) => {
            if own.log_args.is_none() {
                own.log_args = inherited.log_args.clone();
            }
            Ok(Some(own))
        }
        // A const fn can be evaluated at compile time, where nothing can be recorded: an
        // annotated block leaves its const fns as they are.
        None if sig.constness.is_some() => Ok(None),
        None if !inherited.always && trivial::cannot_take_long(body) => Ok(None),
        None => Ok(Some(Options {
            log_args: inherited.log_args.clone(),
            ..Options::default()
        })),
    }
}

/// `skip` beside an option that records something is a contradiction.
fn check_skip(own: &Options, what: &str) -> Result<()> {
    match own.recording_option() {
        Some((span, option)) => Err(Error::new(
            span,
            format!("`skip` leaves this {what} uninstrumented, so `{option}` has no effect; remove one of them"),
        )),
        None => Ok(()),
    }
}

/// What can be annotated as a whole.
#[derive(Clone, Copy)]
enum Group {
    Impl,
    Trait,
    Mod,
}

/// Options on an `impl` block, trait or module apply to every function in it, so only those
/// that make sense for all of them are accepted: bare `log_args` (on a block) and `always`.
fn check_group_options(options: &Options, group: Group) -> Result<()> {
    let (what, member) = match group {
        Group::Impl => ("an impl block", "method"),
        Group::Trait => ("a trait", "method"),
        Group::Mod => ("a module", "function"),
    };
    if let Some(skip) = options.skip {
        let message = match group {
            Group::Mod => "`skip` goes on an item inside the module, not on a module; to leave the whole module out, remove the attribute".to_owned(),
            _ => format!("`skip` goes on a method inside the block, not on {what}; to leave the whole block out, remove the attribute"),
        };
        return Err(Error::new(skip, message));
    }
    let single = match group {
        // Every argument of every function of a module is rarely loggable, and never wanted.
        Group::Mod => options.recording_option(),
        Group::Impl | Group::Trait => options.single_function_option(),
    };
    if let Some((span, option)) = single {
        return Err(Error::new(
            span,
            format!("`{option}` on {what} would apply to every {member}; put it on the {member}: `#[instrument_fdr({option})]`"),
        ));
    }
    Ok(())
}

/// Removes a function's own `#[instrument_fdr(...)]` inside an annotated block or module and
/// parses it. The block's expansion handles the function, so the attribute must not expand a
/// second time. `what` names the function in errors.
fn take_own_options(attrs: &mut Vec<Attribute>, what: &str) -> Result<Option<Options>> {
    let Some(index) = attrs.iter().position(is_instrument_fdr) else {
        return Ok(None);
    };
    let attr = attrs.remove(index);
    if let Some(again) = attrs.iter().find(|a| is_instrument_fdr(a)) {
        return Err(Error::new(
            again.span(),
            format!("`#[instrument_fdr]` is on this {what} twice; remove one"),
        ));
    }
    parse_attribute(&attr).map(Some)
}

/// The options of an `#[instrument_fdr(...)]` written on an item.
fn parse_attribute(attr: &Attribute) -> Result<Options> {
    match &attr.meta {
        syn::Meta::Path(_) => Ok(Options::default()),
        syn::Meta::List(list) => syn::parse2(list.tokens.clone()),
        syn::Meta::NameValue(nv) => Err(Error::new(
            nv.eq_token.span,
            "write the options in parentheses: `#[instrument_fdr(name = \"...\")]`",
        )),
    }
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
    "`#[instrument_fdr]` goes on a function, a method, an `impl` block, a trait or an inline module"
}

/// `mod name;`: the module's items are in another file, which the attribute cannot see.
fn not_inline(module: &ItemMod) -> Error {
    let ItemMod {
        vis,
        mod_token,
        ident,
        semi,
        ..
    } = module;
    Error::new_spanned(
        quote::quote!(#vis #mod_token #ident #semi),
        format!("`#[instrument_fdr]` needs an inline module, `mod {ident} {{ ... }}`, to see its functions; for a module in a file of its own, annotate the items in that file"),
    )
}

fn wrong_item(item: &Item) -> Error {
    let (span, what) = match item {
        Item::Struct(s) => (s.struct_token.span, "a struct"),
        Item::Enum(e) => (e.enum_token.span, "an enum"),
        Item::Union(u) => (u.union_token.span, "a union"),
        Item::Const(c) => (c.const_token.span, "a const"),
        Item::Static(s) => (s.static_token.span, "a static"),
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
