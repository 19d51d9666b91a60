//! A value printed in short chunks glued by other text: `fold -w7 | sed
//! 's/^/x: /'`, a JSON array of chunks, path parts `Qx7Hv2p/L9wW4mK/8rT3nB`,
//! outputs `a=Qx7Hv2p,b=L9wW4mK`. Each chunk is shorter than a piece, but
//! the chunks in a row rebuild one.
//!
//! The caller finds every window of [`GRAM`] bytes of the values it knows
//! ([`Hit`]); [`chains`] joins the hits of one value into chunks (hits in a
//! row) and the chunks into chains: a chunk that goes on where the one
//! before it stopped (in the value), at most [`GLUE_MAX`] bytes after it
//! (in the text). A chain of two chunks or more that rebuilds `min` bytes of
//! the value is masked from its first byte to its last, glue included.
//! Ordinary text is not joined: a chain needs the value's own bytes, in its
//! order, at least [`GRAM`] of them a chunk.

use std::collections::HashMap;

/// The fewest bytes of a value a chunk holds to be joined to others.
pub const GRAM: usize = 4;
/// The most bytes of other text between two chunks of a chain.
pub const GLUE_MAX: usize = 32;

/// A window of [`GRAM`] bytes of a value (`form`) that starts at `offset` in
/// it, found at `at` in the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Hit {
    pub form: usize,
    pub at: usize,
    pub offset: usize,
}

/// Text `ts..te` that holds the value's bytes `qs..qe`.
#[derive(Clone, Copy, Debug)]
struct Run {
    ts: usize,
    te: usize,
    qs: usize,
    qe: usize,
}

/// A chain found: text `start..end` rebuilds the bytes `from..to` of `form`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chain {
    pub form: usize,
    pub start: usize,
    pub end: usize,
    pub from: usize,
    pub to: usize,
}

/// The chains of chunks glued by other text that rebuild at least `min`
/// bytes of one value (see the module's text).
pub fn chains(mut hits: Vec<Hit>, min: usize) -> Vec<Chain> {
    hits.sort_unstable();
    hits.dedup();
    let mut out = Vec::new();
    let mut rest = hits.as_slice();
    while let Some(first) = rest.first() {
        let n = rest.iter().take_while(|h| h.form == first.form).count();
        let (group, next) = rest.split_at(n);
        rest = next;
        let runs = runs_of(group);
        out.extend(chain_runs(&runs, min).into_iter().map(|c| Chain {
            form: first.form,
            start: c.ts,
            end: c.te,
            from: c.qs,
            to: c.qe,
        }));
    }
    out
}

/// The hits of one value joined into runs: windows in a row, in the text
/// and in the value (sorted by where they start in the text).
fn runs_of(hits: &[Hit]) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    // Where a run ends (text, value) -> the run: the next window in a row
    // ends one byte further on in both.
    let mut open: HashMap<(usize, usize), usize> = HashMap::new();
    for h in hits {
        let (te, qe) = (h.at + GRAM, h.offset + GRAM);
        match open.remove(&(te - 1, qe - 1)) {
            Some(k) => {
                if let Some(r) = runs.get_mut(k) {
                    r.te = te;
                    r.qe = qe;
                }
                open.insert((te, qe), k);
            }
            None => {
                open.insert((te, qe), runs.len());
                runs.push(Run {
                    ts: h.at,
                    te,
                    qs: h.offset,
                    qe,
                });
            }
        }
    }
    runs.sort_by_key(|r| (r.ts, r.qs));
    runs
}

/// The chains of `runs` (sorted by start) that rebuild `min` bytes or more.
fn chain_runs(runs: &[Run], min: usize) -> Vec<Run> {
    // (the chain so far, how many runs it has)
    let mut chains: Vec<(Run, usize)> = Vec::new();
    for &b in runs {
        let joined = chains.iter_mut().find(|(c, _)| {
            // B goes on where C stopped in the value (it may start a few
            // bytes back: glue that happens to be the value's next byte
            // lengthened C), and starts in the text after C's matching
            // byte, at most GLUE_MAX bytes after C's end.
            let back = c.qe.saturating_sub(b.qs);
            b.qs > c.qs
                && b.qs <= c.qe
                && b.qe > c.qe
                && back < GRAM
                && b.ts + back >= c.te
                && b.ts <= c.te + GLUE_MAX
        });
        match joined {
            Some((c, n)) => {
                c.te = b.te;
                c.qe = b.qe;
                *n += 1;
            }
            None => chains.push((b, 1)),
        }
    }
    chains
        .into_iter()
        .filter(|(c, n)| *n > 1 && c.qe - c.qs >= min)
        .map(|(c, _)| c)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hits a naive search finds of `value`'s windows in `text`.
    fn hits(text: &str, value: &str) -> Vec<Hit> {
        let (t, v) = (text.as_bytes(), value.as_bytes());
        let mut out = Vec::new();
        for (offset, w) in v.windows(GRAM).enumerate() {
            for at in 0..t.len().saturating_sub(GRAM - 1) {
                if &t[at..at + GRAM] == w {
                    out.push(Hit {
                        form: 0,
                        at,
                        offset,
                    });
                }
            }
        }
        out
    }

    fn masked(text: &str, value: &str) -> Vec<String> {
        chains(hits(text, value), 8)
            .into_iter()
            .map(|c| text[c.start..c.end].to_owned())
            .collect()
    }

    const V: &str = "Qx7Hv2pL9wW4mK8rT3nB";

    #[test]
    fn chunks_glued_by_text_are_joined() {
        assert_eq!(
            masked("x: Qx7Hv2p\nx: L9wW4mK\nx: 8rT3nB\n", V),
            ["Qx7Hv2p\nx: L9wW4mK\nx: 8rT3nB"]
        );
        assert_eq!(
            masked(r#"["Qx7Hv2p","L9wW4mK","8rT3nB"]"#, V),
            [r#"Qx7Hv2p","L9wW4mK","8rT3nB"#]
        );
        assert_eq!(masked("a=Qx7H,b=v2pL,c=9wW4", V), ["Qx7H,b=v2pL,c=9wW4"]);
        assert_eq!(
            masked("/Qx7Hv2p/L9wW4mK/8rT3nB", V),
            ["Qx7Hv2p/L9wW4mK/8rT3nB"]
        );
        // Glue that is the value's next byte lengthens a chunk: still joined.
        assert_eq!(masked("Qx7Hv~v2pL", V), ["Qx7Hv~v2pL"]);
    }

    #[test]
    fn other_text_is_not_joined() {
        // Chunks out of order, too far apart, or too short are no chain.
        assert!(masked("L9wW4mK then Qx7Hv2p", V).is_empty());
        assert!(masked(&format!("Qx7Hv2p{}L9wW4mK", "-".repeat(40)), V).is_empty());
        assert!(masked("Qx7 Hv2 pL9 wW4", V).is_empty());
        assert!(masked("Qx7H and Qx7H and 9wW4", V).is_empty());
        // Two chunks that rebuild fewer than 8 bytes.
        assert!(masked("Qx7H-v2p", V).is_empty());
        assert!(masked("ordinary words, nothing of the value", V).is_empty());
    }
}
