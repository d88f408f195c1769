//! The report appendix's Mermaid `sequenceDiagram` (docs/design/report.md#report): who the PM asked in
//! which loop and how each agent answered, drawn from the board's bounded `flow` (the last
//! `FLOW_LOOPS` loops, docs/design/run-folder.md#events) or from a whole events file.
//! Everything Mermaid could misread — odd agent names, reserved words, `;`, `#`, `<`, `>` —
//! is made safe here.

use std::collections::BTreeMap;

use crate::meeting::events::{flow_text, FLOW_REASON_CHARS, FLOW_TEXT_CHARS};
use crate::model::{Board, Flow, FlowKind, FlowStep};

/// The loop number shown for a step: stages stamp events with the 1-based loop in progress
/// (`Board::current_loop`), so it is shown as is.
fn shown_loop(loop_no: u32) -> u32 {
    loop_no.max(1)
}

/// The `sequenceDiagram` of the board's flow: one arrow per task (PM → agent) and per result
/// (agent → PM, crossed when the turn failed), and notes for the PM's FINISH, the forced
/// finish, and the loops that came before the ones shown.
pub fn mermaid(board: &Board) -> String {
    mermaid_of(&board.participants, &board.flow)
}

/// The diagram of `flow` among `participants` (and any other agent a step names).
pub fn mermaid_of(participants: &[String], flow: &Flow) -> String {
    let mut names: Vec<String> = participants.to_vec();
    for s in &flow.steps {
        if let Some(n) = &s.agent {
            if !is_pm(n) && n != "meeting" && !names.contains(n) {
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
    if flow.loops_before > 0 {
        let n = flow.loops_before;
        lines.push(format!(
            "    Note over PM: {} not shown",
            crate::text::plural(n, "earlier loop")
        ));
    }
    let steps = &flow.steps;
    let mut i = 0;
    while i < steps.len() {
        // A fan-out (docs/design/agent-turn.md#fan-out): questions asked one after another with no answer
        // between them, then their answers: a `par` block, one branch per call.
        let asks = steps[i..]
            .iter()
            .take_while(|s| s.kind == FlowKind::Ask)
            .count();
        if asks >= 2 {
            let answers = steps[i + asks..]
                .iter()
                .take(asks)
                .take_while(|s| matches!(s.kind, FlowKind::Answer | FlowKind::Failed))
                .count();
            let (ask, got) = (&steps[i..i + asks], &steps[i + asks..i + asks + answers]);
            let first = shown_loop(ask[0].loop_no);
            let last = shown_loop(ask[asks - 1].loop_no);
            // Reviewers' calls all stand in one loop (docs/design/review.md#flow).
            let span = if first == last {
                format!("L{first}")
            } else {
                format!("L{first}-L{last}")
            };
            lines.push(format!("    par {span} at once"));
            for (k, a) in ask.iter().enumerate() {
                if k > 0 {
                    lines.push("    and".to_string());
                }
                let mut branch = vec![a];
                branch.extend(got.iter().filter(|g| g.agent == a.agent));
                for s in branch {
                    lines.push(format!("    {}", step_line(s, &id)));
                }
            }
            lines.push("    end".to_string());
            i += asks + answers;
            continue;
        }
        lines.push(step_line(&steps[i], &id));
        i += 1;
    }
    lines.join("\n")
}

/// The diagram line of one step.
fn step_line(s: &FlowStep, id: &dyn Fn(&str) -> String) -> String {
    let l = shown_loop(s.loop_no);
    let agent = s.agent.as_deref().unwrap_or("");
    let text = s.text.as_str();
    match s.kind {
        FlowKind::Ask => format!(
            "    PM->>{}: L{l} {}",
            id(agent),
            mermaid_text(text, FLOW_TEXT_CHARS)
        ),
        FlowKind::Failed => {
            let text = if text.trim().is_empty() {
                "failed".to_string()
            } else {
                format!("failed ({})", mermaid_text(text, FLOW_REASON_CHARS))
            };
            format!("    {}--xPM: L{l} {text}", id(agent))
        }
        FlowKind::Answer => {
            let text = if text.trim().is_empty() {
                "answered".to_string()
            } else {
                mermaid_text(text, FLOW_TEXT_CHARS)
            };
            format!("    {}-->>PM: L{l} {text}", id(agent))
        }
        FlowKind::ForcedFinish => {
            let why = if text.trim().is_empty() {
                String::new()
            } else {
                format!(" ({})", mermaid_text(text, FLOW_REASON_CHARS))
            };
            format!("    Note over PM: L{l} forced finish{why}")
        }
        FlowKind::Finish => format!("    Note over PM: L{l} FINISH"),
        FlowKind::RoundFailed => format!("    Note over PM: L{l} PM round failed"),
    }
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
    let cut = flow_text(text, max);
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

    /// Questions asked with no answer between them are a fan-out: one `par` branch per call,
    /// each with its own answer whatever order the answers are in; a fan-out whose answers are
    /// missing (the meeting stopped) still draws its questions in parallel; single calls stay
    /// plain arrows.
    #[test]
    fn a_fan_out_is_a_par_block() {
        let step = |loop_no, kind, agent: &str, text: &str| FlowStep {
            loop_no,
            kind,
            agent: Some(agent.into()),
            text: text.into(),
        };
        let flow = |steps| Flow {
            loops_before: 0,
            steps,
        };
        let names = ["a".to_string(), "b".to_string()];
        let drawn = mermaid_of(
            &names,
            &flow(vec![
                step(1, FlowKind::Ask, "a", "q1"),
                step(1, FlowKind::Answer, "a", "r1"),
                step(2, FlowKind::Ask, "a", "q2"),
                step(3, FlowKind::Ask, "b", "q3"),
                step(3, FlowKind::Failed, "b", "timeout"),
                step(2, FlowKind::Answer, "a", "r2"),
            ]),
        );
        let body: Vec<&str> = drawn.lines().skip(4).collect();
        assert_eq!(
            body,
            [
                "    PM->>a: L1 q1",
                "    a-->>PM: L1 r1",
                "    par L2-L3 at once",
                "        PM->>a: L2 q2",
                "        a-->>PM: L2 r2",
                "    and",
                "        PM->>b: L3 q3",
                "        b--xPM: L3 failed (timeout)",
                "    end",
            ]
        );
        let stopped = mermaid_of(
            &names,
            &flow(vec![
                step(1, FlowKind::Ask, "a", "q1"),
                step(2, FlowKind::Ask, "b", "q2"),
            ]),
        );
        assert!(
            stopped.ends_with("    par L1-L2 at once\n        PM->>a: L1 q1\n    and\n        PM->>b: L2 q2\n    end"),
            "{stopped}"
        );
    }
}
