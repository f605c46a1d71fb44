//! The presentation layer that `report` and `compare` share: a neutral document ([`doc::Doc`]:
//! headings, paragraphs, lists, tables, figures, warnings, folded parts) built once, and its
//! renderers to plain text for a terminal ([`text`]), Markdown ([`markdown`]) and one
//! self-contained HTML page ([`html`]). It knows nothing of results files, so both stages
//! depend on it and neither on the other. Text from results files is untrusted: every renderer
//! shows control characters and bidi overrides as escapes ([`untrusted`]).

pub(crate) mod doc;
pub(crate) mod font;
pub(crate) mod html;
pub(crate) mod markdown;
pub(crate) mod nccl;
pub(crate) mod table;
pub(crate) mod text;
pub mod untrusted;

pub(crate) use crate::units::count;
