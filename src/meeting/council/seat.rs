//! Opening the council on a fresh board (init-board): the members' models from the settings,
//! the council's state, the first blind votes queued, and the budget's check that the whole
//! round fits.

use serde_json::{json, Value};

use super::cost::{member_cost, reserve};
use super::round::{queue, rankers};
use super::{model_metadata, VOTE_QUESTION};
use crate::error::{Error, Result};
use crate::model::{Board, Council, CouncilMember, CouncilPhase, CouncilSettings};

/// Open the council on a fresh board (init-board): the members' models from the settings put
/// in their configs' metadata, the council on the board and one blind vote call per member in
/// `pending_calls` (a fan-out), each keeping the budget's reserve for the rest of the round.
pub(crate) fn start(board: &mut Board, settings: &CouncilSettings, now: &str) -> Result<()> {
    let names: Vec<String> = board.models().into_iter().cloned().collect();
    if names.len() < 2 {
        return Err(Error::Usage(format!(
            "council: needs at least two participants who are models (got {})",
            names.len()
        )));
    }
    if names.len() > crate::model::MAX_PARALLEL as usize {
        return Err(Error::Usage(format!(
            "council: {} members (expected at most {}, the most calls one fan-out runs)",
            names.len(),
            crate::model::MAX_PARALLEL
        )));
    }
    if settings.models.len() > names.len() {
        return Err(Error::Usage(format!(
            "council.models: {} models for {} members (expected at most one per participant who is a model)",
            settings.models.len(),
            names.len()
        )));
    }
    for (i, spec) in settings.models.iter().enumerate() {
        let (provider, model) =
            model_metadata(spec).map_err(|e| Error::Usage(format!("council.models[{i}]: {e}")))?;
        let cfg = board
            .agents
            .get_mut(&names[i])
            .expect("a member has a config");
        cfg.metadata.insert("provider".into(), json!(provider));
        match model {
            Some(m) => cfg.metadata.insert("model".into(), json!(m)),
            None => cfg.metadata.remove("model"),
        };
    }
    // Adaptive: two members first, of different model families where there are such.
    let first = if settings.adaptive && names.len() > 2 {
        let family = |n: &String| family_of(&board.agents[n].metadata);
        let second = names[1..]
            .iter()
            .position(|n| family(n) != family(&names[0]))
            .map_or(1, |i| i + 1);
        Some(vec![names[0].clone(), names[second].clone()])
    } else {
        None
    };
    board.council = Some(Council {
        phase: CouncilPhase::Vote,
        members: names
            .iter()
            .map(|n| CouncilMember {
                name: n.clone(),
                label: None,
                vote: None,
                ranking: None,
                error: None,
                held: first.as_ref().is_some_and(|f| !f.contains(n)),
            })
            .collect(),
        aggregate: None,
        adaptive: first.clone().map(|first| crate::model::AdaptiveRound {
            first,
            escalated: None,
            short_of_budget: false,
        }),
    });
    // The reserve is the seated members' round's: an adaptive council's first two votes and
    // the PM's round; its escalation is admitted later only when the rest fits (`round`).
    let seated = first.unwrap_or(names);
    let n = seated.len();
    let reserve = reserve(board, n, rankers(n));
    if let Some(budget) = crate::meeting::budget::Budget::of(board) {
        let first = member_cost(board)?;
        if let Some(limit) = budget.over(first, reserve) {
            return Err(Error::Usage(format!(
                "council: the budget cannot hold the council's {} calls and the PM's round ({} needed; {}); raise the budget or leave the council out",
                n + rankers(n),
                budget.amount(limit, first.plus(reserve)),
                budget.used_of(limit)
            )));
        }
    }
    queue(board, &seated, VOTE_QUESTION, reserve, now);
    Ok(())
}

/// A member's model family, for seating two different ones first: the model's name up to its
/// first character that is not a letter (`gpt-4o` → `gpt`, `llama3.2` → `llama`,
/// `claude-3-5-haiku` → `claude`), else the provider; empty when the member keeps the
/// meeting's model.
fn family_of(metadata: &serde_json::Map<String, Value>) -> String {
    let text = |k: &str| metadata.get(k).and_then(Value::as_str).unwrap_or("");
    let model = text("model").rsplit('/').next().unwrap_or("");
    let name: String = model
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_ascii_lowercase();
    if name.is_empty() {
        text("provider").to_string()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two members of different model families are seated first where the council has them.
    #[test]
    fn a_model_family_is_the_models_name_before_its_version() {
        let meta = |provider: &str, model: &str| {
            let mut m = serde_json::Map::new();
            m.insert("provider".into(), json!(provider));
            if !model.is_empty() {
                m.insert("model".into(), json!(model));
            }
            m
        };
        assert_eq!(family_of(&meta("openai", "gpt-4o-mini")), "gpt");
        assert_eq!(family_of(&meta("openai", "gpt-4o")), "gpt");
        assert_eq!(family_of(&meta("ollama", "llama3.2")), "llama");
        assert_eq!(family_of(&meta("anthropic", "claude-3-5-haiku")), "claude");
        assert_eq!(
            family_of(&meta("openai", "meta-llama/Llama-3.1-8B")),
            "llama"
        );
        assert_eq!(family_of(&meta("ollama", "")), "ollama");
        assert_eq!(family_of(&serde_json::Map::new()), "");
    }

    /// A council voting with nothing waiting, or asking someone who is no member, is refused
    /// by the stage guard (docs/design/flow.md#board-invariants).
    #[test]
    fn a_council_board_must_have_its_calls() {
        use crate::stage::Stage;
        let mut b = crate::stage::fixtures::board(&[]);
        b.max_parallel = 2;
        start(
            &mut b,
            &CouncilSettings::default(),
            crate::stage::fixtures::NOW,
        )
        .unwrap();
        assert!(b.expect_stage(Stage::AgentTurn).is_ok());
        let mut stray = b.clone();
        stray.council.as_mut().unwrap().members.truncate(1);
        let e = stray
            .expect_stage(Stage::AgentTurn)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("pending_calls[1].target_agent: is not a council member"),
            "{e}"
        );
        b.pending_calls.clear();
        let e = b.expect_stage(Stage::PmStep).unwrap_err().to_string();
        assert!(
            e.contains("council.phase: \"vote\" with no call pending"),
            "{e}"
        );
        assert_eq!(b.expect_stage(Stage::PmStep).unwrap_err().exit_code(), 2);
    }
}
