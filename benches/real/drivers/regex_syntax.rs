//! The parser: regex-syntax parses a fixed set of patterns into an AST and translates them to
//! HIR, as the `regex` crate does for every pattern it compiles.

#[path = "common.rs"]
mod common;

/// When the slow call injected for `--check-slow` first slept.
#[cfg(feature = "slow")]
fn first_slow() -> Option<std::time::Instant> {
    regex_syntax::__fdr_bench::first_slow()
}

#[cfg(not(feature = "slow"))]
fn first_slow() -> Option<std::time::Instant> {
    None
}

const PATTERNS: &[&str] = &[
    r"a+b*c?",
    r"(foo|bar|baz)+",
    r"[a-zA-Z_][a-zA-Z0-9_]*",
    r"\d{3}-\d{4}",
    r"(?i)hello\s+world",
    r"^(\w+)@(\w+)\.com$",
    r"[[:alpha:]]+[[:digit:]]*",
    "(?x) a # comment\n b c",
    r"(a|b|c|d|e|f|g)*xyz",
    r"\bfoo\b",
    r"(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})",
    r"[^\n\r]*",
    r"x{2,5}?y+?",
    r"(?s).*end",
    r"\p{Greek}+",
    r"[\p{L}\p{N}]+",
    r"\W+\S*",
    r"((a|b)(c|d))*(e|f)+",
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}",
    r"(?m)^\s*#.*$",
    r"[a-z&&[^aeiou]]+",
    r"(?:https?|ftp)://[^\s/$.?#].[^\s]*",
];

fn main() {
    common::main(PATTERNS, |p| {
        let hir = regex_syntax::Parser::new().parse(p).expect("a valid pattern");
        let ast = regex_syntax::ast::parse::Parser::new()
            .parse(p)
            .expect("a valid pattern");
        hir.properties().minimum_len().unwrap_or(0) as u64 ^ ast.span().end.offset as u64
    }, first_slow);
}
