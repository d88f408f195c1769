//! Walking the sources (docs/design/context.md#context-collection): resolving each path lexically inside
//! the context root, refusing links, ignored folders and likely secrets before a file is
//! opened, expanding directories through include/exclude globs and the `.gitignore` /
//! `.ignore` files of the tree (the `ignore` crate, ripgrep's walker), and recording every
//! skipped path with its reason.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use globset::{Glob, GlobSet, GlobSetBuilder};
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::decode::read_text;
use super::redact;
use super::sensitive::is_sensitive;
use super::Redaction;
use crate::error::{Error, Result};
use crate::io::os_error;
use crate::model::{ContextDocument, ContextSource, DocumentSource, SkippedPath, SourceType};
use crate::text::sanitise;

/// Folders never walked into (docs/design/context.md#context-collection).
pub(crate) const IGNORED_DIRS: [&str; 10] = [
    ".git",
    "node_modules",
    "venv",
    ".venv",
    "target",
    "__pycache__",
    ".mypy_cache",
    ".tox",
    "dist",
    "build",
];

/// The tool's own default run and report folders: never walked when directly under the context
/// root (docs/design/context.md#context-collection).
pub(crate) const TOOL_DIRS: [&str; 2] = ["runs", "reports"];

/// A run folder of `meeting` (docs/design/run-folder.md#run-folder) holds both of these, wherever it is.
const RUN_FOLDER_MARKERS: [&str; 2] = ["meeting.json", ".lock"];

/// At most this many `skipped` warnings per source; the rest are counted in one line.
pub(crate) const MAX_SKIP_WARNINGS: usize = 20;

/// The `reason` strings of `skipped_paths`.
pub(crate) mod reason {
    pub const NOT_FOUND: &str = "not found";
    pub const SYMLINK: &str = "symlink";
    pub const BINARY: &str = "binary";
    pub const OUTSIDE_ROOT: &str = "outside context root";
    pub const SENSITIVE: &str = "sensitive";
    pub const DUPLICATE: &str = "duplicate";
    /// The files of a directory source past its `max_files`, counted on one line rather than
    /// listed: a source over a huge folder must not fill every board and the report.
    pub fn max_files(more: usize, max: usize) -> String {
        format!("{more} more files not collected (max_files {max})")
    }
    pub const IGNORED: &str = "ignored directory";
    /// Inside a run folder of `meeting`, or `runs/` / `reports/` under the context root.
    pub const TOOL_OUTPUT: &str = "agent-meeting output";
    pub const NOT_A_DIRECTORY: &str = "not a directory";
    pub const NOT_UTF8: &str = "its name is not UTF-8";
    /// Followed by `: <os error>`.
    pub const UNREADABLE: &str = "unreadable";
    /// A name that would act on a terminal or read otherwise than it says
    /// (docs/design/context.md#context-collection).
    pub const UNSAFE_NAME: &str = "its name holds control or invisible characters";
}

/// One collection run: the documents and skipped paths so far, in source order.
pub(crate) struct Collector {
    /// Canonical context root.
    root: PathBuf,
    /// Canonical base folder.
    base: PathBuf,
    allow_sensitive: bool,
    /// Redact secrets in excerpts (`--no-redact` turns it off).
    redact: bool,
    documents: Vec<ContextDocument>,
    /// What was redacted, per document, in document order.
    redacted: Vec<Redaction>,
    skipped: Vec<SkippedPath>,
    /// Root-relative paths already collected or tried, for the `duplicate` rule.
    seen: HashSet<String>,
    /// One stderr line per skipped path (capped per source), in order.
    warnings: Vec<String>,
    /// Most characters read of a file whose source sets no `max_chars_per_file`: the context
    /// budget (no document can be shown longer).
    read_cap: usize,
}

/// A source path resolved inside the root: its root-relative components, all checked not to
/// be symlinks, so `root.join(rel)` is canonical.
struct Resolved {
    rel: Vec<String>,
    meta: fs::Metadata,
}

impl Collector {
    /// `root` and `base` are canonical folders; `base` is where written paths resolve from.
    pub(crate) fn new(
        root: PathBuf,
        base: PathBuf,
        allow_sensitive: bool,
        redact: bool,
        read_cap: usize,
    ) -> Collector {
        Collector {
            root,
            base,
            allow_sensitive,
            redact,
            read_cap,
            documents: Vec::new(),
            redacted: Vec::new(),
            skipped: Vec::new(),
            seen: HashSet::new(),
            warnings: Vec::new(),
        }
    }

    /// The documents collected, the paths skipped, what was redacted, and the warning lines
    /// about the skipped paths, in the order they were met.
    pub(crate) fn finish(
        self,
    ) -> (
        Vec<ContextDocument>,
        Vec<SkippedPath>,
        Vec<Redaction>,
        Vec<String>,
    ) {
        (self.documents, self.skipped, self.redacted, self.warnings)
    }

    /// Record a skipped path, shown with [`safe_name`]: it reaches stderr, the packet and the
    /// boards, and foreign text is cleaned where it enters (docs/design/context.md#context-collection).
    fn skip(&mut self, path: impl AsRef<str>, reason: impl AsRef<str>) {
        self.skipped.push(SkippedPath {
            path: safe_name(path.as_ref()),
            reason: safe_name(reason.as_ref()),
        });
    }

    /// Collect one source (`index` is its place in `context_sources`, for error paths; `None`
    /// for a `--doc`), and
    /// word a warning for each path it skipped: at most [`MAX_SKIP_WARNINGS`], then a count.
    pub(crate) fn source(&mut self, index: Option<usize>, source: &ContextSource) -> Result<()> {
        let first = self.skipped.len();
        let result = self.source_paths(index, source);
        let new = &self.skipped[first..];
        for s in new.iter().take(MAX_SKIP_WARNINGS) {
            self.warnings
                .push(format!("skipped {}: {}", s.path, s.reason));
        }
        if new.len() > MAX_SKIP_WARNINGS {
            self.warnings.push(format!(
                "and {} more skipped under {} (context_bundle.skipped_paths lists them)",
                new.len() - MAX_SKIP_WARNINGS,
                safe_name(&source.path)
            ));
        }
        result
    }

    fn source_paths(&mut self, index: Option<usize>, source: &ContextSource) -> Result<()> {
        let rel = match self.resolve(&source.path) {
            Ok(r) => r,
            // A source the meeting names is meant to be read: one outside the root is an
            // error that says which root would take it (docs/design/context.md#context-collection).
            Err((_, why)) if why == reason::OUTSIDE_ROOT && !source.optional => {
                let wanted = normalize(&self.base.join(&source.path));
                let common = self
                    .root
                    .ancestors()
                    .find(|a| wanted.starts_with(a))
                    .unwrap_or(Path::new("/"));
                let Some(index) = index else {
                    return Err(Error::Usage(format!(
                        "--doc {}: outside the context root {}; give --context-root {} (a folder holding both)",
                        source.path,
                        self.root.display(),
                        common.display()
                    )));
                };
                return Err(Error::input(
                    "",
                    format!("context_sources[{index}].path"),
                    format!(
                        "{:?} is outside the context root {}; give --context-root {} (a folder holding both), \
                         or add `optional: true` to the source to skip it",
                        source.path,
                        self.root.display(),
                        common.display()
                    ),
                ));
            }
            Err((shown, why)) => {
                self.skip(shown, why);
                return Ok(());
            }
        };
        let shown = display_rel(&rel);
        // A source that names an ignored folder (or something inside one) is recorded, unlike
        // the ones a directory walk prunes silently.
        let last_is_dir = fs::symlink_metadata(self.root.join(rel_path(&rel)))
            .map(|m| m.is_dir())
            .unwrap_or(false);
        let dirs = if last_is_dir || rel.is_empty() {
            &rel[..]
        } else {
            &rel[..rel.len() - 1]
        };
        if dirs.iter().any(|c| is_ignored_dir(c)) {
            self.skip(shown, reason::IGNORED);
            return Ok(());
        }
        let in_run_folder =
            (1..=dirs.len()).any(|n| is_run_folder(&self.root.join(rel_path(&dirs[..n]))));
        // The run folders, the `runs` and `reports` folders themselves and the reports; not
        // what else is kept below `runs/` (the pull request's diff a forge keeps there).
        let tool_output = match dirs.first() {
            Some(c) if c == "reports" => true,
            Some(c) if is_tool_dir(c) => rel.len() == 1,
            _ => false,
        };
        if in_run_folder || tool_output {
            self.skip(shown, reason::TOOL_OUTPUT);
            return Ok(());
        }
        if !self.allow_sensitive && is_sensitive(&rel) {
            self.skip(shown, reason::SENSITIVE);
            return Ok(());
        }
        let resolved = match self.check_components(&rel) {
            Ok(r) => r,
            Err(why) if why == reason::NOT_FOUND && !source.optional => {
                let Some(index) = index else {
                    return Err(Error::Usage(format!("--doc {}: not found", source.path)));
                };
                return Err(Error::input(
                    "",
                    format!("context_sources[{index}].path"),
                    format!(
                        "{:?} not found (relative paths start at the meeting file's folder); \
                         fix the path, or add `optional: true` to the source to skip it when missing",
                        source.path
                    ),
                ));
            }
            Err(why) => {
                self.skip(shown, why);
                return Ok(());
            }
        };
        match source.source_type {
            SourceType::File => self.file(resolved, DocumentSource::File, source),
            SourceType::Directory => self.directory(index, resolved, source)?,
        }
        Ok(())
    }

    /// Resolve a path as written against the base folder, lexically (never through a symlink),
    /// into root-relative components. Err carries what to show and the reason.
    fn resolve(&self, written: &str) -> Result<Vec<String>, (String, String)> {
        let joined = normalize(&self.base.join(written));
        if let Ok(rel) = joined.strip_prefix(&self.root) {
            return Ok(components(rel));
        }
        // Lexically outside; it may still land inside through a link above the root (e.g.
        // /tmp -> /private/tmp). Links inside the root are still refused by the component walk,
        // and a link as the last component is refused here.
        let outside = || (written.to_string(), reason::OUTSIDE_ROOT.to_string());
        let canonical = fs::canonicalize(&joined).map_err(|_| outside())?;
        let rel = canonical.strip_prefix(&self.root).map_err(|_| outside())?;
        if fs::symlink_metadata(&joined).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err((written.to_string(), reason::SYMLINK.to_string()));
        }
        Ok(components(rel))
    }

    /// Walk the components from the root without following links.
    fn check_components(&self, rel: &[String]) -> Result<Resolved, String> {
        let mut cur = self.root.clone();
        let mut meta = fs::symlink_metadata(&cur).map_err(|e| unreadable(&e))?;
        for c in rel {
            cur.push(c);
            meta = match fs::symlink_metadata(&cur) {
                Ok(m) => m,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(reason::NOT_FOUND.to_string())
                }
                Err(e) => return Err(unreadable(&e)),
            };
            if meta.file_type().is_symlink() {
                return Err(reason::SYMLINK.to_string());
            }
        }
        Ok(Resolved {
            rel: rel.to_vec(),
            meta,
        })
    }

    /// Read one file already cleared by the path rules.
    fn file(&mut self, r: Resolved, source_type: DocumentSource, source: &ContextSource) {
        let id = display_rel(&r.rel);
        // Checked before anything else, so such a name never becomes a document id.
        if safe_name(&id) != id {
            self.skip(id, reason::UNSAFE_NAME);
            return;
        }
        if !self.seen.insert(id.clone()) {
            self.skip(id, reason::DUPLICATE);
            return;
        }
        // Opening a FIFO would block and a device could be endless: only regular files are
        // opened. A directory is handed to the OS like a file, which refuses to read it
        // (EISDIR), so the reason is the system's own.
        if !(r.meta.is_file() || r.meta.is_dir()) {
            self.skip(id, format!("{}: not a regular file", reason::UNREADABLE));
            return;
        }
        let path = self.root.join(rel_path(&r.rel));
        let len = r.meta.is_file().then_some(r.meta.len());
        let max = source.max_chars_per_file.unwrap_or(self.read_cap);
        let read_max = if self.redact {
            max.saturating_add(redact::LOOKAHEAD_CHARS)
        } else {
            max
        };
        match fs::File::open(&path).and_then(|f| read_text(f, read_max, len)) {
            Ok(Some(text)) => {
                let (text, kinds) = if self.redact {
                    redact::redact_excerpt(text, max)
                } else {
                    (text, Vec::new())
                };
                if !kinds.is_empty() {
                    self.redacted.push(Redaction {
                        document_id: id.clone(),
                        kinds: kinds.clone(),
                    });
                }
                self.documents.push(ContextDocument {
                    document_id: id.clone(),
                    source_path: id,
                    source_type,
                    purpose: source.purpose.clone(),
                    excerpt: text.excerpt,
                    char_count: text.char_count,
                    shown_chars: None,
                    redactions: u32::try_from(kinds.len()).unwrap_or(u32::MAX),
                    readers: source.readers.clone(),
                })
            }
            Ok(None) => self.skip(id, reason::BINARY),
            Err(e) => self.skip(id, unreadable(&e)),
        }
    }

    fn directory(
        &mut self,
        index: Option<usize>,
        dir: Resolved,
        source: &ContextSource,
    ) -> Result<()> {
        let shown = display_rel(&dir.rel);
        if !dir.meta.is_dir() {
            self.skip(shown, reason::NOT_A_DIRECTORY);
            return Ok(());
        }
        // globset defaults: `*` also crosses `/`, so `*.md` matches at any depth, like `**/*.md`.
        let include = glob_set(index, "include", &source.include)?;
        let exclude = glob_set(index, "exclude", &source.exclude)?;
        let dir_path = self.root.join(rel_path(&dir.rel));

        let mut matches = self.walk(&dir_path, &shown, source, |rel| {
            (include.is_empty() || include.is_match(rel)) && !exclude.is_match(rel)
        });
        // Byte order of the normalised path, so the cut is the same on every machine. The cut
        // applies to glob matches (docs/design/context.md#context-collection), so a link or a secret that
        // matched takes a slot too: what `max_files` keeps never depends on file contents or
        // later checks.
        matches.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let cut = match (matches.len().checked_sub(source.max_files), source.keep) {
            (None | Some(0), _) => Vec::new(),
            (Some(_), crate::model::Keep::First) => matches.split_off(source.max_files),
            (Some(over), crate::model::Keep::Last) => {
                let kept = matches.split_off(over);
                std::mem::replace(&mut matches, kept)
            }
        };
        for (rel, is_link) in matches {
            let mut full = dir.rel.clone();
            full.extend(rel.split('/').map(str::to_string));
            let id = display_rel(&full);
            if is_link {
                self.skip(id, reason::SYMLINK);
                continue;
            }
            if !self.allow_sensitive && is_sensitive(&full) {
                self.skip(id, reason::SENSITIVE);
                continue;
            }
            match fs::symlink_metadata(self.root.join(rel_path(&full))) {
                Ok(meta) => self.file(
                    Resolved { rel: full, meta },
                    DocumentSource::DirectoryFile,
                    source,
                ),
                Err(e) => self.skip(id, unreadable(&e)),
            }
        }
        if !cut.is_empty() {
            self.skip(shown, reason::max_files(cut.len(), source.max_files));
        }
        Ok(())
    }

    /// The files under `dir_path` that `wanted` keeps, as (path relative to the source folder,
    /// `/`-separated; is it a link); an entry that cannot be read is skipped with its reason.
    fn walk(
        &mut self,
        dir_path: &Path,
        shown: &str,
        source: &ContextSource,
        wanted: impl Fn(&str) -> bool,
    ) -> Vec<(String, bool)> {
        let mut matches: Vec<(String, bool)> = Vec::new();
        let ignore_files = source
            .respect_gitignore
            .then(|| IgnoreFiles::new(self.root.clone()));
        let tool_dirs: Vec<PathBuf> = TOOL_DIRS.iter().map(|d| self.root.join(d)).collect();
        let mut walk = ignore::WalkBuilder::new(dir_path);
        // The walker's own ignore rules are off (they read the files above the context root,
        // and rank `.ignore` over `.gitignore` across folders): `IgnoreFiles` applies them.
        walk.standard_filters(false)
            .follow_links(false)
            .filter_entry(move |e| {
                if e.depth() == 0 {
                    return true;
                }
                let is_dir = e.file_type().is_some_and(|t| t.is_dir());
                if is_dir
                    && (is_ignored_dir(&e.file_name().to_string_lossy())
                        || tool_dirs.iter().any(|t| t == e.path())
                        || is_run_folder(e.path()))
                {
                    return false;
                }
                !ignore_files
                    .as_ref()
                    .is_some_and(|f| f.ignored(e.path(), is_dir))
            });
        for entry in walk.build() {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    let at = error_path(&e)
                        .and_then(|p| p.strip_prefix(&self.root).ok())
                        .map(|p| display_rel(&components(p)))
                        .unwrap_or_else(|| shown.to_string());
                    let why = match e.io_error() {
                        Some(io) => unreadable(io),
                        None => format!("{}: {e}", reason::UNREADABLE),
                    };
                    self.skip(at, why);
                    continue;
                }
            };
            let Some(file_type) = entry.file_type() else {
                continue;
            };
            if file_type.is_dir() {
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(dir_path) else {
                continue;
            };
            // A name that is no UTF-8 cannot be a document id: said so, shown lossy like other
            // odd names (never the file system's "not found" for a file that is there).
            if rel.to_str().is_none() {
                let at = entry.path().strip_prefix(&self.root).unwrap_or(rel);
                self.skip(at.to_string_lossy(), reason::NOT_UTF8);
                continue;
            }
            let rel = components(rel).join("/");
            if wanted(&rel) {
                matches.push((rel, file_type.is_symlink()));
            }
        }
        matches
    }
}

/// `name` with every character [`sanitise`] would change, and every line break or tab, as `?`:
/// one line, nothing that acts on a terminal or hides, and visibly not the real name
/// (docs/design/context.md#context-collection).
fn safe_name(name: &str) -> String {
    let mut buf = [0u8; 4];
    name.chars()
        .map(|c| {
            let one: &str = c.encode_utf8(&mut buf);
            if c.is_control() || sanitise(one) != one {
                '?'
            } else {
                c
            }
        })
        .collect()
}

fn unreadable(e: &io::Error) -> String {
    format!("{}: {}", reason::UNREADABLE, os_error(e))
}

/// `index`: the source's place in `context_sources`; `None` for a `--doc`, which has no globs.
fn glob_set(index: Option<usize>, field: &str, globs: &[String]) -> Result<GlobSet> {
    let index = index.unwrap_or_default();
    let mut b = GlobSetBuilder::new();
    for (j, g) in globs.iter().enumerate() {
        let glob = Glob::new(g).map_err(|e| {
            Error::input(
                "",
                format!("context_sources[{index}].{field}[{j}]"),
                format!("{g:?} is not a valid glob ({})", e.kind()),
            )
        })?;
        b.add(glob);
    }
    b.build().map_err(|e| {
        Error::input(
            "",
            format!("context_sources[{index}].{field}"),
            e.to_string(),
        )
    })
}

/// Resolve `.` and `..` without touching the file system (so no link is ever followed).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn components(rel: &Path) -> Vec<String> {
    rel.components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect()
}

fn rel_path(rel: &[String]) -> PathBuf {
    rel.iter().collect()
}

/// The root-relative, `/`-separated form used for ids and skipped paths (`.` for the root).
fn display_rel(rel: &[String]) -> String {
    if rel.is_empty() {
        ".".to_string()
    } else {
        rel.join("/")
    }
}

fn is_ignored_dir(name: &str) -> bool {
    IGNORED_DIRS.contains(&name)
}

fn is_tool_dir(name: &str) -> bool {
    TOOL_DIRS.contains(&name)
}

/// A run folder of `meeting`: it holds `meeting.json` and `.lock` (looked up, never opened).
fn is_run_folder(dir: &Path) -> bool {
    RUN_FOLDER_MARKERS
        .iter()
        .all(|m| fs::symlink_metadata(dir.join(m)).is_ok())
}

/// The `.ignore` and `.gitignore` files of the folders inside the context root, read once
/// each, as a walk meets them (docs/design/context.md#context-collection).
struct IgnoreFiles {
    root: PathBuf,
    folders: Mutex<HashMap<PathBuf, Arc<IgnoreFolder>>>,
}

struct IgnoreFolder {
    ignore: Gitignore,
    git: Gitignore,
    /// The folder holds `.git`: a repository's root, above which its `.gitignore` rules end.
    has_git: bool,
}

impl IgnoreFiles {
    fn new(root: PathBuf) -> IgnoreFiles {
        IgnoreFiles {
            root,
            folders: Mutex::new(HashMap::new()),
        }
    }

    fn folder(&self, dir: &Path) -> Arc<IgnoreFolder> {
        let mut folders = self.folders.lock().unwrap_or_else(|e| e.into_inner());
        folders
            .entry(dir.to_path_buf())
            .or_insert_with(|| {
                let matcher = |name: &str| {
                    let file = dir.join(name);
                    // Only a regular file is read (never through a link); unreadable files and
                    // malformed lines are passed over, as git does.
                    if !fs::symlink_metadata(&file).is_ok_and(|m| m.is_file()) {
                        return Gitignore::empty();
                    }
                    let mut b = GitignoreBuilder::new(dir);
                    let _ = b.add(file);
                    b.build().unwrap_or_else(|_| Gitignore::empty())
                };
                Arc::new(IgnoreFolder {
                    ignore: matcher(".ignore"),
                    git: matcher(".gitignore"),
                    has_git: fs::symlink_metadata(dir.join(".git")).is_ok(),
                })
            })
            .clone()
    }

    /// Whether the ignore files exclude `path`: the folders from its own up to the context
    /// root, innermost first; in each, `.ignore` before `.gitignore`; the first rule that
    /// matches decides (a `!` rule keeps the path). `.gitignore` files above a repository's
    /// root do not count.
    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        let mut git = true;
        let mut cur = path.parent();
        while let Some(dir) = cur {
            if !dir.starts_with(&self.root) {
                break;
            }
            let f = self.folder(dir);
            let mut m = f.ignore.matched(path, is_dir);
            if m.is_none() && git {
                m = f.git.matched(path, is_dir);
            }
            if m.is_ignore() {
                return true;
            }
            if m.is_whitelist() {
                return false;
            }
            git &= !f.has_git;
            cur = dir.parent();
        }
        false
    }
}

/// The path an `ignore` walk error is about, if it names one.
fn error_path(e: &ignore::Error) -> Option<&Path> {
    match e {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        ignore::Error::Loop { child, .. } => Some(child),
        _ => None,
    }
}
