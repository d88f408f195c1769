//! How a meeting notices it is going in circles (docs/design/pm-round.md#circles): the PM
//! questions a new one is compared with (by `text::repeat`, the one measure of a near-repeat,
//! which the sample PM asks by too), and the rule that says answers stopped adding anything.

use crate::model::{AgentTurnResult, AskedQuestion, Board};
use crate::text::repeat::repeats;
use crate::text::{cut, fold_ws};

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

/// Where a question the PM repeated to a participant after seeing the earlier answer goes
/// instead (docs/design/pm-round.md#circles): the first model participant, in roster order,
/// not yet asked it — a second view rather than the same answer twice. `None` when every one
/// was asked: then the meeting is going in circles.
pub(crate) fn second_view<'a>(board: &'a Board, question: &str) -> Option<&'a str> {
    board
        .models()
        .into_iter()
        .find(|p| earlier_ask(board, p, question).is_none())
        .map(String::as_str)
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
        board.key_points().contains(item)
            || board.risks().contains(item)
            || board.decisions().contains(item)
            || board.open_questions().contains(item)
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
