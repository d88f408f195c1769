//! The whiteboard's bounds, shared by the stages that write it (`init-board`, `merge-board`):
//! lists de-duplicated and capped, the three-line summary (DESIGN.md#merge-rules).

use crate::model::{Board, LIST_CAP};

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

/// The summary as a model sees it (DESIGN.md#prompt-layout): without the `Topic:` line and the
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
    let text = format!(
        "Topic: {}\n{}\nKey points: {}, open questions: {}, candidate decisions: {}",
        board.topic.trim().replace('\n', " "),
        speaker_line.replace('\n', " "),
        board.key_points.len(),
        board.open_questions.len(),
        board.decisions.len()
    );
    text.chars().take(SUMMARY_MAX_CHARS).collect()
}
