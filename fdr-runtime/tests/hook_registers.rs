//! The guard's hooks call the recording path from assembly that keeps some registers and tells
//! the compiler the others change (the runtime's `hook_call`): functions whose arguments,
//! temporaries and results sit in every kind of register compute, with every call recorded (so
//! that the assembly runs at each entry and exit), what the same code computes without hooks,
//! and every call is in the log. Only an optimized build keeps values in registers across the
//! hooks: `scripts/test` runs this file in release too.

use std::hint::black_box;
use std::time::Duration;

use fdr_format::reader::{Reader, Record};
use fdr_format::FnKind;
use fdr_runtime::{CallGuard, Config, FnDesc, FnKindTag};

macro_rules! desc {
    ($name:ident) => {
        #[fdr_runtime::linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
        #[linkme(crate = fdr_runtime::linkme)]
        static $name: FnDesc = FnDesc::new(
            concat!("hook_registers::", stringify!($name)),
            file!(),
            line!(),
            FnKindTag::Function,
            &[],
        );
    };
}

desc!(EIGHT);
desc!(MIX);
desc!(MIXED);
desc!(WIDE);
desc!(FOLD);

/// Defines `$name` with the guard of `$desc` around `$body`, and `$plain` with the same body
/// and no guard; `$mix` is the name the body calls `mix` by (`mix` or `mix_plain`).
macro_rules! twins {
    ($desc:ident, fn $name:ident / $plain:ident ($($arg:ident: $ty:ty),*) -> $ret:ty
        |$mix:ident| $body:block) => {
        #[allow(clippy::too_many_arguments)]
        fn $name($($arg: $ty),*) -> $ret {
            let _guard = CallGuard::enter(&$desc);
            let $mix = mix;
            $body
        }

        #[allow(clippy::too_many_arguments)]
        fn $plain($($arg: $ty),*) -> $ret {
            let $mix = mix_plain;
            $body
        }
    };
}

fn mix(a: u64, b: u64) -> u64 {
    let _guard = CallGuard::enter(&MIX);
    mix_plain(a, b)
}

fn mix_plain(a: u64, b: u64) -> u64 {
    a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b.rotate_right(17)
}

// Eight integer arguments (six in registers, two on the stack), each used after the calls.
twins!(EIGHT, fn eight / eight_plain(a: u64, b: u64, c: u64, d: u64, e: u64, f: u64, g: u64, h: u64) -> u64 |m| {
    let x = m(a, b);
    let y = m(c, d);
    x ^ y ^ e.rotate_left(7) ^ f.wrapping_mul(3) ^ g.wrapping_add(h) ^ a ^ d
});

// Floating-point arguments between integer ones: the vector registers the assembly declares
// changed must be kept elsewhere across the calls.
twins!(MIXED, fn mixed / mixed_plain(a: u64, x: f64, b: u32, y: f32, c: u64, z: f64, d: i16, w: f32) -> f64 |m| {
    let n = m(a, c) as f64;
    x * 1.5 + f64::from(y) - z / 3.0 + f64::from(b) + f64::from(d) + f64::from(w) + n / 1e18
});

// 128-bit arguments and result (register pairs), and floats returned beside it.
twins!(WIDE, fn wide / wide_plain(a: u128, b: u128) -> (u128, f64, f64) |m| {
    let low = m(a as u64, b as u64);
    (a.wrapping_mul(b) ^ u128::from(low), (a >> 64) as f64, (b >> 64) as f64 * 0.5)
});

// A loop whose accumulators live across the calls.
twins!(FOLD, fn fold / fold_plain(xs: &[u64]) -> (u64, u64, u64, u64, f64) |m| {
    let (mut s, mut p, mut q, mut r, mut f) = (0u64, 1u64, 7u64, 11u64, 0.25f64);
    for &x in xs {
        s = s.wrapping_add(m(x, s));
        p = p.wrapping_mul(x | 1);
        q ^= x.rotate_left((s & 63) as u32);
        r = r.wrapping_add(q >> 3);
        f = f * 0.75 + x as f64;
    }
    (s, p, q, r, f)
});

/// The entries of each function in `log`, by id.
fn entries(log: &[u8]) -> std::collections::HashMap<u32, usize> {
    let mut r = Reader::new(log).expect("header");
    let mut out = std::collections::HashMap::new();
    while let Some((_, rec)) = r.next_record().expect("record") {
        if let Record::Function {
            id,
            kind: FnKind::Enter,
            ..
        } = rec
        {
            *out.entry(id).or_default() += 1;
        }
    }
    out
}

const ROUNDS: u64 = 200;

#[test]
fn functions_compute_the_same_with_every_call_recorded() {
    let xs: Vec<u64> = (0..16).map(|i| i * 0x1234_5678_9abc + 5).collect();
    let rec = fdr_runtime::start(Config::default().threshold(Duration::ZERO)).expect("start");
    for i in 0..ROUNDS {
        let v: [u64; 8] = std::array::from_fn(|k| black_box(i * 31 + k as u64 * 0x1_0001));
        assert_eq!(
            eight(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]),
            eight_plain(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]),
        );
        let (x, y, z, w) = black_box((i as f64 * 0.1, i as f32, 2.5f64, -1.25f32));
        let got = mixed(v[0], x, v[1] as u32, y, v[2], z, i as i16, w);
        let want = mixed_plain(v[0], x, v[1] as u32, y, v[2], z, i as i16, w);
        assert_eq!(got.to_bits(), want.to_bits());
        let (a, b) = black_box((
            u128::from(v[3]) << 64 | u128::from(i),
            u128::from(v[4]) << 70,
        ));
        let (s, f1, f2) = wide(a, b);
        let (ws, wf1, wf2) = wide_plain(a, b);
        assert_eq!(
            (s, f1.to_bits(), f2.to_bits()),
            (ws, wf1.to_bits(), wf2.to_bits())
        );
        let (s, p, q, r, f) = fold(black_box(&xs));
        let (ws, wp, wq, wr, wf) = fold_plain(&xs);
        assert_eq!((s, p, q, r, f.to_bits()), (ws, wp, wq, wr, wf.to_bits()));
    }
    let mut log = Vec::new();
    rec.finish_to(&mut log).expect("finish");
    // Every call went through the recording path: it is in the log.
    let n = ROUNDS as usize;
    let entries = entries(&log);
    let of = |d: &'static FnDesc| entries.get(&d.id()).copied().unwrap_or(0);
    assert_eq!((of(&EIGHT), of(&MIXED), of(&WIDE), of(&FOLD)), (n, n, n, n));
    // Two calls in `eight`, one in `mixed`, one in `wide`, one per element in `fold`.
    assert_eq!(of(&MIX), n * (2 + 1 + 1 + xs.len()));
}
