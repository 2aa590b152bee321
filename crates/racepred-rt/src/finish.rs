//! Writing the trace at the end of the run: merge the thread buffers by stamp, give
//! threads, variables, locks and locations dense ids (through racepred's name tables),
//! symbolise locations, and write racepred's binary format or STD by the output's
//! extension with racepred's own writers.
//!
//! Where: `$RACEPRED_RECORD_OUT` (set by `racepred record`), else `racepred-PID.rpb` in the
//! working directory. A process that is not the one `racepred record` started (a child it
//! `fork`ed or `exec`ed, told apart by `$RACEPRED_RECORD_PPID`) writes `NAME.PID.EXT`
//! beside it instead of overwriting the main trace.
//!
//! Names: threads `T0` (the first thread to record, normally `main`), `T1`, … in creation
//! order; a variable is its address (`0x5581a8c4e010`; after its memory was freed and
//! reused, `0x5581a8c4e010~1`, `~2`, …), synchronisation variables
//! `rwlock-w:ADDR`, `rwlock-r:ADDR`, `barrier:ADDR`, `sem:ADDR`, `once:ADDR`, `sync:ADDR`;
//! a lock is its address; a location is `file:line:col`.

use std::collections::{BTreeMap, BinaryHeap};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use racepred::trace::{Event, Format, LocId, NameKind, Names, Op, ThreadId};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::buf::{self, ns, Kind, Rec, FINISHED, TLS};

/// The process id and parent process id when the runtime started (0: `__tsan_init` never
/// ran).
pub static INIT_PID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);
pub static INIT_PPID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Writes the trace, once: later calls (and every hook) do nothing.
pub fn finish() {
    if FINISHED.swap(true, Ordering::SeqCst) {
        return;
    }
    TLS.with(|t| t.busy.set(true));
    let path = output_path();
    match write_trace(&path) {
        Ok(s) => buf::say(
            format!(
                "racepred: recorded {} events of {} threads ({} variables, {} locks) in {}\n",
                s.events,
                s.threads,
                s.vars,
                s.locks,
                path.display()
            )
            .as_bytes(),
        ),
        Err(e) => buf::say(format!("racepred: could not write the trace: {e}\n").as_bytes()),
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(|v| v.to_string_lossy().into_owned())
}

fn output_path() -> PathBuf {
    let pid = std::process::id() as i32;
    let Some(out) = env("RACEPRED_RECORD_OUT") else {
        return PathBuf::from(format!("racepred-{pid}.rpb"));
    };
    let init_pid = INIT_PID.load(Ordering::Relaxed);
    let forked = init_pid != 0 && init_pid != pid;
    let other = match env("RACEPRED_RECORD_PPID") {
        Some(p) => p.parse::<i32>().ok() != Some(INIT_PPID.load(Ordering::Relaxed)),
        None => false,
    };
    if forked || other {
        with_pid(Path::new(&out), pid)
    } else {
        PathBuf::from(out)
    }
}

/// `dir/name.rest` → `dir/name.PID.rest`.
fn with_pid(p: &Path, pid: i32) -> PathBuf {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let new = match name.find('.') {
        Some(i) if i > 0 => format!("{}.{pid}{}", &name[..i], &name[i..]),
        _ => format!("{name}.{pid}"),
    };
    p.with_file_name(new)
}

struct Summary {
    events: u64,
    threads: usize,
    vars: usize,
    locks: usize,
}

/// Variable ids of addresses, with retirement.
struct Vars {
    /// Live memory variables by address.
    live: BTreeMap<u64, u32>,
    /// Times an address was retired (its next variable's suffix).
    generation: FxHashMap<u64, u32>,
    /// Synchronisation variables by (name space, address); never retired.
    sync: FxHashMap<(u8, u64), u32>,
}

impl Vars {
    fn mem(&mut self, addr: u64, names: &mut Names) -> u32 {
        if let Some(&v) = self.live.get(&addr) {
            return v;
        }
        let name = match self.generation.get(&addr) {
            None => format!("{addr:#x}"),
            Some(g) => format!("{addr:#x}~{g}"),
        };
        let v = names.table_mut(NameKind::Var).intern(name.as_bytes());
        self.live.insert(addr, v);
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

    fn retire(&mut self, addr: u64, size: u64) {
        let gone: Vec<u64> = self
            .live
            .range(addr..addr.saturating_add(size))
            .map(|(&a, _)| a)
            .collect();
        for a in gone {
            self.live.remove(&a);
            *self.generation.entry(a).or_insert(0) += 1;
        }
    }
}

fn write_trace(path: &Path) -> racepred::Result<Summary> {
    let snaps = buf::snapshot();
    // Locations first: every distinct return address, symbolised once.
    let mut pcs = FxHashSet::default();
    for s in &snaps {
        for r in s.iter() {
            if r.kind() != Some(Kind::Retire) && r.low() != 0 {
                pcs.insert(r.low());
            }
        }
    }
    let mut names = Names::new();
    let syms = crate::symbols::symbolise(pcs.iter().copied());
    let mut locs: FxHashMap<u64, LocId> = FxHashMap::default();
    let mut sorted: Vec<u64> = pcs.into_iter().collect();
    sorted.sort_unstable();
    for pc in sorted {
        let name = match syms.get(&pc) {
            Some(n) => n.clone(),
            None => format!("{:#x}", pc - 1),
        };
        locs.insert(
            pc,
            LocId(names.table_mut(NameKind::Loc).intern(name.as_bytes())),
        );
    }

    let format = Format::from_path(path).unwrap_or(Format::Binary);
    let mut w = racepred::trace::write::create(path, format)?;
    let mut vars = Vars {
        live: BTreeMap::new(),
        generation: FxHashMap::default(),
        sync: FxHashMap::default(),
    };
    let mut threads: FxHashMap<u32, u32> = FxHashMap::default();
    let mut thread_id = |tid: u64, names: &mut Names| -> ThreadId {
        ThreadId(*threads.entry(tid as u32).or_insert_with(|| {
            names
                .table_mut(NameKind::Thread)
                .intern(format!("T{tid}").as_bytes())
        }))
    };
    let mut locks: FxHashMap<u64, u32> = FxHashMap::default();

    // Merge by stamp: a heap of each thread's next record.
    let mut iters: Vec<_> = snaps.iter().map(|s| s.iter().peekable()).collect();
    let mut heap = BinaryHeap::new();
    for (i, it) in iters.iter_mut().enumerate() {
        if let Some(r) = it.peek() {
            heap.push(std::cmp::Reverse((r.seq, i)));
        }
    }
    let mut events = 0u64;
    while let Some(std::cmp::Reverse((_, i))) = heap.pop() {
        let Some(r) = iters[i].next() else { continue };
        if let Some(next) = iters[i].peek() {
            heap.push(std::cmp::Reverse((next.seq, i)));
        }
        let r: &Rec = r;
        let Some(kind) = r.kind() else { continue };
        let t = thread_id(snaps[i].tid as u64, &mut names);
        let loc = match kind {
            Kind::Retire => LocId::NONE,
            _ => locs.get(&r.low()).copied().unwrap_or(LocId::NONE),
        };
        let (op, target) = match kind {
            Kind::Retire => {
                vars.retire(r.addr, r.low());
                continue;
            }
            Kind::Read => (Op::Read, vars.mem(r.addr, &mut names)),
            Kind::Write => (Op::Write, vars.mem(r.addr, &mut names)),
            Kind::VRead => (Op::VolatileRead, vars.sync(r.ns(), r.addr, &mut names)),
            Kind::VWrite => (Op::VolatileWrite, vars.sync(r.ns(), r.addr, &mut names)),
            Kind::Acquire | Kind::Release => {
                let l = *locks.entry(r.addr).or_insert_with(|| {
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
                let u = thread_id(r.addr, &mut names);
                (
                    if kind == Kind::Fork {
                        Op::Fork
                    } else {
                        Op::Join
                    },
                    u.0,
                )
            }
        };
        w.write_event(&Event::new(t, op, target, loc), &names, &[], None)?;
        events += 1;
    }
    w.finish()?;
    Ok(Summary {
        events,
        threads: names.table(NameKind::Thread).len(),
        vars: names.table(NameKind::Var).len(),
        locks: names.table(NameKind::Lock).len(),
    })
}
