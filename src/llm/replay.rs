//! Offline replay from a cassette, and recording a real provider's exchanges into one.
//!
//! A cassette is JSONL, one line per call *attempt*, keyed by the global call number `seq`
//! (the board's `usage.calls`), so the separate processes of one meeting each read the lines
//! that belong to them. Faults (`timeout`, `http`, `network`) go through the Client's retry
//! policy exactly like real ones.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{AttemptError, Message, Options, Provider, RawReply, Request, TokenUsage};
use crate::error::Error;
use crate::model::Tokens;

/// An injected or recorded failure of one attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// `timeout`, `http` or `network`.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Seconds, as a server's `Retry-After`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One cassette line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Entry {
    pub seq: u64,
    pub caller: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Token counts in the meeting's terms (`model::Tokens`).
    pub usage: Option<Tokens>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Fault>,
    /// The model stopped at `max_tokens`: `response` is the head of a longer answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_sha256: Option<String>,
    /// Simulated model latency: the replay waits this long before answering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// Free text for people reading the cassette (e.g. "scripted, not recorded").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// SHA-256 of the provider-independent request (caller, system, messages, expected schema),
/// so a cassette recorded with one provider checks prompts when replayed without it. The
/// model name is left out on purpose: replaying with another model is not drift.
pub fn request_sha256(req: &Request) -> String {
    let messages: Vec<Value> = req.messages.iter().map(Message::to_json).collect();
    let canonical = json!({
        "caller": req.caller,
        "system": req.system,
        "messages": messages,
        "expect": req.expect.as_ref().map(|e| json!({"name": e.name, "schema": e.schema})),
    });
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// A cassette's lines by call number.
type Entries = Arc<BTreeMap<u64, Entry>>;

/// The `replay` provider.
pub struct Replay {
    path: PathBuf,
    entries: Entries,
    strict: bool,
    /// The call number of the last attempt answered, for its `note`.
    last_seq: Option<u64>,
    /// `--read-timeout`: a `delay_ms` longer than this is a timeout, as a slow server's is.
    read_timeout: std::time::Duration,
}

impl Replay {
    /// Load a cassette; a missing or malformed file is bad input (exit 2) naming file and line.
    pub fn open(path: &Path, strict: bool) -> Result<Replay, Error> {
        Ok(Replay {
            path: path.to_path_buf(),
            entries: Arc::new(parse_cassette(path)?),
            strict,
            last_seq: None,
            read_timeout: super::transport::Timeouts::default().read,
        })
    }

    /// Wait for a delayed answer at most `read`, like a real provider (`--read-timeout`).
    pub fn with_read_timeout(mut self, read: std::time::Duration) -> Replay {
        self.read_timeout = read;
        self
    }
}

/// Read and check a cassette; a missing or malformed file is bad input (exit 2) naming file
/// and line.
fn parse_cassette(path: &Path) -> Result<BTreeMap<u64, Entry>, Error> {
    let label = path.display().to_string();
    let text = crate::io::read_text_file(path)?;
    crate::io::refuse_bom(&label, &text)?;
    let mut entries = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("line {}", i + 1);
        // serde would also build an entry from an array (`[1, "pm", "{}"]`).
        if !line.trim_start().starts_with('{') {
            return Err(Error::input(&label, &at, "expected a JSON object"));
        }
        // Every stage of a meeting reads the whole cassette: the plain parse first, the one
        // that tracks the field path only to word an error.
        let entry: Entry = match serde_json::from_str(line) {
            Ok(entry) => entry,
            Err(_) => entry_error(&label, &at, line)?,
        };
        if entry.response.is_some() == entry.error.is_some() {
            return Err(Error::input(
                &label,
                &at,
                "expected exactly one of `response` or `error`",
            ));
        }
        if let Some(f) = &entry.error {
            if !matches!(
                f.kind.as_str(),
                "timeout" | "http" | "network" | "unreachable"
            ) {
                return Err(Error::input(
                    &label,
                    format!("{at}: error.kind"),
                    format!(
                        "unknown fault kind {:?} (expected timeout, http, network or unreachable)",
                        f.kind
                    ),
                ));
            }
            if f.kind == "http" && f.status.is_none() {
                return Err(Error::input(
                    &label,
                    format!("{at}: error.status"),
                    "an http fault needs a status",
                ));
            }
        }
        let seq = entry.seq;
        if entries.insert(seq, entry).is_some() {
            return Err(Error::input(
                &label,
                &at,
                format!("call {seq} appears twice"),
            ));
        }
    }
    Ok(entries)
}

/// The error of a cassette line the plain parse refused, naming the field (or, should the
/// checked parse accept it after all, the entry).
fn entry_error(label: &str, at: &str, line: &str) -> Result<Entry, Error> {
    let de = &mut serde_json::Deserializer::from_str(line);
    let entry: Entry = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
        let field = e.path().to_string();
        let at = if field == "." {
            at.to_string()
        } else {
            format!("{at}: {field}")
        };
        Error::input(label, at, e.into_inner().to_string())
    })?;
    de.end()
        .map_err(|e| Error::input(label, at, e.to_string()))?;
    Ok(entry)
}

impl Replay {
    /// Whether the cassette holds a line of `caller` for call number `seq` (a person's
    /// recorded answer: replayed, not asked).
    pub(crate) fn has_entry(&self, seq: u64, caller: &str) -> bool {
        self.entries.get(&seq).is_some_and(|e| e.caller == caller)
    }
}

/// What a cassette that does not fit the meeting is told with (docs/design/llm.md#cassettes): a
/// cassette answers only the meeting it was recorded from, and resuming replays the same one,
/// so what can help is another provider or a new recording. `meeting` gives no resume hint
/// after an error that says this.
pub const ANOTHER_MEETING: &str = "a cassette answers only the meeting it was recorded from \
(the same meeting, agents and flags), and resuming replays the same cassette, so it cannot help: \
to try this meeting offline use --provider sample, or run it once with a model and --record FILE \
to make a cassette of it";

impl Provider for Replay {
    fn name(&self) -> &str {
        "replay"
    }

    fn replayed(&self) -> bool {
        true
    }

    /// The `note` of the line that answered last, else the cassette's first note.
    fn note(&self) -> Option<String> {
        let last = self.last_seq.and_then(|seq| self.entries.get(&seq));
        last.and_then(|e| e.note.clone())
            .or_else(|| self.entries.values().find_map(|e| e.note.clone()))
    }

    fn attempt(
        &mut self,
        seq: u64,
        req: &Request,
        _opts: &Options,
    ) -> Result<RawReply, AttemptError> {
        let file = self.path.display();
        let Some(entry) = self.entries.get(&seq) else {
            return Err(AttemptError::OutOfStep(format!(
                "cassette {file} has no entry for call {seq} (caller {}); the meeting made more calls than were recorded; {ANOTHER_MEETING}",
                req.caller
            )));
        };
        self.last_seq = Some(seq);
        if let Some(ms) = entry.delay_ms {
            let delay = std::time::Duration::from_millis(ms);
            if delay > self.read_timeout {
                std::thread::sleep(self.read_timeout);
                return Err(AttemptError::Timeout(format!(
                    "no answer within {} s (the cassette's delay_ms {ms}); a slow server needs a longer --read-timeout",
                    self.read_timeout.as_secs_f64()
                )));
            }
            std::thread::sleep(delay);
        }
        if entry.caller != req.caller {
            return Err(AttemptError::OutOfStep(format!(
                "cassette out of step at call {seq}: expected caller {}, cassette has {} ({file}); {ANOTHER_MEETING}",
                req.caller, entry.caller
            )));
        }
        if let Some(recorded) = &entry.request_sha256 {
            if *recorded != request_sha256(req) {
                let what = format!(
                    "request drift at call {seq} (caller {}): the prompt differs from the one recorded in {file}",
                    req.caller
                );
                if self.strict {
                    return Err(AttemptError::Fatal(format!("{what} (--strict-replay)")));
                }
                crate::stage_warning!("replay: warning: {what}");
            }
        }
        if let Some(f) = &entry.error {
            let message = f
                .message
                .clone()
                .unwrap_or_else(|| format!("injected {} fault", f.kind));
            return Err(match f.kind.as_str() {
                "timeout" => AttemptError::Timeout(message),
                "network" => AttemptError::Network(message),
                "unreachable" => AttemptError::Unreachable(message),
                _ => AttemptError::Http {
                    status: f.status.unwrap_or(500),
                    message,
                    retry_after: f
                        .retry_after
                        .filter(|s| s.is_finite() && *s >= 0.0)
                        .map(Duration::from_secs_f64),
                },
            });
        }
        Ok(RawReply {
            text: entry.response.clone().unwrap_or_default(),
            usage: entry.usage.map(|tokens| TokenUsage {
                tokens,
                estimated: false,
                billed_usd: None,
            }),
            truncated: entry.truncated,
        })
    }
}

/// Wraps a real provider and appends every attempt to a cassette (`--record F`).
pub struct Recorder {
    inner: Box<dyn Provider>,
    path: PathBuf,
}

impl Recorder {
    pub fn new(inner: Box<dyn Provider>, path: &Path) -> Recorder {
        Recorder {
            inner,
            path: path.to_path_buf(),
        }
    }
}

impl Provider for Recorder {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn wrapped(&self) -> Option<&dyn Provider> {
        Some(self.inner.as_ref())
    }

    fn attempt(
        &mut self,
        seq: u64,
        req: &Request,
        opts: &Options,
    ) -> Result<RawReply, AttemptError> {
        let result = self.inner.attempt(seq, req, opts);
        let mut entry = Entry {
            seq,
            caller: req.caller.clone(),
            response: None,
            usage: None,
            error: None,
            truncated: false,
            request_sha256: Some(request_sha256(req)),
            delay_ms: None,
            note: None,
        };
        match &result {
            Ok(raw) => {
                entry.response = Some(raw.text.clone());
                entry.truncated = raw.truncated;
                entry.usage = raw.usage.filter(|u| !u.estimated).map(|u| u.tokens);
            }
            Err(AttemptError::Http {
                status,
                message,
                retry_after,
            }) => {
                entry.error = Some(Fault {
                    kind: "http".into(),
                    status: Some(*status),
                    retry_after: retry_after.map(|d| d.as_secs_f64()),
                    message: Some(message.clone()),
                })
            }
            Err(AttemptError::Timeout(m)) => {
                entry.error = Some(Fault {
                    kind: "timeout".into(),
                    status: None,
                    retry_after: None,
                    message: Some(m.clone()),
                })
            }
            Err(AttemptError::Unreachable(m)) => {
                entry.error = Some(Fault {
                    kind: "unreachable".into(),
                    status: None,
                    retry_after: None,
                    message: Some(m.clone()),
                })
            }
            Err(AttemptError::Network(m)) => {
                entry.error = Some(Fault {
                    kind: "network".into(),
                    status: None,
                    retry_after: None,
                    message: Some(m.clone()),
                })
            }
            // A local configuration problem, not an exchange: nothing to replay.
            Err(
                AttemptError::Fatal(_) | AttemptError::OutOfStep(_) | AttemptError::NoOneThere(_),
            ) => return result,
        }
        if let Err(e) = append_line(
            &self.path,
            &serde_json::to_string(&entry).expect("entries serialise"),
            false,
        ) {
            return Err(AttemptError::Fatal(format!(
                "cannot record to {}: {e}",
                self.path.display()
            )));
        }
        result
    }
}

/// Append one line to a JSONL file (created when missing), in one write so that lines of
/// consecutive processes never interleave; with `sync`, on disk before it returns (a paid
/// answer in the exchange log: docs/design/run-folder.md#resume).
pub(crate) fn append_line(path: &Path, line: &str, sync: bool) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let mut buf = line.to_string();
    buf.push('\n');
    f.write_all(buf.as_bytes())?;
    if sync {
        f.sync_data()?;
    }
    Ok(())
}
