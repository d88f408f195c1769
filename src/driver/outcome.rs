//! The meeting's outcome (docs/design/failure-policy.md#failure-policy): the tally of its events, whether any
//! model answer was usable and the one count of LLM calls (`Answers`), the MeetingResult
//! (`finished`, `no_decision` or `failed`), the final progress line and the error a meeting
//! without a decision exits with.

use super::progress::{paint, Ui};
use super::settings::{absolute, RunSettings};
use std::path::Path;

use crate::error::Error;
use crate::model::{
    Board, Event, EventType, MeetingResult, MeetingStatus, Status, TurnStatus, Usage,
};
use crate::text::plural;

/// What the meeting's events say about its model calls, counted as the events go by (the
/// board keeps no history, docs/design/run-folder.md#events): constant work per stage, and rebuilt from
/// `events.jsonl` on `--resume`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// Logical calls (`llm_call` events).
    pub calls: usize,
    /// Of those, the ones that brought a reply back.
    pub answered: usize,
    /// Answers a stage accepted: PM decisions and agent results.
    pub usable: usize,
    /// The last failed call's error.
    pub last_call_error: Option<String>,
}

impl Tally {
    /// Count a stage's `new_events`.
    pub fn add(&mut self, events: &[Event]) {
        for e in events {
            match e.event_type {
                EventType::LlmCall => {
                    self.calls += 1;
                    if e.status == Some(TurnStatus::Ok) {
                        self.answered += 1;
                    }
                    if let Some(err) = &e.error {
                        self.last_call_error = Some(err.clone());
                    }
                }
                EventType::PmDecision | EventType::AgentResult => self.usable += 1,
                _ => {}
            }
        }
    }
}

/// How the models answered over a whole meeting, from the board and the tally of its events
/// (its `llm_call` events, accepted answers and usage): the one place that knows whether any
/// answer was usable and how many LLM calls were made (docs/design/failure-policy.md#failure-policy).
#[derive(Debug, Clone, PartialEq)]
pub struct Answers {
    /// The LLM calls made: every model request, retries included, as charged to the callers
    /// (`usage.attempts()`: the global call counter but for the numbers a fan-out fixed for
    /// retries it did not need, docs/design/agent-turn.md#fan-out). The one count of calls the
    /// final line, the MeetingResult's `usage.calls` and the report's appendix all give.
    pub llm_calls: u64,
    /// Of those, the ones that brought a reply back (`llm_call` events with status `ok`: each
    /// logical call that got a reply ends on one such request).
    pub answered: usize,
    /// Answers a stage accepted: PM decisions and agent results.
    pub usable: usize,
    /// The last failed call's error, else the board's `last_error`.
    pub last_error: Option<String>,
    /// The PM's own report is on the board (not the fallback built without it).
    pub pm_report: bool,
}

impl Answers {
    pub fn of(board: &Board, tally: &Tally) -> Answers {
        Answers {
            llm_calls: board.usage.attempts(),
            answered: tally.answered,
            usable: tally.usable,
            last_error: tally
                .last_call_error
                .clone()
                .or_else(|| board.last_error.clone()),
            pm_report: board.has_final_report(),
        }
    }

    /// Why a meeting whose report is saved still failed: not one model call returned a usable
    /// answer, so the report holds nothing a model said. A meeting with no call at all fails
    /// too when its report is the fallback (e.g. a token budget too small for any call); a
    /// user's own stage that wrote the PM's report without a model call does not.
    pub fn failure(&self) -> Option<String> {
        if self.usable > 0 || (self.llm_calls == 0 && self.pm_report) {
            return None;
        }
        let last = self.last_error.as_deref().unwrap_or("none recorded");
        Some(if self.llm_calls == 0 {
            format!("no model call was made; {last}")
        } else {
            format!(
                "no model call returned a usable answer ({} of {}); last error: {last}",
                self.answered,
                plural(self.llm_calls, "LLM call") + " answered"
            )
        })
    }
}

/// The words of a `no_decision` whose report is the PM's own (no option chosen), not the fallback.
const NO_OPTION: &str = crate::meeting::final_report::NO_OPTION_CHOSEN;

/// The MeetingResult printed on stdout (docs/design/flow.md#statuses). Its status is the
/// board's, except for a saved report: `failed` when no model contributed to it, else
/// `no_decision` when it is the fallback (the PM made no decision); `last_error` says why.
/// `report_file` is set whenever the report is on disk; `usage.calls` is the one count of
/// LLM calls ([`Answers::llm_calls`]).
pub(super) fn result_of(
    board: &Board,
    tally: &Tally,
    settings: &RunSettings,
    run_dir: &Path,
) -> MeetingResult {
    let answers = Answers::of(board, tally);
    let (status, why) = match board.status {
        Status::Finished => match (
            answers.failure(),
            crate::meeting::final_report::no_decision_reason(board),
        ) {
            (Some(failure), _) => (MeetingStatus::Failed, Some(failure)),
            (None, Some(reason)) => (
                MeetingStatus::NoDecision,
                Some(format!("no decision: {reason}")),
            ),
            (None, None) => (MeetingStatus::Finished, None),
        },
        Status::Failed => (MeetingStatus::Failed, board.last_error.clone()),
        other => (other.into(), None),
    };
    MeetingResult {
        status,
        report_file: (board.status == Status::Finished)
            .then(|| settings.report_file.display().to_string()),
        // Both paths absolute (one rule), whatever folder the meeting was started from.
        run_dir: Some(absolute(run_dir).display().to_string()),
        trace_id: board.trace_id.clone(),
        loops: board.loop_count,
        forced: board.process_note.is_some(),
        usage: Usage {
            calls: answers.llm_calls,
            ..board.usage.clone()
        },
        last_error: why,
        cost: crate::meeting::budget::live_cost(board),
        waiting_file: None,
        forked_from: settings.fork.clone().map(|f| crate::model::ForkOf {
            from_parent: board.record.from_parent.clone(),
            ..f
        }),
    }
}

/// The final progress line: the loops, the LLM calls (the one count) and how many answered,
/// the tokens and the report.
pub fn final_line(result: &MeetingResult, answers: &Answers, ui: Ui) -> String {
    let mut tokens = format!("{} tokens", result.usage.tokens.total());
    if result.usage.tokens.cached_tokens > 0 {
        tokens.push_str(&format!(" ({} cached)", result.usage.tokens.cached_tokens));
    }
    let (status, colour) = match (result.status, result.forced) {
        (MeetingStatus::Failed, _) => ("failed", "1;31"),
        (MeetingStatus::NoDecision, _)
            if result
                .last_error
                .as_deref()
                .is_some_and(|e| e.contains(NO_OPTION)) =>
        {
            ("no decision", "1;33")
        }
        (MeetingStatus::NoDecision, _) => ("no decision (fallback report)", "1;33"),
        (MeetingStatus::Waiting, _) => ("waiting for a person", "1;33"),
        (_, true) => ("finished (forced)", "1;32"),
        _ => ("finished", "1;32"),
    };
    if let Some(cost) = &result.cost {
        tokens.push_str(&format!(", {}", crate::llm::prices::cost_phrase(cost)));
    }
    format!(
        "{} {}, {} ({} answered), {tokens} → {}",
        paint(ui, colour, &format!("{status}:")),
        plural(result.loops, "loop"),
        plural(answers.llm_calls, "LLM call"),
        answers.answered,
        // Where to look next: the report, or what a waiting meeting asks.
        result
            .report_file
            .as_deref()
            .or(result.waiting_file.as_deref())
            .unwrap_or("-")
    )
}

/// The error `meeting`'s exit status follows once it has printed its MeetingResult: `failed`
/// (exit 1: the report is saved but no model contributed to it, or it could not be saved) or
/// `no_decision` (exit 3: the report is the fallback) (docs/design/failure-policy.md#failure-policy),
/// or `waiting` (exit 4: for a person's answer, docs/design/agent-turn.md#waiting-for-a-person).
/// None when the meeting finished with the PM's decision, or was stopped to be resumed.
pub(super) fn failure(
    result: &MeetingResult,
    settings: &RunSettings,
    run_dir: &Path,
) -> Option<Error> {
    let why = result.last_error.as_deref();
    match result.status {
        MeetingStatus::NoDecision => Some(Error::NoDecision(format!(
            "{}; the {}report is {}",
            why.unwrap_or("no decision"),
            if why.is_some_and(|w| w.contains(NO_OPTION)) { "" } else { "fallback " },
            result.report_file.as_deref().unwrap_or("-")
        ))),
        MeetingStatus::Waiting => Some(Error::Waiting {
            message: format!(
                "{}; what they are asked is in {}; answer with: meeting resume {} --answer FILE (JSON, or {} filled in)",
                why.unwrap_or("waiting for a person"),
                result.waiting_file.as_deref().unwrap_or("-"),
                run_dir.display(),
                run_dir.join(crate::model::ANSWER_TEXT_FILE).display()
            ),
            document: String::new(),
        }),
        MeetingStatus::Failed => Some(Error::Runtime(match &result.report_file {
            Some(report) => format!(
                "the meeting failed: {}; the fallback report is {report}",
                why.unwrap_or("no model call returned a usable answer")
            ),
            None => format!(
                "the meeting failed: {} ({}); fix it and run: meeting resume {}",
                why.unwrap_or("its report could not be saved"),
                settings.report_file.display(),
                run_dir.display()
            ),
        })),
        MeetingStatus::Finished => None,
        // Only a `--step` user's `q` ends a meeting that is still under way.
        MeetingStatus::Running
        | MeetingStatus::Reviewing
        | MeetingStatus::Finishing
        | MeetingStatus::ForcedStop => Some(Error::Stopped(format!(
            "stopped at your request with the meeting {}; it resumes with: meeting resume {}",
            result.status.as_str(),
            run_dir.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_meeting_needs_one_usable_answer() {
        let mut board = crate::stage::fixtures::board(&[]);
        board.usage.calls = 3;
        let call = |status: TurnStatus, error: Option<&str>| crate::model::Event {
            event_type: EventType::LlmCall,
            status: Some(status),
            error: error.map(str::to_string),
            ..crate::meeting::events::event(EventType::LlmCall, "pm")
        };
        let mut tally = Tally::default();
        tally.add(&[call(TurnStatus::Error, Some("HTTP 500: down"))]);
        let a = Answers::of(&board, &tally);
        assert_eq!((a.llm_calls, a.answered, a.usable), (3, 0, 0));
        let why = a.failure().unwrap();
        assert!(
            why.contains("(0 of 3 LLM calls answered); last error: HTTP 500: down"),
            "{why}"
        );
        // A reply that was not usable is answered, not usable.
        tally.add(&[call(TurnStatus::Ok, None)]);
        assert_eq!(Answers::of(&board, &tally).answered, 1);
        assert!(Answers::of(&board, &tally).failure().is_some());
        tally.add(&[crate::meeting::events::event(EventType::PmDecision, "pm")]);
        assert_eq!(Answers::of(&board, &tally).failure(), None);
        // No call at all: failed when the report is the fallback (a budget too small for any
        // call), not when a user's own stage wrote the PM's report without a model.
        let tally = Tally::default();
        board.usage.calls = 0;
        board.last_error = Some("token budget: used 0 of 900 tokens".into());
        let why = Answers::of(&board, &tally).failure().unwrap();
        assert_eq!(
            why,
            "no model call was made; token budget: used 0 of 900 tokens"
        );
        board.final_report = Some("### Executive Summary\nGo.\n### Recommendation\nGo.".into());
        assert_eq!(Answers::of(&board, &tally).failure(), None);
    }
}
