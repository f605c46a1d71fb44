//! `ddp_step`'s vocabulary: the layer-model grammar (presets and `IxOxN` lists) and the
//! defaults, which config and plan read as well as the workload ([`crate::workload::ddp`]).

use super::Progress;

/// Gradient bucket capacity when none is given: PyTorch DDP's `bucket_cap_mb` default.
pub(crate) const DEFAULT_BUCKET_BYTES: u64 = 25 << 20;
/// The first bucket's capacity when none is given: PyTorch DDP's
/// `dist._DEFAULT_FIRST_BUCKET_BYTES` (1 MiB), so the first all-reduce starts early in
/// backward. 0 gives the first bucket the same capacity as the others.
pub(crate) const DEFAULT_FIRST_BUCKET_BYTES: u64 = 1 << 20;
/// Model when none is given.
pub(crate) const DEFAULT_MODEL: &str = "mlp-tiny";
/// Progress strategy of the CPU backend when none is given: a progress thread. On this
/// project's loaded 2-core machine (ci/ddp-progress.sh, 5 alternating pairs, 2 ranks) `MPI_Test`
/// between GEMM tiles gave 1.42× the thread's median step time for a compute-heavy step
/// (1024²×8, batch 64) and 6.4× for a communication-bound one (256²×8): the computing thread
/// never spins in MPI, so the scheduler does not demote it, and progress does not depend on
/// GEMM granularity (as with Horovod's background thread). `test` stays available.
pub(crate) const DEFAULT_PROGRESS: Progress = Progress::Thread;
/// Samples per device (weak scaling) when none is given.
pub(crate) const DEFAULT_BATCH: u32 = 32;

/// Named models: (name, layers, what it is).
pub(crate) const PRESETS: &[(&str, &str, &str)] = &[
    (
        "mlp-tiny",
        "256x256x4",
        "4 layers 256×256, 262 144 parameters (1 MiB in f32): tests and local runs",
    ),
    (
        "mlp-small",
        "1024x1024x8",
        "8 layers 1024×1024, 8.4 M parameters (32 MiB in f32)",
    ),
    (
        "mlp-100m",
        "2048x2048x24",
        "24 layers 2048×2048, 101 M parameters (384 MiB in f32)",
    ),
    (
        "mlp-1b",
        "8192x8192x16",
        "16 layers 8192×8192, 1.07 B parameters (4 GiB in f32): GPU clusters",
    ),
];

/// One dense layer: `d_in` inputs, `d_out` outputs, `d_in × d_out` weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layer {
    pub d_in: u64,
    pub d_out: u64,
}

impl Layer {
    pub(crate) fn params(&self) -> u64 {
        self.d_in * self.d_out
    }
}

/// Text that is not a model: neither a preset's name nor a valid list of layers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ModelError {
    #[error("model '{model}': '{part}' is not a layer: write a preset ({}) or layers joined by '+', each IxO or IxOxCOUNT with I, O in 1..={MAX_DIM} (e.g. 1024x1024x8+1024x10)", preset_names())]
    NotALayer { model: String, part: String },
    #[error("model '{model}': more than {MAX_LAYERS} layers")]
    TooManyLayers { model: String },
}

/// A user's model text as errors echo it: the shared rule ([`crate::units::shorten`]), so a
/// 10,001-layer model reads like any other long input (its first characters and its length).
fn shorten(text: &str) -> String {
    crate::units::shorten(text)
}

fn preset_names() -> String {
    PRESETS.iter().map(|p| p.0).collect::<Vec<_>>().join(", ")
}

/// A model: its layers, input first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Model {
    pub layers: Vec<Layer>,
}

/// Largest layer dimension accepted (as GEMM shapes).
const MAX_DIM: u64 = 1 << 20;
/// Most layers accepted.
const MAX_LAYERS: u64 = 10_000;

impl Model {
    /// A preset name ([`PRESETS`]) or layers joined by `+`, each `IxO` (one layer) or `IxOxN`
    /// (N equal layers): `256x256x4+256x10`.
    pub(crate) fn parse(text: &str) -> Result<Model, ModelError> {
        let t = text.trim();
        if let Some((_, layers, _)) = PRESETS.iter().find(|(n, _, _)| n.eq_ignore_ascii_case(t)) {
            return Model::parse(layers);
        }
        let bad = |part: &str| ModelError::NotALayer {
            model: shorten(t),
            part: shorten(part),
        };
        let mut layers = Vec::new();
        for part in t.split('+') {
            let dims: Vec<u64> = part
                .trim()
                .split(['x', 'X'])
                .map(|d| d.trim().parse::<u64>())
                .collect::<Result<_, _>>()
                .map_err(|_| bad(part))?;
            let (d_in, d_out, count) = match dims.as_slice() {
                [i, o] => (*i, *o, 1),
                [i, o, c] => (*i, *o, *c),
                _ => return Err(bad(part)),
            };
            if d_in == 0 || d_out == 0 || d_in > MAX_DIM || d_out > MAX_DIM || count == 0 {
                return Err(bad(part));
            }
            // Compared without adding: a count near u64::MAX would wrap the sum.
            if count > MAX_LAYERS.saturating_sub(layers.len() as u64) {
                return Err(ModelError::TooManyLayers { model: shorten(t) });
            }
            layers.extend((0..count).map(|_| Layer { d_in, d_out }));
        }
        Ok(Model { layers })
    }

    pub(crate) fn params(&self) -> u64 {
        self.layers.iter().map(Layer::params).sum()
    }
}

/// Where layer gradients go: buckets in backward order (bucket 0 holds the last layers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BucketPlan {
    /// Elements of each bucket.
    pub lens: Vec<usize>,
    /// For each layer: (bucket, element offset in it).
    pub slot: Vec<(usize, usize)>,
    /// For each bucket: the layer whose gradient completes it (its lowest layer index).
    pub last_layer: Vec<usize>,
}

impl BucketPlan {
    /// DDP's assignment by size, in backward order: a bucket is closed once it holds at least
    /// its cap (so a layer larger than the cap is alone in its bucket). The first bucket's
    /// cap is `first_cap_bytes` (DDP's `_DEFAULT_FIRST_BUCKET_BYTES`, 1 MiB: the first
    /// all-reduce starts early), every later bucket's `cap_bytes`; `first_cap_bytes = 0`
    /// gives the first bucket the same cap as the others.
    pub(crate) fn new(
        model: &Model,
        elem_bytes: u64,
        cap_bytes: u64,
        first_cap_bytes: u64,
    ) -> BucketPlan {
        let mut plan = BucketPlan {
            lens: Vec::new(),
            slot: vec![(0, 0); model.layers.len()],
            last_layer: Vec::new(),
        };
        let mut open = false;
        for (l, layer) in model.layers.iter().enumerate().rev() {
            if !open {
                plan.lens.push(0);
                plan.last_layer.push(l);
                open = true;
            }
            let k = plan.lens.len() - 1;
            plan.slot[l] = (k, plan.lens[k]);
            plan.lens[k] += layer.params() as usize;
            plan.last_layer[k] = l;
            let cap = if k == 0 && first_cap_bytes > 0 {
                first_cap_bytes
            } else {
                cap_bytes
            };
            if plan.lens[k] as u64 * elem_bytes >= cap {
                open = false;
            }
        }
        plan
    }
}

/// Bytes of host or device memory one device's `ddp_step` holds for `model` with `batch`
/// samples (see `workload::ddp::setup`): per layer the weights, their transpose, the weight
/// gradient and its bucket slot (4 × I·O), the inputs and their transpose (2 × batch·I) and the
/// output gradient (batch·O); plus one output and one input-gradient scratch of the widest
/// layer. Saturates instead of wrapping: a model this large is refused either way.
pub(crate) fn device_bytes(model: &Model, elem_bytes: u64, batch: u64) -> u64 {
    let max_in = model.layers.iter().map(|l| l.d_in).max().unwrap_or(0);
    let max_out = model.layers.iter().map(|l| l.d_out).max().unwrap_or(0);
    let per_layer = model.layers.iter().fold(0u64, |acc, l| {
        let weights = l.params().saturating_mul(4);
        let acts = batch
            .saturating_mul(l.d_in)
            .saturating_mul(2)
            .saturating_add(batch.saturating_mul(l.d_out));
        acc.saturating_add(weights).saturating_add(acts)
    });
    let scratch = batch.saturating_mul(max_in.saturating_add(max_out));
    per_layer.saturating_add(scratch).saturating_mul(elem_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_count_that_would_wrap_is_refused_not_a_panic() {
        // 1 + u64::MAX wrapped to 0 and passed the limit; extending then panicked
        // ("capacity overflow", exit 101) in run, plan and the dry runs.
        for m in [
            "1x1+1x1x18446744073709551615",
            "1x1x18446744073709551615",
            "1x1x10000+1x1",
            "1x1x10001",
        ] {
            assert!(
                matches!(Model::parse(m), Err(ModelError::TooManyLayers { .. })),
                "{m}"
            );
        }
        assert_eq!(Model::parse("1x1x9999+1x1").unwrap().layers.len(), 10_000);
    }

    #[test]
    fn long_models_are_echoed_shortened() {
        let long = vec!["64x64"; 10_001].join("+");
        let msg = Model::parse(&long).unwrap_err().to_string();
        assert!(msg.len() < 300, "{} bytes: {msg}", msg.len());
        let said = format!("…({} chars)", long.chars().count());
        assert!(
            msg.contains(&said) && msg.contains("more than 10000 layers"),
            "{msg}"
        );
        let msg = Model::parse(&format!("{}oops", "8x8+".repeat(50)))
            .unwrap_err()
            .to_string();
        assert!(msg.len() < 600 && msg.contains("'oops'"), "{msg}");
    }
}
