//! A whole program annotated whole: the figure a user who puts `#[instrument_fdr]` on
//! everything can expect, where a leaf loop only gives the cost of one call.
//!
//! The program (`lang.rs`) tokenizes, parses and interprets a fixed set of small programs in a
//! language of integer functions, `let`, `if`, `while` and `print`, with many tiny helpers
//! beside the real work. Its one source is built several ways, each module annotated whole:
//!
//! | module | annotation |
//! |---|---|
//! | [`plain`] | none |
//! | [`fdr_rule`] | `#[fdr::instrument_fdr]` on the module: functions whose body cannot take long are left out at compile time |
//! | [`fdr_always`] | `#[fdr::instrument_fdr(always)]` on the module: every function |
//! | [`tracing_each`] | `#[tracing::instrument(skip_all)]` on every function (with [`crate::peers::tracing_mem`]) |
//! | [`fastrace_each`] | `#[fastrace::trace]` on every function (with [`crate::peers::fastrace_discard`]), a root span per program |
//!
//! ```
//! // Every build computes the same thing (a few of the inputs: doc tests run unoptimized).
//! let sources = &fdr_benches::whole::sources()[3..7];
//! let plain = fdr_benches::whole::run_plain(sources);
//! assert_eq!(plain, fdr_benches::whole::run_fdr_rule(sources));
//! assert_eq!(plain, fdr_benches::whole::run_fdr_always(sources));
//! ```

#[macro_use]
mod lang;

lang!(
    /// The workload without instrumentation.
    mod plain; each:
);
lang!(
    /// The workload annotated whole with fdr: functions whose body cannot take long are left out.
    #[fdr::instrument_fdr]
    mod fdr_rule; each:
);
lang!(
    /// The workload annotated whole with fdr, every function kept in.
    #[fdr::instrument_fdr(always)]
    mod fdr_always; each:
);
lang!(
    /// The workload with `tracing`'s attribute on every function.
    mod tracing_each; each: #[tracing::instrument(skip_all)]
);
lang!(
    /// The workload with `fastrace`'s attribute on every function.
    mod fastrace_each; each: #[fastrace::trace]
);

/// The functions and methods in the workload's source (`lang.rs`), counted by hand: the number
/// `fdr_always` records.
pub const SOURCE_FUNCTIONS: usize = 87;

/// Module path prefixes of the fdr builds, as their functions are named in a log.
pub const FDR_RULE_PREFIX: &str = "fdr_benches::whole::fdr_rule::";
/// See [`FDR_RULE_PREFIX`].
pub const FDR_ALWAYS_PREFIX: &str = "fdr_benches::whole::fdr_always::";

/// Hand-written programs: recursion, loops over calls, nested loops.
const PROGRAMS: [&str; 5] = [
    // Recursion: many short calls, a few long ones near the root.
    "# Fibonacci, the slow way.
    fn fib(n) {
        if n < 2 { return n; }
        return fib(n - 1) + fib(n - 2);
    }
    print fib(16);",
    // A loop calling a function that loops.
    "fn is_prime(n) {
        if n < 2 { return 0; }
        let d = 2;
        while d * d <= n {
            if n % d == 0 { return 0; }
            d = d + 1;
        }
        return 1;
    }
    let count = 0;
    let i = 0;
    while i < 2000 {
        if is_prime(i) { count = count + 1; }
        i = i + 1;
    }
    print count;",
    // Collatz: a long inner loop per call.
    "fn steps(n) {
        let s = 0;
        while n != 1 {
            if n % 2 == 0 { n = n / 2; } else { n = 3 * n + 1; }
            s = s + 1;
        }
        return s;
    }
    let best = 0;
    let at = 0;
    let i = 1;
    while i < 150 {
        let s = steps(i);
        if s > best { best = s; at = i; }
        i = i + 1;
    }
    print best;
    print at;",
    // Nested loops around a short function.
    "fn gcd(a, b) {
        while b != 0 {
            let t = b;
            b = a % b;
            a = t;
        }
        return a;
    }
    let sum = 0;
    let i = 1;
    while i < 36 {
        let j = 1;
        while j < 36 {
            sum = sum + gcd(i, j);
            j = j + 1;
        }
        i = i + 1;
    }
    print sum;",
    // Errors are part of real input too: this one stops at a division by zero.
    "fn f(x) { return 100 / x; }
    let i = 3;
    while i > -1 { print f(i); i = i - 1; }",
];

/// Generated programs per run: many functions with long expressions, each called once. Mostly
/// lexing and parsing, like a compiler front end or regex-syntax parsing patterns.
const GENERATED: usize = 40;
/// Functions per generated program.
const GENERATED_FNS: usize = 24;

/// A small deterministic generator (an LCG), so every run parses the same text.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

fn expression(g: &mut Lcg, params: &[String], depth: u32, out: &mut String) {
    const OPS: [&str; 12] = [
        "+", "-", "*", "+", "-", "<", "==", "!=", "&&", "||", ">=", "%",
    ];
    if depth == 0 || g.next(4) == 0 {
        match g.next(3) {
            0 => out.push_str(&g.next(1000).to_string()),
            _ => out.push_str(&params[g.next(params.len() as u64) as usize]),
        }
        return;
    }
    out.push('(');
    expression(g, params, depth - 1, out);
    let op = OPS[g.next(OPS.len() as u64) as usize];
    out.push(' ');
    out.push_str(op);
    out.push(' ');
    if op == "%" {
        // Never zero.
        out.push_str(&(1 + g.next(97)).to_string());
    } else {
        expression(g, params, depth - 1, out);
    }
    out.push(')');
}

fn generated(seed: u64) -> String {
    let mut g = Lcg(seed);
    let mut src = String::new();
    for f in 0..GENERATED_FNS {
        let params: Vec<String> = (0..1 + g.next(3)).map(|p| format!("arg_{p}")).collect();
        src.push_str(&format!("fn function_{f}({}) {{\n", params.join(", ")));
        src.push_str("    let value = ");
        expression(&mut g, &params, 5, &mut src);
        src.push_str(";\n    if value > 500 { value = value - ");
        expression(&mut g, &params, 3, &mut src);
        src.push_str("; }\n    return value;\n}\n");
    }
    for f in 0..GENERATED_FNS {
        let arity = src
            .split(&format!("fn function_{f}("))
            .nth(1)
            .and_then(|rest| rest.split(')').next())
            .map_or(1, |params| params.split(',').count());
        let args: Vec<String> = (0..arity).map(|a| (f * 7 + a).to_string()).collect();
        src.push_str(&format!("print function_{f}({});\n", args.join(", ")));
    }
    src
}

/// The fixed input set: the hand-written programs and the generated ones.
pub fn sources() -> Vec<String> {
    let mut all: Vec<String> = PROGRAMS.iter().map(|p| p.to_string()).collect();
    all.extend((0..GENERATED as u64).map(|seed| generated(seed + 1)));
    all
}

/// Runs every source through `run_source` and `token_stats`, and folds the checksums.
#[inline(always)]
fn drive(
    sources: &[String],
    mut run_source: impl FnMut(&str) -> u64,
    token_stats: fn(&str) -> (usize, u64),
) -> u64 {
    let mut h = 0u64;
    for src in sources {
        let (tokens, width) = token_stats(src);
        h = h.rotate_left(7) ^ run_source(src) ^ (tokens as u64) ^ width;
    }
    h
}

/// The workload, uninstrumented.
#[inline(never)]
pub fn run_plain(sources: &[String]) -> u64 {
    drive(sources, plain::run_source, plain::token_stats)
}

/// The workload annotated whole with `#[fdr::instrument_fdr]`.
#[inline(never)]
pub fn run_fdr_rule(sources: &[String]) -> u64 {
    drive(sources, fdr_rule::run_source, fdr_rule::token_stats)
}

/// The workload annotated whole with `#[fdr::instrument_fdr(always)]`.
#[inline(never)]
pub fn run_fdr_always(sources: &[String]) -> u64 {
    drive(sources, fdr_always::run_source, fdr_always::token_stats)
}

/// The workload with `#[tracing::instrument(skip_all)]` on every function. Call
/// [`crate::peers::tracing_mem::setup`] first, or `tracing` records nothing.
///
/// ```
/// fdr_benches::peers::tracing_mem::setup();
/// let sources = &fdr_benches::whole::sources()[3..5];
/// let before = fdr_benches::peers::tracing_mem::recorded();
/// assert_eq!(fdr_benches::whole::run_tracing(sources), fdr_benches::whole::run_plain(sources));
/// assert!(fdr_benches::peers::tracing_mem::recorded() > before);
/// ```
#[inline(never)]
pub fn run_tracing(sources: &[String]) -> u64 {
    drive(sources, tracing_each::run_source, tracing_each::token_stats)
}

/// The workload with `#[fastrace::trace]` on every function, a root span per program; ends
/// with `fastrace::flush()`, so that it is charged for its collector's work. Call
/// [`crate::peers::fastrace_discard::setup`] first.
///
/// ```
/// fdr_benches::peers::fastrace_discard::setup();
/// let sources = &fdr_benches::whole::sources()[3..5];
/// let before = fdr_benches::peers::fastrace_discard::spans_reported();
/// assert_eq!(fdr_benches::whole::run_fastrace(sources), fdr_benches::whole::run_plain(sources));
/// assert!(fdr_benches::peers::fastrace_discard::spans_reported() > before);
/// ```
#[inline(never)]
pub fn run_fastrace(sources: &[String]) -> u64 {
    use fastrace::collector::SpanContext;
    use fastrace::prelude::Span;
    let h = drive(
        sources,
        |src| {
            let root = Span::root("program", SpanContext::random());
            let _parent = root.set_local_parent();
            fastrace_each::run_source(src)
        },
        |src| {
            let root = Span::root("token_stats", SpanContext::random());
            let _parent = root.set_local_parent();
            fastrace_each::token_stats(src)
        },
    );
    fastrace::flush();
    h
}
