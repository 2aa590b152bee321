//! Experiments that measure the analyses, apart from the analyses they measure: they
//! transform traces or run an analysis many times, and nothing in [`crate::analysis`] or
//! [`crate::report`] depends on them.
//!
//! - [`elide`]: a complete trace made incomplete, as RDIT's evaluation simulates missing
//!   events;
//! - [`perturb`]: inaccurate variants of a trace, as SSHB's §3 says tracing goes wrong;
//! - [`pacer_trials`]: PACER's multi-trial sampling experiment (detection rate against
//!   sampling rate);
//! - [`plot`] (feature `plot`): that experiment as an SVG figure.

pub mod elide;
pub mod pacer_trials;
pub mod perturb;
#[cfg(feature = "plot")]
pub mod plot;
