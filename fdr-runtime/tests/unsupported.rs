//! A platform fdr does not record on (Windows, the BSDs, ...), as the runtime built with
//! `--cfg fdr_unsupported` takes any system for one (`.ci/run` runs this file so): `start` says
//! so with an error that names the platform, `FDR_OPTIONS` says so once on stderr and the
//! program runs on, and the hooks record nothing. Without the cfg this file is empty.

#![cfg(fdr_unsupported)]

use fdr_runtime::{CallGuard, Config, Error, FnDesc, FnKindTag};

#[fdr_runtime::linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
#[linkme(crate = fdr_runtime::linkme)]
static WORK: FnDesc = FnDesc::new(
    "unsupported::work",
    file!(),
    line!(),
    FnKindTag::Function,
    &[],
);

#[test]
fn start_says_which_platform_does_not_record() {
    let Err(e) = fdr_runtime::start(Config::default()) else {
        panic!("a recorder started");
    };
    assert!(
        matches!(e, Error::Unsupported { platform } if platform == std::env::consts::OS),
        "{e:?}"
    );
    let said = e.to_string();
    assert!(
        said.contains(&format!("not supported on {}", std::env::consts::OS)),
        "{said}"
    );
    // A bad configuration is still its own error first: the platform does not hide it.
    assert!(matches!(
        fdr_runtime::start(Config::default().buffer_size(1)),
        Err(Error::Config { .. })
    ));
}

#[test]
#[ignore = "a child process of fdr_options_say_once_that_nothing_is_recorded"]
fn child_calls_with_fdr_options() {
    for _ in 0..1000 {
        drop(CallGuard::enter(&WORK));
    }
    assert!(fdr_runtime::recorder().is_none());
    println!("ran");
}

#[test]
fn fdr_options_say_once_that_nothing_is_recorded() {
    let dir = std::env::temp_dir().join(format!("fdr-unsupported-{}", std::process::id()));
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "child_calls_with_fdr_options",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            "FDR_OPTIONS",
            format!("out={}", dir.join("app.fdr").display()),
        )
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("ran"));
    let said: Vec<&str> = stderr.lines().filter(|l| l.starts_with("fdr:")).collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains("not supported on") && said[0].ends_with("recording stays off"),
        "{stderr}"
    );
    // Nothing was written, and no place for a log was even made.
    assert!(!dir.exists());
}
