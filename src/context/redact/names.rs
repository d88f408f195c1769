//! Secret names and real values: which key names say secret, and which values are
//! placeholders, references or prose rather than secrets.

/// What a secret name asks of its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Strength {
    /// Any value that is not a placeholder.
    Any,
    /// A name that is often a setting too (`auth: none`, `client-key-data`): only a value
    /// shaped like a credential.
    Tokenish,
}

impl Strength {
    pub(super) fn accepts(self, v: &str) -> bool {
        self == Strength::Any || tokenish(v)
    }
}

/// The words of a key name, lowercase: split at `_`, `.`, `-`, spaces and camelCase humps
/// (`dbPassword` is `db password`, `PGPASSWORD` one word).
pub(super) fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for ch in name.chars() {
        if !ch.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if ch.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = ch.is_lowercase() || ch.is_ascii_digit();
        cur.extend(ch.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `*_key` names that hold no secret: a row's, a cache's or a public key's.
pub(super) const NOT_SECRET_KEYS: [&str; 47] = [
    "public",
    "pub",
    "primary",
    "foreign",
    "sort",
    "partition",
    "hash",
    "range",
    "cache",
    "idempotency",
    "dedup",
    "dedupe",
    "deduplication",
    "lookup",
    "group",
    "routing",
    "object",
    "s3",
    "map",
    "row",
    "shard",
    "sharding",
    "join",
    "unique",
    "natural",
    "composite",
    "surrogate",
    "site",
    "publishable",
    "anon",
    "host",
    "index",
    "i18n",
    "translation",
    "message",
    "order",
    "field",
    "column",
    "attribute",
    "registry",
    "kms",
    "metric",
    "label",
    "tag",
    "config",
    "redis",
    "lock",
];

/// Whether a key name says its value is a secret, and what it asks of the value. The last
/// word decides, after detect-secrets' keyword list: password, passwd, passphrase, passcode,
/// secret, token (and words ending in them: `PGPASSWORD`, `authToken`), credentials, `pass`
/// and `pwd` after another word (not `PWD`, the working folder), `*_key` unless the word
/// before names a row or a public half, detect-secrets' `apikey`, `accesskey`, …; `auth` and
/// `key data` only with a credential-shaped value.
pub(super) fn secret_name(name: &str) -> Option<Strength> {
    let w = words(name);
    let last = w.last()?.as_str();
    let prev = w.len().checked_sub(2).map(|i| w[i].as_str());
    // A rate (`input_cost_per_token`, `price_per_token`): the word is a unit, not the secret.
    if prev == Some("per") {
        return None;
    }
    const ENDINGS: [&str; 8] = [
        "password",
        "passwd",
        "passphrase",
        "passcode",
        "secret",
        "token",
        "contrasena",
        "contraseña",
    ];
    const KEYS: [&str; 18] = [
        "apikey",
        "secretkey",
        "privatekey",
        "privkey",
        "accesskey",
        "authkey",
        "appkey",
        "servicekey",
        "accountkey",
        "clientkey",
        "masterkey",
        "encryptionkey",
        "signingkey",
        "sharedaccesskey",
        "licensekey",
        "dbkey",
        "databasekey",
        "applicationkey",
    ];
    if ENDINGS.iter().any(|e| last.ends_with(e))
        || KEYS.contains(&last)
        || matches!(last, "credential" | "credentials" | "creds")
        || (matches!(last, "pass" | "pwd") && prev.is_some())
        || last == "pass" && w.len() == 1
        || (last == "key" && prev.is_some_and(|p| !NOT_SECRET_KEYS.contains(&p)))
    {
        return Some(Strength::Any);
    }
    if last == "auth" || (last == "data" && prev == Some("key")) {
        return Some(Strength::Tokenish);
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Values

/// Words that stand for a type, a state or the secret's own name, not for a value.
pub(super) const WORDS: [&str; 60] = [
    "null",
    "none",
    "nil",
    "true",
    "false",
    "yes",
    "no",
    "on",
    "off",
    "undefined",
    "undef",
    "empty",
    "required",
    "optional",
    "string",
    "str",
    "text",
    "bool",
    "boolean",
    "int",
    "integer",
    "number",
    "secret",
    "password",
    "pass",
    "token",
    "redacted",
    "hidden",
    "example",
    "sample",
    "dummy",
    "placeholder",
    "test",
    "todo",
    "tbd",
    "fixme",
    "value",
    "default",
    "unset",
    "prompt",
    "ask",
    "env",
    "environment",
    "vault",
    "keychain",
    "keyring",
    "inherit",
    "auto",
    "disabled",
    "enabled",
    "masked",
    "sensitive",
    "encrypted",
    "plain",
    "bearer",
    "basic",
    "oauth",
    "oauth2",
    "jwt",
    "~",
];

/// Values the name-based rules leave alone: empty, placeholders (`${X}`, `<token>`,
/// `{{ x }}`, `%(x)s`, `your-key-here`, `xxxx`, `****`, `…`), markers already in place, and
/// words that name a type or a state.
pub(super) fn is_real_value(v: &str) -> bool {
    let v = v.trim();
    let lower = v.to_lowercase();
    let lower = lower.trim_end_matches(['.', ',', ';', ':']);
    if lower.chars().count() < 2
        || WORDS.contains(&lower)
        || v.starts_with(['{', '<', '%', '['])
        || is_variable(v)
        || v.contains(super::MARKER)
        || lower.starts_with("your")
        || lower.starts_with("replace")
        || lower.starts_with("insert")
        || lower.starts_with("enter ")
        || v.contains("...")
        || v.contains('…')
    {
        return false;
    }
    // `xxxx`, `****`, `xxxx-xxxx-xxxx`.
    let mut chars = lower.chars().filter(|c| !matches!(c, '-' | '_' | '.'));
    let first = chars.next().unwrap_or(' ');
    !chars.all(|c| c == first)
}

/// `$X`, `${X}`, `$(cmd)`, `${{ secrets.X }}`: a variable, not its value.
pub(super) fn is_variable(v: &str) -> bool {
    let Some(rest) = v.strip_prefix('$') else {
        return false;
    };
    rest.starts_with(['{', '(']) || rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Objects a dotted reference starts from (`settings.SECRET_KEY`, `process.env.TOKEN`).
pub(super) const OBJECTS: [&str; 30] = [
    "self", "this", "process", "os", "env", "config", "settings", "cfg", "conf", "app", "ctx",
    "context", "secrets", "vars", "params", "args", "options", "opts", "props", "values",
    "request", "req", "window", "module", "data", "input", "inputs", "steps", "needs", "auth",
];

/// Keywords that declare a variable in code.
pub(super) const DECLARATIONS: [&str; 12] = [
    "let", "mut", "const", "var", "val", "my", "local", "final", "static", "auto", "private",
    "public",
];

/// Words that start an expression, not a value (`token = await fetchToken()`).
pub(super) const CODE_WORDS: [&str; 12] = [
    "await", "new", "yield", "lambda", "function", "async", "typeof", "require", "import",
    "static", "self", "this",
];

/// A bare value that says where the secret lives instead of holding it: a call, an index, a
/// variable named like a secret (`DB_PASSWORD`, `hashedPassword`), a dotted reference, a path.
pub(super) fn is_reference(v: &str) -> bool {
    if v.starts_with(['$', '%', '{', '<', '[', '*', '!', '&', '@', '/', '~'])
        || v.starts_with("./")
        || v.contains(['(', '[', '{'])
    {
        return true;
    }
    let ident = |s: &str| {
        s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    let named = |s: &str| {
        let l = s.to_lowercase();
        ["pass", "pwd", "secret", "token", "key", "cred", "auth"]
            .iter()
            .any(|k| l.contains(k))
    };
    // A variable is named in one case per word (`OPENAI_API_KEY`, `db_password_2`,
    // `hashedPassword`); a word mixing both cases with digits (`Ab9Qx7Lm2KEY`) is random, a
    // value that merely ends like a name (docs/design/context.md#context-collection).
    let random = |s: &str| {
        s.split('_').any(|w| {
            w.bytes().any(|b| b.is_ascii_digit())
                && w.bytes().any(|b| b.is_ascii_lowercase())
                && w.bytes().any(|b| b.is_ascii_uppercase())
        })
    };
    if ident(v) {
        return (named(v) && !random(v)) || CODE_WORDS.contains(&v);
    }
    // LiteLLM's configs name an environment variable `os.environ/NAME`.
    if v.strip_prefix("os.environ/").is_some_and(ident) {
        return true;
    }
    let parts: Vec<&str> = v.split('.').collect();
    if parts.len() >= 2 && parts.iter().all(|p| ident(p)) {
        let last = parts[parts.len() - 1];
        let caps = last.len() >= 2 && !last.bytes().any(|b| b.is_ascii_lowercase());
        return named(last) || caps || OBJECTS.contains(&parts[0].to_lowercase().as_str());
    }
    false
}

/// A quoted value that is a label about the secret, not the secret: prose that names it
/// ("Forgot your password?", "API token").
pub(super) fn is_prose_label(v: &str) -> bool {
    let l = v.to_lowercase();
    l.contains(char::is_whitespace)
        && [
            "password",
            "passphrase",
            "token",
            "secret",
            "key",
            "credential",
        ]
        .iter()
        .any(|k| l.contains(k))
}

pub(super) fn has_digit_or_symbol(v: &str) -> bool {
    v.bytes().any(|b| !b.is_ascii_alphabetic())
}

/// Shaped like a credential: 8 or more characters without spaces, with a digit or a symbol in
/// them, or 12 or more in mixed case (base64), or 16 or more; and not a variable name.
pub(super) fn tokenish(v: &str) -> bool {
    let n = v.chars().count();
    n >= 8
        && !v.contains(char::is_whitespace)
        && (has_digit_or_symbol(v)
            || n >= 16
            || n >= 12
                && v.bytes().any(|b| b.is_ascii_uppercase())
                && v.bytes().any(|b| b.is_ascii_lowercase()))
        && !(v
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b == b'_' || b.is_ascii_digit())
            && v.contains('_'))
}
