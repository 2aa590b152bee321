//! Vector clocks and epochs.

use std::cmp::Ordering;
use std::fmt;

use crate::trace::ThreadId;

/// A logical time of one thread.
pub type Time = u32;

/// A vector clock: one time per thread, zeros implicit past the end.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct VectorClock {
    c: Vec<Time>,
}

impl VectorClock {
    pub fn new() -> VectorClock {
        VectorClock { c: Vec::new() }
    }

    /// A clock with room for `threads` components (all zero).
    pub fn with_threads(threads: usize) -> VectorClock {
        VectorClock {
            c: vec![0; threads],
        }
    }

    #[inline]
    pub fn get(&self, t: ThreadId) -> Time {
        self.c.get(t.index()).copied().unwrap_or(0)
    }

    /// Sets `t`'s component; never backwards.
    #[inline]
    pub fn set(&mut self, t: ThreadId, time: Time) {
        let i = t.index();
        if i >= self.c.len() {
            self.c.resize(i + 1, 0);
        }
        debug_assert!(
            self.c[i] <= time,
            "clock of {t:?} moves back from {} to {time}",
            self.c[i]
        );
        self.c[i] = time;
    }

    /// Adds one to `t`'s component.
    #[inline]
    pub fn increment(&mut self, t: ThreadId) {
        let i = t.index();
        if i >= self.c.len() {
            self.c.resize(i + 1, 0);
        }
        self.c[i] += 1;
    }

    /// Pointwise maximum, in place.
    #[inline]
    pub fn join(&mut self, other: &VectorClock) {
        self.join_slice(&other.c);
    }

    /// Pointwise maximum with a clock given as its components (thread order), in place.
    #[inline]
    pub fn join_slice(&mut self, other: &[Time]) {
        if other.len() > self.c.len() {
            self.c.resize(other.len(), 0);
        }
        for (a, &b) in self.c.iter_mut().zip(other.iter()) {
            *a = (*a).max(b);
        }
    }

    /// Becomes a copy of `other`, reusing the allocation.
    #[inline]
    pub fn copy_from(&mut self, other: &VectorClock) {
        self.c.clear();
        self.c.extend_from_slice(&other.c);
    }

    /// `self ⊑ other`: every component at most `other`'s.
    #[inline]
    pub fn le(&self, other: &VectorClock) -> bool {
        self.c
            .iter()
            .enumerate()
            .all(|(i, &a)| a <= other.c.get(i).copied().unwrap_or(0))
    }

    /// Makes room for `threads` components without over-allocating, for a clock that will
    /// hold about that many for the rest of its life (a forked thread's).
    pub fn reserve_threads(&mut self, threads: usize) {
        self.c.reserve_exact(threads.saturating_sub(self.c.len()));
    }

    /// Number of stored components (threads seen so far).
    pub fn len(&self) -> usize {
        self.c.len()
    }

    pub fn is_empty(&self) -> bool {
        self.c.iter().all(|&x| x == 0)
    }

    pub fn as_slice(&self) -> &[Time] {
        &self.c
    }

    /// Sets every component to 0.
    pub fn clear(&mut self) {
        self.c.iter_mut().for_each(|x| *x = 0);
    }
}

impl PartialOrd for VectorClock {
    /// `None` for concurrent clocks.
    fn partial_cmp(&self, other: &VectorClock) -> Option<Ordering> {
        match (self.le(other), other.le(self)) {
            (true, true) => Some(Ordering::Equal),
            (true, false) => Some(Ordering::Less),
            (false, true) => Some(Ordering::Greater),
            (false, false) => None,
        }
    }
}

impl fmt::Debug for VectorClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.c)
    }
}

/// An epoch `c@t`: time `c` of thread `t`, packed in one word (thread in the high 24 bits,
/// time in the low 40). `Epoch::ZERO` is before everything.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Epoch(u64);

impl Epoch {
    const TIME_BITS: u32 = 40;
    const TIME_MASK: u64 = (1 << Self::TIME_BITS) - 1;

    /// The epoch `0@0`, which every clock dominates.
    pub const ZERO: Epoch = Epoch(0);

    #[inline]
    pub fn new(t: ThreadId, time: Time) -> Epoch {
        debug_assert!(t.0 < (1 << 24), "thread id {t:?} does not fit an epoch");
        Epoch(((t.0 as u64) << Self::TIME_BITS) | time as u64)
    }

    #[inline]
    pub fn thread(self) -> ThreadId {
        ThreadId((self.0 >> Self::TIME_BITS) as u32)
    }

    #[inline]
    pub fn time(self) -> Time {
        (self.0 & Self::TIME_MASK) as Time
    }

    /// `c@t ⪯ V` iff `c ≤ V(t)`.
    #[inline]
    pub fn le(self, v: &VectorClock) -> bool {
        self.time() <= v.get(self.thread())
    }
}

impl fmt::Debug for Epoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.time(), self.thread().0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vc(x: &[Time]) -> VectorClock {
        let mut v = VectorClock::new();
        for (i, &t) in x.iter().enumerate() {
            v.set(ThreadId(i as u32), t);
        }
        v
    }

    #[test]
    fn order_and_join() {
        let a = vc(&[1, 2]);
        let b = vc(&[2, 2, 0]);
        let c = vc(&[0, 3]);
        assert!(a <= b && a < b);
        assert_eq!(a.partial_cmp(&c), None);
        assert_eq!(
            vc(&[1, 2]).partial_cmp(&vc(&[1, 2, 0])),
            Some(Ordering::Equal)
        );
        let mut d = a.clone();
        d.join(&c);
        assert_eq!(d, vc(&[1, 3]));
        d.copy_from(&b);
        assert_eq!(d.get(ThreadId(0)), 2);
        assert_eq!(d.get(ThreadId(9)), 0);
    }

    #[test]
    fn epoch_packs() {
        let e = Epoch::new(ThreadId(5), 77);
        assert_eq!((e.thread(), e.time()), (ThreadId(5), 77));
        assert!(e.le(&vc(&[0, 0, 0, 0, 0, 77])));
        assert!(!e.le(&vc(&[0, 0, 0, 0, 0, 76])));
        assert!(Epoch::ZERO.le(&VectorClock::new()));
    }

    #[test]
    #[should_panic]
    #[cfg(debug_assertions)]
    fn set_is_monotone() {
        let mut v = vc(&[3]);
        v.set(ThreadId(0), 2);
    }
}
