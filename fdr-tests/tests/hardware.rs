//! The real clock and the real CPU number.

use std::time::{Duration, Instant};

use fdr_runtime::{CallGuard, Config, Mode};
use fdr_tests::{decode, desc, testing, Rec};

desc!(SLEEPY, "hw::sleepy");
desc!(PINNED, "hw::pinned");

fn pin(cpu: usize) -> bool {
    // SAFETY: the set is a plain bitmask on the stack, initialised by CPU_ZERO before use, and
    // sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

#[test]
fn a_thread_moved_to_another_cpu_writes_a_new_cpu_record() {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    if cpus < 2 || !pin(0) {
        println!("skipped: needs two CPUs that this process may run on (found {cpus})");
        return;
    }
    let _turn = testing::exclusive();
    let rec = fdr_runtime::start(Config::default().buffer_count(4).mode(Mode::Fill)).unwrap();
    let log = std::thread::spawn(move || {
        assert!(pin(0));
        drop(CallGuard::enter(&PINNED));
        assert!(pin(1));
        drop(CallGuard::enter(&PINNED));
        let mut bytes = Vec::new();
        rec.finish_to(&mut bytes).unwrap();
        decode(&bytes[..]).unwrap()
    })
    .join()
    .unwrap();
    let recs = log.thread_records(log.tids()[0]);
    let cpus: Vec<u16> = recs
        .iter()
        .filter_map(|r| match r {
            Rec::Cpu(c, _) => Some(*c),
            _ => None,
        })
        .collect();
    assert_eq!(cpus, vec![0, 1], "{recs:?}");
    let p = PINNED.id();
    assert!(
        matches!(recs[..], [Rec::Cpu(0, _), Rec::Enter(a, _), Rec::Exit(b, _), Rec::Cpu(1, _), Rec::Enter(c, 0), Rec::Exit(d, _)] if [a, b, c, d] == [p; 4]),
        "{recs:?}"
    );
}

#[test]
fn a_recorded_10ms_sleep_decodes_to_10ms() {
    let _turn = testing::exclusive();
    let rec = fdr_runtime::start(Config::default().buffer_count(4).mode(Mode::Fill)).unwrap();
    let began = Instant::now();
    {
        let _g = CallGuard::enter(&SLEEPY);
        std::thread::sleep(Duration::from_millis(10));
    }
    let elapsed = began.elapsed();
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).unwrap();
    let log = decode(&bytes[..]).unwrap();
    let recs = log.thread_records(log.tids()[0]);
    let mut ticks = 0u64;
    for r in &recs[2..] {
        match r {
            Rec::Exit(_, d) => ticks += u64::from(*d),
            Rec::Wrap(_) | Rec::Cpu(..) => {
                panic!("the thread moved; cannot time across CPUs: {recs:?}")
            }
            _ => {}
        }
    }
    let decoded = ticks as f64 / log.header.cycle_frequency as f64;
    // The call lasted `elapsed` give or take the instants' placement; the clock must agree with
    // the monotonic clock to 2%, and the call slept at least 10 ms.
    let reference = elapsed.as_secs_f64();
    assert!(decoded >= 0.0099, "decoded {decoded}s for a 10 ms sleep");
    assert!(
        (decoded / reference - 1.0).abs() < 0.02,
        "decoded {decoded}s, monotonic clock measured {reference}s"
    );
    assert_eq!(log.run.ticks_per_second, log.header.cycle_frequency);
}
