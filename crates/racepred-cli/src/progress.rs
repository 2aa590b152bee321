//! A progress bar on stderr for work that takes more than a second, only on a terminal.
//!
//! Reading an input of known size (a regular file) shows the share of the file read and the
//! time left, counted in the file's own bytes (compressed bytes for a compressed file);
//! otherwise a spinner with events and bytes read. `sample` shows trials done of all.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

pub struct Progress {
    start: Instant,
    bar: Option<ProgressBar>,
    enabled: bool,
    /// Size of the input in bytes, when known.
    total: Option<u64>,
}

/// What the bar shows once it appears.
enum Shape {
    Spinner,
    Bar(u64),
}

impl Progress {
    /// A progress display for work without a known size (a spinner).
    pub fn new() -> Progress {
        Progress {
            start: Instant::now(),
            bar: None,
            enabled: std::io::stderr().is_terminal(),
            total: None,
        }
    }

    /// A progress display for reading an input of `total` bytes (`None`: unknown).
    pub fn for_input(total: Option<u64>) -> Progress {
        let mut p = Progress::new();
        p.total = total.filter(|&t| t > 0);
        p
    }

    /// The bar, created once a second has passed (short runs show nothing).
    fn bar(&mut self, shape: Shape) -> Option<&ProgressBar> {
        if !self.enabled {
            return None;
        }
        if self.bar.is_none() {
            if self.start.elapsed() < Duration::from_secs(1) {
                return None;
            }
            let bar = match shape {
                Shape::Spinner => {
                    let bar = ProgressBar::new_spinner();
                    bar.set_style(
                        ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                            .expect("valid template"),
                    );
                    bar
                }
                Shape::Bar(len) => {
                    let bar = ProgressBar::new(len);
                    bar.set_style(
                        ProgressStyle::with_template(
                            "{spinner} {elapsed} [{bar:30}] {percent:>3}% {eta} left  {msg}",
                        )
                        .expect("valid template")
                        .progress_chars("=> "),
                    );
                    bar
                }
            };
            bar.enable_steady_tick(Duration::from_millis(200));
            self.bar = Some(bar);
        }
        self.bar.as_ref()
    }

    /// Called periodically with events and bytes read so far.
    pub fn update(&mut self, events: u64, bytes: u64) {
        let shape = match self.total {
            Some(t) => Shape::Bar(t),
            None => Shape::Spinner,
        };
        let secs = self.start.elapsed().as_secs_f64().max(1e-9);
        let with_total = self.total.is_some();
        if let Some(bar) = self.bar(shape) {
            let rate = events as f64 / secs / 1e6;
            if with_total {
                bar.set_position(bytes);
                bar.set_message(format!("{events} events, {rate:.1} M events/s"));
            } else {
                bar.set_message(format!(
                    "{events} events, {} MiB read, {rate:.1} M events/s",
                    bytes >> 20
                ));
            }
        }
    }

    /// Called after each of `total` trials (`racepred sample`).
    pub fn trials(&mut self, done: u64, total: u64) {
        if let Some(bar) = self.bar(Shape::Bar(total)) {
            bar.set_position(done);
            bar.set_message(format!("{done}/{total} trials"));
        }
    }

    /// Shows a message (once the run has taken a second).
    pub fn message(&mut self, msg: &str) {
        if !self.enabled {
            return;
        }
        if self.bar.is_none() {
            if self.start.elapsed() < Duration::from_secs(1) {
                return;
            }
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("valid template"),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_message(msg.to_string());
        }
    }

    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
