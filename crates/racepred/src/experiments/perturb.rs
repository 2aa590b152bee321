//! Inaccurate variants of a trace, the way §3 says tracing goes wrong.
//!
//! The recording of a plain read or write may be delayed relative to other threads (it is
//! not synchronised); the order within a thread (INST_PO) and the order of synchronisation
//! events (INST_RA; also fork/join, volatile accesses, sig/wait) stay exact. Each access
//! gets a random delay in `[0, window)`; the output is the list schedule that always emits,
//! among the events allowed next, the one with the smallest `position + delay` (sync and
//! other events have delay 0). "Allowed" means: its thread's previous event is out, a
//! synchronisation event comes after every earlier one, a forked thread's first event
//! after its fork, a join after the joined thread's last event. The result is a
//! linear extension of the original HB order — HB, its races and the WRD candidates are
//! unchanged; only the trace order of unsynchronised accesses (and so the last-write
//! relation SHB reads off it) moves, by at most about `window` positions.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::trace::{Op, Trace};

/// The perturbed trace and, for each of its events, the index of that event in the input.
pub fn perturb_with_map(trace: &Trace, window: u64, seed: u64) -> (Trace, Vec<u32>) {
    let n = trace.len();
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let threads = trace
        .events
        .iter()
        .map(|e| e.thread.index() + 1)
        .max()
        .unwrap_or(0);
    let is_sync = |op: Op| !op.is_access();
    // Per thread: its events in order.
    let mut per: Vec<Vec<u32>> = vec![Vec::new(); threads];
    for (i, e) in trace.events.iter().enumerate() {
        per[e.thread.index()].push(i as u32);
    }
    let key: Vec<u64> = trace
        .events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let delay = if is_sync(e.op) || window <= 1 {
                0
            } else {
                rng.gen_range(0..window)
            };
            i as u64 + delay
        })
        .collect();
    // Sync events in original order; the next one allowed.
    let syncs: Vec<u32> = (0..n as u32)
        .filter(|&i| is_sync(trace.events[i as usize].op))
        .collect();
    let mut next_sync = 0usize;
    let mut cursor = vec![0usize; threads];
    // Fork index of each thread (if forked) and whether emitted.
    let mut fork_of: Vec<Option<u32>> = vec![None; threads];
    for (i, e) in trace.events.iter().enumerate() {
        if e.op == Op::Fork {
            let u = e.target as usize;
            if u < threads && fork_of[u].is_none() && u != e.thread.index() {
                fork_of[u] = Some(i as u32);
            }
        }
    }
    let mut emitted = vec![false; n];
    let mut order: Vec<u32> = Vec::with_capacity(n);
    while order.len() < n {
        let mut best: Option<(u64, usize)> = None;
        for t in 0..threads {
            let Some(&e) = per[t].get(cursor[t]) else {
                continue;
            };
            let ev = &trace.events[e as usize];
            if cursor[t] == 0 {
                if let Some(f) = fork_of[t] {
                    if f > e {
                        // Acted before its fork in the input: keep that.
                    } else if !emitted[f as usize] {
                        continue;
                    }
                }
            }
            if is_sync(ev.op) && syncs[next_sync] != e {
                continue;
            }
            if ev.op == Op::Join {
                let u = ev.target as usize;
                if u < threads && u != t {
                    // Every event of u that precedes the join in the input must be out.
                    let pending = per[u][cursor[u]..].first().is_some_and(|&x| x < e);
                    if pending {
                        continue;
                    }
                }
            }
            if best.is_none_or(|(k, _)| key[e as usize] < k) {
                best = Some((key[e as usize], t));
            }
        }
        let (_, t) = best.expect("the original order is always a valid schedule");
        let e = per[t][cursor[t]];
        cursor[t] += 1;
        emitted[e as usize] = true;
        if is_sync(trace.events[e as usize].op) {
            next_sync += 1;
        }
        order.push(e);
    }
    let mut out = Trace::new();
    out.names = trace.names.clone();
    out.events = order.iter().map(|&i| trace.events[i as usize]).collect();
    for (k, &i) in order.iter().enumerate() {
        if trace.events[i as usize].op == Op::MethodBegin {
            out.set_addresses(k, trace.addresses(i as usize));
        }
    }
    if let Some(s) = &trace.seq {
        out.seq = Some(order.iter().map(|&i| s[i as usize]).collect());
    }
    if trace.lines.len() == n {
        out.lines = order.iter().map(|&i| trace.lines[i as usize]).collect();
    }
    (out, order)
}

/// An inaccurate variant of `trace`: unsynchronised accesses of different threads swapped
/// within `window` positions, thread order and synchronisation order kept (seeded).
pub fn perturb(trace: &Trace, window: u64, seed: u64) -> Trace {
    perturb_with_map(trace, window, seed).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::{GenConfig, Generator};
    use crate::trace::validate::is_well_formed;

    #[test]
    fn keeps_thread_and_sync_order_and_well_formedness() {
        for seed in 0..30 {
            let t = Generator::trace(GenConfig {
                events: 400,
                threads: 4,
                vars: 6,
                locks: 2,
                sync: 0.2,
                volatile: 0.05,
                seed,
                ..GenConfig::default()
            });
            for window in [1, 2, 8, 32] {
                let (p, map) = perturb_with_map(&t, window, seed);
                assert_eq!(p.len(), t.len());
                assert!(is_well_formed(&p), "seed {seed} window {window}");
                let mut sorted = map.clone();
                sorted.sort_unstable();
                assert!(sorted.iter().enumerate().all(|(i, &x)| i as u32 == x));
                // Per thread order and sync order kept.
                let mut last = [None::<u32>; 8];
                let mut last_sync = None;
                for &i in &map {
                    let e = &t.events[i as usize];
                    let th = e.thread.index();
                    assert!(last[th].is_none_or(|l| l < i));
                    last[th] = Some(i);
                    if !e.op.is_access() {
                        assert!(last_sync.is_none_or(|l| l < i));
                        last_sync = Some(i);
                    }
                }
                if window <= 1 {
                    assert!(map.iter().enumerate().all(|(i, &x)| i as u32 == x));
                }
            }
        }
    }

    #[test]
    fn moves_something_with_a_window() {
        let t = Generator::trace(GenConfig {
            events: 2000,
            seed: 3,
            ..GenConfig::default()
        });
        let (_, map) = perturb_with_map(&t, 8, 1);
        let moved = map
            .iter()
            .enumerate()
            .filter(|&(i, &x)| i as u32 != x)
            .count();
        assert!(moved > 100, "only {moved} events moved");
    }
}
