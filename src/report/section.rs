//! A Markdown summary as sections, and fitting them under a size limit
//! (whole rows, whole diagrams; a closing note names what was cut). Pure.

use std::fmt::Write as _;

/// A part of the Markdown summary: kept whole, shortened (rows cut from the
/// end) or dropped whole when the text must fit a size limit ([`fit`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    /// Named in the closing note when it is cut or dropped.
    pub name: &'static str,
    /// Kept whenever the section is (title, table header).
    pub head: String,
    /// Lines (each ending in a newline) that may be cut from the end.
    pub rows: Vec<String>,
    /// Rows the renderer already left out (the compact form's caps).
    pub omitted: usize,
    /// Rows are table rows (the "more" line must be a table row too).
    pub table: bool,
    /// After the rows.
    pub tail: String,
    /// Never dropped (its rows may still be cut).
    pub required: bool,
}

/// Bytes kept free for a section's "… N more" line when its rows are cut.
const MORE_RESERVE: usize = 64;
/// Bytes kept free for the closing note of [`fit`].
const NOTE_RESERVE: usize = 600;

impl Section {
    pub(super) fn new(name: &'static str, head: String) -> Section {
        Section {
            name,
            head,
            rows: Vec::new(),
            omitted: 0,
            table: false,
            tail: String::new(),
            required: false,
        }
    }

    /// The whole section.
    pub(crate) fn render(&self) -> String {
        self.render_rows(self.rows.len())
    }

    fn render_rows(&self, kept: usize) -> String {
        let mut out = self.head.clone();
        for row in self.rows.iter().take(kept) {
            out.push_str(row);
        }
        let more = self.rows.len().saturating_sub(kept) + self.omitted;
        if more > 0 {
            if self.table {
                let _ = writeln!(out, "| … {more} more (see report.json) |");
            } else {
                let _ = writeln!(out, "- … {more} more (see report.json)");
            }
        }
        out.push_str(&self.tail);
        out
    }

    /// Every piece passed through `f` (the redaction layer, before measuring).
    #[must_use]
    pub(crate) fn map_text(mut self, f: impl Fn(&str) -> String) -> Section {
        self.head = f(&self.head);
        self.tail = f(&self.tail);
        for row in &mut self.rows {
            *row = f(row);
        }
        self
    }

    fn min_len(&self) -> usize {
        let more = if self.rows.is_empty() && self.omitted == 0 {
            0
        } else {
            MORE_RESERVE
        };
        self.head.len() + self.tail.len() + more
    }
}

/// The sections joined, at most `max` bytes: required sections first, then
/// the others in order while their heads fit, then rows in the same order;
/// a section whose rows do not all fit is shortened (with a "… N more"
/// row), one whose head does not fit is dropped. A closing note names what
/// was cut or dropped.
pub(crate) fn fit(sections: &[Section], max: usize) -> String {
    let full: String = sections.iter().map(Section::render).collect();
    if full.len() <= max {
        return full;
    }
    let budget = max.saturating_sub(NOTE_RESERVE);
    let order: Vec<usize> = (0..sections.len())
        .filter(|&i| sections[i].required)
        .chain((0..sections.len()).filter(|&i| !sections[i].required))
        .collect();
    let mut kept: Vec<Option<usize>> = vec![None; sections.len()];
    let mut used = 0;
    for &i in &order {
        let need = sections[i].min_len();
        if sections[i].required || used + need <= budget {
            kept[i] = Some(0);
            used += need;
        }
    }
    for &i in &order {
        let Some(k) = kept[i].as_mut() else { continue };
        for row in &sections[i].rows {
            if used + row.len() > budget {
                break;
            }
            used += row.len();
            *k += 1;
        }
    }
    let mut out = String::new();
    let mut notes = Vec::new();
    for (s, k) in sections.iter().zip(&kept) {
        match *k {
            Some(k) => {
                out.push_str(&s.render_rows(k));
                if k < s.rows.len() {
                    notes.push(format!(
                        "{} ({k} of {} rows shown)",
                        s.name,
                        s.rows.len() + s.omitted
                    ));
                }
            }
            None => notes.push(format!("{} (not shown)", s.name)),
        }
    }
    let _ = write!(
        out,
        "\n---\n*Cut to fit GitHub's size limit: {}. The full report is in `report.json`.*\n",
        notes.join(", ")
    );
    if out.len() > max {
        let mut cut = max;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    out
}
