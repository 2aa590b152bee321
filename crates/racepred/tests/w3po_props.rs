//! Property tests for `wcp`, `lockset`, `tsan-hybrid` and `w3po`: each analysis against a
//! brute-force reading of its definition (bitset closures over the events of small random
//! traces), and the papers' claims against a small exhaustive search over correctly
//! reordered prefixes written here (the project's oracle is tested in `w3po_oracle.rs`).

// Brute force over event indices reads best with index loops.
#![allow(clippy::needless_range_loop)]

mod common;
use common::actions;
use racepred::gen::parse_events;

use std::collections::{BTreeSet, HashSet};

use proptest::prelude::*;
use racepred::analysis::{self, eraser::Lockset, tsan_hybrid::TsanHybrid, w3po, wcp, Analysis};
use racepred::gen::from_actions;
use racepred::report::{place, GroupKey, RaceReport};
use racepred::trace::{Event, LocId, Op, ThreadId, Trace};

type Pairs = BTreeSet<(u64, u64)>;

fn run(trace: &Trace, a: Box<dyn Analysis>) -> RaceReport {
    analysis::run_one(trace, a)
}

// ---------------------------------------------------------------------------------------
// Structure of a trace: locksets, critical sections, last writes.

struct Info {
    ev: Vec<Event>,
    /// Locks held by the event's thread at the event (Def. 3.10), as a bitmask.
    ls: Vec<u64>,
    /// Critical sections: (lock, thread, acquire index, release index or None).
    cs: Vec<(u32, u32, usize, Option<usize>)>,
    /// For each event, the critical sections (indices into `cs`) it lies in.
    in_cs: Vec<Vec<usize>>,
    /// Last plain write of a read / last vw of a vr / last sig of a wait.
    src: Vec<Option<usize>>,
    /// First event of a thread after its fork; last event of a joined thread.
    fork_to: Vec<Option<usize>>,
    join_from: Vec<Option<usize>>,
}

fn info(t: &Trace) -> Info {
    let ev = t.events.clone();
    let n = ev.len();
    let mut held: Vec<Vec<(u32, u32, usize)>> = vec![Vec::new(); 16]; // (lock, depth, cs)
    let mut cs = Vec::new();
    let mut ls = vec![0u64; n];
    let mut in_cs = vec![Vec::new(); n];
    let mut src = vec![None; n];
    let mut last_w = std::collections::HashMap::new();
    let mut last_vw = std::collections::HashMap::new();
    let mut last_sig = std::collections::HashMap::new();
    let mut fork_to = vec![None; n];
    let mut join_from = vec![None; n];
    for (i, e) in ev.iter().enumerate() {
        let th = e.thread.index();
        match e.op {
            Op::Acquire => match held[th].iter_mut().find(|h| h.0 == e.target) {
                Some(h) => h.1 += 1,
                None => {
                    cs.push((e.target, th as u32, i, None));
                    held[th].push((e.target, 1, cs.len() - 1));
                }
            },
            Op::Read => src[i] = last_w.get(&e.target).copied(),
            Op::Write => {
                last_w.insert(e.target, i);
            }
            Op::VolatileRead => src[i] = last_vw.get(&e.target).copied(),
            Op::VolatileWrite => {
                last_vw.insert(e.target, i);
            }
            Op::Wait => src[i] = last_sig.get(&e.target).copied(),
            Op::Signal => {
                last_sig.insert(e.target, i);
            }
            Op::Fork => {
                fork_to[i] = (i + 1..n).find(|&j| ev[j].thread.0 == e.target);
            }
            Op::Join => {
                // The child's last event, or its fork if it has none (a thread ends only
                // after it starts).
                join_from[i] = (0..i)
                    .rev()
                    .find(|&j| ev[j].thread.0 == e.target)
                    .or_else(|| {
                        (0..i)
                            .rev()
                            .find(|&j| ev[j].op == Op::Fork && ev[j].target == e.target)
                    });
            }
            _ => {}
        }
        ls[i] = held[th].iter().fold(0, |m, h| m | 1 << h.0);
        in_cs[i] = held[th].iter().map(|h| h.2).collect();
        if e.op == Op::Release {
            let k = held[th].iter().position(|h| h.0 == e.target).unwrap();
            if held[th][k].1 > 1 {
                held[th][k].1 -= 1;
            } else {
                cs[held[th][k].2].3 = Some(i);
                held[th].remove(k);
            }
        }
    }
    Info {
        ev,
        ls,
        cs,
        in_cs,
        src,
        fork_to,
        join_from,
    }
}

fn conflicting(a: &Event, b: &Event) -> bool {
    a.conflicts_with(b)
}

/// Forward closure: `pred[i]` = events strictly before `i` in the relation, given direct
/// predecessors (all earlier in the trace).
fn close(n: usize, direct: &[Vec<usize>]) -> Vec<u64> {
    let mut pred = vec![0u64; n];
    for i in 0..n {
        for &d in &direct[i] {
            pred[i] |= pred[d] | 1 << d;
        }
    }
    pred
}

/// Program order, fork and join as direct edges.
fn po_fork_join(inf: &Info) -> Vec<Vec<usize>> {
    let n = inf.ev.len();
    let mut direct = vec![Vec::new(); n];
    for i in 0..n {
        if let Some(j) = (0..i).rev().find(|&j| inf.ev[j].thread == inf.ev[i].thread) {
            direct[i].push(j);
        }
        if let Some(j) = inf.fork_to[i] {
            direct[j].push(i);
        }
        if let Some(j) = inf.join_from[i] {
            direct[i].push(j);
        }
    }
    direct
}

// ---------------------------------------------------------------------------------------
// Brute-force definitions.

fn brute_lockset(inf: &Info) -> Pairs {
    let n = inf.ev.len();
    let mut p = Pairs::new();
    for f in 0..n {
        for e in 0..f {
            if conflicting(&inf.ev[e], &inf.ev[f]) && inf.ls[e] & inf.ls[f] == 0 {
                p.insert((e as u64, f as u64));
            }
        }
    }
    p
}

fn brute_tsan(inf: &Info) -> Pairs {
    let n = inf.ev.len();
    let mut direct = po_fork_join(inf);
    for i in 0..n {
        match inf.ev[i].op {
            Op::VolatileRead | Op::Wait => direct[i].extend(inf.src[i]),
            _ => {}
        }
    }
    let pred = close(n, &direct);
    brute_lockset(inf)
        .into_iter()
        .filter(|&(e, f)| pred[f as usize] >> e & 1 == 0)
        .collect()
}

/// W3 per SPEC §4: PO, WRD, hard sync edges, weak WCP; returns strict predecessor sets.
fn brute_w3(inf: &Info) -> Vec<u64> {
    let n = inf.ev.len();
    let mut direct = po_fork_join(inf);
    for i in 0..n {
        if matches!(inf.ev[i].op, Op::Read | Op::VolatileRead | Op::Wait) {
            direct[i].extend(inf.src[i]);
        }
    }
    let mut pred = vec![0u64; n];
    for i in 0..n {
        for &d in &direct[i] {
            pred[i] |= pred[d] | 1 << d;
        }
        loop {
            let before = pred[i];
            for &c2 in &inf.in_cs[i] {
                let (y, t2, _, _) = inf.cs[c2];
                for (c1, &(y1, t1, a1, r1)) in inf.cs.iter().enumerate() {
                    let Some(r1) = r1 else { continue };
                    if c1 == c2 || y1 != y || t1 == t2 || r1 > i {
                        continue;
                    }
                    let members: u64 = (a1..=r1)
                        .filter(|&k| inf.ev[k].thread.0 == t1)
                        .fold(0, |m, k| m | 1 << k);
                    if pred[i] & members != 0 {
                        pred[i] |= pred[r1] | 1 << r1;
                    }
                }
            }
            if pred[i] == before {
                break;
            }
        }
    }
    pred
}

fn brute_w3po(inf: &Info) -> Pairs {
    let n = inf.ev.len();
    let pred = brute_w3(inf);
    let mut p = Pairs::new();
    for f in 0..n {
        for e in 0..f {
            let (a, b) = (&inf.ev[e], &inf.ev[f]);
            if !conflicting(a, b) || inf.ls[e] & inf.ls[f] != 0 {
                continue;
            }
            // Def. 4.2 (W3-unordered) or Def. 4.3 (e is f's last write, no g with
            // e <W3 g <W3 f).
            let ok = pred[f] >> e & 1 == 0
                || (inf.src[f] == Some(e)
                    && b.is_read()
                    && !(0..n).any(|g| pred[g] >> e & 1 == 1 && pred[f] >> g & 1 == 1));
            if ok {
                p.insert((e as u64, f as u64));
            }
        }
    }
    p
}

/// WCP (Kini et al.) with our hard edges; returns ≺WCP as predecessor sets.
fn brute_wcp(inf: &Info) -> Vec<u64> {
    let n = inf.ev.len();
    let ev = &inf.ev;
    // HB: PO, fork/join, rel → later acq, every vw → later vr, latest sig → wait.
    let mut direct = po_fork_join(inf);
    let mut hard: Vec<(usize, usize)> = Vec::new();
    for i in 0..n {
        if let Some(j) = inf.fork_to[i] {
            hard.push((i, j));
        }
        if let Some(j) = inf.join_from[i] {
            hard.push((j, i));
        }
        match ev[i].op {
            Op::Acquire => {
                for &(y, _, _, r) in &inf.cs {
                    if let Some(r) = r {
                        if y == ev[i].target && r < i {
                            direct[i].push(r);
                        }
                    }
                }
            }
            Op::VolatileRead => {
                for j in 0..i {
                    if ev[j].op == Op::VolatileWrite && ev[j].target == ev[i].target {
                        direct[i].push(j);
                    }
                }
                hard.extend(inf.src[i].map(|j| (j, i)));
            }
            Op::Wait => {
                direct[i].extend(inf.src[i]);
                hard.extend(inf.src[i].map(|j| (j, i)));
            }
            _ => {}
        }
    }
    let hb = close(n, &direct); // strict
    let hb_le = |a: usize, b: usize| a == b || hb[b] >> a & 1 == 1;
    let access = |e: &Event| match e.op {
        Op::Read | Op::VolatileRead => Some((e.target, false)),
        Op::Write | Op::VolatileWrite => Some((e.target, true)),
        _ => None,
    };
    let conflict = |a: usize, b: usize| match (access(&ev[a]), access(&ev[b])) {
        (Some((x, wa)), Some((y, wb))) => x == y && (wa || wb) && ev[a].thread != ev[b].thread,
        _ => false,
    };
    let mut w = vec![0u64; n];
    for &(a, b) in &hard {
        w[b] |= 1 << a;
    }
    for (c1, &(y1, t1, a1, r1)) in inf.cs.iter().enumerate() {
        let Some(r1) = r1 else { continue };
        for &(y2, t2, a2, r2) in &inf.cs[c1 + 1..] {
            if y1 != y2 || t1 == t2 || a2 < r1 {
                continue;
            }
            let end2 = r2.unwrap_or(n - 1);
            for e2 in (a2..=end2).filter(|&k| ev[k].thread.0 == t2) {
                if (a1..=r1)
                    .filter(|&k| ev[k].thread.0 == t1)
                    .any(|e1| conflict(e1, e2))
                {
                    w[e2] |= 1 << r1; // rule (a)
                }
            }
        }
    }
    loop {
        let before = w.clone();
        // Rule (b).
        for (c1, &(y1, t1, a1, r1)) in inf.cs.iter().enumerate() {
            let Some(r1) = r1 else { continue };
            for &(y2, t2, _, r2) in &inf.cs[c1 + 1..] {
                if let Some(r2) = r2 {
                    if y1 == y2 && t1 != t2 && w[r2] >> a1 & 1 == 1 {
                        w[r2] |= 1 << r1;
                    }
                }
            }
        }
        // Composition with ≤HB on both sides.
        let mut nw = vec![0u64; n];
        for b in 0..n {
            for a in 0..n {
                if w[b] >> a & 1 == 0 {
                    continue;
                }
                for a0 in 0..=a {
                    if hb_le(a0, a) {
                        for b1 in b..n {
                            if hb_le(b, b1) {
                                nw[b1] |= 1 << a0;
                            }
                        }
                    }
                }
            }
        }
        w = nw;
        if w == before {
            break;
        }
    }
    w
}

fn brute_wcp_pairs(inf: &Info) -> Pairs {
    let w = brute_wcp(inf);
    let n = inf.ev.len();
    let mut p = Pairs::new();
    for f in 0..n {
        for e in 0..f {
            if conflicting(&inf.ev[e], &inf.ev[f]) && w[f] >> e & 1 == 0 {
                p.insert((e as u64, f as u64));
            }
        }
    }
    p
}

// ---------------------------------------------------------------------------------------
// A small exhaustive search over correctly reordered prefixes (SPEC §2), for the papers'
// claims. Reads (and vr, wait) must keep their last write (vw, sig); locks, fork and join
// hold; trace-specific runs keep each lock's critical sections in trace order.

#[derive(Default)]
struct Found {
    predictable: Pairs,
    adjacent: Pairs,
}

fn search(t: &Trace, trace_specific: bool) -> Found {
    let inf = info(t);
    let ev = &inf.ev;
    let nt = ev.iter().map(|e| e.thread.index() + 1).max().unwrap_or(0);
    let per: Vec<Vec<usize>> = (0..nt)
        .map(|th| {
            (0..ev.len())
                .filter(|&i| ev[i].thread.index() == th)
                .collect()
        })
        .collect();
    let forked: Vec<Option<usize>> = (0..nt)
        .map(|th| (0..ev.len()).find(|&i| ev[i].op == Op::Fork && ev[i].target as usize == th))
        .collect();
    // Order of outermost acquires per lock.
    let cs_rank: Vec<Option<usize>> = (0..ev.len())
        .map(|i| {
            inf.cs
                .iter()
                .position(|c| c.2 == i)
                .map(|k| inf.cs[..k].iter().filter(|c| c.0 == inf.cs[k].0).count())
        })
        .collect();
    #[derive(Clone, Hash, PartialEq, Eq)]
    struct St {
        pos: Vec<usize>,
        last: Vec<(u8, u32, usize)>, // (kind, target, event) of last write / vw / sig
        done: Vec<usize>,            // per lock: critical sections started
    }
    let mut found = Found::default();
    let mut seen = HashSet::new();
    let start = St {
        pos: vec![0; nt],
        last: Vec::new(),
        done: vec![0; 8],
    };
    let executed = |st: &St, i: usize| {
        let th = ev[i].thread.index();
        per[th][..st.pos[th]].contains(&i)
    };
    let enabled = |st: &St, th: usize| -> Option<usize> {
        let i = *per[th].get(st.pos[th])?;
        match forked[th] {
            Some(f) if !executed(st, f) => None,
            _ => Some(i),
        }
    };
    let last_of = |st: &St, kind: u8, target: u32| {
        st.last
            .iter()
            .find(|l| l.0 == kind && l.1 == target)
            .map(|l| l.2)
    };
    let step = |st: &St, th: usize| -> Option<St> {
        let i = enabled(st, th)?;
        let e = &ev[i];
        let mut s = st.clone();
        let set_last = |s: &mut St, kind: u8| {
            s.last.retain(|l| !(l.0 == kind && l.1 == e.target));
            s.last.push((kind, e.target, i));
            s.last.sort();
        };
        match e.op {
            Op::Read if last_of(st, 0, e.target) != inf.src[i] => return None,
            Op::VolatileRead if last_of(st, 1, e.target) != inf.src[i] => return None,
            // Trace-specific schedules keep every earlier vw of the variable before a vr
            // (the oracle's reading of Def. 2.6 with SPEC §1's `vw → vr` HB edge).
            Op::VolatileRead
                if trace_specific
                    && (0..i).any(|j| {
                        ev[j].op == Op::VolatileWrite
                            && ev[j].target == e.target
                            && !executed(st, j)
                    }) =>
            {
                return None
            }
            Op::Wait if last_of(st, 2, e.target) != inf.src[i] => return None,
            Op::Write => set_last(&mut s, 0),
            Op::VolatileWrite => set_last(&mut s, 1),
            Op::Signal => set_last(&mut s, 2),
            Op::Acquire => {
                // Free, or held by this thread (re-entrant).
                let mine = inf.in_cs[i]
                    .iter()
                    .any(|&c| inf.cs[c].0 == e.target && inf.cs[c].2 != i);
                if !mine {
                    let busy = (0..nt).any(|u| {
                        u != th
                            && per[u][..st.pos[u]].iter().any(|&a| {
                                ev[a].op == Op::Acquire
                                    && ev[a].target == e.target
                                    && inf
                                        .cs
                                        .iter()
                                        .any(|c| c.2 == a && c.3.is_none_or(|r| !executed(st, r)))
                            })
                    });
                    if busy {
                        return None;
                    }
                    if trace_specific {
                        let r = cs_rank[i].unwrap();
                        if st.done[e.target as usize] != r {
                            return None;
                        }
                        s.done[e.target as usize] += 1;
                    }
                }
            }
            Op::Join
                if per
                    .get(e.target as usize)
                    .is_some_and(|p| st.pos[e.target as usize] < p.len())
                    || (0..ev.len()).any(|j| {
                        ev[j].op == Op::Fork && ev[j].target == e.target && !executed(st, j)
                    }) =>
            {
                return None
            }
            _ => {}
        }
        s.pos[th] += 1;
        Some(s)
    };
    let mut stack = vec![start];
    while let Some(st) = stack.pop() {
        if !seen.insert(st.clone()) {
            continue;
        }
        for a in 0..nt {
            let Some(i) = enabled(&st, a) else { continue };
            for b in a + 1..nt {
                let Some(j) = enabled(&st, b) else { continue };
                if conflicting(&ev[i], &ev[j]) {
                    found.predictable.insert((i.min(j) as u64, i.max(j) as u64));
                }
            }
            if let Some(s1) = step(&st, a) {
                for b in 0..nt {
                    if b == a {
                        continue;
                    }
                    if let Some(j) = enabled(&s1, b) {
                        if conflicting(&ev[i], &ev[j]) && step(&s1, b).is_some() {
                            found.adjacent.insert((i.min(j) as u64, i.max(j) as u64));
                        }
                    }
                }
                stack.push(s1);
            }
        }
    }
    found
}

// ---------------------------------------------------------------------------------------
// Properties.

fn trace(threads: u32, a: &[(u8, u8, u8)]) -> Trace {
    from_actions(threads, 2, 2, a)
}

/// `wcp`'s pairs and racy events equal the brute-force closure's.
fn check_wcp(t: &Trace) -> Result<(), TestCaseError> {
    let r = wcp::analyze(t);
    let brute = brute_wcp_pairs(&info(t));
    prop_assert_eq!(r.pair_set(), brute.clone());
    let racy: BTreeSet<u64> = brute.iter().map(|p| p.1).collect();
    prop_assert_eq!(r.racy_set(), racy);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn lockset_pairs_match_definition(a in actions(24)) {
        let t = trace(3, &a);
        prop_assert_eq!(run(&t, Box::new(Lockset::all_pairs())).pair_set(), brute_lockset(&info(&t)));
    }

    #[test]
    fn tsan_hybrid_pairs_match_definition(a in actions(24)) {
        let t = trace(3, &a);
        prop_assert_eq!(run(&t, Box::new(TsanHybrid::all_pairs())).pair_set(), brute_tsan(&info(&t)));
    }

    #[test]
    fn w3po_complete_matches_definition(a in actions(24)) {
        let t = trace(3, &a);
        prop_assert_eq!(w3po::pairs(&t, None), brute_w3po(&info(&t)));
    }

    #[test]
    fn w3po_linear_is_a_subset(a in actions(30), h in 0usize..4) {
        let t = trace(3, &a);
        let complete = w3po::pairs(&t, None);
        let linear = w3po::pairs(&t, Some(h));
        prop_assert!(linear.is_subset(&complete));
        prop_assert_eq!(w3po::pairs(&t, Some(64)), complete);
    }

    #[test]
    fn wcp_matches_definition(a in actions(20), high_threads in any::<bool>()) {
        let t = trace(3, &a);
        // Threads on both sides of the 8 whose latest release times rule (a) keeps inline.
        let t = if high_threads { with_thread_ids(&t, [7, 8, 9, 14, 15]) } else { t };
        check_wcp(&t)?;
    }

    /// The same on traces made of critical sections ([`cs_trace`]), with threads numbered
    /// on both sides of the 8 whose latest release times rule (a) keeps inline.
    #[test]
    fn wcp_matches_definition_on_critical_sections(
        blocks in proptest::collection::vec((0u8..4, 0u8..2, 0u8..2, 0u8..8), 0..10),
        high_threads in any::<bool>(),
    ) {
        let ids = if high_threads { [7, 8, 9, 15] } else { [0, 1, 2, 3] };
        check_wcp(&cs_trace(&blocks, ids))?;
    }

    /// `lockset`, `tsan-hybrid` and `w3po` against their definitions on traces made of
    /// critical sections ([`cs_trace`]), where locksets and critical sections of several
    /// threads on one lock are the rule rather than the exception.
    #[test]
    fn pair_analyses_match_definitions_on_critical_sections(
        blocks in proptest::collection::vec((0u8..4, 0u8..2, 0u8..2, 0u8..8), 0..10),
    ) {
        let t = cs_trace(&blocks, [0, 1, 2, 3]);
        let inf = info(&t);
        prop_assert_eq!(run(&t, Box::new(Lockset::all_pairs())).pair_set(), brute_lockset(&inf));
        prop_assert_eq!(run(&t, Box::new(TsanHybrid::all_pairs())).pair_set(), brute_tsan(&inf));
        prop_assert_eq!(w3po::pairs(&t, None), brute_w3po(&inf));
    }
}

/// Critical sections and plain accesses of four threads (numbered `ids`) on two locks and
/// two variables, one per block `(thread, lock, variable, kind)`: `kind` bit 0 makes the
/// access a write, bit 1 puts it in a critical section on the lock, bit 2 adds an access
/// of the other variable (the opposite kind) inside that section. These are the shapes
/// WCP's rules (a) and (b) act on; [`actions`] seldom builds them (one action in twelve is
/// an acquire and a release needs its lock held: `wcp_matches_definition`'s traces average
/// 7 events and 0.6 acquires, and it passed with rule (a) switched off).
fn cs_trace(blocks: &[(u8, u8, u8, u8)], ids: [u32; 4]) -> Trace {
    let mut events = Vec::new();
    for &(t, l, x, kind) in blocks {
        let (t, l, x) = (ids[t as usize % 4], u32::from(l % 2), u32::from(x % 2));
        let access = |x: u32, write: bool| {
            if write {
                Event::write(t, x)
            } else {
                Event::read(t, x)
            }
        };
        let write = kind & 1 == 1;
        if kind & 2 == 0 {
            events.push(access(x, write));
            continue;
        }
        events.push(Event::acquire(t, l));
        events.push(access(x, write));
        if kind & 4 != 0 {
            events.push(access(1 - x, !write));
        }
        events.push(Event::release(t, l));
    }
    for (i, ev) in events.iter_mut().enumerate() {
        ev.loc = LocId(i as u32 + 1);
    }
    Trace::from_events(events)
}

/// The trace with lock `l` renamed `ids[l]`.
fn with_lock_ids(t: &Trace, ids: [u32; 4]) -> Trace {
    let mut events = t.events.clone();
    for ev in events.iter_mut() {
        if matches!(ev.op, Op::Acquire | Op::Release) {
            ev.target = ids[ev.target as usize];
        }
    }
    Trace::from_events(events)
}

/// The trace with thread `t` renamed `ids[t]` (in fork and join targets too).
fn with_thread_ids(t: &Trace, ids: [u32; 5]) -> Trace {
    let mut events = t.events.clone();
    for ev in events.iter_mut() {
        ev.thread = ThreadId(ids[ev.thread.index()]);
        if matches!(ev.op, Op::Fork | Op::Join) {
            ev.target = ids[ev.target as usize];
        }
    }
    Trace::from_events(events)
}

/// One group of a grouped report: first instance (first, second), its places (locations,
/// or variables where a location is missing) and kind, count.
type Group = ((u64, u64), GroupKey, u64);

/// A grouped report as comparable data, sorted.
fn groups(r: &RaceReport) -> Vec<Group> {
    assert!(r.is_grouped() || r.pairs.is_empty());
    let mut v: Vec<_> = r
        .pairs
        .iter()
        .zip(&r.group_counts)
        .map(|(p, &c)| {
            let key = (place(&p.first_event), place(&p.second_event), p.kind);
            ((p.first, p.second), key, c)
        })
        .collect();
    v.sort();
    v
}

/// Each pair analysis of the lockset family in its default, grouped mode and with
/// `--all-pairs`: `lockset`, `tsan-hybrid`, `w3po --history h` and, with `complete`, `w3po`.
fn grouped_and_exhaustive(h: usize, complete: bool) -> Vec<(Box<dyn Analysis>, Box<dyn Analysis>)> {
    let mut cases: Vec<(Box<dyn Analysis>, Box<dyn Analysis>)> = vec![
        (Box::new(Lockset::new()), Box::new(Lockset::all_pairs())),
        (
            Box::new(TsanHybrid::new()),
            Box::new(TsanHybrid::all_pairs()),
        ),
        (
            Box::new(w3po::W3po::new(Some(h))),
            Box::new(w3po::W3po::with_mode(Some(h), true)),
        ),
    ];
    if complete {
        cases.push((
            Box::new(w3po::W3po::new(None)),
            Box::new(w3po::W3po::with_mode(None, true)),
        ));
    }
    cases
}

/// The (first place, second place, kind) of each pair of `pairs`: location pairs, by
/// variable where a location is missing.
fn loc_pairs(t: &Trace, pairs: &Pairs) -> BTreeSet<GroupKey> {
    common::groups(t, pairs)
}

/// The location pairs of a grouped report.
fn report_loc_pairs(r: &RaceReport) -> BTreeSet<GroupKey> {
    groups(r).into_iter().map(|g| g.1).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The default, grouped mode (bounded shadow) reports exactly the exhaustive report
    /// grouped by location pair: the same groups, the same first instances (earliest
    /// second event, then latest first event) and the same counts (racing accesses).
    #[test]
    fn grouped_equals_exhaustive_grouped(
        a in actions(40),
        threads in 2u32..5,
        locs in proptest::collection::vec(0u8..5, 1..6),
        h in 0usize..3,
        high_threads in any::<bool>(),
    ) {
        let t = common::with_locs(&from_actions(threads, 3, 2, &a), &locs);
        // Thread numbers from 14 on (the shadow's per-site thread summary is exact for
        // the first 15 threads only; 15 and up share one bit).
        let t = if high_threads { with_thread_ids(&t, [14, 15, 16, 40, 41]) } else { t };
        for (grouped, all) in grouped_and_exhaustive(h, true) {
            let name = grouped.name();
            let g = run(&t, grouped);
            let e = run(&t, all);
            prop_assert!(!e.is_grouped());
            prop_assert_eq!(groups(&g), groups(&e.grouped()), "{}", name);
            // Eraser's violations: by default the first of each variable.
            let mut seen = BTreeSet::new();
            let racy: BTreeSet<u64> = e
                .racy_events
                .iter()
                .filter(|r| name != "lockset" || seen.insert(r.event.target))
                .map(|r| r.index)
                .collect();
            prop_assert_eq!(g.racy_set(), racy, "{}", name);
            // Every location pair of the exhaustive report, and no other.
            prop_assert_eq!(report_loc_pairs(&g), loc_pairs(&t, &e.pair_set()), "{}", name);
        }
    }

    /// The same on traces made of critical sections ([`cs_trace`]; 15 and up share the
    /// thread summaries' last bit).
    #[test]
    fn grouped_equals_exhaustive_grouped_on_critical_sections(
        blocks in proptest::collection::vec((0u8..4, 0u8..2, 0u8..2, 0u8..8), 0..14),
        locs in proptest::collection::vec(0u8..5, 1..6),
        h in 0usize..3,
        high_threads in any::<bool>(),
    ) {
        let ids = if high_threads { [14, 15, 16, 40] } else { [0, 1, 2, 3] };
        let t = common::with_locs(&cs_trace(&blocks, ids), &locs);
        for (grouped, all) in grouped_and_exhaustive(h, true) {
            let name = grouped.name();
            let g = run(&t, grouped);
            let e = run(&t, all);
            prop_assert_eq!(groups(&g), groups(&e.grouped()), "{}", name);
            prop_assert_eq!(report_loc_pairs(&g), loc_pairs(&t, &e.pair_set()), "{}", name);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// The claims of `search_claims` for the default, grouped reports, by location pair.
    #[test]
    fn search_claims_by_location_pair(
        a in actions(20),
        threads in 2u32..4,
        locs in proptest::collection::vec(0u8..5, 1..6),
    ) {
        let t = common::with_locs(&trace(threads, &a), &locs);
        let all = search(&t, false);
        let predictable = loc_pairs(&t, &all.predictable);
        let lockset = report_loc_pairs(&run(&t, Box::new(Lockset::new())));
        prop_assert!(predictable.is_subset(&lockset));
        let tsan = report_loc_pairs(&run(&t, Box::new(TsanHybrid::new())));
        prop_assert!(predictable.is_subset(&tsan));
        let w = report_loc_pairs(&run(&t, Box::new(w3po::W3po::new(None))));
        let adjacent = loc_pairs(&t, &all.adjacent);
        prop_assert!(adjacent.is_subset(&w), "adjacent {:?} w3po {:?}", adjacent, w);
    }

    #[test]
    fn search_claims(a in actions(20), threads in 2u32..4) {
        let t = trace(threads, &a);
        let all = search(&t, false);
        let ts = search(&t, true);
        // Lockset completeness.
        let lockset = run(&t, Box::new(Lockset::all_pairs())).pair_set();
        prop_assert!(all.predictable.is_subset(&lockset));
        let tsan = run(&t, Box::new(TsanHybrid::all_pairs())).pair_set();
        prop_assert!(all.predictable.is_subset(&tsan));
        // Prop. 4.5 (adjacent notion).
        let w = w3po::pairs(&t, None);
        prop_assert!(all.adjacent.is_subset(&w), "adjacent {:?} w3po {:?}", all.adjacent, w);
        // Prop. 4.6 is false (w3po_oracle.rs `w3po_prop_4_6_counterexample_rf`): checked
        // by the ignored `search_prop_4_6` below.
        // WCP: first race predictable; Prop. 3.8.
        let r = wcp::analyze(&t);
        if let Some(first) = r.racy_events.first() {
            prop_assert!(all.predictable.iter().any(|p| p.1 == first.index));
        }
        prop_assert!(ts.predictable.is_subset(&r.pair_set()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Prop. 4.6 (sound on two threads) against the search. FINDING: false (see
    /// w3po_oracle.rs `w3po_prop_4_6_counterexample_rf`); kept, and ignored, on purpose.
    #[test]
    #[ignore = "paper claim fails: w3po Prop. 4.6"]
    fn search_prop_4_6(a in actions(20)) {
        let t = trace(2, &a);
        let all = search(&t, false);
        let w = w3po::pairs(&t, None);
        prop_assert!(w.is_subset(&all.predictable), "w3po {:?} predictable {:?}", w, all.predictable);
    }
}

/// Standard predictable pairs that W3PO misses: a write-read pair whose write is not the
/// read's last write (SPEC §2). Documented finding: Prop. 4.5 does not extend to the
/// standard notion.
#[test]
fn w3po_misses_standard_pairs() {
    let t = Trace::from_events(parse_events("T0|w(V0) T0|w(V0) T1|r(V0)"));
    let all = search(&t, false);
    assert!(all.predictable.contains(&(0, 2)));
    assert!(!all.adjacent.contains(&(0, 2)));
    assert!(!w3po::pairs(&t, None).contains(&(0, 2)));
}

/// Regression (found by `search_claims`): with volatiles, a trace-specific schedule must keep
/// an earlier `vw` before a `vr` of the same variable, else HB's `vw → vr` edge makes WCP
/// miss a "trace-specific" pair (T1: w(x) vw(v); T0: vw(v) vr(v) vw(u) vr(u) r(x)).
#[test]
fn trace_specific_keeps_volatile_order() {
    let t = from_actions(
        2,
        2,
        2,
        &[
            (1, 4, 1),
            (1, 10, 0),
            (2, 10, 2),
            (0, 11, 2),
            (0, 10, 1),
            (2, 11, 1),
            (2, 0, 1),
        ],
    );
    let ts = search(&t, true);
    let all = search(&t, false);
    assert!(all.predictable.contains(&(0, 6)), "{:?}", all.predictable);
    assert!(!ts.predictable.contains(&(0, 6)));
    assert!(ts.predictable.is_subset(&wcp::analyze(&t).pair_set()));
    let o = racepred::oracle::analyze(&t, &Default::default()).unwrap();
    assert_eq!(o.trace_specific, ts.predictable);
    assert_eq!(o.predictable, all.predictable);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// `grouped_equals_exhaustive_grouped` with many locksets per (variable, thread):
    /// threads taking and releasing four locks around accesses of one variable at two
    /// locations. Lockset's shadow then drops entries across threads, and W3PO's bounded log
    /// finds lockset classes through its table (lists of more than four classes).
    #[test]
    fn grouped_equals_exhaustive_with_many_locksets(
        a in proptest::collection::vec(
            (0u8..3, prop_oneof![Just(0u8), Just(4), Just(6), Just(6), Just(7), Just(7)], 0u8..4),
            0..90,
        ),
        threads in 2u32..4,
        locs in proptest::collection::vec(0u8..2, 1..4),
        h in 0usize..3,
        lock_ids in 0usize..3,
    ) {
        // Lock numbers below and above 31 (the shadow's masks are exact below 31 only; 31
        // and up share one bit, so that two sets may share the bit but no lock).
        let ids = [[0, 1, 2, 3], [0, 31, 32, 95], [31, 32, 33, 64]][lock_ids];
        let t = with_lock_ids(&common::with_locs(&from_actions(threads, 1, 4, &a), &locs), ids);
        for (grouped, all) in grouped_and_exhaustive(h, false) {
            let name = grouped.name();
            let g = run(&t, grouped);
            let e = run(&t, all);
            prop_assert_eq!(groups(&g), groups(&e.grouped()), "{}", name);
        }
    }
}
