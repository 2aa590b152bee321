//! The graph of Def. 11, kept compact, and reachability on it.
//!
//! Nodes are only the events that matter: endpoints of cross-thread HB edges, of WRD
//! candidate edges and of race pairs. Program order stays implicit as one chain per thread
//! over these nodes (any path between nodes through other events of a thread is a walk
//! along that chain). HB edges are one edge per raised clock component at a receive, so
//! the transitive closure is exactly HB; W2 candidate edges are HB edges already and are
//! left out. Nodes are numbered thread by thread in time order.
//!
//! WRD edges may point backwards in the trace, so the graph can have cycles (Example 2).
//! Tarjan's algorithm condenses it, and every strongly connected component gets a *reach
//! vector*: per thread, the earliest local time reachable from it (reachable sets are
//! upward closed along each thread). A query `e →* f` is then one comparison, which keeps
//! phase 2 linear in the number of pairs after an O((V + E)·k) precomputation.

use rustc_hash::FxHashMap;

use super::phase1::{Phase1, NONE};

/// Kind of a graph edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EdgeKind {
    /// Program order (the next node of the same thread).
    ProgramOrder,
    /// A cross-thread HB edge (release→acquire, fork, join, vw→vr, sig→wait).
    Sync,
    /// A WRD candidate edge `w → r` labelled W(r) (w ∈ W1(r)).
    Wrd,
}

/// Nodes a witness BFS may visit before it falls back to the pruned DFS: shortest paths
/// for small graphs, and no whole-graph search per witness in a giant component.
const BFS_BUDGET: usize = 20_000;

pub(crate) struct Graph {
    pub k: usize,
    pub node_event: Vec<u32>,
    node_thread: Vec<u32>,
    node_time: Vec<u32>,
    /// Node of each event (`NONE` if the event is not a node).
    pub node_of: Vec<u32>,
    adj_start: Vec<u32>,
    adj: Vec<u32>,
    adj_kind: Vec<EdgeKind>,
    pub scc: Vec<u32>,
    pub scc_size: Vec<u32>,
    reach: Vec<u32>,
    pub sync_edges: usize,
    pub wrd_edges: usize,
    pub po_edges: usize,
}

/// A path: the nodes after its start, each with the kind of the edge into it.
pub type Path = Vec<(u32, EdgeKind)>;

impl Graph {
    /// Builds the graph over the events marked in `marked` plus the endpoints of the edges.
    pub fn build(p: &Phase1, mut marked: Vec<bool>, wrd: &[(u32, u32)]) -> Graph {
        let k = p.num_threads();
        let mut sync: Vec<(u32, u32)> = Vec::with_capacity(p.sync_edges.len());
        for e in &p.sync_edges {
            if let (Some(s), Some(d)) = (p.event_at(e.src.0, e.src.1), p.event_at(e.dst.0, e.dst.1))
            {
                sync.push((s, d));
            }
        }
        for &(a, b) in sync.iter().chain(wrd.iter()) {
            marked[a as usize] = true;
            marked[b as usize] = true;
        }
        let mut node_of = vec![NONE; p.events.len()];
        let mut node_event = Vec::new();
        let mut node_thread = Vec::new();
        let mut node_time = Vec::new();
        for (t, evs) in p.thread_events.iter().enumerate() {
            for &e in evs {
                if marked[e as usize] {
                    node_of[e as usize] = node_event.len() as u32;
                    node_event.push(e);
                    node_thread.push(t as u32);
                    node_time.push(p.ltime[e as usize]);
                }
            }
        }
        let n = node_event.len();
        // CSR: program order first, then sync and WRD edges.
        let mut deg = vec![0u32; n + 1];
        let mut po = 0;
        for v in 0..n.saturating_sub(1) {
            if node_thread[v] == node_thread[v + 1] {
                deg[v] += 1;
                po += 1;
            }
        }
        for &(a, _) in sync.iter().chain(wrd.iter()) {
            deg[node_of[a as usize] as usize] += 1;
        }
        let mut adj_start = vec![0u32; n + 1];
        for v in 0..n {
            adj_start[v + 1] = adj_start[v] + deg[v];
        }
        let m = adj_start[n] as usize;
        let mut adj = vec![0u32; m];
        let mut adj_kind = vec![EdgeKind::ProgramOrder; m];
        let mut fill: Vec<u32> = adj_start[..n].to_vec();
        let mut put = |v: usize, u: u32, kind: EdgeKind| {
            let s = fill[v] as usize;
            adj[s] = u;
            adj_kind[s] = kind;
            fill[v] += 1;
        };
        for v in 0..n.saturating_sub(1) {
            if node_thread[v] == node_thread[v + 1] {
                put(v, v as u32 + 1, EdgeKind::ProgramOrder);
            }
        }
        for &(a, b) in &sync {
            put(
                node_of[a as usize] as usize,
                node_of[b as usize],
                EdgeKind::Sync,
            );
        }
        for &(a, b) in wrd {
            put(
                node_of[a as usize] as usize,
                node_of[b as usize],
                EdgeKind::Wrd,
            );
        }
        let mut g = Graph {
            k: k.max(1),
            node_event,
            node_thread,
            node_time,
            node_of,
            adj_start,
            adj,
            adj_kind,
            scc: Vec::new(),
            scc_size: Vec::new(),
            reach: Vec::new(),
            sync_edges: sync.len(),
            wrd_edges: wrd.len(),
            po_edges: po,
        };
        g.condense();
        g
    }

    pub fn nodes(&self) -> usize {
        self.node_event.len()
    }

    pub fn edges(&self) -> usize {
        self.adj.len()
    }

    #[inline]
    pub fn succ(&self, v: u32) -> impl Iterator<Item = (u32, EdgeKind)> + '_ {
        let (s, e) = (
            self.adj_start[v as usize] as usize,
            self.adj_start[v as usize + 1] as usize,
        );
        self.adj[s..e]
            .iter()
            .copied()
            .zip(self.adj_kind[s..e].iter().copied())
    }

    /// Iterative Tarjan; reach vectors filled as each component completes (successor
    /// components complete first).
    fn condense(&mut self) {
        let n = self.nodes();
        let k = self.k;
        let mut index = vec![NONE; n];
        let mut low = vec![0u32; n];
        let mut on_stack = vec![false; n];
        let mut stack: Vec<u32> = Vec::new();
        let mut call: Vec<(u32, u32)> = Vec::new();
        let mut scc = vec![NONE; n];
        let mut counter = 0u32;
        let mut members: Vec<u32> = Vec::new();
        for root in 0..n as u32 {
            if index[root as usize] != NONE {
                continue;
            }
            index[root as usize] = counter;
            low[root as usize] = counter;
            counter += 1;
            stack.push(root);
            on_stack[root as usize] = true;
            call.push((root, self.adj_start[root as usize]));
            while let Some(&(v, pos)) = call.last() {
                let vi = v as usize;
                if pos < self.adj_start[vi + 1] {
                    call.last_mut().unwrap().1 += 1;
                    let w = self.adj[pos as usize];
                    let wi = w as usize;
                    if index[wi] == NONE {
                        index[wi] = counter;
                        low[wi] = counter;
                        counter += 1;
                        stack.push(w);
                        on_stack[wi] = true;
                        call.push((w, self.adj_start[wi]));
                    } else if on_stack[wi] {
                        low[vi] = low[vi].min(index[wi]);
                    }
                    continue;
                }
                call.pop();
                if let Some(&(p, _)) = call.last() {
                    low[p as usize] = low[p as usize].min(low[vi]);
                }
                if low[vi] == index[vi] {
                    let c = self.scc_size.len() as u32;
                    members.clear();
                    loop {
                        let w = stack.pop().expect("tarjan stack");
                        on_stack[w as usize] = false;
                        scc[w as usize] = c;
                        members.push(w);
                        if w == v {
                            break;
                        }
                    }
                    self.scc_size.push(members.len() as u32);
                    let base = self.reach.len();
                    self.reach.resize(base + k, NONE);
                    for &w in &members {
                        let t = self.node_thread[w as usize] as usize;
                        let r = &mut self.reach[base + t];
                        *r = (*r).min(self.node_time[w as usize]);
                        let (s, e) = (
                            self.adj_start[w as usize] as usize,
                            self.adj_start[w as usize + 1] as usize,
                        );
                        for &u in &self.adj[s..e] {
                            let cu = scc[u as usize];
                            if cu != c {
                                let ub = cu as usize * k;
                                for j in 0..k {
                                    let x = self.reach[ub + j];
                                    if x < self.reach[base + j] {
                                        self.reach[base + j] = x;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        self.scc = scc;
    }

    /// True if node `b` is reachable from node `a` (reflexive).
    #[inline]
    pub fn reaches(&self, a: u32, b: u32) -> bool {
        let c = self.scc[a as usize] as usize;
        self.reach[c * self.k + self.node_thread[b as usize] as usize] <= self.node_time[b as usize]
    }

    /// True if `b` is reachable from `a` without the edge `skip` (`a` is its source).
    pub fn reaches_without(&self, a: u32, b: u32, skip: (u32, EdgeKind)) -> bool {
        if self.scc_size[self.scc[a as usize] as usize] == 1 {
            // No path from a successor comes back to `a`, so the skipped edge is unusable
            // from there: reachability from the other successors is exact.
            return self
                .succ(a)
                .any(|(s, kind)| (s, kind) != skip && self.reaches(s, b));
        }
        self.path_dfs(a, b, Some(skip)).is_some()
    }

    /// A path `a →+ b` by depth-first search pruned to nodes that can still reach `b`.
    /// Outside cycles it never backtracks (every pruned-in node but `b` has a successor
    /// that reaches `b`), so it costs about the path length; paths need not be shortest.
    pub fn path_dfs(&self, a: u32, b: u32, skip: Option<(u32, EdgeKind)>) -> Option<Path> {
        if !self.reaches(a, b) {
            return None;
        }
        let mut seen: rustc_hash::FxHashSet<u32> = Default::default();
        seen.insert(a);
        // Stack of (node, kind of edge into it, next successor position).
        let mut stack: Vec<(u32, EdgeKind, u32)> =
            vec![(a, EdgeKind::ProgramOrder, self.adj_start[a as usize])];
        while let Some(&mut (v, _, ref mut pos)) = stack.last_mut() {
            if *pos == self.adj_start[v as usize + 1] {
                stack.pop();
                continue;
            }
            let e = *pos as usize;
            *pos += 1;
            let (u, kind) = (self.adj[e], self.adj_kind[e]);
            if v == a && Some((u, kind)) == skip {
                continue;
            }
            if u == b {
                let mut out: Path = stack[1..].iter().map(|&(x, k, _)| (x, k)).collect();
                out.push((u, kind));
                return Some(out);
            }
            if seen.insert(u) && self.reaches(u, b) {
                stack.push((u, kind, self.adj_start[u as usize]));
            }
        }
        None
    }

    /// A shortest path `a →+ b` (nodes after `a`, with the kind of the edge into each),
    /// avoiding the out-edge `skip` of `a`. BFS pruned to nodes that can still reach `b`.
    pub fn path(&self, a: u32, b: u32, skip: Option<(u32, EdgeKind)>) -> Option<Path> {
        if !self.reaches(a, b) {
            return None;
        }
        let mut parent: FxHashMap<u32, (u32, EdgeKind)> = FxHashMap::default();
        let mut queue = std::collections::VecDeque::new();
        queue.push_back(a);
        parent.insert(a, (NONE, EdgeKind::ProgramOrder));
        while let Some(v) = queue.pop_front() {
            if parent.len() > BFS_BUDGET {
                return self.path_dfs(a, b, skip);
            }
            for (u, kind) in self.succ(v) {
                if v == a && Some((u, kind)) == skip {
                    continue;
                }
                if parent.contains_key(&u) || !self.reaches(u, b) {
                    continue;
                }
                parent.insert(u, (v, kind));
                if u == b {
                    let mut out = Vec::new();
                    let mut x = b;
                    while x != a {
                        let (p, kind) = parent[&x];
                        out.push((x, kind));
                        x = p;
                    }
                    out.reverse();
                    return Some(out);
                }
                queue.push_back(u);
            }
        }
        None
    }
}
