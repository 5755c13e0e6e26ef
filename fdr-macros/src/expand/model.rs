//! The annotation, validated: what `#[instrument_fdr]` records and how, decided once.
//!
//! Validation (`item.rs`, `function.rs`) turns the attribute and the item into these types or
//! into the errors of a wrong annotation; expansion (`emit.rs`) consumes them and cannot fail.
//! Everything expansion needs is here in the shape it needs it, so nothing is looked up or
//! checked a second time.

// Syntax trees are large values, built once per annotation at compile time and moved a handful
// of times: boxing the large variants would add indirection and buy nothing.
#![allow(clippy::large_enum_variant)]

use proc_macro2::Span;
use syn::{
    Attribute, Block, Expr, Ident, ImplItem, ImplItemFn, Item, ItemFn, ItemImpl, ItemMod,
    ItemTrait, Signature, Token, TraitItem, TraitItemFn,
};

use super::name::Name;

/// What the attribute was put on, with every function in it that is to be recorded.
pub enum Annotated {
    /// A function annotated alone (a free function, or a method whose `impl` the attribute
    /// cannot see), or a free function of an annotated module.
    Fn(Recorded<ItemFn>),
    /// An `impl` block. Its `items` are empty: `members` holds them, in order.
    Impl {
        block: ItemImpl,
        members: Vec<Member<ImplItem, ImplItemFn>>,
    },
    /// A trait. Its `items` are empty: `members` holds them, in order.
    Trait {
        block: ItemTrait,
        members: Vec<Member<TraitItem, TraitItemFn>>,
    },
    /// An inline module. Its `content` holds its braces and no items: `members` holds them, in
    /// order.
    Mod {
        module: ItemMod,
        members: Vec<ModMember>,
    },
}

/// One item of an annotated `impl` block or trait.
pub enum Member<I, F> {
    /// Left as written: not a method, a method marked `skip`, a `const fn`, a trait method
    /// without a default body, or a method whose body cannot take long (see `trivial.rs`) and
    /// that neither it nor its block marks `always`. A method's own `#[instrument_fdr(...)]` is
    /// removed.
    AsWritten(I),
    /// A method to record.
    Recorded(Recorded<F>),
}

/// One item of an annotated module.
pub enum ModMember {
    /// Left as written: an item that holds no function; a function, `impl` block, trait or
    /// module marked `skip` (the `skip` removed); a function left out as a block's methods are
    /// (its own `#[instrument_fdr(...)]` removed); or an `impl` block, trait or module with an
    /// `#[instrument_fdr(...)]` of its own, which expands it later.
    AsWritten(Item),
    /// A free function, `impl` block, trait or nested module, annotated by the module.
    Annotated(Annotated),
}

/// A function to record.
pub struct Recorded<F> {
    /// The function as written (its own `#[instrument_fdr(...)]` removed), with its body moved
    /// out into `body`: expansion puts the instrumented body in its place.
    pub item: F,
    pub body: Body,
    pub descriptor: Descriptor,
}

/// A function item whose body expansion replaces (and, for an `async fn`, its signature).
pub trait WithBody {
    fn set_body(&mut self, body: Block);
    fn sig_mut(&mut self) -> &mut Signature;
    fn attrs(&self) -> &[Attribute];
    fn attrs_mut(&mut self) -> &mut Vec<Attribute>;
}

impl WithBody for ItemFn {
    fn set_body(&mut self, body: Block) {
        *self.block = body;
    }
    fn sig_mut(&mut self) -> &mut Signature {
        &mut self.sig
    }
    fn attrs(&self) -> &[Attribute] {
        &self.attrs
    }
    fn attrs_mut(&mut self) -> &mut Vec<Attribute> {
        &mut self.attrs
    }
}

impl WithBody for ImplItemFn {
    fn set_body(&mut self, body: Block) {
        self.block = body;
    }
    fn sig_mut(&mut self) -> &mut Signature {
        &mut self.sig
    }
    fn attrs(&self) -> &[Attribute] {
        &self.attrs
    }
    fn attrs_mut(&mut self) -> &mut Vec<Attribute> {
        &mut self.attrs
    }
}

impl WithBody for TraitItemFn {
    fn set_body(&mut self, body: Block) {
        self.default = Some(body);
    }
    fn sig_mut(&mut self) -> &mut Signature {
        &mut self.sig
    }
    fn attrs(&self) -> &[Attribute] {
        &self.attrs
    }
    fn attrs_mut(&mut self) -> &mut Vec<Attribute> {
        &mut self.attrs
    }
}

/// The body of a function to record, by how it is recorded.
pub enum Body {
    /// A body run once per call: a guard records the entry, and the exit when it drops.
    Sync(Block),
    /// A body run once per call that ends with a call (`tail`): the guard records a tail exit
    /// just before that call.
    Tail(TailBody),
    /// An `async fn`'s body: the function becomes a plain `fn` returning its future, made at the
    /// call, which records the task and each of its polls.
    Async(Block),
}

/// A body that ends with a call, split at that call.
pub struct TailBody {
    /// The body without its final statement.
    pub block: Block,
    /// How the final statement holds the call.
    pub end: TailEnd,
    /// The final call, `f(..)` or `x.f(..)`.
    pub call: Expr,
}

/// The final statement of a `tail` body, around its call. Invisible groups around the call
/// (left by `macro_rules!` fragments) are dropped: the call is put in a block, which delimits
/// it as well.
pub enum TailEnd {
    /// The call is the body's value.
    Value,
    /// `return call(..)`, with its attributes and its `;` if it had one.
    Return {
        attrs: Vec<Attribute>,
        return_token: Token![return],
        semi: Option<Token![;]>,
    },
}

/// The function's entry in the function table.
pub struct Descriptor {
    pub name: FnName,
    /// The logged parameters: each the parameter's own identifier (raw if it was written
    /// `r#type`) at the span of its mention in `log_args`, where errors about it belong.
    pub args: Vec<Ident>,
    /// The span of the function's name, whose file and line the table records.
    pub at: Span,
    /// `trigger = "..."`: the slow-call limit (in nanoseconds, never zero, or learned).
    pub trigger: Option<super::options::Limit>,
}

/// Where a function's name in the table comes from.
pub enum FnName {
    /// Known from the attribute: given with `name = "..."`, or derived from the annotated
    /// `impl` block, trait or module.
    Known(Name),
    /// A function annotated alone, which may be a method of a type the attribute cannot see:
    /// the name is read from the type path of a function nested in it, as a backtrace spells
    /// it, when the table is written. `Name` (`module::function`) stands in until then.
    FromPath(Name),
}
