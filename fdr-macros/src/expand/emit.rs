//! The instrumented code of a validated [`Annotated`]: each recorded function gets its
//! descriptor in the link-time function table and a body that records its calls. Nothing here
//! can fail; every check was made before.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::{Attribute, Block, Expr, Ident, ImplItem, Item, Stmt, TraitItem};

use super::async_fn::{self, Lowered};
use super::awaits::{self, Site};
use super::model::{
    Annotated, Body, Descriptor, FnName, Member, ModMember, Recorded, TailBody, TailEnd, WithBody,
};
use super::options::Limit;
use super::private;

/// The item with every recorded function instrumented.
pub fn annotated(annotated: Annotated) -> TokenStream {
    item(annotated).into_token_stream()
}

fn item(annotated: Annotated) -> Item {
    match annotated {
        Annotated::Fn(f) => Item::Fn(recorded(f, &[])),
        Annotated::Impl { mut block, members } => {
            block.items = members
                .into_iter()
                .map(|member| match member {
                    Member::AsWritten(item) => item,
                    Member::Recorded(method) => ImplItem::Fn(recorded(method, &block.attrs)),
                })
                .collect();
            Item::Impl(block)
        }
        Annotated::Trait { mut block, members } => {
            block.items = members
                .into_iter()
                .map(|member| match member {
                    Member::AsWritten(item) => item,
                    Member::Recorded(method) => TraitItem::Fn(recorded(method, &block.attrs)),
                })
                .collect();
            Item::Trait(block)
        }
        Annotated::Mod {
            mut module,
            members,
        } => {
            if let Some((_, items)) = &mut module.content {
                *items = members
                    .into_iter()
                    .map(|member| match member {
                        ModMember::AsWritten(item) => item,
                        ModMember::Annotated(annotated) => item(annotated),
                    })
                    .collect();
            }
            Item::Mod(module)
        }
    }
}

/// The future of a call of an async function with descriptor `desc`: `inner` wrapped in the
/// task its call creates. The arguments are read first, before the block takes them; then the
/// task's creation is recorded, then the block is made: nothing that may unwind runs between
/// the block and its wrapper, so the future is made in place instead of aside and copied.
fn started(
    private: &TokenStream,
    desc: &Ident,
    args: Option<TokenStream>,
    inner: TokenStream,
) -> TokenStream {
    let start = quote!(#private::TaskStart::now(&#desc));
    match args {
        None => quote!(#private::Instrumented::started(&#desc, #start, #inner)),
        Some(values) => {
            quote!(#private::Instrumented::started_with_args(&#desc, #values, #start, #inner))
        }
    }
}

/// The function with its body recorded. `outer` are the attributes of the block it is in, if any.
fn recorded<F: WithBody>(f: Recorded<F>, outer: &[Attribute]) -> F {
    let Recorded {
        mut item,
        body,
        descriptor,
    } = f;
    let private = private::path();
    let desc = Ident::new("__FDR_FN", Span::call_site());
    let args = arg_values(&descriptor.args, &desc);
    let async_ = matches!(body, Body::Async(_));
    let static_ = descriptor_static(&descriptor, &desc, async_);
    // Mixed-site hygiene: the body cannot see or shadow the guard.
    let guard = Ident::new("__fdr_guard", Span::mixed_site());
    let instrumented = match body {
        Body::Async(mut block) if !later_macro(outer) && only_tracing_later(item.attrs()) => {
            // tracing's `#[instrument]` still to run: it must see an `async fn`, and it keeps
            // one. The awaits are rewritten now, while the body is as written; the rest waits
            // until it has run (`deferred_task`, below it), so that the function is then made
            // into the plain one returning its task, as any `async fn`: one wrapper around
            // tracing's future instead of a future of ours nested in it.
            let sites = awaits::rewrite(&mut block, &desc, &private);
            let sites = site_statics(&descriptor, &sites);
            let args = args.map(|values| quote!((#values)));
            item.attrs_mut()
                .push(syn::parse_quote!(#[#private::deferred_task({ #static_ } #args)]));
            let stmts = &block.stmts;
            quote!(#sites #(#stmts)*)
        }
        Body::Async(mut block) if later_macro(item.attrs()) || later_macro(outer) => {
            let sites = awaits::rewrite(&mut block, &desc, &private);
            let sites = site_statics(&descriptor, &sites);
            // An attribute macro still to run on this function (`#[tokio::main]`) or its block
            // (`#[async_trait]`) expects an `async fn`: it stays one, and its task begins at the
            // first poll.
            let future = started(&private, &desc, args, quote!(async move #block));
            quote! {
                #static_
                #sites
                #future.await
            }
        }
        Body::Async(mut block) => {
            let sites = awaits::rewrite(&mut block, &desc, &private);
            let sites = site_statics(&descriptor, &sites);
            task(&mut item, &static_, &sites, &desc, args, &block)
        }
        Body::Sync(block) => {
            hint_inline(&mut item);
            guarded(&static_, &desc, args, &guard, rebraced(&block))
        }
        Body::Tail(tail) => {
            hint_inline(&mut item);
            guarded(&static_, &desc, args, &guard, tail_body(tail, &guard))
        }
    };
    // The instrumented code goes in as tokens, inside the body's braces: it is never parsed
    // again, so no user code can make expansion fail.
    item.set_body(Block {
        brace_token: Default::default(),
        stmts: vec![Stmt::Expr(Expr::Verbatim(instrumented), None)],
    });
    item
}

/// The body of an `async fn` written as the plain function that makes its task when called:
/// `item`'s signature lowered, and its future, `block` in an `async move` block wrapped in the
/// task, made here, at the call (the task begins even if the future is never polled).
/// `static_` and `sites` are the descriptors, `args` the logged arguments' values.
fn task<F: WithBody>(
    item: &mut F,
    static_: &TokenStream,
    sites: &TokenStream,
    desc: &Ident,
    args: Option<TokenStream>,
    block: &Block,
) -> TokenStream {
    let private = private::path();
    let Lowered {
        output_hint,
        take_args,
        bind_by_ref,
    } = async_fn::lower(item.sig_mut());
    // The names bound inside patterns, bound again by reference where the arguments are read:
    // at the call, in the function the `async fn` became.
    let args = args.map(|values| quote!({ #bind_by_ref #values }));
    // What the function now does is make its future, as an `async fn` does; rustc's lowering of
    // one is small and inlined, and the future made in the caller's frame where it is awaited.
    // Without the hint the maker, a test and a store of the whole future bigger, stays out of
    // line and its future is copied at every `.await`.
    if !item.attrs().iter().any(|a| a.path().is_ident("inline")) {
        item.attrs_mut().push(syn::parse_quote!(#[inline]));
    }
    let block = rebraced(block);
    let inner = quote!(async move {
        #output_hint
        #take_args
        #block
    });
    let future = started(&private, desc, args, inner);
    quote! {
        #static_
        #sites
        #future
    }
}

/// `#[deferred_task({ DESCRIPTORS } (ARGS)?)]` on an `async fn`: the second half of an
/// `#[instrument_fdr]` that found tracing's `#[instrument]` below it (see [`recorded`]).
/// `DESCRIPTORS` are the function's descriptor statics, `ARGS` its logged arguments' values;
/// its awaits were rewritten before `#[instrument]` ran.
pub fn deferred(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    use proc_macro2::{Delimiter, TokenTree};
    let malformed = || {
        syn::Error::new(
            Span::call_site(),
            "`deferred_task` is written by `#[instrument_fdr]`, not by hand: annotate the function with `#[instrument_fdr]`",
        )
    };
    let mut tokens = attr.into_iter();
    let static_ = match tokens.next() {
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => g.stream(),
        _ => return Err(malformed()),
    };
    let args = match tokens.next() {
        None => None,
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis => Some(g.stream()),
        _ => return Err(malformed()),
    };
    if tokens.next().is_some() {
        return Err(malformed());
    }
    let mut item: syn::ItemFn = syn::parse2(item)?;
    if item.sig.asyncness.is_none() {
        return Err(syn::Error::new(
            item.sig.ident.span(),
            "`#[instrument_fdr]` left this function to be recorded after the `#[instrument]` below it, which should have kept it an `async fn`, but did not; write `#[instrument_fdr]` below `#[instrument]`",
        ));
    }
    let desc = Ident::new("__FDR_FN", Span::call_site());
    let block = (*item.block).clone();
    let body = task(
        &mut item,
        &static_,
        &TokenStream::new(),
        &desc,
        args,
        &block,
    );
    item.set_body(Block {
        brace_token: Default::default(),
        stmts: vec![Stmt::Expr(Expr::Verbatim(body), None)],
    });
    Ok(item.into_token_stream())
}

/// Gives a recorded function the inlining hint, unless it says how it is inlined already. The
/// guard makes a small function look bigger to the compiler than it is (its exit on the unwind
/// path too), and without the hint such a function stopped being inlined into its callers,
/// which cost more than its gate: mini-redis's `frame::get_line`, compiled in and not recording,
/// was 389 instructions a request on its own (the server's 7,831 against 6,447 without fdr;
/// 7,616 with the hint), and semver and regex-syntax annotated whole run 4 to 6 % fewer
/// instructions with it.
fn hint_inline<F: WithBody>(item: &mut F) {
    if !item
        .attrs()
        .iter()
        .any(|a| a.path().is_ident("inline") || a.path().is_ident("cold"))
    {
        item.attrs_mut().push(syn::parse_quote!(#[inline]));
    }
}

/// Whether `attr` may be a macro still to run: anything but the compiler's own inert
/// attributes, lint levels, docs and tool attributes.
fn is_later_macro(attr: &Attribute) -> bool {
    const INERT: &[&str] = &[
        "allow",
        "warn",
        "deny",
        "forbid",
        "expect",
        "deprecated",
        "must_use",
        "doc",
        "inline",
        "cold",
        "cfg",
        "cfg_attr",
        "track_caller",
        "no_mangle",
        "export_name",
        "link_section",
        "target_feature",
        "instruction_set",
        "optimize",
        "coverage",
        "automatically_derived",
        "non_exhaustive",
        "repr",
        "unsafe",
    ];
    const TOOLS: &[&str] = &["rustfmt", "clippy", "diagnostic", "rustdoc"];
    let path = attr.path();
    let Some(first) = path.segments.first() else {
        return false;
    };
    let first = first.ident.to_string();
    if path.segments.len() > 1 {
        return !TOOLS.contains(&first.as_str());
    }
    !INERT.contains(&first.as_str())
}

/// Whether `attrs` hold an attribute that may be a macro still to run (see [`is_later_macro`]).
fn later_macro(attrs: &[Attribute]) -> bool {
    attrs.iter().any(is_later_macro)
}

/// Whether the attribute macros still to run in `attrs` are all tracing's `#[instrument]`
/// (`instrument`, `tracing::instrument`), and there is one: a macro that takes an `async fn` and
/// gives back an `async fn` with its body inside its own future.
fn only_tracing_later(attrs: &[Attribute]) -> bool {
    let mut later = attrs.iter().filter(|a| is_later_macro(a)).peekable();
    later.peek().is_some()
        && later.all(|a| {
            let segments = &a.path().segments;
            match segments.len() {
                1 => segments[0].ident == "instrument",
                2 => segments[0].ident == "tracing" && segments[1].ident == "instrument",
                _ => false,
            }
        })
}

/// A `tail` body as written, with the guard's tail exit recorded just before its final call.
fn tail_body(tail: TailBody, guard: &Ident) -> TokenStream {
    let TailBody { block, end, call } = tail;
    let call = quote!({ #guard.tail(); #call });
    let stmts = &block.stmts;
    // Braces of the expansion's own, as in `rebraced`.
    let end = match end {
        TailEnd::Value => call,
        TailEnd::Return {
            attrs,
            return_token,
            semi,
        } => quote!(#(#attrs)* #return_token #call #semi),
    };
    quote!({ #(#stmts)* #end })
}

/// The body as written, in braces of the expansion's own: the same block, but the compiler no
/// longer takes it for braces the user wrote around a lone value (`fn one() -> u32 { 1 }` would
/// warn `unused_braces` where it now stands as the tail of the instrumented body).
fn rebraced(block: &Block) -> TokenStream {
    let stmts = &block.stmts;
    quote!({ #(#stmts)* })
}

/// A synchronous body: the guard records the entry now and the exit when it drops, however
/// `block` is left.
fn guarded(
    static_: &TokenStream,
    desc: &Ident,
    args: Option<TokenStream>,
    guard: &Ident,
    block: TokenStream,
) -> TokenStream {
    let private = private::path();
    let enter = match args {
        None => quote!(#private::CallGuard::enter(&#desc)),
        Some(values) => quote!(#private::CallGuard::enter_args(&#desc, &#values)),
    };
    quote! {
        #static_
        let #guard = #enter;
        #block
    }
}

/// The `static` descriptor `desc`, in the link-time function table.
fn descriptor_static(descriptor: &Descriptor, desc: &Ident, async_: bool) -> TokenStream {
    let private = private::path();
    let kind = if async_ {
        quote!(#private::FnKindTag::Async)
    } else {
        quote!(#private::FnKindTag::Function)
    };
    let at = descriptor.at;
    let file = quote_spanned!(at=> ::core::file!());
    let line = quote_spanned!(at=> ::core::line!());
    let arg_names = descriptor.args.iter().map(|a| a.unraw().to_string());
    // One slot per logged argument for the kind its type records, set by its first call.
    let (kinds, with_kinds) = if descriptor.args.is_empty() {
        (None, None)
    } else {
        let slots = Ident::new("__FDR_ARG_KINDS", Span::call_site());
        let n = descriptor.args.len();
        let zero = (0..n).map(|_| quote!(#private::AtomicU8::new(0)));
        (
            Some(quote!(static #slots: [#private::AtomicU8; #n] = [#(#zero),*];)),
            Some(quote!(.with_arg_kinds(&#slots))),
        )
    };
    let table = quote! {
        #[#private::linkme::distributed_slice(#private::FUNCTIONS)]
        #[linkme(crate = #private::linkme)]
    };
    // A slow-call limit, through the descriptor's `const` builder.
    let trigger = descriptor.trigger.map(|limit| match limit {
        Limit::Nanos(nanos) => {
            let nanos = syn::LitInt::new(&grouped(nanos), Span::call_site());
            quote!(.with_trigger(#nanos))
        }
        Limit::Auto { k_tenths } => {
            let k = syn::LitInt::new(&k_tenths.to_string(), Span::call_site());
            quote!(.with_auto_trigger(#k))
        }
    });
    match &descriptor.name {
        FnName::Known(name) => quote! {
            #kinds
            #table
            static #desc: #private::FnDesc = #private::FnDesc::new(
                #name,
                #file,
                #line,
                #kind,
                &[#(#arg_names),*],
            )#trigger #with_kinds;
        },
        FnName::FromPath(fallback) => {
            let path = Ident::new("__fdr_path", Span::call_site());
            quote! {
                fn #path() -> &'static str {
                    #private::type_name_of(#path)
                }
                #kinds
                #table
                static #desc: #private::FnDesc = #private::FnDesc::nested(
                    #fallback,
                    #path,
                    #file,
                    #line,
                    #kind,
                    &[#(#arg_names),*],
                )#trigger #with_kinds;
            }
        }
    }
}

/// The `static` descriptor of each await site of an async function described by `descriptor`,
/// in the link-time function table: named as the function is, at the line and column where the
/// awaited expression begins. A function named from its path has its path function already
/// (see [`descriptor_static`]).
fn site_statics(descriptor: &Descriptor, sites: &[Site]) -> TokenStream {
    let private = private::path();
    let kind = quote!(#private::FnKindTag::Await);
    sites
        .iter()
        .map(|site| {
            let (ident, at) = (&site.ident, site.at);
            let file = quote_spanned!(at=> ::core::file!());
            let line = quote_spanned!(at=> ::core::line!());
            let column = quote_spanned!(at=> ::core::column!());
            let desc = match &descriptor.name {
                FnName::Known(name) => {
                    quote!(#private::FnDesc::new(#name, #file, #line, #kind, &[]))
                }
                FnName::FromPath(fallback) => {
                    let path = Ident::new("__fdr_path", Span::call_site());
                    quote!(#private::FnDesc::nested(#fallback, #path, #file, #line, #kind, &[]))
                }
            };
            quote! {
                #[#private::linkme::distributed_slice(#private::FUNCTIONS)]
                #[linkme(crate = #private::linkme)]
                static #ident: #private::FnDesc = #desc.at_column(#column);
            }
        })
        .collect()
}

/// `n` written with `_` between groups of three digits, as a person writes `50_000_000`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() * 4 / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push('_');
        }
        out.push(digit);
    }
    out
}

/// `[u64; N]` of the logged arguments, converted through `LogArg`; the first call notes in `desc`
/// the kind of value each argument's type records (one read a call after that).
///
/// Each argument gets a marker type named after it, so a type that cannot be logged is reported
/// as "argument `x` cannot be logged" (see `fdr`'s private `Unloggable`), at the argument's span.
fn arg_values(args: &[Ident], desc: &Ident) -> Option<TokenStream> {
    if args.is_empty() {
        return None;
    }
    let markers = args
        .iter()
        .map(|a| quote_spanned!(a.span()=> #[allow(non_camel_case_types, dead_code)] enum #a {}));
    let kinded = args.iter().map(|a| {
        let private = private::path_at(a.span());
        quote_spanned!(a.span()=> (&#private::ArgProbe::<_, #a>::new(&#a)).fdr_arg_kinded())
    });
    // Mixed-site hygiene: no name of the body's can be this one.
    let all = Ident::new("__fdr_args", Span::mixed_site());
    let index = (0..args.len()).map(syn::Index::from).collect::<Vec<_>>();
    let private = private::path();
    Some(quote!({
        #[allow(unused_imports)]
        use #private::{ViaFallback as _, ViaLogArg as _};
        #(#markers)*
        let #all = (#(#kinded,)*);
        if #desc.arg_kinds_unnoted() {
            #desc.note_arg_kinds(&[#(#all.#index.1),*]);
        }
        [#(#all.#index.0),*]
    }))
}
