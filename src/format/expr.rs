//! The expression language of `if:` conditions and prompt templates,
//! evaluated by plangate itself (no shell, no eval).
//!
//! ```text
//! expr    := or
//! or      := and ('||' and)*
//! and     := unary ('&&' unary)*
//! unary   := '!' unary | compare
//! compare := primary (('==' | '!=' | '<' | '<=' | '>' | '>=') primary)?
//! primary := 'string' | number | true | false | null | '(' expr ')'
//!          | NAME '(' [expr (',' expr)*] ')'
//!          | inputs.NAME | matrix.KEY
//!          | steps.ID.outputs.NAME | steps.ID.status | steps.ID.outcome
//! ```
//!
//! Strings are single-quoted (`''` is a quote); numbers are decimal
//! (`-1`, `2.5`); names may hold `-` (`steps.deploy-web.status`).
//! Functions: `always()`, `success()`, `failure()`, `contains(s, sub)`,
//! `startsWith(s, prefix)`, `endsWith(s, suffix)` (case-sensitive).
//!
//! Types are strict: `&&`, `||`, `!` and a whole condition take booleans
//! only (no truthiness: compare an output with `== 'true'`); `==` and `!=`
//! compare values of one type (`null` with anything), `<` & co. two numbers
//! or two strings. What is known at load time is checked then
//! ([`check`]); a value unset at run time is `null`, and an operation it
//! does not fit is an error that fails the step. Pure: no I/O.

use std::fmt;

/// Most bytes of an expression.
pub(crate) const MAX_LEN: usize = 4096;
/// Deepest nesting of an expression.
const MAX_DEPTH: usize = 32;

/// A value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    /// Unset.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number.
    Num(f64),
    /// Text.
    Str(String),
}

impl Val {
    fn type_name(&self) -> &'static str {
        match self {
            Val::Null => "null",
            Val::Bool(_) => "a boolean",
            Val::Num(_) => "a number",
            Val::Str(_) => "a string",
        }
    }
}

/// A value's type as known at load time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    /// `null`.
    Null,
    /// A boolean.
    Bool,
    /// A number.
    Num,
    /// A string (an output is a string, or null when unset).
    Str,
    /// Not known before the run.
    Any,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::Null => "null",
            Ty::Bool => "a boolean",
            Ty::Num => "a number",
            Ty::Str => "a string",
            Ty::Any => "a value",
        }
    }
}

/// What a name refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ref {
    /// `inputs.NAME`.
    Input(String),
    /// `matrix.KEY`.
    Matrix(String),
    /// `steps.ID.outputs.NAME`.
    Output(String, String),
    /// `steps.ID.status`: the step's status as in the report.
    Status(String),
    /// `steps.ID.outcome`: `success`, `failure` or `skipped`.
    Outcome(String),
}

impl fmt::Display for Ref {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ref::Input(n) => write!(f, "inputs.{n}"),
            Ref::Matrix(k) => write!(f, "matrix.{k}"),
            Ref::Output(s, n) => write!(f, "steps.{s}.outputs.{n}"),
            Ref::Status(s) => write!(f, "steps.{s}.status"),
            Ref::Outcome(s) => write!(f, "steps.{s}.outcome"),
        }
    }
}

/// A function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    /// `always()`: true.
    Always,
    /// `success()`: every dependency succeeded (or failed under `continue_on_error`).
    Success,
    /// `failure()`: a dependency failed (not under `continue_on_error`).
    Failure,
    /// `contains(s, sub)`.
    Contains,
    /// `startsWith(s, prefix)`.
    StartsWith,
    /// `endsWith(s, suffix)`.
    EndsWith,
}

impl Func {
    fn of(name: &str) -> Option<Func> {
        Some(match name {
            "always" => Func::Always,
            "success" => Func::Success,
            "failure" => Func::Failure,
            "contains" => Func::Contains,
            "startsWith" => Func::StartsWith,
            "endsWith" => Func::EndsWith,
            _ => return None,
        })
    }

    fn arity(self) -> usize {
        match self {
            Func::Always | Func::Success | Func::Failure => 0,
            Func::Contains | Func::StartsWith | Func::EndsWith => 2,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Func::Always => "always",
            Func::Success => "success",
            Func::Failure => "failure",
            Func::Contains => "contains",
            Func::StartsWith => "startsWith",
            Func::EndsWith => "endsWith",
        }
    }

    /// Whether it reads the dependencies' status (then a step waits for all of
    /// them and is evaluated whatever they ended).
    fn is_status(self) -> bool {
        matches!(self, Func::Always | Func::Success | Func::Failure)
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    fn text(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// A parsed expression; `at` is the byte offset of its first character.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Expr {
    /// What it is.
    pub kind: Kind,
    /// Byte offset in the expression text.
    pub at: usize,
}

/// The kinds of expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    /// A literal.
    Lit(Val),
    /// A name.
    Ref(Ref),
    /// `!e`
    Not(Box<Expr>),
    /// `a && b`
    And(Box<Expr>, Box<Expr>),
    /// `a || b`
    Or(Box<Expr>, Box<Expr>),
    /// `a OP b`
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    /// `f(args)`
    Call(Func, Vec<Expr>),
}

/// A problem at a byte offset of the expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExprError {
    /// Byte offset.
    pub at: usize,
    /// What is wrong.
    pub message: String,
}

fn fail<T>(at: usize, message: impl Into<String>) -> Result<T, ExprError> {
    Err(ExprError {
        at,
        message: message.into(),
    })
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Str(String),
    Num(f64),
    Name(String),
    Dot,
    Comma,
    LParen,
    RParen,
    Not,
    And,
    Or,
    Cmp(CmpOp),
    End,
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Str(s) => format!("the string '{s}'"),
        Tok::Num(n) => format!("the number {n}"),
        Tok::Name(n) => format!("`{n}`"),
        Tok::Dot => "`.`".to_owned(),
        Tok::Comma => "`,`".to_owned(),
        Tok::LParen => "`(`".to_owned(),
        Tok::RParen => "`)`".to_owned(),
        Tok::Not => "`!`".to_owned(),
        Tok::And => "`&&`".to_owned(),
        Tok::Or => "`||`".to_owned(),
        Tok::Cmp(op) => format!("`{}`", op.text()),
        Tok::End => "the end of the expression".to_owned(),
    }
}

fn lex(text: &str) -> Result<Vec<(Tok, usize)>, ExprError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let at = i;
        let two = b.get(i + 1).copied();
        let (tok, len) = match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'.' => (Tok::Dot, 1),
            b',' => (Tok::Comma, 1),
            b'(' => (Tok::LParen, 1),
            b')' => (Tok::RParen, 1),
            b'!' if two == Some(b'=') => (Tok::Cmp(CmpOp::Ne), 2),
            b'!' => (Tok::Not, 1),
            b'=' if two == Some(b'=') => (Tok::Cmp(CmpOp::Eq), 2),
            b'=' => return fail(at, "`=` alone is not an operator: compare with `==`"),
            b'<' if two == Some(b'=') => (Tok::Cmp(CmpOp::Le), 2),
            b'<' => (Tok::Cmp(CmpOp::Lt), 1),
            b'>' if two == Some(b'=') => (Tok::Cmp(CmpOp::Ge), 2),
            b'>' => (Tok::Cmp(CmpOp::Gt), 1),
            b'&' if two == Some(b'&') => (Tok::And, 2),
            b'|' if two == Some(b'|') => (Tok::Or, 2),
            b'&' | b'|' => {
                return fail(
                    at,
                    format!("`{}` alone is not an operator: use `&&` or `||`", c as char),
                );
            }
            b'\'' => {
                let (s, len) = string(text, at)?;
                (Tok::Str(s), len)
            }
            b'"' => return fail(at, "strings are written in single quotes: 'text'"),
            b'-' | b'0'..=b'9' => {
                let end = b[at + 1..]
                    .iter()
                    .position(|c| !(c.is_ascii_digit() || *c == b'.'))
                    .map_or(b.len(), |p| at + 1 + p);
                let lit = &text[at..end];
                match lit.parse::<f64>() {
                    Ok(n) if n.is_finite() && lit != "-" && !lit.ends_with('.') => {
                        (Tok::Num(n), end - at)
                    }
                    _ => return fail(at, format!("`{lit}` is not a number")),
                }
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let end = b[at..]
                    .iter()
                    .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-'))
                    .map_or(b.len(), |p| at + p);
                (Tok::Name(text[at..end].to_owned()), end - at)
            }
            _ => {
                let ch = text[at..].chars().next().unwrap_or('?');
                return fail(at, format!("unexpected character `{ch}`"));
            }
        };
        out.push((tok, at));
        i += len;
    }
    out.push((Tok::End, text.len()));
    Ok(out)
}

/// A single-quoted string starting at `at`; returns it and its length.
fn string(text: &str, at: usize) -> Result<(String, usize), ExprError> {
    let mut s = String::new();
    let mut chars = text[at + 1..].char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\'' {
            if chars.peek().is_some_and(|(_, c)| *c == '\'') {
                chars.next();
                s.push('\'');
                continue;
            }
            return Ok((s, i + 2));
        }
        s.push(c);
    }
    fail(
        at,
        "this string is never closed (strings end with `'`; write `''` for a quote)",
    )
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    depth: usize,
}

/// Parse an expression.
pub(crate) fn parse(text: &str) -> Result<Expr, ExprError> {
    if text.len() > MAX_LEN {
        return fail(0, format!("the expression is longer than {MAX_LEN} bytes"));
    }
    if text.trim().is_empty() {
        return fail(0, "the expression is empty");
    }
    let mut p = Parser {
        toks: lex(text)?,
        pos: 0,
        depth: 0,
    };
    let e = p.or()?;
    let (t, at) = p.peek();
    if t != Tok::End {
        return fail(
            at,
            format!("unexpected {} after a complete expression", describe(&t)),
        );
    }
    Ok(e)
}

impl Parser {
    fn peek(&self) -> (Tok, usize) {
        self.toks
            .get(self.pos)
            .cloned()
            .unwrap_or((Tok::End, usize::MAX))
    }

    fn next(&mut self) -> (Tok, usize) {
        let t = self.peek();
        self.pos += 1;
        t
    }

    fn deeper(&mut self, at: usize) -> Result<(), ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return fail(
                at,
                format!("the expression nests deeper than {MAX_DEPTH} levels"),
            );
        }
        Ok(())
    }

    fn or(&mut self) -> Result<Expr, ExprError> {
        let mut l = self.and()?;
        while self.peek().0 == Tok::Or {
            self.next();
            let r = self.and()?;
            let at = l.at;
            l = Expr {
                kind: Kind::Or(Box::new(l), Box::new(r)),
                at,
            };
        }
        Ok(l)
    }

    fn and(&mut self) -> Result<Expr, ExprError> {
        let mut l = self.unary()?;
        while self.peek().0 == Tok::And {
            self.next();
            let r = self.unary()?;
            let at = l.at;
            l = Expr {
                kind: Kind::And(Box::new(l), Box::new(r)),
                at,
            };
        }
        Ok(l)
    }

    fn unary(&mut self) -> Result<Expr, ExprError> {
        let (t, at) = self.peek();
        if t == Tok::Not {
            self.next();
            self.deeper(at)?;
            let e = self.unary()?;
            self.depth -= 1;
            return Ok(Expr {
                kind: Kind::Not(Box::new(e)),
                at,
            });
        }
        self.compare()
    }

    fn compare(&mut self) -> Result<Expr, ExprError> {
        let l = self.primary()?;
        if let (Tok::Cmp(op), _) = self.peek() {
            self.next();
            let r = self.primary()?;
            if let (Tok::Cmp(_), at2) = self.peek() {
                return fail(
                    at2,
                    "comparisons do not chain: use `&&` between them, or parentheses",
                );
            }
            let at = l.at;
            return Ok(Expr {
                kind: Kind::Cmp(op, Box::new(l), Box::new(r)),
                at,
            });
        }
        Ok(l)
    }

    fn primary(&mut self) -> Result<Expr, ExprError> {
        let (t, at) = self.next();
        let lit = |v| {
            Ok(Expr {
                kind: Kind::Lit(v),
                at,
            })
        };
        match t {
            Tok::Str(s) => lit(Val::Str(s)),
            Tok::Num(n) => lit(Val::Num(n)),
            Tok::LParen => {
                self.deeper(at)?;
                let e = self.or()?;
                self.depth -= 1;
                match self.next() {
                    (Tok::RParen, _) => Ok(e),
                    (t, at2) => fail(at2, format!("expected `)`, found {}", describe(&t))),
                }
            }
            Tok::Name(n) => match n.as_str() {
                "true" => lit(Val::Bool(true)),
                "false" => lit(Val::Bool(false)),
                "null" => lit(Val::Null),
                _ if self.peek().0 == Tok::LParen => self.call(&n, at),
                "inputs" | "matrix" | "steps" => self.reference(&n, at),
                _ => fail(
                    at,
                    format!(
                        "unknown name `{n}`: expected `inputs.`, `matrix.`, `steps.`, a function call, a string in single quotes, a number, true, false or null"
                    ),
                ),
            },
            t => fail(at, format!("expected a value, found {}", describe(&t))),
        }
    }

    fn call(&mut self, name: &str, at: usize) -> Result<Expr, ExprError> {
        let Some(f) = Func::of(name) else {
            return fail(
                at,
                format!(
                    "unknown function `{name}`: the functions are always(), success(), failure(), contains(), startsWith() and endsWith()"
                ),
            );
        };
        self.next(); // (
        self.deeper(at)?;
        let mut args = Vec::new();
        if self.peek().0 == Tok::RParen {
            self.next();
        } else {
            loop {
                args.push(self.or()?);
                match self.next() {
                    (Tok::Comma, _) => {}
                    (Tok::RParen, _) => break,
                    (t, at2) => {
                        return fail(at2, format!("expected `,` or `)`, found {}", describe(&t)));
                    }
                }
            }
        }
        self.depth -= 1;
        if args.len() != f.arity() {
            return fail(
                at,
                format!(
                    "{}() takes {} argument{}, not {}",
                    f.name(),
                    f.arity(),
                    if f.arity() == 1 { "" } else { "s" },
                    args.len()
                ),
            );
        }
        Ok(Expr {
            kind: Kind::Call(f, args),
            at,
        })
    }

    /// The name after a `.`.
    fn field(&mut self, after: &str) -> Result<String, ExprError> {
        match self.next() {
            (Tok::Dot, _) => {}
            (t, at) => {
                return fail(
                    at,
                    format!("expected `.` after `{after}`, found {}", describe(&t)),
                );
            }
        }
        match self.next() {
            (Tok::Name(n), _) => Ok(n),
            (t, at) => fail(
                at,
                format!("expected a name after `{after}.`, found {}", describe(&t)),
            ),
        }
    }

    fn reference(&mut self, root: &str, at: usize) -> Result<Expr, ExprError> {
        let r = match root {
            "inputs" => Ref::Input(self.field("inputs")?),
            "matrix" => Ref::Matrix(self.field("matrix")?),
            _ => {
                let id = self.field("steps")?;
                let (prop_at, what) = (self.peek().1, self.field(&format!("steps.{id}"))?);
                match what.as_str() {
                    "outputs" => {
                        let name = self.field(&format!("steps.{id}.outputs"))?;
                        Ref::Output(id, name)
                    }
                    "status" => Ref::Status(id),
                    "outcome" => Ref::Outcome(id),
                    other => {
                        return fail(
                            prop_at + 1,
                            format!(
                                "`steps.{id}.{other}`: a step has `outputs.NAME`, `status` and `outcome`"
                            ),
                        );
                    }
                }
            }
        };
        if let (Tok::Dot, at2) = self.peek() {
            return fail(at2, format!("`{r}` has no fields"));
        }
        Ok(Expr {
            kind: Kind::Ref(r),
            at,
        })
    }
}

impl Expr {
    /// Whether it calls `always()`, `success()` or `failure()`.
    pub(crate) fn uses_status(&self) -> bool {
        let mut found = false;
        self.walk(&mut |e| {
            if let Kind::Call(f, _) = &e.kind {
                found |= f.is_status();
            }
        });
        found
    }

    /// Every reference, with its offset.
    pub(crate) fn refs(&self) -> Vec<(&Ref, usize)> {
        let mut out = Vec::new();
        self.walk_refs(&mut out);
        out
    }

    fn walk_refs<'a>(&'a self, out: &mut Vec<(&'a Ref, usize)>) {
        match &self.kind {
            Kind::Ref(r) => out.push((r, self.at)),
            Kind::Lit(_) => {}
            Kind::Not(e) => e.walk_refs(out),
            Kind::And(a, b) | Kind::Or(a, b) | Kind::Cmp(_, a, b) => {
                a.walk_refs(out);
                b.walk_refs(out);
            }
            Kind::Call(_, args) => args.iter().for_each(|a| a.walk_refs(out)),
        }
    }

    fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match &self.kind {
            Kind::Lit(_) | Kind::Ref(_) => {}
            Kind::Not(e) => e.walk(f),
            Kind::And(a, b) | Kind::Or(a, b) | Kind::Cmp(_, a, b) => {
                a.walk(f);
                b.walk(f);
            }
            Kind::Call(_, args) => args.iter().for_each(|a| a.walk(f)),
        }
    }
}

/// Load-time type check: every operand whose type is known fits its
/// operator, and the whole expression is a boolean when `want_bool`.
/// `ty` gives each reference's type (references were checked before).
pub(crate) fn check(e: &Expr, ty: &dyn Fn(&Ref) -> Ty, want_bool: bool) -> Vec<ExprError> {
    let mut errs = Vec::new();
    let t = type_of(e, ty, &mut errs);
    if want_bool && errs.is_empty() && !matches!(t, Ty::Bool | Ty::Any) {
        errs.push(ExprError {
            at: e.at,
            message: format!(
                "a condition must be a boolean, this is {}: compare it, e.g. `... == 'true'`",
                t.name()
            ),
        });
    }
    errs
}

fn type_of(e: &Expr, ty: &dyn Fn(&Ref) -> Ty, errs: &mut Vec<ExprError>) -> Ty {
    let want = |x: &Expr, t: Ty, what: &str, errs: &mut Vec<ExprError>| {
        let got = type_of(x, ty, errs);
        if got != t && got != Ty::Any {
            errs.push(ExprError {
                at: x.at,
                message: format!("{what} takes {}, not {}", t.name(), got.name()),
            });
        }
    };
    match &e.kind {
        Kind::Lit(v) => match v {
            Val::Null => Ty::Null,
            Val::Bool(_) => Ty::Bool,
            Val::Num(_) => Ty::Num,
            Val::Str(_) => Ty::Str,
        },
        Kind::Ref(r) => ty(r),
        Kind::Not(x) => {
            want(x, Ty::Bool, "`!`", errs);
            Ty::Bool
        }
        Kind::And(a, b) | Kind::Or(a, b) => {
            let op = if matches!(e.kind, Kind::And(..)) {
                "`&&`"
            } else {
                "`||`"
            };
            want(a, Ty::Bool, op, errs);
            want(b, Ty::Bool, op, errs);
            Ty::Bool
        }
        Kind::Cmp(op, a, b) => {
            let (ta, tb) = (type_of(a, ty, errs), type_of(b, ty, errs));
            let known = |t: Ty| t != Ty::Any && t != Ty::Null;
            match op {
                CmpOp::Eq | CmpOp::Ne => {
                    if known(ta) && known(tb) && ta != tb {
                        errs.push(ExprError {
                            at: e.at,
                            message: format!(
                                "`{}` compares {} with {}: they are never equal (no conversion is made)",
                                op.text(),
                                ta.name(),
                                tb.name()
                            ),
                        });
                    }
                }
                _ => {
                    for (x, t) in [(a, ta), (b, tb)] {
                        if !matches!(t, Ty::Num | Ty::Str | Ty::Any) {
                            errs.push(ExprError {
                                at: x.at,
                                message: format!(
                                    "`{}` orders numbers or strings, not {}",
                                    op.text(),
                                    t.name()
                                ),
                            });
                        }
                    }
                    if known(ta) && known(tb) && ta != tb {
                        errs.push(ExprError {
                            at: e.at,
                            message: format!(
                                "`{}` orders {} against {}",
                                op.text(),
                                ta.name(),
                                tb.name()
                            ),
                        });
                    }
                }
            }
            Ty::Bool
        }
        Kind::Call(f, args) => {
            for a in args {
                want(a, Ty::Str, &format!("{}()", f.name()), errs);
            }
            Ty::Bool
        }
    }
}

/// What evaluation needs from the run.
pub(crate) trait Lookup {
    /// A reference's value (`Null` when unset).
    fn value(&self, r: &Ref) -> Val;
    /// `success()`.
    fn success(&self) -> bool;
    /// `failure()`.
    fn failure(&self) -> bool;
}

/// Evaluate; an operation a value does not fit is an error (with its offset).
pub(crate) fn eval(e: &Expr, l: &dyn Lookup) -> Result<Val, ExprError> {
    let boolean = |x: &Expr, what: &str| -> Result<bool, ExprError> {
        match eval(x, l)? {
            Val::Bool(b) => Ok(b),
            v => fail(
                x.at,
                format!("{what} takes a boolean, not {}", v.type_name()),
            ),
        }
    };
    Ok(match &e.kind {
        Kind::Lit(v) => v.clone(),
        Kind::Ref(r) => l.value(r),
        Kind::Not(x) => Val::Bool(!boolean(x, "`!`")?),
        Kind::And(a, b) => Val::Bool(boolean(a, "`&&`")? && boolean(b, "`&&`")?),
        Kind::Or(a, b) => Val::Bool(boolean(a, "`||`")? || boolean(b, "`||`")?),
        Kind::Cmp(op, a, b) => {
            let (va, vb) = (eval(a, l)?, eval(b, l)?);
            Val::Bool(match op {
                CmpOp::Eq => va == vb,
                CmpOp::Ne => va != vb,
                _ => {
                    let ord = match (&va, &vb) {
                        (Val::Num(x), Val::Num(y)) => x.partial_cmp(y),
                        (Val::Str(x), Val::Str(y)) => Some(x.cmp(y)),
                        _ => None,
                    };
                    let Some(ord) = ord else {
                        return fail(
                            e.at,
                            format!(
                                "`{}` cannot order {} against {}",
                                op.text(),
                                va.type_name(),
                                vb.type_name()
                            ),
                        );
                    };
                    match op {
                        CmpOp::Lt => ord.is_lt(),
                        CmpOp::Le => ord.is_le(),
                        CmpOp::Gt => ord.is_gt(),
                        _ => ord.is_ge(),
                    }
                }
            })
        }
        Kind::Call(f, args) => Val::Bool(match f {
            Func::Always => true,
            Func::Success => l.success(),
            Func::Failure => l.failure(),
            Func::Contains | Func::StartsWith | Func::EndsWith => {
                let mut s = Vec::new();
                for a in args {
                    match eval(a, l)? {
                        Val::Str(x) => s.push(x),
                        v => {
                            return fail(
                                a.at,
                                format!("{}() takes strings, not {}", f.name(), v.type_name()),
                            );
                        }
                    }
                }
                let (h, n) = (&s[0], &s[1]);
                match f {
                    Func::Contains => h.contains(n.as_str()),
                    Func::StartsWith => h.starts_with(n.as_str()),
                    _ => h.ends_with(n.as_str()),
                }
            }
        }),
    })
}

/// A checked `if:` of a step: its text (as written, without a `${{ }}`
/// wrapper) and its parsed form.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Condition {
    /// The expression as written.
    pub text: String,
    /// Parsed.
    pub expr: Expr,
    /// It calls a status function: the step is evaluated whatever its dependencies ended.
    pub uses_status: bool,
}

/// The expression inside an `if:` value, with its byte offset in the value:
/// a whole-value `${{ ... }}` wrapper is allowed and dropped.
pub(crate) fn unwrap_condition(value: &str) -> (&str, usize) {
    let t = value.trim_end();
    let lead = value.len() - value.trim_start().len();
    let body = &t[lead..];
    if let Some(inner) = body.strip_prefix("${{").and_then(|b| b.strip_suffix("}}")) {
        (inner, lead + 3)
    } else {
        (body, lead)
    }
}

#[cfg(test)]
mod tests;
