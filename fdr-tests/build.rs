//! Says at build time whether this machine lets a process run on two CPUs: the tests that move a
//! thread from one CPU to another are then compiled as ignored, with the reason, instead of
//! passing without checking anything. CI builds and runs the tests on the same machine.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(fdr_single_cpu)");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        println!("cargo::rustc-cfg=fdr_single_cpu");
    }
    println!("cargo::rerun-if-changed=build.rs");
}
