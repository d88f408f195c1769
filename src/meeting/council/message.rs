//! The user message a council member is sent, for its vote or its ranking
//! (`share/prompts/council.j2`).

use serde_json::{json, Value};

use super::active;
use super::rank::others;
use super::vote::MAX_REASONS;
use crate::error::Result;
use crate::llm::Message;
use crate::meeting::prompts::{item, meeting_brief, render, whiteboard, Reader};
use crate::model::{Board, CouncilPhase, NONE_OF_THESE};

/// A member's user message: the meeting's stable block (the same bytes as every call's), the
/// whiteboard as an agent sees it (nothing any member said is on it yet), then the member's
/// role, the rules and, for the ranking, the others' answers under their labels
/// (`share/prompts/council.j2`).
pub(crate) fn member_message(board: &Board, name: &str, schema_in_prompt: bool) -> Result<Message> {
    let agent = board.agents.get(name);
    let dp = &board.meeting_input.decision_packet;
    let ranking = active(board) == Some(CouncilPhase::Rank);
    let answers: Vec<Value> = if ranking {
        others(board, name)
            .into_iter()
            .map(|(label, v)| {
                json!({"label": label, "choice": item(&v.choice),
                    "confidence": v.confidence.as_str(),
                    "reasons": v.reasons.iter().map(|r| item(r)).collect::<Vec<_>>()})
            })
            .collect()
    } else {
        Vec::new()
    };
    let rest = render(
        "council.j2",
        &json!({
            "role_prompt": agent.map_or("", |a| a.system_prompt.trim()),
            "has_documents": !board.context_bundle.documents.is_empty(),
            "schema_in_prompt": schema_in_prompt,
            "ranking": ranking,
            "options": crate::meeting::prompts::cut_list(&dp.options),
            "none_of_these": NONE_OF_THESE,
            "max_reasons": MAX_REASONS,
            "answers": answers,
        }),
    )?;
    Ok(Message::user_with_stable_prefix(
        meeting_brief(board, Some(name))?,
        &(whiteboard(board, Reader::Agent)? + &rest),
    ))
}
