//! The board (docs/design/flow.md#documents): the whole state of a meeting, passed from stage to stage.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Running,
    /// The reviewers have the PM's draft, or the PM answers their objections
    /// (docs/design/review.md).
    Reviewing,
    Finishing,
    Finished,
    ForcedStop,
    Failed,
}

impl Status {
    /// Its name as serde writes it (docs/design/flow.md#documents).
    pub fn as_str(self) -> &'static str {
        super::names::wire_name(&self)
    }
}

/// Meeting-wide LLM defaults (flags of `init-board`); per-agent `metadata` wins over them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LlmSettings {
    pub provider: String,
    pub model: Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
}

/// The PM's routing decision waiting for `agent-turn`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PendingCall {
    pub target_agent: String,
    pub prompt: String,
    /// The PM's reasoning, when it gave one (a hand-written call may leave it out).
    #[serde(default)]
    pub analysis: String,
    /// Under a budget: what the turn must leave for the PM's closing round (and a fan-out's
    /// other calls) (docs/design/pm-round.md#token-budget). Boards before the cost budget wrote
    /// one number, `reserve_tokens`.
    #[serde(
        default,
        alias = "reserve_tokens",
        deserialize_with = "super::usage::charge_or_tokens",
        skip_serializing_if = "Option::is_none"
    )]
    pub reserve: Option<Charge>,
}

/// A cost budget (docs/design/pm-round.md#cost-budget): the dollars the meeting may spend, and the
/// dearest input and output prices among its callers' models, at which the budget's look-ahead
/// charges every token it has not yet spent (set when the board is made and at every resume,
/// from the price table).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CostLimit {
    pub usd: f64,
    pub input_usd_per_mtok: f64,
    pub output_usd_per_mtok: f64,
}

impl CostLimit {
    /// The most `c` can cost at these prices.
    pub fn price(&self, c: Charge) -> f64 {
        (c.prompt_tokens as f64 * self.input_usd_per_mtok
            + c.completion_tokens as f64 * self.output_usd_per_mtok)
            / 1e6
    }
}

/// How a turn or a call ended: an agent turn (`last_turns[i].status`) and the `llm_call`,
/// `agent_result` and `agent_error` events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    Ok,
    Error,
}

impl TurnStatus {
    /// Its name as serde writes it (docs/design/flow.md#documents).
    pub fn as_str(self) -> &'static str {
        super::names::wire_name(&self)
    }
}

/// The outcome of the last agent turn, waiting for `merge-board`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LastTurn {
    pub agent_name: String,
    pub status: TurnStatus,
    /// The PM's question this turn answered.
    pub prompt: String,
    pub result: Option<AgentTurnResult>,
    pub error: Option<String>,
    /// A reviewer's verdict on the PM's draft (docs/design/review.md#verdict), instead of
    /// `result`; absent on every other turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewVerdict>,
    /// A council member's blind vote or its ranking (docs/design/council.md), instead of
    /// `result`; absent on every other turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub council: Option<CouncilAnswer>,
}

impl LastTurn {
    /// A turn that failed with `error`: no answer of any kind.
    pub fn failed(agent_name: String, prompt: String, error: String) -> LastTurn {
        LastTurn {
            agent_name,
            status: TurnStatus::Error,
            prompt,
            result: None,
            error: Some(error),
            review: None,
            council: None,
        }
    }
}

/// The whiteboard: the whole state of a meeting, passed from stage to stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Board {
    pub board_version: u32,
    pub trace_id: String,
    pub topic: String,
    /// Specialist names, in `--agents` order.
    pub participants: Vec<String>,
    /// Every participant's config, so a saved board replays without the agents folder.
    pub agents: BTreeMap<String, AgentConfig>,
    /// The PM's config, or null for the built-in PM.
    pub pm: Option<AgentConfig>,
    pub llm: LlmSettings,
    pub loop_count: u32,
    pub max_loops: u32,
    /// Most participants one CALL_AGENTS may ask at once (`--max-parallel`, docs/design/agent-turn.md#fan-out);
    /// 1 (written only when not 1): the PM is not offered CALL_AGENTS.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub max_parallel: u32,
    /// The meeting's token budget (docs/design/pm-round.md#token-budget): prompt and completion tokens
    /// of every call together stay within it; absent: no budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_tokens: Option<u64>,
    /// The meeting's cost budget (docs/design/pm-round.md#cost-budget); absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<CostLimit>,
    pub status: Status,
    pub summary: String,
    pub latest_agent_outputs: BTreeMap<String, AgentTurnResult>,
    /// Every validated citation of the meeting, in the order they were merged.
    pub evidence: Vec<Evidence>,
    /// The calls waiting for `agent-turn`, in call order: one for the PM's CALL_AGENT (or a
    /// reviewer's), several for a fan-out (docs/design/agent-turn.md#fan-out); empty: none.
    #[serde(default)]
    pub pending_calls: Vec<PendingCall>,
    /// The turns waiting for `merge-board`, in call order (one per call that ran).
    #[serde(default)]
    pub last_turns: Vec<LastTurn>,
    pub last_error: Option<String>,
    pub recent_errors: Vec<String>,
    pub final_report: Option<String>,
    pub process_note: Option<String>,
    /// Review rounds begun (docs/design/review.md); written only in a meeting with review, so
    /// a board without it is the same bytes as before (no new board version: an absent field
    /// means no review yet, which is what 0 says).
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub review_round: u32,
    /// The reviewers' objections, with ids and how each was resolved (absent: none raised).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objections: Vec<Objection>,
    /// The council round (docs/design/council.md): its members' blind votes, their rankings
    /// and the aggregate; absent without a council, so such a board is the same bytes as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub council: Option<Council>,
    /// The decision record for the report: questions, provenance, decision, process notes.
    #[serde(default, skip_serializing_if = "MeetingRecord::is_empty")]
    pub record: MeetingRecord,
    /// The events the stage that wrote this board produced, in order; the next stage replaces
    /// them. The whole history is the run folder's `events.jsonl` (docs/design/run-folder.md#events).
    pub new_events: Vec<Event>,
    /// Events recorded in the whole meeting, `new_events` included: how many lines
    /// `events.jsonl` holds up to this board (`--resume` cuts it there, docs/design/run-folder.md#resume).
    pub event_count: u64,
    /// The bounded record of the meeting's flow the report's diagram draws.
    pub flow: Flow,
    pub usage: Usage,
    pub meeting_input: MeetingInput,
    pub context_bundle: ContextBundle,
}

/// The whiteboard's lists, views of the decision record (docs/design/whiteboard.md): a question
/// and a finding are stored once, in `record`, and the lists the prompts and the report show
/// are read from it, so they cannot disagree.
impl Board {
    /// The open questions: the record's questions without an answer, in the order they came.
    pub fn open_questions(&self) -> Vec<String> {
        self.record
            .questions
            .iter()
            .filter(|q| q.answer.is_none())
            .map(|q| q.text.clone())
            .collect()
    }

    /// The items of one list of findings, in the order they came.
    pub fn findings_of(&self, kind: FindingKind) -> Vec<String> {
        self.record
            .findings
            .iter()
            .filter(|f| f.kind == kind)
            .map(|f| f.text.clone())
            .collect()
    }

    /// The key points said so far.
    pub fn key_points(&self) -> Vec<String> {
        self.findings_of(FindingKind::KeyPoint)
    }

    /// The risks raised so far.
    pub fn risks(&self) -> Vec<String> {
        self.findings_of(FindingKind::Risk)
    }

    /// The agents' recommendations so far (the candidate decisions).
    pub fn decisions(&self) -> Vec<String> {
        self.findings_of(FindingKind::Proposal)
    }
}

fn one() -> u32 {
    1
}
fn is_one(n: &u32) -> bool {
    *n == 1
}

/// Largest `--max-parallel`: each call is a thread and a loop.
pub const MAX_PARALLEL: u32 = 8;

/// What a board must hold for any stage to read it (docs/design/flow.md#board-invariants):
/// init-board makes such boards and every stage keeps them so; a hand-edited board that breaks
/// one is refused by the stage guard, naming the field, instead of running on silently.
pub(crate) fn check_invariants(b: &Board) -> Result<(), crate::error::Invalid> {
    use crate::error::Invalid;
    if b.participants.is_empty() {
        return Err(Invalid::at(
            "participants",
            "empty (expected at least one participant)",
        ));
    }
    for (i, name) in b.participants.iter().enumerate() {
        if b.participants[..i].contains(name) {
            return Err(Invalid::at(
                format!("participants[{i}]"),
                format!("{name:?} is named twice"),
            ));
        }
        if !b.agents.contains_key(name) {
            return Err(Invalid::at(
                format!("participants[{i}]"),
                format!("{name:?} has no config in agents"),
            ));
        }
    }
    if let Some((key, cfg)) = b.agents.iter().find(|(k, c)| **k != c.name) {
        return Err(Invalid::at(
            format!("agents.{key}.name"),
            format!("{:?} is not the key it is filed under ({key:?})", cfg.name),
        ));
    }
    if !(1..=MAX_PARALLEL).contains(&b.max_parallel) {
        return Err(Invalid::at(
            "max_parallel",
            format!("{} (expected 1 to {MAX_PARALLEL})", b.max_parallel),
        ));
    }
    if b.max_loops == 0 {
        return Err(Invalid::at("max_loops", "0 (expected at least 1)"));
    }
    if b.max_total_tokens == Some(0) {
        return Err(Invalid::at(
            "max_total_tokens",
            "0 (expected at least 1, or no field)",
        ));
    }
    if let Some(c) = &b.max_cost {
        let rates = [
            ("max_cost.usd", c.usd),
            ("max_cost.input_usd_per_mtok", c.input_usd_per_mtok),
            ("max_cost.output_usd_per_mtok", c.output_usd_per_mtok),
        ];
        for (field, v) in rates {
            if !v.is_finite() || v < 0.0 || (field == "max_cost.usd" && v == 0.0) {
                return Err(Invalid::at(
                    field,
                    format!("{v} (expected a positive number of dollars)"),
                ));
            }
        }
    }
    check_calls_and_turns(b)?;
    check_council(b)
}

/// A council voting or ranking has its calls or turns waiting, each a member's
/// (docs/design/council.md#flow): otherwise the PM's calls would be taken for the council's.
fn check_council(b: &Board) -> Result<(), crate::error::Invalid> {
    use crate::error::Invalid;
    let Some(c) = &b.council else { return Ok(()) };
    if let Some((i, m)) = c
        .members
        .iter()
        .enumerate()
        .find(|(_, m)| !b.participants.contains(&m.name))
    {
        return Err(Invalid::at(
            format!("council.members[{i}].name"),
            format!(
                "{:?} is not a participant ({})",
                m.name,
                b.participants.join(", ")
            ),
        ));
    }
    if c.phase == CouncilPhase::Done {
        return Ok(());
    }
    if b.pending_calls.is_empty() && b.last_turns.is_empty() {
        return Err(Invalid::at(
            "council.phase",
            format!(
                "{:?} with no call pending and no turn waiting (expected the members' calls, or \"done\")",
                crate::model::wire_name(&c.phase)
            ),
        ));
    }
    let members = |name: &String| c.members.iter().any(|m| &m.name == name);
    if let Some(i) = b
        .pending_calls
        .iter()
        .position(|p| !members(&p.target_agent))
    {
        return Err(Invalid::at(
            format!("pending_calls[{i}].target_agent"),
            "is not a council member, while the council votes or ranks",
        ));
    }
    Ok(())
}

/// The calls and turns of [`check_invariants`]: each naming a participant once, each call
/// with a question.
fn check_calls_and_turns(b: &Board) -> Result<(), crate::error::Invalid> {
    use crate::error::Invalid;
    let calls = entries("pending_calls", &b.pending_calls);
    each_once(
        b,
        &calls,
        "target_agent",
        "is asked twice in one fan-out",
        |c| &c.target_agent,
    )?;
    if let Some((at, _)) = calls.iter().find(|(_, c)| c.prompt.trim().is_empty()) {
        return Err(Invalid::at(
            format!("{at}.prompt"),
            "empty (expected the question for the agent)",
        ));
    }
    let turns = entries("last_turns", &b.last_turns);
    each_once(
        b,
        &turns,
        "agent_name",
        "answers twice in one fan-out",
        |t| &t.agent_name,
    )?;
    Ok(())
}

/// A board's list field as entries with their field paths (`pending_calls[0]`, ...).
fn entries<'a, T>(field: &str, items: &'a [T]) -> Vec<(String, &'a T)> {
    items
        .iter()
        .enumerate()
        .map(|(i, x)| (format!("{field}[{i}]"), x))
        .collect()
}

/// Every entry names someone who may answer, and no one twice.
fn each_once<T>(
    b: &Board,
    entries: &[(String, &T)],
    field: &str,
    twice: &str,
    name: impl Fn(&T) -> &String,
) -> Result<(), crate::error::Invalid> {
    use crate::error::Invalid;
    let mut seen: Vec<&str> = Vec::new();
    for (at, x) in entries {
        let who = name(x).as_str();
        if !b.may_answer(who) {
            return Err(Invalid::at(
                format!("{at}.{field}"),
                format!(
                    "{who:?} is not a participant ({})",
                    b.participants.join(", ")
                ),
            ));
        }
        if seen.contains(&who) {
            return Err(Invalid::at(
                format!("{at}.{field}"),
                format!("{who:?} {twice}"),
            ));
        }
        seen.push(who);
    }
    Ok(())
}

impl Board {
    /// The participants who are models, in order: a person answers one question at a time, at
    /// the terminal, so is never asked in a fan-out nor sits on the council
    /// (docs/design/agent-turn.md#fan-out).
    pub fn models(&self) -> Vec<&String> {
        self.participants
            .iter()
            .filter(|p| {
                self.agents
                    .get(*p)
                    .is_none_or(|a| a.kind != ParticipantKind::Human)
            })
            .collect()
    }

    /// The reviewers of the meeting's drafts, in order (docs/design/review.md#settings); none
    /// without review.
    pub fn reviewers(&self) -> Vec<String> {
        self.meeting_input
            .review
            .as_ref()
            .map(ReviewSettings::reviewers)
            .unwrap_or_default()
    }

    /// Whether `name` may be called now: a participant, or, while the board is `reviewing`,
    /// a reviewer (who need not be a participant).
    fn may_answer(&self, name: &str) -> bool {
        self.participants.iter().any(|p| p == name)
            || (self.status == Status::Reviewing && self.reviewers().iter().any(|r| r == name))
    }

    /// Whether the PM's report is there (a blank one counts as none), the one test every
    /// stage uses to decide whether render-report or the forced pm-step runs next.
    pub(crate) fn has_final_report(&self) -> bool {
        self.final_report
            .as_deref()
            .is_some_and(|r| !r.trim().is_empty())
    }

    /// The 1-based loop an event of `pm-step` / `agent-turn` belongs to: the loop in progress
    /// (`loop_count` counts completed loops). Forced-finish events after the last loop stay in
    /// the last loop, so `[loop 7/6]` never appears.
    pub(crate) fn current_loop(&self) -> u32 {
        self.loop_count.saturating_add(1).min(self.max_loops.max(1))
    }

    /// Whether the meeting was made to close (a `forced_finish` is in its flow: it is always
    /// in the last loop, which the flow keeps).
    pub(crate) fn forced_finish_recorded(&self) -> bool {
        self.flow
            .steps
            .iter()
            .any(|s| s.kind == FlowKind::ForcedFinish)
    }
}

/// The caller name of every PM call (cassettes, usage per caller, events).
pub const PM_CALLER: &str = "pm";
