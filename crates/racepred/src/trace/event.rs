//! The event model: dense integer ids and a 16-byte `Copy` event.
//!
//! Readers intern every name once (thread, variable, lock, location, …) into a dense `u32`
//! id; analyses index `Vec`s by these ids and never see a string on the hot path. Names come
//! back only when a report is written, through [`Names`](super::Names).

use std::fmt;

macro_rules! dense_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        #[repr(transparent)]
        pub struct $name(pub u32);

        impl $name {
            /// The id for "no such object" (an `end` without argument, a missing location).
            pub const NONE: $name = $name(u32::MAX);

            #[inline]
            pub const fn new(index: usize) -> Self {
                $name(index as u32)
            }

            /// The id as a `Vec` index.
            #[inline]
            pub const fn index(self) -> usize {
                self.0 as usize
            }

            #[inline]
            pub const fn is_none(self) -> bool {
                self.0 == u32::MAX
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                if self.is_none() {
                    write!(f, concat!(stringify!($name), "(none)"))
                } else {
                    write!(f, concat!(stringify!($name), "({})"), self.0)
                }
            }
        }
    };
}

dense_id!(
    /// A thread.
    ThreadId
);
dense_id!(
    /// A shared variable (plain or volatile).
    VarId
);
dense_id!(
    /// A lock (mutex / monitor).
    LockId
);
dense_id!(
    /// A source location.
    LocId
);
dense_id!(
    /// A condition (target of `sig` / `wait`).
    CondId
);
dense_id!(
    /// A method (target of `mbegin` / `mend`) or transaction label (`begin` / `end`).
    MethodId
);
dense_id!(
    /// An address reachable from the arguments of an untraced method call (RDIT).
    AddrId
);

/// The operation of an event. `#[repr(u8)]`: the discriminant is also the binary encoding.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[repr(u8)]
pub enum Op {
    /// `r(V)`: read of a variable.
    Read = 0,
    /// `w(V)`: write of a variable.
    Write = 1,
    /// `acq(L)`: lock acquire.
    Acquire = 2,
    /// `rel(L)`: lock release.
    Release = 3,
    /// `fork(T)`: start of another thread.
    Fork = 4,
    /// `join(T)`: wait for another thread to end.
    Join = 5,
    /// `vr(V)`: volatile / atomic read (synchronisation, never racy).
    VolatileRead = 6,
    /// `vw(V)`: volatile / atomic write (synchronisation, never racy).
    VolatileWrite = 7,
    /// `sig(C)`: notify on a condition.
    Signal = 8,
    /// `wait(C)`: wait on a condition; happens after the latest `sig` on it.
    Wait = 9,
    /// `mbegin(M;A1,A2,…)`: call into an untraced method with the addresses reachable from
    /// its arguments (RDIT barrier pair start). The addresses are side data of the event.
    MethodBegin = 10,
    /// `mend(M)`: return from an untraced method (RDIT barrier pair end).
    MethodEnd = 11,
    /// `begin` / `begin(M)`: transaction start (atomicity traces; ignored by race analyses).
    Begin = 12,
    /// `end` / `end(M)`: transaction end (ignored by race analyses).
    End = 13,
    /// `let(b=EXPR)`: a local computation of a value trace (RECIPE; ignored by every analysis
    /// but the SMT predictor, which reads the expression from [`values`](super::values)).
    Local = 14,
    /// `br(COND)`: a branch of a value trace whose condition held as written (RECIPE; ignored
    /// by every analysis but the SMT predictor).
    Branch = 15,
}

impl Op {
    pub const ALL: [Op; 16] = [
        Op::Read,
        Op::Write,
        Op::Acquire,
        Op::Release,
        Op::Fork,
        Op::Join,
        Op::VolatileRead,
        Op::VolatileWrite,
        Op::Signal,
        Op::Wait,
        Op::MethodBegin,
        Op::MethodEnd,
        Op::Begin,
        Op::End,
        Op::Local,
        Op::Branch,
    ];

    /// The operation for a binary discriminant.
    #[inline]
    pub fn from_u8(b: u8) -> Option<Op> {
        Op::ALL.get(b as usize).copied()
    }

    /// The STD spelling (`r`, `w`, `acq`, …).
    pub const fn std_name(self) -> &'static str {
        match self {
            Op::Read => "r",
            Op::Write => "w",
            Op::Acquire => "acq",
            Op::Release => "rel",
            Op::Fork => "fork",
            Op::Join => "join",
            Op::VolatileRead => "vr",
            Op::VolatileWrite => "vw",
            Op::Signal => "sig",
            Op::Wait => "wait",
            Op::MethodBegin => "mbegin",
            Op::MethodEnd => "mend",
            Op::Begin => "begin",
            Op::End => "end",
            Op::Local => "let",
            Op::Branch => "br",
        }
    }

    /// The operation for an STD spelling.
    #[inline]
    pub fn from_std_name(name: &[u8]) -> Option<Op> {
        Some(match name {
            b"r" => Op::Read,
            b"w" => Op::Write,
            b"acq" => Op::Acquire,
            b"rel" => Op::Release,
            b"fork" => Op::Fork,
            b"join" => Op::Join,
            b"vr" => Op::VolatileRead,
            b"vw" => Op::VolatileWrite,
            b"sig" => Op::Signal,
            b"wait" => Op::Wait,
            b"mbegin" => Op::MethodBegin,
            b"mend" => Op::MethodEnd,
            b"begin" => Op::Begin,
            b"end" => Op::End,
            b"let" => Op::Local,
            b"br" => Op::Branch,
            _ => return None,
        })
    }

    /// Which name table the target of this operation lives in.
    pub const fn target_kind(self) -> NameKind {
        match self {
            Op::Read | Op::Write | Op::VolatileRead | Op::VolatileWrite => NameKind::Var,
            Op::Acquire | Op::Release => NameKind::Lock,
            Op::Fork | Op::Join => NameKind::Thread,
            Op::Signal | Op::Wait => NameKind::Cond,
            Op::MethodBegin | Op::MethodEnd | Op::Begin | Op::End => NameKind::Method,
            // Their argument is an expression, kept by the value-trace reader; the event
            // itself has no target (`NONE`).
            Op::Local | Op::Branch => NameKind::Method,
        }
    }

    /// True for the target-less-allowed operations (`begin`, `end`) and the value-trace
    /// operations whose argument is an expression, not a name (`let`, `br`).
    pub const fn target_optional(self) -> bool {
        matches!(self, Op::Begin | Op::End | Op::Local | Op::Branch)
    }

    /// `let` and `br`: value-trace events, thread-local and ignored by race analyses.
    #[inline]
    pub const fn is_value_op(self) -> bool {
        matches!(self, Op::Local | Op::Branch)
    }

    /// A plain (non-volatile) read or write: the events that can race.
    #[inline]
    pub const fn is_access(self) -> bool {
        matches!(self, Op::Read | Op::Write)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.std_name())
    }
}

/// The name tables of a trace.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum NameKind {
    Thread,
    Var,
    Lock,
    Loc,
    Cond,
    Method,
    Addr,
}

impl NameKind {
    pub const ALL: [NameKind; 7] = [
        NameKind::Thread,
        NameKind::Var,
        NameKind::Lock,
        NameKind::Loc,
        NameKind::Cond,
        NameKind::Method,
        NameKind::Addr,
    ];
}

/// One event of a trace: `(thread, operation, target, location)`.
///
/// `target` is a `VarId`, `LockId`, `ThreadId`, `CondId` or `MethodId` according to
/// [`Op::target_kind`]; use the typed accessors. The address set of an `mbegin` and the
/// global access number of SSHB's Go logs are side data kept by the reader or the
/// [`Trace`](super::Trace), so the event stays 16 bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(C)]
pub struct Event {
    pub thread: ThreadId,
    pub target: u32,
    pub loc: LocId,
    pub op: Op,
    /// Explicit zero padding: every byte of an event is initialised, so a block of events
    /// may be read as plain integers (PACER's vectorised filter loads 8 events at a time).
    pad: [u8; 3],
}

// Pinned like TSan's shadow word: analyses keep events in `Vec`s and copy them freely.
const _: () = assert!(std::mem::size_of::<Event>() == 16);

/// `event.NAME()` for each `NAME -> ID, KIND`: the target as an `ID`, for an event whose
/// operation's target is of kind `KIND` (debug-asserted).
macro_rules! typed_targets {
    ($($(#[$doc:meta])* $name:ident -> $id:ident, $kind:expr;)*) => {
        $(
            $(#[$doc])*
            #[inline]
            pub fn $name(&self) -> $id {
                debug_assert_eq!(self.op.target_kind(), $kind);
                $id(self.target)
            }
        )*
    };
}

/// `Event::NAME(t, x)` for each `NAME(OP)`: the event `OP` of thread `t` on target `x`,
/// without location (for hand-made traces).
macro_rules! event_constructors {
    ($($(#[$doc:meta])* $name:ident($op:expr),)*) => {
        $(
            $(#[$doc])*
            #[inline]
            pub fn $name(t: u32, x: u32) -> Event {
                Event::new(ThreadId(t), $op, x, LocId::NONE)
            }
        )*
    };
}

impl Event {
    #[inline]
    pub const fn new(thread: ThreadId, op: Op, target: u32, loc: LocId) -> Event {
        Event {
            thread,
            target,
            loc,
            op,
            pad: [0; 3],
        }
    }
    event_constructors! {
        /// A read of variable `x` by thread `t`, without location.
        read(Op::Read),
        /// A write of variable `x` by thread `t`, without location.
        write(Op::Write),
        /// An acquire of lock `x` by thread `t`, without location.
        acquire(Op::Acquire),
        /// A release of lock `x` by thread `t`, without location.
        release(Op::Release),
        /// Thread `t` forks thread `x`, without location.
        fork(Op::Fork),
        /// Thread `t` joins thread `x`, without location.
        join(Op::Join),
    }

    typed_targets! {
        /// The variable of an access (plain or volatile).
        var -> VarId, NameKind::Var;
        /// The lock of an acquire / release.
        lock -> LockId, NameKind::Lock;
        /// The other thread of a fork / join.
        other_thread -> ThreadId, NameKind::Thread;
        /// The condition of a sig / wait.
        cond -> CondId, NameKind::Cond;
        /// The method of an mbegin / mend / begin / end (may be `NONE` for begin / end).
        method -> MethodId, NameKind::Method;
    }

    /// A plain read or write.
    #[inline]
    pub fn is_access(&self) -> bool {
        self.op.is_access()
    }
    #[inline]
    pub fn is_read(&self) -> bool {
        self.op == Op::Read
    }
    #[inline]
    pub fn is_write(&self) -> bool {
        self.op == Op::Write
    }

    /// Two plain accesses to the same variable from different threads, at least one a write.
    #[inline]
    pub fn conflicts_with(&self, other: &Event) -> bool {
        self.is_access()
            && other.is_access()
            && self.target == other.target
            && self.thread != other.thread
            && (self.is_write() || other.is_write())
    }
}
