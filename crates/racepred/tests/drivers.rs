//! The drivers agree: `run` (one thread), `run_pipelined` with one analysis (a reader thread)
//! and with several (a thread per analysis) give the same reports, the same event counts, the
//! same lenient-mode violations and the same strict-mode error, on traces longer than one
//! block and with side data (mbegin address sets).

use racepred::analysis::{
    create, run, run_pipelined, AnalysisKind, AnalysisOptions, RunSummary, Validation,
};
use racepred::gen::{GenConfig, Generator};
use racepred::trace::std_format::StdReader;
use racepred::trace::{EventSource, Trace};

/// Reports (as debug text) and the summary of one driver over `trace`.
fn drive(
    trace: &Trace,
    kinds: &[AnalysisKind],
    validation: Validation,
    driver: &str,
) -> Result<(Vec<String>, u64, Vec<String>), String> {
    let opts = AnalysisOptions {
        history: Some(4),
        ..AnalysisOptions::default()
    };
    let mut analyses: Vec<_> = kinds.iter().map(|&k| create(k, &opts).unwrap()).collect();
    let mut src = trace.source();
    let mut ticks = Vec::new();
    let summary: RunSummary = match driver {
        "run" => run(&mut src, &mut analyses, validation, |e, _| ticks.push(e)),
        _ => run_pipelined(&mut src, &mut analyses, validation, |e, _| ticks.push(e)),
    }
    .map_err(|e| e.to_string())?;
    let names = src.names().clone();
    let reports = analyses
        .iter_mut()
        .map(|a| format!("{:?}", a.finish(&names)))
        .collect();
    let violations = summary
        .violations
        .iter()
        .map(|v| v.to_error().to_string())
        .collect();
    assert!(
        ticks.windows(2).all(|w| w[0] < w[1]),
        "progress goes forward"
    );
    Ok((reports, summary.events, violations))
}

fn all_drivers_agree(trace: &Trace, validation: Validation) {
    let kinds = [
        AnalysisKind::Hb,
        AnalysisKind::FastTrack,
        AnalysisKind::Shb,
        AnalysisKind::Wcp,
        AnalysisKind::Lockset,
        AnalysisKind::W3po,
        AnalysisKind::Rdit,
    ];
    let one = drive(trace, &kinds, validation, "run");
    let many = drive(trace, &kinds, validation, "pipelined");
    assert_eq!(one, many, "several analyses, a thread each");
    for k in kinds {
        let alone = drive(trace, &[k], validation, "pipelined");
        let seq = drive(trace, &[k], validation, "run");
        assert_eq!(seq, alone, "{} alone behind a reader thread", k.name());
    }
}

#[test]
fn generated_traces_over_several_blocks() {
    for seed in 0..3 {
        let t = Generator::trace(GenConfig {
            events: 30_000,
            threads: 4,
            vars: 50,
            locks: 3,
            seed,
            ..GenConfig::default()
        });
        all_drivers_agree(&t, Validation::Strict);
    }
}

/// A trace with address sets and, after more than one block of events, a broken lock rule.
fn with_violation() -> Trace {
    let mut text = String::from("T0|fork(T1)|1\n");
    for i in 0..20_000 {
        if i % 997 == 0 {
            text.push_str(&format!("T1|mbegin(m;a{},b)|2\nT1|mend(m)|3\n", i % 5));
        }
        text.push_str(&format!("T{}|w(V{})|{}\n", i % 2, i % 7, 10 + i % 13));
    }
    text.push_str("T0|acq(L0)|4\nT1|acq(L0)|5\nT1|w(V1)|6\n");
    Trace::read_from(&mut StdReader::new(text.as_bytes())).unwrap()
}

#[test]
fn side_data_and_violations() {
    let t = with_violation();
    all_drivers_agree(&t, Validation::Lenient);
    all_drivers_agree(&t, Validation::Strict);
    let err = drive(&t, &[AnalysisKind::Hb], Validation::Strict, "pipelined").unwrap_err();
    assert!(err.contains("lock-held"), "{err}");
}
