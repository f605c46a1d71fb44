//! What people read: reports built from results files (the live console table is
//! [`crate::run::console`]).

pub mod analyze;
pub(crate) mod build;
pub(crate) mod ceilings;
pub(crate) mod ddp;
pub(crate) mod derive;
pub(crate) mod document;
pub mod error;
pub(crate) mod load;
pub(crate) mod long_text;
pub(crate) mod model;
pub(crate) mod nccl;
pub(crate) mod plot;
pub(crate) mod table;
pub(crate) mod tuner;

pub use build::{generate, run, Outputs, Request, Written};
pub use error::ReportError;
/// The links heat map (`scalebench links` writes it beside links.json).
pub use plot::links::svg as links_heat_map_svg;
