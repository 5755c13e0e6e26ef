//! The quickstart runs as the README says and shows what it recorded.

use std::process::Command;

#[test]
fn quickstart_records_its_workload_and_prints_the_table() {
    let log = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("quickstart-test.fdr");
    let _ = std::fs::remove_file(&log);
    let out = Command::new(env!("CARGO_BIN_EXE_quickstart"))
        .arg(&log)
        .output()
        .expect("the quickstart runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stdout.contains(&format!("log written to {}", log.display())),
        "{stdout}"
    );
    assert!(stdout.contains("handled 160 requests"), "{stdout}");
    // The expected panic is reported in one line, and nothing else panicked.
    assert_eq!(
        stderr.matches("caught the panic of request 77").count(),
        1,
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");

    let table: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("quickstart::"))
        .collect();
    let row = |name: &str| {
        table
            .iter()
            .find(|l| l.split_whitespace().last() == Some(name))
            .unwrap_or_else(|| panic!("no row for {name} in\n{stdout}"))
    };
    let count = |name: &str| -> u64 {
        row(name)
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    if fdr::ENABLED {
        assert_eq!(count("quickstart::worker"), 4);
        assert_eq!(count("quickstart::handle"), 160);
        assert_eq!(count("quickstart::parse"), 160);
        assert_eq!(count("quickstart::slow_io"), 16, "requests 0, 10, .. 150");
        assert_eq!(count("quickstart::join_workers"), 1);
        // Polled once per chunk, plus the poll that finishes.
        assert_eq!(count("quickstart::download"), 6);
        row("quickstart::fib");
        row("quickstart::Cache::get");
        row("quickstart::Cache::insert");
        assert!(std::fs::metadata(&log).unwrap().len() > 32);
    }
}
