//! Tree clocks: Mathur, Pavlogiannis, Tunç, Viswanathan, "A Tree Clock Data Structure for
//! Causal Orderings in Concurrent Executions", ASPLOS 2022 (not in `shared/papers`; the
//! algorithm is rebuilt here from its invariants).
//!
//! A tree clock holds the same information as a vector clock — a time per thread — plus
//! *how* it was learned: thread `v` hangs below thread `u` with attachment time `aclk(v)`
//! when the clock learned `v`'s time through `u`'s event at time `aclk(v)`. Children are
//! kept by decreasing attachment time. Two facts follow from causality and make joins and
//! copies sublinear:
//!
//! 1. (*edge*) whoever knows `u` at time `aclk(v)` or later knows `v` at `clk(v)` or later,
//!    and so the whole subtree of `v`;
//! 2. (*root*) a clock rooted at `r` knows exactly what `r`'s event at `clk(r)` knew, so
//!    `other ⊒ self` iff `other.get(r) ≥ clk(r)` (the O(1) test of `copy_from`).
//!
//! `join` walks the source from its root, descends only into nodes that bring news, and
//! stops scanning a child list at the first child that brings none and was attached at a
//! time the target already knows (fact 1, children sorted). The news is moved over with its
//! shape; the source's root hangs below the target's root at the target's current time.
//! `copy_from` (the paper's monotone copy) does the same and re-roots; the old root is
//! always on the walked path (fact 2 forbids a cycle of knowledge), so it is re-hung where
//! the source has it. Both cost O(nodes that change), against O(threads) for vector clocks.
//!
//! Both facts need the discipline written in [`super`]: thread clocks alone increment,
//! publications are followed by an increment, joins target thread clocks and the other
//! clocks are copies. Where a precondition fails (never in the engines; possible through
//! the public API) the operations fall back to a full, always-correct path.

use std::fmt;

use super::{Clock, Time, VectorClock};
use crate::trace::ThreadId;

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Node {
    /// Time of the parent when this node was attached.
    aclk: Time,
    parent: u32,
    first_child: u32,
    next: u32,
    prev: u32,
}

const EMPTY: Node = Node {
    aclk: 0,
    parent: NONE,
    first_child: NONE,
    next: NONE,
    prev: NONE,
};

/// A tree clock; see the module documentation.
#[derive(Default)]
pub struct TreeClock {
    /// Root thread, `NONE` for the empty clock.
    root: u32,
    /// Known time per thread (0 = not in the tree), apart from the links so that `get`
    /// and the fast-path tests touch 4 bytes per thread.
    clks: Vec<Time>,
    /// Tree links, indexed by thread id; same length as `clks`.
    nodes: Vec<Node>,
    /// Scratch for walks (not part of the value).
    stack: Vec<u32>,
    frames: Vec<(u32, u32)>,
}

impl Clone for TreeClock {
    fn clone(&self) -> Self {
        TreeClock {
            root: if self.nodes.is_empty() {
                NONE
            } else {
                self.root
            },
            clks: self.clks.clone(),
            nodes: self.nodes.clone(),
            stack: Vec::new(),
            frames: Vec::new(),
        }
    }
}

impl fmt::Debug for TreeClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TreeClock(root {:?}, {:?})",
            self.root_thread(),
            self.to_vector()
        )
    }
}

impl PartialEq for TreeClock {
    /// Equal as vector clocks (the shapes may differ).
    fn eq(&self, other: &Self) -> bool {
        self.to_vector() == other.to_vector()
    }
}

impl TreeClock {
    /// The empty clock.
    pub fn new() -> TreeClock {
        TreeClock {
            root: NONE,
            ..TreeClock::default()
        }
    }

    /// The root thread, if the clock is not empty.
    pub fn root_thread(&self) -> Option<ThreadId> {
        (self.root != NONE && !self.nodes.is_empty()).then_some(ThreadId(self.root))
    }

    #[inline]
    fn clk(&self, t: u32) -> Time {
        self.clks.get(t as usize).copied().unwrap_or(0)
    }

    fn root(&self) -> u32 {
        if self.clks.is_empty() {
            NONE
        } else {
            self.root
        }
    }

    fn ensure(&mut self, t: u32) {
        if t as usize >= self.nodes.len() {
            self.nodes.resize(t as usize + 1, EMPTY);
            self.clks.resize(t as usize + 1, 0);
        }
    }

    fn detach(&mut self, v: u32) {
        let n = self.nodes[v as usize];
        if n.prev != NONE {
            self.nodes[n.prev as usize].next = n.next;
        } else if n.parent != NONE {
            self.nodes[n.parent as usize].first_child = n.next;
        }
        if n.next != NONE {
            self.nodes[n.next as usize].prev = n.prev;
        }
        let m = &mut self.nodes[v as usize];
        m.parent = NONE;
        m.next = NONE;
        m.prev = NONE;
    }

    fn push_front(&mut self, v: u32, parent: u32) {
        let head = self.nodes[parent as usize].first_child;
        if head != NONE {
            self.nodes[head as usize].prev = v;
        }
        self.nodes[parent as usize].first_child = v;
        let m = &mut self.nodes[v as usize];
        m.parent = parent;
        m.prev = NONE;
        m.next = head;
    }

    /// Deep copy (the always-correct path).
    fn deep_copy(&mut self, other: &TreeClock) {
        self.nodes.clear();
        self.nodes.extend_from_slice(&other.nodes);
        self.clks.clear();
        self.clks.extend_from_slice(&other.clks);
        self.root = other.root();
    }

    /// Collects, in post-order, the nodes of `other` below (and including) `start` that
    /// bring news to `self`; with `keep` set, that node is collected too when reached
    /// (the old root in a monotone copy). Leaves them in `self.stack`.
    fn updated_nodes(&mut self, other: &TreeClock, start: u32, keep: u32) {
        self.stack.clear();
        self.frames.clear();
        self.frames
            .push((start, other.nodes[start as usize].first_child));
        while let Some(top) = self.frames.last_mut() {
            let (u, cur) = *top;
            if cur == NONE {
                self.frames.pop();
                self.stack.push(u);
                continue;
            }
            let child = &other.nodes[cur as usize];
            top.1 = child.next;
            if self.clk(cur) < other.clks[cur as usize] {
                self.frames.push((cur, child.first_child));
            } else if cur == keep {
                self.stack.push(cur);
            } else if child.aclk <= self.clk(u) {
                // Fact 1: this child and every later (earlier-attached) sibling are known.
                self.frames.last_mut().expect("frame").1 = NONE;
            }
        }
    }

    /// Moves the collected nodes over with `other`'s shape. The first popped node is
    /// `start`; it hangs below `anchor` at `anchor`'s time, or becomes the root when
    /// `anchor` is `NONE`.
    fn move_collected(&mut self, other: &TreeClock, anchor: u32) {
        let root = self.root();
        for i in 0..self.stack.len() {
            let u = self.stack[i];
            self.ensure(u);
            if u != root && self.clks[u as usize] > 0 {
                self.detach(u);
            }
        }
        while let Some(u) = self.stack.pop() {
            let src = other.nodes[u as usize];
            self.clks[u as usize] = self.clks[u as usize].max(other.clks[u as usize]);
            if u == root && anchor != NONE {
                // Only when a precondition failed: the target's own thread is never moved.
                continue;
            }
            if u == other.root() {
                // The source root.
                if anchor == NONE {
                    if root != NONE && root != u {
                        // Re-rooting: the old root gets re-hung when popped (it was
                        // collected) — make sure it has no stale links.
                        self.nodes[root as usize].parent = NONE;
                    }
                    self.root = u;
                    self.nodes[u as usize].aclk = 0;
                } else {
                    let t = self.clks[anchor as usize];
                    self.nodes[u as usize].aclk = t;
                    self.push_front(u, anchor);
                }
            } else {
                self.nodes[u as usize].aclk = src.aclk;
                self.push_front(u, src.parent);
            }
        }
    }

    /// Slow, always-correct join used when the target's root would be updated (a broken
    /// discipline): pointwise maximum, news hung below the root.
    fn join_slow(&mut self, other: &TreeClock) {
        let v = other.to_vector();
        self.join_vector(&v);
    }

    /// Checks the structural invariants (tests).
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let root = self.root();
        if root == NONE {
            assert!(self.clks.iter().all(|&c| c == 0));
            return;
        }
        assert!(self.clks[root as usize] > 0);
        assert_eq!(self.nodes[root as usize].parent, NONE);
        let mut seen = vec![false; self.nodes.len()];
        let mut stack = vec![root];
        while let Some(u) = stack.pop() {
            assert!(!seen[u as usize], "cycle at {u}");
            seen[u as usize] = true;
            let mut c = self.nodes[u as usize].first_child;
            let mut prev = NONE;
            let mut last_aclk = Time::MAX;
            while c != NONE {
                let n = &self.nodes[c as usize];
                assert_eq!(n.parent, u);
                assert_eq!(n.prev, prev);
                assert!(self.clks[c as usize] > 0);
                assert!(n.aclk <= last_aclk, "children out of order below {u}");
                assert!(n.aclk <= self.clks[u as usize]);
                last_aclk = n.aclk;
                stack.push(c);
                prev = c;
                c = n.next;
            }
        }
        assert_eq!(self.clks.len(), self.nodes.len());
        for (t, &c) in self.clks.iter().enumerate() {
            assert_eq!(c > 0, seen[t], "node {t} reachable iff present");
        }
    }
}

impl Clock for TreeClock {
    fn for_thread(t: ThreadId) -> Self {
        let mut c = TreeClock::new();
        c.ensure(t.0);
        c.clks[t.index()] = 1;
        c.root = t.0;
        c
    }

    #[inline]
    fn get(&self, t: ThreadId) -> Time {
        self.clk(t.0)
    }

    #[inline]
    fn increment(&mut self, t: ThreadId) {
        if self.root() == t.0 {
            self.clks[t.index()] += 1;
        } else {
            // Not a thread clock of `t`: keep the value right, hang `t` below the root.
            let mut v = VectorClock::new();
            v.set(t, self.clk(t.0) + 1);
            self.join_vector(&v);
        }
    }

    fn join(&mut self, other: &Self) {
        let zr = other.root();
        if zr == NONE {
            return;
        }
        let root = self.root();
        if root == NONE {
            self.deep_copy(other);
            return;
        }
        if other.clks[zr as usize] <= self.clk(zr) {
            return; // Fact 2: nothing new.
        }
        if zr != root && other.clk(root) > self.clks[root as usize] {
            // Some clock knows more of our own thread than we do: not a thread clock.
            self.join_slow(other);
            return;
        }
        if zr == root {
            self.join_slow(other);
            return;
        }
        self.updated_nodes(other, zr, NONE);
        self.move_collected(other, root);
    }

    fn copy_from(&mut self, other: &Self) {
        let zr = other.root();
        let root = self.root();
        if zr == NONE {
            self.nodes.clear();
            self.clks.clear();
            self.root = NONE;
            return;
        }
        // Fact 2: `self ⊑ other` iff `other` knows our root's time.
        if root == NONE || other.clk(root) < self.clks[root as usize] {
            self.deep_copy(other);
            return;
        }
        debug_assert!(
            self.to_vector().le(&other.to_vector()),
            "tree clock discipline broken: {self:?} ⋢ {other:?}"
        );
        self.updated_nodes(other, zr, root);
        if root != zr && !self.stack.contains(&root) {
            // Cannot happen under the discipline (fact 2); stay correct anyway.
            self.deep_copy(other);
            return;
        }
        self.move_collected(other, NONE);
        debug_assert_eq!(self.root, zr);
    }

    fn join_vector(&mut self, v: &VectorClock) {
        let mut root = self.root();
        for (j, &k) in v.as_slice().iter().enumerate() {
            let j = j as u32;
            if k <= self.clk(j) {
                continue;
            }
            self.ensure(j);
            if root == NONE {
                root = j;
                self.root = j;
                self.clks[j as usize] = k;
                continue;
            }
            if j == root {
                self.clks[j as usize] = k;
                continue;
            }
            if self.clks[j as usize] > 0 {
                self.detach(j);
            }
            self.clks[j as usize] = k;
            self.nodes[j as usize].aclk = self.clks[root as usize];
            self.push_front(j, root);
        }
    }

    fn join_into_vector(&self, v: &mut VectorClock) {
        for (t, &c) in self.clks.iter().enumerate() {
            if c > v.get(ThreadId(t as u32)) {
                v.set(ThreadId(t as u32), c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(i: u32) -> ThreadId {
        ThreadId(i)
    }

    #[test]
    fn join_and_copy_follow_vectors() {
        let mut a = TreeClock::for_thread(t(0));
        let mut b = TreeClock::for_thread(t(1));
        let mut l = TreeClock::new();
        // T0 releases, T1 acquires.
        l.copy_from(&a);
        a.increment(t(0));
        b.join(&l);
        assert_eq!(b.get(t(0)), 1);
        assert_eq!(b.get(t(1)), 1);
        b.increment(t(1));
        l.copy_from(&b);
        l.check_invariants();
        assert_eq!(l.root_thread(), Some(t(1)));
        a.join(&l);
        a.check_invariants();
        assert_eq!(a.to_vector().as_slice(), &[2, 2]);
    }

    /// One step of a random synchronisation history, applied the way the engines do.
    #[derive(Clone, Debug)]
    enum Step {
        Release(u8, u8),
        Acquire(u8, u8),
        Fork(u8, u8),
        Join(u8, u8),
        VolWrite(u8, u8),
        VolRead(u8, u8),
        Signal(u8, u8),
        Wait(u8, u8),
        Write(u8, u8),
        Read(u8, u8),
    }

    fn step() -> impl Strategy<Value = Step> {
        (0u8..10, 0u8..12, 0u8..3).prop_map(|(k, a, b)| match k {
            0 => Step::Release(a, b),
            1 => Step::Acquire(a, b),
            2 => Step::Fork(a, b),
            3 => Step::Join(a, b),
            4 => Step::VolWrite(a, b),
            5 => Step::VolRead(a, b),
            6 => Step::Signal(a, b),
            7 => Step::Wait(a, b),
            8 => Step::Write(a, b),
            _ => Step::Read(a, b),
        })
    }

    /// Where the objects of a step's kind start in `Sys::obj`: locks, conditions, variables.
    fn object_base(s: &Step) -> usize {
        match s {
            Step::Release(..) | Step::Acquire(..) => 0,
            Step::Signal(..) | Step::Wait(..) => 3,
            _ => 6,
        }
    }

    struct Sys<C> {
        th: Vec<C>,
        obj: Vec<C>,
        vol: Vec<VectorClock>,
    }

    impl<C: Clock> Sys<C> {
        fn new(n: usize) -> Self {
            Sys {
                th: (0..n).map(|i| C::for_thread(t(i as u32))).collect(),
                obj: vec![C::default(); 9],
                vol: vec![VectorClock::new(); 3],
            }
        }
        fn apply(&mut self, s: &Step) {
            let n = self.th.len();
            match *s {
                Step::Release(a, o) | Step::Signal(a, o) | Step::Write(a, o) => {
                    let (a, o) = (a as usize % n, o as usize + object_base(s));
                    self.obj[o].copy_from(&self.th[a]);
                    self.th[a].increment(t(a as u32));
                }
                Step::Acquire(a, o) | Step::Wait(a, o) | Step::Read(a, o) => {
                    let (a, o) = (a as usize % n, o as usize + object_base(s));
                    self.th[a].join(&self.obj[o]);
                }
                Step::Fork(a, b) | Step::Join(a, b) => {
                    let (a, b) = (a as usize % n, b as usize % n);
                    if a == b {
                        return;
                    }
                    let other = self.th[b].clone();
                    if matches!(s, Step::Fork(..)) {
                        let me = self.th[a].clone();
                        self.th[b].join(&me);
                        self.th[a].increment(t(a as u32));
                    } else {
                        self.th[a].join(&other);
                        self.th[b].increment(t(b as u32));
                    }
                }
                Step::VolWrite(a, x) => {
                    let a = a as usize % n;
                    self.th[a].join_into_vector(&mut self.vol[x as usize]);
                    self.th[a].increment(t(a as u32));
                }
                Step::VolRead(a, x) => {
                    let a = a as usize % n;
                    let v = self.vol[x as usize].clone();
                    self.th[a].join_vector(&v);
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(600))]
        /// Tree clocks hold the same values as vector clocks after every step of a random
        /// history, and keep their structural invariants.
        #[test]
        fn tree_equals_vector(threads in 2usize..9, steps in prop::collection::vec(step(), 0..80)) {
            let mut v = Sys::<VectorClock>::new(threads);
            let mut tc = Sys::<TreeClock>::new(threads);
            for s in &steps {
                v.apply(s);
                tc.apply(s);
                for (a, b) in v.th.iter().zip(&tc.th).chain(v.obj.iter().zip(&tc.obj)) {
                    b.check_invariants();
                    prop_assert_eq!(a.clone(), b.to_vector(), "after {:?}", s);
                }
                prop_assert_eq!(&v.vol, &tc.vol);
            }
        }
    }
}
