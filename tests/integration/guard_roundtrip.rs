//! Property checks with a small deterministic generator (no extra dependency):
//!
//! 1. Any envelope, serialised by serde_json (prose and fences around it),
//!    parses back to itself by tier 1.
//! 2. The same envelope written the way careless models do — string values
//!    inserted raw, with raw newlines/tabs/quotes and no escaping — is either
//!    refused or accepted as exactly itself: tier 2 never returns another
//!    envelope. (Generated strings never put `,` `}` `]` `:` right after a
//!    quote, so the true reading is always an admissible one; see tier2.rs.)
//! 3. Both again with `artifacts` and/or `next_actions` left out: the absent
//!    keys stay absent (issue 15 item 6).

use plangate::guard::envelope::{Artifact, Envelope, Status, Tier, parse_envelope};

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const PIECES: &[&str] = &[
    "a",
    "b",
    "x y",
    " ",
    "\n",
    "\t",
    "\r\n",
    "\"",
    "{",
    "[",
    "(",
    ")",
    "é",
    "😀",
    "path",
    "content",
    "status",
    "summary",
    "next_actions",
    "artifacts",
    "OK",
    "=",
    "#",
    "'",
    "print(",
    "//",
    "/",
    ".",
    "-",
    "0",
    "<a href=",
    ">",
];

/// A string; when `raw_safe`, no backslash and no `,` `}` `]` `:` after a quote (even across whitespace).
fn string(r: &mut Lcg, raw_safe: bool, with_escapes: bool) -> String {
    let n = r.below(8);
    let mut s = String::new();
    for _ in 0..n {
        s.push_str(PIECES[r.below(PIECES.len())]);
        if !raw_safe {
            match r.below(12) {
                0 => s.push('\\'),
                1 => s.push_str("\"}]"),
                2 => s.push_str("\", \""),
                3 if with_escapes => s.push('\u{1}'),
                _ => {}
            }
        }
    }
    if raw_safe {
        // Make sure no quote is followed (after whitespace) by a structural character or the end.
        let mut out = String::new();
        let chars: Vec<char> = s.chars().collect();
        for (i, c) in chars.iter().enumerate() {
            out.push(*c);
            if *c == '"' {
                let next = chars[i + 1..]
                    .iter()
                    .find(|c| !matches!(c, ' ' | '\t' | '\n' | '\r'));
                if matches!(next, None | Some(',' | '}' | ']' | ':')) {
                    out.push('q');
                }
            }
        }
        return out;
    }
    s
}

/// A random envelope; with `omit`, `artifacts` and `next_actions` are each absent half of the time.
fn envelope(r: &mut Lcg, raw_safe: bool, omit: bool) -> Envelope {
    let safe_path =
        |r: &mut Lcg| ["src/a.rs", "b.txt", "dir/c d.md", "ü.py"][r.below(4)].to_string();
    let mut artifacts = Vec::new();
    for i in 0..r.below(3) {
        artifacts.push(Artifact {
            path: format!("{i}/{}", safe_path(r)),
            content: string(r, raw_safe, true),
        });
    }
    let next_actions: Vec<String> = (0..r.below(3)).map(|_| string(r, raw_safe, true)).collect();
    let (artifacts, next_actions) = if omit {
        (
            (r.below(2) == 0).then_some(artifacts),
            (r.below(2) == 0).then_some(next_actions),
        )
    } else {
        (Some(artifacts), Some(next_actions))
    };
    Envelope {
        status: if r.below(2) == 0 {
            Status::Ok
        } else {
            Status::Fail
        },
        summary: string(r, raw_safe, true),
        artifacts,
        next_actions,
    }
}

fn raw_render(e: &Envelope) -> String {
    let arts = e.artifacts.as_ref().map(|arts| {
        let items: Vec<String> = arts
            .iter()
            .map(|a| {
                format!(
                    "{{\"path\": \"{}\", \"content\": \"{}\"}}",
                    a.path, a.content
                )
            })
            .collect();
        format!(", \"artifacts\": [{}]", items.join(", "))
    });
    let acts = e.next_actions.as_ref().map(|acts| {
        let items: Vec<String> = acts.iter().map(|a| format!("\"{a}\"")).collect();
        format!(", \"next_actions\": [{}]", items.join(", "))
    });
    let status = if e.status == Status::Ok { "OK" } else { "FAIL" };
    format!(
        "Here it is:\n```json\n{{\"status\": \"{status}\", \"summary\": \"{}\"{}{}}}\n```\n",
        e.summary,
        arts.unwrap_or_default(),
        acts.unwrap_or_default()
    )
}

#[test]
fn serialised_envelopes_round_trip() {
    serialised_round_trip(7, false);
}

#[test]
fn serialised_envelopes_without_optional_keys_round_trip() {
    serialised_round_trip(8, true);
}

fn serialised_round_trip(seed: u64, omit: bool) {
    let mut r = Lcg(seed);
    for i in 0..3000 {
        let e = envelope(&mut r, false, omit);
        let json = serde_json::to_string_pretty(&e).unwrap_or_default();
        let text = match i % 3 {
            0 => json,
            1 => format!("Done.\n\n```json\n{json}\n```\nBye."),
            _ => format!("\u{feff}{}", json.replace('\n', "\r\n")),
        };
        assert_eq!(
            parse_envelope(&text),
            Ok((e, Tier::Strict)),
            "case {i}: {text:?}"
        );
    }
}

#[test]
fn raw_envelopes_are_exact_or_refused() {
    raw_exact_or_refused(42, false);
}

#[test]
fn raw_envelopes_without_optional_keys_are_exact_or_refused() {
    raw_exact_or_refused(43, true);
}

fn raw_exact_or_refused(seed: u64, omit: bool) {
    let mut r = Lcg(seed);
    let (mut recovered, mut strict, mut refused) = (0, 0, 0);
    for i in 0..5000 {
        let e = envelope(&mut r, true, omit);
        let text = raw_render(&e);
        match parse_envelope(&text) {
            Ok((got, tier)) => {
                assert_eq!(
                    got, e,
                    "case {i}: tier {tier:?} returned another envelope for {text:?}"
                );
                if tier == Tier::Recovered {
                    recovered += 1;
                } else {
                    strict += 1;
                }
            }
            Err(_) => refused += 1,
        }
    }
    eprintln!("raw renderings: {strict} strict, {recovered} recovered exactly, {refused} refused");
    assert!(
        recovered > 500,
        "tier 2 should recover a fair share ({recovered})"
    );
}
