//! The report's longest fixed texts (section prose, captions, definitions), kept as files
//! beside this one so the code around them stays readable. Included at build time; each
//! file is stored without a trailing newline, so the output is byte-for-byte what the inline
//! literals gave.

/// The caption under each ddp_step breakdown chart.
pub(crate) const DDP_BREAKDOWN_CAPTION: &str = include_str!("ddp_breakdown_caption.txt");
/// The ddp_step section's explanation of its columns.
pub(crate) const DDP_STEP: &str = include_str!("ddp_step.txt");
/// Definition of “algbw, busbw” (derive::DEFINITIONS).
pub(crate) const DEF_ALGBW_BUSBW: &str = include_str!("def_algbw_busbw.txt");
/// Definition of “α–β fit (per set-up)” (model::DEFINITIONS).
pub(crate) const DEF_ALPHA_BETA_FIT_PER_SET_UP: &str =
    include_str!("def_alpha_beta_fit_per_set_up.txt");
/// Definition of “α–β regimes” (model::DEFINITIONS).
pub(crate) const DEF_ALPHA_BETA_REGIMES: &str = include_str!("def_alpha_beta_regimes.txt");
/// Definition of “busbw retention” (derive::DEFINITIONS).
pub(crate) const DEF_BUSBW_RETENTION: &str = include_str!("def_busbw_retention.txt");
/// Definition of “call per size” (derive::DEFINITIONS).
pub(crate) const DEF_CALL_PER_SIZE: &str = include_str!("def_call_per_size.txt");
/// Definition of “decision (crossover)” (derive::DEFINITIONS).
pub(crate) const DEF_DECISION_CROSSOVER: &str = include_str!("def_decision_crossover.txt");
/// Definition of “forms across scales” (model::DEFINITIONS).
pub(crate) const DEF_FORMS_ACROSS_SCALES: &str = include_str!("def_forms_across_scales.txt");
/// The per-size section's explanation of its tables.
pub(crate) const PER_SIZE: &str = include_str!("per_size.txt");

#[cfg(test)]
mod tests {
    use super::*;

    /// An editor adding a final newline would change the report: the files carry none.
    #[test]
    fn texts_have_no_trailing_newline() {
        for t in [
            DDP_BREAKDOWN_CAPTION,
            DDP_STEP,
            DEF_ALGBW_BUSBW,
            DEF_ALPHA_BETA_FIT_PER_SET_UP,
            DEF_ALPHA_BETA_REGIMES,
            DEF_BUSBW_RETENTION,
            DEF_CALL_PER_SIZE,
            DEF_DECISION_CROSSOVER,
            DEF_FORMS_ACROSS_SCALES,
            PER_SIZE,
        ] {
            assert!(!t.is_empty() && !t.ends_with(char::is_whitespace), "{t}");
        }
    }
}
