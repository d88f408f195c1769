//! A run folder is input (docs/design/run-folder.md#a-run-folder-is-input): whoever could write
//! it could have edited `meeting.json`, the `config.yaml` copy or a checkpoint. Every mode that
//! reads one — `--resume`, `--fork`, `--compare`, `next-stage --run-folder` and the MCP
//! server's `resume` — opens it here ([`Folder::open`]), and every mode that acts on its
//! settings passes [`Folder::gate`]: a folder another user owns or others may write is refused,
//! and nothing from it that runs a command, writes a file outside the folder or sends the
//! user's key and prompts elsewhere — stage overrides, `--record`, `--llm-log`, a base URL of
//! the config copy, a trace collector, a report path over an existing file, a decision record
//! still owed — or that reads a file of its choosing — a report template, a person's answers
//! file — is used unless the user gives it again in this invocation or says
//! `--trust-run-dir`.

use std::collections::BTreeMap;
use std::path::Path;

use super::run_dir::RunDir;
use super::settings::RunSettings;
use crate::error::{Error, Result};
use crate::stage::Stage;

/// A run folder as read: its `meeting.json`.
pub struct Folder {
    pub run: RunDir,
    pub settings: RunSettings,
    /// The flag that named it (`--resume`, `--fork`, ...): every error names it.
    pub flag: &'static str,
}

impl Folder {
    /// The one reader of a run folder a user names: it exists, holds a `meeting.json` of this
    /// version.
    pub fn open(dir: &Path, flag: &'static str) -> Result<Folder> {
        let run = RunDir::given(dir, flag)?;
        let settings = RunSettings::read(dir)?;
        Ok(Folder {
            run,
            settings,
            flag,
        })
    }

    /// Refuse what the settings would use that was not given again, unless the user trusts the
    /// folder (then it is said on stderr, before the first call). `settings` are the ones the
    /// mode will run with, `next` the stage it goes on with (`None`: the meeting has ended; a
    /// fork starts anew, so every stage is still to run).
    pub fn gate(
        &self,
        settings: &RunSettings,
        next: Option<Stage>,
        given: &GivenAgain,
        trust: bool,
    ) -> Result<()> {
        let dir = &self.run.path;
        if !trust {
            check_owner(dir, self.flag)?;
        }
        let urls = |c: &crate::settings::config::Config| {
            [
                ("openai", c.base_urls.openai.clone()),
                ("anthropic", c.base_urls.anthropic.clone()),
                ("ollama", c.base_urls.ollama.clone()),
            ]
        };
        let copy = match &settings.config_file {
            Some(copy) => urls(&crate::settings::config::load_file(Some(copy))?.config),
            None => urls(&Default::default()),
        };
        let own = crate::settings::config::load()
            .map(|l| urls(&l.config))
            .unwrap_or_else(|_| urls(&Default::default()));
        let report = &settings.report_file;
        let markdown = report
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("md") || e.eq_ignore_ascii_case("markdown"));
        let report_at_risk = next.is_some()
            && !markdown
            && std::fs::metadata(report).is_ok_and(|m| m.is_file() && m.len() > 0);
        let stages_left = match next {
            None => vec![],
            Some(Stage::RenderReport) => vec![Stage::RenderReport],
            Some(_) => Stage::ALL.to_vec(),
        };
        let untrusted = not_given_again(settings, given, &stages_left, &copy, &own, report_at_risk);
        match (untrusted.is_empty(), trust) {
            (true, _) => Ok(()),
            (false, false) => Err(Error::Usage(format!(
                "{}: {} asks for what you did not give: {}; a run folder is input, so give these \
                 again, or --trust-run-dir if you trust whoever wrote it",
                self.flag,
                dir.display(),
                untrusted.join(", ")
            ))),
            (false, true) => {
                crate::note!(
                    "meeting: --trust-run-dir: using the run folder's {}",
                    untrusted.join(", ")
                );
                Ok(())
            }
        }
    }
}

/// Refuse a run folder (or its `meeting.json`, its config copy) that another user owns or that
/// its group or anyone may write: its settings could be anyone's.
fn check_owner(dir: &Path, flag: &str) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        for path in [
            dir.to_path_buf(),
            dir.join("meeting.json"),
            dir.join("config.yaml"),
        ] {
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let why = if meta.uid() != me {
                Some(format!("is owned by another user (uid {})", meta.uid()))
            } else if meta.mode() & 0o022 != 0 {
                Some(format!(
                    "may be written by its group or anyone (mode {:o})",
                    meta.mode() & 0o777
                ))
            } else {
                None
            };
            if let Some(why) = why {
                return Err(Error::Usage(format!(
                    "{flag}: {} {why}: its settings could be anyone's; use a copy of your own \
                     (cp -r, then chmod go-w), or give --trust-run-dir if you trust whoever can write it",
                    path.display()
                )));
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (dir, flag);
    Ok(())
}

/// What this invocation gave again: the `--stage`s, and whether `--otlp-endpoint`,
/// `--report-file`, `--adr`, `--template` and `--human-answers` were.
#[derive(Default)]
pub struct GivenAgain {
    pub stages: BTreeMap<Stage, String>,
    pub otlp: bool,
    pub report_file: bool,
    /// `--adr` was given again, or the saved one owes nothing.
    pub adr: bool,
    pub template: bool,
    pub human_answers: bool,
}

/// What the saved settings would use that the person resuming did not give again: each as
/// shown to them (`--stage agent-turn=./turn.sh`). `stages_left` are the stages the meeting may
/// still run (only render-report once it is ending: a saved override of another runs nothing);
/// `own_base_urls` are the user's own (their config file's); `report_at_risk` whether the saved
/// report path holds a file with content that is no Markdown report (a `.bashrc` the report
/// would replace) while the meeting's report is still to be written.
fn not_given_again(
    settings: &RunSettings,
    given: &GivenAgain,
    stages_left: &[Stage],
    copy_base_urls: &[(&str, Option<String>)],
    own_base_urls: &[(&str, Option<String>)],
    report_at_risk: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    for (stage, command) in &settings.stage_overrides {
        if stages_left.contains(stage) && !given.stages.contains_key(stage) {
            out.push(format!("--stage {stage}={command}"));
        }
    }
    if let Some(f) = &settings.llm.record {
        out.push(format!("--record {}", f.display()));
    }
    if let Some(f) = &settings.user_llm_log {
        out.push(format!("--llm-log {}", f.display()));
    }
    for ((name, copy), (_, own)) in copy_base_urls.iter().zip(own_base_urls) {
        if let Some(url) = copy.as_ref().filter(|u| Some(*u) != own.as_ref()) {
            let shown = crate::llm::transport::masked_url(url);
            out.push(format!(
                "base_urls.{name} {shown} (the run folder's config.yaml)"
            ));
        }
    }
    if let (Some(otlp), false) = (&settings.otlp, given.otlp) {
        out.push(format!("--otlp-endpoint {}", otlp.traces_url));
    }
    if let (Some(adr), false) = (&settings.adr, given.adr) {
        out.push(format!("--adr {}", adr.dir.display()));
    }
    // A file the folder names to read: a template rendered as the report (and then offered
    // as an MCP resource), a person's answers — a secret file's text would be shown or sent.
    if let (Some(t), false, true) = (
        &settings.template,
        given.template,
        stages_left.contains(&Stage::RenderReport),
    ) {
        out.push(format!("--template {}", t.display()));
    }
    if let (Some(f), false, true) = (
        &settings.human_answers,
        given.human_answers,
        stages_left.contains(&Stage::AgentTurn),
    ) {
        out.push(format!("--human-answers {}", f.display()));
    }
    if report_at_risk && !given.report_file {
        out.push(format!(
            "--report-file {} (an existing file that is no Markdown report)",
            settings.report_file.display()
        ));
    }
    out
}
