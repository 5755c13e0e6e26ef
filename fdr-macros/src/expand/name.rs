//! The names written to the function table, as a user reads them in a backtrace.
//!
//! A name is built at compile time: the expansion is `concat!(...)` of string literals and
//! `module_path!()`, which gives `crate_name::module`. Types and traits are named by their paths
//! as written in the `impl` header, without generic arguments; a single identifier is prefixed by
//! the module path, since that is where a type declared beside its `impl` lives.

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::ext::IdentExt;
use syn::{Ident, Path, Type};

/// Where the annotated function sits, as far as the attribute can see.
pub enum Context<'a> {
    /// A function annotated alone (a free function, or a method whose `impl` is not visible),
    /// or a free function of an annotated module.
    Alone,
    /// A method of `impl Type`.
    Inherent { self_ty: &'a Type },
    /// A method of `impl Trait for Type`.
    TraitImpl { self_ty: &'a Type, trait_: &'a Path },
    /// A method with a default body, in an annotated `trait Trait`.
    Trait { trait_: &'a Ident },
}

/// Pieces of a name: string literals and `module_path!()`, joined with `concat!`.
#[derive(Default)]
pub struct Name {
    parts: Vec<Part>,
}

enum Part {
    Literal(String),
    ModulePath,
    CrateName,
}

impl Name {
    fn push(&mut self, s: &str) {
        match self.parts.last_mut() {
            Some(Part::Literal(last)) => last.push_str(s),
            _ => self.parts.push(Part::Literal(s.to_owned())),
        }
    }

    fn append(&mut self, other: Name) {
        for part in other.parts {
            match part {
                Part::Literal(s) => self.push(&s),
                other => self.parts.push(other),
            }
        }
    }

    /// A name given verbatim (`name = "..."`).
    pub fn verbatim(s: &str) -> Name {
        let mut name = Name::default();
        name.push(s);
        name
    }

    /// `module::item`, the name of a free item or of an `fdr_scope!`.
    pub fn in_module(item: &str) -> Name {
        let mut name = Name {
            parts: vec![Part::ModulePath],
        };
        name.push("::");
        name.push(item);
        name
    }

    /// The name of function `ident` in `context`.
    pub fn of_function(context: &Context, ident: &Ident) -> Name {
        let ident = ident.unraw().to_string();
        match context {
            Context::Alone => Name::in_module(&ident),
            Context::Inherent { self_ty } => {
                let mut name = type_name(self_ty);
                name.push("::");
                name.push(&ident);
                name
            }
            Context::TraitImpl { self_ty, trait_ } => {
                let mut name = Name::verbatim("<");
                name.append(type_name(self_ty));
                name.push(" as ");
                name.append(path_name(trait_));
                name.push(">::");
                name.push(&ident);
                name
            }
            Context::Trait { trait_ } => {
                let mut name = Name::in_module(&trait_.unraw().to_string());
                name.push("::");
                name.push(&ident);
                name
            }
        }
    }
}

impl ToTokens for Name {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let parts = self.parts.iter().map(|part| match part {
            Part::Literal(s) => quote!(#s),
            Part::ModulePath => quote!(::core::module_path!()),
            Part::CrateName => quote!(::core::env!("CARGO_CRATE_NAME")),
        });
        tokens.extend(quote!(::core::concat!(#(#parts),*)));
    }
}

/// Types that every module sees without declaring them: named bare, never module-prefixed.
const PRELUDE: &[&str] = &[
    "bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64",
    "i128", "isize", "f32", "f64", "String", "Vec", "Box", "Option", "Result",
];

fn type_name(ty: &Type) -> Name {
    match ty {
        Type::Path(p) if p.qself.is_none() => path_name(&p.path),
        Type::Reference(r) => {
            let mut name = Name::verbatim(if r.mutability.is_some() { "&mut " } else { "&" });
            name.append(type_name(&r.elem));
            name
        }
        Type::Slice(s) => {
            let mut name = Name::verbatim("[");
            name.append(type_name(&s.elem));
            name.push("]");
            name
        }
        Type::Paren(p) => type_name(&p.elem),
        Type::Group(g) => type_name(&g.elem),
        other => Name::verbatim(&compact(other.to_token_stream())),
    }
}

fn path_name(path: &Path) -> Name {
    let segments: Vec<String> = path
        .segments
        .iter()
        .map(|s| s.ident.unraw().to_string())
        .collect();
    let mut name = Name::default();
    let rest = match segments.first().map(String::as_str) {
        Some("crate") => {
            name.parts.push(Part::CrateName);
            &segments[1..]
        }
        Some("self") => {
            name.parts.push(Part::ModulePath);
            &segments[1..]
        }
        Some(first)
            if segments.len() == 1 && path.leading_colon.is_none() && !PRELUDE.contains(&first) =>
        {
            name.parts.push(Part::ModulePath);
            &segments[..]
        }
        _ => {
            if path.leading_colon.is_some() {
                name.push("::");
            }
            name.push(&segments.join("::"));
            return name;
        }
    };
    for segment in rest {
        name.push("::");
        name.push(segment);
    }
    name
}

/// Tokens printed without the spaces `TokenStream`'s `Display` puts between every token.
fn compact(tokens: TokenStream) -> String {
    let mut out = String::new();
    for token in tokens.to_string().split(' ') {
        let joins = out.is_empty()
            || out.ends_with(['(', '[', '&', '<', '*'])
            || token.starts_with([')', ']', ',', ';', '>']);
        if !joins {
            out.push(' ');
        }
        out.push_str(token);
    }
    out
}
