#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]
//! Scan a directory tree and report throughput.
//!
//! `cargo run --release --example throughput -- DIR [--findings]`

use std::path::Path;
use std::time::{Duration, Instant};

use plangate::secrets::{Ruleset, Scanner, looks_binary};

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            walk(&e.path(), out);
        } else if ft.is_file() {
            out.push(e.path());
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(dir) = args.get(1) else {
        eprintln!("usage: throughput DIR [--findings]");
        std::process::exit(2);
    };
    let show = args.iter().any(|a| a == "--findings");

    // fixed cost for a small input: load rules, build scanner, scan one small file (cold)
    let tc = Instant::now();
    let small = Scanner::new(&Ruleset::builtin()).map(|s| {
        s.scan(
            b"password = \"Xk9#mP2$vL8q\"\nexport GITHUB_TOKEN=ghp_x\nkey: AKIAQ7XK2M4N6P8R0T2V\n",
        )
        .len()
    });
    println!(
        "fixed cost (builtin + new + first scan of a small input): {:.2} ms ({small:?} findings)",
        tc.elapsed().as_secs_f64() * 1e3
    );
    let t0 = Instant::now();
    let rules = Ruleset::builtin();
    let t_rules = t0.elapsed();
    let t1 = Instant::now();
    let scanner = match Scanner::new(&rules) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let t_new = t1.elapsed();
    let t2 = Instant::now();
    let bad = scanner.compile_all();
    let t_all = t2.elapsed();
    println!(
        "rules: {} | Ruleset::builtin {:.2} ms | Scanner::new {:.2} ms | compile all regexes (lazy, normally on demand) {:.2} ms{}",
        rules.ids().len(),
        t_rules.as_secs_f64() * 1e3,
        t_new.as_secs_f64() * 1e3,
        t_all.as_secs_f64() * 1e3,
        if bad.is_empty() {
            String::new()
        } else {
            format!(" FAILED {bad:?}")
        }
    );

    let mut files = Vec::new();
    walk(Path::new(dir), &mut files);
    // read everything first so that I/O is not measured
    let mut data = Vec::new();
    let mut skipped = 0usize;
    for f in &files {
        if let Ok(b) = std::fs::read(f) {
            if looks_binary(&b) {
                skipped += 1;
            } else {
                data.push((f, b));
            }
        }
    }
    let total: usize = data.iter().map(|(_, b)| b.len()).sum();
    let mut busy = Duration::ZERO;
    let mut nfind = 0usize;
    let mut by_rule: std::collections::BTreeMap<String, usize> = Default::default();
    for (path, b) in &data {
        let t = Instant::now();
        let f = scanner.scan(b);
        busy += t.elapsed();
        nfind += f.len();
        for x in &f {
            *by_rule.entry(x.rule.clone()).or_default() += 1;
            if show {
                let s = String::from_utf8_lossy(&b[x.start..x.end.min(x.start + 60)]);
                println!(
                    "{}:{}:{} {} {}",
                    path.display(),
                    x.line,
                    x.column,
                    x.rule,
                    s
                );
            }
        }
    }
    let secs = busy.as_secs_f64();
    println!(
        "scanned {} text files ({} binary skipped), {:.1} MB in {:.3} s: {:.1} MB/s, {:.0} files/s, {} findings",
        data.len(),
        skipped,
        total as f64 / 1e6,
        secs,
        total as f64 / 1e6 / secs,
        data.len() as f64 / secs,
        nfind
    );
    println!("findings by rule: {by_rule:?}");
}
