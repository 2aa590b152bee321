//! WCP: weak-causally-precedes.
//!
//! D. Kini, U. Mathur, M. Viswanathan: "Dynamic Race Prediction in Linear Time", PLDI 2017
//! (Def. of ≺WCP, Algorithm 1: HB clocks `H`, WCP-predecessor clocks `P`, per-lock
//! acquire / release queues, per-(lock, variable) release clocks). Restated in
//! `papers/w3po-hybrid-lockset.txt` (Sulzmann, Stadtmüller, MPLR 2020), Def. 3.6–3.7 and
//! Prop. 3.8.
//!
//! ≺WCP is the smallest relation with
//! - (a) `rel(CS1) ≺ e2` when CS1, CS2 are critical sections on one lock, CS1 earlier, of
//!   different threads, containing conflicting events `e1 ∈ CS1`, `e2 ∈ CS2` (volatile
//!   accesses count as accesses here: the edge holds in every trace-specific reordering);
//! - (b) `rel(CS1) ≺ rel(CS2)` when moreover `acq(CS1) ≺ rel(CS2)` (some event of CS1
//!   WCP-precedes some event of CS2);
//! - hard edges every correct reordering keeps: fork → child, child → join (when the child
//!   has events), latest `vw(X)`
//!   → `vr(X)`, latest `sig(C)` → `wait(C)`;
//! - closed under composition with ≤HB on both sides, where HB is program order plus
//!   release → later acquire, every `vw(X)` → later `vr(X)`, and the hard edges.
//!
//! The clocks follow Kini et al. with one change: the local component of `H` counts every
//! event (not only releases), so `e ≺WCP f` iff `H_e(thread(e)) ≤ P_f(thread(e))` for
//! events of different threads; the rule-(a) release clocks are kept per source thread
//! (as RAPID does) so a thread's own earlier critical sections never order it.
//!
//! Report: `ReportKind::RacyEvents` — each access for which some earlier conflicting access
//! is WCP-unordered (Djit+-style check on per-variable read / write clocks). Promise
//! (Kini et al. Thm. 1): the first racy event belongs to a predictable race; every
//! trace-specific predictable pair is WCP-unordered (Prop. 3.8, so the later event of each
//! is reported). [`Wcp::with_pairs`] also lists every WCP-unordered conflicting pair
//! (quadratic in the worst case; used by tests).

use crate::analysis::AnalysisKind;
use rustc_hash::FxHashMap;

use super::locksets::{Access, AccessLog, Holdings, PairSink};
use super::slices::two;
use super::{Analysis, Side};
use crate::clock::VectorClock;
use crate::report::{RaceReport, RacyLog, ReportKind};
use crate::trace::{Event, Names, Op, ThreadId};

/// One critical section in a lock's log (Kini's Acq/Rel queues, shared by all threads with
/// a cursor each).
#[derive(Clone, Copy, Debug)]
struct LogEntry {
    thread: ThreadId,
    /// `C` at the acquire, by place in the arena.
    acq: u32,
    /// `H` at the release, by place in the arena (`None` while open).
    rel: Option<u32>,
}

#[derive(Debug, Default)]
struct LockState {
    h: VectorClock,
    p: VectorClock,
    log: Vec<LogEntry>,
    /// Per thread: next log entry to examine at its releases.
    cursor: Vec<usize>,
}

/// Per (lock, variable): H at the latest release, per source thread, of a critical section
/// that read (`r`) / wrote (`w`) the variable. Kept in [`Wcp::lockvars`], one slot per pair
/// seen, so a critical section records its accesses by slot and its release finds them
/// without hashing. The own entries rule (a) compares at every access (`w_own`, `r_own`)
/// fill the first cache line; the stamps and the clocks' places in the arena follow.
#[derive(Debug, Default)]
#[repr(C, align(64))]
struct LockVar {
    w_own: [u32; INLINE],
    r_own: [u32; INLINE],
    /// Critical-section ids that last recorded a read / write (dedupe).
    stamp_r: u64,
    stamp_w: u64,
    w: Releases,
    r: Releases,
}

/// Threads whose times [`LockVar`] and [`VarClocks`] keep inline (compared eight at a time
/// by [`greater8`]).
const INLINE: usize = 8;
const _: () = assert!(INLINE == 8, "greater8 compares eight times");

/// The latest release per source thread of one (lock, variable, kind) ([`LockVar`]),
/// beside its own entries (`LockVar::r_own` / `w_own`: per thread `u < INLINE` the own
/// entry of its latest release, 0 without one; a release with own entry 0 is never ahead,
/// so it would never be joined either).
#[derive(Debug, Default)]
struct Releases {
    /// Per thread `u < INLINE`: the clock of its latest release, by place in the arena.
    at: [u32; INLINE],
    /// Threads `≥ INLINE`, in order of each one's first release.
    far: Vec<Released>,
}

impl Releases {
    /// Joins into `p` (the WCP clock of thread `t`) the clock of every entry of another
    /// thread whose own entry is ahead of `p`'s (clocks in `arena`). The order of the
    /// joins does not matter: release clocks are HB clocks, so a release whose time a
    /// joined clock knows is below that clock.
    #[inline]
    fn join_ahead_into(
        &self,
        own: &[u32; INLINE],
        arena: &[u32],
        p: &mut VectorClock,
        t: ThreadId,
    ) {
        let mut ahead = ahead_mask(own, p.as_slice());
        if t.index() < INLINE {
            ahead &= !(1 << t.index());
        }
        while ahead != 0 {
            let u = ahead.trailing_zeros() as usize;
            ahead &= ahead - 1;
            if own[u] > p.get(ThreadId(u as u32)) {
                Wcp::join_arena(arena, self.at[u], p);
            }
        }
        for e in &self.far {
            if e.thread != t && e.own > p.get(e.thread) {
                Wcp::join_arena(arena, e.clock, p);
            }
        }
    }

    /// Records a release by `t`, own entry `own`, clock at `clock` in the arena, as `t`'s
    /// entry (its own entry goes to `own_inline` when `t < INLINE`).
    #[inline]
    fn record(&mut self, own_inline: &mut [u32; INLINE], t: ThreadId, own: u32, clock: u32) {
        if t.index() < INLINE {
            own_inline[t.index()] = own;
            self.at[t.index()] = clock;
            return;
        }
        match self.far.iter_mut().find(|e| e.thread == t) {
            Some(e) => {
                e.clock = clock;
                e.own = own;
            }
            None => self.far.push(Released {
                thread: t,
                own,
                clock,
            }),
        }
    }
}

/// H of a release by a thread `≥ INLINE`, with its own entry `own = clock[thread]`: rule
/// (a) compares only that entry at every access, and joins the clock (a cache miss away)
/// only when it is ahead. The clock is the release's, stored once in [`Wcp`]'s arena for
/// the lock's log (a copy per (lock, variable) cost a cache miss per variable of the
/// critical section at each release).
#[derive(Debug)]
struct Released {
    thread: ThreadId,
    own: u32,
    /// Place in the arena.
    clock: u32,
}

#[derive(Debug)]
struct OpenCs {
    lock: u32,
    id: u64,
    entry: usize,
    /// Slots in [`Wcp::lockvars`] of the variables read (`false`) / written (`true`).
    accessed: Vec<(u32, bool)>,
}

/// Per variable: per thread, the H-time of its latest write / read. The first [`INLINE`]
/// threads' are inline, so the check at an access reads one place.
#[derive(Debug, Default)]
struct VarClocks {
    w: [u32; INLINE],
    r: [u32; INLINE],
    /// Threads `≥ INLINE`: write and read times, indexed by thread minus `INLINE`.
    far: Option<Box<[VectorClock; 2]>>,
}

impl VarClocks {
    /// Whether a write (`writes`) or read time of another thread than `t` is ahead of `p`.
    #[inline]
    fn ahead(&self, writes: bool, p: &VectorClock, t: ThreadId) -> bool {
        let c = if writes { &self.w } else { &self.r };
        let mut m = ahead_mask(c, p.as_slice());
        if t.index() < INLINE {
            m &= !(1 << t.index());
        }
        m != 0
            || self.far.as_ref().is_some_and(|far| {
                let c = &far[usize::from(!writes)];
                c.as_slice().iter().enumerate().any(|(i, &x)| {
                    let u = ThreadId((i + INLINE) as u32);
                    u != t && x > p.get(u)
                })
            })
    }

    /// Sets `t`'s write (`write`) or read time.
    #[inline]
    fn set(&mut self, write: bool, t: ThreadId, time: u32) {
        if t.index() < INLINE {
            let c = if write { &mut self.w } else { &mut self.r };
            c[t.index()] = time;
        } else {
            let far = self.far.get_or_insert_with(Default::default);
            far[usize::from(!write)].set(ThreadId(t.0 - INLINE as u32), time);
        }
    }
}

/// Bit `u` set where `c[u] > p[u]` (`p` zero past its end).
#[inline]
fn ahead_mask(c: &[u32; INLINE], p: &[u32]) -> u32 {
    match p.first_chunk::<INLINE>() {
        Some(p) => greater8(c, p),
        None => {
            let mut q = [0; INLINE];
            q[..p.len()].copy_from_slice(p);
            greater8(c, &q)
        }
    }
}

/// Bit `u` set where `a[u] > b[u]`.
#[inline]
fn greater8(a: &[u32; 8], b: &[u32; 8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SSE2 (every x86-64) compares signed: flipping the top bits makes it unsigned.
        // SAFETY: both arrays hold 32 bytes; `loadu` takes any alignment.
        unsafe {
            let top = _mm_set1_epi32(i32::MIN);
            let (a, b) = (a.as_ptr() as *const __m128i, b.as_ptr() as *const __m128i);
            let lo = _mm_cmpgt_epi32(
                _mm_xor_si128(_mm_loadu_si128(a), top),
                _mm_xor_si128(_mm_loadu_si128(b), top),
            );
            let hi = _mm_cmpgt_epi32(
                _mm_xor_si128(_mm_loadu_si128(a.add(1)), top),
                _mm_xor_si128(_mm_loadu_si128(b.add(1)), top),
            );
            (_mm_movemask_ps(_mm_castsi128_ps(lo)) | _mm_movemask_ps(_mm_castsi128_ps(hi)) << 4)
                as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        a.iter()
            .zip(b)
            .enumerate()
            .fold(0, |m, (u, (x, y))| m | u32::from(x > y) << u)
    }
}

/// Weak-causally-precedes.
pub struct Wcp {
    h: Vec<VectorClock>,
    p: Vec<VectorClock>,
    hold: Holdings,
    locks: Vec<LockState>,
    /// Slot in `lockvars` of each (lock, variable) accessed in a critical section.
    lockvar: FxHashMap<(u32, u32), u32>,
    lockvars: Vec<LockVar>,
    open: Vec<Vec<OpenCs>>,
    /// Per thread: `H` of the fork that started it, by place in the arena. `P` of the
    /// thread holds it from then on, so at a release the rule-(b) walk passes over every
    /// critical section whose release happened before that fork in O(1) (an HB clock
    /// holds another event's clock iff it holds that event's own component) instead of
    /// comparing whole clocks: a thread forked late would otherwise compare every earlier
    /// critical section of the lock, a cost quadratic in the threads per release.
    fork_clock: Vec<Option<u32>>,
    pool: Vec<Vec<(u32, bool)>>,
    /// Clocks of acquires and releases, each as its length and its components.
    arena: Vec<u32>,
    next_cs: u64,
    vars: Vec<VarClocks>,
    /// Per volatile variable: join of H and P of every `vw`, and H of the latest.
    vol: Vec<(VectorClock, VectorClock, VectorClock)>,
    /// Per condition: H of the latest `sig`.
    sig: Vec<VectorClock>,
    racy: RacyLog,
    pairs: Option<(AccessLog, PairSink)>,
    scratch: VectorClock,
}

impl Default for Wcp {
    fn default() -> Self {
        Wcp::new()
    }
}

/// `a` joined into `b` only where `a` is ahead.
#[inline]
fn join_into(b: &mut VectorClock, a: &VectorClock) {
    b.join(a);
}

impl Wcp {
    /// Racy events only (linear time).
    pub fn new() -> Wcp {
        Wcp {
            h: Vec::new(),
            p: Vec::new(),
            hold: Holdings::new(),
            locks: Vec::new(),
            lockvar: FxHashMap::default(),
            lockvars: Vec::new(),
            open: Vec::new(),
            fork_clock: Vec::new(),
            pool: Vec::new(),
            arena: Vec::new(),
            next_cs: 1,
            vars: Vec::new(),
            vol: Vec::new(),
            sig: Vec::new(),
            racy: RacyLog::default(),
            pairs: None,
            scratch: VectorClock::new(),
        }
    }

    /// Racy events grouped by location: the first of each (location, operation) with a
    /// count, in memory bounded by the locations ([`RacyLog`]; the CLI's default).
    pub fn racy_by_location(mut self) -> Wcp {
        self.racy = RacyLog::new(false);
        self
    }

    /// Racy events and every WCP-unordered conflicting pair.
    pub fn with_pairs() -> Wcp {
        Wcp {
            pairs: Some((AccessLog::new(None), PairSink::default())),
            ..Wcp::new()
        }
    }

    #[inline]
    fn ensure_thread(&mut self, t: ThreadId) {
        if t.index() >= self.h.len() {
            self.h.resize_with(t.index() + 1, VectorClock::new);
            self.p.resize_with(t.index() + 1, VectorClock::new);
            self.open.resize_with(t.index() + 1, Vec::new);
            self.fork_clock.resize(t.index() + 1, None);
        }
    }

    #[inline]
    fn lock(&mut self, l: u32) -> &mut LockState {
        if l as usize >= self.locks.len() {
            self.locks.resize_with(l as usize + 1, LockState::default);
        }
        &mut self.locks[l as usize]
    }

    /// Stores `c` in the arena; returns its place.
    fn store(arena: &mut Vec<u32>, c: &[u32]) -> u32 {
        let at = u32::try_from(arena.len()).expect("WCP clock arena beyond 2^32 entries");
        arena.push(c.len() as u32);
        arena.extend_from_slice(c);
        at
    }

    /// The clock at `at` in the arena.
    #[inline]
    fn stored(arena: &[u32], at: u32) -> &[u32] {
        let at = at as usize;
        &arena[at + 1..at + 1 + arena[at] as usize]
    }

    /// `arena clock ⊑ C_t` where `C_t = P_t[t := H_t(t)]`.
    #[inline]
    fn le_c(arena: &[u32], c: u32, t: ThreadId, h: &VectorClock, p: &VectorClock) -> bool {
        let s = Self::stored(arena, c);
        s.iter().enumerate().all(|(u, &x)| {
            let cu = if u == t.index() {
                h.get(t)
            } else {
                p.get(ThreadId(u as u32))
            };
            x <= cu
        })
    }

    #[inline]
    fn join_arena(arena: &[u32], c: u32, v: &mut VectorClock) {
        let s = Self::stored(arena, c);
        for (u, &x) in s.iter().enumerate() {
            let u = ThreadId(u as u32);
            if x > v.get(u) {
                v.set(u, x);
            }
        }
    }

    fn acquire(&mut self, t: ThreadId, ev: &Event) {
        if !self.hold.acquire(t, ev.lock()) {
            return; // re-entrant
        }
        let l = ev.target;
        self.lock(l);
        let ls = &self.locks[l as usize];
        join_into(&mut self.h[t.index()], &ls.h);
        join_into(&mut self.p[t.index()], &ls.p);
        // C_t = P_t[t := H_t(t)] at the acquire (P_t ⊑ H_t, so `set` stays monotone).
        let c = &mut self.scratch;
        c.copy_from(&self.p[t.index()]);
        c.set(t, self.h[t.index()].get(t));
        let acq = Self::store(&mut self.arena, c.as_slice());
        let ls = &mut self.locks[l as usize];
        ls.log.push(LogEntry {
            thread: t,
            acq,
            rel: None,
        });
        let entry = ls.log.len() - 1;
        let id = self.next_cs;
        self.next_cs += 1;
        let accessed = self.pool.pop().unwrap_or_default();
        self.open[t.index()].push(OpenCs {
            lock: l,
            id,
            entry,
            accessed,
        });
    }

    fn release(&mut self, t: ThreadId, ev: &Event) {
        if !self.hold.release(t, ev.lock()) {
            return;
        }
        let l = ev.target as usize;
        let Some(k) = self.open[t.index()]
            .iter()
            .position(|o| o.lock == ev.target)
        else {
            return;
        };
        let cs = self.open[t.index()].remove(k);
        // Rule (b): earlier critical sections of other threads whose acquire ≺WCP this
        // release.
        {
            let ls = &mut self.locks[l];
            if t.index() >= ls.cursor.len() {
                ls.cursor.resize(t.index() + 1, 0);
            }
            let (h, p) = (&self.h[t.index()], &mut self.p[t.index()]);
            let fork = self.fork_clock[t.index()].map(|f| Self::stored(&self.arena, f));
            let mut cur = ls.cursor[t.index()];
            while cur < ls.log.len() {
                let e = ls.log[cur];
                if e.thread == t {
                    cur += 1;
                    continue;
                }
                let Some(rel) = e.rel else { break };
                // Released before this thread's fork: acq ⊑ rel ⊑ H_fork ⊑ P_t ⊑ C_t, so
                // the entry passes and joining it changes nothing (H clocks: `rel ⊑ H_fork`
                // iff the fork's clock has the release's own component).
                let u = e.thread.index();
                if fork.is_some_and(|f| {
                    f.get(u).copied().unwrap_or(0) >= Self::stored(&self.arena, rel)[u]
                }) {
                    // Checked on small traces only: the check costs what the skip saves.
                    debug_assert!(
                        p.as_slice().len() > 64
                            || (Self::le_c(&self.arena, e.acq, t, h, p)
                                && Self::stored(&self.arena, rel)
                                    .iter()
                                    .enumerate()
                                    .all(|(v, &x)| x <= p.get(ThreadId(v as u32)))),
                        "a release before the fork is in P_t"
                    );
                    cur += 1;
                    continue;
                }
                if !Self::le_c(&self.arena, e.acq, t, h, p) {
                    break;
                }
                Self::join_arena(&self.arena, rel, p);
                cur += 1;
            }
            ls.cursor[t.index()] = cur;
        }
        // Rule (a) bookkeeping: this release's H (stored once, in the arena) for every
        // variable accessed in the CS.
        let h = &self.h[t.index()];
        let rel = Self::store(&mut self.arena, h.as_slice());
        let own = h.get(t);
        for &(slot, w) in &cs.accessed {
            let lv = &mut self.lockvars[slot as usize];
            if w {
                lv.w.record(&mut lv.w_own, t, own, rel);
            } else {
                lv.r.record(&mut lv.r_own, t, own, rel);
            }
        }
        let mut accessed = cs.accessed;
        accessed.clear();
        self.pool.push(accessed);
        let ls = &mut self.locks[l];
        ls.log[cs.entry].rel = Some(rel);
        ls.h.copy_from(h);
        ls.p.copy_from(&self.p[t.index()]);
        let _ = cs.id;
    }

    /// Rule (a) at an access of `x` by `t`: joins the release clocks of other threads'
    /// critical sections on held locks that made a conflicting access; records the access
    /// in the open critical sections.
    fn rule_a(&mut self, t: ThreadId, x: u32, write: bool) {
        let p = &mut self.p[t.index()];
        let arena = &self.arena;
        for cs in self.open[t.index()].iter_mut() {
            let slot = *self.lockvar.entry((cs.lock, x)).or_insert_with(|| {
                self.lockvars.push(LockVar::default());
                u32::try_from(self.lockvars.len() - 1).expect("below 2^32 (lock, variable) pairs")
            });
            let lv = &mut self.lockvars[slot as usize];
            lv.w.join_ahead_into(&lv.w_own, arena, p, t);
            if write {
                lv.r.join_ahead_into(&lv.r_own, arena, p, t);
            }
            let stamp = if write {
                &mut lv.stamp_w
            } else {
                &mut lv.stamp_r
            };
            if *stamp != cs.id {
                *stamp = cs.id;
                cs.accessed.push((slot, write));
            }
        }
    }

    fn access(&mut self, index: u64, ev: &Event, t: ThreadId) {
        let x = ev.target;
        let write = ev.is_write();
        if !self.open[t.index()].is_empty() {
            self.rule_a(t, x, write);
        }
        if x as usize >= self.vars.len() {
            self.vars.resize_with(x as usize + 1, VarClocks::default);
        }
        let (h, p) = (&self.h[t.index()], &self.p[t.index()]);
        let own = h.get(t);
        let vc = &mut self.vars[x as usize];
        let racy = vc.ahead(true, p, t) || (write && vc.ahead(false, p, t));
        vc.set(write, t, own);
        if racy {
            self.racy.push(index, ev);
        }
        if let Some((log, sink)) = self.pairs.as_mut() {
            let var = ev.var();
            log.pairs_into(sink, &self.hold.table, 0, Some(p), write, index, ev);
            let a = Access {
                index,
                time: own,
                ls: 0,
                loc: ev.loc,
            };
            log.push(var, t, write, a);
        }
    }

    fn volatile(&mut self, ev: &Event, t: ThreadId) {
        let x = ev.target as usize;
        if x >= self.vol.len() {
            self.vol.resize_with(x + 1, Default::default);
        }
        let write = ev.op == Op::VolatileWrite;
        if !self.open[t.index()].is_empty() {
            self.rule_a(t, ev.target, write);
        }
        let (hv, pv, last) = &mut self.vol[x];
        if write {
            hv.join(&self.h[t.index()]);
            pv.join(&self.p[t.index()]);
            last.copy_from(&self.h[t.index()]);
        } else {
            self.h[t.index()].join(hv);
            let p = &mut self.p[t.index()];
            p.join(pv);
            p.join(last);
        }
    }
}

impl Analysis for Wcp {
    fn name(&self) -> &'static str {
        AnalysisKind::Wcp.name()
    }

    fn on_event(&mut self, index: u64, ev: &Event, _side: Side<'_>) {
        let t = ev.thread;
        self.ensure_thread(t);
        self.h[t.index()].increment(t);
        match ev.op {
            Op::Acquire => self.acquire(t, ev),
            Op::Release => self.release(t, ev),
            Op::Read | Op::Write => self.access(index, ev, t),
            Op::VolatileRead | Op::VolatileWrite => self.volatile(ev, t),
            Op::Fork => {
                let u = ev.other_thread();
                if u != t {
                    self.ensure_thread(u);
                    let (a, b) = two(&mut self.h, t.index(), u.index());
                    b.join(a);
                    self.p[u.index()].join(&self.h[t.index()]);
                    let at = Self::store(&mut self.arena, self.h[t.index()].as_slice());
                    self.fork_clock[u.index()] = Some(at);
                }
            }
            Op::Join => {
                let u = ev.other_thread();
                // A child without events still ends after its fork: its clock holds the
                // fork's, so the join orders fork → join (as the oracle and HB do).
                if u != t {
                    self.ensure_thread(u);
                    let (a, b) = two(&mut self.h, t.index(), u.index());
                    a.join(b);
                    self.p[t.index()].join(&self.h[u.index()]);
                }
            }
            Op::Signal => {
                let c = ev.target as usize;
                if c >= self.sig.len() {
                    self.sig.resize_with(c + 1, VectorClock::new);
                }
                self.sig[c].copy_from(&self.h[t.index()]);
            }
            Op::Wait => {
                if let Some(s) = self.sig.get(ev.target as usize) {
                    self.h[t.index()].join(s);
                    self.p[t.index()].join(s);
                }
            }
            Op::MethodBegin | Op::MethodEnd | Op::Begin | Op::End | Op::Local | Op::Branch => {}
        }
    }

    fn finish(&mut self, _names: &Names) -> RaceReport {
        build_report(self)
    }
}

#[cold]
#[inline(never)]
fn build_report(a: &mut Wcp) -> RaceReport {
    let mut r = RaceReport::new(AnalysisKind::Wcp.name(), ReportKind::RacyEvents);
    a.racy.finish(&mut r);
    if let Some((_, sink)) = a.pairs.as_mut() {
        sink.into_report(&mut r);
        r.notes
            .push("pairs: every WCP-unordered conflicting pair".into());
    }
    r.normalize();
    r.notes.push(
        "racy events: accesses WCP-unordered with an earlier conflicting access; the first \
         is a predictable race, later ones may be false positives"
            .into(),
    );
    r
}

/// WCP racy events and WCP-unordered pairs of an in-memory trace.
pub fn analyze(trace: &crate::trace::Trace) -> RaceReport {
    let mut a: Vec<Box<dyn Analysis>> = vec![Box::new(Wcp::with_pairs())];
    super::run_trace(trace, &mut a).pop().expect("one report")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;
    use Event as E;

    fn pairs(ev: Vec<Event>) -> Vec<(u64, u64)> {
        analyze(&Trace::from_events(ev))
            .pair_set()
            .into_iter()
            .collect()
    }

    proptest::proptest! {
        /// The vector comparison of eight times is the unsigned one, bit by bit, also for
        /// times from 2^31 on (signed lanes) and for clocks shorter than eight.
        #[test]
        fn ahead_mask_compares_unsigned(
            c in proptest::array::uniform8(proptest::prop_oneof![0u32..4, proptest::num::u32::ANY]),
            p in proptest::collection::vec(proptest::prop_oneof![0u32..4, proptest::num::u32::ANY], 0..12),
        ) {
            let want = (0..INLINE).fold(0, |m, u| {
                m | u32::from(c[u] > p.get(u).copied().unwrap_or(0)) << u
            });
            proptest::prop_assert_eq!(ahead_mask(&c, &p), want);
        }
    }

    #[test]
    fn example_3_2_right_predicts_alternative_schedule() {
        // T1: w(x) acq(y) rel(y); T2: acq(y) rel(y) w(x): HB-ordered, WCP-unordered.
        let ev = vec![
            E::write(0, 0),
            E::acquire(0, 0),
            E::release(0, 0),
            E::acquire(1, 0),
            E::release(1, 0),
            E::write(1, 0),
        ];
        let r = analyze(&Trace::from_events(ev.clone()));
        assert_eq!(r.racy_set().into_iter().collect::<Vec<_>>(), vec![5]);
        assert_eq!(pairs(ev), vec![(0, 5)]);
    }

    #[test]
    fn rule_a_orders_conflicting_critical_sections() {
        // T1: acq(y) w(x) rel(y); T2: acq(y) r(x) rel(y) w(z)?: and a write after the
        // release of T1 is ordered with T2's later event through HB composition.
        let ev = vec![
            E::write(0, 1),
            E::acquire(0, 0),
            E::write(0, 0),
            E::release(0, 0),
            E::acquire(1, 0),
            E::read(1, 0),
            E::release(1, 0),
            E::write(1, 1),
        ];
        assert_eq!(pairs(ev), Vec::<(u64, u64)>::new());
    }

    #[test]
    fn example_3_9_wcp_incomplete() {
        // Our reading of Example 3.9: T1: acq(y) w(x) rel(y); T2: acq(y) w(x) rel(y) ...
        // rule (a) orders rel(CS1) ≺ T2's w(x); with a later conflicting access on
        // another variable the HB closure orders a predictable race:
        // T1: w(z) acq(y) w(x) rel(y); T2: acq(y) w(x) rel(y) w(z).
        // Reordering T2 first (T2: acq w(x) rel, then T1: w(z)) enables w(z) ‖ w(z).
        let ev = vec![
            E::write(0, 1),
            E::acquire(0, 0),
            E::write(0, 0),
            E::release(0, 0),
            E::acquire(1, 0),
            E::write(1, 0),
            E::release(1, 0),
            E::write(1, 1),
        ];
        assert_eq!(pairs(ev), Vec::<(u64, u64)>::new());
    }

    #[test]
    fn own_critical_sections_do_not_order() {
        // T1: acq(m) w(z) rel(m); T2: acq(m) rel(m) acq(l) w(x) rel(l) acq(l) w(x) w(z)
        // rel(l): T1's w(z) and T2's w(z) are WCP-unordered (the m sections do not
        // conflict); T2's earlier l section must not order it.
        let ev = vec![
            E::acquire(0, 1),
            E::write(0, 2),
            E::release(0, 1),
            E::acquire(1, 1),
            E::release(1, 1),
            E::acquire(1, 0),
            E::write(1, 0),
            E::release(1, 0),
            E::acquire(1, 0),
            E::write(1, 0),
            E::write(1, 2),
            E::release(1, 0),
        ];
        assert_eq!(pairs(ev), vec![(1, 10)]);
    }

    #[test]
    fn fork_join_are_hard() {
        let ev = vec![
            E::write(0, 0),
            E::fork(0, 1),
            E::write(1, 0),
            E::join(0, 1),
            E::read(0, 0),
        ];
        assert!(pairs(ev).is_empty());
    }
}
