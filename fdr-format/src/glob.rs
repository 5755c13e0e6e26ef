//! How a pattern of function names matches a name, for every reader and writer of logs: the
//! runtime's triggers (`trigger=app::*:10ms`) and the `fdr` command's `--function`.

/// Whether `name` matches `pattern`, where `*` matches any run of characters (none included)
/// and every other character itself.
///
/// Greedy, with one backtrack point (on a mismatch, the last `*` takes one more character):
/// linear in practice and never recursive, so a hostile pattern or name cannot exhaust the
/// stack.
///
/// ```
/// use fdr_format::glob::matches;
/// assert!(matches("app::*", "app::handle"));
/// assert!(matches("*::step", "app::Worker::step"));
/// assert!(matches("a*b*c", "aXbYbZc"));
/// assert!(!matches("app::*", "lib::app::handle"));
/// assert!(matches("*", ""));
/// ```
pub fn matches(pattern: &str, name: &str) -> bool {
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        if i < p.len() && p[i] == b'*' {
            star = Some((i, j));
            i += 1;
        } else if i < p.len() && p[i] == n[j] {
            i += 1;
            j += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == b'*')
}
