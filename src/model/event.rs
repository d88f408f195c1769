//! Events and the bounded flow the report's diagram draws (docs/design/run-folder.md#events).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{is_zero, Tokens, TurnStatus};

/// One entry of the event log.
/// What an event records; serialised as its snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    /// `init-board` created the board. (The default only serves struct-update syntax: every
    /// event is built with its own type.)
    #[default]
    MeetingStarted,
    /// `merge-board` folded a turn in.
    BoardMerged,
    /// One logical model call (usage, duration, status).
    LlmCall,
    /// The PM's decision: a question to an agent, or FINISH.
    PmDecision,
    /// A PM answer that was not valid JSON or not a valid decision.
    PmInvalidOutput,
    /// A PM answer that named an agent who is not a participant.
    PmRoutingError,
    /// A PM round ended without a usable decision.
    PmRoundFailed,
    /// The meeting must close now (loop budget spent, or a failed round).
    ForcedFinish,
    /// An agent answer was invalid and is asked again.
    AgentRetry,
    /// An agent turn ended with a checked answer.
    AgentResult,
    /// An agent turn ended without one.
    AgentError,
    /// The PM asked a participant nearly what it had asked it before (docs/design/pm-round.md#circles).
    PmRepeatedQuestion,
    /// Two agent turns in a row added nothing new to the whiteboard (docs/design/pm-round.md#circles).
    MeetingStalled,
    /// A question a flow script put on the board itself (`pending_calls`, not
    /// the PM's), recorded by `agent-turn` when it asks it (docs/design/flows.md#hand-put-questions).
    FlowCall,
}

impl EventType {
    /// Its name as serde writes it (docs/design/flow.md#documents).
    pub fn as_str(self) -> &'static str {
        super::names::wire_name(&self)
    }
}

/// The kind of a message between participants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// The PM asks an agent.
    Task,
    /// An agent's answer (or its failure) back to the PM.
    Result,
    /// The runtime tells a participant its answer was unusable.
    Feedback,
    /// The meeting's own control flow (finish, forced finish, failed rounds).
    Control,
}

impl MessageKind {
    /// Its name as serde writes it (docs/design/flow.md#documents).
    pub fn as_str(self) -> &'static str {
        super::names::wire_name(&self)
    }
}

/// One entry of the event log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Event {
    pub ts: String,
    pub trace_id: String,
    #[serde(rename = "loop")]
    pub loop_no: u32,
    #[serde(rename = "type")]
    pub event_type: EventType,
    pub caller: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// For messages between participants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<MessageKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TurnStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// An `llm_call` that answered: its token counts.
    #[serde(flatten)]
    pub tokens: Option<Tokens>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Loops of the meeting the board's `flow` keeps (the report's diagram shows them).
pub const FLOW_LOOPS: u32 = 30;

/// The report's flow diagram in bounded form (docs/design/run-folder.md#events): the steps of the last
/// [`FLOW_LOOPS`] loops, and how many loops came before them. Kept by `events::push_at`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Flow {
    /// Loops whose steps were dropped (the oldest first) to keep the board bounded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub loops_before: u32,
    pub steps: Vec<FlowStep>,
}

/// One step of the flow diagram, made from one event (`events::flow_step`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowStep {
    #[serde(rename = "loop")]
    pub loop_no: u32,
    pub kind: FlowKind,
    /// The specialist asked (`ask`) or answering (`answer`, `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// What the diagram writes on the step, already cut to the length it shows.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
}

/// What a flow step shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FlowKind {
    /// The PM asks an agent (`pm_decision`, a task).
    Ask,
    /// An agent answers (`agent_result`).
    Answer,
    /// An agent turn failed (`agent_error`).
    Failed,
    /// The PM's FINISH.
    Finish,
    /// The meeting was made to close (`forced_finish`).
    ForcedFinish,
    /// A PM round ended without a usable decision.
    RoundFailed,
}
