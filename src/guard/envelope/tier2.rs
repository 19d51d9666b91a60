//! Tier 2 of design 001: recover an envelope whose string values hold raw
//! control characters or unescaped `"`, but only when exactly one reading of
//! the answer gives a complete envelope.
//!
//! The envelope grammar is finite-state (fixed keys, fixed depth), so every
//! reading is a run of one automaton: structure is strict JSON, and inside a
//! string value each `"` either closes the string or is literal text. Runs
//! are simulated in order of position and merged when they reach the same
//! position in the same state (counts add, saturating at 2), so the work is
//! O(n·k) where k is the number of live states (bounded by the automaton,
//! a handful in practice) — never exponential. A work budget backs this up.
//!
//! Which readings count ("admissible"): a quote is only read as literal text
//! where the standard JSON reading breaks. The *first* quote of a string
//! closes it when the structure after it is viable (the strict run from it
//! reaches the next string value or the end of the envelope); only when it is
//! not viable does the string become *dirty*, and in a dirty string every
//! later quote may be literal or closing, and both readings are counted.
//! Without this rule every list of two strings (`["a", "b"]`) would have a
//! second reading (`a", "b`) and nothing could ever be recovered.
//! Readings that break the rule are still simulated: if one of them yields a
//! complete envelope that ends somewhere else than the admissible one, the
//! answer has two valid boundaries and is refused.
//!
//! A reading is complete once `status` and `summary` are read and the object
//! closes; `artifacts` and `next_actions` may be absent — but a reading
//! without one of them is only complete where the answer may end (nothing
//! glued to the `}`, no JSON-looking `,` `:` `}` `]` `"` after it). The reading taken is
//! the admissible one with the most keys; every other complete reading makes
//! the answer ambiguous, except one that only *drops* keys the taken reading
//! has (its string swallowed them) and either breaks the admissibility rule or
//! ends inside the taken reading — what follows it is then the rest of the
//! envelope, never an answer's end. With all four keys present this is
//! exactly the rule of the four-key grammar; a shorter reading that ends
//! after the taken one (the taken one may have closed too early) is refused.

use super::super::json::skip_plain;
use super::Status;
use std::collections::BTreeMap;

/// Which string value a reading is inside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Field {
    Summary,
    Path,
    Content,
    Action,
}

/// One step of a reading, in text order.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ev {
    Status(Status),
    /// The optional `artifacts` key is present.
    ArtifactsKey,
    /// The optional `next_actions` key is present.
    ActionsKey,
    ArtifactStart,
    /// A string value: `start..end` is between its quotes.
    Str {
        field: Field,
        start: usize,
        end: usize,
        /// Has raw control characters or literal quotes (needs repair).
        repaired: bool,
        /// Has backslash escape sequences.
        escaped: bool,
    },
}

/// What tier 2 found.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Exactly one reading; the envelope ends at `end`.
    Unique { events: Vec<Ev>, end: usize },
    /// Two or more readings give a complete envelope.
    Many,
    /// One admissible reading, but another reading closes the envelope elsewhere (at this offset).
    TwoBoundaries(usize),
    /// No reading gives a complete envelope.
    Nothing,
    /// The work budget ran out (treated as ambiguous).
    TooComplex,
}

const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    pos: usize,
    field: Field,
    env_seen: u8,
    art_seen: u8,
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
}

struct Node {
    prev: u32,
    ev: Ev,
}

#[derive(Debug, Clone, Copy)]
enum St {
    EnvKey,
    EnvAfter,
    ArtsStart,
    ArtsAfter,
    ArtsNeedObj,
    ArtKey,
    ArtAfter,
    ActsStart,
    ActsAfter,
    ActsNeedStr,
}

enum Run {
    Open {
        pos: usize,
        field: Field,
        env_seen: u8,
        art_seen: u8,
    },
    /// The envelope closes before `end`, with the keys `env` (bits of [`ENV_KEYS`]).
    Accept {
        end: usize,
        env: u8,
    },
    Dead,
    Eof,
}

const ENV_KEYS: [&[u8]; 4] = [b"status", b"summary", b"artifacts", b"next_actions"];
/// `status` and `summary` are required; `artifacts` and `next_actions` may be absent.
const REQUIRED_ENV: u8 = 0b0011;
const ALL_ENV: u8 = 0b1111;
/// Distinct complete readings kept; more is treated as too complex (refused).
const MAX_DONE: usize = 32;
const ALL_ART: u8 = 0b11;

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| is_ws(*c)) {
        i += 1;
    }
    i
}

enum KeyRead {
    Key(usize, usize),
    Dead,
    Eof,
}

/// Reads a plain key `"name"` at `i` (on the quote) from `keys`; returns (key index, offset after the quote).
fn read_key(b: &[u8], i: usize, keys: &[&[u8]]) -> KeyRead {
    let from = i + 1;
    let mut j = from;
    loop {
        match b.get(j) {
            None => return KeyRead::Eof,
            Some(b'"') => break,
            Some(c) if c.is_ascii_lowercase() || *c == b'_' => {
                if j - from > 16 {
                    return KeyRead::Dead;
                }
                j += 1;
            }
            Some(_) => return KeyRead::Dead,
        }
    }
    let name = b.get(from..j).unwrap_or(&[]);
    match keys.iter().position(|k| *k == name) {
        Some(k) => KeyRead::Key(k, j + 1),
        None => KeyRead::Dead,
    }
}

/// Whether an envelope may end before `end`: no text glued to it and no JSON-looking
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

/// `ws : ws` after a key; returns the offset of the value.
fn colon(b: &[u8], i: usize) -> Result<usize, Run> {
    let i = skip_ws(b, i);
    match b.get(i) {
        None => Err(Run::Eof),
        Some(b':') => Ok(skip_ws(b, i + 1)),
        Some(_) => Err(Run::Dead),
    }
}

/// Where [`structural`] goes after one of its states: on to a state at an offset, or out.
enum Next {
    Go(St, usize),
    Stop(Run),
}

/// `St::EnvKey`: an envelope key, its colon and the start of its value.
fn env_key(b: &[u8], mut i: usize, env: &mut u8, art: u8, evs: &mut Vec<Ev>) -> Next {
    if b.get(i) != Some(&b'"') {
        return Next::Stop(Run::Dead);
    }
    let (k, after) = match read_key(b, i, &ENV_KEYS) {
        KeyRead::Key(k, a) => (k, a),
        KeyRead::Dead => return Next::Stop(Run::Dead),
        KeyRead::Eof => return Next::Stop(Run::Eof),
    };
    let bit = 1u8 << k;
    if *env & bit != 0 {
        return Next::Stop(Run::Dead);
    }
    *env |= bit;
    i = match colon(b, after) {
        Ok(v) => v,
        Err(r) => return Next::Stop(r),
    };
    match k {
        0 => {
            let rest = b.get(i..).unwrap_or(&[]);
            let lit: [(&[u8], Status); 2] = [(b"\"OK\"", Status::Ok), (b"\"FAIL\"", Status::Fail)];
            let mut matched = None;
            for (l, s) in lit {
                if rest.starts_with(l) {
                    matched = Some((l.len(), s));
                } else if l.starts_with(rest) {
                    return Next::Stop(Run::Eof);
                }
            }
            match matched {
                Some((len, s)) => {
                    evs.push(Ev::Status(s));
                    Next::Go(St::EnvAfter, i + len)
                }
                None => Next::Stop(Run::Dead),
            }
        }
        1 => match b.get(i) {
            None => Next::Stop(Run::Eof),
            Some(b'"') => Next::Stop(Run::Open {
                pos: i + 1,
                field: Field::Summary,
                env_seen: *env,
                art_seen: art,
            }),
            Some(_) => Next::Stop(Run::Dead),
        },
        _ => match b.get(i) {
            None => Next::Stop(Run::Eof),
            Some(b'[') if k == 2 => {
                evs.push(Ev::ArtifactsKey);
                Next::Go(St::ArtsStart, i + 1)
            }
            Some(b'[') => {
                evs.push(Ev::ActionsKey);
                Next::Go(St::ActsStart, i + 1)
            }
            Some(_) => Next::Stop(Run::Dead),
        },
    }
}

/// `St::ArtKey`: an artifact key, its colon and the opening quote of its value.
fn art_key(b: &[u8], i: usize, env: u8, art: &mut u8) -> Next {
    if b.get(i) != Some(&b'"') {
        return Next::Stop(Run::Dead);
    }
    let (k, after) = match read_key(b, i, &[b"path", b"content"]) {
        KeyRead::Key(k, a) => (k, a),
        KeyRead::Dead => return Next::Stop(Run::Dead),
        KeyRead::Eof => return Next::Stop(Run::Eof),
    };
    let bit = 1u8 << k;
    if *art & bit != 0 {
        return Next::Stop(Run::Dead);
    }
    *art |= bit;
    let i = match colon(b, after) {
        Ok(v) => v,
        Err(r) => return Next::Stop(r),
    };
    let field = if k == 0 { Field::Path } else { Field::Content };
    Next::Stop(match b.get(i) {
        None => Run::Eof,
        Some(b'"') => Run::Open {
            pos: i + 1,
            field,
            env_seen: env,
            art_seen: *art,
        },
        Some(_) => Run::Dead,
    })
}

/// Deterministic strict run over structure, from `i`, until the next string value opens.
fn structural(
    b: &[u8],
    mut i: usize,
    mut st: St,
    mut env: u8,
    mut art: u8,
    evs: &mut Vec<Ev>,
) -> Run {
    loop {
        i = skip_ws(b, i);
        let Some(&c) = b.get(i) else { return Run::Eof };
        st = match st {
            St::EnvKey => match env_key(b, i, &mut env, art, evs) {
                Next::Go(next, at) => {
                    i = at;
                    next
                }
                Next::Stop(run) => return run,
            },
            St::EnvAfter => match c {
                b',' => {
                    i += 1;
                    St::EnvKey
                }
                b'}' if env & REQUIRED_ENV == REQUIRED_ENV => {
                    // A reading without an optional key is only one where the answer may end.
                    if env != ALL_ENV && !may_end_here(b, i + 1) {
                        return Run::Dead;
                    }
                    return Run::Accept { end: i + 1, env };
                }
                _ => return Run::Dead,
            },
            St::ArtsStart | St::ArtsNeedObj => match c {
                b'{' => {
                    evs.push(Ev::ArtifactStart);
                    art = 0;
                    i += 1;
                    St::ArtKey
                }
                b']' if matches!(st, St::ArtsStart) => {
                    i += 1;
                    St::EnvAfter
                }
                _ => return Run::Dead,
            },
            St::ArtsAfter => match c {
                b',' => {
                    i += 1;
                    St::ArtsNeedObj
                }
                b']' => {
                    i += 1;
                    St::EnvAfter
                }
                _ => return Run::Dead,
            },
            St::ArtKey => match art_key(b, i, env, &mut art) {
                Next::Go(next, at) => {
                    i = at;
                    next
                }
                Next::Stop(run) => return run,
            },
            St::ArtAfter => match c {
                b',' => {
                    i += 1;
                    St::ArtKey
                }
                b'}' if art == ALL_ART => {
                    i += 1;
                    St::ArtsAfter
                }
                _ => return Run::Dead,
            },
            St::ActsStart | St::ActsNeedStr => match c {
                b'"' => {
                    return Run::Open {
                        pos: i + 1,
                        field: Field::Action,
                        env_seen: env,
                        art_seen: art,
                    };
                }
                b']' if matches!(st, St::ActsStart) => {
                    i += 1;
                    St::EnvAfter
                }
                _ => return Run::Dead,
            },
            St::ActsAfter => match c {
                b',' => {
                    i += 1;
                    St::ActsNeedStr
                }
                b']' => {
                    i += 1;
                    St::EnvAfter
                }
                _ => return Run::Dead,
            },
        };
    }
}

/// Complete readings with the same keys, end and admissibility (merged).
#[derive(Debug, Clone, Copy)]
struct Done {
    env: u8,
    end: usize,
    admissible: bool,
    /// How many readings (saturating at 2).
    count: u8,
    /// Events of the first admissible one.
    hist: u32,
}

struct Sim<'a> {
    b: &'a [u8],
    arena: Vec<Node>,
    queue: BTreeMap<Key, Thread>,
    /// Every complete reading, admissible or not (at most [`MAX_DONE`] kept).
    done: Vec<Done>,
    /// More than [`MAX_DONE`] distinct complete readings.
    overflow: bool,
}

impl Sim<'_> {
    fn push_events(&mut self, mut hist: u32, evs: &[Ev]) -> u32 {
        for ev in evs {
            let id = u32::try_from(self.arena.len()).unwrap_or(NONE);
            self.arena.push(Node {
                prev: hist,
                ev: *ev,
            });
            hist = id;
        }
        hist
    }

    fn handle(&mut self, run: Run, count: u8, hist: u32, evs: &[Ev], admissible: bool) {
        match run {
            Run::Open {
                pos,
                field,
                env_seen,
                art_seen,
            } => {
                let hist = if admissible {
                    self.push_events(hist, evs)
                } else {
                    NONE
                };
                let key = Key {
                    pos,
                    field,
                    env_seen,
                    art_seen,
                    repaired: false,
                    escaped: false,
                    dirty: false,
                    admissible,
                };
                self.insert(
                    key,
                    Thread {
                        count,
                        hist,
                        str_start: pos,
                    },
                );
            }
            Run::Accept { end, env } => {
                let hist = if admissible {
                    self.push_events(hist, evs)
                } else {
                    NONE
                };
                if let Some(d) = self
                    .done
                    .iter_mut()
                    .find(|d| d.env == env && d.end == end && d.admissible == admissible)
                {
                    d.count = d.count.saturating_add(count).min(2);
                } else if self.done.len() < MAX_DONE {
                    self.done.push(Done {
                        env,
                        end,
                        admissible,
                        count: count.min(2),
                        hist,
                    });
                } else {
                    self.overflow = true;
                }
            }
            Run::Dead | Run::Eof => {}
        }
    }

    fn insert(&mut self, key: Key, th: Thread) {
        self.queue
            .entry(key)
            .and_modify(|t| t.count = t.count.saturating_add(th.count).min(2))
            .or_insert(th);
    }
}

/// Runs tier 2 on the envelope whose `{` is at `start`.
pub(crate) fn recover(text: &str, start: usize) -> Outcome {
    let b = text.as_bytes();
    if b.get(start) != Some(&b'{') {
        return Outcome::Nothing;
    }
    let n = b.len().saturating_sub(start);
    // Generous linear budget: 64 passes over the input.
    let mut budget: usize = n.saturating_mul(64).saturating_add(1 << 16);
    let mut sim = Sim {
        b,
        arena: Vec::new(),
        queue: BTreeMap::new(),
        done: Vec::new(),
        overflow: false,
    };
    let mut evs = Vec::new();
    let run = structural(b, start + 1, St::EnvKey, 0, 0, &mut evs);
    sim.handle(run, 1, NONE, &evs, true);
    while let Some((key, th)) = sim.queue.pop_first() {
        if sim.overflow {
            return Outcome::TooComplex;
        }
        // Two admissible readings with every key: nothing can settle it any more.
        let full: u8 = sim
            .done
            .iter()
            .filter(|d| d.admissible && d.env == ALL_ENV)
            .fold(0, |n, d| n.saturating_add(d.count));
        if full >= 2 {
            return Outcome::Many;
        }
        let mut i = key.pos;
        let mut repaired = key.repaired;
        let mut escaped = key.escaped;
        let quote = loop {
            match sim.b.get(i) {
                None => break None,
                Some(b'"') => break Some(i),
                Some(b'\\') => {
                    escaped = true;
                    i += 2;
                }
                Some(c) if *c < 0x20 => {
                    repaired = true;
                    i += 1;
                }
                Some(_) => i = skip_plain(sim.b, i + 1, sim.b.len()),
            }
        };
        let spent = i.saturating_sub(key.pos).saturating_add(32);
        budget = match budget.checked_sub(spent) {
            Some(left) => left,
            None => return Outcome::TooComplex,
        };
        let Some(q) = quote else { continue };
        // Reading 2: the quote closes the string.
        let mut evs = vec![Ev::Str {
            field: key.field,
            start: th.str_start,
            end: q,
            repaired,
            escaped,
        }];
        let st = match key.field {
            Field::Summary => St::EnvAfter,
            Field::Path | Field::Content => St::ArtAfter,
            Field::Action => St::ActsAfter,
        };
        let run = structural(sim.b, q + 1, st, key.env_seen, key.art_seen, &mut evs);
        let viable = matches!(run, Run::Open { .. } | Run::Accept { .. });
        // Reading 1: the quote is literal text (admissible only in a dirty string or where closing is not viable).
        let lit_admissible = key.admissible && (key.dirty || !viable);
        let lit_th = if lit_admissible {
            th
        } else {
            Thread { hist: NONE, ..th }
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
            sim.handle(run, th.count, th.hist, &evs, key.admissible);
        }
    }
    if sim.overflow {
        return Outcome::TooComplex;
    }
    match decide(&sim.done) {
        Decision::Unique(a) => {
            let mut events = Vec::new();
            let mut h = a.hist;
            while let Some(node) = sim.arena.get(h as usize) {
                events.push(node.ev);
                h = node.prev;
            }
            events.reverse();
            Outcome::Unique { events, end: a.end }
        }
        Decision::Many => Outcome::Many,
        Decision::TwoBoundaries(end) => Outcome::TwoBoundaries(end),
        Decision::Nothing => Outcome::Nothing,
    }
}

enum Decision {
    Unique(Done),
    Many,
    TwoBoundaries(usize),
    Nothing,
}

/// `a`'s keys are a strict subset of `b`'s.
fn fewer_keys(a: u8, b: u8) -> bool {
    a != b && a & !b == 0
}

/// Which complete reading is the answer (see the module doc).
fn decide(done: &[Done]) -> Decision {
    let adm: Vec<(usize, &Done)> = done
        .iter()
        .enumerate()
        .filter(|(_, d)| d.admissible)
        .collect();
    // The admissible reading with the most keys: no other admissible one has more.
    let Some(&(ai, a)) = adm
        .iter()
        .find(|(_, d)| !adm.iter().any(|(_, o)| fewer_keys(d.env, o.env)))
    else {
        return Decision::Nothing;
    };
    if a.count >= 2 {
        return Decision::Many;
    }
    let mut other_end = None;
    for (i, r) in done.iter().enumerate() {
        if i == ai {
            continue;
        }
        let drops_keys = fewer_keys(r.env, a.env);
        if r.admissible {
            if !(drops_keys && r.end < a.end) {
                return Decision::Many;
            }
        } else if r.end != a.end && !drops_keys {
            other_end = other_end.or(Some(r.end));
        }
    }
    match other_end {
        Some(end) => Decision::TwoBoundaries(end),
        None => Decision::Unique(*a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(text: &str, o: &Outcome) -> Vec<String> {
        match o {
            Outcome::Unique { events, .. } => events
                .iter()
                .filter_map(|e| match e {
                    Ev::Str { start, end, .. } => text.get(*start..*end).map(str::to_string),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn one_reading_with_inner_quotes() {
        let t = "{\"status\": \"OK\", \"summary\": \"s\", \"artifacts\": [{\"path\": \"a.py\", \"content\": \"print(\"hi\")\n\"}], \"next_actions\": []}";
        let o = recover(t, 0);
        assert_eq!(strs(t, &o), vec!["s", "a.py", "print(\"hi\")\n"]);
    }

    #[test]
    fn two_readings_are_many() {
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
            vec!["a\nb", "a", "x", "b", "y", "p", "q"]
        );
    }

    #[test]
    fn dirty_list_element_is_ambiguous() {
        let t = "{\"status\": \"OK\", \"summary\": \"s\", \"artifacts\": [], \"next_actions\": [\"run \"a\", \"b\" now\"]}";
        assert!(matches!(recover(t, 0), Outcome::Many));
    }

    #[test]
    fn absent_optional_keys_complete_a_reading() {
        let t = "{\"status\": \"OK\", \"summary\": \"say \"hi\"\"}";
        assert_eq!(strs(t, &recover(t, 0)), vec!["say \"hi\""]);
        let t = "{\"status\": \"OK\", \"next_actions\": [\"a\nb\"]}";
        assert!(matches!(recover(t, 0), Outcome::Nothing));
    }

    #[test]
    fn a_reading_that_swallows_keys_into_the_summary_is_not_another_reading() {
        // Closing the summary at the content's `"}` would be an envelope with status and
        // summary only, followed by the rest of the one with artifacts: not an answer's end.
        let t = "{\"status\": \"OK\", \"summary\": \"s\", \"artifacts\": [{\"path\": \"a.py\", \"content\": \"d = {\"k\": \"v\"}\nprint(1)\n\"}]}";
        assert_eq!(
            strs(t, &recover(t, 0)),
            vec!["s", "a.py", "d = {\"k\": \"v\"}\nprint(1)\n"]
        );
    }

    #[test]
    fn a_shorter_reading_ending_later_is_ambiguous() {
        let t =
            "{\"status\": \"OK\", \"summary\": \"x \"y\", \"next_actions\": [\"z\"]} and then \"}";
        assert!(matches!(recover(t, 0), Outcome::Many));
        // The short reading is followed by `"`: not an answer's end, so tier 2 reads the long
        // one only (tier 1, which parses the short one strictly, then sees two boundaries).
        let t = "{\"status\": \"OK\", \"summary\": \"use \"}\" to close\"}";
        assert!(matches!(recover(t, 0), Outcome::Unique { end, .. } if end == t.len()));
    }

    #[test]
    fn truncated_is_nothing() {
        let t = "{\"status\": \"OK\", \"summary\": \"s\n";
        assert!(matches!(recover(t, 0), Outcome::Nothing));
    }
}
