//! What makes a statement CommonJS: `require('x')` and the assignments to `exports`. The
//! parser names chunks after them and the graph facts export declarations by them, so
//! the rule lives here once.

use oxc_ast::ast::{
    Argument, AssignmentOperator, AssignmentTarget, Expression, StaticMemberExpression,
};

/// The name of the whole-module CommonJS export, as the chunk of `module.exports = …` is
/// named.
pub const MODULE_EXPORTS: &str = "module.exports";

/// `require('x')` (parentheses and TypeScript casts around it allowed) → `x`.
pub fn require_source<'b>(e: &'b Expression<'_>) -> Option<&'b str> {
    let Expression::CallExpression(call) = e.get_inner_expression() else {
        return None;
    };
    let Expression::Identifier(callee) = &call.callee else {
        return None;
    };
    if callee.name != "require" || call.arguments.len() != 1 {
        return None;
    }
    match call.arguments.first()? {
        Argument::StringLiteral(s) => Some(s.value.as_str()),
        _ => None,
    }
}

/// `module.exports = x` → ([`MODULE_EXPORTS`], x); `exports.foo = x` and
/// `module.exports.foo = x` → ("foo", x).
pub fn export_assignment<'b, 'a>(e: &'b Expression<'a>) -> Option<(String, &'b Expression<'a>)> {
    let (m, right) = member_assignment(e)?;
    let prop = m.property.name.as_str();
    match &m.object {
        Expression::Identifier(obj) if obj.name == "module" && prop == "exports" => {
            Some((MODULE_EXPORTS.into(), right))
        }
        Expression::Identifier(obj) if obj.name == "exports" => Some((prop.to_string(), right)),
        Expression::StaticMemberExpression(inner)
            if inner.property.name == "exports"
                && matches!(&inner.object, Expression::Identifier(o) if o.name == "module") =>
        {
            Some((prop.to_string(), right))
        }
        _ => None,
    }
}

/// `a.b = x` (a plain assignment to a named property) → (`a.b`, x): an export above, a
/// method otherwise (the parser's `root_expression`, which the graph's facts follow).
pub fn member_assignment<'b, 'a>(
    e: &'b Expression<'a>,
) -> Option<(&'b StaticMemberExpression<'a>, &'b Expression<'a>)> {
    let Expression::AssignmentExpression(a) = e else {
        return None;
    };
    match &a.left {
        AssignmentTarget::StaticMemberExpression(m) if a.operator == AssignmentOperator::Assign => {
            Some((m, &a.right))
        }
        _ => None,
    }
}
