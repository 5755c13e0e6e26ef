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

/// Whether function `name` matches `pattern` as fdr reads a function pattern everywhere (the
/// runtime's triggers, `FDR_OPTIONS`' `trigger=`, the `fdr` command's `--function`): the whole
/// name matches the pattern ([`matches()`]); or, for a pattern without `*`, the name ends with
/// `::` and the pattern (`get_quote` matches `svc::get_quote`, `Worker::step` matches
/// `app::Worker::step`). A trait method, named `<Type as Trait>::method` as a backtrace shows
/// it, also matches as `Type::method` and as `Trait::method` (each with its path or the end of
/// it), the ways a user writes it.
///
/// ```
/// use fdr_format::glob::function_matches;
/// assert!(function_matches("get_quote", "svc::get_quote"));
/// assert!(function_matches("svc::*", "svc::get_quote"));
/// assert!(!function_matches("quote", "svc::get_quote"));
/// assert!(function_matches("Store::get", "<app::Cache as app::Store>::get"));
/// assert!(function_matches("app::Cache::get", "<app::Cache as app::Store>::get"));
/// ```
pub fn function_matches(pattern: &str, name: &str) -> bool {
    if matches_one(pattern, name) {
        return true;
    }
    match trait_method(name) {
        Some((ty, tr, rest)) => {
            matches_one(pattern, &format!("{ty}::{rest}"))
                || matches_one(pattern, &format!("{tr}::{rest}"))
        }
        None => false,
    }
}

fn matches_one(pattern: &str, name: &str) -> bool {
    if matches(pattern, name) {
        return true;
    }
    !pattern.contains('*')
        && name.len() > pattern.len() + 2
        && name.ends_with(pattern)
        && name[..name.len() - pattern.len()].ends_with("::")
}

/// `<Type as Trait>::rest` split into its three parts (the `as` at the top level of the
/// brackets), or `None` for another name.
fn trait_method(name: &str) -> Option<(&str, &str, &str)> {
    let inner = name.strip_prefix('<')?;
    let (mut depth, mut as_at) = (0usize, None);
    for (i, c) in inner.char_indices() {
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            '>' => {
                let at = as_at?;
                let rest = inner[i + 1..].strip_prefix("::")?;
                return Some((&inner[..at], &inner[at + 4..i], rest));
            }
            ' ' if depth == 0 && inner[i..].starts_with(" as ") && as_at.is_none() => {
                as_at = Some(i)
            }
            _ => {}
        }
    }
    None
}

/// The names of `names` close to what `pattern` asks for, nearest first (fewest edits between
/// their last segments), at most five: those whose last segment contains the pattern's (or is
/// contained in it), or is within a few edits of it (two, or a third of its length if more).
/// Empty when none is close: better no suggestion than five names that are merely the least far.
///
/// ```
/// use fdr_format::glob::closest;
/// let names = ["svc::get_quote", "svc::list_quotes", "svc::health"];
/// assert_eq!(closest("svc::getquote", &names), ["svc::get_quote"]);
/// assert!(closest("nothing_like_it", &names).is_empty());
/// ```
pub fn closest<'a>(pattern: &str, names: &[&'a str]) -> Vec<&'a str> {
    let last = |n: &str| n.rsplit("::").next().unwrap_or(n).to_ascii_lowercase();
    let want = last(pattern.trim_matches('*'));
    let near = 2.max(want.chars().count() / 3);
    let mut ranked: Vec<(usize, &str)> = names
        .iter()
        .filter_map(|&n| {
            let seg = last(n);
            let d = edit_distance(&seg, &want);
            let contains = !want.is_empty() && (seg.contains(&want) || want.contains(&seg));
            (contains || d <= near).then_some((d, n))
        })
        .collect();
    ranked.sort();
    ranked.dedup_by(|a, b| a.1 == b.1);
    ranked.into_iter().take(5).map(|(_, n)| n).collect()
}

/// Levenshtein distance, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}
