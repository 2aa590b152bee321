//! Online mode (`racepred record --online ANALYSIS`): the analysis runs inside the program,
//! event by event, instead of a trace being written; its report is written at exit.
//!
//! Every hook that would append a record to the thread's buffer instead takes one global
//! spin lock, turns the record into an event ([`Converter`]) and pushes it to the analysis.
//! The lock's acquisition order is the trace order: it is taken where the buffered mode
//! takes its stamp, so the argument of [`crate::buf`] carries over (a lock's `acq` after
//! the lock call returns and its `rel` before the unlock call, both while it is held; the
//! `vr` of an atomic after the `vw` it read). Nothing is buffered: memory is the analysis's
//! state, so a long run costs no more memory than a short one with the same variables.
//!
//! Configuration (set by `racepred record`, read at the first event):
//! `$RACEPRED_ONLINE` = `fasttrack` | `pacer` | `hb` | `shb`; PACER's
//! `$RACEPRED_ONLINE_RATE` (default 1), `$RACEPRED_ONLINE_PERIOD` (operations per sampling
//! period, default PACER's) and `$RACEPRED_ONLINE_SEED`. The report goes where the trace
//! would have gone ([`crate::finish`]), as JSON if the name ends in `.json`, else as text.
//!
//! Locations are named by return address while the program runs and symbolised at the end
//! (two addresses with the same `file:line:col` become one location).
//!
//! The lock makes every event a critical section: recording (which stamps with one atomic
//! add) is cheaper for programs with many threads; PACER's sampling makes the analysis step
//! cheap outside sampling periods, not the lock.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::ffi::CStr;
use std::path::Path;

use racepred::analysis::{create, Analysis, AnalysisKind, AnalysisOptions, Side};
use racepred::analysis::pacer::PacerConfig;
use racepred::report::{json, text, ReportContext};
use racepred::trace::{LocId, NameKind, Names};

use crate::buf::{self, Kind, Rec};
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

struct Slot(UnsafeCell<Option<State>>);
// Only touched under `LOCK`.
unsafe impl Sync for Slot {}
static STATE: Slot = Slot(UnsafeCell::new(None));

struct Guard;

fn lock() -> Guard {
    let mut spins = 0u32;
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        spins += 1;
        if spins < 64 {
            core::hint::spin_loop();
        } else {
            unsafe { libc::sched_yield() };
        }
    }
    Guard
}

impl Drop for Guard {
    fn drop(&mut self) {
        LOCK.store(false, Ordering::Release);
    }
}

fn getenv(name: &CStr) -> Option<&'static str> {
    let p = unsafe { libc::getenv(name.as_ptr()) };
    if p.is_null() {
        return None;
    }
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

/// The analyses that can run online: the streaming ones with racy-event reports.
pub const ANALYSES: [AnalysisKind; 4] = [
    AnalysisKind::FastTrack,
    AnalysisKind::Pacer,
    AnalysisKind::Hb,
    AnalysisKind::Shb,
];

#[cold]
#[inline(never)]
fn decide() -> u8 {
    let _g = lock();
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
                    "racepred-rt: RACEPRED_ONLINE={name}: not an online analysis (fasttrack, pacer, hb, shb)\n"
                )
                .as_bytes(),
            )
        });
    let opts = AnalysisOptions {
        rate: number(c"RACEPRED_ONLINE_RATE", 1.0),
        period: number(c"RACEPRED_ONLINE_PERIOD", PacerConfig::DEFAULT_PERIOD),
        seed: number(c"RACEPRED_ONLINE_SEED", 0),
        ..AnalysisOptions::default()
    };
    let analysis = create(kind, &opts).unwrap_or_else(|e| {
        buf::die(format!("racepred-rt: {e}\n").as_bytes())
    });
    unsafe {
        *STATE.0.get() = Some(State {
            conv: Converter::new(),
            analysis,
            events: 0,
        })
    };
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

/// Pushes events `addr, addr + step, …` (`count` of them) of thread `tid` to the analysis.
pub fn events(tid: u32, kind: Kind, space: u8, addr: usize, step: usize, count: usize, pc: usize) {
    let _g = lock();
    let Some(st) = (unsafe { &mut *STATE.0.get() }) else {
        return;
    };
    for i in 0..count {
        let r = Rec::new(0, kind, space, (addr + i * step) as u64, pc as u64);
        if let Some(ev) = st.conv.convert(tid, &r) {
            st.analysis.on_event(st.events, &ev, Side::default());
            st.events += 1;
        }
    }
}

/// At exit, in online mode: finishes the analysis and writes its report to `path`; returns
/// (events, races) or `None` when not in online mode.
pub fn finish(path: &Path) -> Option<std::io::Result<(u64, usize)>> {
    if MODE.load(Ordering::Acquire) != ONLINE {
        return None;
    }
    // Hooks stopped recording (`FINISHED`); wait for those still inside.
    let _g = lock();
    let st = unsafe { (*STATE.0.get()).as_mut()? };
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
