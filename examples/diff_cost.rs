#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]
//! What the diff costs a run: a per-step checkpoint in a small workspace,
//! and the before/after of a whole workspace (git or snapshot).
//!
//! `cargo run --release --example diff_cost -- [WORKSPACE|""] [FILES]`
//!
//! Without WORKSPACE it times checkpoints in a temporary folder of FILES
//! files (default 20). With WORKSPACE it also times `Tracker::start` and
//! `Tracker::finish` there (nothing in WORKSPACE is written; the output
//! folder is a temporary one outside it).

use std::path::PathBuf;
use std::time::Instant;

use plangate::workspace_diff::Tracker;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let files: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(20);
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    for i in 0..files {
        std::fs::write(ws.join("src").join(format!("f{i}.txt")), format!("{i}\n")).unwrap();
    }
    let out = tmp.path().join("out");
    let mut t = Tracker::start(&ws, &out);
    let n = 1000;
    let mut spent = std::time::Duration::ZERO;
    for i in 0..n {
        std::fs::write(ws.join("src/f0.txt"), format!("{i}\n")).unwrap();
        let started = Instant::now();
        let changed = t.checkpoint(Some("step"));
        spent += started.elapsed();
        assert_eq!(changed.map(|c| c.files.len()), Some(1));
    }
    let mut sorted = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let started = Instant::now();
        t.checkpoint(None);
        sorted.push(started.elapsed());
    }
    sorted.sort();
    println!(
        "checkpoint, {files} files ({:?}): {:?} each after a write; unchanged: median {:?}, p90 {:?}",
        t.method(),
        spent / n,
        sorted[sorted.len() / 2],
        sorted[sorted.len() * 9 / 10]
    );

    if let Some(dir) = args.get(1).filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir).canonicalize().unwrap();
        let started = Instant::now();
        let mut t = Tracker::start(&dir, &out);
        let start = started.elapsed();
        let started = Instant::now();
        let (summary, md) = t.finish();
        let finish = started.elapsed();
        println!(
            "{}: start {start:?}, finish {finish:?} ({:?}, {} file(s) changed, {} bytes of summary, notes {:?})",
            dir.display(),
            summary.method,
            summary.files_changed,
            md.len(),
            summary.notes
        );
    }
}
