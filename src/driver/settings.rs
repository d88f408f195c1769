//! The run settings (docs/design/run-folder.md#run-folder): what `meeting.json` holds, typed and versioned,
//! and the `--stage NAME=COMMAND` overrides they carry.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::llm::LlmConfig;
use crate::settings::MeetingSettings;
use crate::stage::Stage;

/// Version of `meeting.json`; a run folder of another version cannot be resumed.
pub const SETTINGS_VERSION: u32 = 2;

/// Where a meeting's input comes from: `--meeting-file F` or `--topic T`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MeetingSource {
    MeetingFile(PathBuf),
    Topic(String),
}

/// Everything a meeting run needs to go on after a restart, saved as `meeting.json` in the run
/// folder (docs/design/run-folder.md#run-folder): typed, versioned, absolute paths, no secrets (keys stay in
/// the environment). The in-process stages are given from it what their programs would get
/// as flags (`driver::stages`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSettings {
    pub settings_version: u32,
    pub source: MeetingSource,
    /// collect-context's `--allow-sensitive`.
    pub allow_sensitive: bool,
    /// collect-context's `--no-redact` (absent in older run folders: redaction on).
    #[serde(default)]
    pub no_redact: bool,
    /// collect-context's `--context-root` (absolute), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_root: Option<PathBuf>,
    /// collect-context's `--doc`s (absolute).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub docs: Vec<crate::context::Doc>,
    /// `--share-docs`: every participant reads every document, cut to the budget, instead of
    /// a division among them where they do not fit together.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub share_docs: bool,
    /// collect-context's `--max-context-chars`, when not the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_context_chars: Option<usize>,
    /// render-report's `--template` (absolute), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<PathBuf>,
    /// Participants, PM, loop limit and the (settled) trace id.
    pub board: MeetingSettings,
    /// The LLM flags of the stages; `llm_log` is this run folder's `llm.jsonl`.
    pub llm: LlmConfig,
    pub report_file: PathBuf,
    /// Stages replaced by a user command run with `sh -c`.
    #[serde(default)]
    pub stage_overrides: BTreeMap<Stage, String>,
    /// The config file the stages read (`AGENT_MEETING_CONFIG`): the user's while the meeting
    /// starts, then the run folder's `config.yaml`, a copy, so a later edit of the user's file
    /// does not change a resumed meeting (docs/design/agents-and-config.md#config). None: no config file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_file: Option<PathBuf>,
    /// The user's own `--llm-log` / `MEETING_LLM_LOG`: every line the stages append to the
    /// run folder's `llm.jsonl` is appended here too (docs/design/run-folder.md#run-folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_llm_log: Option<PathBuf>,
    /// agent-turn's `--human-answers` (absolute), when given (docs/design/agent-turn.md#a-human-at-the-table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_answers: Option<PathBuf>,
    /// Where the meeting's traces go (`--otlp-endpoint`, docs/design/otel.md#traces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp: Option<crate::otlp::OtlpSettings>,
    /// The decision record the meeting owes (`--adr`, docs/design/report.md#adr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adr: Option<AdrSettings>,
    /// A fork's parent and loop (`meeting --fork`, docs/design/run-folder.md#fork).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork: Option<crate::model::ForkOf>,
    /// Every setting as the meeting resolved it when it started, with where each came from —
    /// what `show-config` printed then (`meeting show-config --run-folder DIR` prints it
    /// again), but the `--header`s, which are kept nowhere. Empty in a folder of an earlier
    /// build, and in a fork's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resolved: Vec<crate::settings::Resolved>,
    /// `--on-waiting CMD`, else the user's config file's `on_waiting`: given to every start
    /// and resume, never kept in or read from the run folder (a folder restores no command;
    /// docs/design/agent-turn.md#a-ping-when-a-person-is-needed).
    #[serde(skip)]
    pub on_waiting: Option<String>,
}

impl RunSettings {
    /// What a run folder's meeting was started with: its `meeting.json`.
    pub(super) fn read(run_dir: &Path) -> Result<RunSettings> {
        let file = run_dir.join("meeting.json");
        let text = crate::io::read_text_file(&file)?;
        crate::io::parse_versioned(
            &file.display().to_string(),
            &text,
            "settings_version",
            SETTINGS_VERSION,
        )
    }
}

/// `p` made absolute (not resolved): `meeting.json` and the MeetingResult keep absolute paths,
/// so `--resume` works from any folder.
pub fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// `--stage NAME=COMMAND` values (repeatable) as a map; an empty COMMAND is kept, as it
/// restores the built-in stage on `--resume` (docs/design/run-folder.md#resume).
pub fn parse_stage_overrides(stages: &[String]) -> Result<BTreeMap<Stage, String>> {
    let mut map = BTreeMap::new();
    for s in stages {
        let Some((name, cmd)) = s.split_once('=') else {
            return Err(Error::Usage(format!("--stage: {s:?} is not NAME=COMMAND")));
        };
        let Some(stage) = Stage::from_program(name) else {
            let all: Vec<&str> = Stage::ALL.iter().map(|s| s.program()).collect();
            return Err(Error::Usage(format!(
                "--stage: unknown stage {name:?} (one of {})",
                all.join(", ")
            )));
        };
        map.insert(stage, cmd.to_string());
    }
    Ok(map)
}

pub use crate::settings::AdrSettings;

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::io::to_json_line;

    pub(in crate::driver) fn settings() -> RunSettings {
        RunSettings {
            settings_version: SETTINGS_VERSION,
            source: MeetingSource::MeetingFile("/m/demo.yaml".into()),
            allow_sensitive: true,
            no_redact: true,
            context_root: Some("/m".into()),
            share_docs: true,
            docs: vec![crate::context::Doc {
                path: "/m/notes.md".into(),
                readers: vec!["biz".into()],
            }],
            max_context_chars: Some(900),
            template: Some("/m/t.md.j2".into()),
            board: MeetingSettings {
                options: crate::settings::MeetingOptions {
                    agents: vec!["arch".into(), "biz".into()],
                    max_loops: Some(4),
                    ..Default::default()
                },
                agents_dir: Some("/m/agents".into()),
                trace_id: Some("t-1".into()),
                day_left_usd: Some(0.75),
            },
            llm: LlmConfig {
                provider: Some("replay".into()),
                cassette: Some("/m/c.jsonl".into()),
                llm_log: Some("/runs/t-1/llm.jsonl".into()),
                reuse_log: true,
                ..LlmConfig::default()
            },
            report_file: "/m/report.md".into(),
            stage_overrides: BTreeMap::from([(Stage::MergeBoard, "cat".to_string())]),
            config_file: None,
            user_llm_log: None,
            human_answers: Some("/m/answers.jsonl".into()),
            otlp: None,
            adr: None,
            fork: None,
            resolved: Vec::new(),
            on_waiting: None,
        }
    }

    #[test]
    fn meeting_json_is_typed_and_versioned() {
        let s = settings();
        let text = to_json_line(&s, true);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["settings_version"], 2);
        assert_eq!(v["source"]["meeting_file"], "/m/demo.yaml");
        assert_eq!(v["stage_overrides"]["merge-board"], "cat");
        assert_eq!(v["llm"]["max_attempts"], 3);
        let back: RunSettings =
            crate::io::parse_versioned("meeting.json", &text, "settings_version", 2).unwrap();
        assert_eq!(back, s);
        // A run folder of the first version kept argv strings: refused, naming the version.
        let old = r#"{"trace_id": "t", "report_file": "r", "collect_args": [], "init_args": [], "llm_args": []}"#;
        let e =
            crate::io::parse_versioned::<RunSettings>("meeting.json", old, "settings_version", 2)
                .unwrap_err()
                .to_string();
        assert!(e.contains("settings_version"), "{e}");
    }
}
