//! What a trial needs of the machine, and whether this machine has it.
//!
//! Each facility is probed once (lazily: `--list` and filtered-out trials
//! probe nothing), the way the trials will use it: a sandbox backend by
//! plangate's own pre-flight on a one-step plan, a tool by running it. A
//! trial whose facility is missing is reported as ignored with the reason;
//! under `CI=true` it fails instead ([`verdict`]): CI must run everything.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use libtest_mimic::{Completion, Failed};
use serde_json::Value;

use crate::harness::{Env, code, stderr};

/// A `--sandbox-backend` value and the name the report gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backend {
    pub flag: &'static str,
    pub name: &'static str,
}

pub const BWRAP: Backend = Backend {
    flag: "bwrap",
    name: "bwrap",
};
pub const LANDLOCK: Backend = Backend {
    flag: "landlock",
    name: "landlock+seccomp",
};
/// `--sandbox-backend none`: the steps run unsandboxed (needs nothing).
pub const UNSANDBOXED: Backend = Backend {
    flag: "none",
    name: "unsandboxed",
};

/// Both sandbox backends.
pub const SANDBOXES: &[Backend] = &[BWRAP, LANDLOCK];
/// Both sandbox backends, and no sandbox.
pub const MODES: &[Backend] = &[BWRAP, LANDLOCK, UNSANDBOXED];

impl Backend {
    /// `(flag, report name)`.
    pub fn pair(self) -> (&'static str, &'static str) {
        (self.flag, self.name)
    }

    /// `(flag, label)`: the label is the flag, or `unsandboxed`.
    pub fn mode(self) -> (&'static str, &'static str) {
        (self.flag, self.label())
    }

    /// The last part of a trial's name: the flag, or `unsandboxed`.
    pub fn label(self) -> &'static str {
        if self == UNSANDBOXED {
            "unsandboxed"
        } else {
            self.flag
        }
    }

    /// What a trial under this mode needs.
    pub fn needs(self) -> Vec<Facility> {
        if self == UNSANDBOXED {
            Vec::new()
        } else {
            vec![Facility::Sandbox(self)]
        }
    }
}

/// Something of the machine a trial needs.
#[derive(Clone, Copy, Debug)]
pub enum Facility {
    /// The sandbox backend works here (plangate's pre-flight and self-test).
    Sandbox(Backend),
    /// The backend keeps a step's signals inside it (its self-test says
    /// `signals: enforced`; Landlock needs Linux 6.12+ for that).
    SignalScoping(Backend),
    /// The system's `/usr/bin/python3` (one under `$HOME`, as pyenv's, is out
    /// of a sandboxed step's reach).
    SystemPython,
    /// `xmllint` (Debian libxml2-utils) validates the JUnit XML.
    Xmllint,
    /// The SARIF Multitool's native binary (`PLANGATE_SARIF_MULTITOOL`, else
    /// `sarif-multitool` on `PATH`) checks the SARIF and GitHub rule sets.
    SarifMultitool,
    /// `node` and a `node_modules` folder holding mermaid and jsdom
    /// (`PLANGATE_MERMAID_MODULES`): the real Mermaid parser.
    Mermaid,
    /// The real agent CLIs `claude`, `codex` and `gemini` in the folder
    /// `PLANGATE_AGENT_CLIS` names (outside `$HOME`, where a sandboxed step
    /// can run them: .ci/run installs them under /opt).
    AgentClis,
    /// Root, with `setpriv` and the user `nobody` (uid 65534): a test runs
    /// plangate as a user that file modes bind (root's rights ignore them).
    AnotherUser,
    /// `unshare --pid --fork --mount-proc` (root): plangate as a container
    /// runs it, its session leader outside its PID namespace.
    PidNamespace,
    /// `chattr`/`lsattr` set and read a file's flags in the tests' temporary
    /// folder (its filesystem supports them: ext4, xfs, btrfs, tmpfs 6.0+).
    FileFlags,
}

impl Facility {
    /// `Ok` when this machine has it, else why not and how to get it.
    pub fn available(self) -> Result<(), String> {
        match self {
            Facility::Sandbox(b) => sandbox_probe(b).as_ref().map(|_| ()).map_err(Clone::clone),
            Facility::SignalScoping(b) => {
                let sandbox = sandbox_probe(b).as_ref().map_err(Clone::clone)?;
                let signals = &sandbox["properties"]["signals"];
                if signals == "enforced" {
                    Ok(())
                } else {
                    Err(format!(
                        "the {} sandbox backend does not scope signals on this kernel (its self-test says signals: {signals}; Landlock needs Linux 6.12+)",
                        b.name
                    ))
                }
            }
            Facility::SystemPython => once(&PYTHON, || {
                runs(Command::new("/usr/bin/python3").arg("--version")).map_err(|e| {
                    format!("/usr/bin/python3 does not run: {e} (apt install python3-minimal)")
                })
            }),
            Facility::Xmllint => once(&XMLLINT, || {
                runs(Command::new("xmllint").arg("--version"))
                    .map_err(|e| format!("xmllint does not run: {e} (apt install libxml2-utils)"))
            }),
            Facility::SarifMultitool => once(&MULTITOOL, || {
                let tool = multitool();
                runs(Command::new(&tool).arg("--version")).map_err(|e| {
                    format!(
                        "the SARIF Multitool ({}) does not run: {e} (npm install @microsoft/sarif-multitool, then set PLANGATE_SARIF_MULTITOOL to its native binary, as .ci/run does)",
                        tool.display()
                    )
                })
            }),
            Facility::Mermaid => once(&MERMAID, || {
                runs(Command::new("node").arg("--version"))
                    .map_err(|e| format!("node does not run: {e} (apt install nodejs npm)"))?;
                mermaid_modules().map(|_| ()).ok_or_else(|| {
                    "PLANGATE_MERMAID_MODULES does not name a node_modules folder holding mermaid and jsdom (npm install mermaid@11 jsdom@26; .ci/run sets it)".to_owned()
                })
            }),
            Facility::AnotherUser => {
                once(&ANOTHER_USER, || {
                    let uid = Command::new("id")
                        .arg("-u")
                        .output()
                        .map_err(|e| e.to_string())?;
                    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
                        return Err("the tests do not run as root: they cannot run plangate as another user".to_owned());
                    }
                    runs(Command::new("setpriv").args(["--reuid=65534", "--regid=65534", "--clear-groups", "true"]))
                    .map_err(|e| format!("`setpriv` cannot run a program as uid 65534: {e} (apt install util-linux)"))
                })
            }
            Facility::PidNamespace => once(&PID_NAMESPACE, || {
                runs(Command::new("unshare").args(["--pid", "--fork", "--mount-proc", "true"]))
                    .map_err(|e| format!("`unshare --pid --fork --mount-proc` does not run here: {e} (it needs root and util-linux)"))
            }),
            Facility::FileFlags => once(&FILE_FLAGS, file_flags_probe),
            Facility::AgentClis => once(&AGENT_CLIS, || {
                let dir = agent_clis().ok_or(
                    "PLANGATE_AGENT_CLIS does not name a folder (npm install --prefix /opt/plangate-agent-clis @anthropic-ai/claude-code @openai/codex @google/gemini-cli, then set it to its node_modules/.bin, as .ci/run does)",
                )?;
                for cli in ["claude", "codex", "gemini"] {
                    runs(Command::new(dir.join(cli)).arg("--version"))
                        .map_err(|e| format!("{cli} in {} does not run: {e}", dir.display()))?;
                }
                Ok(())
            }),
        }
    }
}

/// The folder of the real agent CLIs, if `PLANGATE_AGENT_CLIS` names one.
pub fn agent_clis() -> Option<PathBuf> {
    std::env::var_os("PLANGATE_AGENT_CLIS")
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
}

static AGENT_CLIS: OnceLock<Result<(), String>> = OnceLock::new();
static FILE_FLAGS: OnceLock<Result<(), String>> = OnceLock::new();

/// Whether `chattr +d` sets, and `lsattr` shows, the no-dump flag of a file
/// in the tests' temporary folder (where [`crate::harness::Env`] puts its own).
fn file_flags_probe() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let f = dir.path().join("probe");
    std::fs::write(&f, "x").map_err(|e| e.to_string())?;
    let why = |what: String| {
        format!(
            "file flags do not work in the tests' temporary folder {}: {what} (e2fsprogs' chattr and lsattr, and TMPDIR on a filesystem with flags: ext4, xfs, btrfs, tmpfs on Linux 6.0+)",
            dir.path().display()
        )
    };
    runs(Command::new("chattr").arg("+d").arg(&f)).map_err(|e| why(format!("`chattr +d`: {e}")))?;
    let shown = Command::new("lsattr")
        .arg(&f)
        .output()
        .map_err(|e| why(format!("`lsattr`: {e}")))?;
    let flags = String::from_utf8_lossy(&shown.stdout).into_owned();
    let _ = Command::new("chattr").arg("-d").arg(&f).output();
    if shown.status.success()
        && flags
            .split_whitespace()
            .next()
            .is_some_and(|f| f.contains('d'))
    {
        Ok(())
    } else {
        Err(why(format!(
            "`lsattr` does not show the flag set: {flags}{}",
            stderr(&shown)
        )))
    }
}
static PID_NAMESPACE: OnceLock<Result<(), String>> = OnceLock::new();
static ANOTHER_USER: OnceLock<Result<(), String>> = OnceLock::new();
static PYTHON: OnceLock<Result<(), String>> = OnceLock::new();
static XMLLINT: OnceLock<Result<(), String>> = OnceLock::new();
static MULTITOOL: OnceLock<Result<(), String>> = OnceLock::new();
static MERMAID: OnceLock<Result<(), String>> = OnceLock::new();

fn once(
    cell: &'static OnceLock<Result<(), String>>,
    probe: impl FnOnce() -> Result<(), String>,
) -> Result<(), String> {
    cell.get_or_init(probe).clone()
}

/// Whether `c` starts and exits 0.
fn runs(c: &mut Command) -> Result<(), String> {
    let o = c.output().map_err(|e| e.to_string())?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!("exit {}: {}", code(&o), stderr(&o).trim()))
    }
}

/// The SARIF Multitool to run.
pub fn multitool() -> PathBuf {
    std::env::var_os("PLANGATE_SARIF_MULTITOOL")
        .map_or_else(|| PathBuf::from("sarif-multitool"), PathBuf::from)
}

/// The `node_modules` folder holding mermaid and jsdom, if named and there.
pub fn mermaid_modules() -> Option<PathBuf> {
    std::env::var_os("PLANGATE_MERMAID_MODULES")
        .map(PathBuf::from)
        .filter(|m| m.join("mermaid").is_dir() && m.join("jsdom").is_dir())
}

/// The report's `sandbox` of a one-step sandboxed run under `b` (probed
/// once per backend), or why `b` does not work here.
fn sandbox_probe(b: Backend) -> &'static Result<Value, String> {
    static BWRAP_PROBE: OnceLock<Result<Value, String>> = OnceLock::new();
    static LANDLOCK_PROBE: OnceLock<Result<Value, String>> = OnceLock::new();
    let cell = if b == BWRAP {
        &BWRAP_PROBE
    } else if b == LANDLOCK {
        &LANDLOCK_PROBE
    } else {
        unreachable!("no probe for {b:?}: it needs no facility")
    };
    cell.get_or_init(|| {
        let env = Env::new();
        let plan = crate::harness::bash_plan(&[("probe", "true")]);
        // Approved: under Landlock a step is not auto-approved where the
        // self-test finds a property unenforced; the probe is about the backend.
        let o = env.run(&plan, &["--sandbox-backend", b.flag, "--approve", "probe"]);
        let report = std::fs::read_to_string(env.out.join("report.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok());
        let sandbox = report.map(|r| r["sandbox"].clone()).unwrap_or_default();
        if code(&o) == 0 && sandbox["available"] == b.name {
            return Ok(sandbox);
        }
        // plangate's own reason names the backend ("bwrap does not work here: …").
        let why = match sandbox["reason"].as_str() {
            Some(reason) => reason.to_owned(),
            None => format!(
                "the {} sandbox backend does not work here: exit {}: {}",
                b.name,
                code(&o),
                stderr(&o).trim()
            ),
        };
        let fix = if b == BWRAP {
            "apt install bubblewrap"
        } else {
            "Landlock needs Linux 6.2+ with the LSM enabled"
        };
        Err(format!("{why} ({fix})"))
    })
}

/// Whether `CI=true` (any case), where a missing facility is a failure.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true"))
}

/// What a trial whose facility is missing (`why`) comes to: ignored with
/// the reason, or under CI a failure that says so.
pub fn verdict(why: String, ci: bool) -> Result<Completion, Failed> {
    if ci {
        Err(format!(
            "CI=true and {why}: under CI every trial must run (.ci/run installs what they need)"
        )
        .into())
    } else {
        Ok(Completion::ignored_with(why))
    }
}

/// A random marker (`what` and 16 hex digits), unique to one test run.
pub fn marker(what: &str) -> String {
    let mut b = [0u8; 8];
    std::io::Read::read_exact(
        &mut std::fs::File::open("/dev/urandom").expect("urandom"),
        &mut b,
    )
    .expect("urandom");
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{what}{hex}")
}

/// Every regular file under `dir` (links not followed) as text (lossy),
/// each after a line with its name.
pub fn all_text(dir: &std::path::Path) -> String {
    let mut out = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(m) = p.symlink_metadata() else {
                continue;
            };
            if m.is_dir() {
                stack.push(p);
            } else if m.is_file()
                && let Ok(b) = std::fs::read(&p)
            {
                out.push_str(&format!("\n== {}\n", p.display()));
                out.push_str(&String::from_utf8_lossy(&b));
            }
        }
    }
    out
}

/// `s` as a double-quoted YAML (JSON) string.
pub fn q(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// `s` as one single-quoted shell word.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r#"'\''"#))
}

/// Run `yaml` in `env` on the sandbox backend `backend`, with `extra` flags.
pub fn run_on(
    env: &crate::harness::Env,
    backend: &str,
    yaml: &str,
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec!["--sandbox-backend", backend];
    args.extend_from_slice(extra);
    env.run(yaml, &args)
}
