//! Templates in agent prompts: `${{ inputs.x }}`, `${{ matrix.k }}`,
//! `${{ steps.ID.outputs.NAME }}`, each one reference of the expression
//! language ([`super::expr`]). Prompts are text for a model, never for a
//! shell; templates are rendered nowhere else (a bash command with `${{` is
//! refused at load time). Pure: no I/O.

use super::expr::{self, ExprError, Kind, Ref};

/// One `${{ ... }}` of a text.
#[derive(Debug, Clone)]
pub(crate) struct Piece {
    /// Byte offset of `${{`.
    pub start: usize,
    /// Byte offset after `}}`.
    pub end: usize,
    /// The reference and its byte offset in the text, or why it is not one.
    pub r: Result<(Ref, usize), ExprError>,
}

/// Every `${{ ... }}` of `text`, in order; an unclosed one is an error piece.
pub(crate) fn pieces(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find("${{") {
        let start = from + i;
        let inner_at = start + 3;
        let Some(j) = text[inner_at..].find("}}") else {
            out.push(Piece {
                start,
                end: text.len(),
                r: Err(ExprError {
                    at: start,
                    message: "`${{` is never closed by `}}`".to_owned(),
                }),
            });
            break;
        };
        let end = inner_at + j + 2;
        let inner = &text[inner_at..inner_at + j];
        let r = match expr::parse(inner) {
            Ok(e) => match e.kind {
                Kind::Ref(r @ (Ref::Input(_) | Ref::Matrix(_) | Ref::Output(..))) => {
                    Ok((r, inner_at + e.at))
                }
                _ => Err(ExprError {
                    at: e.at,
                    message: "a prompt template holds one name: `inputs.NAME`, `matrix.KEY` or `steps.ID.outputs.NAME`".to_owned(),
                }),
            },
            Err(e) => Err(e),
        }
        .map_err(|e| ExprError {
            at: inner_at + e.at,
            message: e.message,
        });
        out.push(Piece { start, end, r });
        from = end;
    }
    out
}

/// `text` with every template replaced by `value`'s answer; the first
/// error (a reference that cannot be rendered) stops it.
pub(crate) fn render(
    text: &str,
    value: &dyn Fn(&Ref) -> Result<String, String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for p in pieces(text) {
        out.push_str(&text[last..p.start]);
        let (r, _) = p.r.map_err(|e| e.message)?;
        out.push_str(&value(&r)?);
        last = p.end;
    }
    out.push_str(&text[last..]);
    Ok(out)
}

/// Line (1-based) and column (1-based, in characters) of byte `at` of `text`.
pub(crate) fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_found_and_rendered() {
        let text = "Fix ${{ inputs.pkg }} on ${{matrix.os}}: ${{ steps.a.outputs.v }}.";
        let out = render(text, &|r| Ok(format!("<{r}>"))).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out, "Fix <inputs.pkg> on <matrix.os>: <steps.a.outputs.v>.");
        assert_eq!(
            render("no templates", &|_| Ok(String::new())),
            Ok("no templates".into())
        );
    }

    #[test]
    fn bad_templates_are_placed() {
        let p = pieces("ab ${{ inputs.x == 1 }}");
        let e = p[0].r.clone().err().unwrap_or_else(|| panic!("accepted"));
        assert_eq!(e.at, 7);
        assert!(e.message.contains("one name"));
        let p = pieces("x\n${{ steps.a.status }}");
        assert!(p[0].r.is_err());
        let p = pieces("${{ inputs.x");
        assert_eq!(p[0].r.clone().err().map(|e| e.at), Some(0));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }
}
