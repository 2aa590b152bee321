//! Text and DOT output of a diagnosis (Table 2 summary, per-pair detail, Fig. 4 / 5 graphs).
//! Formatting only: every figure comes from the [`Diagnosis`]. Events are shown as
//! `T1#w(x)@12 at File.java:3:4` (the location through the report context's table; the
//! trace line in parentheses when it is not 13).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::{self, Write};

use super::{Diagnosis, EdgeKind, Witness};
use crate::report::{ReportContext, Verdict};
use crate::trace::{Event, Names};

/// `T1#w(x)@12` style label of event `i`.
pub fn event_label(d: &Diagnosis, names: &Names, i: u64) -> String {
    let e: Event = d.event(i);
    format!(
        "{}#{}({})@{}",
        names.thread(e.thread),
        e.op.std_name(),
        names.target(&e),
        i
    )
}

/// `T1#w(x)@12 (line 14) at File.java:3:4`: the label of event `i` with its trace line
/// (when not `i + 1`) and source location (when it has one).
pub fn event_label_at(d: &Diagnosis, ctx: &ReportContext<'_>, i: u64) -> String {
    let mut s = event_label(d, ctx.names, i);
    if let Some(l) = ctx.lines.surprising(i) {
        s.push_str(&format!(" (line {l})"));
    }
    let loc = d.event(i).loc;
    if !loc.is_none() {
        s.push_str(" at ");
        s.push_str(ctx.locs().show(loc));
    }
    s
}

/// Every event a diagnosis shows (both events of each pair and the events of the witness
/// paths), for looking up their trace lines.
pub fn shown_events(d: &Diagnosis) -> Vec<u64> {
    let mut v: Vec<u64> = Vec::new();
    let mut ws = d.witnesses.iter().peekable();
    for (i, p) in d.report.pairs.iter().enumerate() {
        v.push(p.first);
        v.push(p.second);
        // The eager witnesses first, as `write_details` does; the others on demand.
        let w = match ws.peek() {
            Some(w) if w.pair == i => ws.next().cloned(),
            _ => d.witness(i),
        };
        if let Some(w) = w {
            v.push(w.from);
            v.extend(w.steps.iter().map(|s| s.to));
        }
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// The summary of Table 2.
pub fn write_summary(d: &Diagnosis, out: &mut dyn Write) -> io::Result<()> {
    let s = &d.stats;
    let x = &d.report.extra;
    writeln!(out, "events              {}", d.events())?;
    writeln!(
        out,
        "races/guaranteed    {}/{}  (location pairs {}/{})",
        s.total_pairs(),
        s.total_guaranteed(),
        x.get("location_pairs").cloned().unwrap_or_default(),
        x.get("location_pairs_guaranteed")
            .cloned()
            .unwrap_or_default()
    )?;
    writeln!(
        out,
        "read-write/G        {}/{}",
        s.pairs[2], s.guaranteed[2]
    )?;
    writeln!(
        out,
        "write-read/G        {}/{}",
        s.pairs[1], s.guaranteed[1]
    )?;
    writeln!(
        out,
        "write-write/G       {}/{}",
        s.pairs[0], s.guaranteed[0]
    )?;
    writeln!(
        out,
        "#w(r) avg / max     {:.2} / {}",
        s.avg_candidates(),
        s.max_candidates
    )?;
    writeln!(out, "lockset-flagged     {}", s.lockset_flagged)?;
    writeln!(
        out,
        "graph               {} nodes, {} edges ({} po, {} sync, {} wrd), {} sccs (largest {})",
        s.nodes, s.edges, s.po_edges, s.sync_edges, s.wrd_edges, s.sccs, s.largest_scc
    )?;
    writeln!(
        out,
        "phase 1 + 2         {:.3}s + {:.3}s",
        s.phase1.as_secs_f64(),
        s.phase2.as_secs_f64()
    )?;
    if s.inconsistent_witnesses > 0 {
        writeln!(
            out,
            "witnesses with a WRD cycle (Prop. 6 gap): {} of {} checked",
            s.inconsistent_witnesses, s.witnesses_checked
        )?;
    }
    Ok(())
}

fn witness_text(d: &Diagnosis, ctx: &ReportContext<'_>, w: &Witness) -> String {
    let mut s = event_label_at(d, ctx, w.from);
    for st in &w.steps {
        let arrow = match st.kind {
            EdgeKind::ProgramOrder => " -po-> ",
            EdgeKind::Sync => " -sync-> ",
            EdgeKind::Wrd => " -W(r)-> ",
        };
        s.push_str(arrow);
        s.push_str(&event_label_at(d, ctx, st.to));
    }
    if !w.choice.is_empty() {
        s.push_str("; goes away if ");
        let parts: Vec<String> = w
            .choice
            .iter()
            .map(|&(wr, rd)| {
                format!(
                    "{} reads from {}",
                    event_label(d, ctx.names, rd),
                    event_label(d, ctx.names, wr)
                )
            })
            .collect();
        s.push_str(&parts.join(", "));
    }
    if w.consistent == Some(false) {
        s.push_str(" [choice cyclic with HB: no ∃SHB instance]");
    }
    s
}

/// One line per pair: kind, events, verdict, lockset flag, and the witness of maybe pairs.
pub fn write_details(
    d: &Diagnosis,
    ctx: &ReportContext<'_>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut ws = d.witnesses.iter().peekable();
    for (i, p) in d.report.pairs.iter().enumerate() {
        let pd = d.pairs[i];
        let mut line = String::new();
        let _ = write!(
            line,
            "{} {} {} — {}: {}",
            i,
            p.kind.name(),
            event_label_at(d, ctx, p.first),
            event_label_at(d, ctx, p.second),
            match pd.verdict {
                Verdict::Guaranteed => "guaranteed",
                Verdict::Maybe => "maybe",
            }
        );
        if pd.shared_lock {
            line.push_str(" (common lock: likely false positive, §6.3)");
        }
        if pd.verdict == Verdict::Maybe {
            let w = match ws.peek() {
                Some(w) if w.pair == i => ws.next().cloned(),
                _ => d.witness(i),
            };
            if let Some(w) = w {
                line.push_str("\n    path: ");
                line.push_str(&witness_text(d, ctx, &w));
            }
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// Escapes text for a double-quoted DOT string.
fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A node's label: the event on the first line, its source location (and trace line when
/// not N + 1) on the second.
fn dot_label(d: &Diagnosis, ctx: &ReportContext<'_>, i: u64) -> String {
    let mut s = dot_escape(&event_label(d, ctx.names, i));
    let loc = d.event(i).loc;
    let mut second = Vec::new();
    if !loc.is_none() {
        second.push(dot_escape(ctx.locs().show(loc)));
    }
    if let Some(l) = ctx.lines.surprising(i) {
        second.push(format!("line {l}"));
    }
    if !second.is_empty() {
        s.push_str("\\n");
        s.push_str(&second.join(", "));
    }
    s
}

/// A DOT graph of the given pairs (indices into `report.pairs`) like Fig. 4 / 5: one
/// column per thread, program order and sync edges solid, WRD edges dotted, the race as a
/// red dashed line, the witness path of a maybe pair in bold.
pub fn write_dot(
    d: &Diagnosis,
    ctx: &ReportContext<'_>,
    pairs: &[usize],
    out: &mut dyn Write,
) -> io::Result<()> {
    let names = ctx.names;
    let mut nodes: BTreeSet<u64> = BTreeSet::new();
    let mut edges: BTreeSet<(u64, u64, EdgeKind)> = BTreeSet::new();
    let mut races = Vec::new();
    for &i in pairs {
        let Some(p) = d.report.pairs.get(i) else {
            continue;
        };
        nodes.insert(p.first);
        nodes.insert(p.second);
        races.push((p.first, p.second, d.pairs[i].verdict));
        if let Some(w) = d.witness(i) {
            nodes.insert(w.from);
            for st in &w.steps {
                nodes.insert(st.to);
                edges.insert((st.from, st.to, st.kind));
            }
        }
    }
    writeln!(out, "digraph sshb {{")?;
    writeln!(out, "  rankdir=TB; node [shape=box, fontname=monospace];")?;
    // One cluster per thread, nodes in trace order, invisible edges keep the order.
    let mut by_thread: std::collections::BTreeMap<u32, Vec<u64>> = Default::default();
    for &n in &nodes {
        by_thread.entry(d.event(n).thread.0).or_default().push(n);
    }
    for (t, ns) in &by_thread {
        writeln!(out, "  subgraph cluster_t{t} {{")?;
        writeln!(
            out,
            "    label=\"{}\";",
            dot_escape(names.thread(crate::trace::ThreadId(*t)))
        )?;
        for &n in ns {
            writeln!(out, "    e{n} [label=\"{}\"];", dot_label(d, ctx, n))?;
        }
        for w in ns.windows(2) {
            if !edges.contains(&(w[0], w[1], EdgeKind::ProgramOrder)) {
                writeln!(out, "    e{} -> e{} [color=gray];", w[0], w[1])?;
            }
        }
        writeln!(out, "  }}")?;
    }
    for &(a, b, kind) in &edges {
        let style = match kind {
            EdgeKind::ProgramOrder => "style=bold",
            EdgeKind::Sync => "style=bold, label=\"HB\"",
            EdgeKind::Wrd => "style=\"dotted,bold\", label=\"W(r)\"",
        };
        writeln!(out, "  e{a} -> e{b} [{style}];")?;
    }
    for (a, b, v) in races {
        let label = match v {
            Verdict::Guaranteed => "guaranteed",
            Verdict::Maybe => "maybe",
        };
        writeln!(
            out,
            "  e{a} -> e{b} [dir=none, style=dashed, color=red, constraint=false, label=\"{label}\"];"
        )?;
    }
    writeln!(out, "}}")
}
