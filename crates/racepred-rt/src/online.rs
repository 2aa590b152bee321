//! Online mode (`racepred record --online ANALYSIS`): the analysis runs inside the program,
//! event by event, instead of a trace being written; its report is written at exit.
//!
//! A thread's memory accesses are kept in its buffer (as in recording, without stamps)
//! until its next synchronisation event; that event takes one global lock, hands the
//! pending accesses to the analysis, then the event itself (a join first hands over the
//! joined thread's last accesses; a full batch is handed over by itself). So the lock is
//! taken per synchronisation event, not per access, and the order the analysis sees is a
//! linearisation of happens-before: synchronisation events in the order of the lock (taken
//! where recording takes its stamp, so the argument of [`crate::buf`] carries over: a
//! lock's `acq` after the lock call returns and its `rel` before the unlock call, both
//! while it is held; the `vr` of an atomic after the `vw` it read), each access after the
//! thread's previous synchronisation event and before its next. Accesses of different
//! threads that no synchronisation orders may be seen in another order than they ran in:
//! which of two racing accesses is the *second* may differ from a recorded trace, the
//! happens-before races (unordered conflicting pairs) are the same in every such order.
//! That is why the online analyses are the happens-before ones (FastTrack, Djit+ `hb`,
//! PACER) and not SHB, whose reads-from is the trace order. Frees are synchronisation
//! events here (the block's variables written, then retired), so that reused memory is a
//! new variable before any other thread's access to it is analysed; a free first hands
//! over every other thread's pending accesses too (made before it, so of the block as it
//! was: a race between them and the free is found). Memory is the analysis's state plus
//! one batch per thread: a long run costs no more than a short one with the same
//! variables.
//!
//! Configuration (set by `racepred record`, read at the first event):
//! `$RACEPRED_ONLINE` = `fasttrack` | `pacer` | `hb`; PACER's
//! `$RACEPRED_ONLINE_RATE` (default 1), `$RACEPRED_ONLINE_PERIOD` (operations per sampling
//! period, default PACER's) and `$RACEPRED_ONLINE_SEED`. The report goes where the trace
//! would have gone ([`crate::finish`]), as JSON if the name ends in `.json`, else as text.
//!
//! Locations are named by return address while the program runs and symbolised at the end
//! (two addresses with the same `file:line:col` become one location).
//!
//! **The lock and allocation rule.** The analysis's state is reachable only through
//! `Locked`, the guard of one spin lock, taken per synchronisation event (and per full
//! batch), never per access. Under it the analysis may allocate (`malloc`; its vectors and
//! maps grow): this cannot deadlock because no hook waits for the lock while holding an
//! allocator lock (the runtime interposes only `free` / `realloc` / `delete`, which record
//! before calling the allocator), because the holder calls no hook (the thread is `busy`:
//! an interposed call made by the analysis only forwards), and because the lock is taken
//! after an atomic's stripe lock, never before one. `fork` takes it (after the stripes) so
//! that the child's copy is free; the child then drops the state unread.
//!

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::ffi::CStr;
use std::path::Path;

use racepred::analysis::pacer::PacerConfig;
use racepred::analysis::{create, Analysis, AnalysisKind, AnalysisOptions, Side};
use racepred::report::{json, text, ReportContext};
use racepred::trace::{LocId, NameKind, Names, ThreadId};

use crate::buf::{self, Kind, Own, Rec, SpinGuard, ThreadBuf};
use crate::convert::Converter;

/// Not decided yet / write a trace / analyse online.
const UNDECIDED: u8 = 0;
const RECORD: u8 = 1;
const ONLINE: u8 = 2;

static MODE: AtomicU8 = AtomicU8::new(UNDECIDED);
static LOCK: AtomicBool = AtomicBool::new(false);

struct State {
    conv: Converter,
    analysis: Box<dyn Analysis>,
    events: u64,
}

/// The analysis's state: reached only through [`Locked`].
struct Slot(UnsafeCell<Option<State>>);
// SAFETY: the state inside is reached only through `Locked`, which holds `LOCK`: one
// thread at a time.
unsafe impl Sync for Slot {}
static STATE: Slot = Slot(UnsafeCell::new(None));

fn lock() -> SpinGuard {
    SpinGuard::lock(&LOCK)
}

/// The online lock held, and through it the analysis's state, for as long as it is held.
struct Locked {
    _hold: SpinGuard,
}

impl Locked {
    fn new() -> Locked {
        Locked { _hold: lock() }
    }
}

impl core::ops::Deref for Locked {
    type Target = Option<State>;
    fn deref(&self) -> &Option<State> {
        // SAFETY: `LOCK` is held by this guard: no other reference to the state exists
        // while the one returned (bounded by the guard's borrow) lives.
        unsafe { &*STATE.0.get() }
    }
}

impl core::ops::DerefMut for Locked {
    fn deref_mut(&mut self) -> &mut Option<State> {
        // SAFETY: as for `deref`, and `&mut self` makes this the only one.
        unsafe { &mut *STATE.0.get() }
    }
}

fn getenv(name: &CStr) -> Option<&'static str> {
    // SAFETY: `name` is a C string; the environment is not modified while the program
    // runs the runtime's hooks (the runtime never calls `setenv`).
    let p = unsafe { libc::getenv(name.as_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: `getenv` returned a C string that lives as long as the environment entry.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .ok()
        .filter(|s| !s.is_empty())
}

fn number<T: std::str::FromStr>(name: &CStr, default: T) -> T {
    match getenv(name) {
        None => default,
        Some(s) => s.parse().unwrap_or_else(|_| {
            buf::die(
                format!(
                    "racepred-rt: {}={s} is not a number\n",
                    name.to_string_lossy()
                )
                .as_bytes(),
            )
        }),
    }
}

/// The analyses that can run online: the happens-before ones (see the module text).
pub const ANALYSES: [AnalysisKind; 3] = [
    AnalysisKind::FastTrack,
    AnalysisKind::Pacer,
    AnalysisKind::Hb,
];

#[cold]
#[inline(never)]
fn decide() -> u8 {
    let mut st = Locked::new();
    let m = MODE.load(Ordering::Relaxed);
    if m != UNDECIDED {
        return m;
    }
    let Some(name) = getenv(c"RACEPRED_ONLINE") else {
        MODE.store(RECORD, Ordering::Relaxed);
        return RECORD;
    };
    let kind = AnalysisKind::from_name(name)
        .filter(|k| ANALYSES.contains(k))
        .unwrap_or_else(|| {
            buf::die(
                format!(
                    "racepred-rt: RACEPRED_ONLINE={name}: not an online analysis (fasttrack, pacer, hb)\n"
                )
                .as_bytes(),
            )
        });
    let opts = AnalysisOptions {
        rate: number(c"RACEPRED_ONLINE_RATE", 1.0),
        period: number(c"RACEPRED_ONLINE_PERIOD", PacerConfig::DEFAULT_PERIOD),
        seed: number(c"RACEPRED_ONLINE_SEED", 0),
        // As `analyze` by default: the first racy event of each location and operation with
        // a count, so a long run's memory does not grow with its racy events.
        group_racy: true,
        ..AnalysisOptions::default()
    };
    let analysis =
        create(kind, &opts).unwrap_or_else(|e| buf::die(format!("racepred-rt: {e}\n").as_bytes()));
    *st = Some(State {
        conv: Converter::new(),
        analysis,
        events: 0,
    });
    MODE.store(ONLINE, Ordering::Release);
    ONLINE
}

/// Whether events go to an online analysis (decided at the first call).
#[inline]
pub fn online() -> bool {
    match MODE.load(Ordering::Acquire) {
        UNDECIDED => decide() == ONLINE,
        m => m == ONLINE,
    }
}

impl State {
    #[inline]
    fn push(&mut self, tid: u32, r: &Rec) {
        let t = self.conv.thread(tid);
        self.push_as(t, r);
    }

    #[inline]
    fn push_as(&mut self, t: ThreadId, r: &Rec) {
        let (analysis, events) = (&mut self.analysis, &mut self.events);
        let _ = self.conv.convert_with(t, r, |ev, _| {
            analysis.on_event(*events, ev, Side::default());
            *events += 1;
            Ok::<(), ()>(())
        });
    }

    /// Hands `b`'s pending accesses to the analysis (`own`: as for [`buf::hand_over`]).
    /// Holding a `&mut State` means holding the online lock ([`Locked`]).
    ///
    /// # Safety
    /// `b` is a registered buffer; `own` only if it is the caller's, or its thread ended.
    unsafe fn drain(&mut self, b: *mut ThreadBuf, own: bool) {
        // SAFETY: a registered buffer's `tid` never changes.
        let t = self.conv.thread(unsafe { (*b).tid });
        // SAFETY: the online lock is held (we have the state); the caller vouches for `b`
        // and `own`.
        unsafe { buf::hand_over(b, own, |r| self.push_as(t, r)) };
    }
}

/// The calling thread's batch of accesses is full: analyse it.
pub fn flush(b: &mut Own) {
    let mut st = Locked::new();
    match st.as_mut() {
        // SAFETY: `b` is the caller's own buffer.
        Some(st) => unsafe { st.drain(b.raw(), true) },
        // No analysis (it has finished): the batch is dropped.
        // SAFETY: the online lock is held, and `b` is the caller's own buffer.
        None => unsafe { buf::hand_over(b.raw(), true, |_| {}) },
    }
}

/// A synchronisation event (or a free or retirement) of the calling thread: its pending
/// accesses, then (for a join) the joined thread's last ones or (for a free) every other
/// thread's pending ones, then the event itself.
pub fn sync(b: &mut Own, r: Rec) {
    let mut locked = Locked::new();
    let Some(st) = locked.as_mut() else { return };
    // SAFETY: `b` is the caller's own buffer.
    unsafe { st.drain(b.raw(), true) };
    match r.kind() {
        Some(Kind::Join) => {
            // The joined thread has ended: its buffer is still.
            // SAFETY: registered buffers' `tid`s never change.
            if let Some(u) = buf::threads().find(|&u| unsafe { (*u).tid } == r.addr as u32) {
                // SAFETY: a registered buffer whose thread has ended.
                unsafe { st.drain(u, true) };
            }
        }
        Some(Kind::Free) => {
            // The other threads' pending accesses were made before this free: analysed
            // after it they would be taken for accesses of the reused memory (a missed race
            // between them and the free).
            for u in buf::threads().filter(|&u| u != b.raw()) {
                // SAFETY: a registered buffer, not marked as emptied (`own` false).
                unsafe { st.drain(u, false) };
            }
        }
        _ => {}
    }
    st.push(b.tid(), &r);
}

/// Held across `fork` (after the atomics' stripe locks, the order in which a hook may
/// nest them), so that no other thread is inside the analysis when the process is copied.
pub fn lock_for_fork() -> SpinGuard {
    lock()
}

/// In a child just forked (the online lock free, no other thread): the analysis state is
/// the parent's history and is dropped unread (`mem::forget`: its pages stay shared with
/// the parent, untouched); the child's first event starts a new analysis.
pub fn restart_in_child() {
    let mut st = Locked::new();
    core::mem::forget(st.take());
    MODE.store(UNDECIDED, Ordering::Release);
}

/// At exit, in online mode: finishes the analysis and writes its report to `path`; returns
/// (events, races) or `None` when not in online mode.
pub fn finish(path: &Path) -> Option<std::io::Result<(u64, usize)>> {
    if MODE.load(Ordering::Acquire) != ONLINE {
        return None;
    }
    // Hooks stopped recording (`FINISHED`); wait for those still inside, then take the
    // state (a thread that fills its batch later hands it to nobody).
    // Held to the end: a thread filling its batch meanwhile finds no analysis and waits.
    let mut locked = Locked::new();
    let mut st = locked.take()?;
    // What the threads did since their last synchronisation: mutually unordered, in any order.
    for b in buf::threads() {
        // SAFETY: a registered buffer, not marked as emptied (`own` false).
        unsafe { st.drain(b, false) };
    }
    let mut report = st.analysis.finish(&st.conv.names);
    report.events = st.events;

    // Symbolise locations and move the report onto the final location names.
    let pcs: Vec<(u64, LocId)> = st.conv.locs().collect();
    let syms = crate::symbols::symbolise(pcs.iter().map(|&(pc, _)| pc));
    let mut names = Names::new();
    for kind in [NameKind::Thread, NameKind::Var, NameKind::Lock] {
        for n in st.conv.names.table(kind).iter() {
            names.table_mut(kind).intern(n.as_bytes());
        }
    }
    let mut remap = vec![LocId::NONE; st.conv.names.table(NameKind::Loc).len()];
    let mut sorted = pcs;
    sorted.sort_unstable();
    for (pc, old) in sorted {
        let name = match syms.get(&pc) {
            Some(n) => n.clone(),
            None => format!("{:#x}", pc - 1),
        };
        remap[old.0 as usize] = LocId(names.table_mut(NameKind::Loc).intern(name.as_bytes()));
    }
    let fix = |l: &mut LocId| {
        if let Some(&n) = remap.get(l.0 as usize) {
            *l = n;
        }
    };
    for p in &mut report.pairs {
        fix(&mut p.first_event.loc);
        fix(&mut p.second_event.loc);
    }
    for e in &mut report.racy_events {
        fix(&mut e.event.loc);
    }

    let program = std::fs::read_link("/proc/self/exe")
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "program".into());
    let trace = format!("{program} (online)");
    let out = (|| {
        let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
        if path.extension().is_some_and(|e| e == "json") {
            json::write_json(&mut w, &report, &trace, &names)?;
        } else {
            text::write_report(&mut w, &report, &ReportContext::new(&trace, &names))?;
            std::io::Write::write_all(&mut w, b"\n")?;
        }
        std::io::Write::flush(&mut w)
    })();
    let races = report.racy_locations();
    Some(out.map(|()| (st.events, races)))
}
