//! `fdr_scope!("name")`: a guard bound to a hidden local, so the rest of the block is recorded.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{Error, LitStr, Result, Token};

use super::name::Name;
use super::private;

struct ScopeName(LitStr);

const USAGE: &str =
    "fdr_scope! takes the scope's name as a string literal: `fdr_scope!(\"parse\");`";

impl Parse for ScopeName {
    fn parse(input: ParseStream) -> Result<Self> {
        if input.is_empty() {
            return Err(Error::new(Span::call_site(), USAGE));
        }
        let lit: LitStr = input.parse().map_err(|e| Error::new(e.span(), USAGE))?;
        input.parse::<Option<Token![,]>>()?;
        if !input.is_empty() {
            return Err(Error::new(
                input.span(),
                "fdr_scope! takes only the scope's name; remove this",
            ));
        }
        if lit.value().is_empty() {
            return Err(Error::new(
                lit.span(),
                "the scope's name cannot be empty: `fdr_scope!(\"parse\");`",
            ));
        }
        Ok(ScopeName(lit))
    }
}

pub fn expand(input: TokenStream, enabled: bool) -> Result<TokenStream> {
    let ScopeName(lit) = syn::parse2(input)?;
    if !enabled {
        return Ok(TokenStream::new());
    }
    let name = Name::in_module(&lit.value());
    // Mixed-site hygiene: the user's code cannot name the guard, and two scopes in one block
    // each get their own.
    let guard = syn::Ident::new("__fdr_scope", Span::mixed_site());
    let private = private::path();
    Ok(quote! {
        let #guard = {
            #[#private::linkme::distributed_slice(#private::FUNCTIONS)]
            #[linkme(crate = #private::linkme)]
            static __FDR_SCOPE: #private::FnDesc = #private::FnDesc::new(
                #name,
                ::core::file!(),
                ::core::line!(),
                #private::FnKindTag::Scope,
                &[],
            );
            #private::CallGuard::enter(&__FDR_SCOPE)
        };
    })
}
