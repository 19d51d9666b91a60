//! Issue 23: a step whose processes hold a secret never runs beside a step
//! that could read their command lines (`/proc/<pid>/cmdline`): under
//! Landlock (which cannot follow pids) and unsandboxed, such steps wait for
//! each other; under bwrap the pid namespace hides them. The payload only
//! reads `/proc` and prints whether it saw the marker.

use std::time::Duration;

use crate::facility::Backend;
use crate::harness::{Env, code, stderr};

/// A plan of two parallel steps: `holder` gets `PROC_ISO_TOKEN` and runs a
/// process with it in its command line for a while; `peeker` looks through
/// every process's command line for it meanwhile.
fn plan(unsandboxed: bool, label: &str) -> String {
    let bare = if unsandboxed { "sandbox: false, " } else { "" };
    // The pattern `procis[o]mark` matches the token, not its own command line.
    let peek = format!(
        "n=0; for i in $(seq 40); do if cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n' | grep -q \"procis[o]mark-.*-{label}-\"; then n=$((n+1)); fi; sleep 0.05; done; echo seen=$n"
    );
    let hold = "sh -c 'sleep 1.5' \"$PROC_ISO_TOKEN\"";
    format!(
        "version: 1\nid: t\npolicy: {{risk_tolerance: high, max_parallel: 2}}\nsteps:\n\
         - id: holder\n  tool: bash\n  secrets: [PROC_ISO_TOKEN]\n  parameters: {{{bare}command: {}}}\n\
         - id: peeker\n  tool: bash\n  parameters: {{{bare}command: {}}}\n",
        serde_json::to_string(hold).unwrap(),
        serde_json::to_string(&peek).unwrap(),
    )
}

fn times(env: &Env, id: &str) -> (String, String) {
    let s = env.step(id);
    (
        s["started_at"].as_str().unwrap().to_owned(),
        s["finished_at"].as_str().unwrap().to_owned(),
    )
}

pub fn no_step_reads_a_secret_from_another_steps_command_line(b: Backend) {
    let flag = b.flag;
    // Each trial its own token: the trials of the other modes run meanwhile.
    let token = format!(
        "procisomark-{}-{}-7f3a9c1e5b",
        std::process::id(),
        b.label()
    );
    let unsandboxed = flag == "none";
    let env = Env::new();
    let path = env.write("plan.yaml", &plan(unsandboxed, b.label()));
    let o = env
        .cmd()
        .env("PROC_ISO_TOKEN", &token)
        .arg("run")
        .arg(&path)
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--out")
        .arg(&env.out)
        .args(["--sandbox-backend", flag, "--approve", "holder,peeker"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{flag}: {}", stderr(&o));
    let seen = std::fs::read_to_string(env.out.join("artifacts/peeker/stdout.txt")).unwrap();
    assert_eq!(
        seen.trim(),
        "seen=0",
        "{flag}: a step saw the secret in a command line"
    );
    if flag != "bwrap" {
        // Not beside each other: one ended before the other started.
        let (h, p) = (times(&env, "holder"), times(&env, "peeker"));
        assert!(
            h.1 <= p.0 || p.1 <= h.0,
            "{flag}: the steps overlapped: {h:?} {p:?}"
        );
    }
}
