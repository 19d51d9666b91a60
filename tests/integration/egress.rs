//! Egress decisions that need no sandbox backend (issue 24): `network: true`
//! needs the policy file's `allow_any_network: true`; an `egress` list needs
//! a sandbox that can enforce it and raises the risk to moderate. What the
//! proxy lets through and refuses, per backend, is in
//! tests/facilities/egress.rs.

use crate::harness::{Env, code, stderr};

fn one_step(extra: &str, params: &str) -> String {
    format!(
        "version: 1\nid: e\npolicy: {{risk_tolerance: high}}\nsteps:\n  - {{id: s, tool: bash{extra}, parameters: {{command: 'true'{params}}}}}\n"
    )
}

#[test]
fn network_true_needs_the_policy_files_allow_any_network() {
    let env = Env::new();
    let without = env.write(
        "policy.yaml",
        "risk_tolerance: high\nallow_unsandboxed: true\n",
    );
    for (extra, params) in [(", network: true", ""), ("", ", network: true")] {
        let o = env.run(
            &one_step(extra, params),
            &["--policy", without.to_str().unwrap()],
        );
        assert_eq!(code(&o), 3, "{}", stderr(&o));
        let s = env.step("s");
        assert_eq!(s["status"], "blocked", "{s}");
        let why = s["approval"]["reason"].as_str().unwrap();
        assert!(
            why.contains("allow_any_network") && why.contains("egress"),
            "{why}"
        );
    }
    // The plan cannot grant it itself.
    let plan = one_step(", network: true", "").replace(
        "policy: {risk_tolerance: high}",
        "policy: {risk_tolerance: high, allow_any_network: true}",
    );
    let o = env.run(&plan, &["--policy", without.to_str().unwrap()]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(
        env.report()["policy"]["capped"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c
                .as_str()
                .unwrap()
                .contains("allow_any_network true asked by the plan forced to false")),
        "{}",
        env.report()["policy"]
    );
    // A policy file's `true` allows it (and the plan's `false` forbids it again).
    let with = env.write(
        "policy2.yaml",
        "risk_tolerance: high\nallow_any_network: true\n",
    );
    let o = env.run(
        &one_step(", network: true", ""),
        &["--policy", with.to_str().unwrap(), "--dry-run"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_ne!(env.step("s")["status"], "blocked");
    let no = one_step(", network: true", "").replace(
        "policy: {risk_tolerance: high}",
        "policy: {risk_tolerance: high, allow_any_network: false}",
    );
    let o = env.run(&no, &["--policy", with.to_str().unwrap()]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
}

#[test]
fn an_egress_list_needs_a_sandbox_and_is_at_least_moderate() {
    let env = Env::new();
    let egress = ", egress: [api.example.com]";
    // Without a sandbox (`sandbox: false`, approved as dangerous): blocked.
    let o = env.run(
        &one_step(
            ", risk_level: dangerous",
            &format!("{egress}, sandbox: false"),
        ),
        &["--approve", "s"],
    );
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let why = env.step("s")["approval"]["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        why.contains("egress") && why.contains("sandbox: false"),
        "{why}"
    );
    // No backend and `sandbox: optional`: still blocked (nothing would enforce it).
    let optional = env.write("policy.yaml", "risk_tolerance: high\nsandbox: optional\n");
    let o = env.run(
        &one_step("", egress),
        &[
            "--sandbox-backend",
            "none",
            "--policy",
            optional.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert_eq!(env.step("s")["status"], "blocked");
    // With both `network: true` and `egress`: one must go.
    let o = env.run(&one_step(", network: true", egress), &[]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let why = env.step("s")["approval"]["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(why.contains("keep one"), "{why}");
    // `validate`: an egress list raises `true` to moderate, naming the hosts.
    let plan = env.write("v.yaml", &one_step("", egress));
    let o = env
        .cmd()
        .args(["validate", "--format", "json"])
        .arg(&plan)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = &v["steps"][0];
    assert_eq!(s["risk"]["effective"], "moderate", "{s}");
    assert!(
        s.to_string().contains("api.example.com"),
        "the reason names the hosts: {s}"
    );
}
