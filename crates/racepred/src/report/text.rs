//! The report for people: a headline, one line per distinct location pair (most frequent
//! first, with the event indices of its first occurrence), or per racy location for
//! racy-event analyses, then the analysis's notes and figures. Formatting only.

use std::io::{self, Write};

use super::{PairKind, RaceReport, ReportContext};
use crate::trace::{Event, Names};

/// Racy events grouped by location and operation for display (a read and a write at one
/// location are two lines, so each line names what its events do): (first event, count,
/// its index), most frequent first, ties by first occurrence. A report grouped by location
/// already ([`RaceReport::racy_counts`]) gives its groups with their counts.
pub(crate) fn racy_location_groups(r: &RaceReport) -> Vec<(Event, usize, u64)> {
    let log = super::RacyLog::regroup(r);
    let mut groups: Vec<(Event, usize, u64)> = (log.events.iter().zip(&log.counts))
        .map(|(e, &c)| (e.event, c as usize, e.index))
        .collect();
    groups.sort_by_key(|g| (std::cmp::Reverse(g.1), g.2));
    groups
}

/// Distinct locations among [`racy_location_groups`]' groups: [`RaceReport::racy_locations`]
/// without another pass over the racy events.
pub(crate) fn group_locations(groups: &[(Event, usize, u64)]) -> usize {
    let mut seen = super::DenseSet::default();
    groups
        .iter()
        .filter(|g| seen.insert(super::place(&g.0)))
        .count()
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Writes `report` as text with raw location names.
pub fn write_text<W: Write + ?Sized>(
    w: &mut W,
    report: &RaceReport,
    trace: &str,
    names: &Names,
) -> io::Result<()> {
    write_report(w, report, &ReportContext::new(trace, names))
}

/// `event N`, with ` (line L)` when the event is not on line N + 1 of the trace file.
fn event_at(ctx: &ReportContext<'_>, index: u64) -> String {
    match ctx.lines.surprising(index) {
        Some(l) => format!("event {index} (line {l})"),
        None => format!("event {index}"),
    }
}

/// `VAR at LOC -> LOC  (first: event N in T, event M in U)`: a pair in a report line.
fn pair_at(ctx: &ReportContext<'_>, p: &super::RacePair) -> String {
    let (var, [l0, l1], [t0, t1]) = ctx.pair_places(p);
    let (e0, e1) = (event_at(ctx, p.first), event_at(ctx, p.second));
    format!("{var} at {l0} -> {l1}  (first: {e0} in {t0}, {e1} in {t1})")
}

/// The `locations: FILE (N of M trace locations mapped)` line, when a table is in use.
fn write_table_line<W: Write + ?Sized>(w: &mut W, ctx: &ReportContext<'_>) -> io::Result<()> {
    if let (Some(name), Some(t)) = (ctx.table_name(), ctx.locations) {
        writeln!(
            w,
            "locations: {name} ({} of {} trace locations mapped)",
            t.coverage(ctx.names),
            ctx.names.locs.len()
        )?;
    }
    Ok(())
}

/// Writes several reports of one trace: a `locations: FILE` header line when a location
/// table is in use, then each report, separated by blank lines.
pub fn write_reports<W: Write + ?Sized>(
    w: &mut W,
    reports: &[RaceReport],
    ctx: &ReportContext<'_>,
) -> io::Result<()> {
    write_table_line(w, ctx)?;
    for (i, r) in reports.iter().enumerate() {
        if i > 0 {
            writeln!(w)?;
        }
        write_report(w, r, ctx)?;
    }
    Ok(())
}

/// Writes `report` as text: locations through the context's table, `(line L)` after event
/// numbers whose trace line is not N + 1.
pub fn write_report<W: Write + ?Sized>(
    w: &mut W,
    report: &RaceReport,
    ctx: &ReportContext<'_>,
) -> io::Result<()> {
    let r = report;
    let names = ctx.names;
    let locs = ctx.locs();
    let trace = ctx.trace_path;
    let of = format!(
        "in {} of {trace}",
        plural(r.events as usize, "event", "events")
    );
    match (&r.incomplete, r.has_races()) {
        (None, false) => writeln!(w, "{}: no races {of}", r.analysis)?,
        // Not "no races": the part not examined may hold some.
        (Some(why), false) => writeln!(
            w,
            "{}: incomplete, no race found in the part examined {of}: {why}",
            r.analysis
        )?,
        (Some(why), true) => writeln!(
            w,
            "{}: incomplete, the races below are not all: {why}",
            r.analysis
        )?,
        (None, true) => {}
    }
    // A shown access without a location: say what `-` and its grouping mean.
    let mut located_by_variable = false;
    if !r.pairs.is_empty() {
        let groups = r.location_groups();
        let (ww, wr, rw) = r.kind_counts();
        if r.is_grouped() {
            // Counts are racing accesses per location pair, not pairs.
            writeln!(
                w,
                "{}: {} ({} {ww}, {} {wr}, {} {rw}), {} {of}",
                r.analysis,
                plural(groups.len(), "location pair", "location pairs"),
                PairKind::WriteWrite.name(),
                PairKind::WriteRead.name(),
                PairKind::ReadWrite.name(),
                plural(
                    r.racing_accesses() as usize,
                    "racing access",
                    "racing accesses"
                ),
            )?;
        } else {
            writeln!(
                w,
                "{}: {} at {} ({} {ww}, {} {wr}, {} {rw}) {of}",
                r.analysis,
                plural(r.pairs.len(), "race pair", "race pairs"),
                plural(groups.len(), "location pair", "location pairs"),
                PairKind::WriteWrite.name(),
                PairKind::WriteRead.name(),
                PairKind::ReadWrite.name(),
            )?;
        }
        let width = groups.first().map_or(1, |g| g.count.to_string().len());
        for g in &groups {
            let p = &r.pairs[g.first_pair];
            write!(
                w,
                "  {:>width$}x  {:<11}  {}",
                g.count,
                p.kind.name(),
                pair_at(ctx, p)
            )?;
            if let Some(v) = p.verdict {
                write!(w, "  [{}]", verdict_name(v))?;
            }
            writeln!(w)?;
            write_stack(w, ctx, p.first)?;
            write_stack(w, ctx, p.second)?;
            located_by_variable |= p.first_event.loc.is_none() || p.second_event.loc.is_none();
        }
    }
    if !r.racy_events.is_empty() {
        let groups = racy_location_groups(r);
        writeln!(
            w,
            "{}: {} at {} {of}",
            r.analysis,
            plural(r.racy_total() as usize, "racy event", "racy events"),
            plural(group_locations(&groups), "location", "locations"),
        )?;
        let width = groups.first().map_or(1, |g| g.1.to_string().len());
        for (ev, count, first) in &groups {
            writeln!(
                w,
                "  {count:>width$}x  {}({}) at {}  (first: {} in {})",
                ev.op.std_name(),
                names.var(ev.var()),
                locs.show(ev.loc),
                event_at(ctx, *first),
                names.thread(ev.thread),
            )?;
            write_stack(w, ctx, *first)?;
            located_by_variable |= ev.loc.is_none();
        }
    }
    if located_by_variable {
        writeln!(
            w,
            "  note: `-`: no source location (CSV traces have none); such accesses are \
             grouped, and counted as locations, by variable"
        )?;
    }
    for n in &r.notes {
        writeln!(w, "  note: {n}")?;
    }
    for (k, v) in &r.extra {
        // Structured extras (lists, objects) are for JSON; the CLI prints them its own way.
        if !v.is_array() && !v.is_object() {
            writeln!(w, "  {k}: {v}")?;
        }
    }
    Ok(())
}

/// `      event N called from FRAME < FRAME …`: the call sites of a shown event, when the
/// trace's calling contexts are known and the event has some.
fn write_stack<W: Write + ?Sized>(
    w: &mut W,
    ctx: &ReportContext<'_>,
    index: u64,
) -> io::Result<()> {
    let frames = ctx.stack(index);
    if frames.is_empty() {
        return Ok(());
    }
    write!(w, "      event {index} called from {}", frames[0])?;
    for f in &frames[1..] {
        write!(w, " < {f}")?;
    }
    writeln!(w)
}

pub(crate) fn verdict_name(v: super::Verdict) -> &'static str {
    match v {
        super::Verdict::Guaranteed => "guaranteed",
        super::Verdict::Maybe => "maybe",
    }
}

/// The text report as a `String`.
pub fn to_text(report: &RaceReport, trace: &str, names: &Names) -> String {
    let mut out = Vec::new();
    write_text(&mut out, report, trace, names).expect("writing to a Vec");
    String::from_utf8(out).expect("UTF-8")
}

/// Writes the verdicts of `racepred check`: a summary line, then one line per location pair
/// (races first), with who decided it, its first instance and its witness or reason.
pub fn write_verdicts<W: Write + ?Sized>(
    w: &mut W,
    v: &crate::verdict::Verdicts,
    ctx: &ReportContext<'_>,
    events: u64,
) -> io::Result<()> {
    use crate::verdict::VerdictKind;
    write_table_line(w, ctx)?;
    let (race, no, unknown) = v.counts();
    writeln!(
        w,
        "check: {} in {} of {}: {race} race, {no} no race, {unknown} unknown",
        plural(v.warnings.len(), "location pair", "location pairs"),
        plural(events as usize, "event", "events"),
        ctx.trace_path
    )?;
    for x in &v.warnings {
        let p = &x.pair;
        writeln!(
            w,
            "  {:<8} {:<11} {}",
            x.verdict.name(),
            p.kind.name(),
            pair_at(ctx, p)
        )?;
        match x.verdict {
            VerdictKind::Race => match &x.witness {
                Some(f) => writeln!(w, "           by {}; witness {f}", x.by)?,
                None => writeln!(w, "           by {}", x.by)?,
            },
            VerdictKind::NoRace => writeln!(w, "           proof: {}", x.by)?,
            VerdictKind::Unknown => {
                writeln!(w, "           why: {}", x.reason.as_deref().unwrap_or("-"))?
            }
        }
    }
    for n in &v.notes {
        writeln!(w, "  note: {n}")?;
    }
    if unknown > 0 {
        writeln!(
            w,
            "  incomplete: {unknown} location pair(s) have no verdict (see why above)"
        )?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::written;
    use crate::report::{EventLines, RacePair, RacyEvent, ReportKind};
    use crate::trace::{LocId, Op, ThreadId, Trace};

    /// `s` starts with the lines `want`.
    fn assert_first_lines(s: &str, want: &[&str]) {
        let lines: Vec<&str> = s.lines().take(want.len()).collect();
        assert_eq!(lines, want, "{s}");
    }

    /// A small trace with named locations and a pair report over it.
    pub(crate) fn sample() -> (Trace, RaceReport) {
        let ev = |t, op, x, l| Event::new(ThreadId(t), op, x, LocId(l));
        let t = Trace::from_events(vec![
            ev(0, Op::Write, 0, 1),
            ev(1, Op::Read, 0, 2),
            ev(0, Op::Write, 0, 1),
            ev(1, Op::Read, 0, 2),
            ev(1, Op::Write, 1, 3),
            ev(0, Op::Write, 1, 4),
        ]);
        let mut r = RaceReport::new("hbp", ReportKind::Pairs);
        r.events = t.len() as u64;
        for (a, b) in [(0, 1), (2, 3), (4, 5), (1, 2)] {
            r.pairs.push(RacePair::new(
                a,
                t.events[a as usize],
                b,
                t.events[b as usize],
            ));
        }
        r.racy_events = [1, 3, 5]
            .iter()
            .map(|&i| RacyEvent {
                index: i,
                event: t.events[i as usize],
            })
            .collect();
        r.notes.push("complete".into());
        r.normalize();
        (t, r)
    }

    #[test]
    fn text_groups_most_frequent_first() {
        let (t, r) = sample();
        let s = to_text(&r, "x.std", &t.names);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[0],
            "hbp: 4 race pairs at 3 location pairs (write-write 1, write-read 2, read-write 1) in 6 events of x.std"
        );
        assert_eq!(
            lines[1],
            "  2x  write-read   V0 at 1 -> 2  (first: event 0 in T0, event 1 in T1)"
        );
        assert_eq!(
            lines[2],
            "  1x  read-write   V0 at 2 -> 1  (first: event 1 in T1, event 2 in T0)"
        );
        assert_eq!(
            lines[3],
            "  1x  write-write  V1 at 3 -> 4  (first: event 4 in T1, event 5 in T0)"
        );
        assert_eq!(
            lines[4],
            "hbp: 3 racy events at 2 locations in 6 events of x.std"
        );
        assert_eq!(lines[5], "  2x  r(V0) at 2  (first: event 1 in T1)");
        assert_eq!(lines[7], "  note: complete");
        // A read and a write at one location: one location, two lines.
        let mut r2 = RaceReport::new("fasttrack", ReportKind::RacyEvents);
        r2.events = t.len() as u64;
        r2.racy_events = [1, 3, 4]
            .iter()
            .map(|&i| {
                let e = t.events[i as usize];
                RacyEvent {
                    index: i,
                    event: Event::new(e.thread, e.op, 0, LocId(2)),
                }
            })
            .collect();
        let s = to_text(&r2, "x.std", &t.names);
        assert_first_lines(
            &s,
            &[
                "fasttrack: 3 racy events at 1 location in 6 events of x.std",
                "  2x  r(V0) at 2  (first: event 1 in T1)",
                "  1x  w(V0) at 2  (first: event 4 in T1)",
            ],
        );
        let empty = RaceReport::new("hb", ReportKind::RacyEvents);
        assert_eq!(
            to_text(&empty, "y", &t.names),
            "hb: no races in 0 events of y\n"
        );
    }

    #[test]
    fn text_groups_accesses_without_location_by_variable() {
        // A CSV trace: no locations. x races twice (one group), y once.
        let t = Trace::read_from(&mut crate::trace::csv::CsvReader::new(
            "T0,T1\nw(x),\n,w(x)\nw(x),\nw(y),\n,r(y)\n".as_bytes(),
        ))
        .unwrap();
        let a = crate::analysis::create(crate::analysis::AnalysisKind::Hbp, &Default::default())
            .unwrap();
        let r = crate::analysis::run_one(&t, a);
        let mut ctx = ReportContext::new("t.csv", &t.names);
        ctx.lines = EventLines::of_trace(&t.lines);
        let s = written(|out| write_report(out, &r, &ctx));
        assert_first_lines(&s, &[
                "hbp: 3 race pairs at 2 location pairs (write-write 2, write-read 1, read-write 0) in 5 events of t.csv",
                "  2x  write-write  x at - -> -  (first: event 0 (line 2) in T0, event 1 (line 3) in T1)",
                "  1x  write-read   y at - -> -  (first: event 3 (line 5) in T0, event 4 (line 6) in T1)",
                "  note: `-`: no source location (CSV traces have none); such accesses are grouped, and counted as locations, by variable",
        ]);
        // With locations, no such note.
        let (t, r) = sample();
        assert!(!to_text(&r, "x.std", &t.names).contains("no source location"));
    }

    #[test]
    fn text_shows_table_sources_and_surprising_lines() {
        use crate::report::{EventLines, LocationTable};
        let (t, r) = sample();
        let table = LocationTable::parse("1\tA.java:5:2\n2\tB.java:7:24\n3\tclinit:C\n").unwrap();
        // A header comment: event i is on line i + 2.
        let lines: Vec<u64> = (0..t.len() as u64).map(|i| i + 2).collect();
        let mut ctx = ReportContext::new("x.std", &t.names);
        ctx.locations = Some(&table);
        ctx.lines = EventLines::of_trace(&lines);
        let s = written(|out| write_reports(out, std::slice::from_ref(&r), &ctx));
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[0],
            "locations: (in memory) (3 of 5 trace locations mapped)"
        );
        assert_eq!(
            lines[2],
            "  2x  write-read   V0 at A.java:5:2 -> B.java:7:24  (first: event 0 (line 2) in T0, event 1 (line 3) in T1)"
        );
        // Location 4 is not in the table: its name stays.
        assert_eq!(
            lines[4],
            "  1x  write-write  V1 at clinit:C -> 4  (first: event 4 (line 6) in T1, event 5 (line 7) in T0)"
        );
        assert_eq!(
            lines[6],
            "  2x  r(V0) at B.java:7:24  (first: event 1 (line 3) in T1)"
        );
        // One event per line: no line numbers.
        ctx.lines = EventLines::OnePerLine;
        ctx.locations = None;
        assert_eq!(
            written(|out| write_reports(out, std::slice::from_ref(&r), &ctx)),
            to_text(&r, "x.std", &t.names)
        );
        assert_eq!(r.shown_events(), vec![0, 1, 2, 4, 5]);
    }
}
