//! The ask loop shared by the PM round, the agent turn and agent-builder
//! (docs/design/failure-policy.md#ask-loop): send one request, check the answer with the stage's own rules, and
//! give an invalid answer its one retry with the exact error.
//!
//! Transport retries are not done here: the [`Client`] already retried 429/408/5xx, timeouts
//! and network errors up to `--max-attempts`, with backoff and `Retry-After`
//! (docs/design/failure-policy.md#failure-policy). A failure it hands back is final for this ask, so the same
//! request is never sent again; only a reply that arrived but cannot be used is asked again,
//! and then with the reply echoed and the error quoted, so the retry is a different request.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::llm::{Client, ExpectedJson, LlmError, Message, NoJson, Options, Reply, Request};
use crate::meeting::events::{self, Clock};
use crate::meeting::prompts::echo_reply;
use crate::meeting::whiteboard::note_process;
use crate::model::{Board, ProcessKind};

/// Retries of an invalid answer: one, so an ask is at most two logical calls (three when the
/// retry repeated the refused reply, [`VARIED_TEMPERATURE`]).
const INVALID_RETRIES: u32 = 1;

/// The temperature of one more call when the retry got the refused reply again word for word
/// (docs/design/failure-policy.md#ask-loop): greedy decoding under a grammar answers the same
/// prompt plus a line the same way, so only a change that can change the reply is worth a
/// call. Made where the provider takes a temperature and the caller's was below it.
const VARIED_TEMPERATURE: f64 = 0.7;

/// The options of the call after a retry that repeated its refused reply: the same at
/// [`VARIED_TEMPERATURE`], or `None` when nothing here can change the reply.
fn varied(client: &Client, opts: &Options) -> Option<Options> {
    let below = opts.temperature.is_none_or(|t| t < VARIED_TEMPERATURE);
    (below && client.takes_temperature(opts)).then(|| Options {
        temperature: Some(VARIED_TEMPERATURE),
        ..opts.clone()
    })
}

/// The stage's side of an ask: what a usable answer is, how a correction is worded, and which
/// events an invalid answer leaves.
pub(crate) trait Asker {
    /// A checked, usable answer.
    type Answer;
    /// Why an answer cannot be used.
    type Invalid;

    /// Check one reply. `json` is the reply's tolerant parse, or the reason it has none.
    fn check(
        &mut self,
        json: std::result::Result<&Value, &NoJson>,
    ) -> Result<Self::Answer, Self::Invalid>;

    /// The correction sent after an invalid answer (the model's reply is echoed before it):
    /// the exact error, the allowed values, "reply with the corrected JSON only".
    fn correction(&self, invalid: &Self::Invalid) -> Result<String>;

    /// The board that accounts every logical call (usage, `llm_call` events), with the clock;
    /// `None` for agent-builder, which has no board.
    fn ledger(&mut self) -> Option<(&mut Board, &dyn Clock)> {
        None
    }

    /// After each invalid answer (its logical attempt, 1-based): the stage's events.
    /// `retried` tells whether the answer gets its retry or ends the ask.
    fn rejected(&mut self, _attempt: u32, _invalid: &Self::Invalid, _retried: bool) {}

    /// Before the retry: narrow the schema it is sent with to what the correction asks for
    /// (docs/design/failure-policy.md#ask-loop); unchanged by default.
    fn narrow(&self, _expect: &mut ExpectedJson) {}

    /// Before every call, the retry included: why it must not be made (the token budget,
    /// docs/design/pm-round.md#token-budget), or `None`.
    fn refuse(&self, _request: &Request, _opts: &Options) -> Option<String> {
        None
    }
}

/// How an ask ended, short of a fatal provider error.
#[derive(Debug)]
pub(crate) enum Asked<A, I> {
    Answer(A),
    /// The answer was still invalid after its retry.
    Invalid(I),
    /// The call failed in a way the meeting absorbs: a transport failure that outlasted the
    /// client's attempts, or a context-length error. Carries the client's message.
    Failed(String),
    /// The next call was not made (the reason): the budget has no room for it, or its prompt
    /// cannot fit the model's input window. After an invalid answer this ends the ask instead
    /// of its retry.
    Refused(String),
}

impl<A, I> Asked<A, I> {
    /// A turn's outcome: the answer, or why it failed as `(for the model and the board, for the
    /// report's reader)`; `invalid` words an answer that stayed invalid.
    pub(crate) fn into_turn(
        self,
        invalid: impl FnOnce(I) -> (String, String),
    ) -> Result<A, (String, String)> {
        match self {
            Asked::Answer(a) => Ok(a),
            Asked::Invalid(e) => Err(invalid(e)),
            Asked::Failed(e) => Err((format!("LLM call failed: {e}"), failed_for_reader(&e))),
            Asked::Refused(why) => Err((
                format!("not asked: {why}"),
                format!("not asked: {}", crate::text::cut(&why, 200)),
            )),
        }
    }
}

/// The report's words for an ask whose answer stayed unusable (`why`, for the reader).
pub(crate) fn unusable_for_reader(why: &str) -> String {
    format!("its answer was unusable ({why}), also when asked again")
}

/// The report's words for an ask whose model call failed (the client's message, cut).
pub(crate) fn failed_for_reader(message: &str) -> String {
    format!("the model call failed ({})", crate::text::cut(message, 200))
}

/// Why the call of `request` is not made: the stage's budget, then the model's input window.
fn refuse<S: Asker>(
    client: &Client,
    stage: &S,
    request: &Request,
    opts: &Options,
) -> Option<String> {
    stage
        .refuse(request, opts)
        .or_else(|| client.refuse(request, opts))
}

/// Ask until the answer is valid, within the ask loop's one retry (docs/design/failure-policy.md#ask-loop).
/// A fatal provider error (401/403/404, other non-retryable 4xx, a missing key, a broken
/// cassette) is `Error::Runtime` with the provider's own message (exit 1).
pub(crate) fn ask<S: Asker>(
    client: &mut Client,
    opts: &Options,
    mut request: Request,
    stage: &mut S,
) -> Result<Asked<S::Answer, S::Invalid>> {
    if let Some(why) = refuse(client, stage, &request, opts) {
        return Ok(Asked::Refused(why));
    }
    let mut attempt = 0u32;
    let mut opts = std::borrow::Cow::Borrowed(opts);
    // The first refused reply, to tell a retry that only repeated it.
    let mut refused_reply: Option<String> = None;
    loop {
        attempt += 1;
        let result = client.call(&request, &opts);
        if let Some((board, clock)) = stage.ledger() {
            events::record_llm_call(
                board,
                clock,
                client.calls(),
                &request.caller,
                attempt,
                result.as_ref(),
            );
        }
        let reply: Reply = match result {
            Ok(reply) => reply,
            // Provider errors already name the provider (`openai: HTTP 401: ...`).
            Err(LlmError::Fatal(m)) => return Err(Error::Runtime(m)),
            Err(LlmError::OutOfStep(m)) => return Err(Error::NotResumable(m)),
            Err(e @ LlmError::Transient { .. }) => return Ok(Asked::Failed(e.to_string())),
        };
        // Where a model's words enter the meeting: sanitised once, before the stage reads them,
        // so the board, the prompts, stderr and the report get none of its terminal escapes,
        // controls or invisible marks (docs/design/report.md#sanitising).
        let json = reply.json.map(|r| {
            r.map(|mut v| {
                crate::text::sanitise_json(&mut v);
                v
            })
        });
        let checked = match &json {
            Some(Ok(value)) => stage.check(Ok(value)),
            Some(Err(e)) => stage.check(Err(e)),
            None => stage.check(Err(&NoJson::Missing)),
        };
        let invalid = match checked {
            Ok(answer) => return Ok(Asked::Answer(answer)),
            Err(invalid) => invalid,
        };
        // The retry gave the refused reply again, word for word: once more, changed, where
        // a Process Note can say so (not agent-builder's) and the reply was not cut at
        // max_tokens (a limit no temperature lifts).
        let repeated = attempt == INVALID_RETRIES + 1
            && !reply.truncated
            && refused_reply.as_deref() == Some(reply.text.trim())
            && stage.ledger().is_some();
        if let Some(other) = varied(client, &opts).filter(|_| repeated) {
            let refused = refuse(client, stage, &request, &other);
            stage.rejected(attempt, &invalid, refused.is_none());
            if let Some(why) = refused {
                return Ok(Asked::Refused(why));
            }
            if let Some((board, _)) = stage.ledger() {
                let who = if request.caller == crate::model::PM_CALLER {
                    "The PM".to_string()
                } else {
                    request.caller.clone()
                };
                note_process(
                    board,
                    ProcessKind::Retried,
                    format!(
                        "{who}'s retry repeated its refused reply word for word, so it was asked once more at temperature {VARIED_TEMPERATURE}."
                    ),
                );
            }
            opts = std::borrow::Cow::Owned(other);
            continue;
        }
        if attempt > INVALID_RETRIES {
            stage.rejected(attempt, &invalid, false);
            return Ok(Asked::Invalid(invalid));
        }
        refused_reply = Some(reply.text.trim().to_string());
        let correction = stage.correction(&invalid)?;
        if let Some(expect) = request.expect.as_mut() {
            stage.narrow(expect);
        }
        request
            .messages
            .push(echo_reply(reply.text, reply.truncated));
        request.messages.push(Message::user(correction));
        // The retry is a call like any other: the budget may have no room for it.
        let refused = refuse(client, stage, &request, &opts);
        stage.rejected(attempt, &invalid, refused.is_none());
        if let Some(why) = refused {
            return Ok(Asked::Refused(why));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{AttemptError, Provider, RawReply, RetryPolicy};
    use std::cell::RefCell;
    use std::collections::VecDeque;
    use std::rc::Rc;

    type Log = Rc<RefCell<Vec<Request>>>;

    struct Script(VecDeque<std::result::Result<RawReply, AttemptError>>, Log);

    impl Provider for Script {
        fn name(&self) -> &str {
            "script"
        }
        fn attempt(
            &mut self,
            _seq: u64,
            req: &Request,
            _opts: &Options,
        ) -> std::result::Result<RawReply, AttemptError> {
            self.1.borrow_mut().push(req.clone());
            self.0
                .pop_front()
                .unwrap_or_else(|| Err(AttemptError::Fatal("script exhausted".into())))
        }
    }

    /// Accepts an object with `"ok": true`; remembers what it rejected.
    #[derive(Default)]
    struct WantsOk {
        rejected: Vec<(u32, String, bool)>,
    }

    impl Asker for WantsOk {
        type Answer = Value;
        type Invalid = String;
        fn check(&mut self, json: std::result::Result<&Value, &NoJson>) -> Result<Value, String> {
            let v = json.map_err(NoJson::to_string)?;
            if v["ok"] == true {
                Ok(v.clone())
            } else {
                Err(format!("ok: expected true, got {}", v["ok"]))
            }
        }
        fn correction(&self, invalid: &String) -> Result<String> {
            Ok(format!("fix: {invalid}"))
        }
        fn rejected(&mut self, attempt: u32, invalid: &String, retried: bool) {
            self.rejected.push((attempt, invalid.clone(), retried));
        }
    }

    fn text(t: &str) -> std::result::Result<RawReply, AttemptError> {
        Ok(RawReply {
            text: t.into(),
            usage: None,
            truncated: false,
        })
    }

    fn run(
        replies: Vec<std::result::Result<RawReply, AttemptError>>,
        attempts: u32,
    ) -> (Result<Asked<Value, String>>, Vec<Request>, WantsOk) {
        let log = Log::default();
        let mut client = Client::new(Box::new(Script(replies.into(), log.clone())), 0)
            .with_policy(RetryPolicy::immediate(attempts));
        let request = Request {
            caller: "t".into(),
            system: "s".into(),
            messages: vec![Message::user("q")],
            expect: Some(crate::llm::ExpectedJson {
                name: "x".into(),
                schema: serde_json::json!({"type": "object"}),
            }),
            facts: Default::default(),
        };
        let opts = Options {
            model: "m".into(),
            temperature: None,
            max_tokens: None,
        };
        let mut stage = WantsOk::default();
        let asked = ask(&mut client, &opts, request, &mut stage);
        let seen = log.borrow().clone();
        (asked, seen, stage)
    }

    fn http(status: u16) -> std::result::Result<RawReply, AttemptError> {
        Err(AttemptError::Http {
            status,
            message: "boom".into(),
            retry_after: None,
        })
    }

    #[test]
    fn an_invalid_answer_is_retried_once_with_the_reply_and_the_error() {
        let (asked, seen, stage) = run(vec![text("{\"ok\": 1}"), text("{\"ok\": true}")], 1);
        assert!(matches!(asked, Ok(Asked::Answer(_))));
        assert_eq!(seen.len(), 2);
        let m = &seen[1].messages;
        assert_eq!(m.len(), 3);
        assert_eq!(m[1], Message::assistant("{\"ok\": 1}"));
        assert_eq!(m[2], Message::user("fix: ok: expected true, got 1"));
        assert_eq!(
            stage.rejected,
            [(1, "ok: expected true, got 1".into(), true)]
        );
    }

    #[test]
    fn the_stage_reads_the_answer_sanitised() {
        let (asked, ..) = run(
            vec![text(
                "{\"ok\": true, \"q\": \"a\\u001b]52;c;eA==\\u0007b\\u202ec\"}",
            )],
            1,
        );
        match asked {
            Ok(Asked::Answer(v)) => assert_eq!(v["q"], "abc"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_second_invalid_answer_ends_the_ask() {
        let (asked, seen, stage) = run(vec![text("nope"), text("{}"), text("{\"ok\": true}")], 1);
        assert!(matches!(asked, Ok(Asked::Invalid(ref e)) if e.contains("expected true")));
        assert_eq!(seen.len(), 2);
        assert_eq!(stage.rejected.len(), 2);
        assert!(
            stage.rejected[0].1.contains("no JSON object"),
            "{:?}",
            stage.rejected
        );
        assert!(!stage.rejected[1].2, "the second is not retried");
    }

    #[test]
    fn a_transport_failure_is_never_sent_again() {
        // The client spends its own attempts; the ask loop adds none.
        let (asked, seen, stage) = run(
            vec![http(503), http(503), http(503), text("{\"ok\": true}")],
            3,
        );
        assert!(
            matches!(asked, Ok(Asked::Failed(ref m)) if m.contains("gave up after 3 attempts"))
        );
        assert_eq!(seen.len(), 3);
        assert!(stage.rejected.is_empty());
        let too_long = Err(AttemptError::Http {
            status: 400,
            message: "maximum context length is 8192 tokens".into(),
            retry_after: None,
        });
        let (asked, seen, _) = run(vec![too_long, text("{\"ok\": true}")], 3);
        assert!(matches!(asked, Ok(Asked::Failed(ref m)) if m.contains("context length")));
        assert_eq!(seen.len(), 1);
        let (asked, seen, _) = run(vec![http(400), text("{\"ok\": true}")], 3);
        assert!(matches!(asked, Err(Error::Runtime(_))), "{asked:?}");
        assert_eq!(seen.len(), 1);
    }
}
