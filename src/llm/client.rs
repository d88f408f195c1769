//! The [`Client`] the callers use (docs/design/llm.md#llm-layer, docs/design/failure-policy.md#failure-policy): its retry
//! policy and waits, call numbers (a fan-out's too), one exchange-log line per attempt, and a
//! usage estimate when the server sends none.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::model::Tokens;
use serde_json::{json, Value};

use super::{
    parse, replay, transport, AttemptError, LlmError, Message, NoJson, Options, Provider, RawReply,
    Reply, Request, TokenUsage,
};

/// Why a local server's read timeout is not retried, and what helps (docs/design/failure-policy.md#local-servers).
const LOCAL_BUSY: &str = "the local server is still generating the abandoned answer, and a server \
that handles one request at a time would make any new request wait behind it, so none is sent: \
raise --read-timeout (or lower --max-tokens) and continue with meeting resume";

/// How the [`Client`] retries failed attempts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts per logical call, the first included (at least 1).
    pub max_attempts: u32,
    /// Backoff before the 2nd attempt; doubles each time, plus up to 50% jitter.
    pub base_delay: Duration,
    /// Cap on any single wait (`--retry-max-secs`). A server's `Retry-After` above it fails the
    /// call at once instead: retrying earlier than the server asked only fails again
    /// (docs/design/failure-policy.md#failure-policy).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// No waiting at all: replay, where faults are simulated.
    pub fn immediate(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts,
            base_delay: Duration::ZERO,
            max_delay: Duration::ZERO,
        }
    }

    /// The wait after failed attempt number `attempt` (1-based), or `Err` with the server's
    /// `Retry-After` when it asks for more than the cap. A policy that never waits (replay,
    /// where faults are simulated) waits for nothing.
    pub(crate) fn delay(
        &self,
        attempt: u32,
        retry_after: Option<Duration>,
    ) -> Result<Duration, Duration> {
        if let Some(ra) = retry_after {
            return match ra.min(self.max_delay) {
                Duration::ZERO => Ok(Duration::ZERO),
                _ if ra > self.max_delay => Err(ra),
                _ => Ok(ra),
            };
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << (attempt.saturating_sub(1)).min(16));
        let jitter = exp.mul_f64(fastrand::f64() * 0.5);
        Ok((exp + jitter).min(self.max_delay))
    }
}

/// A wait for a message: `45 s`, `0.5 s`.
fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{} s", (s * 1000.0).round() / 1000.0)
    }
}

/// The interface the stages use: retries, tolerant parsing, usage and the call counter.
pub struct Client {
    provider: Box<dyn Provider>,
    calls: u64,
    policy: RetryPolicy,
    log: Option<PathBuf>,
    /// One call of a fan-out (docs/design/agent-turn.md#fan-out): `(base, index, of)`; `calls` then counts this
    /// client's attempts and attempt k (1-based) has call number `base + (k-1)*of + index + 1`.
    fan_out: Option<(u64, u64, u64)>,
    /// Every wait between two attempts, in order (see [`Client::waits`]).
    waits: Vec<Duration>,
    /// The shared pace of this provider's requests, under `--max-in-flight`
    /// (docs/design/llm.md#pace).
    pace: Option<super::pace::Pace>,
}

impl Client {
    /// `calls` is the board's `usage.calls` before this stage's first call. A bare client
    /// makes ONE attempt per call (what scripted test fakes expect); [`client_for`](super::client_for) sets the
    /// retry policy from the flags (`--max-attempts`, backoff; no waiting in replay).
    pub fn new(provider: Box<dyn Provider>, calls: u64) -> Client {
        Client {
            provider,
            calls,
            policy: RetryPolicy::immediate(1),
            log: None,
            fan_out: None,
            waits: Vec::new(),
            pace: None,
        }
    }

    /// Take a slot of `pace` for every attempt (docs/design/llm.md#pace).
    pub fn with_pace(mut self, pace: Option<super::pace::Pace>) -> Client {
        self.pace = pace;
        self
    }

    /// This client for a later stage: its next call is number `calls + 1` (the board's
    /// `usage.calls` then), its waits counted afresh.
    pub fn after_call(mut self, calls: u64) -> Client {
        self.calls = calls;
        self.fan_out = None;
        self.waits.clear();
        self
    }

    /// Number this client's attempts as call `index` (0-based) of a fan-out of `of` calls that
    /// starts after call number `base` (docs/design/agent-turn.md#fan-out): every call's numbers are fixed
    /// before any is sent, whatever order the answers arrive in — without retries the calls
    /// take `base+1 ..= base+of` in call order, the numbers a sequential meeting would give
    /// them. [`Client::calls`] then counts this client's attempts (from 0) and
    /// [`Client::last_seq`] is the highest number it used.
    pub fn in_fan_out(mut self, base: u64, index: u64, of: u64) -> Client {
        self.fan_out = Some((base, index, of.max(1)));
        self.calls = 0;
        self
    }

    /// The call number of attempt `k` (1-based counter value).
    fn seq_of(&self, k: u64) -> u64 {
        match self.fan_out {
            None => k,
            Some((base, index, of)) => base + (k - 1) * of + index + 1,
        }
    }

    /// The highest call number this client used (the counter itself outside a fan-out; the
    /// fan-out's base when a fan-out client made no attempt).
    pub fn last_seq(&self) -> u64 {
        match self.fan_out {
            Some((base, _, _)) if self.calls == 0 => base,
            _ => self.seq_of(self.calls),
        }
    }

    pub fn with_policy(mut self, policy: RetryPolicy) -> Client {
        self.policy = RetryPolicy {
            max_attempts: policy.max_attempts.max(1),
            ..policy
        };
        self
    }

    /// Append every attempt (full prompt, raw response or error, usage) to this JSONL file.
    pub fn with_log(mut self, path: Option<PathBuf>) -> Client {
        self.log = path;
        self
    }

    pub fn policy(&self) -> RetryPolicy {
        self.policy
    }

    /// The global call counter after the calls made so far (write it back to the board).
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// The waits this client made between attempts so far, in order: backoff, or a server's
    /// `Retry-After` capped by the policy; none after the last attempt. Recorded so that a
    /// test can read the retry policy's decisions instead of timing them.
    pub fn waits(&self) -> &[Duration] {
        &self.waits
    }

    /// See [`Provider::schema_in_prompt`].
    pub fn schema_in_prompt(&self) -> bool {
        self.provider.schema_in_prompt()
    }

    /// Whether a call may change its temperature: the caller set one (the provider has taken
    /// it), or the server is on this machine (llama.cpp, Ollama and the like all take one). A
    /// hosted reasoning model may refuse the parameter outright, so it is not sent unasked.
    pub fn takes_temperature(&self, opts: &Options) -> bool {
        opts.temperature.is_some() || self.provider.is_local()
    }

    pub fn provider_name(&self) -> &str {
        self.provider.name()
    }

    /// See [`Provider::replayed`] and [`Provider::note`].
    pub fn replayed(&self) -> bool {
        self.provider.replayed()
    }
    pub fn note(&self) -> Option<String> {
        self.provider.note()
    }

    /// One logical call: attempts with retries on 429/5xx/timeouts/network errors, then
    /// tolerant parsing when `req.expect` is set. Every attempt takes the next call number.
    pub fn call(&mut self, req: &Request, opts: &Options) -> Result<Reply, LlmError> {
        let start = Instant::now();
        let name = self.provider.name().to_string();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            self.calls += 1;
            let seq = self.seq_of(self.calls);
            let slot = match &self.pace {
                Some(pace) => Some(pace.acquire().map_err(LlmError::Fatal)?),
                None => None,
            };
            let t0 = Instant::now();
            let result = self.provider.attempt(seq, req, opts);
            let attempt_ms = t0.elapsed().as_millis() as u64;
            if let (
                Some(pace),
                Err(AttemptError::Http {
                    status,
                    retry_after,
                    ..
                }),
            ) = (&self.pace, &result)
            {
                // Every request of the batch waits, not only this one's retry: the slot is
                // let go only after the cooldown is written.
                if *status == 429 || *status == 503 {
                    let wait = self.policy.delay(attempt, *retry_after);
                    pace.cool_down(wait.unwrap_or_else(|asked| asked));
                }
            }
            drop(slot);
            self.log_attempt(seq, attempt, req, opts, &result, attempt_ms);
            let elapsed = || start.elapsed().as_millis() as u64;
            let last_attempt = self.policy.max_attempts;
            let (message, retry_after) = match result {
                Ok(raw) => {
                    let counted = raw.usage.as_ref().map(|u| u.tokens.prompt_tokens);
                    let cut = counted.filter(|_| self.provider.counts_prompts());
                    if let Some(why) = cut.and_then(|n| prompt_cut(req, n)) {
                        return Err(LlmError::Fatal(format!("{name}: {why}")));
                    }
                    return reply(&name, raw, req, opts, attempt, elapsed());
                }
                Err(AttemptError::Fatal(m) | AttemptError::NoOneThere(m)) => {
                    return Err(LlmError::Fatal(format!("{name}: {m}")))
                }
                Err(AttemptError::OutOfStep(m)) => {
                    return Err(LlmError::OutOfStep(format!("{name}: {m}")))
                }
                Err(AttemptError::Http {
                    status,
                    message,
                    retry_after,
                }) => {
                    let text = format!("{name}: HTTP {status}: {message}");
                    if status == 408 || status == 429 || status >= 500 {
                        (text, retry_after)
                    } else if transport::is_context_length(status, &message) {
                        return Err(LlmError::Transient {
                            message: text,
                            attempts: attempt,
                            duration_ms: elapsed(),
                        });
                    } else {
                        return Err(LlmError::Fatal(text));
                    }
                }
                Err(AttemptError::Timeout(m)) => {
                    if self.provider.is_local() {
                        return Err(LlmError::Fatal(format!(
                            "{name}: timeout: {m}; {LOCAL_BUSY}"
                        )));
                    }
                    (format!("{name}: timeout: {m}"), None)
                }
                Err(AttemptError::Network(m)) => (format!("{name}: network error: {m}"), None),
                Err(AttemptError::Unreachable(m)) => {
                    if attempt >= self.policy.max_attempts {
                        return Err(LlmError::Fatal(format!(
                            "{name}: provider unreachable: {m} (gave up after {attempt} attempts; check OPENAI_BASE_URL / ANTHROPIC_BASE_URL / OLLAMA_HOST and the network)"
                        )));
                    }
                    (format!("{name}: unreachable: {m}"), None)
                }
            };
            if attempt >= last_attempt {
                let ms = elapsed();
                // The provider's own wait helps the user choose when to try again.
                let asked = retry_after
                    .map(|ra| format!("the provider asked to wait {}; ", secs(ra)))
                    .unwrap_or_default();
                return Err(LlmError::Transient {
                    message: format!(
                        "{message} ({asked}gave up after {attempt} attempts, {ms} ms)"
                    ),
                    attempts: attempt,
                    duration_ms: ms,
                });
            }
            let wait = match self.policy.delay(attempt, retry_after) {
                Ok(wait) => wait,
                Err(asked) => {
                    let ms = elapsed();
                    return Err(LlmError::Transient {
                        message: format!(
                            "{message} (the provider asks to wait {} before a retry, longer than the {} this client waits at most: --retry-max-secs / MEETING_RETRY_MAX_SECS; gave up after {attempt} attempts, {ms} ms)",
                            secs(asked),
                            secs(self.policy.max_delay)
                        ),
                        attempts: attempt,
                        duration_ms: ms,
                    });
                }
            };
            self.waits.push(wait);
            if !wait.is_zero() {
                std::thread::sleep(wait);
            }
        }
    }

    fn log_attempt(
        &self,
        seq: u64,
        attempt: u32,
        req: &Request,
        opts: &Options,
        result: &Result<RawReply, AttemptError>,
        duration_ms: u64,
    ) {
        let Some(path) = &self.log else { return };
        // Neither reused nor unasked attempts are exchanges to keep.
        if self.provider.last_was_reused() || matches!(result, Err(AttemptError::NoOneThere(_))) {
            return;
        }
        let line = exchange_line(
            self.provider.as_ref(),
            seq,
            attempt,
            req,
            opts,
            result,
            duration_ms,
        );
        // A model's answer is what a crash must not lose: it is paid for, and every board is
        // derived from it (docs/design/run-folder.md#resume). A replayed one is in its cassette already, and a
        // failed attempt is asked again anyway.
        let paid = result.is_ok() && !self.provider.replayed();
        if let Err(e) = replay::append_line(path, &line.to_string(), paid) {
            crate::stage_warning!(
                "llm: warning: cannot write the exchange log {}: {}",
                path.display(),
                crate::io::os_error(&e)
            );
        }
    }
}

/// One line of the exchange log: everything needed to see what the model was asked and said.
/// Requests never carry credentials, so neither does this.
fn exchange_line(
    provider: &dyn Provider,
    seq: u64,
    attempt: u32,
    req: &Request,
    opts: &Options,
    result: &Result<RawReply, AttemptError>,
    duration_ms: u64,
) -> Value {
    let ts_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let messages: Vec<Value> = req.messages.iter().map(Message::to_json).collect();
    let (response, usage, error, truncated) = match result {
        Ok(raw) => (
            Some(raw.text.clone()),
            raw.usage.map(TokenUsage::to_json),
            None,
            raw.truncated,
        ),
        Err(e) => (None, None, Some(attempt_error_text(e)), false),
    };
    json!({
        "ts_ms": ts_ms,
        "seq": seq,
        "attempt": attempt,
        "caller": req.caller,
        "provider": provider.name(),
        "model": opts.model,
        "temperature": opts.temperature,
        "max_tokens": opts.max_tokens,
        // As sent: with the schema in words when the provider describes it in the prompt.
        "system": provider.system_text(req),
        "messages": messages,
        "schema": req.expect.as_ref().map(|e| json!({"name": e.name, "schema": e.schema})),
        "response": response,
        "truncated": truncated,
        "error": error,
        "usage": usage,
        "duration_ms": duration_ms,
    })
}

fn attempt_error_text(e: &AttemptError) -> String {
    match e {
        AttemptError::Http {
            status, message, ..
        } => format!("HTTP {status}: {message}"),
        AttemptError::Timeout(m) => format!("timeout: {m}"),
        AttemptError::Network(m) => format!("network error: {m}"),
        AttemptError::Unreachable(m) => format!("unreachable: {m}"),
        AttemptError::Fatal(m) | AttemptError::OutOfStep(m) | AttemptError::NoOneThere(m) => {
            m.clone()
        }
    }
}

/// The characters of a request's system message and messages: what any server counts as
/// the prompt, whatever else (a schema) it adds.
fn message_chars(req: &Request) -> usize {
    req.system.chars().count()
        + req
            .messages
            .iter()
            .map(|m| m.content.chars().count())
            .sum::<usize>()
}

/// Characters a token covers at most, on average over a whole prompt, in the common
/// tokenizers: English prose averages about 4 in the GPT, Llama, Qwen and Mistral tokenizers,
/// Markdown and code fewer, other scripts about 1; 6 is half again the prose average
/// (docs/design/llm.md#truncation).
pub const MAX_CHARS_PER_TOKEN: usize = 6;

/// The smallest context a server cuts prompts to (Ollama's smallest default, 2,048 tokens): a
/// prompt shorter than that at [`MAX_CHARS_PER_TOKEN`] cannot have been cut.
const SMALLEST_CONTEXT: usize = 2048;

/// Why a live server's answer cannot be used because it read only part of the prompt
/// (Ollama's OpenAI-compatible `/v1` cuts every prompt to its default context, silently): it
/// counted `counted` prompt tokens, far fewer than were sent (docs/design/llm.md#truncation).
/// Asked of the providers whose counts are a live server's ([`Provider::counts_prompts`]).
/// A count of exactly a context window's usual size (a power of two from 2,048: the defaults of
/// Ollama and llama.cpp) is a cut too when the prompt is long enough to be longer — at 3
/// characters a token — since a prompt that fit would land there only by chance: the one-per-6
/// rule alone let a 20,491-character prompt counted at 4,096 tokens (about 20% dropped) through.
pub(crate) fn prompt_cut(req: &Request, counted: u64) -> Option<String> {
    let chars = message_chars(req);
    let fewest = chars / MAX_CHARS_PER_TOKEN;
    let at_a_window = counted >= SMALLEST_CONTEXT as u64
        && counted.is_power_of_two()
        && chars as u64 > counted * 3;
    let far_below = fewest >= SMALLEST_CONTEXT && (counted as usize) < fewest;
    if counted == 0 || !(far_below || at_a_window) {
        return None;
    }
    let why = match far_below {
        true => format!("at least {fewest} tokens"),
        false => "exactly a context window's usual size".to_string(),
    };
    Some(format!(
        "the server counted {counted} prompt tokens of a prompt of {chars} characters ({why}): it cut the prompt to its context window and answered without the rest, so the answer is not used; give the server a larger context (Ollama's OpenAI-compatible /v1 keeps the server's default whatever the prompt: use --provider ollama, whose requests size the context to each prompt, or start `ollama serve` with OLLAMA_CONTEXT_LENGTH=32768; llama.cpp: --ctx-size; vLLM: --max-model-len) or send less (--max-context-chars, fewer documents)"
    ))
}

impl Client {
    /// Why `req` is not sent at all: its prompt cannot fit the model's input window, as the
    /// price table gives it (`max_input_tokens`), even counted at the fewest tokens it can be
    /// (docs/design/llm.md#truncation). A replayed or offline provider has no window.
    pub fn refuse(&self, req: &Request, opts: &Options) -> Option<String> {
        self.refuse_with(req, opts, super::prices::Prices::current())
    }

    fn refuse_with(
        &self,
        req: &Request,
        opts: &Options,
        prices: &super::prices::Prices,
    ) -> Option<String> {
        if self.provider.replayed() {
            return None;
        }
        let price = prices.of(self.provider.name(), &opts.model)?;
        let window = price.max_input_tokens?;
        let chars = message_chars(req);
        let fewest = (chars / MAX_CHARS_PER_TOKEN) as u64;
        (fewest > window).then(|| {
            format!(
                "the prompt ({chars} characters, at least {fewest} tokens) does not fit {}'s input window of {window} tokens (the price table's max_input_tokens): send less (--max-context-chars, fewer documents) or use a model with a larger window",
                opts.model
            )
        })
    }
}

/// About four characters per token: good enough for budgets when the server sends no usage.
pub(crate) fn estimate_usage(req: &Request, reply: &str) -> TokenUsage {
    let mut prompt_chars = message_chars(req);
    if let Some(e) = &req.expect {
        prompt_chars += e.schema.to_string().chars().count();
    }
    let est = |n: usize| n.div_ceil(4) as u64;
    TokenUsage {
        tokens: Tokens {
            prompt_tokens: est(prompt_chars),
            completion_tokens: est(reply.chars().count()),
            ..Tokens::default()
        },
        estimated: true,
        billed_usd: None,
    }
}

/// A provider's answer as the caller gets it: usage (estimated when the provider gave none),
/// the JSON parsed tolerantly when one is expected, a cut-off reply told apart from an invalid
/// one; an empty free-text reply is a transient failure.
fn reply(
    name: &str,
    raw: RawReply,
    req: &Request,
    opts: &Options,
    attempts: u32,
    duration_ms: u64,
) -> Result<Reply, LlmError> {
    if req.expect.is_none() && raw.text.trim().is_empty() {
        return Err(LlmError::Transient {
            message: format!("{name}: the model returned an empty reply"),
            attempts,
            duration_ms,
        });
    }
    let usage = raw.usage.unwrap_or_else(|| estimate_usage(req, &raw.text));
    // A reply the server stopped short of the max_tokens sent (as it reported the counts):
    // its context window was full, not the limit reached. A reply with no prompt counted (a
    // person's, cut at the limit's characters) is cut off, not out of room.
    let window_full = match (raw.truncated, opts.max_tokens, usage.estimated) {
        (true, Some(limit), false)
            if usage.tokens.completion_tokens < u64::from(limit) * 9 / 10
                && usage.tokens.prompt_tokens > 0 =>
        {
            Some(NoJson::WindowFull {
                reply: usage.tokens.completion_tokens,
                prompt: usage.tokens.prompt_tokens,
                limit,
            })
        }
        _ => None,
    };
    let json = req.expect.as_ref().map(|_| {
        parse::parse_json_reply(&raw.text).map_err(|e| match (&window_full, raw.truncated) {
            (Some(full), _) => full.clone(),
            (None, true) => NoJson::CutOff(opts.max_tokens),
            (None, false) => NoJson::Invalid(e),
        })
    });
    Ok(Reply {
        text: raw.text,
        json,
        usage,
        duration_ms,
        attempts,
        truncated: raw.truncated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A prompt is cut when the server counted fewer tokens than one per 6 characters sent,
    /// and only a prompt longer than the smallest context (2,048 tokens at that rate) can be.
    #[test]
    fn a_prompt_counted_far_below_its_size_was_cut() {
        let req = |chars: usize| Request {
            caller: "pm".into(),
            system: String::new(),
            messages: vec![super::super::Message::user("x".repeat(chars))],
            expect: None,
            facts: Default::default(),
        };
        assert_eq!(prompt_cut(&req(30_000), 5_000), None, "a fair count");
        assert_eq!(prompt_cut(&req(30_000), 0), None, "no count");
        assert_eq!(prompt_cut(&req(12_000), 100), None, "too short to be cut");
        let cut = prompt_cut(&req(30_000), 4_096).expect("cut");
        assert!(
            cut.contains(
                "4096 prompt tokens of a prompt of 30000 characters (at least 5000 tokens)"
            ),
            "{cut}"
        );
        assert!(cut.contains("OLLAMA_CONTEXT_LENGTH"), "{cut}");
        // The band the one-per-6 rule misses: 20,491 characters counted at exactly 4,096
        // tokens (5 characters a token, ~20% dropped) is a cut; a count beside it is not.
        let band = prompt_cut(&req(20_491), 4_096).expect("cut at a window's size");
        assert!(
            band.contains("4096 prompt tokens of a prompt of 20491 characters (exactly a context window's usual size)"),
            "{band}"
        );
        assert_eq!(prompt_cut(&req(20_491), 4_095), None);
        assert_eq!(prompt_cut(&req(20_491), 5_100), None);
        // A prompt short enough to fit a window is not cut at it.
        assert_eq!(prompt_cut(&req(10_000), 4_096), None);
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let p = RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
        };
        let d1 = p.delay(1, None).unwrap();
        assert!(
            d1 >= Duration::from_millis(100) && d1 <= Duration::from_millis(150),
            "{d1:?}"
        );
        let d2 = p.delay(2, None).unwrap();
        assert!(
            d2 >= Duration::from_millis(200) && d2 <= Duration::from_millis(300),
            "{d2:?}"
        );
        assert_eq!(p.delay(4, None), Ok(Duration::from_millis(350)));
        let minute = Duration::from_secs(60);
        assert_eq!(p.delay(1, Some(minute)), Err(minute), "above the cap");
        let within = Duration::from_millis(350);
        assert_eq!(p.delay(1, Some(within)), Ok(within));
        assert_eq!(p.delay(1, Some(Duration::ZERO)), Ok(Duration::ZERO));
        let replay = RetryPolicy::immediate(3);
        assert_eq!(replay.delay(1, Some(minute)), Ok(Duration::ZERO));
    }

    /// Records the call number of every attempt; fails all but every third with a 503.
    struct Seqs(std::rc::Rc<std::cell::RefCell<Vec<u64>>>);

    impl Provider for Seqs {
        fn name(&self) -> &str {
            "seqs"
        }
        fn attempt(
            &mut self,
            seq: u64,
            _: &Request,
            _: &Options,
        ) -> Result<RawReply, AttemptError> {
            self.0.borrow_mut().push(seq);
            Err(AttemptError::Http {
                status: 503,
                message: "busy".into(),
                retry_after: None,
            })
        }
    }

    /// A fan-out client's attempts take `base + k*of + index + 1` (docs/design/agent-turn.md#fan-out), transport
    /// retries included; `calls()` counts its own attempts and `last_seq()` the highest number.
    #[test]
    fn fan_out_call_numbers_are_fixed_in_advance() {
        let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let mut c = Client::new(Box::new(Seqs(seen.clone())), 99)
            .with_policy(RetryPolicy::immediate(3))
            .in_fan_out(10, 1, 3);
        assert_eq!((c.calls(), c.last_seq()), (0, 10), "nothing used yet");
        let req = Request {
            caller: "a".into(),
            system: String::new(),
            messages: vec![],
            expect: None,
            facts: Default::default(),
        };
        let opts = Options {
            model: "m".into(),
            temperature: None,
            max_tokens: None,
        };
        assert!(c.call(&req, &opts).is_err());
        assert_eq!(*seen.borrow(), [12, 15, 18]);
        assert_eq!((c.calls(), c.last_seq()), (3, 18));
        let mut plain = Client::new(Box::new(Seqs(seen.clone())), 4);
        assert!(plain.call(&req, &opts).is_err());
        assert_eq!((plain.calls(), plain.last_seq()), (5, 5));
    }

    /// Fails every attempt with the same error, counting the attempts.
    struct Always(AttemptError, std::rc::Rc<std::cell::Cell<u32>>);

    impl Provider for Always {
        fn name(&self) -> &str {
            "always"
        }
        fn attempt(&mut self, _: u64, _: &Request, _: &Options) -> Result<RawReply, AttemptError> {
            self.1.set(self.1.get() + 1);
            Err(self.0.clone())
        }
    }

    /// A 429 on the last attempt gives up at once: waiting out its Retry-After would only
    /// delay the failure (docs/design/failure-policy.md#failure-policy). Earlier waits honour a
    /// Retry-After within the cap; one above it fails the call at once, saying how long.
    #[test]
    fn retry_after_within_the_cap_is_waited_above_it_fails_at_once() {
        let rate_limited = |secs| AttemptError::Http {
            status: 429,
            message: "slow down".into(),
            retry_after: Some(Duration::from_secs(secs)),
        };
        let req = Request {
            caller: "pm".into(),
            system: String::new(),
            messages: vec![Message::user("q")],
            expect: None,
            facts: Default::default(),
        };
        let opts = Options {
            model: "m".into(),
            temperature: None,
            max_tokens: None,
        };
        // (attempts, Retry-After in seconds, the policy's cap, the waits made, attempts made)
        let cases = [
            (1, 2, Duration::from_secs(30), vec![], 1),
            (2, 60, Duration::from_millis(50), vec![], 1),
            (3, 60, Duration::from_millis(5), vec![], 1),
            (3, 0, Duration::from_millis(5), vec![Duration::ZERO; 2], 3),
        ];
        for (max_attempts, retry_after, max_delay, waits, made) in cases {
            let n = std::rc::Rc::new(std::cell::Cell::new(0));
            let provider = Always(rate_limited(retry_after), n.clone());
            let mut client = Client::new(Box::new(provider), 0).with_policy(RetryPolicy {
                max_attempts,
                base_delay: Duration::from_millis(1),
                max_delay,
            });
            let e = client.call(&req, &opts).unwrap_err();
            assert!(
                matches!(&e, LlmError::Transient { attempts, .. } if *attempts == made),
                "{e:?}"
            );
            assert_eq!(n.get(), made);
            assert_eq!(client.waits(), waits, "{max_attempts} attempts");
            let LlmError::Transient { message, .. } = e else {
                unreachable!()
            };
            let said = if made < max_attempts {
                "the provider asks to wait 60 s before a retry".to_string()
            } else {
                format!(
                    "(the provider asked to wait {retry_after} s; gave up after {made} attempts"
                )
            };
            assert!(message.contains(&said), "{message}");
        }
    }

    #[test]
    fn estimate_is_chars_over_four() {
        let req = Request {
            caller: "pm".into(),
            system: "abcd".into(),
            messages: vec![Message::user("efgh1")],
            expect: None,
            facts: Default::default(),
        };
        let u = estimate_usage(&req, "123456789");
        assert_eq!(
            (
                u.tokens.prompt_tokens,
                u.tokens.completion_tokens,
                u.estimated
            ),
            (3, 3, true)
        );
    }
}
