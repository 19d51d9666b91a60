//! Issue 23 part 6 as a user file modes bind (root's rights ignore them):
//! what a step hides from plangate's user in its artifact folder (a folder
//! it may not list, a read-only folder holding a secret-named file or a
//! file it may not read) is swept, renamed or withheld, never left raw.
//! plangate runs as `nobody` (`setpriv`); payloads touch only the test's
//! temporary folders.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::harness::{Env, code, stderr};

const KEY: &str = "AKIAZ7Q4NX2LMRBT5KPW";

/// `chown -R nobody` of `path`.
fn give_to_nobody(path: &Path) {
    let o = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

pub fn a_folder_plangates_user_cannot_list_or_write_is_swept_or_withheld() {
    let env = Env::new();
    let script = "set -e\ncd \"$PLANGATE_STEP_ARTIFACTS\"\nK=AKIA; K=\"${K}Z7Q4NX2LMRBT5KPW\"\n\
        mkdir -m 300 d; printf '%s\\n' \"$K\" > d/f\n\
        mkdir e; printf '%s\\n' \"$K\" > e/f; chmod 000 e\n\
        mkdir -p w/x; printf '%s\\n' \"$K\" > w/x/f; chmod 100 w/x; chmod 000 w\n\
        mkdir ro; printf 'x\\n' > \"ro/$K.txt\"; chmod 500 ro\n\
        mkdir ro2; printf '%s\\n' \"$K\" > ro2/g; chmod 000 ro2/g; chmod 500 ro2\n\
        echo made\n";
    env.write("step.sh", script);
    let plan = env.write(
        "plan.yaml",
        "version: 1\nid: t\npolicy: {risk_tolerance: high, fail_on_secrets: false}\nsteps:\n  - {id: s, tool: bash, parameters: {command: 'bash step.sh'}}\n",
    );
    let root = env.ws.parent().unwrap();
    give_to_nobody(root);
    give_to_nobody(env.tmp());
    let bin = assert_cmd::cargo::cargo_bin("plangate");
    let o = assert_cmd::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .arg("run")
        .arg(&plan)
        .arg("--out")
        .arg(&env.out)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.tmp())
        .env("TMPDIR", env.tmp())
        .env("PLANGATE_POLICY", env.operator_policy())
        .current_dir(&env.ws)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = stderr(&o);
    // The file nobody may read is withheld: exit 4 whatever `fail_on_secrets` says.
    assert_eq!(code(&o), 4, "{err}");
    let r = env.report();
    let findings = r["findings"].as_array().cloned().unwrap_or_default();
    let at = |rule: &str, location: &str| {
        findings
            .iter()
            .any(|f| f["rule"] == rule && f["location"] == location)
    };
    for f in ["d/f", "e/f", "w/x/f"] {
        assert!(
            at("aws-access-key-id", &format!("artifacts/s/{f}")),
            "{f}: {r:#}"
        );
    }
    assert!(at("unscannable", "artifacts/s/ro2/g"), "{r:#}");
    assert!(
        !env.out.join("artifacts/s/ro2/g").exists(),
        "withheld: removed"
    );
    assert!(!err.contains("it is left at"), "{err}");
    // Nothing raw anywhere, in bytes or names (root reads every file).
    let grep = Command::new("grep")
        .args(["-rlF", KEY])
        .arg(&env.out)
        .output()
        .unwrap();
    assert!(
        grep.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&grep.stdout)
    );
    let find = Command::new("find")
        .arg(&env.out)
        .args(["-name", &format!("*{KEY}*")])
        .output()
        .unwrap();
    assert!(
        find.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&find.stdout)
    );
}

/// `plangate scan` as a user that may not read a file or list a folder:
/// both are named and fail the scan (exit 4), never a clean "0 found".
pub fn scan_fails_on_what_its_user_cannot_read() {
    let env = Env::new();
    let dir = env.ws.join("tree");
    std::fs::create_dir_all(dir.join("closed")).unwrap();
    std::fs::write(dir.join("ok.txt"), "nothing\n").unwrap();
    std::fs::write(dir.join("unreadable.txt"), format!("{KEY}\n")).unwrap();
    std::fs::write(dir.join("closed/inside.txt"), format!("{KEY}\n")).unwrap();
    give_to_nobody(env.ws.parent().unwrap());
    give_to_nobody(env.tmp());
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
    mode(&dir.join("unreadable.txt"), 0o000).unwrap();
    mode(&dir.join("closed"), 0o000).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("plangate");
    for (paths, says) in [
        (vec![dir.join("unreadable.txt")], "unreadable.txt"),
        (vec![dir.clone()], "closed"),
        (vec![dir.clone()], "unreadable.txt"),
    ] {
        let o = assert_cmd::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin)
            .arg("scan")
            .args(&paths)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", env.tmp())
            .env("TMPDIR", env.tmp())
            .current_dir(&env.ws)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(code(&o), 4, "{paths:?}: {err}");
        assert!(
            err.contains(says) && err.contains("could not be scanned"),
            "{err}"
        );
    }
}
