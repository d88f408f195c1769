//! A council member's turn (docs/design/council.md#flow): while the board's council is voting
//! or ranking, the call is a member's blind vote or its ranking of the others' anonymized
//! answers, through the same ask loop (one retry of an unusable answer, the token budget), left
//! in `last_turns[i].council` for merge-board. The members run as a fan-out, each call here.

use serde_json::Value;

use crate::error::Result;
use crate::llm::{Client, NoJson, Options, Request};
use crate::meeting::ask::{ask, Asker};
use crate::meeting::council::{self, check_ranking, check_vote, member_message};
use crate::meeting::events::{self, Clock};
use crate::meeting::prompts::{meeting_system, retry_message};
use crate::meeting::whiteboard::{note_caller, note_process};
use crate::model::{
    Board, Charge, CouncilAnswer, CouncilPhase, LastTurn, PendingCall, ProcessKind, TurnStatus,
};

/// Whether the board's calls are the council's.
pub(super) fn is_council(board: &Board) -> bool {
    council::active(board).is_some()
}

struct CouncilAsk<'a> {
    board: &'a mut Board,
    clock: &'a dyn Clock,
    name: &'a str,
    phase: CouncilPhase,
    reserve: Charge,
}

impl Asker for CouncilAsk<'_> {
    type Answer = CouncilAnswer;
    type Invalid = String;

    fn check(
        &mut self,
        json: Result<&Value, &NoJson>,
    ) -> std::result::Result<CouncilAnswer, String> {
        let value = json.map_err(|e| format!("the reply was {}", e.what()))?;
        match self.phase {
            CouncilPhase::Rank => {
                check_ranking(self.board, self.name, value).map(CouncilAnswer::Ranking)
            }
            _ => check_vote(self.board, self.name, value).map(CouncilAnswer::Vote),
        }
    }

    fn correction(&self, error: &String) -> Result<String> {
        retry_message(error, "", &[], "")
    }

    fn ledger(&mut self) -> Option<(&mut Board, &dyn Clock)> {
        Some((&mut *self.board, self.clock))
    }

    fn refuse(&self, request: &Request, opts: &Options) -> Option<String> {
        crate::meeting::budget::refuse(self.board, request, opts, self.reserve)
    }

    fn rejected(&mut self, attempt: u32, error: &String, retried: bool) {
        if !retried {
            return;
        }
        let name = self.name;
        note_process(
            self.board,
            ProcessKind::Retried,
            format!(
                "{name}'s council {} was unusable ({}); it was asked again.",
                what(self.phase),
                crate::text::cut(error, 160)
            ),
        );
        let ev = events::agent_retry(name, attempt, error.clone());
        events::push(self.board, self.clock, ev);
    }
}

fn what(phase: CouncilPhase) -> &'static str {
    match phase {
        CouncilPhase::Rank => "ranking",
        _ => "vote",
    }
}

/// Ask `call`'s member for its vote (or ranking) and add it to `last_turns` (an error turn
/// when no usable answer came).
pub(super) fn council_call(
    board: &mut Board,
    call: PendingCall,
    client: &mut Client,
    opts: &Options,
    clock: &dyn Clock,
) -> Result<()> {
    let name = call.target_agent.clone();
    let phase = council::active(board).unwrap_or(CouncilPhase::Vote);
    let expect = match phase {
        CouncilPhase::Rank => council::rank_expected_json(board, &name),
        _ => council::vote_expected_json(board, &name),
    };
    let request = Request {
        caller: name.clone(),
        system: meeting_system()?,
        messages: vec![member_message(board, &name, client.schema_in_prompt())?],
        expect: Some(expect),
        facts: crate::llm::Facts {
            question: Some(call.prompt.clone()),
            ..crate::meeting::prompts::facts(board)
        },
    };
    let opts = &opts.or_max_tokens(council::max_tokens(phase));
    let calls_before = client.calls();
    let mut asker = CouncilAsk {
        board: &mut *board,
        clock,
        name: &name,
        phase,
        reserve: call.reserve.unwrap_or_default(),
    };
    let outcome = ask(client, opts, request, &mut asker)?.into_turn(|e| {
        let reader = crate::meeting::ask::unusable_for_reader(&crate::text::cut(&e, 160));
        (e, reader)
    });
    if client.calls() > calls_before {
        note_caller(board, &name, client, opts);
    }
    match outcome {
        Ok(answer) => {
            let headline = match &answer {
                CouncilAnswer::Vote(v) => council::vote_headline(v),
                CouncilAnswer::Ranking(r) => format!("ranking: {}", r.ranking.join(", ")),
            };
            events::push(board, clock, events::agent_result(&name, headline));
            board.last_turns.push(LastTurn {
                agent_name: name,
                status: TurnStatus::Ok,
                prompt: call.prompt,
                result: None,
                error: None,
                review: None,
                council: Some(answer),
            });
        }
        Err((error, plain)) => {
            note_process(
                board,
                ProcessKind::TurnFailed,
                format!(
                    "{name}'s council {} failed: {plain}; the council went on without it.",
                    what(phase)
                ),
            );
            events::push(board, clock, events::agent_error(&name, &error));
            board
                .last_turns
                .push(LastTurn::failed(name, call.prompt, error));
        }
    }
    Ok(())
}
