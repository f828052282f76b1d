//! One pass over oxc's AST that builds the `ParsedSymbol` tree.
//!
//! A stack of open symbols follows the walk: entering a declaration (or a named member, or
//! a multi-line callback) opens a symbol, leaving it closes the symbol into its parent.
//! Constructs whose symbol is opened by their context (the arrow of `const f = () => {}`,
//! the function of a method definition) are *claimed* by that context so the inner visit
//! does not open a second symbol. Anonymous functions get their name from a *hint* left by
//! the enclosing call, assignment or JSX attribute.

use std::collections::{HashMap, HashSet};

use oxc_ast::ast::*;
use oxc_ast_visit::{Visit, walk};
use oxc_semantic::Scoping;
use oxc_span::{GetSpan, Span};
use oxc_syntax::scope::ScopeFlags;

use crate::comments::Comments;
use crate::commonjs;
use crate::lines::LineIndex;
use crate::symbol::{ByteSpan, ImportInfo, LineRange, Modifier, Naming, ParsedSymbol, SymbolKind};

/// Longest name or signature kept before it is cut with `…`.
pub(crate) const MAX_NAME: usize = 80;
pub(crate) const MAX_SIGNATURE: usize = 400;
/// A non-body-bearing declaration longer than this gets its head (before the initializer)
/// as signature instead of its whole text.
pub(crate) const MAX_INLINE_SIGNATURE: usize = 160;
/// A function body larger than this (the chunker's 32K-token limit at 4 bytes per token)
/// cannot be one chunk even with its nested functions collapsed; its statements become
/// children the way a file's top-level statements become root items. Bundles wrapped in an
/// IIFE and the 50,000-line `createTypeChecker` of typescript.js are the cases in practice.
const OVERSIZED_BODY_BYTES: u32 = 128 * 1024;

pub(crate) fn extract(
    program: &Program<'_>,
    scoping: &Scoping,
    src: &str,
    lines: &LineIndex,
) -> (Vec<ParsedSymbol>, Vec<ImportInfo>) {
    let mut ex = Extractor {
        src,
        lines,
        comments: Comments::new(src, &program.comments),
        scoping,
        stack: vec![Frame::root()],
        claimed: HashSet::new(),
        hints: HashMap::new(),
        wrapper: None,
        import_of_symbol: vec![None; scoping.symbols_len()],
        imports: Vec::new(),
    };
    ex.collect_imports(program);
    ex.visit_program(program);
    let mut roots = std::mem::take(&mut ex.stack[0].sym.children);
    ex.add_standalone_comments(&mut roots, program);
    let mut roots = merge_overlapping(roots);
    for root in &mut roots {
        set_hierarchy(root, None, 0);
    }
    // The walk is close to source order, not exactly (a class's heritage before its members'
    // decorators…): sort, so consumers can binary-search a range.
    for import in &mut ex.imports {
        import.reference_offsets.sort_unstable();
    }
    (roots, ex.imports)
}

/// The whole file as one item, for files oxc could not recover anything from.
pub(crate) fn unparsed_item(src: &str, lines: &LineIndex) -> Vec<ParsedSymbol> {
    if src.trim().is_empty() {
        return Vec::new();
    }
    let range = LineRange {
        start: 1,
        end: lines.line_count(),
    };
    vec![leaf_item(
        "unparsed".into(),
        SymbolKind::Unparsed,
        range,
        ByteSpan::new(0, src.len() as u32),
    )]
}

/// A root item without modifiers, signature or children (comments, unparsed lines).
pub(crate) fn leaf_item(
    name: String,
    kind: SymbolKind,
    range: LineRange,
    span: ByteSpan,
) -> ParsedSymbol {
    ParsedSymbol {
        index: 0,
        name,
        declared_at: None,
        naming: Naming::Source,
        kind,
        depth: 0,
        parent_name: None,
        range,
        span,
        body: None,
        signature: String::new(),
        modifiers: Vec::new(),
        jsdoc: None,
        exported: false,
        children: Vec::new(),
    }
}

/// Adds an `unparsed` root item for each run of non-blank lines that no root item covers:
/// lines blanked for recovery, and lines oxc skipped while recovering from an error.
pub(crate) fn add_unparsed_lines(
    mut roots: Vec<ParsedSymbol>,
    src: &str,
    lines: &LineIndex,
) -> Vec<ParsedSymbol> {
    let count = lines.line_count();
    let mut covered = vec![false; count as usize + 2];
    for r in &roots {
        for l in r.range.start..=r.range.end.min(count) {
            covered[l as usize] = true;
        }
    }
    let mut uncovered: Vec<u32> = (1..=count)
        .filter(|&l| !covered[l as usize])
        .filter(|&l| !lines.lines_text(src, l, l).trim().is_empty())
        .collect();
    uncovered.sort_unstable();
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for l in uncovered {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == l => *end = l,
            _ => runs.push((l, l)),
        }
    }
    for (start, end) in runs {
        let span = ByteSpan::new(lines.line_start(start), lines.line_end(end, src));
        roots.push(leaf_item(
            "unparsed".into(),
            SymbolKind::Unparsed,
            LineRange { start, end },
            span,
        ));
    }
    roots.sort_by_key(|r| r.span.start);
    let mut roots = merge_overlapping(roots);
    for root in &mut roots {
        set_hierarchy(root, None, 0);
    }
    roots
}

struct Frame {
    sym: ParsedSymbol,
    /// Statements directly inside this frame are items (the file root, oversized bodies).
    statement_level: bool,
    /// Leading comments of a child must start after this offset.
    floor: u32,
    has_jsx: bool,
}

impl Frame {
    fn root() -> Self {
        Frame {
            sym: leaf_item(
                String::new(),
                SymbolKind::Statement,
                LineRange { start: 1, end: 1 },
                ByteSpan::new(0, 0),
            ),
            floor: 0,
            has_jsx: false,
            statement_level: true,
        }
    }
}

/// An `export` / `export default` around the declaration about to be opened.
struct Wrapper {
    span: Span,
    modifiers: Vec<Modifier>,
}

/// What the visitor knows when it opens a symbol.
struct Open {
    name: String,
    naming: Naming,
    kind: SymbolKind,
    /// The node's own extent (decorators included).
    node: Span,
    /// Where the signature starts (after decorators) and ends (before the body or initializer).
    sig: (u32, u32),
    body: Option<Span>,
    modifiers: Vec<Modifier>,
    /// [`ParsedSymbol::declared_at`].
    declared_at: Option<u32>,
}

struct Extractor<'s> {
    src: &'s str,
    lines: &'s LineIndex,
    comments: Comments<'s>,
    scoping: &'s Scoping,
    stack: Vec<Frame>,
    claimed: HashSet<u32>,
    /// Names for functions and classes the context names, by start: `(name, naming)`.
    hints: HashMap<u32, (String, Naming)>,
    wrapper: Option<Wrapper>,
    /// Index into `imports` of each import binding, by symbol (oxc numbers symbols from 0:
    /// every identifier reference is looked up here).
    import_of_symbol: Vec<Option<u32>>,
    imports: Vec<ImportInfo>,
}

impl<'s> Extractor<'s> {
    fn text(&self, span: Span) -> &'s str {
        &self.src[span.start as usize..span.end as usize]
    }

    /// True where statements are items of their own: at the file root and directly inside
    /// an oversized body.
    fn is_root_level(&self) -> bool {
        self.stack.last().is_some_and(|f| f.statement_level)
    }

    /// Walks an oversized function body statement by statement, each one an item of the
    /// open symbol. Returns false (and does nothing) for bodies of ordinary size.
    fn walk_oversized_body(&mut self, body: Option<&FunctionBody<'_>>) -> bool {
        let Some(body) = body else { return false };
        if body.span.size() <= OVERSIZED_BODY_BYTES || self.stack.len() < 2 {
            return false;
        }
        if let Some(top) = self.stack.last_mut() {
            top.statement_level = true;
        }
        for d in &body.directives {
            let name = truncate(self.signature(d.span.start, d.span.end), MAX_NAME);
            self.simple_item(SymbolKind::Expression, name, d.span, Vec::new());
        }
        for stmt in &body.statements {
            self.root_statement(stmt);
        }
        true
    }

    fn top_kind(&self) -> SymbolKind {
        self.stack
            .last()
            .map_or(SymbolKind::Statement, |f| f.sym.kind)
    }

    fn is_multiline(&self, span: Span) -> bool {
        self.src[span.start as usize..span.end as usize].contains('\n')
    }

    // ---- opening and closing symbols -------------------------------------------------

    fn open(&mut self, o: Open) {
        let (outer, mut modifiers) = match self.wrapper.take() {
            Some(w) => (
                Span::new(w.span.start.min(o.node.start), w.span.end.max(o.node.end)),
                w.modifiers,
            ),
            None => (o.node, Vec::new()),
        };
        modifiers.extend(o.modifiers);
        modifiers.sort();
        modifiers.dedup();
        let floor = self.stack.last().map_or(0, |f| f.floor);
        let (start, jsdoc) = self.comments.leading(outer.start, floor);
        let span = ByteSpan::new(start, outer.end);
        let exported = modifiers.contains(&Modifier::Exported);
        let sym = ParsedSymbol {
            index: 0,
            name: o.name,
            declared_at: o.declared_at,
            naming: o.naming,
            kind: o.kind,
            depth: 0,
            parent_name: None,
            range: LineRange {
                start: self.lines.line_of(start),
                end: self.lines.end_line_of(start, outer.end),
            },
            span,
            body: o.body.map(|b| ByteSpan::new(b.start, b.end)),
            signature: self.signature(o.sig.0, o.sig.1),
            modifiers,
            jsdoc,
            exported,
            children: Vec::new(),
        };
        self.stack.push(Frame {
            floor: outer.start,
            sym,
            has_jsx: false,
            statement_level: false,
        });
    }

    fn close(&mut self) {
        let Some(mut frame) = self.stack.pop() else {
            return;
        };
        if frame.has_jsx
            && frame.sym.kind == SymbolKind::Function
            && frame.sym.name.starts_with(|c: char| c.is_ascii_uppercase())
        {
            frame.sym.kind = SymbolKind::Component;
        }
        if let Some(parent) = self.stack.last_mut() {
            parent.has_jsx |= frame.has_jsx;
            parent.floor = frame.sym.span.end;
            parent.sym.children.push(frame.sym);
        }
    }

    /// Opens a symbol, walks `inner` inside it, closes it.
    fn scoped(&mut self, o: Open, inner: impl FnOnce(&mut Self)) {
        self.open(o);
        inner(self);
        self.close();
    }

    /// Whitespace-normalized source between `start` and `end`, without a trailing `{`, `=>`,
    /// `=`, `;` or `,`.
    fn signature(&self, start: u32, end: u32) -> String {
        if start >= end {
            return String::new();
        }
        let (mut out, complete) =
            collapse_whitespace(self.text(Span::new(start, end)), MAX_SIGNATURE);
        // Trailing punctuation only matters when the whole text fit: a cut text ends in `…`.
        if complete {
            while let Some(len) = ["=>", "{", "=", ";", ",", "(", "."].iter().find_map(|t| {
                let trimmed = out.trim_end();
                trimmed.strip_suffix(t).map(|s| s.trim_end().len())
            }) {
                out.truncate(len);
            }
        }
        truncate(out, MAX_SIGNATURE)
    }

    /// Signature end for a declaration with an optional initializer: the whole text when
    /// short, else the text before the initializer.
    fn head_or_all(&self, start: u32, init_start: Option<u32>, end: u32) -> u32 {
        match init_start {
            Some(init)
                if end - start > MAX_INLINE_SIGNATURE as u32
                    || self.is_multiline(Span::new(init, end)) =>
            {
                init
            }
            _ => end,
        }
    }

    // ---- imports ------------------------------------------------------------------------

    /// Registers every import binding before the walk: references may precede the import.
    fn collect_imports(&mut self, program: &Program<'_>) {
        for stmt in &program.body {
            match stmt {
                Statement::ImportDeclaration(d) => {
                    let ids: Vec<&BindingIdentifier> = d
                        .specifiers
                        .iter()
                        .flatten()
                        .map(|s| match s {
                            ImportDeclarationSpecifier::ImportSpecifier(s) => &s.local,
                            ImportDeclarationSpecifier::ImportDefaultSpecifier(s) => &s.local,
                            ImportDeclarationSpecifier::ImportNamespaceSpecifier(s) => &s.local,
                        })
                        .collect();
                    self.add_import(d.span, d.source.value.as_str(), &ids);
                }
                Statement::TSImportEqualsDeclaration(d) => {
                    let source = match &d.module_reference {
                        TSModuleReference::ExternalModuleReference(r) => {
                            r.expression.value.to_string()
                        }
                        other => self.text(other.span()).to_string(),
                    };
                    self.add_import(d.span, &source, &[&d.id]);
                }
                Statement::VariableDeclaration(d) => {
                    if let Some(source) = require_declaration_source(d) {
                        let mut ids = Vec::new();
                        for decl in &d.declarations {
                            collect_binding_ids(&decl.id, &mut ids);
                        }
                        self.add_import(d.span, source, &ids);
                    }
                }
                Statement::ExpressionStatement(e) => {
                    if let Some(source) = commonjs::require_source(&e.expression) {
                        self.add_import(e.span, source, &[]);
                    }
                }
                _ => {}
            }
        }
    }

    fn add_import(&mut self, span: Span, source: &str, ids: &[&BindingIdentifier]) {
        let index = self.imports.len();
        for id in ids {
            if let Some(slot) = id
                .symbol_id
                .get()
                .and_then(|s| self.import_of_symbol.get_mut(s.index()))
            {
                *slot = Some(index as u32);
            }
        }
        self.imports.push(ImportInfo {
            span: ByteSpan::new(span.start, span.end),
            source: source.to_string(),
            local_names: ids.iter().map(|id| id.name.to_string()).collect(),
            imported: Vec::new(),
            reference_offsets: Vec::new(),
        });
    }

    fn import_item(&mut self, span: Span, source: &str) {
        self.scoped(
            Open {
                name: format!("import:{source}"),
                naming: Naming::Source,
                kind: SymbolKind::Import,
                node: span,
                sig: (span.start, span.end),
                body: None,
                modifiers: Vec::new(),
                declared_at: None,
            },
            |_| {},
        );
    }

    // ---- root items ---------------------------------------------------------------------

    fn root_statement(&mut self, stmt: &Statement<'_>) {
        let before = self.stack.last().map_or(0, |f| f.sym.children.len());
        let span = stmt.span();
        match stmt {
            Statement::ImportDeclaration(d) => self.import_item(d.span, d.source.value.as_str()),
            Statement::ExportAllDeclaration(d) => self.simple_item(
                SymbolKind::ReExport,
                format!("re-export:{}", d.source.value),
                d.span,
                vec![Modifier::Exported],
            ),
            Statement::ExportFromDeclaration(d) => self.simple_item(
                SymbolKind::ReExport,
                format!("re-export:{}", d.source.value),
                d.span,
                vec![Modifier::Exported],
            ),
            Statement::ExportNamedDeclaration(d) => {
                let name = truncate(self.signature(d.span.start, d.span.end), MAX_NAME);
                self.open(self.item(SymbolKind::Export, name, d.span, vec![Modifier::Exported]));
                walk::walk_export_named_declaration(self, d);
                self.close();
            }
            Statement::ExportDeclaration(d) => {
                self.wrapper = Some(Wrapper {
                    span: d.span,
                    modifiers: vec![Modifier::Exported],
                });
                self.visit_declaration(&d.declaration);
            }
            Statement::ExportDefaultDeclaration(d) => self.export_default(d),
            Statement::TSExportAssignment(d) => {
                self.open(self.item(
                    SymbolKind::Export,
                    "export =".into(),
                    d.span,
                    vec![Modifier::Exported],
                ));
                self.visit_expression(&d.expression);
                self.close();
            }
            Statement::TSNamespaceExportDeclaration(d) => {
                let name = format!("export as namespace {}", d.id.name);
                self.simple_item(SymbolKind::Export, name, d.span, vec![Modifier::Exported]);
            }
            Statement::ExpressionStatement(e) => self.root_expression(e),
            _ if stmt.is_declaration() => {
                if let Some(decl) = stmt.as_declaration() {
                    self.visit_declaration(decl);
                }
            }
            _ => {
                let head_end = statement_head_end(stmt);
                let name = truncate(self.signature(span.start, head_end), MAX_NAME);
                let mut o = self.item(SymbolKind::Statement, name, span, Vec::new());
                o.sig = (span.start, head_end);
                self.open(o);
                walk::walk_statement(self, stmt);
                self.close();
            }
        }
        // Every top-level statement yields exactly one root item, whatever the branch above did.
        self.wrapper = None;
        if self.stack.last().map_or(0, |f| f.sym.children.len()) == before {
            let name = truncate(self.signature(span.start, span.end), MAX_NAME);
            self.simple_item(SymbolKind::Statement, name, span, Vec::new());
        }
    }

    fn item(&self, kind: SymbolKind, name: String, span: Span, modifiers: Vec<Modifier>) -> Open {
        Open {
            name,
            naming: Naming::Source,
            kind,
            node: span,
            sig: (span.start, span.end),
            body: None,
            modifiers,
            declared_at: None,
        }
    }

    fn simple_item(
        &mut self,
        kind: SymbolKind,
        name: String,
        span: Span,
        modifiers: Vec<Modifier>,
    ) {
        let o = self.item(kind, name, span, modifiers);
        self.scoped(o, |_| {});
    }

    fn export_default(&mut self, d: &ExportDefaultDeclaration<'_>) {
        self.wrapper = Some(Wrapper {
            span: d.span,
            modifiers: vec![Modifier::Exported, Modifier::Default],
        });
        match &d.declaration {
            ExportDefaultDeclarationKind::FunctionDeclaration(f) => {
                self.visit_function(f, ScopeFlags::Function)
            }
            ExportDefaultDeclarationKind::ClassDeclaration(c) => self.visit_class(c),
            ExportDefaultDeclarationKind::TSInterfaceDeclaration(i) => {
                self.visit_ts_interface_declaration(i)
            }
            other => {
                let Some(expr) = other.as_expression() else {
                    return;
                };
                let inner = unwrap_expr(expr);
                if let Some(o) = self.function_valued(
                    "default".into(),
                    inner.span().start,
                    d.span,
                    inner,
                    Some(inner.span().start),
                ) {
                    self.scoped(o, |s| s.visit_expression(expr));
                } else {
                    let o = self.item(SymbolKind::Export, "default".into(), d.span, Vec::new());
                    self.scoped(o, |s| s.visit_expression(expr));
                }
            }
        }
    }

    fn root_expression(&mut self, e: &ExpressionStatement<'_>) {
        if let Some(source) = commonjs::require_source(&e.expression) {
            return self.import_item(e.span, source);
        }
        if let Some((name, right)) = commonjs::export_assignment(&e.expression) {
            let right = unwrap_expr(right);
            self.wrapper = Some(Wrapper {
                span: e.span,
                modifiers: vec![Modifier::Exported],
            });
            let declared_at = Some(e.span.start);
            let o = match self.function_valued(
                commonjs::declared_name(name.clone(), right),
                e.span.start,
                e.span,
                right,
                declared_at,
            ) {
                Some(o) => o,
                None => {
                    // Exporting what another statement declared is an export list
                    // entry, not a declaration.
                    let kind = if name == commonjs::MODULE_EXPORTS
                        || matches!(
                            right,
                            Expression::ObjectExpression(_) | Expression::Identifier(_)
                        ) {
                        SymbolKind::Export
                    } else {
                        SymbolKind::Variable
                    };
                    let mut o = self.item(kind, name, e.span, Vec::new());
                    o.declared_at = declared_at;
                    o.sig = (
                        e.span.start,
                        self.head_or_all(e.span.start, Some(right.span().start), e.span.end),
                    );
                    o
                }
            };
            return self.scoped(o, |s| s.visit_expression(&e.expression));
        }
        // `Parser.prototype.parse = function …` and `app.handle = function handle …`: how
        // code before classes declares methods. The method is named as a class's is shown,
        // `Parser.parse` and `app.handle` (its object says whose method it is), not by the
        // whole statement. (A class assigned so stays an expression: the graph declares
        // classes by their own names.)
        if let Some((member, right)) = commonjs::method_assignment(&e.expression)
            && let Some(o) = self.function_valued(
                self.method_name(member),
                e.span.start,
                e.span,
                right,
                Some(member.property.span.start),
            )
        {
            let o = Open {
                kind: SymbolKind::Method,
                ..o
            };
            return self.scoped(o, |s| s.visit_expression(&e.expression));
        }
        let name = truncate(self.signature(e.span.start, e.span.end), MAX_NAME);
        let o = self.item(SymbolKind::Expression, name, e.span, Vec::new());
        self.scoped(o, |s| s.visit_expression(&e.expression));
    }

    /// `A.prototype.m` → `A.m`, `app.m` → `app.m`: a prototype's method is its
    /// constructor's.
    fn method_name(&self, member: &StaticMemberExpression<'_>) -> String {
        let owner = commonjs::method_owner(member).0.span();
        let owner = self.signature(owner.start, owner.end);
        truncate(format!("{owner}.{}", member.property.name), MAX_NAME)
    }

    /// A symbol for `name = <expr>` when `expr` is a function, class or wrapped component,
    /// claiming the inner node so it does not open a second symbol. `sig_start` is where the
    /// signature text begins (e.g. the `const` keyword).
    fn function_valued(
        &mut self,
        name: String,
        sig_start: u32,
        node: Span,
        expr: &Expression<'_>,
        declared_at: Option<u32>,
    ) -> Option<Open> {
        let (func, wrapped) = match expr {
            Expression::CallExpression(call) if is_component_wrapper(&call.callee) => (
                call.arguments
                    .first()
                    .and_then(|a| a.as_expression())
                    .map(unwrap_expr)?,
                true,
            ),
            e => (e, false),
        };
        let (kind, body, mut modifiers) = match func {
            Expression::ArrowFunctionExpression(a) => {
                self.claimed.insert(a.span.start);
                (
                    SymbolKind::Function,
                    arrow_body(self.src, a),
                    async_modifier(a.r#async),
                )
            }
            Expression::FunctionExpression(f) => {
                self.claimed.insert(f.span.start);
                let mut m = async_modifier(f.r#async);
                if f.generator {
                    m.push(Modifier::Generator);
                }
                (
                    SymbolKind::Function,
                    f.body.as_ref().map_or(f.span, |b| b.span),
                    m,
                )
            }
            Expression::ClassExpression(c) => {
                self.claimed.insert(c.span.start);
                let kind = if extends_react_component(c) {
                    SymbolKind::Component
                } else {
                    SymbolKind::Class
                };
                let mut m = Vec::new();
                if c.r#abstract {
                    m.push(Modifier::Abstract);
                }
                (kind, c.body.span, m)
            }
            _ => return None,
        };
        // A nested `forwardRef(memo(...))` still yields one component.
        let kind = if wrapped { SymbolKind::Component } else { kind };
        modifiers.dedup();
        Some(Open {
            name,
            naming: Naming::Source,
            kind,
            node,
            sig: (sig_start, body.start),
            body: Some(body),
            modifiers,
            declared_at,
        })
    }

    /// Comments outside every root item: a comment on a line a root item already occupies
    /// extends that item; the others group into standalone comment items (a blank line
    /// ends a group).
    fn add_standalone_comments(&self, roots: &mut Vec<ParsedSymbol>, program: &Program<'_>) {
        let mut items: Vec<ParsedSymbol> = Vec::new();
        let mut covered = roots.iter().map(|r| (r.span, r.range)).collect::<Vec<_>>();
        if let Some(h) = &program.hashbang {
            covered.push((
                ByteSpan::new(h.span.start, h.span.end),
                self.line_range(h.span.start, h.span.end),
            ));
            items.push(self.comment_item(h.span.start, h.span.end, "#!".into()));
        }
        covered.sort_by_key(|(s, _)| s.start);
        let mut group: Option<(u32, u32)> = None;
        let flush = |group: &mut Option<(u32, u32)>, items: &mut Vec<ParsedSymbol>| {
            if let Some((s, e)) = group.take() {
                items.push(self.comment_item(s, e, comment_name(self.text(Span::new(s, e)))));
            }
        };
        for (start, end) in self.comments.spans() {
            let i = covered.partition_point(|(s, _)| s.start <= start);
            if i > 0 && covered[i - 1].0.end > start {
                continue; // inside a root item
            }
            let line = self.lines.line_of(start);
            if i > 0 && covered[i - 1].1.end >= line {
                // Trailing comment of the item before it: stretch that item over it.
                let owner = covered[i - 1].0;
                if let Some(root) = roots.iter_mut().find(|r| r.span == owner) {
                    root.span.end = root.span.end.max(end);
                    root.range.end = root.range.end.max(self.lines.end_line_of(start, end));
                }
                continue;
            }
            match group {
                Some((gs, ge)) if self.comments_adjacent(ge, start) => group = Some((gs, end)),
                _ => {
                    flush(&mut group, &mut items);
                    group = Some((start, end));
                }
            }
        }
        flush(&mut group, &mut items);
        roots.extend(items);
        roots.sort_by_key(|r| r.span.start);
    }

    fn comments_adjacent(&self, prev_end: u32, next_start: u32) -> bool {
        let gap = self.text(Span::new(prev_end, next_start));
        gap.bytes().all(|b| b.is_ascii_whitespace())
            && gap.bytes().filter(|&b| b == b'\n').count() <= 1
    }

    fn line_range(&self, start: u32, end: u32) -> LineRange {
        LineRange {
            start: self.lines.line_of(start),
            end: self.lines.end_line_of(start, end),
        }
    }

    fn comment_item(&self, start: u32, end: u32, name: String) -> ParsedSymbol {
        leaf_item(
            name,
            SymbolKind::Comment,
            self.line_range(start, end),
            ByteSpan::new(start, end),
        )
    }

    // ---- nested constructs ----------------------------------------------------------------

    /// A function or arrow not named by its context: a symbol when it spans several lines
    /// (one-liners like `x => x * 2` stay part of their parent) or an export wraps it.
    fn anonymous_function(
        &mut self,
        span: Span,
        id: Option<&str>,
        body: Option<Span>,
        modifiers: Vec<Modifier>,
        walk: impl FnOnce(&mut Self),
    ) {
        let hint = self.hints.remove(&span.start);
        if self.wrapper.is_none() && !self.is_multiline(span) {
            return walk(self);
        }
        let (name, naming) = match (id, hint) {
            (Some(id), _) => (id.to_string(), Naming::Source),
            (None, Some(hint)) => hint,
            (None, None) => (crate::ANONYMOUS.to_string(), Naming::Anonymous),
        };
        let sig_end = body.map_or(span.end, |b| b.start);
        let o = Open {
            name,
            naming,
            kind: SymbolKind::Function,
            node: span,
            sig: (span.start, sig_end),
            body,
            modifiers,
            declared_at: None,
        };
        self.scoped(o, walk);
    }

    fn hint_callback(&mut self, callee: &Expression<'_>, args: &[Argument<'_>], prefix: &str) {
        for arg in args {
            if let Some(e) = arg.as_expression().map(unwrap_expr)
                && matches!(
                    e,
                    Expression::ArrowFunctionExpression(_) | Expression::FunctionExpression(_)
                )
            {
                let name = format!(
                    "{prefix}{}{}",
                    callee_name(self.src, callee),
                    crate::CALLBACK_SUFFIX
                );
                self.hints.insert(e.span().start, (name, Naming::Callback));
            }
        }
    }

    fn declarator_symbol(
        &mut self,
        decl: &VariableDeclaration<'_>,
        d: &VariableDeclarator<'_>,
        node: Span,
    ) {
        let name = binding_names(&d.id).join(", ");
        let sig_start = if decl.declarations.len() == 1 {
            decl.span.start
        } else {
            d.span.start
        };
        let declared_at = match &d.id {
            BindingPattern::BindingIdentifier(id) => Some(id.span.start),
            _ => None,
        };
        let init = d.init.as_ref().map(unwrap_expr);
        let mut o = match init
            .and_then(|e| self.function_valued(name.clone(), sig_start, node, e, declared_at))
        {
            Some(o) => o,
            None => {
                let kind = if decl.kind == VariableDeclarationKind::Const {
                    SymbolKind::Const
                } else {
                    SymbolKind::Variable
                };
                let end = if decl.declarations.len() == 1 {
                    node.end
                } else {
                    d.span.end
                };
                let sig_end =
                    self.head_or_all(sig_start, d.init.as_ref().map(|i| i.span().start), end);
                Open {
                    name,
                    naming: Naming::Source,
                    kind,
                    node,
                    sig: (sig_start, sig_end),
                    body: None,
                    modifiers: Vec::new(),
                    declared_at,
                }
            }
        };
        if decl.declare {
            o.modifiers.push(Modifier::Declare);
        }
        if o.kind == SymbolKind::Function
            && d.type_annotation
                .as_ref()
                .is_some_and(|t| is_component_type(self.text(t.span)))
        {
            o.kind = SymbolKind::Component;
        }
        self.scoped(o, |s| s.visit_variable_declarator(d));
    }

    /// A class or class member: its signature runs from after its decorators to its body
    /// (or its end, without one).
    fn member_open(
        &self,
        name: String,
        kind: SymbolKind,
        node: Span,
        decorators: &[Decorator<'_>],
        body: Option<Span>,
        modifiers: Vec<Modifier>,
    ) -> Open {
        let sig_start = after_decorators(self.src, node.start, decorators);
        let sig_end = body.map_or(node.end, |b| b.start);
        Open {
            name,
            naming: Naming::Source,
            kind,
            node,
            sig: (sig_start, sig_end),
            body,
            modifiers,
            declared_at: None,
        }
    }
}

impl<'a> Visit<'a> for Extractor<'_> {
    fn visit_program(&mut self, program: &Program<'a>) {
        for d in &program.directives {
            let name = truncate(self.signature(d.span.start, d.span.end), MAX_NAME);
            self.simple_item(SymbolKind::Expression, name, d.span, Vec::new());
        }
        for stmt in &program.body {
            self.root_statement(stmt);
        }
    }

    fn visit_identifier_reference(&mut self, it: &IdentifierReference<'a>) {
        let symbol = it
            .reference_id
            .get()
            .and_then(|r| self.scoping.get_reference(r).symbol_id());
        if let Some(&Some(index)) = symbol.and_then(|s| self.import_of_symbol.get(s.index())) {
            self.imports[index as usize]
                .reference_offsets
                .push(it.span.start);
        }
    }

    fn visit_jsx_element(&mut self, it: &JSXElement<'a>) {
        if let Some(top) = self.stack.last_mut() {
            top.has_jsx = true;
        }
        walk::walk_jsx_element(self, it);
    }

    fn visit_jsx_fragment(&mut self, it: &JSXFragment<'a>) {
        if let Some(top) = self.stack.last_mut() {
            top.has_jsx = true;
        }
        walk::walk_jsx_fragment(self, it);
    }

    fn visit_variable_declaration(&mut self, decl: &VariableDeclaration<'a>) {
        let root = self.is_root_level();
        if root && let Some(source) = require_declaration_source(decl) {
            self.wrapper = None;
            self.import_item(decl.span, source);
            return;
        }
        let node = match &self.wrapper {
            Some(w) => Span::new(
                w.span.start.min(decl.span.start),
                w.span.end.max(decl.span.end),
            ),
            None => decl.span,
        };
        if let [d] = decl.declarations.as_slice() {
            if root
                || d.init
                    .as_ref()
                    .is_some_and(|i| is_function_like(unwrap_expr(i)))
            {
                return self.declarator_symbol(decl, d, node);
            }
            return walk::walk_variable_declaration(self, decl);
        }
        if root {
            let names: Vec<String> = decl
                .declarations
                .iter()
                .flat_map(|d| binding_names(&d.id))
                .collect();
            let kind = if decl.kind == VariableDeclarationKind::Const {
                SymbolKind::Const
            } else {
                SymbolKind::Variable
            };
            let sig_end = self.head_or_all(decl.span.start, None, decl.span.end);
            let mut modifiers = Vec::new();
            if decl.declare {
                modifiers.push(Modifier::Declare);
            }
            self.open(Open {
                name: truncate(names.join(", "), MAX_NAME),
                naming: Naming::Source,
                kind,
                node,
                sig: (decl.span.start, sig_end),
                body: None,
                modifiers,
                declared_at: None,
            });
        }
        for d in &decl.declarations {
            if d.init
                .as_ref()
                .is_some_and(|i| is_function_like(unwrap_expr(i)))
            {
                self.declarator_symbol(decl, d, d.span);
            } else {
                self.visit_variable_declarator(d);
            }
        }
        if root {
            self.close();
        }
    }

    fn visit_function(&mut self, f: &Function<'a>, flags: ScopeFlags) {
        if self.claimed.remove(&f.span.start) {
            if !self.walk_oversized_body(f.body.as_deref()) {
                walk::walk_function(self, f, flags);
            }
            return;
        }
        let mut modifiers = async_modifier(f.r#async);
        if f.generator {
            modifiers.push(Modifier::Generator);
        }
        if f.declare {
            modifiers.push(Modifier::Declare);
        }
        let body = f.body.as_ref().map(|b| b.span);
        match f.r#type {
            FunctionType::FunctionDeclaration | FunctionType::TSDeclareFunction => {
                let name =
                    f.id.as_ref()
                        .map_or_else(|| "default".to_string(), |id| id.name.to_string());
                let o = Open {
                    name,
                    naming: Naming::Source,
                    kind: SymbolKind::Function,
                    node: f.span,
                    sig: (f.span.start, body.map_or(f.span.end, |b| b.start)),
                    body,
                    modifiers,
                    declared_at: Some(crate::declared_at(f.id.as_ref(), f.span)),
                };
                self.scoped(o, |s| {
                    if !s.walk_oversized_body(f.body.as_deref()) {
                        walk::walk_function(s, f, flags)
                    }
                });
            }
            _ => {
                let id = f.id.as_ref().map(|id| id.name.as_str());
                self.anonymous_function(f.span, id, body, modifiers, |s| {
                    if !s.walk_oversized_body(f.body.as_deref()) {
                        walk::walk_function(s, f, flags)
                    }
                });
            }
        }
    }

    fn visit_arrow_function_expression(&mut self, a: &ArrowFunctionExpression<'a>) {
        if self.claimed.remove(&a.span.start) {
            if !self.walk_oversized_body(arrow_block(a)) {
                walk::walk_arrow_function_expression(self, a);
            }
            return;
        }
        self.anonymous_function(
            a.span,
            None,
            Some(arrow_body(self.src, a)),
            async_modifier(a.r#async),
            |s| {
                if !s.walk_oversized_body(arrow_block(a)) {
                    walk::walk_arrow_function_expression(s, a)
                }
            },
        );
    }

    fn visit_class(&mut self, c: &Class<'a>) {
        if self.claimed.remove(&c.span.start) {
            return walk::walk_class(self, c);
        }
        let hint = self.hints.remove(&c.span.start);
        // The class declares its own name, or `default` when an export wraps it.
        let declared_at = (c.id.is_some() || (hint.is_none() && self.wrapper.is_some()))
            .then(|| crate::declared_at(c.id.as_ref(), c.span));
        let (name, naming) = match (&c.id, hint) {
            (Some(id), _) => (id.name.to_string(), Naming::Source),
            (None, Some(hint)) => hint,
            // `export default class {}` is imported as `default`.
            (None, None) if self.wrapper.is_some() => ("default".into(), Naming::Source),
            (None, None) => ("anonymous class".into(), Naming::Anonymous),
        };
        let kind = if extends_react_component(c) {
            SymbolKind::Component
        } else {
            SymbolKind::Class
        };
        let mut modifiers = Vec::new();
        if c.r#abstract {
            modifiers.push(Modifier::Abstract);
        }
        if c.declare {
            modifiers.push(Modifier::Declare);
        }
        let node = decorated_span(c.span, &c.decorators);
        let o = Open {
            naming,
            declared_at,
            ..self.member_open(
                name,
                kind,
                node,
                &c.decorators,
                Some(c.body.span),
                modifiers,
            )
        };
        self.scoped(o, |s| walk::walk_class(s, c));
    }

    fn visit_method_definition(&mut self, m: &MethodDefinition<'a>) {
        let kind = match m.kind {
            MethodDefinitionKind::Constructor => SymbolKind::Constructor,
            MethodDefinitionKind::Method => SymbolKind::Method,
            MethodDefinitionKind::Get => SymbolKind::Getter,
            MethodDefinitionKind::Set => SymbolKind::Setter,
        };
        let mut modifiers = member_modifiers(
            m.r#static,
            m.accessibility,
            m.r#override,
            m.optional,
            &m.key,
        );
        modifiers.extend(async_modifier(m.value.r#async));
        if m.value.generator {
            modifiers.push(Modifier::Generator);
        }
        match m.kind {
            MethodDefinitionKind::Get => modifiers.push(Modifier::Get),
            MethodDefinitionKind::Set => modifiers.push(Modifier::Set),
            _ => {}
        }
        if m.r#type == MethodDefinitionType::TSAbstractMethodDefinition {
            modifiers.push(Modifier::Abstract);
        }
        self.claimed.insert(m.value.span.start);
        let body = m.value.body.as_ref().map(|b| b.span);
        let name = property_key_name(self.src, &m.key);
        let node = decorated_span(m.span, &m.decorators);
        let mut o = self.member_open(name, kind, node, &m.decorators, body, modifiers);
        o.declared_at = Some(m.key.span().start);
        self.scoped(o, |s| walk::walk_method_definition(s, m));
    }

    fn visit_property_definition(&mut self, p: &PropertyDefinition<'a>) {
        let mut modifiers = member_modifiers(
            p.r#static,
            p.accessibility,
            p.r#override,
            p.optional,
            &p.key,
        );
        if p.readonly {
            modifiers.push(Modifier::Readonly);
        }
        if p.declare {
            modifiers.push(Modifier::Declare);
        }
        if p.r#type == PropertyDefinitionType::TSAbstractPropertyDefinition {
            modifiers.push(Modifier::Abstract);
        }
        let name = property_key_name(self.src, &p.key);
        let declared_at = Some(p.key.span().start);
        let node = decorated_span(p.span, &p.decorators);
        let sig_start = after_decorators(self.src, node.start, &p.decorators);
        let o = match p
            .value
            .as_ref()
            .map(unwrap_expr)
            .and_then(|v| self.function_valued(name.clone(), sig_start, node, v, declared_at))
        {
            Some(mut o) => {
                if o.kind == SymbolKind::Function {
                    o.kind = SymbolKind::Method;
                }
                o.modifiers.extend(modifiers);
                o
            }
            None => {
                let sig_end = self.head_or_all(
                    sig_start,
                    p.value.as_ref().map(|v| v.span().start),
                    p.span.end,
                );
                Open {
                    name,
                    naming: Naming::Source,
                    kind: SymbolKind::Property,
                    node,
                    sig: (sig_start, sig_end),
                    body: None,
                    modifiers,
                    declared_at,
                }
            }
        };
        self.scoped(o, |s| walk::walk_property_definition(s, p));
    }

    fn visit_accessor_property(&mut self, p: &AccessorProperty<'a>) {
        let mut modifiers =
            member_modifiers(p.r#static, p.accessibility, p.r#override, false, &p.key);
        modifiers.push(Modifier::Accessor);
        let name = property_key_name(self.src, &p.key);
        let node = decorated_span(p.span, &p.decorators);
        let sig_start = after_decorators(self.src, node.start, &p.decorators);
        let sig_end = self.head_or_all(
            sig_start,
            p.value.as_ref().map(|v| v.span().start),
            p.span.end,
        );
        let o = Open {
            name,
            naming: Naming::Source,
            kind: SymbolKind::Property,
            node,
            sig: (sig_start, sig_end),
            body: None,
            modifiers,
            declared_at: Some(p.key.span().start),
        };
        self.scoped(o, |s| walk::walk_accessor_property(s, p));
    }

    fn visit_static_block(&mut self, b: &StaticBlock<'a>) {
        let brace = self
            .text(b.span)
            .find('{')
            .map_or(b.span.start, |i| b.span.start + i as u32);
        let body = Span::new(brace, b.span.end);
        let o = Open {
            name: "static".into(),
            naming: Naming::Source,
            kind: SymbolKind::StaticBlock,
            node: b.span,
            sig: (b.span.start, brace),
            body: Some(body),
            modifiers: vec![Modifier::Static],
            declared_at: None,
        };
        self.scoped(o, |s| walk::walk_static_block(s, b));
    }

    fn visit_ts_index_signature(&mut self, it: &TSIndexSignature<'a>) {
        if !matches!(
            self.top_kind(),
            SymbolKind::Class | SymbolKind::Component | SymbolKind::Interface
        ) {
            return walk::walk_ts_index_signature(self, it);
        }
        let text = self.text(it.span);
        let name = text
            .find(']')
            .map_or(text, |i| &text[text.find('[').unwrap_or(0)..=i]);
        let mut modifiers = Vec::new();
        if it.readonly {
            modifiers.push(Modifier::Readonly);
        }
        if it.r#static {
            modifiers.push(Modifier::Static);
        }
        let name = truncate(
            name.split_whitespace().collect::<Vec<_>>().join(" "),
            MAX_NAME,
        );
        let o = Open {
            name,
            naming: Naming::Source,
            kind: SymbolKind::IndexSignature,
            node: it.span,
            sig: (it.span.start, it.span.end),
            body: None,
            modifiers,
            declared_at: None,
        };
        self.scoped(o, |s| walk::walk_ts_index_signature(s, it));
    }

    fn visit_ts_property_signature(&mut self, it: &TSPropertySignature<'a>) {
        if self.top_kind() != SymbolKind::Interface {
            return walk::walk_ts_property_signature(self, it);
        }
        let mut modifiers = Vec::new();
        if it.readonly {
            modifiers.push(Modifier::Readonly);
        }
        if it.optional {
            modifiers.push(Modifier::Optional);
        }
        let name = property_key_name(self.src, &it.key);
        let o = Open {
            name,
            naming: Naming::Source,
            kind: SymbolKind::Property,
            node: it.span,
            sig: (it.span.start, it.span.end),
            body: None,
            modifiers,
            declared_at: Some(it.key.span().start),
        };
        self.scoped(o, |s| walk::walk_ts_property_signature(s, it));
    }

    fn visit_ts_method_signature(&mut self, it: &TSMethodSignature<'a>) {
        if self.top_kind() != SymbolKind::Interface {
            return walk::walk_ts_method_signature(self, it);
        }
        let (kind, mut modifiers) = match it.kind {
            TSMethodSignatureKind::Method => (SymbolKind::Method, Vec::new()),
            TSMethodSignatureKind::Get => (SymbolKind::Getter, vec![Modifier::Get]),
            TSMethodSignatureKind::Set => (SymbolKind::Setter, vec![Modifier::Set]),
        };
        if it.optional {
            modifiers.push(Modifier::Optional);
        }
        let name = property_key_name(self.src, &it.key);
        let o = Open {
            name,
            naming: Naming::Source,
            kind,
            node: it.span,
            sig: (it.span.start, it.span.end),
            body: None,
            modifiers,
            declared_at: Some(it.key.span().start),
        };
        self.scoped(o, |s| walk::walk_ts_method_signature(s, it));
    }

    fn visit_ts_call_signature_declaration(&mut self, it: &TSCallSignatureDeclaration<'a>) {
        if self.top_kind() != SymbolKind::Interface {
            return walk::walk_ts_call_signature_declaration(self, it);
        }
        let o = self.item(
            SymbolKind::CallSignature,
            "(call)".into(),
            it.span,
            Vec::new(),
        );
        self.scoped(o, |s| walk::walk_ts_call_signature_declaration(s, it));
    }

    fn visit_ts_construct_signature_declaration(
        &mut self,
        it: &TSConstructSignatureDeclaration<'a>,
    ) {
        if self.top_kind() != SymbolKind::Interface {
            return walk::walk_ts_construct_signature_declaration(self, it);
        }
        let o = self.item(
            SymbolKind::ConstructSignature,
            "new".into(),
            it.span,
            Vec::new(),
        );
        self.scoped(o, |s| walk::walk_ts_construct_signature_declaration(s, it));
    }

    fn visit_ts_interface_declaration(&mut self, it: &TSInterfaceDeclaration<'a>) {
        let modifiers = if it.declare {
            vec![Modifier::Declare]
        } else {
            Vec::new()
        };
        let o = Open {
            name: it.id.name.to_string(),
            naming: Naming::Source,
            kind: SymbolKind::Interface,
            node: it.span,
            sig: (it.span.start, it.body.span.start),
            body: Some(it.body.span),
            modifiers,
            declared_at: Some(it.id.span.start),
        };
        self.scoped(o, |s| walk::walk_ts_interface_declaration(s, it));
    }

    fn visit_ts_type_alias_declaration(&mut self, it: &TSTypeAliasDeclaration<'a>) {
        let modifiers = if it.declare {
            vec![Modifier::Declare]
        } else {
            Vec::new()
        };
        let sig_end = self.head_or_all(
            it.span.start,
            Some(it.type_annotation.span().start),
            it.span.end,
        );
        let o = Open {
            name: it.id.name.to_string(),
            naming: Naming::Source,
            kind: SymbolKind::Type,
            node: it.span,
            sig: (it.span.start, sig_end),
            body: None,
            modifiers,
            declared_at: Some(it.id.span.start),
        };
        self.scoped(o, |s| walk::walk_ts_type_alias_declaration(s, it));
    }

    fn visit_ts_enum_declaration(&mut self, it: &TSEnumDeclaration<'a>) {
        let mut modifiers = Vec::new();
        if it.r#const {
            modifiers.push(Modifier::Const);
        }
        if it.declare {
            modifiers.push(Modifier::Declare);
        }
        let o = Open {
            name: it.id.name.to_string(),
            naming: Naming::Source,
            kind: SymbolKind::Enum,
            node: it.span,
            sig: (it.span.start, it.body.span.start),
            body: Some(it.body.span),
            modifiers,
            declared_at: Some(it.id.span.start),
        };
        self.scoped(o, |s| walk::walk_ts_enum_declaration(s, it));
    }

    fn visit_ts_namespace_declaration(&mut self, it: &TSNamespaceDeclaration<'a>) {
        let modifiers = if it.declare {
            vec![Modifier::Declare]
        } else {
            Vec::new()
        };
        let body = it.body.span();
        let o = Open {
            name: it.id.name.to_string(),
            naming: Naming::Source,
            kind: SymbolKind::Namespace,
            node: it.span,
            sig: (it.span.start, body.start),
            body: Some(body),
            modifiers,
            declared_at: Some(it.id.span.start),
        };
        self.scoped(o, |s| walk::walk_ts_namespace_declaration(s, it));
    }

    fn visit_ts_external_module_declaration(&mut self, it: &TSExternalModuleDeclaration<'a>) {
        let modifiers = if it.declare {
            vec![Modifier::Declare]
        } else {
            Vec::new()
        };
        let body = it.body.as_ref().map(|b| b.span);
        let o = Open {
            name: it.id.value.to_string(),
            naming: Naming::Source,
            kind: SymbolKind::Module,
            node: it.span,
            sig: (it.span.start, body.map_or(it.span.end, |b| b.start)),
            body,
            modifiers,
            declared_at: None,
        };
        self.scoped(o, |s| walk::walk_ts_external_module_declaration(s, it));
    }

    fn visit_ts_global_declaration(&mut self, it: &TSGlobalDeclaration<'a>) {
        let modifiers = if it.declare {
            vec![Modifier::Declare]
        } else {
            Vec::new()
        };
        let o = Open {
            name: "global".into(),
            naming: Naming::Source,
            kind: SymbolKind::Module,
            node: it.span,
            sig: (it.span.start, it.body.span.start),
            body: Some(it.body.span),
            modifiers,
            declared_at: None,
        };
        self.scoped(o, |s| walk::walk_ts_global_declaration(s, it));
    }

    fn visit_ts_import_equals_declaration(&mut self, it: &TSImportEqualsDeclaration<'a>) {
        let source = match &it.module_reference {
            TSModuleReference::ExternalModuleReference(r) => r.expression.value.to_string(),
            other => self.text(other.span()).to_string(),
        };
        self.import_item(it.span, &source);
    }

    fn visit_object_property(&mut self, p: &ObjectProperty<'a>) {
        let value = unwrap_expr(&p.value);
        if !is_function_like(value) {
            return walk::walk_object_property(self, p);
        }
        let name = property_key_name(self.src, &p.key);
        let declared_at = Some(p.key.span().start);
        if let Some(mut o) = self.function_valued(name, p.span.start, p.span, value, declared_at) {
            o.kind = match p.kind {
                PropertyKind::Get => SymbolKind::Getter,
                PropertyKind::Set => SymbolKind::Setter,
                PropertyKind::Init => SymbolKind::Method,
            };
            self.scoped(o, |s| walk::walk_object_property(s, p));
        }
    }

    fn visit_call_expression(&mut self, it: &CallExpression<'a>) {
        self.hint_callback(&it.callee, &it.arguments, "");
        walk::walk_call_expression(self, it);
    }

    fn visit_new_expression(&mut self, it: &NewExpression<'a>) {
        self.hint_callback(&it.callee, &it.arguments, "new ");
        walk::walk_new_expression(self, it);
    }

    fn visit_assignment_expression(&mut self, it: &AssignmentExpression<'a>) {
        let right = unwrap_expr(&it.right);
        if is_function_like(right) || matches!(right, Expression::ClassExpression(_)) {
            // Nested as at the top level, `A.prototype.m = function` is named `A.m`.
            let left = match &it.left {
                AssignmentTarget::StaticMemberExpression(m) if commonjs::is_function(right) => {
                    self.method_name(m)
                }
                left => truncate(self.signature(left.span().start, left.span().end), MAX_NAME),
            };
            self.hints
                .insert(right.span().start, (left, Naming::Source));
        }
        walk::walk_assignment_expression(self, it);
    }

    fn visit_jsx_attribute(&mut self, it: &JSXAttribute<'a>) {
        if let Some(JSXAttributeValue::ExpressionContainer(c)) = &it.value
            && let Some(e) = c.expression.as_expression()
        {
            let name = self.text(it.name.span()).to_string();
            self.hints
                .insert(unwrap_expr(e).span().start, (name, Naming::Source));
        }
        walk::walk_jsx_attribute(self, it);
    }
}

// ---- tree post-processing -----------------------------------------------------------------

/// Root items that share a line cannot be separate line-range chunks: fold each into the
/// item before it (the declaration wins over a comment for the name).
pub(crate) fn merge_overlapping(roots: Vec<ParsedSymbol>) -> Vec<ParsedSymbol> {
    let mut out: Vec<ParsedSymbol> = Vec::with_capacity(roots.len());
    for item in roots {
        match out.last_mut() {
            Some(prev) if item.range.start <= prev.range.end => {
                prev.range.end = prev.range.end.max(item.range.end);
                prev.span.end = prev.span.end.max(item.span.end);
                if prev.kind == SymbolKind::Comment && item.kind != SymbolKind::Comment {
                    let (range, span) = (prev.range, prev.span);
                    let mut children = std::mem::take(&mut prev.children);
                    *prev = ParsedSymbol {
                        range,
                        span,
                        ..item
                    };
                    children.append(&mut prev.children);
                    prev.children = children;
                } else {
                    let mut item = item;
                    prev.children.append(&mut item.children);
                }
            }
            _ => out.push(item),
        }
    }
    out
}

pub(crate) fn set_hierarchy(sym: &mut ParsedSymbol, parent: Option<&str>, depth: u32) {
    sym.depth = depth;
    sym.parent_name = parent.map(str::to_string);
    for child in &mut sym.children {
        set_hierarchy(child, Some(&sym.name), depth + 1);
    }
}

// ---- AST helpers ------------------------------------------------------------------------------

/// `text` with each run of whitespace replaced by one space and the ends trimmed, stopping
/// once more than `max_chars` characters are collected (no caller keeps more); the flag says
/// whether all of `text` was taken. Signatures can span a whole statement, so this must not
/// walk (or copy) the rest of a long one.
fn collapse_whitespace(text: &str, max_chars: usize) -> (String, bool) {
    // Texts no longer in bytes than the cap (most signatures) fit whole: copy word by word.
    if text.len() <= max_chars {
        let mut out = String::with_capacity(text.len());
        for word in text.split_ascii_whitespace() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(word);
        }
        return (out, true);
    }
    // Byte loop: only ASCII whitespace is touched, so UTF-8 sequences pass through intact.
    let mut out: Vec<u8> = Vec::with_capacity(text.len().min(max_chars + 8));
    let mut chars = 0;
    let mut space = false;
    let mut complete = true;
    for &b in text.as_bytes() {
        if b.is_ascii_whitespace() {
            space = true;
            continue;
        }
        let starts_char = b & 0xC0 != 0x80;
        if starts_char && chars > max_chars {
            complete = false;
            break;
        }
        if space && !out.is_empty() {
            out.push(b' ');
            chars += 1;
        }
        space = false;
        out.push(b);
        chars += usize::from(starts_char);
    }
    let out = String::from_utf8(out)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    (out, complete)
}

/// `text` as one line, each run of whitespace one space, cut to `max_chars` characters with
/// `…` when longer: how signatures and type texts are shown.
pub fn one_line(text: &str, max_chars: usize) -> String {
    truncate(collapse_whitespace(text, max_chars).0, max_chars)
}

/// A standalone comment's name: its first line holding a letter or digit, trimmed and cut.
pub(crate) fn comment_name(text: &str) -> String {
    let first_line = text
        .lines()
        .find(|l| l.chars().any(char::is_alphanumeric))
        .unwrap_or(text)
        .trim();
    truncate(first_line.to_string(), MAX_NAME)
}

fn truncate(mut s: String, max: usize) -> String {
    // A string no longer in bytes than `max` has at most `max` characters.
    if s.len() > max && s.chars().count() > max {
        s = s.chars().take(max - 1).collect::<String>();
        s.push('…');
    }
    s
}

fn async_modifier(is_async: bool) -> Vec<Modifier> {
    if is_async {
        vec![Modifier::Async]
    } else {
        Vec::new()
    }
}

fn member_modifiers(
    is_static: bool,
    access: Option<TSAccessibility>,
    is_override: bool,
    optional: bool,
    key: &PropertyKey<'_>,
) -> Vec<Modifier> {
    let mut m = Vec::new();
    if is_static {
        m.push(Modifier::Static);
    }
    match access {
        Some(TSAccessibility::Private) => m.push(Modifier::Private),
        Some(TSAccessibility::Protected) => m.push(Modifier::Protected),
        Some(TSAccessibility::Public) => m.push(Modifier::Public),
        None => {}
    }
    // `#field` is private by the language itself.
    if matches!(key, PropertyKey::PrivateIdentifier(_)) {
        m.push(Modifier::Private);
    }
    if is_override {
        m.push(Modifier::Override);
    }
    if optional {
        m.push(Modifier::Optional);
    }
    m
}

/// Strips parentheses and type-only wrappers (`as`, `satisfies`, `!`, `<T>x`).
fn unwrap_expr<'b, 'a>(mut e: &'b Expression<'a>) -> &'b Expression<'a> {
    loop {
        e = match e {
            Expression::ParenthesizedExpression(p) => &p.expression,
            Expression::TSAsExpression(x) => &x.expression,
            Expression::TSSatisfiesExpression(x) => &x.expression,
            Expression::TSNonNullExpression(x) => &x.expression,
            Expression::TSTypeAssertion(x) => &x.expression,
            _ => return e,
        };
    }
}

fn is_function_like(e: &Expression<'_>) -> bool {
    match e {
        Expression::ArrowFunctionExpression(_)
        | Expression::FunctionExpression(_)
        | Expression::ClassExpression(_) => true,
        Expression::CallExpression(c) => {
            is_component_wrapper(&c.callee)
                && c.arguments
                    .first()
                    .and_then(|a| a.as_expression())
                    .is_some_and(|a| is_function_like(unwrap_expr(a)))
        }
        _ => false,
    }
}

/// `forwardRef(…)`, `memo(…)`, `React.forwardRef(…)`, `React.memo(…)`.
fn is_component_wrapper(callee: &Expression<'_>) -> bool {
    let name = match unwrap_expr(callee) {
        Expression::Identifier(id) => id.name.as_str(),
        Expression::StaticMemberExpression(m) => m.property.name.as_str(),
        _ => return false,
    };
    matches!(name, "forwardRef" | "memo")
}

fn is_component_type(annotation: &str) -> bool {
    let t = annotation.trim_start_matches(':').trim_start();
    let base = t.split('<').next().unwrap_or(t).trim();
    let last = base.rsplit('.').next().unwrap_or(base);
    matches!(
        last,
        "FC" | "FunctionComponent"
            | "VFC"
            | "ComponentType"
            | "ForwardRefExoticComponent"
            | "MemoExoticComponent"
    )
}

fn extends_react_component(c: &Class<'_>) -> bool {
    let Some(heritage) = &c.heritage else {
        return false;
    };
    let name = match &heritage.expression {
        Expression::Identifier(id) => id.name.as_str(),
        Expression::StaticMemberExpression(m) => m.property.name.as_str(),
        _ => return false,
    };
    matches!(name, "Component" | "PureComponent")
}

fn decorated_span(span: Span, decorators: &[Decorator<'_>]) -> Span {
    let start = decorators
        .iter()
        .map(|d| d.span.start)
        .min()
        .map_or(span.start, |d| d.min(span.start));
    Span::new(start, span.end)
}

/// First non-whitespace offset after the last decorator (or `start`).
fn after_decorators(src: &str, start: u32, decorators: &[Decorator<'_>]) -> u32 {
    let Some(last) = decorators.iter().map(|d| d.span.end).max() else {
        return start;
    };
    let rest = &src[last as usize..];
    last + (rest.len() - rest.trim_start().len()) as u32
}

/// What a member called by `key` is named: its identifier, string or number as written, or
/// a computed key's text in brackets (`[kGetDispatcher]`, `[Symbol.iterator]`). The graph's
/// facts name computed members by it too.
pub fn property_key_name(src: &str, key: &PropertyKey<'_>) -> String {
    match key {
        PropertyKey::StaticIdentifier(id) => id.name.to_string(),
        PropertyKey::PrivateIdentifier(id) => format!("#{}", id.name),
        PropertyKey::StringLiteral(s) => s.value.to_string(),
        PropertyKey::NumericLiteral(n) => {
            src[n.span.start as usize..n.span.end as usize].to_string()
        }
        other => {
            let span = other.span();
            truncate(
                format!("[{}]", &src[span.start as usize..span.end as usize]),
                MAX_NAME,
            )
        }
    }
}

fn binding_names(pattern: &BindingPattern<'_>) -> Vec<String> {
    let mut ids = Vec::new();
    collect_binding_ids(pattern, &mut ids);
    ids.into_iter().map(|id| id.name.to_string()).collect()
}

fn collect_binding_ids<'b, 'a>(
    pattern: &'b BindingPattern<'a>,
    out: &mut Vec<&'b BindingIdentifier<'a>>,
) {
    match pattern {
        BindingPattern::BindingIdentifier(id) => out.push(id),
        BindingPattern::ObjectPattern(o) => {
            for p in &o.properties {
                collect_binding_ids(&p.value, out);
            }
            if let Some(rest) = &o.rest {
                collect_binding_ids(&rest.argument, out);
            }
        }
        BindingPattern::ArrayPattern(a) => {
            for p in a.elements.iter().flatten() {
                collect_binding_ids(p, out);
            }
            if let Some(rest) = &a.rest {
                collect_binding_ids(&rest.argument, out);
            }
        }
        BindingPattern::AssignmentPattern(a) => collect_binding_ids(&a.left, out),
    }
}

/// `const x = require('y')`, `const { a } = require('y').b`: the module specifier when every
/// declarator is such a require.
fn require_declaration_source<'b>(d: &'b VariableDeclaration<'_>) -> Option<&'b str> {
    let mut source = None;
    for decl in &d.declarations {
        let mut init = unwrap_expr(decl.init.as_ref()?);
        while let Expression::StaticMemberExpression(m) = init {
            init = unwrap_expr(&m.object);
        }
        let s = commonjs::require_source(init)?;
        source.get_or_insert(s);
    }
    source
}

/// Name for a callback from its callee: `items.forEach`, `useEffect`, or the last member name
/// of a long chain.
fn callee_name(src: &str, callee: &Expression<'_>) -> String {
    let callee = unwrap_expr(callee);
    let text = &src[callee.span().start as usize..callee.span().end as usize];
    let simple = text
        .chars()
        .all(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == '.');
    if simple && text.len() <= 40 {
        return text.to_string();
    }
    match callee {
        Expression::StaticMemberExpression(m) => m.property.name.to_string(),
        _ => crate::ANONYMOUS.into(),
    }
}

fn arrow_block<'b, 'a>(a: &'b ArrowFunctionExpression<'a>) -> Option<&'b FunctionBody<'a>> {
    match &a.body {
        ArrowFunctionBody::FunctionBody(b) => Some(b),
        _ => None,
    }
}

/// An arrow's body from the first token after `=>` (so `=> ({ … })` keeps its parenthesis
/// in the body, not in the signature) to the end of the arrow.
fn arrow_body(src: &str, a: &ArrowFunctionExpression<'_>) -> Span {
    let body = a.body.span();
    let head = &src[a.params.span.end as usize..body.start as usize];
    match head.rfind("=>") {
        Some(i) => {
            let after = a.params.span.end + i as u32 + 2;
            let rest = &src[after as usize..body.start as usize];
            Span::new(
                after + (rest.len() - rest.trim_start().len()) as u32,
                a.span.end,
            )
        }
        None => Span::new(body.start, a.span.end),
    }
}

/// Where the "name" of a control-flow statement ends: before its block.
fn statement_head_end(stmt: &Statement<'_>) -> u32 {
    let body_start = match stmt {
        Statement::IfStatement(s) => Some(s.consequent.span().start),
        Statement::ForStatement(s) => Some(s.body.span().start),
        Statement::ForInStatement(s) => Some(s.body.span().start),
        Statement::ForOfStatement(s) => Some(s.body.span().start),
        Statement::WhileStatement(s) => Some(s.body.span().start),
        Statement::DoWhileStatement(s) => Some(s.body.span().start),
        Statement::TryStatement(s) => Some(s.block.span.start),
        Statement::SwitchStatement(s) => Some(s.discriminant.span().end + 1),
        Statement::LabeledStatement(s) => Some(s.body.span().start),
        _ => None,
    };
    let span = stmt.span();
    body_start.map_or(span.end, |b| b.clamp(span.start, span.end))
}
