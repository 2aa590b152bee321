//! Typed errors with the file and position of the input that caused them.

use std::fmt;
use std::path::PathBuf;

/// Where in an input an error arose. Lines are 1-based (0 for binary inputs, which have
/// none); `event` is the 0-based index of the event the error belongs to, when known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Position {
    pub line: u64,
    pub byte: u64,
    pub event: Option<u64>,
}

/// A well-formedness rule of SPEC §1 (or of a reader's own structure).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Rule {
    /// A lock is held by at most one thread.
    LockHeld,
    /// A thread releases only locks it holds.
    ReleaseNotHeld,
    /// A forked thread acts only after its fork (and is forked at most once).
    ActBeforeFork,
    /// A thread is forked at most once.
    DoubleFork,
    /// A thread forks / joins another thread, not itself.
    SelfForkJoin,
    /// A joined thread acts no more after the join.
    ActAfterJoin,
    /// An `mend` closes the innermost open `mbegin` of the same method.
    MethodEndMismatch,
}

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Rule::LockHeld => "lock-held",
            Rule::ReleaseNotHeld => "release-not-held",
            Rule::ActBeforeFork => "act-before-fork",
            Rule::DoubleFork => "double-fork",
            Rule::SelfForkJoin => "self-fork-join",
            Rule::ActAfterJoin => "act-after-join",
            Rule::MethodEndMismatch => "method-end-mismatch",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What went wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading the input failed.
    Io(std::io::Error),
    /// A line or record does not have the shape of its format.
    Syntax(String),
    /// An operation name the format does not know.
    UnknownOp(String),
    /// A thread, target or location name is empty.
    EmptyName(&'static str),
    /// The input is not UTF-8 where text is required.
    NonUtf8,
    /// A binary input ended in the middle of a record.
    Truncated(String),
    /// A binary input has a bad magic, version or header.
    BadHeader(String),
    /// The input format could not be determined.
    UnknownFormat(String),
    /// The trace breaks a well-formedness rule.
    IllFormed { rule: Rule, explanation: String },
    /// A search (the oracle, a diagnosis) would exceed its budget.
    Budget(String),
    /// An option or parameter is invalid.
    Invalid(String),
    /// The input or output needs a part of racepred this build leaves out: `what` (say,
    /// "xz compression") is provided by the Cargo feature `feature`.
    NotBuilt { what: String, feature: &'static str },
}

/// A racepred error: what went wrong, and where (file, line, byte, event) when it is about
/// an input. Boxed so `Result<_, Error>` stays one word.
pub struct Error(Box<Inner>);

struct Inner {
    kind: ErrorKind,
    path: Option<PathBuf>,
    pos: Option<Position>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind) -> Error {
        Error(Box::new(Inner {
            kind,
            path: None,
            pos: None,
        }))
    }

    pub fn syntax(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Syntax(msg.into()))
    }

    pub fn invalid(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Invalid(msg.into()))
    }

    pub fn ill_formed(rule: Rule, explanation: impl Into<String>) -> Error {
        Error::new(ErrorKind::IllFormed {
            rule,
            explanation: explanation.into(),
        })
    }

    /// Attaches a position (kept if one is already set).
    pub fn at(mut self, pos: Position) -> Error {
        if self.0.pos.is_none() {
            self.0.pos = Some(pos);
        }
        self
    }

    /// Attaches a file path (kept if one is already set).
    pub fn in_file(mut self, path: impl Into<PathBuf>) -> Error {
        if self.0.path.is_none() {
            self.0.path = Some(path.into());
        }
        self
    }

    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    pub fn position(&self) -> Option<Position> {
        self.0.pos
    }

    pub fn path(&self) -> Option<&std::path::Path> {
        self.0.path.as_deref()
    }

    /// The rule, if this is a well-formedness error.
    pub fn rule(&self) -> Option<Rule> {
        match &self.0.kind {
            ErrorKind::IllFormed { rule, .. } => Some(*rule),
            _ => None,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::new(ErrorKind::Io(e))
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Io(e) => write!(f, "I/O error: {e}"),
            ErrorKind::Syntax(m) => write!(f, "syntax: {m}"),
            ErrorKind::UnknownOp(op) => write!(f, "syntax: unknown operation `{op}`"),
            ErrorKind::EmptyName(what) => write!(f, "syntax: empty {what} name"),
            ErrorKind::NonUtf8 => write!(f, "syntax: line is not valid UTF-8"),
            ErrorKind::Truncated(m) => write!(f, "truncated: {m}"),
            ErrorKind::BadHeader(m) => write!(f, "bad header: {m}"),
            ErrorKind::UnknownFormat(m) => write!(f, "unknown format: {m}"),
            ErrorKind::IllFormed { rule, explanation } => write!(f, "{rule}: {explanation}"),
            ErrorKind::Budget(m) => write!(f, "over budget: {m}"),
            ErrorKind::Invalid(m) => write!(f, "invalid: {m}"),
            ErrorKind::NotBuilt { what, feature } => write!(
                f,
                "{what} is not built in: racepred was built without its `{feature}` feature"
            ),
        }
    }
}

/// `file:line: message` (or `file: byte N: message` for binary inputs).
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &*self.0;
        if let Some(p) = &inner.path {
            write!(f, "{}:", p.display())?;
        }
        match inner.pos {
            Some(pos) if pos.line > 0 => write!(f, "{}: ", pos.line)?,
            // An input without lines: its event (0-based) where no byte offset says more.
            Some(Position {
                byte: 0,
                event: Some(e),
                ..
            }) => write!(f, " event {e}: ")?,
            Some(pos) => write!(f, " byte {}: ", pos.byte)?,
            None if inner.path.is_some() => f.write_str(" ")?,
            None => {}
        }
        write!(f, "{}", inner.kind)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({self})")
    }
}

/// The I/O error's text is part of `Display`, so it is not repeated as a `source`.
impl std::error::Error for Error {}
