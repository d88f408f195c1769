//! The library's layers (src/lib.rs, docs/ARCHITECTURE.md#module-map-where-each-rule-lives):
//! no module imports from a layer above its own, and no two files of a folder import each
//! other round in a circle. Read from the source: every `crate::…` and `super::…` path outside
//! comments and test modules, `use` groups expanded.
//!
//! The test binary's two layers (tests/it/main.rs): a test module imports only the shared
//! layer (`harness`, `fake_http`, `fixtures`), never another test module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::harness::root;

/// The layers, bottom to top; a module may import its own layer and those below.
const LAYERS: [&[&str]; 10] = [
    &["text", "error"],
    &["schema", "model", "io"],
    &["llm"],
    &["loader", "context"],
    &["meeting"],
    &["stage", "otlp"],
    &["settings"],
    &["cli"],
    &["driver"],
    &["mcp", "github"],
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The library's source files (the programs in `src/bin/` are above every layer).
fn sources() -> Vec<PathBuf> {
    let src = root().join("src");
    walkdir::WalkDir::new(&src)
        .into_iter()
        .flatten()
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .filter(|p| !p.starts_with(src.join("bin")) && p != &src.join("lib.rs"))
        .collect()
}

/// The code of a file that ships: line comments and the test module left out (tests may reach
/// for fixtures anywhere).
fn shipped_code(text: &str) -> String {
    let tests = regex::Regex::new(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))? )?mod tests").unwrap();
    let text = match tests.find(text) {
        Some(m) => &text[..m.start()],
        None => text,
    };
    text.lines()
        .map(|l| l.split_once("//").map_or(l, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path a file names from `crate::` or `super::`, groups expanded: `crate::a::{b, c::d}`
/// gives `crate::a::b` and `crate::a::c::d`.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let re = regex::Regex::new(r"\b(crate|super)((?:::(?:\w+|\{))*)").unwrap();
    for m in re.find_iter(code) {
        let text = m.as_str();
        match text.strip_suffix('{') {
            Some(prefix) => {
                let body = group_body(&code[m.end()..]);
                expand(prefix.trim_end_matches(':'), body, &mut out);
            }
            None => out.push(text.to_string()),
        }
    }
    out
}

/// The text up to the `}` closing a group whose `{` was just read.
fn group_body(rest: &str) -> &str {
    let mut depth = 1;
    for (i, c) in rest.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &rest[..i];
                }
            }
            _ => {}
        }
    }
    rest
}

fn expand(prefix: &str, body: &str, out: &mut Vec<String>) {
    let (mut depth, mut start) = (0, 0);
    let mut items = Vec::new();
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&body[start..]);
    for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
        let item = item.split(" as ").next().unwrap_or(item).trim();
        match item.split_once('{') {
            Some((head, rest)) => {
                let rest = rest.strip_suffix('}').unwrap_or(rest);
                expand(
                    &format!("{prefix}::{}", head.trim_end_matches(':')),
                    rest,
                    out,
                );
            }
            None if item == "self" => out.push(prefix.to_string()),
            None => out.push(format!("{prefix}::{item}")),
        }
    }
}

/// The module folder a file's `super` names, and its own module path under `src/`.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root().join("src")).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The source file a module path (`["llm", "resolve", "Setting"]`) lives in: the longest
/// prefix that is a file.
fn file_of(segments: &[String]) -> Option<PathBuf> {
    let src = root().join("src");
    (1..=segments.len()).rev().find_map(|n| {
        let base = segments[..n].iter().fold(src.clone(), |p, s| p.join(s));
        let file = base.with_extension("rs");
        let module = base.join("mod.rs");
        [file, module].into_iter().find(|f| f.is_file())
    })
}

/// Each file's imports of other files.
type FileGraph = BTreeMap<PathBuf, BTreeSet<PathBuf>>;
/// Each import of a top-level module, by the file that makes it.
type ModuleImports = Vec<(PathBuf, String)>;

/// The file-to-file imports and the module-level imports of the library.
fn graph() -> (FileGraph, ModuleImports) {
    let mut files: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    let mut modules = Vec::new();
    for file in sources() {
        let code = shipped_code(&std::fs::read_to_string(&file).unwrap());
        let here = module_of(&file);
        let is_mod = file.ends_with("mod.rs");
        let edges = files.entry(file.clone()).or_default();
        for path in paths(&code) {
            let mut segs: Vec<String> = path.split("::").map(str::to_string).collect();
            let absolute: Vec<String> = match segs[0].as_str() {
                "crate" => segs.split_off(1),
                _ => {
                    // `super` from a mod.rs is the folder's parent; from a file, its folder.
                    let mut base = here.clone();
                    if !is_mod {
                        base.pop();
                    }
                    let mut rest = segs.as_slice();
                    while rest.first().is_some_and(|s| s == "super") {
                        rest = &rest[1..];
                        if rest.first().is_some_and(|s| s == "super") {
                            base.pop();
                        }
                    }
                    if is_mod {
                        base.pop();
                    }
                    base.extend(rest.iter().cloned());
                    base
                }
            };
            let Some(top) = absolute.first() else {
                continue;
            };
            modules.push((file.clone(), top.clone()));
            if let Some(target) = file_of(&absolute) {
                // A folder's mod.rs is its re-export hub, not a rule a child depends on.
                let hub = target.ends_with("mod.rs") && file.starts_with(target.parent().unwrap());
                if target != file && !hub {
                    edges.insert(target);
                }
            }
        }
    }
    (files, modules)
}

/// No module imports from a layer above its own; every module is in a layer.
#[test]
fn no_module_imports_from_a_layer_above_its_own() {
    let (_, modules) = graph();
    let mut wrong = BTreeSet::new();
    for (file, target) in &modules {
        let here = &module_of(file)[0];
        let from = layer(here).unwrap_or_else(|| {
            panic!("src/{here} is in no layer: add it to LAYERS and src/lib.rs's map")
        });
        // Macros exported at the crate root (`note!`) are io's.
        let Some(to) = layer(target) else {
            continue;
        };
        if to > from {
            let shown = file.strip_prefix(root()).unwrap().display().to_string();
            wrong.insert(format!(
                "{shown} imports crate::{target} (layer {to} above {from})"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "upward imports:\n{}",
        Vec::from_iter(wrong).join("\n")
    );
}

/// The clap types of `src/cli/`: each struct or enum there that derives a clap trait.
fn clap_types() -> BTreeSet<String> {
    let derive = regex::Regex::new(
        r"#\[derive\([^)]*clap::\w+[^)]*\)\]\s*(?:#\[[^\]]*\]\s*)*pub (?:struct|enum) (\w+)",
    )
    .unwrap();
    let mut names = BTreeSet::new();
    for file in walkdir::WalkDir::new(root().join("src/cli"))
        .into_iter()
        .flatten()
    {
        if file.path().extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(file.path()).unwrap();
            names.extend(derive.captures_iter(&text).map(|c| c[1].to_string()));
        }
    }
    names
}

/// Flags stop at the edge (docs/ARCHITECTURE.md#settings): no file of the library outside
/// `src/cli/` names clap or one of `cli`'s clap types (`LlmArgs`, `BoardArgs`, `ContextArgs`,
/// `OtlpArgs`, ...) — it takes the types they settle to (`LlmConfig`, `MeetingSettings`, ...).
#[test]
fn no_clap_type_below_the_edge() {
    let types = clap_types();
    assert!(
        types.contains("LlmArgs") && types.contains("BoardArgs"),
        "the clap types are found: {types:?}"
    );
    let names = types.iter().cloned().collect::<Vec<_>>().join("|");
    let clap = regex::Regex::new(&format!(r"\b(clap::|(?:{names})\b)")).unwrap();
    let mut wrong = BTreeSet::new();
    for file in sources() {
        if file.starts_with(root().join("src/cli")) {
            continue;
        }
        let code = shipped_code(&std::fs::read_to_string(&file).unwrap());
        for (i, line) in code.lines().enumerate() {
            if let Some(m) = clap.find(line) {
                let shown = file.strip_prefix(root()).unwrap().display().to_string();
                wrong.insert(format!("{shown}:{}: {}", i + 1, m.as_str()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "a clap type below src/cli/:\n{}",
        Vec::from_iter(wrong).join("\n")
    );
}

/// No circle of imports between files: each file's rules can be read bottom-up.
#[test]
fn no_circle_of_imports_between_files() {
    let (files, _) = graph();
    let mut circles = BTreeSet::new();
    for start in files.keys() {
        // Depth-first from `start`: a path back to it is a circle.
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((at, path)) = stack.pop() {
            for next in files.get(&at).into_iter().flatten() {
                if next == start {
                    let mut names: Vec<String> = path
                        .iter()
                        .map(|p| p.strip_prefix(root()).unwrap().display().to_string())
                        .collect();
                    let min = names
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, n)| (*n).clone())
                        .unwrap()
                        .0;
                    names.rotate_left(min);
                    circles.insert(names.join(" → "));
                } else if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        Vec::from_iter(circles).join("\n")
    );
}

/// The reader itself: groups, `self`, renames and `super` resolve as the compiler reads them.
#[test]
fn the_import_reader_expands_groups() {
    let code = "use crate::meeting::{ask, events::{self, Clock}, review as r};\nlet x = super::outcome::plural(1);";
    assert_eq!(
        paths(code),
        [
            "crate::meeting::ask",
            "crate::meeting::events",
            "crate::meeting::events::Clock",
            "crate::meeting::review",
            "super::outcome::plural"
        ]
    );
}

// --- the test binary -----------------------------------------------------------------------

/// The test binary's shared layer: the only modules a test module may import.
const SHARED: [&str; 3] = ["harness", "fake_http", "fixtures"];

/// The test binary's modules, from its root's `mod` lines.
fn test_modules() -> BTreeSet<String> {
    let main = std::fs::read_to_string(root().join("tests/it/main.rs")).unwrap();
    let re = regex::Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))? )?mod (\w+);").unwrap();
    re.captures_iter(&main).map(|c| c[1].to_string()).collect()
}

/// Source text without its comments and the contents of its string literals (a test may hold
/// Rust code in a string, as [`the_import_reader_expands_groups`] does).
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if let Some(open) = raw_string_opening(rest) {
            // `r#"` is closed by `"#`.
            let close = format!("\"{}", &open[1..open.len() - 1]);
            let body = &rest[open.len()..];
            i += open.len() + body.find(&close).map_or(body.len(), |e| e + close.len());
            out.push_str("\"\"");
        } else if rest.starts_with("'\"'") || rest.starts_with("'\\\"'") {
            i += rest[1..].find('\'').unwrap() + 2;
        } else if rest.starts_with('"') {
            let mut j = 1;
            while j < rest.len() && rest.as_bytes()[j] != b'"' {
                j += if rest.as_bytes()[j] == b'\\' { 2 } else { 1 };
            }
            i += (j + 1).min(rest.len());
            out.push_str("\"\"");
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// `r"`, `r#"`, ... when `rest` starts a raw string.
fn raw_string_opening(rest: &str) -> Option<&str> {
    let hashes = rest
        .strip_prefix('r')?
        .bytes()
        .take_while(|b| *b == b'#')
        .count();
    (rest.as_bytes().get(1 + hashes) == Some(&b'"')).then(|| &rest[..hashes + 2])
}

/// Each test-binary file's imports of a module it may not import, as `file imports crate::x`:
/// a test module may import only [`SHARED`] (and itself); the shared layer only itself.
fn wrong_test_imports(files: &[(String, String)]) -> BTreeSet<String> {
    let modules = test_modules();
    let mut wrong = BTreeSet::new();
    for (file, text) in files {
        let own = file.split(['/', '.']).next().unwrap();
        for path in paths(&code_only(text)) {
            let mut segs = path.split("::");
            let (head, target) = (segs.next().unwrap(), segs.next().unwrap_or(""));
            // `crate::x` names a module of the binary (its root holds nothing else); `super::x`
            // from a module's top level does too, and from deeper names the module's own items.
            let is_module = head == "crate" || modules.contains(target);
            if is_module && target != own && !SHARED.contains(&target) {
                wrong.insert(format!("tests/it/{file} imports {head}::{target}"));
            }
        }
    }
    wrong
}

/// The test binary's files (tests/it, `fixtures/` included) but its root, by path under
/// tests/it, with their text.
fn test_files() -> Vec<(String, String)> {
    let dir = root().join("tests/it");
    let mut files: Vec<(String, String)> = walkdir::WalkDir::new(&dir)
        .into_iter()
        .flatten()
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs") && *p != dir.join("main.rs"))
        .map(|p| {
            let rel = p.strip_prefix(&dir).unwrap().display().to_string();
            (rel, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// A test module imports only the shared layer (`harness`, `fake_http`, `fixtures`), never
/// another test module: what two modules share lives in `fixtures`.
#[test]
fn test_modules_import_only_the_shared_layer() {
    let files = test_files();
    assert!(files.len() > 40, "{} files", files.len());
    let wrong = wrong_test_imports(&files);
    assert!(
        wrong.is_empty(),
        "imports of another test module (move what they share into tests/it/fixtures/):\n{}",
        Vec::from_iter(wrong).join("\n")
    );
}

/// The check itself: a sibling test module is caught however it is named, the shared layer
/// and a module's own items are not, nor code in comments and strings.
#[test]
fn the_test_import_check_catches_a_sibling() {
    let file = |name: &str, text: &str| (name.to_string(), text.to_string());
    let fine = [
        file("circles.rs", "use crate::fixtures::{pm, Cassette};\nuse crate::harness::Workdir;\nmod tests { use super::*; }\n// use crate::meeting::x;\nlet s = \"crate::report::y\";"),
        file("fixtures/demo.rs", "use super::{Cassette, NOW};\nuse crate::harness::cli;"),
        file("report.rs", "use crate::report::x;\nlet c = '\"'; let t = super::Kind::A;"),
    ];
    assert_eq!(wrong_test_imports(&fine), BTreeSet::new());
    let bad = [
        file(
            "circles.rs",
            "use crate::decision_record::{cassette, section};",
        ),
        file("budget.rs", "let e = crate::bounded_board::run_events(d);"),
        file("human.rs", "use super::meeting::final_board;"),
        file("fixtures/demo.rs", "use crate::meeting::NOW;"),
    ];
    assert_eq!(
        Vec::from_iter(wrong_test_imports(&bad)),
        [
            "tests/it/budget.rs imports crate::bounded_board",
            "tests/it/circles.rs imports crate::decision_record",
            "tests/it/fixtures/demo.rs imports crate::meeting",
            "tests/it/human.rs imports super::meeting",
        ]
    );
}
