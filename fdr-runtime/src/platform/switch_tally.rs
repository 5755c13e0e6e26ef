//! Adding up a call's context switches: how long its thread was switched out while runnable
//! (waiting for a CPU) and by itself (blocked), from the switches newest first. Pure, for every
//! platform and for tests' injected switches; the records come from `switches`.

/// What the switches during one call say ([`tally`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Spent {
    /// Switched out while runnable: waiting for a CPU, ns.
    pub cpu_wait_ns: u64,
    /// Switched out by itself: blocked, ns.
    pub off_cpu_ns: u64,
    /// The records cover the whole call (else the oldest were overwritten first, or the ring
    /// was opened after the call began: the figures are at least these).
    pub whole: bool,
}

/// One switch, as the ring holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Switch {
    /// Taken off its CPU at this time (`CLOCK_MONOTONIC` ns); `preempted`: still runnable.
    Out { at: u64, preempted: bool },
    /// Put back on a CPU.
    In { at: u64 },
}

/// Adds up, from `switches` newest first, the time between `start` and `end` the thread spent
/// switched out, waiting for a CPU or blocked. `whole` when a switch at or before `start` was
/// reached (the caller knows whether running out of records is whole too).
pub(crate) fn tally(switches: &mut dyn Iterator<Item = Switch>, start: u64, end: u64) -> Spent {
    let mut spent = Spent::default();
    // The switch back in that ends the interval being walked (none yet: the thread runs now).
    let mut back_in: Option<u64> = None;
    for s in switches {
        match s {
            Switch::In { at } => {
                if at < start {
                    spent.whole = true;
                    return spent;
                }
                back_in = Some(at);
            }
            Switch::Out { at, preempted } => {
                let until = back_in.take().unwrap_or(end).min(end);
                let from = at.max(start);
                let gone = until.saturating_sub(from);
                if preempted {
                    spent.cpu_wait_ns += gone;
                } else {
                    spent.off_cpu_ns += gone;
                }
                if at <= start {
                    spent.whole = true;
                    return spent;
                }
            }
        }
    }
    spent
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_is_split_by_how_the_thread_left_and_clipped_to_the_call() {
        use Switch::*;
        // Newest first: preempted 40..55, blocked 70..90 (inside), preempted 5..20 (across the
        // start at 10).
        let newest_first = [
            In { at: 90 },
            Out {
                at: 70,
                preempted: false,
            },
            In { at: 55 },
            Out {
                at: 40,
                preempted: true,
            },
            In { at: 20 },
            Out {
                at: 5,
                preempted: true,
            },
            In { at: 1 },
        ];
        let s = tally(&mut newest_first.into_iter(), 10, 100);
        assert_eq!(
            s,
            Spent {
                cpu_wait_ns: 15 + 10,
                off_cpu_ns: 20,
                whole: true
            }
        );
        // A call within 60..80 sees 10 of the block; the preemption before it is not its own.
        let s = tally(&mut newest_first.into_iter(), 60, 80);
        assert_eq!(
            s,
            Spent {
                cpu_wait_ns: 0,
                off_cpu_ns: 10,
                whole: true
            }
        );
        // Records that stop before reaching the start: at least.
        let s = tally(&mut newest_first[..4].iter().copied(), 10, 100);
        assert_eq!(
            s,
            Spent {
                cpu_wait_ns: 15,
                off_cpu_ns: 20,
                whole: false
            }
        );
        // No switch at all: nothing known of the start (the caller's ring says whether it
        // was open then).
        let s = tally(&mut std::iter::empty(), 10, 100);
        assert_eq!(s, Spent::default());
    }
}
