//! How a meeting notices it is going in circles (docs/design/pm-round.md#circles): the measure that says a
//! PM question nearly repeats an earlier one, the questions it is compared with, and the
//! rule that says answers stopped adding anything.
//!
//! The measure is the Jaccard similarity of the two questions' word bigrams after
//! normalisation (lower case, words are runs of letters and digits, everything else a
//! separator). Bigrams keep word order, so "cost of A over B" and "cost of B over A" differ,
//! while a reworded filler ("Please, …", "again") changes few of them. A question of one word
//! is compared by its word. Two questions are a repeat at `REPEAT_SIMILARITY` or above.

use std::collections::HashSet;

use crate::model::{AgentTurnResult, AskedQuestion, Board};
use crate::text::{cut, fold_ws};

/// The similarity at and above which a question repeats an earlier one.
pub const REPEAT_SIMILARITY: f64 = 0.8;

/// How many of the PM's latest questions the board keeps to compare with (a repeat of an
/// older one goes unnoticed; the board stays bounded however long the meeting runs).
pub(crate) const ASKED_CAP: usize = 30;

/// Agent turns in a row that add nothing new before the PM is told the meeting has stalled.
pub(crate) const STALL_TURNS: u32 = 2;

/// The reason a meeting that keeps repeating itself is closed with (forced finish).
pub(crate) const GOING_IN_CIRCLES: &str = "the meeting is going in circles";

/// The latest question the PM asked `agent` that `question` nearly repeats, if any. A question
/// whose turn failed was dropped ([`record_answer`]): asking it again is a retry, not a circle.
pub(crate) fn earlier_ask<'a>(
    board: &'a Board,
    agent: &str,
    question: &str,
) -> Option<&'a AskedQuestion> {
    board
        .record
        .asked
        .iter()
        .rev()
        .find(|a| a.agent == agent && repeats(question, &a.question))
}

/// Keep the PM's question to `agent` (the latest `ASKED_CAP`).
pub(crate) fn record_ask(board: &mut Board, agent: &str, question: &str) {
    let loop_no = board.current_loop();
    let asked = &mut board.record.asked;
    asked.push(AskedQuestion {
        agent: agent.to_string(),
        question: cut(&fold_ws(question), crate::meeting::prompts::ITEM_CHARS),
        loop_no,
        answer: None,
    });
    let excess = asked.len().saturating_sub(ASKED_CAP);
    asked.drain(..excess);
}

/// Keep the headline of `agent`'s answer with the question it answered; `None` (a failed
/// turn) forgets the question, so the PM may ask it again.
pub(crate) fn record_answer(board: &mut Board, agent: &str, headline: Option<String>) {
    let asked = &mut board.record.asked;
    let Some(i) = asked
        .iter()
        .rposition(|a| a.agent == agent && a.answer.is_none())
    else {
        return;
    };
    match headline {
        Some(h) => asked[i].answer = Some(h),
        None => {
            asked.remove(i);
        }
    }
}

/// Whether an answer brings anything the whiteboard does not have yet: a key point, risk,
/// recommendation or question that is not already one of its items (exact text, as the lists
/// de-duplicate). An item a full list cannot take is still new.
pub(crate) fn adds_something(board: &Board, result: &AgentTurnResult) -> bool {
    let known = |item: &String| {
        board.key_points.contains(item)
            || board.risks.contains(item)
            || board.decisions.contains(item)
            || board.open_questions.contains(item)
            || board.record.questions.iter().any(|q| &q.text == item)
    };
    result
        .key_points
        .iter()
        .chain(&result.risks)
        .chain(&result.recommendations)
        .any(|item| !item.trim().is_empty() && !known(item))
}

/// Whether the last `STALL_TURNS` agent turns added nothing new (the PM is told so).
pub(crate) fn stalled(board: &Board) -> bool {
    board.record.quiet_turns >= STALL_TURNS
}

/// The normalised words of a text.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The word bigrams of a text (its one word, when it has only one).
fn bigrams(text: &str) -> HashSet<String> {
    let w = words(text);
    if w.len() == 1 {
        return w.into_iter().collect();
    }
    w.windows(2).map(|p| format!("{} {}", p[0], p[1])).collect()
}

/// Jaccard similarity of the two texts' word bigrams, in 0..=1; 0 when either has no words.
pub fn similarity(a: &str, b: &str) -> f64 {
    let (a, b) = (bigrams(a), bigrams(b));
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let common = a.intersection(&b).count();
    common as f64 / (a.len() + b.len() - common) as f64
}

/// Whether `question` nearly repeats `earlier` (see the module comment).
pub fn repeats(question: &str, earlier: &str) -> bool {
    similarity(question, earlier) >= REPEAT_SIMILARITY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_question_in_other_case_and_punctuation_repeats() {
        let q = "What does the managed warehouse cost per month?";
        assert_eq!(similarity(q, q), 1.0);
        assert!(repeats(
            "what does the managed warehouse cost, per month",
            q
        ));
    }

    #[test]
    fn a_small_rewording_repeats_a_new_subject_does_not() {
        let q = "What does the managed warehouse cost per month for the nightly reports?";
        assert!(repeats(
            "What does the managed warehouse cost per month for the nightly reports, roughly?",
            q
        ));
        assert!(!repeats(
            "What does the read replica cost per month for the nightly reports?",
            q
        ));
        // Numbered look-alikes are different questions.
        assert!(!repeats(
            "Question 2: what is the main consideration number 2 for this decision?",
            "Question 1: what is the main consideration number 1 for this decision?"
        ));
    }

    #[test]
    fn word_order_counts() {
        assert!(!repeats(
            "Is the cost of A higher than B?",
            "Is the cost of B higher than A?"
        ));
    }

    #[test]
    fn edge_cases() {
        assert_eq!(similarity("", ""), 0.0, "nothing repeats nothing");
        assert_eq!(similarity("?!", "?"), 0.0);
        assert!(
            repeats("Budget?", "budget"),
            "one word: compared by its word"
        );
        assert!(!repeats("Budget?", "Timeline?"));
        assert!(!repeats("Budget?", "What is the budget?"));
        assert!(repeats(
            "Wie hoch sind die Kosten?",
            "wie hoch sind die kosten"
        ));
        assert!(
            repeats("成本是多少", "成本是多少？"),
            "unicode letters are words"
        );
    }

    #[test]
    fn the_threshold_is_inclusive() {
        // 4 of 5 bigrams shared, union 5: exactly 0.8.
        let a = "a b c d e f";
        let b = "a b c d e";
        assert_eq!(similarity(a, b), 0.8);
        assert!(repeats(a, b));
    }
}
