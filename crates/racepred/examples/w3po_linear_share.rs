//! Share of the complete-mode W3PO pairs that the linear mode finds, for history 1, 4, 16,
//! on generated traces; also the pair counts of lockset, tsan-hybrid and WCP racy events.
//! `cargo run --release -p racepred --example w3po_linear_share`

use racepred::analysis::{create, run_trace, AnalysisKind, AnalysisOptions};
use racepred::gen::{GenConfig, Generator};
use std::time::Instant;

fn main() {
    let configs = [
        ("default 4 thr, 10% sync", GenConfig::default()),
        (
            "8 thr, 20 vars, 20% sync",
            GenConfig {
                threads: 8,
                vars: 20,
                sync: 0.2,
                ..GenConfig::default()
            },
        ),
        (
            "4 thr, 10 vars, 30% sync, reads 0.5",
            GenConfig {
                vars: 10,
                sync: 0.3,
                reads: 0.5,
                stickiness: 0.5,
                ..GenConfig::default()
            },
        ),
    ];
    println!("| traces | complete pairs | history 1 | history 4 | history 16 |");
    println!("|---|---|---|---|---|");
    for (label, cfg) in configs {
        let mut complete = 0u64;
        let mut found = [0u64; 3];
        for seed in 0..20 {
            let t = Generator::trace(GenConfig {
                events: 20_000,
                seed,
                ..cfg.clone()
            });
            let pairs = |h: Option<usize>| {
                let opts = AnalysisOptions {
                    history: h,
                    ..AnalysisOptions::default()
                };
                let mut a = vec![create(AnalysisKind::W3po, &opts).unwrap()];
                run_trace(&t, &mut a).pop().unwrap().pair_set()
            };
            let c = pairs(None);
            complete += c.len() as u64;
            for (k, h) in [1, 4, 16].into_iter().enumerate() {
                let l = pairs(Some(h));
                assert!(l.is_subset(&c));
                found[k] += l.len() as u64;
            }
        }
        let pct = |x: u64| 100.0 * x as f64 / complete.max(1) as f64;
        println!(
            "| {label} (20 × 20k events) | {complete} | {:.1}% | {:.1}% | {:.1}% |",
            pct(found[0]),
            pct(found[1]),
            pct(found[2])
        );
    }
    // One 10^6-event trace: counts and time per analysis.
    let t = Generator::trace(GenConfig {
        events: 1_000_000,
        seed: 1,
        ..GenConfig::default()
    });
    println!("\n| analysis (10^6 events, default config) | pairs total | racy events | Mev/s |");
    println!("|---|---|---|---|");
    for (name, kind, h) in [
        ("wcp", AnalysisKind::Wcp, None),
        ("lockset", AnalysisKind::Lockset, None),
        ("tsan-hybrid", AnalysisKind::TsanHybrid, None),
        ("w3po complete", AnalysisKind::W3po, None),
        ("w3po linear 4", AnalysisKind::W3po, Some(4)),
    ] {
        let opts = AnalysisOptions {
            history: h,
            ..AnalysisOptions::default()
        };
        let start = Instant::now();
        let mut a = vec![create(kind, &opts).unwrap()];
        let r = run_trace(&t, &mut a).pop().unwrap();
        let secs = start.elapsed().as_secs_f64();
        println!(
            "| {name} | {} | {} | {:.2} |",
            r.extra
                .get("pairs_total")
                .map_or("-".to_string(), |v| v.to_string()),
            r.racy_events.len(),
            t.len() as f64 / secs / 1e6
        );
    }
}
