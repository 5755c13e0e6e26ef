//! Which bodies cannot take long: an annotated `impl` block, trait or module leaves the
//! functions with such a body uninstrumented, as XRay's instruction threshold does, so that
//! annotating everything does not make every accessor pay for two clock reads.
//!
//! The rule is syntactic, since a macro sees no types, and errs toward recording: a body that
//! calls nothing, loops nowhere and never suspends runs each of its expressions at most once,
//! so its time is bounded by its length. A body cannot take long when it contains none of:
//!
//! - a function or method call (`f(x)`, `x.f()`, `T::f()`), except a call of a path whose last
//!   segment is capitalised (`Some(x)`, `Ok(v)`, `Self(n)`, `Kind::Leaf(n)`), which Rust's naming
//!   conventions (the `non_snake_case` lint) make a tuple struct or enum variant constructor;
//! - a loop: `loop`, `while`, `for`, or an array repeat `[x; n]`, which copies `x` n times;
//! - a macro invocation, anywhere: a macro can expand to calls and loops;
//! - `.await`, `yield`, or a `try` block;
//! - indexing `a[i]`, which calls `Index::index` (a map lookup, for a map);
//! - the `?` operator, which calls `From::from` on the error;
//! - syntax this check does not know.
//!
//! Closures, `async` blocks and items nested in the body are checked by the same rule: a
//! closure that calls something makes the body count as non-trivial even if it is only returned.
//! Everything else is trivial: literals, paths, field access, references and dereferences,
//! casts, struct and tuple construction, ranges, assignments, `let`, `if`, `match`, blocks,
//! `return`, `break`, and the arithmetic, bitwise, logical and comparison operators.
//!
//! What syntax cannot show is not seen: an operator overloaded on a user's type runs that
//! type's `Add::add` (or `PartialEq::eq`, `Deref::deref`...), and values going out of scope
//! run their `Drop`. Those implementations are functions of their own, recorded where they are
//! annotated; a method left out only loses its own entry and exit around them.

use syn::visit::{self, Visit};
use syn::{Block, Expr, Macro};

/// True when `body` cannot take long, by the rule above.
pub fn cannot_take_long(body: &Block) -> bool {
    let mut check = Check { trivial: true };
    check.visit_block(body);
    check.trivial
}

struct Check {
    trivial: bool,
}

impl<'ast> Visit<'ast> for Check {
    fn visit_expr(&mut self, expr: &'ast Expr) {
        if !self.trivial {
            return;
        }
        match expr {
            Expr::Call(call) if is_constructor(&call.func) => visit::visit_expr_call(self, call),
            Expr::Call(_)
            | Expr::MethodCall(_)
            | Expr::Macro(_)
            | Expr::Loop(_)
            | Expr::While(_)
            | Expr::ForLoop(_)
            | Expr::Repeat(_)
            | Expr::Await(_)
            | Expr::Yield(_)
            | Expr::TryBlock(_)
            | Expr::Index(_)
            | Expr::Try(_)
            | Expr::Verbatim(_) => self.trivial = false,
            Expr::Array(_)
            | Expr::Assign(_)
            | Expr::Async(_)
            | Expr::Binary(_)
            | Expr::Block(_)
            | Expr::Break(_)
            | Expr::Cast(_)
            | Expr::Closure(_)
            | Expr::Const(_)
            | Expr::Continue(_)
            | Expr::Field(_)
            | Expr::Group(_)
            | Expr::If(_)
            | Expr::Infer(_)
            | Expr::Let(_)
            | Expr::Lit(_)
            | Expr::Match(_)
            | Expr::Paren(_)
            | Expr::Path(_)
            | Expr::Range(_)
            | Expr::RawAddr(_)
            | Expr::Reference(_)
            | Expr::Return(_)
            | Expr::Struct(_)
            | Expr::Tuple(_)
            | Expr::Unary(_)
            | Expr::Unsafe(_) => visit::visit_expr(self, expr),
            // Syntax added to `syn` after this was written: not known, so not trivial.
            _ => self.trivial = false,
        }
    }

    /// Macros in statement, item, type or pattern position.
    fn visit_macro(&mut self, _: &'ast Macro) {
        self.trivial = false;
    }
}

/// A callee that names a tuple struct or an enum variant by Rust's naming conventions: a path
/// whose last segment starts with an uppercase letter.
fn is_constructor(callee: &Expr) -> bool {
    match callee {
        Expr::Path(path) => {
            path.qself.is_none()
                && path
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident.to_string().starts_with(|c: char| c.is_uppercase()))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::cannot_take_long;

    fn trivial(body: &str) -> bool {
        cannot_take_long(&syn::parse_str(body).expect("a block"))
    }

    #[test]
    fn accessors_and_plain_arithmetic_are_trivial() {
        for body in [
            "{}",
            "{ self.n }",
            "{ &self.items }",
            "{ self.n += 1; self.n }",
            "{ self.end - self.start == 0 }",
            "{ Point { x: self.x as u64, ..*self } }",
            "{ (self.a, self.b) }",
            "{ Some(self.n) }",
            "{ Self(n) }",
            "{ Kind::Leaf(n) }",
            "{ if self.n > 3 { Ok(self.n) } else { Err(Error::Small) } }",
            "{ match self { Self::A(n) => *n, Self::B => 0 } }",
            "{ let x = self.n; return x; }",
            "{ unsafe { *self.ptr } }",
            "{ 0..self.len }",
            "{ move || self.n + 1 }",
        ] {
            assert!(trivial(body), "{body} should be trivial");
        }
    }

    #[test]
    fn calls_loops_macros_and_awaits_are_not() {
        for body in [
            "{ f() }",
            "{ self.items.len() }",
            "{ Self::new() }",
            "{ Some(self.compute()) }",
            "{ Point { ..Default::default() } }",
            "{ loop {} }",
            "{ while self.n > 0 { self.n -= 1; } }",
            "{ for i in 0..3 { } }",
            "{ [0u8; 4096] }",
            "{ println!(\"x\") }",
            "{ debug_assert!(self.n > 0); self.n }",
            "{ self.fut.await }",
            "{ self.items[0] }",
            "{ let n = self.n?; Ok(n) }",
            "{ move || self.compute() }",
            "{ async move { other.await } }",
            "{ fn helper() -> u32 { compute() } 1 }",
            "{ <T>::new_thing(3) }",
        ] {
            assert!(!trivial(body), "{body} should not be trivial");
        }
    }
}
