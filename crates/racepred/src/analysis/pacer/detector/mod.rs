//! The PACER detector: FastTrack inside sampling periods, almost nothing outside them.
//!
//! State (paper §3.2–3.3, App. C):
//! - per thread: a vector clock (possibly shared with locks and volatiles), a version vector
//!   `ver_t`, and a scalar FastTrack epoch counter `ft` (see below);
//! - per lock, volatile and condition: a vector clock (possibly shared) and a version epoch
//!   (`Bottom` for a clock never written, `v@u` when the clock is version `v` of thread `u`'s
//!   clock, `Unknown` after a volatile's join);
//! - per variable: a write entry and a read map, both **null** unless a sampled access put
//!   something there.
//!
//! **Layout for the non-sampling fast path** (what makes "PACER does almost nothing outside
//! sampling periods" true in time, not only in work): a bitmap says which variables have
//! non-null metadata, so an access outside sampling periods to a variable without metadata
//! is one bit test, and stores nothing; the metadata itself (`Packed`, 32 bytes, with
//! report sites apart, small read maps inline, in tables allocated a page at a time where
//! sampled accesses land: `Pages`) is touched only while sampling or when the bit is
//! set. The sampler is a countdown. [`Detector::on_events`] takes a block of events at a
//! time: a non-sampling stretch is one branch-free pass that counts the accesses whose bit
//! is clear and lists the others (vectorised, eight events at a time, where AVX2 is
//! available: `filter`), then a second pass over that list with the records prefetched
//! ahead; sampling stretches prefetch the records of the next accesses. Outside sampling
//! periods metadata bits are only ever cleared, which is what makes the first pass exact.
//! The common cases of an access that looks at metadata (no race, FastTrack's same-epoch
//! repeats, the first sampled access to a variable) work on the stored record in place
//! (`unsampled`, `sampled_direct`); races and the rarer shapes of read maps take the
//! general path (`read`, `write`), which decodes the record into a `VarMeta`.
//!
//! **Shortest races.** The paper guarantees the *sampled shortest races* (§1, Def. 5,
//! Theorem 2): a race (a, b) with a sampled and no access between them that also races
//! with b. Outside sampling periods an unsampled access of `t` therefore replaces `t`'s
//! sampled access of the same kind (an unsampled read drops `t`'s read entry, an unsampled
//! write all metadata), even when FastTrack would have skipped it as a same-epoch repeat:
//! the two have the same happens-before successors, so the race with the older one is not
//! shortest. Keeping it instead, as FastTrack's single entry for the run of repeats does,
//! reports strictly more but keeps a read-shared variable's metadata, and makes every later
//! access to it a slow one, until its readers synchronise; on the JavaGrande raytracer trace
//! that made r = 0.01 cost as much as FastTrack.
//!
//! Clocks live in an arena of reference-counted buffers: a shallow copy bumps a count; a
//! thread or volatile clones its buffer before changing it when the count is above one
//! (the paper's `isShared`/`clone`, with the count instead of a flag).
//!
//! **FastTrack epochs.** Inside sampling periods PACER must act exactly as FastTrack, whose
//! same-epoch fast paths ("read map is `epoch(t)`", "write epoch is `epoch(t)`") depend on
//! FastTrack's clock increments, which PACER skips outside sampling periods. Each thread
//! therefore also counts FastTrack's increments in a scalar `ft` (one add per release, fork,
//! volatile write or signal: O(1)), and each recorded access keeps it. The same-epoch tests
//! compare these; the happens-before tests compare PACER's vector clocks, which are exact
//! for sampled accesses (Lemmas 8–9). At rate 1 the detector is FastTrack (Alg. 7–8).

use crate::report::{RacePair, RacyEvent};
use crate::trace::{Event, LocId, Op, ThreadId};

use super::arena::{Arena, Time, H, NOCLOCK};
use super::counters::Counters;
use super::filter::filter;
use super::pages::Pages;
use super::sampling::Sampler;

mod general;
mod sync;

/// Version epoch of a lock, volatile or condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum VEpoch {
    /// The clock is bottom (never written): a join from it is a no-op.
    Bottom,
    /// The clock equals version `v` of thread `u`'s clock.
    Ver { u: u32, v: u32 },
    /// The clock is a join of several threads' clocks (volatiles, App. C): joins from it
    /// must compare clocks.
    Unknown,
}

#[derive(Debug)]
struct SyncObj {
    clock: H,
    vepoch: VEpoch,
}

impl Default for SyncObj {
    fn default() -> Self {
        SyncObj {
            clock: NOCLOCK,
            vepoch: VEpoch::Bottom,
        }
    }
}

#[derive(Debug)]
struct ThreadState {
    clock: H,
    /// Version vector: `ver[u]` is the latest version of `u`'s clock received; `ver[t]` is
    /// the thread's own current version.
    ver: Vec<u32>,
    /// The sampling period in which this thread last had its start-of-period increment.
    period: u64,
}

impl ThreadState {
    #[inline]
    fn ver(&self, u: u32) -> u32 {
        self.ver.get(u as usize).copied().unwrap_or(0)
    }
    #[inline]
    fn set_ver(&mut self, u: u32, v: u32) {
        if self.ver.len() <= u as usize {
            self.ver.resize(u as usize + 1, 0);
        }
        self.ver[u as usize] = v;
    }
}

/// A sampled access kept in a variable's metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    t: u32,
    /// PACER clock of `t` at the access (happens-before tests).
    c: Time,
    /// FastTrack epoch counter of `t` at the access (same-epoch tests).
    ft: u32,
    loc: u32,
    index: u64,
}

/// PACER clock of a ghost entry: an unsampled read kept only for FastTrack's same-epoch
/// test (never checked for races).
const GHOST: Time = Time::MAX;

impl Entry {
    #[inline]
    fn is_ghost(&self) -> bool {
        self.c == GHOST
    }
}

/// `t` of the absent write entry.
const NO_THREAD: u32 = u32::MAX;
const NO_ENTRY: Entry = Entry {
    t: NO_THREAD,
    c: 0,
    ft: 0,
    loc: 0,
    index: 0,
};

/// A read map: null, an epoch, or a map (kept as a map even when PACER dropped all but one
/// entry, because FastTrack's map then still has the dropped ones). Plain data, so a
/// `VarMeta` can be overwritten by stores alone.
#[derive(Clone, Copy, Debug, Default)]
enum Reads {
    #[default]
    Null,
    One(Entry),
    Map(MapRef),
}

/// A map with at most one entry is kept inline (most are: an unsampled read of another
/// thread turns an epoch into a map of one or none); larger ones live in [`MapPool`]. Inline,
/// a small map costs no cold miss on an out-of-line buffer.
#[derive(Clone, Copy, Debug)]
enum MapRef {
    /// The entry, or `NO_ENTRY` for an empty map.
    Inline(Entry),
    Pool(u32),
}

/// Read maps with more than one entry, recycled with their buffers.
#[derive(Debug, Default)]
struct MapPool {
    maps: Vec<Vec<Entry>>,
    free: Vec<u32>,
}

impl MapPool {
    /// A new map holding `entries`.
    fn alloc(&mut self, entries: &[Entry]) -> Reads {
        if entries.len() <= 1 {
            return Reads::Map(MapRef::Inline(entries.first().copied().unwrap_or(NO_ENTRY)));
        }
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                self.maps.push(Vec::new());
                (self.maps.len() - 1) as u32
            }
        };
        self.maps[i as usize].extend_from_slice(entries);
        Reads::Map(MapRef::Pool(i))
    }

    fn slice<'a>(&'a self, m: &'a MapRef) -> &'a [Entry] {
        match m {
            MapRef::Inline(e) if e.t == NO_THREAD => &[],
            MapRef::Inline(e) => std::slice::from_ref(e),
            MapRef::Pool(i) => &self.maps[*i as usize],
        }
    }

    /// Puts `cur` in place of its thread's entry, or adds it (an inline entry must have
    /// its site filled).
    fn upsert(&mut self, m: MapRef, cur: Entry) -> MapRef {
        match m {
            MapRef::Inline(e) if e.t == NO_THREAD || e.t == cur.t => MapRef::Inline(cur),
            MapRef::Inline(e) => match self.alloc(&[e, cur]) {
                Reads::Map(m) => m,
                _ => unreachable!("two entries are pooled"),
            },
            MapRef::Pool(i) => {
                let v = &mut self.maps[i as usize];
                match v.iter_mut().find(|e| e.t == cur.t) {
                    Some(e) => *e = cur,
                    None => v.push(cur),
                }
                m
            }
        }
    }

    fn retain(&mut self, m: MapRef, f: impl Fn(&Entry) -> bool) -> MapRef {
        match m {
            MapRef::Inline(e) if e.t != NO_THREAD && !f(&e) => MapRef::Inline(NO_ENTRY),
            MapRef::Inline(_) => m,
            MapRef::Pool(i) => {
                self.maps[i as usize].retain(f);
                m
            }
        }
    }

    fn release(&mut self, m: MapRef) {
        if let MapRef::Pool(i) = m {
            self.maps[i as usize].clear();
            self.free.push(i);
        }
    }
}

/// A variable's metadata as the access code works on it (decoded from [`Packed`] and
/// [`Sites`]; entries loaded from `Packed` have `index == UNFILLED` until
/// [`Detector::fill`] looks up their site).
#[derive(Clone, Copy, Debug)]
struct VarMeta {
    /// The last write if it was sampled (`NO_ENTRY` after an unsampled one).
    w: Entry,
    r: Reads,
    /// The last write was processed (not skipped) in a sampling period: every read since
    /// took the slow path, so the read map has FastTrack's shape.
    cleared_sampled: bool,
}

impl VarMeta {
    const NULL: VarMeta = VarMeta {
        w: NO_ENTRY,
        r: Reads::Null,
        cleared_sampled: false,
    };

    #[inline]
    fn has_sampled_write(&self) -> bool {
        self.w.t != NO_THREAD
    }

    #[inline]
    fn w(&self) -> Option<Entry> {
        self.has_sampled_write().then_some(self.w)
    }
}

/// `Packed::r_t` of a read map held in the pool (its index in `r_c`).
const MAP_T: u32 = u32::MAX - 1;
/// `Entry::index` of an entry whose site is still in `Detector::sites`.
const UNFILLED: u64 = u64::MAX;

/// A variable's metadata as stored, looked at only while sampling or when its bit in
/// `Detector::has_meta` is set: what the race checks need, 32 bytes. Plain data, so a
/// sampled access to a variable without metadata only stores. The sites live apart
/// (`Detector::sites`) and the record is half a cache line, because size matters where
/// variables are many: records that outgrow the cache make every sampled access a miss.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(32))]
struct Packed {
    /// Sampled write: thread (`NO_THREAD`: none), clock and FastTrack epoch.
    w_t: u32,
    w_c: Time,
    w_ft: u32,
    /// Read map: `NO_THREAD` null, `MAP_T` a pooled map (index in `r_c`), else the epoch
    /// (`r_t`, `r_c`) with its FastTrack epoch `r_ft`.
    r_t: u32,
    r_c: Time,
    r_ft: u32,
    cleared_sampled: bool,
    /// The read map is a map held inline: (`r_t`, `r_c`, `r_ft`) is its entry, or `r_t` is
    /// `NO_THREAD` for an empty map.
    r_inline_map: bool,
}

impl Default for Packed {
    fn default() -> Self {
        Packed {
            w_t: NO_THREAD,
            w_c: 0,
            w_ft: 0,
            r_t: NO_THREAD,
            r_c: 0,
            r_ft: 0,
            cleared_sampled: false,
            r_inline_map: false,
        }
    }
}

impl Packed {
    #[inline]
    fn is_null(&self) -> bool {
        self.w_t == NO_THREAD && self.r_t == NO_THREAD && !self.r_inline_map
    }

    /// The read map becomes an empty map held inline (as `store` writes one).
    #[inline]
    fn empty_inline_map(&mut self) {
        (self.r_t, self.r_c, self.r_ft, self.r_inline_map) = (NO_THREAD, 0, 0, true);
    }
}

/// Where a variable's write and read epoch come from (for reports and for moving an epoch
/// into a map): written with them, read only then.
#[derive(Clone, Copy, Debug, Default)]
struct Sites {
    w_index: u64,
    r_index: u64,
    w_loc: u32,
    r_loc: u32,
}

/// What the non-sampling paths that work on the stored record did with an event (see
/// `Detector::unsampled`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Skip {
    /// Not done with: the general path.
    No = 0,
    /// Accesses to variables without metadata (one bit test).
    FastRead = 1,
    FastWrite = 2,
    /// Accesses that looked at the metadata (Table 3's slow path) and found no race: done
    /// with on the record itself (and the pooled read map, if any).
    SlowRead = 3,
    SlowWrite = 4,
}

/// Configuration of a detector.
#[derive(Clone, Debug, PartialEq)]
pub struct PacerConfig {
    /// Sampling rate `r`, 0–1.
    pub rate: f64,
    /// Period length in operations; 0 = the caller ends periods with
    /// [`Detector::period_boundary`].
    pub period: u64,
    pub seed: u64,
    /// Record race pairs (the earlier access of each failed check) besides racy events.
    pub pairs: bool,
}

impl PacerConfig {
    /// Default period length (operations) when none is given: 10^5.
    ///
    /// The paper's periods run from one nursery collection to the next (every 32 MB of
    /// allocation), far more than 10^5 accesses. Long periods matter for cost: a sampling
    /// period starts with cold records, and the variables it leaves metadata on are looked
    /// at again outside it, both once per distinct variable a period touches, so fewer,
    /// longer periods pay these costs less often. The price is coarser trials: a trial samples whole periods, so on a trace of `n` events
    /// the effective rate's relative spread is about `sqrt((1 - r) / (r n / period))`,
    /// 0.57 for r = 0.03 and 10^7 events. Each race's detection probability is still `r`;
    /// shorter traces want a shorter `period`.
    pub const DEFAULT_PERIOD: u64 = 100_000;
}

impl Default for PacerConfig {
    fn default() -> Self {
        PacerConfig {
            rate: 0.03,
            period: PacerConfig::DEFAULT_PERIOD,
            seed: 0,
            pairs: true,
        }
    }
}

/// The streaming PACER detector. Feed it events in trace order with [`Detector::on_event`]
/// (or the per-operation methods a tracer calls); read races as they come with
/// [`Detector::racy_events`] / [`Detector::pairs`].
#[derive(Debug)]
pub struct Detector {
    sampler: Sampler,
    sampling: bool,
    /// Id of the current sampling period (0 before the first one).
    period_id: u64,
    arena: Arena,
    threads: Vec<Option<ThreadState>>,
    locks: Vec<SyncObj>,
    volatiles: Vec<SyncObj>,
    conds: Vec<SyncObj>,
    /// One bit per variable: its `VarMeta` is not null. The non-sampling read path reads
    /// only this (12.5 KB for 10^5 variables, so it stays in L1).
    has_meta: Vec<u64>,
    /// FastTrack's clock of each thread for its own component (0: no thread state yet;
    /// see the module docs), dense so the fast paths read it with one load.
    ft: Vec<u32>,
    /// Non-sampled operations so far when each thread's FastTrack epoch began: if none
    /// came since, the thread made no unsampled access in its current epoch.
    ep_ns: Vec<u64>,
    vars: Pages<Packed>,
    sites: Pages<Sites>,
    maps: MapPool,
    /// Non-sampling fast-path reads and writes (folded into the counters on demand).
    fast_reads: u64,
    fast_writes: u64,
    counters: Counters,
    racy: Vec<RacyEvent>,
    pairs: Vec<RacePair>,
    record_pairs: bool,
    /// Trace index ranges `[start, end)` of sampling periods (for tests and experiments).
    sampled_ranges: Vec<(u64, u64)>,
    /// Scratch for the races of the current access.
    scratch: Vec<(Entry, Op)>,
    /// Scratch for `on_events`: positions in a non-sampling run that need a closer look.
    candidates: Vec<u32>,
    /// Unit tests: every access that looks at metadata takes the general path (to check
    /// the in-place paths against it).
    #[cfg(test)]
    pub(super) general_only: bool,
}

impl Detector {
    pub fn new(cfg: &PacerConfig) -> Detector {
        Detector {
            sampler: Sampler::new(cfg.rate, cfg.period, cfg.seed),
            sampling: false,
            period_id: 0,
            arena: Arena::default(),
            threads: Vec::new(),
            locks: Vec::new(),
            volatiles: Vec::new(),
            conds: Vec::new(),
            has_meta: Vec::new(),
            ft: Vec::new(),
            ep_ns: Vec::new(),
            vars: Pages::default(),
            sites: Pages::default(),
            maps: MapPool::default(),
            fast_reads: 0,
            fast_writes: 0,
            counters: Counters::default(),
            racy: Vec::new(),
            pairs: Vec::new(),
            record_pairs: cfg.pairs,
            sampled_ranges: Vec::new(),
            scratch: Vec::new(),
            candidates: Vec::new(),
            #[cfg(test)]
            general_only: false,
        }
    }

    /// Ends the current sampling / non-sampling period (for tracers that set periods by
    /// their own events, e.g. garbage collections; with `period = 0` this is the only way).
    pub fn period_boundary(&mut self) {
        self.sampler.boundary();
    }

    /// True inside a sampling period.
    pub fn sampling(&self) -> bool {
        self.sampling
    }

    pub fn counters(&self) -> Counters {
        let mut c = self.counters;
        c.sampling_periods = self.sampler.sampling_periods();
        c.sampling.ops = self.sampler.sampled_ops();
        c.non_sampling.ops = self.sampler.non_sampled_ops();
        c.non_sampling.fast_reads = self.fast_reads;
        c.non_sampling.fast_writes = self.fast_writes;
        c
    }

    pub fn sampler(&self) -> &Sampler {
        &self.sampler
    }

    /// Share of operations analysed in sampling periods.
    pub fn effective_rate(&self) -> f64 {
        self.sampler.effective_rate()
    }

    /// Racy events found so far, in trace order.
    pub fn racy_events(&self) -> &[RacyEvent] {
        &self.racy
    }

    /// Race pairs found so far (earlier sampled access, racy access), by second access.
    pub fn pairs(&self) -> &[RacePair] {
        &self.pairs
    }

    /// Moves the races out (racy events, pairs).
    pub fn take_races(&mut self) -> (Vec<RacyEvent>, Vec<RacePair>) {
        (
            std::mem::take(&mut self.racy),
            std::mem::take(&mut self.pairs),
        )
    }

    /// Trace index ranges `[start, end)` analysed in sampling periods (the last one may be
    /// open, ending at `u64::MAX`).
    pub fn sampled_ranges(&self) -> &[(u64, u64)] {
        &self.sampled_ranges
    }

    /// How many operations [`Detector::skip_unsampled`] may count now: the operations left
    /// in the current period outside sampling periods, 0 inside one (and before the first
    /// operation, which starts a period).
    #[inline]
    pub fn unsampled_room(&self) -> u64 {
        if self.sampling {
            0
        } else {
            self.sampler.left()
        }
    }

    /// Whether variable `x` has metadata (a sampled access left something that a later
    /// access must look at). Without it, and with [`Detector::unsampled_room`] above 0, an
    /// access to `x` does nothing but count (PACER's "no action", Alg. 12–13).
    #[inline]
    pub fn has_metadata(&self, x: u32) -> bool {
        self.meta_bit(x as usize)
    }

    /// Counts `reads` reads and `writes` writes of variables without metadata, outside a
    /// sampling period, as the next operations, without seeing them: exactly what
    /// [`Detector::on_event`] does for each of them (the period's operation count, the
    /// non-sampled operation count behind the FastTrack-epoch tests, the fast-path counters),
    /// for a caller that decided itself that they need nothing more. They take trace
    /// positions, which the caller numbers. Requires `reads + writes <= unsampled_room()`.
    pub fn skip_unsampled(&mut self, reads: u64, writes: u64) {
        let n = reads + writes;
        assert!(
            n <= self.unsampled_room(),
            "skip_unsampled: {n} operations, room for {}",
            self.unsampled_room()
        );
        self.sampler.advance(n);
        self.fast_reads += reads;
        self.fast_writes += writes;
    }

    /// Consumes one event; `index` is its position in the trace. Returns true if the event
    /// is racy.
    #[inline]
    pub fn on_event(&mut self, index: u64, ev: &Event) -> bool {
        if let Some(started) = self.sampler.tick() {
            self.period_start(started, index);
        }
        if !self.sampling {
            let mut n = [0; 5];
            let skip = self.unsampled(ev);
            n[skip as usize] += 1;
            self.count_skips(&n);
            if skip != Skip::No {
                return false;
            }
        }
        self.on_event_slow(index, ev)
    }

    /// Consumes a run of events, the first at position `first` (what [`Detector::on_event`]
    /// does for each, in one loop: a non-sampling stretch runs the fast paths without
    /// calls, and their counts are kept in registers).
    pub fn on_events(&mut self, first: u64, events: &[Event]) {
        let mut i = 0;
        while i < events.len() {
            if let Some(started) = self.sampler.tick() {
                self.period_start(started, first + i as u64);
            }
            // `tick` counted event `i`; the rest of the run (to the end of the period or of
            // the block) is counted at once, before its events are looked at while sampling
            // (nothing then reads the count), and up to each event that takes the slow path
            // outside sampling (which reads the count of non-sampled operations).
            let n = (events.len() - i)
                .min((self.sampler.left() as usize).saturating_add(1))
                .min(MAX_RUN);
            let run = &events[i..i + n];
            // Each variable record an access will look at is prefetched `AHEAD` events
            // early, so the cache misses of successive slow-path accesses overlap.
            if self.sampling {
                self.sampler.advance(n as u64 - 1);
                for (k, ev) in run.iter().enumerate() {
                    if let Some(next) = run.get(k + AHEAD) {
                        if next.op.is_access() {
                            self.prefetch(next.target as usize);
                            // A sampled access also writes the site of its entry.
                            if let Some(r) = self.sites.get(next.target as usize) {
                                prefetch_read(r as *const Sites as *const i8);
                            }
                        }
                    }
                    let index = first + (i + k) as u64;
                    if !(ev.op.is_access() && self.sampled_direct(ev, index)) {
                        self.on_event_slow(index, ev);
                    }
                }
            } else {
                // Two passes. Outside sampling periods metadata bits only ever get cleared
                // (only sampled accesses create metadata), so an access whose bit is clear
                // now stays on the fast path: the first pass counts those (in registers: a
                // counter in memory bumped at every event is a chain of store-to-load
                // forwards) and lists the rest, whose records the second pass prefetches
                // ahead and handles in order.
                // The first pass is branch-free (see `filter`): reads, writes and
                // synchronisation come in no predictable order.
                let mut cand = std::mem::take(&mut self.candidates);
                let f = filter(run, &self.has_meta, &mut cand);
                cand.truncate(f.candidates);
                self.fast_reads += f.fast_reads;
                self.fast_writes += f.fast_writes;
                let mut counted = 0;
                let mut skips = [0u64; 5];
                for (j, &k) in cand.iter().enumerate() {
                    if let Some(&a) = cand.get(j + AHEAD) {
                        let next = &run[a as usize];
                        if next.op.is_access() {
                            self.prefetch(next.target as usize);
                        }
                    }
                    let (k, ev) = (k as usize, &run[k as usize]);
                    let skip = self.unsampled(ev);
                    skips[skip as usize] += 1;
                    if skip == Skip::No {
                        self.sampler.advance((k - counted) as u64);
                        counted = k;
                        self.on_event_slow(first + (i + k) as u64, ev);
                    }
                }
                self.sampler.advance((n - 1 - counted) as u64);
                self.count_skips(&skips);
                self.candidates = cand;
            }
            i += n;
        }
    }

    /// Outside sampling periods: whether `ev` is done with without the general path, and
    /// how. An access to a variable without metadata does nothing but a bit test. An access
    /// to one with metadata that finds no race works on the stored record (Alg. 12–13 as
    /// `read`/`write` do them, without decoding): a write nulls it, a read drops what it
    /// replaces and leaves a ghost if a sampled write stays. Races go to the general path,
    /// which reports them. The caller counts the result.
    #[inline(always)]
    fn unsampled(&mut self, ev: &Event) -> Skip {
        let x = ev.target as usize;
        let t = ev.thread.0;
        match ev.op {
            Op::Read => {
                if !self.meta_bit(x) {
                    return Skip::FastRead;
                }
                if self.general_only() {
                    return Skip::No;
                }
                let Some(&ft) = self.ft.get(t as usize).filter(|&&f| f != 0) else {
                    return Skip::No;
                };
                let p = self.vars[x];
                if !self.write_ordered(&p, t) {
                    return Skip::No;
                }
                if p.r_t == MAP_T {
                    // A pooled read map: the read drops `t`'s entry; an empty map is kept
                    // only beside a sampled write.
                    let v = &mut self.maps.maps[p.r_c as usize];
                    v.retain(|e| e.t != t);
                    if v.is_empty() && p.w_t == NO_THREAD {
                        self.release_pooled(&p);
                        self.drop_meta(x);
                    }
                    return Skip::SlowRead;
                }
                if p.r_inline_map {
                    // A read map held inline without an entry of `t` (other threads' reads,
                    // typically of read-shared data PACER keeps metadata for): an
                    // unsampled read of `t` leaves it as it is (Alg. 12). With `t`'s entry,
                    // the read drops it; an empty map is kept only beside a sampled write.
                    if p.r_t == t {
                        if p.w_t == NO_THREAD {
                            self.drop_meta(x);
                        } else {
                            self.vars[x].empty_inline_map();
                        }
                    }
                    return Skip::SlowRead;
                }
                // A ghost of this epoch (an unsampled read of `t` already took its place).
                if p.r_t == t && ft == p.r_ft && p.r_c == GHOST {
                    return Skip::SlowRead;
                }
                // The read epoch (if any) is replaced by this read (`t`'s own, or sampled and
                // ordered before it); a concurrent one or another thread's ghost makes a map.
                let replaced = p.r_t == NO_THREAD
                    || p.r_t == t
                    || (p.r_c != GHOST && p.r_c <= self.clock_of(t, p.r_t));
                if !replaced {
                    // FastTrack's map now: the concurrent sampled read, kept (inline); or
                    // another thread's ghost, never checked: empty, kept only beside a
                    // sampled write.
                    if p.r_c != GHOST {
                        self.vars[x].r_inline_map = true;
                    } else if p.w_t == NO_THREAD {
                        self.drop_meta(x);
                    } else {
                        self.vars[x].empty_inline_map();
                    }
                    return Skip::SlowRead;
                }
                if p.w_t == NO_THREAD {
                    // Without a sampled write the read map's shape no longer matters.
                    self.drop_meta(x);
                } else {
                    let r = &mut self.vars[x];
                    (r.r_t, r.r_c, r.r_ft) = (t, GHOST, ft);
                }
                Skip::SlowRead
            }
            Op::Write => {
                if !self.meta_bit(x) {
                    return Skip::FastWrite;
                }
                if self.general_only() {
                    return Skip::No;
                }
                if self.ft.get(t as usize).is_none_or(|&f| f == 0) {
                    return Skip::No;
                }
                let p = self.vars[x];
                if !self.write_ordered(&p, t) || !self.reads_ordered(&p, t) {
                    return Skip::No;
                }
                // Everything FastTrack had is replaced by this write.
                self.release_pooled(&p);
                self.drop_meta(x);
                Skip::SlowWrite
            }
            _ => Skip::No,
        }
    }

    /// Inside a sampling period: FastTrack's common cases, on the stored record: an access
    /// to a variable without metadata (nothing to check, one record to write), a same-epoch
    /// repeat, or no race (but for a read that turns another thread's epoch into a map).
    /// Returns false to leave `ev` to the general path.
    #[inline(always)]
    fn sampled_direct(&mut self, ev: &Event, index: u64) -> bool {
        if self.general_only() {
            return false;
        }
        let x = ev.target as usize;
        let t = ev.thread.0;
        let Some(&ft) = self.ft.get(t as usize).filter(|&&f| f != 0) else {
            return false;
        };
        self.start_of_period_increment(t);
        if !self.meta_bit(x) {
            self.sampled_first(ev, index, ft);
            return true;
        }
        let p = self.vars[x];
        if ev.op == Op::Write {
            if p.w_t == t && p.w_ft == ft {
                // [WRITE SAME EPOCH]
                self.counters.sampling.slow_writes += 1;
                return true;
            }
            if !self.write_ordered(&p, t) || !self.reads_ordered(&p, t) {
                return false;
            }
            self.release_pooled(&p);
            let may_skip = self.may_repeat_unsampled(t);
            self.vars[x] = Packed {
                w_t: t,
                w_c: self.clock_of(t, t),
                w_ft: ft,
                cleared_sampled: p.w_t != NO_THREAD || !may_skip,
                ..Packed::default()
            };
            let s = &mut self.sites[x];
            (s.w_loc, s.w_index) = (ev.loc.0, index);
            self.counters.sampling.slow_writes += 1;
            return true;
        }
        if p.r_t == MAP_T {
            return self.sampled_pooled_read(ev, index, ft, &p);
        }
        if p.r_t == t && p.r_ft == ft {
            // [READ SAME EPOCH] (or [READ SHARED SAME EPOCH] for a map held inline); a ghost
            // becomes this sampled read, which stands for it.
            if p.r_c == GHOST {
                self.vars[x].r_c = self.clock_of(t, t);
                let s = &mut self.sites[x];
                (s.r_loc, s.r_index) = (ev.loc.0, index);
            }
            self.counters.sampling.slow_reads += 1;
            return true;
        }
        if !self.write_ordered(&p, t) {
            return false;
        }
        // [READ EXCLUSIVE]: the read epoch is replaced (or there is none, and FastTrack's
        // map is empty too). [READ SHARED] on a map held inline: this read takes the place
        // of `t`'s entry, or of none; with another thread's entry the map is pooled.
        let exclusive = if p.r_inline_map {
            p.r_t == NO_THREAD || p.r_t == t
        } else if p.r_t == NO_THREAD {
            self.read_map_exact(p.cleared_sampled)
        } else {
            p.r_t == t || (p.r_c != GHOST && p.r_c <= self.clock_of(t, p.r_t))
        };
        if !exclusive {
            return false;
        }
        let c = self.clock_of(t, t);
        let r = &mut self.vars[x];
        (r.r_t, r.r_c, r.r_ft) = (t, c, ft);
        let s = &mut self.sites[x];
        (s.r_loc, s.r_index) = (ev.loc.0, index);
        self.counters.sampling.slow_reads += 1;
        true
    }

    /// A sampled read of a variable whose read map is pooled (`p`, FastTrack's read-shared
    /// case): [READ SHARED SAME EPOCH], or no race and `t`'s entry put in place.
    #[inline(always)]
    fn sampled_pooled_read(&mut self, ev: &Event, index: u64, ft: u32, p: &Packed) -> bool {
        let t = ev.thread.0;
        let i = p.r_c as usize;
        if let Some(k) = self.maps.maps[i]
            .iter()
            .position(|e| e.t == t && e.ft == ft)
        {
            // A ghost becomes this sampled read, which stands for it.
            if self.maps.maps[i][k].is_ghost() {
                let c = self.clock_of(t, t);
                let e = &mut self.maps.maps[i][k];
                (e.c, e.loc, e.index) = (c, ev.loc.0, index);
            }
            self.counters.sampling.slow_reads += 1;
            return true;
        }
        if !self.write_ordered(p, t) {
            return false;
        }
        let cur = Entry {
            t,
            c: self.clock_of(t, t),
            ft,
            loc: ev.loc.0,
            index,
        };
        self.maps.upsert(MapRef::Pool(p.r_c), cur);
        self.counters.sampling.slow_reads += 1;
        true
    }

    /// A sampled access to a variable without metadata (of thread `t = ev.thread` with
    /// FastTrack epoch `ft`, after its start-of-period increment): no race to check, the
    /// record becomes this access (what `read` and `write` store in that case).
    #[inline(always)]
    fn sampled_first(&mut self, ev: &Event, index: u64, ft: u32) {
        let x = ev.target as usize;
        let t = ev.thread.0;
        let c = self.clock_of(t, t);
        self.grow_vars(x);
        let s = &mut self.sites[x];
        self.vars[x] = if ev.op == Op::Write {
            (s.w_loc, s.w_index) = (ev.loc.0, index);
            self.counters.sampling.slow_writes += 1;
            Packed {
                w_t: t,
                w_c: c,
                w_ft: ft,
                // FastTrack cleared its read map here unless it skipped this write as a
                // repeat of an unsampled one of the same epoch.
                cleared_sampled: !self.may_repeat_unsampled(t),
                ..Packed::default()
            }
        } else {
            (s.r_loc, s.r_index) = (ev.loc.0, index);
            self.counters.sampling.slow_reads += 1;
            Packed {
                r_t: t,
                r_c: c,
                r_ft: ft,
                // FastTrack's map may hold reads that took the fast path: assume a map.
                r_inline_map: !self.read_map_exact(false),
                ..Packed::default()
            }
        };
        self.set_bit(x);
    }

    /// Unit tests can send every access that looks at metadata down the general path.
    #[inline(always)]
    fn general_only(&self) -> bool {
        #[cfg(test)]
        return self.general_only;
        #[cfg(not(test))]
        false
    }

    /// Asks the cache for `x`'s record (if it exists; a hint, no effect on results).
    #[inline(always)]
    fn prefetch(&self, x: usize) {
        if let Some(r) = self.vars.get(x) {
            prefetch_read(r as *const Packed as *const i8);
        }
    }

    /// `x`'s sampled write, if any, happens before the current event of `t` (which has
    /// thread state).
    #[inline(always)]
    fn write_ordered(&self, p: &Packed, t: u32) -> bool {
        p.w_t == NO_THREAD || p.w_t == t || p.w_c <= self.clock_of(t, p.w_t)
    }

    /// Every read of `x`'s read map (its epoch, inline entry or pooled entries), if any,
    /// is a ghost or happens before the current event of `t`.
    #[inline(always)]
    fn reads_ordered(&self, p: &Packed, t: u32) -> bool {
        if p.r_t == MAP_T {
            return self.maps.maps[p.r_c as usize]
                .iter()
                .all(|e| self.ordered(e, t));
        }
        p.r_t == NO_THREAD || p.r_t == t || p.r_c == GHOST || p.r_c <= self.clock_of(t, p.r_t)
    }

    /// Gives `p`'s pooled read map, if it has one, back to the pool (the record is about
    /// to be overwritten).
    #[inline(always)]
    fn release_pooled(&mut self, p: &Packed) {
        if p.r_t == MAP_T {
            self.maps.release(MapRef::Pool(p.r_c));
        }
    }

    /// `x`'s metadata becomes null: the record is reset and its bit cleared.
    #[inline(always)]
    fn drop_meta(&mut self, x: usize) {
        self.vars[x] = Packed::default();
        self.clear_bit(x);
    }

    /// Adds fast-path counts (indexed by [`Skip`]).
    #[inline(always)]
    fn count_skips(&mut self, n: &[u64; 5]) {
        self.fast_reads += n[Skip::FastRead as usize];
        self.fast_writes += n[Skip::FastWrite as usize];
        self.counters.non_sampling.slow_reads += n[Skip::SlowRead as usize];
        self.counters.non_sampling.slow_writes += n[Skip::SlowWrite as usize];
    }

    #[inline(always)]
    fn meta_bit(&self, x: usize) -> bool {
        match self.has_meta.get(x >> 6) {
            Some(w) => (w >> (x & 63)) & 1 != 0,
            None => false,
        }
    }

    /// `x`'s metadata (`x` in range).
    #[inline]
    fn load(&self, x: usize) -> VarMeta {
        let p = self.vars[x];
        let unfilled = |t, c, ft| Entry {
            t,
            c,
            ft,
            loc: 0,
            index: UNFILLED,
        };
        VarMeta {
            w: if p.w_t == NO_THREAD {
                NO_ENTRY
            } else {
                unfilled(p.w_t, p.w_c, p.w_ft)
            },
            r: match p.r_t {
                NO_THREAD if p.r_inline_map => Reads::Map(MapRef::Inline(NO_ENTRY)),
                t if p.r_inline_map => Reads::Map(MapRef::Inline(unfilled(t, p.r_c, p.r_ft))),
                NO_THREAD => Reads::Null,
                MAP_T => Reads::Map(MapRef::Pool(p.r_c)),
                t => Reads::One(unfilled(t, p.r_c, p.r_ft)),
            },
            cleared_sampled: p.cleared_sampled,
        }
    }

    /// Stores `x`'s metadata (`x` in range); the sites of new entries go to `sites`.
    #[inline]
    fn store(&mut self, x: usize, m: VarMeta) {
        let mut p = Packed {
            w_t: m.w.t,
            w_c: m.w.c,
            w_ft: m.w.ft,
            cleared_sampled: m.cleared_sampled,
            ..Packed::default()
        };
        if m.w.t != NO_THREAD && m.w.index != UNFILLED {
            self.sites[x].w_loc = m.w.loc;
            self.sites[x].w_index = m.w.index;
        }
        match m.r {
            Reads::Null => {}
            Reads::Map(MapRef::Pool(i)) => {
                p.r_t = MAP_T;
                p.r_c = i;
            }
            Reads::Map(MapRef::Inline(e)) if e.t == NO_THREAD => p.r_inline_map = true,
            Reads::One(e) | Reads::Map(MapRef::Inline(e)) => {
                p.r_inline_map = matches!(m.r, Reads::Map(_));
                (p.r_t, p.r_c, p.r_ft) = (e.t, e.c, e.ft);
                if e.index != UNFILLED {
                    self.sites[x].r_loc = e.loc;
                    self.sites[x].r_index = e.index;
                }
            }
        }
        self.vars[x] = p;
    }

    /// `e` (`x`'s write entry if `write`, else its read epoch) with its site.
    #[inline]
    fn fill(&self, x: usize, mut e: Entry, write: bool) -> Entry {
        if e.index == UNFILLED {
            let s = &self.sites[x];
            (e.loc, e.index) = if write {
                (s.w_loc, s.w_index)
            } else {
                (s.r_loc, s.r_index)
            };
        }
        e
    }

    /// Makes `vars[x]` and `sites[x]` exist.
    #[inline]
    fn grow_vars(&mut self, x: usize) {
        self.vars.ensure(x);
        self.sites.ensure(x);
    }

    /// Sets `x`'s metadata bit (its record is not null).
    #[inline(always)]
    fn set_bit(&mut self, x: usize) {
        let i = x >> 6;
        if i >= self.has_meta.len() {
            grow_chunked(&mut self.has_meta, i);
        }
        self.has_meta[i] |= 1u64 << (x & 63);
    }

    /// Clears `x`'s metadata bit (its record is null).
    #[inline(always)]
    fn clear_bit(&mut self, x: usize) {
        self.has_meta[x >> 6] &= !(1u64 << (x & 63));
    }

    /// Sets `x`'s metadata bit from its `VarMeta` (after every slow-path access).
    #[inline]
    fn sync_bit(&mut self, x: usize) {
        let on = !self.vars[x].is_null();
        let i = x >> 6;
        if i >= self.has_meta.len() {
            if !on {
                return;
            }
            grow_chunked(&mut self.has_meta, i);
        }
        let b = 1u64 << (x & 63);
        // `on_events` relies on this: outside sampling periods bits are only cleared.
        debug_assert!(self.sampling || !on || self.has_meta[i] & b != 0);
        if on {
            self.has_meta[i] |= b;
        } else {
            self.has_meta[i] &= !b;
        }
    }

    /// Starts a new FastTrack epoch of thread `t` (FastTrack's increment).
    #[inline]
    fn new_epoch(&mut self, t: u32) {
        grow(&mut self.ft, t as usize);
        grow(&mut self.ep_ns, t as usize);
        self.ft[t as usize] += 1;
        self.ep_ns[t as usize] = self.sampler.non_sampled_ops();
    }

    /// Whether thread `t` may have made an unsampled access in its current FastTrack
    /// epoch (then a sampled access may repeat it, and FastTrack skip the sampled one).
    #[inline]
    fn may_repeat_unsampled(&self, t: u32) -> bool {
        self.ep_ns[t as usize] != self.sampler.non_sampled_ops()
    }

    /// Everything but the non-sampling fast paths.
    #[inline(never)]
    fn on_event_slow(&mut self, index: u64, ev: &Event) -> bool {
        let sampling = self.sampling;
        let t = ev.thread.0;
        self.ensure_thread(t);
        if sampling {
            self.start_of_period_increment(t);
        }
        match ev.op {
            Op::Read => return self.read(t, ev.target, ev.loc.0, index),
            Op::Write => return self.write(t, ev.target, ev.loc.0, index),
            Op::Acquire => self.acquire_from(t, SyncTable::Locks, ev.target),
            Op::Release => self.release_into(t, SyncTable::Locks, ev.target, Self::copy_to_sync),
            Op::Fork => self.fork(t, ev.target),
            Op::Join => {
                let u = ev.target;
                self.ensure_thread(u);
                let th = self.threads[u as usize].as_ref().expect("ensured");
                let (h, ve) = (th.clock, VEpoch::Ver { u, v: th.ver(u) });
                self.join_into_thread(t, h, ve);
            }
            Op::VolatileRead => self.acquire_from(t, SyncTable::Volatiles, ev.target),
            Op::VolatileWrite => {
                self.release_into(t, SyncTable::Volatiles, ev.target, Self::join_into_volatile)
            }
            // The wait happens after the latest signal only: a copy, like a release.
            Op::Signal => self.release_into(t, SyncTable::Conds, ev.target, Self::copy_to_sync),
            Op::Wait => self.acquire_from(t, SyncTable::Conds, ev.target),
            Op::MethodBegin | Op::MethodEnd | Op::Begin | Op::End | Op::Local | Op::Branch => {}
        }
        false
    }
}

/// Which of the detector's synchronisation objects an event names.
#[derive(Clone, Copy)]
enum SyncTable {
    Locks,
    Volatiles,
    Conds,
}

impl Detector {
    /// The table of `which`, grown to hold object `i`.
    fn sync_obj(&mut self, which: SyncTable, i: u32) -> &mut SyncObj {
        let table = match which {
            SyncTable::Locks => &mut self.locks,
            SyncTable::Volatiles => &mut self.volatiles,
            SyncTable::Conds => &mut self.conds,
        };
        grow(table, i as usize);
        &mut table[i as usize]
    }

    /// An acquire, a volatile read or a wait: thread `t` joins what object `i` holds.
    fn acquire_from(&mut self, t: u32, which: SyncTable, i: u32) {
        let m = self.sync_obj(which, i);
        let (h, ve) = (m.clock, m.vepoch);
        self.join_into_thread(t, h, ve);
    }

    /// A release, a volatile write or a signal: `into` (a copy or a join) puts thread
    /// `t`'s clock into object `i`, then `t` starts a new epoch.
    fn release_into(
        &mut self,
        t: u32,
        which: SyncTable,
        i: u32,
        into: fn(&mut Detector, u32, &mut SyncObj),
    ) {
        let mut m = std::mem::take(self.sync_obj(which, i));
        into(self, t, &mut m);
        *self.sync_obj(which, i) = m;
        self.increment(t);
    }
}

/// Longest run `Detector::on_events` handles at once (bounds its scratch list).
const MAX_RUN: usize = 4096;

/// How many events ahead `Detector::on_events` prefetches variable records.
const AHEAD: usize = 12;

/// A prefetch hint for the cache line at `p` (x86-64; a no-op elsewhere).
#[inline(always)]
fn prefetch_read(p: *const i8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint; it does not dereference `p` in the language's sense
    // and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[inline]
fn grow<T: Default>(v: &mut Vec<T>, i: usize) {
    if i >= v.len() {
        v.resize_with(i + 1, T::default);
    }
}

/// Makes `v[i]` exist, growing geometrically (tables indexed by variable).
#[inline]
fn grow_chunked<T: Default>(v: &mut Vec<T>, i: usize) {
    if i >= v.len() {
        grow_to(v, i);
    }
}

#[cold]
#[inline(never)]
fn grow_to<T: Default>(v: &mut Vec<T>, i: usize) {
    let n = (i + 1).max(v.len() * 2).max(64);
    v.resize_with(n, T::default);
}
