//! The detector's clocks and synchronisation (PACER Alg. 9–11 and App. C): sampling period
//! starts, threads, clock increments, joins into threads and synchronisation objects, fork,
//! and the happens-before test of an access entry.

use super::*;

impl Detector {
    #[cold]
    #[inline(never)]
    pub(super) fn period_start(&mut self, sampling: bool, index: u64) {
        if sampling {
            if !self.sampling {
                self.sampled_ranges.push((index, u64::MAX));
            }
            // A new sampling period: every thread's clock is incremented (§3.2), lazily at
            // its first event in the period (equivalent: nobody reads a thread's own
            // component of its clock before that but the thread itself or its joiner).
            self.period_id += 1;
        } else if self.sampling {
            if let Some(r) = self.sampled_ranges.last_mut() {
                r.1 = index;
            }
        }
        self.sampling = sampling;
    }

    #[inline]
    pub(super) fn ensure_thread(&mut self, t: u32) {
        if self.ft.get(t as usize).is_some_and(|&f| f != 0) {
            return;
        }
        self.create_thread(t);
    }

    /// Thread state for a thread that was not forked.
    #[cold]
    #[inline(never)]
    pub(super) fn create_thread(&mut self, t: u32) {
        let i = t as usize;
        if i >= self.threads.len() {
            self.threads.resize_with(i + 1, || None);
        }
        if self.threads[i].is_none() {
            // A thread that was not forked: its clock is inc_t(⊥), version 1.
            let h = self.arena.alloc();
            self.arena.increment(h, t);
            let mut ver = vec![0; i + 1];
            ver[i] = 1;
            self.threads[i] = Some(ThreadState {
                clock: h,
                ver,
                period: if self.sampling { self.period_id } else { 0 },
            });
            self.new_epoch(t);
        }
    }

    #[inline]
    pub(super) fn th(&self, t: u32) -> &ThreadState {
        self.threads[t as usize]
            .as_ref()
            .expect("thread state exists")
    }

    #[inline]
    pub(super) fn th_mut(&mut self, t: u32) -> &mut ThreadState {
        self.threads[t as usize]
            .as_mut()
            .expect("thread state exists")
    }

    #[inline]
    pub(super) fn start_of_period_increment(&mut self, t: u32) {
        let pid = self.period_id;
        if self.th(t).period != pid {
            self.th_mut(t).period = pid;
            self.increment_clock(t);
        }
    }

    /// Alg. 10 plus FastTrack's epoch counter: the increment after a release, fork,
    /// volatile write or signal.
    pub(super) fn increment(&mut self, t: u32) {
        self.new_epoch(t);
        if self.sampling {
            self.increment_clock(t);
        }
    }

    /// Alg. 10 inside a sampling period: clone if shared, then bump clock and version.
    pub(super) fn increment_clock(&mut self, t: u32) {
        let mut h = self.th(t).clock;
        if self.arena.make_unique(&mut h) {
            self.counters.sampling.clones += 1;
        }
        self.arena.increment(h, t);
        let th = self.th_mut(t);
        th.clock = h;
        let v = th.ver(t) + 1;
        th.set_ver(t, v);
    }

    /// Alg. 11: `C_t ← C_t ⊔ C_m` for a lock, condition, volatile or joined thread `m`.
    pub(super) fn join_into_thread(&mut self, t: u32, src: H, ve: VEpoch) {
        let sampling = self.sampling;
        let skip = match ve {
            VEpoch::Bottom => true,
            VEpoch::Ver { u, v } => self.th(t).ver(u) >= v,
            VEpoch::Unknown => src == NOCLOCK,
        };
        let c = self.counters.period(sampling);
        if skip {
            c.fast_joins += 1;
            return;
        }
        c.slow_joins += 1;
        let mut h = self.th(t).clock;
        if !self.arena.le(src, h) {
            if self.arena.make_unique(&mut h) {
                self.counters.period(sampling).clones += 1;
            }
            self.arena.join(h, src);
            let th = self.th_mut(t);
            th.clock = h;
            let v = th.ver(t) + 1;
            th.set_ver(t, v);
        }
        if let VEpoch::Ver { u, v } = ve {
            self.th_mut(t).set_ver(u, v);
        }
    }

    /// Alg. 9: `C_m ← C_t` (release, signal): shallow outside sampling periods, deep inside.
    pub(super) fn copy_to_sync(&mut self, t: u32, m: &mut SyncObj) {
        let th = self.threads[t as usize].as_ref().expect("thread");
        let (th_clock, ver) = (th.clock, th.ver(t));
        if self.sampling {
            if m.clock == NOCLOCK || self.arena.is_shared(m.clock) {
                self.arena.drop_ref(m.clock);
                m.clock = self.arena.alloc();
            }
            self.arena.copy(m.clock, th_clock);
            self.counters.sampling.deep_copies += 1;
        } else {
            let h = self.arena.share(th_clock);
            self.arena.drop_ref(m.clock);
            m.clock = h;
            self.counters.non_sampling.shallow_copies += 1;
        }
        m.vepoch = VEpoch::Ver { u: t, v: ver };
    }

    /// Alg. 16 (App. C), reconstructed: `C_x ← C_x ⊔ C_t` for a volatile write. If `C_x ⊑
    /// C_t` (known from versions, or checked), the join is a copy (shallow outside sampling
    /// periods) and `x` takes `t`'s version epoch; otherwise a real join, and the version
    /// epoch becomes unknown.
    pub(super) fn join_into_volatile(&mut self, t: u32, x: &mut SyncObj) {
        let sampling = self.sampling;
        let th_clock = self.th(t).clock;
        let by_version = match x.vepoch {
            VEpoch::Bottom => true,
            VEpoch::Ver { u, v } => self.th(t).ver(u) >= v,
            VEpoch::Unknown => false,
        };
        if by_version || self.arena.le(x.clock, th_clock) {
            self.counters.period(sampling).fast_joins += by_version as u64;
            self.counters.period(sampling).slow_joins += !by_version as u64;
            self.copy_to_sync(t, x);
            return;
        }
        self.counters.period(sampling).slow_joins += 1;
        let mut h = x.clock;
        if self.arena.make_unique(&mut h) {
            self.counters.period(sampling).clones += 1;
        }
        self.arena.join(h, th_clock);
        x.clock = h;
        x.vepoch = VEpoch::Unknown;
    }

    /// Alg. 3: fork. The child gets a copy of the parent's clock (and its version vector),
    /// then both increment.
    pub(super) fn fork(&mut self, t: u32, u: u32) {
        if t == u {
            return;
        }
        let ui = u as usize;
        if ui >= self.threads.len() {
            self.threads.resize_with(ui + 1, || None);
        }
        let (pclock, mut ver) = {
            let p = self.th(t);
            (p.clock, p.ver.clone())
        };
        let (own_ver, old_clock) = match &self.threads[ui] {
            Some(c) => (c.ver(u), c.clock),
            None => (0, NOCLOCK),
        };
        self.arena.drop_ref(old_clock);
        let clock = if self.sampling {
            let h = self.arena.alloc();
            self.arena.copy(h, pclock);
            self.counters.sampling.deep_copies += 1;
            h
        } else {
            self.counters.non_sampling.shallow_copies += 1;
            self.arena.share(pclock)
        };
        if ver.len() <= ui {
            ver.resize(ui + 1, 0);
        }
        ver[ui] = own_ver.max(ver[ui]) + 1;
        self.threads[ui] = Some(ThreadState {
            clock,
            ver,
            period: if self.sampling { self.period_id } else { 0 },
        });
        self.new_epoch(u);
        if self.sampling {
            self.increment_clock(u);
        }
        self.increment(t);
    }

    #[inline]
    pub(super) fn non_sampled_ops(&self) -> u64 {
        self.sampler.non_sampled_ops()
    }

    /// Whether FastTrack's read map of a variable, empty in PACER's metadata, is empty
    /// too: its last write cleared FastTrack's map while sampling (`cleared`: every read
    /// since took the slow path), or no operation at all went unsampled.
    #[inline]
    pub(super) fn read_map_exact(&self, cleared: bool) -> bool {
        cleared || self.non_sampled_ops() == 0
    }

    /// Clock of `t` for component `u`.
    #[inline]
    pub(super) fn clock_of(&self, t: u32, u: u32) -> Time {
        self.arena.get(self.th(t).clock, u)
    }

    /// `e ⪯ C_t`: the sampled access `e` happens before the current event of `t` (true for
    /// ghosts, which are never checked for races).
    #[inline]
    pub(super) fn ordered(&self, e: &Entry, t: u32) -> bool {
        e.t == t || e.c <= self.clock_of(t, e.t) || e.is_ghost()
    }
}
