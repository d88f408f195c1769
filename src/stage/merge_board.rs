//! The `merge-board` stage: fold the agent turns in `last_turns` into the whiteboard (merge
//! rules 1–7, docs/design/whiteboard.md#merge-rules). No LLM, no clock: the caller passes the timestamp, so
//! every function here is pure.

use crate::error::Result;
use crate::meeting::circles;
use crate::meeting::events;
use crate::meeting::whiteboard::{
    apply_answers, link_evidence, note_process, raise_questions, record_findings, summary_lines,
    RECENT_ERRORS_CAP,
};
use crate::model::{
    AgentTurnResult, Board, Evidence, FindingKind, LastTurn, ProcessKind, Status, TurnStatus,
    EVIDENCE_CAP,
};
use crate::stage::Stage;
use crate::text::headline;

/// Merge rule 2's question test: ends with `?`/`？`, or starts with a question word.
pub(crate) fn is_question(item: &str) -> bool {
    let s = item.trim();
    if s.ends_with('?') || s.ends_with('？') {
        return true;
    }
    if ["是否", "如何", "为什么", "能否", "怎么"]
        .iter()
        .any(|w| s.starts_with(w))
    {
        return true;
    }
    // English words must be whole words: "However, ..." and "Showstopper" are statements.
    let lower = s.to_lowercase();
    ["whether", "how", "why", "should"].iter().any(|w| {
        lower.starts_with(w)
            && lower[w.len()..]
                .chars()
                .next()
                .is_none_or(|c| !c.is_alphanumeric() && c != '_')
    })
}

/// `merge-board`: fold the turns in `last_turns` into the whiteboard (merge rules 1–7,
/// docs/design/whiteboard.md#merge-rules) one after another in call order, each counting one
/// loop, exactly as if a fan-out's had run one by one (docs/design/agent-turn.md#fan-out).
pub fn merge(mut board: Board, now: &str) -> Result<Board> {
    // The guard also checks the board's invariants: each turn a participant's, once.
    board.expect_stage(Stage::MergeBoard)?;
    events::start_stage(&mut board);
    let turns: Vec<LastTurn> = std::mem::take(&mut board.last_turns);
    if board.status == Status::Reviewing {
        merge_reviews(&mut board, turns, now);
        return Ok(board);
    }
    if crate::meeting::council::active(&board).is_some() {
        crate::meeting::council::merge(&mut board, turns, now);
        return Ok(board);
    }
    // The questions the PM marked answered when it made this call (docs/design/whiteboard.md#questions).
    // A question they answer counts for the (first) turn: it was not a quiet one.
    let mut answered_before = answered(&board);
    let answers = std::mem::take(&mut board.record.pending_answers);
    apply_answers(&mut board, &answers);
    for turn in turns {
        merge_turn(&mut board, turn, now, answered_before);
        answered_before = answered(&board);
    }
    Ok(board)
}

/// Fold the reviewers' verdicts in, in call order (docs/design/review.md#objections): each
/// objection filed with its id, a failed review counted among the errors. A review is no
/// loop: the loop budget is the PM's questions'. With no objection open the draft is the
/// report.
fn merge_reviews(board: &mut Board, turns: Vec<LastTurn>, now: &str) {
    for turn in turns {
        let message = match (&turn.status, &turn.review) {
            (TurnStatus::Ok, Some(v)) => {
                let filed = crate::meeting::review::file_objections(board, &turn.agent_name, v);
                format!("{}: review, {filed} objections", turn.agent_name)
            }
            _ => {
                merge_error(board, &turn);
                format!("{}: review error recorded", turn.agent_name)
            }
        };
        events::push_at(board, now, events::board_merged(message));
    }
    crate::meeting::review::after_reviews(board);
}

/// How many of the meeting's questions are answered.
fn answered(board: &Board) -> usize {
    let questions = &board.record.questions;
    questions.iter().filter(|q| q.answer.is_some()).count()
}

/// Merge one turn (rules 1–7): `loop_count` + 1. `answered_before`: the questions answered
/// before it (docs/design/pm-round.md#circles: a turn that answered one was not quiet).
fn merge_turn(board: &mut Board, turn: LastTurn, now: &str, answered_before: usize) {
    let message;
    match (&turn.status, &turn.result) {
        (TurnStatus::Ok, Some(result)) => {
            let mut result = result.clone();
            result.agent_name = turn.agent_name.clone();
            let adds = circles::adds_something(board, &result);
            merge_result(board, &result);
            circles::record_answer(board, &turn.agent_name, Some(headline(&result.response)));
            crate::meeting::review::note_answer(
                board,
                &turn.agent_name,
                &headline(&result.response),
            );
            answered_by_person(board, &turn, &result);
            let quiet = !adds && answered(board) == answered_before;
            note_quiet_turn(board, now, quiet);
            message = format!(
                "{}: {} key points, {} risks, {} recommendations",
                turn.agent_name,
                result.key_points.len(),
                result.risks.len(),
                result.recommendations.len()
            );
            board
                .latest_agent_outputs
                .insert(turn.agent_name.clone(), result);
        }
        _ => {
            // A failed turn answered nothing: asking it again is a retry, not a circle.
            circles::record_answer(board, &turn.agent_name, None);
            merge_error(board, &turn);
            message = format!("{}: error turn recorded", turn.agent_name);
        }
    }
    events::push_at(board, now, events::board_merged(message));
    // At max_loops the board stays `running`: pm-step sees the spent budget, records the
    // forced finish and runs in forced_finish mode (docs/design/pm-round.md#pm-round).
    board.loop_count += 1;
}

/// A question a person answered directly counts as answered, whether or not the PM marks it
/// (docs/design/whiteboard.md#questions): the PM asked them one open question, and they
/// answered it.
fn answered_by_person(board: &mut Board, turn: &LastTurn, result: &AgentTurnResult) {
    let person = board
        .agents
        .get(&turn.agent_name)
        .is_some_and(|a| a.kind == crate::model::ParticipantKind::Human);
    if !person {
        return;
    }
    if let Some(id) = crate::meeting::whiteboard::question_asked(board, &turn.prompt) {
        let answer = headline(&result.response);
        let by = [turn.agent_name.clone()];
        // The loop this turn is merged in, as its findings are (`loop_count` moves after).
        let loop_no = board.current_loop();
        // It names an open question, so it is found.
        let _ = crate::meeting::whiteboard::answer_question(board, &id, &answer, &by, loop_no);
    }
}

/// Count an answered turn that added nothing new (docs/design/pm-round.md#circles); the second in a row
/// leaves a `meeting_stalled` event and a Process Note entry, and the PM is told.
fn note_quiet_turn(board: &mut Board, now: &str, quiet: bool) {
    if !quiet {
        board.record.quiet_turns = 0;
        return;
    }
    board.record.quiet_turns += 1;
    if board.record.quiet_turns == circles::STALL_TURNS {
        let ev = events::meeting_stalled(format!(
            "{} answers in a row added nothing new to the whiteboard",
            circles::STALL_TURNS
        ));
        events::push_at(board, now, ev);
        note_process(
            board,
            ProcessKind::Circles,
            format!(
                "The last {} answers added nothing new to the whiteboard; the PM was told to finish unless a required question was open.",
                circles::STALL_TURNS
            ),
        );
    }
}

fn merge_result(board: &mut Board, result: &AgentTurnResult) {
    let agent = result.agent_name.as_str();
    let loop_no = board.current_loop();
    let (questions, points): (Vec<String>, Vec<String>) = result
        .key_points
        .iter()
        .cloned()
        .partition(|s| is_question(s));
    let (risk_questions, risks): (Vec<String>, Vec<String>) =
        result.risks.iter().cloned().partition(|s| is_question(s));
    raise_questions(
        board,
        questions.into_iter().chain(risk_questions),
        agent,
        loop_no,
    );
    record_findings(board, FindingKind::KeyPoint, &points, agent, loop_no);
    record_findings(board, FindingKind::Risk, &risks, agent, loop_no);
    record_findings(
        board,
        FindingKind::Proposal,
        &result.recommendations,
        agent,
        loop_no,
    );
    // A recommendation that is an open question's exact text does not answer it: an answer is
    // not its own question (docs/design/whiteboard.md#questions), so the question stays open
    // — the PM's marks and a person's answer follow the same rule.
    keep_evidence(board, result, &points, &risks);
    let speaker = format!("{agent}: {}", headline(&result.response));
    board.summary = summary_lines(board, &speaker);
}

/// Keep the turn's citations (validated by agent-turn) for the report's Evidence Reviewed,
/// each with its number (`E1`, …), and link each to the finding of this answer its `supports`
/// names (docs/design/whiteboard.md#findings-and-evidence).
fn keep_evidence(board: &mut Board, result: &AgentTurnResult, points: &[String], risks: &[String]) {
    let loop_no = board.current_loop();
    for c in &result.citations {
        let known = board.evidence.iter().position(|e| {
            e.agent == result.agent_name && e.document_id == c.document_id && e.quote == c.quote
        });
        let id = match known {
            Some(i) => board.evidence[i].id.clone(),
            None if board.evidence.len() < EVIDENCE_CAP => {
                let id = format!("E{}", board.evidence.len() + 1);
                board.evidence.push(Evidence {
                    id: id.clone(),
                    agent: result.agent_name.clone(),
                    loop_no,
                    document_id: c.document_id.clone(),
                    source_path: c.source_path.clone(),
                    quote: c.quote.clone(),
                    verified: c.verified.unwrap_or(false),
                });
                id
            }
            None => continue,
        };
        if let Some(supports) = c.supports.as_deref().filter(|s| !s.trim().is_empty()) {
            let candidates: [(FindingKind, &[String]); 3] = [
                (FindingKind::KeyPoint, points),
                (FindingKind::Risk, risks),
                (FindingKind::Proposal, &result.recommendations),
            ];
            link_evidence(board, &candidates, supports, &id);
        }
    }
}

fn merge_error(board: &mut Board, turn: &LastTurn) {
    let reason = turn
        .error
        .as_deref()
        .unwrap_or("no result")
        .replace('\n', " ");
    board
        .recent_errors
        .push(format!("Agent {} failed: {reason}", turn.agent_name));

    let excess = board.recent_errors.len().saturating_sub(RECENT_ERRORS_CAP);
    board.recent_errors.drain(..excess);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::*;

    use crate::meeting::whiteboard::SUMMARY_MAX_CHARS;
    use crate::stage::fixtures::{board, NOW};

    fn ok_turn(b: &mut Board, name: &str, r: AgentTurnResult) {
        b.last_turns.push(LastTurn {
            agent_name: name.into(),
            status: TurnStatus::Ok,
            prompt: "q".into(),
            result: Some(r),
            error: None,
            review: None,
            council: None,
        });
    }

    fn result(response: &str, kp: &[&str], risks: &[&str], recs: &[&str]) -> AgentTurnResult {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect();
        AgentTurnResult {
            agent_name: "ignored".into(),
            response: response.into(),
            key_points: v(kp),
            risks: v(risks),
            recommendations: v(recs),
            citations: vec![],
        }
    }

    /// A turn after which the PM marked a question answered is not a quiet one, even when the
    /// answer itself repeats the whiteboard (docs/design/pm-round.md#circles).
    #[test]
    fn a_question_marked_answered_makes_a_turn_not_quiet() {
        let mut b = board(&[]);
        let same = || result("R.", &["Cost is 40k", "What does it cost?"], &[], &[]);
        ok_turn(&mut b, "arch", same());
        b = merge(b, NOW).unwrap();
        assert_eq!(b.record.questions[0].id, "Q1");
        ok_turn(&mut b, "arch", same());
        b = merge(b, NOW).unwrap();
        assert_eq!(b.record.quiet_turns, 1, "nothing new");
        b.record.pending_answers = vec![AnsweredQuestion {
            question: "Q1".into(),
            answer: "40k a year.".into(),
            by: vec!["arch".into()],
        }];
        ok_turn(&mut b, "arch", same());
        b = merge(b, NOW).unwrap();
        assert!(b.record.questions[0].answer.is_some());
        assert_eq!(b.record.quiet_turns, 0, "a question was answered");
    }

    #[test]
    fn a_board_with_two_turns_of_one_agent_is_refused() {
        let mut b = board(&[]);
        ok_turn(&mut b, "arch", result("R.", &[], &[], &[]));
        ok_turn(&mut b, "arch", result("R.", &[], &[], &[]));
        let e = merge(b, NOW).unwrap_err().to_string();
        assert!(
            e.contains("last_turns[1].agent_name: \"arch\" answers twice"),
            "{e}"
        );
    }

    #[test]
    fn rule1_latest_output_keeps_only_latest_success() {
        let mut b = board(&[]);
        ok_turn(&mut b, "arch", result("First.", &[], &[], &[]));
        b = merge(b, NOW).unwrap();
        ok_turn(&mut b, "arch", result("Second.", &[], &[], &[]));
        b = merge(b, NOW).unwrap();
        b.last_turns.push(LastTurn::failed(
            "arch".into(),
            "q".into(),
            "timeout".into(),
        ));
        b = merge(b, NOW).unwrap();
        assert_eq!(b.latest_agent_outputs["arch"].response, "Second.");
        assert_eq!(b.latest_agent_outputs["arch"].agent_name, "arch");
        assert_eq!(b.latest_agent_outputs.len(), 1);
    }

    #[test]
    fn rule2_lists_dedupe_and_questions_move() {
        let mut b = board(&[]);
        ok_turn(
            &mut b,
            "arch",
            result(
                "R.",
                &[
                    "Cost is 40k",
                    "Cost is 40k",
                    "How do we migrate",
                    "However, it is slow",
                    "是否需要迁移",
                ],
                &["Vendor lock-in", "Should we keep Postgres", "Why now？"],
                &["Pilot first"],
            ),
        );
        b = merge(b, NOW).unwrap();
        assert_eq!(b.key_points(), vec!["Cost is 40k", "However, it is slow"]);
        assert_eq!(b.risks(), vec!["Vendor lock-in"]);
        assert_eq!(
            b.open_questions(),
            vec![
                "How do we migrate",
                "是否需要迁移",
                "Should we keep Postgres",
                "Why now？"
            ]
        );
        assert_eq!(b.decisions(), vec!["Pilot first"]);
        // Exact-string dedupe only: a different case is a different item.
        ok_turn(
            &mut b,
            "biz",
            result("R.", &["cost is 40k", "Cost is 40k"], &[], &["Pilot first"]),
        );
        b = merge(b, NOW).unwrap();
        assert_eq!(
            b.key_points(),
            vec!["Cost is 40k", "However, it is slow", "cost is 40k"]
        );
        assert_eq!(b.decisions(), vec!["Pilot first"]);
    }

    #[test]
    fn question_detection() {
        for q in [
            "Is it ok?",
            "Is it ok？",
            "  how to scale  ",
            "WHETHER to buy",
            "why not",
            "should we",
            "如何迁移",
            "为什么",
            "能否",
            "怎么办",
        ] {
            assert!(is_question(q), "{q}");
        }
        for s in [
            "However it works",
            "Showstopper found",
            "Howard agrees",
            "Shoulder costs",
            "Costs are high.",
            "what is it",
        ] {
            assert!(!is_question(s), "{s}");
        }
    }

    /// A recommendation that only restates an open question — a required one included — does
    /// not answer it: an answer is not its own question. It stays open, unanswered in the
    /// record (it was marked "answered by arch: <the question itself>").
    #[test]
    fn a_recommendation_that_restates_a_question_does_not_answer_it() {
        let mut b = board(&["Pilot the warehouse?", "Keep Postgres?"]);
        ok_turn(
            &mut b,
            "arch",
            result(
                "R.",
                &[],
                &[],
                &["Pilot the warehouse?", "pilot the warehouse"],
            ),
        );
        b = merge(b, NOW).unwrap();
        assert_eq!(
            b.open_questions(),
            vec!["Pilot the warehouse?", "Keep Postgres?"]
        );
        assert!(b.record.questions.iter().all(|q| q.answer.is_none()));
        assert!(crate::model::check_invariants(&b).is_ok());
    }

    #[test]
    fn rule4_summary_three_lines_rewritten_and_cut() {
        let mut b = board(&["Q?"]);
        ok_turn(
            &mut b,
            "arch",
            result("We should pilot. Then migrate.", &["a", "b"], &[], &["c"]),
        );
        b = merge(b, NOW).unwrap();
        assert_eq!(b.summary, "Topic: Adopt a warehouse?\narch: We should pilot.\nKey points: 2, open questions: 1, candidate decisions: 1");
        ok_turn(&mut b, "biz", result(&"x".repeat(5000), &[], &[], &[]));
        b = merge(b, NOW).unwrap();
        let speaker = b.summary.lines().nth(1).unwrap();
        assert_eq!(
            speaker,
            format!("biz: {}", crate::text::headline(&"x".repeat(5000)))
        );
        assert!(!b.summary.contains("arch"), "rewritten, not appended");
        b.topic = "t".repeat(5000);
        ok_turn(&mut b, "arch", result("Short.", &[], &[], &[]));
        b = merge(b, NOW).unwrap();
        assert_eq!(b.summary.chars().count(), SUMMARY_MAX_CHARS);
    }

    #[test]
    fn rule5_lists_capped_at_20() {
        let mut b = board(&[]);
        let many: Vec<String> = (0..30).map(|i| format!("point {i}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        ok_turn(&mut b, "arch", result("R.", &refs, &refs, &refs));
        b = merge(b, NOW).unwrap();
        assert_eq!(b.key_points().len(), LIST_CAP);
        assert_eq!(b.key_points()[19], "point 19");
        assert_eq!(b.risks().len(), LIST_CAP);
        assert_eq!(b.decisions().len(), LIST_CAP);
        ok_turn(&mut b, "biz", result("R.", &["new one"], &[], &[]));
        b = merge(b, NOW).unwrap();
        assert!(!b.key_points().contains(&"new one".to_string()));
    }

    #[test]
    fn rule6_error_turn_changes_only_errors_and_loop() {
        let mut b = board(&["Q?"]);
        ok_turn(&mut b, "arch", result("R.", &["a"], &["r"], &["d"]));
        b = merge(b, NOW).unwrap();
        let before = b.clone();
        for i in 0..7 {
            b.last_turns.push(LastTurn::failed(
                "biz".into(),
                "q".into(),
                format!("invalid JSON {i}"),
            ));
            b = merge(b, NOW).unwrap();
        }
        assert_eq!(b.recent_errors.len(), RECENT_ERRORS_CAP);
        assert_eq!(
            b.recent_errors.last().unwrap(),
            "Agent biz failed: invalid JSON 6"
        );
        assert_eq!(
            (
                &b.key_points(),
                &b.risks(),
                &b.decisions(),
                &b.open_questions(),
                &b.summary
            ),
            (
                &before.key_points(),
                &before.risks(),
                &before.decisions(),
                &before.open_questions(),
                &before.summary
            )
        );
        assert_eq!(b.latest_agent_outputs, before.latest_agent_outputs);
        assert_eq!(b.loop_count, before.loop_count + 7);
    }

    #[test]
    fn rule7_loop_counts_every_attempt_and_pm_runs_at_max_loops() {
        let mut b = board(&[]);
        b.max_loops = 2;
        ok_turn(&mut b, "arch", result("R.", &[], &[], &[]));
        b = merge(b, NOW).unwrap();
        assert_eq!((b.loop_count, b.status), (1, Status::Running));
        b.last_turns.push(LastTurn {
            agent_name: "biz".into(),
            status: TurnStatus::Error,
            prompt: "q".into(),
            result: None,
            error: None,
            review: None,
            council: None,
        });
        b = merge(b, NOW).unwrap();
        assert_eq!((b.loop_count, b.status), (2, Status::Running));
        assert_eq!(b.next_stage(), Some(Stage::PmStep));
        assert!(b.last_turns.is_empty());
        assert_eq!(
            b.new_events.last().unwrap().event_type,
            EventType::BoardMerged
        );
        assert_eq!(
            b.new_events.last().unwrap().loop_no,
            2,
            "the loop just completed"
        );
    }

    #[test]
    fn evidence_keeps_every_turns_citations_once() {
        let mut b = board(&[]);
        let cite = |doc: &str, q: &str, v| DocumentCitation {
            document_id: doc.into(),
            source_path: doc.into(),
            quote: q.into(),
            supports: None,
            verified: Some(v),
        };
        let mut r = result("R.", &[], &[], &[]);
        r.citations = vec![
            cite("a.md", "x", true),
            cite("a.md", "x", true),
            cite("b.md", "y", false),
        ];
        ok_turn(&mut b, "arch", r.clone());
        b = merge(b, NOW).unwrap();
        r.citations = vec![cite("c.md", "z", true)];
        ok_turn(&mut b, "arch", r);
        b = merge(b, NOW).unwrap();
        let got: Vec<(&str, u32, &str, bool)> = b
            .evidence
            .iter()
            .map(|e| {
                (
                    e.document_id.as_str(),
                    e.loop_no,
                    e.quote.as_str(),
                    e.verified,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("a.md", 1, "x", true),
                ("b.md", 1, "y", false),
                ("c.md", 2, "z", true)
            ]
        );
        assert_eq!(
            b.latest_agent_outputs["arch"].citations.len(),
            1,
            "latest output keeps only the latest turn"
        );
    }

    /// Questions get stable ids in order of first appearance (required ones first), keep who
    /// raised them, and a question already on the record is never raised again.
    #[test]
    fn questions_get_stable_ids_and_provenance() {
        let mut b = board(&["Cost?"]);
        ok_turn(
            &mut b,
            "arch",
            result("R.", &["How fast?", "Cost?"], &["Why now?"], &[]),
        );
        b = merge(b, NOW).unwrap();
        let ids: Vec<(&str, &str, Option<&str>, Option<u32>)> = b
            .record
            .questions
            .iter()
            .map(|q| {
                (
                    q.id.as_str(),
                    q.text.as_str(),
                    q.raised_by.as_deref(),
                    q.loop_no,
                )
            })
            .collect();
        assert_eq!(
            ids,
            vec![
                ("Q1", "Cost?", None, None),
                ("Q2", "How fast?", Some("arch"), Some(1)),
                ("Q3", "Why now?", Some("arch"), Some(1)),
            ]
        );
        assert_eq!(b.record.questions[0].origin, QuestionOrigin::Required);
        assert_eq!(
            crate::meeting::whiteboard::numbered_open_questions(&b),
            ["Q1: Cost?", "Q2: How fast?", "Q3: Why now?"]
        );
        crate::meeting::whiteboard::answer_question(
            &mut b,
            "q2",
            "Fast enough.",
            &["arch".into()],
            1,
        )
        .unwrap();
        assert_eq!(b.open_questions(), ["Cost?", "Why now?"]);
        // Raised again after its answer: it stays answered, no new id.
        ok_turn(
            &mut b,
            "biz",
            result("R.", &["How fast?", "Who pays?"], &[], &[]),
        );
        b = merge(b, NOW).unwrap();
        assert_eq!(b.open_questions(), ["Cost?", "Why now?", "Who pays?"]);
        assert_eq!(b.record.questions.last().unwrap().id, "Q4");
        let e = crate::meeting::whiteboard::answer_question(&mut b, "Q9", "x", &[], 2)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"Q9\" is not a question") && e.contains("Q1, Q3, Q4"),
            "{e}"
        );
        // By exact text too.
        crate::meeting::whiteboard::answer_question(&mut b, "Who pays?", "Finance.", &[], 2)
            .unwrap();
        assert_eq!(b.open_questions(), ["Cost?", "Why now?"]);
    }

    /// An answer that only repeats its question answers nothing: the question stays open and
    /// the PM is told why (docs/design/whiteboard.md#questions).
    #[test]
    fn an_answer_that_repeats_the_question_leaves_it_open() {
        let mut b = board(&["What does the migration cost per year?"]);
        for echo in [
            "What does the migration cost per year?",
            "what does the migration cost, per year",
            "The migration cost?",
        ] {
            let e = crate::meeting::whiteboard::answer_question(&mut b, "Q1", echo, &[], 1)
                .unwrap_err()
                .to_string();
            assert!(e.contains("only repeats the question"), "{e}");
        }
        assert_eq!(
            b.open_questions(),
            ["What does the migration cost per year?"]
        );
        b.record.pending_answers = vec![AnsweredQuestion {
            question: "Q1".into(),
            answer: "What does the migration cost per year?".into(),
            by: vec!["arch".into()],
        }];
        ok_turn(&mut b, "arch", AgentTurnResult::default());
        let b = merge(b, NOW).unwrap();
        assert_eq!(b.record.questions[0].answer, None);
        assert!(
            b.recent_errors.iter().any(|e| e.contains("only repeats")),
            "{:?}",
            b.recent_errors
        );
        let mut b = b;
        crate::meeting::whiteboard::answer_question(&mut b, "Q1", "About 40k a year.", &[], 2)
            .unwrap();
        assert!(b.open_questions().is_empty());
    }

    /// Each kept citation gets its number; `supports` links it to the finding it names in the
    /// same answer (case, spacing and a final full stop aside); findings keep who said them.
    #[test]
    fn evidence_is_numbered_and_linked_to_what_it_supports() {
        let mut b = board(&[]);
        let cite = |q: &str, supports: Option<&str>| DocumentCitation {
            document_id: "a.md".into(),
            source_path: "a.md".into(),
            quote: q.into(),
            supports: supports.map(str::to_string),
            verified: Some(true),
        };
        let mut r = result("R.", &["Cost is 40k."], &["Lock-in"], &["Pilot first"]);
        r.citations = vec![
            cite("x", Some("cost is  40k")),
            cite("y", Some("Pilot first.")),
            cite("z", Some("not an item of this answer")),
        ];
        ok_turn(&mut b, "arch", r);
        b = merge(b, NOW).unwrap();
        let mut r = result("R.", &["Cost is 40k."], &[], &[]);
        r.citations = vec![cite("x", Some("Cost is 40k.")), cite("w", None)];
        ok_turn(&mut b, "biz", r);
        b = merge(b, NOW).unwrap();
        let ids: Vec<&str> = b.evidence.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["E1", "E2", "E3", "E4", "E5"]);
        let f = &b.record.findings;
        assert_eq!(
            (f[0].kind, f[0].text.as_str(), &f[0].by, &f[0].evidence),
            (
                FindingKind::KeyPoint,
                "Cost is 40k.",
                &vec!["arch".to_string(), "biz".to_string()],
                &vec!["E1".to_string(), "E4".to_string()]
            )
        );
        assert_eq!((f[1].kind, f[1].evidence.len()), (FindingKind::Risk, 0));
        assert_eq!(
            (f[2].kind, f[2].evidence.clone()),
            (FindingKind::Proposal, vec!["E2".to_string()])
        );
    }

    #[test]
    fn summary_has_no_bidi_controls() {
        let mut b = board(&[]);
        ok_turn(&mut b, "arch", result("Go \u{202E}with B.", &[], &[], &[]));
        b = merge(b, NOW).unwrap();
        assert!(b.summary.contains("arch: Go with B."), "{}", b.summary);
    }

    #[test]
    fn merge_refuses_board_without_turns() {
        let b = board(&[]);
        let e = merge(b, NOW).unwrap_err().to_string();
        assert_eq!(e, "pm-step should run next, not merge-board");
    }

    /// The one stage rule sends a `finishing` board with a turn to merge here too: the turn
    /// counts, and the PM's forced-finish round comes next.
    #[test]
    fn a_finishing_board_with_a_turn_is_merged() {
        let mut b = board(&[]);
        b.status = crate::model::Status::Finishing;
        ok_turn(&mut b, "arch", result("Late.", &["a"], &[], &[]));
        b = merge(b, NOW).unwrap();
        assert_eq!(
            (b.loop_count, b.status),
            (1, crate::model::Status::Finishing)
        );
        assert_eq!(b.key_points(), ["a"]);
        assert_eq!(b.next_stage(), Some(Stage::PmStep));
    }
}
