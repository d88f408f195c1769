//! A reviewer's turn (docs/design/review.md#verdict): while the board is `reviewing`, the
//! call is a reviewer's, asked for a verdict on the PM's draft instead of an answer to a
//! question, through the same ask loop (one retry, the token budget), and left in
//! `last_turns[i].review` for merge-board. Several reviewers run as a fan-out, each call here.

use serde_json::Value;

use crate::error::Result;
use crate::llm::{default_max_tokens, Client, NoJson, Options, Request};
use crate::meeting::ask::{ask, Asker};
use crate::meeting::events::{self, Clock};
use crate::meeting::prompts::{meeting_system, retry_message};
use crate::meeting::review::{
    check_verdict, reviewer_message, verdict_expected_json, verdict_headline,
};
use crate::meeting::whiteboard::{note_caller, note_process};
use crate::model::{Board, LastTurn, PendingCall, ProcessKind, ReviewVerdict, Status, TurnStatus};

/// Whether the board's calls are reviewers'.
pub(super) fn is_review(board: &Board) -> bool {
    board.status == Status::Reviewing
}

/// Why a verdict cannot be used: the model's words (the reader gets them cut).
struct ReviewAsk<'a> {
    board: &'a mut Board,
    clock: &'a dyn Clock,
    name: &'a str,
}

impl Asker for ReviewAsk<'_> {
    type Answer = ReviewVerdict;
    type Invalid = String;

    fn check(
        &mut self,
        json: Result<&Value, &NoJson>,
    ) -> std::result::Result<ReviewVerdict, String> {
        let value = json.map_err(|e| format!("the reply was {}", e.what()))?;
        check_verdict(self.board, self.name, value)
    }

    fn correction(&self, error: &String) -> Result<String> {
        retry_message(error, "", &[], "")
    }

    fn ledger(&mut self) -> Option<(&mut Board, &dyn Clock)> {
        Some((&mut *self.board, self.clock))
    }

    fn refuse(&self, request: &Request, opts: &Options) -> Option<String> {
        crate::meeting::budget::refuse(self.board, request, opts, Default::default())
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
                "{name}'s review was unusable ({}); it was asked again.",
                crate::text::cut(error, 160)
            ),
        );
        let ev = events::agent_retry(name, attempt, error.clone());
        events::push(self.board, self.clock, ev);
    }
}

/// Ask `call`'s reviewer for its verdict and add it to `last_turns` (an error turn when no
/// usable verdict came).
pub(super) fn review_call(
    board: &mut Board,
    call: PendingCall,
    client: &mut Client,
    opts: &Options,
    clock: &dyn Clock,
) -> Result<()> {
    let name = call.target_agent.clone();
    let request = Request {
        caller: name.clone(),
        system: meeting_system()?,
        messages: vec![reviewer_message(board, &name, client.schema_in_prompt())?],
        expect: Some(verdict_expected_json(board, &name)),
        facts: crate::meeting::prompts::facts(board),
    };
    let opts = &opts.or_max_tokens(default_max_tokens::AGENT_TURN);
    let calls_before = client.calls();
    let mut asker = ReviewAsk {
        board: &mut *board,
        clock,
        name: &name,
    };
    let outcome = ask(client, opts, request, &mut asker)?.into_turn(|e| {
        let reader = crate::meeting::ask::unusable_for_reader(&crate::text::cut(&e, 160));
        (e, reader)
    });
    if client.calls() > calls_before {
        note_caller(board, &name, client, opts);
    }
    match outcome {
        Ok(v) => {
            events::push(
                board,
                clock,
                events::agent_result(&name, verdict_headline(&v)),
            );
            board.last_turns.push(LastTurn {
                agent_name: name,
                status: TurnStatus::Ok,
                prompt: call.prompt,
                result: None,
                error: None,
                review: Some(v),
                council: None,
            });
        }
        Err((error, plain)) => {
            note_process(
                board,
                ProcessKind::TurnFailed,
                format!("{name}'s review failed: {plain}; the draft went on without it."),
            );
            events::push(board, clock, events::agent_error(&name, &error));
            board
                .last_turns
                .push(LastTurn::failed(name, call.prompt, error));
        }
    }
    Ok(())
}
