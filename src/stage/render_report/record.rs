//! The decision-record parts of the report's view (docs/design/report.md#report): the record header (date,
//! who answered for each caller, live or replayed, loops, documents), the questions by status,
//! the findings marked with their evidence, the proposals with who made them, the decision
//! and its options × dimensions table, and the Process Note's entries. All read from the
//! board's bounded state (`board.record`), never from the event log.

use serde::Serialize;

use crate::model::{Board, FindingKind, QuestionOrigin, ReportKind, PM_CALLER};
use crate::text::fold_ws;

/// What a finding without supporting evidence is marked with.
pub const NO_EVIDENCE: &str = "(no document cited)";

/// How a quote found in no document is marked wherever it is used as evidence.
pub const UNVERIFIED: &str = "unverified quote";

/// The record header: what a decision record needs before its content.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RecordHeader {
    /// `2026-11-30 12:00:00 UTC`, when the PM closed the meeting (else when it started).
    pub date: String,
    pub trace_id: String,
    /// How the answers were produced: live model calls, or replayed from a cassette.
    pub answers: String,
    /// Each caller (PM first) with its role and who answered for it.
    pub callers: Vec<CallerLine>,
    pub loops_used: u32,
    pub max_loops: u32,
    pub documents: Vec<String>,
    /// The documents the agents read only part of (docs/design/context.md#context-budget):
    /// `docs/x.md: first 12,000 of 40,960 characters`.
    pub cut_documents: Vec<String>,
    /// The documents only some participants read, and who (docs/design/context.md#documents-only-some-participants-read):
    /// `` `vendor.md`: biz ``.
    pub held_documents: Vec<String>,
    pub skipped_paths: Vec<super::SkippedRow>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct CallerLine {
    pub name: String,
    pub role: String,
    /// `openai gpt-4o-mini`, `replay`, or `not called`.
    pub source: String,
    /// Whether it took part (a board from before the record says nobody: all did).
    pub called: bool,
}

/// One question with its status, for Required / Answered / Open Questions.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct QuestionRow {
    pub id: String,
    pub text: String,
    pub answered: bool,
    pub answer: String,
    /// Who answered (agents named by the PM), joined; empty when not said.
    pub by: String,
    /// Loops completed when it was answered.
    pub answered_loop: u32,
    /// `required`, or who raised it and when (`raised by arch in loop 1`).
    pub origin: String,
}

/// The PM's decision line.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct DecisionView {
    pub choice: String,
    pub confidence: String,
    pub revisit_if: String,
    /// With "none of these": why no option can work.
    pub why_none: String,
}

/// The options × evaluation-dimensions table.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct AssessmentTable {
    pub dimensions: Vec<String>,
    pub rows: Vec<AssessmentRow>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct AssessmentRow {
    pub option: String,
    /// One per dimension, `—` where the PM gave none.
    pub cells: Vec<String>,
}

pub(crate) fn header(board: &Board) -> RecordHeader {
    let date = board
        .record
        .closed_at
        .as_deref()
        .or(board.record.started_at.as_deref())
        .map_or_else(|| "not recorded".to_string(), utc_date);
    let callers = caller_lines(board);
    // A person's answers are neither live model calls nor replayed ones (docs/design/agent-turn.md#a-human-at-the-table).
    let (people, sources): (Vec<_>, Vec<_>) = board
        .record
        .callers
        .iter()
        .partition(|(_, s)| s.provider == crate::model::HUMAN_PROVIDER);
    let sources: std::collections::BTreeMap<_, _> = sources.into_iter().collect();
    let replayed = sources.values().filter(|s| s.replayed).count();
    let mut notes: Vec<String> = Vec::new();
    for s in sources.values() {
        if let Some(n) = s.note.as_deref().map(fold_ws) {
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
    }
    let label = if notes.is_empty() {
        String::new()
    } else {
        format!(
            ", labelled {}",
            notes
                .iter()
                .map(|n| format!("\"{n}\""))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let sample = sources
        .values()
        .filter(|s| s.provider == crate::llm::sample::NAME)
        .count();
    let answers = if sample > 0 && sample == sources.len() {
        // Said first: nothing in this report is a model's (docs/design/llm.md#sample-provider).
        crate::llm::sample::HEADER.to_string()
    } else if sources.is_empty() && board.record.started_at.is_some() {
        "no model call was made".to_string()
    } else if sources.is_empty() {
        "not recorded on this board".to_string()
    } else if replayed == sources.len() {
        format!("replayed from a cassette, not live model calls{label}")
    } else if replayed == 0 {
        "live model calls".to_string()
    } else {
        format!("some live model calls, some replayed from a cassette{label}")
    };
    let answers = match people.len() {
        0 => answers,
        _ if sources.is_empty() => "given in person".to_string(),
        _ => format!(
            "{answers}; {} answered in person",
            people
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    RecordHeader {
        date,
        trace_id: board.trace_id.clone(),
        answers,
        callers,
        loops_used: board.loop_count,
        max_loops: board.max_loops,
        documents: board
            .context_bundle
            .documents
            .iter()
            .map(|d| d.document_id.clone())
            .collect(),
        held_documents: board
            .context_bundle
            .documents
            .iter()
            .filter(|d| !d.readers.is_empty())
            .map(|d| format!("`{}`: {}", d.document_id, d.readers.join(", ")))
            .collect(),
        cut_documents: board
            .context_bundle
            .documents
            .iter()
            .filter_map(|d| {
                let n = crate::text::thousands;
                Some(match d.shown_chars? {
                    0 => format!(
                        "`{}`: left out, no room in the context budget",
                        d.document_id
                    ),
                    shown => format!(
                        "`{}`: first {} of {} characters",
                        d.document_id,
                        n(shown as u64),
                        n(d.char_count as u64)
                    ),
                })
            })
            .collect(),
        skipped_paths: board
            .context_bundle
            .skipped_paths
            .iter()
            .map(|s| super::SkippedRow {
                path: s.path.clone(),
                reason: fold_ws(&s.reason),
            })
            .collect(),
    }
}

/// The PM and each participant, with its role and who answered for it.
fn caller_lines(board: &Board) -> Vec<CallerLine> {
    let called =
        |caller: &str| board.record.callers.is_empty() || board.record.callers.contains_key(caller);
    let mut callers = vec![CallerLine {
        name: "PM".into(),
        role: super::pm_role(board),
        source: source_of(board, PM_CALLER),
        called: called(PM_CALLER),
    }];
    for name in &board.participants {
        callers.push(CallerLine {
            name: name.clone(),
            role: super::agent_role(board, name),
            source: source_of(board, name),
            called: called(name),
        });
    }
    callers
}

/// `2026-11-30T12:00:00.123Z` → `2026-11-30 12:00:00 UTC` (other text is kept as it is).
fn utc_date(ts: &str) -> String {
    let t = ts.trim();
    let Some((date, time)) = t.split_once('T') else {
        return t.to_string();
    };
    let time = time.trim_end_matches('Z');
    let time = time.split('.').next().unwrap_or(time);
    format!("{date} {time} UTC")
}

fn source_of(board: &Board, caller: &str) -> String {
    match board.record.callers.get(caller) {
        // A board from before the record does not say.
        None if board.record.callers.is_empty() => String::new(),
        None => "not called".to_string(),
        Some(s) => {
            let mut out = s.provider.clone();
            if let Some(m) = s.model.as_ref().filter(|m| **m != s.provider) {
                out.push_str(&format!(" `{m}`"));
            }
            out
        }
    }
}

/// Every tracked question as a row, in id order.
pub(crate) fn questions(board: &Board) -> Vec<QuestionRow> {
    board
        .record
        .questions
        .iter()
        .map(|q| {
            let origin = match (q.origin, &q.raised_by, q.loop_no) {
                (QuestionOrigin::Required, _, _) => "required".to_string(),
                (_, Some(a), Some(l)) => format!("raised by {a} in loop {l}"),
                (_, Some(a), None) => format!("raised by {a}"),
                _ => "raised during the meeting".to_string(),
            };
            let (answered, answer, by, answered_loop) = match &q.answer {
                Some(a) => (true, fold_ws(&a.text), a.by.join(", "), a.loop_no),
                None => (false, String::new(), String::new(), 0),
            };
            QuestionRow {
                id: q.id.clone(),
                text: fold_ws(&q.text),
                answered,
                answer,
                by,
                answered_loop,
                origin,
            }
        })
        .collect()
}

/// A list's items marked with their evidence (`[E1, E4]` or the no-evidence marker; a quote
/// found in no document marked so where it is used, `[E2: unverified quote]`) and who said
/// them; for proposals, who proposed them (each item is a finding of the record).
pub(crate) fn marked_items(board: &Board, kind: FindingKind, items: &[String]) -> Vec<String> {
    let shown_id = |id: &str| {
        board
            .evidence
            .iter()
            .find(|e| e.id == id)
            .map(|e| match e.verified {
                true => e.id.clone(),
                false => format!("{}: {UNVERIFIED}", e.id),
            })
    };
    super::list_items(items)
        .into_iter()
        .zip(items.iter().filter(|s| !s.trim().is_empty()))
        .map(|(shown, raw)| {
            let f = board
                .record
                .findings
                .iter()
                .find(|f| f.kind == kind && f.text == *raw);
            let ids: Vec<String> = f
                .map(|f| f.evidence.iter().filter_map(|e| shown_id(e)).collect())
                .unwrap_or_default();
            let mark = if ids.is_empty() {
                NO_EVIDENCE.to_string()
            } else {
                format!("[{}]", ids.join(", "))
            };
            let who = f.map(|f| {
                let verb = if kind == FindingKind::Proposal {
                    "proposed by "
                } else {
                    ""
                };
                format!(" — {verb}{}, loop {}", f.by.join(", "), f.loop_no)
            });
            format!("{shown} {mark}{}", who.unwrap_or_default())
        })
        .collect()
}

pub(crate) fn decision(board: &Board, kind: ReportKind) -> Option<DecisionView> {
    if kind == ReportKind::Fallback {
        return None;
    }
    board.record.decision.as_ref().map(|d| DecisionView {
        choice: fold_ws(&d.choice),
        confidence: d.confidence.as_str().to_string(),
        revisit_if: sentence(&fold_ws(&d.revisit_if)),
        why_none: d
            .why_none
            .as_deref()
            .map(|w| sentence(&fold_ws(w)))
            .unwrap_or_default(),
    })
}

/// The PM's option assessments as a table: every option and dimension of the meeting file in
/// its order, so a cell the PM left out shows as `—` (an option or dimension the PM named that
/// the meeting file lacks is added after them); `None` without assessments.
pub(crate) fn assessments(board: &Board, kind: ReportKind) -> Option<AssessmentTable> {
    let cells = &board.record.option_assessments;
    if cells.is_empty() || kind == ReportKind::Fallback {
        return None;
    }
    let packet = &board.meeting_input.decision_packet;
    let declared = |items: &[String]| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for i in items.iter().map(|s| fold_ws(s)).filter(|s| !s.is_empty()) {
            if !out.contains(&i) {
                out.push(i);
            }
        }
        out
    };
    let mut options = declared(&packet.options);
    let mut dimensions = declared(&packet.evaluation_dimensions);
    let mut placed: Vec<(usize, usize, String)> = Vec::new();
    for a in cells {
        let o = place(&mut options, &packet.options, &a.option);
        let d = place(&mut dimensions, &packet.evaluation_dimensions, &a.dimension);
        if !placed.iter().any(|(po, pd, _)| (*po, *pd) == (o, d)) {
            placed.push((o, d, cell(&a.assessment)));
        }
    }
    let rows = options
        .iter()
        .enumerate()
        .map(|(oi, o)| AssessmentRow {
            option: cell(o),
            cells: (0..dimensions.len())
                .map(|di| {
                    placed
                        .iter()
                        .find(|(po, pd, _)| (*po, *pd) == (oi, di))
                        .map_or_else(|| "—".to_string(), |(_, _, t)| t.clone())
                })
                .collect(),
        })
        .collect();
    Some(AssessmentTable {
        dimensions: dimensions.iter().map(|d| cell(d)).collect(),
        rows,
    })
}

/// The index of `name` among `shown`, adding it in the meeting file's order: the meeting's
/// own item it names (equal, or one containing the other, case aside), else itself.
fn place(shown: &mut Vec<String>, declared: &[String], name: &str) -> usize {
    let norm = |s: &str| fold_ws(s).to_lowercase();
    let n = norm(name);
    let target = declared
        .iter()
        .find(|d| norm(d) == n)
        .or_else(|| {
            declared
                .iter()
                .find(|d| !n.is_empty() && (norm(d).contains(&n) || n.contains(&norm(d))))
        })
        .map_or_else(|| fold_ws(name), |d| fold_ws(d));
    if let Some(i) = shown.iter().position(|s| *s == target) {
        return i;
    }
    // Keep the meeting file's order among its own items; others go last.
    let rank = |s: &str| {
        declared
            .iter()
            .position(|d| fold_ws(d) == s)
            .unwrap_or(usize::MAX)
    };
    let r = rank(&target);
    let at = shown
        .iter()
        .position(|s| rank(s) > r)
        .unwrap_or(shown.len());
    shown.insert(at, target);
    at
}

/// `s` ending as a sentence does (a full stop added when it has no final punctuation).
fn sentence(s: &str) -> String {
    if s.is_empty() || s.ends_with(['.', '!', '?', '。', '！', '？']) {
        s.to_string()
    } else {
        format!("{s}.")
    }
}

/// Text fit for a table cell: one line, `|` escaped.
fn cell(s: &str) -> String {
    fold_ws(s).replace('|', "\\|")
}

/// How `last_error` starts when the report could not be saved (the board is then `failed`, and
/// render-report tries again): the one error of a board that is about the report itself.
pub(crate) const NOT_SAVED: &str = "report not saved";

/// Before a failed save's error replaces `last_error`: the meeting's own last error, which the
/// Process Note shows after `recent_errors`, moves to the end of `recent_errors`, so the retry
/// renders the same entries (docs/design/run-folder.md#resume).
pub(crate) fn keep_meeting_error(board: &mut Board) {
    if let Some(e) = board.last_error.take() {
        if !e.starts_with(NOT_SAVED) && !board.recent_errors.contains(&e) {
            board.recent_errors.push(e);
        }
    }
}

/// The Process Note's entries for the reader: what the stages recorded (per loop), whether
/// anyone was consulted, and, when the meeting was closed early, the required questions left
/// unanswered (a normal report shows them under Required Questions only). A board from before
/// the record falls back to its recorded errors.
pub(crate) fn process_entries(
    board: &Board,
    kind: ReportKind,
    questions: &[QuestionRow],
) -> Vec<String> {
    let mut out: Vec<String> = board
        .record
        .process
        .iter()
        .map(|e| format!("Loop {}: {}", e.loop_no, fold_ws(&e.text)))
        .collect();
    if board.record.process.is_empty() {
        // A failed save is no event of the meeting: the report being saved now says otherwise.
        let meeting_error = board
            .last_error
            .iter()
            .filter(|e| !e.starts_with(NOT_SAVED));
        for e in board.recent_errors.iter().chain(meeting_error) {
            let e = fold_ws(e);
            if !e.is_empty() && !out.contains(&e) {
                out.push(e);
            }
        }
    }
    if board.latest_agent_outputs.is_empty() {
        // Who closed it is a fact: the PM only by its own report (docs/design/report.md#fallback).
        let nobody_asked = board.loop_count == 0
            || (!board.record.callers.is_empty()
                && !crate::meeting::final_report::pm_asked_anyone(board));
        let program_closed = board.record.forced.is_some();
        out.push(if nobody_asked && board.has_final_report() && program_closed {
            "No participant was consulted: the program closed the meeting before the PM had asked anyone, and the PM's closing report rests on the brief and the documents alone.".to_string()
        } else if nobody_asked && board.has_final_report() {
            "No participant was consulted: the PM closed the meeting before asking anyone, so the report rests on the brief and the documents alone.".to_string()
        } else if nobody_asked {
            "No participant was consulted: the program closed the meeting before the PM had asked anyone, so the report rests on the brief and the documents alone.".to_string()
        } else {
            "No participant gave a usable answer: the report rests on the brief and the documents alone.".to_string()
        });
    }
    let unanswered: Vec<String> = questions
        .iter()
        .filter(|q| q.origin == "required" && !q.answered)
        .map(|q| format!("{} ({})", q.id, q.text))
        .collect();
    if !unanswered.is_empty() && kind != ReportKind::Normal {
        out.push(format!(
            "Required questions not answered: {}.",
            unanswered.join("; ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::model::Status;

    /// A report saved after a failed save is the report the first save would have written, of
    /// every kind: no "report not saved" entry, no note chosen by the save's error; and the
    /// finished board no longer carries that error.
    #[test]
    fn a_report_saved_after_a_failed_save_reads_as_a_first_save() {
        let dir = tempfile::tempdir().unwrap();
        const REPORT: &str = "### Executive Summary\nKeep it.\n\n### Recommendation\nKeep it.";
        let normal = |b: &mut crate::model::Board| {
            b.status = Status::Finishing;
            b.final_report = Some(REPORT.into());
        };
        let forced = |b: &mut crate::model::Board| {
            b.status = Status::ForcedStop;
            b.final_report = Some(REPORT.into());
        };
        let fallback = |b: &mut crate::model::Board| {
            b.status = Status::ForcedStop;
            b.last_error = Some("PM call failed: HTTP 500".into());
        };
        type Edit = fn(&mut crate::model::Board);
        let cases: [(&str, Edit); 3] = [
            ("normal", normal),
            ("forced", forced),
            ("fallback", fallback),
        ];
        for (name, edit) in cases {
            let mut board = crate::stage::fixtures::board(&[]);
            edit(&mut board);
            let first = dir.path().join(format!("{name}.md"));
            let want = super::super::run(board.clone(), None, Some(&first)).unwrap();
            // A folder where the report goes: the save fails.
            let path = dir.path().join(format!("{name}-retried.md"));
            std::fs::create_dir(&path).unwrap();
            let failed = super::super::run(board, None, Some(&path)).unwrap();
            assert_eq!(failed.status, Status::Failed, "{name}");
            std::fs::remove_dir(&path).unwrap();
            let saved = super::super::run(failed.board, None, Some(&path)).unwrap();
            assert_eq!(saved.status, Status::Finished, "{name}");
            assert!(
                !saved.markdown.contains("not saved"),
                "{name}: {}",
                saved.markdown
            );
            assert_eq!(saved.markdown, want.markdown, "{name}");
            assert_eq!(saved.board.last_error, None, "{name}");
        }
    }
}
