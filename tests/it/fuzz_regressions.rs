//! Fuzzing on the stable toolchain, and the inputs fuzzing found.
//!
//! `regressions` (always runs) feeds every file kept under `tests/fuzz_regressions/<target>/` to
//! its target: none may panic. `fuzz_stable` (ignored; `make fuzz` runs it when cargo-fuzz or
//! nightly is missing) mutates the seeds of `fuzz/seeds/<target>/` with a small xorshift
//! mutator for `FUZZ_SECONDS` per target and saves any panicking input under
//! `target/fuzz-crashes/`. The targets are the same three functions as `fuzz/fuzz_targets/`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_meeting::io::{self, Format};
use agent_meeting::model::{Board, MeetingInput, BOARD_VERSION};
use agent_meeting::stage::{
    agent_turn as turn, merge_board as board, pm_step as pm, render_report as report,
};

use crate::harness::root;

const TARGETS: [&str; 3] = ["json_reply", "board", "meeting_file"];

fn json_reply(text: &str) {
    let _ = agent_meeting::llm::parse::parse_json_reply(text);
}

/// The board reader and what the stages do next with a board it accepted.
fn board_reader(text: &str) {
    let Ok(b) = io::parse_versioned::<Board>("<fuzz>", text, "board_version", BOARD_VERSION) else {
        return;
    };
    let _ = pm::pm_input(&b);
    let _ = turn::meeting_summary(&b);
    for call in &b.pending_calls {
        let _ = turn::render_agent_user(&b, call);
    }
    let _ = report::render(&b, None);
    let _ = board::merge(b, "2026-01-01T00:00:00Z");
}

fn meeting_file(text: &str) {
    if let Ok(input) = io::parse_doc::<MeetingInput>("<fuzz>", text, Format::Yaml) {
        let _ = input.validate();
    }
}

fn run(target: &str, data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match target {
        "json_reply" => json_reply(&text),
        "board" => board_reader(&text),
        "meeting_file" => meeting_file(&text),
        other => panic!("unknown fuzz target {other}"),
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn regressions() {
    let mut seen = 0;
    for target in TARGETS {
        for f in files(&root().join("tests/fuzz_regressions").join(target)) {
            let data = std::fs::read(&f).unwrap();
            let ok = catch_unwind(AssertUnwindSafe(|| run(target, &data)));
            assert!(ok.is_ok(), "{} panics in {target}", f.display());
            seen += 1;
        }
    }
    assert!(seen > 0, "no regression inputs found");
}

/// The seeds themselves must go through without a panic (and keep the fuzzers meaningful).
#[test]
fn seeds_do_not_panic() {
    for target in TARGETS {
        let seeds = files(&root().join("fuzz/seeds").join(target));
        assert!(!seeds.is_empty(), "no seeds for {target}");
        for f in seeds {
            run(target, &std::fs::read(&f).unwrap());
        }
    }
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Tokens that matter to JSON, YAML, fences and UTF-8 handling.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    "\\",
    ",",
    ":",
    "```",
    "```json\n",
    "\n",
    "- ",
    "&a ",
    "*a",
    "!!str ",
    "null",
    "true",
    "0",
    "-1",
    "1e999",
    "18446744073709551616",
    "\u{FFFD}",
    "é",
    "日本",
    "\u{1F600}",
    "?",
    "\"loop_count\": 4294967296",
    "\"status\": \"finishing\"",
    "---\n",
    "#",
    "'",
    "|\n  ",
    "\t",
    "\r\n",
    "\u{0}",
];

fn mutate(rng: &mut XorShift, input: &[u8], seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(8) {
        let len = v.len();
        match rng.below(8) {
            0 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                v[i] = rng.next() as u8;
            }
            2 if len > 0 => {
                let a = rng.below(len);
                let b = (a + 1 + rng.below(64)).min(len);
                v.drain(a..b);
            }
            3 if len > 0 => {
                let a = rng.below(len);
                let b = (a + 1 + rng.below(64)).min(len);
                let chunk = v[a..b].to_vec();
                let at = rng.below(len + 1);
                v.splice(at..at, chunk);
            }
            4 | 5 => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                let at = rng.below(len + 1);
                v.splice(at..at, t.iter().copied());
            }
            6 if !seeds.is_empty() => {
                let other = &seeds[rng.below(seeds.len())];
                if !other.is_empty() {
                    let a = rng.below(other.len());
                    let b = (a + 1 + rng.below(256)).min(other.len());
                    let at = rng.below(len + 1);
                    v.splice(at..at, other[a..b].iter().copied());
                }
            }
            _ if len > 0 => v.truncate(rng.below(len)),
            _ => v.push(rng.next() as u8),
        }
    }
    v.truncate(1 << 20);
    v
}

/// `make fuzz` on stable: FUZZ_SECONDS (default 30) per target, FUZZ_TARGET to pick one.
#[test]
#[ignore = "runs for FUZZ_SECONDS per target; `make fuzz`"]
fn fuzz_stable() {
    let secs: u64 = std::env::var("FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let only = std::env::var("FUZZ_TARGET").ok();
    let crash_dir = root().join("target/fuzz-crashes");
    let mut crashes = Vec::new();
    // Panics are expected to be caught and saved; keep the output to one line per crash.
    std::panic::set_hook(Box::new(|_| {}));
    for target in TARGETS {
        if only.as_deref().is_some_and(|o| o != target) {
            continue;
        }
        let seeds: Vec<Vec<u8>> = files(&root().join("fuzz/seeds").join(target))
            .iter()
            .map(|f| std::fs::read(f).unwrap())
            .collect();
        let mut corpus = seeds.clone();
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ secs ^ target.len() as u64);
        let end = Instant::now() + Duration::from_secs(secs);
        let mut execs = 0u64;
        while Instant::now() < end {
            let base = corpus[rng.below(corpus.len())].clone();
            let input = mutate(&mut rng, &base, &seeds);
            execs += 1;
            if catch_unwind(AssertUnwindSafe(|| run(target, &input))).is_err() {
                std::fs::create_dir_all(&crash_dir).unwrap();
                let path = crash_dir.join(format!("{target}-{execs}.bin"));
                std::fs::write(&path, &input).unwrap();
                eprintln!(
                    "fuzz_stable: {target} panics; input saved to {}",
                    path.display()
                );
                crashes.push(path);
                if crashes.len() > 20 {
                    break;
                }
                continue;
            }
            // Keep some mutants so mutations stack (a poor man's corpus growth).
            if rng.below(64) == 0 && corpus.len() < 256 {
                corpus.push(input);
            }
        }
        eprintln!("fuzz_stable: {target}: {execs} inputs in {secs} s");
    }
    let _ = std::panic::take_hook();
    assert!(crashes.is_empty(), "crashing inputs: {crashes:?}");
}
