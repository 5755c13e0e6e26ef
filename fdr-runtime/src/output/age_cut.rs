//! The age cut (`max_age`): a log keeps each thread's records of the last `max_age` only.
//!
//! Blocks that ended before the cutoff are left out. A block that straddles it is cut at the
//! first record at or after the cutoff; its preamble's `NewCPUId` then carries the CPU and the
//! time of the record before the cut, so the first kept record's delta still adds up. The window
//! then starts mid-stack, which readers handle (exits without entries get inferred starts).
//!
//! A cut only ever falls on a record's first word: the walk steps over each record whole (a
//! custom event is its header and its payload; call arguments belong to the entry before them
//! and are never a place to cut), so no record of any kind is split.

use fdr_format::reader::{meta_head, MetaHead, Record};
use fdr_format::{meta, BLOCK_PREAMBLE_WORDS};

use crate::buffers::copy::{BlockCopy, Copied};

/// Where a block's records stand in time.
struct Walk {
    /// (word index, time of the record before it, CPU there) of the first record at or after
    /// the cutoff, if any.
    cut: Option<(usize, u64, u16)>,
}

fn walk(words: &[u64], cutoff: u64) -> Walk {
    let pre = BLOCK_PREAMBLE_WORDS as usize;
    if words.len() < pre {
        return Walk { cut: None };
    }
    // The preamble's last record is its NewCPUId: the CPU and the full timestamp.
    let Some(MetaHead::Record(Record::NewCpuId {
        mut cpu,
        tsc: mut t,
    })) = meta_head([words[pre - 2], words[pre - 1]])
    else {
        return Walk { cut: None };
    };
    let mut i = pre;
    while i < words.len() {
        let w = words[i];
        if fdr_format::is_metadata(w) {
            let rec = [w, words.get(i + 1).copied().unwrap_or(0)];
            let restart = match meta_head(rec) {
                Some(MetaHead::Record(Record::NewCpuId { cpu, tsc })) => Some((cpu, tsc)),
                Some(MetaHead::Record(Record::TscWrap { tsc })) => Some((cpu, tsc)),
                // A task or cull event: its delta moves the clock, and its payload follows the
                // header (not records: stepped over whole).
                Some(MetaHead::Event { delta, size, .. }) => {
                    let at = t.wrapping_add_signed(i64::from(delta));
                    if at >= cutoff {
                        return Walk {
                            cut: Some((i, t, cpu)),
                        };
                    }
                    t = at;
                    i += 2 + (size.max(0) as usize).div_ceil(8);
                    continue;
                }
                // Arguments belong to the entry before them: never a place to cut.
                _ => None,
            };
            if let Some((c, tsc)) = restart {
                if tsc >= cutoff {
                    return Walk {
                        cut: Some((i, t, cpu)),
                    };
                }
                cpu = c;
                t = tsc;
            }
            i += 2;
        } else {
            let next = t.wrapping_add(u64::from(fdr_format::delta_of(w)));
            if next >= cutoff {
                return Walk {
                    cut: Some((i, t, cpu)),
                };
            }
            t = next;
            i += 1;
        }
    }
    Walk { cut: None }
}

/// Keeps only the records at or after `cutoff` (ticks) of each block.
pub(crate) fn keep_newer(copied: &mut Copied, cutoff: u64) {
    let pre = BLOCK_PREAMBLE_WORDS as usize;
    let mut kept: Vec<BlockCopy> = Vec::with_capacity(copied.blocks.len());
    for mut b in std::mem::take(&mut copied.blocks) {
        match walk(&b.words, cutoff).cut {
            // Nothing this new: the whole block is older than the window.
            None => continue,
            // The first record is new enough: keep the block whole.
            Some((i, _, _)) if i == pre => kept.push(b),
            Some((i, before, cpu)) => {
                let m = meta::new_cpu_id(cpu, before);
                b.words[pre - 2] = m[0];
                b.words[pre - 1] = m[1];
                b.words.drain(pre..i);
                let extents = meta::buffer_extents((b.words.len() as u64 - 2) * 8);
                b.words[0] = extents[0];
                b.words[1] = extents[1];
                kept.push(b);
            }
        }
    }
    copied.blocks = kept;
}

#[cfg(test)]
mod tests {
    use fdr_format::reader::{Reader, Record};
    use fdr_format::{
        cull_payload, function_word, meta, task_payload, CullKind, FileHeader, FnKind, TaskKind,
    };

    use super::*;

    /// A small random number generator: the cases are the same on every run.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// What a record is, with its time: what the cut must keep whole or leave out whole.
    #[derive(Clone, Debug, PartialEq)]
    enum Rec {
        Call(u32, FnKind, u64),
        Arg(u64),
        Cpu(u16, u64),
        Wrap(u64),
        Custom(u64),
    }

    /// A block of random records of every kind the recorder writes, from time 1000 on CPU 0,
    /// and its records with their times.
    fn block(rng: &mut Rng) -> (Vec<u64>, Vec<Rec>) {
        let mut words = Vec::new();
        let mut recs = Vec::new();
        for m in [
            meta::buffer_extents(0),
            meta::new_buffer(7),
            meta::walltime(0, 0),
            meta::pid(1),
            meta::new_cpu_id(0, 1000),
        ] {
            words.extend(m);
        }
        let mut t = 1000u64;
        for _ in 0..rng.next(40) {
            let delta = rng.next(50);
            match rng.next(8) {
                0..=2 => {
                    let kind =
                        [FnKind::Enter, FnKind::Exit, FnKind::TailExit][rng.next(3) as usize];
                    t += delta;
                    words.push(function_word(3 << 4, kind, delta as u32));
                    recs.push(Rec::Call(3, kind, t));
                }
                3 => {
                    t += delta;
                    words.push(function_word(4 << 4, FnKind::EnterArgs, delta as u32));
                    recs.push(Rec::Call(4, FnKind::EnterArgs, t));
                    for a in 0..=rng.next(3) {
                        words.extend(meta::call_argument(a));
                        recs.push(Rec::Arg(a));
                    }
                }
                4 => {
                    t += delta;
                    let cpu = rng.next(4) as u16;
                    words.extend(meta::new_cpu_id(cpu, t));
                    recs.push(Rec::Cpu(cpu, t));
                }
                5 => {
                    t += delta + (1 << 33);
                    words.extend(meta::tsc_wrap(t));
                    recs.push(Rec::Wrap(t));
                }
                // Task, cull and link events: a header and a 16- or 32-byte payload whose words
                // look like anything (an id field with metadata bits, a huge task id).
                _ => {
                    t += delta;
                    let payload: Vec<u64> = match rng.next(3) {
                        0 => task_payload(TaskKind::Created, 0x0fff_ffff, u64::MAX - rng.next(9))
                            .to_vec(),
                        1 => cull_payload(CullKind::Culled, 5, 0x3f3f_3f3f_3f3f_3f3f).to_vec(),
                        _ => fdr_format::link_payload(fdr_format::TaskLink {
                            kind: fdr_format::LinkKind::Parent,
                            id: 0x0fff_ffff,
                            task: u64::MAX,
                            other_id: 7,
                            other_task: 0x3f3f_3f3f_3f3f_3f3f,
                        })
                        .to_vec(),
                    };
                    words.extend(meta::custom_event(8 * payload.len() as i32, delta as i32));
                    words.extend(payload);
                    recs.push(Rec::Custom(t));
                }
            }
        }
        let m = meta::buffer_extents((words.len() as u64 - 2) * 8);
        words[0] = m[0];
        words[1] = m[1];
        (words, recs)
    }

    /// The records of a block as a reader reads them, with their times.
    fn read(words: &[u64]) -> Vec<Rec> {
        let mut file = FileHeader::default().encode().to_vec();
        file.extend(words.iter().flat_map(|w| w.to_le_bytes()));
        let mut r = Reader::new(&file[..]).expect("a header");
        let mut out = Vec::new();
        let mut t = 0u64;
        while let Some((at, rec)) = r.next_record().unwrap_or_else(|e| panic!("{e}")) {
            match rec {
                Record::Function { id, kind, delta } => {
                    t += u64::from(delta);
                    out.push(Rec::Call(id, kind, t));
                }
                Record::CallArgument { value } => out.push(Rec::Arg(value)),
                Record::NewCpuId { cpu, tsc } => {
                    t = tsc;
                    // The preamble's NewCPUId (at byte 32 + 64) only sets the clock.
                    if at != 96 {
                        out.push(Rec::Cpu(cpu, tsc));
                    }
                }
                Record::TscWrap { tsc } => {
                    t = tsc;
                    out.push(Rec::Wrap(tsc));
                }
                Record::CustomEvent { delta, payload } => {
                    assert!(matches!(payload.len(), 16 | 32), "{}", payload.len());
                    t = t.wrapping_add_signed(i64::from(delta));
                    out.push(Rec::Custom(t));
                }
                _ => {}
            }
        }
        out
    }

    fn time(r: &Rec) -> Option<u64> {
        match *r {
            Rec::Call(_, _, t) | Rec::Cpu(_, t) | Rec::Wrap(t) | Rec::Custom(t) => Some(t),
            Rec::Arg(_) => None,
        }
    }

    #[test]
    fn every_cut_lands_on_a_record_boundary_and_keeps_exactly_the_newer_records() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        // Fewer under Miri, which runs this a thousand times slower.
        let cases = if cfg!(miri) { 20 } else { 3000 };
        for case in 0..cases {
            let (words, recs) = block(&mut rng);
            assert_eq!(read(&words), recs, "case {case}: the generator");
            let last = recs.iter().filter_map(time).max().unwrap_or(1000);
            let cutoff = 1000 + rng.next(last - 1000 + 2);
            let mut copied = Copied {
                blocks: vec![BlockCopy {
                    tid: 7,
                    thread: 0,
                    thread_seq: 0,
                    words: words.clone(),
                }],
                missed: 0,
            };
            keep_newer(&mut copied, cutoff);
            // The records at or after the cutoff, with the arguments of a kept entry.
            let first = recs
                .iter()
                .position(|r| time(r).is_some_and(|t| t >= cutoff));
            let want: Vec<Rec> = first.map_or(Vec::new(), |i| recs[i..].to_vec());
            match copied.blocks.first() {
                None => assert!(
                    want.is_empty(),
                    "case {case}: cut at {cutoff} lost {want:?}"
                ),
                Some(b) => assert_eq!(read(&b.words), want, "case {case}: cut at {cutoff}"),
            }
        }
    }
}
