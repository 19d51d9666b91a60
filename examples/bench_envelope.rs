#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]
//! Throughput benchmark for `parse_envelope` (run by `bench/parser_throughput.sh`).
//!
//! `bench_envelope gen DIR` writes the envelopes; `bench_envelope run FILE...`
//! parses each file several times and prints the median time and MB/s.
//! Files: `valid_*` are strict JSON with one big `content`; `tier2_*` carry the
//! same kind of content with raw newlines and unescaped quotes (one reading).

use plangate::guard::envelope::parse_envelope;
use std::time::Instant;

/// Python-looking code with quotes on most lines and no backslashes, about `size` bytes.
fn content(size: usize) -> String {
    let mut s = String::with_capacity(size + 128);
    let mut i = 0usize;
    while s.len() < size {
        match i % 4 {
            0 => s.push_str(&format!("def f{i}(x):\n")),
            1 => s.push_str(&format!("    print(\"item {i}: {{x}}\", x)\n")),
            2 => s.push_str(&format!("    d = {{\"k{i}\": \"v\", 'q': [1, 2]}}\n")),
            _ => s.push_str("    return x  # done\n\n"),
        }
        i += 1;
    }
    s
}

fn tier2(content: &str) -> String {
    format!(
        "Here is the result.\n\n```json\n{{\"status\": \"OK\", \"summary\": \"generated code\", \"artifacts\": [{{\"path\": \"src/gen.py\", \"content\": \"{content}\"}}], \"next_actions\": [\"run the tests\", \"review\"]}}\n```\n"
    )
}

fn valid(content: &str) -> String {
    let env = serde_json::json!({
        "status": "OK", "summary": "generated code",
        "artifacts": [{"path": "src/gen.py", "content": content}],
        "next_actions": ["run the tests", "review"],
    });
    format!("Here is the result.\n\n```json\n{env}\n```\n")
}

fn generate(dir: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, size) in [
        ("100k", 100 * 1024),
        ("1m", 1024 * 1024),
        ("4m", 4 * 1024 * 1024),
    ] {
        let c = content(size);
        std::fs::write(format!("{dir}/valid_{name}.txt"), valid(&c))?;
        std::fs::write(format!("{dir}/tier2_{name}.txt"), tier2(&c))?;
    }
    // Dense quotes followed by commas and spaces: every quote is a closing candidate.
    for (name, size) in [
        ("100k", 100 * 1024),
        ("1m", 1024 * 1024),
        ("4m", 4 * 1024 * 1024),
    ] {
        let mut dense = String::new();
        while dense.len() < size {
            dense.push_str("call(\"a\", \"b\" , \"c\",\"\", \" \")\n");
        }
        std::fs::write(format!("{dir}/tier2dense_{name}.txt"), tier2(&dense))?;
    }
    Ok(())
}

fn run(files: &[String]) -> Result<(), String> {
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{f}: {e}"))?;
        let iters = if text.len() > 2 << 20 { 7 } else { 15 };
        let mut times = Vec::with_capacity(iters);
        let mut tier = String::new();
        for _ in 0..iters {
            let t = Instant::now();
            let r = parse_envelope(std::hint::black_box(&text));
            times.push(t.elapsed().as_secs_f64());
            tier = match r {
                Ok((e, tier)) => {
                    format!(
                        "{tier:?}, content {} bytes",
                        e.files().first().map_or(0, |a| a.content.len())
                    )
                }
                Err(r) => format!(
                    "REJECTED: {}",
                    r.first().map(|x| x.to_string()).unwrap_or_default()
                ),
            };
        }
        times.sort_by(f64::total_cmp);
        let median = times.get(times.len() / 2).copied().unwrap_or(0.0);
        let mb = text.len() as f64 / (1024.0 * 1024.0);
        println!(
            "{:<40} {:>8.2} MB  median {:>9.3} ms  {:>9.1} MB/s  ({tier})",
            f.rsplit('/').next().unwrap_or(f),
            mb,
            median * 1e3,
            mb / median.max(1e-9)
        );
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("gen") => generate(args.get(1).map_or("/tmp/plangate-bench", String::as_str))
            .map_err(|e| e.to_string()),
        Some("run") => run(args.get(1..).unwrap_or(&[])),
        _ => Err("usage: bench_envelope gen DIR | run FILE...".to_string()),
    };
    if let Err(e) = result {
        eprintln!("{e}");
        std::process::exit(2);
    }
}
