//! Turning a complete trace into an incomplete one, the way RDIT's evaluation simulates
//! missing events (Rajagopalan, Huang, ESEC/FSE 2015, `shared/papers/rdit-incomplete-
//! traces.txt`, §4: classes excluded from instrumentation).
//!
//! Chosen *regions* — runs of consecutive events of one thread — disappear, and each run
//! becomes a barrier pair `mbegin(elided;A)` … `mend(elided)` at the positions of its first
//! and last event, whose address set `A` names the variables, locks and conditions the
//! run touched (a variable, lock or condition is an address under its own name). Regions
//! are chosen by
//! - `locks`: every critical section on these locks (outermost `acq` to its `rel`, with
//!   everything the thread does inside);
//! - `fraction` F with `seed`: each thread's events are cut into windows of 1..=`max_window`
//!   events and each window is removed with probability F;
//! - `methods`: for `mbegin(M;…)` … `mend(M)` of a listed method, the recorded events of
//!   the call (nested calls included) are removed; the call's own `mbegin`/`mend` stay and
//!   its address set gains what the removed events touched.
//!
//! Two rules keep the simulation inside RDIT's model — missing code synchronises with other
//! missing code only, through the addresses it can reach — so that RDIT's guarantee (no
//! race outside the complete trace's HB races) is testable:
//! - a synchronisation object is missing everywhere or nowhere: once one `acq`/`rel` of a
//!   lock, `vw`/`vr` of a volatile or `sig`/`wait` of a condition is removed, all of that
//!   object's operations are (each in its thread's region, or a one-event region of its
//!   own) — a lock private to the untraced code, like a Java monitor taken only inside an
//!   excluded class. This also keeps the elided trace well-formed;
//! - `fork`, `join`, `mbegin`/`mend` and `begin`/`end` are never removed (they split
//!   regions); a listed call that forks or joins a thread is kept whole.
//!
//! [`Elided::original_index`] maps each event of the elided trace to its index in the
//! complete trace ([`SYNTHETIC`] for the barrier events made here), so races of the two can
//! be compared.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::error::{Error, Result};

use crate::trace::{AddrId, Event, Interner, LockId, MethodId, Op, ThreadId, Trace};

/// `original_index` of a barrier event made by [`elide`].
pub const SYNTHETIC: u64 = u64::MAX;

/// The method name of the barrier pairs made by [`elide`].
pub const ELIDED_METHOD: &str = "elided";

/// Which regions to remove (see the module documentation); the modes combine.
#[derive(Clone, Debug, PartialEq)]
pub struct ElideConfig {
    pub methods: Vec<String>,
    pub locks: Vec<String>,
    /// Share of per-thread windows removed (0–1).
    pub fraction: f64,
    pub seed: u64,
    /// Longest window of `fraction` mode (events).
    pub max_window: usize,
}

impl Default for ElideConfig {
    fn default() -> Self {
        ElideConfig {
            methods: Vec::new(),
            locks: Vec::new(),
            fraction: 0.0,
            seed: 0,
            max_window: 4,
        }
    }
}

impl ElideConfig {
    /// The calls of the methods named `methods` lose their events (the other modes off).
    pub fn methods(methods: &[&str]) -> ElideConfig {
        let methods = methods.iter().map(|m| m.to_string()).collect();
        ElideConfig {
            methods,
            ..ElideConfig::default()
        }
    }

    /// The critical sections of the locks named `locks` become barrier pairs (the other
    /// modes off).
    pub fn locks(locks: &[&str]) -> ElideConfig {
        let locks = locks.iter().map(|l| l.to_string()).collect();
        ElideConfig {
            locks,
            ..ElideConfig::default()
        }
    }
}

/// One removed region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub thread: ThreadId,
    /// Indices in the complete trace of the removed events, ascending.
    pub removed: Vec<u64>,
    /// Indices in the elided trace of the pair's `mbegin` and `mend` ([`SYNTHETIC`]: none,
    /// for a call still open at the end of the trace).
    pub begin: u64,
    pub end: u64,
    /// The pair's address set (ids of the elided trace's `names.addrs`).
    pub addresses: Vec<AddrId>,
    /// True for the body of a listed method call (its own `mbegin`/`mend` kept).
    pub method_call: bool,
}

/// An incomplete trace and how it maps back to the complete one.
#[derive(Clone, Debug)]
pub struct Elided {
    pub trace: Trace,
    /// For each event of `trace`, its index in the complete trace, or [`SYNTHETIC`].
    pub original_index: Vec<u64>,
    pub regions: Vec<Region>,
}

impl Elided {
    /// Number of events removed.
    pub fn removed(&self) -> usize {
        self.regions.iter().map(|r| r.removed.len()).sum()
    }
}

/// May this event disappear?
fn removable(op: Op) -> bool {
    !matches!(
        op,
        Op::Fork | Op::Join | Op::MethodBegin | Op::MethodEnd | Op::Begin | Op::End
    )
}

const NO: u32 = u32::MAX;

/// Removes the chosen regions of `t` (see the module documentation).
pub fn elide(t: &Trace, cfg: &ElideConfig) -> Result<Elided> {
    if !(0.0..=1.0).contains(&cfg.fraction) {
        return Err(Error::invalid(format!(
            "elide: fraction {} is not between 0 and 1",
            cfg.fraction
        )));
    }
    let n = t.events.len();
    let names = &t.names;
    let mut per_thread: Vec<Vec<u32>> = vec![Vec::new(); names.threads.len()];
    for (i, e) in t.events.iter().enumerate() {
        let k = e.thread.index();
        if k >= per_thread.len() {
            per_thread.resize_with(k + 1, Vec::new);
        }
        per_thread[k].push(i as u32);
    }
    let mut gone = vec![false; n];

    // Critical sections of the chosen locks.
    let chosen = listed(&names.locks, &cfg.locks, "lock")?;
    if !cfg.locks.is_empty() {
        let mut depth = vec![0u32; names.locks.len()];
        for evs in &per_thread {
            depth.iter_mut().for_each(|d| *d = 0);
            let mut held = 0u32;
            for &i in evs {
                let e = &t.events[i as usize];
                let lk = (matches!(e.op, Op::Acquire | Op::Release)
                    && chosen.get(e.target as usize) == Some(&true))
                .then_some(LockId(e.target));
                if let (Some(l), Op::Acquire) = (lk, e.op) {
                    if depth[l.index()] == 0 {
                        held += 1;
                    }
                    depth[l.index()] += 1;
                }
                if held > 0 && removable(e.op) {
                    gone[i as usize] = true;
                }
                if let (Some(l), Op::Release) = (lk, e.op) {
                    if depth[l.index()] > 0 {
                        depth[l.index()] -= 1;
                        if depth[l.index()] == 0 {
                            held -= 1;
                        }
                    }
                }
            }
        }
    }

    // Bodies of calls to the listed methods: owner[i] = the call's mbegin.
    let mut owner = vec![NO; if cfg.methods.is_empty() { 0 } else { n }];
    if !cfg.methods.is_empty() {
        let listed = listed(&names.methods, &cfg.methods, "method")?;
        for evs in &per_thread {
            // Positions (in `evs`) of the open calls; the outermost listed one.
            let mut stack: Vec<usize> = Vec::new();
            let mut outer: Option<usize> = None;
            let close = |from: usize, to: usize, gone: &mut [bool], owner: &mut [u32]| {
                let body = &evs[from + 1..to];
                if body
                    .iter()
                    .any(|&i| matches!(t.events[i as usize].op, Op::Fork | Op::Join))
                {
                    return;
                }
                for &i in body {
                    gone[i as usize] = true;
                    owner[i as usize] = evs[from];
                }
            };
            for (k, &i) in evs.iter().enumerate() {
                let e = &t.events[i as usize];
                match e.op {
                    Op::MethodBegin => {
                        stack.push(k);
                        if outer.is_none() && listed.get(e.target as usize) == Some(&true) {
                            outer = Some(k);
                        }
                    }
                    Op::MethodEnd => {
                        if let Some(b) = stack.pop() {
                            if outer == Some(b) {
                                close(b, k, &mut gone, &mut owner);
                                outer = None;
                            }
                        }
                    }
                    _ => {}
                }
            }
            if let Some(b) = outer {
                close(b, evs.len(), &mut gone, &mut owner);
            }
        }
    }

    // Random windows.
    if cfg.fraction > 0.0 {
        let mut rng = Pcg64Mcg::seed_from_u64(cfg.seed);
        let w = cfg.max_window.max(1);
        for evs in &per_thread {
            let mut k = 0;
            while k < evs.len() {
                let len = rng.gen_range(1..=w);
                if rng.gen_bool(cfg.fraction) {
                    for &i in &evs[k..(k + len).min(evs.len())] {
                        if removable(t.events[i as usize].op) {
                            gone[i as usize] = true;
                        }
                    }
                }
                k += len;
            }
        }
    }

    // Missing everywhere or nowhere: close over synchronisation objects.
    let mut lock_gone = vec![false; names.locks.len()];
    let mut var_gone = vec![false; names.vars.len()];
    let mut cond_gone = vec![false; names.conds.len()];
    let sync_object = |e: &Event| -> Option<(u8, usize)> {
        match e.op {
            Op::Acquire | Op::Release => Some((0, e.target as usize)),
            Op::VolatileRead | Op::VolatileWrite => Some((1, e.target as usize)),
            Op::Signal | Op::Wait => Some((2, e.target as usize)),
            _ => None,
        }
    };
    for (i, e) in t.events.iter().enumerate() {
        if gone[i] {
            match sync_object(e) {
                Some((0, o)) => lock_gone[o] = true,
                Some((1, o)) => var_gone[o] = true,
                Some((2, o)) => cond_gone[o] = true,
                _ => {}
            }
        }
    }
    for (i, e) in t.events.iter().enumerate() {
        let closed = match sync_object(e) {
            Some((0, o)) => lock_gone[o],
            Some((1, o)) => var_gone[o],
            Some((2, o)) => cond_gone[o],
            _ => false,
        };
        gone[i] |= closed;
    }

    // Regions: maximal runs of removed events per thread.
    let mut out_names = names.clone();
    let elided_m = MethodId(out_names.methods.intern(ELIDED_METHOD.as_bytes()));
    let mut region_of = vec![NO; n];
    let mut regions: Vec<Region> = Vec::new();
    let mut addr_mark: Vec<u32> = Vec::new();
    for evs in &per_thread {
        let mut k = 0;
        while k < evs.len() {
            if !gone[evs[k] as usize] {
                k += 1;
                continue;
            }
            let start = k;
            while k < evs.len() && gone[evs[k] as usize] {
                k += 1;
            }
            let run = &evs[start..k];
            let first = run[0] as usize;
            let call = owner.get(first).copied().unwrap_or(NO);
            let r = regions.len() as u32;
            let mut addrs: Vec<AddrId> = Vec::new();
            let mut add = |a: AddrId, addrs: &mut Vec<AddrId>| {
                if a.index() >= addr_mark.len() {
                    addr_mark.resize(a.index() + 1, NO);
                }
                if addr_mark[a.index()] != r {
                    addr_mark[a.index()] = r;
                    addrs.push(a);
                }
            };
            if call != NO {
                for &a in t.addresses(call as usize) {
                    add(a, &mut addrs);
                }
            }
            for &i in run {
                region_of[i as usize] = r;
                let e = &t.events[i as usize];
                let name = match e.op.target_kind() {
                    crate::trace::NameKind::Var => names.var(e.var()),
                    crate::trace::NameKind::Lock => names.lock(e.lock()),
                    crate::trace::NameKind::Cond => names.conds.name_or(e.target),
                    _ => continue,
                };
                let a = AddrId(out_names.addrs.intern(name.as_bytes()));
                add(a, &mut addrs);
            }
            regions.push(Region {
                thread: t.events[first].thread,
                removed: run.iter().map(|&i| i as u64).collect(),
                begin: SYNTHETIC,
                end: SYNTHETIC,
                addresses: addrs,
                method_call: call != NO,
            });
        }
    }
    // The call whose body a region is: mbegin index -> region.
    let mut call_region = std::collections::HashMap::new();
    for (r, reg) in regions.iter().enumerate() {
        if reg.method_call {
            call_region.insert(owner[reg.removed[0] as usize], r);
        }
    }

    // The elided trace.
    let mut events = Vec::with_capacity(n + regions.len());
    let mut original_index = Vec::with_capacity(n + regions.len());
    let mut addr_sets: Vec<(usize, Vec<AddrId>)> = Vec::new();
    for (i, e) in t.events.iter().enumerate() {
        if !gone[i] {
            if e.op == Op::MethodBegin {
                let set = match call_region.get(&(i as u32)) {
                    Some(&r) => {
                        let reg: &mut Region = &mut regions[r];
                        reg.begin = events.len() as u64;
                        reg.addresses.clone()
                    }
                    None => t.addresses(i).to_vec(),
                };
                addr_sets.push((events.len(), set));
            }
            if e.op == Op::MethodEnd {
                // The call's mend follows its body's last event in the thread.
                if let Some(&r) = per_thread_prev(&per_thread, t, i)
                    .and_then(|p| regions.get(region_of[p] as usize))
                    .filter(|reg| reg.method_call)
                    .and_then(|reg| call_region.get(&owner[reg.removed[0] as usize]))
                {
                    regions[r].end = events.len() as u64;
                }
            }
            events.push(*e);
            original_index.push(i as u64);
            continue;
        }
        let r = region_of[i] as usize;
        let reg = &mut regions[r];
        if reg.method_call {
            continue;
        }
        if reg.removed[0] == i as u64 {
            reg.begin = events.len() as u64;
            addr_sets.push((events.len(), reg.addresses.clone()));
            events.push(Event::new(e.thread, Op::MethodBegin, elided_m.0, e.loc));
            original_index.push(SYNTHETIC);
        }
        if *reg.removed.last().unwrap() == i as u64 {
            reg.end = events.len() as u64;
            events.push(Event::new(e.thread, Op::MethodEnd, elided_m.0, e.loc));
            original_index.push(SYNTHETIC);
        }
    }
    let mut trace = Trace::new();
    trace.events = events;
    trace.names = out_names;
    for (i, set) in addr_sets {
        trace.set_addresses(i, &set);
    }
    Ok(Elided {
        trace,
        original_index,
        regions,
    })
}

/// The previous event of `i`'s thread, if any.
fn per_thread_prev(per_thread: &[Vec<u32>], t: &Trace, i: usize) -> Option<usize> {
    let evs = &per_thread[t.events[i].thread.index()];
    let k = evs.binary_search(&(i as u32)).ok()?;
    k.checked_sub(1).map(|p| evs[p] as usize)
}

/// One flag per name of `table` (the trace's names of `what`s), set for the names in
/// `wanted`; an error for a wanted name the trace does not have.
fn listed(table: &Interner, wanted: &[String], what: &str) -> Result<Vec<bool>> {
    let mut flags = vec![false; table.len()];
    for w in wanted {
        let id = table.iter().position(|x| x == w).ok_or_else(|| {
            Error::invalid(format!("elide: {what} `{w}` does not occur in the trace"))
        })?;
        flags[id] = true;
    }
    Ok(flags)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::std_format::StdReader;
    use crate::trace::validate::is_well_formed;

    fn read(s: &str) -> Trace {
        Trace::read_from(&mut StdReader::new(s.as_bytes())).unwrap()
    }

    fn show(e: &Elided) -> Vec<String> {
        let nm = &e.trace.names;
        e.trace
            .events
            .iter()
            .enumerate()
            .map(|(i, ev)| {
                let tn = nm.thread(ev.thread);
                match ev.op {
                    Op::MethodBegin => {
                        let a: Vec<&str> = e
                            .trace
                            .addresses(i)
                            .iter()
                            .map(|a| nm.addrs.name(a.0))
                            .collect();
                        format!(
                            "{tn}|mbegin({};{})",
                            nm.methods.name(ev.target),
                            a.join(",")
                        )
                    }
                    Op::MethodEnd => format!("{tn}|mend({})", nm.methods.name(ev.target)),
                    Op::Read | Op::Write => {
                        format!("{tn}|{}({})", ev.op, nm.var(ev.var()))
                    }
                    Op::Acquire | Op::Release => {
                        format!("{tn}|{}({})", ev.op, nm.lock(ev.lock()))
                    }
                    _ => format!("{tn}|{}", ev.op),
                }
            })
            .collect()
    }

    const T: &str = "T0|w(x)|1\nT0|acq(l)|2\nT0|w(y)|3\nT1|r(z)|4\nT0|rel(l)|5\n\
                     T1|acq(l)|6\nT1|r(y)|7\nT1|rel(l)|8\nT1|r(x)|9\n";

    #[test]
    fn locks_mode_turns_critical_sections_into_pairs() {
        let t = read(T);
        let e = elide(&t, &ElideConfig::locks(&["l"])).unwrap();
        assert_eq!(
            show(&e),
            [
                "T0|w(x)",
                "T0|mbegin(elided;l,y)",
                "T1|r(z)",
                "T0|mend(elided)",
                "T1|mbegin(elided;l,y)",
                "T1|mend(elided)",
                "T1|r(x)",
            ]
        );
        assert_eq!(
            e.original_index,
            [0, SYNTHETIC, 3, SYNTHETIC, SYNTHETIC, SYNTHETIC, 8]
        );
        assert_eq!(e.regions.len(), 2);
        assert_eq!(e.regions[0].removed, [1, 2, 4]);
        assert_eq!((e.regions[0].begin, e.regions[0].end), (1, 3));
        assert_eq!(e.removed(), 6);
        assert!(is_well_formed(&e.trace));
    }

    #[test]
    fn a_lock_is_missing_everywhere_or_nowhere() {
        // One window removes T0's acq(l): every operation on l goes.
        let t = read(T);
        let mut seen_partial = false;
        for seed in 0..40 {
            let e = elide(
                &t,
                &ElideConfig {
                    fraction: 0.3,
                    seed,
                    max_window: 2,
                    ..ElideConfig::default()
                },
            )
            .unwrap();
            assert!(is_well_formed(&e.trace));
            let locks = e
                .trace
                .events
                .iter()
                .filter(|ev| matches!(ev.op, Op::Acquire | Op::Release))
                .count();
            assert!(locks == 0 || locks == 4, "seed {seed}: {:?}", show(&e));
            seen_partial |= locks == 0 && e.removed() < 8;
            for (k, &o) in e.original_index.iter().enumerate() {
                if o != SYNTHETIC {
                    assert_eq!(e.trace.events[k], t.events[o as usize]);
                }
            }
        }
        assert!(seen_partial);
    }

    #[test]
    fn methods_mode_removes_call_bodies_and_keeps_forking_calls() {
        let t = read(
            "T0|mbegin(lib;a)|1\nT0|acq(m)|2\nT0|w(y)|3\nT0|mbegin(inner;b)|4\n\
             T0|mend(inner)|5\nT0|rel(m)|6\nT0|mend(lib)|7\nT1|acq(m)|8\nT1|rel(m)|9\n\
             T0|mbegin(lib;a)|10\nT0|fork(T2)|11\nT0|mend(lib)|12\nT0|mbegin(lib;c)|13\n\
             T0|w(z)|14\n",
        );
        let e = elide(&t, &ElideConfig::methods(&["lib"])).unwrap();
        assert_eq!(
            show(&e),
            [
                "T0|mbegin(lib;a,m,y)",
                "T0|mend(lib)",
                "T1|mbegin(elided;m)",
                "T1|mend(elided)",
                "T0|mbegin(lib;a)",
                "T0|fork",
                "T0|mend(lib)",
                "T0|mbegin(lib;c,z)",
            ]
        );
        let calls: Vec<(u64, u64)> = e
            .regions
            .iter()
            .filter(|r| r.method_call)
            .map(|r| (r.begin, r.end))
            .collect();
        assert_eq!(calls, [(0, 1), (7, SYNTHETIC)]);
        assert!(is_well_formed(&e.trace));
    }

    #[test]
    fn bad_options() {
        let t = read(T);
        for cfg in [
            ElideConfig::locks(&["nope"]),
            ElideConfig::methods(&["nope"]),
            ElideConfig {
                fraction: 1.5,
                ..ElideConfig::default()
            },
        ] {
            assert!(elide(&t, &cfg).is_err());
        }
        let e = elide(&t, &ElideConfig::default()).unwrap();
        assert_eq!(e.trace.events, t.events);
        assert_eq!(e.original_index, (0..9).collect::<Vec<u64>>());
    }
}
