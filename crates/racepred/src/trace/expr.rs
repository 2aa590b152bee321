//! The value part of an STD line (the value-trace extension, [`super::values`]): the
//! expressions over a thread's registers and the annotation of each event. The STD reader
//! splits a line's value part off ([`ValuePart`]) and checks it here; [`super::values`]
//! keeps it. Grammar and semantics are in [`super::values`]' module doc.

use std::fmt;

use super::lines::trim;
use super::Interner;
use crate::error::{Error, Result};

/// The value part of an STD line (the value-trace extension, [`super::values`]), unparsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ValuePart<'a> {
    None,
    /// `w(x)=EXPR`: the expression.
    Written(&'a [u8]),
    /// `r(x)->REG` or `r(x)->REG=VALUE`.
    ReadInto(&'a [u8], Option<&'a [u8]>),
    /// `let(ARG)`.
    Let(&'a [u8]),
    /// `br(ARG)`.
    Cond(&'a [u8]),
}

/// A unary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

impl BinOp {
    /// The operator's spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }

    /// C precedence (higher binds tighter).
    fn precedence(self) -> u8 {
        match self {
            BinOp::Mul | BinOp::Div | BinOp::Rem => 10,
            BinOp::Add | BinOp::Sub => 9,
            BinOp::Shl | BinOp::Shr => 8,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 7,
            BinOp::Eq | BinOp::Ne => 6,
            BinOp::BitAnd => 5,
            BinOp::BitXor => 4,
            BinOp::BitOr => 3,
            BinOp::And => 2,
            BinOp::Or => 1,
        }
    }

    /// The concrete semantics (the SMT encoding mirrors it on 64-bit vectors).
    pub fn apply(self, a: i64, b: i64) -> i64 {
        match self {
            BinOp::Add => a.wrapping_add(b),
            BinOp::Sub => a.wrapping_sub(b),
            BinOp::Mul => a.wrapping_mul(b),
            BinOp::Div => {
                if b == 0 {
                    0
                } else {
                    a.wrapping_div(b)
                }
            }
            BinOp::Rem => {
                if b == 0 {
                    0
                } else {
                    a.wrapping_rem(b)
                }
            }
            BinOp::BitAnd => a & b,
            BinOp::BitOr => a | b,
            BinOp::BitXor => a ^ b,
            BinOp::Shl => a.wrapping_shl((b & 63) as u32),
            BinOp::Shr => a.wrapping_shr((b & 63) as u32),
            BinOp::Lt => (a < b) as i64,
            BinOp::Le => (a <= b) as i64,
            BinOp::Gt => (a > b) as i64,
            BinOp::Ge => (a >= b) as i64,
            BinOp::Eq => (a == b) as i64,
            BinOp::Ne => (a != b) as i64,
            BinOp::And => (a != 0 && b != 0) as i64,
            BinOp::Or => (a != 0 || b != 0) as i64,
        }
    }
}

/// An expression over a thread's registers (ids into [`ValueTrace::regs`]) and constants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    Const(i64),
    Reg(u32),
    Un(UnOp, Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
}

impl Expr {
    /// Evaluates with `reg` giving each register's value (`None`: undefined, and so is the
    /// result).
    pub fn eval(&self, reg: &impl Fn(u32) -> Option<i64>) -> Option<i64> {
        Some(match self {
            Expr::Const(c) => *c,
            Expr::Reg(r) => reg(*r)?,
            Expr::Un(UnOp::Neg, e) => e.eval(reg)?.wrapping_neg(),
            Expr::Un(UnOp::Not, e) => (e.eval(reg)? == 0) as i64,
            Expr::Bin(op, a, b) => op.apply(a.eval(reg)?, b.eval(reg)?),
        })
    }

    /// Every register the expression reads.
    pub fn registers(&self, out: &mut Vec<u32>) {
        match self {
            Expr::Const(_) => {}
            Expr::Reg(r) => out.push(*r),
            Expr::Un(_, e) => e.registers(out),
            Expr::Bin(_, a, b) => {
                a.registers(out);
                b.registers(out);
            }
        }
    }

    /// Displays the expression with register names from `regs`.
    pub fn display<'a>(&'a self, regs: &'a Interner) -> impl fmt::Display + 'a {
        ExprDisplay { e: self, regs }
    }
}

struct ExprDisplay<'a> {
    e: &'a Expr,
    regs: &'a Interner,
}

impl fmt::Display for ExprDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sub = |e| ExprDisplay { e, regs: self.regs };
        match self.e {
            Expr::Const(c) => write!(f, "{c}"),
            Expr::Reg(r) => f.write_str(self.regs.name(*r)),
            Expr::Un(UnOp::Neg, e) => write!(f, "-({})", sub(e)),
            Expr::Un(UnOp::Not, e) => write!(f, "!({})", sub(e)),
            Expr::Bin(op, a, b) => write!(f, "({}{}{})", sub(a), op.symbol(), sub(b)),
        }
    }
}

/// Parses an expression, interning register names into `regs`.
pub fn parse_expr(s: &[u8], regs: &mut Interner) -> Result<Expr> {
    let mut p = Parser { s, i: 0, regs };
    let e = p.expr(0)?;
    p.skip_ws();
    if p.i != s.len() {
        return Err(p.error("unexpected text after the expression"));
    }
    Ok(e)
}

struct Parser<'a, 'r> {
    s: &'a [u8],
    i: usize,
    regs: &'r mut Interner,
}

impl Parser<'_, '_> {
    fn error(&self, what: &str) -> Error {
        let shown: String = String::from_utf8_lossy(self.s).chars().take(80).collect();
        Error::syntax(format!(
            "bad expression `{shown}`: {what} at column {}",
            self.i + 1
        ))
    }

    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek_binop(&mut self) -> Option<(BinOp, usize)> {
        self.skip_ws();
        let rest = &self.s[self.i..];
        let two: &[(&[u8], BinOp)] = &[
            (b"<<", BinOp::Shl),
            (b">>", BinOp::Shr),
            (b"<=", BinOp::Le),
            (b">=", BinOp::Ge),
            (b"==", BinOp::Eq),
            (b"!=", BinOp::Ne),
            (b"&&", BinOp::And),
            (b"||", BinOp::Or),
        ];
        for (sym, op) in two {
            if rest.starts_with(sym) {
                return Some((*op, 2));
            }
        }
        let op = match rest.first()? {
            b'+' => BinOp::Add,
            b'-' => BinOp::Sub,
            b'*' => BinOp::Mul,
            b'/' => BinOp::Div,
            b'%' => BinOp::Rem,
            b'&' => BinOp::BitAnd,
            b'|' => BinOp::BitOr,
            b'^' => BinOp::BitXor,
            b'<' => BinOp::Lt,
            b'>' => BinOp::Gt,
            _ => return None,
        };
        Some((op, 1))
    }

    /// Precedence climbing: operators of precedence above `min`.
    fn expr(&mut self, min: u8) -> Result<Expr> {
        let mut lhs = self.unary()?;
        while let Some((op, len)) = self.peek_binop() {
            if op.precedence() <= min {
                break;
            }
            self.i += len;
            let rhs = self.expr(op.precedence())?;
            lhs = Expr::Bin(op, Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Expr> {
        self.skip_ws();
        match self.s.get(self.i) {
            None => Err(self.error("expected a value")),
            Some(b'!') => {
                self.i += 1;
                Ok(Expr::Un(UnOp::Not, Box::new(self.unary()?)))
            }
            Some(b'-') => {
                self.i += 1;
                // `-5` is a constant (so that i64::MIN can be written).
                if self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
                    return self.number(true);
                }
                Ok(Expr::Un(UnOp::Neg, Box::new(self.unary()?)))
            }
            Some(b'(') => {
                self.i += 1;
                let e = self.expr(0)?;
                self.skip_ws();
                if self.s.get(self.i) != Some(&b')') {
                    return Err(self.error("expected `)`"));
                }
                self.i += 1;
                Ok(e)
            }
            Some(c) if c.is_ascii_digit() => self.number(false),
            Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
                let start = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
                {
                    self.i += 1;
                }
                Ok(Expr::Reg(self.regs.intern(&self.s[start..self.i])))
            }
            Some(_) => Err(self.error("expected a number, a register or `(`")),
        }
    }

    fn number(&mut self, negative: bool) -> Result<Expr> {
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
            self.i += 1;
        }
        let digits = std::str::from_utf8(&self.s[start..self.i]).expect("ASCII digits");
        let text = if negative {
            format!("-{digits}")
        } else {
            digits.to_string()
        };
        text.parse::<i64>()
            .map(Expr::Const)
            .map_err(|_| self.error("number out of the i64 range"))
    }
}

/// Parses a register name (`[A-Za-z_][A-Za-z0-9_]*`).
fn parse_reg(s: &[u8], regs: &mut Interner) -> Result<u32> {
    let s = trim(s);
    let ok = !s.is_empty()
        && (s[0].is_ascii_alphabetic() || s[0] == b'_')
        && s.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_');
    if !ok {
        return Err(Error::syntax(format!(
            "bad register name `{}` (letters, digits and `_`, not starting with a digit)",
            String::from_utf8_lossy(&s[..s.len().min(64)])
        )));
    }
    Ok(regs.intern(s))
}

/// The value part of one event.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Ann {
    /// No value (a plain access, or an event that has none).
    #[default]
    None,
    /// `w(x)=EXPR`: the value written.
    Write(Expr),
    /// `r(x)->reg=V`: the register read into and the value observed (`None` on an
    /// alternative path, which never ran).
    Read { reg: u32, observed: Option<i64> },
    /// `let(reg=EXPR)`.
    Let { reg: u32, expr: Expr },
    /// `br(COND)`: COND held.
    Branch(Expr),
}

/// Parses the value part of an event (what [`super::std_format::parse_line`] split off).
pub(crate) fn parse_ann(part: ValuePart<'_>, regs: &mut Interner) -> Result<Ann> {
    Ok(match part {
        ValuePart::None => Ann::None,
        ValuePart::Written(e) => Ann::Write(parse_expr(e, regs)?),
        ValuePart::ReadInto(reg, val) => Ann::Read {
            reg: parse_reg(reg, regs)?,
            observed: match val {
                None => None,
                Some(v) => Some(
                    std::str::from_utf8(trim(v))
                        .ok()
                        .and_then(|v| v.parse::<i64>().ok())
                        .ok_or_else(|| {
                            Error::syntax(format!(
                                "observed value `{}` is not an i64",
                                String::from_utf8_lossy(&v[..v.len().min(64)])
                            ))
                        })?,
                ),
            },
        },
        ValuePart::Let(arg) => {
            let Some(eq) = arg.iter().position(|&b| b == b'=') else {
                return Err(Error::syntax("expected `let(REG=EXPR)`"));
            };
            Ann::Let {
                reg: parse_reg(&arg[..eq], regs)?,
                expr: parse_expr(&arg[eq + 1..], regs)?,
            }
        }
        ValuePart::Cond(arg) => Ann::Branch(parse_expr(arg, regs)?),
    })
}
