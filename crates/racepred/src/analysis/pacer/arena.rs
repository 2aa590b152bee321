//! The clock arena of the PACER detector: reference-counted vector-clock buffers, so that a
//! shallow copy bumps a count and a writer clones a shared buffer first (the paper's
//! `isShared` / `clone`).

/// A clock component.
pub(super) type Time = u32;

/// Handle of a clock buffer in the arena.
pub(super) type H = u32;
/// The bottom clock (no buffer).
pub(super) const NOCLOCK: H = u32::MAX;

/// Reference-counted clock buffers (`Send`, no atomics).
#[derive(Debug, Default)]
pub(super) struct Arena {
    bufs: Vec<Vec<Time>>,
    refs: Vec<u32>,
    free: Vec<H>,
}

impl Arena {
    pub(super) fn alloc(&mut self) -> H {
        if let Some(h) = self.free.pop() {
            self.refs[h as usize] = 1;
            self.bufs[h as usize].clear();
            h
        } else {
            self.bufs.push(Vec::new());
            self.refs.push(1);
            (self.bufs.len() - 1) as H
        }
    }

    #[inline]
    pub(super) fn share(&mut self, h: H) -> H {
        if h != NOCLOCK {
            self.refs[h as usize] += 1;
        }
        h
    }

    #[inline]
    pub(super) fn drop_ref(&mut self, h: H) {
        if h != NOCLOCK {
            let r = &mut self.refs[h as usize];
            *r -= 1;
            if *r == 0 {
                self.free.push(h);
            }
        }
    }

    #[inline]
    pub(super) fn is_shared(&self, h: H) -> bool {
        h != NOCLOCK && self.refs[h as usize] > 1
    }

    #[inline]
    pub(super) fn get(&self, h: H, t: u32) -> Time {
        if h == NOCLOCK {
            return 0;
        }
        self.bufs[h as usize].get(t as usize).copied().unwrap_or(0)
    }

    #[inline]
    pub(super) fn slice(&self, h: H) -> &[Time] {
        if h == NOCLOCK {
            &[]
        } else {
            &self.bufs[h as usize]
        }
    }

    /// `a ⊑ b`.
    pub(super) fn le(&self, a: H, b: H) -> bool {
        if a == NOCLOCK || a == b {
            return true;
        }
        let (a, b) = (self.slice(a), self.slice(b));
        a.iter()
            .enumerate()
            .all(|(i, &x)| x <= b.get(i).copied().unwrap_or(0))
    }

    /// Makes `*h` a buffer only its owner holds (cloning a shared one). Returns true if it
    /// cloned.
    pub(super) fn make_unique(&mut self, h: &mut H) -> bool {
        if *h == NOCLOCK {
            *h = self.alloc();
            return false;
        }
        if self.refs[*h as usize] == 1 {
            return false;
        }
        let n = self.alloc();
        self.copy(n, *h);
        self.drop_ref(*h);
        *h = n;
        true
    }

    /// `dst ← src` element by element (`dst` unique, `src` another buffer or bottom).
    pub(super) fn copy(&mut self, dst: H, src: H) {
        debug_assert!(dst != src && dst != NOCLOCK);
        let s = if src == NOCLOCK {
            Vec::new()
        } else {
            std::mem::take(&mut self.bufs[src as usize])
        };
        let d = &mut self.bufs[dst as usize];
        d.clear();
        d.extend_from_slice(&s);
        if src != NOCLOCK {
            self.bufs[src as usize] = s;
        }
    }

    /// `dst ← dst ⊔ src` (`dst` unique, `src` another buffer).
    pub(super) fn join(&mut self, dst: H, src: H) {
        if src == NOCLOCK || src == dst {
            return;
        }
        let s = std::mem::take(&mut self.bufs[src as usize]);
        let d = &mut self.bufs[dst as usize];
        if d.len() < s.len() {
            d.resize(s.len(), 0);
        }
        for (a, &b) in d.iter_mut().zip(s.iter()) {
            *a = (*a).max(b);
        }
        self.bufs[src as usize] = s;
    }

    /// Adds one to component `t` of the unique buffer `h`.
    pub(super) fn increment(&mut self, h: H, t: u32) {
        let d = &mut self.bufs[h as usize];
        if d.len() <= t as usize {
            d.resize(t as usize + 1, 0);
        }
        d[t as usize] += 1;
    }
}
