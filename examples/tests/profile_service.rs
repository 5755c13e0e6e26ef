//! The profile example runs as the README says: its profile has the exact call counts, and the
//! learned trigger caught the stalled request.

use std::process::Command;

#[test]
fn profile_service_profiles_every_call_and_its_learned_trigger_fires() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("profile-service-test");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("ps.fdr");
    let out = Command::new(env!("CARGO_BIN_EXE_profile_service"))
        .arg(&log)
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("handled 1201 requests"), "{stdout}");
    if !fdr::ENABLED {
        return;
    }
    // `fdr profile`'s table: the count is the first column, the function the last.
    let count = |name: &str| -> u64 {
        stdout
            .lines()
            .find(|l| l.split_whitespace().last() == Some(name))
            .unwrap_or_else(|| panic!("no row for {name} in\n{stdout}"))
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(count("profile_service::handle"), 1201);
    assert_eq!(count("profile_service::parse"), 1201);
    assert_eq!(count("profile_service::Cache::get"), 1201);
    // One request in four hits the cache: 2 x 150 of the 1,200.
    assert_eq!(count("profile_service::compute"), 901);
    assert_eq!(count("profile_service::Cache::insert"), 901);
    assert_eq!(count("profile_service::worker"), 2);
    // The stalled request fired the learned trigger; `fdr info` says which limit and p99.
    assert!(dir.join("ps-1.fdr").exists(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("slow call of profile_service::handle")
            && stdout.contains("learned from the function's p99 of"),
        "{stdout}"
    );
    assert!(dir.join("ps.fdrprof").exists());
    std::fs::remove_dir_all(dir).ok();
}
