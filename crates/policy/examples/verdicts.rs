//! Prints the classifier's verdict for every command line read on stdin
//! (`label<TAB>reason<TAB>command`), in the fixtures' context (workspace and
//! working directory `/work/ws`, home `/home/ci`). Used by
//! `bench/verdicts.py` to compare two builds' verdicts on a large corpus.

use std::io::{BufRead, Write};
use std::path::Path;

use plangate_policy::classify::{ClassifyContext, classify_bash};

// A development tool over the fixtures' commands (no secret flows here).
#[allow(clippy::disallowed_methods)]
fn main() {
    let ctx = ClassifyContext {
        workspace: Path::new("/work/ws"),
        working_dir: Path::new("/work/ws"),
        home: Some(Path::new("/home/ci")),
    };
    let stdin = std::io::stdin();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for line in stdin.lock().lines() {
        let Ok(command) = line else { break };
        // One command per line: `\n` inside a command is written `\\n`.
        let command = command.replace("\\n", "\n");
        let c = classify_bash(&command, &ctx);
        let shown = command.replace('\n', "\\n");
        if writeln!(out, "{}\t{}\t{shown}", c.label(), c.reason()).is_err() {
            break;
        }
    }
}
