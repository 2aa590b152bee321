//! Records → racepred events: dense thread, variable, lock and location ids, named through
//! racepred's name tables. One [`Converter`] sees every record of a run in stamp order:
//! the writer ([`crate::stream`]) and the online analysis ([`crate::online`]) both
//! feed it.
//!
//! Names: threads `T0` (the first thread to record, normally `main`), `T1`, … in creation
//! order; a variable is its address (`0x5581a8c4e010`; after its memory was freed and
//! reused, `0x5581a8c4e010~1`, `~2`, …), synchronisation variables
//! `rwlock-w:ADDR`, `rwlock-r:ADDR`, `barrier:ADDR`, `sem:ADDR`, `once:ADDR`, `sync:ADDR`;
//! a lock is its address; a location is `file:line:col` (or, until it is symbolised, the
//! call's address).
//!
//! Online, a variable's name is made only if the report shows it
//! ([`Converter::lazy_var_names`]): a run naming hundreds of thousands of variables spends
//! no time formatting and hashing their names under the analysis lock.

use racepred::trace::{Event, LocId, NameKind, Names, Op, ThreadId};
use rustc_hash::FxHashMap;

use crate::buf::{ns, Kind, Rec};

/// The address → variable table: pages of 4 KiB, each a directory of 64-byte lines, each
/// line a variable id per byte.
const PAGE_BITS: u32 = 12;
const LINE_BITS: u32 = 6;
const LINE: usize = 1 << LINE_BITS;
const LINES_PER_PAGE: usize = 1 << (PAGE_BITS - LINE_BITS);
/// Entries of [`Vars::recent`] (a power of two).
const RECENT_PAGES: usize = 1024;
/// Entries of [`Vars::recent_lines`] (a power of two): 64 KiB.
const RECENT_LINES: usize = 4096;

/// The slots of the addresses of one line, by byte offset: 0 = never accessed, `v + 1` =
/// variable `v`, [`RETIRED`]` | g` = retired `g` times and not accessed since.
type Line = [u32; LINE];
/// The slots of a line whose accesses all start at a multiple of 4, by word: a quarter of
/// a [`Line`], so that a walk over memory misses the cache a quarter as often. The first
/// access at another address makes it a [`Line`].
type WordLine = [u32; LINE / 4];
/// The flag of a retired slot (variable ids stay below it).
const RETIRED: u32 = 1 << 31;
/// Per line of one page, its table: 0 none, `i + 1` word line `i`, [`BYTES`]` | (i + 1)`
/// byte line `i`.
type Dir = [u32; LINES_PER_PAGE];
/// The flag of a [`Dir`] entry naming a byte line.
const BYTES: u32 = 1 << 31;

/// Variable ids of addresses, with retirement. Like a sanitizer's shadow, but only the
/// 64-byte lines accessed have a table (a slot per 4-byte word, or per byte once an access
/// starts elsewhere than at a word): a program touching one word per page costs about 0.3
/// KiB a page, a dense one a byte per byte. Pages are found through a hash map behind two
/// caches, the last line used and recent pages direct-mapped: consecutive accesses to
/// nearby addresses, and walks among a few hundred pages, cost an array lookup, not a hash
/// lookup.
#[derive(Default)]
struct Vars {
    /// Page number → index of its directory in `dirs`.
    pages: FxHashMap<u64, u32>,
    dirs: Vec<Dir>,
    words: Vec<WordLine>,
    lines: Vec<Line>,
    /// The line last used: (line number + 1, its [`Dir`] entry); 0: none.
    last: (u64, u32),
    /// Lines recently used, direct-mapped by line number, as `last`: a walk over a tree of
    /// a few thousand lines (a location changing at every access) finds most of its lines
    /// here without the page's directory.
    recent_lines: Vec<(u64, u32)>,
    /// Pages recently used, direct-mapped by page number: (page number + 1, its index in
    /// `dirs`); 0: none. A program walking a pointer structure changes lines at almost
    /// every access, mostly among a few hundred pages: an array lookup, not a hash lookup.
    recent: Vec<(u64, u32)>,
    /// Per variable id: what names it. A memory variable's key holds the times its address
    /// had been retired before it (its name's suffix), for the slot's count when it is
    /// retired in turn: in the slots rather than in a map by address, as a free retires
    /// every word of the block.
    keys: Vec<VarKey>,
    /// Variables named in the name table so far (the first `named` ids).
    named: usize,
    /// Names are made only when asked for ([`Converter::var_name`]), not as variables are
    /// met.
    lazy: bool,
    /// A variable name being written (reused: no allocation per variable).
    name: String,
    /// Synchronisation variables by (name space, address); never retired.
    sync: FxHashMap<(u8, u64), u32>,
}

/// What names a variable: a memory address and the times it had been retired before, or a
/// synchronisation object's name space and address.
#[derive(Clone, Copy)]
enum VarKey {
    Mem { addr: u64, gen: u32 },
    Sync { space: u8, addr: u64 },
}

impl VarKey {
    fn write_name(self, out: &mut String) {
        use std::fmt::Write;
        // Writing to a `String` cannot fail.
        let _ = match self {
            VarKey::Mem { addr, gen: 0 } => write!(out, "{addr:#x}"),
            VarKey::Mem { addr, gen } => write!(out, "{addr:#x}~{gen}"),
            VarKey::Sync { space, addr } => {
                let prefix = match space {
                    ns::RW_W => "rwlock-w",
                    ns::RW_R => "rwlock-r",
                    ns::BARRIER => "barrier",
                    ns::SEM => "sem",
                    ns::ONCE => "once",
                    _ => "sync",
                };
                write!(out, "{prefix}:{addr:#x}")
            }
        };
    }

    fn gen(self) -> u32 {
        match self {
            VarKey::Mem { gen, .. } => gen,
            VarKey::Sync { .. } => 0,
        }
    }
}

impl Vars {
    #[inline]
    fn slot(&mut self, addr: u64) -> &mut u32 {
        let line = (addr >> LINE_BITS) + 1;
        let off = (addr as usize) & (LINE - 1);
        if self.last.0 != line {
            self.last = (line, self.entry(line, addr));
        }
        let e = self.last.1;
        if e & BYTES == 0 {
            if off & 3 == 0 {
                return &mut self.words[e as usize - 1][off >> 2];
            }
            self.last.1 = self.widen(addr);
        }
        &mut self.lines[(self.last.1 & !BYTES) as usize - 1][off]
    }

    /// Makes `addr`'s word line a byte line; returns its new [`Dir`] entry.
    #[cold]
    #[inline(never)]
    fn widen(&mut self, addr: u64) -> u32 {
        let w = *self.line_of(addr) as usize - 1;
        let mut t = [0; LINE];
        for (i, &s) in self.words[w].iter().enumerate() {
            t[4 * i] = s;
        }
        self.lines.push(t);
        // The word line is left unused.
        let e = BYTES | self.lines.len() as u32;
        *self.line_of(addr) = e;
        let line = (addr >> LINE_BITS) + 1;
        if let Some(r) = self
            .recent_lines
            .get_mut(line as usize & (RECENT_LINES - 1))
        {
            if r.0 == line {
                r.1 = e;
            }
        }
        e
    }

    /// The [`Dir`] entry of line `line` (its number + 1), which holds `addr`: from the
    /// recent lines, or the page's directory.
    #[inline]
    fn entry(&mut self, line: u64, addr: u64) -> u32 {
        let i = line as usize & (RECENT_LINES - 1);
        match self.recent_lines.get(i) {
            Some(&(l, e)) if l == line => e,
            _ => {
                let e = *self.line_of(addr);
                if self.recent_lines.is_empty() {
                    self.recent_lines = vec![(0, 0); RECENT_LINES];
                }
                self.recent_lines[i] = (line, e);
                e
            }
        }
    }

    /// `addr`'s line's [`Dir`] entry, made (a word line) if new.
    #[inline(never)]
    fn line_of(&mut self, addr: u64) -> &mut u32 {
        let page = addr >> PAGE_BITS;
        if self.recent.is_empty() {
            self.recent = vec![(0, 0); RECENT_PAGES];
        }
        let slot = &mut self.recent[page as usize & (RECENT_PAGES - 1)];
        let d = if slot.0 == page + 1 {
            slot.1
        } else {
            let dirs = &mut self.dirs;
            let d = *self.pages.entry(page).or_insert_with(|| {
                dirs.push([0; LINES_PER_PAGE]);
                (dirs.len() - 1) as u32
            });
            *slot = (page + 1, d);
            d
        };
        let i = ((addr >> LINE_BITS) as usize) & (LINES_PER_PAGE - 1);
        let l = &mut self.dirs[d as usize][i];
        if *l == 0 {
            self.words.push([0; LINE / 4]);
            *l = self.words.len() as u32;
        }
        l
    }

    /// The variable at `addr`, made if new. Inline: a known word of the line last used (a
    /// loop's accesses); the rest out of line.
    #[inline(always)]
    fn mem(&mut self, addr: u64, names: &mut Names) -> u32 {
        let e = self.last.1;
        if self.last.0 == (addr >> LINE_BITS) + 1 && e & BYTES == 0 && addr & 3 == 0 {
            if let Some(w) = self.words.get(e as usize - 1) {
                let v = w[(addr as usize >> 2) & (LINE / 4 - 1)];
                if v.wrapping_sub(1) < RETIRED - 1 {
                    return v - 1;
                }
            }
        }
        self.mem_slow(addr, names)
    }

    #[inline(never)]
    fn mem_slow(&mut self, addr: u64, names: &mut Names) -> u32 {
        let v = *self.slot(addr);
        if v.wrapping_sub(1) < RETIRED - 1 {
            return v - 1;
        }
        self.new_mem(addr, names)
    }

    #[cold]
    fn new_mem(&mut self, addr: u64, names: &mut Names) -> u32 {
        let gen = *self.slot(addr) & !RETIRED;
        let v = self.new_var(VarKey::Mem { addr, gen }, names);
        *self.slot(addr) = v + 1;
        v
    }

    /// A new variable's id: the next one. Unless names are lazy, it is named now.
    fn new_var(&mut self, key: VarKey, names: &mut Names) -> u32 {
        let v = self.keys.len() as u32;
        if v >= RETIRED - 1 {
            crate::buf::die(b"racepred-rt: more than 2^31 variables\n");
        }
        self.keys.push(key);
        if !self.lazy {
            self.name_all(names);
        }
        v
    }

    /// Names every variable not named yet, in id order (the name table's ids are ours).
    fn name_all(&mut self, names: &mut Names) {
        let table = names.table_mut(NameKind::Var);
        for (v, key) in self.keys.iter().enumerate().skip(self.named) {
            self.name.clear();
            key.write_name(&mut self.name);
            if table.intern(self.name.as_bytes()) as usize != v {
                crate::buf::die(b"racepred-rt: variable names out of step with their ids\n");
            }
        }
        self.named = self.keys.len();
    }

    fn sync(&mut self, space: u8, addr: u64, names: &mut Names) -> u32 {
        if space == ns::MEM {
            return self.mem(addr, names);
        }
        match self.sync.get(&(space, addr)) {
            Some(&v) => v,
            None => {
                let v = self.new_var(VarKey::Sync { space, addr }, names);
                self.sync.insert((space, addr), v);
                v
            }
        }
    }

    /// `[addr, addr + size)` holds new variables from now on; the variables it held (those
    /// accessed since their address was last retired) are added to `freed`, if given.
    fn retire(&mut self, addr: u64, size: u64, mut freed: Option<&mut Vec<u32>>) {
        let end = addr.saturating_add(size);
        if size == 0 {
            return;
        }
        let (first, last) = (addr >> PAGE_BITS, (end - 1) >> PAGE_BITS);
        let (dirs, keys) = (&self.dirs, &self.keys);
        let (words, lines) = (&mut self.words, &mut self.lines);
        let mut clear = |page: u64, d: u32| {
            for (i, &l) in dirs[d as usize].iter().enumerate() {
                if l == 0 {
                    continue;
                }
                let base = (page << PAGE_BITS) + ((i as u64) << LINE_BITS);
                if base >= end || base + LINE as u64 <= addr {
                    continue;
                }
                // The slots of the addresses in range: bytes `lo..hi` of the line.
                let lo = (addr.max(base) - base) as usize;
                let hi = (end.min(base + LINE as u64) - base) as usize;
                let slots = if l & BYTES != 0 {
                    &mut lines[(l & !BYTES) as usize - 1][lo..hi]
                } else {
                    &mut words[l as usize - 1][lo.div_ceil(4)..hi.div_ceil(4)]
                };
                for s in slots {
                    // Live: a variable (not 0, not retired since its last access).
                    if s.wrapping_sub(1) < RETIRED - 1 {
                        let v = *s - 1;
                        if let Some(f) = freed.as_deref_mut() {
                            f.push(v);
                        }
                        *s = RETIRED | (keys[v as usize].gen() + 1);
                    }
                }
            }
        };
        if last - first < self.pages.len() as u64 {
            for page in first..=last {
                if let Some(&d) = self.pages.get(&page) {
                    clear(page, d);
                }
            }
        } else {
            // A large range (a thread's stack): the pages in use, not every page in it.
            for (&page, &d) in self.pages.iter() {
                if (first..=last).contains(&page) {
                    clear(page, d);
                }
            }
        }
    }
}

/// Turns records into events, naming what it meets.
#[derive(Default)]
pub struct Converter {
    pub names: Names,
    vars: Vars,
    /// Runtime thread id → trace thread id.
    threads: Vec<u32>,
    locks: FxHashMap<u64, u32>,
    /// Return address → location id.
    locs: FxHashMap<u64, LocId>,
    /// Addresses recently looked up in `locs`, direct-mapped by address (0: none): a loop
    /// body's accesses alternate between a few instructions.
    recent_locs: Vec<(u64, LocId)>,
    /// Per trace thread: its last [`Kind::Free`] record (block, return address), waiting
    /// for the block's [`Kind::Retire`].
    frees: Vec<Option<(u64, u64)>>,
    /// The variables of the block being freed (reused buffer).
    freed: Vec<u32>,
    /// Calling contexts, interned: context `i + 1` is `(parent context, call's return
    /// address)` = `contexts[i]`; context 0 is the empty stack.
    contexts: Vec<(u32, u64)>,
    context_ids: FxHashMap<(u32, u64), u32>,
    /// Per trace thread: its stack of contexts (the innermost last; empty: context 0).
    stacks: Vec<Vec<u32>>,
    /// Names locations as they are met (a trace written while the program runs); without
    /// it a new location is named by its address, to be symbolised at the end (online).
    pub symbols: Option<crate::symbols::Symboliser>,
}

/// Entries of [`Converter::recent_locs`] (a power of two).
const RECENT_LOCS: usize = 256;

/// Deepest calling context kept: calls nested deeper share their parent's context.
const MAX_DEPTH: usize = 1024;

const NO_THREAD: u32 = u32::MAX;

impl Converter {
    pub fn new() -> Converter {
        Converter::default()
    }

    /// Makes variable names only when asked for ([`Converter::var_name`]): `names` then
    /// holds no variable (for a caller that names only the variables it shows).
    pub fn lazy_var_names(&mut self) {
        self.vars.lazy = true;
    }

    /// The name of variable `v`.
    pub fn var_name(&self, v: u32) -> String {
        let mut s = String::new();
        if let Some(&key) = self.vars.keys.get(v as usize) {
            key.write_name(&mut s);
        }
        s
    }

    /// Names location `pc` (a return address) `name`, before any record uses it.
    pub fn name_loc(&mut self, pc: u64, name: &str) {
        let id = LocId(self.names.table_mut(NameKind::Loc).intern(name.as_bytes()));
        self.locs.insert(pc, id);
    }

    /// The return addresses met so far and their location ids.
    pub fn locs(&self) -> impl Iterator<Item = (u64, LocId)> + '_ {
        self.locs.iter().map(|(&pc, &l)| (pc, l))
    }

    #[inline]
    fn loc(&mut self, pc: u64) -> LocId {
        if pc == 0 {
            return LocId::NONE;
        }
        let i = (pc ^ (pc >> 10)) as usize & (RECENT_LOCS - 1);
        match self.recent_locs.get(i) {
            Some(&(p, l)) if p == pc => l,
            _ => self.loc_slow(pc, i),
        }
    }

    #[inline(never)]
    fn loc_slow(&mut self, pc: u64, i: usize) -> LocId {
        let l = match self.locs.get(&pc) {
            Some(&l) => l,
            None => self.new_loc(pc),
        };
        if self.recent_locs.is_empty() {
            self.recent_locs = vec![(0, LocId::NONE); RECENT_LOCS];
        }
        self.recent_locs[i] = (pc, l);
        l
    }

    #[cold]
    #[inline(never)]
    fn new_loc(&mut self, pc: u64) -> LocId {
        // Without a symboliser: the call instruction's address, until the end of the run.
        let name = self
            .symbols
            .as_mut()
            .and_then(|s| s.name(pc))
            .unwrap_or_else(|| format!("{:#x}", pc - 1));
        self.name_loc(pc, &name);
        self.locs[&pc]
    }

    /// The trace thread of runtime thread `tid`.
    #[inline]
    pub fn thread(&mut self, tid: u32) -> ThreadId {
        let i = tid as usize;
        if i >= self.threads.len() {
            self.threads.resize(i + 1, NO_THREAD);
        }
        if self.threads[i] == NO_THREAD {
            self.threads[i] = self
                .names
                .table_mut(NameKind::Thread)
                .intern(format!("T{tid}").as_bytes());
        }
        ThreadId(self.threads[i])
    }

    /// Calls `emit` with the events of record `r` of trace thread `t`: none for a
    /// retirement of memory that was not freed (a new thread's stack) and for the
    /// [`Kind::Free`] announcing a free, a write of each variable of the block at the
    /// block's retirement after a free, one event for every other record.
    #[inline(always)]
    pub fn convert_with<E>(
        &mut self,
        t: ThreadId,
        r: &Rec,
        mut emit: impl FnMut(&Event, &Names) -> Result<(), E>,
    ) -> Result<(), E> {
        match r.kind() {
            Some(Kind::Free) | Some(Kind::Retire) => self.free_or_retire(t, r, emit),
            Some(Kind::FuncEntry) | Some(Kind::FuncExit) => {
                self.call(t, r);
                Ok(())
            }
            _ => match self.convert_as(t, r) {
                Some(ev) => emit(&ev, &self.names),
                None => Ok(()),
            },
        }
    }

    #[cold]
    #[inline(never)]
    fn free_or_retire<E>(
        &mut self,
        t: ThreadId,
        r: &Rec,
        mut emit: impl FnMut(&Event, &Names) -> Result<(), E>,
    ) -> Result<(), E> {
        let i = t.index();
        if i >= self.frees.len() {
            self.frees.resize(i + 1, None);
        }
        if r.kind() == Some(Kind::Free) {
            self.frees[i] = Some((r.addr, r.low()));
            return Ok(());
        }
        // A retirement after its free writes the block's variables; another (a new
        // thread's stack) only renames.
        let Some((_, pc)) = self.frees[i].take().filter(|f| f.0 == r.addr) else {
            self.vars.retire(r.addr, r.low(), None);
            return Ok(());
        };
        let mut freed = std::mem::take(&mut self.freed);
        freed.clear();
        self.vars.retire(r.addr, r.low(), Some(&mut freed));
        // Variables are numbered in order of first access: a stable order.
        freed.sort_unstable();
        // The location is named only if the free writes something: a block the program
        // never accessed (the C library's or this runtime's own) has no variables, and
        // naming its free's call site could load a module's whole debug information.
        let loc = match freed.is_empty() {
            true => LocId::NONE,
            false => self.loc(pc),
        };
        let result = freed
            .iter()
            .try_for_each(|&v| emit(&Event::new(t, Op::Write, v, loc), &self.names));
        self.freed = freed;
        result
    }

    /// A call or return of trace thread `t`: its context changes.
    pub fn call(&mut self, t: ThreadId, r: &Rec) {
        let i = t.index();
        if i >= self.stacks.len() {
            self.stacks.resize_with(i + 1, Vec::new);
        }
        let stack = &mut self.stacks[i];
        if r.kind() == Some(Kind::FuncExit) {
            // A return without its call (recording started inside the function) is dropped.
            stack.pop();
            return;
        }
        let parent = stack.last().copied().unwrap_or(0);
        let ctx = if stack.len() >= MAX_DEPTH {
            parent
        } else {
            let key = (parent, r.low());
            match self.context_ids.get(&key) {
                Some(&c) => c,
                None => {
                    self.contexts.push(key);
                    let c = self.contexts.len() as u32;
                    self.context_ids.insert(key, c);
                    c
                }
            }
        };
        stack.push(ctx);
    }

    /// For the retirement `r` of a block that trace thread `t` frees: the context of the
    /// free's writes, the thread's with the call of the freeing function on top (so a
    /// free's stack starts where the program freed, as a stack of its accesses starts at
    /// the access).
    pub fn free_context(&mut self, t: ThreadId, r: &Rec) -> Option<u32> {
        if r.kind() != Some(Kind::Retire) {
            return None;
        }
        let (addr, pc) = (*self.frees.get(t.index())?)?;
        if addr != r.addr || pc == 0 {
            return None;
        }
        let parent = self.context(t);
        let key = (parent, pc);
        Some(match self.context_ids.get(&key) {
            Some(&c) => c,
            None => {
                self.contexts.push(key);
                let c = self.contexts.len() as u32;
                self.context_ids.insert(key, c);
                c
            }
        })
    }

    /// The calling context of trace thread `t`'s next event (0: no call recorded).
    #[inline]
    pub fn context(&self, t: ThreadId) -> u32 {
        self.stacks
            .get(t.index())
            .and_then(|s| s.last().copied())
            .unwrap_or(0)
    }

    /// Every context's call sites, in context order (1, 2, …).
    pub fn contexts(&self) -> impl Iterator<Item = Vec<u64>> + '_ {
        (1..=self.contexts.len() as u32).map(|c| self.frames(c))
    }

    /// The call sites of context `c` (return addresses), innermost first.
    pub fn frames(&self, mut c: u32) -> Vec<u64> {
        let mut v = Vec::new();
        while c != 0 {
            let (parent, pc) = self.contexts[c as usize - 1];
            v.push(pc);
            c = parent;
        }
        v
    }

    /// The event of record `r` of trace thread `t` if it is a plain read or write (what
    /// [`Converter::convert_as`] gives for it, without its other cases).
    #[inline(always)]
    pub fn access_event(&mut self, t: ThreadId, r: &Rec) -> Option<Event> {
        let op = match r.kind() {
            Some(Kind::Read) => Op::Read,
            Some(Kind::Write) => Op::Write,
            _ => return None,
        };
        let loc = self.loc(r.low());
        let v = self.vars.mem(r.addr, &mut self.names);
        Some(Event::new(t, op, v, loc))
    }

    /// The event of record `r` of trace thread `t`, for records of one event (not
    /// [`Kind::Free`] / [`Kind::Retire`]: see [`Converter::convert_with`]).
    #[inline(always)]
    pub fn convert_as(&mut self, t: ThreadId, r: &Rec) -> Option<Event> {
        if let Some(ev) = self.access_event(t, r) {
            return Some(ev);
        }
        let kind = r.kind()?;
        let loc = self.loc(r.low());
        let names = &mut self.names;
        let (op, target) = match kind {
            // Reads and writes: above.
            Kind::Read | Kind::Write => return None,
            Kind::Retire | Kind::Free | Kind::FuncEntry | Kind::FuncExit => return None,
            Kind::VRead => (Op::VolatileRead, self.vars.sync(r.ns(), r.addr, names)),
            Kind::VWrite => (Op::VolatileWrite, self.vars.sync(r.ns(), r.addr, names)),
            Kind::Acquire | Kind::Release => {
                let l = *self.locks.entry(r.addr).or_insert_with(|| {
                    names
                        .table_mut(NameKind::Lock)
                        .intern(format!("{:#x}", r.addr).as_bytes())
                });
                let op = if kind == Kind::Acquire {
                    Op::Acquire
                } else {
                    Op::Release
                };
                (op, l)
            }
            Kind::Fork | Kind::Join => {
                let u = self.thread(r.addr as u32);
                let op = if kind == Kind::Fork {
                    Op::Fork
                } else {
                    Op::Join
                };
                (op, u.0)
            }
        };
        Some(Event::new(t, op, target, loc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Accesses to `0x1000`, its retirement, `0x1000` again, and a barrier's variable.
    fn run(conv: &mut Converter) -> Vec<u32> {
        let t = conv.thread(0);
        let mut vars = Vec::new();
        let mut access = |conv: &mut Converter, kind, space, addr| {
            let r = Rec::new(0, kind, space, addr, 0);
            vars.push(conv.convert_as(t, &r).unwrap().target);
        };
        access(conv, Kind::Write, ns::MEM, 0x1000);
        access(conv, Kind::Read, ns::MEM, 0x1004);
        access(conv, Kind::Read, ns::MEM, 0x1000);
        let _ = conv.convert_with(t, &Rec::new(0, Kind::Retire, ns::MEM, 0x1000, 8), |_, _| {
            Ok::<(), ()>(())
        });
        access(conv, Kind::Write, ns::MEM, 0x1000);
        access(conv, Kind::VWrite, ns::BARRIER, 0x2000);
        vars
    }

    /// The table against a map by address: random accesses (at words and between them, so
    /// that word lines become byte lines) and retirements over a few pages give the same
    /// variables and retire the same ones.
    #[test]
    fn address_table_agrees_with_a_map() {
        #[derive(Clone, Copy)]
        enum Slot {
            Live(u32),
            Retired(u32),
        }
        for seed in 1..=20u64 {
            let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let mut rand = move |n: u64| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % n
            };
            let (mut vars, mut names) = (Vars::default(), Names::new());
            let mut map: FxHashMap<u64, Slot> = FxHashMap::default();
            let mut gens: Vec<u32> = Vec::new();
            for _ in 0..20_000 {
                // Two areas whose lines share the recent lines' entries.
                let base = 0x7f00_0000_0000u64 + rand(2) * ((RECENT_LINES as u64) << LINE_BITS);
                let addr = match rand(4) {
                    // Mostly words; sometimes any byte.
                    0 => base + rand(3 * 4096),
                    _ => base + 4 * rand(3 * 1024),
                };
                if rand(50) == 0 {
                    let most = if rand(2) == 0 { 64 } else { 5000 };
                    let size = 1 + rand(most);
                    let mut freed = Vec::new();
                    vars.retire(addr, size, Some(&mut freed));
                    freed.sort_unstable();
                    let mut want = Vec::new();
                    for (&a, slot) in map.iter_mut() {
                        if let Slot::Live(v) = *slot {
                            if (addr..addr + size).contains(&a) {
                                want.push(v);
                                *slot = Slot::Retired(gens[v as usize] + 1);
                            }
                        }
                    }
                    want.sort_unstable();
                    assert_eq!(freed, want, "seed {seed}: retire {addr:#x}+{size}");
                    continue;
                }
                let got = vars.mem(addr, &mut names);
                let want = match map.get(&addr) {
                    Some(&Slot::Live(v)) => v,
                    other => {
                        let g = match other {
                            Some(&Slot::Retired(g)) => g,
                            _ => 0,
                        };
                        gens.push(g);
                        let v = gens.len() as u32 - 1;
                        map.insert(addr, Slot::Live(v));
                        v
                    }
                };
                assert_eq!(got, want, "seed {seed}: access {addr:#x}");
            }
            for (v, &g) in gens.iter().enumerate() {
                assert_eq!(vars.keys[v].gen(), g);
            }
        }
    }

    #[test]
    fn lazy_names_are_the_names_made_at_once() {
        let (mut now, mut lazy) = (Converter::new(), Converter::new());
        lazy.lazy_var_names();
        let (a, b) = (run(&mut now), run(&mut lazy));
        assert_eq!(a, [0, 1, 0, 2, 3]);
        assert_eq!(a, b);
        let table = now.names.table(NameKind::Var);
        let named: Vec<&str> = table.iter().collect();
        assert_eq!(named, ["0x1000", "0x1004", "0x1000~1", "barrier:0x2000"]);
        assert_eq!(lazy.names.table(NameKind::Var).len(), 0);
        for (v, name) in named.iter().enumerate() {
            assert_eq!(lazy.var_name(v as u32), *name);
            assert_eq!(now.var_name(v as u32), *name);
        }
    }
}
