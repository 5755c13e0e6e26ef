//! The await sites of an instrumented `async fn`: each `.await` in its body becomes an await of
//! the same future wrapped in `Awaited`, which times a wait when the future returns `Pending`;
//! each site gets a descriptor of its own in the function table, at the line and column where
//! the awaited expression begins.
//!
//! `expr.await` becomes `Awaited::new(&SITE, &FN, IntoFuture::into_future(expr)).await`: the
//! same conversion `.await` makes, the same value, the same temporaries (they still live to the
//! end of the enclosing statement: nothing is put in a block). The awaits of closures, `async`
//! blocks and nested items belong to other futures and stay as written.
//!
//! Macro invocations are tokens, not expressions, to the attribute, and stay as written, but
//! for tokio's `select!`, `join!` and `try_join!` (named `tokio::...`), whose futures are awaited
//! inside them: each branch's future is a site of its own, so a `select!` shows which branch
//! waited and for how long, and its losers as dropped while waiting. (A bare `select!` may be
//! `futures`', whose branches must be `FusedFuture`: it is left alone.) A `select!` or `join!`
//! whose tokens do not parse as tokio's grammar is left as written, for the macro to report.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{Block, Expr, ExprAwait, Ident, Item, Macro, Pat, Stmt, Token};

/// One await site: the descriptor's name, and where the awaited expression begins.
pub struct Site {
    pub ident: Ident,
    pub at: Span,
}

/// Rewrites the awaits of `block`, the body of the async function whose descriptor is `desc`;
/// returns its sites, in the order they appear.
pub fn rewrite(block: &mut Block, desc: &Ident, private: &TokenStream) -> Vec<Site> {
    let mut r = Rewrite {
        desc,
        private,
        sites: Vec::new(),
    };
    r.visit_block_mut(block);
    r.sites
}

struct Rewrite<'a> {
    desc: &'a Ident,
    private: &'a TokenStream,
    sites: Vec<Site>,
}

impl Rewrite<'_> {
    /// `Awaited::new(&SITE, &FN, IntoFuture::into_future(base))`, for a new site where `base`
    /// begins; `base`'s own awaits are rewritten first (`a.await.b().await`).
    fn wrap(&mut self, mut base: Expr) -> TokenStream {
        self.visit_expr_mut(&mut base);
        let at = base.span();
        let ident = Ident::new(
            &format!("__FDR_AWAIT_{}", self.sites.len()),
            Span::call_site(),
        );
        let (private, desc) = (self.private, self.desc);
        self.sites.push(Site {
            ident: ident.clone(),
            at,
        });
        // At the awaited expression: a type that is not a future is reported there.
        quote_spanned!(at=>
            #private::Awaited::new(
                &#ident,
                &#desc,
                ::core::future::IntoFuture::into_future(#base),
            )
        )
    }

    /// Rewrites the futures of tokio's `select!`, `join!` and `try_join!` in `mac` (see the
    /// module's documentation); leaves any other macro, or one that does not parse, as written.
    fn rewrite_macro(&mut self, mac: &mut Macro) {
        let segments: Vec<String> = mac
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        let [krate, name] = segments.as_slice() else {
            return;
        };
        if krate != "tokio" {
            return;
        }
        let tokens = match name.as_str() {
            "select" => Select::parse
                .parse2(mac.tokens.clone())
                .map(|s| s.rewritten(self)),
            "join" | "try_join" => Join::parse
                .parse2(mac.tokens.clone())
                .map(|j| j.rewritten(self)),
            _ => return,
        };
        if let Ok(tokens) = tokens {
            mac.tokens = tokens;
        }
    }
}

impl VisitMut for Rewrite<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            // Other futures, or not code at all to the attribute.
            Expr::Closure(_) | Expr::Async(_) => {}
            Expr::Macro(m) => self.rewrite_macro(&mut m.mac),
            Expr::Await(_) => {
                let Expr::Await(ExprAwait {
                    attrs,
                    base,
                    dot_token,
                    await_token,
                }) = std::mem::replace(e, Expr::Verbatim(TokenStream::new()))
                else {
                    unreachable!()
                };
                let wrapped = self.wrap(*base);
                *e = Expr::Verbatim(quote!(#(#attrs)* #wrapped #dot_token #await_token));
            }
            _ => visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_stmt_mut(&mut self, s: &mut Stmt) {
        match s {
            Stmt::Macro(m) => self.rewrite_macro(&mut m.mac),
            _ => visit_mut::visit_stmt_mut(self, s),
        }
    }

    fn visit_item_mut(&mut self, _: &mut Item) {}
}

/// The tokens of a `tokio::select!`: `biased;`, then branches `PATTERN = FUTURE (, if
/// CONDITION)? => HANDLER,` and an optional `else => EXPRESSION`.
struct Select {
    biased: Option<TokenStream>,
    branches: Vec<Branch>,
    otherwise: Option<(Token![else], Token![=>], Expr)>,
}

struct Branch {
    pat: Pat,
    eq: Token![=],
    future: Expr,
    condition: Option<(Token![,], Token![if], Expr)>,
    arrow: Token![=>],
    handler: Expr,
}

impl Parse for Select {
    fn parse(input: ParseStream) -> syn::Result<Select> {
        let mut biased = None;
        if input.peek(Ident) && input.fork().parse::<Ident>()? == "biased" && input.peek2(Token![;])
        {
            let word: Ident = input.parse()?;
            let semi: Token![;] = input.parse()?;
            biased = Some(quote!(#word #semi));
        }
        let mut branches = Vec::new();
        let mut otherwise = None;
        while !input.is_empty() {
            if input.peek(Token![else]) {
                otherwise = Some((input.parse()?, input.parse()?, input.parse()?));
                input.parse::<Option<Token![,]>>()?;
                continue;
            }
            let pat = Pat::parse_multi_with_leading_vert(input)?;
            let eq = input.parse()?;
            let future = input.parse()?;
            let condition = if input.peek(Token![,]) && input.peek2(Token![if]) {
                Some((input.parse()?, input.parse()?, input.parse()?))
            } else {
                None
            };
            let arrow = input.parse()?;
            let handler = Expr::parse_with_earlier_boundary_rule(input)?;
            // A block needs no comma after it, as a `match` arm's does not.
            let block = matches!(handler, Expr::Block(_));
            branches.push(Branch {
                pat,
                eq,
                future,
                condition,
                arrow,
                handler,
            });
            if !input.is_empty() && (!block || input.peek(Token![,])) {
                input.parse::<Token![,]>()?;
            }
        }
        if branches.is_empty() {
            return Err(input.error("no branch"));
        }
        Ok(Select {
            biased,
            branches,
            otherwise,
        })
    }
}

impl Select {
    fn rewritten(self, r: &mut Rewrite<'_>) -> TokenStream {
        let mut out = self.biased.unwrap_or_default();
        for b in self.branches {
            let Branch {
                pat,
                eq,
                future,
                condition,
                arrow,
                mut handler,
            } = b;
            let future = r.wrap(future);
            let condition = condition.map(|(comma, if_, mut cond)| {
                r.visit_expr_mut(&mut cond);
                quote!(#comma #if_ #cond)
            });
            r.visit_expr_mut(&mut handler);
            out.extend(quote!(#pat #eq #future #condition #arrow #handler,));
        }
        if let Some((else_, arrow, mut e)) = self.otherwise {
            r.visit_expr_mut(&mut e);
            out.extend(quote!(#else_ #arrow #e,));
        }
        out
    }
}

/// The tokens of a `tokio::join!` or `try_join!`: an optional `biased;`, then futures.
struct Join {
    biased: Option<TokenStream>,
    futures: Punctuated<Expr, Token![,]>,
}

impl Parse for Join {
    fn parse(input: ParseStream) -> syn::Result<Join> {
        let mut biased = None;
        if input.peek(Ident) && input.peek2(Token![;]) {
            let word: Ident = input.parse()?;
            if word != "biased" {
                return Err(syn::Error::new(word.span(), "not `biased`"));
            }
            let semi: Token![;] = input.parse()?;
            biased = Some(quote!(#word #semi));
        }
        Ok(Join {
            biased,
            futures: Punctuated::parse_terminated(input)?,
        })
    }
}

impl Join {
    fn rewritten(self, r: &mut Rewrite<'_>) -> TokenStream {
        let mut out = self.biased.unwrap_or_default();
        for pair in self.futures.into_pairs() {
            let (future, comma) = pair.into_tuple();
            out.extend(r.wrap(future));
            comma.to_tokens(&mut out);
        }
        out
    }
}
