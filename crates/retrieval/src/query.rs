//! A query, parsed once ([`Query::parse`]) and used as typed data by the engine and every
//! front end: a `symbol = …` lookup, or a question in words ([`TextQuery`]).
//!
//! A question may be a few words or a whole issue: prose, a template's headings and
//! checklists, code blocks, error messages, stack traces. [`TextQuery`] separates what
//! carries meaning (the prose without template boilerplate, the identifiers, the quoted
//! strings, the stack frames) from what does not, so that the same question with two
//! paragraphs of template text is the same question.

use crate::RetrievalError;
use crate::lookup::SymbolQuery;

/// What a query asks for, decided once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// `symbol = [path >] [Parent >] name`: exact names, no ranking.
    Lookup(SymbolQuery),
    /// A question: the retrieval pipeline ranks candidates for it.
    Text(TextQuery),
}

impl Query {
    /// A lookup is `symbol`, optional spaces, then `=`; anything else is a question
    /// ("symbols exported by the router" and "symbolic links" are questions). An error
    /// when a lookup names nothing or a path outside the root.
    pub fn parse(query: &str) -> Result<Query, RetrievalError> {
        match SymbolQuery::parse(query) {
            Some(lookup) => lookup.map(Query::Lookup),
            None => Ok(Query::Text(TextQuery::new(query))),
        }
    }

    /// The lookup of a bare name or `Parent > name` path (the CLI's `lookup` and the
    /// navigation tools), or of a whole `symbol = …` query.
    pub fn lookup_of(name_or_query: &str) -> Result<SymbolQuery, RetrievalError> {
        match Query::parse(name_or_query)? {
            Query::Lookup(lookup) => Ok(lookup),
            Query::Text(_) => match SymbolQuery::parse(&format!(
                "{}{}",
                crate::LOOKUP_PREFIX,
                name_or_query.trim()
            )) {
                Some(parsed) => parsed,
                None => Err(RetrievalError::EmptyLookup(name_or_query.to_string())),
            },
        }
    }
}

/// A frame of a stack trace quoted in a question: `at fn (src/file.ts:12:5)` or
/// `at src/file.ts:12:5`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackFrame {
    /// The function's name as the trace prints it (`Router.match`, `async handle`), without
    /// `async ` / `new ` / `Object.`.
    pub function: Option<String>,
    /// The file as printed (absolute, `file://`, or relative); matched by its tail.
    pub file: String,
    pub line: Option<u32>,
}

/// A question, analysed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextQuery {
    /// The question as asked.
    pub text: String,
    /// The question without what carries no meaning: HTML comments, issue-template
    /// headings, checklists, environment tables, stack-trace lines (they are in `frames`).
    pub prose: String,
    /// Code identifiers written in the question (`validateToken`, `app.fetch`, `max_age`,
    /// anything in backticks), each once, in order.
    pub identifiers: Vec<String>,
    /// Quoted strings and error messages (`"cannot fetch user"`, `Error: cannot fetch user`),
    /// each once: code that holds one of them word for word is evidence.
    pub literals: Vec<String>,
    pub frames: Vec<StackFrame>,
}

/// Headings and labels of issue and pull-request templates: the heading's line carries no
/// meaning (the text under it does).
const TEMPLATE_HEADINGS: &[&str] = &[
    "describe the bug",
    "bug description",
    "bug report",
    "description",
    "summary",
    "what happened",
    "what is the problem",
    "what is the current behavior",
    "what is the expected behavior",
    "current behavior",
    "current behaviour",
    "expected behavior",
    "expected behaviour",
    "actual behavior",
    "actual behaviour",
    "expected result",
    "actual result",
    "steps to reproduce",
    "to reproduce",
    "reproduction",
    "minimal reproduction",
    "reproduction url",
    "link to reproduction",
    "repro",
    "environment",
    "system info",
    "versions",
    "version",
    "additional context",
    "additional information",
    "additional info",
    "other information",
    "screenshots",
    "logs",
    "relevant log output",
    "checklist",
    "motivation",
    "proposed solution",
    "alternatives",
    "alternatives considered",
    "possible solution",
    "validations",
    "severity",
    "which project does this relate to",
    "what version of",
    "what steps can reproduce",
    "what is expected",
    "what do you see instead",
    "what did you expect",
    "what happened instead",
    "which version",
    "link to minimal reproduction",
    "is this a regression",
    "is your feature request related to a problem",
    "describe the solution you'd like",
    "describe alternatives you've considered",
    "what kind of change does this pr introduce",
    "what is the new behavior",
    "does this pr introduce a breaking change",
    "related issues",
    "changes",
    "test plan",
    "types of changes",
];

/// Labels of an environment listing (`OS: Linux`, `Node version: 20`): the whole line is
/// the reporter's machine, not the code.
const ENVIRONMENT_LABELS: &[&str] = &[
    "os",
    "node",
    "node version",
    "node.js version",
    "npm version",
    "yarn version",
    "pnpm version",
    "browser",
    "browsers",
    "version",
    "package version",
    "typescript version",
    "runtime",
    "platform",
    "system",
    "binaries",
    "npmpackages",
    "cpu",
    "memory",
    "shell",
];

impl TextQuery {
    /// The first line of a question of several non-empty lines (an issue's or a pull
    /// request's title); `None` for a question of one line.
    pub fn title(&self) -> Option<&str> {
        let mut lines = self.prose.lines().map(str::trim).filter(|l| !l.is_empty());
        let first = lines.next()?;
        lines.next().map(|_| first)
    }

    /// The question without the plain words that name the project itself (`pino` in "how
    /// does pino redact fields", asked of pino, or "date-fns" of date-fns): they say which
    /// project the question is about, not which code, and a declaration called like the
    /// project (`function pino`) took the answer for them. A name written as code
    /// (`` `pino()` ``) stays, and so does a question with nothing else to search for.
    /// `names` are the project's ([`crate::project_names`]).
    pub fn without_project_name(&self, names: &[String]) -> std::borrow::Cow<'_, TextQuery> {
        use std::borrow::Cow;
        let names: Vec<String> = names
            .iter()
            .flat_map(|n| {
                let n = n.to_lowercase();
                // `discord.js` is called `discord` as often.
                let bare = n
                    .strip_suffix(".js")
                    .filter(|b| b.len() >= 3)
                    .map(String::from);
                std::iter::once(n).chain(bare)
            })
            .collect();
        if names.is_empty() {
            return Cow::Borrowed(self);
        }
        let names_the_project = |word: &str| {
            if word.starts_with('`') {
                return false;
            }
            let word = word
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            let word = word
                .strip_suffix("'s")
                .or_else(|| word.strip_suffix("’s"))
                .unwrap_or(&word);
            names.iter().any(|n| n == word)
        };
        // A line that names the project is written again without the name; the others
        // stay as they were, so an unchanged prose means nothing was named.
        let prose = self
            .prose
            .lines()
            .map(|line| {
                if line.split_whitespace().any(names_the_project) {
                    let kept: Vec<&str> = line
                        .split_whitespace()
                        .filter(|w| !names_the_project(w))
                        .collect();
                    kept.join(" ")
                } else {
                    line.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
            .trim()
            .to_string();
        if prose == self.prose || crate::search::content_words(&prose).trim().is_empty() {
            return Cow::Borrowed(self);
        }
        Cow::Owned(TextQuery {
            text: self.text.clone(),
            identifiers: identifiers(&prose),
            literals: literals(&prose),
            frames: self.frames.clone(),
            prose,
        })
    }

    /// Analyses `text` (see the fields).
    pub fn new(text: &str) -> TextQuery {
        let without_comments = strip_html_comments(text);
        let mut prose = String::new();
        let mut frames = Vec::new();
        for line in without_comments.lines() {
            let trimmed = line.trim();
            if let Some(frame) = stack_frame(trimmed) {
                frames.extend(frame);
                continue;
            }
            if is_boilerplate(trimmed) {
                continue;
            }
            prose.push_str(line);
            prose.push('\n');
        }
        let prose = prose.trim().to_string();
        TextQuery {
            identifiers: identifiers(&prose),
            literals: literals(&prose),
            frames,
            prose,
            text: text.to_string(),
        }
    }
}

fn strip_html_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        match rest[start..].find("-->") {
            Some(end) => rest = &rest[start + end + 3..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// A line that is template furniture: a template heading, a checklist item, a horizontal
/// rule, a code fence, an environment label.
fn is_boilerplate(line: &str) -> bool {
    if line.is_empty() {
        return false;
    }
    if line.starts_with("```") || line.starts_with("~~~") {
        return true;
    }
    if line
        .chars()
        .all(|c| matches!(c, '-' | '*' | '_' | '=' | ' '))
    {
        return true;
    }
    // A version alone (`4.8.5`, `v20.11.0`): the answer to a template's version question.
    let version = line.trim_start_matches(['v', 'V']);
    if version.contains('.') && version.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return true;
    }
    // `- [ ] I have searched the issues`, `* [x] …`.
    let item = line.trim_start_matches(['-', '*', '+']).trim_start();
    if item.starts_with("[ ]") || item.starts_with("[x]") || item.starts_with("[X]") {
        return true;
    }
    let heading = line
        .trim_start_matches('#')
        .trim()
        .trim_matches(|c: char| matches!(c, '*' | '_' | ':' | '?' | '.' | ' '))
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    // A template heading word for word, or, marked as a heading, one that begins like it:
    // `### Steps to reproduce the bug`, `**Expected behavior (optional)**`.
    let marked = line.starts_with('#') || line.starts_with("**");
    if TEMPLATE_HEADINGS
        .iter()
        .any(|h| heading == *h || (marked && heading.starts_with(h)))
    {
        return true;
    }
    // `OS: macOS 14`, `- Node version: 20.1`: a label from the list, then a value.
    if let Some((label, _)) = item.split_once(':') {
        let label = label
            .trim()
            .trim_matches(|c: char| matches!(c, '*' | '_'))
            .to_lowercase();
        if ENVIRONMENT_LABELS.contains(&label.as_str()) {
            return true;
        }
    }
    false
}

/// `at fn (file:line:col)`, `at file:line:col`, `at async fn (file:line)`: `None` when
/// `line` is no frame, `Some(None)` for a frame of Node itself or of a dependency, which
/// names nothing in the project.
fn stack_frame(line: &str) -> Option<Option<StackFrame>> {
    let rest = line.strip_prefix("at ")?;
    let (function, location) = match rest.rfind(" (") {
        Some(open) if rest.ends_with(')') => {
            (Some(rest[..open].trim()), &rest[open + 2..rest.len() - 1])
        }
        _ => (None, rest.trim()),
    };
    let location = location
        .strip_prefix("file://")
        .unwrap_or(location)
        .trim_end_matches(')');
    // `file:line:col` or `file:line`; a frame always has a line.
    let mut parts = location.rsplitn(3, ':');
    let last = parts.next()?;
    let (file, line) = match (parts.next(), parts.next()) {
        (Some(line), Some(file)) if line.parse::<u32>().is_ok() => (file, line.parse().ok()),
        (Some(file), None) if last.parse::<u32>().is_ok() => (file, last.parse().ok()),
        _ => return None,
    };
    if file.is_empty() || file.starts_with("node:") || file.contains("node_modules") {
        return Some(None);
    }
    let function = function
        .map(|f| {
            f.trim_start_matches("async ")
                .trim_start_matches("new ")
                .trim_start_matches("Object.")
                .to_string()
        })
        .filter(|f| !f.is_empty() && f != "<anonymous>");
    Some(Some(StackFrame {
        function,
        file: file.to_string(),
        line,
    }))
}

/// Words shaped like code: a case change inside the word, an `_`, a `.` between word
/// characters, a `$`, or anything written in backticks.
fn identifiers(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |word: &str| {
        let word = word.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'));
        if word.len() >= 2 && !out.iter().any(|w| w == word) {
            out.push(word.to_string());
        }
    };
    for (i, span) in text.split('`').enumerate() {
        if i % 2 == 1 && !span.contains('\n') {
            // Backticked: each identifier-like token of it (`app.get('/x')` → app.get).
            for token in
                span.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '$' | '.')))
            {
                push(token);
            }
            continue;
        }
        for token in span.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '$' | '.'))) {
            let token = token.trim_matches('.');
            let chars: Vec<char> = token.chars().collect();
            let camel = chars
                .windows(2)
                .any(|w| w[0].is_lowercase() && w[1].is_uppercase());
            let code_like = camel
                || token.contains('_')
                || token.contains('$')
                || (token.contains('.')
                    && token.split('.').all(|p| !p.is_empty())
                    && !token
                        .split('.')
                        .all(|p| p.chars().all(|c| c.is_ascii_digit())));
            if code_like {
                push(token);
            }
        }
    }
    out
}

/// Quoted strings of three or more characters, and error messages (`TypeError: x is not a
/// function` → `x is not a function`).
fn literals(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: &str| {
        let s = s.trim();
        if s.chars().count() >= 3
            && s.chars().any(char::is_alphabetic)
            && !out.iter().any(|o| o == s)
        {
            out.push(s.to_string());
        }
    };
    for quote in ['"', '\''] {
        // Apostrophes in prose (`don't`) would pair up across words: single quotes count
        // only when the quoted span is on one line and not followed by a letter.
        let parts: Vec<&str> = text.split(quote).collect();
        let mut i = 1;
        while i < parts.len().saturating_sub(1) {
            let inside = parts[i];
            let after = parts[i + 1].chars().next();
            let before = parts[i - 1].chars().last();
            let bounded = !before.is_some_and(char::is_alphanumeric)
                && !after.is_some_and(char::is_alphanumeric);
            if bounded && !inside.contains('\n') && inside.len() <= 200 {
                push(inside);
                i += 2;
            } else {
                i += 1;
            }
        }
    }
    for line in text.lines() {
        // `Error: …`, `TypeError: …`, `Uncaught RangeError: …`.
        if let Some(at) = line.find("Error: ") {
            let head = &line[..at];
            if head
                .split_whitespace()
                .last()
                .is_none_or(|w| w.chars().all(|c| c.is_alphanumeric() || c == '_'))
            {
                push(line[at + "Error: ".len()..].trim_end_matches('.'));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_is_searched_without_the_projects_name() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let prose = |q: &str, n: &[&str]| {
            TextQuery::new(q)
                .without_project_name(&names(n))
                .prose
                .clone()
        };
        assert_eq!(
            prose("How does Pino redact sensitive fields?", &["pino"]),
            "How does redact sensitive fields?"
        );
        assert_eq!(prose("pino's child loggers", &["pino"]), "child loggers");
        assert_eq!(
            prose("In date-fns, how is a date formatted", &["date-fns"]),
            "In how is a date formatted",
            "the whole name only: `date` stays"
        );
        assert_eq!(
            prose("how does discord.js shard", &["discord.js"]),
            "how does shard"
        );
        // A title and its description keep their lines.
        assert_eq!(
            prose(
                "koa: keep the slash\n\nThe koa router dropped it.",
                &["koa"]
            ),
            "keep the slash\n\nThe router dropped it."
        );
        // Written as code, or all there is to search for: kept.
        assert_eq!(
            prose("what does `pino()` return", &["pino"]),
            "what does `pino()` return"
        );
        assert_eq!(prose("what is pino?", &["pino"]), "what is pino?");
        assert_eq!(prose("how are levels set", &["pino"]), "how are levels set");
        assert_eq!(prose("how does pino redact", &[]), "how does pino redact");
    }

    #[test]
    fn a_question_of_several_lines_opens_with_its_title() {
        let issue = "Duplicate subdomain surfaced as a 500 error\n\nPicking a subdomain already in use\nsurfaced the raw constraint violation.";
        assert_eq!(
            TextQuery::new(issue).title(),
            Some("Duplicate subdomain surfaced as a 500 error")
        );
        assert_eq!(
            TextQuery::new("\n  fix the router  \n\n  when a path ends in a slash\n").title(),
            Some("fix the router")
        );
        assert_eq!(
            TextQuery::new("  how is a route matched  \n").title(),
            None,
            "one line: its own title"
        );
        assert_eq!(TextQuery::new("").title(), None);
    }

    fn text(q: &str) -> TextQuery {
        match Query::parse(q).unwrap() {
            Query::Text(t) => t,
            Query::Lookup(l) => panic!("{q:?} parsed as a lookup: {l:?}"),
        }
    }

    #[test]
    fn a_lookup_needs_the_equals_sign() {
        assert!(matches!(
            Query::parse("symbol = compose"),
            Ok(Query::Lookup(_))
        ));
        assert!(matches!(
            Query::parse("  symbol=compose"),
            Ok(Query::Lookup(_))
        ));
        for question in [
            "symbols exported by the router",
            "symbolic links",
            "symbolize",
            "symbol",
        ] {
            assert_eq!(text(question).text, question);
        }
        assert!(Query::parse("symbol = ").is_err());
    }

    #[test]
    fn lookup_of_takes_names_and_queries() {
        assert_eq!(Query::lookup_of("symbolize").unwrap().name, "symbolize");
        let q = Query::lookup_of("Router > match").unwrap();
        assert_eq!(
            (q.parents, q.name),
            (vec!["Router".to_string()], "match".to_string())
        );
        assert_eq!(
            Query::lookup_of("symbol = a.ts > f")
                .unwrap()
                .file
                .as_deref(),
            Some("a.ts")
        );
        assert!(Query::lookup_of("  ").is_err());
    }

    #[test]
    fn template_text_is_not_prose() {
        let bare = text("Cookies with a lowercase priority are rejected");
        let templated = text(
            "<!-- Please search existing issues first -->\n\
             ### Describe the bug\n\
             Cookies with a lowercase priority are rejected\n\
             ### Environment\n\
             - OS: macOS 14\n\
             - Node version: 20.11\n\
             ### Validations\n\
             - [x] I have searched the existing issues\n\
             - [ ] I can reproduce it\n",
        );
        assert_eq!(templated.prose, bare.prose);
    }

    #[test]
    fn identifiers_literals_and_frames() {
        let q = text(
            "Calling `app.fetch()` throws from parseBody when max_age is set:\n\
             ```\n\
             TypeError: cannot read properties of undefined\n\
                 at parseBody (/home/me/app/src/utils/body.ts:42:11)\n\
                 at async Hono.dispatch (file:///home/me/app/src/hono-base.ts:300:5)\n\
                 at node:internal/process/task_queues:95:5\n\
             ```\n\
             The message says \"invalid cookie name\". Don't retry.",
        );
        // `TypeError` is shaped like code too; the name channel finds nothing by it unless the
        // project declares it.
        assert_eq!(
            q.identifiers,
            ["app.fetch", "parseBody", "max_age", "TypeError"]
        );
        assert_eq!(
            q.literals,
            ["invalid cookie name", "cannot read properties of undefined"]
        );
        assert_eq!(
            q.frames,
            [
                StackFrame {
                    function: Some("parseBody".into()),
                    file: "/home/me/app/src/utils/body.ts".into(),
                    line: Some(42)
                },
                StackFrame {
                    function: Some("Hono.dispatch".into()),
                    file: "/home/me/app/src/hono-base.ts".into(),
                    line: Some(300)
                },
            ]
        );
        assert!(!q.prose.contains("at parseBody"));
    }
}
