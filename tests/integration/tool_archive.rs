//! The `archive` tool through `plangate run`: the round-trip case table
//! (`tests/fixtures/tools/archive.json`) and a corpus of hostile archives
//! built here, at run time, byte by byte where the crates would refuse to
//! write them. Every hostile archive must be refused with its rule, leave
//! nothing in its destination and nothing outside it.

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::harness::{Env, code, read_json, stderr};

/// Run `steps` (each `{id, params}`, run in order, each continuing on error)
/// as one plan; returns the report.
fn run_steps(env: &Env, steps: &[Value], timeout: Option<f64>) -> Value {
    let steps: Vec<Value> = steps
        .iter()
        .map(|c| {
            let mut s = json!({"id": c["id"], "tool": "archive", "parameters": c["params"], "continue_on_error": true});
            if let Some(t) = timeout {
                s["timeout"] = json!(t);
            }
            s
        })
        .collect();
    let plan = json!({"version": 1, "id": "archive-table", "policy": {"risk_tolerance": "medium"}, "steps": steps});
    let plan_path = env.ws.parent().unwrap().join("archive-plan.yaml");
    std::fs::write(&plan_path, plan.to_string()).unwrap();
    let o = env
        .cmd()
        .arg("run")
        .arg(&plan_path)
        .args([
            "--workspace",
            env.ws.to_str().unwrap(),
            "--out",
            env.out.to_str().unwrap(),
        ])
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .unwrap();
    assert!(
        matches!(code(&o), 0 | 1),
        "exit {}: {}",
        code(&o),
        stderr(&o)
    );
    env.report()
}

fn write_bytes(env: &Env, name: &str, bytes: &[u8]) {
    std::fs::write(env.ws.join(name), bytes).unwrap();
}

fn step<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id}"))
}

fn result(env: &Env, id: &str) -> Value {
    read_json(&env.out.join(format!("artifacts/{id}/result.json")))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

/// Check one case of the table.
fn check_case(env: &Env, report: &Value, case: &Value) {
    let id = case["id"].as_str().unwrap();
    let s = step(report, id);
    let expect = &case["expect"];
    let status = expect["status"].as_str().unwrap_or("success");
    assert_eq!(s["status"], status, "{id}: {s:#}");
    let r = result(env, id);
    assert_eq!(r["success"], status == "success", "{id}: {r:#}");
    if let Some(e) = expect["error"].as_str() {
        let got = s["error"].as_str().unwrap_or("");
        assert!(got.contains(e), "{id}: error `{got}` should contain `{e}`");
        assert_eq!(r["error"], s["error"], "{id}");
    }
    for key in [
        "files_processed",
        "total_size",
        "excluded",
        "format",
        "compression",
        "directories",
        "entries",
        "symlinks",
        "destination",
        "destination_unchanged",
    ] {
        if let Some(v) = expect.get(key) {
            assert_eq!(&r[key], v, "{id}: {key} in {r:#}");
        }
    }
    if let Some(files) = expect.get("files") {
        assert_eq!(strings(&r["files"]), strings(files), "{id}");
    }
    if let Some(w) = expect["warning"].as_str() {
        assert!(
            strings(&r["warnings"]).iter().any(|x| x.contains(w)),
            "{id}: no warning with `{w}` in {r:#}"
        );
    }
    for p in expect["exists"].as_array().into_iter().flatten() {
        let p = p.as_str().unwrap();
        assert!(
            env.ws.join(p).symlink_metadata().is_ok(),
            "{id}: `{p}` should exist"
        );
    }
    for p in expect["absent"].as_array().into_iter().flatten() {
        let p = p.as_str().unwrap();
        assert!(
            env.ws.join(p).symlink_metadata().is_err(),
            "{id}: `{p}` should not exist"
        );
    }
    for (p, text) in expect["content"].as_object().into_iter().flatten() {
        assert_eq!(
            std::fs::read_to_string(env.ws.join(p)).unwrap_or_else(|e| panic!("{id}: {p}: {e}")),
            text.as_str().unwrap(),
            "{id}: content of {p}"
        );
    }
    for p in expect["executable"].as_array().into_iter().flatten() {
        use std::os::unix::fs::PermissionsExt;
        let p = p.as_str().unwrap();
        let mode = std::fs::metadata(env.ws.join(p))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755, "{id}: mode of {p}");
    }
    for (p, target) in expect["links"].as_object().into_iter().flatten() {
        assert_eq!(
            std::fs::read_link(env.ws.join(p)).unwrap_or_else(|e| panic!("{id}: {p}: {e}")),
            Path::new(target.as_str().unwrap()),
            "{id}: link {p}"
        );
    }
    for key in [
        "success",
        "files_processed",
        "total_size",
        "compressed_size",
        "compression_ratio",
        "files",
        "warnings",
    ] {
        assert!(
            r.get(key).is_some(),
            "{id}: the design's `{key}` is missing"
        );
    }
}

#[test]
fn archive_case_table() {
    use std::os::unix::fs::PermissionsExt;
    let table =
        read_json(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tools/archive.json"));
    let env = Env::new();
    for (path, content) in table["tree"].as_object().unwrap() {
        env.write(path, content.as_str().unwrap());
    }
    for (path, target) in table["links"].as_object().unwrap() {
        std::os::unix::fs::symlink(target.as_str().unwrap(), env.ws.join(path)).unwrap();
    }
    for path in strings(&table["executables"]) {
        std::fs::set_permissions(env.ws.join(path), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    let cases = table["cases"].as_array().unwrap();
    let report = run_steps(&env, cases, None);
    for case in cases {
        check_case(&env, &report, case);
    }
    // No staging directory or temporary archive is ever left behind.
    for e in walk(&env.ws) {
        let name = e.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            !name.starts_with(".plangate-"),
            "left behind: {}",
            e.display()
        );
    }
    // list is safe, create and extract are moderate.
    for s in report["steps"].as_array().unwrap() {
        let op = cases.iter().find(|c| c["id"] == s["id"]).unwrap()["params"]["operation"]
            .as_str()
            .unwrap();
        let want = if op == "list" { "safe" } else { "moderate" };
        assert_eq!(s["risk"]["effective"], want, "{s:#}");
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.symlink_metadata().unwrap().is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

// ---------------------------------------------------------------------------
// Hostile archives, written here.

/// A raw tar entry: the name and link name are written into the header as
/// bytes (the tar crate's setters refuse `..` and absolute names).
pub(crate) fn tar_raw(
    out: &mut Vec<u8>,
    name: &[u8],
    kind: tar::EntryType,
    link: &[u8],
    data: &[u8],
) {
    let mut h = tar::Header::new_gnu();
    {
        let g = h.as_gnu_mut().unwrap();
        g.name[..name.len()].copy_from_slice(name);
        g.linkname[..link.len()].copy_from_slice(link);
    }
    h.set_entry_type(kind);
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    h.set_mtime(0);
    h.set_cksum();
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512, 0);
}

pub(crate) fn tar_end(mut out: Vec<u8>) -> Vec<u8> {
    out.extend_from_slice(&[0u8; 1024]);
    out
}

/// A pax extended header giving the next entry's path.
pub(crate) fn pax_path(out: &mut Vec<u8>, path: &str) {
    let body = format!(" path={path}\n");
    let mut len = body.len() + 1;
    while format!("{len}{body}").len() != len {
        len += 1;
    }
    let rec = format!("{len}{body}");
    tar_raw(out, b"pax", tar::EntryType::XHeader, b"", rec.as_bytes());
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zip_of(entries: &[(&str, Option<u32>, &[u8])]) -> Vec<u8> {
    let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, attrs, data) in entries {
        let mut o = zip::write::SimpleFileOptions::default();
        if let Some(a) = attrs {
            o = o.external_attributes(*a);
        }
        z.start_file(*name, o).unwrap();
        z.write_all(data).unwrap();
    }
    z.finish().unwrap().into_inner()
}

/// Rewrite every uncompressed-size field of a zip (local headers and the
/// central directory) to `size`: the header now lies about the data.
fn zip_lie_about_size(mut z: Vec<u8>, size: u32) -> Vec<u8> {
    let mut i = 0;
    while i + 4 <= z.len() {
        let field = match &z[i..i + 4] {
            b"PK\x03\x04" => Some(i + 22),
            b"PK\x01\x02" => Some(i + 24),
            _ => None,
        };
        if let Some(f) = field {
            z[f..f + 4].copy_from_slice(&size.to_le_bytes());
        }
        i += 1;
    }
    z
}

struct Hostile {
    id: &'static str,
    file: &'static str,
    bytes: Vec<u8>,
    extra: Value,
    error: &'static str,
}

#[test]
fn hostile_archives_are_refused_and_write_nothing() {
    let env = Env::new();
    let sentinel = env.ws.parent().unwrap().join("sentinel");
    std::fs::create_dir_all(&sentinel).unwrap();
    std::fs::write(sentinel.join("secret"), "keep me\n").unwrap();
    let abs = format!("{}/abs.txt", sentinel.display());
    let secret = format!("{}/secret", sentinel.display());
    use tar::EntryType as T;
    let mut cases: Vec<Hostile> = Vec::new();
    let mut tar = |id, bytes: Vec<u8>, extra: Value, error| {
        cases.push(Hostile {
            id,
            file: "x.tar",
            bytes: tar_end(bytes),
            extra,
            error,
        })
    };

    let mut b = Vec::new();
    tar_raw(&mut b, b"ok.txt", T::Regular, b"", b"fine\n");
    tar_raw(
        &mut b,
        b"../../sentinel/dotdot.txt",
        T::Regular,
        b"",
        b"pwned\n",
    );
    tar(
        "tar_dotdot",
        b,
        json!({}),
        "entry `../../sentinel/dotdot.txt` leaves the destination",
    );

    let mut b = Vec::new();
    tar_raw(&mut b, abs.as_bytes(), T::Regular, b"", b"pwned\n");
    tar("tar_absolute", b, json!({}), "has an absolute name");

    let mut b = Vec::new();
    tar_raw(
        &mut b,
        b"..\\..\\sentinel\\bs.txt",
        T::Regular,
        b"",
        b"pwned\n",
    );
    tar("tar_backslash", b, json!({}), "has a backslash");

    let mut b = Vec::new();
    pax_path(&mut b, "../../sentinel/pax.txt");
    tar_raw(&mut b, b"innocent.txt", T::Regular, b"", b"pwned\n");
    tar(
        "tar_pax_long_name",
        b,
        json!({}),
        "entry `../../sentinel/pax.txt` leaves the destination",
    );

    // The classic: a symlink to outside, then a file written through it.
    let mut b = Vec::new();
    tar_raw(
        &mut b,
        b"link",
        T::Symlink,
        sentinel.to_str().unwrap().as_bytes(),
        b"",
    );
    tar_raw(&mut b, b"link/through.txt", T::Regular, b"", b"pwned\n");
    tar("tar_symlink_absolute", b, json!({}), "symlink `link` → `");

    let mut b = Vec::new();
    tar_raw(&mut b, b"link", T::Symlink, b"../../sentinel", b"");
    tar_raw(&mut b, b"link/through.txt", T::Regular, b"", b"pwned\n");
    tar(
        "tar_symlink_relative_escape",
        b,
        json!({}),
        "symlink `link` → `../../sentinel` leaves the destination",
    );

    // A symlink that stays inside, then a write through it: refused too.
    let mut b = Vec::new();
    tar_raw(&mut b, b"sub/", T::Directory, b"", b"");
    tar_raw(&mut b, b"link", T::Symlink, b"sub", b"");
    tar_raw(&mut b, b"link/through.txt", T::Regular, b"", b"data\n");
    tar(
        "tar_write_through_symlink",
        b,
        json!({}),
        "entry `link/through.txt` passes through the symlink `link`",
    );

    // Each link looks inside by name; followed, the second climbs out.
    let mut b = Vec::new();
    tar_raw(&mut b, b"d/x", T::Symlink, b"..", b"");
    tar_raw(&mut b, b"y", T::Symlink, b"d/x/..", b"");
    tar(
        "tar_symlink_chain",
        b,
        json!({}),
        "symlink `y` → `d/x/..` leaves the destination",
    );

    let mut b = Vec::new();
    tar_raw(&mut b, b"a", T::Symlink, b"b", b"");
    tar_raw(&mut b, b"b", T::Symlink, b"a/x", b"");
    tar("tar_symlink_loop", b, json!({}), "too many symlinks");

    let mut b = Vec::new();
    tar_raw(&mut b, b"passwd", T::Link, b"/etc/passwd", b"");
    tar(
        "tar_hardlink_etc_passwd",
        b,
        json!({}),
        "hardlink `passwd` → `/etc/passwd`: its target has an absolute name",
    );

    let mut b = Vec::new();
    tar_raw(&mut b, b"s", T::Link, secret.as_bytes(), b"");
    tar("tar_hardlink_sentinel", b, json!({}), "hardlink `s` →");

    let mut b = Vec::new();
    tar_raw(&mut b, b"up", T::Link, b"../../sentinel/secret", b"");
    tar(
        "tar_hardlink_dotdot",
        b,
        json!({}),
        "leaves the destination",
    );

    let mut b = Vec::new();
    tar_raw(&mut b, b"early", T::Link, b"later.txt", b"");
    tar_raw(&mut b, b"later.txt", T::Regular, b"", b"x\n");
    tar(
        "tar_hardlink_to_nothing",
        b,
        json!({}),
        "hardlink `early` → `later.txt` does not point at a regular file extracted before it",
    );

    let mut b = Vec::new();
    tar_raw(&mut b, b"link", T::Symlink, b"sub", b"");
    tar_raw(&mut b, b"hl", T::Link, b"link", b"");
    tar(
        "tar_hardlink_to_symlink",
        b,
        json!({}),
        "does not point at a regular file",
    );

    let mut b = Vec::new();
    tar_raw(&mut b, b"dev/null", T::Char, b"", b"");
    tar(
        "tar_char_device",
        b,
        json!({}),
        "entry `dev/null` is a character device: device and fifo entries are refused",
    );

    let mut b = Vec::new();
    tar_raw(&mut b, b"disk", T::Block, b"", b"");
    tar(
        "tar_block_device",
        b,
        json!({}),
        "entry `disk` is a block device",
    );

    let mut b = Vec::new();
    tar_raw(&mut b, b"pipe", T::Fifo, b"", b"");
    tar("tar_fifo", b, json!({}), "entry `pipe` is a fifo");

    let mut b = Vec::new();
    for i in 0..150 {
        tar_raw(&mut b, format!("f{i}").as_bytes(), T::Regular, b"", b"");
    }
    tar(
        "tar_entry_count_bomb",
        b,
        json!({"max_entries": 100}),
        "the archive has more than 100 entries (max_entries)",
    );

    // Bytes written: three incompressible 1 MiB files against a 2 MiB cap.
    let mut b = Vec::new();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..3 {
        let data: Vec<u8> = (0..1 << 20)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        tar_raw(
            &mut b,
            format!("r{i}.bin").as_bytes(),
            T::Regular,
            b"",
            &data,
        );
    }
    tar(
        "tar_total_bytes",
        b,
        json!({"max_total_bytes": 2_000_000}),
        "extraction stopped at entry `r1.bin`: it would write more than 2000000 bytes (max_total_bytes)",
    );

    let mut b = Vec::new();
    tar_raw(&mut b, b"a.txt", T::Regular, b"", b"1\n");
    tar_raw(&mut b, b"a.txt", T::Regular, b"", b"2\n");
    tar(
        "tar_duplicate",
        b,
        json!({}),
        "entry `a.txt` appears more than once in the archive",
    );

    // A gzip bomb: 64 MiB of zeros in a tar.gz of about 64 KiB.
    let mut b = Vec::new();
    tar_raw(&mut b, b"zeros.bin", T::Regular, b"", &vec![0u8; 64 << 20]);
    cases.push(Hostile {
        id: "tgz_bomb",
        file: "bomb.tar.gz",
        bytes: gzip(&tar_end(b)),
        extra: json!({}),
        error: "refused as a decompression bomb",
    });

    // Zip.
    let zip_case = |id, bytes, extra, error| Hostile {
        id,
        file: "x.zip",
        bytes,
        extra,
        error,
    };
    cases.push(zip_case(
        "zip_dotdot",
        zip_of(&[
            ("ok.txt", None, b"ok"),
            ("../../sentinel/zip.txt", None, b"pwned"),
        ]),
        json!({}),
        "entry `../../sentinel/zip.txt` leaves the destination",
    ));
    cases.push(zip_case(
        "zip_absolute",
        zip_of(&[(abs.as_str(), None, b"pwned")]),
        json!({}),
        "has an absolute name",
    ));
    cases.push(zip_case(
        "zip_backslash",
        zip_of(&[("..\\..\\sentinel\\zip.txt", None, b"pwned")]),
        json!({}),
        "has a backslash",
    ));
    cases.push(zip_case(
        "zip_drive",
        zip_of(&[("C:/Windows/evil.dll", None, b"pwned")]),
        json!({}),
        "Windows drive",
    ));
    let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
    z.add_symlink(
        "l",
        "../../sentinel",
        zip::write::SimpleFileOptions::default(),
    )
    .unwrap();
    z.start_file("l/through.txt", zip::write::SimpleFileOptions::default())
        .unwrap();
    z.write_all(b"pwned").unwrap();
    cases.push(zip_case(
        "zip_symlink_escape",
        z.finish().unwrap().into_inner(),
        json!({}),
        "symlink `l` → `../../sentinel` leaves the destination",
    ));
    cases.push(zip_case(
        "zip_fifo",
        zip_of(&[("pipe", Some(0o010_644 << 16), b"")]),
        json!({}),
        "entry `pipe` is a fifo",
    ));
    cases.push(zip_case(
        "zip_char_device",
        zip_of(&[("tty", Some(0o020_644 << 16), b"")]),
        json!({}),
        "entry `tty` is a character device",
    ));
    // A zip bomb: 50 MiB of zeros deflated to about 50 KiB.
    cases.push(zip_case(
        "zip_bomb",
        zip_of(&[("zeros.bin", None, &vec![0u8; 50 << 20])]),
        json!({}),
        "the archive expands to more than 200 times its size",
    ));
    cases.push(zip_case(
        "zip_bomb_own_ratio",
        zip_of(&[("zeros.bin", None, &vec![0u8; 4 << 20])]),
        json!({"max_ratio": 10}),
        "more than 10 times its size",
    ));
    // The header says 10 bytes; the data inflates to 2 MiB.
    cases.push(zip_case(
        "zip_size_lie",
        zip_lie_about_size(zip_of(&[("small.txt", None, &vec![b'a'; 2 << 20])]), 10),
        json!({}),
        "entry `small.txt` holds more data than its header declares (10 bytes)",
    ));
    let many: Vec<(String, Option<u32>, &[u8])> = (0..150)
        .map(|i| (format!("f{i}"), None, &b""[..]))
        .collect();
    let many: Vec<(&str, Option<u32>, &[u8])> =
        many.iter().map(|(n, a, d)| (n.as_str(), *a, *d)).collect();
    cases.push(zip_case(
        "zip_entry_count_bomb",
        zip_of(&many),
        json!({"max_entries": 100}),
        "more than 100 entries (max_entries)",
    ));

    let mut steps = Vec::new();
    for c in &cases {
        let dir = env.ws.join("hostile").join(c.id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(c.file), &c.bytes).unwrap();
        let mut params = json!({
            "operation": "extract",
            "archive_path": format!("hostile/{}/{}", c.id, c.file),
            "destination": format!("dest/{}", c.id),
        });
        for (k, v) in c.extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        steps.push(json!({"id": c.id, "params": params}));
    }
    let report = run_steps(&env, &steps, None);
    // Every case is checked before failing, so one run shows every rule that broke.
    let mut wrong: Vec<String> = Vec::new();
    for c in &cases {
        let s = step(&report, c.id);
        let err = s["error"].as_str().unwrap_or("");
        if s["status"] != "failed" || !err.contains(c.error) {
            wrong.push(format!(
                "{}: status {}, error `{err}` should contain `{}`",
                c.id, s["status"], c.error
            ));
            continue;
        }
        let r = result(&env, c.id);
        if r["success"] != false || r["destination_unchanged"] != true || r["error"] != s["error"] {
            wrong.push(format!("{}: result {r:#}", c.id));
        }
        if env.ws.join("dest").join(c.id).exists() {
            wrong.push(format!(
                "{}: the refused archive left its destination behind",
                c.id
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Nothing anywhere outside the destinations: the sentinel is as it was,
    // and nothing was written beside the workspace.
    let mut outside: Vec<String> = std::fs::read_dir(&sentinel)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    outside.sort();
    assert_eq!(outside, ["secret"]);
    assert_eq!(
        std::fs::read_to_string(sentinel.join("secret")).unwrap(),
        "keep me\n"
    );
    let beside: Vec<String> = std::fs::read_dir(env.ws.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !["ws", "out", "sentinel", "archive-plan.yaml"].contains(&n.as_str()))
        .collect();
    assert!(
        beside.is_empty(),
        "written beside the workspace: {beside:?}"
    );
    assert!(
        !env.ws.join("dest").exists()
            || std::fs::read_dir(env.ws.join("dest"))
                .unwrap()
                .next()
                .is_none()
    );
}

#[test]
fn existing_symlinks_in_the_destination_are_not_followed_out() {
    let env = Env::new();
    let sentinel = env.ws.parent().unwrap().join("sentinel");
    std::fs::create_dir_all(&sentinel).unwrap();
    // The destination already holds a symlink to outside the workspace.
    std::fs::create_dir_all(env.ws.join("dest")).unwrap();
    std::os::unix::fs::symlink(&sentinel, env.ws.join("dest/out")).unwrap();
    std::os::unix::fs::symlink("out", env.ws.join("dest/alias")).unwrap();
    use tar::EntryType as T;
    let mut b = Vec::new();
    tar_raw(&mut b, b"out/file.txt", T::Regular, b"", b"pwned\n");
    write_bytes(&env, "through_dir.tar", &tar_end(b));
    let mut b = Vec::new();
    tar_raw(&mut b, b"l", T::Symlink, b"out/x", b"");
    write_bytes(&env, "link_via_existing.tar", &tar_end(b));
    let mut b = Vec::new();
    tar_raw(&mut b, b"l2", T::Symlink, b"alias/x", b"");
    write_bytes(&env, "link_via_two_existing.tar", &tar_end(b));
    // overwrite replaces the symlink itself, never what it points at.
    let mut b = Vec::new();
    tar_raw(&mut b, b"out", T::Regular, b"", b"replaced\n");
    write_bytes(&env, "replace_link.tar", &tar_end(b));
    let steps = [
        json!({"id": "through_dir", "params": {"operation": "extract", "archive_path": "through_dir.tar", "destination": "dest"}}),
        json!({"id": "link_via_existing", "params": {"operation": "extract", "archive_path": "link_via_existing.tar", "destination": "dest"}}),
        json!({"id": "link_via_two_existing", "params": {"operation": "extract", "archive_path": "link_via_two_existing.tar", "destination": "dest"}}),
        json!({"id": "replace_no_overwrite", "params": {"operation": "extract", "archive_path": "replace_link.tar", "destination": "dest"}}),
        json!({"id": "replace_link", "params": {"operation": "extract", "archive_path": "replace_link.tar", "destination": "dest", "overwrite": true}}),
    ];
    let report = run_steps(&env, &steps, None);
    let err = |id: &str| step(&report, id)["error"].as_str().unwrap_or("").to_owned();
    assert!(
        err("through_dir")
            .contains("`out` is a symlink in the destination: refusing to extract into it"),
        "{}",
        err("through_dir")
    );
    assert!(
        err("link_via_existing")
            .contains("leaves the destination through its existing symlink `out`"),
        "{}",
        err("link_via_existing")
    );
    assert!(
        err("link_via_two_existing").contains("existing symlink `out`"),
        "{}",
        err("link_via_two_existing")
    );
    assert!(
        err("replace_no_overwrite").contains("`out` already exists in the destination"),
        "{}",
        err("replace_no_overwrite")
    );
    assert_eq!(step(&report, "replace_link")["status"], "success");
    assert!(std::fs::read_dir(&sentinel).unwrap().next().is_none());
    assert_eq!(
        std::fs::read_to_string(env.ws.join("dest/out")).unwrap(),
        "replaced\n"
    );
}

#[test]
fn list_reports_what_extract_would_refuse() {
    let env = Env::new();
    use tar::EntryType as T;
    let mut b = Vec::new();
    tar_raw(&mut b, b"fine.txt", T::Regular, b"", b"hello\n");
    tar_raw(&mut b, b"../up.txt", T::Regular, b"", b"x\n");
    tar_raw(&mut b, b"l", T::Symlink, b"/etc", b"");
    tar_raw(&mut b, b"p", T::Fifo, b"", b"");
    write_bytes(&env, "mixed.tar", &tar_end(b));
    let steps = [json!({"id": "ls", "params": {"operation": "list", "archive_path": "mixed.tar"}})];
    let report = run_steps(&env, &steps, None);
    assert_eq!(step(&report, "ls")["status"], "success");
    assert_eq!(step(&report, "ls")["risk"]["effective"], "safe");
    let r = result(&env, "ls");
    assert_eq!(strings(&r["files"]), ["../up.txt", "fine.txt", "l", "p"]);
    assert_eq!(r["total_size"], 8);
    let w = strings(&r["warnings"]).join("\n");
    for needle in [
        "entry `../up.txt` leaves the destination",
        "symlink `l` → `/etc` leaves the destination",
        "entry `p` is a fifo",
    ] {
        assert!(w.contains(needle), "{needle} not in {w}");
    }
    assert!(!env.ws.join("up.txt").exists() && !env.ws.parent().unwrap().join("up.txt").exists());
}

#[test]
fn a_gzip_bomb_is_refused_by_list_too() {
    let env = Env::new();
    let mut b = Vec::new();
    tar_raw(
        &mut b,
        b"zeros.bin",
        tar::EntryType::Regular,
        b"",
        &vec![0u8; 32 << 20],
    );
    write_bytes(&env, "bomb.tgz", &gzip(&tar_end(b)));
    let steps = [json!({"id": "ls", "params": {"operation": "list", "archive_path": "bomb.tgz"}})];
    let report = run_steps(&env, &steps, None);
    assert!(
        step(&report, "ls")["error"]
            .as_str()
            .unwrap()
            .contains("decompression bomb"),
        "{:#}",
        step(&report, "ls")
    );
}

#[test]
fn archive_create_stops_at_its_timeout_and_leaves_no_archive() {
    let env = Env::new();
    // 2 GiB of holes: instant to make, slow to bzip2. Ignored by the run's
    // workspace snapshot (which respects .gitignore; archive does not).
    env.write(".gitignore", "big/\n");
    env.write("big/small.txt", "x\n");
    std::fs::File::create(env.ws.join("big/sparse.bin"))
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let steps = [
        json!({"id": "pack", "params": {"operation": "create", "archive_path": "big.tar.bz2", "source_paths": ["big"]}}),
    ];
    let started = std::time::Instant::now();
    let report = run_steps(&env, &steps, Some(1.0));
    assert_eq!(step(&report, "pack")["status"], "timed_out", "{report:#}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert!(!env.ws.join("big.tar.bz2").exists());
    let mut left: Vec<_> = std::fs::read_dir(&env.ws)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [".gitignore", "big"],
        "no temporary archive left behind"
    );
}

#[test]
fn archive_validate_shows_each_operations_risk() {
    let env = Env::new();
    let p = env.write(
        "plan.yaml",
        "version: 1\nid: v\nsteps:\n  - {id: ls, tool: archive, parameters: {operation: list, archive_path: a.zip}}\n  - {id: mk, tool: archive, parameters: {operation: create, archive_path: a.zip, source_paths: [src], overwrite: true}}\n  - {id: ex, tool: archive, parameters: {operation: extract, archive_path: a.zip, destination: out}}\n",
    );
    let o = env.cmd().args(["validate"]).arg(&p).output().unwrap();
    // The writing operations need approvals at tolerance low: exit 3, as run would.
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "archive list only reads `a.zip`",
        "archive create writes `a.zip` inside the workspace, replacing it if it exists (overwrite: true)",
        "archive extract writes into `out` inside the workspace",
    ] {
        assert!(out.contains(needle), "{needle} not in {out}");
    }
}

#[test]
fn special_mode_bits_are_dropped_and_long_lists_are_capped() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let mut b = Vec::new();
    let mut h = tar::Header::new_gnu();
    h.set_path("suid.sh").unwrap();
    h.set_entry_type(tar::EntryType::Regular);
    h.set_mode(0o6777);
    h.set_size(3);
    h.set_cksum();
    b.extend_from_slice(h.as_bytes());
    b.extend_from_slice(b"ok\n");
    b.resize(1024, 0);
    write_bytes(&env, "suid.tar", &tar_end(b));
    // 10 050 empty entries: list keeps the first 10 000 names, counts them all.
    let mut b = Vec::new();
    for i in 0..10_050 {
        tar_raw(
            &mut b,
            format!("f{i:05}").as_bytes(),
            tar::EntryType::Regular,
            b"",
            b"",
        );
    }
    write_bytes(&env, "many.tar", &tar_end(b));
    let steps = [
        json!({"id": "suid", "params": {"operation": "extract", "archive_path": "suid.tar", "destination": "d"}}),
        json!({"id": "many", "params": {"operation": "list", "archive_path": "many.tar"}}),
    ];
    let report = run_steps(&env, &steps, None);
    assert_eq!(step(&report, "suid")["status"], "success");
    let r = result(&env, "suid");
    assert!(
        strings(&r["warnings"])
            .iter()
            .any(|w| w.contains("setuid/setgid/sticky bits dropped from 1 file")),
        "{r:#}"
    );
    let mode = std::fs::metadata(env.ws.join("d/suid.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o755);
    let r = result(&env, "many");
    assert_eq!(r["files_processed"], 10_050);
    assert_eq!(r["files_truncated"], true);
    let files = strings(&r["files"]);
    assert_eq!(files.len(), 10_000);
    assert_eq!(files[0], "f00000");
    assert_eq!(files[9_999], "f09999");
}

#[test]
fn two_archives_cannot_combine_into_a_link_that_leaves_the_workspace() {
    let env = Env::new();
    use tar::EntryType as T;
    // Alone, each is fine: `d/p → x/../..` resolves to the workspace while
    // `d/x` does not exist; `d/x → .` is `d` itself.
    let mut b = Vec::new();
    tar_raw(&mut b, b"d/", T::Directory, b"", b"");
    tar_raw(&mut b, b"d/p", T::Symlink, b"x/../..", b"");
    write_bytes(&env, "first.tar", &tar_end(b));
    let mut b = Vec::new();
    tar_raw(&mut b, b"d/x", T::Symlink, b".", b"");
    write_bytes(&env, "second.tar", &tar_end(b));
    let steps = [
        json!({"id": "first", "params": {"operation": "extract", "archive_path": "first.tar", "destination": "."}}),
        json!({"id": "second", "params": {"operation": "extract", "archive_path": "second.tar", "destination": "."}}),
    ];
    let report = run_steps(&env, &steps, None);
    assert_eq!(step(&report, "first")["status"], "success");
    let err = step(&report, "second")["error"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(
        err.contains("the existing symlink `d/p` would resolve outside the workspace"),
        "{err}"
    );
    assert!(
        env.ws.join("d/x").symlink_metadata().is_err(),
        "nothing moved in"
    );
}

#[test]
fn sparse_holes_count_against_max_ratio_and_duplicate_zip_names_are_refused() {
    let env = Env::new();
    // A GNU sparse entry: 99 bytes of data standing for 300 MiB.
    let real: u64 = 300 << 20;
    let mut h = tar::Header::new_gnu();
    h.set_path("sparse.bin").unwrap();
    h.set_entry_type(tar::EntryType::GNUSparse);
    h.set_size(99);
    h.set_mode(0o644);
    h.set_mtime(0);
    {
        let g = h.as_gnu_mut().unwrap();
        g.sparse[0].set_offset(real - 99);
        g.sparse[0].set_length(99);
        g.set_real_size(real);
    }
    h.set_cksum();
    let mut b = h.as_bytes().to_vec();
    b.extend_from_slice(&[b'x'; 99]);
    b.resize(b.len().div_ceil(512) * 512, 0);
    write_bytes(&env, "sparse.tar", &tar_end(b));
    // Two central-directory entries of one name (written as two names, then renamed).
    let mut z = zip_of(&[("a.txt", None, b"first\n"), ("b.txt", None, b"second\n")]);
    let mut i = 0;
    while i + 5 <= z.len() {
        if &z[i..i + 5] == b"b.txt" {
            z[i] = b'a';
        }
        i += 1;
    }
    write_bytes(&env, "dup.zip", &z);
    let steps = [
        json!({"id": "sparse", "params": {"operation": "extract", "archive_path": "sparse.tar", "destination": "sp"}}),
        json!({"id": "dup", "params": {"operation": "extract", "archive_path": "dup.zip", "destination": "dup", "overwrite": true}}),
        json!({"id": "dup_list", "params": {"operation": "list", "archive_path": "dup.zip"}}),
    ];
    let report = run_steps(&env, &steps, Some(120.0));
    let err = |id: &str| step(&report, id)["error"].as_str().unwrap_or("").to_owned();
    assert!(err("sparse").contains("max_ratio"), "{}", err("sparse"));
    assert!(
        err("sparse").contains("sparse holes counted"),
        "{}",
        err("sparse")
    );
    assert!(!env.ws.join("sp/sparse.bin").exists());
    assert!(
        err("dup").contains("names one entry more than once"),
        "{}",
        err("dup")
    );
    assert!(!env.ws.join("dup/a.txt").exists());
    assert!(
        err("dup_list").contains("names one entry more than once"),
        "{}",
        err("dup_list")
    );
}
