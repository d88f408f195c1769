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

/// Whether `path` lies inside the folder `root`, both as the file system finds them (links
/// of their existing parts resolved, `..` folded): a server keeps what it writes there.
pub fn is_within(path: &Path, root: &Path) -> bool {
    resolved(path).starts_with(resolved(root))
}

/// Most numbered names tried for one default report path.
const MAX_NUMBERED: u32 = 100_000;

/// `path`, then `<stem>-2.<ext>`, `<stem>-3.<ext>`, ...: the names a default report may take.
fn report_names(path: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    std::iter::once(path.to_path_buf())
        .chain((2..=MAX_NUMBERED).map(move |n| path.with_file_name(format!("{stem}-{n}{ext}"))))
}

/// The first name of [`report_names`] that does not exist: what a dry run shows and the start
/// checks; the start then claims it, or the next free one ([`claim_report_name`]).
pub(super) fn free_report_name(path: &Path) -> PathBuf {
    report_names(path)
        .find(|p| !p.exists())
        .unwrap_or_else(|| path.to_path_buf())
}

/// Claim the first free name of [`report_names`] by creating it empty and exclusively
/// (`O_EXCL`): two meetings started together never take one file (docs/design/run-folder.md#run-folder).
/// The report replaces the placeholder when it is saved; [`release_claim`] removes it when the
/// start fails.
pub(super) fn claim_report_name(path: &Path) -> Result<PathBuf> {
    for name in report_names(path) {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&name)
        {
            Ok(_) => return Ok(name),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(Error::Usage(format!(
                    "--report-file: cannot create {}: {}",
                    name.display(),
                    os_error(&e)
                )))
            }
        }
    }
    Err(Error::Usage(format!(
        "--report-file: {} and its {MAX_NUMBERED} numbered names are taken; name the report with --report-file",
        path.display()
    )))
}

/// Remove a claimed report file the start left empty: a start that failed leaves nothing.
pub(super) fn release_claim(path: &Path) {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0) {
        let _ = std::fs::remove_file(path);
    }
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
    crate::stage::render_report::check_report_file(report)?;
    let mut inputs: Vec<(&str, PathBuf)> = Vec::new();
    // collect-context's context root, where the document paths start: found from the meeting
    // file's folder, or from the working folder for a topic's `--doc`s.
    let base = match &settings.source {
        MeetingSource::MeetingFile(f) => {
            inputs.push(("meeting file", f.clone()));
            f.parent().unwrap_or(Path::new("/")).to_path_buf()
        }
        MeetingSource::Topic(_) => absolute(Path::new(".")),
    };
    let root = settings
        .context_root
        .clone()
        .unwrap_or_else(|| crate::context::default_context_root(&base));
    for doc in &board.context_bundle.documents {
        inputs.push(("collected document", root.join(&doc.source_path)));
    }
    let search = crate::loader::AgentSearch::new(
        settings.board.agents_dir.as_deref(),
        // On --resume the user's config file is not the meeting's: a broken one must not stop
        // it, the default folder is guarded then.
        crate::settings::config::user_agents_dir()
            .unwrap_or_else(|_| crate::settings::config::config_dir().map(|d| d.join("agents"))),
    );
    let pm = board.pm.as_ref().map(|_| {
        settings
            .board
            .options
            .pm
            .clone()
            .unwrap_or_else(|| "pm".into())
    });
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

/// Create the report's folder and prove the report can be written there — a file of a few KiB
/// made and removed, and a report that exists opened for writing (another user's file in a
/// sticky folder is not ours to replace) — so a bad path costs no model call.
pub(super) fn prove_writable(report: &Path) -> Result<()> {
    let usage = |why: String| Error::Usage(format!("--report-file: {why}"));
    let text = report.as_os_str().to_string_lossy();
    if text.ends_with(std::path::MAIN_SEPARATOR) || report.file_name().is_none() {
        return Err(usage(format!(
            "{} names a folder (expected a Markdown file path such as {}report.md)",
            report.display(),
            text.trim_end_matches(std::path::MAIN_SEPARATOR).to_string() + "/"
        )));
    }
    let dir = report
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| {
        usage(format!(
            "cannot create the folder {}: {}",
            dir.display(),
            os_error(&e)
        ))
    })?;
    crate::io::prove_writable_dir(dir).map_err(usage)?;
    if report.is_file() {
        std::fs::OpenOptions::new()
            .write(true)
            .open(report)
            .map_err(|e| {
                usage(format!(
                    "cannot replace {}: {}",
                    report.display(),
                    os_error(&e)
                ))
            })?;
    }
    Ok(())
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
        // Claims are exclusive: the second claim of a name takes the next one.
        let first = claim_report_name(&d.join("new.md")).unwrap();
        let second = claim_report_name(&d.join("new.md")).unwrap();
        assert_eq!(
            (first.clone(), second),
            (d.join("new.md"), d.join("new-2.md"))
        );
        assert_eq!(std::fs::read(&first).unwrap(), b"");
        release_claim(&first);
        assert!(!first.exists(), "an empty claim is removed");
        release_claim(&d.join("demo.md"));
        assert!(d.join("demo.md").exists(), "a file with content is kept");
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
