//! The meeting file and the packet `collect-context` makes of it (docs/design/flow.md#documents).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{is_zero, ReviewSettings};
use crate::error::Invalid;

/// Shared background of the meeting.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeetingBrief {
    #[serde(default)]
    pub project_background: String,
    #[serde(default)]
    pub current_state: String,
    #[serde(default)]
    pub constraints: Vec<String>,
    #[serde(default)]
    pub success_criteria: Vec<String>,
    #[serde(default)]
    pub non_goals: Vec<String>,
}

/// What the meeting must decide.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionPacket {
    /// What to decide; the topic when a meeting file leaves it out ([`MeetingInput::settled`]).
    #[serde(default)]
    pub decision_to_make: String,
    #[serde(default)]
    pub options: Vec<String>,
    #[serde(default)]
    pub evaluation_dimensions: Vec<String>,
    #[serde(default)]
    pub required_questions: Vec<String>,
    #[serde(default)]
    pub risk_tolerance: String,
    #[serde(default)]
    pub time_horizon: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceType {
    File,
    Directory,
}

fn default_max_files() -> usize {
    20
}
fn default_true() -> bool {
    true
}
fn is_true(b: &bool) -> bool {
    *b
}

/// Where background documents come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextSource {
    #[serde(rename = "type")]
    pub source_type: SourceType,
    pub path: String,
    #[serde(default)]
    pub purpose: String,
    #[serde(default)]
    pub include: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
    #[serde(default = "default_max_files")]
    pub max_files: usize,
    /// Most characters read of each file: a cap the meeting file sets; without one a file is
    /// read up to the context budget, which the documents share
    /// (docs/design/context.md#context-budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars_per_file: Option<usize>,
    /// A `directory` source skips what `.gitignore` and `.ignore` files exclude
    /// (docs/design/context.md#context-collection); `false` collects it too.
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub respect_gitignore: bool,
    /// A missing `path` is skipped (`not found`) instead of refused: a misspelled path is an
    /// error unless the source says it may be absent (docs/design/context.md#context-collection).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// Which of a `directory` source's matches `max_files` keeps, in path order: the `first`
    /// (default) or the `last` — the newest of numbered records such as ADRs.
    #[serde(default, skip_serializing_if = "Keep::is_first")]
    pub keep: Keep,
    /// The participants who read this source's documents; empty: everyone. The others and
    /// the PM see only its name, purpose, readers and size, so the PM must ask a reader
    /// (docs/design/context.md#documents-only-some-participants-read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readers: Vec<String>,
}

impl ContextSource {
    /// A source of `path` with every other field at the default a meeting file's would have.
    pub fn new(source_type: SourceType, path: impl Into<String>) -> ContextSource {
        ContextSource {
            source_type,
            path: path.into(),
            purpose: String::new(),
            include: Vec::new(),
            exclude: Vec::new(),
            max_files: default_max_files(),
            max_chars_per_file: None,
            respect_gitignore: true,
            optional: false,
            keep: Keep::First,
            readers: Vec::new(),
        }
    }
}

/// [`ContextSource::keep`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Keep {
    #[default]
    First,
    Last,
}

impl Keep {
    fn is_first(&self) -> bool {
        *self == Keep::First
    }
}

/// A meeting file (or `--topic` minimal mode, or stdin of `collect-context`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeetingInput {
    pub topic: String,
    #[serde(default)]
    pub brief: MeetingBrief,
    /// Optional: a meeting file with only `topic` runs like `--topic` (the topic is the
    /// decision to make).
    #[serde(default)]
    pub decision_packet: DecisionPacket,
    #[serde(default)]
    pub context_sources: Vec<ContextSource>,
    /// The meeting's budget (`init-board --max-total-tokens` wins over it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<MeetingBudget>,
    /// The number of the decision record this meeting's decision supersedes (`0003`), linked
    /// from the record `--adr` writes (docs/design/report.md#adr); `--supersedes` wins over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    /// Reviewer mode (docs/design/review.md#settings): who reviews the PM's draft.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewSettings>,
    /// The council round (docs/design/council.md#settings): `true`, or `{models: [...]}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub council: Option<super::CouncilSetting>,
}

/// A meeting file's `budget:` (docs/design/pm-round.md#token-budget).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeetingBudget {
    /// Tokens (prompt, cached ones included, plus completion) the whole meeting may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_tokens: Option<u64>,
    /// US dollars the whole meeting may spend, at the price table's prices
    /// (docs/design/pm-round.md#cost-budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
}

impl MeetingInput {
    /// `--topic T`: a valid input with `decision_to_make = T` and everything else empty.
    pub fn from_topic(topic: &str) -> MeetingInput {
        MeetingInput {
            topic: topic.to_string(),
            brief: MeetingBrief::default(),
            decision_packet: DecisionPacket {
                decision_to_make: topic.to_string(),
                ..DecisionPacket::default()
            },
            context_sources: Vec::new(),
            budget: None,
            supersedes: None,
            review: None,
            council: None,
        }
    }

    /// A meeting file as read, its defaults filled: a decision to make left out (or blank) is
    /// the topic, as `--topic` makes it ([`MeetingInput::from_topic`]).
    pub fn settled(mut self) -> MeetingInput {
        if self.decision_packet.decision_to_make.trim().is_empty() {
            self.decision_packet.decision_to_make = self.topic.clone();
        }
        self
    }

    pub fn validate(&self) -> Result<(), Invalid> {
        if self.topic.trim().is_empty() {
            return Err(Invalid::at("topic", "must not be empty"));
        }
        if self.decision_packet.decision_to_make.trim().is_empty() {
            return Err(Invalid::at(
                "decision_packet.decision_to_make",
                "must not be empty",
            ));
        }
        if self
            .budget
            .as_ref()
            .is_some_and(|b| b.max_total_tokens == Some(0))
        {
            return Err(Invalid::at(
                "budget.max_total_tokens",
                "must be greater than 0",
            ));
        }
        if let Some(usd) = self.budget.as_ref().and_then(|b| b.max_cost_usd) {
            if !(usd.is_finite() && usd > 0.0) {
                return Err(Invalid::at(
                    "budget.max_cost_usd",
                    format!("{usd} (expected a positive number of dollars)"),
                ));
            }
        }
        if let Some(r) = &self.review {
            if !(1..=super::MAX_REVIEW_ROUNDS).contains(&r.rounds) {
                return Err(Invalid::at(
                    "review.rounds",
                    format!("{} (expected 1 to {})", r.rounds, super::MAX_REVIEW_ROUNDS),
                ));
            }
            if r.by.len() > super::MAX_PARALLEL as usize {
                return Err(Invalid::at(
                    "review.by",
                    format!(
                        "{} reviewers (expected at most {})",
                        r.by.len(),
                        super::MAX_PARALLEL
                    ),
                ));
            }
            for (i, name) in r.by.iter().enumerate() {
                if r.by[..i].contains(name) {
                    return Err(Invalid::at(
                        format!("review.by[{i}]"),
                        format!("{name:?} is named twice"),
                    ));
                }
            }
        }
        for (i, s) in self.context_sources.iter().enumerate() {
            let at = |f: &str| format!("context_sources[{i}].{f}");
            if s.path.trim().is_empty() {
                return Err(Invalid::at(at("path"), "must not be empty"));
            }
            if s.max_files == 0 {
                return Err(Invalid::at(at("max_files"), "must be greater than 0"));
            }
            if let Some(j) = s.readers.iter().position(|r| r.trim().is_empty()) {
                return Err(Invalid::at(
                    format!("context_sources[{i}].readers[{j}]"),
                    "must name a participant",
                ));
            }
            if s.max_chars_per_file == Some(0) {
                return Err(Invalid::at(
                    at("max_chars_per_file"),
                    "must be greater than 0",
                ));
            }
            for (field, globs) in [("include", &s.include), ("exclude", &s.exclude)] {
                for (j, g) in globs.iter().enumerate() {
                    if let Err(e) = globset::Glob::new(g) {
                        return Err(Invalid::at(
                            format!("context_sources[{i}].{field}[{j}]"),
                            format!("{g:?} is not a valid glob ({})", e.kind()),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DocumentSource {
    File,
    DirectoryFile,
}

/// One collected background document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextDocument {
    /// The normalised path relative to the context root, `/`-separated.
    pub document_id: String,
    /// The same root-relative path; never absolute.
    pub source_path: String,
    pub source_type: DocumentSource,
    pub purpose: String,
    /// The file's text, cut to the source's `max_chars_per_file` or the context budget.
    pub excerpt: String,
    /// Characters of the full file, each redaction marker counted as its own characters.
    pub char_count: usize,
    /// When the context summary shows less than the whole file: the characters of it shown
    /// (0: the budget left it out). Absent when the agents read all of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown_chars: Option<usize>,
    /// Secrets replaced by `[REDACTED:<kind>]` in `excerpt` (docs/design/context.md#context-collection);
    /// written only when there are some.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub redactions: u32,
    /// Who reads it (its source's `readers`); empty: everyone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readers: Vec<String>,
}

impl ContextDocument {
    /// Whether `agent` reads this document's text.
    pub fn read_by(&self, agent: &str) -> bool {
        self.readers.is_empty() || self.readers.iter().any(|r| r == agent)
    }
}

/// The distinct source paths of `docs`, in order: the parts of one divided file share theirs
/// (docs/design/context.md#documents-only-some-participants-read), and a schema's `enum` lists
/// each once.
pub fn source_paths<'a>(docs: impl IntoIterator<Item = &'a ContextDocument>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for d in docs {
        if !out.contains(&d.source_path.as_str()) {
            out.push(&d.source_path);
        }
    }
    out
}

/// A path that was not collected, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkippedPath {
    pub path: String,
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextBundle {
    /// What everyone reads: the brief and the documents every participant reads.
    pub summary: String,
    #[serde(default)]
    pub documents: Vec<ContextDocument>,
    #[serde(default)]
    pub skipped_paths: Vec<SkippedPath>,
    /// Where some documents have readers: each reader's own documents, fenced as the
    /// summary's are (what the budget leaves beside the summary), read after it.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub reader_documents: std::collections::BTreeMap<String, String>,
}

impl ContextBundle {
    /// The documents only some read, fenced, that `agent` reads beside the summary ("" if none).
    pub fn own_documents(&self, agent: &str) -> &str {
        self.reader_documents.get(agent).map_or("", String::as_str)
    }

    /// The documents `agent` reads, and so may cite.
    pub fn readable_by<'a>(&'a self, agent: &'a str) -> impl Iterator<Item = &'a ContextDocument> {
        self.documents.iter().filter(move |d| d.read_by(agent))
    }
}

/// Output of `collect-context`, input of `init-board`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeetingPacket {
    pub packet_version: u32,
    pub meeting_input: MeetingInput,
    pub context_bundle: ContextBundle,
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn topic_mode_is_valid() {
        let m = MeetingInput::from_topic("Adopt Rust?");
        m.validate().unwrap();
        assert_eq!(m.decision_packet.decision_to_make, "Adopt Rust?");
        assert!(MeetingInput::from_topic(" ").validate().is_err());
    }
}
