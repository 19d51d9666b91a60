//! The workspace's existing symlinks after an extraction: a new link can
//! change where an existing one resolves (`d/p → x/../..` was dangling until
//! an archive adds `d/x → ..`). Before anything is moved into place, every
//! existing symlink of the workspace is resolved twice, as the tree is and as
//! it will be with the staged entries in place; one that stayed inside the
//! workspace and would leave it refuses the extraction.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::error::ArchiveError;
use super::names::show_path;
use crate::tools::Stop;

/// Most symlinks followed while resolving one target (as Linux's ELOOP).
const MAX_HOPS: u32 = 40;
/// Most workspace entries looked at for existing symlinks.
const MAX_WALK: u64 = 2_000_000;

/// What a path is, for resolution.
pub(super) enum Node {
    /// A symlink to this target.
    Link(Vec<u8>),
    /// Anything else, or nothing.
    Other,
}

/// What is at `rel` (relative to the workspace) on disk now.
fn on_disk(ws: &Path, rel: &Path) -> Node {
    let at = ws.join(rel);
    match fs::symlink_metadata(&at) {
        Ok(m) if m.file_type().is_symlink() => match fs::read_link(&at) {
            Ok(t) => Node::Link(t.as_os_str().as_bytes().to_vec()),
            Err(_) => Node::Other,
        },
        _ => Node::Other,
    }
}

/// The components a link's target resolves to (None: outside or a loop).
fn resolve_stack(
    view: &dyn Fn(&Path) -> Node,
    ws: &Path,
    stack: Vec<OsString>,
    target: &[u8],
) -> Option<Vec<OsString>> {
    let mut out = stack;
    let mut target = target;
    if target.first() == Some(&b'/') {
        let rest = target.strip_prefix(ws.as_os_str().as_bytes())?;
        out.clear();
        target = rest;
    }
    let mut hops = 0u32;
    for part in target.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                out.pop()?;
            }
            name => {
                out.push(OsStr::from_bytes(name).to_owned());
                let p: PathBuf = out.iter().collect();
                if let Node::Link(t) = view(&p) {
                    hops += 1;
                    if hops > MAX_HOPS {
                        return None;
                    }
                    out.pop();
                    out = resolve_stack(view, ws, out, &t)?;
                }
            }
        }
    }
    Some(out)
}

/// Every symlink under the workspace (not following any, `.git` and the
/// staging directory left out), relative to the workspace.
fn existing_links(
    ws: &Path,
    staging: &Path,
    stop: &Stop,
) -> Result<Vec<(PathBuf, Vec<u8>)>, ArchiveError> {
    let mut out = Vec::new();
    let mut todo = vec![PathBuf::new()];
    let mut seen = 0u64;
    while let Some(dir) = todo.pop() {
        let Ok(rd) = fs::read_dir(ws.join(&dir)) else {
            continue;
        };
        for e in rd.flatten() {
            seen += 1;
            if seen > MAX_WALK || stop.now() {
                return Err(ArchiveError::Limit(format!(
                    "the workspace has too many entries (more than {MAX_WALK}) to check its symlinks, or the step was stopped"
                )));
            }
            let rel = dir.join(e.file_name());
            let Ok(t) = e.file_type() else { continue };
            if t.is_symlink() {
                if let Ok(target) = fs::read_link(e.path()) {
                    out.push((rel, target.as_os_str().as_bytes().to_vec()));
                }
            } else if t.is_dir() && e.file_name() != ".git" && e.path() != staging {
                todo.push(rel);
            }
        }
    }
    Ok(out)
}

/// Refuse the extraction when an existing symlink that resolves inside the
/// workspace would resolve outside it once `staged` (paths relative to
/// `dest`, their link targets) is in place.
pub(super) fn check_existing(
    ws: &Path,
    dest: &Path,
    staging: &Path,
    staged: &dyn Fn(&Path) -> Option<Node>,
    stop: &Stop,
) -> Result<(), ArchiveError> {
    let dest_rel = dest.strip_prefix(ws).unwrap_or(Path::new("")).to_path_buf();
    let before = |p: &Path| on_disk(ws, p);
    let after = |p: &Path| {
        if let Ok(r) = p.strip_prefix(&dest_rel)
            && let Some(n) = staged(r)
        {
            return n;
        }
        on_disk(ws, p)
    };
    for (link, target) in existing_links(ws, staging, stop)? {
        let start: Vec<OsString> = link
            .parent()
            .unwrap_or(Path::new(""))
            .iter()
            .map(OsStr::to_owned)
            .collect();
        if resolve_stack(&after, ws, start.clone(), &target).is_some() {
            continue;
        }
        if resolve_stack(&before, ws, start, &target).is_some() {
            return Err(ArchiveError::Refused(format!(
                "the existing symlink `{}` would resolve outside the workspace through this archive's entries: refused",
                show_path(&link)
            )));
        }
    }
    Ok(())
}
