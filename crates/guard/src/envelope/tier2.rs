//! Tier 2 of design 001: recover an envelope whose strings hold raw control
//! characters or unescaped `"`, but only when the answer has exactly one
//! *syntactic* reading.
//!
//! A reading is a way of closing the strings: inside a string each `"` either
//! closes it or is literal text. Every reading is a run of one generic JSON
//! automaton (object/array stack, strict strings, numbers and literals, at
//! most [`MAX_DEPTH`] deep), whatever its keys are: a reading counts as soon
//! as it is well-formed JSON, even with unknown, repeated or wrongly typed
//! keys — the key rules are checked only afterwards, on the one reading left.
//! Runs are simulated in order of position and merged when they reach the
//! same position in the same state (counts add, saturating at 2), so the
//! work is O(n·k) where k is the number of live states — never exponential.
//! A work budget backs this up (running out is refused).
//!
//! Which readings count ("admissible"): a quote is only read as literal text
//! where the standard JSON reading breaks. The *first* quote of a string
//! closes it when the structure after it is viable (the strict run from it
//! reaches the next string — a key or a value, known or not — or closes the
//! envelope); only when it is not viable does the string become *dirty*, and
//! in a dirty string every later quote may be literal or closing, and both
//! readings are counted. Without this rule every list of two strings
//! (`["a", "b"]`) would have a second reading (`a", "b`) and nothing could
//! ever be recovered. Viable means any well-formed continuation, so
//! `"summary": "a", "x": "b"}` is a summary `a` and an unknown key `x` (then
//! refused by the key rules), never a summary swallowing `", "x": "b`.
//!
//! A reading is complete where the envelope closes and the answer may end
//! there (no text glued to the `}`, no JSON-looking `,` `:` `}` `]` `"`
//! after it, the test tier 1 applies after a value); closing the envelope
//! with such text after it is still *viable* (a place the envelope could
//! close), never a reading. Two admissible complete readings (at the same
//! end or not) make the answer ambiguous: [`Outcome::TwoWays`] says which
//! string and where the readings part. Readings that break the rule are
//! still simulated: one that closes the envelope *after* the admissible one
//! (a string of it runs on past the admissible end), or an admissible run
//! that closes it later with JSON-looking text after it, means the answer has
//! two boundaries and is refused; one that closes it before leaves the
//! admissible envelope's own closing brackets as trailing text, which no
//! answer means, and is not counted.

use super::super::json::{is_ws, skip_plain};
use std::collections::BTreeMap;

/// Deepest nesting a reading may reach; deeper is refused as too complex.
pub(crate) const MAX_DEPTH: u8 = 120;

/// Where a string sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Role {
    /// An object key.
    Key,
    /// The value of an object member.
    Member,
    /// An element of an array.
    Element,
}

/// One string of a reading: `start..end` is between its quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: usize,
    pub end: usize,
    pub role: Role,
    /// Open containers around it (the envelope object is 1).
    pub depth: u8,
    /// Has raw control characters or literal quotes (needs repair).
    pub repaired: bool,
    /// Has backslash escape sequences.
    pub escaped: bool,
}

/// Where two admissible readings part.
#[derive(Debug, Clone)]
pub(crate) struct TwoWays {
    /// The string both readings start, as it reads in the one that closes it first.
    pub string: Span,
    /// The reading that closes it first: the strings that follow it (at most a few).
    pub next: Option<Span>,
    /// The envelope's end in the reading that closes it first (when no string follows).
    pub short_end: Option<usize>,
    /// The quote where the other reading closes the same string (when known).
    pub long_end: Option<usize>,
    /// The key of the member (or array) the string belongs to.
    pub key: Option<Span>,
}

/// What tier 2 found.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Exactly one reading; the envelope ends at `end`.
    Unique { strings: Vec<Span>, end: usize },
    /// Two or more admissible readings are well-formed JSON.
    TwoWays(Box<TwoWays>),
    /// One admissible reading, but another reading closes the envelope later (at this offset).
    TwoBoundaries(usize),
    /// No reading is well-formed JSON.
    Nothing,
    /// The work budget ran out or a reading nests too deep (treated as ambiguous).
    TooComplex,
}

const NONE: u32 = u32::MAX;
/// Distinct complete readings kept; more is treated as too complex (refused).
const MAX_DONE: usize = 32;

/// The open containers, innermost in bit 0 (1 = object).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Stack {
    bits: u128,
    depth: u8,
}

impl Stack {
    fn push(self, object: bool) -> Option<Stack> {
        (self.depth < MAX_DEPTH).then(|| Stack {
            bits: (self.bits << 1) | u128::from(object),
            depth: self.depth + 1,
        })
    }

    /// Whether the innermost container is an object (None: nothing open).
    fn top_is_object(self) -> Option<bool> {
        (self.depth > 0).then_some(self.bits & 1 == 1)
    }

    fn pop(self) -> Stack {
        Stack {
            bits: self.bits >> 1,
            depth: self.depth.saturating_sub(1),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    pos: usize,
    stack: Stack,
    role: Role,
    repaired: bool,
    escaped: bool,
    /// A quote of this string was read as literal text.
    dirty: bool,
    /// The reading so far follows the admissibility rule.
    admissible: bool,
}

#[derive(Debug, Clone, Copy)]
struct Thread {
    count: u8,
    hist: u32,
    str_start: usize,
    /// Another admissible reading merged into this one: its strings, its open one last.
    alt: u32,
}

struct Node {
    prev: u32,
    span: Span,
}

/// Strict structural states between strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    /// After a key: `:` then a value.
    AfterKey,
    /// A value.
    Value,
    /// After `[`: a value or `]`.
    ValueOrClose,
    /// After `{`: a key or `}`.
    KeyOrClose,
    /// After `,` in an object: a key.
    Key,
    /// After a value: `,` or the container's closer.
    AfterValue,
}

enum Run {
    /// A string opens: its first byte is `pos`.
    Open {
        pos: usize,
        stack: Stack,
        role: Role,
    },
    /// The envelope closes before `end`, where the answer may end.
    Accept {
        end: usize,
    },
    /// The envelope closes before `end`, but JSON-looking text follows: not a reading of
    /// the answer, still a place where the envelope could close.
    JunkEnd {
        end: usize,
    },
    Dead,
    Eof,
    TooDeep,
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| is_ws(*c)) {
        i += 1;
    }
    i
}

/// Whether an answer may end before `end`: no text glued to it and no JSON-looking
/// `,` `:` `}` `]` `"` after it (the test tier 1 applies after a value, `junk_after`).
fn may_end_here(b: &[u8], end: usize) -> bool {
    let head = b.get(end..b.len().min(end + 4)).unwrap_or(&[]);
    let first = head
        .utf8_chunks()
        .next()
        .and_then(|c| c.valid().chars().next());
    if first.is_some_and(|c| c.is_alphanumeric() || c == '_') {
        return false;
    }
    !matches!(
        b.get(skip_ws(b, end)),
        Some(b',' | b':' | b'}' | b']' | b'"')
    )
}

fn digits(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// A strict JSON number at `i`: Ok(end), Err(true) when the text ends inside it, Err(false) when malformed.
fn number(b: &[u8], mut i: usize) -> Result<usize, bool> {
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        None => return Err(true),
        Some(b'0') => i += 1,
        Some(c) if c.is_ascii_digit() => i = digits(b, i),
        Some(_) => return Err(false),
    }
    if b.get(i) == Some(&b'.') {
        let j = digits(b, i + 1);
        if j == i + 1 {
            return Err(b.get(j).is_none());
        }
        i = j;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let j = digits(b, i);
        if j == i {
            return Err(b.get(j).is_none());
        }
        i = j;
    }
    Ok(i)
}

/// Deterministic strict run over structure from `i` until the next string opens
/// or the envelope closes; returns the run and how far it read.
fn structural(b: &[u8], mut i: usize, mut st: St, mut stack: Stack) -> (Run, usize) {
    loop {
        i = skip_ws(b, i);
        let Some(&c) = b.get(i) else {
            return (Run::Eof, i);
        };
        let role_here = |s: Stack| {
            if s.top_is_object() == Some(true) {
                Role::Member
            } else {
                Role::Element
            }
        };
        let mut close = false;
        st = match st {
            St::AfterKey => {
                if c != b':' {
                    return (Run::Dead, i);
                }
                i += 1;
                St::Value
            }
            St::Value | St::ValueOrClose => match c {
                b']' if st == St::ValueOrClose => {
                    close = true;
                    St::AfterValue
                }
                b'"' => {
                    let run = Run::Open {
                        pos: i + 1,
                        stack,
                        role: role_here(stack),
                    };
                    return (run, i);
                }
                b'{' | b'[' => {
                    let Some(s) = stack.push(c == b'{') else {
                        return (Run::TooDeep, i);
                    };
                    stack = s;
                    i += 1;
                    if c == b'{' {
                        St::KeyOrClose
                    } else {
                        St::ValueOrClose
                    }
                }
                b'-' | b'0'..=b'9' => match number(b, i) {
                    Ok(j) => {
                        i = j;
                        St::AfterValue
                    }
                    Err(true) => return (Run::Eof, i),
                    Err(false) => return (Run::Dead, i),
                },
                b't' | b'f' | b'n' => {
                    let lit: &[u8] = match c {
                        b't' => b"true",
                        b'f' => b"false",
                        _ => b"null",
                    };
                    let rest = b.get(i..).unwrap_or(&[]);
                    if rest.starts_with(lit) {
                        i += lit.len();
                        St::AfterValue
                    } else if lit.starts_with(rest) {
                        return (Run::Eof, i);
                    } else {
                        return (Run::Dead, i);
                    }
                }
                _ => return (Run::Dead, i),
            },
            St::KeyOrClose | St::Key => match c {
                b'"' => {
                    let run = Run::Open {
                        pos: i + 1,
                        stack,
                        role: Role::Key,
                    };
                    return (run, i);
                }
                b'}' if st == St::KeyOrClose => {
                    close = true;
                    St::AfterValue
                }
                _ => return (Run::Dead, i),
            },
            St::AfterValue => match (c, stack.top_is_object()) {
                (b',', Some(true)) => {
                    i += 1;
                    St::Key
                }
                (b',', Some(false)) => {
                    i += 1;
                    St::Value
                }
                (b'}', Some(true)) | (b']', Some(false)) => {
                    close = true;
                    St::AfterValue
                }
                _ => return (Run::Dead, i),
            },
        };
        if close {
            stack = stack.pop();
            i += 1;
            if stack.depth == 0 {
                // Closed with JSON-looking text after it: not an answer's end.
                if !may_end_here(b, i) {
                    return (Run::JunkEnd { end: i }, i);
                }
                return (Run::Accept { end: i }, i);
            }
        }
    }
}

/// Complete readings with the same end and admissibility (merged).
#[derive(Debug, Clone, Copy)]
struct Done {
    end: usize,
    admissible: bool,
    /// How many readings (saturating at 2).
    count: u8,
    hist: u32,
    alt: u32,
}

struct Sim<'a> {
    b: &'a [u8],
    arena: Vec<Node>,
    queue: BTreeMap<Key, Thread>,
    /// Every complete reading, admissible or not (at most [`MAX_DONE`] kept).
    done: Vec<Done>,
    /// More than [`MAX_DONE`] distinct complete readings, or a reading too deep.
    overflow: bool,
    /// Where admissible runs closed the envelope with JSON-looking text after it.
    junk_ends: Vec<usize>,
}

impl Sim<'_> {
    fn push(&mut self, prev: u32, span: Span) -> u32 {
        let id = u32::try_from(self.arena.len()).unwrap_or(NONE);
        if id == NONE {
            self.overflow = true;
            return NONE;
        }
        self.arena.push(Node { prev, span });
        id
    }

    fn handle(&mut self, run: Run, th: Thread, admissible: bool) {
        match run {
            Run::Open { pos, stack, role } => {
                let key = Key {
                    pos,
                    stack,
                    role,
                    repaired: false,
                    escaped: false,
                    dirty: false,
                    admissible,
                };
                self.insert(
                    key,
                    Thread {
                        str_start: pos,
                        ..th
                    },
                );
            }
            Run::Accept { end } => {
                if let Some(d) = self
                    .done
                    .iter_mut()
                    .find(|d| d.end == end && d.admissible == admissible)
                {
                    d.count = d.count.saturating_add(th.count).min(2);
                    if admissible && d.alt == NONE {
                        d.alt = th.hist;
                    }
                } else if self.done.len() < MAX_DONE {
                    self.done.push(Done {
                        end,
                        admissible,
                        count: th.count.min(2),
                        hist: th.hist,
                        alt: th.alt,
                    });
                } else {
                    self.overflow = true;
                }
            }
            Run::JunkEnd { end } => {
                if admissible {
                    self.junk_ends.push(end);
                }
            }
            Run::TooDeep => self.overflow = true,
            Run::Dead | Run::Eof => {}
        }
    }

    fn insert(&mut self, key: Key, th: Thread) {
        let mut other = None;
        self.queue
            .entry(key)
            .and_modify(|t| {
                t.count = t.count.saturating_add(th.count).min(2);
                if key.admissible && t.alt == NONE {
                    other = Some(th);
                }
            })
            .or_insert(th);
        // Keep the merged reading's strings (its open one last) to say where the two part.
        if let Some(o) = other {
            let open = Span {
                start: o.str_start,
                end: key.pos,
                role: key.role,
                depth: key.stack.depth,
                repaired: key.repaired,
                escaped: key.escaped,
            };
            let alt = self.push(o.hist, open);
            if let Some(t) = self.queue.get_mut(&key) {
                t.alt = alt;
            }
        }
    }

    fn strings(&self, mut h: u32) -> Vec<Span> {
        let mut out = Vec::new();
        while let Some(node) = self.arena.get(h as usize) {
            out.push(node.span);
            h = node.prev;
        }
        out.reverse();
        out
    }
}

/// The next unescaped quote of the string a thread is in, and whether the string so far
/// has raw control characters (repaired) or escape sequences.
fn next_quote(b: &[u8], key: Key) -> (Option<usize>, bool, bool) {
    let mut i = key.pos;
    let mut repaired = key.repaired;
    let mut escaped = key.escaped;
    loop {
        match b.get(i) {
            None => return (None, repaired, escaped),
            Some(b'"') => return (Some(i), repaired, escaped),
            Some(b'\\') => {
                escaped = true;
                i += 2;
            }
            Some(c) if *c < 0x20 => {
                repaired = true;
                i += 1;
            }
            Some(_) => i = skip_plain(b, i + 1, b.len()),
        }
    }
}

/// Runs tier 2 on the envelope whose `{` is at `start`.
pub(crate) fn recover(text: &str, start: usize) -> Outcome {
    let b = text.as_bytes();
    if b.get(start) != Some(&b'{') {
        return Outcome::Nothing;
    }
    let n = b.len().saturating_sub(start);
    // Generous linear budget: 256 passes over the input (a handful of live states per quote,
    // each paying its scan and its structural run, stays far below it).
    let mut budget: usize = n.saturating_mul(256).saturating_add(1 << 16);
    let mut sim = Sim {
        b,
        arena: Vec::new(),
        queue: BTreeMap::new(),
        done: Vec::new(),
        overflow: false,
        junk_ends: Vec::new(),
    };
    let top = Stack { bits: 0, depth: 0 };
    let Some(env) = top.push(true) else {
        return Outcome::Nothing;
    };
    let (run, _) = structural(b, start + 1, St::KeyOrClose, env);
    if matches!(run, Run::TooDeep) {
        return Outcome::TooComplex;
    }
    let first = Thread {
        count: 1,
        hist: NONE,
        str_start: 0,
        alt: NONE,
    };
    sim.handle(run, first, true);
    while let Some((key, th)) = sim.queue.pop_first() {
        if sim.overflow {
            return Outcome::TooComplex;
        }
        // Two admissible readings: nothing can settle it any more.
        let adm: u8 = sim
            .done
            .iter()
            .filter(|d| d.admissible)
            .fold(0, |n, d| n.saturating_add(d.count));
        if adm >= 2 {
            break;
        }
        let (quote, repaired, escaped) = next_quote(sim.b, key);
        let Some(q) = quote else {
            // The string never closes: this reading dies (its scan still costs).
            budget = budget.saturating_sub(sim.b.len().saturating_sub(key.pos));
            continue;
        };
        // Reading 2: the quote closes the string.
        let span = Span {
            start: th.str_start,
            end: q,
            role: key.role,
            depth: key.stack.depth,
            repaired,
            escaped,
        };
        let st = if key.role == Role::Key {
            St::AfterKey
        } else {
            St::AfterValue
        };
        let (run, reached) = structural(sim.b, q + 1, st, key.stack);
        if matches!(run, Run::TooDeep) {
            return Outcome::TooComplex;
        }
        let spent = reached.saturating_sub(key.pos).saturating_add(8);
        budget = match budget.checked_sub(spent) {
            Some(left) => left,
            None => return Outcome::TooComplex,
        };
        let viable = matches!(
            run,
            Run::Open { .. } | Run::Accept { .. } | Run::JunkEnd { .. }
        );
        // Reading 1: the quote is literal text (admissible only in a dirty string or where closing is not viable).
        let lit_admissible = key.admissible && (key.dirty || !viable);
        let lit_th = if lit_admissible {
            th
        } else {
            Thread {
                hist: NONE,
                alt: NONE,
                ..th
            }
        };
        sim.insert(
            Key {
                pos: q + 1,
                repaired: true,
                escaped,
                dirty: true,
                admissible: lit_admissible,
                ..key
            },
            lit_th,
        );
        if viable {
            let th = if key.admissible {
                let hist = sim.push(th.hist, span);
                Thread { hist, ..th }
            } else {
                th
            };
            sim.handle(run, th, key.admissible);
        }
    }
    if sim.overflow {
        return Outcome::TooComplex;
    }
    decide(&sim)
}

/// Which complete reading is the answer (see the module doc).
fn decide(sim: &Sim<'_>) -> Outcome {
    let adm: Vec<&Done> = sim.done.iter().filter(|d| d.admissible).collect();
    let Some(a) = adm.first() else {
        // The standard reading closes the envelope with JSON-looking text after it, and a
        // string that runs on closes it later: two boundaries, neither one to be trusted.
        return match sim.done.iter().map(|d| d.end).min() {
            Some(later) if !sim.junk_ends.is_empty() => Outcome::TwoBoundaries(later),
            _ => Outcome::Nothing,
        };
    };
    if let Some(b) = adm.get(1) {
        return Outcome::TwoWays(Box::new(explain(
            (sim.strings(a.hist), Some(a.end)),
            (sim.strings(b.hist), Some(b.end)),
        )));
    }
    if a.count >= 2 {
        let alt = if a.alt != NONE { a.alt } else { a.hist };
        return Outcome::TwoWays(Box::new(explain(
            (sim.strings(a.hist), Some(a.end)),
            (sim.strings(alt), None),
        )));
    }
    if let Some(later) = sim
        .done
        .iter()
        .filter(|d| !d.admissible)
        .map(|d| d.end)
        .chain(sim.junk_ends.iter().copied())
        .filter(|end| *end > a.end)
        .min()
    {
        return Outcome::TwoBoundaries(later);
    }
    Outcome::Unique {
        strings: sim.strings(a.hist),
        end: a.end,
    }
}

/// Where two readings (their strings, and their end when complete) part.
fn explain(x: (Vec<Span>, Option<usize>), y: (Vec<Span>, Option<usize>)) -> TwoWays {
    let k =
        x.0.iter()
            .zip(y.0.iter())
            .position(|(p, q)| p != q)
            .unwrap_or(x.0.len().min(y.0.len()));
    // The reading that closes the string first is the short one.
    let (short, long) = match (x.0.get(k), y.0.get(k)) {
        (Some(p), Some(q)) if q.end < p.end => (y, x),
        (None, Some(_)) => (y, x),
        _ => (x, y),
    };
    let string = short.0.get(k).or(long.0.get(k)).copied().unwrap_or(Span {
        start: 0,
        end: 0,
        role: Role::Member,
        depth: 1,
        repaired: false,
        escaped: false,
    });
    let long_end = long
        .0
        .get(k)
        .filter(|s| s.start == string.start && s.end != string.end)
        .map(|s| s.end);
    let next = short.0.get(k + 1).copied();
    let key = match string.role {
        Role::Key => None,
        Role::Member => k.checked_sub(1).and_then(|j| short.0.get(j)).copied(),
        Role::Element => short.0.get(..k).and_then(|before| {
            before
                .iter()
                .rev()
                .find(|s| s.role == Role::Key && s.depth + 1 == string.depth)
                .copied()
        }),
    }
    .filter(|s| s.role == Role::Key);
    TwoWays {
        string,
        next,
        short_end: if next.is_none() { short.1 } else { None },
        long_end,
        key,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(text: &str, o: &Outcome) -> Vec<String> {
        match o {
            Outcome::Unique { strings, .. } => strings
                .iter()
                .filter(|s| s.role != Role::Key)
                .filter_map(|s| text.get(s.start..s.end).map(str::to_string))
                .collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn one_reading_with_inner_quotes() {
        let t = "{\"status\": \"OK\", \"summary\": \"s\", \"artifacts\": [{\"path\": \"a.py\", \"content\": \"print(\"hi\")\n\"}], \"next_actions\": []}";
        let o = recover(t, 0);
        assert_eq!(strs(t, &o), vec!["OK", "s", "a.py", "print(\"hi\")\n"]);
    }

    #[test]
    fn a_string_closing_early_that_ends_the_envelope_is_two_boundaries() {
        let inner = "x\"}], \"next_actions\": []}";
        let t = format!(
            "{{\"status\": \"OK\", \"summary\": \"s\", \"artifacts\": [{{\"path\": \"a\", \"content\": \"{inner}\"}}], \"next_actions\": []}}"
        );
        assert!(matches!(recover(&t, 0), Outcome::TwoBoundaries(_)));
    }

    #[test]
    fn lists_of_clean_strings_have_one_reading() {
        let t = "{\"status\": \"OK\", \"summary\": \"a\nb\", \"artifacts\": [{\"path\": \"a\", \"content\": \"x\"}, {\"path\": \"b\", \"content\": \"y\"}], \"next_actions\": [\"p\", \"q\"]}";
        assert_eq!(
            strs(t, &recover(t, 0)),
            vec!["OK", "a\nb", "a", "x", "b", "y", "p", "q"]
        );
    }

    #[test]
    fn dirty_list_element_reads_two_ways() {
        let t = "{\"status\": \"OK\", \"summary\": \"s\", \"artifacts\": [], \"next_actions\": [\"run \"a\", \"b\" now\"]}";
        let Outcome::TwoWays(w) = recover(t, 0) else {
            panic!("not two ways")
        };
        assert_eq!(w.string.role, Role::Element);
        assert_eq!(t.get(w.string.start..w.string.end), Some("run \"a"));
        assert_eq!(
            w.key.and_then(|k| t.get(k.start..k.end)),
            Some("next_actions")
        );
    }

    #[test]
    fn an_unknown_key_is_a_reading() {
        // The issue's case: the summary may end at `b"` (then "x" is a key) or swallow it.
        let t = "{\"status\": \"OK\", \"summary\": \"a \"b\", \"x\": \"c\"}";
        let Outcome::TwoWays(w) = recover(t, 0) else {
            panic!("not two ways")
        };
        assert_eq!(t.get(w.string.start..w.string.end), Some("a \"b"));
        assert_eq!(w.next.and_then(|n| t.get(n.start..n.end)), Some("x"));
        assert_eq!(w.long_end, t.rfind('"'));
        assert_eq!(w.key.and_then(|k| t.get(k.start..k.end)), Some("summary"));
        // A clean first quote with a well-formed continuation closes: one reading, key "x".
        let t = "{\"status\": \"OK\", \"summary\": \"a\", \"x\": \"b\nc\"}";
        assert_eq!(strs(t, &recover(t, 0)), vec!["OK", "a", "b\nc"]);
    }

    #[test]
    fn repeated_and_wrongly_typed_keys_are_readings() {
        for t in [
            "{\"status\": \"OK\", \"summary\": \"a \"b\", \"summary\": \"c\"}",
            "{\"status\": \"OK\", \"summary\": \"a \"b\", \"status\": 1, \"z\": \"q\"}",
            "{\"status\": \"OK\", \"summary\": \"a \"b\", \"x\": [[\"c\", {\"d\": \"e\"}], [], -1.5e3, true, null], \"z\": \"q\"}",
        ] {
            assert!(matches!(recover(t, 0), Outcome::TwoWays(_)), "{t}");
        }
    }

    #[test]
    fn absent_optional_keys_complete_a_reading() {
        let t = "{\"status\": \"OK\", \"summary\": \"say \"hi\"\"}";
        assert_eq!(strs(t, &recover(t, 0)), vec!["OK", "say \"hi\""]);
    }

    #[test]
    fn a_reading_that_swallows_keys_into_the_summary_is_not_another_reading() {
        // Closing the summary at the content's `"}` would end the envelope inside the one with
        // artifacts: its closing brackets would be trailing text.
        let t = "{\"status\": \"OK\", \"summary\": \"s\", \"artifacts\": [{\"path\": \"a.py\", \"content\": \"d = {\"k\": \"v\"}\nprint(1)\n\"}]}";
        assert_eq!(
            strs(t, &recover(t, 0)),
            vec!["OK", "s", "a.py", "d = {\"k\": \"v\"}\nprint(1)\n"]
        );
    }

    #[test]
    fn a_reading_ending_later_is_refused() {
        let t =
            "{\"status\": \"OK\", \"summary\": \"x \"y\", \"next_actions\": [\"z\"]} and then \"}";
        assert!(matches!(recover(t, 0), Outcome::TwoWays(_)));
        let t = "{\"status\": \"OK\", \"summary\": \"use \"}\" to close\"}";
        assert!(matches!(recover(t, 0), Outcome::TwoBoundaries(end) if end == t.len()));
    }

    #[test]
    fn truncated_and_malformed_are_nothing() {
        for t in [
            "{\"status\": \"OK\", \"summary\": \"s\n",
            "{\"status\": \"OK\", \"summary\": \"a\nb\",}",
            "{\"status\": \"OK\", \"summary\": \"a\nb\", \"n\": 01}",
            "{\"status\": \"OK\", \"summary\": \"a\nb\", \"n\": tru}",
            "{\"status\": \"OK\", \"summary\": \"a\nb\", \"n\": 1.}",
            "{\"status\": \"OK\", \"summary\": \"a\nb\", \"n\": [1 2]}",
        ] {
            assert!(matches!(recover(t, 0), Outcome::Nothing), "{t}");
        }
    }

    #[test]
    fn too_deep_is_too_complex() {
        let t = format!(
            "{{\"summary\": \"a\nb\", \"x\": {}1{}}}",
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(matches!(recover(&t, 0), Outcome::TooComplex));
    }

    #[test]
    fn many_quotes_stay_within_budget() {
        // Thousands of dirty quotes: linear work, a decision either way, no blow-up.
        let body = "say \"x\", ".repeat(3000);
        let t = format!("{{\"status\": \"OK\", \"summary\": \"{body}\"}}");
        let started = std::time::Instant::now();
        let _ = recover(&t, 0);
        assert!(started.elapsed().as_secs() < 5);
    }

    /// Every way of reading each `"` as closing/opening or literal that is well-formed JSON
    /// (an object, the whole text): a brute-force count, for small texts.
    fn brute_force_readings(t: &str) -> usize {
        let quotes: Vec<usize> = t.match_indices('"').map(|(i, _)| i).collect();
        let mut n = 0;
        for mask in 0u32..(1 << quotes.len()) {
            let mut out = String::new();
            let mut inside = false;
            let mut q = 0;
            for ch in t.chars() {
                if ch == '"' {
                    let structural = mask & (1 << q) != 0;
                    q += 1;
                    if structural {
                        inside = !inside;
                        out.push('"');
                    } else if inside {
                        out.push_str("\\\"");
                    } else {
                        // A literal quote outside a string: not a reading.
                        out.push('\u{1}');
                    }
                } else if inside && ch == '\n' {
                    out.push_str("\\n");
                } else {
                    out.push(ch);
                }
            }
            if serde_json::from_str::<serde_json::Value>(&out).is_ok_and(|v| v.is_object()) {
                n += 1;
            }
        }
        n
    }

    #[test]
    fn agrees_with_a_brute_force_count_of_readings() {
        // Small random envelopes with quotes, brackets, commas and colons inside strings.
        let frags = [
            "\"", "a", ", ", ": ", "{", "}", "[", "]", "\n", "x\"", "\", \"", "1",
        ];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            usize::try_from(seed % m as u64).unwrap_or(0)
        };
        let (mut unique, mut two, mut none) = (0, 0, 0);
        for _ in 0..3000 {
            let mut parts = Vec::new();
            for _ in 0..2 {
                let k = next(4);
                parts.push((0..k).map(|_| frags[next(frags.len())]).collect::<String>());
            }
            let t = match next(3) {
                0 => format!(
                    "{{\"status\": \"OK\", \"summary\": \"{}\", \"next_actions\": [\"{}\"]}}",
                    parts[0], parts[1]
                ),
                1 => format!("{{\"summary\": \"{}\", \"x\": \"{}\"}}", parts[0], parts[1]),
                _ => format!("{{\"a\": [\"{}\", {{\"b\": \"{}\"}}]}}", parts[0], parts[1]),
            };
            if t.matches('"').count() > 10 {
                continue;
            }
            let all = brute_force_readings(&t);
            match recover(&t, 0) {
                Outcome::Unique { strings, end } => {
                    unique += 1;
                    assert!(all >= 1, "unique but no well-formed reading: {t:?}");
                    // The reading taken is one of them: its repaired text is strict JSON.
                    let fixed = super::super::Repaired::new(&t, &strings, end);
                    assert!(
                        serde_json::from_str::<serde_json::Value>(&fixed.text).is_ok(),
                        "{t:?} -> {:?}",
                        fixed.text
                    );
                }
                Outcome::TwoWays(_) => {
                    two += 1;
                    assert!(all >= 2, "two ways but {all} well-formed readings: {t:?}");
                }
                // Refused: no admissible reading (a quote read as text only where closing
                // breaks the structure right after it), though a far-fetched one may exist.
                Outcome::Nothing => none += 1,
                Outcome::TwoBoundaries(_) => assert!(all >= 1, "{t:?}"),
                Outcome::TooComplex => panic!("too complex: {t:?}"),
            }
        }
        assert!(
            unique > 100 && two > 50 && none > 50,
            "{unique} {two} {none}"
        );
    }
}
