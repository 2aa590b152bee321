//! A progress bar on stderr for inputs that take more than a second, only on a terminal.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

pub struct Progress {
    start: Instant,
    bar: Option<ProgressBar>,
    enabled: bool,
}

impl Progress {
    pub fn new() -> Progress {
        Progress {
            start: Instant::now(),
            bar: None,
            enabled: std::io::stderr().is_terminal(),
        }
    }

    /// Called periodically with events and bytes read so far.
    pub fn update(&mut self, events: u64, bytes: u64) {
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
            let secs = self.start.elapsed().as_secs_f64().max(1e-9);
            bar.set_message(format!(
                "{} events, {} MiB read, {:.1} M events/s",
                events,
                bytes >> 20,
                events as f64 / secs / 1e6
            ));
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
