//! Per-variable clocks as rows of one table (the access history of Djit+).
//!
//! Each variable has `K` plain vector clocks (Djit+: its write and its read clock). While the trace has at most [`DENSE_MAX`] threads they are rows
//! of one table, the `K` clocks of a variable end to end with `stride` components each
//! (Djit+ with 8 threads: one 64-byte block per variable), so an access reads one block
//! instead of `K` vector headers and their heap blocks, and compares all of them in one
//! pass. A thread beyond the stride widens the table (strides are powers of two, at least
//! 4). A thread beyond [`DENSE_MAX`] moves the clocks to one [`VectorClock`] each, which
//! keeps only the components up to the highest thread that set one (traces with many
//! threads touch most variables from a few): the table takes `K · stride` components per
//! variable, never more than `K · 16`.

use super::{Clock, Time, VectorClock};
use crate::trace::ThreadId;

/// The table holds clocks of up to this many threads (64 bytes per clock).
pub const DENSE_MAX: usize = 16;

/// `K` vector clocks per variable (see the module comment).
#[derive(Clone, Debug, Default)]
pub struct ClockTable<const K: usize> {
    /// Components per clock in `dense`: 0 before the first [`ClockTable::set`], then a power
    /// of two up to [`DENSE_MAX`]; 0 again in sparse mode.
    stride: usize,
    /// Variable `x`'s clock `k` at `(K·x + k)·stride`.
    dense: Vec<Time>,
    /// Sparse mode: variable `x`'s clock `k` at `K·x + k`.
    sparse: Option<Vec<VectorClock>>,
}

impl<const K: usize> ClockTable<K> {
    /// The first component of variable `x`'s clocks in `dense`, if the table holds them.
    #[inline(always)]
    fn base(&self, x: usize) -> Option<usize> {
        let base = K * self.stride * x;
        (base + K * self.stride <= self.dense.len()).then_some(base)
    }

    /// Clocks `ks` of variable `x` are all `⊑ c` (a variable never set has zero clocks).
    #[inline(always)]
    pub fn covered<C: Clock>(&self, x: usize, ks: std::ops::Range<usize>, c: &C) -> bool {
        if let Some(sparse) = &self.sparse {
            return ks
                .into_iter()
                .all(|k| sparse.get(K * x + k).is_none_or(|v| c.covers(v.as_slice())));
        }
        let Some(base) = self.base(x) else {
            return true;
        };
        self.dense_covered(base, ks, c)
    }

    #[inline(always)]
    fn dense_covered<C: Clock>(&self, base: usize, ks: std::ops::Range<usize>, c: &C) -> bool {
        let s = self.stride;
        let rows = &self.dense[base + ks.start * s..base + ks.end * s];
        match ks.len() {
            1 => c.covers(rows),
            2 => c.covers_twice(rows),
            _ => rows.chunks_exact(s).all(|v| c.covers(v)),
        }
    }

    /// [`ClockTable::covered`], then [`ClockTable::set`], finding the row once (an access
    /// of Djit+ checks some clocks of its variable and sets one component). Always inlined:
    /// `ks` is then a constant and the comparison a straight line.
    #[inline(always)]
    pub fn covered_then_set<C: Clock>(
        &mut self,
        x: usize,
        ks: std::ops::Range<usize>,
        c: &C,
        k: usize,
        t: ThreadId,
        time: Time,
    ) -> bool {
        // A thread within the stride means the table is dense (sparse mode has stride 0).
        if let (true, Some(base)) = (t.index() < self.stride, self.base(x)) {
            let covered = self.dense_covered(base, ks, c);
            let i = base + k * self.stride + t.index();
            debug_assert!(self.dense[i] <= time, "clock moves back");
            self.dense[i] = time;
            return covered;
        }
        let covered = self.covered(x, ks, c);
        self.set(x, k, t, time);
        covered
    }

    /// Sets component `t` of clock `k` of variable `x` to `time` (never backwards).
    #[inline]
    pub fn set(&mut self, x: usize, k: usize, t: ThreadId, time: Time) {
        if t.index() >= self.stride && self.sparse.is_none() {
            self.widen(t.index());
        }
        if let Some(sparse) = &mut self.sparse {
            if K * x + k >= sparse.len() {
                sparse.resize_with(K * x + K, VectorClock::new);
            }
            sparse[K * x + k].set(t, time);
            return;
        }
        let base = match self.base(x) {
            Some(base) => base,
            None => self.grow(x),
        };
        let i = base + k * self.stride + t.index();
        debug_assert!(self.dense[i] <= time, "clock moves back");
        self.dense[i] = time;
    }

    /// Room for variable `x`; its base.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, x: usize) -> usize {
        // Whole variables only (`widen` reads the table variable by variable).
        let var = K * self.stride;
        let len = (var * (x + 1)).max(self.dense.len() * 3 / 2);
        self.dense.resize(len.div_ceil(var) * var, 0);
        var * x
    }

    /// Makes room for thread `t`: a wider table, or sparse mode past [`DENSE_MAX`].
    #[cold]
    #[inline(never)]
    fn widen(&mut self, t: usize) {
        let old = self.stride;
        if t >= DENSE_MAX {
            let clocks = if old == 0 {
                Vec::new()
            } else {
                self.dense.chunks_exact(old).collect()
            };
            let sparse = clocks
                .into_iter()
                .map(|row: &[Time]| {
                    let mut c = VectorClock::new();
                    for (u, &time) in row.iter().enumerate() {
                        if time > 0 {
                            c.set(ThreadId(u as u32), time);
                        }
                    }
                    c
                })
                .collect();
            self.sparse = Some(sparse);
            self.dense = Vec::new();
            self.stride = 0;
            return;
        }
        let stride = (t + 1).next_power_of_two().max(4);
        let mut dense = vec![0; self.dense.len() / old.max(1) * stride];
        if old > 0 {
            for (i, row) in self.dense.chunks_exact(old).enumerate() {
                dense[i * stride..i * stride + old].copy_from_slice(row);
            }
        }
        self.dense = dense;
        self.stride = stride;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Component `t` of clock `k` of variable `x`, as the table holds it.
    fn component<const K: usize>(table: &ClockTable<K>, x: usize, k: usize, t: ThreadId) -> Time {
        if let Some(sparse) = &table.sparse {
            return sparse.get(K * x + k).map_or(0, |v| v.get(t));
        }
        match table.base(x) {
            Some(base) if t.index() < table.stride => {
                table.dense[base + k * table.stride + t.index()]
            }
            _ => 0,
        }
    }

    /// Every operation agrees with one `VectorClock` per (variable, clock), across widening
    /// and the move to sparse mode.
    #[test]
    fn table_matches_vector_clocks() {
        let mut table = ClockTable::<2>::default();
        let mut want: Vec<VectorClock> = vec![VectorClock::new(); 2 * 50];
        let mut time = 0;
        let threads = [0u32, 3, 1, 5, 2, 9, 7, 15, 4, 16, 30, 6];
        for (step, &t) in threads.iter().enumerate() {
            for x in [0usize, 7, 3, 49, 12] {
                for k in 0..2 {
                    time += 1;
                    let (x, t) = ((x + step) % 50, ThreadId(t));
                    table.set(x, k, t, time);
                    want[2 * x + k].set(t, time);
                }
            }
            let mut probe = VectorClock::new();
            for u in 0..32 {
                probe.set(ThreadId(u), (time / 2) + u);
            }
            for x in 0..50 {
                for k in 0..2 {
                    for u in 0..32 {
                        assert_eq!(
                            component(&table, x, k, ThreadId(u)),
                            want[2 * x + k].get(ThreadId(u))
                        );
                    }
                    let one = want[2 * x + k].le(&probe);
                    assert_eq!(table.covered(x, k..k + 1, &probe), one, "x {x} k {k}");
                }
                let both = want[2 * x].le(&probe) && want[2 * x + 1].le(&probe);
                assert_eq!(table.covered(x, 0..2, &probe), both);
            }
        }
        assert!(table.sparse.is_some());
    }
}
