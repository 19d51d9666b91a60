//! The `archive` tool's parameters as written (design 002, 2.6) and its checked action.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;

/// Archive operations (design 002, 2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ArchiveOperation {
    /// Pack `source_paths` into `archive_path`.
    Create,
    /// Unpack `archive_path` into `destination`, refusing anything that would escape it.
    Extract,
    /// List the entries.
    List,
}

/// Compression of a tar archive (zip entries are deflated).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// Plain tar.
    None,
    /// gzip.
    Gzip,
    /// bzip2.
    Bz2,
}

/// Archive formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ArchiveFormat {
    /// tar (with `compression`).
    Tar,
    /// zip.
    Zip,
}

/// Parameters of `archive` (design 002, 2.6).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveParams {
    /// create | extract | list.
    pub operation: ArchiveOperation,
    /// The archive, relative to the workspace.
    #[schemars(length(min = 1))]
    pub archive_path: String,
    /// What to pack (`create`), relative to the workspace.
    #[serde(default)]
    pub source_paths: Vec<String>,
    /// Where to unpack (`extract`), relative to the workspace. Default: beside the archive.
    #[serde(default)]
    pub destination: Option<String>,
    /// zip or tar. Default: from the archive's extension (`.zip`, `.tar`, `.tar.gz`, `.tgz`, `.tar.bz2`, `.tbz2`).
    #[serde(default)]
    pub format: Option<ArchiveFormat>,
    /// Compression of a tar (`none`, `gzip`, `bz2`); for a zip `none` stores and `gzip` deflates.
    /// Default: from the archive's content (extract, list) or extension, else gzip.
    #[serde(default)]
    pub compression: Option<Compression>,
    /// Globs of paths to leave out (create and extract). A path is left out when a pattern
    /// matches it, one of its parent directories or one of its names: `*.log`, `node_modules`, `build/**`.
    #[serde(default)]
    pub exclude_patterns: Vec<String>,
    /// Replace existing files (the archive for create, files in the destination for extract).
    /// Default false: an existing file is an error and nothing is written.
    #[serde(default)]
    pub overwrite: bool,
    /// Most bytes written by an extraction (counted as written, not as declared); a compressed
    /// tar may also not expand past it plus a quarter and 64 MiB (headers, skipped entries). Default 1 GiB.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_total_bytes: Option<u64>,
    /// Most entries in an archive (extract and list). Default 100 000.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_entries: Option<u64>,
    /// Highest expansion accepted: bytes the archive expands to / its size on disk, checked once
    /// it has expanded past 1 MiB (extract and list of a tar). Default 200.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_ratio: Option<u64>,
    /// Print the result (file list included) on stderr when the step ends.
    #[serde(default)]
    pub show_cli: bool,
}

impl ArchiveFormat {
    /// The name used in results and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            ArchiveFormat::Tar => "tar",
            ArchiveFormat::Zip => "zip",
        }
    }

    /// The format (and, for a tar, the compression) an archive's file name
    /// implies: `.zip`, `.tar`, `.tar.gz`/`.tgz`, `.tar.bz2`/`.tbz2`/`.tbz`.
    pub fn from_name(name: &str) -> Option<(ArchiveFormat, Option<Compression>)> {
        let n = name.to_ascii_lowercase();
        if n.ends_with(".zip") {
            Some((ArchiveFormat::Zip, None))
        } else if n.ends_with(".tar") {
            Some((ArchiveFormat::Tar, Some(Compression::None)))
        } else if n.ends_with(".tar.gz") || n.ends_with(".tgz") {
            Some((ArchiveFormat::Tar, Some(Compression::Gzip)))
        } else if n.ends_with(".tar.bz2") || n.ends_with(".tbz2") || n.ends_with(".tbz") {
            Some((ArchiveFormat::Tar, Some(Compression::Bz2)))
        } else {
            None
        }
    }
}

impl Compression {
    /// The name used in results and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Bz2 => "bz2",
        }
    }
}

/// A checked `archive` step.
#[derive(Debug, Clone)]
pub struct ArchiveAction {
    /// The archive, relative to the workspace.
    pub archive: PathBuf,
    /// What to pack (create), relative to the workspace (empty path: the workspace).
    pub sources: Vec<PathBuf>,
    /// Where to unpack (extract), relative to the workspace.
    pub destination: Option<PathBuf>,
    /// The parameters as written.
    pub params: ArchiveParams,
}

impl ArchiveAction {
    /// Where `extract` writes, relative to the workspace: `destination`, else the archive's directory.
    pub fn destination_or_parent(&self) -> PathBuf {
        self.destination.clone().unwrap_or_else(|| {
            self.archive
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default()
        })
    }
}
