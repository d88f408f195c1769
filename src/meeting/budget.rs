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
//! A cost budget (`max_cost`, docs/design/pm-round.md#cost-budget) is the same look-ahead in dollars:
//! what was spent is priced as the report prices it, and what a call may cost is its prompt and
//! reply tokens ([`Charge`]) at the dearest input and output prices among the meeting's models.
//!
//! The stages render their own requests; this module only prices them and decides.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::llm::prices::{dollars, Prices};
use crate::llm::{default_max_tokens, LlmConfig, Options, Request};
use crate::meeting::prompts::ITEM_CHARS;
use crate::model::{Board, Charge, CostLimit, ForcedReason, ParticipantKind, PM_CALLER};

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
pub fn call_cost(req: &Request, opts: &Options) -> Charge {
    let max_tokens = opts.max_tokens.unwrap_or(default_max_tokens::PM_CLOSING);
    call_cost_at(req, u64::from(max_tokens))
}

/// [`call_cost`] at a reply limit of `max_tokens`.
pub fn call_cost_at(req: &Request, max_tokens: u64) -> Charge {
    let schema = req
        .expect
        .as_ref()
        .map_or(0, |e| estimate_tokens(&pretty(&e.schema)));
    let messages: u64 = req
        .messages
        .iter()
        .map(|m| estimate_tokens(&m.content) + MESSAGE_OVERHEAD_TOKENS)
        .sum();
    Charge::new(
        estimate_tokens(&req.system) + MESSAGE_OVERHEAD_TOKENS + messages + schema,
        max_tokens,
    )
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// Which limit a charge would pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// `max_total_tokens`.
    Tokens,
    /// `max_cost` (docs/design/pm-round.md#cost-budget).
    Cost,
}

impl Limit {
    /// Why the meeting closed, as the record keeps it.
    pub fn forced(self) -> ForcedReason {
        match self {
            Limit::Tokens => ForcedReason::TokenBudget,
            Limit::Cost => ForcedReason::CostBudget,
        }
    }
}

/// The board's budget: its limits and what the meeting has used of them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// The token limit and the tokens used so far.
    pub tokens: Option<(u64, u64)>,
    /// The cost limit and the dollars spent so far.
    pub cost: Option<(CostLimit, f64)>,
}

impl Budget {
    /// `None` when the meeting has no budget.
    pub fn of(board: &Board) -> Option<Budget> {
        let budget = Budget {
            tokens: board.max_total_tokens.map(|limit| (limit, used(board))),
            cost: board.max_cost.map(|limit| (limit, spent(board, &limit))),
        };
        (budget.tokens.is_some() || budget.cost.is_some()).then_some(budget)
    }

    /// The first limit that `cost` more, keeping `reserve` untouched, would pass; `None` when
    /// it fits.
    pub fn over(&self, cost: Charge, reserve: Charge) -> Option<Limit> {
        let all = cost.plus(reserve);
        if let Some((limit, used)) = self.tokens {
            if used.saturating_add(all.total()) > limit {
                return Some(Limit::Tokens);
            }
        }
        if let Some((limit, spent)) = self.cost {
            if spent + limit.price(all) > limit.usd {
                return Some(Limit::Cost);
            }
        }
        None
    }

    /// Whether `cost` more, keeping `reserve` untouched, stays within every limit.
    pub fn fits(&self, cost: Charge, reserve: Charge) -> bool {
        self.over(cost, reserve).is_none()
    }

    /// `token budget: used U of N tokens`, `cost budget: spent $S of $L`.
    pub fn used_of(&self, limit: Limit) -> String {
        match (limit, self.tokens, self.cost) {
            (Limit::Tokens, Some((limit, used)), _) => {
                format!("token budget: used {used} of {limit} tokens")
            }
            (Limit::Cost, _, Some((limit, spent))) => {
                format!(
                    "cost budget: spent {} of {}",
                    dollars(spent),
                    dollars(limit.usd)
                )
            }
            _ => String::new(),
        }
    }

    /// What `c` is under `limit`: `N` tokens, or up to `$X`.
    pub fn amount(&self, limit: Limit, c: Charge) -> String {
        match (limit, self.cost) {
            (Limit::Cost, Some((l, _))) => dollars(l.price(c)),
            _ => c.total().to_string(),
        }
    }
}

/// Tokens the meeting has used: prompt (cached ones included) and completion.
pub fn used(board: &Board) -> u64 {
    board.usage.tokens.total()
}

/// Dollars the meeting has spent, as its report prices them (the table, a gateway's bill);
/// a caller the table does not price is charged at `limit`'s rates.
pub fn spent(board: &Board, limit: &CostLimit) -> f64 {
    let cost = Prices::current().meeting_cost(&board.usage, &board.record.callers);
    let by_caller = cost.map(|c| c.by_caller).unwrap_or_default();
    by_caller
        .iter()
        .map(|(name, usd)| match usd {
            Some(usd) => *usd,
            None => board.usage.by_caller.get(name).map_or(0.0, |u| {
                limit.price(Charge::new(
                    u.tokens.prompt_tokens,
                    u.tokens.completion_tokens,
                ))
            }),
        })
        .sum()
}

/// What the meeting's live calls cost at the current price table, as the report, the
/// MeetingResult and `--compare` say it (docs/design/llm.md#prices): a fork's leaves out what
/// its parent's log answered (`record.from_parent`, paid by the parent,
/// docs/design/run-folder.md#fork), at the same callers' prices.
pub fn live_cost(board: &Board) -> Option<crate::model::Cost> {
    let prices = Prices::current();
    let mut cost = prices.meeting_cost(&board.usage, &board.record.callers)?;
    let Some(before) = board
        .record
        .from_parent
        .as_ref()
        .and_then(|u| prices.meeting_cost(u, &board.record.callers))
    else {
        return Some(cost);
    };
    for (caller, usd) in cost.by_caller.iter_mut() {
        if let (Some(now), Some(Some(then))) = (usd.as_mut(), before.by_caller.get(caller)) {
            *now = (*now - then).max(0.0);
        }
    }
    if let (Some(now), Some(then)) = (cost.usd.as_mut(), before.usd) {
        *now = (*now - then).max(0.0);
    }
    Some(cost)
}

/// The cost budget of `usd` dollars for `board`'s meeting: the dearest input price (or cache
/// write, which costs more) and output price among the PM's, the participants' and the
/// reviewers' models as `llm` resolves them. A person and a provider not paid by the token
/// (replay, sample, Ollama) cost nothing; a model the table does not price is a usage error, since its
/// spending could not be kept within the budget.
pub fn cost_limit(board: &Board, llm: &LlmConfig, usd: f64, prices: &Prices) -> Result<CostLimit> {
    let none = Map::new();
    let pm = board.pm.as_ref().map_or(&none, |p| &p.metadata);
    let agents = board
        .agents
        .values()
        .filter(|a| a.kind != ParticipantKind::Human)
        .map(|a| (a.name.as_str(), &a.metadata));
    let mut limit = CostLimit {
        usd,
        input_usd_per_mtok: 0.0,
        output_usd_per_mtok: 0.0,
    };
    for (caller, meta) in std::iter::once((PM_CALLER, pm)).chain(agents) {
        let r = crate::llm::resolve::resolve(llm, &board.llm, caller, meta)?;
        if !r.provider.value.paid_by_token() {
            continue;
        }
        let (provider, model) = (r.provider.value.as_str(), r.model.value.as_str());
        let price = prices.of(provider, model).ok_or_else(|| {
            Error::Usage(format!(
                "--max-cost: {caller} uses {provider} {model}, which the price table ({} of {}) does not price; give --prices FILE with its prices, or no --max-cost (nor --max-cost-per-day)",
                prices.source_name(),
                prices.date
            ))
        })?;
        let input = price.input.max(price.cache_write.unwrap_or(0.0)) * 1e6;
        limit.input_usd_per_mtok = limit.input_usd_per_mtok.max(input);
        limit.output_usd_per_mtok = limit.output_usd_per_mtok.max(price.output * 1e6);
    }
    Ok(limit)
}

/// Why a call is not made, or `None` when it fits (or there is no budget): the one check
/// before every call of the LLM stages (the ask loop asks it, retries included).
pub fn refuse(board: &Board, req: &Request, opts: &Options, reserve: Charge) -> Option<String> {
    let budget = Budget::of(board)?;
    let cost = call_cost(req, opts);
    let limit = budget.over(cost, reserve)?;
    let (needs, keep) = (budget.amount(limit, cost), budget.amount(limit, reserve));
    let verb = if limit == Limit::Cost {
        "may cost up to"
    } else {
        "needs up to"
    };
    Some(if reserve.total() > 0 {
        format!(
            "{}; this call {verb} {needs} and {keep} must stay for the calls after it",
            budget.used_of(limit)
        )
    } else {
        format!("{}; this call {verb} {needs}", budget.used_of(limit))
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
        .filter(|(caller, _)| (caller.as_str() == PM_CALLER) == pm)
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
    pub fn resolve(board: &Board, llm: &LlmConfig) -> AgentLimits {
        AgentLimits::resolve_or(board, llm, default_max_tokens::AGENT_TURN)
    }

    /// The same where nothing set one, `default` instead of an agent turn's: the limit a
    /// council's calls set themselves (docs/design/council.md#budget).
    pub fn resolve_or(board: &Board, llm: &LlmConfig, default: u32) -> AgentLimits {
        let limits = board.participants.iter().map(|name| {
            let none = Map::new();
            let meta = board.agents.get(name).map_or(&none, |a| &a.metadata);
            let n = crate::llm::resolve::resolve_max_tokens(llm, &board.llm, name, meta)
                .value
                .unwrap_or(default);
            (name.clone(), u64::from(n))
        });
        AgentLimits(limits.collect())
    }

    pub(crate) fn of(&self, name: &str) -> u64 {
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
pub fn agent_turn_estimate(board: &Board, limits: &AgentLimits) -> Charge {
    let lists = [
        &board.key_points(),
        &board.open_questions(),
        &board.decisions(),
        &board.risks(),
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
            Charge::new((shared + own).max(observed), limits.of(name))
        })
        .fold(Charge::default(), Charge::at_least)
}

/// What the PM's closing round will need after one more agent turn: `closing_cost` (its
/// request priced on the current board), at least the largest PM prompt so far plus the
/// closing `max_tokens`, and what one more agent answer can add to the whiteboard.
pub fn closing_reserve(
    board: &Board,
    limits: &AgentLimits,
    closing_cost: Charge,
    closing_max_tokens: u32,
) -> Charge {
    let observed = Charge::new(largest_prompt(board, true), u64::from(closing_max_tokens));
    closing_cost
        .at_least(observed)
        .plus(answer_growth(board, limits))
}

/// What one more agent answer can add to the whiteboard, and so to the PM's next prompt.
fn answer_growth(board: &Board, limits: &AgentLimits) -> Charge {
    let answer = board
        .participants
        .iter()
        .map(|n| limits.of(n))
        .max()
        .unwrap_or(0);
    Charge::new(answer + MERGE_OVERHEAD_TOKENS, 0)
}

/// What each call of a fan-out beyond the first keeps aside (docs/design/agent-turn.md#fan-out): its calls
/// run at once, so none sees what the others spend; each is charged, in the others' reserve,
/// two agent calls (the ask loop's retry included) and what its answer adds to the closing
/// prompt.
pub fn fan_out_share(board: &Board, limits: &AgentLimits) -> Charge {
    agent_turn_estimate(board, limits)
        .times(2)
        .plus(answer_growth(board, limits))
}

/// The reserve of each call of a fan-out of `n`: the closing round's, and the other calls'
/// shares ([`fan_out_share`]).
pub fn fan_out_reserve(board: &Board, limits: &AgentLimits, reserve: Charge, n: usize) -> Charge {
    reserve.plus(fan_out_share(board, limits).times(n.saturating_sub(1) as u64))
}

/// What each call of a council round keeps aside (docs/design/council.md#budget): the
/// round's other calls and the ranking round's `rankers` calls still to come, each charged as
/// `member` (the dearest member's council call as it will be sent, at the council's reply
/// limit) twice — the ask loop's retry — plus what its answer adds to the PM's prompt, a
/// ranking call also the others' answers it shows; then the PM's first round after the council,
/// for which two agent turns stand (the PM's prompt holds the whiteboard, the aggregate and the
/// routing rules), and what every member's answer adds to it.
pub fn council_reserve(
    board: &Board,
    agents: &AgentLimits,
    member: Charge,
    members: &AgentLimits,
    n: usize,
    rankers: usize,
) -> Charge {
    let growth = answer_growth(board, members);
    let others = (n + rankers).saturating_sub(1) as u64;
    let shown = (rankers * n.saturating_sub(1)) as u64;
    member
        .times(2)
        .plus(growth)
        .times(others)
        .plus(growth.times(shown))
        .plus(agent_turn_estimate(board, agents).times(2))
        .plus(growth.times(n as u64))
}

/// Whether a fan-out of `n` calls fits the budget now (after the PM's round): one agent turn,
/// and the others' shares, beside the reserve. Always without a budget.
pub fn fan_out_fits(board: &Board, limits: &AgentLimits, reserve: Charge, n: usize) -> bool {
    Budget::of(board).is_none_or(|b| {
        b.fits(
            agent_turn_estimate(board, limits),
            fan_out_reserve(board, limits, reserve, n),
        )
    })
}

/// The outcome of [`next_round`].
#[derive(Debug, Clone, PartialEq)]
pub enum NextRound {
    /// Go on; the agent turn keeps `reserve` for the closing round.
    Go { reserve: Charge },
    /// Close now.
    Stop(Stop),
}

/// Why the budget closes the meeting: the numbers behind the decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Stop {
    pub budget: Budget,
    /// The limit another loop would pass.
    pub limit: Limit,
    /// The PM round and the agent turn another loop would cost.
    pub loop_cost: Charge,
    pub reserve: Charge,
}

impl Stop {
    /// The `forced_finish` event's message.
    pub fn event_message(&self) -> String {
        let b = &self.budget;
        format!(
            "{}; another loop needs up to {} and the closing report up to {}",
            b.used_of(self.limit),
            b.amount(self.limit, self.loop_cost),
            b.amount(self.limit, self.reserve)
        )
    }

    /// The Process Note, with the arithmetic behind it.
    pub fn process_note(&self) -> String {
        match (self.limit, self.budget.tokens, self.budget.cost) {
            (Limit::Cost, _, Some((limit, spent))) => {
                let part = |c: Charge| {
                    format!(
                        "{} prompt and {} reply tokens, {}",
                        c.prompt_tokens,
                        c.completion_tokens,
                        dollars(limit.price(c))
                    )
                };
                format!(
                    "Meeting stopped by its cost budget before full convergence: {} of {} had been spent, \
                     and another loop (up to {}) would have left too little for the closing report (up to {}), \
                     at ${} per million prompt and ${} per million reply tokens (the dearest of the meeting's models).",
                    dollars(spent),
                    dollars(limit.usd),
                    part(self.loop_cost),
                    part(self.reserve),
                    per_million(limit.input_usd_per_mtok),
                    per_million(limit.output_usd_per_mtok)
                )
            }
            (_, Some((limit, used)), _) => format!(
                "Meeting stopped by its token budget before full convergence: {used} of {limit} tokens had been used, \
                 and another loop (up to {} tokens) would have left too little for the closing report (up to {}).",
                self.loop_cost.total(),
                self.reserve.total()
            ),
            _ => String::new(),
        }
    }
}

/// A price per million tokens as people read it: `0.15`, `2.50`, `0.075`.
fn per_million(usd: f64) -> String {
    let s = format!("{usd:.4}");
    let (whole, cents) = s.split_once('.').unwrap_or((&s, ""));
    let cents = cents.trim_end_matches('0');
    format!("{whole}.{cents:0<2}")
}

/// pm-step's look-ahead in a normal round: another loop (this PM round, `pm_cost`, and the
/// agent turn it leads to) must leave the closing round's reserve. Without a budget: `Go`
/// with no reserve.
pub fn next_round(
    board: &Board,
    limits: &AgentLimits,
    pm_cost: Charge,
    closing_cost: Charge,
    closing_max_tokens: u32,
) -> NextRound {
    let Some(budget) = Budget::of(board) else {
        return NextRound::Go {
            reserve: Charge::default(),
        };
    };
    let reserve = closing_reserve(board, limits, closing_cost, closing_max_tokens);
    let loop_cost = pm_cost.plus(agent_turn_estimate(board, limits));
    match budget.over(loop_cost, reserve) {
        None => NextRound::Go { reserve },
        Some(limit) => NextRound::Stop(Stop {
            budget,
            limit,
            loop_cost,
            reserve,
        }),
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

    fn tokens(n: u64) -> Charge {
        Charge::new(n, 0)
    }

    #[test]
    fn a_budget_fits_up_to_its_limit() {
        let b = Budget {
            tokens: Some((100, 40)),
            cost: None,
        };
        assert!(b.fits(tokens(50), Charge::new(5, 5)));
        assert_eq!(b.over(tokens(50), Charge::new(6, 5)), Some(Limit::Tokens));
        assert_eq!(
            b.used_of(Limit::Tokens),
            "token budget: used 40 of 100 tokens"
        );
    }

    fn limit(usd: f64) -> CostLimit {
        CostLimit {
            usd,
            input_usd_per_mtok: 1.0,
            output_usd_per_mtok: 4.0,
        }
    }

    /// A cost budget prices prompt and reply tokens apart: a million prompt tokens cost what a
    /// quarter million reply tokens do, and the spending so far counts.
    #[test]
    fn a_cost_budget_prices_prompt_and_reply_apart() {
        let b = Budget {
            tokens: None,
            cost: Some((limit(1.0), 0.25)),
        };
        assert!(b.fits(tokens(500_000), Charge::new(0, 62_500)));
        assert_eq!(
            b.over(tokens(500_000), Charge::new(0, 62_501)),
            Some(Limit::Cost)
        );
        assert_eq!(
            b.used_of(Limit::Cost),
            "cost budget: spent $0.2500 of $1.00"
        );
        assert_eq!(b.amount(Limit::Cost, Charge::new(1000, 1000)), "$0.0050");
        assert_eq!(b.amount(Limit::Tokens, Charge::new(1000, 1000)), "2000");
    }

    /// With both limits, the one that binds is named.
    #[test]
    fn the_binding_limit_is_named() {
        let b = Budget {
            tokens: Some((1_000_000, 0)),
            cost: Some((limit(0.01), 0.0)),
        };
        assert_eq!(b.over(tokens(20_000), Charge::default()), Some(Limit::Cost));
        let b = Budget {
            tokens: Some((10_000, 0)),
            cost: Some((limit(100.0), 0.0)),
        };
        assert_eq!(
            b.over(tokens(20_000), Charge::default()),
            Some(Limit::Tokens)
        );
    }

    /// The Process Note of a cost stop gives the arithmetic: spent, limit, both charges in
    /// tokens and dollars, and the rates.
    #[test]
    fn a_cost_stop_explains_its_arithmetic() {
        let stop = Stop {
            budget: Budget {
                tokens: None,
                cost: Some((limit(0.05), 0.0312)),
            },
            limit: Limit::Cost,
            loop_cost: Charge::new(5200, 2700),
            reserve: Charge::new(9100, 2000),
        };
        let note = stop.process_note();
        for part in [
            "$0.0312 of $0.0500 had been spent",
            "5200 prompt and 2700 reply tokens, $0.0160",
            "9100 prompt and 2000 reply tokens, $0.0171",
            "$1.00 per million prompt and $4.00 per million reply tokens",
        ] {
            assert!(note.contains(part), "{part:?} not in {note}");
        }
        assert_eq!(Limit::Cost.forced(), ForcedReason::CostBudget);
        assert_eq!(per_million(0.075), "0.075");
        assert_eq!(per_million(15.0), "15.00");
    }

    /// A boards written before the cost budget kept a pending call's reserve as one number of
    /// tokens: it still reads, as prompt tokens.
    #[test]
    fn an_old_reserve_still_reads() {
        let old: crate::model::PendingCall = serde_json::from_str(
            r#"{"target_agent": "arch", "prompt": "p", "reserve_tokens": 700}"#,
        )
        .unwrap();
        assert_eq!(old.reserve, Some(Charge::new(700, 0)));
        let new = serde_json::to_value(&old).unwrap();
        assert_eq!(new["reserve"]["prompt_tokens"], 700);
        let back: crate::model::PendingCall = serde_json::from_value(new).unwrap();
        assert_eq!(back, old);
    }

    /// The cost budget's rates are the dearest of the meeting's models, a cache write's price
    /// included; an unpriced model is refused, an offline provider costs nothing.
    #[test]
    fn a_cost_limit_takes_the_dearest_models_rates() {
        let mut board = crate::stage::fixtures::board(&[]);
        board.llm.provider = "openai".into();
        board.llm.model = Some("gpt-4o-mini".into());
        let prices = Prices::built_in();
        let mini = prices.of("openai", "gpt-4o-mini").unwrap().clone();
        let l = cost_limit(&board, &LlmConfig::default(), 1.0, &prices).unwrap();
        assert_eq!(l.input_usd_per_mtok, mini.input * 1e6);
        assert_eq!(l.output_usd_per_mtok, mini.output * 1e6);
        let meta = &mut board.agents.get_mut("arch").unwrap().metadata;
        meta.insert("model".into(), "gpt-4o".into());
        let big = prices.of("openai", "gpt-4o").unwrap().clone();
        let l = cost_limit(&board, &LlmConfig::default(), 1.0, &prices).unwrap();
        assert_eq!(l.output_usd_per_mtok, big.output * 1e6);
        let meta = &mut board.agents.get_mut("arch").unwrap().metadata;
        meta.insert("model".into(), "no-such-model".into());
        let err = cost_limit(&board, &LlmConfig::default(), 1.0, &prices).unwrap_err();
        assert!(
            err.to_string().contains("arch uses openai no-such-model"),
            "{err}"
        );
        board.llm.provider = "replay".into();
        let offline = LlmConfig {
            provider: Some("replay".into()),
            ..LlmConfig::default()
        };
        let l = cost_limit(&board, &offline, 1.0, &prices).unwrap();
        assert_eq!((l.input_usd_per_mtok, l.output_usd_per_mtok), (0.0, 0.0));
    }

    /// Each call of a fan-out keeps the other calls' shares aside, so the calls together (each
    /// asked twice) still leave the closing round's reserve; a fan-out that does not fit is
    /// refused before any call.
    #[test]
    fn a_fan_out_reserves_for_all_its_calls() {
        let mut board = crate::stage::fixtures::board(&[]);
        let l = &AgentLimits::resolve(&board, &LlmConfig::default());
        assert!(fan_out_fits(&board, l, Charge::default(), 3), "no budget");
        let share = fan_out_share(&board, l);
        assert!(share.total() > 2 * agent_turn_estimate(&board, l).total());
        assert_eq!(fan_out_reserve(&board, l, tokens(100), 1), tokens(100));
        assert_eq!(
            fan_out_reserve(&board, l, tokens(100), 3),
            tokens(100).plus(share.times(2))
        );
        let one = agent_turn_estimate(&board, l);
        board.max_total_tokens = Some(100 + one.total() + share.total());
        assert!(fan_out_fits(&board, l, tokens(100), 2));
        assert!(!fan_out_fits(&board, l, tokens(100), 3));
    }

    #[test]
    fn no_budget_never_stops() {
        let board = crate::stage::fixtures::board(&[]);
        let l = &AgentLimits::resolve(&board, &LlmConfig::default());
        let most = Charge::new(u64::MAX, u64::MAX);
        assert_eq!(
            next_round(&board, l, most, most, 1),
            NextRound::Go {
                reserve: Charge::default()
            }
        );
    }

    /// An agent's reply limit is the one the resolver gives its turn: its metadata, the
    /// board's default, else the `--max-tokens` flag, else the agent turn's default.
    #[test]
    fn an_agents_reply_limit_follows_the_resolver() {
        let mut board = crate::stage::fixtures::board(&[]);
        let flag = LlmConfig {
            max_tokens: Some(333),
            ..LlmConfig::default()
        };
        let l = AgentLimits::resolve(&board, &LlmConfig::default());
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
