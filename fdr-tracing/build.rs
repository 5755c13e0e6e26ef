//! Writes the spare descriptors: `SPARES` descriptors in fdr's function table, each named at run
//! time by the callsite that claims it (see `src/callsites.rs`).

use std::fmt::Write as _;

/// Keep in step with `callsites::SPARES`.
const SPARES: usize = 1024;

fn main() {
    let mut s = String::new();
    for k in 0..SPARES {
        let _ = writeln!(
            s,
            "#[linkme::distributed_slice(fdr_runtime::FUNCTIONS)]\n\
             static SPARE_{k}: FnDesc = FnDesc::named(info::<{k}>, FnKindTag::Scope);"
        );
    }
    let _ = writeln!(s, "/// The spare descriptors, by slot.");
    let _ = write!(s, "static SLOTS: [&FnDesc; SPARES] = [");
    for k in 0..SPARES {
        let _ = write!(s, "&SPARE_{k}, ");
    }
    let _ = writeln!(s, "];");
    let out = std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("spares.rs");
    std::fs::write(out, s).unwrap();
    println!("cargo:rerun-if-changed=build.rs");
}
