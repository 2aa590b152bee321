//! Logical clocks: vector clocks, epochs and tree clocks.
//!
//! Invariants written down once (Miri `vector_clock.rs`, TSan `VectorClock`):
//! - a [`VectorClock`] maps every thread to a time; threads it has not seen are at 0, so
//!   clocks of different lengths compare as if padded with zeros;
//! - `set` never moves a component backwards (debug-asserted);
//! - `partial_cmp` is `None` exactly for concurrent clocks.
//!
//! Analyses are generic over [`Clock`], implemented by [`VectorClock`] and [`TreeClock`]
//! (Mathur, Pavlogiannis, Tunç, Viswanathan, ASPLOS'22), so thread and lock clocks can be
//! either without changing the analysis.
//!
//! The happens-before engines use clocks in one discipline, which [`TreeClock`] relies on:
//! - a *thread clock* (made by [`Clock::for_thread`]) is the only clock that increments its
//!   own thread's component, so no other clock knows a thread at a later time than its own
//!   thread clock;
//! - every *publication* of a thread clock (release, fork, volatile write, signal, an SHB
//!   write) is followed by an increment of that thread's component;
//! - `join` and `join_vector` only ever target thread clocks; lock, condition and last-write
//!   clocks are only ever assigned with `copy_from` from a thread clock.

mod table;
mod tree;
mod vc;

pub use table::{ClockTable, DENSE_MAX};
pub use tree::TreeClock;
pub use vc::{Epoch, Time, VectorClock};

use crate::trace::ThreadId;

/// A logical clock usable as a thread or synchronisation-object clock.
pub trait Clock: Clone + Default + std::fmt::Debug + Send {
    /// The initial clock of thread `t`: time 1 for `t`, 0 elsewhere.
    fn for_thread(t: ThreadId) -> Self;

    /// The time of `t` (0 if unknown).
    fn get(&self, t: ThreadId) -> Time;

    /// Adds one to `t`'s component; `self` is `t`'s thread clock.
    fn increment(&mut self, t: ThreadId);

    /// Pointwise maximum into `self`, which is a thread clock.
    fn join(&mut self, other: &Self);

    /// Becomes a copy of `other` (a thread clock or a copy of one). Cheapest when `self ⊑
    /// other`, the usual case at a release.
    fn copy_from(&mut self, other: &Self);

    /// Pointwise maximum of a plain vector into `self`, which is a thread clock
    /// (volatile reads).
    fn join_vector(&mut self, v: &VectorClock);

    /// Pointwise maximum of `self` into a plain vector (volatile writes).
    fn join_into_vector(&self, v: &mut VectorClock);

    /// The clock as a plain vector (tests, reports).
    fn to_vector(&self) -> VectorClock {
        let mut v = VectorClock::new();
        self.join_into_vector(&mut v);
        v
    }

    /// `v ⊑ self` for a plain vector `v` (its components in thread order): every component
    /// of `v` is at most `self`'s.
    #[inline]
    fn covers(&self, v: &[Time]) -> bool {
        v.iter()
            .enumerate()
            .all(|(j, &k)| k <= self.get(ThreadId(j as u32)))
    }

    /// Both halves of `v` (two plain vectors of equal length, end to end) `⊑ self`.
    #[inline]
    fn covers_twice(&self, v: &[Time]) -> bool {
        let (a, b) = v.split_at(v.len() / 2);
        self.covers(a) && self.covers(b)
    }
}

impl Clock for VectorClock {
    fn for_thread(t: ThreadId) -> Self {
        let mut v = VectorClock::with_threads(t.index() + 1);
        v.set(t, 1);
        v
    }
    #[inline]
    fn get(&self, t: ThreadId) -> Time {
        VectorClock::get(self, t)
    }
    #[inline]
    fn increment(&mut self, t: ThreadId) {
        VectorClock::increment(self, t)
    }
    #[inline]
    fn join(&mut self, other: &Self) {
        VectorClock::join(self, other)
    }
    #[inline]
    fn copy_from(&mut self, other: &Self) {
        VectorClock::copy_from(self, other)
    }
    fn join_vector(&mut self, v: &VectorClock) {
        VectorClock::join(self, v)
    }
    fn join_into_vector(&self, v: &mut VectorClock) {
        v.join(self)
    }
    fn to_vector(&self) -> VectorClock {
        self.clone()
    }
    /// Without branches over the common prefix (the compiler compares 8 components per
    /// instruction): the per-component early exit mispredicted on traces with many races.
    #[inline]
    fn covers(&self, v: &[Time]) -> bool {
        let (a, b) = (v, self.as_slice());
        let n = a.len().min(b.len());
        let above = a[..n]
            .iter()
            .zip(&b[..n])
            .fold(false, |acc, (&x, &y)| acc | (x > y));
        !above && a[n..].iter().all(|&x| x == 0)
    }
    #[inline]
    fn covers_twice(&self, v: &[Time]) -> bool {
        let s = v.len() / 2;
        let (a, b, c) = (&v[..s], &v[s..2 * s], self.as_slice());
        let n = s.min(c.len());
        let above = a[..n]
            .iter()
            .zip(&b[..n])
            .zip(&c[..n])
            .fold(false, |acc, ((&x, &y), &z)| acc | (x > z) | (y > z));
        !above && a[n..].iter().chain(&b[n..]).all(|&x| x == 0)
    }
}

/// `v ⊑ c` for a plain vector against any clock.
#[inline]
pub fn vector_le<C: Clock>(v: &VectorClock, c: &C) -> bool {
    c.covers(v.as_slice())
}

/// `e ⪯ c`: the epoch's time is at most `c`'s time for its thread.
#[inline]
pub fn epoch_le<C: Clock>(e: Epoch, c: &C) -> bool {
    e.time() <= c.get(e.thread())
}
