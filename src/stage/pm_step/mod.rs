//! The `pm-step` stage (docs/design/pm-round.md#pm-round): one PM round. Three concerns, one file each: the
//! round itself (here: the mode, the budget's look-ahead, the ask and the outcome applied to
//! the board), what the PM is offered (`offer`: its input, messages and schema), and the
//! decision checks (`checks`: what makes an answer usable, and the PM's side of the ask loop).

mod checks;
mod offer;

pub(crate) use offer::pm_expected_json;
pub use offer::{pm_input, pm_system_prompt, pm_user_message, render_pm_user};

use crate::error::Result;
use crate::llm::{default_max_tokens, Client, Facts, Options, Request};
use crate::meeting::ask::{ask, Asked};
use crate::meeting::budget;
use crate::meeting::circles::{self, GOING_IN_CIRCLES};
use crate::meeting::events::{self, Clock};
use crate::meeting::review;
use crate::meeting::whiteboard::{apply_answers, note_caller, note_process};
use crate::model::PM_CALLER;
use crate::model::{
    Board, Charge, ForcedReason, NextAction, PendingCall, PmDecision, ProcessKind, Status,
};
use crate::stage::Stage;
use checks::{Invalid, PmAsk};

/// Whether the PM may still call agents (the PM input's `mode`, by its serde name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Normal,
    ForcedFinish,
    /// The PM answers the reviewers' open objections (docs/design/review.md#pm-answer).
    Review,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        crate::model::wire_name(&self)
    }
}

/// `review` while the board is `reviewing` (the reviewers objected); `forced_finish` when the
/// board is `finishing` without a report or the loop budget is spent.
pub fn mode(board: &Board) -> Mode {
    if board.status == Status::Reviewing {
        Mode::Review
    } else if board.status == Status::Finishing || board.loop_count >= board.max_loops {
        Mode::ForcedFinish
    } else {
        Mode::Normal
    }
}

/// Refuse a board that is not `pm-step`'s turn, naming the stage that should run (exit 2).
pub fn check_turn(board: &Board) -> Result<()> {
    board.expect_stage(Stage::PmStep)?;
    // A hand-edited board can carry a PM config the loader would have refused.
    if let Some(cfg) = &board.pm {
        crate::loader::validate_agent(cfg, crate::loader::AgentKind::Pm)
            .map_err(|e| e.under("pm").in_file(""))?;
    }
    Ok(())
}

/// The `pm-step` program on a board: check it is the PM's turn, then ask the PM with its own
/// provider settings (its config's metadata), its client from `clients`.
pub fn run(board: Board, clients: &mut crate::llm::Clients) -> Result<Board> {
    check_turn(&board)?;
    let metadata = board.pm.as_ref().map(|p| p.metadata.clone());
    let caller = (PM_CALLER.to_string(), metadata.unwrap_or_default());
    let limits = budget::AgentLimits::resolve(&board, clients.args());
    super::run_llm(board, clients, caller, |board, client, opts, clock| {
        pm_step_with(board, client, opts, clock, &limits)
    })
}

/// The `max_tokens` of a PM call when nothing set one: a closing round always writes the
/// whole report.
fn pm_max_tokens(mode: Mode) -> u32 {
    match mode {
        Mode::Normal => default_max_tokens::PM_STEP,
        Mode::ForcedFinish | Mode::Review => default_max_tokens::PM_CLOSING,
    }
}

/// Close the meeting now: record why (a typed fact the closing round's note and the driver's
/// progress read) and log the `forced_finish` event with the words for the log.
fn force_finish(board: &mut Board, clock: &dyn Clock, reason: ForcedReason, why: String) {
    board.record.forced = Some(reason);
    events::push(board, clock, events::forced_finish(why));
}

/// Why the meeting is closing, for `process_note` on the forced path (for the reader: what
/// went wrong in the failed round is in the record's process entries).
fn forced_reason(board: &Board) -> String {
    if board.status != Status::Finishing {
        return format!(
            "Meeting stopped after reaching max loop limit ({}/{}) before full convergence.",
            board.loop_count, board.max_loops
        );
    }
    match (board.record.forced, &board.last_error) {
        (Some(ForcedReason::Circles), _) => format!(
            "The PM kept asking what it had asked before: {GOING_IN_CIRCLES}, so it was closed early."
        ),
        (Some(ForcedReason::RoundFailed), _) | (_, Some(_)) if board.record.failed_rounds > 1 => {
            format!(
                "{} PM rounds in a row failed, so the meeting was closed early.",
                board.record.failed_rounds
            )
        }
        (Some(ForcedReason::RoundFailed), _) | (_, Some(_)) => {
            "A PM round failed, so the meeting was closed early.".into()
        }
        _ => "The meeting was closed early before full convergence.".into(),
    }
}

/// How this round runs, decided before the PM is asked (docs/design/pm-round.md#pm-round,
/// docs/design/pm-round.md#token-budget).
struct Plan {
    mode: Mode,
    /// What an agent turn leaves for the closing round (none: no budget, or this is it).
    reserve: Charge,
    /// The Process Note when the token budget closes the meeting.
    budget_note: Option<String>,
}

/// Decide the round's mode: at the loop limit log the forced finish; under a token budget, a
/// normal round with no room for another loop becomes the closing round now.
fn plan(
    board: &mut Board,
    client: &Client,
    opts: &Options,
    clock: &dyn Clock,
    limits: &budget::AgentLimits,
) -> Result<Plan> {
    let mut plan = Plan {
        mode: mode(board),
        reserve: Charge::default(),
        budget_note: None,
    };
    if plan.mode == Mode::ForcedFinish && board.status == Status::Running {
        let why = format!(
            "max loops reached ({}/{})",
            board.loop_count, board.max_loops
        );
        force_finish(board, clock, ForcedReason::MaxLoops, why);
    } else if plan.mode == Mode::Normal && budget::Budget::of(board).is_some() {
        match budget_look_ahead(board, limits, opts, client.schema_in_prompt())? {
            budget::NextRound::Go { reserve } => plan.reserve = reserve,
            budget::NextRound::Stop(stop) => {
                force_finish(board, clock, stop.limit.forced(), stop.event_message());
                plan.budget_note = Some(stop.process_note());
                // The PM's closing round, now: mode() reads `finishing` without a report.
                board.status = Status::Finishing;
                plan.mode = Mode::ForcedFinish;
            }
        }
    }
    Ok(plan)
}

/// Why a round ended without a usable decision.
struct Failure {
    /// As `last_error` words it.
    error: String,
    /// For the report's reader.
    plain: String,
    /// The PM kept repeating a question (docs/design/pm-round.md#circles).
    circling: bool,
    /// The token budget left no room for the call.
    not_asked: bool,
}

impl Failure {
    fn of(asked: Asked<PmDecision, Invalid>) -> std::result::Result<PmDecision, Failure> {
        let failure = |error: String, plain: String| Failure {
            error,
            plain,
            circling: false,
            not_asked: false,
        };
        Err(match asked {
            Asked::Answer(d) => return Ok(d),
            Asked::Invalid(invalid) => Failure {
                circling: matches!(invalid, Invalid::Repeat(_)),
                ..failure(
                    invalid.describe(),
                    crate::meeting::ask::unusable_for_reader(&invalid.for_reader()),
                )
            },
            Asked::Failed(e) => failure(
                format!("PM call failed: {e}"),
                crate::meeting::ask::failed_for_reader(&e),
            ),
            Asked::Refused(why) => Failure {
                not_asked: true,
                ..failure(why.clone(), why)
            },
        })
    }
}

/// Run one PM round on `board` (docs/design/pm-round.md#pm-round) and return the board with its outcome applied:
/// `pending_calls` (one for CALL_AGENT, several for CALL_AGENTS), `finishing` + `final_report` (FINISH), `finishing` +
/// `last_error` (round failed), or `forced_stop` with or without a report (forced_finish mode).
/// Never changes `loop_count`. A fatal provider error is `Error::Runtime`.
pub fn pm_step(
    board: Board,
    client: &mut Client,
    opts: &Options,
    clock: &dyn Clock,
) -> Result<Board> {
    let limits = budget::AgentLimits::resolve(&board, &crate::llm::LlmConfig::default());
    pm_step_with(board, client, opts, clock, &limits)
}

/// [`pm_step`] with the agents' reply limits as the LLM flags resolve them (the token budget
/// prices the next agent turn with them).
fn pm_step_with(
    mut board: Board,
    client: &mut Client,
    opts: &Options,
    clock: &dyn Clock,
    limits: &budget::AgentLimits,
) -> Result<Board> {
    check_turn(&board)?;
    events::start_stage(&mut board);
    if board.record.started_at.is_none() {
        board.record.started_at = Some(clock.now());
    }
    let plan = plan(&mut board, client, opts, clock, limits)?;
    let request = pm_request(&board, plan.mode, client.schema_in_prompt())?;
    let opts = &opts.or_max_tokens(pm_max_tokens(plan.mode));
    let mut pm = PmAsk {
        board: &mut board,
        clock,
        mode: plan.mode,
        reserve: plan.reserve,
        limits,
        chosen: None,
        repeated: false,
        answers: 0,
    };
    let calls_before = client.calls();
    let outcome = Failure::of(ask(client, opts, request, &mut pm)?);
    if client.calls() > calls_before {
        note_caller(&mut board, PM_CALLER, client, opts);
    }
    // Questions the PM marks answered: merge-board applies them after the agent's turn (the
    // agent sees the whiteboard the PM saw); a FINISH has no turn after it.
    if let Ok(d) = &outcome {
        if d.next_action != NextAction::Finish {
            board.record.pending_answers = d.answered_questions.clone();
        } else {
            apply_answers(&mut board, &d.answered_questions);
        }
    }
    match (plan.mode, outcome) {
        (Mode::Normal, Ok(d)) => {
            let reserve = match d.next_action {
                NextAction::CallAgents => {
                    budget::fan_out_reserve(&board, limits, plan.reserve, d.calls.len())
                }
                _ => plan.reserve,
            };
            apply_decision(&mut board, d, reserve, clock)
        }
        (Mode::Normal, Err(f)) => fail_round(&mut board, f, clock),
        (Mode::ForcedFinish, Ok(d)) => {
            events::push(&mut board, clock, events::pm_finishes());
            board.process_note = Some(plan.budget_note.unwrap_or_else(|| forced_reason(&board)));
            board.status = Status::ForcedStop;
            keep_decision(&mut board, &d, clock);
            board.final_report = d.final_report;
        }
        (Mode::ForcedFinish, Err(f)) => fail_closing_round(&mut board, f, plan.budget_note, clock),
        (Mode::Review, Ok(d)) => answer_objections(&mut board, d, clock),
        (Mode::Review, Err(f)) => fail_review_round(&mut board, f, clock),
    }
    Ok(board)
}

/// A normal round's valid decision: the call (or a fan-out's calls) waiting for `agent-turn`,
/// or FINISH with its report.
fn apply_decision(board: &mut Board, d: PmDecision, reserve: Charge, clock: &dyn Clock) {
    let reserve = budget::Budget::of(board).map(|_| reserve);
    board.last_error = None;
    board.record.failed_rounds = 0;
    match d.next_action {
        NextAction::CallAgent => {
            let target = d.target_agent.unwrap_or_default();
            let prompt = d.prompt_for_agent.unwrap_or_default();
            events::push(board, clock, events::pm_asks(&target, &prompt));
            circles::record_ask(board, &target, &prompt);
            board.pending_calls = vec![PendingCall {
                target_agent: target,
                prompt,
                analysis: d.analysis,
                reserve,
            }];
        }
        NextAction::CallAgents => {
            for (i, call) in d.calls.into_iter().enumerate() {
                // Call i of the fan-out counts loop L+i, as if the calls ran one by one
                // (docs/design/agent-turn.md#fan-out).
                events::in_later_loop(board, i as u32, |board| {
                    let ev = events::pm_asks(&call.target_agent, &call.prompt_for_agent);
                    events::push(board, clock, ev);
                    circles::record_ask(board, &call.target_agent, &call.prompt_for_agent);
                });
                board.pending_calls.push(PendingCall {
                    target_agent: call.target_agent,
                    prompt: call.prompt_for_agent,
                    analysis: if i == 0 {
                        d.analysis.clone()
                    } else {
                        String::new()
                    },
                    reserve,
                });
            }
        }
        NextAction::Finish => {
            events::push(board, clock, events::pm_finishes());
            board.status = Status::Finishing;
            keep_decision(board, &d, clock);
            board.final_report = d.final_report;
            // With reviewers and rounds left the FINISH is a draft (docs/design/review.md).
            if review::wants_review(board) {
                review::start(board, clock);
            }
        }
    }
}

/// The PM's checked answer to the open objections (docs/design/review.md#pm-answer): each
/// objection resolved as it says; a FINISH is the revised (or kept) report, reviewed again
/// while rounds are left; a CALL_AGENT asks a participant and the meeting runs on (its next
/// FINISH is the draft).
fn answer_objections(board: &mut Board, d: PmDecision, clock: &dyn Clock) {
    review::apply_responses(board, &d.objection_responses, d.target_agent.as_deref());
    if d.next_action != NextAction::Finish {
        board.status = Status::Running;
        board.final_report = None;
    }
    apply_decision(board, d, Charge::default(), clock);
}

/// A failed answer to the objections: the draft stands as the report, its objections open
/// (docs/design/review.md#forced-finish).
fn fail_review_round(board: &mut Board, f: Failure, clock: &dyn Clock) {
    events::push(board, clock, events::pm_round_failed(&f.error));
    board.last_error = Some(f.error);
    let n = review::open(board).count();
    note_process(
        board,
        ProcessKind::RoundFailed,
        format!(
            "The PM's answer to the reviewers' objections failed: {}; the draft report stands with {} open.",
            f.plain,
            crate::text::plural(n as u64, "objection")
        ),
    );
    board.status = Status::Finishing;
}

/// Failed PM rounds in a row after which the meeting is closed
/// (docs/design/pm-round.md#failed-rounds): one failed round is asked again in the next round,
/// with the error in its prompt; the second in a row gets the closing round.
pub const MAX_FAILED_ROUNDS: u32 = 2;

/// A failed normal round (docs/design/pm-round.md#failed-rounds). The board stays `running`
/// and the next round asks the PM again, seeing `last_error`, until [`MAX_FAILED_ROUNDS`] in a
/// row; then, or at once when the PM went in circles or the token budget refused the call
/// (asking again could not help), the PM gets one closing round (`finishing` without a report).
fn fail_round(board: &mut Board, f: Failure, clock: &dyn Clock) {
    events::push(board, clock, events::pm_round_failed(&f.error));
    board.record.failed_rounds += 1;
    let failed = board.record.failed_rounds;
    board.last_error = Some(f.error.clone());
    if !f.circling && !f.not_asked && failed < MAX_FAILED_ROUNDS {
        note_process(
            board,
            ProcessKind::RoundFailed,
            format!(
                "The PM's round failed: {}; it was asked again in the next round.",
                f.plain
            ),
        );
        return;
    }
    let (reason, kind, note, why) = if f.circling {
        (
            ForcedReason::Circles,
            ProcessKind::Circles,
            format!("The meeting was closed early: {GOING_IN_CIRCLES}."),
            GOING_IN_CIRCLES.to_string(),
        )
    } else {
        let rounds = if failed > 1 {
            format!("{failed} PM rounds in a row failed, the last one")
        } else {
            "The PM's round failed".to_string()
        };
        (
            ForcedReason::RoundFailed,
            ProcessKind::RoundFailed,
            format!("{rounds}: {}; the PM was given one closing round.", f.plain),
            format!("PM round failed: {}", f.error),
        )
    };
    note_process(board, kind, note);
    force_finish(board, clock, reason, why);
    board.status = Status::Finishing;
}

/// A failed closing round: `forced_stop` without a report, so the fallback report is built.
fn fail_closing_round(
    board: &mut Board,
    f: Failure,
    budget_note: Option<String>,
    clock: &dyn Clock,
) {
    events::push(board, clock, events::pm_round_failed(&f.error));
    board.record.closed_at = Some(clock.now());
    let reason = budget_note.unwrap_or_else(|| forced_reason(board));
    let plain = &f.plain;
    board.process_note = Some(if f.not_asked {
        format!(
            "{reason} The PM was not asked for its closing report ({plain}): no valid PM report, fallback report generated."
        )
    } else {
        format!(
            "{reason} The PM's closing round failed: {plain}; no valid PM report, fallback report generated."
        )
    });
    board.status = Status::ForcedStop;
    board.final_report = None;
    board.last_error = Some(f.error);
}

/// Keep a FINISH's decision and option assessments (blank cells dropped) and the closing time.
fn keep_decision(board: &mut Board, d: &PmDecision, clock: &dyn Clock) {
    board.record.closed_at = Some(clock.now());
    board.record.decision = d.decision.clone().filter(|x| !x.choice.trim().is_empty());
    board.record.option_assessments = d
        .option_assessments
        .iter()
        .filter(|a| {
            !(a.option.trim().is_empty()
                || a.dimension.trim().is_empty()
                || a.assessment.trim().is_empty())
        })
        .take(OPTION_ASSESSMENTS_CAP)
        .cloned()
        .collect();
}

/// Most option assessments kept (options × dimensions of any real meeting fit).
const OPTION_ASSESSMENTS_CAP: usize = 60;

/// The PM's request in `mode` on this board.
pub fn pm_request(board: &Board, mode: Mode, schema_in_prompt: bool) -> Result<Request> {
    Ok(Request {
        caller: PM_CALLER.into(),
        system: pm_system_prompt(board, schema_in_prompt)?,
        messages: vec![pm_user_message(board, schema_in_prompt)?],
        expect: Some(pm_expected_json(board, mode)),
        facts: Facts {
            remaining_loops: (mode == Mode::Normal)
                .then(|| board.max_loops.saturating_sub(board.loop_count) as u64),
            ..crate::meeting::prompts::facts(board)
        },
    })
}

/// The token budget's look-ahead for a normal round (docs/design/pm-round.md#token-budget): this round and
/// the agent turn it leads to, priced with the closing round's reserve.
fn budget_look_ahead(
    board: &Board,
    limits: &budget::AgentLimits,
    opts: &Options,
    schema_in_prompt: bool,
) -> Result<budget::NextRound> {
    let normal = opts.or_max_tokens(pm_max_tokens(Mode::Normal));
    let closing_opts = opts.or_max_tokens(pm_max_tokens(Mode::ForcedFinish));
    let mut closing = board.clone();
    closing.status = Status::Finishing;
    let pm_cost = budget::call_cost(&pm_request(board, Mode::Normal, schema_in_prompt)?, &normal);
    let closing_cost = budget::call_cost(
        &pm_request(&closing, Mode::ForcedFinish, schema_in_prompt)?,
        &closing_opts,
    );
    Ok(budget::next_round(
        board,
        limits,
        pm_cost,
        closing_cost,
        closing_opts.max_tokens.unwrap_or(0),
    ))
}
