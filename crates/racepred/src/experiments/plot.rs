//! Plots of the PACER sampling experiment (the paper's Figures 3–5) as SVG, with
//! `plotters` (SVG backend: text is written as SVG `<text>`, no system fonts needed).
//!
//! Only formatting: the numbers come from [`Experiment`].

use std::path::Path;

use plotters::prelude::*;

use super::pacer_trials::{Experiment, RatePoint};
use crate::error::{Error, Result};

/// Writes detection rate vs sampling rate: dynamic races (Figure 3), distinct races
/// (Figure 4), each distinct race as a small point (Figure 5), and the ideal `y = x`.
/// The path must end in `.svg`.
pub fn write_detection_plot(path: &Path, exp: &Experiment) -> Result<()> {
    if path.extension().and_then(|e| e.to_str()) != Some("svg") {
        return Err(Error::invalid(format!(
            "plot `{}`: only SVG output is supported (use a .svg name)",
            path.display()
        )));
    }
    let svg = detection_plot_svg(exp)?;
    crate::trace::write::write_atomic(path, svg.as_bytes())
}

/// The plot as an SVG document.
pub fn detection_plot_svg(exp: &Experiment) -> Result<String> {
    let mut out = String::new();
    draw(&mut out, exp).map_err(|e| Error::invalid(format!("plot: {e}")))?;
    Ok(out)
}

/// `n thing` or `n things`.
fn count(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// Draws one legend entry's marker at (x, y) of the legend strip.
type LegendMark<'a> = dyn Fn(
        i32,
        i32,
        &DrawingArea<SVGBackend, plotters::coord::Shift>,
    ) -> std::result::Result<(), Box<dyn std::error::Error>>
    + 'a;

/// Height of the legend strip below the plot area (pixels).
const LEGEND_H: u32 = 56;

fn draw(out: &mut String, exp: &Experiment) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::with_string(out, (720, 540 + LEGEND_H)).into_drawing_area();
    root.fill(&WHITE)?;
    let (plot_area, legend_area) = root.split_vertically(540);
    // Sampling rates span orders of magnitude (0.01 … 1): a log axis keeps the small ones
    // apart. Rate 0 has no place on it and is left out (said in the caption).
    let mut rates: Vec<f64> = exp
        .points
        .iter()
        .map(|p| p.rate)
        .filter(|&r| r > 0.0)
        .collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    let lo = rates.first().copied().unwrap_or(0.01);
    let hi = rates.last().copied().unwrap_or(1.0).max(lo * 10.0);
    let (xlo, xhi) = (lo / 1.5, hi * 1.5);
    let zero_left_out = exp.points.iter().any(|p| p.rate <= 0.0);
    let caption = format!(
        "PACER detection rate vs sampling rate ({}, {}){}",
        count(exp.dynamic_races.len(), "dynamic race"),
        count(exp.distinct.len(), "distinct race"),
        if zero_left_out {
            "; r = 0 not shown"
        } else {
            ""
        }
    );
    let keys = if rates.is_empty() {
        vec![0.01, 0.1, 1.0]
    } else {
        rates.clone()
    };
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(caption, ("sans-serif", 17))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d((xlo..xhi).log_scale().with_key_points(keys), 0.0..1.02f64)?;
    chart
        .configure_mesh()
        .x_desc("sampling rate r (log scale)")
        .y_desc("detection rate")
        .x_label_formatter(&|x| format!("{x}"))
        .draw()?;
    let gray = RGBColor(120, 120, 120).mix(0.5);
    let ideal = BLACK.mix(0.4);
    // y = r, sampled along the log axis (a curve there), up to r = 1.
    let steps = 100;
    let ideal_pts: Vec<(f64, f64)> = (0..=steps)
        .map(|i| xlo * (xhi / xlo).powf(i as f64 / steps as f64))
        .filter(|&x| x <= 1.0)
        .map(|x| (x, x))
        .collect();
    chart.draw_series(LineSeries::new(ideal_pts, ideal))?;
    let shown = |p: &&RatePoint| p.rate > 0.0;
    for p in exp.points.iter().filter(shown) {
        chart.draw_series(
            p.per_distinct
                .iter()
                .map(|&f| Circle::new((p.rate, f), 2, gray.filled())),
        )?;
    }
    let finite = |v: f64| if v.is_finite() { v } else { 0.0 };
    // (rate, detection) of the points shown, for one detection measure.
    let series = |detection: fn(&RatePoint) -> f64| -> Vec<(f64, f64)> {
        let points = exp.points.iter().filter(shown);
        points.map(|p| (p.rate, finite(detection(p)))).collect()
    };
    let dynamic = series(|p| p.dynamic_detection);
    let distinct = series(|p| p.distinct_detection);
    chart.draw_series(LineSeries::new(dynamic.clone(), &BLUE))?;
    chart.draw_series(dynamic.iter().map(|&p| Circle::new(p, 4, BLUE.filled())))?;
    chart.draw_series(LineSeries::new(distinct.clone(), &RED))?;
    chart.draw_series(
        distinct
            .iter()
            .map(|&p| TriangleMarker::new(p, 5, RED.filled())),
    )?;
    // The legend sits below the plot, where it cannot hide a point.
    let font = ("sans-serif", 14).into_font();
    let entries: [(&str, &LegendMark<'_>); 4] = [
        ("ideal (y = r)", &|x, y, a| {
            a.draw(&PathElement::new(vec![(x, y), (x + 24, y)], ideal))?;
            Ok(())
        }),
        ("dynamic races (Fig. 3)", &|x, y, a| {
            a.draw(&PathElement::new(vec![(x, y), (x + 24, y)], BLUE))?;
            a.draw(&Circle::new((x + 12, y), 4, BLUE.filled()))?;
            Ok(())
        }),
        ("distinct races (Fig. 4)", &|x, y, a| {
            a.draw(&PathElement::new(vec![(x, y), (x + 24, y)], RED))?;
            a.draw(&TriangleMarker::new((x + 12, y), 5, RED.filled()))?;
            Ok(())
        }),
        ("each distinct race (Fig. 5)", &|x, y, a| {
            a.draw(&Circle::new((x + 12, y), 2, gray.filled()))?;
            Ok(())
        }),
    ];
    for (i, (label, mark)) in entries.iter().enumerate() {
        let (col, row) = ((i % 2) as i32, (i / 2) as i32);
        let (x, y) = (70 + col * 320, 14 + row * 22);
        mark(x, y, &legend_area)?;
        legend_area.draw(&Text::new(label.to_string(), (x + 32, y - 7), font.clone()))?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::run_trace;
    use crate::experiments::pacer_trials::{experiment, ExperimentConfig};
    use crate::gen::{GenConfig, Generator};

    #[test]
    fn writes_svg() {
        let tr = Generator::trace(GenConfig {
            events: 500,
            seed: 3,
            ..GenConfig::default()
        });
        // Baseline: PACER at rate 1 (FastTrack itself lives in another module).
        let mut a: Vec<Box<dyn crate::analysis::Analysis>> = vec![Box::new(
            crate::analysis::pacer::Pacer::new(crate::analysis::pacer::PacerConfig {
                rate: 1.0,
                ..Default::default()
            }),
        )];
        let base = run_trace(&tr, &mut a).remove(0);
        let cfg = ExperimentConfig {
            rates: vec![0.1, 0.5, 1.0],
            trials: 5,
            seed: 1,
            period: 10,
        };
        let exp = experiment(&tr, &base, &cfg);
        // The sweep reports every trial done, of all (for `racepred sample`'s progress).
        let mut calls = Vec::new();
        let again = crate::experiments::pacer_trials::experiment_with_progress(
            &tr,
            &base,
            &cfg,
            &mut |d, t| calls.push((d, t)),
        );
        assert_eq!(again, exp);
        assert_eq!(calls, (1..=15).map(|d| (d, 15)).collect::<Vec<_>>());
        let svg = detection_plot_svg(&exp).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("detection rate"));
        // Log rate axis: 0.1 → 0.5 is more than twice as wide as 0.5 → 1 (linear: less).
        let x_of = |label: &str| -> f64 {
            let lines: Vec<&str> = svg.lines().collect();
            // x-axis tick labels are centred under their tick (y-axis ones are not).
            let i = (1..lines.len())
                .find(|&i| lines[i].trim() == label && lines[i - 1].contains("\"middle\""))
                .unwrap_or_else(|| panic!("no tick {label}"));
            let tag = lines[i - 1];
            let x = tag.split("x=\"").nth(1).unwrap().split('"').next().unwrap();
            x.parse().unwrap()
        };
        let (a, b, c) = (x_of("0.1"), x_of("0.5"), x_of("1"));
        assert!(b - a > 2.0 * (c - b), "{a} {b} {c}");
        // The legend is below the plot area (the plot is 540 pixels high).
        let legend_y = svg
            .lines()
            .position(|l| l.trim() == "ideal (y = r)")
            .map(|i| svg.lines().nth(i - 1).unwrap())
            .and_then(|t| t.split("y=\"").nth(1))
            .and_then(|y| y.split('"').next())
            .and_then(|y| y.parse::<f64>().ok())
            .unwrap();
        assert!(legend_y > 540.0, "{legend_y}");
        // Singular and plural.
        assert_eq!(count(1, "distinct race"), "1 distinct race");
        assert_eq!(count(2, "distinct race"), "2 distinct races");
        let mut one = exp.clone();
        one.distinct.truncate(1);
        one.dynamic_races.truncate(1);
        for p in &mut one.points {
            p.per_distinct.truncate(1);
        }
        let svg1 = detection_plot_svg(&one).unwrap();
        assert!(
            svg1.contains("(1 dynamic race, 1 distinct race)"),
            "caption"
        );
        let dir = std::env::temp_dir().join("racepred-plot-test.svg");
        write_detection_plot(&dir, &exp).unwrap();
        assert!(write_detection_plot(Path::new("x.png"), &exp).is_err());
    }
}
