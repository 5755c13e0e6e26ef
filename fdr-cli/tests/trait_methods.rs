//! `--function` finds a trait method by the path a user writes: `Type::method`,
//! `Trait::method`, with or without their paths, or the full `<Type as Trait>::method` (issue
//! 21).

mod common;

use common::{basic_log, fdr, temp_dir, write_log};

#[test]
fn a_trait_method_is_found_by_its_type_its_trait_or_its_full_name() {
    let dir = temp_dir("trait-methods");
    let log = write_log(&dir, "basic.fdr", &basic_log());
    let full = "<app::Cache as app::Store>::get";
    let want = fdr(&["account", "--format", "csv", "--function", full, &log]).unwrap();
    assert!(want.contains(full), "{want}");
    // Filtered: its caller is left out (a --function that did nothing would keep it).
    assert!(!want.contains("app::main"), "{want}");
    let all = fdr(&["account", "--format", "csv", &log]).unwrap();
    assert!(all.contains("app::main"), "{all}");
    for written in [
        "Cache::get",
        "app::Cache::get",
        "Store::get",
        "app::Store::get",
        "get",
    ] {
        let got = fdr(&["account", "--format", "csv", "--function", written, &log]).unwrap();
        assert_eq!(got, want, "--function {written}");
    }
    // Another type's method of that name is not it.
    let other = fdr(&[
        "account",
        "--format",
        "csv",
        "--function",
        "Worker::get",
        &log,
    ]);
    assert!(other.map_or(true, |t| !t.contains(full)));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_function_filter_that_matches_nothing_says_so_names_the_closest_and_fails() {
    let dir = temp_dir("no-match");
    let log = write_log(&dir, "basic.fdr", &basic_log());
    for cmd in ["account", "calls", "stack", "replay"] {
        let e = fdr(&[cmd, "--function", "app::Worker::stpe", &log]).unwrap_err();
        assert_eq!(e.exit_code(), 1, "{cmd}");
        assert_eq!(
            e.to_string(),
            format!(
                "fdr: {log}: no function in the log matches --function app::Worker::stpe; the \
                 closest: app::Worker::step"
            ),
            "{cmd}"
        );
        // Nothing close: said, instead of the least far names.
        let e = fdr(&[cmd, "--function", "nosuch", &log]).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "fdr: {log}: no function in the log matches --function nosuch, nor is any of \
                 its 6 functions' names close (`fdr info` lists them)"
            ),
            "{cmd}"
        );
    }
    std::fs::remove_dir_all(dir).ok();
}
