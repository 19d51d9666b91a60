//! The one redaction layer: every byte plangate writes (report, manifest,
//! audit log, console lines, every stdout and stderr line through
//! `output`) passes through [`clean`] on its way out.
//!
//! It scans the text with the built-in rules and also replaces every secret
//! value detected anywhere earlier in the run (artifacts, agent files), so a
//! secret that only a whole-file scan could recognise is still caught when a
//! piece of it shows up in a message. Replacements keep nothing of the value.
//!
//! It fails closed: the built-in rules are parsed, regex-checked and compiled
//! once by [`init`], which `plangate` calls before anything else and which
//! stops the program (internal error) when they are broken. Nothing here
//! skips the rule scan.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use aho_corasick::AhoCorasick;

use crate::secrets::{Finding, RulesError, Ruleset, Scanner};
use crate::secrets::{chain, decode, fold, forms, view};

/// The built-in secret rules cannot be used: plangate must not write anything.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum BrokenRules {
    /// `rules/default.toml` does not parse or a regex of it is invalid.
    #[error("the built-in secret rules do not parse: {0}")]
    Rules(RulesError),
    /// The scanner refused the rules (its error is text: `secrets::Scanner::new`).
    #[error("the built-in secret rules do not compile: {0}")]
    Scanner(String),
}

/// Compile a parsed (or refused) rule set into the scanner [`init`] keeps.
fn compile(rules: Result<&Ruleset, &RulesError>) -> Result<Scanner, BrokenRules> {
    let rules = rules.map_err(|e| BrokenRules::Rules(e.clone()))?;
    Scanner::new(rules).map_err(BrokenRules::Scanner)
}

/// Check and compile the built-in rules (once per process). `plangate` calls
/// this at startup and exits with an internal error when it fails.
pub(crate) fn init() -> Result<&'static Scanner, BrokenRules> {
    SCANNER
        .get_or_init(|| compile(Ruleset::builtin_checked()))
        .as_ref()
        .map_err(Clone::clone)
}

/// The compiled built-in rules ([`init`]).
static SCANNER: OnceLock<Result<Scanner, BrokenRules>> = OnceLock::new();

/// The built-in scanner. Never skipped: if the built-in rules are broken this
/// panics (the binary has already stopped at [`init`] in that case).
pub fn builtin_scanner() -> &'static Scanner {
    match init() {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    }
}

/// A window of a chained form and where it sits: (form, offset) each.
type Gram = (Vec<u8>, Vec<(usize, usize)>);

struct Known {
    /// The patterns: whole forms of the values and their pieces ([`Form`]).
    values: Vec<Vec<u8>>,
    /// The same patterns, to add each once.
    seen: HashSet<Vec<u8>>,
    /// Matches `values[..covered]` (every match, overlapping ones included,
    /// ASCII case ignored); the values after those (when the index could not
    /// be built, or a panic came between) are searched one by one.
    matcher: Option<AhoCorasick>,
    covered: usize,
    /// The windows of [`chain::GRAM`] bytes of the values' chained forms
    /// (a value and its reverse: [`chain`]), lower-cased, each once, with
    /// where they sit (form, offset); the index matches
    /// `grams[..grams_covered]` after `values[..covered]`.
    grams: Vec<Gram>,
    gram_ids: HashMap<Vec<u8>, usize>,
    /// The chained forms, each once (their number numbers them).
    chain_forms: HashSet<Vec<u8>>,
    /// For each chained form, whether the window of [`PIECE_LEN`] bytes at
    /// each offset is masked on its own ([`Form::patterns`]: not plangate's
    /// vocabulary nor an armour line): a chain is masked only when it
    /// rebuilds one such window.
    chain_windows: Vec<Vec<bool>>,
    grams_covered: usize,
}

/// The shortest run of a known value's bytes that is masked on its own
/// wherever it shows up (SPEC: "a piece"): every window of this many bytes
/// of a value is a pattern, so a value printed in halves (on two lines, on
/// stdout and stderr, in two files) is masked in each half of at least
/// this length, and overlapping windows cover the whole visible run.
pub(crate) const PIECE_LEN: usize = 8;
/// The same for the hex forms: two digits a byte.
const HEX_PIECE_LEN: usize = 2 * PIECE_LEN;
/// The same for the base64 forms: 11 characters hold 66 bits.
const BASE64_PIECE_LEN: usize = (8 * PIECE_LEN).div_ceil(6);

/// One text to mask: whole, and every window of `piece` bytes of it.
struct Form {
    text: Vec<u8>,
    piece: usize,
}

impl Form {
    fn new(text: impl Into<Vec<u8>>, piece: usize) -> Form {
        Form {
            text: text.into(),
            piece,
        }
    }

    /// The whole text (when at least `min` bytes long) and its windows,
    /// but those that are plangate's own words ([`is_vocabulary`]) or lie
    /// in `public` (lower-cased windows of the value's armour lines).
    fn patterns<'a>(
        &'a self,
        min: usize,
        public: &'a HashSet<Vec<u8>>,
    ) -> impl Iterator<Item = &'a [u8]> {
        let whole = (self.text.len() >= min).then_some(self.text.as_slice());
        let windows = self
            .text
            .windows(self.piece.max(1))
            .filter(move |_| self.text.len() > self.piece && self.piece >= min)
            .filter(|w| !is_vocabulary(w) && !public.contains(&w.to_ascii_lowercase()));
        whole.into_iter().chain(windows)
    }
}

/// The lower-cased windows of the armour lines of `value` (`-----BEGIN
/// RSA PRIVATE KEY-----`, `-----END CERTIFICATE-----`): the same in every
/// key of their kind, so they are no piece of this one (masked as pieces,
/// they would mask `private key` in any text). The whole value, and every
/// window reaching into its body, still are masked.
fn armour_windows(value: &str) -> HashSet<Vec<u8>> {
    value
        .lines()
        .map(str::trim)
        .filter(|l| {
            l.len() > 10
                && l.starts_with("-----")
                && l.ends_with("-----")
                && (l.contains("BEGIN ") || l.contains("END "))
        })
        .flat_map(|l| {
            l.to_ascii_lowercase()
                .as_bytes()
                .windows(PIECE_LEN)
                .map(<[u8]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The words plangate writes itself and reads back (the keys of its JSON
/// files, its file names, its variables' names, its own name), one a line.
const VOCABULARY: &str = include_str!("vocabulary.txt");

/// Whether `window` (ASCII case ignored) is part of a word of
/// [`VOCABULARY`]. Such a window of a known value is not masked on its own
/// (the whole value, and every window with a byte beyond the word, still
/// are): a secret that holds `plangate` or `fingerprint` would otherwise
/// mask `report.json`'s keys and make the report unreadable. What it lets
/// through is a public word, never a byte of the value beside it.
fn is_vocabulary(window: &[u8]) -> bool {
    static WINDOWS: OnceLock<HashSet<Vec<u8>>> = OnceLock::new();
    let set = WINDOWS.get_or_init(|| {
        let mut set = HashSet::new();
        for word in VOCABULARY.lines().map(str::trim).filter(|w| !w.is_empty()) {
            let word = word.to_ascii_lowercase();
            for n in [PIECE_LEN, BASE64_PIECE_LEN, HEX_PIECE_LEN] {
                set.extend(word.as_bytes().windows(n).map(<[u8]>::to_vec));
            }
        }
        set
    });
    set.contains(&window.to_ascii_lowercase())
}

/// Two lists of values: those plangate was given (secret environment
/// values: masked in artifacts without being findings) and those found
/// (by the rules, or plangate's own token: a new appearance is a finding).
#[derive(Clone, Copy)]
enum List {
    Given,
    Found,
}

fn cell(list: List) -> &'static Mutex<Known> {
    static GIVEN: OnceLock<Mutex<Known>> = OnceLock::new();
    static FOUND: OnceLock<Mutex<Known>> = OnceLock::new();
    let cell = match list {
        List::Given => &GIVEN,
        List::Found => &FOUND,
    };
    cell.get_or_init(|| {
        Mutex::new(Known {
            values: Vec::new(),
            seen: HashSet::new(),
            matcher: None,
            covered: 0,
            grams: Vec::new(),
            gram_ids: HashMap::new(),
            chain_forms: HashSet::new(),
            chain_windows: Vec::new(),
            grams_covered: 0,
        })
    })
}

fn known(list: List) -> MutexGuard<'static, Known> {
    cell(list)
        .lock()
        // A panic elsewhere while holding the lock leaves a usable list (a
        // value is only ever added, and `covered` says what the index holds:
        // the rest is searched one by one), so masking goes on, never skips.
        .unwrap_or_else(PoisonError::into_inner)
}

/// [`known`] without waiting for ever: for the panic hook, which may run
/// while this thread (or another) holds the lock. None: still held after a
/// short wait.
fn try_known(list: List) -> Option<MutexGuard<'static, Known>> {
    for _ in 0..50 {
        match cell(list).try_lock() {
            Ok(g) => return Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }
    None
}

/// Remember secret values found elsewhere, so they are replaced wherever
/// they appear, and so is every piece of [`PIECE_LEN`] bytes of them.
pub(crate) fn remember(values: impl IntoIterator<Item = Vec<u8>>) {
    // Very short values would redact ordinary text; rules never yield them.
    let forms = values.into_iter().map(|v| {
        let public = armour_windows(&String::from_utf8_lossy(&v));
        (Form::new(v, PIECE_LEN), public)
    });
    remember_at_least(List::Found, forms, PIECE_LEN);
}

/// The shortest environment value (or line of one, or piece of its base64
/// form) that is masked: shorter ones would mask ordinary text (`true`,
/// `1`, `main`), as GitHub Actions' masks also skip them.
pub(crate) const MIN_SECRET_LEN: usize = 6;

/// Remember the values of secret environment variables (declared in
/// `secrets:`, or named like a credential), before the first step: each value,
/// each line of a multi-line value, and their forms ([`secret_forms`]). Each
/// is masked whole (when at least [`MIN_SECRET_LEN`] bytes long) and so is
/// every piece of it ([`PIECE_LEN`] bytes of the value, or their hex or
/// base64 digits); ASCII case is ignored.
pub fn remember_secrets<'a>(values: impl IntoIterator<Item = &'a str>) {
    let mut forms: Vec<(Form, HashSet<Vec<u8>>)> = Vec::new();
    for value in values {
        let public = armour_windows(value);
        let mut texts = vec![value, value.trim()];
        if value.contains('\n') {
            texts.extend(value.lines().map(str::trim));
        }
        texts.dedup();
        for t in texts {
            if let Some(parts) = url_secret_parts(t) {
                // A URL under a credential's name (`ACTIONS_ID_TOKEN_REQUEST_URL`):
                // masked whole, and by the piece only in its parts that look
                // like credentials, so that `https://` or a host name is not
                // masked in every text.
                forms.push((Form::new(t, t.len()), public.clone()));
                for part in parts {
                    forms.extend(secret_forms(part).into_iter().map(|f| (f, public.clone())));
                }
                continue;
            }
            forms.extend(secret_forms(t).into_iter().map(|f| (f, public.clone())));
        }
    }
    remember_at_least(List::Given, forms, MIN_SECRET_LEN);
}

/// When `t` is an `http(s)` URL without credentials in its authority, the
/// parts of it (path segments, query values, fragments, split at `/ ? & = #
/// ; ,` and `.`) that could be one: [`PIECE_LEN`] bytes or more, with a digit
/// or a character other than letters, `-` and `_` (an id, a signature, a
/// token). `None` for any other value (all of it is a secret's).
fn url_secret_parts(t: &str) -> Option<Vec<&str>> {
    let rest = t
        .strip_prefix("https://")
        .or_else(|| t.strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') || t.chars().any(char::is_whitespace) || t.contains('%') {
        return None;
    }
    Some(
        rest[authority.len()..]
            .split(['/', '?', '&', '=', '#', ';', ',', '.'])
            .filter(|p| {
                p.len() >= PIECE_LEN
                    && p.chars()
                        .any(|c| !(c.is_ascii_alphabetic() || c == '-' || c == '_'))
            })
            .collect(),
    )
}

/// The texts of a secret value `t` that are masked: the value; its
/// JSON-escaped form (`report.json`); its bytes reversed; the hex of its
/// bytes and of its reversed bytes (matched in either case), and that hex
/// reversed; its base64 forms (standard and URL-safe, at the three byte
/// alignments, so a value inside a longer encoded text is found too), and
/// the base64 forms of its reverse and of its hex texts ([`forms`]: one
/// transform stacked on another); and, when it has characters beyond ASCII
/// that fold, the value folded ([`fold::fold_value`]). Each with the length
/// of its pieces: [`PIECE_LEN`] bytes of the value, [`HEX_PIECE_LEN`] hex
/// digits, [`BASE64_PIECE_LEN`] base64 characters (twice that for the
/// base64 of a hex text).
fn secret_forms(t: &str) -> Vec<Form> {
    let bytes = t.as_bytes();
    let reversed: Vec<u8> = bytes.iter().rev().copied().collect();
    let hexed = hex::encode(bytes);
    let mut forms = vec![
        Form::new(bytes, PIECE_LEN),
        Form::new(hex::encode(&reversed), HEX_PIECE_LEN),
        Form::new(hexed.bytes().rev().collect::<Vec<u8>>(), HEX_PIECE_LEN),
        Form::new(hexed, HEX_PIECE_LEN),
    ];
    // Reversed by characters too (`rev` keeps UTF-8 characters whole).
    let rev_chars: String = t.chars().rev().collect();
    if rev_chars.as_bytes() != reversed.as_slice() {
        forms.push(Form::new(rev_chars, PIECE_LEN));
    }
    forms.push(Form::new(reversed, PIECE_LEN));
    let json = serde_json::to_string(t).unwrap_or_default();
    if let Some(inner) = json.get(1..json.len().saturating_sub(1))
        && inner != t
    {
        forms.push(Form::new(inner, PIECE_LEN));
    }
    for (source, is_hex) in forms::base64_sources(t) {
        let piece = if is_hex {
            2 * BASE64_PIECE_LEN
        } else {
            BASE64_PIECE_LEN
        };
        forms.extend(
            forms::base64(&source)
                .into_iter()
                .map(|f| Form::new(f, piece)),
        );
    }
    if let Some(folded) = fold::fold_value(t) {
        forms.push(Form::new(folded, PIECE_LEN));
    }
    forms
}

/// Add the patterns of `forms` (each with the windows that are public in
/// it: [`armour_windows`]) to `list` and index them again.
fn remember_at_least(
    list: List,
    forms: impl IntoIterator<Item = (Form, HashSet<Vec<u8>>)>,
    min: usize,
) {
    let mut k = known(list);
    let mut changed = false;
    for (form, public) in forms {
        if matches!(list, List::Given) && form.piece == PIECE_LEN && form.text.len() > PIECE_LEN {
            changed |= add_chain_form(&mut k, &form.text, &public);
        }
        for p in form.patterns(min, &public) {
            if !k.seen.contains(p) {
                // Bumped with the lock held, before the value goes in (so a
                // panic after this point cannot leave the generation behind
                // the values): whoever reads the new generation then waits
                // for this lock, so its redaction has the value ([`generation`]).
                GENERATION.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                k.seen.insert(p.to_vec());
                k.values.push(p.to_vec());
                changed = true;
            }
        }
    }
    if changed {
        // A panic here, with the lock held and the index behind the values
        // (the test of `spans_of`'s one-by-one search), poisons the lock.
        if matches!(list, List::Found) {
            debug_panic("redact");
        }
        // Every match, overlapping ones included: the windows of a piece
        // overlap, and the spans they make are merged into one ([`pass`]).
        let built = AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::Standard)
            .ascii_case_insensitive(true)
            .build(k.values.iter().chain(k.grams.iter().map(|g| &g.0)));
        // Only a size limit can refuse it: the values the index lacks are
        // then searched one by one ([`spans_of`]); none is ever skipped.
        if let Ok(m) = built {
            k.matcher = Some(m);
            k.covered = k.values.len();
            k.grams_covered = k.grams.len();
        }
    }
}

/// Add the windows of [`chain::GRAM`] bytes of `text` (a value, or its
/// reverse) to `k`'s grams; whether any is new.
fn add_chain_form(k: &mut Known, text: &[u8], public: &HashSet<Vec<u8>>) -> bool {
    if !k.chain_forms.insert(text.to_ascii_lowercase()) {
        return false;
    }
    let form = k.chain_windows.len();
    k.chain_windows.push(
        text.windows(PIECE_LEN)
            .map(|w| !is_vocabulary(w) && !public.contains(&w.to_ascii_lowercase()))
            .collect(),
    );
    GENERATION.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    for (offset, w) in text.windows(chain::GRAM).enumerate() {
        let w = w.to_ascii_lowercase();
        let id = match k.gram_ids.get(&w) {
            Some(&id) => id,
            None => {
                let id = k.grams.len();
                k.gram_ids.insert(w.clone(), id);
                k.grams.push((w, Vec::new()));
                id
            }
        };
        if let Some(g) = k.grams.get_mut(id) {
            g.1.push((form, offset));
        }
    }
    true
}

/// Bumped each time a value is added to either list ([`generation`]).
static GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The version of the set of values [`clean`] masks: it changes whenever a
/// value is added (the built-in rules never change). A text cleaned after
/// reading generation `g` was cleaned with every value of `g` (and maybe
/// more): a cache of cleaned text keyed by the generation read *before*
/// cleaning never serves text cleaned with a smaller set than the current one.
pub(crate) fn generation() -> u64 {
    GENERATION.load(std::sync::atomic::Ordering::SeqCst)
}

/// `bytes` with every secret value plangate was given replaced by
/// `[REDACTED]`, every detected one by `[REDACTED:<rule>]`, and every one
/// detected earlier by `[REDACTED]` (given values first, so a rule matching
/// part of one cannot leave the rest of it). Each pass looks at the raw bytes
/// and at the text as shown ([`view`]): a secret split by control bytes is
/// replaced over its whole span, control bytes included.
pub fn clean(bytes: &[u8]) -> Cow<'_, [u8]> {
    scrub(bytes, true).0
}

/// [`clean`] that also returns what the rules found (offsets in the
/// original bytes; values remembered). With `mask_given` false the values
/// plangate was given are neither masked nor skipped: a rule finds them like
/// any text (workspace files).
pub(crate) fn scrub(bytes: &[u8], mask_given: bool) -> (Cow<'_, [u8]>, Vec<Finding>) {
    scrub_marked(bytes, mask_given, &mut 0)
}

/// [`scrub`] of `bytes` whose first `from` bytes are context only (the end
/// of the piece before, already written out): they are scanned, so that a
/// rule that reads before a secret (`password = …`) still sees them, but
/// not returned. What is returned is the cleaned text from where
/// `bytes[from]` went (a secret across `from` is replaced from there on),
/// and the findings that end past `from` (lines counted from there).
pub(crate) fn scrub_from(bytes: &[u8], mask_given: bool, from: usize) -> (Vec<u8>, Vec<Finding>) {
    let mut mark = from;
    let (out, found) = scrub_marked(bytes, mask_given, &mut mark);
    (out.get(mark..).unwrap_or_default().to_vec(), found)
}

/// [`scrub`], moving `mark` (an offset in `bytes`) to where its byte went
/// in the cleaned text (to the start of the replacement that covers it),
/// and leaving out the findings that end before it.
fn scrub_marked<'a>(
    bytes: &'a [u8],
    mask_given: bool,
    mark: &mut usize,
) -> (Cow<'a, [u8]>, Vec<Finding>) {
    let mut out = Cow::Borrowed(bytes);
    if mask_given {
        out = pass_marked(out, &mut |b| known_spans(List::Given, b), mark).0;
        out = compact_pass(out, List::Given, mark);
        out = decoded_pass(out, List::Given, mark);
        out = folded_pass(out, List::Given, mark);
    }
    let context = *mark;
    let lines = memchr::memchr_iter(b'\n', out.get(..context).unwrap_or_default()).count();
    let (out, mut found) = pass_marked(
        out,
        &mut |b| {
            let hits = builtin_scanner().scan(b);
            remember(
                hits.iter()
                    .filter_map(|f| b.get(f.start..f.end).map(<[u8]>::to_vec)),
            );
            hits.into_iter()
                .map(|f| (f.start, f.end, Some(f)))
                .collect()
        },
        mark,
    );
    if context > 0 {
        found.retain(|f| f.end > context);
        for f in &mut found {
            f.line = f.line.saturating_sub(lines).max(1);
        }
    }
    let (out, _) = pass_marked(out, &mut |b| known_spans(List::Found, b), mark);
    let out = compact_pass(out, List::Found, mark);
    let out = decoded_pass(out, List::Found, mark);
    (folded_pass(out, List::Found, mark), found)
}

/// The values of `list` (and their pieces) looked for in the folded view
/// of `bytes` ([`fold::folded`] of the text as shown with whitespace
/// dropped: combining marks dropped, fullwidth, mathematical, circled and
/// other compatibility characters and accented letters read as the plain
/// ones) and replaced over their whole original span, marks included.
fn folded_pass<'a>(bytes: Cow<'a, [u8]>, list: List, mark: &mut usize) -> Cow<'a, [u8]> {
    if bytes.is_ascii() || known(list).values.is_empty() {
        return bytes;
    }
    let shown = view::compact_always(&bytes);
    let Some(f) = fold::folded(&shown.text) else {
        return bytes;
    };
    let spans: Vec<Span> = known_spans(list, &f.text)
        .into_iter()
        .map(|(s, e, _)| {
            let (s, e) = f.span(s, e);
            let (s, e) = shown.span(s, e);
            (s, e, None)
        })
        .collect();
    replace(bytes, spans, mark).0
}

/// The values of `list` (and their pieces) looked for in the decoded views
/// of `bytes` ([`decode::decoded`]: escapes like `%2F`, `\x51`, `&#81;`
/// and runs of numbers like `51:78:37` turned back into the bytes they
/// spell) and replaced over their whole original span.
fn decoded_pass<'a>(bytes: Cow<'a, [u8]>, list: List, mark: &mut usize) -> Cow<'a, [u8]> {
    if known(list).values.is_empty() {
        return bytes;
    }
    let mut spans: Vec<Span> = Vec::new();
    for v in decode::decoded(&bytes) {
        spans.extend(known_spans(list, &v.text).into_iter().map(|(s, e, _)| {
            let (s, e) = v.span(s, e);
            (s, e, None)
        }));
        // Escaped marks or compatibility characters (`g\u0336h\u0336…`,
        // `%EF%BC%A7`): the decoded text folded.
        if let Some(f) = fold::folded(&v.text) {
            spans.extend(known_spans(list, &f.text).into_iter().map(|(s, e, _)| {
                let (s, e) = f.span(s, e);
                let (s, e) = v.span(s, e);
                (s, e, None)
            }));
        }
    }
    replace(bytes, spans, mark).0
}

/// The values of `list` (and their pieces) looked for in the compact view
/// of `bytes` ([`view::compact`]: as shown, whitespace dropped) and
/// replaced over their whole original span, whitespace included.
fn compact_pass<'a>(bytes: Cow<'a, [u8]>, list: List, mark: &mut usize) -> Cow<'a, [u8]> {
    if known(list).values.is_empty() {
        // Nothing to look for: no view to build.
        return bytes;
    }
    let Some(v) = view::compact(&bytes) else {
        return bytes;
    };
    let spans: Vec<Span> = known_spans(list, &v.text)
        .into_iter()
        .map(|(s, e, _)| {
            let (s, e) = v.span(s, e);
            (s, e, None)
        })
        .collect();
    replace(bytes, spans, mark).0
}

/// A span to replace, and the finding behind it (none: a known value).
type Span = (usize, usize, Option<Finding>);

/// One redaction pass: `find` runs on the bytes and on each view of them;
/// every span found (mapped back) is replaced. Findings keep the original
/// offsets, line and column, and the fingerprint of the value as shown.
fn pass<'a>(
    bytes: Cow<'a, [u8]>,
    find: &mut dyn FnMut(&[u8]) -> Vec<Span>,
) -> (Cow<'a, [u8]>, Vec<Finding>) {
    pass_marked(bytes, find, &mut 0)
}

/// [`pass`], moving `mark` as [`replace`] does.
fn pass_marked<'a>(
    bytes: Cow<'a, [u8]>,
    find: &mut dyn FnMut(&[u8]) -> Vec<Span>,
    mark: &mut usize,
) -> (Cow<'a, [u8]>, Vec<Finding>) {
    let spans = spans_in(&bytes, find);
    replace(bytes, spans, mark)
}

/// Replace `spans` of `bytes` (overlapping ones merged into one), moving
/// `mark` (an offset in `bytes`) to where its byte went: the start of the
/// replacement when a span covers it.
fn replace<'a>(
    bytes: Cow<'a, [u8]>,
    mut spans: Vec<Span>,
    mark: &mut usize,
) -> (Cow<'a, [u8]>, Vec<Finding>) {
    if spans.is_empty() {
        return (bytes, Vec::new());
    }
    spans.sort_by_key(|s| (s.0, std::cmp::Reverse(s.1)));
    let mut out = Vec::with_capacity(bytes.len());
    let mut findings: Vec<Finding> = Vec::new();
    let mut pos = 0usize;
    let (old, mut moved, mut last) = (*mark, None, 0usize);
    for (s, e, f) in spans {
        let e = e.min(bytes.len());
        if e <= pos {
            // Inside a span already replaced (the same secret seen in a view).
            continue;
        }
        if s < pos {
            // An overlapping tail: the replacement before covers it.
            if moved.is_none() && old < e {
                moved = Some(last);
            }
        } else {
            if moved.is_none() && old < s {
                moved = Some(out.len() + (old - pos));
            }
            out.extend_from_slice(bytes.get(pos..s).unwrap_or_default());
            last = out.len();
            if moved.is_none() && old < e {
                moved = Some(last);
            }
            match &f {
                Some(f) => {
                    out.extend_from_slice(b"[REDACTED:");
                    out.extend_from_slice(f.rule.as_bytes());
                    out.push(b']');
                }
                None => out.extend_from_slice(b"[REDACTED]"),
            }
            findings.extend(f.filter(|f| !findings.iter().any(|g| g.fingerprint == f.fingerprint)));
        }
        pos = e;
    }
    *mark = moved.unwrap_or_else(|| out.len() + old.saturating_sub(pos));
    out.extend_from_slice(bytes.get(pos..).unwrap_or_default());
    (Cow::Owned(out), findings)
}

/// What `find` finds in `bytes` and in each view of them, as spans of the
/// original bytes (findings moved there, with their line and column).
fn spans_in(bytes: &[u8], find: &mut dyn FnMut(&[u8]) -> Vec<Span>) -> Vec<Span> {
    let mut spans = find(bytes);
    for v in view::views(bytes) {
        for (s, e, f) in find(&v.text) {
            let (os, oe) = v.span(s, e);
            let f = f.map(|mut f| {
                f.start = os;
                f.end = oe;
                let before = bytes.get(..os).unwrap_or_default();
                f.line = memchr::memchr_iter(b'\n', before).count() + 1;
                f.column = os - memchr::memrchr(b'\n', before).map_or(0, |i| i + 1) + 1;
                f
            });
            spans.push((os, oe, f));
        }
    }
    spans
}

/// Bytes read past a cap so that [`safe_cut`] sees a secret the cap would
/// cut whole (the private-key rule looks 12 000 bytes past its start).
pub(crate) const CUT_LOOKAHEAD: usize = 64 * 1024;

/// Where to cut `bytes` (read up to [`CUT_LOOKAHEAD`] past `max`) to keep at
/// most `max` of them and no part of a secret: a secret the cut would split
/// (a given value, a rule's match, a value found earlier; in the raw bytes
/// or as shown) is left out whole, and a UTF-8 character is not split (a
/// split one would turn a text into base64, where no rule looks).
pub(crate) fn safe_cut(bytes: &[u8], max: usize) -> usize {
    if bytes.len() <= max {
        return bytes.len();
    }
    // A secret that ends past `max` starts at most this far before it: the
    // scan starts there, at a line's start when one is near.
    let from = max.saturating_sub(CUT_LOOKAHEAD);
    let from = bytes
        .get(from..max)
        .and_then(|b| memchr::memchr(b'\n', b))
        .map_or(from, |i| from + i + 1);
    let window = bytes.get(from..).unwrap_or_default();
    let mut spans = spans_in(window, &mut |b| known_spans(List::Given, b));
    spans.extend(spans_in(window, &mut |b| {
        builtin_scanner()
            .scan(b)
            .into_iter()
            .map(|f| (f.start, f.end, None))
            .collect()
    }));
    spans.extend(spans_in(window, &mut |b| known_spans(List::Found, b)));
    let spans: Vec<(usize, usize)> = spans.iter().map(|s| (from + s.0, from + s.1)).collect();
    let mut cut = max;
    loop {
        let before = cut;
        // Moving the cut back can land it inside an earlier, overlapping span.
        while let Some(&(s, _)) = spans.iter().find(|&&(s, e)| s < cut && cut < e) {
            cut = s;
        }
        if bytes.get(cut).is_some_and(|b| b & 0xc0 == 0x80) {
            // Back to the lead byte of the character, if there is one.
            let lead = (1..=3)
                .filter_map(|k| cut.checked_sub(k))
                .find(|&i| bytes.get(i).is_some_and(|b| b & 0xc0 != 0x80));
            if let Some(i) = lead.filter(|&i| bytes.get(i).is_some_and(|b| *b >= 0xc0)) {
                cut = i;
            }
        }
        if cut == before {
            return cut;
        }
    }
}

/// Most bytes of a partial word [`partial_word`] counts.
pub(crate) const PARTIAL_WORD_MAX: usize = 1024;

/// How many bytes at the end of `bytes` make its last word (the bytes a
/// token is made of, back to the last other byte; at most
/// [`PARTIAL_WORD_MAX`]). Text cut where nothing shows what follows (a
/// stream at its cap, a body when the step stopped) may end inside a
/// secret no rule recognises any more: that word is dropped.
pub(crate) fn partial_word(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .rev()
        .take(PARTIAL_WORD_MAX)
        .take_while(|&&b| b.is_ascii_alphanumeric() || b"_-+/=.~:%@".contains(&b))
        .count()
}

/// Where the values of `list` occur in `bytes`.
fn known_spans(list: List, bytes: &[u8]) -> Vec<Span> {
    spans_of(&known(list), bytes)
}

/// Where the values of `k` are in `bytes`: through the index, and one by
/// one for the values it does not hold.
fn spans_of(k: &Known, bytes: &[u8]) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    let mut hits: Vec<chain::Hit> = Vec::new();
    if let Some(m) = &k.matcher {
        for h in m.find_overlapping_iter(bytes) {
            let id = h.pattern().as_usize();
            match id.checked_sub(k.covered).and_then(|g| k.grams.get(g)) {
                Some((_, at)) => hits.extend(at.iter().map(|&(form, offset)| chain::Hit {
                    form,
                    at: h.start(),
                    offset,
                })),
                None => spans.push((h.start(), h.end(), None)),
            }
        }
    }
    if !hits.is_empty() {
        spans.extend(
            chain::chains(hits, PIECE_LEN)
                .into_iter()
                .filter(|c| {
                    // One window of the rebuilt bytes is masked on its own.
                    k.chain_windows.get(c.form).is_some_and(|ok| {
                        ok.get(c.from..=c.to - PIECE_LEN)
                            .is_some_and(|w| w.iter().any(|&m| m))
                    })
                })
                .map(|c| (c.start, c.end, None)),
        );
    }
    let rest = k.values.get(k.covered..).unwrap_or_default();
    if !rest.is_empty() {
        // ASCII case ignored, as the index does.
        let folded = bytes.to_ascii_lowercase();
        for v in rest {
            let v = v.to_ascii_lowercase();
            spans.extend(memchr::memmem::find_iter(&folded, &v).map(|at| (at, at + v.len(), None)));
        }
    }
    spans
}

/// [`clean_str`] for the panic hook: never waits for ever on a lock (the
/// panic may have come while this thread held one) and never initialises
/// anything. None when it cannot redact (the rules not compiled, a lock
/// still held): the caller withholds the text.
pub(crate) fn clean_in_panic(text: &str) -> Option<String> {
    let scanner = SCANNER.get()?.as_ref().ok()?;
    let given = try_known(List::Given)?;
    let found = try_known(List::Found)?;
    let out = pass(Cow::Borrowed(text.as_bytes()), &mut |b| spans_of(&given, b)).0;
    let out = pass(out, &mut |b| {
        scanner
            .scan(b)
            .into_iter()
            .map(|f| (f.start, f.end, Some(f)))
            .collect()
    })
    .0;
    let out = pass(out, &mut |b| spans_of(&found, b)).0;
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// Debug builds only (the integration tests): panic at `at` with the
/// message given in `PLANGATE_DEBUG_PANIC=AT:MESSAGE`, so the tests can check
/// that a panic is printed redacted, caught, and still leaves a valid report.
/// Release builds (`debug-assertions` off: the `release` and `dist`
/// profiles) compile it to nothing: no variable can make them panic.
/// It panics once per process.
#[cfg(debug_assertions)]
pub(crate) fn debug_panic(at: &str) {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if let Some(v) = crate::environ::var("PLANGATE_DEBUG_PANIC")
        && let Some((w, msg)) = v.split_once(':')
        && w == at
        && !DONE.swap(true, std::sync::atomic::Ordering::SeqCst)
    {
        panic!("{msg}");
    }
}

/// Release builds: nothing (see the debug version).
#[cfg(not(debug_assertions))]
#[inline(always)]
pub(crate) fn debug_panic(_at: &str) {}

/// [`clean`] for text.
pub(crate) fn clean_str(s: &str) -> Cow<'_, str> {
    match clean(s.as_bytes()) {
        Cow::Borrowed(_) => Cow::Borrowed(s),
        Cow::Owned(b) => Cow::Owned(String::from_utf8_lossy(&b).into_owned()),
    }
}

/// `text` redacted, then cut to `max` characters (`…` marks a cut). Text
/// that can hold a secret is always cut this way: cut first, a secret's
/// prefix would no longer match its rule and would be kept.
pub(crate) fn cut(text: &str, max: usize) -> String {
    let clean = clean_str(text);
    if clean.chars().count() <= max {
        return clean.into_owned();
    }
    let mut out: String = clean.chars().take(max).collect();
    out.push('…');
    out
}

/// [`cut`], every control character (a newline included) made a space: one
/// line of at most `max` characters for a message that may quote a reply.
pub(crate) fn cut_line(text: &str, max: usize) -> String {
    cut(text, max)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The last lines of a step's output, as people are shown it: escape
/// sequences stripped (before redaction, as on stderr), the whole text
/// redacted, and only then cut to its last `max_lines` lines and at most
/// `max_bytes` bytes (at a character boundary). Within a line, what a
/// carriage return overwrote is dropped, and control characters but tabs
/// are removed. Returns the text (no trailing newline; `None` when nothing
/// is left) and whether anything was left out.
pub(crate) fn tail(bytes: &[u8], max_lines: usize, max_bytes: usize) -> (Option<String>, bool) {
    let text = String::from_utf8_lossy(bytes);
    let plain = anstream::adapter::strip_str(&text).to_string();
    let clean = clean_str(&plain);
    let lines: Vec<String> = clean
        .trim_end_matches(['\n', '\r'])
        .split('\n')
        .map(|l| {
            let shown = l.rsplit('\r').find(|p| !p.is_empty()).unwrap_or("");
            shown
                .chars()
                .filter(|c| !c.is_control() || *c == '\t')
                .collect()
        })
        .collect();
    let skip = lines.len().saturating_sub(max_lines);
    let mut out = lines[skip..].join("\n");
    let mut cut = skip > 0;
    if out.len() > max_bytes {
        let mut from = out.len() - max_bytes;
        while !out.is_char_boundary(from) {
            from += 1;
        }
        out.drain(..from);
        cut = true;
    }
    if out.trim().is_empty() {
        return (None, cut);
    }
    (Some(out), cut)
}

/// Most characters of a command quoted in a reason.
pub(crate) const QUOTE_MAX: usize = 80;
/// Most characters of a reason.
pub(crate) const REASON_MAX: usize = 600;

/// A decision's reason as people see it: redacted first, then every
/// `` `quoted` `` fragment cut to [`QUOTE_MAX`] characters and the whole to
/// [`REASON_MAX`]. The classifier quotes commands whole (it is pure and
/// cannot redact); this is where they are shortened.
pub(crate) fn cut_reason(reason: &str) -> String {
    let clean = clean_str(reason);
    let parts: Vec<String> = clean
        .split('`')
        .enumerate()
        .map(|(i, p)| {
            if i % 2 == 1 && p.chars().count() > QUOTE_MAX {
                let mut t: String = p.chars().take(QUOTE_MAX - 3).collect();
                t.push_str("...");
                t
            } else {
                p.to_owned()
            }
        })
        .collect();
    let joined = parts.join("`");
    if joined.chars().count() <= REASON_MAX {
        return joined;
    }
    let mut out: String = joined.chars().take(REASON_MAX).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic while a list's lock is held, between adding a value and
    /// indexing it: the lock is poisoned and the index stale, and the value
    /// is still masked (searched one by one), as is every value after it;
    /// the panic hook's redaction never waits for ever on a held lock.
    #[test]
    fn a_panic_with_the_lock_held_never_leaves_a_value_unmasked() {
        let _ = init();
        let stale = b"poisoned-value-Qm4Zt8".to_vec();
        let pushed = stale.clone();
        let died = std::thread::spawn(move || {
            let mut k = known(List::Found);
            k.values.push(pushed);
            panic!("on purpose, with the lock held");
        })
        .join();
        assert!(died.is_err());
        assert!(cell(List::Found).is_poisoned());
        assert_eq!(
            clean(b"a poisoned-value-Qm4Zt8 b").as_ref(),
            b"a [REDACTED] b".as_slice()
        );
        // Remembering again (the value is known: no new index) and a new one.
        remember([stale, b"later-value-Hx7Lw2".to_vec()]);
        assert_eq!(
            clean(b"poisoned-value-Qm4Zt8 later-value-Hx7Lw2").as_ref(),
            b"[REDACTED] [REDACTED]".as_slice()
        );
        let shown = clean_in_panic("x later-value-Hx7Lw2 poisoned-value-Qm4Zt8").unwrap();
        assert_eq!(shown, "x [REDACTED] [REDACTED]");
        // Held by this very thread (a panic inside the redactor): no deadlock, withheld.
        let held = known(List::Found);
        let t = std::time::Instant::now();
        assert_eq!(clean_in_panic("later-value-Hx7Lw2"), None);
        assert!(t.elapsed() < std::time::Duration::from_secs(5));
        drop(held);
    }

    #[test]
    fn the_built_in_rules_compile() {
        assert!(init().is_ok());
    }

    #[test]
    fn a_broken_rule_set_is_an_error_not_a_skip() {
        let broken = "[[rules]]\nid = \"x-rule\"\ndescription = \"x\"\nkeywords = [\"abc\"]\nregex = '''(?P<secret>abc[0-9'''\n";
        let err = compile(Ruleset::from_toml(broken).as_ref()).map(|_| ());
        assert!(
            matches!(err, Err(BrokenRules::Rules(RulesError::Regex { .. }))),
            "{err:?}"
        );
        let not_toml = compile(Ruleset::from_toml("[[rules]\n").as_ref()).map(|_| ());
        assert!(matches!(
            not_toml,
            Err(BrokenRules::Rules(RulesError::Toml(_)))
        ));
    }

    #[test]
    fn secret_values_are_masked_with_their_lines_and_base64_forms() {
        use base64::Engine;
        use base64::engine::general_purpose::{STANDARD, URL_SAFE};
        let value = "Zq8vT1x-first-line\nsecond-line-Kp3w\n";
        remember_secrets([value, "short", ""]);
        assert_eq!(clean_str(value), "[REDACTED]");
        assert_eq!(
            clean_str("a: Zq8vT1x-first-line b"),
            "a: [REDACTED] b",
            "each line alone"
        );
        assert_eq!(
            clean_str(r#"{"v":"Zq8vT1x-first-line\nsecond-line-Kp3w\n"}"#),
            r#"{"v":"[REDACTED]"}"#,
            "the JSON-escaped form"
        );
        assert_eq!(clean_str("short and shorter"), "short and shorter");
        for prefix in ["", "a", "ab", "abc"] {
            for engine in [&STANDARD, &URL_SAFE] {
                let text = engine.encode(format!("{prefix}{value}"));
                let cleaned = clean_str(&text);
                assert!(cleaned.contains("[REDACTED]"), "{prefix:?}: {cleaned}");
                // What is left is at most the characters that mix in other bytes.
                let left = cleaned.replace("[REDACTED]", "");
                assert!(left.len() <= 8, "{prefix:?}: {cleaned}");
            }
        }
    }

    /// Every run of [`PIECE_LEN`] bytes of `secret`, of its reverse, and
    /// of [`HEX_PIECE_LEN`] digits of their hex: none may show in `out`, raw
    /// or as shown, in any case.
    fn no_piece(out: &str, secret: &str) {
        let shown = view::view(out.as_bytes(), false).text;
        let texts = [
            out.to_ascii_lowercase(),
            String::from_utf8_lossy(&shown).to_ascii_lowercase(),
        ];
        let reversed: Vec<u8> = secret.bytes().rev().collect();
        let mut pieces: Vec<Vec<u8>> = Vec::new();
        for form in [secret.as_bytes(), &reversed] {
            pieces.extend(form.windows(PIECE_LEN).map(<[u8]>::to_vec));
            let hex = hex::encode(form);
            pieces.extend(hex.as_bytes().windows(HEX_PIECE_LEN).map(<[u8]>::to_vec));
        }
        for p in pieces {
            let p = String::from_utf8_lossy(&p).to_ascii_lowercase();
            for t in &texts {
                assert!(!t.contains(&p), "{p:?} shows in {out:?}");
            }
        }
    }

    #[test]
    fn pieces_and_transforms_of_a_given_secret_are_masked() {
        use base64::Engine;
        use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
        let secret = "Qx7-pieces-Lm29vZtR8wKd";
        remember_secrets([secret]);
        let rev: String = secret.chars().rev().collect();
        let (a, b) = secret.split_at(11);
        let mut cases = vec![
            format!("first {a}\nsecond {b}\n"),
            format!("{a}"),
            format!("x{b}y"),
            format!("log: {}", &secret[3..19]),
            format!("rev: {rev}"),
            format!("hex: {}", hex::encode(secret)),
            format!("HEX: {}", hex::encode_upper(secret)),
            format!(
                "mixed: {}",
                hex::encode(secret)
                    .replacen('a', "A", 1)
                    .replacen('d', "D", 2)
            ),
            format!("rev hex: {}", hex::encode(&rev)),
            format!("piece hex: {}", hex::encode(&secret[2..12])),
            format!("piece rev: {}", &rev[4..14]),
            format!("{{\"v\":\"{}\"}}", secret.to_uppercase()),
        ];
        for sep in [
            "\u{200b}", "\u{200c}", "\u{200d}", "\u{2060}", "\u{feff}", "\u{ad}", "\u{2063}",
            "\\u200b",
        ] {
            for at in [1, 8, 12, 20] {
                let (x, y) = secret.split_at(at);
                cases.push(format!("zw: {x}{sep}{y} end"));
            }
            let every: Vec<String> = secret.chars().map(String::from).collect();
            cases.push(every.join(sep));
        }
        for text in &cases {
            no_piece(&clean_str(text), secret);
        }
        // Base64 of the value and of a piece, at every alignment, both alphabets.
        for piece in [secret, &secret[5..], &secret[..13]] {
            for prefix in ["", "a", "ab"] {
                let raw = format!("{prefix}{piece}");
                for text in [STANDARD.encode(&raw), URL_SAFE_NO_PAD.encode(&raw)] {
                    let out = clean_str(&text);
                    let left = out.replace("[REDACTED]", "");
                    assert!(left.len() <= 10, "{raw:?}: {out}");
                }
            }
        }
        // The whole run is one replacement; the text around it stays.
        assert_eq!(clean_str(&format!("k={secret}!")), "k=[REDACTED]!");
        assert_eq!(clean_str(&format!("<{}>", &secret[4..16])), "<[REDACTED]>");
        assert_eq!(
            clean_str("ordinary words, pieces of nothing"),
            "ordinary words, pieces of nothing"
        );
        // Seven bytes are no piece.
        assert_eq!(
            clean_str(&format!("[{}]", &secret[..7])),
            format!("[{}]", &secret[..7])
        );
    }

    #[test]
    fn escaped_numbered_and_chunked_spellings_are_masked() {
        let secret = "Tq5/Wc8+Nz3=Lp6_Hv4R";
        // An armour line's words are public: chunks of them are no chain.
        remember_secrets([
            secret,
            "-----BEGIN TEST KEY-----\nQm9keS1saW5lLXNlY3JldA\n-----END TEST KEY-----",
        ]);
        let b = secret.as_bytes();
        let each = |f: &dyn Fn(u8) -> String, sep: &str| -> String {
            b.iter().map(|&c| f(c)).collect::<Vec<_>>().join(sep)
        };
        let chunks: Vec<&str> = (0..b.len())
            .step_by(7)
            .map(|i| &secret[i..(i + 7).min(b.len())])
            .collect();
        let texts = [
            format!(
                "?sig={}&x=1",
                secret
                    .replace('/', "%2F")
                    .replace('+', "%2b")
                    .replace('=', "%3D")
            ),
            each(&|c| format!("%{c:02X}"), ""),
            format!(":{}:", each(&|c| format!("{c:02x}"), ":")),
            each(&|c| format!("\\x{c:02x}"), ""),
            each(&|c| format!("\\u{c:04X}"), ""),
            each(&|c| format!("0x{c:02x}"), ", "),
            each(&|c| format!("&#x{c:x};"), ""),
            each(&|c| format!("&#{c};"), ""),
            format!("[{}]", each(&|c| c.to_string(), ",")),
            each(&|c| format!("{c:03o}"), " "),
            each(&|c| format!("\\{c:03o}"), ""),
            format!("x: {}", chunks.join("\nx: ")),
            format!("[\"{}\"]", chunks.join("\",\"")),
            format!("/{}", chunks.join("/")),
            format!("a={},b={},c={}", chunks[0], chunks[1], chunks[2]),
        ];
        for text in &texts {
            let out = clean_str(text);
            assert!(out.contains("[REDACTED]"), "{text} -> {out}");
            for c in &chunks {
                assert!(!out.contains(c), "{text} -> {out}");
            }
            let left = out.replace("[REDACTED]", "").to_ascii_lowercase();
            for w in secret.to_ascii_lowercase().as_bytes().windows(4) {
                let w = String::from_utf8_lossy(w);
                assert!(!left.contains(w.as_ref()), "{text} -> {out}");
            }
        }
        // Ordinary text with escapes, numbers and short runs stays as it is.
        for text in [
            "GET /api/v1/items?q=caf%C3%A9%20au%20lait&page=2 200",
            "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "mac 00:1a:2b:3c:4d:5e:6f:70 at 2026-11-28T13:52:00Z, 10.0.0.1",
            "[81, 120, 55, 72, 118, 50, 112, 76] are numbers",
            r"path C:\x64\u0041pp and \\server 0x7f 0xff &amp; &#169;",
            "Tq5 is a word, Wc8 too; Lp6/Hv4 and Nz3=Lp6",
            r#"["Tq5","Wc8","Nz3"] a=Tq5,b=Hv4R"#,
            "in the test key, begin the test",
        ] {
            assert_eq!(clean_str(text), text);
        }
    }

    #[test]
    fn plangates_own_words_are_no_pieces() {
        remember_secrets(["plangate-test-token-5f2a9c1e8b7d4a63"]);
        let report = r#"{"plangate_version": "1.0", "fingerprint": "x"}"#;
        assert_eq!(clean_str(report), report);
        assert_eq!(
            clean_str("plangate: PLANGATE_RUN_ID"),
            "plangate: PLANGATE_RUN_ID"
        );
        // The whole value, and every window reaching past the word, still are masked.
        assert_eq!(
            clean_str("plangate-test-token-5f2a9c1e8b7d4a63"),
            "[REDACTED]"
        );
        assert_eq!(clean_str("x plangate-test y"), "x p[REDACTED] y");
        assert!(is_vocabulary(b"FINGERPR"));
        assert!(!is_vocabulary(b"langate-"));
    }

    #[test]
    fn a_secret_spread_over_whitespace_is_masked_whole() {
        let secret = "Wz4Yq7Np2Hs9Kd3Lf8Tb";
        remember_secrets([secret]);
        let spaced: Vec<String> = secret.chars().map(String::from).collect();
        let lines: Vec<&str> = (0..secret.len())
            .step_by(3)
            .map(|i| &secret[i..(i + 3).min(secret.len())])
            .collect();
        let hex_spaced: Vec<String> = secret.bytes().map(|b| format!("{b:02x}")).collect();
        for text in [
            format!("x {} y", spaced.join(" ")),
            format!("x\n{}\ny", lines.join("\n")),
            format!("{{\"tail\": \"{}\"}}", lines.join("\\n")),
            format!("od: {}", hex_spaced.join(" ")),
            format!(
                "dump: {}",
                hex_spaced
                    .chunks(2)
                    .map(|c| c.concat())
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        ] {
            let out = clean_str(&text);
            assert!(out.contains("[REDACTED]"), "{text:?} -> {out:?}");
            let left = out.replace("[REDACTED]", "");
            assert!(
                !left.contains(&secret[..3]) || text.starts_with("{"),
                "{text:?} -> {out:?}"
            );
            no_piece(&left.replace([' ', '\n'], ""), secret);
        }
        // Words are not joined for the rules, and other text stays.
        assert_eq!(
            clean_str("plain words here\nand there"),
            "plain words here\nand there"
        );
    }

    #[test]
    fn pieces_of_found_values_are_masked() {
        remember([b"found-Vt5qL0x9Rk2Wz".to_vec()]);
        let out = clean_str("one found-Vt5q\ntwo L0x9Rk2Wz three");
        assert_eq!(out, "one [REDACTED]\ntwo [REDACTED] three");
    }

    #[test]
    fn a_form_yields_the_whole_text_and_its_windows() {
        let none = HashSet::new();
        let f = Form::new("abcdefghij", 8);
        let got: Vec<&[u8]> = f.patterns(6, &none).collect();
        assert_eq!(
            got,
            [
                b"abcdefghij".as_slice(),
                b"abcdefgh",
                b"bcdefghi",
                b"cdefghij"
            ]
        );
        let short = Form::new("abcdefg", 8);
        assert_eq!(short.patterns(6, &none).count(), 1);
        assert_eq!(short.patterns(8, &none).count(), 0);
        let hex = Form::new("0123456789abcdef01", HEX_PIECE_LEN);
        assert_eq!(hex.patterns(6, &none).count(), 1 + 3);
        let public = armour_windows(
            "-----BEGIN TEST KEY-----\nQm9keS1saW5lLXNlY3JldA\n-----END TEST KEY-----",
        );
        assert!(public.contains(b"in test ".as_slice()));
        assert!(!public.iter().any(|w| w.starts_with(b"qm9k")));
        let key = Form::new("-----BEGIN TEST KEY-----\nQm9keS1saW5lLXNlY3JldA", 8);
        let armour = b"-----begin test key-----";
        let windows: Vec<&[u8]> = key.patterns(6, &public).filter(|w| w.len() == 8).collect();
        assert!(
            windows.iter().all(|w| !armour
                .windows(8)
                .any(|y| y == w.to_ascii_lowercase().as_slice())),
            "{windows:?}"
        );
        assert!(windows.contains(&b"-----\nQm".as_slice()));
        let forms = secret_forms("ab\"cdefgh");
        let texts: Vec<&[u8]> = forms.iter().map(|f| f.text.as_slice()).collect();
        assert!(texts.contains(&b"hgfedc\"ba".as_slice()));
        assert!(texts.contains(&hex::encode("ab\"cdefgh").as_bytes()));
        assert!(texts.contains(&b"ab\\\"cdefgh".as_slice()), "the JSON form");
    }

    #[test]
    fn remembered_values_are_replaced() {
        remember([b"hunter2-but-longer".to_vec()]);
        assert_eq!(
            clean_str("password: hunter2-but-longer!"),
            "password: [REDACTED]!"
        );
    }

    /// Made-up values in the shape the built-in rules detect.
    const GH: &str = "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";
    const AWS: &str = "AKIAZ7Q4NX2LMRBT5KPW";

    fn no_trace(out: &str, secret: &str) {
        assert!(!out.contains(secret), "{out:?}");
        assert!(!out.contains(&secret[..12]), "{out:?}");
        let shown = String::from_utf8_lossy(&view::view(out.as_bytes(), false).text).into_owned();
        assert!(!shown.contains(&secret[..12]), "shown: {shown:?}");
        let stripped = anstream::adapter::strip_str(out).to_string();
        assert!(!stripped.contains(&secret[..12]), "stripped: {stripped:?}");
    }

    #[test]
    fn a_secret_split_by_control_bytes_is_replaced_whole() {
        for secret in [GH, AWS] {
            let (a, b) = secret.split_at(9);
            for sep in [
                "\x1b[31m",
                "\x1b[0m\x1b[1m",
                "\x07",
                "\x00",
                "\r",
                "\x1b]0;title\x07",
                "\u{9b}0m",
                "\\u001b[0m",
                "\\u0007",
                "\\r",
                "\\b\\b\\b",
                "\x7f",
            ] {
                let text = format!("token: {a}{sep}{b} end");
                no_trace(&clean_str(&text), secret);
            }
            // Overstrike: the character before a backspace is not shown.
            let text = format!("x {a}Q\x08{b} y");
            no_trace(&clean_str(&text), secret);
        }
    }

    #[test]
    fn scrub_reports_a_split_secret_once_with_its_line() {
        let (a, b) = GH.split_at(6);
        let text = format!("one\ntwo {a}\x1b[0m{b}\nthree {GH}\n");
        let (out, found) = scrub(text.as_bytes(), true);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].line, 2);
        assert_eq!(
            found[0].fingerprint,
            crate::secrets::fingerprint(GH.as_bytes())
        );
        no_trace(&String::from_utf8_lossy(&out), GH);
    }

    /// A piece scanned with the end of the one before: only its own part
    /// comes back; a rule that needs the context still fires; a secret
    /// across the mark is replaced from the mark on; lines count from it.
    #[test]
    fn scrub_from_returns_only_the_piece_and_sees_the_context() {
        let text = format!("before {AWS}\nnext line\nafter {GH} end\n");
        let from = text.find("next").unwrap();
        let (out, found) = scrub_from(text.as_bytes(), true, from);
        let out = String::from_utf8(out).unwrap();
        assert!(out.starts_with("next line\nafter [REDACTED"), "{out}");
        no_trace(&out, GH);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].line, 2);
        // The mark inside a secret: the replacement is returned whole.
        let inside = text.find(GH).unwrap() + 4;
        let (out, _) = scrub_from(text.as_bytes(), true, inside);
        assert!(String::from_utf8(out).unwrap().starts_with("[REDACTED"));
        // No context: the same as `scrub`.
        let (all, _) = scrub(text.as_bytes(), true);
        assert_eq!(scrub_from(text.as_bytes(), true, 0).0, all.into_owned());
    }

    #[test]
    fn cutting_follows_redaction() {
        let reason = format!(
            "dangerous: `curl -H 'Authorization: token {GH}' https://api.github.com/x` writes"
        );
        let r = cut_reason(&reason);
        no_trace(&r, GH);
        assert!(r.ends_with("` writes"), "{r}");
        let long = format!("{} {GH} tail", "x".repeat(60));
        no_trace(&cut(&long, 70), GH);
    }

    #[test]
    fn a_tail_is_redacted_before_it_is_cut() {
        // A private key whose header is far above the tail: the whole text is redacted first.
        use base64::Engine;
        use sha2::Digest;
        // A made-up body: base64 of hashes (no real key).
        let body: Vec<String> = (0..8u8)
            .map(|i| base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest([i])))
            .collect();
        let key = format!(
            "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----",
            body.join("\n")
        );
        let text = format!(
            "start\n{key}\ntoken {GH}\n\x1b[31mred\x1b[0m\nprogress 10%\rprogress 100%\r\n"
        );
        // Cut first, the last 6 lines would hold the key's last body lines, unrecognised.
        let (t, cut) = tail(text.as_bytes(), 6, 4096);
        let t = t.unwrap_or_default();
        assert!(!cut, "the key is one redacted line: {t}");
        assert!(t.starts_with("start\n[REDACTED"), "{t}");
        no_trace(&t, GH);
        assert!(!body.iter().any(|b| t.contains(&b[..20])), "{t}");
        assert!(t.ends_with("red\nprogress 100%"), "{t:?}");
        assert_eq!(tail(b"a\nb\nc\n", 2, 100), (Some("b\nc".to_owned()), true));
        let (t, cut) = tail("ab\néé".as_bytes(), 10, 3);
        assert_eq!((t.as_deref(), cut), (Some("é"), true));
        assert_eq!(tail(b"\n\n", 5, 10), (None, false));
    }

    #[test]
    fn a_cap_never_keeps_part_of_a_secret() {
        let text = format!("log: {GH} and {AWS}\n");
        let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle}"));
        // Inside the token: back to its start; between the two: kept as asked.
        assert_eq!(safe_cut(text.as_bytes(), at(GH) + 10), at(GH));
        assert_eq!(safe_cut(text.as_bytes(), at(" and")), at(" and"));
        assert_eq!(safe_cut(text.as_bytes(), at(AWS) + 3), at(AWS));
        assert_eq!(safe_cut(text.as_bytes(), text.len()), text.len());
        // Split by an escape sequence: still one secret.
        let (a, b) = GH.split_at(8);
        let split = format!("x {a}\x1b[0m{b} y");
        assert_eq!(safe_cut(split.as_bytes(), 12), 2);
        // UTF-8 characters are kept whole; bytes that are no text stay as cut.
        assert_eq!(safe_cut("aéé".as_bytes(), 4), 3);
        assert_eq!(safe_cut(&[0x80; 10], 5), 5);
        assert_eq!(partial_word(b"key: ghp_ycv2"), 8);
        assert_eq!(partial_word(b"done\n"), 0);
    }

    #[test]
    fn a_url_under_a_credential_name_masks_whole_and_its_id_like_parts() {
        let url = "https://pipelines.actions.example.com/Ab12Cd34/_apis/jobs/9f8e7d6c-1111-2222-3333-444455556666/idtoken?api-version=2.0&sig=Zx9Qw8Er7Ty6";
        assert_eq!(
            url_secret_parts(url),
            Some(vec![
                "Ab12Cd34",
                "9f8e7d6c-1111-2222-3333-444455556666",
                "Zx9Qw8Er7Ty6"
            ])
        );
        assert_eq!(url_secret_parts("https://user:pw@example.com/x"), None);
        assert_eq!(url_secret_parts("ghp_abcdefabcdef"), None);
        remember_secrets([url]);
        let out = clean_str(
            "see https://pipelines.actions.example.com/docs and Zx9Qw8Er7Ty6 and 9f8e7d6c-1111",
        );
        assert!(
            out.contains("https://pipelines.actions.example.com/docs"),
            "{out}"
        );
        assert!(
            !out.contains("Zx9Qw8Er") && !out.contains("9f8e7d6c"),
            "{out}"
        );
        let text = format!("[{url}]");
        let whole = clean_str(&text);
        assert!(!whole.contains("pipelines"), "{whole}");
    }
}
