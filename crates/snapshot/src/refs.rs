//! One oxc parse + semantic pass over a file, reduced to what snapshot selection needs:
//! which declaration each identifier use resolves to, which members are read through
//! `this` or a class name, and which syntax encloses what.

use codectx_parser::{LineIndex, ParsedProgram};
use oxc_ast::AstKind;
use oxc_ast::ast::{
    Declaration, Expression, IdentifierReference, PrivateFieldExpression, Statement,
    StaticMemberExpression,
};
use oxc_ast_visit::{Visit, walk};
use oxc_semantic::Scoping;
use oxc_span::GetSpan;

/// How a member access names its object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemberObject {
    /// `this.x`: the innermost class around the access.
    This,
    /// `Name.x` where `Name` is declared at this offset (a class, for static members).
    Declared(u32),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemberUse {
    pub offset: u32,
    pub object: MemberObject,
    /// Property name as the parser names members (`#x` for private names).
    pub name: String,
}

/// Resolved uses of one file, each list sorted by offset.
#[derive(Debug, Default)]
pub(crate) struct FileRefs {
    /// `(use offset, declaration offset)` for every identifier oxc_semantic resolved.
    pub uses: Vec<(u32, u32)>,
    pub members: Vec<MemberUse>,
    /// Spans of declaration statements (`const`, `let`, `type`, `interface`, `enum`, with
    /// their `export`) that sit directly in a statement list, sorted by start. Nested ones
    /// (a local `const` in a function body) are not parser symbols; a snapshot shows them
    /// when a shown line uses what they declare.
    pub declarations: Vec<(u32, u32)>,
    /// AST nodes spanning several lines, in pre-order (outer before inner): the syntax a
    /// snapshot must open and close around a shown line inside them.
    pub containers: Vec<Container>,
}

/// A multi-line AST node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Container {
    pub start: u32,
    pub end: u32,
    /// A list of statements or members (`{ … }` of a body, an object or array literal):
    /// its first line opens it, and its earlier entries are not needed to read a later one.
    pub is_list: bool,
    /// An operator expression (`a ? b : c`, `a || b`): the operands after the enclosed one
    /// cannot be left out.
    pub keeps_tail: bool,
}

impl FileRefs {
    /// The references of a file's one parse ([`codectx_parser::parse_with`]); none when
    /// oxc could not parse it at all.
    pub fn of(program: Option<&ParsedProgram<'_, '_>>, lines: &LineIndex) -> Self {
        let Some(program) = program else {
            return FileRefs::default();
        };
        let mut collector = Collector {
            lines,
            scoping: program.semantic.scoping(),
            refs: FileRefs::default(),
        };
        collector.visit_program(program.program);
        let mut refs = collector.refs;
        refs.uses.sort_unstable();
        refs.members.sort_by_key(|m| m.offset);
        refs.declarations.sort_unstable();
        refs
    }

    /// The innermost declaration statement containing `offset`.
    pub fn declaration_at(&self, offset: u32) -> Option<(u32, u32)> {
        let to = self.declarations.partition_point(|d| d.0 <= offset);
        self.declarations[..to]
            .iter()
            .rev()
            .find(|d| offset < d.1)
            .copied()
    }

    /// Identifier uses inside `[start, end)`.
    pub fn uses_in(&self, start: u32, end: u32) -> &[(u32, u32)] {
        let from = self.uses.partition_point(|u| u.0 < start);
        let to = self.uses.partition_point(|u| u.0 < end);
        &self.uses[from..to.max(from)]
    }

    /// Member accesses inside `[start, end)`.
    pub fn members_in(&self, start: u32, end: u32) -> &[MemberUse] {
        let from = self.members.partition_point(|m| m.offset < start);
        let to = self.members.partition_point(|m| m.offset < end);
        &self.members[from..to.max(from)]
    }
}

struct Collector<'s> {
    lines: &'s LineIndex,
    scoping: &'s Scoping,
    refs: FileRefs,
}

impl Collector<'_> {
    fn declaration_of(&self, id: &IdentifierReference<'_>) -> Option<u32> {
        let reference = self.scoping.get_reference(id.reference_id.get()?);
        let symbol = reference.symbol_id()?;
        Some(self.scoping.symbol_span(symbol).start)
    }

    fn member(&mut self, object: &Expression<'_>, offset: u32, name: String) {
        let object = match object.without_parentheses() {
            Expression::ThisExpression(_) => MemberObject::This,
            Expression::Identifier(id) => match self.declaration_of(id) {
                Some(decl) => MemberObject::Declared(decl),
                None => return,
            },
            _ => return,
        };
        self.refs.members.push(MemberUse {
            offset,
            object,
            name,
        });
    }
}

impl<'a> Visit<'a> for Collector<'_> {
    fn enter_node(&mut self, kind: AstKind<'a>) {
        let mut span = kind.span();
        // oxc's spans of decorated declarations start after the decorators, which are part
        // of the head a wrapper shows (`@Component({…}) export class …`).
        let decorators = match kind {
            AstKind::Class(c) => c.decorators.first(),
            AstKind::MethodDefinition(m) => m.decorators.first(),
            _ => None,
        };
        if let Some(d) = decorators {
            span.start = span.start.min(d.span.start);
        }
        if matches!(kind, AstKind::Program(_))
            || span.is_empty()
            || self.lines.line_of(span.start) == self.lines.end_line_of(span.start, span.end)
        {
            return;
        }
        let is_list = matches!(
            kind,
            AstKind::FunctionBody(_)
                | AstKind::BlockStatement(_)
                | AstKind::ClassBody(_)
                | AstKind::StaticBlock(_)
                | AstKind::TSModuleBlock(_)
                | AstKind::TSInterfaceBody(_)
                | AstKind::TSEnumBody(_)
                | AstKind::TSTypeLiteral(_)
                | AstKind::ObjectExpression(_)
                | AstKind::ArrayExpression(_)
                | AstKind::SwitchStatement(_)
                | AstKind::SwitchCase(_)
        );
        let keeps_tail = matches!(
            kind,
            AstKind::ConditionalExpression(_)
                | AstKind::LogicalExpression(_)
                | AstKind::BinaryExpression(_)
                | AstKind::SequenceExpression(_)
                | AstKind::AssignmentExpression(_)
        );
        self.refs.containers.push(Container {
            start: span.start,
            end: span.end,
            is_list,
            keeps_tail,
        });
    }

    fn visit_statement(&mut self, it: &Statement<'a>) {
        let declares = match it {
            Statement::ExportDeclaration(e) => matches!(
                e.declaration,
                Declaration::VariableDeclaration(_)
                    | Declaration::TSTypeAliasDeclaration(_)
                    | Declaration::TSInterfaceDeclaration(_)
                    | Declaration::TSEnumDeclaration(_)
            ),
            _ => false,
        } || matches!(
            it,
            Statement::VariableDeclaration(_)
                | Statement::TSTypeAliasDeclaration(_)
                | Statement::TSInterfaceDeclaration(_)
                | Statement::TSEnumDeclaration(_)
        );
        if declares {
            self.refs
                .declarations
                .push((it.span().start, it.span().end));
        }
        walk::walk_statement(self, it);
    }

    fn visit_identifier_reference(&mut self, it: &IdentifierReference<'a>) {
        if let Some(decl) = self.declaration_of(it) {
            self.refs.uses.push((it.span.start, decl));
        }
    }

    fn visit_static_member_expression(&mut self, it: &StaticMemberExpression<'a>) {
        self.member(&it.object, it.span().start, it.property.name.to_string());
        walk::walk_static_member_expression(self, it);
    }

    fn visit_private_field_expression(&mut self, it: &PrivateFieldExpression<'a>) {
        self.member(&it.object, it.span().start, format!("#{}", it.field.name));
        walk::walk_private_field_expression(self, it);
    }
}
