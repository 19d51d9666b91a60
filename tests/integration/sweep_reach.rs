//! Issue 23 part 6, the sweep's reach: a file no sweep can reach (a path
//! longer than `PATH_MAX`, a folder plangate's user may not list) is never
//! passed as swept; it is withheld and the run exits 4. A secret across the
//! cut between two pieces of a large file is found; a sparse file's holes
//! are not read; a SIGTERM ends a long sweep at once.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{Env, code, stderr};

/// A key the built-in rules detect, built at run time by the step (so no
/// plan or command line holds it).
const KEY: &str = "AKIAZ7Q4NX2LMRBT5KPW";
const KEY_SHELL: &str = "K=AKIA; K=\"${K}Z7Q4NX2LMRBT5KPW\"";

/// Every file under `dir` (at any depth: GNU grep walks relative to open
/// folders) whose bytes hold `needle`.
fn files_holding(dir: &Path, needle: &str) -> String {
    let o = std::process::Command::new("grep")
        .args(["-rlF", "--", needle])
        .arg(dir)
        .output()
        .expect("grep");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn findings(r: &Value) -> Vec<Value> {
    r["findings"].as_array().cloned().unwrap_or_default()
}

fn unscannable(r: &Value) -> Vec<Value> {
    findings(r)
        .into_iter()
        .filter(|f| f["rule"] == "unscannable")
        .collect()
}

fn plan(command: &str) -> String {
    format!(
        "version: 1\nid: t\npolicy: {{risk_tolerance: high, fail_on_secrets: false}}\nsteps:\n  - {{id: s, tool: bash, parameters: {{command: 'bash step.sh'}}}}\n{command}"
    )
}

/// A step script in the workspace (run as `bash step.sh` from the plan).
fn step_script(env: &Env, body: &str) {
    env.write(
        "step.sh",
        &format!("set -e\ncd \"$PLANGATE_STEP_ARTIFACTS\"\n{KEY_SHELL}\n{body}\n"),
    );
}

/// Nested folders moved under each other, each move short: the key ends at
/// a path of about 5,500 characters, which no syscall taking a path reaches.
const DEEP: &str = "S=$(printf 'd%.0s' $(seq 200)); P=\"$S/$S/$S/$S/$S/$S/$S/$S/$S\"; Q=\"$P/$P/$S/$S\"; N=$(printf 'n%.0s' $(seq 250))\nmkdir -p \"c1/$P\"; printf '%s\\n' \"$K\" > \"c1/$P/deep.txt\"\nmkdir -p \"c2/$P\"; mv c1 \"c2/$P/\"\nmkdir -p \"c3/$P\"; mv c2 \"c3/$P/\"\nmkdir -p \"c4/$Q\"; (cd \"c4/$Q\"; printf '%s\\n' \"$K\" > \"$N\")\necho made";

#[test]
fn a_secret_deeper_than_path_max_is_withheld_and_fails_the_run() {
    let env = Env::new();
    step_script(&env, DEEP);
    let o = env.run(&plan(""), &[]);
    let err = stderr(&o);
    let r = env.report();
    assert_eq!(code(&o), 4, "{err}\n{r:#}");
    assert_eq!(r["status"], "secrets_found");
    let u = unscannable(&r);
    assert!(!u.is_empty(), "{r:#}");
    assert!(
        u.iter()
            .all(|f| f["location"].as_str().unwrap_or("").contains("c3/")
                || f["location"].as_str().unwrap_or("").contains("c4/")),
        "{u:?}"
    );
    for deep in ["artifacts/s/c3/", "artifacts/s/c4/"] {
        assert!(
            u.iter()
                .any(|f| f["location"].as_str().unwrap_or("").starts_with(deep)),
            "{deep}: {u:?}"
        );
    }
    assert!(err.contains("could not be scanned"), "{err}");
    let left = files_holding(&env.out, KEY);
    assert!(left.is_empty(), "the raw key is still in: {left}");
}

/// `plangate scan` of the same tree: the file it cannot reach is an error
/// that fails the scan (exit 4), not "0 files scanned".
#[test]
fn scan_of_a_tree_deeper_than_path_max_fails() {
    let env = Env::new();
    let dir = env.ws.join("tree");
    std::fs::create_dir_all(&dir).unwrap();
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("set -e; cd \"$1\"; {KEY_SHELL}; {DEEP}"))
        .arg("-")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!files_holding(&dir, KEY).is_empty(), "grep reaches it");
    let o = env
        .cmd()
        .arg("scan")
        .arg(&dir)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(code(&o), 4, "{err}");
    assert!(err.contains("c3") || err.contains("c4"), "{err}");
}

/// The key across the 8 MiB cut of a line of 17 MiB: found and redacted.
#[test]
fn a_secret_across_the_cut_of_a_large_file_is_found() {
    let env = Env::new();
    step_script(
        &env,
        "{ head -c 8388599 /dev/zero | tr '\\0' ' '; printf '%s' \"$K\"; head -c 9000000 /dev/zero | tr '\\0' ' '; echo; } > big.txt\necho made",
    );
    let o = env.run(&plan(""), &[]);
    let err = stderr(&o);
    let r = env.report();
    assert_eq!(code(&o), 0, "{err}");
    assert!(
        findings(&r)
            .iter()
            .any(|f| f["rule"] == "aws-access-key-id" && f["location"] == "artifacts/s/big.txt"),
        "{r:#}"
    );
    let left = files_holding(&env.out, KEY);
    assert!(left.is_empty(), "the raw key is still in: {left}");
}

/// A sparse file of 2 GiB with the key after its hole: the hole is not
/// read (the sweep takes seconds, not a minute), the key is found and
/// redacted, and the new file keeps the hole.
#[test]
fn a_sparse_file_is_swept_without_reading_its_holes() {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::MetadataExt;
    let env = Env::new();
    step_script(
        &env,
        "printf 'head\\n' > big; truncate -s 2G big; printf 'x %s\\n' \"$K\" >> big\necho made",
    );
    let t = Instant::now();
    let o = env.run(&plan(""), &[]);
    let took = t.elapsed();
    let err = stderr(&o);
    assert_eq!(code(&o), 0, "{err}");
    assert!(took < Duration::from_secs(30), "{took:?}");
    let r = env.report();
    assert!(
        findings(&r)
            .iter()
            .any(|f| f["rule"] == "aws-access-key-id" && f["location"] == "artifacts/s/big"),
        "{r:#}"
    );
    let big = env.out.join("artifacts/s/big");
    let meta = std::fs::metadata(&big).unwrap();
    assert!(meta.len() > 2 << 30, "{}", meta.len());
    assert!(
        meta.blocks() * 512 < 64 << 20,
        "the hole was filled: {meta:?}"
    );
    let mut f = std::fs::File::open(&big).unwrap();
    let mut head = [0u8; 5];
    f.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"head\n");
    f.seek(SeekFrom::Start(2 << 30)).unwrap();
    let mut tail = String::new();
    f.read_to_string(&mut tail).unwrap();
    assert!(tail.starts_with("x [REDACTED"), "{tail:?}");
}

/// A SIGTERM while the sweep reads a large file ends the run at once: exit
/// 130, a valid report, the file withheld (it was not scanned to its end).
#[test]
fn a_sigterm_during_the_sweep_of_a_large_file_ends_the_run_at_once() {
    let env = Env::new();
    step_script(
        &env,
        "head -c 1500000000 /dev/zero | tr '\\0' a > big\necho written",
    );
    let child = crate::harness::spawn(&env, &plan(""), &[]);
    let stdout = env.out.join("artifacts/s/stdout.txt");
    assert!(
        crate::harness::wait_until(120, || std::fs::read_to_string(&stdout)
            .is_ok_and(|s| s.contains("written"))),
        "the step did not end"
    );
    // The step ended: its sweep reads the file now.
    std::thread::sleep(Duration::from_millis(1500));
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let t = Instant::now();
    let out = child.wait_with_output().unwrap();
    let took = t.elapsed();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(took < Duration::from_secs(10), "{took:?}: {err}");
    assert_eq!(out.status.code(), Some(130), "{err}");
    let r = env.report();
    assert_eq!(r["status"], "interrupted");
    assert_eq!(r["in_progress"], false);
    assert!(
        unscannable(&r)
            .iter()
            .any(|f| f["location"] == "artifacts/s/big"),
        "{r:#}"
    );
    assert!(!env.out.join("artifacts/s/big").exists(), "withheld");
}
