//! W3PO's bounded history (`--history N`) grouped by location pair: [`HistoryLog`], the
//! last accesses of each (variable, thread) by lockset class, and the tables that find them.

use super::*;

/// The latest access of one site among the visible accesses of a lockset class and kind.
#[derive(Clone, Copy, Debug)]
pub(super) struct HistEntry {
    index: u64,
    time: u32,
    site: u32,
    /// Its number among the accesses of its class and kind (counted modulo 2^32).
    seq: u32,
    /// The next entry of the same class and kind, or the next free entry.
    next: u32,
}

/// The accesses of one (variable, thread, lockset): a lockset class. One cache line: the
/// class and its first entry of each kind come with a single miss (entries kept apart
/// would be a second miss on every class a check reads).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub(super) struct HistClass {
    ls: LsId,
    /// Time of the class's latest access (either kind).
    latest: u32,
    /// Neighbours in the recency list of its (variable, thread), most recent first; in the
    /// first class of a list `prev` is the list's length instead (not counted beyond
    /// `SHORT_LIST + 1`).
    prev: u32,
    next: u32,
    /// Per kind (writes, reads): accesses so far (modulo 2^32), one entry inline and the
    /// first of the others.
    count: [u32; 2],
    head: [u32; 2],
    inline: [Inline; 2],
}

/// A [`HistEntry`] inside its class: event index and site packed into 48 and 16 bits
/// (entries that do not fit go to the list). `time == 0` marks an empty slot (local times
/// start at 1).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Inline {
    packed: u64,
    time: u32,
    seq: u32,
}

impl Inline {
    const SITE_BITS: u32 = 16;

    /// The slot for `(index, site)`, if both fit.
    #[inline]
    fn new(index: u64, time: u32, site: u32, seq: u32) -> Option<Inline> {
        (index >> (64 - Self::SITE_BITS) == 0 && site < (1 << Self::SITE_BITS)).then_some(Inline {
            packed: index << Self::SITE_BITS | site as u64,
            time,
            seq,
        })
    }

    #[inline]
    fn index(&self) -> u64 {
        self.packed >> Self::SITE_BITS
    }

    #[inline]
    fn site(&self) -> u32 {
        (self.packed & ((1 << Self::SITE_BITS) - 1)) as u32
    }
}

/// Lists of up to this many classes are walked to find a class; the classes of longer ones
/// are in [`HistoryLog`]'s table (most lists have one class, and a table entry for each
/// would cost memory for nothing).
pub(super) const SHORT_LIST: u32 = 4;

/// A new class of lockset `ls`, in no list yet.
pub(super) fn new_class(classes: &mut Vec<HistClass>, ls: LsId) -> u32 {
    classes.push(HistClass {
        ls,
        latest: 0,
        prev: NIL,
        next: NIL,
        count: [0, 0],
        head: [NIL, NIL],
        inline: [Inline::default(); 2],
    });
    (classes.len() - 1) as u32
}

/// The sites of one variable and, per thread, the first class of its recency list.
/// Both inline for the usual variable (about two sites and one class): no heap block per
/// variable.
pub(super) type HistVar = (SmallVec<[Site<()>; 2]>, SmallVec<[Head; 2]>);

/// The first class of a (variable, thread)'s recency list, with its latest access: most
/// checks find every other thread's latest access known and look at no class beyond the
/// heads.
#[derive(Clone, Copy, Debug)]
pub(super) struct Head {
    class: u32,
    latest: u32,
}

impl Default for Head {
    fn default() -> Self {
        Head {
            class: NIL,
            latest: 0,
        }
    }
}

/// The bounded access log of W3PO's `--history N`, for grouped reports: per (variable,
/// thread, lockset) the last `keep` reads and writes are visible (the same visible accesses
/// as [`AccessLog`] with the same bound). Of the visible accesses of one class and kind only
/// the latest of each (location, kind) site is kept: an older one has the same thread,
/// lockset and site and an earlier time, so every access it races with the newer one does
/// too, in the same location pair, and the newer one is the later first event a group's
/// first instance wants. The lockset classes of each (variable, thread) are kept in order
/// of their latest access (a linked list; a hash table finds a class), so the first class
/// wholly known to the current access ends the scan of that thread, and the scan of an
/// access ends once each site of its variable has its location pair settled for it.
///
/// Memory: a class (64 bytes, one entry per kind inline, plus a table slot when its list is
/// long) per (variable, thread, lockset) seen and at most `min(keep, sites) - 1` further
/// entries (24 bytes) per class and kind.
#[derive(Debug)]
pub struct HistoryLog {
    keep: u32,
    vars: Vec<HistVar>,
    classes: Vec<HistClass>,
    /// The classes of the lists longer than [`SHORT_LIST`], by (variable, thread, lockset).
    find: ClassTable,
    entries: Vec<HistEntry>,
    /// First free entry.
    free: u32,
    /// Per site of the current variable: settled for the current access.
    done: Vec<bool>,
    /// (variable, site) of the access last checked (its push needs no lookup).
    cur: (usize, usize),
    /// Pushes so far, and those whose class was in a long list (looked up in the table).
    pushes: u64,
    table_pushes: u64,
}

impl HistoryLog {
    pub fn new(keep: usize) -> HistoryLog {
        HistoryLog {
            keep: keep.clamp(1, u32::MAX as usize) as u32,
            vars: Vec::new(),
            classes: Vec::new(),
            find: ClassTable::default(),
            entries: Vec::new(),
            free: NIL,
            done: Vec::new(),
            cur: (usize::MAX, 0),
            pushes: 0,
            table_pushes: 0,
        }
    }

    /// As the grouped shadow's check ([`Shadow::check_push`]), over the visible accesses.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn check(
        &mut self,
        sink: &mut GroupSink,
        table: &LocksetTable,
        ls: LsId,
        clock: Option<&VectorClock>,
        reads: bool,
        index: u64,
        ev: &Event,
    ) {
        let x = ev.var().index();
        if x >= self.vars.len() {
            self.vars.resize_with(x + 1, Default::default);
        }
        let (sites, heads) = &mut self.vars[x];
        let me = site_of(sites, ev);
        self.cur = (x, me);
        let t = ev.thread.index();
        // The clock's entries looked up once (0 past its end; every access unknown
        // without a clock).
        let vc = clock.map_or(&[][..], |c| c.as_slice());
        let known = |u: usize| vc.get(u).copied().unwrap_or(0);
        // An other thread's list to scan: one whose latest access is not known. (Most
        // variables of real programs are thread-local: nothing to scan.)
        let unknown = |u: usize, h: &Head| {
            h.class != NIL && u != t && (clock.is_none() || h.latest > known(u))
        };
        let Some(from) = heads.iter().enumerate().position(|(u, h)| unknown(u, h)) else {
            return;
        };
        let done = &mut self.done;
        done.clear();
        done.resize(sites.len(), false);
        // Sites that cannot pair (reads, for a read) count as settled.
        let mut left = 0;
        for (s, site) in sites.iter().enumerate() {
            if site.write || reads {
                left += 1;
            } else {
                done[s] = true;
            }
        }
        for (u, head) in heads.iter().enumerate().skip(from) {
            if !unknown(u, head) {
                continue;
            }
            let known = known(u);
            let u = ThreadId(u as u32);
            let mut c = head.class;
            while c != NIL {
                let class = &self.classes[c as usize];
                c = class.next;
                if clock.is_some() && class.latest <= known {
                    break; // this class and the older ones are known
                }
                if !table.disjoint(class.ls, ls) {
                    continue;
                }
                for kind in 0..if reads { 2 } else { 1 } {
                    let first = class.inline[kind];
                    let mut e = class.head[kind];
                    let mut at_inline = first.time != 0;
                    while at_inline || e != NIL {
                        let (site, time, first_index) = if at_inline {
                            at_inline = false;
                            (first.site(), first.time, first.index())
                        } else {
                            let a = self.entries[e as usize];
                            e = a.next;
                            (a.site, a.time, a.index)
                        };
                        let s = site as usize;
                        if done[s] || (clock.is_some() && time <= known) {
                            continue;
                        }
                        let g = hit_site::<_, false>(sink, sites, me, s, u, first_index, index, ev);
                        if !sink.open(g, index) {
                            done[s] = true;
                            left -= 1;
                            if left == 0 {
                                return;
                            }
                        }
                    }
                }
            }
        }
    }

    /// True when most accesses so far landed in long lists of classes (looked up in the
    /// table): classes then lie all over memory and prefetching pays. Otherwise (real
    /// traces, where nearly every list has one class and the lists an access reaches are
    /// mostly in cache) the prefetches cost more than they save.
    #[inline]
    pub fn wants_prefetch(&self) -> bool {
        2 * self.table_pushes > self.pushes
    }

    /// Asks the cache for what the access `ev` (lockset `ls`), three events ahead, will
    /// look up first: its variable's sites and first classes, and its class's table slot.
    #[inline]
    pub fn prefetch_slot(&self, ls: LsId, ev: &Event) {
        if let Some((sites, heads)) = self.vars.get(ev.var().index()) {
            prefetch(sites as *const _ as *const u8);
            prefetch(heads as *const _ as *const u8);
        }
        if let Some(slot) = self.find.slot_ptr((ev.var().0, ev.thread.0, ls)) {
            prefetch(slot);
        }
    }

    /// Asks the cache for what the access `ev` (lockset `ls`, its thread's clock `clock`
    /// now), two events ahead, will read: the first class of its own thread's list of its
    /// variable (the push looks at it), that of each other thread whose latest access
    /// `clock` does not know (the check starts there), and its own class, found through
    /// the table slot that [`HistoryLog::prefetch_slot`] asked for an event earlier: on
    /// traces whose lists are long, classes that no cache holds.
    #[inline]
    pub fn prefetch_classes(&self, ls: LsId, clock: &VectorClock, ev: &Event) {
        let x = ev.var().index();
        let Some((_, heads)) = self.vars.get(x) else {
            return;
        };
        let vc = clock.as_slice();
        for (u, h) in heads.iter().enumerate() {
            // Its own thread's for the push, the others' when the check will look.
            let own = u == ev.thread.index();
            if h.class != NIL && (own || h.latest > vc.get(u).copied().unwrap_or(0)) {
                prefetch(&self.classes[h.class as usize] as *const HistClass as *const u8);
            }
        }
        if let Some(c) = self.find.probable((x as u32, ev.thread.0, ls)) {
            prefetch(&self.classes[c as usize] as *const HistClass as *const u8);
        }
    }

    /// Asks the cache for the neighbours of the class of `ev` (the next event) in its
    /// recency list, which its push relinks, once [`HistoryLog::prefetch_classes`] asked
    /// for the class. (Each step looks the class up in the table again: the slot is in
    /// the cache by then.)
    #[inline]
    pub fn prefetch_neighbours(&self, ls: LsId, ev: &Event) {
        if let Some(c) = self.find.get(&self.classes, (ev.var().0, ev.thread.0, ls)) {
            let class = &self.classes[c as usize];
            for n in [class.prev, class.next] {
                if let Some(n) = self.classes.get(n as usize) {
                    prefetch(n as *const HistClass as *const u8);
                }
            }
        }
    }

    /// Logs the access `ev` with lockset `ls` at local time `time`.
    #[inline]
    pub fn push(&mut self, ls: LsId, time: u32, index: u64, ev: &Event) {
        let (x, t) = (ev.var().index(), ev.thread.index());
        self.pushes += 1;
        if x >= self.vars.len() {
            self.vars.resize_with(x + 1, Default::default);
        }
        let (sites, heads) = &mut self.vars[x];
        let site = site_of_cached(sites, self.cur, x, ev) as u32;
        if t >= heads.len() {
            heads.resize(t + 1, Head::default());
        }
        let classes = &mut self.classes;
        // The thread's latest class of the variable first (real traces mostly repeat it),
        // then a walk of a short list, or the table of the long lists' classes.
        let c = match heads[t].class {
            h if h != NIL && classes[h as usize].ls == ls => h,
            NIL => {
                let c = new_class(classes, ls);
                classes[c as usize].prev = 1; // a list of one
                heads[t].class = c;
                c
            }
            h => {
                let len = classes[h as usize].prev;
                if len > SHORT_LIST {
                    self.table_pushes += 1;
                    self.find
                        .get_or_insert_with(classes, (x as u32, t as u32, ls), |classes| {
                            new_class(classes, ls)
                        })
                } else {
                    let mut c = classes[h as usize].next;
                    while c != NIL && classes[c as usize].ls != ls {
                        c = classes[c as usize].next;
                    }
                    if c == NIL {
                        c = new_class(classes, ls);
                        classes[h as usize].prev = len + 1;
                        if len + 1 > SHORT_LIST {
                            // The list becomes long: its classes go into the table.
                            self.find.insert((x as u32, t as u32, ls), c);
                            let mut d = h;
                            while d != NIL {
                                let key = (x as u32, t as u32, classes[d as usize].ls);
                                self.find.insert(key, d);
                                d = classes[d as usize].next;
                            }
                        }
                    }
                    c
                }
            }
        };
        // Move the class to the front of its recency list (the length goes with it).
        heads[t].latest = time;
        let h = heads[t].class;
        if h != c {
            let len = classes[h as usize].prev;
            // Not the first: `prev` is its predecessor (`NIL` for a new class).
            let HistClass { prev, next, .. } = classes[c as usize];
            if prev != NIL {
                classes[prev as usize].next = next;
            }
            if next != NIL {
                classes[next as usize].prev = prev;
            }
            classes[h as usize].prev = c;
            classes[c as usize].prev = len;
            classes[c as usize].next = h;
            heads[t].class = c;
        }
        let class = &mut classes[c as usize];
        class.latest = time;
        let kind = if ev.is_write() { 0 } else { 1 };
        let seq = class.count[kind];
        class.count[kind] = seq.wrapping_add(1);
        // Replace the site's entry; drop entries that are no longer among the last `keep`.
        let keep = self.keep;
        let mut found = false;
        let slot = &mut class.inline[kind];
        if slot.time != 0 {
            if slot.site() == site {
                // (An index past 2^48 moves the site's entry to the list.)
                match Inline::new(index, time, site, seq) {
                    Some(now) => {
                        *slot = now;
                        found = true;
                    }
                    None => slot.time = 0,
                }
            } else if seq.wrapping_sub(slot.seq) >= keep {
                slot.time = 0;
            }
        }
        let mut prev = NIL;
        let mut e = class.head[kind];
        while e != NIL {
            let next = self.entries[e as usize].next;
            let entry = &mut self.entries[e as usize];
            if entry.site == site {
                entry.index = index;
                entry.time = time;
                entry.seq = seq;
                found = true;
                prev = e;
            } else if seq.wrapping_sub(entry.seq) >= keep {
                // `keep` later accesses of the class and kind: not visible any more.
                if prev == NIL {
                    class.head[kind] = next;
                } else {
                    self.entries[prev as usize].next = next;
                }
                self.entries[e as usize].next = self.free;
                self.free = e;
            } else {
                prev = e;
            }
            e = next;
        }
        if found {
            return;
        }
        if class.inline[kind].time == 0 {
            if let Some(slot) = Inline::new(index, time, site, seq) {
                class.inline[kind] = slot;
                return;
            }
        }
        let entry = HistEntry {
            index,
            time,
            site,
            seq,
            next: class.head[kind],
        };
        let at = if self.free != NIL {
            let at = self.free;
            self.free = self.entries[at as usize].next;
            self.entries[at as usize] = entry;
            at
        } else {
            self.entries.push(entry);
            (self.entries.len() - 1) as u32
        };
        class.head[kind] = at;
    }
}

/// The classes of [`HistoryLog`]'s long lists by (variable, thread, lockset): a table per
/// thread, open addressing with linear probing. A slot is 8 bytes, a tag and the class: the
/// tag is `x ^ f(ls)` for the key's variable `x` and lockset `ls` (`f` mixes the bits of
/// `ls`; exactness needs no more), so a slot whose tag matches and whose class has lockset
/// `ls` has variable `x`: the key is checked exactly against the class, which the caller
/// reads next anyway. Keys whose tags collide start their probes at the same slot. A lookup
/// costs one cache miss (a general hash table's control bytes and slots are two). Slots
/// hold a tag, not the whole key, to stay small; per thread, each table grows by a fraction
/// of the whole.
/// Classes are never removed.
#[derive(Debug, Default)]
pub(super) struct ClassTable {
    /// Per thread.
    threads: Vec<ThreadTable>,
}

#[derive(Debug, Default)]
pub(super) struct ThreadTable {
    /// (tag, class); class [`NIL`] marks a free slot.
    slots: Vec<[u32; 2]>,
    len: usize,
}

impl ThreadTable {
    /// The slot where `tag`'s probe starts.
    #[inline]
    fn start(&self, tag: u32) -> usize {
        let h = u64::from(tag).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        // The high bits are the well-mixed ones.
        (h >> (64 - self.slots.len().trailing_zeros())) as usize
    }

    /// The slot of `tag` whose class `is` says matches.
    #[inline]
    fn find(&self, tag: u32, is: impl Fn(u32) -> bool) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.start(tag);
        loop {
            let [g, c] = self.slots[i];
            if c == NIL {
                return None;
            }
            if g == tag && is(c) {
                return Some(c);
            }
            i = (i + 1) & mask;
        }
    }

    /// Adds class `c` (absent) under `tag`.
    fn insert(&mut self, tag: u32, c: u32) {
        // At most 3/4 full.
        if 4 * (self.len + 1) > 3 * self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.start(tag);
        while self.slots[i][1] != NIL {
            i = (i + 1) & mask;
        }
        self.slots[i] = [tag, c];
        self.len += 1;
    }

    #[cold]
    fn grow(&mut self) {
        let n = (2 * self.slots.len()).max(64);
        let old = std::mem::replace(&mut self.slots, vec![[0, NIL]; n]);
        self.len = 0;
        for [tag, c] in old {
            if c != NIL {
                self.insert(tag, c);
            }
        }
    }
}

impl ClassTable {
    /// The tag of variable `x` and lockset `ls`: given `ls`, it determines `x`.
    #[inline]
    fn tag(x: u32, ls: LsId) -> u32 {
        x ^ ls.wrapping_mul(0x9E37_79B9)
    }

    /// The table slot where the probe for `key` starts, to ask the cache for.
    #[inline]
    fn slot_ptr(&self, (x, t, ls): (u32, u32, LsId)) -> Option<*const u8> {
        let table = self
            .threads
            .get(t as usize)
            .filter(|s| !s.slots.is_empty())?;
        Some(table.slots[table.start(Self::tag(x, ls))].as_ptr() as *const u8)
    }

    /// The class of `key`, if any.
    #[inline]
    fn get(&self, classes: &[HistClass], (x, t, ls): (u32, u32, LsId)) -> Option<u32> {
        let table = self.threads.get(t as usize)?;
        table.find(Self::tag(x, ls), |c| classes[c as usize].ls == ls)
    }

    /// The class of `key` if any, most likely: the first whose tag matches, unchecked (for
    /// prefetching without reading the class).
    #[inline]
    fn probable(&self, (x, t, ls): (u32, u32, LsId)) -> Option<u32> {
        let table = self.threads.get(t as usize)?;
        table.find(Self::tag(x, ls), |_| true)
    }

    /// The class of `key`, made by `new` and added if absent.
    #[inline]
    fn get_or_insert_with(
        &mut self,
        classes: &mut Vec<HistClass>,
        key: (u32, u32, LsId),
        new: impl FnOnce(&mut Vec<HistClass>) -> u32,
    ) -> u32 {
        if let Some(c) = self.get(classes, key) {
            return c;
        }
        let c = new(classes);
        self.insert(key, c);
        c
    }

    /// Adds `key` (absent) with class `c`, whose lockset is the key's.
    fn insert(&mut self, (x, t, ls): (u32, u32, LsId), c: u32) {
        if t as usize >= self.threads.len() {
            self.threads
                .resize_with(t as usize + 1, ThreadTable::default);
        }
        self.threads[t as usize].insert(Self::tag(x, ls), c);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::lockset_of;
    use super::*;

    #[test]
    fn class_table_finds_what_it_stored() {
        let mut table = ClassTable::default();
        let mut classes = Vec::new();
        let key = |i: u32| (i % 97, i % 5, i / 3);
        let mut made = 0;
        for i in 0..5000u32 {
            let c = table.get_or_insert_with(&mut classes, key(i), |classes| {
                made += 1;
                new_class(classes, i / 3)
            });
            assert_eq!(c, i);
        }
        let len: usize = table.threads.iter().map(|s| s.len).sum();
        assert_eq!((made, len), (5000, 5000));
        assert!(table.threads.iter().all(|s| 4 * s.len <= 3 * s.slots.len()));
        for i in 0..5000u32 {
            assert_eq!(table.get(&classes, key(i)), Some(i));
            assert_eq!(table.probable(key(i)), Some(i));
        }
        // Keys whose tags collide are told apart by their class's lockset.
        let (x, t, ls) = key(4321);
        let other = 7;
        let twin = (
            x ^ ClassTable::tag(0, ls) ^ ClassTable::tag(0, other),
            t,
            other,
        );
        assert_eq!(ClassTable::tag(twin.0, twin.2), ClassTable::tag(x, ls));
        assert_ne!(twin, key(4321));
        assert_eq!(table.get(&classes, twin), None);
        let c = table.get_or_insert_with(&mut classes, twin, |classes| new_class(classes, other));
        assert_eq!(c, 5000);
        assert_eq!(table.get(&classes, twin), Some(5000));
        assert_eq!(table.get(&classes, (x, t, ls)), Some(4321));
        assert_eq!(table.get(&classes, (x, t + 1, ls)), None);
    }

    /// A (variable, thread) keeps one class per lockset however many it has (a short list,
    /// then the table once it has more than [`SHORT_LIST`]), in order of their latest access.
    #[test]
    fn history_log_has_one_class_per_lockset() {
        let mut table = LocksetTable::new();
        let sets: Vec<LsId> = (0..7u8).map(|b| lockset_of(&mut table, b)).collect();
        let mut log = HistoryLog::new(2);
        let mut time = 0;
        for round in 0..5 {
            for (k, &ls) in sets.iter().enumerate() {
                for loc in 0..2 {
                    time += 1;
                    let ev = Event::new(ThreadId(0), Op::Write, 3, LocId(loc + round % 2));
                    log.push(ls, time, u64::from(time), &ev);
                }
                let classes = log.classes.len();
                assert_eq!(classes, if round == 0 { k + 1 } else { sets.len() });
            }
        }
        // The recency list: every class, latest first.
        let head = log.vars[3].1[0];
        assert_eq!(head.latest, time);
        let mut c = head.class;
        let mut seen = Vec::new();
        while c != NIL {
            seen.push(log.classes[c as usize].latest);
            c = log.classes[c as usize].next;
        }
        assert_eq!(seen.len(), sets.len());
        assert!(seen.windows(2).all(|w| w[0] > w[1]));
    }
}
