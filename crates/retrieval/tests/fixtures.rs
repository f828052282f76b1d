//! Symbol lookup, answers and budgeted context on `fixtures/retrieval/auth`, a small
//! project shaped like the blueprint's authentication example.

use codectx_retrieval::{
    Answer, AnswerOptions, Detail, RetrievalError, Shown, Strategy, SymbolQuery, code_context,
    lookup, search_symbol,
};

mod common;

use common::auth_project as project;

/// The answer as an agent receives it: each content item with its priority, then the
/// structured fields.
fn render(answer: &Answer) -> String {
    let mut out = String::new();
    for item in &answer.content {
        out.push_str(&format!(
            "--- priority {:.2}\n{}\n",
            item.priority, item.text
        ));
    }
    out.push_str(&format!(
        "--- results: {:?}\n--- estimated {} / {} tokens, omitted {}, message {:?}\n",
        answer
            .results
            .iter()
            .map(|r| format!("{}:{}", r.file, r.name))
            .collect::<Vec<_>>(),
        answer.estimated_tokens,
        answer.budget,
        answer.omitted,
        answer.message
    ));
    out
}

fn answer(query: &str) -> Answer {
    search_symbol(project(), query, &AnswerOptions::default())
        .expect("a lookup query")
        .unwrap()
}

#[test]
fn lookup_by_name_parent_and_file() {
    for (name, query) in [
        ("by_name", "symbol = validateToken"),
        ("by_parent", "symbol = TokenService > validateToken"),
        (
            "by_file",
            "symbol = src/auth/tokenService.ts > TokenService > validateToken",
        ),
        ("ambiguous", "symbol = validate"),
        ("constant", "symbol = AUTH_TOKEN_EXPIRY"),
    ] {
        let a = answer(query);
        assert!(a.estimated_tokens <= a.budget);
        insta::assert_snapshot!(format!("lookup_{name}"), render(&a));
    }
}

/// `fixtures/retrieval/lookup-order`: nine things named `ref` — an exported function with
/// overloads, a class method, a local helper, an object-literal property, and the same names
/// in a spec and a type-test file. The lookup lists what an agent most likely means first
/// and the overloads as one match.
#[test]
fn lookup_orders_matches_by_what_is_meant() {
    let root = codectx_corpus::fixture("retrieval/lookup-order");
    let project = codectx_retrieval::Project::open(&root).unwrap();
    let query = SymbolQuery::parse("symbol = ref").unwrap().unwrap();
    let order: Vec<String> = lookup(&project, &query)
        .matches
        .iter()
        .map(|c| {
            format!(
                "{} ({}, lines {}-{})",
                c.breadcrumb, c.node_kind, c.start_line, c.end_line
            )
        })
        .collect();
    insta::assert_snapshot!(order.join("\n"));
}

#[test]
fn lookup_scopes_are_exact() {
    let p = project();
    let q = |s: &str| SymbolQuery::parse(s).unwrap().unwrap();
    // Two `validate` functions in two files; the file scope keeps one.
    assert_eq!(lookup(p, &q("symbol = validate")).matches.len(), 2);
    let scoped = lookup(p, &q("symbol = src/controllers/login.ts > validate")).matches;
    assert_eq!(scoped.len(), 1);
    assert_eq!(scoped[0].relative_path, "src/controllers/login.ts");
    // The parent chain must hold: validateToken is not a member of AuthMiddleware.
    assert!(
        lookup(p, &q("symbol = AuthMiddleware > validateToken"))
            .matches
            .is_empty()
    );
    // Exact names only: no prefix or case-insensitive matches.
    assert!(lookup(p, &q("symbol = validatetoken")).matches.is_empty());
    assert!(lookup(p, &q("symbol = validateTok")).matches.is_empty());
}

/// `Class.method`, as answers print qualified names, is `Class > method` when no symbol is
/// called so; its parent chain holds as in the `>` form.
#[test]
fn a_dotted_name_is_read_as_parent_and_name() {
    let p = project();
    let q = |s: &str| SymbolQuery::parse(s).unwrap().unwrap();
    let dotted = lookup(p, &q("symbol = TokenService.validateToken")).matches;
    assert_eq!(
        dotted,
        lookup(p, &q("symbol = TokenService > validateToken")).matches
    );
    assert_eq!(dotted.len(), 1);
    let scoped = lookup(
        p,
        &q("symbol = src/auth/tokenService.ts > TokenService.validateToken"),
    );
    assert_eq!(scoped.matches, dotted);
    assert!(
        lookup(p, &q("symbol = AuthMiddleware.validateToken"))
            .matches
            .is_empty()
    );
    let missed = lookup(p, &q("symbol = TokenService.validateTokn"));
    assert!(missed.matches.is_empty());
    assert_eq!(
        missed.closest.first().map(String::as_str),
        Some("validateToken")
    );
}

#[test]
fn no_match_lists_the_closest_names() {
    let a = answer("symbol = validateTokens");
    assert!(a.results.is_empty());
    insta::assert_snapshot!(render(&a));
}

#[test]
fn not_a_lookup_and_bad_paths() {
    assert!(search_symbol(project(), "token validation", &AnswerOptions::default()).is_none());
    let err = search_symbol(
        project(),
        "symbol = ../../etc/x.ts > y",
        &AnswerOptions::default(),
    )
    .unwrap()
    .unwrap_err();
    assert!(matches!(err, RetrievalError::OutsideRoot(_)));
}

#[test]
fn a_small_budget_leaves_files_out_and_says_so() {
    let options = AnswerOptions {
        budget: 200,
        call_depth: 1,
    };
    let a = search_symbol(project(), "symbol = validate", &options)
        .unwrap()
        .unwrap();
    assert!(a.estimated_tokens <= 200, "{}", a.estimated_tokens);
    assert_eq!((a.results.len(), a.omitted), (1, 1));
    assert!(a.message.as_deref().unwrap().contains("200-token budget"));
}

#[test]
fn a_result_too_large_for_the_budget_is_shown_as_its_outline() {
    // The budget one token short of the class's full answer: its snapshot no longer fits,
    // its declaration with the method bodies collapsed does.
    let query = "symbol = TokenService";
    let full = search_symbol(project(), query, &AnswerOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!(full.results[0].shown, Shown::Full);
    let options = AnswerOptions {
        budget: full.estimated_tokens - 1,
        call_depth: 1,
    };
    let a = search_symbol(project(), query, &options).unwrap().unwrap();
    assert!(
        a.estimated_tokens <= options.budget,
        "{}",
        a.estimated_tokens
    );
    assert_eq!((a.results.len(), a.omitted), (1, 0));
    assert_eq!(a.results[0].shown, Shown::Outline);
    insta::assert_snapshot!(render(&a));
}

fn ranked(names: &[&str]) -> Vec<&'static codectx_chunker::CodeChunk> {
    names
        .iter()
        .flat_map(|n| {
            lookup(
                project(),
                &SymbolQuery::parse(&format!("symbol = {n}"))
                    .unwrap()
                    .unwrap(),
            )
            .matches
        })
        .collect()
}

const CANDIDATES: &[&str] = &[
    "TokenService",
    "AuthMiddleware > verify",
    "LoginController > handle",
    "AuthConfig",
    "src/controllers/login.ts > validate",
    "BaseValidator",
    "JwtPayload",
    "AUTH_TOKEN_EXPIRY",
];

#[test]
fn breadth_fits_signatures_into_the_budget() {
    let ctx = code_context(project(), &ranked(CANDIDATES), Some(500), Strategy::Breadth);
    assert!(ctx.estimated_tokens <= 500);
    assert!(ctx.context_items.len() >= 5, "{}", ctx.context_items.len());
    assert!(
        ctx.context_items
            .iter()
            .all(|i| i.detail == Detail::Signature)
    );
    insta::assert_snapshot!(
        ctx.context_items
            .iter()
            .map(|i| i.text.as_str())
            .collect::<String>()
    );
    insta::assert_snapshot!(
        "breadth_500_summary",
        format!(
            "estimated {} truncated {} items {} suggestion {:?}",
            ctx.estimated_tokens,
            ctx.truncated,
            ctx.context_items.len(),
            ctx.suggestion
        )
    );
}

#[test]
fn depth_gives_fewer_symbols_with_bodies() {
    let candidates = ranked(CANDIDATES);
    let breadth = code_context(project(), &candidates, Some(400), Strategy::Breadth);
    let depth = code_context(project(), &candidates, Some(400), Strategy::Depth);
    assert!(depth.estimated_tokens <= 400);
    assert!(depth.truncated);
    let bodies = depth
        .context_items
        .iter()
        .filter(|i| i.detail == Detail::Body)
        .count();
    assert!(bodies > 0 && bodies < breadth.context_items.len());
    let all = code_context(project(), &candidates, Some(2000), Strategy::Depth);
    assert!(all.context_items.iter().all(|i| i.detail == Detail::Body) && !all.truncated);
    insta::assert_snapshot!(
        depth
            .context_items
            .iter()
            .map(|i| format!("[{:?}] {}", i.detail, i.text))
            .collect::<String>()
    );
}

#[test]
fn tiny_budget_truncates_and_suggests() {
    let ctx = code_context(project(), &ranked(CANDIDATES), Some(100), Strategy::Depth);
    assert!(ctx.truncated);
    assert!(ctx.estimated_tokens <= 100);
    assert!(
        !ctx.context_items.is_empty(),
        "the smallest symbols still fit"
    );
    let none = code_context(
        project(),
        &ranked(&["TokenService"]),
        Some(10),
        Strategy::Breadth,
    );
    assert!(none.context_items.is_empty());
    assert_eq!(none.estimated_tokens, 0);
    insta::assert_snapshot!(none.suggestion.unwrap());
}

#[test]
fn no_candidates_and_default_budget() {
    let empty = code_context(project(), &[], None, Strategy::Breadth);
    assert!(empty.context_items.is_empty());
    assert_eq!(empty.estimated_tokens, 0);
    assert!(!empty.truncated);
    assert_eq!(empty.max_tokens, 4_000);
}

/// Every query is parsed once into a lookup or a question (`fixtures/retrieval/queries`):
/// only `symbol`, spaces, then `=` makes a lookup; an issue's template text, stack frames,
/// identifiers and quoted messages are told apart.
#[test]
fn queries_are_parsed_once_into_lookups_or_questions() {
    let dir = codectx_corpus::fixture("retrieval/queries");
    let mut out = String::new();
    let lines = std::fs::read_to_string(dir.join("queries.txt")).unwrap();
    for line in lines.lines() {
        out.push_str(&format!(
            "{line:?}\n  {:?}\n",
            codectx_retrieval::Query::parse(line)
        ));
    }
    let issue = std::fs::read_to_string(dir.join("issue.md")).unwrap();
    out.push_str(&format!(
        "issue.md\n  {:#?}\n",
        codectx_retrieval::Query::parse(&issue)
    ));
    insta::assert_snapshot!(out);
}
