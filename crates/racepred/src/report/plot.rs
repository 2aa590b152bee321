//! Plots of the PACER sampling experiment (the paper's Figures 3–5) as SVG, with
//! `plotters` (SVG backend: text is written as SVG `<text>`, no system fonts needed).
//!
//! Only formatting: the numbers come from [`Experiment`].

use std::path::Path;

use plotters::prelude::*;

use crate::analysis::pacer::Experiment;
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

fn draw(out: &mut String, exp: &Experiment) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::with_string(out, (720, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let xmax = exp
        .points
        .iter()
        .map(|p| p.rate)
        .fold(0.0f64, f64::max)
        .max(0.01);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "PACER detection rate vs sampling rate ({} dynamic, {} distinct races)",
                exp.dynamic_races.len(),
                exp.distinct.len()
            ),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..xmax * 1.02, 0.0..1.02f64)?;
    chart
        .configure_mesh()
        .x_desc("sampling rate r")
        .y_desc("detection rate")
        .draw()?;
    chart
        .draw_series(LineSeries::new(
            [(0.0, 0.0), (xmax, xmax.min(1.0))],
            BLACK.mix(0.4),
        ))?
        .label("ideal (y = r)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
    for p in &exp.points {
        chart.draw_series(
            p.per_distinct
                .iter()
                .map(|&f| Circle::new((p.rate, f), 2, RGBColor(120, 120, 120).mix(0.5).filled())),
        )?;
    }
    let finite = |v: f64| if v.is_finite() { v } else { 0.0 };
    let dynamic: Vec<(f64, f64)> = exp
        .points
        .iter()
        .map(|p| (p.rate, finite(p.dynamic_detection)))
        .collect();
    let distinct: Vec<(f64, f64)> = exp
        .points
        .iter()
        .map(|p| (p.rate, finite(p.distinct_detection)))
        .collect();
    chart
        .draw_series(LineSeries::new(dynamic.clone(), &BLUE))?
        .label("dynamic races (Fig. 3)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
    chart.draw_series(dynamic.iter().map(|&p| Circle::new(p, 4, BLUE.filled())))?;
    chart
        .draw_series(LineSeries::new(distinct.clone(), &RED))?
        .label("distinct races (Fig. 4)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
    chart.draw_series(
        distinct
            .iter()
            .map(|&p| TriangleMarker::new(p, 5, RED.filled())),
    )?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::pacer::{experiment, ExperimentConfig};
    use crate::analysis::run_trace;
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
        let exp = experiment(
            &tr,
            &base,
            &ExperimentConfig {
                rates: vec![0.1, 0.5, 1.0],
                trials: 5,
                seed: 1,
                period: 10,
            },
        );
        let svg = detection_plot_svg(&exp).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("detection rate"));
        let dir = std::env::temp_dir().join("racepred-plot-test.svg");
        write_detection_plot(&dir, &exp).unwrap();
        assert!(write_detection_plot(Path::new("x.png"), &exp).is_err());
    }
}
