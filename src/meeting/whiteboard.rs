//! The whiteboard's bounds and the decision record's rules, shared by the stages that write
//! them (`init-board`, `pm-step`, `merge-board`): lists de-duplicated and capped, the
//! three-line summary (docs/design/whiteboard.md#merge-rules); questions with stable ids and their answers
//! (docs/design/whiteboard.md#questions); where each finding came from and the evidence that backs it, and the
//! Process Note's entries (docs/design/whiteboard.md#findings-and-evidence).

use crate::llm::{Client, Options};
use crate::model::{
    AnsweredQuestion, Board, CallerSource, Finding, FindingKind, ProcessEntry, ProcessKind,
    Question, QuestionAnswer, QuestionOrigin, LIST_CAP,
};
use crate::text::{fold_ws, sanitise};

/// Most questions the record keeps, open and answered together (ids are never reused).
pub(crate) const QUESTIONS_CAP: usize = 2 * LIST_CAP;
/// Most Process Note entries the record keeps (the latest).
pub(crate) const PROCESS_CAP: usize = 30;
/// Most findings the record keeps: one per item of the three lists.
pub(crate) const FINDINGS_CAP: usize = 3 * LIST_CAP;

/// Longest summary kept on the board (merge rule 4).
pub(crate) const SUMMARY_MAX_CHARS: usize = 1200;
/// How many recent agent errors the board keeps and the PM sees (merge rule 6).
pub(crate) const RECENT_ERRORS_CAP: usize = 5;

/// Append items in first-seen order, skipping blanks and exact duplicates, up to `LIST_CAP`.
pub(crate) fn append_unique(list: &mut Vec<String>, items: impl IntoIterator<Item = String>) {
    for item in items {
        if list.len() >= LIST_CAP {
            break;
        }
        if !item.trim().is_empty() && !list.contains(&item) {
            list.push(item);
        }
    }
}

/// The summary as a model sees it (docs/design/prompts.md#prompt-layout): without the `Topic:` line and the
/// counts line of merge rule 4, which the prompt's header and lists already say. Other text (a
/// hand-written summary) is kept as it is.
pub(crate) fn summary_for_prompt(board: &Board) -> String {
    let topic = format!("Topic: {}", board.topic.trim().replace('\n', " "));
    board
        .summary
        .trim()
        .lines()
        .filter(|l| {
            let counts = l.starts_with("Key points: ")
                && l.contains(", open questions: ")
                && l.contains(", candidate decisions: ");
            let repeats_topic = l.starts_with("Topic: ") && topic.starts_with(l.trim_end());
            !(counts || repeats_topic)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Merge rule 4: exactly three lines, at most `SUMMARY_MAX_CHARS` characters, cut from the end.
pub(crate) fn summary_lines(board: &Board, speaker_line: &str) -> String {
    let text = sanitise(&format!(
        "Topic: {}\n{}\nKey points: {}, open questions: {}, candidate decisions: {}",
        board.topic.trim().replace(['\n', '\r'], " "),
        speaker_line.replace(['\n', '\r'], " "),
        board.key_points().len(),
        board.open_questions().len(),
        board.decisions().len()
    ))
    .into_owned();
    text.chars().take(SUMMARY_MAX_CHARS).collect()
}

// ---------------------------------------------------------------------------------------------
// Questions (docs/design/whiteboard.md#questions)

/// The id the next new question gets: one past the highest so far.
fn next_question_id(questions: &[Question]) -> String {
    let highest = questions
        .iter()
        .filter_map(|q| q.id.strip_prefix('Q')?.parse::<usize>().ok())
        .max()
        .unwrap_or(0);
    format!("Q{}", highest + 1)
}

fn record_of<'a>(board: &'a Board, text: &str) -> Option<&'a Question> {
    board.record.questions.iter().find(|q| q.text == text)
}

/// The meeting file's required questions as they enter a fresh board (`init-board`): each
/// on the whiteboard with its record, `Q1`, `Q2`, … in the file's order, so every question on
/// the board has its id from the moment it is there (the board invariant, docs/design/flow.md#board-invariants).
pub(crate) fn seed_questions(board: &mut Board) {
    let required = board
        .meeting_input
        .decision_packet
        .required_questions
        .clone();
    let mut texts: Vec<String> = Vec::new();
    append_unique(&mut texts, required);
    for text in texts {
        if record_of(board, &text).is_some() {
            continue;
        }
        let id = next_question_id(&board.record.questions);
        board.record.questions.push(Question {
            id,
            text,
            origin: QuestionOrigin::Required,
            raised_by: None,
            loop_no: None,
            answer: None,
        });
    }
}

/// Questions an agent raised (merge rule 2): appended to `open_questions` with a new id,
/// unless the record already has the text (open or answered) or a cap is reached.
pub(crate) fn raise_questions(
    board: &mut Board,
    texts: impl IntoIterator<Item = String>,
    agent: &str,
    loop_no: u32,
) {
    for text in texts {
        if text.trim().is_empty() || record_of(board, &text).is_some() {
            continue;
        }
        let open = board
            .record
            .questions
            .iter()
            .filter(|q| q.answer.is_none())
            .count();
        if open >= LIST_CAP || board.record.questions.len() >= QUESTIONS_CAP {
            break;
        }
        let id = next_question_id(&board.record.questions);
        board.record.questions.push(Question {
            id,
            text,
            origin: QuestionOrigin::Raised,
            raised_by: Some(agent.to_string()),
            loop_no: Some(loop_no),
            answer: None,
        });
    }
}

/// The open questions as the models see them: `Q2: text`, in whiteboard order (each has its
/// record: the board invariant).
pub(crate) fn numbered_open_questions(board: &Board) -> Vec<String> {
    open_with_ids(board)
        .map(|(id, text)| format!("{id}: {text}"))
        .collect()
}

/// `(id, text)` of each open question, in the whiteboard's order.
pub(crate) fn open_with_ids(board: &Board) -> impl Iterator<Item = (&str, &str)> {
    board
        .record
        .questions
        .iter()
        .filter(|q| q.answer.is_none())
        .map(|q| (q.id.as_str(), q.text.as_str()))
}

/// Why the PM's `answered_questions` entry was not applied (docs/design/whiteboard.md#questions):
/// each reason said as it is, to the PM next round and in the Process Note.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NotAnswered {
    /// The reference names no question on the whiteboard (the reference, the open ids).
    NoSuchQuestion(String, Vec<String>),
    /// The entry gave no answer text (the question's id).
    NoAnswer(String),
    /// The answer only repeats its question (the question's id).
    RepeatsQuestion(String),
}

impl NotAnswered {
    /// The reason for the reader, in the Process Note: "The PM marked Q1 answered, <this>".
    pub(crate) fn for_reader(&self) -> String {
        match self {
            NotAnswered::NoSuchQuestion(..) => "which is not a question on the whiteboard".into(),
            NotAnswered::NoAnswer(_) => "without an answer".into(),
            NotAnswered::RepeatsQuestion(_) => "but its answer only repeats the question".into(),
        }
    }

    /// What the reference named: the question's id, or the reference as given.
    fn named(&self) -> String {
        match self {
            NotAnswered::NoSuchQuestion(r, _) => format!("{r:?}"),
            NotAnswered::NoAnswer(id) | NotAnswered::RepeatsQuestion(id) => id.clone(),
        }
    }
}

/// What the PM is told next round (`recent_errors`).
impl std::fmt::Display for NotAnswered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotAnswered::NoSuchQuestion(r, open) => write!(
                f,
                "answered_questions: {r:?} is not a question on the whiteboard (open: {})",
                if open.is_empty() {
                    "none".to_string()
                } else {
                    open.join(", ")
                }
            ),
            NotAnswered::NoAnswer(id) => write!(f, "answered_questions: {id} has no answer text"),
            NotAnswered::RepeatsQuestion(id) => write!(
                f,
                "answered_questions: the answer to {id} only repeats the question; an answer says what the question does not"
            ),
        }
    }
}

/// The question `reference` names: its id (any case), its exact text, or its id followed by
/// its text as the whiteboard shows it (`Q1: Which options keep …`: a model copies the line;
/// the text may be the shown one, cut).
fn question_named(board: &Board, reference: &str) -> Option<usize> {
    let qs = &board.record.questions;
    if let Some(i) = qs
        .iter()
        .position(|q| q.id.eq_ignore_ascii_case(reference) || q.text.trim() == reference)
    {
        return Some(i);
    }
    let norm = |s: &str| fold_ws(s).to_lowercase();
    qs.iter().position(|q| {
        let Some(rest) = reference
            .get(..q.id.len())
            .filter(|head| head.eq_ignore_ascii_case(&q.id))
            .map(|_| &reference[q.id.len()..])
        else {
            return false;
        };
        // The id ends there (`Q1:`, `Q1.`, `Q1 `), not inside a longer one (`Q12`).
        if !rest.starts_with([':', '.', ')', '-', ' ']) {
            return false;
        }
        let shown = norm(rest.trim_start_matches([':', '.', ')', '-', ' ']));
        let shown = shown.trim_end_matches(['…', '.']).trim_end();
        !shown.is_empty() && norm(&q.text).starts_with(shown)
    })
}

/// Mark the open question `reference` (see [`question_named`]) answered: it leaves
/// `open_questions` and keeps its answer, who gave it and the loop. A question answered
/// before keeps its first answer. `Err` says why the entry answers nothing.
pub(crate) fn answer_question(
    board: &mut Board,
    reference: &str,
    answer: &str,
    by: &[String],
    loop_no: u32,
) -> Result<(), NotAnswered> {
    let r = reference.trim();
    let Some(i) = question_named(board, r) else {
        let open = board
            .record
            .questions
            .iter()
            .filter(|q| q.answer.is_none())
            .map(|q| q.id.clone())
            .collect();
        return Err(NotAnswered::NoSuchQuestion(crate::text::cut(r, 80), open));
    };
    let id = board.record.questions[i].id.clone();
    if answer.trim().is_empty() {
        return Err(NotAnswered::NoAnswer(id));
    }
    let question = &board.record.questions[i].text;
    if !crate::text::adds_to(question, answer) && !crate::text::picks_one(question, answer) {
        return Err(NotAnswered::RepeatsQuestion(id));
    }
    let q = &mut board.record.questions[i];
    if q.answer.is_some() {
        return Ok(());
    }
    let mut who: Vec<String> = Vec::new();
    for b in by {
        let b = fold_ws(b);
        if !b.is_empty() && !who.contains(&b) {
            who.push(b);
        }
    }
    q.answer = Some(QuestionAnswer {
        text: answer.trim().to_string(),
        by: who,
        loop_no,
    });
    Ok(())
}

/// The one open question a person was asked directly (docs/design/whiteboard.md#questions):
/// the PM's question holds its exact text or names its id (`Q2`) as a word; `None` when it
/// names none or several.
pub(crate) fn question_asked(board: &Board, prompt: &str) -> Option<String> {
    let mut asked = board
        .record
        .questions
        .iter()
        .filter(|q| q.answer.is_none() && asks(prompt, q));
    match (asked.next(), asked.next()) {
        (Some(q), None) => Some(q.id.clone()),
        _ => None,
    }
}

/// Whether the PM's question `prompt` asks `q`: it holds its exact text, or names its id
/// (`Q2`) as a word.
pub(crate) fn asks(prompt: &str, q: &Question) -> bool {
    (!q.text.trim().is_empty() && prompt.contains(q.text.trim()))
        || prompt
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| w.eq_ignore_ascii_case(&q.id))
}

/// Apply the PM's `answered_questions` (docs/design/whiteboard.md#questions): each names an open question by
/// id, exact text or both; one that answers nothing goes to `recent_errors` (the PM sees it next
/// round) and the Process Note with its reason, and the meeting goes on.
pub(crate) fn apply_answers(board: &mut Board, answers: &[AnsweredQuestion]) {
    let loop_no = board.loop_count;
    for a in answers {
        if let Err(e) = answer_question(board, &a.question, &a.answer, &a.by, loop_no) {
            board.recent_errors.push(format!("PM {e}"));
            let excess = board.recent_errors.len().saturating_sub(RECENT_ERRORS_CAP);
            board.recent_errors.drain(..excess);
            note_process(
                board,
                ProcessKind::UnknownQuestion,
                format!(
                    "The PM marked {} answered, {}; ignored.",
                    e.named(),
                    e.for_reader()
                ),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Findings and the Process Note (docs/design/whiteboard.md#findings-and-evidence)

/// Record that `agent` said the items `texts` of list `kind` in `loop_no` (merge rule 2): a new
/// item gets its finding — in first-seen order, blanks skipped, each list up to `LIST_CAP`
/// items — and a known one gains the agent. The lists are views of these findings.
pub(crate) fn record_findings(
    board: &mut Board,
    kind: FindingKind,
    texts: &[String],
    agent: &str,
    loop_no: u32,
) {
    for text in texts {
        if text.trim().is_empty() {
            continue;
        }
        let findings = &mut board.record.findings;
        if let Some(f) = findings
            .iter_mut()
            .find(|f| f.kind == kind && f.text == *text)
        {
            if !f.by.iter().any(|b| b == agent) {
                f.by.push(agent.to_string());
            }
        } else if findings.iter().filter(|f| f.kind == kind).count() < LIST_CAP
            && findings.len() < FINDINGS_CAP
        {
            findings.push(Finding {
                kind,
                text: text.clone(),
                by: vec![agent.to_string()],
                loop_no,
                evidence: Vec::new(),
            });
        }
    }
}

/// How two texts are compared when a citation names what it `supports`: whitespace folded,
/// case and a final full stop ignored.
fn same_item(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        fold_ws(s)
            .trim_end_matches(['.', '。'])
            .trim()
            .to_lowercase()
    };
    norm(a) == norm(b)
}

/// Link evidence `id` to the finding among `candidates` (the answer's own items, by list) that
/// `supports` names; false when it names none of them.
pub(crate) fn link_evidence(
    board: &mut Board,
    candidates: &[(FindingKind, &[String])],
    supports: &str,
    id: &str,
) -> bool {
    for (kind, items) in candidates {
        let Some(text) = items.iter().find(|t| same_item(t, supports)) else {
            continue;
        };
        if let Some(f) = board
            .record
            .findings
            .iter_mut()
            .find(|f| f.kind == *kind && f.text == *text)
        {
            if !f.evidence.iter().any(|e| e == id) {
                f.evidence.push(id.to_string());
            }
            return true;
        }
    }
    false
}

/// Add an entry to the Process Note, for the reader (plain words, never a model instruction);
/// the record keeps the latest `PROCESS_CAP`.
pub(crate) fn note_process(board: &mut Board, kind: ProcessKind, text: impl Into<String>) {
    let loop_no = board.current_loop();
    board.record.process.push(ProcessEntry {
        loop_no,
        kind,
        text: text.into(),
    });
    let excess = board.record.process.len().saturating_sub(PROCESS_CAP);
    board.record.process.drain(..excess);
}

/// Append Process Note entries already made (a fan-out call's, with their loops), keeping the
/// latest `PROCESS_CAP`.
pub(crate) fn append_process(board: &mut Board, entries: Vec<ProcessEntry>) {
    board.record.process.extend(entries);
    let excess = board.record.process.len().saturating_sub(PROCESS_CAP);
    board.record.process.drain(..excess);
}

/// Record who answered for `caller` (the record header, docs/design/report.md#report): the provider and
/// model of its last call, and the cassette's label when it was replayed.
pub(crate) fn note_caller(board: &mut Board, caller: &str, client: &Client, opts: &Options) {
    let source = CallerSource {
        provider: client.provider_name().to_string(),
        replayed: client.replayed(),
        model: Some(opts.model.clone()).filter(|m| !m.trim().is_empty()),
        note: client.note().filter(|n| !n.trim().is_empty()),
    };
    board.record.callers.insert(caller.to_string(), source);
}
