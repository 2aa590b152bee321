//! Random small programs: their value traces under a random schedule, and an exhaustive
//! explorer of all their schedules (the ground truth for the SMT predictor's tests).
//!
//! A program has a main thread `T0` that writes 0 to every variable, forks the workers and
//! joins them. A worker runs statements: `r = x` (read), `x = e` (write), `r = e` (local),
//! `lock(l)` / `unlock(l)` (balanced) and `if (c) {…} else {…}` whose blocks are
//! straight-line reads, writes and locals. Every statement has its own location, so a race of
//! the program is a pair of locations whose statements can be the next actions of two threads
//! at once, on the same variable, one a write (SPEC §2's enabled notion, over all schedules
//! of the program rather than reorderings of one trace).
//!
//! [`Program::run`] executes one random schedule and records the value trace (`br` events
//! with the condition that held, and the untaken block of every `if` as its alternative
//! path, as RECIPE §IV's symbolic execution would give it). [`Program::races`] explores every
//! schedule, memoising states.

use std::collections::BTreeSet;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use rustc_hash::FxHashSet;

use crate::trace::values::{AltPath, Ann, BinOp, Expr, UnOp, ValueTrace};
use crate::trace::{Event, Interner, LocId, Names, Op, ThreadId, Trace};

/// One instruction of a thread (statements flattened, `if` into a branch and a jump).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Instr {
    Read {
        var: u32,
        reg: u32,
    },
    Write {
        var: u32,
        expr: Expr,
    },
    Let {
        reg: u32,
        expr: Expr,
    },
    Lock(u32),
    Unlock(u32),
    /// Continue at `else_at` when `cond` is 0; the then-block runs up to `join_at - 1`,
    /// which is a jump to `join_at`... (see `Jump`).
    Branch {
        cond: Expr,
        else_at: usize,
        end_at: usize,
    },
    Jump(usize),
    Fork(u32),
    Join(u32),
}

/// A program: per thread its instructions and each instruction's location.
#[derive(Clone, Debug)]
pub struct Program {
    pub threads: Vec<Vec<Instr>>,
    pub locs: Vec<Vec<u32>>,
    pub vars: u32,
    pub locks: u32,
    pub regs: u32,
}

/// Sizes of a random program.
#[derive(Clone, Copy, Debug)]
pub struct ProgramConfig {
    pub workers: u32,
    pub vars: u32,
    pub locks: u32,
    pub regs: u32,
    /// Statements per worker (at most).
    pub statements: u32,
}

impl Default for ProgramConfig {
    fn default() -> Self {
        ProgramConfig {
            workers: 2,
            vars: 2,
            locks: 1,
            regs: 2,
            statements: 5,
        }
    }
}

impl Program {
    /// A random program.
    pub fn random(cfg: ProgramConfig, seed: u64) -> Program {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let mut p = Program {
            threads: Vec::new(),
            locs: Vec::new(),
            vars: cfg.vars.max(1),
            locks: cfg.locks,
            regs: cfg.regs.max(1),
        };
        let mut loc = 1u32;
        // Main: init, fork, join.
        let mut main = Vec::new();
        for v in 0..p.vars {
            main.push(Instr::Write {
                var: v,
                expr: Expr::Const(0),
            });
        }
        for w in 1..=cfg.workers {
            main.push(Instr::Fork(w));
        }
        for w in 1..=cfg.workers {
            main.push(Instr::Join(w));
        }
        let main_locs = (0..main.len() as u32).map(|_| 0).collect();
        p.threads.push(main);
        p.locs.push(main_locs);
        for _ in 0..cfg.workers {
            let mut code = Vec::new();
            let mut locs = Vec::new();
            let mut set: Vec<u32> = Vec::new();
            let mut held: Option<u32> = None;
            let n = rng.gen_range(1..=cfg.statements.max(1));
            for _ in 0..n {
                let choice = rng.gen_range(0..10);
                match choice {
                    0..=2 => {
                        let reg = rng.gen_range(0..p.regs);
                        code.push(Instr::Read {
                            var: rng.gen_range(0..p.vars),
                            reg,
                        });
                        set.push(reg);
                    }
                    3..=4 => code.push(Instr::Write {
                        var: rng.gen_range(0..p.vars),
                        expr: rand_expr(&mut rng, &set),
                    }),
                    5 => {
                        let reg = rng.gen_range(0..p.regs);
                        code.push(Instr::Let {
                            reg,
                            expr: rand_expr(&mut rng, &set),
                        });
                        set.push(reg);
                    }
                    6 if p.locks > 0 => match held {
                        None => {
                            let l = rng.gen_range(0..p.locks);
                            code.push(Instr::Lock(l));
                            held = Some(l);
                        }
                        Some(l) => {
                            code.push(Instr::Unlock(l));
                            held = None;
                        }
                    },
                    _ => {
                        // if (c) { A } else { B }: straight-line blocks.
                        let cond = rand_cond(&mut rng, &set);
                        let at = code.len();
                        code.push(Instr::Branch {
                            cond,
                            else_at: 0,
                            end_at: 0,
                        });
                        locs.push(loc);
                        loc += 1;
                        let block = |rng: &mut Pcg64Mcg,
                                     code: &mut Vec<Instr>,
                                     locs: &mut Vec<u32>,
                                     loc: &mut u32| {
                            let mut local = set.clone();
                            for _ in 0..rng.gen_range(1..=2) {
                                let ins = if rng.gen_bool(0.5) {
                                    let reg = rng.gen_range(0..p.regs);
                                    local.push(reg);
                                    Instr::Read {
                                        var: rng.gen_range(0..p.vars),
                                        reg,
                                    }
                                } else {
                                    Instr::Write {
                                        var: rng.gen_range(0..p.vars),
                                        expr: rand_expr(rng, &local),
                                    }
                                };
                                code.push(ins);
                                locs.push(*loc);
                                *loc += 1;
                            }
                        };
                        block(&mut rng, &mut code, &mut locs, &mut loc);
                        let jump_at = code.len();
                        code.push(Instr::Jump(0));
                        locs.push(0);
                        let else_at = code.len();
                        block(&mut rng, &mut code, &mut locs, &mut loc);
                        let end_at = code.len();
                        code[jump_at] = Instr::Jump(end_at);
                        if let Instr::Branch {
                            else_at: e,
                            end_at: x,
                            ..
                        } = &mut code[at]
                        {
                            *e = else_at;
                            *x = end_at;
                        }
                        continue;
                    }
                }
                locs.push(loc);
                loc += 1;
            }
            if let Some(l) = held {
                code.push(Instr::Unlock(l));
                locs.push(loc);
                loc += 1;
            }
            p.threads.push(code);
            p.locs.push(locs);
        }
        p
    }

    fn regs_name(&self) -> Interner {
        let mut regs = Interner::default();
        for r in 0..self.regs {
            regs.intern(format!("r{r}").as_bytes());
        }
        regs
    }

    /// Runs one random schedule and records its value trace. `None` if the schedule
    /// deadlocks (the recorded trace would end with a thread stuck; try another seed).
    pub fn run(&self, seed: u64) -> Option<ValueTrace> {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let mut s = State::new(self);
        let mut events = Vec::new();
        let mut anns = Vec::new();
        let mut alts: Vec<AltPath> = Vec::new();
        loop {
            let enabled: Vec<usize> = (0..self.threads.len())
                .filter(|&t| s.enabled(self, t))
                .collect();
            if enabled.is_empty() {
                if (0..self.threads.len()).all(|t| s.pc[t] == self.threads[t].len()) {
                    break;
                }
                return None;
            }
            let t = enabled[rng.gen_range(0..enabled.len())];
            let pc = s.pc[t];
            let loc = LocId(self.locs[t][pc]);
            let th = ThreadId(t as u32);
            let instr = &self.threads[t][pc];
            let regs = s.regs[t].clone();
            let env = |r: u32| Some(regs[r as usize]);
            let (ev, ann) = match instr {
                Instr::Read { var, reg } => (
                    Some(Event::new(th, Op::Read, *var, loc)),
                    Ann::Read {
                        reg: *reg,
                        observed: Some(s.mem[*var as usize]),
                    },
                ),
                Instr::Write { var, expr } => (
                    Some(Event::new(th, Op::Write, *var, loc)),
                    Ann::Write(expr.clone()),
                ),
                Instr::Let { reg, expr } => (
                    Some(Event::new(th, Op::Local, u32::MAX, loc)),
                    Ann::Let {
                        reg: *reg,
                        expr: expr.clone(),
                    },
                ),
                Instr::Lock(l) => (Some(Event::new(th, Op::Acquire, *l, loc)), Ann::None),
                Instr::Unlock(l) => (Some(Event::new(th, Op::Release, *l, loc)), Ann::None),
                Instr::Fork(u) => (Some(Event::new(th, Op::Fork, *u, loc)), Ann::None),
                Instr::Join(u) => (Some(Event::new(th, Op::Join, *u, loc)), Ann::None),
                Instr::Jump(_) => (None, Ann::None),
                Instr::Branch {
                    cond,
                    else_at,
                    end_at,
                } => {
                    let holds = cond.eval(&env).expect("registers set") != 0;
                    let (recorded, alt_range) = if holds {
                        (cond.clone(), *else_at..*end_at)
                    } else {
                        (
                            Expr::Un(UnOp::Not, Box::new(cond.clone())),
                            pc + 1..*else_at - 1,
                        )
                    };
                    // The untaken block, as the alternative path.
                    let mut path = AltPath {
                        branch: events.len(),
                        ..AltPath::default()
                    };
                    for k in alt_range {
                        let aloc = LocId(self.locs[t][k]);
                        match &self.threads[t][k] {
                            Instr::Read { var, reg } => {
                                path.events.push(Event::new(th, Op::Read, *var, aloc));
                                path.anns.push(Ann::Read {
                                    reg: *reg,
                                    observed: None,
                                });
                            }
                            Instr::Write { var, expr } => {
                                path.events.push(Event::new(th, Op::Write, *var, aloc));
                                path.anns.push(Ann::Write(expr.clone()));
                            }
                            other => unreachable!("blocks are straight-line: {other:?}"),
                        }
                        path.lines.push(0);
                    }
                    alts.push(path);
                    (
                        Some(Event::new(th, Op::Branch, u32::MAX, loc)),
                        Ann::Branch(recorded),
                    )
                }
            };
            s.step(self, t);
            if let Some(ev) = ev {
                events.push(ev);
                anns.push(ann);
            }
        }
        let mut trace = Trace::from_events(events);
        trace.names = self.names();
        Some(ValueTrace {
            trace,
            anns,
            regs: self.regs_name(),
            alts,
        })
    }

    /// Names: `T<i>`, `V<i>`, `L<i>`, locations `0..` (id = number).
    fn names(&self) -> Names {
        let mut names = Names::new();
        for t in 0..self.threads.len() {
            names.threads.intern(format!("T{t}").as_bytes());
        }
        for v in 0..self.vars {
            names.vars.intern(format!("V{v}").as_bytes());
        }
        for l in 0..self.locks {
            names.locks.intern(format!("L{l}").as_bytes());
        }
        let max = self.locs.iter().flatten().copied().max().unwrap_or(0);
        for l in 0..=max {
            names.locs.intern(l.to_string().as_bytes());
        }
        names
    }

    /// Every race of the program over all its schedules: unordered pairs of locations
    /// (smaller first). `None` if the search visits more than `max_states` states.
    pub fn races(&self, max_states: usize) -> Option<BTreeSet<(u32, u32)>> {
        let mut seen: FxHashSet<State> = Default::default();
        let mut stack = vec![State::new(self)];
        let mut races = BTreeSet::new();
        while let Some(s) = stack.pop() {
            if !seen.insert(s.clone()) {
                continue;
            }
            if seen.len() > max_states {
                return None;
            }
            let nt = self.threads.len();
            for a in 0..nt {
                for b in a + 1..nt {
                    if let (Some((va, wa, la)), Some((vb, wb, lb))) =
                        (s.next_access(self, a), s.next_access(self, b))
                    {
                        if va == vb && (wa || wb) {
                            races.insert((la.min(lb), la.max(lb)));
                        }
                    }
                }
            }
            for t in 0..nt {
                if s.enabled(self, t) {
                    let mut n = s.clone();
                    n.step(self, t);
                    stack.push(n);
                }
            }
        }
        Some(races)
    }
}

fn rand_expr(rng: &mut Pcg64Mcg, set: &[u32]) -> Expr {
    let c = Expr::Const(rng.gen_range(0..4));
    if set.is_empty() || rng.gen_bool(0.3) {
        return c;
    }
    let r = Expr::Reg(set[rng.gen_range(0..set.len())]);
    match rng.gen_range(0..3) {
        0 => r,
        1 => Expr::Bin(BinOp::Add, Box::new(r), Box::new(c)),
        _ => Expr::Bin(BinOp::Mul, Box::new(r), Box::new(Expr::Const(2))),
    }
}

fn rand_cond(rng: &mut Pcg64Mcg, set: &[u32]) -> Expr {
    let lhs = if set.is_empty() {
        Expr::Const(rng.gen_range(0..2))
    } else {
        Expr::Reg(set[rng.gen_range(0..set.len())])
    };
    let op = [BinOp::Gt, BinOp::Eq, BinOp::Lt][rng.gen_range(0..3)];
    Expr::Bin(
        op,
        Box::new(lhs),
        Box::new(Expr::Const(rng.gen_range(0..3))),
    )
}

/// A program state: program counters, registers, memory, lock holders, started threads.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    pc: Vec<usize>,
    regs: Vec<Vec<i64>>,
    mem: Vec<i64>,
    holder: Vec<Option<u32>>,
    started: Vec<bool>,
}

impl State {
    fn new(p: &Program) -> State {
        let nt = p.threads.len();
        let mut started = vec![false; nt];
        started[0] = true;
        State {
            pc: vec![0; nt],
            regs: vec![vec![0; p.regs as usize]; nt],
            mem: vec![0; p.vars as usize],
            holder: vec![None; p.locks as usize],
            started,
        }
    }

    fn enabled(&self, p: &Program, t: usize) -> bool {
        if !self.started[t] || self.pc[t] >= p.threads[t].len() {
            return false;
        }
        match &p.threads[t][self.pc[t]] {
            Instr::Lock(l) => self.holder[*l as usize].is_none(),
            Instr::Join(u) => self.pc[*u as usize] >= p.threads[*u as usize].len(),
            _ => true,
        }
    }

    /// The next action of `t` if it is an access: (variable, is write, location).
    fn next_access(&self, p: &Program, t: usize) -> Option<(u32, bool, u32)> {
        if !self.started[t] {
            return None;
        }
        let mut pc = self.pc[t];
        // A jump is not an action: look through it.
        while let Some(Instr::Jump(to)) = p.threads[t].get(pc) {
            pc = *to;
        }
        match p.threads[t].get(pc)? {
            Instr::Read { var, .. } => Some((*var, false, p.locs[t][pc])),
            Instr::Write { var, .. } => Some((*var, true, p.locs[t][pc])),
            _ => None,
        }
    }

    fn step(&mut self, p: &Program, t: usize) {
        let pc = self.pc[t];
        let regs = &self.regs[t];
        let env = |r: u32| Some(regs[r as usize]);
        let mut next = pc + 1;
        match &p.threads[t][pc] {
            Instr::Read { var, reg } => self.regs[t][*reg as usize] = self.mem[*var as usize],
            Instr::Write { var, expr } => {
                self.mem[*var as usize] = expr.eval(&env).expect("registers have values")
            }
            Instr::Let { reg, expr } => {
                let v = expr.eval(&env).expect("registers have values");
                self.regs[t][*reg as usize] = v;
            }
            Instr::Lock(l) => self.holder[*l as usize] = Some(t as u32),
            Instr::Unlock(l) => self.holder[*l as usize] = None,
            Instr::Branch { cond, else_at, .. } => {
                if cond.eval(&env).expect("registers have values") == 0 {
                    next = *else_at;
                }
            }
            Instr::Jump(to) => next = *to,
            Instr::Fork(u) => self.started[*u as usize] = true,
            Instr::Join(_) => {}
        }
        self.pc[t] = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_record_consistent_value_traces() {
        for seed in 0..200 {
            let p = Program::random(ProgramConfig::default(), seed);
            let Some(vt) = p.run(seed) else { continue };
            vt.concrete()
                .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{p:?}"));
            assert!(crate::trace::validate::validate_trace(&vt.trace).is_empty());
            for a in &vt.alts {
                assert_eq!(vt.trace.events[a.branch].op, Op::Branch);
            }
        }
    }

    #[test]
    fn explorer_finds_an_unprotected_race() {
        // T1: x = 1; T2: r0 = x — one race, at locations 1 and 2.
        let p = Program {
            threads: vec![
                vec![
                    Instr::Write {
                        var: 0,
                        expr: Expr::Const(0),
                    },
                    Instr::Fork(1),
                    Instr::Fork(2),
                    Instr::Join(1),
                    Instr::Join(2),
                ],
                vec![Instr::Write {
                    var: 0,
                    expr: Expr::Const(1),
                }],
                vec![Instr::Read { var: 0, reg: 0 }],
            ],
            locs: vec![vec![0; 5], vec![1], vec![2]],
            vars: 1,
            locks: 0,
            regs: 1,
        };
        assert_eq!(p.races(1000).unwrap(), BTreeSet::from([(1, 2)]));
    }
}
