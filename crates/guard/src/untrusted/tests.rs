//! The sanitiser from the case table `tests/fixtures/untrusted/sanitize.json`,
//! its properties over generated text, and the author rule.

use super::*;

fn table() -> serde_json::Value {
    let text = include_str!("../../../../tests/fixtures/untrusted/sanitize.json");
    serde_json::from_str(text).expect("fixture")
}

#[test]
fn sanitize_case_table() {
    for case in table()["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let cap = case["cap"].as_u64().unwrap() as usize;
        let (out, removed) = sanitize(case["in"].as_str().unwrap(), cap);
        match case["out"].as_str() {
            Some(want) => assert_eq!(out, want, "{name}"),
            None => {
                assert!(out.len() <= cap, "{name}: {} > {cap}", out.len());
                assert!(out.ends_with(CUT_MARKER), "{name}: {out:?}");
            }
        }
        let want = case["removed"].as_object().unwrap();
        let got: Vec<&String> = removed.counts.keys().collect();
        let wanted: Vec<&String> = want.keys().collect();
        assert_eq!(got, wanted, "{name}: {removed:?}");
        for (k, v) in want {
            match v.as_u64() {
                Some(n) => assert_eq!(removed.counts[k], n, "{name}: {k}"),
                None => assert!(removed.counts[k] > 0, "{name}: {k}"),
            }
        }
    }
}

/// Every character of the ranges the module drops, mixed into text at every
/// position: none survives, and what is left is the plain text.
#[test]
fn no_dropped_character_survives_anywhere() {
    let hidden: Vec<char> = (0u32..=0x10FFFF)
        .filter_map(char::from_u32)
        .filter(|c| *c != '\r' && dropped(*c).is_some())
        .collect();
    assert!(hidden.len() > 1000, "{}", hidden.len());
    let plain = "Review this change";
    for (i, h) in hidden.iter().enumerate() {
        let at = i % (plain.len() + 1);
        let text = format!("{}{h}{}", &plain[..at], &plain[at..]);
        let (out, removed) = sanitize(&text, 1 << 20);
        assert_eq!(out, plain, "U+{:04X}", *h as u32);
        assert_eq!(
            removed.counts.values().sum::<u64>(),
            1,
            "U+{:04X}",
            *h as u32
        );
    }
    // Ordinary letters of other scripts, emoji and CJK are kept.
    let kept = "Grüße, 日本語, עברית, ✅ 🚀";
    assert_eq!(sanitize(kept, 1 << 20).0, kept);
}

#[test]
fn the_cap_holds_for_every_size_and_boundary() {
    let text = "aé日🚀".repeat(50);
    for cap in 0..text.len() + 5 {
        let (out, removed) = sanitize(&text, cap);
        assert!(
            out.len() <= cap.max(text.len().min(cap)),
            "cap {cap}: {}",
            out.len()
        );
        if text.len() > cap {
            assert!(removed.counts.contains_key("cut_bytes"), "cap {cap}");
            if cap >= CUT_MARKER.len() {
                assert!(out.ends_with(CUT_MARKER), "cap {cap}");
            }
        } else {
            assert_eq!(out, text);
        }
    }
}

#[test]
fn no_comment_survives_nesting_or_interleaving() {
    for text in [
        "<!-- a <!-- b --> c -->",
        "<<!---->!-- x -->",
        "<!<!-- -->-- y -->",
        "<!-\u{200b}- z -->",
    ] {
        let (out, _) = sanitize(text, 1 << 20);
        assert!(!out.contains("<!--"), "{text:?} -> {out:?}");
    }
}

#[test]
fn the_author_rule_is_fail_close() {
    let gh = |a: &str| Association::Github(a.to_owned());
    let min = |g: GithubMinimum| Minimum {
        github: g,
        gitlab: GitlabMinimum::Developer,
    };
    use GithubMinimum as M;
    for (assoc, minimum, pass) in [
        ("OWNER", M::Owner, true),
        ("MEMBER", M::Owner, false),
        ("MEMBER", M::Member, true),
        ("COLLABORATOR", M::Member, false),
        ("COLLABORATOR", M::Collaborator, true),
        ("CONTRIBUTOR", M::Collaborator, false),
        ("CONTRIBUTOR", M::Contributor, true),
        ("FIRST_TIME_CONTRIBUTOR", M::Contributor, false),
        ("FIRST_TIMER", M::Contributor, false),
        ("NONE", M::Contributor, false),
        ("MANNEQUIN", M::Contributor, false),
        ("", M::Contributor, false),
        ("something-new", M::Contributor, false),
        ("NONE", M::None, true),
        ("", M::None, true),
        ("owner", M::Owner, true),
    ] {
        assert_eq!(
            gh(assoc).check(min(minimum)).is_ok(),
            pass,
            "{assoc} vs {minimum:?}"
        );
    }
    let lab = |g: GitlabMinimum| Minimum {
        github: M::Owner,
        gitlab: g,
    };
    assert!(
        Association::Gitlab(30)
            .check(lab(GitlabMinimum::Developer))
            .is_ok()
    );
    assert!(
        Association::Gitlab(20)
            .check(lab(GitlabMinimum::Developer))
            .is_err()
    );
    assert!(
        Association::Gitlab(0)
            .check(lab(GitlabMinimum::Guest))
            .is_err()
    );
    assert!(
        Association::Gitlab(0)
            .check(lab(GitlabMinimum::None))
            .is_ok()
    );
    assert!(Association::Unknown.check(min(M::None)).is_err());
    assert_eq!(Minimum::default().github, M::Collaborator);
}
