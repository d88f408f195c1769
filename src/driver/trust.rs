//! A run folder is input (docs/design/run-folder.md#a-run-folder-is-input): whoever could write
//! it could have edited `meeting.json` or the `config.yaml` copy. `--resume` refuses a folder
//! another user owns or others may write, and uses nothing from it that runs a command, writes
//! a file outside the folder or sends the resumer's key and prompts elsewhere — stage
//! overrides, `--record`, `--llm-log`, a base URL of the config copy, a trace collector, a
//! report path over an existing file, a decision record still owed — unless the person resuming gives it again in this
//! invocation or says `--trust-run-dir`.

use std::path::Path;

use std::collections::BTreeMap;

use super::settings::RunSettings;
use crate::error::{Error, Result};
use crate::stage::Stage;

/// Refuse a run folder (or its `meeting.json`, its config copy) that another user owns or that
/// its group or anyone may write: its settings could be anyone's.
pub(super) fn check_owner(dir: &Path) -> Result<()> {
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
                    "--resume: {} {why}: its settings could be anyone's; resume a copy of your own \
                     (cp -r, then chmod go-w), or give --trust-run-dir if you trust whoever can write it",
                    path.display()
                )));
            }
        }
    }
    Ok(())
}

/// What this resume was given again: the `--stage`s, and whether `--otlp-endpoint` and
/// `--report-file` were.
pub(super) struct GivenAgain<'a> {
    pub stages: &'a BTreeMap<Stage, String>,
    /// The stages the meeting may still run (only render-report once it is ending): a saved
    /// override of another runs nothing.
    pub stages_left: &'a [Stage],
    pub otlp: bool,
    pub report_file: bool,
    /// `--adr` was given again, or the saved one owes nothing.
    pub adr: bool,
}

/// What the saved settings would use that the person resuming did not give again: each as
/// shown to them (`--stage agent-turn=./turn.sh`). `own_base_urls` are the resumer's own
/// (their config file's); `report_at_risk` whether the saved report path holds a file with
/// content that is no Markdown report (a `.bashrc` the report would replace) while the
/// meeting's report is still to be written.
pub(super) fn not_given_again(
    settings: &RunSettings,
    given: &GivenAgain,
    copy_base_urls: &[(&str, Option<String>)],
    own_base_urls: &[(&str, Option<String>)],
    report_at_risk: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    for (stage, command) in &settings.stage_overrides {
        if given.stages_left.contains(stage) && !given.stages.contains_key(stage) {
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
    if report_at_risk && !given.report_file {
        out.push(format!(
            "--report-file {} (an existing file that is no Markdown report)",
            settings.report_file.display()
        ));
    }
    out
}

/// The refusal when a resume would use what it was not given.
pub(super) fn refused(dir: &Path, untrusted: &[String]) -> Error {
    Error::Usage(format!(
        "--resume: {} asks for what you did not give: {}; a run folder is input, so give these \
         again, or --trust-run-dir if you trust whoever wrote it",
        dir.display(),
        untrusted.join(", ")
    ))
}
