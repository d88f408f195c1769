//! The meeting report (SPEC §6): which kind of report a board calls for, the view model the
//! templates see, the tolerant reading of the PM's final report, the evidence list built only
//! from validated citations, the Mermaid sequence diagram, and saving the report.
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
use crate::model::{Board, DocumentCitation, ReportResult, Status, REPORT_VERSION};
use crate::stage::Stage;
use crate::text::fold_ws;

const NORMAL_TEMPLATE: &str = include_str!("../../share/templates/report.md.j2");
const FORCED_TEMPLATE: &str = include_str!("../../share/templates/forced.md.j2");
const FALLBACK_TEMPLATE: &str = include_str!("../../share/templates/fallback.md.j2");
const APPENDIX_TEMPLATE: &str = include_str!("../../share/templates/appendix.md.j2");

/// Default process notes, used when the board carries none.
pub const FORCED_NOTE: &str =
    "Meeting stopped after reaching max loop limit before full convergence.";
pub const FORCED_EARLY_NOTE: &str = "Meeting stopped early because the PM could not produce a valid decision; the PM wrote this report in forced-finish mode.";
pub const NORMAL_WITH_ERRORS_NOTE: &str = "The PM finished the meeting normally, but some turns failed on the way; the findings below lack what those turns would have added.";
pub const FALLBACK_NOTE: &str =
    "No valid PM report was produced; this report was generated locally from the whiteboard.";

/// What the Recommendation says when the PM's report has no recognisable recommendation part.
pub const SEE_SUMMARY: &str = "See the executive summary.";

/// Longest message text on one Mermaid arrow, in characters.
const MERMAID_TEXT_CHARS: usize = 60;

/// Which template a board calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportKind {
    /// The PM finished in normal mode with a report.
    Normal,
    /// The PM wrote the report in forced-finish mode; adds a Process Note.
    Forced,
    /// No valid PM report: built locally from the whiteboard.
    Fallback,
}

impl ReportKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ReportKind::Normal => "normal",
            ReportKind::Forced => "forced",
            ReportKind::Fallback => "fallback",
        }
    }

    fn template(self) -> (&'static str, &'static str) {
        match self {
            ReportKind::Normal => ("report.md.j2", NORMAL_TEMPLATE),
            ReportKind::Forced => ("forced.md.j2", FORCED_TEMPLATE),
            ReportKind::Fallback => ("fallback.md.j2", FALLBACK_TEMPLATE),
        }
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
pub fn report_kind(board: &Board) -> Result<ReportKind> {
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
            } else if board.process_note.is_some()
                || board
                    .event_log
                    .iter()
                    .any(|e| e.event_type == "forced_finish")
            {
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
            let (name, _) = kind.template();
            render_with(name, None, &view).map_err(|e| {
                Error::Runtime(format!("built-in template {name}: {}", one_line(&e)))
            })?
        }
        Some(t) => render_with("user", Some(&t.source), &view)
            .map_err(|e| Error::input(&t.label, "", one_line(&e)))?,
    };
    Ok(Rendered {
        kind,
        markdown: tidy_markdown(&markdown),
    })
}

/// Produce the ReportResult: with `report_file` the Markdown is written atomically and the
/// board becomes `finished`; without it nothing is saved and the status is unchanged.
/// A write failure is a runtime error (exit 1) and leaves no file behind.
pub fn finish(
    mut board: Board,
    rendered: Rendered,
    report_file: Option<&Path>,
) -> Result<ReportResult> {
    if let Some(path) = report_file {
        if let Err(e) = io::write_atomic(path, rendered.markdown.as_bytes()) {
            // The report is the meeting's last resort: when even it cannot be saved the
            // meeting has failed (SPEC §5). The board says why; the program exits 1.
            board.status = Status::Failed;
            board.last_error = Some(format!("report not saved: {e}"));
            return Ok(ReportResult {
                report_version: REPORT_VERSION,
                status: board.status,
                kind: rendered.kind.as_str().to_string(),
                report_file: None,
                markdown: rendered.markdown,
                board,
            });
        }
        board.status = Status::Finished;
        // Keep the reason of a forced or fallback report on the finished board, so a
        // re-render gives the same report kind and note.
        if rendered.kind != ReportKind::Normal && board.process_note.is_none() {
            board.process_note = Some(default_note(&board, rendered.kind).to_string());
        }
    }
    Ok(ReportResult {
        report_version: REPORT_VERSION,
        status: board.status,
        kind: rendered.kind.as_str().to_string(),
        report_file: report_file.map(|p| p.display().to_string()),
        markdown: rendered.markdown,
        board,
    })
}

/// `render-report` in one call: check the stage, render, save.
pub fn run(
    board: Board,
    template: Option<&UserTemplate>,
    report_file: Option<&Path>,
) -> Result<ReportResult> {
    let rendered = render(&board, template)?;
    finish(board, rendered, report_file)
}

fn one_line(e: &minijinja::Error) -> String {
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
    view: &View,
) -> std::result::Result<String, minijinja::Error> {
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
        let (n, src) = kind.template();
        env.add_template(n, src)?;
    }
    env.add_template("appendix.md.j2", APPENDIX_TEMPLATE)?;
    if let Some(src) = user_source {
        env.add_template(name, src)?;
    }
    env.get_template(name)?
        .render(minijinja::value::Value::from(minijinja::value::Serde(view)))
}

/// Collapse runs of blank lines outside code fences, drop trailing spaces, end with one newline.
fn tidy_markdown(text: &str) -> String {
    let mut out = String::new();
    let mut blank_run = 0;
    let mut in_fence = false;
    for line in text.lines() {
        let line = line.trim_end();
        if is_fence(line) {
            in_fence = !in_fence;
        }
        if line.is_empty() && !in_fence {
            blank_run += 1;
            if blank_run > 1 || out.is_empty() {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    if out.is_empty() {
        out.push('\n');
    }
    out
}

fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

// ---------------------------------------------------------------------------------------------
// View model: the variables every template sees.

/// The variables of every report template (documented in `share/templates/README.md`).
#[derive(Debug, Clone, Serialize)]
pub struct View {
    pub kind: ReportKind,
    pub topic: String,
    /// The decision packet's question, when it says more than the topic.
    pub decision_to_make: String,
    pub options: Vec<String>,
    /// From the PM's final report (empty in a fallback report).
    pub executive_summary: String,
    pub recommendation: String,
    /// The board's `summary` (three lines).
    pub current_summary: String,
    pub key_findings: Vec<String>,
    pub risks: Vec<String>,
    pub open_questions: Vec<String>,
    pub candidate_decisions: Vec<String>,
    pub evidence: Vec<EvidenceDoc>,
    /// Empty for a normal report.
    pub process_note: String,
    /// Agent and PM errors recorded on the board (forced and fallback reports list them).
    pub problems: Vec<String>,
    pub appendix: Appendix,
}

/// One cited document and what was quoted from it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceDoc {
    pub document_id: String,
    pub source_path: String,
    pub purpose: String,
    pub quotes: Vec<EvidenceQuote>,
    /// Agents whose latest answer cites this document.
    pub cited_by: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceQuote {
    pub text: String,
    pub verified: bool,
    pub cited_by: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Appendix {
    pub trace_id: String,
    pub participants: Vec<Participant>,
    pub loops_used: u32,
    pub max_loops: u32,
    pub llm_calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub by_caller: Vec<CallerRow>,
    /// The body of the `sequenceDiagram` (without the fence).
    pub mermaid: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Participant {
    pub name: String,
    pub role: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct CallerRow {
    pub caller: String,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// Build the template variables for `board` as a report of `kind`.
pub fn view_model(board: &Board, kind: ReportKind) -> View {
    let (executive_summary, recommendation) = match (&board.final_report, kind) {
        (Some(r), ReportKind::Normal | ReportKind::Forced) => {
            let parts = split_final_report(r);
            (parts.executive_summary, parts.recommendation)
        }
        _ => (String::new(), String::new()),
    };
    let mut problems: Vec<String> = Vec::new();
    for e in board.recent_errors.iter().chain(board.last_error.iter()) {
        let e = fold_ws(e);
        if !e.is_empty() && !problems.contains(&e) {
            problems.push(e);
        }
    }
    // A normal report still says what went wrong when turns failed on the way (SPEC §7):
    // otherwise a reader cannot tell that a participant's view is missing.
    let process_note = match kind {
        ReportKind::Normal if problems.is_empty() => String::new(),
        ReportKind::Normal => NORMAL_WITH_ERRORS_NOTE.to_string(),
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
        // One paragraph per line: the summary's lines are separate facts (SPEC §5 rule 4).
        current_summary: board
            .summary
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n"),
        key_findings: list_items(&board.key_points),
        risks: list_items(&board.risks),
        open_questions: list_items(&board.open_questions),
        candidate_decisions: list_items(&board.decisions),
        evidence: evidence(board),
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
                .collect::<Vec<_>>()
                .join("\n  ")
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Evidence

/// The documents cited by validated citations in the agents' latest answers, in bundle order.
/// A citation counts only if its `document_id` is in the bundle and its `source_path` matches
/// (SPEC §3); a quote marked `verified: false` is kept and shown as unverified, and one never
/// checked is checked here against the excerpt.
pub fn evidence(board: &Board) -> Vec<EvidenceDoc> {
    let docs = &board.context_bundle.documents;
    let mut by_doc: BTreeMap<usize, EvidenceDoc> = BTreeMap::new();
    // Every citation merge-board kept (validated by agent-turn), in meeting order; citations
    // still only in latest_agent_outputs (boards merged before `evidence` existed) count too.
    let mut cited: Vec<(String, DocumentCitation)> = board
        .evidence
        .iter()
        .map(|e| {
            let c = DocumentCitation {
                document_id: e.document_id.clone(),
                source_path: e.source_path.clone(),
                quote: e.quote.clone(),
                verified: Some(e.verified),
            };
            (e.agent.clone(), c)
        })
        .collect();
    for (agent, result) in &board.latest_agent_outputs {
        for c in &result.citations {
            if !board
                .evidence
                .iter()
                .any(|e| &e.agent == agent && e.document_id == c.document_id && e.quote == c.quote)
            {
                cited.push((agent.clone(), c.clone()));
            }
        }
    }
    for (agent, c) in &cited {
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
                }
                None => entry.quotes.push(EvidenceQuote {
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
// Appendix and Mermaid

fn appendix(board: &Board) -> Appendix {
    let mut participants = vec![Participant {
        name: "PM".to_string(),
        role: board
            .pm
            .as_ref()
            .map_or_else(|| "built-in PM".to_string(), |pm| fold_ws(&pm.role)),
    }];
    for name in &board.participants {
        participants.push(Participant {
            name: name.clone(),
            role: board
                .agents
                .get(name)
                .map(|a| fold_ws(&a.role))
                .unwrap_or_default(),
        });
    }
    Appendix {
        trace_id: board.trace_id.clone(),
        participants,
        loops_used: board.loop_count,
        max_loops: board.max_loops,
        llm_calls: board.usage.calls,
        prompt_tokens: board.usage.prompt_tokens,
        completion_tokens: board.usage.completion_tokens,
        by_caller: board
            .usage
            .by_caller
            .iter()
            .map(|(caller, u)| CallerRow {
                caller: caller.clone(),
                calls: u.calls,
                prompt_tokens: u.prompt_tokens,
                completion_tokens: u.completion_tokens,
            })
            .collect(),
        mermaid: mermaid(board),
    }
}

/// The loop number shown for an event: stages stamp events with the 1-based loop in progress
/// (`Board::current_loop`), so it is shown as is.
fn shown_loop(loop_no: u32) -> u32 {
    loop_no.max(1)
}

/// The `sequenceDiagram` of who was called in which loop, from the event log: one arrow per
/// task (PM → agent) and per result (agent → PM, crossed when the turn failed), and notes for
/// the PM's FINISH and the forced finish.
pub fn mermaid(board: &Board) -> String {
    let mut names: Vec<String> = board.participants.clone();
    for e in &board.event_log {
        for n in [&e.from, &e.to].into_iter().flatten() {
            let is_msg = matches!(e.kind.as_deref(), Some("task" | "result"));
            if is_msg && !is_pm(n) && n != "meeting" && !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    let ids: BTreeMap<&str, String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), mermaid_id(n, i)))
        .collect();
    let id = |n: &str| -> String {
        if is_pm(n) {
            "PM".to_string()
        } else {
            ids.get(n).cloned().unwrap_or_else(|| "PM".to_string())
        }
    };

    let mut lines = vec![
        "sequenceDiagram".to_string(),
        "    participant PM".to_string(),
    ];
    for n in &names {
        let i = &ids[n.as_str()];
        if i == n {
            lines.push(format!("    participant {n}"));
        } else {
            lines.push(format!("    participant {i} as {}", mermaid_text(n, 64)));
        }
    }
    for e in &board.event_log {
        let l = shown_loop(e.loop_no);
        let msg = e.message.as_deref().unwrap_or("");
        match (e.kind.as_deref(), e.event_type.as_str()) {
            (Some("task"), _) => {
                let (Some(from), Some(to)) = (&e.from, &e.to) else {
                    continue;
                };
                lines.push(format!(
                    "    {}->>{}: L{l} {}",
                    id(from),
                    id(to),
                    mermaid_text(msg, MERMAID_TEXT_CHARS)
                ));
            }
            (Some("result"), _) => {
                let (Some(from), Some(to)) = (&e.from, &e.to) else {
                    continue;
                };
                if e.status.as_deref() == Some("error") {
                    let why = e.error.as_deref().unwrap_or("");
                    let text = if why.trim().is_empty() {
                        "failed".to_string()
                    } else {
                        format!("failed ({})", mermaid_text(why, 40))
                    };
                    lines.push(format!("    {}--x{}: L{l} {text}", id(from), id(to)));
                } else {
                    let text = if msg.trim().is_empty() {
                        "answered".to_string()
                    } else {
                        mermaid_text(msg, MERMAID_TEXT_CHARS)
                    };
                    lines.push(format!("    {}-->>{}: L{l} {text}", id(from), id(to)));
                }
            }
            (_, "forced_finish") => {
                let why = if msg.trim().is_empty() {
                    String::new()
                } else {
                    format!(" ({})", mermaid_text(msg, 40))
                };
                lines.push(format!("    Note over PM: L{l} forced finish{why}"));
            }
            (_, "pm_decision") if msg.trim() == "FINISH" => {
                lines.push(format!("    Note over PM: L{l} FINISH"))
            }
            (_, "pm_round_failed") => lines.push(format!("    Note over PM: L{l} PM round failed")),
            _ => {}
        }
    }
    lines.join("\n")
}

fn is_pm(name: &str) -> bool {
    name.eq_ignore_ascii_case("pm")
}

/// Words Mermaid's sequence-diagram grammar reserves; an agent with such a name gets an alias.
const MERMAID_KEYWORDS: [&str; 22] = [
    "participant",
    "actor",
    "as",
    "loop",
    "alt",
    "else",
    "opt",
    "par",
    "and",
    "rect",
    "end",
    "note",
    "over",
    "activate",
    "deactivate",
    "autonumber",
    "title",
    "critical",
    "break",
    "box",
    "create",
    "destroy",
];

/// A Mermaid participant id for an agent: its name when that is a plain word, else `_a<n>`
/// (shown with `as <name>`), because `-` in an id would read as an arrow. Plain names start
/// with a letter, so an alias can never be another agent's name.
fn mermaid_id(name: &str, index: usize) -> String {
    let plain = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !MERMAID_KEYWORDS.contains(&name.to_ascii_lowercase().as_str());
    if plain && !is_pm(name) {
        name.to_string()
    } else {
        format!("_a{}", index + 1)
    }
}

/// Message text safe on one Mermaid line: whitespace folded, cut to `max` characters, and the
/// characters Mermaid would misread (`;` ends a statement, `#` starts an entity, `<`/`>` look
/// like HTML) written as Mermaid entity codes.
fn mermaid_text(text: &str, max: usize) -> String {
    let folded = fold_ws(text);
    let cut: String = if folded.chars().count() > max {
        let mut s: String = folded.chars().take(max.saturating_sub(3)).collect();
        s = s.trim_end().to_string();
        s.push_str("...");
        s
    } else {
        folded
    };
    let mut out = String::with_capacity(cut.len());
    for c in cut.chars() {
        match c {
            ';' => out.push_str("#59;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            c => out.push(c),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Reading the PM's final report

/// The two parts the PM is asked to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportParts {
    pub executive_summary: String,
    pub recommendation: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Summary,
    Recommendation,
}

const SUMMARY_LABELS: [&str; 7] = [
    "executive summary",
    "summary",
    "exec summary",
    "tl;dr",
    "执行摘要",
    "摘要",
    "总结",
];
const RECOMMENDATION_LABELS: [&str; 7] = [
    "recommendation",
    "recommendations",
    "final recommendation",
    "our recommendation",
    "建议",
    "推荐",
    "最终建议",
];

/// Split the PM's final report into its executive summary and recommendation. The labels are
/// recognised case-insensitively as a Markdown heading of any level, a bold or italic line, or
/// a `Label:` line (text after the colon belongs to the part). A part runs until the other
/// label, so sub-headings such as "What is still uncertain" stay with the part they follow;
/// text before the first label (minus a title heading) joins the summary. Without any label
/// the whole report is the summary and the recommendation points to it.
pub fn split_final_report(report: &str) -> ReportParts {
    let mut preamble: Vec<String> = Vec::new();
    let mut summary: Vec<String> = Vec::new();
    let mut rec: Vec<String> = Vec::new();
    let mut current: Option<Part> = None;
    let mut found = false;
    let mut in_fence = false;
    for line in report.lines() {
        if is_fence(line) {
            in_fence = !in_fence;
        }
        let label = if in_fence || is_fence(line) {
            None
        } else {
            match_label(line)
        };
        if let Some((part, rest)) = label {
            found = true;
            current = Some(part);
            if !rest.is_empty() {
                target(&mut preamble, &mut summary, &mut rec, current).push(rest);
            }
            continue;
        }
        target(&mut preamble, &mut summary, &mut rec, current).push(line.to_string());
    }
    if !found {
        let whole = demote_headings(report);
        return ReportParts {
            executive_summary: if whole.is_empty() {
                SEE_SUMMARY.to_string()
            } else {
                whole
            },
            recommendation: SEE_SUMMARY.to_string(),
        };
    }
    // A title such as "# Final Report" before the first part is dropped; other text is kept.
    let preamble: Vec<String> = preamble
        .into_iter()
        .filter(|l| !matches!(heading_level(l), Some(lvl) if lvl <= 2))
        .collect();
    let mut exec = demote_headings(&preamble.join("\n"));
    let body = demote_headings(&summary.join("\n"));
    if !body.is_empty() {
        if !exec.is_empty() {
            exec.push_str("\n\n");
        }
        exec.push_str(&body);
    }
    let rec = demote_headings(&rec.join("\n"));
    ReportParts {
        executive_summary: if exec.is_empty() {
            "The PM's report gives no executive summary.".to_string()
        } else {
            exec
        },
        recommendation: if rec.is_empty() {
            SEE_SUMMARY.to_string()
        } else {
            rec
        },
    }
}

fn target<'a>(
    preamble: &'a mut Vec<String>,
    summary: &'a mut Vec<String>,
    rec: &'a mut Vec<String>,
    part: Option<Part>,
) -> &'a mut Vec<String> {
    match part {
        None => preamble,
        Some(Part::Summary) => summary,
        Some(Part::Recommendation) => rec,
    }
}

/// The level of a Markdown ATX heading line (`## x` → 2).
fn heading_level(line: &str) -> Option<usize> {
    let t = line.trim_start();
    let level = t.chars().take_while(|&c| c == '#').count();
    if (1..=6).contains(&level) && (t.len() == level || t[level..].starts_with([' ', '\t'])) {
        Some(level)
    } else {
        None
    }
}

/// Whether `line` labels one of the two parts; returns the part and any text after the label.
fn match_label(line: &str) -> Option<(Part, String)> {
    let t = line.trim();
    if t.is_empty() {
        return None;
    }
    let (body, marked) = if let Some(level) = heading_level(t) {
        (
            t[level..].trim().trim_end_matches('#').trim().to_string(),
            true,
        )
    } else {
        strip_emphasis(t)
    };
    // "Recommendation: adopt X" carries text after the label.
    let (head, rest) = match body.find([':', '：']) {
        Some(i) => {
            let colon_len = body[i..].chars().next().map_or(1, char::len_utf8);
            (
                body[..i].to_string(),
                body[i + colon_len..].trim().to_string(),
            )
        }
        None => (body.clone(), String::new()),
    };
    let (head, head_marked) = strip_emphasis(head.trim());
    let had_colon = body.contains([':', '：']);
    // A plain line must be the bare label or `Label:` so ordinary sentences never match.
    if !marked && !head_marked && !had_colon && !is_bare_label_line(t) {
        return None;
    }
    let rest = strip_emphasis(rest.trim()).0;
    let norm = normalise_label(&head);
    if SUMMARY_LABELS.contains(&norm.as_str()) {
        Some((Part::Summary, rest))
    } else if RECOMMENDATION_LABELS.contains(&norm.as_str()) {
        Some((Part::Recommendation, rest))
    } else {
        None
    }
}

fn is_bare_label_line(t: &str) -> bool {
    let n = normalise_label(t);
    SUMMARY_LABELS.contains(&n.as_str()) || RECOMMENDATION_LABELS.contains(&n.as_str())
}

/// `**x**` / `__x__` / `*x*` / `_x_` around the start of a line: the inner label plus what
/// follows the closing marker (`**Recommendation:** adopt` → `Recommendation: adopt`).
fn strip_emphasis(t: &str) -> (String, bool) {
    for marker in ["**", "__", "*", "_"] {
        if let Some(inner) = t.strip_prefix(marker) {
            if let Some(end) = inner.find(marker) {
                let label = &inner[..end];
                let after = inner[end + marker.len()..].trim_start();
                let joined = if after.is_empty() {
                    label.to_string()
                } else if after.starts_with([':', '：']) || label.trim_end().ends_with([':', '：'])
                {
                    format!("{label}{after}")
                } else {
                    format!("{label}: {after}")
                };
                return (joined, true);
            }
        }
    }
    (t.to_string(), false)
}

/// Lower-case, without list numbering (`1.`, `2)`), emphasis marks or a trailing colon.
fn normalise_label(s: &str) -> String {
    let s = s.trim().trim_matches(|c| c == '*' || c == '_').trim();
    let s = s.trim_end_matches([':', '：']).trim();
    let digits = s.chars().take_while(char::is_ascii_digit).count();
    let s = if digits > 0 && s[digits..].starts_with(['.', ')']) {
        s[digits + 1..].trim()
    } else {
        s
    };
    s.to_lowercase()
}

/// Trim blank lines and shift headings so the shallowest is `###`: the report's own sections
/// are `##`, and a PM heading must not end them early.
fn demote_headings(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| !l.trim().is_empty());
    let end = lines.iter().rposition(|l| !l.trim().is_empty());
    let (Some(start), Some(end)) = (start, end) else {
        return String::new();
    };
    let lines = &lines[start..=end];
    let mut in_fence = false;
    let mut min_level = usize::MAX;
    for l in lines {
        if is_fence(l) {
            in_fence = !in_fence;
        } else if !in_fence {
            if let Some(lvl) = heading_level(l) {
                min_level = min_level.min(lvl);
            }
        }
    }
    let shift = 3_usize.saturating_sub(min_level);
    let mut out = Vec::with_capacity(lines.len());
    in_fence = false;
    for l in lines {
        if is_fence(l) {
            in_fence = !in_fence;
            out.push(l.trim_end().to_string());
            continue;
        }
        match heading_level(l) {
            Some(lvl) if !in_fence && shift > 0 => {
                let t = l.trim_start();
                let new_level = (lvl + shift).min(6);
                out.push(format!("{}{}", "#".repeat(new_level), t[lvl..].trim_end()));
            }
            _ => out.push(l.trim_end().to_string()),
        }
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_in_many_styles() {
        for (line, part, rest) in [
            ("### Executive Summary", Part::Summary, ""),
            ("## executive summary", Part::Summary, ""),
            ("# Recommendation #", Part::Recommendation, ""),
            ("**Executive Summary**", Part::Summary, ""),
            ("**Executive Summary:**", Part::Summary, ""),
            (
                "**Recommendation:** Adopt Rust.",
                Part::Recommendation,
                "Adopt Rust.",
            ),
            ("__Recommendations__", Part::Recommendation, ""),
            ("Executive summary:", Part::Summary, ""),
            ("Recommendation: go", Part::Recommendation, "go"),
            ("## 2. Recommendation", Part::Recommendation, ""),
            ("## 建议", Part::Recommendation, ""),
            ("Summary", Part::Summary, ""),
        ] {
            assert_eq!(match_label(line), Some((part, rest.to_string())), "{line}");
        }
        for line in [
            "We summarise the summary.",
            "The recommendation is clear",
            "## Risks",
            "- summary: x",
        ] {
            assert_eq!(match_label(line), None, "{line}");
        }
    }

    #[test]
    fn odd_reports_never_panic() {
        for text in [
            "",
            "#",
            "**",
            "*",
            "_",
            "：",
            "1.",
            "1)",
            "**Summary",
            "Summary:",
            "## ",
            "##\t",
            "```",
            "**a**b",
            "__**Recommendation**__",
            "é**Summary:**",
            "**摘要：** 好",
            "Recommendation：建议",
            "# # #",
            "9999999999.",
        ] {
            let parts = split_final_report(text);
            assert!(
                !parts.executive_summary.is_empty() && !parts.recommendation.is_empty(),
                "{text:?}"
            );
        }
        assert_eq!(split_final_report("**摘要：** 好").executive_summary, "好");
    }

    #[test]
    fn heading_levels() {
        assert_eq!(heading_level("## a"), Some(2));
        assert_eq!(heading_level("#hashtag"), None);
        assert_eq!(heading_level("####### seven"), None);
        assert_eq!(demote_headings("# A\ntext\n## B"), "### A\ntext\n#### B");
        assert_eq!(
            demote_headings("```\n# not a heading\n```"),
            "```\n# not a heading\n```"
        );
    }

    #[test]
    fn mermaid_text_is_safe() {
        assert_eq!(
            mermaid_text("a;b #1 <x>\nnext", 60),
            "a#59;b #35;1 #lt;x#gt; next"
        );
        let long = "x".repeat(100);
        assert_eq!(mermaid_text(&long, 10).chars().count(), 10);
    }

    #[test]
    fn tidy_collapses_blank_lines_outside_fences() {
        assert_eq!(
            tidy_markdown("\n# a\n\n\n\nb  \n```\n\n\n```\n\n\n"),
            "# a\n\nb\n```\n\n\n```\n"
        );
    }
}
