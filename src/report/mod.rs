//! What people read: reports built from results files (the live console table is
//! [`crate::run::console`]).

pub mod analyze;
pub mod build;
pub mod ddp;
pub mod derive;
pub mod doc;
pub mod document;
pub mod html;
pub mod load;
pub mod markdown;
pub mod model;
pub mod plot;
pub mod table;

pub use build::{generate, run, Outputs, Request, Written};
