//! Why a board carries no PM report (docs/design/report.md#fallback): the reason the fallback
//! report's first lines and `meeting`'s `no_decision` ending share, and whether the PM ever asked
//! anyone. Shared by render-report, pm-step and the driver. The report's text itself (its two
//! labelled parts, the Markdown lexer) is `text::markdown`.

use crate::model::{Board, FlowKind, ForcedReason, ProcessKind, PM_CALLER};

/// Why a board carries no PM report, in words from what happened (docs/design/report.md#fallback):
/// `None` when the PM's report is there. The fallback report's first lines and `meeting`'s
/// `no_decision` ending both say it, so the two never differ. Read from the board's facts
/// (`record.forced`, the failed rounds in the record's Process Note entries, whether the PM
/// was called and asked anyone), never from a note's words.
/// Why a meeting whose PM wrote its report still decided nothing: no decision among its
/// options (docs/design/flow.md#statuses).
pub const NO_OPTION_CHOSEN: &str =
    "the PM's report chose none of the options (its decision was empty)";

pub fn no_decision_reason(board: &Board) -> Option<String> {
    if board.has_final_report() {
        // A report that chose none of the meeting's options decided nothing, whatever it says.
        let options = !board.meeting_input.decision_packet.options.is_empty();
        return (options && board.record.decision.is_none()).then(|| NO_OPTION_CHOSEN.into());
    }
    let record = &board.record;
    // A board from before the record's callers does not say who was called.
    let known = !record.callers.is_empty();
    let pm_called = record.callers.contains_key(PM_CALLER);
    // A usable PM decision either asked someone or finished (a report, not here).
    let pm_decided = pm_asked_anyone(board);
    let failed_rounds = record
        .process
        .iter()
        .filter(|e| e.kind == ProcessKind::RoundFailed)
        .count()
        .max(1);
    let closing = "the PM's closing round gave no usable report";
    let forced = record.forced.or_else(|| {
        (board.loop_count >= board.max_loops && board.max_loops > 0)
            .then_some(ForcedReason::MaxLoops)
    });
    let what = match forced {
        Some(ForcedReason::TokenBudget) if known && !pm_called => {
            "the token budget ran out before the PM could be asked".to_string()
        }
        Some(ForcedReason::TokenBudget) => "the token budget ran out before the PM decided".into(),
        Some(ForcedReason::CostBudget) if known && !pm_called => {
            "the cost budget ran out before the PM could be asked".to_string()
        }
        Some(ForcedReason::CostBudget) => "the cost budget ran out before the PM decided".into(),
        Some(ForcedReason::MaxLoops) => format!(
            "the meeting reached its loop limit ({}/{}) and {closing}",
            board.loop_count, board.max_loops
        ),
        Some(ForcedReason::Circles) => format!(
            "the PM kept asking what it had asked before, so the program closed the meeting, and {closing}"
        ),
        Some(ForcedReason::RoundFailed) => format!(
            "the program closed the meeting after {}, and {closing} either",
            crate::text::plural(failed_rounds as u64, "failed PM round")
        ),
        None if known && !pm_called => "the PM was never asked".into(),
        None => "the PM gave no usable report".into(),
    };
    Some(if pm_called && !pm_decided {
        format!("the PM never replied usably; {what}")
    } else {
        what
    })
}

/// Whether a PM decision ever asked a participant: a question on record, a participant called
/// (its turn ran, whether or not it answered), an answer kept, or an ask in the flow.
pub(crate) fn pm_asked_anyone(board: &Board) -> bool {
    !board.record.asked.is_empty()
        || !board.latest_agent_outputs.is_empty()
        || board.record.callers.keys().any(|c| c != PM_CALLER)
        || board.flow.steps.iter().any(|s| s.kind == FlowKind::Ask)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fallback's reason says what happened: who closed the meeting and why, never that
    /// the PM closed it (docs/design/report.md#fallback).
    #[test]
    fn no_decision_reasons_come_from_the_facts() {
        use crate::model::{CallerSource, ProcessEntry};
        let mut b = crate::stage::fixtures::board(&[]);
        b.max_loops = 6;
        b.record.forced = Some(ForcedReason::RoundFailed);
        b.record
            .callers
            .insert(PM_CALLER.into(), CallerSource::default());
        let failed = |loop_no| ProcessEntry {
            loop_no,
            kind: ProcessKind::RoundFailed,
            text: "x".into(),
        };
        b.record.process = vec![failed(1), failed(2)];
        let reason = |b: &Board| no_decision_reason(b).unwrap();
        assert_eq!(
            reason(&b),
            "the PM never replied usably; the program closed the meeting after 2 failed PM rounds, \
             and the PM's closing round gave no usable report either"
        );
        // Once the PM asked someone, it did reply usably.
        b.record
            .callers
            .insert("arch".into(), CallerSource::default());
        b.record.process.pop();
        assert_eq!(
            reason(&b),
            "the program closed the meeting after 1 failed PM round, and the PM's closing round \
             gave no usable report either"
        );
        b.record.forced = Some(ForcedReason::TokenBudget);
        assert_eq!(reason(&b), "the token budget ran out before the PM decided");
        b.record.callers.clear();
        b.record
            .callers
            .insert("arch".into(), CallerSource::default());
        assert_eq!(
            reason(&b),
            "the token budget ran out before the PM could be asked"
        );
        b.record.forced = Some(ForcedReason::MaxLoops);
        b.loop_count = 6;
        assert!(reason(&b).starts_with("the meeting reached its loop limit (6/6)"));
        b.final_report = Some("### Executive Summary\nGo.\n### Recommendation\nGo.".into());
        assert_eq!(no_decision_reason(&b), None);
        // With options to choose among, a report without a decision decided nothing (exit 3),
        // whatever its text says.
        b.meeting_input.decision_packet.options = vec!["Keep".into(), "Rewrite".into()];
        assert_eq!(no_decision_reason(&b).as_deref(), Some(NO_OPTION_CHOSEN));
        b.record.decision = Some(crate::model::Decision {
            choice: "Keep".into(),
            confidence: crate::model::Confidence::High,
            revisit_if: String::new(),
            against_council: None,
            why_none: None,
        });
        assert_eq!(no_decision_reason(&b), None);
    }
}
