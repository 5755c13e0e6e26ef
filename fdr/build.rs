//! With the `tokio` and `enable` features, in a build with `--cfg tokio_unstable` (tokio's task
//! hooks): writes the descriptors of tokio's spawn locations, `SITES` spare descriptors in
//! fdr's function table, each named at run time by the first task spawned at its location (see
//! `src/tokio.rs`). Otherwise, an empty file.

use std::fmt::Write as _;

/// Keep in step with `tokio::SITES`.
const SITES: usize = 256;

fn main() {
    let mut s = String::new();
    let wanted = std::env::var_os("CARGO_FEATURE_TOKIO").is_some()
        && std::env::var_os("CARGO_FEATURE_ENABLE").is_some()
        && std::env::var_os("CARGO_CFG_TOKIO_UNSTABLE").is_some();
    if wanted {
        for k in 0..SITES {
            let _ = writeln!(
                s,
                "#[fdr_runtime::linkme::distributed_slice(fdr_runtime::FUNCTIONS)]\n\
                 #[linkme(crate = fdr_runtime::linkme)]\n\
                 static SITE_{k}: FnDesc = FnDesc::named(info::<{k}>, FnKindTag::Async);"
            );
        }
        let _ = write!(
            s,
            "/// The spare descriptors, by slot.\nstatic SLOTS: [&FnDesc; SITES] = ["
        );
        for k in 0..SITES {
            let _ = write!(s, "&SITE_{k}, ");
        }
        let _ = writeln!(s, "];");
    }
    let out = std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("spawn_sites.rs");
    std::fs::write(out, s).unwrap();
    println!("cargo:rerun-if-changed=build.rs");
}
