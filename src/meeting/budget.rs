//! The token budget (docs/design/pm-round.md#token-budget): the one rule both LLM stages follow so that a
//! meeting with `max_total_tokens` on its board ends with a report inside it.
//!
//! What a call costs is not known before it is made, so every call is charged in advance at
//! its worst: the estimated prompt ([`estimate_tokens`] of the system message, the messages and
//! the schema) plus its `max_tokens`. A call is made only when the tokens used so far
//! (`usage.prompt_tokens + usage.completion_tokens`, as the providers reported them) plus that
//! cost plus a **reserve** stay within the limit. The reserve is what the PM's closing round
//! will need: its estimated prompt on the current board, its `max_tokens`, and the growth of the
//! whiteboard by one more agent answer. `pm-step` looks one loop ahead ([`next_round`]): a
//! normal round runs only when the round, the agent turn it leads to and the reserve all fit;
//! otherwise the PM is moved to its closing round for the reason "token budget". The closing
//! round itself is made only when it fits, else the fallback report is built without a call.
//!
//! The stages render their own requests; this module only prices them and decides.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::llm::{default_max_tokens, LlmArgs, Options, Request};
use crate::meeting::prompts::ITEM_CHARS;
use crate::model::Board;

/// Tokens the agent prompt's fixed text (the template: headings, rules, reply format) may take,
/// on top of what the board puts in it.
const AGENT_TEMPLATE_TOKENS: u64 = 1000;
/// Tokens allowed for the PM's question in the next agent prompt (it is not written yet).
const QUESTION_TOKENS: u64 = 300;
/// Tokens allowed per message for the provider's framing (roles, separators).
const MESSAGE_OVERHEAD_TOKENS: u64 = 8;
/// What merging one turn may add to the PM's prompt besides the agent's answer itself (the
/// summary line, an error line).
const MERGE_OVERHEAD_TOKENS: u64 = 200;

/// Estimated tokens of `text`, on the high side: one per 3.5 ASCII characters (denser than
/// the 4 of `llm::client::estimate_usage`, because JSON and code tokenise denser than prose) and one
/// per other character (CJK text is about one token a character).
pub fn estimate_tokens(text: &str) -> u64 {
    let (ascii, other) = text.chars().fold((0u64, 0u64), |(a, o), c| {
        if c.is_ascii() {
            (a + 1, o)
        } else {
            (a, o + 1)
        }
    });
    (ascii * 2).div_ceil(7) + other
}

/// The most a call can cost: its estimated prompt (system, messages, schema) plus its
/// `max_tokens` (the stages always set one; an unset one is charged the closing round's).
pub fn call_cost(req: &Request, opts: &Options) -> u64 {
    let schema = req
        .expect
        .as_ref()
        .map_or(0, |e| estimate_tokens(&pretty(&e.schema)));
    let messages: u64 = req
        .messages
        .iter()
        .map(|m| estimate_tokens(&m.content) + MESSAGE_OVERHEAD_TOKENS)
        .sum();
    estimate_tokens(&req.system)
        + MESSAGE_OVERHEAD_TOKENS
        + messages
        + schema
        + u64::from(opts.max_tokens.unwrap_or(default_max_tokens::PM_CLOSING))
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// The board's budget: its limit and the tokens used so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub limit: u64,
    pub used: u64,
}

impl Budget {
    /// `None` when the meeting has no token budget.
    pub fn of(board: &Board) -> Option<Budget> {
        board.max_total_tokens.map(|limit| Budget {
            limit,
            used: used(board),
        })
    }

    /// Whether `cost` more tokens, keeping `reserve` untouched, stay within the limit.
    pub fn fits(&self, cost: u64, reserve: u64) -> bool {
        self.used
            .saturating_add(cost)
            .saturating_add(reserve)
            .le(&self.limit)
    }

    /// `used U of N tokens`.
    pub fn used_of(&self) -> String {
        format!("used {} of {} tokens", self.used, self.limit)
    }
}

/// Tokens the meeting has used: prompt (cached ones included) and completion.
pub fn used(board: &Board) -> u64 {
    board.usage.tokens.total()
}

/// Why a call is not made, or `None` when it fits (or there is no budget): the one check
/// before every call of the LLM stages (the ask loop asks it, retries included).
pub fn refuse(board: &Board, req: &Request, opts: &Options, reserve: u64) -> Option<String> {
    let budget = Budget::of(board)?;
    let cost = call_cost(req, opts);
    if budget.fits(cost, reserve) {
        return None;
    }
    Some(if reserve > 0 {
        format!(
            "token budget: {}; this call needs up to {cost} and {reserve} must stay for the calls after it",
            budget.used_of()
        )
    } else {
        format!(
            "token budget: {}; this call needs up to {cost}",
            budget.used_of()
        )
    })
}

/// The largest prompt a caller kind sent so far, as the provider counted it (each caller's
/// `usage.by_caller[..].max_prompt_tokens`): a floor under the estimates when the provider's
/// tokenizer counts more.
fn largest_prompt(board: &Board, pm: bool) -> u64 {
    board
        .usage
        .by_caller
        .iter()
        .filter(|(caller, _)| (caller.as_str() == crate::model::PM_CALLER) == pm)
        .map(|(_, u)| u.max_prompt_tokens)
        .max()
        .unwrap_or(0)
}

/// Each participant's `max_tokens` as the one resolver gives it (`llm::resolve_max_tokens`:
/// metadata, the meeting's default, the flag), else the agent turn's default: what an agent's
/// reply may cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentLimits(BTreeMap<String, u64>);

impl AgentLimits {
    /// The limits of `board`'s participants under the LLM flags `llm`.
    pub fn resolve(board: &Board, llm: &LlmArgs) -> AgentLimits {
        let limits = board.participants.iter().map(|name| {
            let none = Map::new();
            let meta = board.agents.get(name).map_or(&none, |a| &a.metadata);
            let n = crate::llm::resolve::resolve_max_tokens(llm, &board.llm, name, meta)
                .value
                .unwrap_or(default_max_tokens::AGENT_TURN);
            (name.clone(), u64::from(n))
        });
        AgentLimits(limits.collect())
    }

    fn of(&self, name: &str) -> u64 {
        self.0
            .get(name)
            .copied()
            .unwrap_or(u64::from(default_max_tokens::AGENT_TURN))
    }
}

/// What the next agent turn may cost, before the PM has chosen the agent and the question: for
/// the costliest participant, its role prompt, its output schema, the decision, the context
/// summary, the citable documents, the whiteboard, the template and the question; at least the
/// largest agent prompt sent so far; plus its `max_tokens`.
pub fn agent_turn_estimate(board: &Board, limits: &AgentLimits) -> u64 {
    let lists = [
        &board.key_points,
        &board.open_questions,
        &board.decisions,
        &board.risks,
    ];
    let whiteboard: u64 = estimate_tokens(&board.summary)
        + lists
            .iter()
            .flat_map(|l| l.iter())
            .map(|i| estimate_tokens(&crate::text::cut(i, ITEM_CHARS)) + 2)
            .sum::<u64>();
    let documents: u64 = board
        .context_bundle
        .documents
        .iter()
        .map(|d| 2 * estimate_tokens(&format!("{} {}", d.document_id, d.source_path)) + 4)
        .sum();
    let shared = whiteboard
        + documents
        + estimate_tokens(&board.context_bundle.summary)
        + estimate_tokens(
            &serde_json::to_string(&board.meeting_input.decision_packet).unwrap_or_default(),
        )
        + AGENT_TEMPLATE_TOKENS
        + QUESTION_TOKENS;
    let observed = largest_prompt(board, false);
    board
        .participants
        .iter()
        .map(|name| {
            let own = board.agents.get(name).map_or(0, |a| {
                estimate_tokens(&a.system_prompt)
                    + estimate_tokens(&pretty(&Value::Object(a.output_schema.clone())))
            });
            (shared + own).max(observed) + limits.of(name)
        })
        .max()
        .unwrap_or(0)
}

/// What the PM's closing round will need after one more agent turn: `closing_cost` (its
/// request priced on the current board), at least the largest PM prompt so far plus the
/// closing `max_tokens`, and what one more agent answer can add to the whiteboard.
pub fn closing_reserve(
    board: &Board,
    limits: &AgentLimits,
    closing_cost: u64,
    closing_max_tokens: u32,
) -> u64 {
    let observed = largest_prompt(board, true) + u64::from(closing_max_tokens);
    closing_cost.max(observed) + answer_growth(board, limits)
}

/// What one more agent answer can add to the whiteboard, and so to the PM's next prompt.
fn answer_growth(board: &Board, limits: &AgentLimits) -> u64 {
    board
        .participants
        .iter()
        .map(|n| limits.of(n))
        .max()
        .unwrap_or(0)
        + MERGE_OVERHEAD_TOKENS
}

/// What each call of a fan-out beyond the first keeps aside (docs/design/agent-turn.md#fan-out): its calls
/// run at once, so none sees what the others spend; each is charged, in the others' reserve,
/// two agent calls (the ask loop's retry included) and what its answer adds to the closing
/// prompt.
pub fn fan_out_share(board: &Board, limits: &AgentLimits) -> u64 {
    agent_turn_estimate(board, limits)
        .saturating_mul(2)
        .saturating_add(answer_growth(board, limits))
}

/// The reserve of each call of a fan-out of `n`: the closing round's, and the other calls'
/// shares ([`fan_out_share`]).
pub fn fan_out_reserve(board: &Board, limits: &AgentLimits, reserve: u64, n: usize) -> u64 {
    reserve.saturating_add(fan_out_share(board, limits).saturating_mul(n.saturating_sub(1) as u64))
}

/// Whether a fan-out of `n` calls fits the budget now (after the PM's round): one agent turn,
/// and the others' shares, beside the reserve. Always without a budget.
pub fn fan_out_fits(board: &Board, limits: &AgentLimits, reserve: u64, n: usize) -> bool {
    Budget::of(board).is_none_or(|b| {
        b.fits(
            agent_turn_estimate(board, limits),
            fan_out_reserve(board, limits, reserve, n),
        )
    })
}

/// The outcome of [`next_round`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextRound {
    /// Go on; the agent turn keeps `reserve` tokens for the closing round.
    Go { reserve: u64 },
    /// Close now.
    Stop(Stop),
}

/// Why the budget closes the meeting: the numbers behind the decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    pub budget: Budget,
    /// The PM round and the agent turn another loop would cost.
    pub loop_cost: u64,
    pub reserve: u64,
}

impl Stop {
    /// The `forced_finish` event's message.
    pub fn event_message(&self) -> String {
        format!(
            "token budget: {}; another loop needs up to {} and the closing report up to {}",
            self.budget.used_of(),
            self.loop_cost,
            self.reserve
        )
    }

    /// The Process Note.
    pub fn process_note(&self) -> String {
        format!(
            "Meeting stopped by its token budget before full convergence: {} of {} tokens had been used, \
             and another loop (up to {} tokens) would have left too little for the closing report (up to {}).",
            self.budget.used, self.budget.limit, self.loop_cost, self.reserve
        )
    }
}

/// pm-step's look-ahead in a normal round: another loop (this PM round, `pm_cost`, and the
/// agent turn it leads to) must leave the closing round's reserve. Without a budget: `Go`
/// with no reserve.
pub fn next_round(
    board: &Board,
    limits: &AgentLimits,
    pm_cost: u64,
    closing_cost: u64,
    closing_max_tokens: u32,
) -> NextRound {
    let Some(budget) = Budget::of(board) else {
        return NextRound::Go { reserve: 0 };
    };
    let reserve = closing_reserve(board, limits, closing_cost, closing_max_tokens);
    let loop_cost = pm_cost.saturating_add(agent_turn_estimate(board, limits));
    if budget.fits(loop_cost, reserve) {
        NextRound::Go { reserve }
    } else {
        NextRound::Stop(Stop {
            budget,
            loop_cost,
            reserve,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_are_above_four_characters_a_token() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcdefg"), 2);
        assert_eq!(estimate_tokens("abcdefgh"), 3);
        assert_eq!(estimate_tokens("是否采用"), 4);
        let text = "The nightly batch misses its 06:00 deadline on one night in five. ".repeat(20);
        assert!(estimate_tokens(&text) >= (text.len() as u64).div_ceil(4));
    }

    #[test]
    fn a_budget_fits_up_to_its_limit() {
        let b = Budget {
            limit: 100,
            used: 40,
        };
        assert!(b.fits(50, 10));
        assert!(!b.fits(50, 11));
        assert_eq!(b.used_of(), "used 40 of 100 tokens");
    }

    /// Each call of a fan-out keeps the other calls' shares aside, so the calls together (each
    /// asked twice) still leave the closing round's reserve; a fan-out that does not fit is
    /// refused before any call.
    #[test]
    fn a_fan_out_reserves_for_all_its_calls() {
        let mut board = crate::stage::fixtures::board(&[]);
        let l = &AgentLimits::resolve(&board, &LlmArgs::default());
        assert!(fan_out_fits(&board, l, 0, 3), "no budget");
        let share = fan_out_share(&board, l);
        assert!(share > 2 * agent_turn_estimate(&board, l));
        assert_eq!(fan_out_reserve(&board, l, 100, 1), 100);
        assert_eq!(fan_out_reserve(&board, l, 100, 3), 100 + 2 * share);
        let one = agent_turn_estimate(&board, l);
        board.max_total_tokens = Some(100 + one + share);
        assert!(fan_out_fits(&board, l, 100, 2));
        assert!(!fan_out_fits(&board, l, 100, 3));
    }

    #[test]
    fn no_budget_never_stops() {
        let board = crate::stage::fixtures::board(&[]);
        let l = &AgentLimits::resolve(&board, &LlmArgs::default());
        assert_eq!(
            next_round(&board, l, u64::MAX, u64::MAX, 1),
            NextRound::Go { reserve: 0 }
        );
    }

    /// An agent's reply limit is the one the resolver gives its turn: its metadata, the
    /// board's default, else the `--max-tokens` flag, else the agent turn's default.
    #[test]
    fn an_agents_reply_limit_follows_the_resolver() {
        let mut board = crate::stage::fixtures::board(&[]);
        let flag = LlmArgs {
            max_tokens: Some(333),
            ..LlmArgs::default()
        };
        let l = AgentLimits::resolve(&board, &LlmArgs::default());
        assert_eq!(l.of("arch"), u64::from(default_max_tokens::AGENT_TURN));
        assert_eq!(AgentLimits::resolve(&board, &flag).of("arch"), 333);
        board.llm.max_tokens = Some(444);
        assert_eq!(AgentLimits::resolve(&board, &flag).of("arch"), 444);
        let meta = &mut board.agents.get_mut("arch").unwrap().metadata;
        meta.insert("max_tokens".into(), 555.into());
        let l = AgentLimits::resolve(&board, &flag);
        assert_eq!((l.of("arch"), l.of("biz")), (555, 444));
    }
}
