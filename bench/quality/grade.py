#!/usr/bin/env python3
"""The quality benchmark's grader (bench/quality/README.md#grading-gradepy): deterministic, Python 3
standard library only. It reads a finished board (what pm-step / render-report / meeting leave)
and a case's answer key (keys.json), and scores the decision, the required questions and the
citations. Nothing here calls a model.

Usage on its own: python3 bench/quality/grade.py BOARD.json CASE_ID  (prints the grade as JSON)
"""
import json
import os
import re
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
KEYS = os.path.join(HERE, "keys.json")
# A quoted span in the PM's own text counts as a citation when it is at least this long (shorter
# quoted words are names, not quotes).
MIN_QUOTE_CHARS = 15


def load_keys(path=KEYS):
    with open(path, encoding="utf-8") as f:
        return json.load(f)["cases"]


def norm(text):
    """Lower case, typographic quotes and dashes folded, punctuation dropped, spaces collapsed:
    the form quotes and choices are compared in."""
    text = unicodedata.normalize("NFKC", text or "").lower()
    text = text.translate(str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                                         "\u2013": "-", "\u2014": "-"}))
    text = re.sub(r"[^\w\s%.,:/-]", " ", text)
    text = re.sub(r"[.,:]+(\s|$)", r"\1", text)
    return re.sub(r"\s+", " ", text).strip()


# Words that open a choice or an option without changing which one it is: articles and the
# verbs of choosing ("Use Apache PDFBox" and "Apache PDFBox" name one option). Verbs that
# change the meaning ("keep", "replace", "move") are never dropped.
FILLER = ("the", "a", "an", "use", "using", "adopt", "choose", "pick", "go", "with", "option",
          "we", "should", "recommend", "recommended", "select")


def core(text):
    """A normalized choice or option without its leading filler words."""
    words = norm(text).split(" ")
    while words and words[0] in FILLER:
        words.pop(0)
    return " ".join(words)


def read_choice(choice, options):
    """The option a decision's `choice` names, or None. A choice names an option when, normalized,
    it is that option or begins with it (models add a reason after it); else when, without the
    leading articles and verbs of choosing ([`core`]), it is or begins with exactly one option's
    core ("Apache PDFBox" for "Use Apache PDFBox"); a choice that names none (`none of these`,
    the sample provider's `[sample] none yet ...`) is None. No fuzzy matching beyond that: a
    choice the grader cannot read is a wrong answer, the same in every mode."""
    c = norm(choice)
    if not c:
        return None
    for o in sorted(options, key=lambda o: -len(norm(o))):
        n = norm(o)
        if c == n or c.startswith(n + " ") or c.startswith(n + "-"):
            return o
    cc = core(choice)
    named = [o for o in options if core(o) and (cc == core(o) or cc.startswith(core(o) + " ")
                                                or cc.startswith(core(o) + "-"))]
    return named[0] if len(named) == 1 else None


# The PM's and a council member's choice when no option can work (src/model/council.rs).
NONE_OF_THESE = "none of these"


def is_none_of_these(choice):
    """Whether a decision's `choice` is "none of these" (case, spacing, a final full stop aside)."""
    return " ".join((choice or "").split()).rstrip(".").lower() == NONE_OF_THESE


def is_decision(choice):
    """Whether a decision's `choice` is a real one: not empty, not "none of these" (counted
    apart) and not the sample provider's placeholder (`[sample] none yet ...`)."""
    c = (choice or "").strip()
    return bool(c) and not c.startswith("[sample]") and not is_none_of_these(c)


def names_in(text, options):
    """The options a participant's free text names: those whose core ([`core`]) it contains,
    normalized ("Apache PDFBox is the only licence that fits" names "Use Apache PDFBox")."""
    t = norm(text)
    return {o for o in options if core(o) and core(o) in t}


# Words that name an option to turn it down ("X is ruled out by the budget"): a text holding
# one proposes nothing.
REJECTING = ("not", "no", "never", "avoid", "reject", "rejected", "against", "rule", "ruled",
             "instead", "rather", "drop", "dropped", "cannot", "can't", "don't", "doesn't", "won't")


def rejects(text):
    """Whether a participant's text turns down what it names (see REJECTING)."""
    return any(w in REJECTING for w in norm(text).split(" "))


def proposed(board, options):
    """The options someone at the table put forward, for the oracle gap (the reference was on
    the table, the decision did not take it): each council member's vote ([`read_choice`]), and
    each participant's latest response and recommendations that name exactly one option and do
    not turn it down ([`rejects`]: naming the reference to reject it is no proposal of it)."""
    out = set()
    for m in (board.get("council") or {}).get("members") or []:
        o = read_choice(((m.get("vote") or {}).get("choice")) or "", options)
        if o:
            out.add(o)
    for r in (board.get("latest_agent_outputs") or {}).values():
        for text in [r.get("response") or ""] + list(r.get("recommendations") or []):
            named = names_in(text, options)
            if len(named) == 1 and not rejects(text):
                out |= named
    return sorted(out)


def quote_matches(cited, planted):
    """A citation matches a planted quote when, normalized, it contains the quote, or it is a
    part of the quote at least half the quote's length."""
    c, p = norm(cited), norm(planted)
    if not c or not p:
        return False
    return p in c or (c in p and len(c) * 2 >= len(p))


def quoted_spans(text):
    """Spans in double quotes (straight or curly) of at least MIN_QUOTE_CHARS characters."""
    spans = re.findall(r'"([^"\n]+)"|\u201c([^\u201d\n]+)\u201d', text or "")
    return [a or b for a, b in spans if len(a or b) >= MIN_QUOTE_CHARS]


def citations_of(board):
    """What a board cites: the checked citations on it (board.evidence: every participant's
    verified quotes) and the quoted spans in the PM's own text (the final report, the decision's
    revisit_if, the answers it marked). The same rule for every mode."""
    quotes = [e.get("quote", "") for e in board.get("evidence") or [] if e.get("verified", True)]
    record = board.get("record") or {}
    own = [board.get("final_report") or ""]
    decision = record.get("decision") or {}
    own.append(decision.get("revisit_if") or "")
    for q in record.get("questions") or []:
        own.append(((q.get("answer") or {}).get("text")) or "")
    for text in own:
        quotes.extend(quoted_spans(text))
    seen, out = set(), []
    for q in quotes:
        if norm(q) and norm(q) not in seen:
            seen.add(norm(q))
            out.append(q)
    return out


def decision_of(board):
    """The decision's `choice` text on a finished board (board.record.decision), or ""."""
    return ((board.get("record") or {}).get("decision") or {}).get("choice") or ""


def answered_required(board, required):
    """How many of the key's required questions the board records an answer for."""
    done = 0
    questions = (board.get("record") or {}).get("questions") or []
    for r in required:
        for q in questions:
            if norm(q.get("text")) == norm(r) and (q.get("answer") or {}).get("text"):
                done += 1
                break
    return done


def grade(board, key, options):
    """The grade of one finished board against its case's key."""
    choice_text = decision_of(board)
    chosen = read_choice(choice_text, options)
    cited = citations_of(board)
    planted = key["quotes"]
    good = [c for c in cited if any(quote_matches(c, p) for p in planted)]
    found = [p for p in planted if any(quote_matches(c, p) for c in cited)]
    required = key["required_questions"]
    usage = board.get("usage") or {}
    on_table = proposed(board, options)
    return {
        "choice": choice_text,
        "chosen_option": chosen,
        "correct": chosen is not None and norm(chosen) == norm(key["reference"]),
        "proposed": on_table,
        "reference_proposed": any(norm(o) == norm(key["reference"]) for o in on_table),
        "required_answered": answered_required(board, required),
        "required_total": len(required),
        "citations": len(cited),
        "citation_precision": round(len(good) / len(cited), 3) if cited else None,
        "citation_recall": round(len(found) / len(planted), 3) if planted else None,
        "calls": usage.get("calls", 0),
        "tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0),
    }


def options_of(meeting_file):
    """The options of a case's meeting file (the harness's own tiny reader of the shape
    bench/quality/cases/*/meeting.yaml is written in: one JSON string per option line)."""
    options, inside = [], False
    with open(meeting_file, encoding="utf-8") as f:
        for line in f:
            s = line.strip()
            if s == "options:":
                inside = True
            elif inside and s.startswith("- "):
                options.append(json.loads(s[2:]))
            elif inside:
                inside = False
    return options


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: grade.py BOARD.json CASE_ID")
    board_path, case = sys.argv[1], sys.argv[2]
    keys = load_keys()
    if case not in keys:
        print(f"grade.py: {case}: no such case in {KEYS}", file=sys.stderr)
        sys.exit(2)
    with open(board_path, encoding="utf-8") as f:
        board = json.load(f)
    board = board.get("board", board)  # a ReportResult holds the board
    options = options_of(os.path.join(HERE, "cases", case, "meeting.yaml"))
    print(json.dumps(grade(board, keys[case], options), indent=1))


if __name__ == "__main__":
    main()
