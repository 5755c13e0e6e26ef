//! Zero cost when off: the fixture crate `fdr-tests/fixtures/zero_cost`, built in release mode
//! without fdr's `enable` feature, must give each annotated function exactly the machine code of
//! its unannotated twin, and link nothing of the runtime.
//!
//! The fixture is copied under the target directory (with the workspace's `Cargo.lock`, so it
//! builds the same dependency versions) and built there with its own target directory: the first
//! run takes about a minute. Needs `nm` and `objdump` (binutils).

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Builds the fixture and returns the path of its binary.
fn build_fixture() -> PathBuf {
    let source = workspace().join("fdr-tests/fixtures/zero_cost");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("zero_cost");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = std::fs::read_to_string(source.join("Cargo.toml")).unwrap();
    let fdr = workspace().join("fdr");
    let manifest = manifest.replace(
        "path = \"../../../fdr\"",
        &format!("path = {:?}", fdr.to_str().unwrap()),
    );
    assert!(
        manifest.contains(fdr.to_str().unwrap()),
        "the fixture depends on fdr by path"
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::copy(source.join("src/main.rs"), dir.join("src/main.rs")).unwrap();
    std::fs::copy(workspace().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "--quiet"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .status()
        .expect("cargo runs");
    assert!(status.success(), "the zero_cost fixture builds");
    dir.join("target/release/zero_cost")
}

fn tool(name: &str, args: &[&str], binary: &Path) -> String {
    let out = Command::new(name)
        .args(args)
        .arg(binary)
        .output()
        .unwrap_or_else(|e| panic!("{name} runs (binutils): {e}"));
    assert!(out.status.success(), "{name} {args:?} failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The address and size of function `symbol`, from `nm -S`.
fn extent(symbols: &str, symbol: &str) -> (u64, u64) {
    let line = symbols
        .lines()
        .find(|l| l.ends_with(&format!(" T {symbol}")))
        .unwrap_or_else(|| panic!("{symbol} is not in the binary"));
    let mut fields = line.split_whitespace();
    let address = u64::from_str_radix(fields.next().unwrap(), 16).unwrap();
    let size = u64::from_str_radix(fields.next().unwrap(), 16).unwrap();
    (address, size)
}

/// The bytes of the code at `address..address + size`, from `objdump`'s raw-instruction column.
fn code_bytes(binary: &Path, (address, size): (u64, u64)) -> Vec<u8> {
    let start = format!("--start-address={address:#x}");
    let stop = format!("--stop-address={:#x}", address + size);
    let listing = tool(
        "objdump",
        &["-d", "-z", &start, &stop, "--insn-width=16"],
        binary,
    );
    let mut bytes = Vec::new();
    for line in listing.lines() {
        let mut fields = line.split('\t');
        let (Some(address), Some(hex)) = (fields.next(), fields.next()) else {
            continue;
        };
        let address = address.trim().trim_end_matches(':');
        if address.is_empty() || !address.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        for byte in hex.split_whitespace() {
            bytes.push(u8::from_str_radix(byte, 16).expect("a hex byte"));
        }
    }
    assert_eq!(
        bytes.len() as u64,
        size,
        "objdump listed the whole function:\n{listing}"
    );
    bytes
}

#[test]
fn without_the_feature_annotated_code_is_identical_and_no_runtime_code_is_linked() {
    let binary = build_fixture();

    let output = Command::new(&binary).output().unwrap();
    assert!(output.status.success());
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "0\n0\n0\n0\n0\n");

    let symbols = tool("nm", &["--defined-only", "-S"], &binary);
    for (annotated, plain) in [
        ("annotated_mix", "plain_mix"),
        ("annotated_scope", "plain_scope"),
        ("annotated_method", "plain_method"),
        ("annotated_trigger", "plain_trigger"),
        ("annotated_in_module", "plain_in_module"),
    ] {
        // LLVM merges functions whose code is identical, so the twins may share one address;
        // either way the bytes at each symbol are compared.
        let a = code_bytes(&binary, extent(&symbols, annotated));
        let p = code_bytes(&binary, extent(&symbols, plain));
        assert_eq!(a, p, "{annotated} differs from {plain}");
    }

    let runtime = runtime_symbols(&symbols);
    let code: Vec<&&str> = runtime
        .iter()
        .filter(|l| matches!(l.split_whitespace().nth(2), Some("T" | "t" | "W" | "w")))
        .collect();
    assert!(code.is_empty(), "runtime code linked: {code:#?}");
}

fn runtime_symbols(symbols: &str) -> Vec<&str> {
    symbols
        .lines()
        .filter(|l| l.contains("fdr_runtime") || l.contains("fdr_format") || l.contains("linkme"))
        .collect()
}

/// Stricter than the test above: not even data. `linkme`'s declaration of the runtime's
/// function table would keep two `#[used]` statics and the table's empty section in every binary
/// that links `fdr_runtime`; the table only exists with the runtime's `record` feature, which
/// `fdr/enable` turns on.
#[test]
fn without_the_feature_no_runtime_symbol_at_all_is_linked() {
    let binary = build_fixture();
    let symbols = tool("nm", &["--defined-only", "-S"], &binary);
    let runtime = runtime_symbols(&symbols);
    assert!(runtime.is_empty(), "runtime symbols linked: {runtime:#?}");
}
