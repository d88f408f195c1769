//! `--help` that reads well: flags in the groups Input, Meeting, Model,
//! Transport, Output; one value name per flag across all programs; the default model per
//! provider, the environment variables and the exit codes.

use std::collections::BTreeMap;

use crate::harness::{cli, every_case, PROGRAMS};

fn help(program: &str) -> String {
    let out = cli(program).arg("--help").run();
    out.success();
    out.stdout()
}

#[test]
fn meeting_groups_its_flags_in_order() {
    let text = help("meeting");
    let headings: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
        .collect();
    assert_eq!(
        headings,
        [
            "Commands:",
            "Options:",
            "Input:",
            "Meeting:",
            "Model:",
            "Transport:",
            "Output:",
            "Examples:",
            "Environment:",
            "Exit codes:"
        ],
        "{text}"
    );
}

#[test]
fn one_value_name_per_flag_across_programs() {
    let flag = regex::Regex::new(r"^ {2,6}(?:-\w, )?(--[a-z-]+)(?: <([^>]+)>)?").unwrap();
    let mut seen: BTreeMap<String, BTreeMap<String, Vec<&str>>> = BTreeMap::new();
    for program in PROGRAMS {
        let text = help(program);
        // The flag lists only, not the examples after them.
        let flags_part = text.split("\nExample").next().unwrap().to_string();
        for line in flags_part.lines() {
            if let Some(c) = flag.captures(line) {
                let value = c.get(2).map_or("(switch)", |m| m.as_str()).to_string();
                seen.entry(c[1].to_string())
                    .or_default()
                    .entry(value)
                    .or_default()
                    .push(program);
            }
        }
    }
    let differing: Vec<_> = seen.iter().filter(|(_, names)| names.len() > 1).collect();
    assert!(differing.is_empty(), "{differing:#?}");
}

#[test]
fn help_names_default_models_environment_and_exit_codes() {
    let named = ["meeting", "pm-step", "agent-turn", "agent-builder"];
    every_case(
        named,
        |p| p.to_string(),
        |program| {
            let text = help(program)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            assert!(
                text.contains("[default: gpt-4o-mini for openai, claude-"),
                "{program}: {text}"
            );
            for var in [
                "OPENAI_API_KEY",
                "ANTHROPIC_BASE_URL",
                "AGENT_MEETING_CONFIG",
            ] {
                assert!(text.contains(var), "{program}: {var}");
            }
        },
    );
    every_case(
        PROGRAMS,
        |p| p.to_string(),
        |program| {
            let text = help(program);
            assert!(
                text.contains("Exit codes:\n  0  success"),
                "{program}: {text}"
            );
        },
    );
    assert!(help("meeting").contains("130, 143"));
    assert!(help("meeting").contains("\n  3  no decision: "));
}
