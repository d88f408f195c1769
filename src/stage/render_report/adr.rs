//! The decision as an architecture decision record (docs/design/report.md#adr): a MADR file
//! `NNNN-title-slug.md` in the team's ADR folder, numbered after the highest record there
//! (adr-tools numbering), created exclusively so two meetings never take one number; the record
//! it supersedes linked, and that record's status amended when it has one we can find. A
//! fallback report (no PM decision) makes no record.

use std::io::Write;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use super::{render_with, report_kind, template_error, view_model, ReportKind, View};
use crate::error::{Error, Result};
use crate::model::Board;

const ADR_TEMPLATE: &str = include_str!("../../../share/templates/adr.md.j2");

/// Where and how to write a record.
#[derive(Debug, Clone)]
pub struct AdrRequest<'a> {
    /// The ADR folder (created if missing).
    pub dir: &'a Path,
    /// The saved report, linked from the record.
    pub report_file: Option<&'a Path>,
    /// The number of the record this one supersedes (`3`, `0003`, `0003-old-title.md`).
    pub supersedes: Option<&'a str>,
    /// The people who decide: MADR's `decision-makers` (the agents are `consulted`).
    pub deciders: &'a [String],
}

/// What [`write_adr`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum AdrOutcome {
    /// The record written, and the superseded record whose status was amended (if any).
    Written {
        path: PathBuf,
        amended: Option<PathBuf>,
    },
    /// A fallback report: the PM made no decision, so there is nothing to record.
    NoDecision,
}

#[derive(Serialize)]
struct AdrView {
    #[serde(flatten)]
    view: View,
    adr: AdrMeta,
}

#[derive(Serialize)]
struct AdrMeta {
    number: String,
    title: String,
    date: String,
    context: Vec<String>,
    supersedes: Option<Superseded>,
    /// The report's path relative to the ADR folder, or empty.
    report: String,
    /// `decision-makers`: people, one line each of the front matter's list.
    deciders: Vec<String>,
}

#[derive(Serialize, Clone)]
struct Superseded {
    number: String,
    file: String,
}

/// The line a program prints on stderr about the record (`program: ...`).
pub fn adr_note(program: &str, outcome: &AdrOutcome) -> String {
    match outcome {
        AdrOutcome::Written { path, amended } => {
            let also = amended
                .as_ref()
                .map(|p| format!(" (marked {} superseded)", p.display()))
                .unwrap_or_default();
            format!("{program}: wrote the decision record {}{also}", path.display())
        }
        AdrOutcome::NoDecision => format!(
            "{program}: no decision record written: the report is a fallback (the PM made no decision)"
        ),
    }
}

/// Write the board's decision as the next record in `req.dir`.
pub fn write_adr(board: &Board, req: &AdrRequest) -> Result<AdrOutcome> {
    write_adr_noting(board, req, |_| Ok(()))
}

/// [`write_adr`], calling `written` with the record's path once it is on disk and before the
/// superseded record is amended: a caller that keeps it can finish a write stopped between
/// the two ([`amend_superseded`]) instead of writing a second record.
pub fn write_adr_noting(
    board: &Board,
    req: &AdrRequest,
    written: impl FnOnce(&Path) -> Result<()>,
) -> Result<AdrOutcome> {
    let callers = &board.record.callers;
    if !callers.is_empty()
        && callers
            .values()
            .all(|c| c.provider == crate::llm::sample::NAME)
    {
        return Err(sample_refusal());
    }
    let kind = report_kind(board)?;
    if kind == ReportKind::Fallback {
        return Ok(AdrOutcome::NoDecision);
    }
    std::fs::create_dir_all(req.dir).map_err(|e| io_error(req.dir, &e))?;
    let superseded = superseded_of(board, req)?;
    let view = view_model(board, kind);
    let title = title_of(&view.topic);
    let slug = slug_of(&title);
    let mut number = next_number(req.dir)?;
    loop {
        let meta = AdrMeta {
            number: format!("{number:04}"),
            title: title.clone(),
            date: day_of(&view.record.date),
            context: context_of(board),
            supersedes: superseded.clone(),
            report: req
                .report_file
                .map(|r| relative(req.dir, r))
                .unwrap_or_default(),
            deciders: req.deciders.iter().map(|d| front_matter_value(d)).collect(),
        };
        let text = render(view.clone(), meta)?;
        let path = req.dir.join(format!("{number:04}-{slug}.md"));
        if create_exclusive(&path, &text)? {
            written(&path)?;
            let amended = match &superseded {
                Some(old) => amend_status(&req.dir.join(&old.file), &path)?,
                None => None,
            };
            return Ok(AdrOutcome::Written { path, amended });
        }
        // Another meeting took this number between our look and our write: take the next.
        number += 1;
    }
}

/// A name as one value of the front matter's comma-separated list: one line, no comma, no
/// character YAML would read as structure at its start.
fn front_matter_value(name: &str) -> String {
    let one = crate::text::fold_ws(&crate::text::sanitise(name)).replace(',', " ");
    one.trim()
        .trim_start_matches([
            '-', '?', ':', '[', '{', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`', '#',
        ])
        .trim()
        .to_string()
}

/// The record this one supersedes: `--supersedes`, else the meeting file's `supersedes`.
fn superseded_of(board: &Board, req: &AdrRequest) -> Result<Option<Superseded>> {
    Ok(match (req.supersedes, &board.meeting_input.supersedes) {
        (Some(n), _) => Some(find_record(req.dir, n)?),
        // Named in the meeting file: the error says so, not `--supersedes`.
        (None, Some(n)) => Some(find_record(req.dir, n).map_err(|e| match e {
            Error::Usage(m) => {
                Error::Usage(m.replacen("--supersedes", "the meeting file's supersedes", 1))
            }
            e => e,
        })?),
        (None, None) => None,
    })
}

/// Amend the status of the record `record` supersedes (the second half of [`write_adr`], for a
/// write that stopped after the record was on disk); the amended record, if any.
pub fn amend_superseded(board: &Board, req: &AdrRequest, record: &Path) -> Result<Option<PathBuf>> {
    match superseded_of(board, req)? {
        Some(old) => amend_status(&req.dir.join(&old.file), record),
        None => Ok(None),
    }
}

fn render(view: View, adr: AdrMeta) -> Result<String> {
    let text =
        render_with("adr.md.j2", Some(ADR_TEMPLATE), &AdrView { view, adr }).map_err(|e| {
            Error::Runtime(format!(
                "built-in template adr.md.j2: {}",
                template_error(&e)
            ))
        })?;
    Ok(super::markdown::tidy_markdown(&text))
}

/// The record header's date as MADR writes it (`2026-11-30`), or empty when not recorded.
fn day_of(date: &str) -> String {
    date.get(..10)
        .filter(|d| d.bytes().filter(u8::is_ascii_digit).count() == 8)
        .unwrap_or("")
        .to_string()
}

/// A title from the topic: one line, without its question mark.
fn title_of(topic: &str) -> String {
    let t = crate::text::fold_ws(topic);
    let t = t.trim().trim_end_matches('?').trim();
    if t.is_empty() {
        "Meeting decision".to_string()
    } else {
        t.to_string()
    }
}

/// The file name's slug: `text::slug`, cut back to its last whole word when it was cut.
fn slug_of(title: &str) -> String {
    let slug = crate::text::slug(title);
    let whole = crate::text::slug(&format!("{title} x"));
    if whole.starts_with(&format!("{slug}-")) || whole == format!("{slug}-x") {
        return slug;
    }
    match slug.rfind('-') {
        Some(at) if at > 0 => slug[..at].to_string(),
        _ => slug,
    }
}

/// The brief's paragraphs for the record's context.
fn context_of(board: &Board) -> Vec<String> {
    let brief = &board.meeting_input.brief;
    let mut out = Vec::new();
    for p in [&brief.project_background, &brief.current_state] {
        let p = crate::text::fold_ws(p);
        if !p.trim().is_empty() {
            out.push(p.trim().to_string());
        }
    }
    for (label, items) in [
        ("Constraints", &brief.constraints),
        ("Success criteria", &brief.success_criteria),
    ] {
        if !items.is_empty() {
            let items: Vec<&str> = items
                .iter()
                .map(|i| i.trim().trim_end_matches('.'))
                .collect();
            out.push(format!("{label}: {}.", items.join("; ")));
        }
    }
    out
}

/// The leading number of a record's file name (`0007-x.md` → 7).
fn number_of(name: &str) -> Option<u32> {
    let digits: String = name.chars().take_while(char::is_ascii_digit).collect();
    (digits.len() >= 4 && name[digits.len()..].starts_with('-') && name.ends_with(".md"))
        .then(|| digits.parse().ok())
        .flatten()
}

/// One more than the highest record number in `dir` (1 in an empty folder).
fn next_number(dir: &Path) -> Result<u32> {
    let entries = std::fs::read_dir(dir).map_err(|e| io_error(dir, &e))?;
    let highest = entries
        .flatten()
        .filter_map(|e| number_of(&e.file_name().to_string_lossy()))
        .max()
        .unwrap_or(0);
    Ok(highest + 1)
}

/// Whether `--supersedes` names a record in `dir`: checked before the report is rendered, so
/// a wrong number changes nothing.
/// Refuse (exit 2, before any model call) an `--adr` folder the record could not be written
/// to: a file, a folder we may not write, a full disk.
/// A sample run decides nothing: it writes no decision record into a team's log.
pub fn sample_refusal() -> Error {
    Error::Usage(
        "--adr: a sample run (--provider sample) makes no decision, so it writes no decision record; run the meeting with a model".into(),
    )
}

pub fn check_adr_dir(dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        return Err(Error::Usage(format!(
            "--adr: {} is a file, not a folder (expected the folder of the decision records)",
            dir.display()
        )));
    }
    crate::io::prove_writable_dir(dir).map_err(|why| Error::Usage(format!("--adr: {why}")))
}

pub fn check_supersedes(dir: &Path, given: &str) -> Result<()> {
    find_record(dir, given).map(|_| ())
}

/// The record numbered `given` in `dir`, or the usage error saying it is not there.
fn find_record(dir: &Path, given: &str) -> Result<Superseded> {
    let digits: String = given
        .trim()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let wanted: Option<u32> = digits.parse().ok();
    let found = wanted.and_then(|n| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| number_of(name) == Some(n))
            .collect();
        names.sort();
        names.into_iter().next().map(|file| Superseded {
            number: format!("{n:04}"),
            file,
        })
    });
    found.ok_or_else(|| {
        Error::Usage(format!(
            "--supersedes: expected the number of a record in {} (such as 0003), got {given:?}",
            dir.display()
        ))
    })
}

/// Write `text` to `path` only if no file has that name: written in full to a temporary file
/// first, then hard-linked into place (which fails when the name is taken), so a reader never
/// sees half a record and two writers never share a number. False when the name is taken.
fn create_exclusive(path: &Path, text: &str) -> Result<bool> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| io_error(dir, &e))?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| io_error(path, &e))?;
    match std::fs::hard_link(tmp.path(), path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(io_error(path, &e)),
    }
}

/// Mark the superseded record: its status line (MADR front matter `status:`, a `* Status:`
/// bullet, or the first line under a `## Status` heading) says "superseded by" the new one.
/// The user's file is replaced atomically (temp + rename) and only when such a line is found;
/// `None` when it was left as it was.
fn amend_status(old: &Path, new: &Path) -> Result<Option<PathBuf>> {
    let text = crate::io::read_text_file(old)?;
    let new_name = new
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let number = new_name.get(..4).unwrap_or("");
    let link = format!("superseded by [ADR-{number}]({new_name})");
    let Some(amended) = amended_text(&text, &link) else {
        return Ok(None);
    };
    crate::io::write_atomic(old, amended.as_bytes())?;
    Ok(Some(old.to_path_buf()))
}

/// `text` with its status changed to `link`, or `None` when it has no status we recognise.
fn amended_text(text: &str, link: &str) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let in_front_matter = lines.first().is_some_and(|l| l.trim_end() == "---");
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        let eol = if line.ends_with('\n') { "\n" } else { "" };
        if in_front_matter && i > 0 && t == "---" {
            break;
        }
        if in_front_matter && t.starts_with("status:") {
            out[i] = format!("status: \"{link}\"{eol}");
            return Some(out.concat());
        }
        if !in_front_matter {
            let bullet = t.trim_start_matches(['*', '-']).trim_start();
            if t != bullet && bullet.to_lowercase().starts_with("status:") {
                let indent = &line[..line.len() - line.trim_start().len()];
                let marker = &t[..t.len() - bullet.len()];
                out[i] = format!("{indent}{marker}Status: {link}{eol}");
                return Some(out.concat());
            }
            if t.eq_ignore_ascii_case("## status") {
                // The first non-blank line under the heading is the status (adr-tools).
                let j = (i + 1..lines.len()).find(|&j| !lines[j].trim().is_empty())?;
                if lines[j].trim_start().starts_with('#') {
                    return None;
                }
                let eol = if lines[j].ends_with('\n') { "\n" } else { "" };
                out[j] = format!("{}{eol}", capitalised(link));
                return Some(out.concat());
            }
        }
    }
    None
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// `target` relative to the folder `from` (both made absolute), with `/` separators.
fn relative(from: &Path, target: &Path) -> String {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (from, target) = (abs(from), abs(target));
    let f: Vec<Component> = from.components().collect();
    let t: Vec<Component> = target.components().collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_string(); f.len() - common];
    parts.extend(
        t[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

fn io_error(path: &Path, e: &std::io::Error) -> Error {
    Error::Runtime(format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_numbers_are_four_digits_and_a_dash() {
        assert_eq!(number_of("0007-use-rust.md"), Some(7));
        assert_eq!(number_of("12345-x.md"), Some(12345));
        assert_eq!(number_of("007-x.md"), None);
        assert_eq!(number_of("0007-x.txt"), None);
        assert_eq!(number_of("README.md"), None);
    }

    #[test]
    fn a_status_is_amended_in_each_form_and_only_there() {
        let link = "superseded by [ADR-0005](0005-new.md)";
        let madr = "---\nstatus: accepted\ndate: 2024-01-01\n---\n# Old\n\nstatus: text\n";
        assert_eq!(
            amended_text(madr, link).unwrap(),
            format!("---\nstatus: \"{link}\"\ndate: 2024-01-01\n---\n# Old\n\nstatus: text\n")
        );
        let bullet = "# Old\n\n* Status: accepted\n* Date: x\n";
        assert_eq!(
            amended_text(bullet, link).unwrap(),
            format!("# Old\n\n* Status: {link}\n* Date: x\n")
        );
        let nygard = "# 3. Old\n\nDate: x\n\n## Status\n\nAccepted\n\n## Context\n";
        assert_eq!(
            amended_text(nygard, link).unwrap(),
            "# 3. Old\n\nDate: x\n\n## Status\n\nSuperseded by [ADR-0005](0005-new.md)\n\n## Context\n"
        );
        assert_eq!(amended_text("# Old\n\nNo status here.\n", link), None);
    }

    #[test]
    fn the_date_is_the_day_or_nothing() {
        assert_eq!(day_of("2026-11-30 12:00:00 UTC"), "2026-11-30");
        assert_eq!(day_of("not recorded"), "");
    }

    #[test]
    fn a_taken_name_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("0001-x.md");
        assert!(create_exclusive(&p, "first").unwrap());
        assert!(!create_exclusive(&p, "second").unwrap());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "first");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp left"
        );
    }

    #[test]
    fn a_long_titles_slug_ends_on_a_whole_word() {
        let long = "Move nightly batch reporting off the primary Postgres instance";
        assert_eq!(
            slug_of(long),
            "move-nightly-batch-reporting-off-the-primary-postgres"
        );
        assert_eq!(slug_of("Adopt Rust"), "adopt-rust");
    }

    #[test]
    fn the_report_link_is_relative_to_the_adr_folder() {
        assert_eq!(
            relative(Path::new("/w/docs/adr"), Path::new("/w/reports/r.md")),
            "../../reports/r.md"
        );
        assert_eq!(relative(Path::new("/w"), Path::new("/w/r.md")), "r.md");
    }
}
