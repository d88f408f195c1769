//! The meeting's stages, one module per program, and the one rule that says which stage a
//! board is waiting for (docs/design/flow.md#state-machine).
//!
//! No stage imports another: what two stages share lives beside them (`prompts`, `text`,
//! `schema`, `ask`), and the order they run in lives only in [`Board::next_stage`].

use std::fmt;

use crate::error::{Error, Result};
use crate::model::{Board, Status};

pub mod agent_builder;
pub mod agent_turn;
pub mod init_board;
pub mod merge_board;
pub mod pm_step;
pub mod render_report;

/// One step of the pipeline, named after its program (also in JSON: `"pm-step"`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    CollectContext,
    InitBoard,
    PmStep,
    AgentTurn,
    MergeBoard,
    RenderReport,
}

impl Stage {
    /// Every stage, in pipeline order.
    pub const ALL: [Stage; 6] = [
        Stage::CollectContext,
        Stage::InitBoard,
        Stage::PmStep,
        Stage::AgentTurn,
        Stage::MergeBoard,
        Stage::RenderReport,
    ];

    /// The program that runs this stage.
    pub fn program(self) -> &'static str {
        match self {
            Stage::CollectContext => "collect-context",
            Stage::InitBoard => "init-board",
            Stage::PmStep => "pm-step",
            Stage::AgentTurn => "agent-turn",
            Stage::MergeBoard => "merge-board",
            Stage::RenderReport => "render-report",
        }
    }

    /// The stage a program name stands for.
    pub fn from_program(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.program() == name)
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.program())
    }
}

impl Board {
    /// The stage this board is waiting for; `None` when the meeting is over. The only place
    /// the order of the stages is decided (docs/design/flow.md#state-machine): the stages' guards, the
    /// driver, `next-stage` and `share/meeting.sh` all ask this.
    pub fn next_stage(&self) -> Option<Stage> {
        match self.status {
            Status::Finished => None,
            // `failed` means the report could not be saved: render-report tries again.
            Status::Failed | Status::ForcedStop => Some(Stage::RenderReport),
            Status::Finishing if self.has_final_report() => Some(Stage::RenderReport),
            _ if !self.last_turns.is_empty() => Some(Stage::MergeBoard),
            _ if !self.pending_calls.is_empty() => Some(Stage::AgentTurn),
            // Also `finishing` without a report and a spent loop budget: the PM's forced
            // finish round.
            _ => Some(Stage::PmStep),
        }
    }

    /// "<stage> should run next", or "the meeting is over": the one wording of every
    /// wrong-stage message.
    pub(crate) fn what_runs_next(&self) -> String {
        match self.next_stage() {
            None => "the meeting is over".to_string(),
            Some(Stage::PmStep) if pm_step::mode(self) == pm_step::Mode::ForcedFinish => {
                "pm-step (forced finish) should run next".to_string()
            }
            Some(stage) => format!("{stage} should run next"),
        }
    }

    /// The guard every stage starts with: `Ok` when this board is waiting for `stage`, else
    /// the usage error (exit 2) naming what should run instead. render-report also takes a
    /// finished board (it renders the saved report again; nothing else changes).
    /// Then the board's invariants (docs/design/flow.md#board-invariants), so every stage
    /// refuses a hand-edited board that breaks one (exit 2, naming the field).
    pub(crate) fn expect_stage(&self, stage: Stage) -> Result<()> {
        let next = self.next_stage();
        if next == Some(stage) || (stage == Stage::RenderReport && next.is_none()) {
            return crate::model::check_invariants(self).map_err(|e| e.in_file(""));
        }
        Err(Error::Usage(match next {
            None => format!("the meeting is over; {stage} has nothing to do"),
            Some(_) => format!("{}, not {stage}", self.what_runs_next()),
        }))
    }
}

/// Who calls the model, and the metadata that may choose its provider and model.
pub type Caller = (String, serde_json::Map<String, serde_json::Value>);

/// Run a stage that calls a model: the client for `caller` from `clients` (the flags and the
/// config file's defaults; kept for the run when the `meeting` driver runs the stage in its
/// own process), the clock from the environment. The programs and the driver both come here
/// (docs/design/run-folder.md#run-folder).
pub(crate) fn run_llm(
    board: Board,
    clients: &mut crate::llm::Clients,
    caller: Caller,
    stage: impl FnOnce(
        Board,
        &mut crate::llm::Client,
        &crate::llm::Options,
        &dyn crate::meeting::events::Clock,
    ) -> Result<Board>,
) -> Result<Board> {
    let (name, metadata) = caller;
    let (mut client, opts) = clients.take(&board.llm, &name, &metadata, board.usage.calls)?;
    let clock = crate::meeting::events::clock_from_env();
    let made = stage(board, &mut client, &opts, clock.as_ref());
    clients.put_back(&name, client, opts);
    made
}

/// Boards for the stages' unit tests, built the way `init-board` builds them.
#[cfg(test)]
pub(crate) mod fixtures {
    use crate::model::*;

    pub const NOW: &str = "2026-11-30T00:00:00Z";

    pub fn agent(name: &str) -> AgentConfig {
        serde_json::from_value(serde_json::json!({
            "name": name, "role": "r", "description": "d", "system_prompt": "p",
            "input_schema": {"type": "object"}, "output_schema": {"type": "object"}
        }))
        .unwrap()
    }

    /// A running board on "Adopt a warehouse?" with agents arch and biz, 6 loops.
    pub fn board(required: &[&str]) -> Board {
        let mut input = MeetingInput::from_topic("Adopt a warehouse?");
        input.decision_packet.required_questions = required.iter().map(|s| s.to_string()).collect();
        let packet = MeetingPacket {
            packet_version: 1,
            meeting_input: input,
            context_bundle: ContextBundle::default(),
        };
        let opts = super::init_board::InitOptions {
            agents: vec![agent("arch"), agent("biz")],
            reviewers: vec![],
            pm: None,
            llm: crate::llm::LlmConfig {
                provider: Some("replay".into()),
                ..Default::default()
            },
            max_loops: 6,
            max_parallel: 1,
            max_total_tokens: None,
            max_cost_usd: None,
            trace_id: "t1".into(),
        };
        super::init_board::init(packet, opts, NOW).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LastTurn, PendingCall, TurnStatus};

    fn board() -> Board {
        let mut b = fixtures::board(&[]);
        b.max_loops = 3;
        b
    }

    /// Every row of the state table (docs/design/flow.md#next-stage): status × pending_calls × last_turns ×
    /// final_report → next stage.
    #[test]
    fn next_stage_table() {
        use Stage::*;
        let call = PendingCall {
            target_agent: "arch".into(),
            prompt: "q".into(),
            analysis: String::new(),
            reserve: None,
        };
        let turn = LastTurn {
            agent_name: "arch".into(),
            status: TurnStatus::Error,
            prompt: "q".into(),
            result: None,
            error: Some("x".into()),
            review: None,
            council: None,
        };
        type Row = (Status, bool, bool, Option<&'static str>, Option<Stage>);
        let rows: [Row; 16] = [
            // Reviewing (docs/design/review.md#flow): the draft is in `final_report`.
            (Status::Reviewing, true, false, Some("Go."), Some(AgentTurn)),
            (
                Status::Reviewing,
                false,
                true,
                Some("Go."),
                Some(MergeBoard),
            ),
            (Status::Reviewing, false, false, Some("Go."), Some(PmStep)),
            (Status::Running, false, false, None, Some(PmStep)),
            (Status::Running, true, false, None, Some(AgentTurn)),
            (Status::Running, false, true, None, Some(MergeBoard)),
            (Status::Running, true, true, None, Some(MergeBoard)),
            (Status::Finishing, false, false, None, Some(PmStep)),
            (Status::Finishing, false, false, Some("  \n"), Some(PmStep)),
            (
                Status::Finishing,
                false,
                false,
                Some("Go."),
                Some(RenderReport),
            ),
            (
                Status::Finishing,
                true,
                true,
                Some("Go."),
                Some(RenderReport),
            ),
            (Status::ForcedStop, false, false, None, Some(RenderReport)),
            (
                Status::ForcedStop,
                false,
                true,
                Some("Go."),
                Some(RenderReport),
            ),
            (Status::Failed, false, false, None, Some(RenderReport)),
            (
                Status::Failed,
                false,
                false,
                Some("Go."),
                Some(RenderReport),
            ),
            (Status::Finished, true, true, Some("Go."), None),
        ];
        for (status, pending, last, report, want) in rows {
            let mut b = board();
            b.status = status;
            b.pending_calls = pending.then(|| call.clone()).into_iter().collect();
            b.last_turns = last.then(|| turn.clone()).into_iter().collect();
            b.final_report = report.map(str::to_string);
            assert_eq!(
                b.next_stage(),
                want,
                "{status:?} pending={pending} last={last} report={report:?}"
            );
        }
    }

    #[test]
    fn one_guard_one_wording() {
        let mut b = board();
        assert!(b.expect_stage(Stage::PmStep).is_ok());
        assert_eq!(
            b.expect_stage(Stage::MergeBoard).unwrap_err().to_string(),
            "pm-step should run next, not merge-board"
        );
        b.loop_count = 3;
        assert_eq!(
            b.expect_stage(Stage::RenderReport).unwrap_err().to_string(),
            "pm-step (forced finish) should run next, not render-report"
        );
        b.status = Status::Failed;
        for stage in [Stage::PmStep, Stage::AgentTurn, Stage::MergeBoard] {
            assert_eq!(
                b.expect_stage(stage).unwrap_err().to_string(),
                format!("render-report should run next, not {stage}")
            );
        }
        assert!(b.expect_stage(Stage::RenderReport).is_ok());
        b.status = Status::Finished;
        assert_eq!(
            b.expect_stage(Stage::PmStep).unwrap_err().to_string(),
            "the meeting is over; pm-step has nothing to do"
        );
        assert!(b.expect_stage(Stage::RenderReport).is_ok(), "re-render");
        assert_eq!(b.expect_stage(Stage::PmStep).unwrap_err().exit_code(), 2);
    }

    /// After one failed PM round the board is still `running`, so pm-step runs again in
    /// normal mode (docs/design/pm-round.md#failed-rounds); the closing round only once the
    /// second in a row set `finishing`.
    #[test]
    fn a_failed_round_is_followed_by_another_pm_round() {
        let mut b = board();
        b.last_error = Some("PM output was not valid JSON: the reply was empty".into());
        b.record.failed_rounds = 1;
        assert_eq!(b.next_stage(), Some(Stage::PmStep));
        assert_eq!(b.what_runs_next(), "pm-step should run next");
        b.record.failed_rounds = 2;
        b.status = Status::Finishing;
        assert_eq!(
            b.what_runs_next(),
            "pm-step (forced finish) should run next"
        );
    }

    #[test]
    fn program_names_round_trip() {
        for s in Stage::ALL {
            assert_eq!(Stage::from_program(s.program()), Some(s));
        }
        assert_eq!(Stage::from_program("report"), None);
    }
}
