//! Values that are names, not secrets: an identifier made of words
//! (`Ec2SubnetIds`, `s3_disable_express_session_auth`, `prod/db-password-v2`,
//! `arn:aws:secretsmanager:…:secret:prod/db`), the key's own name repeated
//! (`x=x`, `self.x = x`, `a.b.X = c.d.X`), and plain data that a Kubernetes
//! Secret holds beside its secrets (a user name, a host, an address, a port,
//! a boolean, a URL without credentials).
//!
//! A name is told from a random token by its words: split on separators and
//! case changes, a name is mostly words of three letters or more that hold a
//! vowel, with short digit runs between them; a random token of the same
//! alphabet is mostly one- and two-letter pieces (the unit test measures how
//! rarely a random token reads as a name).

/// Separators between the parts of a name (snake, kebab, dotted, paths, ARNs,
/// references); not `@`: `user:pw@host` is no name.
fn is_sep(b: u8) -> bool {
    matches!(b, b'_' | b'-' | b'.' | b'/' | b':' | b'#')
}

/// The pieces of one separator-free segment: digit runs, lowercase runs with
/// at most one capital before them, and capital runs (an acronym before a
/// capitalised word gives it its last capital: `XMLHttp` is `XML`, `Http`).
fn pieces(seg: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < seg.len() {
        let start = i;
        let c = seg[i];
        if c.is_ascii_digit() {
            while i < seg.len() && seg[i].is_ascii_digit() {
                i += 1;
            }
        } else if c.is_ascii_lowercase() {
            while i < seg.len() && seg[i].is_ascii_lowercase() {
                i += 1;
            }
        } else {
            while i < seg.len() && seg[i].is_ascii_uppercase() {
                i += 1;
            }
            let caps = i - start;
            if i < seg.len() && seg[i].is_ascii_lowercase() {
                if caps > 1 {
                    // the last capital starts the next word
                    i -= 1;
                } else {
                    while i < seg.len() && seg[i].is_ascii_lowercase() {
                        i += 1;
                    }
                }
            }
        }
        out.push(&seg[start..i]);
    }
    out
}

fn is_vowel(b: u8) -> bool {
    matches!(b.to_ascii_lowercase(), b'a' | b'e' | b'i' | b'o' | b'u')
}

/// Letter pairs common in names: for each first letter `a`..`z`, the letters
/// that follow it in 99% of the pairs of the words (three letters or more)
/// of the identifiers of CPython 3.11's standard library (tests aside); 330
/// of the 676 pairs.
const PAIRS: [&[u8]; 26] = [
    b"bcdefgiklmnprstuvwxy",
    b"aceijloprsuy",
    b"acehiklmorstuy",
    b"adegilorstuy",
    b"abcdefgiklmnopqrstuvwxy",
    b"acefilorstuy",
    b"aeghilnorstu",
    b"aeiortu",
    b"abcdefgiklmnoprstvxz",
    b"eou",
    b"aeilnsw",
    b"abdefilnopstuy",
    b"abdeilmopstu",
    b"acdefgiklnopstuvy",
    b"abcdefgiklmnoprstuvwx",
    b"acdehiloprstuy",
    b"u",
    b"abcdefgiklmnoprstuvwy",
    b"acefghiklmnoprstuwy",
    b"acdefhilmoprstuwy",
    b"abcdefgilmnoprst",
    b"aeio",
    b"adehilnors",
    b"aceimptx",
    b"eilmnoprstw",
    b"eio",
];

fn common_pair(a: u8, b: u8) -> bool {
    a.is_ascii_lowercase()
        && PAIRS
            .get(usize::from(a - b'a'))
            .is_some_and(|next| next.contains(&b))
}

/// Words names are made of that the vowel test would refuse.
const BARE: [&[u8]; 33] = [
    b"http", b"https", b"html", b"xml", b"sql", b"tcp", b"ssh", b"tls", b"ssl", b"dns", b"cfg",
    b"ctx", b"msg", b"pkg", b"src", b"dst", b"cmd", b"kms", b"rsa", b"dsa", b"jwt", b"crt",
    b"sync", b"crypt", b"try", b"dry", b"fly", b"why", b"sky", b"spy", b"grpc", b"mqtt", b"jwks",
];

/// A word: three letters or more, a vowel (or a known abbreviation), no
/// four consonants in a row (`y` breaks a run: `Encryption`), and at
/// most one letter pair in three that names seldom have ([`PAIRS`]: `Kdvek`
/// and `Wlocs` are noise).
fn is_word(p: &[u8]) -> bool {
    if p.len() < 3 || !p.iter().all(u8::is_ascii_alphabetic) {
        return false;
    }
    let lower = p.to_ascii_lowercase();
    if BARE.contains(&lower.as_slice()) {
        return true;
    }
    let rare = lower
        .windows(2)
        .filter(|w| !common_pair(w[0], w[1]))
        .count();
    if rare > (lower.len() - 1) / 3 {
        return false;
    }
    let mut run = 0;
    for &b in &lower {
        run = if is_vowel(b) || b == b'y' { 0 } else { run + 1 };
        if run >= 4 {
            return false;
        }
    }
    lower.iter().any(|&b| is_vowel(b))
}

/// Whether the capital run `ps[k]` reads as a word: in a value without lower
/// case (`AWS_KEY_V2`), as a whole segment (`env:PAYMENTS_KEY`), or as an
/// acronym of five letters at most before a capitalised word (`PKCSPrivate`).
fn caps_word(ps: &[&[u8]], k: usize, any_lower: bool) -> bool {
    if !any_lower || ps.len() == 1 {
        return true;
    }
    let next = ps.get(k + 1).copied().unwrap_or_default();
    ps[k].len() <= 5
        && next.first().is_some_and(u8::is_ascii_uppercase)
        && next.get(1).is_some_and(u8::is_ascii_lowercase)
}

/// A capitalised three-letter piece with a vowel (`Qev`, `Idc`): an
/// abbreviation, neither a word nor noise.
fn is_abbreviation(p: &[u8]) -> bool {
    p.len() == 3
        && p.first().is_some_and(u8::is_ascii_uppercase)
        && p[1..].iter().all(u8::is_ascii_lowercase)
        && p.iter().any(|&b| is_vowel(b))
}

/// Whether every piece after the first of a segment is digits.
fn digits_after(ps: &[&[u8]]) -> bool {
    ps.iter().skip(1).all(|p| p.iter().all(u8::is_ascii_digit))
}

/// Whether `v` reads as an identifier. Only letters, digits and separators;
/// not a bare hexadecimal string with digits (hashes and hex keys are not
/// names), nor lower case and digits with nothing marking the words. Then,
/// per segment between separators (a segment of digits only, `123456789012`
/// in an ARN or `/versions/3`, counts for nothing, nor does a version `v2`):
/// words cover at least 60% of the letters and digits, there are at least
/// `min_words` of them, and at most one other letter piece for two words
/// (`S3`'s `S`, `Ec2`'s `Ec`; an abbreviation such as `Idc` is neither). A word after a digit must start with a
/// capital (`Ec2Subnet`; in `9Cz1txxe`, `txxe` is noise); capital runs are
/// words only as [`caps_word`] says (a capital is a case change, not a word,
/// in a random token).
pub(crate) fn is_identifier(v: &[u8], min_words: usize) -> bool {
    if v.is_empty() || !v.iter().all(|&b| b.is_ascii_alphanumeric() || is_sep(b)) {
        return false;
    }
    let alnum = || v.iter().filter(|b| b.is_ascii_alphanumeric());
    let digits = alnum().any(u8::is_ascii_digit);
    if digits && alnum().all(u8::is_ascii_hexdigit) {
        return false;
    }
    if digits && !v.iter().any(|&b| is_sep(b) || b.is_ascii_uppercase()) {
        return false;
    }
    let any_lower = v.iter().any(u8::is_ascii_lowercase);
    let caps_ok = any_lower || v.iter().any(|&b| is_sep(b));
    let (mut words, mut others, mut word_len, mut total) = (0usize, 0usize, 0usize, 0usize);
    for seg in v.split(|&b| is_sep(b)) {
        if seg.iter().all(u8::is_ascii_digit) {
            continue;
        }
        let ps = pieces(seg);
        let (seg_words, seg_total) = (word_len, total);
        let mut k = 0;
        while k < ps.len() {
            let p = ps[k];
            let version = matches!(p, b"v" | b"V")
                && ps
                    .get(k + 1)
                    .is_some_and(|n| n.iter().all(u8::is_ascii_digit));
            if version {
                k += 2;
                continue;
            }
            total += p.len();
            if !p.iter().all(u8::is_ascii_digit) {
                let upper = p.iter().all(u8::is_ascii_uppercase);
                let lower_led = p.first().is_some_and(u8::is_ascii_lowercase);
                if is_word(p)
                    && (!upper || (caps_ok && caps_word(&ps, k, any_lower)))
                    && !(lower_led && k > 0)
                {
                    words += 1;
                    word_len += p.len();
                } else {
                    let label = k == 0 && p.len() <= 3 && digits_after(&ps);
                    if !(is_abbreviation(p) || label) {
                        // (a short label opening a segment, alone or before digits, is
                        // neither: `db`, `ssm`, `s3`, `p1`, `us-east-1`)
                        others += 1;
                    }
                }
            }
            k += 1;
        }
        // A long segment is a name of its own (`api_key_vekUgb55IWlocsb8`: the
        // words before it do not carry a random tail).
        let (sw, st) = (word_len - seg_words, total - seg_total);
        if st >= 8 && sw * 10 < st * 6 {
            return false;
        }
    }
    words >= min_words.max(1)
        && others <= (words / 2).max(1)
        && total > 0
        && word_len * 10 >= total * 6
}

/// [`is_identifier`], also inside one pair of brackets, braces, angle
/// brackets, parentheses or percent signs: `[AuthenticationResponseJSON]`,
/// `<ApiKeyV2>`, `%AUTH_KEY_2%` are placeholders.
pub(crate) fn is_name(v: &[u8], min_words: usize) -> bool {
    let inner = match (v.first(), v.last()) {
        (Some(b'['), Some(b']'))
        | (Some(b'{'), Some(b'}'))
        | (Some(b'<'), Some(b'>'))
        | (Some(b'('), Some(b')'))
        | (Some(b'%'), Some(b'%'))
            if v.len() > 2 =>
        {
            &v[1..v.len() - 1]
        }
        _ => v,
    };
    is_identifier(inner, min_words)
}

/// A glob pattern, not a value: two `*` or more between words
/// (`*all*authentication*tokens*updated*`, a PAM or logcheck pattern); a
/// password holding a `*` among random characters (`h]6EszR}vJ*m`) is no
/// identifier once the stars are separators, and stays a finding.
pub(crate) fn is_pattern(v: &[u8]) -> bool {
    if v.iter().filter(|&&b| b == b'*').count() < 2 {
        return false;
    }
    let t: Vec<u8> = v
        .iter()
        .map(|&b| if b == b'*' { b'_' } else { b })
        .collect();
    is_identifier(&t, 2)
}

/// A vendor's namespaced identifier: a versioned namespace of three to eight
/// lower-case letters and one or two digits, a dot, a lower-case kind made of
/// words, a dot, then the id (`amzn1.account.AF6R…`, `amzn1.application-oa2-client.…`,
/// `ocid1.user.oc1..aaaa…`). Credentials are not written so: a provider's
/// token prefix is no versioned dotted namespace (`sk_live_`, `xoxb-`, `SG.`).
pub(crate) fn is_namespaced_id(v: &[u8]) -> bool {
    let mut parts = v.splitn(3, |&b| b == b'.');
    let (Some(ns), Some(kind), Some(id)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let letters = ns.iter().take_while(|b| b.is_ascii_lowercase()).count();
    let digits = ns.len() - letters;
    (3..=8).contains(&letters)
        && (1..=2).contains(&digits)
        && ns[letters..].iter().all(u8::is_ascii_digit)
        && !kind.is_empty()
        && kind
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && is_identifier(kind, 1)
        && !id.is_empty()
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(b))
        // of one case, as ids are (`AF6RHO7K…`, `aaaaaaaa…`): mixed-case base62 after such
        // a prefix reads as a token and stays a finding
        && !(id.iter().any(u8::is_ascii_lowercase) && id.iter().any(u8::is_ascii_uppercase))
}

/// A typed identifier: a value whose lower-case prefix before a `-` names
/// what the key holds, the key's name less its last word
/// (`CopyProductToken: copyproduct-abc5…`, `PortfolioShareToken: share-…`):
/// an API's resource id, typed by its prefix, then 8 to 20 lower-case letters and
/// digits. The prefix has five letters
/// or more, so that short vendor prefixes (`pypi-`, `xoxb-`) never qualify,
/// and a provider's prefix (`glpat-`, `ghp_`) does not repeat the key's name.
pub(crate) fn is_typed_id(v: &[u8], key: &[u8]) -> bool {
    let Some(dash) = v.iter().position(|&b| b == b'-') else {
        return false;
    };
    let (prefix, id) = (&v[..dash], &v[dash + 1..]);
    // the id is short and of one case, as resource ids are (`abc5defgjkdji`); a random
    // secret after the same prefix (`session-` then 32 characters of base62) is no id
    if prefix.len() < 5
        || !prefix.iter().all(u8::is_ascii_lowercase)
        || !(8..=20).contains(&id.len())
        || !id
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        return false;
    }
    let k = norm(key);
    let mut stem: &[u8] = &k;
    for word in [&b"token"[..], b"secret", b"key", b"id"] {
        if let Some(s) = stem.strip_suffix(word) {
            stem = s;
            break;
        }
    }
    stem.len() < k.len() && stem.ends_with(prefix)
}

/// Letters and digits of `s`, lower case (`API_KEY`, `apiKey`, `api-key` are one name).
fn norm(s: &[u8]) -> Vec<u8> {
    s.iter()
        .filter(|b| b.is_ascii_alphanumeric())
        .map(u8::to_ascii_lowercase)
        .collect()
}

/// Whether `v` repeats the name it is assigned to: `x=x`, `self.x = x`,
/// `X = mod.sub.X`, `"apiKeyV2": "API_KEY_V2"` (case and separators aside).
/// The name and the value are compared whole and by their last dotted (or
/// slashed, scoped) part; a name of fewer than three letters and digits is
/// never an echo.
pub(crate) fn echoes_key(v: &[u8], key: &[u8]) -> bool {
    let last = |s: &'_ [u8], seps: &[u8]| -> Vec<u8> {
        norm(s.rsplit(|b| seps.contains(b)).next().unwrap_or(s))
    };
    let keys = [norm(key), last(key, b".")];
    let vals = [norm(v), last(v, b"./:>")];
    keys.iter()
        .filter(|k| k.len() >= 3)
        .any(|k| vals.iter().any(|x| x == k))
}

fn is_number(v: &[u8]) -> bool {
    let v = v.strip_prefix(b"-").unwrap_or(v);
    !v.is_empty()
        && v.iter().all(|b| b.is_ascii_digit() || *b == b'.')
        && v.first().is_some_and(u8::is_ascii_digit)
}

fn is_boolean(v: &[u8]) -> bool {
    const WORDS: [&[u8]; 10] = [
        b"true",
        b"false",
        b"yes",
        b"no",
        b"on",
        b"off",
        b"enabled",
        b"disabled",
        b"enable",
        b"disable",
    ];
    WORDS.iter().any(|w| v.eq_ignore_ascii_case(w))
}

/// A host name, an IPv4 or IPv6 address, with an optional port: lower-case
/// labels of letters, digits and `-` joined by dots (one dot at least), or
/// hexadecimal groups joined by colons.
fn is_host(v: &[u8]) -> bool {
    let (host, port) = match v.iter().rposition(|&b| b == b':') {
        Some(i) if v.iter().filter(|&&b| b == b':').count() == 1 => (&v[..i], Some(&v[i + 1..])),
        _ => (v, None),
    };
    if port.is_some_and(|p| p.is_empty() || !p.iter().all(u8::is_ascii_digit)) {
        return false;
    }
    let labels = || host.split(|&b| b == b'.');
    let dns = host.contains(&b'.')
        && labels().all(|l| {
            !l.is_empty()
                && l.iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
                && l.first().is_some_and(u8::is_ascii_alphanumeric)
        });
    let ipv6 = port.is_none()
        && v.iter().filter(|&&b| b == b':').count() >= 2
        && v.iter()
            .all(|b| b.is_ascii_hexdigit() || *b == b':' || *b == b'.');
    dns || ipv6
}

fn is_email(v: &[u8]) -> bool {
    let mut parts = v.splitn(2, |&b| b == b'@');
    let (Some(user), Some(host)) = (parts.next(), parts.next()) else {
        return false;
    };
    !user.is_empty()
        && user
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"._%+-".contains(b))
        && is_host(&host.to_ascii_lowercase())
}

/// A URL with no user information (`scheme://host[:port][/path]`, no `@`
/// before the path, no query): credentials in a URL are other rules' business.
fn is_plain_url(v: &[u8]) -> bool {
    let Some(i) = memchr::memmem::find(v, b"://") else {
        return false;
    };
    let scheme = &v[..i];
    let rest = &v[i + 3..];
    let authority = rest.split(|&b| b == b'/').next().unwrap_or(rest);
    !scheme.is_empty()
        && scheme
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"+.-".contains(b))
        && !authority.is_empty()
        && !authority.contains(&b'@')
        && !rest.iter().any(|b| b"?#@ \t".contains(b))
}

/// Whether a (decoded) value is plain data, not secret material: a number,
/// a boolean, a host or address (with a port), an e-mail address, a URL
/// without credentials, or a name ([`is_identifier`]).
pub(crate) fn is_plain(v: &[u8]) -> bool {
    is_number(v)
        || is_boolean(v)
        || is_host(v)
        || is_email(v)
        || is_plain_url(v)
        || is_identifier(v, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_as_identifiers() {
        for v in [
            "Ec2SubnetIds",
            "PublicIpv4Pools",
            "Ipv6CidrAssociations",
            "S3AccessPointAttachments",
            "ServerlessV2PlatformVersions",
            "Qev2IdcApplications",
            "FirewallPoliciesV2",
            "PKCS7PrivateKeyTypes",
            "s3_disable_express_session_auth",
            "X-Api-Key-V2",
            "AWS_SECRET_ACCESS_KEY_2",
            "oauth2_provider.backends.OAuth2Backend",
            "prod/payments-db/credentials-v2",
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-password",
            "projects/acme-prod-42/secrets/jwt-signing-key/versions/latest",
            "env:PAYMENTS_API_KEY_2",
            "HmacSHA256Signature",
            "XMLHttpRequest2",
            "HttpClientV2",
            "Grpc2Channel",
            "Mqtt5Client",
            "Aes256GcmEncryptionKey",
            "ssm:/prod/app2/db-credentials",
            "gcpkms://projects/p1/locations/global/keyRings/r1/cryptoKeys/k1",
        ] {
            assert!(is_identifier(v.as_bytes(), 1), "{v}");
        }
    }

    #[test]
    fn random_tokens_do_not() {
        for v in [
            "Rq8vT3xZ9mK2pL5wN7bH4",
            "aB3xK9mQ2pL7vN4rT8wZ",
            "62d91b17309e76c8",
            "deadbeefcafebabe1234",
            "JBSWY3DPEHPK3PXP",
            "K9X2-MQ7P-LV4R-ABCD",
            "s3cr3tK3yV4lu3WithDigits",
            "api_key_9Xk2mQ7pL4vN",
            "api_key_KdvekUgb55IWlocs",
            "api_key_vekUgb55IWlocsb8",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzz2",
            "Tr0ub4dor&3x",
            "u+Kq2/x9==",
        ] {
            assert!(!is_identifier(v.as_bytes(), 1), "{v}");
        }
        // A weak password of one word and digits is a name only for a rule that asks for one word.
        assert!(is_identifier(b"Winter2025", 1));
        assert!(!is_identifier(b"Winter2025", 3));
    }

    /// Random tokens of the alphabets secrets use almost never read as names.
    #[test]
    fn random_tokens_rarely_read_as_names() {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let alphabets: [&[u8]; 5] = [
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            b"abcdefghijklmnopqrstuvwxyz0123456789",
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
            b"abcdefghijklmnopqrstuvwxyz0123456789_-",
        ];
        for alpha in alphabets {
            for len in [12usize, 16, 20, 24, 32, 40, 64] {
                let n = 20000;
                let mut named = 0;
                for _ in 0..n {
                    let v: Vec<u8> = (0..len)
                        .map(|_| alpha[(next() % alpha.len() as u64) as usize])
                        .collect();
                    if !v.iter().any(u8::is_ascii_digit) {
                        continue; // letters only: a rule's own allowlist decides
                    }
                    if is_identifier(&v, 1) {
                        named += 1;
                    }
                }
                // in ten-thousandths: short tokens of lower case, digits and `_-` are the
                // likeliest to spell words (measured: 0.65% at 12, 0.26% at 16, 0.08% at 20)
                let max = match len {
                    ..16 => 80,
                    16..20 => 35,
                    20..32 => 12,
                    _ => 2,
                };
                assert!(
                    named * 10000 <= n * max,
                    "{} of {n} random tokens of length {len} read as names ({})",
                    named,
                    String::from_utf8_lossy(alpha)
                );
            }
        }
    }

    #[test]
    fn bracketed_names_are_placeholders() {
        for v in [
            "[AuthenticationResponseJSON]",
            "<ApiKeyV2>",
            "%AUTH_KEY_2%",
            "{SessionToken3}",
        ] {
            assert!(is_name(v.as_bytes(), 1), "{v}");
        }
        for v in [
            "[Rq8vT3xZ9mK2pL5wN7bH4]",
            "[AuthenticationResponseJSON",
            "[]",
        ] {
            assert!(!is_name(v.as_bytes(), 1), "{v}");
        }
    }

    #[test]
    fn echoes_of_the_key() {
        for (v, k) in [
            (
                "s3_disable_express_session_auth",
                "s3_disable_express_session_auth",
            ),
            ("auth_mode_v2", "self.auth_mode_v2"),
            (
                "rust_openssl.hpke.MLKEM768X25519PrivateKey",
                "MLKEM768X25519PrivateKey",
            ),
            ("API_KEY_V2", "apiKeyV2"),
            ("config/apiKey2", "api_key2"),
        ] {
            assert!(echoes_key(v.as_bytes(), k.as_bytes()), "{v} = {k}");
        }
        for (v, k) in [
            ("api_key_9Xk2mQ7pL4vN", "api_key"),
            ("Xk9mQ2pL7vN4token", "token"),
            ("k2", "k2"),
        ] {
            assert!(!echoes_key(v.as_bytes(), k.as_bytes()), "{v} = {k}");
        }
    }

    #[test]
    fn plain_data() {
        for v in [
            "5432",
            "true",
            "No",
            "db-primary.prod.svc.cluster.local",
            "redis-0.redis:6379",
            "10.12.0.7",
            "10.12.0.7:8443",
            "fd00::1",
            "ops-team@acme.io",
            "https://api.internal.acme.io:8443/v1",
            "app_user",
            "jenkins",
            "eu-west-1",
        ] {
            assert!(is_plain(v.as_bytes()), "{v}");
        }
        for v in [
            "Tr0ub4dor&3x",
            "https://user:pw@host/x",
            "https://h/x?token=abc",
            "Xk9mQ2pL7vN4rT8w",
            "u8Kx2mQ9zL",
        ] {
            assert!(!is_plain(v.as_bytes()), "{v}");
        }
    }

    #[test]
    fn patterns_namespaced_and_typed_ids() {
        assert!(is_pattern(
            b"*all*authentication*tokens*updated*successfully*"
        ));
        assert!(is_pattern(b"*session*token*expired*"));
        for v in [
            "h]6EszR}vJ*m",
            "Pa*Kq8vZ2xLw3*9z",
            "*Kq8vZ2xLw3Tr9*",
            "one*star_only",
        ] {
            assert!(!is_pattern(v.as_bytes()), "{v}");
        }
        for v in [
            "amzn1.account.AF6RHO7KZU5XRVQJGXK6HB56KR2A",
            "amzn1.application-oa2-client.0123456789abcdef0123456789abcdef",
            "ocid1.user.oc1..aaaaaaaa5sz7mzcdqjbtcd2ahpcu3rhzwr",
        ] {
            assert!(is_namespaced_id(v.as_bytes()), "{v}");
        }
        for v in [
            "app1.live.Kq8vZ2xLw3Tr9Pm4Nb7Yc1",
            "sk.eyJ1IjoiYWNtZSJ9.abcdef",
            "amzn.account.AF6RHO7KZU5XRVQJ",
            "amzn1.Account.AF6RHO7KZU5XRVQJ",
            "amzn1.account",
        ] {
            assert!(!is_namespaced_id(v.as_bytes()), "{v}");
        }
        assert!(is_typed_id(
            b"copyproduct-abc5defgjkdji",
            b"CopyProductToken"
        ));
        assert!(is_typed_id(b"share-agngcybu4q7", b"PortfolioShareToken"));
        for (v, k) in [
            ("copyproduct-Kq8vZ2xLw3Tr9Pm4Nb7Yc1Qa", "CopyProductToken"),
            ("session-0123456789abcdef0123456789abcdef", "session_token"),
            ("deploy-abc5defgjkdji", "app_token"),
            ("pypi-abc5defgjkdji", "pypi_token"),
            ("copyproduct-abc5defgjkdji", "copyproduct"),
        ] {
            assert!(!is_typed_id(v.as_bytes(), k.as_bytes()), "{v} {k}");
        }
    }
}
