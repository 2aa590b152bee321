//! Sampling control: global sampling periods, entered with probability `r` by a seeded RNG.
//!
//! Periods are measured in operations (every event counts, whatever it is). In the default
//! mode a period is `period` operations long and boundaries fall every `period` operations;
//! a tracer may instead call [`Sampler::boundary`] itself (e.g. at garbage collections, as
//! the paper's Jikes RVM implementation does), with `period = 0`.
//!
//! **Bias correction (paper §4).** When periods end on an external event whose frequency
//! depends on sampling (race detection allocates, so collections come sooner while
//! sampling), sampling periods hold less work than non-sampling ones and the effective rate
//! drops below `r`. As the paper does, the work is measured independently of sampling (here
//! in operations, which sampling does not change) and the probability of entering a
//! sampling period is adjusted: with `S` and `N` the mean work of completed sampling and
//! non-sampling periods, entering with `p = rN / (rN + (1-r)S)` makes the expected share of
//! sampled work `pS / (pS + (1-p)N) = r`. With fixed-length periods `S = N` and `p = r`.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// Decides, period by period, whether the analysis samples.
///
/// Hot state is one countdown: [`Sampler::tick`] is a decrement and a test (the operation
/// counts are derived from it), so that a run outside sampling pays next to nothing here.
#[derive(Clone, Debug)]
pub struct Sampler {
    rate: f64,
    /// Period length in operations; 0 = boundaries come from [`Sampler::boundary`].
    period: u64,
    rng: Pcg64Mcg,
    sampling: bool,
    /// Operations left in the current period before a boundary is due (0 = due before the
    /// next operation).
    left: u64,
    /// Length of the current period as planned (`u64::MAX` with external boundaries; cut
    /// to the operations done by [`Sampler::boundary`]): `len - left` operations are done.
    len: u64,
    /// Number of sampling periods started (the current one if sampling).
    sampling_periods: u64,
    /// Completed periods and their work, per kind (for the bias correction).
    done_s: (u64, u64),
    done_n: (u64, u64),
}

impl Sampler {
    /// A sampler with rate `rate` (clamped to 0–1), periods of `period` operations (0 for
    /// external boundaries) and RNG seed `seed`.
    pub fn new(rate: f64, period: u64, seed: u64) -> Sampler {
        let rate = if rate.is_nan() {
            0.0
        } else {
            rate.clamp(0.0, 1.0)
        };
        Sampler {
            rate,
            period,
            rng: Pcg64Mcg::seed_from_u64(seed),
            sampling: false,
            left: 0,
            len: 0,
            sampling_periods: 0,
            done_s: (0, 0),
            done_n: (0, 0),
        }
    }

    /// Called before each operation. Returns `Some(true)` when a sampling period starts
    /// with this operation (the analysis then increments every thread's clock),
    /// `Some(false)` when a non-sampling period starts, `None` inside a period.
    #[inline(always)]
    pub fn tick(&mut self) -> Option<bool> {
        let mut started = None;
        if self.left == 0 {
            started = Some(self.start_period());
        }
        self.left -= 1;
        started
    }

    /// Operations done in the current period.
    /// Operations left in the current period after the one just ticked.
    #[inline(always)]
    pub fn left(&self) -> u64 {
        self.left
    }

    /// Counts `n` more operations of the current period at once (`n <= left()`), as `n`
    /// calls of [`Sampler::tick`] would.
    #[inline(always)]
    pub fn advance(&mut self, n: u64) {
        debug_assert!(n <= self.left);
        self.left -= n;
    }

    #[inline(always)]
    fn in_period(&self) -> u64 {
        self.len - self.left
    }

    /// Ends the current period: the next operation starts a new one (external mode; also
    /// usable with fixed periods to cut one short).
    pub fn boundary(&mut self) {
        if self.in_period() > 0 {
            self.len = self.in_period();
            self.left = 0;
        }
    }

    #[cold]
    #[inline(never)]
    fn start_period(&mut self) -> bool {
        let in_period = self.in_period();
        if in_period > 0 {
            let done = if self.sampling {
                &mut self.done_s
            } else {
                &mut self.done_n
            };
            done.0 += 1;
            done.1 += in_period;
        }
        self.len = if self.period == 0 {
            u64::MAX
        } else {
            self.period
        };
        self.left = self.len;
        let p = self.entry_probability();
        self.sampling = p >= 1.0 || (p > 0.0 && self.rng.gen::<f64>() < p);
        if self.sampling {
            self.sampling_periods += 1;
        }
        self.sampling
    }

    /// The probability of entering a sampling period at the next boundary, with the bias
    /// correction of §4.
    pub fn entry_probability(&self) -> f64 {
        let r = self.rate;
        if r <= 0.0 || r >= 1.0 || self.done_s.0 == 0 || self.done_n.0 == 0 {
            return r;
        }
        let s = self.done_s.1 as f64 / self.done_s.0 as f64;
        let n = self.done_n.1 as f64 / self.done_n.0 as f64;
        let p = r * n / (r * n + (1.0 - r) * s);
        p.clamp(0.0, 1.0)
    }

    #[inline]
    pub fn sampling(&self) -> bool {
        self.sampling
    }

    /// Number of sampling periods started so far (an id for the current one).
    #[inline]
    pub fn sampling_periods(&self) -> u64 {
        self.sampling_periods
    }

    /// Number of periods started so far, sampling or not.
    pub fn periods(&self) -> u64 {
        // Completed periods, and the current one once its first operation is ticked.
        self.done_s.0 + self.done_n.0 + (self.len > 0) as u64
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }

    pub fn period(&self) -> u64 {
        self.period
    }

    /// Operations that ran in sampling periods.
    #[inline]
    pub fn sampled_ops(&self) -> u64 {
        self.done_s.1 + if self.sampling { self.in_period() } else { 0 }
    }

    /// Operations that ran outside sampling periods.
    #[inline]
    pub fn non_sampled_ops(&self) -> u64 {
        self.done_n.1 + if self.sampling { 0 } else { self.in_period() }
    }

    pub fn total_ops(&self) -> u64 {
        self.done_s.1 + self.done_n.1 + self.in_period()
    }

    /// Share of operations that ran in sampling periods (0 before any operation).
    pub fn effective_rate(&self) -> f64 {
        let total = self.total_ops();
        if total == 0 {
            0.0
        } else {
            self.sampled_ops() as f64 / total as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extremes() {
        let mut s = Sampler::new(1.0, 3, 7);
        assert!((0..100).all(|_| {
            s.tick();
            s.sampling()
        }));
        let mut s = Sampler::new(0.0, 3, 7);
        assert!((0..100).all(|_| {
            s.tick();
            !s.sampling()
        }));
        assert_eq!(s.effective_rate(), 0.0);
    }

    #[test]
    fn fixed_periods_hit_the_rate() {
        let mut s = Sampler::new(0.1, 10, 42);
        let mut starts = 0;
        for _ in 0..1_000_000 {
            if s.tick().is_some() {
                starts += 1;
            }
        }
        assert_eq!(starts, 100_000);
        assert_eq!(s.periods(), 100_000);
        assert!(s.sampling_periods() > 9_000 && s.sampling_periods() < 11_000);
        // 100 000 Bernoulli(0.1) periods: sd of the rate ≈ 0.00095.
        assert!(
            (s.effective_rate() - 0.1).abs() < 0.005,
            "{}",
            s.effective_rate()
        );
    }

    /// External boundaries that come three times sooner while sampling (the paper's GC
    /// effect): without the correction the effective rate would be about r/(3-2r) ≈ 0.036
    /// for r = 0.1; with it, about r.
    #[test]
    fn bias_correction() {
        let r = 0.1;
        let mut s = Sampler::new(r, 0, 1);
        let mut left = 0u64;
        for _ in 0..3_000_000 {
            if s.tick().is_some() {
                left = if s.sampling() { 100 } else { 300 };
            }
            left -= 1;
            if left == 0 {
                s.boundary();
            }
        }
        assert!(
            (s.effective_rate() - r).abs() < 0.01,
            "{}",
            s.effective_rate()
        );
        assert!(s.entry_probability() > 0.2);
    }
}
