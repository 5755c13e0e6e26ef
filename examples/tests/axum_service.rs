//! The axum service runs as the README says: every request answered, the one slow downstream
//! call fires the trigger named by its short name, and the window shows the request's
//! arguments as its extractors bound them.

use std::process::Command;

#[test]
fn the_slow_request_fires_the_trigger_and_its_arguments_read_as_written() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("axum_service");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("svc.fdr");
    let out = Command::new(env!("CARGO_BIN_EXE_axum_service"))
        .arg(&log)
        .env_remove("FDR_OPTIONS")
        .output()
        .expect("the service runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("40 of 40 requests answered"), "{stdout}");
    if !fdr::ENABLED {
        return;
    }
    // The short name matched the downstream call: no warning, one snapshot.
    assert!(!stderr.contains("matches no function"), "{stderr}");
    let snapshot = dir.join("svc-1.fdr");
    assert!(snapshot.exists(), "{stderr}");
    assert!(!dir.join("svc-2.fdr").exists());
    assert!(
        stdout.contains("triggered by slow call of axum_service::fetch_price"),
        "{stdout}"
    );
    // The slow request's handler, with what its extractors bound.
    let mut replay = Vec::new();
    fdr_cli::run(
        &[
            "replay".into(),
            "--function".into(),
            "quote".into(),
            snapshot.to_string_lossy().into_owned(),
        ],
        &mut replay,
    )
    .unwrap();
    let replay = String::from_utf8(replay).unwrap();
    assert!(
        replay.contains("axum_service::quote(symbol=\"SLOW\", currency=\"EUR\")"),
        "{replay}"
    );
}
