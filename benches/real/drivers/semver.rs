//! Version requirements: semver parses requirements and versions as cargo does when it resolves
//! dependencies, matches each version against each requirement and orders the versions.

#[path = "common.rs"]
mod common;

/// When the slow call injected for `--check-slow` first slept.
#[cfg(feature = "slow")]
fn first_slow() -> Option<std::time::Instant> {
    semver::__fdr_bench::first_slow()
}

#[cfg(not(feature = "slow"))]
fn first_slow() -> Option<std::time::Instant> {
    None
}

const REQUIREMENTS: &[&str] = &[
    "^1.2.3",
    "~0.4",
    ">=1.0.0, <2.0.0",
    "=0.9.7",
    "*",
    "1.*",
    "^0.0.4",
    ">1.2.3-alpha.3, <=1.2.4",
    "~1.2.3-beta.2",
    "0.3.x",
    "<3.0.0-rc.1",
    ">=2.1, <2.5.0-0",
];

const VERSIONS: &[&str] = &[
    "1.2.3",
    "1.2.4",
    "0.4.17",
    "2.0.0",
    "0.9.7",
    "1.0.0-alpha.1",
    "1.2.3-alpha.7",
    "1.2.3-beta.11+build.5",
    "0.0.4",
    "3.0.0-rc.1",
    "2.4.9",
    "0.3.22+sha.0f3a1c",
    "10.20.30",
    "1.0.0-x.7.z.92",
];

fn main() {
    let items: Vec<&str> = REQUIREMENTS.to_vec();
    common::main(
        &items,
        |req| {
            let req = semver::VersionReq::parse(req).expect("a valid requirement");
            let mut versions: Vec<semver::Version> = VERSIONS
                .iter()
                .map(|v| semver::Version::parse(v).expect("a valid version"))
                .collect();
            versions.sort();
            versions
                .iter()
                .enumerate()
                .filter(|(_, v)| req.matches(v))
                .fold(req.comparators.len() as u64, |h, (i, v)| {
                    h.rotate_left(7) ^ i as u64 ^ v.major ^ (v.pre.len() as u64) << 8
                })
        },
        first_slow,
    );
}
