//! The report appendix's Mermaid `sequenceDiagram` (DESIGN.md#report): who the PM asked in
//! which loop and how each agent answered, read from the board's event log (DESIGN.md#events).
//! Everything Mermaid could misread — odd agent names, reserved words, `;`, `#`, `<`, `>` —
//! is made safe here.

use std::collections::BTreeMap;

use crate::model::{Board, EventType, MessageKind, TurnStatus};
use crate::text::fold_ws;

/// Longest message text on one Mermaid arrow, in characters.
const MERMAID_TEXT_CHARS: usize = 60;

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
            let is_msg = matches!(e.kind, Some(MessageKind::Task | MessageKind::Result));
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
        match (e.kind, e.event_type) {
            (Some(MessageKind::Task), _) => {
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
            (Some(MessageKind::Result), _) => {
                let (Some(from), Some(to)) = (&e.from, &e.to) else {
                    continue;
                };
                if e.status == Some(TurnStatus::Error) {
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
            (_, EventType::ForcedFinish) => {
                let why = if msg.trim().is_empty() {
                    String::new()
                } else {
                    format!(" ({})", mermaid_text(msg, 40))
                };
                lines.push(format!("    Note over PM: L{l} forced finish{why}"));
            }
            (_, EventType::PmDecision) if msg.trim() == "FINISH" => {
                lines.push(format!("    Note over PM: L{l} FINISH"))
            }
            (_, EventType::PmRoundFailed) => {
                lines.push(format!("    Note over PM: L{l} PM round failed"))
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mermaid_text_is_safe() {
        assert_eq!(
            mermaid_text("a;b #1 <x>\nnext", 60),
            "a#59;b #35;1 #lt;x#gt; next"
        );
        let long = "x".repeat(100);
        assert_eq!(mermaid_text(&long, 10).chars().count(), 10);
    }
}
