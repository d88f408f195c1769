//! The council round (docs/design/council.md): before the PM routes anyone, every member
//! answers the decision blind (a fan-out on the same board), then ranks the others' answers,
//! anonymized and shuffled; a deterministic aggregate goes on the whiteboard for the PM. The
//! rules init-board, agent-turn, merge-board, pm-step (its whiteboard) and render-report share
//! live here, so no stage imports another.

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::llm::{ExpectedJson, Message};
use crate::meeting::events;
use crate::meeting::prompts::{item, meeting_brief, render, whiteboard, Reader};
use crate::model::{
    Board, BordaScore, ChoiceTally, Council, CouncilAggregate, CouncilMember, CouncilPhase,
    CouncilRanking, CouncilSettings, CouncilVote, Dissent, PendingCall, RankPlace, NONE_OF_THESE,
};
use crate::text::{fold_ws, verify_quote};

/// The question each member is sent for its blind vote (the decision is in its prompt).
pub(crate) const VOTE_QUESTION: &str = "Council: answer the decision on your own, with your vote.";
/// The question each member is sent to rank the others' answers.
pub(crate) const RANK_QUESTION: &str = "Council: rank the other members' answers, anonymized.";

/// Most reasons one vote may give.
pub(crate) const MAX_REASONS: usize = 5;
/// Most citations one vote may give.
const MAX_CITATIONS: usize = 8;

/// The meeting's council settings, when it has a council.
pub(crate) fn settings(board: &Board) -> Option<CouncilSettings> {
    board
        .meeting_input
        .council
        .as_ref()
        .and_then(|c| c.settings())
}

/// The phase the council is in while its calls run (vote or rank); `None` without a council
/// or once it is done.
pub(crate) fn active(board: &Board) -> Option<CouncilPhase> {
    board
        .council
        .as_ref()
        .map(|c| c.phase)
        .filter(|p| *p != CouncilPhase::Done)
}

/// One `--council-models` entry as agent metadata: `provider:model`, or `provider`.
pub(crate) fn model_metadata(spec: &str) -> std::result::Result<(String, Option<String>), String> {
    let spec = spec.trim();
    let (provider, model) = match spec.split_once(':') {
        Some((p, m)) => (p.trim(), Some(m.trim()).filter(|m| !m.is_empty())),
        None => (spec, None),
    };
    if crate::llm::ProviderName::parse(provider).is_none() {
        return Err(format!(
            "{spec:?}: {provider:?} is not a provider (expected provider:model, e.g. openai:gpt-4o-mini)"
        ));
    }
    Ok((provider.to_string(), model.map(str::to_string)))
}

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
        }),
    });
    let n = names.len();
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
    let seated = first.unwrap_or(names);
    queue(board, &seated, VOTE_QUESTION, reserve, now);
    Ok(())
}

/// Votes it takes for the ranking round: with two, each would rank the only other answer.
const MIN_RANKERS: usize = 3;

/// The ranking round's calls when `voters` may vote: one each, or none below [`MIN_RANKERS`].
fn rankers(voters: usize) -> usize {
    if voters >= MIN_RANKERS {
        voters
    } else {
        0
    }
}

/// Members seated and not failed: who may still vote and rank.
fn seated(council: &Council) -> usize {
    council
        .members
        .iter()
        .filter(|m| m.error.is_none() && !m.held)
        .count()
}

/// The reply limit a council call sets when nothing set one: a vote or a ranking is short.
pub(crate) fn max_tokens(phase: CouncilPhase) -> u32 {
    match phase {
        CouncilPhase::Rank => crate::llm::default_max_tokens::COUNCIL_RANK,
        _ => crate::llm::default_max_tokens::COUNCIL_VOTE,
    }
}

/// The members' reply limits in `phase`: the flags', the board's or their config's, else the
/// council's own ([`max_tokens`]).
fn member_limits(board: &Board, phase: CouncilPhase) -> crate::meeting::budget::AgentLimits {
    crate::meeting::budget::AgentLimits::resolve_or(board, &Default::default(), max_tokens(phase))
}

/// The dearest member's council call as it will be sent in the current phase (the shared
/// system text, the member's message, the vote's or the ranking's schema) at the reply limit
/// the council sets: what the ask loop will charge for it (`budget::call_cost_at`).
fn member_cost(board: &Board) -> Result<crate::model::Charge> {
    let phase = active(board).unwrap_or(CouncilPhase::Vote);
    let limits = member_limits(board, phase);
    let mut dearest = crate::model::Charge::default();
    let names: Vec<String> = board
        .council
        .as_ref()
        .map(|c| c.members.iter().map(|m| m.name.clone()).collect())
        .unwrap_or_default();
    for name in &names {
        let expect = match phase {
            CouncilPhase::Rank => rank_expected_json(board, name),
            _ => vote_expected_json(board),
        };
        let request = crate::llm::Request {
            caller: name.clone(),
            system: crate::meeting::prompts::meeting_system()?,
            messages: vec![member_message(board, name, false)?],
            expect: Some(expect),
            facts: Default::default(),
        };
        let cost = crate::meeting::budget::call_cost_at(&request, limits.of(name));
        dearest = dearest.at_least(cost);
    }
    Ok(dearest)
}

/// What each of `n` council calls keeps aside, `rankers` ranking calls still to come
/// (docs/design/council.md#budget): the calls as they will be sent ([`member_cost`]), the PM's
/// round after it at an agent turn's.
fn reserve(board: &Board, n: usize, rankers: usize) -> crate::model::Charge {
    use crate::meeting::budget::{agent_turn_estimate, council_reserve, AgentLimits};
    let agents = AgentLimits::resolve(board, &Default::default());
    let members = member_limits(board, CouncilPhase::Vote);
    // A call that cannot be rendered (an embedded template's error) is charged as an agent
    // turn at the council's limits rather than as nothing.
    let member = member_cost(board).unwrap_or_else(|_| agent_turn_estimate(board, &members));
    council_reserve(board, &agents, member, &members, n, rankers)
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

/// One call per member in `names`, with `question`, each keeping `reserve`: at most
/// `max_parallel` at once (`--max-parallel 1`: one by one, for a server that takes one request
/// at a time), the rest queued by merge-board after them, still blind.
fn queue(
    board: &mut Board,
    names: &[String],
    question: &str,
    reserve: crate::model::Charge,
    now: &str,
) {
    let names = &names[..names.len().min(board.max_parallel.max(1) as usize)];
    let keep = crate::meeting::budget::Budget::of(board).map(|_| reserve);
    for name in names {
        events::push_at(board, now, events::pm_asks(name, question));
    }
    board.pending_calls = names
        .iter()
        .map(|n| PendingCall {
            target_agent: n.clone(),
            prompt: question.to_string(),
            analysis: String::new(),
            reserve: keep,
        })
        .collect();
}

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
        meeting_brief(board)?,
        &(whiteboard(board, Reader::Agent)? + &rest),
    ))
}

/// The other voters' answers as `name` ranks them: by label (the labels are shuffled, so
/// this order is too), never its own.
fn others(board: &Board, name: &str) -> Vec<(String, CouncilVote)> {
    let mut out: Vec<(String, CouncilVote)> = board
        .council
        .iter()
        .flat_map(|c| c.members.iter())
        .filter(|m| m.name != name)
        .filter_map(|m| Some((m.label.clone()?, m.vote.clone()?)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The JSON a vote must be: the choice an enum of the packet's options and "none of these"
/// (any text without options), confidence, reasons, citations kept to the collected
/// documents (none when there are none).
pub(crate) fn vote_expected_json(board: &Board) -> ExpectedJson {
    let options = &board.meeting_input.decision_packet.options;
    let choice = if options.is_empty() {
        json!({"type": "string"})
    } else {
        let mut all: Vec<&str> = options.iter().map(String::as_str).collect();
        all.push(NONE_OF_THESE);
        json!({"type": "string", "enum": all})
    };
    // Every object closed and every property listed, so the strict form of structured output
    // (`llm::json_format::to_strict`) can send it; without documents no citation fits.
    let docs = &board.context_bundle.documents;
    let mut item = json!({
        "type": "object", "additionalProperties": false,
        "required": ["document_id", "source_path", "quote"],
        "properties": {
            "document_id": {"type": "string"},
            "source_path": {"type": "string"},
            "quote": {"type": "string"}}});
    let citation = if docs.is_empty() {
        Value::Object(super::prompts::no_citations())
    } else {
        item["properties"]["document_id"]["enum"] =
            json!(docs.iter().map(|d| &d.document_id).collect::<Vec<_>>());
        item["properties"]["source_path"]["enum"] =
            json!(docs.iter().map(|d| &d.source_path).collect::<Vec<_>>());
        json!({"type": "array", "maxItems": MAX_CITATIONS, "items": item})
    };
    ExpectedJson {
        name: "council_vote".into(),
        schema: json!({
            "type": "object", "additionalProperties": false,
            "required": ["choice", "confidence", "reasons", "citations"],
            "properties": {
                "choice": choice,
                "confidence": {"type": "string", "enum": ["low", "medium", "high"]},
                "reasons": {"type": "array", "minItems": 1, "maxItems": MAX_REASONS, "items": {"type": "string"}},
                "citations": citation,
            }
        }),
    }
}

/// Check a vote: its structure, the choice one of the options (or "none of these"; any
/// non-blank text without options), every reason content, every citation naming a collected
/// document under its own path (its quote marked verified or not). The error is what the
/// model is told, for its one retry.
pub(crate) fn check_vote(board: &Board, value: &Value) -> std::result::Result<CouncilVote, String> {
    let mut value = value.clone();
    if let Value::Object(obj) = &mut value {
        obj.retain(|_, v| !v.is_null());
    }
    let mut v: CouncilVote = crate::schema::shaped(value)?;
    let options = &board.meeting_input.decision_packet.options;
    let key = |s: &str| fold_ws(s).to_lowercase();
    let wanted = key(&v.choice);
    if wanted.is_empty() {
        return Err("choice: must not be empty".into());
    }
    if !options.is_empty() {
        let known = options
            .iter()
            .map(String::as_str)
            .chain([NONE_OF_THESE])
            .find(|o| key(o) == wanted);
        match known {
            Some(o) => v.choice = o.trim().to_string(),
            None => {
                return Err(format!(
                    "choice: {:?} is not one of the options (expected one of: {}, or {NONE_OF_THESE:?} with the reasons why)",
                    crate::text::cut(&v.choice, 80),
                    options.iter().map(|o| format!("{:?}", o.trim())).collect::<Vec<_>>().join(", ")
                ))
            }
        }
    } else {
        v.choice = fold_ws(&v.choice);
    }
    if v.reasons.is_empty() || v.reasons.len() > MAX_REASONS {
        return Err(format!(
            "reasons: {} reasons (expected 1 to {MAX_REASONS}, the strongest first)",
            v.reasons.len()
        ));
    }
    for (i, r) in v.reasons.iter().enumerate() {
        if let Some(why) = crate::model::not_content(r, &board.participants) {
            return Err(format!("reasons[{i}]: {why}"));
        }
    }
    let docs = &board.context_bundle.documents;
    for (i, c) in v.citations.iter_mut().enumerate() {
        let Some(doc) = docs.iter().find(|d| d.document_id == c.document_id) else {
            let allowed: Vec<&str> = docs.iter().map(|d| d.document_id.as_str()).collect();
            return Err(format!(
                "citations[{i}].document_id: {:?} is not one of the collected documents (allowed: {})",
                c.document_id,
                if allowed.is_empty() { "none: leave citations empty".into() } else { allowed.join(", ") }
            ));
        };
        if c.source_path != doc.source_path {
            return Err(format!(
                "citations[{i}].source_path: {:?} does not match document {:?} (expected {:?})",
                c.source_path, doc.document_id, doc.source_path
            ));
        }
        c.verified = Some(verify_quote(&doc.excerpt, &c.quote));
    }
    Ok(v)
}

/// The JSON `name`'s ranking must be: every other voter's label once, best first (an enum
/// of the labels, exactly as many as there are: schema-constrained, never parsed from text;
/// no `uniqueItems`, which strict structured output cannot send: a label given twice is the
/// check's, and the retry's).
pub(crate) fn rank_expected_json(board: &Board, name: &str) -> ExpectedJson {
    let labels: Vec<String> = others(board, name).into_iter().map(|(l, _)| l).collect();
    ExpectedJson {
        name: "council_ranking".into(),
        schema: json!({
            "type": "object", "additionalProperties": false, "required": ["ranking"],
            "properties": {"ranking": {"type": "array", "minItems": labels.len(),
                "maxItems": labels.len(),
                "items": {"type": "string", "enum": labels}}}
        }),
    }
}

/// Check `name`'s ranking: each other voter's label exactly once.
pub(crate) fn check_ranking(
    board: &Board,
    name: &str,
    value: &Value,
) -> std::result::Result<CouncilRanking, String> {
    let r: CouncilRanking = crate::schema::shaped(value.clone())?;
    let labels: Vec<String> = others(board, name).into_iter().map(|(l, _)| l).collect();
    let expected = || format!("expected each of {} once, best first", labels.join(", "));
    let mut seen: Vec<&str> = Vec::new();
    for (i, l) in r.ranking.iter().enumerate() {
        let l = l.trim();
        if !labels.iter().any(|x| x == l) {
            return Err(format!(
                "ranking[{i}]: {l:?} is not one of the answers ({})",
                expected()
            ));
        }
        if seen.contains(&l) {
            return Err(format!(
                "ranking[{i}]: {l:?} is ranked twice ({})",
                expected()
            ));
        }
        seen.push(l);
    }
    if seen.len() != labels.len() {
        return Err(format!(
            "ranking: {} of {} answers ranked ({})",
            seen.len(),
            labels.len(),
            expected()
        ));
    }
    Ok(CouncilRanking {
        ranking: r.ranking.iter().map(|l| l.trim().to_string()).collect(),
    })
}

/// A vote's line for the events and the diagram.
pub(crate) fn vote_headline(v: &CouncilVote) -> String {
    format!("vote: {} ({})", fold_ws(&v.choice), v.confidence.as_str())
}

/// A seed from the trace id (FNV-1a): the same meeting shuffles the same way, so a replay is
/// byte-stable; another meeting, another order.
pub(crate) fn seed_of(trace_id: &str) -> u64 {
    trace_id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A permutation of `0..n` drawn from `seed` (Fisher-Yates on splitmix64): the randomness is
/// the seed's, injected by the caller.
pub(crate) fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// Fold the council's turns in (merge-board): the votes, then (with three voters or more,
/// so each has two answers to order) the ranking calls queued; the rankings, then the
/// aggregate. A council call is no loop: the loop budget is the PM's questions'.
pub(crate) fn merge(board: &mut Board, turns: Vec<crate::model::LastTurn>, now: &str) {
    use crate::model::CouncilAnswer;
    let Some(phase) = active(board) else { return };
    for turn in turns {
        let message = {
            let council = board.council.as_mut().expect("an active council");
            let Some(m) = council
                .members
                .iter_mut()
                .find(|m| m.name == turn.agent_name)
            else {
                continue;
            };
            match (phase, turn.council) {
                (CouncilPhase::Vote, Some(CouncilAnswer::Vote(v))) => {
                    let line = format!("{}: council {}", m.name, vote_headline(&v));
                    m.vote = Some(v);
                    line
                }
                (CouncilPhase::Rank, Some(CouncilAnswer::Ranking(r))) => {
                    let line = format!("{}: council ranking {}", m.name, r.ranking.join(", "));
                    m.ranking = Some(r.ranking);
                    line
                }
                _ => {
                    let error = turn
                        .error
                        .clone()
                        .unwrap_or_else(|| "no usable answer".into());
                    m.error = Some(error);
                    format!("{}: council error recorded", m.name)
                }
            }
        };
        events::push_at(board, now, events::board_merged(message));
    }
    // The members this round has not asked yet (beyond `max_parallel`): the next batch.
    let council = board.council.as_ref().expect("an active council");
    let waiting: Vec<String> = council
        .members
        .iter()
        .filter(|m| {
            m.error.is_none()
                && !m.held
                && match phase {
                    CouncilPhase::Rank => m.label.is_some() && m.ranking.is_none(),
                    _ => m.vote.is_none(),
                }
        })
        .map(|m| m.name.clone())
        .collect();
    if !waiting.is_empty() {
        let (question, rankers) = match phase {
            CouncilPhase::Rank => (RANK_QUESTION, 0),
            _ => (VOTE_QUESTION, rankers(seated(council))),
        };
        let reserve = reserve(board, waiting.len(), rankers);
        queue(board, &waiting, question, reserve, now);
        return;
    }
    let council = board.council.as_mut().expect("an active council");
    // Adaptive, the first two in: the rest are seated when they disagree or one is unsure.
    if let Some(round) = council.adaptive.as_mut().filter(|r| r.escalated.is_none()) {
        let votes: Vec<&CouncilVote> = council
            .members
            .iter()
            .filter_map(|m| m.vote.as_ref())
            .collect();
        let agreed = votes.len() == 2
            && same_choice(&votes[0].choice, &votes[1].choice)
            && votes
                .iter()
                .all(|v| v.confidence != crate::model::Confidence::Low);
        round.escalated = Some(!agreed);
        if !agreed {
            let held: Vec<String> = council
                .members
                .iter_mut()
                .filter(|m| m.held)
                .map(|m| {
                    m.held = false;
                    m.name.clone()
                })
                .collect();
            let seated = seated(council);
            let reserve = reserve(board, held.len(), rankers(seated));
            events::push_at(
                board,
                now,
                events::board_merged(format!(
                    "council: the first two did not agree; seating {}",
                    held.join(", ")
                )),
            );
            queue(board, &held, VOTE_QUESTION, reserve, now);
            return;
        }
    }
    let council = board.council.as_mut().expect("an active council");
    let voters: Vec<usize> = (0..council.members.len())
        .filter(|i| council.members[*i].vote.is_some())
        .collect();
    if phase == CouncilPhase::Vote && voters.len() >= MIN_RANKERS {
        for (k, i) in shuffled(voters.len(), seed_of(&board.trace_id))
            .into_iter()
            .enumerate()
        {
            council.members[voters[i]].label = Some(label(k));
        }
        council.phase = CouncilPhase::Rank;
        let names: Vec<String> = voters
            .iter()
            .map(|i| council.members[*i].name.clone())
            .collect();
        let reserve = reserve(board, names.len(), 0);
        queue(board, &names, RANK_QUESTION, reserve, now);
        return;
    }
    let options = board.meeting_input.decision_packet.options.clone();
    let council = board.council.as_mut().expect("an active council");
    council.aggregate = Some(aggregate(&options, &council.members));
    council.phase = CouncilPhase::Done;
}

/// The `k`th anonymous label: `A` … `Z`.
fn label(k: usize) -> String {
    char::from(b'A' + (k % 26) as u8).to_string()
}

/// The aggregate of the members' votes and rankings (docs/design/council.md#aggregate): the
/// votes per choice, the Borda points of each answer, the leading choice (most votes; a tie
/// broken by the Borda points of its voters; still tied: none), the agreement and who
/// dissents with their first reason. Pure: the same members give the same aggregate.
pub fn aggregate(options: &[String], members: &[CouncilMember]) -> CouncilAggregate {
    let voters: Vec<(&CouncilMember, &CouncilVote)> = members
        .iter()
        .filter_map(|m| Some((m, m.vote.as_ref()?)))
        .collect();
    let mut tally: Vec<ChoiceTally> = options
        .iter()
        .map(|o| ChoiceTally {
            choice: o.trim().to_string(),
            votes: 0,
            members: Vec::new(),
        })
        .collect();
    for (m, v) in &voters {
        match tally.iter_mut().find(|t| t.choice == v.choice) {
            Some(t) => {
                t.votes += 1;
                t.members.push(m.name.clone());
            }
            None => tally.push(ChoiceTally {
                choice: v.choice.clone(),
                votes: 1,
                members: vec![m.name.clone()],
            }),
        }
    }
    let borda: Vec<BordaScore> = voters
        .iter()
        .map(|(m, _)| {
            let mut points = 0;
            let mut places = Vec::new();
            for r in members {
                let Some(order) = &r.ranking else { continue };
                if let Some(p) = order.iter().position(|l| Some(l) == m.label.as_ref()) {
                    points += (order.len() - 1 - p) as u32;
                    places.push(RankPlace {
                        by: r.name.clone(),
                        place: p as u32 + 1,
                    });
                }
            }
            BordaScore {
                member: m.name.clone(),
                points,
                places,
            }
        })
        .collect();
    let points_of = |t: &ChoiceTally| -> u32 {
        borda
            .iter()
            .filter(|b| t.members.contains(&b.member))
            .map(|b| b.points)
            .sum()
    };
    let most = tally.iter().map(|t| t.votes).max().unwrap_or(0);
    let mut top: Vec<&ChoiceTally> = tally
        .iter()
        .filter(|t| t.votes == most && most > 0)
        .collect();
    if top.len() > 1 {
        let best = top.iter().map(|t| points_of(t)).max().unwrap_or(0);
        top.retain(|t| points_of(t) == best);
    }
    let leading = match top.as_slice() {
        [one] => Some(one.choice.clone()),
        _ => None,
    };
    let dissent = match &leading {
        Some(l) => voters
            .iter()
            .filter(|(_, v)| &v.choice != l)
            .map(|(m, v)| Dissent {
                member: m.name.clone(),
                choice: v.choice.clone(),
                reason: v.reasons.first().map(|r| fold_ws(r)).unwrap_or_default(),
            })
            .collect(),
        None => Vec::new(),
    };
    CouncilAggregate {
        agreeing: if leading.is_some() { most } else { 0 },
        tally,
        borda,
        leading,
        voters: voters.len() as u32,
        dissent,
    }
}

/// One member as the report's Council section shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct MemberRow {
    pub name: String,
    /// `provider:model` as its calls were made (the record's callers).
    pub model: String,
    pub choice: String,
    pub confidence: String,
    pub reasons: String,
    /// Borda points and each ranker's place (`1st by biz`), or empty.
    pub ranked: String,
    pub error: String,
}

/// The report's Council section (docs/design/council.md#report).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct CouncilView {
    pub members: Vec<MemberRow>,
    pub votes: String,
    pub leading: String,
    pub dissent: Vec<String>,
    /// Whether the decision follows the leading choice, in words (empty without a decision).
    pub follows: String,
    /// An adaptive council's seating, in words (empty for a whole council).
    pub adaptive: String,
}

/// The council for the report (`None` without a council or before its aggregate).
pub(crate) fn view(board: &Board, decision: Option<&str>) -> Option<CouncilView> {
    let c = board.council.as_ref()?;
    let a = c.aggregate.as_ref()?;
    let ordinal = |n: u32| match n {
        1 => "1st".to_string(),
        2 => "2nd".to_string(),
        3 => "3rd".to_string(),
        n => format!("{n}th"),
    };
    let members = c
        .members
        .iter()
        .map(|m| {
            let model = board
                .record
                .callers
                .get(&m.name)
                .map_or_else(String::new, |s| match &s.model {
                    Some(model) if *model != s.provider => format!("{}:{model}", s.provider),
                    _ => s.provider.clone(),
                });
            let score = a.borda.iter().find(|b| b.member == m.name);
            let ranked = score
                .filter(|b| !b.places.is_empty())
                .map(|b| {
                    let places: Vec<String> = b
                        .places
                        .iter()
                        .map(|p| format!("{} by {}", ordinal(p.place), p.by))
                        .collect();
                    format!(
                        "{}: {}",
                        crate::text::plural(u64::from(b.points), "point"),
                        places.join(", ")
                    )
                })
                .unwrap_or_default();
            MemberRow {
                name: m.name.clone(),
                model,
                choice: m
                    .vote
                    .as_ref()
                    .map(|v| fold_ws(&v.choice))
                    .unwrap_or_default(),
                confidence: m
                    .vote
                    .as_ref()
                    .map(|v| v.confidence.as_str().to_string())
                    .unwrap_or_default(),
                reasons: m
                    .vote
                    .as_ref()
                    .map(|v| {
                        v.reasons
                            .iter()
                            .map(|r| fold_ws(r))
                            .collect::<Vec<_>>()
                            .join("; ")
                    })
                    .unwrap_or_default(),
                ranked,
                error: if m.held {
                    "not seated: the first two agreed".to_string()
                } else {
                    m.error
                        .as_deref()
                        .map(|e| crate::text::cut(&fold_ws(e), 160))
                        .unwrap_or_default()
                },
            }
        })
        .collect();
    let adaptive = c.adaptive.as_ref().map_or_else(String::new, |r| {
        let first = r.first.join(" and ");
        let n = c.members.len();
        match r.escalated {
            Some(false) => format!(
                "Adaptive council: {first} were seated first and agreed with confidence, so {} of the {n} members were not asked ({} calls saved, and the ranking round).",
                n - 2,
                n - 2
            ),
            _ => format!(
                "Adaptive council: {first} were seated first and did not agree (or one was unsure), so all {n} members voted."
            ),
        }
    });
    let follows = match (decision, &a.leading) {
        (Some(d), Some(l)) if same_choice(d, l) => format!(
            "The decision follows the council's {} ({l}, {}).",
            if a.majority() {
                "majority"
            } else {
                "leading choice"
            },
            a.agreement()
        ),
        (Some(_), Some(l)) => {
            let why = board
                .record
                .decision
                .as_ref()
                .and_then(|d| d.against_council.as_deref())
                .map(fold_ws)
                .filter(|w| !w.is_empty())
                .map_or_else(
                    || "the PM gave no reason beyond its recommendation.".to_string(),
                    |w| format!("the PM's reason: {w}"),
                );
            format!(
                "The decision does not follow the council's {} ({l}, {}): {why}",
                if a.majority() {
                    "majority"
                } else {
                    "leading choice"
                },
                a.agreement()
            )
        }
        (Some(_), None) => format!(
            "The council had no leading choice ({}); the PM decided.",
            a.leading_line()
        ),
        (None, _) => String::new(),
    };
    Some(CouncilView {
        members,
        votes: a.votes_line(),
        leading: a.leading_line(),
        dissent: a
            .dissent
            .iter()
            .map(|d| format!("{} chose {}: {}", d.member, d.choice, d.reason))
            .collect(),
        follows,
        adaptive,
    })
}

/// Whether the PM's choice is the council's (the same words, or the option named at the start
/// of a longer choice: "Read replica, with lag monitoring").
fn same_choice(decision: &str, leading: &str) -> bool {
    let d = fold_ws(decision).to_lowercase();
    let l = fold_ws(leading).to_lowercase();
    d == l || d.starts_with(&l)
}

/// A vote of one reason, for the unit tests.
#[cfg(test)]
fn vote(choice: &str, confidence: crate::model::Confidence, reason: &str) -> CouncilVote {
    CouncilVote {
        choice: choice.into(),
        confidence,
        reasons: vec![reason.into()],
        citations: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Confidence;

    fn m(name: &str, label: &str, v: Option<CouncilVote>, ranking: &[&str]) -> CouncilMember {
        CouncilMember {
            name: name.into(),
            label: Some(label.into()).filter(|l: &String| !l.is_empty()),
            vote: v,
            ranking: (!ranking.is_empty()).then(|| ranking.iter().map(|s| s.to_string()).collect()),
            error: None,
            held: false,
        }
    }

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

    fn opts() -> Vec<String> {
        vec!["Tune".into(), "Replica".into(), "Warehouse".into()]
    }

    /// Votes per option (zero included, in the packet's order), Borda points, the majority and
    /// the dissent with its first reason.
    #[test]
    fn the_aggregate_counts_votes_and_borda_points() {
        use Confidence::*;
        let members = [
            m(
                "arch",
                "B",
                Some(vote("Replica", High, "Removes contention")),
                &["A", "C"],
            ),
            m(
                "biz",
                "A",
                Some(vote("Tune", Low, "Cheapest option")),
                &["B", "C"],
            ),
            m(
                "sre",
                "C",
                Some(vote("Replica", Medium, "Lag is bounded")),
                &["B", "A"],
            ),
        ];
        let a = aggregate(&opts(), &members);
        let votes: Vec<(&str, u32)> = a
            .tally
            .iter()
            .map(|t| (t.choice.as_str(), t.votes))
            .collect();
        assert_eq!(votes, [("Tune", 1), ("Replica", 2), ("Warehouse", 0)]);
        let points: Vec<(&str, u32)> = a
            .borda
            .iter()
            .map(|b| (b.member.as_str(), b.points))
            .collect();
        // arch: 1st by biz and sre (1 + 1); biz: 1st by arch, 2nd by sre; sre: 2nd twice.
        assert_eq!(points, [("arch", 2), ("biz", 1), ("sre", 0)]);
        assert_eq!(a.leading.as_deref(), Some("Replica"));
        assert_eq!((a.agreeing, a.voters), (2, 3));
        assert!(a.majority());
        assert_eq!(
            a.dissent,
            [Dissent {
                member: "biz".into(),
                choice: "Tune".into(),
                reason: "Cheapest option".into()
            }]
        );
    }

    /// A tie on votes is broken by the Borda points of each choice's voters; a tie on both
    /// leaves no leading choice and no dissent; a member without a vote counts for nothing.
    #[test]
    fn ties_are_broken_by_borda_points_or_left_tied() {
        use Confidence::*;
        let broken = [
            m("arch", "A", Some(vote("Replica", High, "r1")), &["B"]),
            m("biz", "B", Some(vote("Tune", High, "r2")), &["A"]),
            m("pat", "", None, &[]),
        ];
        let a = aggregate(&opts(), &broken);
        assert_eq!(a.leading, None, "1 vote and 1 point each: still tied");
        assert!(a.dissent.is_empty() && !a.majority());
        assert_eq!(a.voters, 2);
        assert_eq!(a.borda.len(), 2, "no score for a member without a vote");

        let four = [
            m(
                "a1",
                "A",
                Some(vote("Replica", High, "r")),
                &["B", "C", "D"],
            ),
            m("a2", "B", Some(vote("Tune", High, "t")), &["A", "C", "D"]),
            m(
                "a3",
                "C",
                Some(vote("Replica", High, "r")),
                &["B", "A", "D"],
            ),
            m("a4", "D", Some(vote("Tune", High, "t")), &["B", "A", "C"]),
        ];
        // Replica's voters: A 2 (a2) + 1 (a3) + 1 (a4) = 4, C 1 + 1 + 0 = 2; Tune's: B
        // 2 + 2 + 2 = 6, D 0. 6 against 6: still tied.
        let a = aggregate(&opts(), &four);
        assert_eq!(a.leading, None);
        let mut tilted = four.clone();
        tilted[3].ranking = Some(vec!["A".into(), "B".into(), "C".into()]);
        // Now A: 2+1+2 = 5, C: 2, B: 2+2+1 = 5, D: 0: 7 against 5 for Replica.
        let a = aggregate(&opts(), &tilted);
        assert_eq!(a.leading.as_deref(), Some("Replica"));
        assert!(!a.majority(), "2 of 4 is no majority");
        assert_eq!(a.dissent.len(), 2);
        let none = aggregate(&opts(), &[m("x", "", None, &[])]);
        assert_eq!((none.leading, none.voters), (None, 0));
    }

    /// The council walks the state table's existing rows (docs/design/council.md#flow):
    /// init-board leaves the votes for agent-turn, merge-board the rankings for agent-turn
    /// again, then the aggregate for the PM; no loop is spent.
    #[test]
    fn the_council_walks_the_state_table() {
        use crate::model::{CouncilAnswer, LastTurn, TurnStatus};
        use crate::stage::Stage;
        let mut b = crate::stage::fixtures::board(&[]);
        b.max_parallel = 3;
        b.meeting_input.decision_packet.options = vec!["Tune".into(), "Replica".into()];
        b.participants.push("sre".into());
        b.agents
            .insert("sre".into(), crate::stage::fixtures::agent("sre"));
        start(
            &mut b,
            &CouncilSettings::default(),
            crate::stage::fixtures::NOW,
        )
        .unwrap();
        assert_eq!(b.next_stage(), Some(Stage::AgentTurn));
        assert_eq!(b.pending_calls.len(), 3);
        let turn = |name: &str, answer: CouncilAnswer| LastTurn {
            agent_name: name.into(),
            status: TurnStatus::Ok,
            prompt: "q".into(),
            result: None,
            error: None,
            review: None,
            council: Some(answer),
        };
        let voted: Vec<LastTurn> = ["arch", "biz", "sre"]
            .iter()
            .map(|n| {
                turn(
                    n,
                    CouncilAnswer::Vote(vote("Replica", Confidence::High, "r")),
                )
            })
            .collect();
        b.pending_calls.clear();
        b.last_turns = voted.clone();
        assert_eq!(b.next_stage(), Some(Stage::MergeBoard));
        let mut b = crate::stage::merge_board::merge(b, crate::stage::fixtures::NOW).unwrap();
        assert_eq!(active(&b), Some(CouncilPhase::Rank));
        assert_eq!(b.next_stage(), Some(Stage::AgentTurn));
        let ranked: Vec<LastTurn> = b
            .pending_calls
            .iter()
            .map(|c| {
                let order = others(&b, &c.target_agent)
                    .into_iter()
                    .map(|(l, _)| l)
                    .collect();
                turn(
                    &c.target_agent,
                    CouncilAnswer::Ranking(CouncilRanking { ranking: order }),
                )
            })
            .collect();
        b.pending_calls.clear();
        b.last_turns = ranked;
        let b = crate::stage::merge_board::merge(b, crate::stage::fixtures::NOW).unwrap();
        assert_eq!(b.next_stage(), Some(Stage::PmStep));
        assert_eq!(b.loop_count, 0, "council calls are no loops");
        let a = b.council.as_ref().unwrap().aggregate.as_ref().unwrap();
        assert_eq!(
            (a.leading.as_deref(), a.agreeing, a.voters),
            (Some("Replica"), 3, 3)
        );
        assert!(
            crate::meeting::prompts::whiteboard(&b, crate::meeting::prompts::Reader::Pm)
                .unwrap()
                .contains("- Votes: Tune 0; Replica 3 (arch, biz, sre).")
        );
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

    /// The council's schemas are ones strict structured output can send as they are.
    #[test]
    fn the_council_schemas_have_a_strict_form() {
        let mut b = crate::stage::fixtures::board(&[]);
        b.meeting_input.decision_packet.options = vec!["Tune".into(), "Replica".into()];
        start(
            &mut b,
            &CouncilSettings::default(),
            crate::stage::fixtures::NOW,
        )
        .unwrap();
        let vote = vote_expected_json(&b).schema;
        assert!(
            crate::llm::json_format::to_strict(&vote).is_some(),
            "{vote}"
        );
        // Without documents the schema alone says there is nothing to cite, in few characters.
        assert!(b.context_bundle.documents.is_empty());
        assert_eq!(
            vote["properties"]["citations"],
            json!({"type": "array", "items": {"type": "string"}, "maxItems": 0})
        );
        let said = member_message(&b, "arch", false)
            .unwrap()
            .to_json()
            .to_string();
        assert!(!said.contains("no documents"), "{said}");
        b.council.as_mut().unwrap().phase = CouncilPhase::Rank;
        let rank = rank_expected_json(&b, "arch").schema;
        assert!(
            crate::llm::json_format::to_strict(&rank).is_some(),
            "{rank}"
        );
    }

    /// A vote for an option not in the packet is refused with the options named; one in
    /// other case or spacing is taken in the packet's spelling.
    #[test]
    fn a_vote_must_name_an_option() {
        let mut b = crate::stage::fixtures::board(&[]);
        b.meeting_input.decision_packet.options = vec!["Read replica".into(), "Tune".into()];
        let v = |c: &str| json!({"choice": c, "confidence": "high", "reasons": ["Lag is bounded by the load test"], "citations": []});
        let e = check_vote(&b, &v("Kafka")).unwrap_err();
        assert!(
            e.contains("\"Kafka\" is not one of the options") && e.contains("\"Read replica\""),
            "{e}"
        );
        assert_eq!(
            check_vote(&b, &v("read  REPLICA")).unwrap().choice,
            "Read replica"
        );
        assert_eq!(
            check_vote(&b, &v("None of these")).unwrap().choice,
            NONE_OF_THESE
        );
        let mut empty = v("Tune");
        empty["reasons"] = json!([]);
        assert!(check_vote(&b, &empty).unwrap_err().starts_with("reasons:"));
    }

    /// The shuffle is a permutation fixed by its seed; the seed by the trace id.
    #[test]
    fn the_shuffle_is_deterministic_from_the_seed() {
        let a = shuffled(5, seed_of("t1"));
        assert_eq!(a, shuffled(5, seed_of("t1")));
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 1, 2, 3, 4]);
        let differs = (0..20).any(|i| shuffled(5, seed_of(&format!("t{i}"))) != a);
        assert!(differs, "other trace ids, other orders");
    }
}
