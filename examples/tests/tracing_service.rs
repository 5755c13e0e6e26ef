//! The tracing service runs as the README says: its one slow request fires the lookup span's
//! trigger, and the window the recorder wrote shows that request's span tree.

use std::process::Command;

#[test]
fn the_slow_request_fires_its_trigger_and_shows_its_span_tree() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("tracing_service");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("service.fdr");
    let out = Command::new(env!("CARGO_BIN_EXE_tracing_service"))
        .arg(&log)
        .output()
        .expect("the service runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("200 of 200 requests answered"), "{stdout}");
    if !fdr::ENABLED {
        return;
    }
    // One trigger, one snapshot: the other lookups are fast.
    assert!(dir.join("service-1.fdr").exists());
    assert!(!dir.join("service-2.fdr").exists());
    assert!(
        stdout.contains("triggered by slow call of tracing_service::lookup"),
        "{stdout}"
    );
    // The slowest call of the window and the calls inside it, by depth: the connection's poll,
    // the request, its lookup; parse and render take a few µs, erased when shorter than the
    // threshold (5 µs), which a debug build does not always make.
    let tree: Vec<(usize, &str)> = stdout
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("time"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| {
            // The connection's poll may still be running when the writer copies the window
            // (the trigger fires at the lookup's exit): then it is marked open.
            let l = l.trim_end().trim_end_matches(" (open)");
            let name = l.split("  ").last().unwrap_or_default().trim();
            let indent = l[..l.rfind(name).unwrap()].chars().count();
            // Other requests' `handle` calls under the same connection may last over the
            // threshold too (a debug build on a loaded machine): the tree folds them with the
            // slow one into `handle × N`, the same node.
            (indent, name.split(" × ").next().unwrap_or(name))
        })
        .collect();
    // parse and render, when kept, sit beside lookup (before or after it); the rest is the
    // chain serve > handle > lookup.
    let quick = ["tracing_service::parse", "tracing_service::render"];
    let (chain, beside): (Vec<_>, Vec<_>) = tree.iter().partition(|(_, n)| !quick.contains(n));
    let names: Vec<&str> = chain.iter().map(|(_, n)| *n).collect();
    assert_eq!(
        names,
        [
            "tracing_service::serve",
            "tracing_service::handle",
            "tracing_service::lookup"
        ],
        "{stdout}"
    );
    assert!(
        chain[0].0 < chain[1].0 && chain[1].0 < chain[2].0,
        "{stdout}"
    );
    for (indent, _) in &beside {
        assert_eq!(*indent, chain[2].0, "{stdout}");
    }
}
