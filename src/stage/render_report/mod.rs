//! `render-report`, the meeting report (docs/design/report.md#report): which kind of report a board calls
//! for, the view model the templates see, the evidence list built only from validated
//! citations, and saving the report. The tolerant reading of the PM's final report lives in
//! `crate::meeting::final_report` (pm-step checks a FINISH with it too), the final tidying in
//! `markdown`, the appendix's sequence diagram in `mermaid`.
//!
//! Everything a template needs is computed here, so the templates in `share/templates/` stay
//! plain lists and headings that a user can copy and override with `--template`. Nothing here
//! reads the clock: the same board always gives the same bytes.

use std::collections::BTreeMap;
use std::path::Path;

use minijinja::syntax::SyntaxConfig;
use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::io;
use crate::meeting::budget::live_cost;
pub use crate::model::ReportKind;
use crate::model::{
    AllTokens, Board, DocumentCitation, FindingKind, ProcessKind, ReportResult, Status,
    REPORT_VERSION,
};
use crate::stage::Stage;
use crate::text::fold_ws;

mod adr;
pub mod compare;
mod markdown;
mod mermaid;
mod record;

pub use adr::{
    adr_note, amend_superseded, check_adr_dir, check_supersedes, sample_refusal, write_adr,
    write_adr_noting, AdrOutcome, AdrRequest,
};

pub use crate::text::markdown::{split_final_report, ReportParts, SEE_SUMMARY};
pub use mermaid::mermaid;

use markdown::tidy_markdown;

const NORMAL_TEMPLATE: &str = include_str!("../../../share/templates/report.md.j2");
const FORCED_TEMPLATE: &str = include_str!("../../../share/templates/forced.md.j2");
const FALLBACK_TEMPLATE: &str = include_str!("../../../share/templates/fallback.md.j2");
const APPENDIX_TEMPLATE: &str = include_str!("../../../share/templates/appendix.md.j2");
/// The parts every kind includes (and a user template may include).
const PARTS: [(&str, &str); 7] = [
    ("appendix.md.j2", APPENDIX_TEMPLATE),
    (
        "record.md.j2",
        include_str!("../../../share/templates/record.md.j2"),
    ),
    (
        "questions.md.j2",
        include_str!("../../../share/templates/questions.md.j2"),
    ),
    (
        "findings.md.j2",
        include_str!("../../../share/templates/findings.md.j2"),
    ),
    (
        "evidence.md.j2",
        include_str!("../../../share/templates/evidence.md.j2"),
    ),
    (
        "challenges.md.j2",
        include_str!("../../../share/templates/challenges.md.j2"),
    ),
    (
        "council.md.j2",
        include_str!("../../../share/templates/council.md.j2"),
    ),
];

/// Default process notes, used when the board carries none.
pub const FORCED_NOTE: &str =
    "Meeting stopped after reaching max loop limit before full convergence.";
pub(crate) const FORCED_EARLY_NOTE: &str = "Meeting stopped early because the PM could not produce a valid decision; the PM wrote this report in forced-finish mode.";
pub const NORMAL_WITH_ERRORS_NOTE: &str = "The PM finished the meeting normally, but some turns failed on the way; the findings below lack what those turns would have added.";
/// A normal report's note when nothing failed but something is worth knowing.
pub const NORMAL_NOTE: &str =
    "The PM finished the meeting normally. Worth knowing about how it went:";
pub const FALLBACK_NOTE: &str =
    "No valid PM report was produced; this report was generated locally from the whiteboard.";

/// The built-in template of a report kind: its name and source.
fn builtin_template(kind: ReportKind) -> (&'static str, &'static str) {
    match kind {
        ReportKind::Normal => ("report.md.j2", NORMAL_TEMPLATE),
        ReportKind::Forced => ("forced.md.j2", FORCED_TEMPLATE),
        ReportKind::Fallback => ("fallback.md.j2", FALLBACK_TEMPLATE),
    }
}

/// A report rendered from a board, not yet saved.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub kind: ReportKind,
    pub markdown: String,
}

/// A user template given with `--template F`; it replaces the template of whichever kind the
/// board calls for (the `kind` variable tells the template which one that is).
#[derive(Debug, Clone)]
pub struct UserTemplate {
    /// The file name, for error messages.
    pub label: String,
    pub source: String,
}

impl UserTemplate {
    /// Read a template file; a missing or unreadable file is bad input (exit 2).
    pub fn load(path: &Path) -> Result<UserTemplate> {
        Ok(UserTemplate {
            label: path.display().to_string(),
            source: io::read_text_file(path)?,
        })
    }
}

/// Which report this board calls for, or the usage error naming the stage that should run
/// instead.
pub(crate) fn report_kind(board: &Board) -> Result<ReportKind> {
    board.expect_stage(Stage::RenderReport)?;
    let has_report = board.has_final_report();
    Ok(match board.status {
        Status::ForcedStop if has_report => ReportKind::Forced,
        Status::ForcedStop => ReportKind::Fallback,
        // Re-rendering a saved report, or retrying one that could not be written: the forced
        // path leaves its process note (or a forced_finish event) behind.
        Status::Finished | Status::Failed => {
            if !has_report {
                ReportKind::Fallback
            } else if board.process_note.is_some() || board.forced_finish_recorded() {
                ReportKind::Forced
            } else {
                ReportKind::Normal
            }
        }
        // `finishing` with a report: the guard let nothing else through.
        _ => ReportKind::Normal,
    })
}

/// Render the report a board calls for, with the embedded template of its kind or `template`.
pub fn render(board: &Board, template: Option<&UserTemplate>) -> Result<Rendered> {
    let kind = report_kind(board)?;
    let view = view_model(board, kind);
    let markdown = match template {
        None => {
            let (name, _) = builtin_template(kind);
            render_with(name, None, &view).map_err(|e| {
                Error::Runtime(format!("built-in template {name}: {}", template_error(&e)))
            })?
        }
        Some(t) => render_with("user", Some(&t.source), &view)
            .map_err(|e| Error::input(&t.label, "", template_error(&e)))?,
    };
    Ok(Rendered {
        kind,
        markdown: tidy_markdown(&markdown),
    })
}

/// Produce the ReportResult: with `report_file` the Markdown is written atomically and the
/// board becomes `finished`; without it nothing is saved and the status is unchanged.
/// A write failure is a runtime error (exit 1) and leaves no file behind.
pub(crate) fn finish(
    mut board: Board,
    rendered: Rendered,
    report_file: Option<&Path>,
) -> Result<ReportResult> {
    if let Some(path) = report_file {
        // Keep the reason of a forced or fallback report on the board, so a re-render (or the
        // retry of a failed save) gives the same report kind and note.
        if rendered.kind != ReportKind::Normal && board.process_note.is_none() {
            board.process_note = Some(default_note(&board, rendered.kind).to_string());
        }
        if let Err(e) = io::write_atomic(path, rendered.markdown.as_bytes()) {
            // The report is the meeting's last resort: when even it cannot be saved the
            // meeting has failed (docs/design/flow.md#statuses). The board says why; the program
            // exits 1.
            board.status = Status::Failed;
            // The error this report showed stays on the board for the retry to show again.
            record::keep_meeting_error(&mut board);
            board.last_error = Some(format!("{}: {e}", record::NOT_SAVED));
            return Ok(ReportResult {
                report_version: REPORT_VERSION,
                status: board.status,
                kind: rendered.kind,
                report_file: None,
                markdown: rendered.markdown,
                cost: live_cost(&board),
                board,
            });
        }
        board.status = Status::Finished;
        // The save that failed before is over: the board no longer says the report is lost.
        if board
            .last_error
            .as_deref()
            .is_some_and(|e| e.starts_with(record::NOT_SAVED))
        {
            board.last_error = None;
        }
    }
    Ok(ReportResult {
        report_version: REPORT_VERSION,
        status: board.status,
        kind: rendered.kind,
        report_file: report_file.map(|p| p.display().to_string()),
        markdown: rendered.markdown,
        cost: live_cost(&board),
        board,
    })
}

/// Refuse (exit 2) a report path that exists and is neither a regular file nor a folder: the
/// report replaces the file by a rename, so a device or a pipe there (`/dev/null` as root)
/// would be replaced by a regular file. (A folder is not replaced: its save fails, exit 1.)
/// The one rule of `render-report --report-file` and `meeting --report-file`
/// (docs/design/report.md#report).
pub fn check_report_file(report: &Path) -> Result<()> {
    if report.metadata().is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return Err(Error::Usage(format!(
            "--report-file: {} is not a regular file (a device, a pipe or a socket); expected a Markdown file path",
            report.display()
        )));
    }
    Ok(())
}

/// Refuse (exit 2) to render a board that still waits for its report with nowhere to save it:
/// its status would stay as it is, so `next-stage` would say render-report again and a shell
/// loop over the stages would never end (docs/design/report.md#report). A finished board is
/// rendered again without one; `--markdown` (the report alone, no board) only prints it.
pub fn require_report_file(board: &Board) -> Result<()> {
    // A board meant for another stage, or a broken one, is refused for that first.
    board.expect_stage(Stage::RenderReport)?;
    if board.status == Status::Finished {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "--report-file: the board is {status} and waits for its report to be saved; with \
         nowhere to save it, it would stay {status} (next-stage says render-report again): give \
         --report-file FILE (meeting's would be reports/{slug}.md), or --markdown to only print \
         the report",
        status = board.status.as_str(),
        slug = crate::text::slug(&board.topic)
    )))
}

/// `render-report` in one call: check the stage and the report path, render, save.
pub fn run(
    mut board: Board,
    template: Option<&UserTemplate>,
    report_file: Option<&Path>,
) -> Result<ReportResult> {
    report_file.map(check_report_file).transpose()?;
    crate::meeting::events::start_stage(&mut board);
    let rendered = render(&board, template)?;
    finish(board, rendered, report_file)
}

/// [`run`] with the diagram drawn from `flow` (`--events FILE`: the whole meeting) instead of
/// the board's last loops; the board printed is the board read (docs/design/report.md#report).
pub fn run_with_flow(
    mut board: Board,
    flow: crate::model::Flow,
    template: Option<&UserTemplate>,
    report_file: Option<&Path>,
) -> Result<ReportResult> {
    report_file.map(check_report_file).transpose()?;
    crate::meeting::events::start_stage(&mut board);
    let drawn = Board {
        flow,
        ..board.clone()
    };
    let rendered = render(&drawn, template)?;
    finish(board, rendered, report_file)
}

fn template_error(e: &minijinja::Error) -> String {
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        s.push_str(&format!(": {inner}"));
        source = inner.source();
    }
    s.replace('\n', " ")
}

fn render_with(
    name: &str,
    user_source: Option<&str>,
    view: &impl Serialize,
) -> std::result::Result<String, minijinja::Error> {
    // What the templates show of models, documents and the board cannot hide what follows it
    // (docs/design/report.md#sanitising); the templates' own Markdown is not touched.
    let mut view = serde_json::to_value(view).expect("the view serialises to JSON");
    markdown::neutralise_view(&mut view);
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_syntax(
        SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(true)
            .build()
            .expect("static syntax config is valid"),
    );
    // Every built-in template is available, so a user template can `{% include %}` the
    // appendix or a whole built-in report.
    for kind in [ReportKind::Normal, ReportKind::Forced, ReportKind::Fallback] {
        let (n, src) = builtin_template(kind);
        env.add_template(n, src)?;
    }
    for (n, src) in PARTS {
        env.add_template(n, src)?;
    }
    if let Some(src) = user_source {
        env.add_template(name, src)?;
    }
    env.get_template(name)?
        .render(minijinja::value::Value::from(minijinja::value::Serde(
            &view,
        )))
}

// ---------------------------------------------------------------------------------------------
// View model: the variables every template sees.

/// The variables of every report template (documented in `share/templates/README.md`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct View {
    pub kind: ReportKind,
    pub topic: String,
    /// The decision packet's question, when it says more than the topic.
    pub decision_to_make: String,
    pub options: Vec<String>,
    /// From the PM's final report (empty in a fallback report).
    pub executive_summary: String,
    pub recommendation: String,
    /// The record header (date, trace id, who answered, loops, documents).
    pub record: record::RecordHeader,
    /// The PM's structured decision and its options × dimensions table (FINISH; absent when
    /// the PM gave none).
    pub decision: Option<record::DecisionView>,
    pub assessments: Option<record::AssessmentTable>,
    /// The reviewers' objections and how each was resolved (docs/design/review.md#report);
    /// empty without review (no section).
    pub challenges: Vec<crate::meeting::review::Challenge>,
    /// The council round (docs/design/council.md#report): each member's vote and ranking, the
    /// vote, the dissent, whether the decision follows it; absent without a council.
    pub council: Option<crate::meeting::council::CouncilView>,
    /// Every tracked question with its status; the required ones; answered questions raised
    /// during the meeting.
    pub questions: Vec<record::QuestionRow>,
    pub required_questions: Vec<record::QuestionRow>,
    pub answered_questions: Vec<record::QuestionRow>,
    /// The agents' recommendations, each with who proposed it and its evidence.
    pub proposals: Vec<String>,
    /// The board's `summary` (three lines).
    pub current_summary: String,
    /// Key findings and risks, each marked with its evidence (`[E3]`) or `(no document
    /// cited)`, and who said it.
    pub key_findings: Vec<String>,
    pub risks: Vec<String>,
    /// Only what is really open, each with its id.
    pub open_questions: Vec<String>,
    /// The agents' recommendations as plain items (kept for older custom templates).
    pub candidate_decisions: Vec<String>,
    pub evidence: Vec<EvidenceDoc>,
    /// Why the PM made no decision, in words from what happened (a fallback report's first
    /// lines, docs/design/report.md#fallback); empty when the PM wrote the report.
    pub no_decision: String,
    /// Empty for a normal report.
    pub process_note: String,
    /// Agent and PM errors recorded on the board (forced and fallback reports list them).
    pub problems: Vec<String>,
    pub appendix: Appendix,
}

/// One cited document and what was quoted from it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct EvidenceDoc {
    pub document_id: String,
    pub source_path: String,
    pub purpose: String,
    pub quotes: Vec<EvidenceQuote>,
    /// Agents whose latest answer cites this document.
    pub cited_by: Vec<String>,
    /// Who read it, when only some did (empty: everyone).
    pub read_by: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct EvidenceQuote {
    /// The evidence numbers (`E3`) of this quote, one per citing agent.
    pub ids: Vec<String>,
    pub text: String,
    pub verified: bool,
    pub cited_by: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Appendix {
    pub trace_id: String,
    pub participants: Vec<Participant>,
    pub loops_used: u32,
    pub max_loops: u32,
    pub llm_calls: u64,
    /// Prompt, completion and cache counts (`prompt_tokens`, ..., every one written).
    #[serde(flatten)]
    pub tokens: AllTokens,
    /// The meeting's token budget, when it had one (0: none).
    pub max_total_tokens: u64,
    /// The meeting's cost budget in one phrase (`$0.0123 of $0.50 spent`), empty when none
    /// (docs/design/pm-round.md#cost-budget).
    pub cost_budget: String,
    /// What its live calls cost, in one phrase (`$0.0123 at LiteLLM's prices of 2026-12-03`),
    /// empty when none was live (docs/design/llm.md#prices).
    pub cost: String,
    pub by_caller: Vec<CallerRow>,
    /// The body of the `sequenceDiagram` (without the fence).
    pub mermaid: String,
    /// Secrets redacted from the collected documents, and the documents they were in.
    pub redactions: u32,
    pub redacted_documents: Vec<String>,
    /// The collected documents (their ids) and the paths skipped, with the reasons.
    pub documents: Vec<String>,
    pub skipped_paths: Vec<SkippedRow>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct SkippedRow {
    pub path: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Participant {
    pub name: String,
    pub role: String,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct CallerRow {
    pub caller: String,
    pub calls: u64,
    #[serde(flatten)]
    pub tokens: AllTokens,
}

/// Build the template variables for `board` as a report of `kind`.
pub(crate) fn view_model(board: &Board, kind: ReportKind) -> View {
    let (executive_summary, recommendation) = match (&board.final_report, kind) {
        (Some(r), ReportKind::Normal | ReportKind::Forced) => {
            let parts = split_final_report(r);
            (parts.executive_summary, parts.recommendation)
        }
        _ => (String::new(), String::new()),
    };
    let questions = record::questions(board);
    let problems = record::process_entries(board, kind, &questions);
    let failed_turns = board.recent_errors.iter().any(|e| e.starts_with("Agent "))
        || board
            .record
            .process
            .iter()
            .any(|e| e.kind == ProcessKind::TurnFailed);
    // A normal report still says what went wrong or was unusual (the Process Note,
    // docs/design/report.md#report): otherwise a reader cannot tell that a participant's view is missing.
    let process_note = match kind {
        ReportKind::Normal if problems.is_empty() => String::new(),
        ReportKind::Normal if failed_turns => NORMAL_WITH_ERRORS_NOTE.to_string(),
        ReportKind::Normal => NORMAL_NOTE.to_string(),
        _ => board
            .process_note
            .clone()
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| default_note(board, kind).to_string()),
    };
    let decision = board.meeting_input.decision_packet.decision_to_make.trim();
    View {
        kind,
        topic: board.topic.trim().to_string(),
        decision_to_make: if decision == board.topic.trim() {
            String::new()
        } else {
            decision.to_string()
        },
        options: list_items(&board.meeting_input.decision_packet.options),
        executive_summary,
        recommendation,
        record: record::header(board),
        decision: record::decision(board, kind),
        assessments: record::assessments(board, kind),
        challenges: crate::meeting::review::challenges(board),
        council: crate::meeting::council::view(
            board,
            record::decision(board, kind)
                .as_ref()
                .map(|d| d.choice.as_str()),
        ),
        required_questions: questions
            .iter()
            .filter(|q| q.origin == "required")
            .cloned()
            .collect(),
        answered_questions: questions
            .iter()
            .filter(|q| q.origin != "required" && q.answered)
            .cloned()
            .collect(),
        open_questions: questions
            .iter()
            .filter(|q| !q.answered)
            .map(|q| format!("{}: {}", q.id, q.text))
            .collect(),
        questions,
        proposals: record::marked_items(board, FindingKind::Proposal, &board.decisions()),
        // One paragraph per line: the summary's lines are separate facts
        // (docs/design/whiteboard.md#merge-rules, rule 4).
        current_summary: board
            .summary
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n"),
        key_findings: record::marked_items(board, FindingKind::KeyPoint, &board.key_points()),
        risks: record::marked_items(board, FindingKind::Risk, &board.risks()),
        candidate_decisions: list_items(&board.decisions()),
        evidence: evidence(board),
        no_decision: match kind {
            ReportKind::Fallback => crate::meeting::final_report::no_decision_reason(board)
                .unwrap_or_else(|| "the PM's report was not used".into()),
            _ => String::new(),
        },
        process_note,
        problems,
        appendix: appendix(board),
    }
}

fn default_note(board: &Board, kind: ReportKind) -> &'static str {
    match kind {
        ReportKind::Fallback => FALLBACK_NOTE,
        _ if board.loop_count < board.max_loops && board.last_error.is_some() => FORCED_EARLY_NOTE,
        _ => FORCED_NOTE,
    }
}

/// Board list items as Markdown list entries: trimmed, with continuation lines indented so a
/// multi-line item stays one list item.
fn list_items(items: &[String]) -> Vec<String> {
    items
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.lines()
                .map(str::trim_end)
                .enumerate()
                .map(|(i, l)| {
                    // A continuation line must not open a heading inside the item.
                    if i > 0 && crate::text::markdown::opens_structure(l) {
                        format!("\\{}", l.trim_start())
                    } else {
                        l.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n  ")
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Evidence

/// The documents cited by validated citations in the agents' latest answers, in bundle order.
/// A citation counts only if its `document_id` is in the bundle and its `source_path` matches
/// (docs/design/agent-turn.md#citations-and-quotes); a quote marked `verified: false` is kept and shown as
/// unverified, and one never checked is checked here against the excerpt.
pub(crate) fn evidence(board: &Board) -> Vec<EvidenceDoc> {
    let docs = &board.context_bundle.documents;
    let mut by_doc: BTreeMap<usize, EvidenceDoc> = BTreeMap::new();
    // Every citation merge-board kept (validated by agent-turn), in meeting order; citations
    // still only in latest_agent_outputs (boards merged before `evidence` existed) count too.
    let mut cited: Vec<(String, DocumentCitation, Option<String>)> = board
        .evidence
        .iter()
        .map(|e| {
            let c = DocumentCitation {
                document_id: e.document_id.clone(),
                source_path: e.source_path.clone(),
                quote: e.quote.clone(),
                supports: None,
                verified: Some(e.verified),
            };
            (e.agent.clone(), c, Some(e.id.clone()))
        })
        .collect();
    for (agent, result) in &board.latest_agent_outputs {
        for c in &result.citations {
            if !board
                .evidence
                .iter()
                .any(|e| &e.agent == agent && e.document_id == c.document_id && e.quote == c.quote)
            {
                cited.push((agent.clone(), c.clone(), None));
            }
        }
    }
    for (agent, c, id) in &cited {
        {
            let Some(idx) = docs.iter().position(|d| d.document_id == c.document_id) else {
                continue;
            };
            let doc = &docs[idx];
            if doc.source_path != c.source_path {
                continue;
            }
            let entry = by_doc.entry(idx).or_insert_with(|| EvidenceDoc {
                document_id: doc.document_id.clone(),
                source_path: doc.source_path.clone(),
                purpose: fold_ws(&doc.purpose),
                quotes: Vec::new(),
                cited_by: Vec::new(),
                read_by: doc.readers.clone(),
            });
            if !entry.cited_by.contains(agent) {
                entry.cited_by.push(agent.clone());
                entry.cited_by.sort();
            }
            let text = fold_ws(&c.quote);
            if text.is_empty() {
                continue;
            }
            let verified = c
                .verified
                .unwrap_or_else(|| crate::text::verify_quote(&doc.excerpt, &c.quote));
            match entry.quotes.iter_mut().find(|q| q.text == text) {
                Some(q) => {
                    q.verified &= verified;
                    if !q.cited_by.contains(agent) {
                        q.cited_by.push(agent.clone());
                    }
                    q.ids.extend(id.iter().cloned());
                }
                None => entry.quotes.push(EvidenceQuote {
                    ids: id.iter().cloned().collect(),
                    text,
                    verified,
                    cited_by: vec![agent.clone()],
                }),
            }
        }
    }
    by_doc.into_values().collect()
}

// ---------------------------------------------------------------------------------------------
// Appendix (its sequence diagram is `mermaid`)

/// The PM's role as the report names it: its config's, else the built-in PM.
fn pm_role(board: &Board) -> String {
    board
        .pm
        .as_ref()
        .map_or_else(|| "built-in PM".to_string(), |pm| fold_ws(&pm.role))
}

/// A participant's role as the report names it (none without a config).
fn agent_role(board: &Board, name: &str) -> String {
    board
        .agents
        .get(name)
        .map(|a| fold_ws(&a.role))
        .unwrap_or_default()
}

fn appendix(board: &Board) -> Appendix {
    let docs = &board.context_bundle.documents;
    let mut participants = vec![Participant {
        name: "PM".to_string(),
        role: pm_role(board),
    }];
    for name in &board.participants {
        participants.push(Participant {
            name: name.clone(),
            role: agent_role(board, name),
        });
    }
    Appendix {
        trace_id: board.trace_id.clone(),
        participants,
        loops_used: board.loop_count,
        max_loops: board.max_loops,
        llm_calls: board.usage.attempts(),
        tokens: AllTokens(board.usage.tokens),
        max_total_tokens: board.max_total_tokens.unwrap_or(0),
        cost_budget: board
            .max_cost
            .map(|limit| {
                let spent = crate::meeting::budget::spent(board, &limit);
                use crate::llm::prices::dollars;
                format!("{} of {} spent", dollars(spent), dollars(limit.usd))
            })
            .unwrap_or_default(),
        cost: live_cost(board)
            .map(|c| {
                let paid_there = board
                    .record
                    .from_parent
                    .as_ref()
                    .map_or(String::new(), |u| {
                        format!(
                            "; the first {} calls answered from the log of the meeting this one \
                         was forked from, whose cost they are",
                            u.attempts()
                        )
                    });
                format!(
                    "{} ({}){paid_there}",
                    crate::llm::prices::cost_phrase(&c),
                    crate::llm::prices::cost_source(&c)
                )
            })
            .unwrap_or_default(),
        by_caller: board
            .usage
            .by_caller
            .iter()
            .map(|(caller, u)| CallerRow {
                caller: caller.clone(),
                calls: u.calls,
                tokens: AllTokens(u.tokens),
            })
            .collect(),
        mermaid: mermaid(board),
        redactions: docs.iter().fold(0, |n, d| n.saturating_add(d.redactions)),
        redacted_documents: docs
            .iter()
            .filter(|d| d.redactions > 0)
            .map(|d| d.document_id.clone())
            .collect(),
        documents: docs.iter().map(|d| d.document_id.clone()).collect(),
        skipped_paths: board
            .context_bundle
            .skipped_paths
            .iter()
            .map(|s| SkippedRow {
                path: s.path.clone(),
                reason: s.reason.clone(),
            })
            .collect(),
    }
}
