//! `collect-context` (docs/design/context.md#context-collection): turns a meeting's `context_sources` into a
//! `ContextBundle` of root-relative documents, the paths that were skipped and why, and a
//! bounded summary. This module loads the meeting file and resolves the options; `collect`
//! walks the sources under the path rules, `decode` reads one file as text, `summary` lays out
//! what the agents see.
//!
//! Everything here is deterministic and reads only what the rules allow: every exclusion
//! (outside the root, ignored folder, likely secret, symlink, duplicate) is decided before a
//! file is opened, and a file is streamed, so a 100 MB log costs its excerpt in memory, not
//! its size.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io::{os_error, parse_doc, read_text_file, Format};
use crate::model::{ContextBundle, MeetingInput};

mod collect;
mod decode;
mod redact;
mod sensitive;
mod summary;

pub use decode::{read_text, Text};
pub use redact::{redact, Redacted};
pub use summary::build_summary;

use collect::Collector;

/// Default of `--max-context-chars` where no model's input window is known.
pub const DEFAULT_MAX_CONTEXT_CHARS: usize = 24_000;

/// The most a window-sized context budget grows to: every call pays for it
/// (docs/design/context.md#context-budget).
pub const MAX_WINDOW_CONTEXT_CHARS: usize = 96_000;

/// The context budget of a meeting whose smallest input window is `tokens`: an eighth of it,
/// at four characters a token (the rest is the prompt, the whiteboard and the replies), between
/// [`DEFAULT_MAX_CONTEXT_CHARS`] and [`MAX_WINDOW_CONTEXT_CHARS`].
pub fn budget_for_window(tokens: u64) -> usize {
    let chars = usize::try_from(tokens.saturating_mul(4) / 8).unwrap_or(usize::MAX);
    chars.clamp(DEFAULT_MAX_CONTEXT_CHARS, MAX_WINDOW_CONTEXT_CHARS)
}

/// How to collect: where paths resolve from, what the root is, and the summary budget.
#[derive(Debug, Clone)]
pub struct CollectOptions {
    /// Folder relative source paths resolve against: the meeting file's folder, or
    /// `--base-dir` (default the working directory) for stdin input.
    pub base_dir: PathBuf,
    /// `--context-root`; `None` means the nearest ancestor of `base_dir` holding a `.git`
    /// entry, else `base_dir` itself.
    pub context_root: Option<PathBuf>,
    /// `--allow-sensitive`: collect likely secrets too.
    pub allow_sensitive: bool,
    /// `--max-context-chars`: the summary never exceeds this many characters.
    pub max_context_chars: usize,
    /// Replace secrets in excerpts by `[REDACTED:<kind>]` (on unless `--no-redact`).
    pub redact: bool,
    /// `--doc PATH[:READERS]`: files and folders collected after the meeting's own sources,
    /// under the same rules (docs/design/context.md#documents-on-the-command-line).
    pub docs: Vec<Doc>,
    /// The meeting's participants, when known (`meeting`): documents that do not fit the
    /// budget together are divided among them ([`summary::divide`]).
    pub participants: Vec<String>,
}

/// A document given on the command line (`--doc PATH[:agent,agent]`): its path (absolute) and
/// who reads it (empty: everyone).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Doc {
    pub path: PathBuf,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readers: Vec<String>,
}

impl Doc {
    /// `--doc`'s value: `PATH`, or `PATH:agent,agent` when PATH itself does not exist and what
    /// follows its last `:` is a list of names.
    pub fn parse(value: &str) -> Doc {
        let whole = || Doc {
            path: PathBuf::from(value),
            readers: Vec::new(),
        };
        if Path::new(value).exists() {
            return whole();
        }
        let Some((path, names)) = value.rsplit_once(':') else {
            return whole();
        };
        let name = |n: &str| {
            !n.is_empty()
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        };
        let readers: Vec<String> = names.split(',').map(|n| n.trim().to_string()).collect();
        if path.is_empty() || !readers.iter().all(|n| name(n)) {
            return whole();
        }
        Doc {
            path: PathBuf::from(path),
            readers,
        }
    }
}

/// Whether `path`, below `root`, is named like a file that holds secrets (`.env`, `id_rsa`,
/// `credentials.json`, anything under `.ssh/`, ...): the rule collect-context skips such files
/// by, for a file named some other way (the MCP server's `meeting_file`).
pub fn is_secret_path(path: &Path, root: &Path) -> bool {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let parts: Vec<String> = rel
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(p) => Some(p.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    sensitive::is_sensitive(&parts)
}

/// collect-context's settings as given (`cli::ContextArgs` settles to them; `meeting` keeps
/// them in `meeting.json` and passes them on): [`CollectOptions`] but the folder paths resolve
/// from.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextSettings {
    pub context_root: Option<PathBuf>,
    pub allow_sensitive: bool,
    /// `--no-redact`.
    pub no_redact: bool,
    /// `None`: [`DEFAULT_MAX_CONTEXT_CHARS`].
    pub max_context_chars: Option<usize>,
    /// `--doc PATH[:READERS]` (absolute).
    pub docs: Vec<Doc>,
    /// The meeting's participants (`meeting` knows them; `collect-context` alone does not).
    pub participants: Vec<String>,
}

impl ContextSettings {
    /// The options of a collection whose relative paths resolve against `base_dir`.
    pub fn options(&self, base_dir: PathBuf) -> CollectOptions {
        CollectOptions {
            base_dir,
            context_root: self.context_root.clone(),
            allow_sensitive: self.allow_sensitive,
            max_context_chars: self.max_context_chars.unwrap_or(DEFAULT_MAX_CONTEXT_CHARS),
            redact: !self.no_redact,
            docs: self.docs.clone(),
            participants: self.participants.clone(),
        }
    }
}

/// What was redacted from one document's excerpt: the kinds of its markers, in text order
/// (for the warning on stderr; the document itself records only the count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redaction {
    pub document_id: String,
    pub kinds: Vec<&'static str>,
}

impl Redaction {
    /// `3 secrets redacted (github-token, aws-access-key-id)`: the count and the distinct
    /// kinds in order of first appearance.
    pub fn describe(&self) -> String {
        let mut kinds: Vec<&str> = Vec::new();
        for k in &self.kinds {
            if !kinds.contains(k) {
                kinds.push(k);
            }
        }
        let n = crate::text::plural(self.kinds.len() as u64, "secret");
        format!("{n} redacted ({})", kinds.join(", "))
    }
}

impl CollectOptions {
    pub fn new(base_dir: impl Into<PathBuf>) -> CollectOptions {
        CollectOptions {
            base_dir: base_dir.into(),
            context_root: None,
            allow_sensitive: false,
            max_context_chars: DEFAULT_MAX_CONTEXT_CHARS,
            redact: true,
            docs: Vec::new(),
            participants: Vec::new(),
        }
    }
}

/// Where a meeting's input comes from: collect-context's `--topic`, `--meeting-file`, or a
/// MeetingInput document (stdin, JSON or YAML).
pub enum InputFrom {
    Topic(String),
    MeetingFile(PathBuf),
    Document { label: String, text: String },
}

/// The `collect-context` program: the meeting input, validated, its documents collected into
/// a packet; and one line for the user per skipped path and per document with secrets
/// redacted. Relative source paths resolve against a meeting file's folder, else against
/// `base_dir` (default: the working directory).
pub fn packet(
    from: InputFrom,
    base_dir: Option<PathBuf>,
    opts: impl FnOnce(PathBuf) -> CollectOptions,
) -> Result<(crate::model::MeetingPacket, Vec<String>)> {
    let cwd = || PathBuf::from(".");
    let base_dir = || base_dir.unwrap_or_else(cwd);
    // Errors about a source (a path not found, a bad glob) name the file that holds it.
    let mut label = String::new();
    let (input, base_dir) = match from {
        InputFrom::Topic(topic) => {
            let input = MeetingInput::from_topic(&topic);
            input
                .validate()
                .map_err(|e| Error::Usage(format!("--topic: {}", e.message)))?;
            (input, base_dir())
        }
        InputFrom::MeetingFile(file) => {
            let input = load_meeting_file(&file)?;
            label = file.display().to_string();
            let dir = match file.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => cwd(),
            };
            (input, dir)
        }
        InputFrom::Document { label: doc, text } => {
            label.clone_from(&doc);
            // JSON is tried as JSON so its errors read like JSON errors; anything else is YAML.
            let format = if text.trim_start().starts_with('{') {
                Format::Json
            } else {
                Format::Yaml
            };
            let input = parse_doc::<MeetingInput>(&doc, &text, format)?.settled();
            input.validate().map_err(|e| e.in_file(&doc))?;
            (input, base_dir())
        }
    };
    let opts = opts(base_dir);
    let mut input = input;
    // The meeting's own text reaches every prompt like a document does, so it passes the same
    // filter (docs/design/context.md#context-collection).
    let own = if opts.redact {
        redact::redact_input(&mut input)
    } else {
        Vec::new()
    };
    let (bundle, notes) = collect_with_notes(&input, &opts).map_err(|e| e.or_file(&label))?;
    let own = (!own.is_empty()).then(|| Redaction {
        document_id: INPUT_LABEL.to_string(),
        kinds: own,
    });
    let budget = opts.max_context_chars;
    let cut = bundle
        .documents
        .iter()
        .filter_map(|d| Some((d, d.shown_chars?)))
        .map(|(d, shown)| {
            format!(
                "{}: {}",
                d.document_id,
                shown_phrase(shown, d.char_count, budget)
            )
        })
        .collect::<Vec<_>>();
    let lines = notes
        .skipped
        .into_iter()
        .chain(
            own.iter()
                .chain(&notes.redactions)
                .map(|r| format!("{}: {}", r.document_id, r.describe())),
        )
        .chain(cut);
    let packet = crate::model::MeetingPacket {
        packet_version: crate::model::PACKET_VERSION,
        meeting_input: input,
        context_bundle: bundle,
    };
    Ok((packet, lines.collect()))
}

/// What the agents read of a document cut to fit the context budget
/// (docs/design/context.md#context-budget): "the agents read the first 12,000 of 40,960
/// characters", or that the budget left it out.
pub fn shown_phrase(shown: usize, of: usize, budget: usize) -> String {
    let n = |v: usize| crate::text::thousands(v as u64);
    if shown == 0 {
        return format!(
            "left out: the context budget ({} characters, --max-context-chars) had no room for it",
            n(budget)
        );
    }
    format!(
        "the agents read the first {} of {} characters (the context budget is {}, shared by the documents; --max-context-chars)",
        n(shown),
        n(of),
        n(budget)
    )
}

/// How `collect-context` names the meeting's own text (topic, brief, decision packet) when it
/// says what it redacted there.
pub const INPUT_LABEL: &str = "meeting topic, brief and decision packet";

/// Load and validate a meeting file (`.json`, `.yaml` or `.yml`); every error names the file
/// and, where there is one, the field path (exit 2).
pub fn load_meeting_file(path: &Path) -> Result<MeetingInput> {
    let label = path.display().to_string();
    let Some(format) = Format::from_path(path) else {
        return Err(Error::input(
            label,
            "",
            "expected a meeting file ending in .json, .yaml or .yml",
        ));
    };
    let text = read_text_file(path)?;
    let input = parse_doc::<MeetingInput>(&label, &text, format)?.settled();
    input.validate().map_err(|e| e.in_file(&label))?;
    Ok(input)
}

/// A `--doc PATH` as the source it stands for: a folder is read as a `directory` source with
/// its defaults (every file, `.gitignore` respected, the first 20), anything else as a file.
fn doc_source(doc: &Doc) -> crate::model::ContextSource {
    let path = &doc.path;
    let source_type = if path.is_dir() {
        crate::model::SourceType::Directory
    } else {
        crate::model::SourceType::File
    };
    crate::model::ContextSource {
        purpose: "given with --doc".into(),
        readers: doc.readers.clone(),
        ..crate::model::ContextSource::new(source_type, path.display().to_string())
    }
}

/// The nearest ancestor of `dir` (itself included) that holds a `.git` entry, else `dir`.
pub fn default_context_root(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|d| fs::symlink_metadata(d.join(".git")).is_ok())
        .unwrap_or(dir)
        .to_path_buf()
}

/// Collect every source of `input` into a bundle. Problems with single paths become
/// `skipped_paths` entries; only an unusable base folder or context root is an error.
pub fn collect(input: &MeetingInput, opts: &CollectOptions) -> Result<ContextBundle> {
    collect_with_notes(input, opts).map(|(bundle, _)| bundle)
}

/// What `collect-context` tells on stderr about a collection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CollectNotes {
    /// Which documents had secrets redacted, and of which kinds.
    pub redactions: Vec<Redaction>,
    /// One line per skipped path (`skipped docs/x.md: sensitive`), at most 20 per source and
    /// then `and N more skipped under <source>`.
    pub skipped: Vec<String>,
}

/// [`collect`], also returning what to tell the user about it.
pub fn collect_with_notes(
    input: &MeetingInput,
    opts: &CollectOptions,
) -> Result<(ContextBundle, CollectNotes)> {
    let base = fs::canonicalize(&opts.base_dir).map_err(|e| {
        Error::Usage(format!(
            "base folder {}: {}",
            opts.base_dir.display(),
            os_error(&e)
        ))
    })?;
    let root = match &opts.context_root {
        Some(r) => {
            let root = fs::canonicalize(r).map_err(|e| {
                Error::Usage(format!("--context-root {}: {}", r.display(), os_error(&e)))
            })?;
            if !root.is_dir() {
                return Err(Error::Usage(format!(
                    "--context-root {}: not a directory",
                    r.display()
                )));
            }
            root
        }
        None => default_context_root(&base),
    };
    // Read up to a budget per participant: a file too large for one call can then be divided
    // into parts among them (summary::divide); what is not divided is cut back to one budget.
    let mut c = Collector::new(
        root,
        base,
        opts.allow_sensitive,
        opts.redact,
        opts.max_context_chars
            .saturating_mul(opts.participants.len().max(1)),
    );
    for (i, source) in input.context_sources.iter().enumerate() {
        c.source(Some(i), source)?;
    }
    for doc in &opts.docs {
        c.source(None, &doc_source(doc))?;
    }
    let (mut documents, skipped_paths, redactions, mut skipped) = c.finish();
    if let Some(note) = summary::divide(
        input,
        &mut documents,
        &opts.participants,
        opts.max_context_chars,
    ) {
        skipped.push(note);
    }
    for d in documents.iter_mut() {
        if let Some((end, _)) = d.excerpt.char_indices().nth(opts.max_context_chars) {
            d.excerpt.truncate(end);
        }
    }
    let (summary, reader_documents) =
        summary::summaries(input, &mut documents, opts.max_context_chars);
    Ok((
        ContextBundle {
            summary,
            documents,
            skipped_paths,
            reader_documents,
        },
        CollectNotes {
            redactions,
            skipped,
        },
    ))
}
