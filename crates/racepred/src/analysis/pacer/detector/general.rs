//! The detector's general access path (PACER Alg. 12–13, FastTrack's Alg. 7–8 inside
//! sampling periods) and race reporting: what the fast paths hand over.

use super::*;

impl Detector {
    /// What the general path does first for an access (`write` or a read) to variable
    /// `xi`: outside sampling periods an access to a variable without metadata is only
    /// counted (`None`); otherwise the slow access is counted and returned: whether `xi`
    /// has metadata, whether a sampling period is under way, and `t`'s FastTrack epoch.
    #[inline]
    fn general_access(&mut self, t: u32, xi: usize, write: bool) -> Option<(bool, bool, u32)> {
        let has_meta = self.meta_bit(xi);
        let sampling = self.sampling;
        if !sampling && !has_meta {
            match write {
                true => self.fast_writes += 1,
                false => self.fast_reads += 1,
            }
            return None;
        }
        let c = self.counters.period(sampling);
        match write {
            true => c.slow_writes += 1,
            false => c.slow_reads += 1,
        }
        Some((has_meta, sampling, self.ft[t as usize]))
    }

    /// Alg. 12 (with FastTrack's Alg. 7 inside sampling periods). Outside sampling periods
    /// only for variables with metadata (`on_event` did the rest).
    pub(super) fn read(&mut self, t: u32, x: u32, loc: u32, index: u64) -> bool {
        let xi = x as usize;
        let Some((has_meta, sampling, ft)) = self.general_access(t, xi, false) else {
            return false;
        };
        if !has_meta {
            // Sampling, null metadata: nothing to check or load, one store.
            self.grow_vars(xi);
            let cur = Entry {
                t,
                c: self.clock_of(t, t),
                ft,
                loc,
                index,
            };
            let r = if self.read_map_exact(false) {
                Reads::One(cur)
            } else {
                // FastTrack's map may hold reads that took the fast path: assume a map.
                self.maps.alloc(&[cur])
            };
            self.store(xi, VarMeta { r, ..VarMeta::NULL });
            self.sync_bit(xi);
            return false;
        }
        let meta = self.load(xi);
        // FastTrack: read map is epoch(t): no action (but a ghost of this epoch becomes
        // this sampled read, which stands for it). Outside sampling periods only for a
        // ghost: a sampled read of `t` is replaced below, like one of an older epoch (see
        // the module docs on shortest races).
        if let Reads::One(e) = &meta.r {
            if e.t == t && e.ft == ft && (sampling || e.is_ghost()) {
                if sampling && e.is_ghost() {
                    let c = self.clock_of(t, t);
                    let r = Reads::One(Entry {
                        t,
                        c,
                        ft,
                        loc,
                        index,
                    });
                    self.store(xi, VarMeta { r, ..meta });
                }
                return false;
            }
        }
        // FastTrack's [READ SHARED SAME EPOCH]: `t` already read in this epoch and the read
        // map is a vector (while sampling; outside, `t`'s entry is dropped below).
        if let (true, Reads::Map(m)) = (sampling, meta.r) {
            let v = self.maps.slice(&m);
            if let Some(k) = v.iter().position(|e| e.t == t && e.ft == ft) {
                if sampling && v[k].is_ghost() {
                    let c = self.clock_of(t, t);
                    let e = Entry {
                        t,
                        c,
                        ft,
                        loc,
                        index,
                    };
                    match m {
                        MapRef::Inline(_) => {
                            let r = Reads::Map(MapRef::Inline(e));
                            self.store(xi, VarMeta { r, ..meta });
                        }
                        MapRef::Pool(i) => self.maps.maps[i as usize][k] = e,
                    }
                }
                return false;
            }
        }
        let mut racy = false;
        if let Some(w) = meta.w() {
            if !self.ordered(&w, t) {
                self.scratch.push((self.fill(xi, w, true), Op::Write));
                racy = true;
            }
        }
        let c = self.clock_of(t, t);
        let cur = Entry {
            t,
            c,
            ft,
            loc,
            index,
        };
        // Entries of other threads whose order with this read is known exactly: sampled
        // ones (clock test); a ghost of another thread is unknown, and we then assume what
        // FastTrack would do if it were concurrent (keep a map), which only ever makes PACER
        // check a repeat FastTrack skips, never skip one FastTrack checks.
        let r = if sampling {
            match meta.r {
                Reads::Null if self.read_map_exact(meta.cleared_sampled) => Reads::One(cur),
                // FastTrack's map may hold reads that took the fast path: assume a map.
                Reads::Null => self.maps.alloc(&[cur]),
                Reads::One(e) if e.t == t || (!e.is_ghost() && self.ordered(&e, t)) => {
                    Reads::One(cur)
                }
                Reads::One(e) if e.is_ghost() => self.maps.alloc(&[cur]),
                Reads::One(e) => {
                    let e = self.fill(xi, e, false);
                    self.maps.alloc(&[e, cur])
                }
                Reads::Map(m) => {
                    let m = match m {
                        MapRef::Inline(e) if e.t != NO_THREAD => {
                            MapRef::Inline(self.fill(xi, e, false))
                        }
                        _ => m,
                    };
                    Reads::Map(self.maps.upsert(m, cur))
                }
            }
        } else {
            // Discard what FastTrack replaces (the epoch if it happens before this read,
            // or `t`'s entry of a map) but remember FastTrack's shape: this unsampled read
            // becomes a ghost epoch (for the same-epoch test, never for race checks).
            let ghost = Entry { c: GHOST, ..cur };
            let r = match meta.r {
                Reads::Null => Reads::One(ghost),
                Reads::One(e) if e.t == t || (!e.is_ghost() && self.ordered(&e, t)) => {
                    Reads::One(ghost)
                }
                Reads::One(e) if e.is_ghost() => self.maps.alloc(&[]),
                Reads::One(e) => {
                    let e = self.fill(xi, e, false);
                    self.maps.alloc(&[e])
                }
                // `t`'s entry goes, even from this same FastTrack epoch: this read stands
                // for it (same happens-before successors, later).
                Reads::Map(m) => Reads::Map(self.maps.retain(m, |e| e.t != t)),
            };
            // Without a sampled write, the shape of the read map no longer matters (a read
            // cannot race without a write): drop it unless it holds sampled reads.
            let keep = meta.has_sampled_write()
                || matches!(r, Reads::Map(ref m) if !self.maps.slice(m).is_empty());
            if keep {
                r
            } else {
                if let Reads::Map(m) = r {
                    self.maps.release(m);
                }
                Reads::Null
            }
        };
        self.store(xi, VarMeta { r, ..meta });
        self.sync_bit(xi);
        if racy {
            self.report(Event::new(ThreadId(t), Op::Read, x, LocId(loc)), index);
        }
        racy
    }

    /// Alg. 13 (with FastTrack's Alg. 8 inside sampling periods). Outside sampling periods
    /// only for variables with metadata (`on_event` did the rest).
    pub(super) fn write(&mut self, t: u32, x: u32, loc: u32, index: u64) -> bool {
        let xi = x as usize;
        let Some((has_meta, sampling, ft)) = self.general_access(t, xi, true) else {
            return false;
        };
        let entry = |d: &Detector| Entry {
            t,
            c: d.clock_of(t, t),
            ft,
            loc,
            index,
        };
        // Did FastTrack clear its read map at this write? Yes unless it skipped the write
        // as a repeat of `t`'s last write in this epoch: known when that write was sampled
        // (then it is `W`); an unsampled one is possible only if `t` had unsampled
        // operations in this epoch.
        let may_skip = sampling && self.may_repeat_unsampled(t);
        if !has_meta {
            // Sampling, null metadata: no race to check; stores only.
            self.grow_vars(xi);
            let m = VarMeta {
                w: entry(self),
                r: Reads::Null,
                cleared_sampled: !may_skip,
            };
            self.store(xi, m);
            self.sync_bit(xi);
            return false;
        }
        // FastTrack: write epoch is epoch(t): no action (while sampling; outside, this
        // write replaces `t`'s sampled one like a write of a later epoch).
        if sampling {
            let p = &self.vars[xi];
            if p.w_t == t && p.w_ft == ft {
                return false;
            }
        }
        let meta = self.load(xi);
        let mut racy = false;
        if let Some(w) = meta.w() {
            if !self.ordered(&w, t) {
                self.scratch.push((self.fill(xi, w, true), Op::Write));
                racy = true;
            }
        }
        match meta.r {
            Reads::Null => {}
            Reads::One(e) => {
                if !self.ordered(&e, t) {
                    self.scratch.push((self.fill(xi, e, false), Op::Read));
                    racy = true;
                }
            }
            Reads::Map(MapRef::Inline(e)) => {
                if e.t != NO_THREAD && !self.ordered(&e, t) {
                    self.scratch.push((self.fill(xi, e, false), Op::Read));
                    racy = true;
                }
            }
            Reads::Map(MapRef::Pool(i)) => {
                let v = std::mem::take(&mut self.maps.maps[i as usize]);
                for e in &v {
                    if !self.ordered(e, t) {
                        self.scratch.push((*e, Op::Read));
                        racy = true;
                    }
                }
                self.maps.maps[i as usize] = v;
                self.maps.release(MapRef::Pool(i));
            }
        }
        let w = if sampling { entry(self) } else { NO_ENTRY };
        // FastTrack's `W` is sampled iff this write was (see `may_skip` for its read map).
        let cleared_sampled = sampling && (meta.has_sampled_write() || !may_skip);
        self.store(
            xi,
            VarMeta {
                w,
                r: Reads::Null,
                cleared_sampled,
            },
        );
        self.sync_bit(xi);
        if racy {
            self.report(Event::new(ThreadId(t), Op::Write, x, LocId(loc)), index);
        }
        racy
    }

    /// Records the racy event and its pairs (the earlier accesses in `scratch`).
    #[cold]
    #[inline(never)]
    pub(super) fn report(&mut self, ev: Event, index: u64) {
        self.counters.period(self.sampling).races += self.scratch.len() as u64;
        self.racy.push(RacyEvent { index, event: ev });
        if self.record_pairs {
            for &(e, op) in &self.scratch {
                let first = Event::new(ThreadId(e.t), op, ev.target, LocId(e.loc));
                debug_assert!(e.index < index);
                self.pairs.push(RacePair::new(e.index, first, index, ev));
            }
        }
        self.scratch.clear();
    }
}
