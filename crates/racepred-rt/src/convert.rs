//! Records → racepred events: dense thread, variable, lock and location ids, named through
//! racepred's name tables. One [`Converter`] sees every record of a run in stamp order:
//! the merge at exit ([`crate::finish`]) and the online analysis ([`crate::online`]) both
//! feed it.
//!
//! Names: threads `T0` (the first thread to record, normally `main`), `T1`, … in creation
//! order; a variable is its address (`0x5581a8c4e010`; after its memory was freed and
//! reused, `0x5581a8c4e010~1`, `~2`, …), synchronisation variables
//! `rwlock-w:ADDR`, `rwlock-r:ADDR`, `barrier:ADDR`, `sem:ADDR`, `once:ADDR`, `sync:ADDR`;
//! a lock is its address; a location is `file:line:col` (or, until it is symbolised, the
//! call's address).

use racepred::trace::{Event, LocId, NameKind, Names, Op, ThreadId};
use rustc_hash::FxHashMap;

use crate::buf::{ns, Kind, Rec};

/// Bytes per page of the address → variable table.
const PAGE_BITS: u32 = 12;
const PAGE: usize = 1 << PAGE_BITS;

/// Variable ids (+ 1; 0 = none) of the addresses of one page, by byte offset.
type Page = Box<[u32; PAGE]>;

/// Variable ids of addresses, with retirement: a table per 4 KiB page of memory accessed
/// (like a sanitizer's shadow, 4 bytes per byte of the pages in use), found through a hash
/// map of pages with the last page used cached: consecutive accesses to nearby addresses
/// cost an array lookup, not a hash lookup.
#[derive(Default)]
struct Vars {
    pages: FxHashMap<u64, Page>,
    /// The page last used: (page number, its table).
    last: Option<(u64, *mut [u32; PAGE])>,
    /// Times an address was retired (its next variable's suffix).
    generation: FxHashMap<u64, u32>,
    /// Synchronisation variables by (name space, address); never retired.
    sync: FxHashMap<(u8, u64), u32>,
}

// SAFETY: the cached page pointer points into a `Box` owned by `pages`, which moves with
// the `Vars`; nothing else holds it.
unsafe impl Send for Vars {}

impl Vars {
    #[inline]
    fn slot(&mut self, addr: u64) -> &mut u32 {
        let page = addr >> PAGE_BITS;
        let off = (addr as usize) & (PAGE - 1);
        if let Some((p, t)) = self.last {
            if p == page {
                // SAFETY: `t` is the table of `page`, alive in `pages` (tables are never
                // removed).
                return unsafe { &mut (*t)[off] };
            }
        }
        let t: *mut [u32; PAGE] = &mut **self
            .pages
            .entry(page)
            .or_insert_with(|| vec![0u32; PAGE].into_boxed_slice().try_into().unwrap());
        self.last = Some((page, t));
        // SAFETY: `t` is the table of `page`, just taken from `pages`.
        unsafe { &mut (*t)[off] }
    }

    #[inline]
    fn mem(&mut self, addr: u64, names: &mut Names) -> u32 {
        let v = *self.slot(addr);
        if v != 0 {
            return v - 1;
        }
        self.new_mem(addr, names)
    }

    #[cold]
    fn new_mem(&mut self, addr: u64, names: &mut Names) -> u32 {
        let name = match self.generation.get(&addr) {
            None => format!("{addr:#x}"),
            Some(g) => format!("{addr:#x}~{g}"),
        };
        let v = names.table_mut(NameKind::Var).intern(name.as_bytes());
        *self.slot(addr) = v + 1;
        v
    }

    fn sync(&mut self, space: u8, addr: u64, names: &mut Names) -> u32 {
        if space == ns::MEM {
            return self.mem(addr, names);
        }
        *self.sync.entry((space, addr)).or_insert_with(|| {
            let prefix = match space {
                ns::RW_W => "rwlock-w",
                ns::RW_R => "rwlock-r",
                ns::BARRIER => "barrier",
                ns::SEM => "sem",
                ns::ONCE => "once",
                _ => "sync",
            };
            names
                .table_mut(NameKind::Var)
                .intern(format!("{prefix}:{addr:#x}").as_bytes())
        })
    }

    /// `[addr, addr + size)` holds new variables from now on; the variables it held (those
    /// accessed since their address was last retired) are added to `freed`, if given.
    fn retire(&mut self, addr: u64, size: u64, mut freed: Option<&mut Vec<u32>>) {
        let end = addr.saturating_add(size);
        if size == 0 {
            return;
        }
        let (first, last) = (addr >> PAGE_BITS, (end - 1) >> PAGE_BITS);
        let mut clear = |page: u64, t: &mut [u32; PAGE], generation: &mut FxHashMap<u64, u32>| {
            let base = page << PAGE_BITS;
            let lo = addr.max(base) - base;
            let hi = end.min(base + PAGE as u64) - base;
            for off in lo..hi {
                let s = &mut t[off as usize];
                if *s != 0 {
                    if let Some(f) = freed.as_deref_mut() {
                        f.push(*s - 1);
                    }
                    *s = 0;
                    *generation.entry(base + off).or_insert(0) += 1;
                }
            }
        };
        if last - first < self.pages.len() as u64 {
            for page in first..=last {
                if let Some(t) = self.pages.get_mut(&page) {
                    clear(page, t, &mut self.generation);
                }
            }
        } else {
            // A large range (a thread's stack): the pages in use, not every page in it.
            for (&page, t) in self.pages.iter_mut() {
                if (first..=last).contains(&page) {
                    clear(page, t, &mut self.generation);
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
    /// The last address looked up in `locs` (0: none).
    last_loc: (u64, LocId),
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
}

/// Deepest calling context kept: calls nested deeper share their parent's context.
const MAX_DEPTH: usize = 1024;

const NO_THREAD: u32 = u32::MAX;

impl Converter {
    pub fn new() -> Converter {
        Converter::default()
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
        // Runs of accesses from one instruction (a loop) are common.
        if self.last_loc.0 == pc {
            return self.last_loc.1;
        }
        if let Some(&l) = self.locs.get(&pc) {
            self.last_loc = (pc, l);
            return l;
        }
        // Not symbolised yet: the call instruction's address, until the end of the run.
        let name = format!("{:#x}", pc - 1);
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
        let loc = self.loc(pc);
        let result = freed
            .iter()
            .try_for_each(|&v| emit(&Event::new(t, Op::Write, v, loc), &self.names));
        self.freed = freed;
        result
    }

    /// A call or return of trace thread `t`: its context changes.
    fn call(&mut self, t: ThreadId, r: &Rec) {
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

    /// The event of record `r` of trace thread `t`, for records of one event (not
    /// [`Kind::Free`] / [`Kind::Retire`]: see [`Converter::convert_with`]).
    #[inline(always)]
    pub fn convert_as(&mut self, t: ThreadId, r: &Rec) -> Option<Event> {
        let kind = r.kind()?;
        let loc = self.loc(r.low());
        let names = &mut self.names;
        let (op, target) = match kind {
            Kind::Retire | Kind::Free | Kind::FuncEntry | Kind::FuncExit => return None,
            Kind::Read => (Op::Read, self.vars.mem(r.addr, names)),
            Kind::Write => (Op::Write, self.vars.mem(r.addr, names)),
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
