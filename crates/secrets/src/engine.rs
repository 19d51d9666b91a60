//! The scanner: one Aho-Corasick pass over all rule keywords, then each triggered rule's
//! regex on merged, bounded windows around its keyword hits; candidate filtering (entropy,
//! allowlists, checksums, decoding), base64-wrapped secret detection, and deduplication.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use base64::Engine as _;
use regex::bytes::{Regex, RegexBuilder};

use super::Finding;
use super::checksum::{decode_b64, valid_jwt, verify_crc_token};
use super::entropy::{classes, shannon};
use super::names;
use super::redact::fingerprint;
use super::rules::{Rule, Ruleset, expand_regex};
use super::view;

/// Default bytes before / after a keyword hit for line windows (clipped to the line).
const LINE_BEFORE: usize = 384;
const LINE_AFTER: usize = 1024;
/// Default bytes around a hit for block (multi-line) windows.
const BLOCK_BEFORE: usize = 256;
const BLOCK_AFTER: usize = 8192;
/// Minimum length of a base64 run examined for wrapped secrets.
const MIN_B64_RUN: usize = 24;
/// Maximum part of a (huge) base64 run decoded around one hit.
const MAX_B64_SPAN: usize = 4096;
/// Rules at least this specific veto weaker rules on spans they recognised but rejected.
const VETO_PRIORITY: i32 = 40;
/// Lines containing one of these drop their findings.
const ALLOW_MARKERS: [&[u8]; 3] = [
    b"plangate:allow",
    b"gitleaks:allow",
    b"pragma: allowlist secret",
];

struct Compiled {
    re: Regex,
    groups: Vec<usize>,
    /// Groups holding the name the value is assigned to (`key...`).
    keys: Vec<usize>,
    allow: Vec<Regex>,
    decoded: Option<Regex>,
    credential_key: Option<Regex>,
}

struct CRule {
    rule: Rule,
    src: String,
    compiled: OnceLock<Option<Compiled>>,
    stop: Vec<Vec<u8>>,
    match_stop: Vec<Vec<u8>>,
    priority: i32,
    confidence: f32,
    block: bool,
    before: usize,
    after: usize,
    use_global: bool,
}

enum Pat {
    Keyword(Vec<usize>),
    B64(Vec<u8>),
}

/// A compiled ruleset, ready to scan bytes. Cheap to build: regexes compile lazily on first use.
pub struct Scanner {
    rules: Vec<CRule>,
    ac: Option<AhoCorasick>,
    pats: Vec<Pat>,
    global_stop: Vec<Vec<u8>>,
    global_src: Vec<String>,
    global_re: OnceLock<Vec<Regex>>,
}

/// A value a rule's regex captured, with the name it is assigned to.
#[derive(Clone, Copy)]
struct Cand<'a> {
    sec: &'a [u8],
    key: Option<&'a [u8]>,
    /// The name ends a quoted scoped type path (`"AWS::IAM::AccessKey": ...`):
    /// a map keyed by type names, not a variable.
    scoped: bool,
    start: usize,
    end: usize,
}

#[derive(Clone, Copy, Debug)]
struct Raw {
    rule: usize,
    start: usize,
    end: usize,
    conf: f32,
    prio: i32,
    /// A specific rule recognised this span but rejected it (placeholder, bad checksum...):
    /// it wins the overlap against weaker rules and is then dropped.
    veto: bool,
}

fn build_regex(src: &str) -> Option<Regex> {
    RegexBuilder::new(&expand_regex(src))
        .unicode(false)
        .size_limit(32 << 20)
        .build()
        .ok()
}

fn lower(s: &str) -> Vec<u8> {
    s.as_bytes().to_ascii_lowercase()
}

fn contains_ci(hay: &[u8], needle_lower: &[u8]) -> bool {
    if needle_lower.is_empty() || needle_lower.len() > hay.len() {
        return needle_lower.is_empty();
    }
    hay.windows(needle_lower.len())
        .any(|w| w.eq_ignore_ascii_case(needle_lower))
}

/// Stable base64 fragments of `lit` at the three possible byte alignments.
fn b64_fragments(lit: &[u8]) -> Vec<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let mut out = Vec::new();
    for shift in 0..3usize {
        let mut buf = vec![0u8; shift];
        buf.extend_from_slice(lit);
        let first = (8 * shift).div_ceil(6);
        let last = (8 * (shift + lit.len())) / 6;
        for enc in [STANDARD_NO_PAD.encode(&buf), URL_SAFE_NO_PAD.encode(&buf)] {
            if let Some(frag) = enc.as_bytes().get(first..last)
                && frag.len() >= 4
                && !out.iter().any(|f: &Vec<u8>| f == frag)
            {
                out.push(frag.to_vec());
            }
        }
    }
    out
}

/// Whether the bytes before a name end a quoted scoped path (`"AWS::IAM::`,
/// `'Aws::Sts::`): the name is then a type's, as a key of a map keyed by
/// types, not a variable's (`Config::API_KEY = ...` is not quoted).
fn in_quoted_scope(before: &[u8]) -> bool {
    before.ends_with(b"::")
        && before
            .iter()
            .rposition(|&b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b':'))
            .is_some_and(|i| matches!(before[i], b'"' | b'\''))
}

fn is_b64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_')
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_' | b'=' | b'.')
}

fn mostly_text(b: &[u8]) -> bool {
    if b.is_empty() {
        return false;
    }
    let good = b
        .iter()
        .filter(|&&c| (0x20..0x7f).contains(&c) || matches!(c, b'\n' | b'\r' | b'\t'))
        .count();
    good * 100 >= b.len() * 90
}

impl Scanner {
    /// Compile `rules`: builds the keyword automaton; regexes compile lazily on first use.
    pub fn new(rules: &Ruleset) -> Result<Scanner, String> {
        let mut crules = Vec::with_capacity(rules.rules.len());
        let mut kw_index: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
        let mut pats: Vec<Pat> = Vec::new();
        let mut lits: Vec<Vec<u8>> = Vec::new();
        let mut b64_lits: Vec<Vec<u8>> = Vec::new();
        for (ri, r) in rules.rules.iter().enumerate() {
            let block = r.window.as_deref() == Some("block");
            crules.push(CRule {
                src: expand_regex(&r.regex),
                compiled: OnceLock::new(),
                stop: r.allowlist.stopwords.iter().map(|s| lower(s)).collect(),
                match_stop: r
                    .allowlist
                    .match_stopwords
                    .iter()
                    .map(|s| lower(s))
                    .collect(),
                priority: r.priority.unwrap_or(50),
                confidence: r.confidence.unwrap_or(0.9),
                block,
                before: r
                    .before
                    .unwrap_or(if block { BLOCK_BEFORE } else { LINE_BEFORE }),
                after: r
                    .after
                    .unwrap_or(if block { BLOCK_AFTER } else { LINE_AFTER }),
                use_global: r.global_allowlist.unwrap_or(true),
                rule: r.clone(),
            });
            for k in &r.keywords {
                let k = lower(k);
                match kw_index.get(&k) {
                    Some(&pi) => {
                        if let Some(Pat::Keyword(v)) = pats.get_mut(pi)
                            && !v.contains(&ri)
                        {
                            v.push(ri);
                        }
                    }
                    None => {
                        kw_index.insert(k.clone(), pats.len());
                        pats.push(Pat::Keyword(vec![ri]));
                        lits.push(k);
                    }
                }
            }
            for p in &r.prefixes {
                for frag in b64_fragments(p.as_bytes()) {
                    if !b64_lits.contains(&frag) {
                        b64_lits.push(frag);
                    }
                }
            }
        }
        for frag in b64_lits {
            pats.push(Pat::B64(frag.clone()));
            lits.push(frag);
        }
        let ac = if lits.is_empty() {
            None
        } else {
            Some(
                AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .match_kind(MatchKind::Standard)
                    .kind(Some(AhoCorasickKind::DFA))
                    .build(&lits)
                    .map_err(|e| format!("keyword automaton: {e}"))?,
            )
        };
        Ok(Scanner {
            rules: crules,
            ac,
            pats,
            global_stop: rules.global.stopwords.iter().map(|s| lower(s)).collect(),
            global_src: rules.global.regexes.clone(),
            global_re: OnceLock::new(),
        })
    }

    /// Force compilation of every regex (for benchmarks and tests). Returns failures.
    pub fn compile_all(&self) -> Vec<String> {
        let mut bad = Vec::new();
        for r in &self.rules {
            if self.compiled(r).is_none() {
                bad.push(r.rule.id.clone());
            }
        }
        let _ = self.global_regexes();
        bad
    }

    fn global_regexes(&self) -> &[Regex] {
        self.global_re.get_or_init(|| {
            self.global_src
                .iter()
                .filter_map(|s| build_regex(s))
                .collect()
        })
    }

    fn compiled<'a>(&self, r: &'a CRule) -> Option<&'a Compiled> {
        r.compiled
            .get_or_init(|| {
                let re = build_regex(&r.src)?;
                let names: Vec<Option<&str>> = re.capture_names().collect();
                let mut groups: Vec<usize> = names
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| n.is_some_and(|n| n.starts_with("secret")))
                    .map(|(i, _)| i)
                    .collect();
                if groups.is_empty() && names.len() > 1 {
                    groups.push(1);
                }
                let keys = names
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| n.is_some_and(|n| n.starts_with("key")))
                    .map(|(i, _)| i)
                    .collect();
                let allow = r
                    .rule
                    .allowlist
                    .regexes
                    .iter()
                    .filter_map(|s| build_regex(s))
                    .collect();
                let decoded = match &r.rule.decoded_regex {
                    Some(s) => Some(build_regex(s)?),
                    None => None,
                };
                let credential_key = match &r.rule.credential_key {
                    Some(s) => Some(build_regex(s)?),
                    None => None,
                };
                Some(Compiled {
                    re,
                    groups,
                    keys,
                    allow,
                    decoded,
                    credential_key,
                })
            })
            .as_ref()
    }

    /// All findings in `bytes`, sorted by position and deduplicated.
    pub fn scan(&self, bytes: &[u8]) -> Vec<Finding> {
        let raws = self.scan_raw(bytes, 0);
        self.finalize(bytes, raws)
    }

    /// [`Scanner::scan`] of `bytes` and of the text as a terminal or a JSON
    /// reader shows it ([`view`]: control sequences and bytes removed, a
    /// backspace erasing the character before it): a secret split by an ANSI
    /// sequence, a BEL, a C0/C1 control or an overstrike is found, over its
    /// whole original span (control bytes included), with its line and
    /// column there and the fingerprint of the value as shown. A secret seen
    /// both ways is one finding; where a raw finding and one as shown
    /// overlap, the one starting first (the longer at the same start) is kept.
    pub fn scan_shown(&self, bytes: &[u8]) -> Vec<Finding> {
        let views = view::views(bytes);
        let mut all = self.scan(bytes);
        if views.is_empty() {
            return all;
        }
        for v in views {
            for mut f in self.scan(&v.text) {
                let (s, e) = v.span(f.start, f.end);
                let before = bytes.get(..s).unwrap_or_default();
                f.start = s;
                f.end = e;
                f.line = memchr::memchr_iter(b'\n', before).count() + 1;
                f.column = s - memchr::memrchr(b'\n', before).map_or(0, |i| i + 1) + 1;
                all.push(f);
            }
        }
        all.sort_by_key(|f| (f.start, std::cmp::Reverse(f.end)));
        let mut kept: Vec<Finding> = Vec::with_capacity(all.len());
        for f in all {
            if kept.last().is_some_and(|k| f.start < k.end) {
                continue;
            }
            kept.push(f);
        }
        kept
    }

    fn window(&self, r: &CRule, bytes: &[u8], s: usize, e: usize) -> (usize, usize) {
        let len = bytes.len();
        let mut lo = s.saturating_sub(r.before);
        let mut hi = len.min(e.saturating_add(r.after));
        if !r.block {
            if let Some(i) = memchr::memrchr(b'\n', &bytes[lo..s]) {
                lo += i + 1;
            }
            if let Some(i) = memchr::memchr(b'\n', &bytes[e..hi]) {
                hi = e + i;
            }
        }
        // never cut a token in two at a clipped window edge
        let mut n = 0;
        while lo > 0 && n < 256 && is_token_byte(bytes[lo - 1]) {
            lo -= 1;
            n += 1;
        }
        n = 0;
        while hi < len && n < 256 && is_token_byte(bytes[hi]) {
            hi += 1;
            n += 1;
        }
        (lo, hi)
    }

    fn scan_raw(&self, bytes: &[u8], depth: u8) -> Vec<Raw> {
        let mut out = Vec::new();
        let ac = match &self.ac {
            Some(ac) => ac,
            None => return out,
        };
        // per rule: windows, merged on the fly (hits arrive in increasing end order)
        let mut open: Vec<Option<(usize, usize)>> = vec![None; self.rules.len()];
        let mut windows: Vec<(usize, usize, usize)> = Vec::new();
        let mut runs: Vec<(usize, usize, usize)> = Vec::new(); // run start, end, hit start
        for m in ac.find_overlapping_iter(bytes) {
            match self.pats.get(m.pattern().as_usize()) {
                Some(Pat::Keyword(rs)) => {
                    for &ri in rs {
                        let r = &self.rules[ri];
                        let (lo, hi) = self.window(r, bytes, m.start(), m.end());
                        match &mut open[ri] {
                            Some((os, oe)) if lo <= *oe => {
                                *os = (*os).min(lo);
                                *oe = (*oe).max(hi);
                            }
                            slot => {
                                if let Some((os, oe)) = *slot {
                                    windows.push((ri, os, oe));
                                }
                                *slot = Some((lo, hi));
                            }
                        }
                    }
                }
                Some(Pat::B64(exact)) => {
                    if depth > 0 || &bytes[m.start()..m.end()] != exact.as_slice() {
                        continue;
                    }
                    if runs
                        .last()
                        .is_some_and(|&(s, e, _)| s <= m.start() && m.end() <= e)
                    {
                        continue;
                    }
                    let mut s = m.start();
                    while s > 0 && is_b64_byte(bytes[s - 1]) {
                        s -= 1;
                    }
                    let mut e = m.end();
                    while e < bytes.len() && is_b64_byte(bytes[e]) {
                        e += 1;
                    }
                    while e < bytes.len() && bytes[e] == b'=' {
                        e += 1;
                    }
                    if e - s >= MIN_B64_RUN {
                        runs.push((s, e, m.start()));
                    }
                }
                None => {}
            }
        }
        for (ri, slot) in open.iter().enumerate() {
            if let Some((s, e)) = *slot {
                windows.push((ri, s, e));
            }
        }
        for (ri, s, e) in windows {
            self.run_rule(ri, bytes, s, e, depth, &mut out);
        }
        for (s, e, hit) in runs {
            self.wrapped(bytes, s, e, hit, &mut out);
        }
        out
    }

    /// A base64 run that may wrap a prefixed secret: decode and scan the text.
    fn wrapped(&self, bytes: &[u8], s: usize, e: usize, hit: usize, out: &mut Vec<Raw>) {
        let (mut s, mut e) = (s, e);
        if e - s > 2 * MAX_B64_SPAN {
            let from = hit.saturating_sub(MAX_B64_SPAN).max(s);
            s += (from - s) / 4 * 4;
            e = e.min(hit + MAX_B64_SPAN);
        }
        for off in 0..4 {
            let Some(run) = bytes.get(s + off..e) else {
                return;
            };
            let Some(dec) = decode_b64(run) else { continue };
            if !mostly_text(&dec) {
                continue;
            }
            let inner = self.scan_raw(&dec, 1);
            if inner.is_empty() {
                continue;
            }
            for f in inner {
                out.push(Raw {
                    rule: f.rule,
                    start: s + off,
                    end: e,
                    conf: f.conf * 0.95,
                    prio: f.prio,
                    veto: false,
                });
            }
            return;
        }
    }

    fn run_rule(&self, ri: usize, bytes: &[u8], s: usize, e: usize, depth: u8, out: &mut Vec<Raw>) {
        let r = &self.rules[ri];
        let Some(c) = self.compiled(r) else { return };
        let Some(w) = bytes.get(s..e) else { return };
        let mut pos = 0;
        while pos <= w.len() {
            let Some(caps) = c.re.captures_at(w, pos) else {
                break;
            };
            let Some(m0) = caps.get(0) else { break };
            let next = match c.groups.iter().find_map(|&g| caps.get(g)) {
                Some(sec) if r.match_stop.iter().any(|w| contains_ci(m0.as_bytes(), w)) => {
                    sec.end()
                }
                Some(sec) => {
                    let before = out.len();
                    let key = c.keys.iter().find_map(|&g| caps.get(g));
                    let scoped = key.is_some_and(|k| in_quoted_scope(&w[..k.start()]));
                    self.candidate(
                        ri,
                        c,
                        Cand {
                            sec: sec.as_bytes(),
                            key: key.map(|k| k.as_bytes()),
                            scoped,
                            start: s + sec.start(),
                            end: s + sec.end(),
                        },
                        depth,
                        out,
                    );
                    // a rejected value may hide the next assignment (`k = process.env.K ||
                    // "value"`): search again from its start
                    match out.get(before..) {
                        Some(new) if new.iter().any(|r| !r.veto) => sec.end(),
                        _ => sec.start(),
                    }
                }
                None => m0.end(),
            };
            pos = if next > pos { next } else { pos + 1 };
        }
    }

    fn candidate(&self, ri: usize, c: &Compiled, cand: Cand, depth: u8, out: &mut Vec<Raw>) {
        let before = out.len();
        self.check(ri, c, &cand, depth, out);
        let prio = self.rules[ri].priority;
        if out.len() == before && prio >= VETO_PRIORITY && !cand.sec.is_empty() {
            out.push(Raw {
                rule: ri,
                start: cand.start,
                end: cand.end,
                conf: 0.0,
                prio,
                veto: true,
            });
        }
    }

    fn check(&self, ri: usize, c: &Compiled, cand: &Cand, depth: u8, out: &mut Vec<Raw>) {
        let Cand {
            sec,
            key,
            scoped,
            start,
            end,
        } = *cand;
        let r = &self.rules[ri];
        let rule = &r.rule;
        if sec.is_empty()
            || rule.min_len.is_some_and(|n| sec.len() < n)
            || rule.max_len.is_some_and(|n| sec.len() > n)
        {
            return;
        }
        let decoded;
        let value: &[u8] = if rule.decode.is_some() {
            let Some(d) = decode_b64(sec) else { return };
            if !mostly_text(&d) {
                return;
            }
            if depth == 0 {
                let inner = self.scan_raw(&d, 1);
                if !inner.is_empty() {
                    for f in inner {
                        out.push(Raw {
                            rule: f.rule,
                            start,
                            end,
                            conf: f.conf * 0.95,
                            prio: f.prio.max(r.priority),
                            veto: false,
                        });
                    }
                    return;
                }
            }
            decoded = d;
            decoded.trim_ascii()
        } else {
            sec
        };
        if let Some(d) = &c.decoded
            && !d.is_match(value)
        {
            return;
        }
        if let Some(min_words) = rule.skip_names
            && (scoped
                || names::is_name(value, min_words)
                || names::is_pattern(value)
                || names::is_namespaced_id(value)
                || key.is_some_and(|k| names::is_typed_id(value, k))
                || key.is_some_and(|k| names::echoes_key(value, k)))
        {
            return;
        }
        if rule.skip_plain
            && let Some(k) = key
            && !c.credential_key.as_ref().is_some_and(|re| re.is_match(k))
            && names::is_plain(value)
        {
            return;
        }
        if rule.entropy.is_some_and(|min| shannon(value) < min) {
            return;
        }
        if rule.min_classes.is_some_and(|n| classes(value) < n) {
            return;
        }
        let stopped = |list: &[Vec<u8>]| {
            list.iter()
                .any(|w| contains_ci(value, w) || contains_ci(sec, w))
        };
        if stopped(&r.stop) || (r.use_global && stopped(&self.global_stop)) {
            return;
        }
        if c.allow.iter().any(|a| a.is_match(value)) {
            return;
        }
        if r.use_global && self.global_regexes().iter().any(|a| a.is_match(value)) {
            return;
        }
        let mut conf = r.confidence;
        if rule.checksum.is_some() {
            if !verify_crc_token(sec) {
                return;
            }
            conf = conf.max(0.99);
        }
        if rule.validate.as_deref() == Some("jwt") && !valid_jwt(sec) {
            return;
        }
        out.push(Raw {
            rule: ri,
            start,
            end,
            conf,
            prio: r.priority,
            veto: false,
        });
    }

    fn finalize(&self, bytes: &[u8], mut raws: Vec<Raw>) -> Vec<Finding> {
        raws.sort_by(|a, b| {
            b.prio
                .cmp(&a.prio)
                .then((b.end - b.start).cmp(&(a.end - a.start)))
                .then(b.conf.total_cmp(&a.conf))
                .then(a.start.cmp(&b.start))
                .then(a.rule.cmp(&b.rule))
        });
        // kept spans are disjoint: start -> raw
        let mut kept: BTreeMap<usize, Raw> = BTreeMap::new();
        for r in raws {
            let overlaps = kept
                .range(..r.end)
                .next_back()
                .is_some_and(|(_, k)| k.end > r.start);
            if !overlaps {
                kept.insert(r.start, r);
            }
        }
        let mut out = Vec::with_capacity(kept.len());
        let mut line = 1usize;
        let mut pos = 0usize;
        for (_, r) in kept {
            if r.veto {
                continue;
            }
            let Some(secret) = bytes.get(r.start..r.end) else {
                continue;
            };
            line += memchr::memchr_iter(b'\n', &bytes[pos..r.start]).count();
            pos = r.start;
            let ls = memchr::memrchr(b'\n', &bytes[..r.start]).map_or(0, |i| i + 1);
            let le = memchr::memchr(b'\n', &bytes[r.end..]).map_or(bytes.len(), |i| r.end + i);
            let text = &bytes[ls..le];
            if ALLOW_MARKERS
                .iter()
                .any(|m| memchr::memmem::find(text, m).is_some())
            {
                continue;
            }
            out.push(Finding {
                rule: self.rules[r.rule].rule.id.clone(),
                start: r.start,
                end: r.end,
                line,
                column: r.start - ls + 1,
                confidence: r.conf,
                fingerprint: fingerprint(secret),
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_found_in_encoding() {
        use base64::engine::general_purpose::STANDARD;
        let frags = b64_fragments(b"ghp_");
        for pre in ["", "x", "xy", "token=", "export T="] {
            let enc = STANDARD.encode(format!("{pre}ghp_abcdefgh"));
            assert!(
                frags
                    .iter()
                    .any(|f| memchr::memmem::find(enc.as_bytes(), f).is_some()),
                "prefix {pre:?}"
            );
        }
    }
}
