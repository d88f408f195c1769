//! Where the report goes (docs/design/run-folder.md#run-folder): the default path and its free numbered
//! name, the inputs and the run folder it must not overwrite, and the proof that its folder
//! takes a file, all settled before the first model call.

use std::path::{Path, PathBuf};

use super::settings::{absolute, MeetingSource, RunSettings};
use crate::error::{Error, Result};
use crate::io::os_error;
use crate::model::Board;
use crate::text::slug;

/// The report path when none is given: `reports/<meeting stem>.md` or `reports/<topic slug>.md`.
pub(super) fn default_report_file(source: &MeetingSource) -> String {
    let stem = match source {
        MeetingSource::MeetingFile(f) => f
            .file_stem()
            .map_or_else(|| slug(""), |s| s.to_string_lossy().into_owned()),
        MeetingSource::Topic(t) => slug(t),
    };
    format!("reports/{stem}.md")
}

/// `path` as the file system will find it: links of its existing part resolved, `.` and `..`
/// of the rest folded, so two spellings of one file compare equal.
fn resolved(path: &Path) -> PathBuf {
    use std::path::Component;
    let path = absolute(path);
    let parts: Vec<Component> = path.components().collect();
    for keep in (1..=parts.len()).rev() {
        let Ok(mut out) = parts[..keep].iter().collect::<PathBuf>().canonicalize() else {
            continue;
        };
        for part in &parts[keep..] {
            match part {
                Component::ParentDir => {
                    out.pop();
                }
                Component::CurDir => {}
                p => out.push(p),
            }
        }
        return out;
    }
    path
}

/// The first of `path`, `<stem>-2.<ext>`, `<stem>-3.<ext>`, ... that does not exist.
pub(super) fn free_report_name(path: &Path) -> PathBuf {
    if !path.exists() {
        return path.to_path_buf();
    }
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    (2u32..)
        .map(|n| path.with_file_name(format!("{stem}-{n}{ext}")))
        .find(|p| !p.exists())
        .expect("some numbered name is free")
}

/// Refuse (exit 2, before any model call) a report path that is a folder or no regular file,
/// or would overwrite an input of the meeting — the meeting file, an agent or PM config, a collected document, the cassette or
/// recording, the user's exchange log — or land in the run folder (docs/design/run-folder.md#run-folder).
pub(super) fn check_report_path(
    settings: &RunSettings,
    board: &Board,
    run_dir: &Path,
) -> Result<()> {
    let report = &settings.report_file;
    if report.is_dir() {
        return Err(Error::Usage(format!(
            "--report-file: {} is a folder (expected a Markdown file path)",
            report.display()
        )));
    }
    // The report replaces the file by a rename: a device or a pipe there (`/dev/null` as root)
    // would be replaced by a regular file.
    if report.metadata().is_ok_and(|m| !m.is_file()) {
        return Err(Error::Usage(format!(
            "--report-file: {} is not a regular file (a device, a pipe or a socket); expected a Markdown file path",
            report.display()
        )));
    }
    let mut inputs: Vec<(&str, PathBuf)> = Vec::new();
    if let MeetingSource::MeetingFile(f) = &settings.source {
        inputs.push(("meeting file", f.clone()));
        // collect-context's context root, where the document paths start.
        let root = settings.context_root.clone().unwrap_or_else(|| {
            crate::context::default_context_root(f.parent().unwrap_or(Path::new("/")))
        });
        for doc in &board.context_bundle.documents {
            inputs.push(("collected document", root.join(&doc.source_path)));
        }
    }
    let search = crate::loader::AgentSearch::new(
        settings.board.agents_dir.as_deref(),
        // On --resume the user's config file is not the meeting's: a broken one must not stop
        // it, the default folder is guarded then.
        crate::config::user_agents_dir()
            .unwrap_or_else(|_| crate::config::config_dir().map(|d| d.join("agents"))),
    );
    let pm = board
        .pm
        .as_ref()
        .map(|_| settings.board.pm.clone().unwrap_or_else(|| "pm".into()));
    let configs = board
        .participants
        .iter()
        .map(|n| ("agent config", n.clone()))
        .chain(pm.map(|n| ("PM config", n)));
    for (what, name) in configs {
        // Every folder of the lookup order and every extension: a file there would change
        // which config the next meeting finds.
        for dir in search.places.iter().filter_map(|p| p.dir()) {
            for ext in ["yaml", "yml", "json"] {
                inputs.push((what, dir.join(format!("{name}.{ext}"))));
            }
        }
    }
    let llm = &settings.llm;
    inputs.extend(llm.cassette.clone().map(|c| ("cassette", c)));
    inputs.extend(settings.template.clone().map(|t| ("report template", t)));
    inputs.extend(llm.record.clone().map(|c| ("recording (--record)", c)));
    inputs.extend(
        settings
            .user_llm_log
            .clone()
            .map(|c| ("exchange log (--llm-log)", c)),
    );
    let target = resolved(report);
    for (what, input) in inputs {
        if resolved(&input) == target {
            return Err(Error::Usage(format!(
                "--report-file: {} is the meeting's {what}; the report would overwrite it (choose another path)",
                report.display()
            )));
        }
    }
    if target.starts_with(resolved(run_dir)) {
        return Err(Error::Usage(format!(
            "--report-file: {} is inside the run folder {}; choose a path outside it",
            report.display(),
            run_dir.display()
        )));
    }
    Ok(())
}

/// Create the report's folder and prove a file can be made there (created and removed), so a
/// bad path costs no model call.
pub(super) fn prove_writable(report: &Path) -> Result<()> {
    let dir = report
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let fail = |e: std::io::Error| {
        Error::Usage(format!(
            "--report-file: cannot write a file in {}: {}",
            dir.display(),
            os_error(&e)
        ))
    };
    std::fs::create_dir_all(dir).map_err(fail)?;
    tempfile::Builder::new()
        .prefix(".agent-meeting-check")
        .tempfile_in(dir)
        .map_err(fail)?
        .close()
        .map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_paths_compare_resolved_and_defaults_are_numbered() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("demo.md"), "kept").unwrap();
        assert_eq!(
            resolved(&d.join("a/../demo.md")),
            resolved(&d.join("./demo.md"))
        );
        assert_eq!(
            resolved(&d.join("new/x/../r.md")),
            resolved(d).join("new/r.md")
        );
        assert_eq!(free_report_name(&d.join("demo.md")), d.join("demo-2.md"));
        std::fs::write(d.join("demo-2.md"), "kept").unwrap();
        assert_eq!(free_report_name(&d.join("demo.md")), d.join("demo-3.md"));
        assert_eq!(free_report_name(&d.join("other.md")), d.join("other.md"));
    }

    #[test]
    fn default_report_paths() {
        assert_eq!(
            default_report_file(&MeetingSource::MeetingFile("meetings/demo.yaml".into())),
            "reports/demo.md"
        );
        assert_eq!(
            default_report_file(&MeetingSource::Topic("Go or Rust".into())),
            "reports/go-or-rust.md"
        );
    }
}
