//! Says at build time what the machine the tests will run on cannot give, so that the tests that
//! need it are compiled as ignored, with the reason, instead of passing without checking
//! anything:
//!
//! - `fdr_single_cpu`: this machine lets a process run on one CPU only (the tests that move a
//!   thread from one CPU to another). CI builds and runs the tests on the same machine.
//! - `fdr_emulated`: the tests are built to run under qemu-user (`FDR_TEST_EMULATOR` names it;
//!   `scripts/test-aarch64` sets it), whose limits the tests that meet them name.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(fdr_single_cpu)");
    println!("cargo::rustc-check-cfg=cfg(fdr_emulated)");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        println!("cargo::rustc-cfg=fdr_single_cpu");
    }
    if std::env::var_os("FDR_TEST_EMULATOR").is_some_and(|e| !e.is_empty()) {
        println!("cargo::rustc-cfg=fdr_emulated");
    }
    println!("cargo::rerun-if-env-changed=FDR_TEST_EMULATOR");
    println!("cargo::rerun-if-changed=build.rs");
}
