//! The bounded board (issue 15, DESIGN.md#events): a board carries only the events of the
//! stage that wrote it (`new_events`) and a bounded `flow`; the whole history is the run
//! folder's `events.jsonl`, appended once per stage by the driver and by `share/meeting.sh`.
//! Also the helpers other modules use to read a meeting's history from its run folder.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Every event of a meeting, from its run folder's `events.jsonl`.
pub(crate) fn run_events(run_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("events.jsonl holds JSON lines"))
        .collect()
}

/// The stage outputs of a run folder, in step order (`NNNN-<stage>.out.json`).
pub(crate) fn outputs(run_dir: &Path) -> Vec<PathBuf> {
    let mut outs: Vec<PathBuf> = std::fs::read_dir(run_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".out.json"))
        .collect();
    outs.sort();
    outs
}

/// The events the checkpoints carry, in step order: what `events.jsonl` must equal.
pub(crate) fn checkpoint_events(run_dir: &Path) -> Vec<Value> {
    let mut all = Vec::new();
    for out in outputs(run_dir) {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let board = if v.get("board").is_some() {
            &v["board"]
        } else {
            &v
        };
        if let Some(evs) = board.get("new_events").and_then(Value::as_array) {
            all.extend(evs.iter().cloned());
        }
    }
    all
}
