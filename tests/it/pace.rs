//! A shared pace for many meetings against one provider (docs/design/llm.md#pace): with
//! `--max-in-flight N` the requests of every meeting that sets it take one of N slots, and a 429
//! seen by one makes all of them wait — proved by what the fake server saw.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::fake_http::{json, openai_ok, with_header, Action, FakeServer, Recorded};
use crate::fixtures::pm;
use crate::harness::{Run, Workdir};

/// A meeting's reply to `req`: the PM asks arch once, arch answers, the PM finishes; usage a
/// fair count of the request.
fn reply(req: &Recorded) -> Action {
    let body = req.body.as_str();
    let v = if body.contains("Mode: forced_finish") {
        pm::done()
    } else if body.contains("pm_decision") {
        pm::call("arch", "What would a rewrite cost?")
    } else {
        pm::answer("A rewrite costs a quarter.", &["One quarter."])
    };
    json(
        200,
        &openai_ok(&v.to_string(), Some((body.len() as u64 / 4, 20))),
    )
}

/// `meetings` meetings at once against `server`, each in its own folder, sharing the pace
/// folder `pace` with `extra` flags.
fn meetings_at_once(
    server: &FakeServer,
    pace: &Workdir,
    meetings: usize,
    extra: &[&str],
) -> Vec<Run> {
    let url = format!("{}/v1", server.url);
    let handles: Vec<_> = (0..meetings)
        .map(|i| {
            let (url, pace) = (url.clone(), pace.path().to_path_buf());
            let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
            std::thread::spawn(move || {
                let work = Workdir::new();
                work.cli("meeting")
                    .env("OPENAI_BASE_URL", url)
                    .env("OPENAI_API_KEY", "test-key")
                    .env("AGENT_MEETING_PACE_DIR", pace)
                    .args(["--topic", &format!("Adopt change {i}?"), "--agents", "arch"])
                    .args(["--provider", "openai", "--model", "gpt-4o-mini"])
                    .args(["--max-loops", "1", "--quiet"])
                    .args(&extra)
                    .run()
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// Three meetings at once, their requests slow at the server (each held on its own reply
/// thread, so it counts as in flight all the while): with `--max-in-flight 1` the server never
/// has two in flight. Without the slots the meetings' requests overlap and this fails.
#[test]
fn meetings_that_share_a_pace_keep_to_its_requests_in_flight() {
    let pace = Workdir::new();
    let server = FakeServer::answering(|req| reply(req).slow(Duration::from_millis(300)));
    for run in meetings_at_once(&server, &pace, 3, &["--max-in-flight", "1"]) {
        run.success();
    }
    assert_eq!(server.count(), 9, "three calls a meeting");
    assert_eq!(server.max_in_flight(), 1);
}

/// A rate limit one meeting meets makes every meeting of the pace wait: the server, which
/// refuses whatever comes within a second of a 429 (as a rate limiter would), sees only the
/// first refusal. One request in flight, so that none was already on its way when the 429
/// came (no client can call that one back).
#[test]
fn a_rate_limit_one_meeting_meets_makes_all_of_them_wait() {
    let pace = Workdir::new();
    let refused_at: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let refusals = Arc::new(AtomicUsize::new(0));
    let (at, count) = (refused_at.clone(), refusals.clone());
    let seen = AtomicUsize::new(0);
    let server = FakeServer::answering(move |req| {
        let mut at = at.lock().unwrap();
        let cooling = at.is_some_and(|t| t.elapsed() < Duration::from_secs(1));
        // The fourth request of the batch is refused, then whatever comes too soon after.
        if cooling || seen.fetch_add(1, Ordering::SeqCst) == 3 {
            *at = Some(Instant::now());
            count.fetch_add(1, Ordering::SeqCst);
            let error =
                r#"{"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}"#;
            return with_header(429, "retry-after", "1", error);
        }
        std::thread::sleep(Duration::from_millis(30));
        reply(req)
    });
    for run in meetings_at_once(&server, &pace, 3, &["--max-in-flight", "1"]) {
        run.success();
    }
    assert_eq!(
        refusals.load(Ordering::SeqCst),
        1,
        "a second 429: a meeting did not wait"
    );
    assert_eq!(server.count(), 10, "nine calls and one retry");
}
