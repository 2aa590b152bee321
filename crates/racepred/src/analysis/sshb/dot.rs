//! Text and DOT output of a diagnosis (Table 2 summary, per-pair detail, Fig. 4 / 5 graphs).
//! Formatting only: every figure comes from the [`Diagnosis`].

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::{self, Write};

use super::{Diagnosis, EdgeKind, Witness};
use crate::report::Verdict;
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

fn witness_text(d: &Diagnosis, names: &Names, w: &Witness) -> String {
    let mut s = event_label(d, names, w.from);
    for st in &w.steps {
        let arrow = match st.kind {
            EdgeKind::ProgramOrder => " -po-> ",
            EdgeKind::Sync => " -sync-> ",
            EdgeKind::Wrd => " -W(r)-> ",
        };
        s.push_str(arrow);
        s.push_str(&event_label(d, names, st.to));
    }
    if !w.choice.is_empty() {
        s.push_str("; goes away if ");
        let parts: Vec<String> = w
            .choice
            .iter()
            .map(|&(wr, rd)| {
                format!(
                    "{} reads from {}",
                    event_label(d, names, rd),
                    event_label(d, names, wr)
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
pub fn write_details(d: &Diagnosis, names: &Names, out: &mut dyn Write) -> io::Result<()> {
    let mut ws = d.witnesses.iter().peekable();
    for (i, p) in d.report.pairs.iter().enumerate() {
        let pd = d.pairs[i];
        let mut line = String::new();
        let _ = write!(
            line,
            "{} {} {} — {}: {}",
            i,
            p.kind.name(),
            event_label(d, names, p.first),
            event_label(d, names, p.second),
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
                line.push_str(&witness_text(d, names, &w));
            }
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// A DOT graph of the given pairs (indices into `report.pairs`) like Fig. 4 / 5: one
/// column per thread, program order and sync edges solid, WRD edges dotted, the race as a
/// red dashed line, the witness path of a maybe pair in bold.
pub fn write_dot(
    d: &Diagnosis,
    names: &Names,
    pairs: &[usize],
    out: &mut dyn Write,
) -> io::Result<()> {
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
            names.thread(crate::trace::ThreadId(*t))
        )?;
        for &n in ns {
            writeln!(out, "    e{n} [label=\"{}\"];", event_label(d, names, n))?;
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
