//! Unit tests for the public API: rules loading, hard negatives, allow comments, redaction.

use super::checksum::make_crc_token;
use super::*;

fn scanner() -> Scanner {
    Scanner::new(&Ruleset::builtin()).expect("scanner")
}

fn scan(text: &str) -> Vec<Finding> {
    scanner().scan(text.as_bytes())
}

fn rules_of(text: &str) -> Vec<String> {
    scan(text).into_iter().map(|f| f.rule).collect()
}

fn ghp() -> String {
    make_crc_token("ghp_", "R7vT2qLmX9kWb4NcZp1sYdH8jFa3Ue")
}

#[test]
fn builtin_rules_load_and_compile() {
    let r =
        Ruleset::from_toml(include_str!("../../../rules/default.toml")).expect("builtin parses");
    assert!(r.ids().len() >= 100, "{} rules", r.ids().len());
    assert_eq!(Ruleset::builtin().ids().len(), r.ids().len());
    let s = Scanner::new(&r).expect("scanner");
    assert!(s.compile_all().is_empty(), "{:?}", s.compile_all());
    assert!(
        r.describe("github-pat")
            .is_some_and(|d| d.contains("GitHub"))
    );
    assert!(r.describe("nope").is_none());
}

#[test]
fn finds_github_pat_with_span_line_column() {
    let tok = ghp();
    let text = format!("a\nexport GH={tok}\n");
    let f = scan(&text);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].rule, "github-pat");
    assert_eq!(&text.as_bytes()[f[0].start..f[0].end], tok.as_bytes());
    assert_eq!((f[0].line, f[0].column), (2, 11));
    assert!(f[0].confidence >= 0.99);
    assert_eq!(f[0].fingerprint, fingerprint(tok.as_bytes()));
}

#[test]
fn invalid_github_checksum_is_dropped() {
    assert!(scan("GITHUB_TOKEN=ghp_R7vT2qLmX9kWb4NcZp1sYdH8jFa3UeAAAAAA\n").is_empty());
}

#[test]
fn hard_negatives_yield_nothing() {
    let cases = [
        "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "t = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c'",
        "url: https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "STRIPE=sk_test_4eC39HqLyjWDarjtT1zdp7dc",
        "API_KEY=<YOUR_KEY>",
        "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "password = ${DB_PASSWORD}",
        "token: $API_TOKEN",
        "token: ${{ secrets.TOKEN }}",
        "password: {{ secrets.X }}",
        "DB_PASSWORD=changeme",
        "password = \"password123\"",
        "OPENAI_API_KEY=your-api-key-here",
        "API_TOKEN=REPLACE_ME",
        "password: '***'",
        "api_key = \"dummy-api-key-1234\"",
        "api_key = \"example-key-123456789\"",
        "api_key = \"test_api_key_abc123\"",
        "token = 'fake_token_abcdef12345'",
        "client_secret: sample-client-secret-42",
        "request_id = \"3f2b8c1e-9a4d-4e6f-8b2a-1c3d5e7f9a0b\"",
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "sha256 = \"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"",
        "\"integrity\": \"sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==\"",
        "PASSWORD_FIELD = 'password'",
        "password = os.environ[\"DB_PASSWORD\"]",
        "const token = process.env.TOKEN;",
        "password := os.Getenv(\"DB_PASSWORD\")",
        "password = get_password()",
        "def f(token: str, password: str): pass",
    ];
    let s = scanner();
    let bad: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            let f = s.scan(c.as_bytes());
            (!f.is_empty())
                .then(|| format!("{c}: {:?}", f.iter().map(|x| &x.rule).collect::<Vec<_>>()))
        })
        .collect();
    assert!(bad.is_empty(), "false positives:\n{}", bad.join("\n"));
}

#[test]
fn inline_allow_comments() {
    let tok = ghp();
    for marker in [
        "# plangate:allow",
        "// gitleaks:allow",
        "# pragma: allowlist secret",
    ] {
        assert!(scan(&format!("T={tok} {marker}\n")).is_empty(), "{marker}");
    }
    // only the marked line is dropped
    let text = format!("A={tok} # plangate:allow\nB={tok}\n");
    let f = scan(&text);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].line, 2);
}

#[test]
fn redact_removes_secret_and_is_idempotent() {
    let tok = ghp();
    let text = format!("token={tok}\nkey=AKIAQ7XK2M4N6P8R0T2V\n");
    let s = scanner();
    let f = s.scan(text.as_bytes());
    assert_eq!(f.len(), 2, "{f:?}");
    let once = redact(text.as_bytes(), &f);
    let once_s = String::from_utf8_lossy(&once).to_string();
    assert_eq!(
        once_s,
        "token=[REDACTED:github-pat]\nkey=[REDACTED:aws-access-key-id]\n"
    );
    assert!(!once_s.contains("ghp_") && !once_s.contains("AKIA"));
    assert!(!once_s.contains(&tok[tok.len() - 6..]));
    let twice = redact(&once, &s.scan(&once));
    assert_eq!(once, twice);
}

#[test]
fn dedup_keeps_more_specific_rule() {
    let tok = ghp();
    let f = scan(&format!("password = \"{tok}\"\napi_key: {tok}\n"));
    assert_eq!(
        f.iter().map(|x| x.rule.as_str()).collect::<Vec<_>>(),
        ["github-pat", "github-pat"]
    );
}

#[test]
fn base64_wrapped_token_reported_with_inner_rule() {
    use base64::Engine as _;
    let tok = ghp();
    for pre in ["", "=", "a:", "GITHUB_TOKEN=", "t: "] {
        let enc = base64::engine::general_purpose::STANDARD.encode(format!("{pre}{tok}\n"));
        let text = format!("blob: \"{enc}\"\n");
        let f = scan(&text);
        assert_eq!(rules_of(&text), ["github-pat"], "{pre:?} {f:?}");
        assert_eq!(&text.as_bytes()[f[0].start..f[0].end], enc.as_bytes());
    }
}

#[test]
fn notebook_escaped_newlines() {
    let tok = ghp();
    let text = format!("{{\"text\": [\"line one\\n{tok}\\n\"]}}\n");
    assert_eq!(rules_of(&text), ["github-pat"]);
}

#[test]
fn from_toml_errors_name_the_rule() {
    let bad_re = r#"
[[rules]]
id = "my-rule"
description = "x"
keywords = ["abc"]
regex = '''(?P<secret>abc[0-9'''
"#;
    let e = Ruleset::from_toml(bad_re)
        .expect_err("bad regex")
        .to_string();
    assert!(e.contains("my-rule") && e.contains("regex"), "{e}");

    let no_group = r#"
[[rules]]
id = "nogroup"
description = "x"
keywords = ["abc"]
regex = '''abc[0-9]+'''
"#;
    let e = Ruleset::from_toml(no_group)
        .expect_err("no group")
        .to_string();
    assert!(e.contains("nogroup") && e.contains("capture"), "{e}");

    let upper_kw = r#"
[[rules]]
id = "upper"
description = "x"
keywords = ["ABC"]
regex = '''(abc)'''
"#;
    assert!(
        Ruleset::from_toml(upper_kw)
            .expect_err("kw")
            .to_string()
            .contains("upper")
    );

    let bad_checksum = r#"
[[rules]]
id = "cs"
description = "x"
keywords = ["abc"]
regex = '''(abc)'''
checksum = "md5"
"#;
    assert!(
        Ruleset::from_toml(bad_checksum)
            .expect_err("cs")
            .to_string()
            .contains("`cs`")
    );
    assert!(Ruleset::from_toml("[[rules]]\nid = 3").is_err());
}

#[test]
fn extend_overrides_and_adds() {
    let mut rs = Ruleset::builtin();
    let n = rs.ids().len();
    let user = Ruleset::from_toml(
        r#"
[[rules]]
id = "github-pat"
description = "overridden"
keywords = ["ghp_"]
regex = '''(?P<secret>ghp_[0-9A-Za-z]{36})'''

[[rules]]
id = "acme-token"
description = "ACME internal token"
keywords = ["acme_"]
regex = '''(?P<secret>acme_[0-9a-f]{32})'''
"#,
    )
    .expect("user rules");
    rs.extend(user);
    assert_eq!(rs.ids().len(), n + 1);
    assert_eq!(rs.describe("github-pat"), Some("overridden"));
    let s = Scanner::new(&rs).expect("scanner");
    let f = s.scan(b"x = acme_0123456789abcdef0123456789abcdef\n");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].rule, "acme-token");
    // overridden rule has no checksum any more: a bad-checksum token is reported
    let f = s.scan(b"ghp_R7vT2qLmX9kWb4NcZp1sYdH8jFa3UeAAAAAA\n");
    assert_eq!(f.len(), 1);
}

#[test]
fn pem_block_spans_lines() {
    let body: String = (0..6)
        .map(|i| format!("MIIEow{i}IBAAKCAQEAx7Yq3Zk9Lm2Wb4NcZp1sYdH8jFa3UeR7vT2qLmX9kWb4NcZp1s\n"))
        .collect();
    let text =
        format!("x\n-----BEGIN RSA PRIVATE KEY-----\n{body}-----END RSA PRIVATE KEY-----\ny\n");
    let f = scan(&text);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].rule, "private-key");
    assert_eq!(f[0].line, 2);
    let secret = &text[f[0].start..f[0].end];
    assert!(secret.starts_with("-----BEGIN") && secret.ends_with("KEY-----"));
}

#[test]
fn scan_handles_odd_input() {
    let s = scanner();
    assert!(s.scan(b"").is_empty());
    assert!(s.scan(&[0xff, 0xfe, b'g', b'h', b'p', b'_']).is_empty());
    let long = "token=".repeat(10_000);
    assert!(s.scan(long.as_bytes()).is_empty());
}

/// The guide's count of built-in rules ("N rules (`rules/default.toml`")
/// is the number of rules the binary carries.
#[test]
fn the_guides_rule_count_is_the_builtin_rules() {
    let guide = include_str!("../../../docs/guide/secrets.md");
    let marker = " rules (`rules/default.toml`";
    let at = guide.find(marker).expect("the guide names the rule count");
    let count: usize = guide[..at]
        .rsplit(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a number before the marker");
    assert_eq!(
        count,
        Ruleset::builtin().ids().len(),
        "docs/guide/secrets.md"
    );
}

/// The declared secret of the folding tests (made up).
const FOLD_SECRET: &str = "ghp_Qx7Hv2pL9wW4mKa8Rt3Zc5Yb1Nd6Fe0Gh2Jk";

/// `c` in a mathematical alphabet starting at `upper` (A), `lower` (a) and
/// `digit` (0); other characters as they are.
fn math(c: char, upper: u32, lower: u32, digit: Option<u32>) -> char {
    let at = |base: u32, from: char| char::from_u32(base + (u32::from(c) - u32::from(from)));
    match c {
        'A'..='Z' => at(upper, 'A'),
        'a'..='z' => at(lower, 'a'),
        '0'..='9' => digit.and_then(|d| at(d, '0')),
        _ => Some(c),
    }
    .unwrap_or(c)
}

/// The spellings of `s` that read as it: marks after characters (one kind,
/// several, on some characters only), compatibility forms (fullwidth,
/// mathematical alphabets, circled, small and superscript forms), letters
/// with accents precomposed, and mixes of them.
fn folded_spellings(s: &str) -> Vec<String> {
    let marked = |marks: &str, every: usize| -> String {
        s.chars()
            .enumerate()
            .map(|(i, c)| {
                if i % every == 0 {
                    format!("{c}{marks}")
                } else {
                    c.to_string()
                }
            })
            .collect()
    };
    let mapped = |f: &dyn Fn(char) -> char| -> String { s.chars().map(f).collect() };
    let fullwidth = |c: char| match c {
        '!'..='~' => char::from_u32(u32::from(c) - 0x21 + 0xff01).unwrap_or(c),
        _ => c,
    };
    let circled = |c: char| match c {
        'A'..='Z' => char::from_u32(u32::from(c) - u32::from('A') + 0x24b6).unwrap_or(c),
        'a'..='z' => char::from_u32(u32::from(c) - u32::from('a') + 0x24d0).unwrap_or(c),
        '1'..='9' => char::from_u32(u32::from(c) - u32::from('1') + 0x2460).unwrap_or(c),
        '0' => '\u{24ea}',
        _ => c,
    };
    let small_and_super = |c: char| match c {
        '_' => '\u{fe4d}',
        '1' => '\u{b9}',
        '2' => '\u{b2}',
        '3' => '\u{b3}',
        '0' | '4'..='9' => char::from_u32(u32::from(c) - u32::from('0') + 0x2070).unwrap_or(c),
        _ => c,
    };
    let accented = |c: char| match c {
        'a' => 'á',
        'e' => 'ê',
        'g' => 'ĝ',
        'h' => 'ĥ',
        'p' => 'ṕ',
        'w' => 'ŵ',
        'K' => 'Ḱ',
        'L' => 'Ĺ',
        'N' => 'Ñ',
        'Z' => 'Ż',
        _ => c,
    };
    let mut out = vec![
        marked("\u{336}", 1),
        marked("\u{301}", 1),
        marked("\u{332}", 1),
        marked("\u{20d2}", 1),
        marked("\u{336}\u{301}\u{20dd}", 1),
        marked("\u{303}", 3),
        marked("\u{93f}", 2), // a spacing mark (Mc)
        mapped(&fullwidth),
        mapped(&|c| math(c, 0x1d400, 0x1d41a, Some(0x1d7ce))), // bold
        mapped(&|c| {
            if c == 'h' {
                '\u{210e}'
            } else {
                math(c, 0x1d434, 0x1d44e, None)
            }
        }), // italic (its h is U+210E)
        mapped(&|c| math(c, 0x1d5a0, 0x1d5ba, Some(0x1d7e2))), // sans-serif
        mapped(&|c| math(c, 0x1d670, 0x1d68a, Some(0x1d7f6))), // monospace
        mapped(&circled),
        mapped(&small_and_super),
        mapped(&accented),
    ];
    // Mixes: fullwidth with marks, every other character only.
    out.push(
        s.chars()
            .enumerate()
            .map(|(i, c)| {
                if i % 2 == 0 {
                    format!("{}\u{336}", fullwidth(c))
                } else {
                    c.to_string()
                }
            })
            .collect(),
    );
    out
}

#[test]
fn every_folded_spelling_reads_as_the_secret() {
    for spelling in folded_spellings(FOLD_SECRET) {
        let text = format!("token: {spelling} (done)");
        let shown = view::compact_always(text.as_bytes());
        let v = fold::folded(&shown.text).unwrap_or_else(|| panic!("no folded view: {text}"));
        let at = memchr::memmem::find(&v.text, FOLD_SECRET.as_bytes())
            .unwrap_or_else(|| panic!("{text} folds to {}", String::from_utf8_lossy(&v.text)));
        // Mapped back, the span is the whole spelled-out secret, its last marks included.
        let (s, e) = v.span(at, at + FOLD_SECRET.len());
        let (s, e) = shown.span(s, e);
        assert_eq!(&text[s..e], spelling, "{text}");
        // A piece of it too.
        assert!(memchr::memmem::find(&v.text, &FOLD_SECRET.as_bytes()[9..17]).is_some());
    }
}

#[test]
fn ordinary_text_beyond_ascii_does_not_fold_into_a_value() {
    // Accents, CJK, Korean, emoji, dashes: no folded view at all, or one
    // that holds nothing but the letters as written less their accents.
    for text in [
        "漢字とカタカナ — 😀 🚀 ✓",
        "한국어 텍스트입니다",
        "“quoted” – ok…",
    ] {
        let folded = fold::folded(text.as_bytes()).map(|v| v.text);
        assert!(
            folded.as_ref().is_none_or(|f| !f
                .windows(FOLD_SECRET.len())
                .any(|w| w == FOLD_SECRET.as_bytes())),
            "{text}"
        );
    }
    assert!(fold::folded("漢字とカタカナ 😀 한국어".as_bytes()).is_none());
    let v = fold::folded("Crème brûlée à la française".as_bytes())
        .unwrap_or_else(|| panic!("accents fold"));
    assert_eq!(v.text, b"Cremebruleealafrancaise");
    assert_eq!(fold::fold_value("plain-ascii-value"), None);
    assert_eq!(
        fold::fold_value("pässwörd-１２"),
        Some("password-12".to_owned())
    );
}
