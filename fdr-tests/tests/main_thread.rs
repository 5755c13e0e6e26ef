//! The process's main thread is named "main" in logs, as in Rust's panic messages, and not by its
//! kernel name (the program's); other threads keep theirs. No test harness: this runs on the
//! main thread itself.

use fdr_testkit::logs::decode;
use fdr_testkit::recording::every_call;

#[fdr::instrument_fdr]
fn work(n: u64) -> u64 {
    std::hint::black_box(n * 3)
}

fn main() {
    let rec = fdr_runtime::start(every_call()).expect("start");
    work(1);
    std::thread::Builder::new()
        .name("worker".into())
        .spawn(|| work(2))
        .unwrap()
        .join()
        .unwrap();
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).expect("finish");
    let log = decode(&bytes[..]).expect("decode");
    let pid = std::process::id() as i32;
    let mut names: Vec<(bool, String)> = log
        .threads
        .iter()
        .map(|t| (t.tid == pid, t.name.clone()))
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![(false, "worker".to_string()), (true, "main".to_string())]
    );
    // And the command line finds it by that name.
    let dir = std::env::temp_dir().join(format!("fdr-main-thread-{pid}"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("main.fdr");
    std::fs::write(&path, &bytes).unwrap();
    let mut out = Vec::new();
    let args = ["account", "--thread", "main", path.to_str().unwrap()];
    let ran = fdr_cli::run(&args, &mut out);
    std::fs::remove_dir_all(&dir).ok();
    ran.expect("fdr account --thread main");
    let out = String::from_utf8_lossy(&out);
    assert!(out.contains("main_thread::work"), "{out}");
    println!("main_thread: 1 passed, 0 failed");
}
